//! What an experiment runs: the matrix of models × connection counts ×
//! work profiles (`--work`, [`RunPlan::work`]) × repeats, the workload
//! every cell applies, the pinning, and the cells in the order they run. Written to `plan.json` in the results directory
//! before the first cell, so `--resume` finishes exactly the run that was
//! started. With `--runs auto` ([`AutoRuns`]) the plan starts with the
//! minimum of runs and grows: each cell added is written to `plan.json`
//! before it runs (see [`crate::runner::auto`]).

use serde::{Deserialize, Serialize};

use crate::client::plan::LoadKind;
use crate::present::units::{amount, format_count};
use crate::protocol::Protocol;
use crate::server::settings::Settings;
use crate::server::work::Profile;

/// Version of `plan.json` and `results.jsonl`; bumped when a field changes
/// meaning or disappears (3: the workload holds only its own kind's
/// settings, [`Shape`]).
pub const RESULTS_VERSION: u32 = 3;

/// The results formats this c10k reads: 2 reads as 3 (its workload's
/// settings of the other kinds are left aside).
pub const READS: [u32; 2] = [2, RESULTS_VERSION];

/// Where the server and the client run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pin {
    /// Server and client on different CPUs (each wake-up crosses cores).
    Split,
    /// Server and client on the same CPUs.
    Same,
    /// Server and client each on every CPU this process may use: a server
    /// that can use every core shows it, and the client competes with it
    /// for them.
    All,
    /// No pinning: the scheduler decides.
    None,
}

/// How repeats are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Run r of every cell before run r+1 of any (drift spreads evenly).
    Interleaved,
    /// Every run of one model and connection count, then the next.
    Sequential,
}

/// What the client does in every cell, without its settings: the tag of
/// [`Shape`], and the value of `c10k run --workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// Closed loop: `depth` messages in flight per connection.
    Closed,
    /// Connect every socket, then send one message on each and time until
    /// every echo is back.
    Burst,
    /// Open, echo nothing (or one message), close; repeat.
    Churn,
}

/// A micro-benchmark run as an experiment: each cell runs it once for one
/// variant (the cell's "model") at one size (its "connections").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bench {
    /// `c10k micro spawn`: variants thread, thread-small, fork,
    /// fork-large; size: tasks created.
    Spawn,
    /// `c10k micro dispatch`: variants select, poll, epoll-lt, epoll-et;
    /// size: descriptors.
    Dispatch,
    /// `c10k micro accept`: the accept modes; size: client threads.
    Accept,
    /// `c10k herd`: the wait methods; size: workers.
    Herd,
}

/// Which figure ranks the models, and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Primary {
    /// Time to do a fixed amount of work (burst makespan, or the total time
    /// of a fixed number of messages); lower is better.
    Time,
    /// Round trips per second; higher is better.
    Throughput,
    /// Connections accepted per second; higher is better.
    AcceptRate,
    /// 99th percentile round trip, corrected for coordinated omission: an
    /// open loop sets the throughput itself, so what ranks the models is
    /// how long their echoes take at it; lower is better.
    Latency,
}

impl Primary {
    pub(crate) fn higher_is_better(self) -> bool {
        !matches!(self, Primary::Time | Primary::Latency)
    }

    /// What it is, for headings.
    pub fn label(self) -> &'static str {
        match self {
            Primary::Time => "time",
            Primary::Throughput => "round trips/s",
            Primary::AcceptRate => "connections/s",
            Primary::Latency => "p99 latency",
        }
    }

    /// [`Primary::label`] where the messages are `protocol`'s: over HTTP
    /// a round trip is a request (`requests/s`).
    pub fn label_over(self, protocol: Protocol) -> &'static str {
        match (self, protocol) {
            (Primary::Throughput, Protocol::Http) => "requests/s",
            _ => self.label(),
        }
    }

    /// `value` in this figure's natural unit, for tables.
    pub fn format(self, value: f64) -> String {
        match self {
            Primary::Time => format_seconds(value),
            Primary::Latency => format_seconds(value / 1e6),
            Primary::Throughput | Primary::AcceptRate => format_count(value),
        }
    }
}

/// Seconds with a unit, three significant digits (`43.5 ms`).
pub(crate) fn format_seconds(s: f64) -> String {
    crate::present::units::seconds(s)
}

/// What the client does in every cell, with the settings of that kind
/// alone: plan.json's `workload.kind` and, beside it, `depth`, `rounds` or
/// `churn_echo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Shape {
    /// Closed loop (an open one with a [`Workload::rate`]): `depth`
    /// messages in flight per connection.
    Closed {
        #[serde(default = "one")]
        depth: usize,
    },
    /// Connect every socket, then send one message on each and time until
    /// every echo is back, `rounds` times a cell.
    Burst {
        #[serde(default = "one")]
        rounds: usize,
    },
    /// Open, close, repeat; echo one message before closing with
    /// `churn_echo`.
    Churn {
        #[serde(default)]
        churn_echo: bool,
    },
}

/// A kind's setting a plan.json edited by hand left out: as [`Shape::of`].
fn one() -> usize {
    1
}

impl Shape {
    /// Its tag.
    pub fn kind(self) -> WorkloadKind {
        match self {
            Shape::Closed { .. } => WorkloadKind::Closed,
            Shape::Burst { .. } => WorkloadKind::Burst,
            Shape::Churn { .. } => WorkloadKind::Churn,
        }
    }

    /// `kind` with its defaults: one message in flight, one round, no echo.
    pub fn of(kind: WorkloadKind) -> Shape {
        match kind {
            WorkloadKind::Closed => Shape::Closed { depth: 1 },
            WorkloadKind::Burst => Shape::Burst { rounds: 1 },
            WorkloadKind::Churn => Shape::Churn { churn_echo: false },
        }
    }
}

/// The client's work in each cell: its [`Shape`] and what every kind
/// shares. (A plan.json of results format 2, which held every kind's
/// settings beside each other, reads as this: the others are ignored.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    #[serde(flatten)]
    pub shape: Shape,
    /// Messages per connection (a fixed amount of work); `None`: timed.
    pub messages_per_connection: Option<u64>,
    /// When set, messages per connection are this total divided by the
    /// connections (rounded down, as the poll-vs-threads study did).
    pub total_messages: Option<u64>,
    /// Measured window of a timed cell, in seconds.
    pub duration_seconds: f64,
    /// Traffic before the measured window, in seconds (not counted).
    pub warmup_seconds: f64,
    /// Bytes of each message (the payload's length when one is given).
    pub message_bytes: usize,
    /// The text of every message, when the study names one.
    pub payload: Option<String>,
    /// A connect or an echo not answered within this many seconds fails
    /// its connection.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    /// Open loop (`-r`, `--rate-per-connection`): messages sent on a
    /// schedule, whatever the server's pace, latency corrected for
    /// coordinated omission; absent: the kind's own loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// New connections per second while a cell's connections come up
    /// (`--connect-rate`); absent: as fast as the listen queue takes them
    /// (at most 256 connects in flight per client event loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_rate: Option<f64>,
    /// Open loop: the client's event loops work in passes at least this
    /// many seconds apart (`--client-interval`, `c10k load --interval`):
    /// fewer wake-ups, latencies late by up to one interval at each end;
    /// absent: a pass per event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_interval_seconds: Option<f64>,
    /// Open loop: when each connection's messages fall due (a capacity
    /// search's are Poisson).
    #[serde(
        default,
        skip_serializing_if = "crate::client::plan::Arrivals::is_uniform"
    )]
    pub arrivals: crate::client::plan::Arrivals,
    /// What the connections speak (`--protocol`): echo, or HTTP/1.1
    /// requests to servers that serve it (every c10k model then runs
    /// `serve --protocol http`).
    #[serde(default, skip_serializing_if = "Protocol::is_echo")]
    pub protocol: Protocol,
}

/// An open loop's rate of messages per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Over all the connections of a cell (`-r`): the same offered load at
    /// every connection count.
    Total(f64),
    /// On each connection (`--rate-per-connection`): the load grows with
    /// the connections, as a fleet of devices each reporting every so
    /// often.
    PerConnection(f64),
}

impl Rate {
    /// Messages per second in total over `connections`.
    pub fn total(self, connections: usize) -> f64 {
        match self {
            Rate::Total(r) => r,
            Rate::PerConnection(r) => r * connections as f64,
        }
    }

    /// For people: `20,000 messages/s in total` or `0.05 messages/s on
    /// each connection`.
    pub fn text(self) -> String {
        match self {
            Rate::Total(r) => format!("{} messages/s in total", amount(r)),
            Rate::PerConnection(r) => format!("{} messages/s on each connection", amount(r)),
        }
    }
}

fn default_timeout() -> f64 {
    10.0
}

impl Workload {
    /// The closed loop most experiments use: one 64 B message in flight per
    /// connection, timed over `duration` seconds after `warmup`.
    pub fn closed(duration: f64, warmup: f64) -> Workload {
        Workload {
            shape: Shape::Closed { depth: 1 },
            messages_per_connection: None,
            total_messages: None,
            duration_seconds: duration,
            warmup_seconds: warmup,
            message_bytes: 64,
            payload: None,
            timeout_seconds: default_timeout(),
            rate: None,
            connect_rate: None,
            client_interval_seconds: None,
            arrivals: crate::client::plan::Arrivals::Uniform,
            protocol: Protocol::Echo,
        }
    }

    /// The workload as a load report names it: an open loop is a closed
    /// one given a rate.
    pub fn load_kind(&self) -> LoadKind {
        match self.kind() {
            WorkloadKind::Closed if self.rate.is_some() => LoadKind::Open,
            WorkloadKind::Closed => LoadKind::Closed,
            WorkloadKind::Burst => LoadKind::Burst,
            WorkloadKind::Churn => LoadKind::Churn,
        }
    }

    /// Checks values read back from a `plan.json` (which anyone may edit)
    /// as the flags that made them were checked: every duration one a run
    /// can wait out, every size and count in range. A plan with a window
    /// of 1e300 s panicked on resume.
    pub fn check(&self) -> Result<(), String> {
        use crate::client::plan::{MAX_DEPTH, MAX_MESSAGE, MAX_ROUNDS, MAX_SECONDS};
        for (name, v) in [
            ("duration_seconds", self.duration_seconds),
            ("warmup_seconds", self.warmup_seconds),
            ("timeout_seconds", self.timeout_seconds),
        ] {
            if !(v.is_finite() && (0.0..=MAX_SECONDS).contains(&v)) {
                return Err(format!(
                    "workload.{name} {v:e} is not a duration from 0 to a year"
                ));
            }
        }
        // Over HTTP the bytes are a request's body, none for a GET.
        let least = usize::from(self.protocol.is_echo());
        if !(least..=MAX_MESSAGE).contains(&self.message_bytes) {
            return Err(format!(
                "workload.message_bytes {} is not from {least} B to 64 MiB",
                self.message_bytes
            ));
        }
        use crate::client::plan::{per_second, MAX_RATE};
        match self.rate {
            Some(Rate::Total(r)) => per_second("workload.rate.total", r, MAX_RATE).map(drop)?,
            Some(Rate::PerConnection(r)) => {
                per_second("workload.rate.per_connection", r, MAX_RATE).map(drop)?
            }
            None => {}
        }
        if let Some(r) = self.connect_rate {
            per_second("workload.connect_rate", r, MAX_RATE)?;
        }
        if let Some(s) = self.client_interval_seconds {
            let max = crate::server::pace::MAX_INTERVAL.as_secs_f64();
            if !(0.0..=max).contains(&s) {
                return Err(format!(
                    "workload.client_interval_seconds {s}: must be from 0 to {max}"
                ));
            }
            if self.rate.is_none() {
                return Err(
                    "workload.client_interval_seconds paces an open loop: it needs workload.rate"
                        .into(),
                );
            }
        }
        match self.shape {
            Shape::Closed { depth } if !(1..=MAX_DEPTH).contains(&depth) => Err(format!(
                "workload.depth {depth}: must be from 1 to {MAX_DEPTH}"
            )),
            Shape::Burst { rounds } if !(1..=MAX_ROUNDS).contains(&rounds) => Err(format!(
                "workload.rounds {rounds}: must be from 1 to {MAX_ROUNDS}"
            )),
            _ => Ok(()),
        }
    }
}

fn default_size_label() -> String {
    "connections".into()
}

impl Workload {
    /// What kind of workload it is.
    pub fn kind(&self) -> WorkloadKind {
        self.shape.kind()
    }

    /// Messages in flight per connection: a closed (or open) loop's depth,
    /// one for the others.
    pub fn depth(&self) -> usize {
        match self.shape {
            Shape::Closed { depth } => depth,
            Shape::Burst { .. } | Shape::Churn { .. } => 1,
        }
    }

    /// Bytes of each message on the wire: the payload's when one is given.
    /// A request under `--work` is one message.
    pub(crate) fn message_size(&self) -> usize {
        self.payload
            .as_ref()
            .map_or(self.message_bytes, String::len)
    }

    /// Messages each connection sends in a cell with `connections`.
    pub(crate) fn messages_for(&self, connections: usize) -> Option<u64> {
        match self.total_messages {
            Some(total) => Some((total / connections.max(1) as u64).max(1)),
            None => self.messages_per_connection,
        }
    }
}

/// The resident method (`c10k run`'s default for a timed closed or open
/// loop): the servers of one connection count stay up together, each with
/// its connections, and the load moves between them in slots of
/// `seconds` (the first `warmup_seconds` of each discarded), one slot per
/// server in each round, in an order shuffled every round, so two models
/// are compared within seconds ([`crate::runner::resident`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slots {
    pub seconds: f64,
    pub warmup_seconds: f64,
    /// How long one instance of a server (its process, memory, listener
    /// and client connections) serves; a plan written before this was
    /// recorded kept one for the run.
    #[serde(default = "Instances::one_per_run")]
    pub instances: Instances,
    /// Shorter slots below a connection count (the default's; none where
    /// `--slot` or `--slot-warmup` is given, and in a plan written before
    /// this was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<ShortSlots>,
}

/// Slots of `seconds` (`warmup_seconds` of it a warm-up) at counts below
/// `below` connections ([`Slots::short`]). There the noise between two
/// models' slots is the host's slow spells, which last seconds: slots
/// half as long put a round's slots closer together, so more of a spell
/// falls on both of a pair, and give twice the rounds. At 1,000
/// connections the noise is within the window (a few round trips per
/// connection in it), which a shorter one only adds to
/// (docs/method.md#slot-length-by-count).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShortSlots {
    pub below: usize,
    pub seconds: f64,
    pub warmup_seconds: f64,
}

/// How long a resident server's instance lasts ([`Slots::instances`]).
/// Two instances of one model differ by a few per cent, the same way
/// through every slot of each (at 4 connections, twins were 3–9 % apart
/// and called different in 5 of 10 runs with one instance per run), so
/// rounds that share an instance replicate that instance, not the model,
/// and their interval leaves out how much instances differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Instances {
    /// Every round starts every model it runs anew: each round's ratio
    /// then draws a fresh pair of instances, and the paired interval over
    /// rounds covers the instances' variation.
    Round,
    /// One instance per model and count for the whole run (cheaper: no
    /// start per round; the interval is then the instance's).
    Run,
}

impl Instances {
    fn one_per_run() -> Instances {
        Instances::Run
    }

    /// What it means, for the method's line and the report.
    pub fn said(self) -> &'static str {
        match self {
            Instances::Round => "every round on new instances of its servers (each started anew with its connections after its slot; --instances round), so the intervals cover how instances differ",
            Instances::Run => "one instance of each server for the whole run, so the intervals leave out how instances differ (--instances round covers it)",
        }
    }
}

impl Slots {
    /// 300 ms slots, 100 ms of each a warm-up, and 150 ms (50 ms) below
    /// 1,000 connections; one instance of each server for the run: 11
    /// models in a round of about 3.5 s at 1,000 connections, 1.8 s below. (A new
    /// instance every round cost the tour's slots at 1,000 connections
    /// up to half their rate after the thread and process models' stops
    /// and starts: docs/method.md#instances.)
    pub const DEFAULT: Slots = Slots {
        seconds: 0.3,
        warmup_seconds: 0.1,
        instances: Instances::Run,
        short: Some(ShortSlots {
            below: 1000,
            seconds: 0.15,
            warmup_seconds: 0.05,
        }),
    };

    /// The slots at `n` connections: the short ones below their count,
    /// else these.
    pub fn at(&self, n: usize) -> Slots {
        match self.short {
            Some(s) if n < s.below => Slots {
                seconds: s.seconds,
                warmup_seconds: s.warmup_seconds,
                ..*self
            },
            _ => *self,
        }
    }

    /// The measured part of a slot.
    pub fn measured_seconds(&self) -> f64 {
        self.seconds - self.warmup_seconds
    }

    /// The slots of `n` connections under `work`: long enough that the
    /// slowest model's round over every connection fits in the measured
    /// part with a quarter to spare, else a window would measure the first
    /// turns of some connections (the client refuses such a window). The
    /// slowest is one handler doing each request in turn: `n` times the
    /// work's CPU and blocking time per request (an awaited wait is not
    /// serial). At 1,000 connections under block:1ms, 1.25 s measured.
    pub fn for_block(&self, n: usize, work: Option<&crate::server::work::Profile>) -> Slots {
        use crate::server::work::Kind;
        let base = self.at(n);
        let serial = work.map_or(0.0, |w| {
            (w.mean(Kind::Cpu) + w.mean(Kind::Block)).as_secs_f64()
        });
        let measured = base.measured_seconds().max(1.25 * n as f64 * serial);
        Slots {
            seconds: base.warmup_seconds + measured,
            ..base
        }
    }
}

/// `--runs auto` over resident slots: a count's rounds come in looks of
/// `every` rounds; after each look the run goes on, with the models not
/// yet told apart from the best (and the best), until every one is, or
/// `most` looks have run, or another look would take the run past
/// `budget_seconds` ([`crate::runner::auto`]). Every interval is then at
/// the level that keeps `most` looks to 5 % together
/// ([`crate::stats::looks`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Looks {
    pub every: usize,
    pub most: usize,
    pub budget_seconds: f64,
}

impl Looks {
    /// Rounds a look: a model clearly apart from the best (3× or 1.3×
    /// slower) is decided after 5 rounds and stops, where 10 spent twice
    /// its slots on it; identical models are called different no more
    /// often (`stats::paired`'s tests, 10,000 tries).
    pub const EVERY: usize = 5;
    /// Rounds a look where the budget holds more than twenty looks of
    /// [`Self::EVERY`] (two models given minutes): twenty looks of 10.
    pub const WIDE: usize = 10;
    /// The fewest rounds the looks of a run plan to reach (the tour's 8
    /// looks of 5); more where its budget holds them
    /// ([`crate::stats::looks::planned`]).
    pub const LEAST_ROUNDS: usize = 40;

    /// The confidence of every interval of the run.
    pub fn level(&self) -> f64 {
        crate::stats::looks::level(self.most)
    }
}

/// What `--runs auto` over slots may spend unless `--budget` says: 10
/// minutes.
pub const DEFAULT_BUDGET_SECONDS: f64 = 600.0;

/// Connections the resident servers of one count may hold together (each
/// one has both ends on this machine): past this, the count runs one cell
/// at a time. The tour's largest count, 11 models at 1,000, holds 11,000.
pub const MAX_RESIDENT_CONNECTIONS: usize = 40_000;

/// Why the servers of a count cannot stay resident together, if they
/// cannot: `servers` of them at `n` connections each.
pub fn unfit(n: usize, servers: usize) -> Option<String> {
    let total = n.saturating_mul(servers);
    (total > MAX_RESIDENT_CONNECTIONS).then(|| {
        format!(
            "{servers} servers at {n} connections would hold {total} at once, past the {MAX_RESIDENT_CONNECTIONS} resident at a time"
        )
    })
}

/// Rounds of a resident plan unless `--runs` says: 10 pairs decide a 10 %
/// difference in every try of the simulation in [`crate::stats::paired`].
pub const DEFAULT_ROUNDS: usize = 10;

/// `--runs auto`: repeat each model at each connection count until the 95 %
/// interval of its median (of the primary figure) lies within ±`tolerance`
/// of the median, at least `min` and at most `max` runs (see
/// [`crate::stats::median`] for the interval and the rule).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoRuns {
    pub min: usize,
    pub max: usize,
    /// 0.05: ±5 %.
    pub tolerance: f64,
}

impl Default for AutoRuns {
    fn default() -> AutoRuns {
        AutoRuns {
            min: 3,
            max: 10,
            tolerance: 0.05,
        }
    }
}

/// One cell: one server model at one connection count under one work
/// profile, one repeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellSpec {
    /// Stable name, unique in the run: `MODEL/cN/rR`, or `MODEL/WORK/cN/rR`
    /// for a cell with work ([`CellSpec::id_of`]).
    pub id: String,
    /// Position in the run order, from 0.
    pub index: usize,
    pub model: String,
    /// The work per request its server does (`--work`), canonical
    /// (`block:1ms`); absent for none, so a cell without work has the id
    /// and the record it always had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<Profile>,
    pub connections: usize,
    /// Repeat number, from 1 (in a capacity search, the model's slot
    /// number at this count and profile).
    pub run: usize,
    /// A slot of the capacity search: the rate it offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<Offered>,
}

/// What a slot of the capacity search offers ([`crate::results::slo`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offered {
    /// Messages per second in total, Poisson arrivals.
    pub rate: u64,
    /// A round of the cost phase (every model at the rate all hold, in
    /// paired rounds), numbered from 1; absent: a step of the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_round: Option<usize>,
    /// A round of the recheck (every bracket's ends measured again,
    /// interleaved, once every search at the count has ended), numbered
    /// from 1; absent: not a recheck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck: Option<usize>,
}

impl CellSpec {
    /// The id of `model` under `work` at `connections`, run `run`.
    pub fn id_of(model: &str, work: Option<&Profile>, connections: usize, run: usize) -> String {
        match work {
            Some(w) => format!("{model}/{w}/c{connections}/r{run}"),
            None => format!("{model}/c{connections}/r{run}"),
        }
    }

    /// The cell's work profile as the axis names it (`none` without work).
    pub fn profile(&self) -> String {
        self.work
            .as_ref()
            .map_or_else(|| NO_WORK.to_string(), Profile::to_string)
    }
}

/// The profile of the cells without work.
pub const NO_WORK: &str = "none";

/// The work of each profile's cells, in the axis's order: `None` for
/// `none`; no axis is one profile, none.
pub fn profiles(work: &[Profile]) -> Vec<Option<Profile>> {
    if work.is_empty() {
        return vec![None];
    }
    work.iter()
        .map(|w| (!w.is_none()).then(|| w.clone()))
        .collect()
}

/// A whole experiment, as `plan.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    pub version: u32,
    /// Preset name (`tour`, `thesis`, …) or `custom`.
    pub experiment: String,
    /// One line saying what the experiment reproduces.
    pub title: String,
    /// The command line that started the run (to rerun it).
    pub command: String,
    pub models: Vec<String>,
    pub connections: Vec<usize>,
    /// The work axis (`--work`): every model at every count runs under
    /// each of these profiles (canonical specs, `none` for no work); empty:
    /// no axis, every cell without work.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work: Vec<Profile>,
    /// Repeats of every cell; with `auto_runs`, the minimum.
    pub runs: usize,
    /// `--runs auto`: the plan's cells are the minimum of runs so far, and
    /// grow until each settles or reaches the maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_runs: Option<AutoRuns>,
    pub order: Order,
    /// Resident slots; `None`: each cell on its own, one at a time (the
    /// method of plans written before slots, of a burst, of a fixed count
    /// of messages, and of `--sequential`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<Slots>,
    /// `--slo`: a capacity search per model, count and profile, against
    /// these targets; the cells are then the search's slots, added as it
    /// goes ([`crate::capacity::search`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<super::slo::Search>,
    /// `--tune`: before the matrix, every c10k model's knobs searched at
    /// each count and profile ([`crate::runner::tuner`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<super::tuned::Tune>,
    /// What each search kept: the matrix runs each model with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tuned: Vec<super::tuned::Tuned>,
    /// `--runs auto` over slots: rounds added look by look; `runs` is
    /// then the rounds of the first look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks: Option<Looks>,
    /// Two models whose ratio's 95 % interval lies within ±`margin` are
    /// equivalent (0.05: ±5 %; [`crate::stats::paired`]).
    #[serde(default = "default_margin")]
    pub margin: f64,
    /// How many times a run disturbed from outside (interference or
    /// steal) is run again before it is kept, marked.
    #[serde(default = "default_repeat_disturbed")]
    pub repeat_disturbed: usize,
    pub pin: Pin,
    /// CPUs the server may use (empty: unpinned).
    pub server_cpus: Vec<usize>,
    /// CPUs the client may use (empty: unpinned).
    pub client_cpus: Vec<usize>,
    pub workload: Workload,
    pub primary: Primary,
    /// Write each cell's per-connection CSV under `cells/`.
    pub per_connection_csv: bool,
    /// Echo buffer of every server.
    pub buffer: String,
    /// More settings for every c10k server (`--server-arg`'s flags,
    /// parsed once when the plan was made).
    #[serde(default)]
    pub server_settings: Settings,
    /// c10k models run with more `serve` flags under names of their own
    /// (`--variant`, or a preset's), named in `models`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// Servers that are not c10k's (`--server`), named in `models`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<crate::child::foreign::Foreign>,
    /// Servers already running (`--target`), named in `models`: only the
    /// client's side is measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<crate::child::foreign::Target>,
    /// Where every cell's client runs (`--agent`): agents started through
    /// these launchers; absent: in worker processes on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<crate::client::launch::Launch>,
    /// The address the servers bind (`--bind`), one the agents reach;
    /// absent: loopback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<std::net::IpAddr>,
    /// How long a foreign server may take to be ready, in seconds.
    #[serde(default = "crate::child::foreign::default_ready_seconds")]
    pub ready_timeout_seconds: f64,
    /// A micro-benchmark experiment (its cells run no server).
    #[serde(default)]
    pub bench: Option<Bench>,
    /// More arguments of the micro-benchmark's command for every cell.
    #[serde(default)]
    pub bench_args: Vec<String>,
    /// What the size of a cell counts, for tables and chart axes.
    #[serde(default = "default_size_label")]
    pub size_label: String,
    /// Models refused up front from a count on, with the measured cause
    /// ([`crate::runner::preflight`]): their cells there are skipped unstarted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refusal>,
    pub cells: Vec<CellSpec>,
}

pub(crate) fn default_margin() -> f64 {
    crate::stats::paired::DEFAULT_MARGIN
}

/// Repeats of a disturbed run unless `--repeat-disturbed` says otherwise.
pub const DEFAULT_REPEAT_DISTURBED: usize = 2;

fn default_repeat_disturbed() -> usize {
    DEFAULT_REPEAT_DISTURBED
}

/// A c10k model with more `c10k serve` flags under a name of its own:
/// `select+lock` is `select --shared-state`, `epoll@1ms` is `epoll
/// --interval 1ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub model: String,
    /// What it sets beside the run's settings (its flags, parsed once).
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub settings: Settings,
}

/// The c10k model `name` stands for, and the settings it adds: a
/// variant's, or a model's own with none.
pub fn resolve<'a>(
    variants: &'a [Variant],
    name: &str,
) -> Option<(&'static dyn crate::server::Model, &'a Settings)> {
    static NONE: std::sync::LazyLock<Settings> = std::sync::LazyLock::new(Settings::default);
    match variants.iter().find(|v| v.name == name) {
        Some(v) => crate::server::find(&v.model).map(|m| (m, &v.settings)),
        None => crate::server::find(name).map(|m| (m, &*NONE)),
    }
}

impl RunPlan {
    /// What `--tune` kept for `model` at `n` connections under `work`.
    pub fn tuned_at(
        &self,
        model: &str,
        n: usize,
        work: Option<&Profile>,
    ) -> Option<&super::tuned::Tuned> {
        self.tuned
            .iter()
            .find(|t| t.model == model && t.connections == n && t.work.as_ref() == work)
    }

    /// `model` as the tables of one work profile name it at `n`: with
    /// the settings `--tune` kept, `hybrid (pool 128)`.
    pub fn shown(&self, model: &str, n: usize) -> String {
        self.tuned
            .iter()
            .find(|t| t.model == model && t.connections == n)
            .map_or_else(|| model.to_string(), super::tuned::Tuned::shown)
    }

    /// The c10k model a cell's `name` runs and its variant's settings.
    pub(crate) fn model(
        &self,
        name: &str,
    ) -> Option<(&'static dyn crate::server::Model, &Settings)> {
        resolve(&self.variants, name)
    }

    /// How many runs each cell gets, for people: `3`, or `3–10` with
    /// `--runs auto`.
    pub(crate) fn runs_text(&self) -> String {
        match (self.auto_runs, self.looks) {
            (Some(a), _) => format!("{}–{}", a.min, a.max),
            (None, Some(l)) => format!("{}–{}", l.every, l.every * l.most),
            (None, None) => self.runs.to_string(),
        }
    }

    /// The last round planned at `n` connections under `work` (0: none).
    pub(crate) fn rounds_at(&self, n: usize, work: Option<&crate::server::work::Profile>) -> usize {
        self.cells
            .iter()
            .filter(|c| c.connections == n && c.work.as_ref() == work)
            .map(|c| c.run)
            .max()
            .unwrap_or(0)
    }

    /// The figure `--tune`'s climb ranks settings by: the run's own, or
    /// with `--slo` (whose slots rank latency at an offered rate) the
    /// throughput of a closed loop, the capacity search deciding after.
    pub fn tune_primary(&self) -> Primary {
        if self.capacity.is_some() {
            Primary::Throughput
        } else {
            self.primary
        }
    }

    /// What every comparison of the run is held to: its margin, at 95 %,
    /// or at the stricter level of its looks.
    pub(crate) fn rule(&self) -> crate::stats::paired::Rule {
        crate::stats::paired::Rule {
            margin: self.margin,
            level: self
                .looks
                .map_or(crate::stats::paired::DEFAULT_LEVEL, |l| l.level()),
        }
    }

    /// The least time the cells `cells` of the plan take, in seconds: the
    /// slots, or warm-up and window, of each (a server's start, its
    /// connections and the reading of /proc add to it).
    pub fn least_seconds(&self, cells: &[CellSpec]) -> f64 {
        let timed = self.workload.warmup_seconds + self.workload.duration_seconds;
        cells
            .iter()
            .map(|c| match (self.slots, &self.capacity, c.offered) {
                // A capacity search's slot, as the search times it.
                (Some(s), Some(search), Some(o)) => search.slot_wall_seconds(
                    o.rate as f64,
                    o.cost_round.is_some(),
                    s.warmup_seconds,
                ),
                (Some(s), _, _) if unfit(c.connections, self.models.len()).is_none() => {
                    s.for_block(c.connections, c.work.as_ref()).seconds
                }
                _ => timed,
            })
            .sum()
    }

    /// Checks the work axis of a plan read back (anyone may edit
    /// `plan.json`; each profile was parsed as `c10k serve --work` parses
    /// it when it was read) as the flags were checked: every profile named
    /// once, a request that fits the servers' echo buffer, no work in a
    /// micro-benchmark; and every cell's work one of the profiles.
    pub fn check_work(&self) -> Result<(), String> {
        let bytes = self.workload.message_size();
        let mut seen = std::collections::BTreeSet::new();
        for w in &self.work {
            if !seen.insert(w.to_string()) {
                return Err(format!("work names '{w}' twice"));
            }
        }
        let any = self.work.iter().any(|w| !w.is_none());
        if any && self.bench.is_some() {
            return Err("work: a micro-benchmark has no handler to give work".into());
        }
        if any {
            let buffer = crate::present::units::parse_size(&self.buffer)
                .map_err(|e| format!("buffer: {e}"))?;
            if bytes > buffer {
                return Err(format!(
                    "work: a request is one message ({bytes} B), more than the servers' echo \
                     buffer ({buffer} B); give a smaller message or --server-arg=--buffer=SIZE"
                ));
            }
        }
        let profiles = profiles(&self.work);
        if let Some(c) = self.cells.iter().find(|c| !profiles.contains(&c.work)) {
            return Err(format!(
                "cell {}: work '{}' is not one of the plan's profiles",
                c.id,
                c.profile()
            ));
        }
        Ok(())
    }
}

/// A model's counts it cannot hold here, and why: the first count refused
/// (every larger one is too).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Refusal {
    pub model: String,
    /// The smallest refused count.
    pub from: usize,
    pub why: String,
}

/// Descriptors a server keeps for itself beside its connections (listener,
/// epoll or io_uring instances, pipes, stdio).
pub(crate) const SERVER_HEADROOM: u64 = 128;

/// Server processes sharing the port (SO_REUSEPORT) that `connections` need
/// under the open-files hard limit `hard`, for a model that does not fork.
pub(crate) fn server_processes(connections: usize, hard: Option<u64>) -> usize {
    hard.map_or(1, |h| {
        connections
            .div_ceil(h.saturating_sub(SERVER_HEADROOM).max(1) as usize)
            .max(1)
    })
}

impl RunPlan {
    /// What the ranking figure is called for this plan's protocol
    /// (`round trips/s`, over HTTP `requests/s`).
    pub fn figure_label(&self) -> &'static str {
        self.primary.label_over(self.workload.protocol)
    }
}

impl RunPlan {
    /// Event loops per client process for a cell of `n` connections: one per
    /// CPU the client may use, at most one per connection.
    pub(crate) fn client_threads(&self, n: usize) -> usize {
        if self.client_cpus.is_empty() {
            crate::sys::affinity::cpus_available()
        } else {
            self.client_cpus.len()
        }
        .clamp(1, n.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schedule::{expand, round_order};

    #[test]
    fn slots_grow_to_hold_the_slowest_round() {
        let d = Slots::DEFAULT;
        let p = |s: &str| crate::server::work::Profile::parse(s).expect("a profile");
        // No work, or little: the default slot at its count.
        assert_eq!(d.for_block(1000, None), d);
        assert_eq!(d.for_block(10, Some(&p("block:1ms"))), d.at(10));
        // Below 1,000 connections the short slot's 100 ms window is the
        // least; 100 handlers of 1 ms each need 125 ms.
        let hundred = d.for_block(100, Some(&p("block:1ms")));
        assert!(
            (hundred.measured_seconds() - 0.125).abs() < 1e-9,
            "{hundred:?}"
        );
        assert_eq!(hundred.warmup_seconds, 0.05);
        // One handler takes 1 s to go round 1,000 connections at 1 ms
        // each: the measured part holds that and a quarter more.
        let s = d.for_block(1000, Some(&p("block:1ms")));
        assert!((s.measured_seconds() - 1.25).abs() < 1e-9, "{s:?}");
        assert_eq!(s.warmup_seconds, d.warmup_seconds);
        // CPU work counts as serial; an awaited wait does not.
        let cpu = d.for_block(1000, Some(&p("cpu:1ms")));
        assert!((cpu.measured_seconds() - 1.25).abs() < 1e-9, "{cpu:?}");
        assert_eq!(d.for_block(1000, Some(&p("wait:1ms"))), d);
    }

    #[test]
    fn slots_are_short_below_a_thousand_connections_unless_given() {
        let d = Slots::DEFAULT;
        for n in [1, 10, 100, 999] {
            let s = d.at(n);
            assert_eq!((s.seconds, s.warmup_seconds), (0.15, 0.05), "{n}");
            assert_eq!(s.instances, d.instances);
        }
        for n in [1000, 10_000] {
            assert_eq!(d.at(n), d, "{n}");
        }
        // A slot given (no short ones) is the same at every count.
        let given = Slots {
            seconds: 0.5,
            warmup_seconds: 0.1,
            short: None,
            ..d
        };
        assert_eq!(given.at(10), given);
        assert_eq!(given.at(1000), given);
    }

    #[test]
    fn interleaved_runs_every_cell_once_before_repeating() {
        let models = vec!["a".to_string(), "b".to_string()];
        let cells = expand(&models, &[2, 4], &[], 3, Order::Interleaved);
        assert_eq!(cells.len(), 12);
        assert_eq!(cells[0].id, "a/c2/r1");
        assert_eq!(cells[1].id, "b/c2/r1");
        assert!(cells[4].id.ends_with("/c2/r2"), "{}", cells[4].id);
        // Every round runs every model once at each count, in an order of
        // its own.
        for run in 1..=3 {
            for c in [2, 4] {
                let mut here: Vec<&str> = cells
                    .iter()
                    .filter(|x| x.run == run && x.connections == c)
                    .map(|x| x.model.as_str())
                    .collect();
                here.sort_unstable();
                assert_eq!(here, ["a", "b"]);
            }
        }
        let twelve: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
        let orders: std::collections::BTreeSet<Vec<&String>> =
            (1..=4).map(|r| round_order(&twelve, r)).collect();
        assert_eq!(orders.len(), 4, "each round its own order");
        assert_eq!(round_order(&twelve, 1), twelve.iter().collect::<Vec<_>>());
        let ids: std::collections::BTreeSet<_> = cells.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 12);
        let seq = expand(&models, &[2, 4], &[], 3, Order::Sequential);
        assert_eq!(seq[1].id, "a/c2/r2");
        assert!(cells.iter().enumerate().all(|(i, c)| c.index == i));
    }

    #[test]
    fn a_work_axis_pairs_models_within_each_round_count_and_profile() {
        let models = vec!["a".to_string(), "b".to_string()];
        let work: Vec<Profile> = vec!["none".parse().unwrap(), "block:1ms".parse().unwrap()];
        let cells = expand(&models, &[2, 4], &work, 2, Order::Interleaved);
        assert_eq!(cells.len(), 16);
        // The none profile keeps the ids of a run without the axis.
        assert_eq!(cells[0].id, "a/c2/r1");
        assert_eq!(cells[0].work, None);
        assert_eq!(cells[2].id, "a/block:1ms/c2/r1");
        assert_eq!(cells[2].profile(), "block:1ms");
        for chunk in cells.chunks(2) {
            assert_eq!(chunk[0].work, chunk[1].work);
            assert_eq!(
                (chunk[0].run, chunk[0].connections),
                (chunk[1].run, chunk[1].connections)
            );
            assert_ne!(chunk[0].model, chunk[1].model);
        }
        let ids: std::collections::BTreeSet<_> = cells.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 16);
        let seq = expand(&models, &[2], &work, 2, Order::Sequential);
        let order: Vec<&str> = seq.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            order[..4],
            [
                "a/c2/r1",
                "a/c2/r2",
                "a/block:1ms/c2/r1",
                "a/block:1ms/c2/r2"
            ]
        );
    }

    #[test]
    fn a_plan_read_back_has_its_work_checked() {
        let mut p = RunPlan::example(&["a"], &[2], 1);
        p.work = vec!["none".parse().unwrap(), "block:1ms".parse().unwrap()];
        p.cells = expand(&p.models, &p.connections, &p.work, 1, Order::Interleaved);
        assert_eq!(p.check_work(), Ok(()));
        // A profile is parsed as it is read back: a bad one is refused, and
        // so is one not written canonically.
        let json = serde_json::to_value(&p).unwrap();
        let mut bad = json.clone();
        bad["work"][1] = "block:1zz".into();
        let e = serde_json::from_value::<RunPlan>(bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'block:1zz'"), "{e}");
        let mut loose = json.clone();
        loose["work"][1] = "block:1000us".into();
        let e = serde_json::from_value::<RunPlan>(loose)
            .unwrap_err()
            .to_string();
        assert!(e.contains("canonical"), "{e}");
        let mut twice = p.clone();
        twice.work[0] = twice.work[1].clone();
        assert!(twice.check_work().unwrap_err().contains("twice"));
        let mut stray = p.clone();
        stray.cells[1].work = Some("cpu:5us".parse().unwrap());
        assert!(stray.check_work().unwrap_err().contains("not one of"));
        let mut big = p.clone();
        big.workload.message_bytes = 1 << 20;
        assert!(big.check_work().unwrap_err().contains("echo buffer"));
        // A plan without the axis has cells without work.
        assert_eq!(RunPlan::example(&["a"], &[2], 1).check_work(), Ok(()));
    }

    /// The workload is one tagged value: each kind writes its own settings
    /// alone, and a format-2 plan.json, which wrote every kind's, reads as
    /// its own kind's (issue 57.2).
    #[test]
    fn a_workload_holds_its_own_kinds_settings_alone() {
        let mut w = Workload::closed(1.0, 0.25);
        w.shape = Shape::Burst { rounds: 3 };
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(
            (&json["kind"], &json["rounds"]),
            (&"burst".into(), &3.into())
        );
        assert!(json.get("depth").is_none() && json.get("churn_echo").is_none());
        assert_eq!(serde_json::from_value::<Workload>(json).unwrap(), w);
        let mut old = serde_json::to_value(Workload::closed(2.0, 0.5)).unwrap();
        for (k, v) in [
            ("depth", 4.into()),
            ("churn_echo", true.into()),
            ("rounds", 9.into()),
        ] {
            old[k] = v;
        }
        let read: Workload = serde_json::from_value(old).unwrap();
        assert_eq!((read.shape, read.depth()), (Shape::Closed { depth: 4 }, 4));
        let churn = Workload {
            shape: Shape::of(WorkloadKind::Churn),
            ..Workload::closed(2.0, 0.5)
        };
        assert_eq!((churn.kind(), churn.depth()), (WorkloadKind::Churn, 1));
        let deep = Workload {
            shape: Shape::Closed { depth: 0 },
            ..Workload::closed(2.0, 0.5)
        };
        assert_eq!(
            deep.check().unwrap_err(),
            format!(
                "workload.depth 0: must be from 1 to {}",
                crate::client::plan::MAX_DEPTH
            )
        );
    }

    #[test]
    fn figures_format_for_people() {
        assert_eq!(format_count(284_113.4), "284,113");
        assert_eq!(format_count(999.0), "999");
        assert_eq!(format_count(-1234.0), "-1,234");
        assert_eq!(format_seconds(0.0435), "43.5 ms");
        assert_eq!(format_seconds(2.5), "2.5 s");
        assert_eq!(format_seconds(0.0000305), "30.5 µs");
    }

    #[test]
    fn total_messages_split_over_connections() {
        let w = Workload {
            total_messages: Some(10_000),
            ..Workload::closed(0.0, 0.0)
        };
        assert_eq!(w.messages_for(380), Some(26));
        assert_eq!(w.messages_for(10), Some(1000));
    }
}
