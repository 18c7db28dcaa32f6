//! The results of a load run: one structure, written as JSON (a versioned
//! schema) and printed as a summary a person reads at a glance.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conn::Failure;
use super::plan::LoadKind;
use crate::env::{Environment, TcpCounters};

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 2;

/// The JSON Schema of what `--json` writes, checked in as
/// `schema/load-report.v{SCHEMA_VERSION}.schema.json` (a test keeps the two
/// equal). It describes the serialized form: every field is required, the
/// optional ones as `null`, and unknown fields are rejected.
pub fn schema() -> schemars::Schema {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Report>();
    schema.insert(
        "$id".into(),
        format!("urn:c10k:load-report:v{SCHEMA_VERSION}").into(),
    );
    schema.insert(
        "title".into(),
        format!("c10k load report v{SCHEMA_VERSION}").into(),
    );
    schema
}

/// Latency percentiles in microseconds; all zero when nothing was measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Percentiles {
    /// Samples recorded.
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// The 99.9th percentile.
    pub p99_9: f64,
    pub max: f64,
}

impl Percentiles {
    /// From a histogram in nanoseconds.
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            min: us(h.min()),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p99_9: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

/// Connections asked for and what became of them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Connections {
    /// Active connections asked for (`-c`; churn: how many at once).
    pub requested: usize,
    /// Connections held open and silent beside them (`--idle`).
    pub idle: usize,
    /// Connections that came up (ever, for churn).
    pub established: u64,
    /// Connections that ended with an error.
    pub failed: u64,
}

/// How the connections came up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Connect {
    /// From the first connect to the last connection up (or failed).
    pub established_seconds: f64,
    /// Connects per second over that time (churn: over the whole run).
    pub per_second: f64,
    /// From connect start to writable.
    pub latency_us: Percentiles,
}

/// Rates over the measured window.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Throughput {
    /// Measured echoes per second (round trips; over HTTP, responses).
    pub messages_per_second: f64,
    /// Measured echoed bytes per second, one way (over HTTP, the bytes of
    /// the responses, at their mean size over the run).
    pub bytes_per_second: f64,
}

/// How evenly the active connections were served: measured round trips per
/// connection. A server that favours some connections (a scheduler's run
/// queue, an event loop that serves the first ready sockets first) shows a
/// low minimum and a Jain's index under 1 even when its mean is good.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Fairness {
    /// Active connections counted.
    pub connections: u64,
    /// Round trips of the least and the most served connection.
    pub min: u64,
    pub median: u64,
    pub max: u64,
    /// Connections that completed no measured round trip.
    pub starved: u64,
    /// Jain's index over the connections: 1 when all got the same, 1/n
    /// when one got everything (`null`: nothing measured).
    pub jain: Option<f64>,
}

impl Fairness {
    /// Of the measured round trips of each active connection.
    pub fn of(per_connection: &mut [u64]) -> Fairness {
        per_connection.sort_unstable();
        let n = per_connection.len();
        Fairness {
            connections: n as u64,
            min: per_connection.first().copied().unwrap_or(0),
            median: if n > 0 { per_connection[n / 2] } else { 0 },
            max: per_connection.last().copied().unwrap_or(0),
            starved: per_connection.iter().filter(|&&r| r == 0).count() as u64,
            jain: crate::stats::fairness::jain(per_connection),
        }
    }
}

/// What only an open-loop run measures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OpenLoop {
    /// Messages per second asked for, in total (`-r`).
    pub target_rate: f64,
    /// Measured messages per second.
    pub achieved_rate: f64,
    /// Sends skipped because a connection was backed up.
    pub missed: u64,
    /// Round trips from the actual write, beside the corrected ones.
    pub latency_uncorrected_us: Percentiles,
    /// How late each measured message was written after it was due: the
    /// client's own wake-up lateness plus any wait for a free slot. The
    /// corrected latency includes it; a large one with no backlog means the
    /// client, not the server, was slow.
    pub send_lag_us: Percentiles,
    /// The client's `--interval`, µs: it worked in passes at least this far
    /// apart, so a send went out up to this late (in the send lag) and an
    /// echo was read up to this late; the latency includes both. 0: every
    /// send at its due time, every echo read as it arrived.
    #[serde(default)]
    pub interval_us: f64,
}

/// What only a burst run measures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Burst {
    /// Time from sending on every connection to the last echo, per round
    /// (`null`: the round did not complete).
    pub makespan_us: Vec<Option<f64>>,
}

/// The load generator itself, so a reader can tell when it was the
/// bottleneck.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Client {
    /// Event-loop threads.
    pub threads: usize,
    /// CPUs the client was pinned to; none (`null`) when not pinned.
    pub cpus: Option<Vec<usize>>,
    /// CPU time of the client over the measured window.
    pub cpu_user_seconds: f64,
    /// Kernel CPU time over the same window.
    pub cpu_system_seconds: f64,
    /// Client CPU time per measured message.
    pub cpu_per_message_us: f64,
    /// Peak resident memory of the client process.
    pub max_rss_kib: u64,
    /// Worker processes the connections were spread over (1: this one).
    pub processes: usize,
    /// System calls of the event loops over the measured window: reads,
    /// writes and waits (`epoll_wait`). Per message they show whether the
    /// client batches its work (one write per event, not per message).
    #[serde(default)]
    pub syscalls: Syscalls,
}

/// System calls counted over the measured window.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Syscalls {
    pub reads: u64,
    pub writes: u64,
    pub waits: u64,
}

impl Syscalls {
    /// The calls made since `from`.
    pub(crate) fn since(self, from: Syscalls) -> Syscalls {
        Syscalls {
            reads: self.reads - from.reads,
            writes: self.writes - from.writes,
            waits: self.waits - from.waits,
        }
    }

    pub fn add(&mut self, o: Syscalls) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.waits += o.waits;
    }
}

/// Everything a load run measured: what `c10k load --json` writes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Report {
    /// The version of this format, bumped whenever a field changes meaning
    /// or disappears.
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// The command line.
    pub command: String,
    /// The server's address as resolved (`IP:PORT`).
    pub target: String,
    /// What the connections spoke: echo, or http (HTTP/1.1 requests).
    #[serde(default)]
    pub protocol: crate::protocol::Protocol,
    /// closed, open, burst or churn.
    #[schemars(with = "String", extend("enum" = ["closed", "open", "burst", "churn"]))]
    pub workload: LoadKind,
    /// Bytes of each message (over HTTP: of each request's body, 0 for a
    /// GET).
    pub message_bytes: usize,
    /// Messages in flight per connection (1 for burst and churn).
    pub depth: usize,
    /// `--warmup`: traffic before the measured window, not counted in it.
    pub warmup_seconds: f64,
    /// Length of the measured window.
    pub measured_seconds: f64,
    /// Stopped early by Ctrl-C: the figures cover the run so far.
    pub interrupted: bool,
    pub connections: Connections,
    pub connect: Connect,
    /// Measured round trips (echoes back and checked).
    pub messages: u64,
    /// Bytes written over the whole run, warm-up included.
    pub bytes_sent: u64,
    /// Bytes read back over the whole run, warm-up included.
    pub bytes_received: u64,
    pub throughput: Throughput,
    /// Round trips; in open loop corrected for coordinated omission (from
    /// the intended send time); in closed loop and burst from the write.
    pub latency_us: Percentiles,
    /// Open loop only (`null` otherwise).
    pub open_loop: Option<OpenLoop>,
    /// Burst only (`null` otherwise).
    pub burst: Option<Burst>,
    /// Connections ended early, by kind (every kind listed, zeros too).
    #[schemars(with = "BTreeMap<String, u64>")]
    pub errors: BTreeMap<Failure, u64>,
    /// Over HTTP: the responses by status, reconnects and responses cut
    /// short (`null` for echo).
    #[serde(default)]
    pub http: Option<Http>,
    /// Round trips per connection: closed and open loop (`null` for burst
    /// and churn, whose connections each do the same fixed work).
    pub fairness: Option<Fairness>,
    pub client: Client,
    /// What limited these figures: the client, the server, both, neither,
    /// or unknown, from each side's CPU over the measured window; and CPU
    /// used outside the run.
    #[serde(default)]
    pub limits: super::limit::Limits,
    /// System-wide TCP counters over the run (SYN retransmits and listen
    /// overflows show a backlog that overflowed); `null` when they could not
    /// be read.
    #[schemars(with = "Option<TcpCounters>")]
    pub tcp: serde_json::Value,
    /// Source addresses the connections were spread over (empty: the
    /// kernel's choice).
    pub sources: Vec<String>,
    /// Things a reader must know before trusting the figures.
    pub warnings: Vec<String>,
    /// The agents a run was spread over, each with its own figures, and
    /// how together they started; absent for a run in one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Agents>,
    /// Where the run took place.
    #[schemars(with = "Environment")]
    pub environment: serde_json::Value,
}

/// What an HTTP run's responses were.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Http {
    /// Bytes of one request on the wire, head and body.
    pub request_bytes: usize,
    /// Every response framed, the warm-up's and the drain's too.
    pub responses: u64,
    /// Measured responses by status code (each is in `messages`, as wrk
    /// counts them).
    pub status: BTreeMap<String, u64>,
    /// Measured responses whose status is not 2xx: errors.
    pub errors: u64,
    /// Times a connection was opened again because the server closed it
    /// (after `Connection: close`, or idle).
    pub reconnects: u64,
    /// Responses the server's close cut short.
    pub cut_short: u64,
}

impl Http {
    pub fn of(request_bytes: usize, c: &super::http::Counts) -> Http {
        Http {
            request_bytes,
            responses: c.responses,
            status: c.status.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            errors: c.errors(),
            reconnects: c.reconnects,
            cut_short: c.cut_short,
        }
    }

    /// The non-2xx statuses and cut responses, e.g. `404 ×3, 1 cut short`.
    pub fn error_text(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .status
            .iter()
            .filter(|(code, n)| **n > 0 && !code.starts_with('2'))
            .map(|(code, n)| format!("HTTP {code} ×{n}"))
            .collect();
        if self.cut_short > 0 {
            out.push(format!("{} response(s) cut short", self.cut_short));
        }
        out
    }
}

/// A run spread over agents (`--agent`, or worker processes past the
/// open-files limit).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Agents {
    /// The spread of the agents' start times as the controller measured
    /// them (each `started` less half that agent's round trip), in µs.
    pub start_skew_us: f64,
    pub each: Vec<Agent>,
    /// The network namespaces the agents ran in, each with its TCP
    /// counters over the run (taken once per namespace, however many
    /// agents shared it): a client's SYN retransmits are counted where the
    /// client is, not where the controller is.
    #[serde(default)]
    pub namespaces: Vec<Namespace>,
}

/// A network namespace agents ran in, and what its TCP counters saw.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Namespace {
    /// The host's name.
    pub hostname: String,
    /// `net:[INODE]`, as /proc/self/ns/net names it there.
    pub network_namespace: String,
    /// The agents in it.
    pub agents: Vec<usize>,
    /// Its TCP counters from the first agent's connect to the last one's
    /// end; `null` when an agent could not read them.
    #[schemars(with = "Option<TcpCounters>")]
    pub tcp: serde_json::Value,
}

/// One agent's share, as it measured it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Agent {
    /// Its index, from 0.
    pub agent: usize,
    /// The command line that started it.
    pub launched: String,
    /// Its host's name, from its hello.
    pub hostname: String,
    /// Its network namespace (`net:[INODE]`), from its hello.
    #[serde(default)]
    pub network_namespace: String,
    /// Its non-loopback interface addresses (`NAME ADDRESS`), from its
    /// hello.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// The source addresses it spread its connections over: its
    /// addresses on the way to the target when it has several (empty: the
    /// kernel's choice).
    #[serde(default)]
    pub sources: Vec<String>,
    /// Its fastest round trip over the protocol, in µs.
    pub round_trip_us: f64,
    /// Connections it established.
    pub connections: u64,
    /// Round trips it measured.
    pub messages: u64,
    /// Its 99th percentile latency (corrected), in µs; none without messages.
    pub p99_us: Option<f64>,
    /// Its CPU time, user and system, over its whole run.
    pub cpu_seconds: f64,
    /// Its connections that ended early.
    pub errors: u64,
    /// Why it was lost mid-run (its share is missing from every figure);
    /// none when it reported.
    pub lost: Option<String>,
    /// Where it ran, as its hello said (kernel, CPUs, limits, sysctls);
    /// `null` when it never said hello.
    #[serde(default)]
    #[schemars(with = "Option<Environment>")]
    pub environment: serde_json::Value,
}

impl Report {
    /// Every round trip of the run, warm-up and drain included: the
    /// echoes its bytes read back make, or (HTTP) the responses framed.
    pub fn round_trips(&self) -> u64 {
        match &self.http {
            Some(h) => h.responses,
            None => self.bytes_received / self.message_bytes.max(1) as u64,
        }
    }

    /// Total connections that ended early.
    pub fn failures(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Why a timed closed- or open-loop run measured too little to be a
    /// result: no round trip in the window, or a run (warm-up and window)
    /// shorter than one round over every connection at the rate measured
    /// (N / rate, Little's law), so that the figure is the first turns of
    /// whichever connections happened to come first, not a steady state.
    /// A round as long as the window is fine once the warm-up has gone
    /// round: the window counts the echoes that come back in it.
    ///
    /// `None` when every connection failed: the failures are the cause
    /// ([`Report::no_result`]), and a longer window would not help.
    pub(crate) fn too_little(&self) -> Option<String> {
        let timed = matches!(self.workload, LoadKind::Closed | LoadKind::Open);
        let n = self.connections.requested as u64;
        if !timed
            || self.interrupted
            || self.measured_seconds <= 0.0
            || self.every_connection_failed()
        {
            return None;
        }
        let span = self.warmup_seconds + self.measured_seconds;
        // An open loop sends on its schedule, not in rounds: whatever
        // fell due in the window is the window's steady state.
        if self.messages > 0 && self.workload == LoadKind::Open {
            return None;
        }
        if self.messages > 0 {
            let round = n as f64 * self.measured_seconds / self.messages as f64;
            if round <= span {
                return None;
            }
            return Some(format!(
                "measured {} round trip(s) over {n} connections in the {:.1} s window: at that rate one round over every connection takes {round:.1} s (N / rate, Little's law), longer than the warm-up and the window together ({span:.1} s), so the figure is the first turns of some connections; give a longer warm-up or window, or fewer connections",
                self.messages, self.measured_seconds
            ));
        }
        // Echoes over the whole run, warm-up included, over the warm-up and
        // the window. The echoes drained after the window are in the count
        // but their time is not, so the rate is an upper bound and the
        // round a lower one.
        let echoed = self.round_trips();
        let rate = echoed as f64 / span.max(1e-9);
        if rate <= 0.0 {
            // Not a window too short: no round at all, however long.
            return Some(format!(
                "measured {} round trip(s) over {n} connections: no echo came back at all in {span:.1} s",
                self.messages
            ));
        }
        Some(format!(
            "measured {} round trip(s) over {n} connections in the {:.1} s window: at the at most {rate:.0} round trips/s seen over the whole run, one round over {n} connections takes at least {:.1} s (N / rate, Little's law); give a window longer than a round, or fewer connections",
            self.messages,
            self.measured_seconds,
            n as f64 / rate
        ))
    }

    /// Whether every connection ended with an error: all of them (active
    /// and idle), or for churn, which opens connection after connection,
    /// every one that was tried (none came up).
    fn every_connection_failed(&self) -> bool {
        let failed = self.failures();
        let c = &self.connections;
        failed > 0
            && if self.workload == LoadKind::Churn {
                c.established == 0
            } else {
                failed >= (c.requested + c.idle) as u64
            }
    }

    /// Why the run has no result at all, as one line that starts with the
    /// cause: every connection failed, or not one echo came back over the
    /// whole run (warm-up included). `None` when something was measured,
    /// and for a run cut short (which says so itself). Churn is judged by
    /// its connections alone: it measures connects, echoed or not.
    pub fn no_result(&self) -> Option<String> {
        if self.interrupted {
            return None;
        }
        let target = &self.target;
        let http = self.http.is_some();
        if self.every_connection_failed() {
            let kinds: Vec<(Failure, u64)> = self
                .errors
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(&k, &n)| (k, n))
                .collect();
            let up = self.connections.established > 0;
            return Some(match kinds[..] {
                [(Failure::Refused, _)] => {
                    format!("every connection was refused: is anything listening on {target}?")
                }
                [(Failure::Timeout, _)] if !up => format!(
                    "no connection to {target} came up within the timeout: is it reachable, or is a firewall dropping the SYNs?"
                ),
                [(Failure::Timeout, _)] if http => format!(
                    "every connection timed out waiting for its connect or a response: does {target} speak HTTP/1.1?"
                ),
                [(Failure::Timeout, _)] => format!(
                    "every connection timed out waiting for its connect or its echo: does {target} echo (RFC 862)?"
                ),
                [(Failure::Reset, _)] => format!("{target} reset every connection"),
                [(Failure::Closed, _)] if http => format!(
                    "{target} closed every connection before answering a request: does it speak HTTP/1.1?"
                ),
                [(Failure::Mismatch, _)] if http => format!(
                    "every connection got back bytes that are not an HTTP/1.1 response to its request: is {target} a web server?"
                ),
                [(Failure::Closed, _)] => format!(
                    "{target} closed every connection with echoes owed: does it echo (RFC 862)?"
                ),
                [(Failure::Mismatch, _)] => format!(
                    "every connection got back bytes other than it sent: is {target} an echo server?"
                ),
                [(Failure::AddrNotAvail, _)] => "every connection failed for want of a local port (EADDRNOTAVAIL): spread them over source addresses (--source) or open fewer".to_string(),
                [(Failure::Emfile, _)] => "every connection failed for want of a descriptor (EMFILE): raise the open-files limit (ulimit -n)".to_string(),
                _ => format!(
                    "every connection to {target} failed ({})",
                    kinds
                        .iter()
                        .map(|(k, n)| format!("{k} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        let echoes = self.workload != LoadKind::Churn;
        let n = self.connections.requested;
        if echoes && n > 0 && self.bytes_received == 0 && http {
            return Some(format!(
                "no response came back from {target} on any of the {n} connection(s) in {:.1} s: does it speak HTTP/1.1?",
                self.warmup_seconds + self.measured_seconds
            ));
        }
        if echoes && n > 0 && self.bytes_received == 0 {
            return Some(format!(
                "no echo came back from {target} on any of the {n} connection(s) in {:.1} s: does it echo (RFC 862)?",
                self.warmup_seconds + self.measured_seconds
            ));
        }
        None
    }

    /// The summary a person reads.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let c = &self.connections;
        let _ = writeln!(
            s,
            "c10k load {} — {}{}, {} connections{}, {}{}, {} thread{}{}",
            self.target,
            if self.http.is_some() { "HTTP/1.1 " } else { "" },
            self.workload_text(),
            c.requested,
            if c.idle > 0 {
                format!(" (+{} idle)", c.idle)
            } else {
                String::new()
            },
            match &self.http {
                None => format!("{} B messages", self.message_bytes),
                Some(h) if self.message_bytes == 0 => format!("GET / ({} B)", h.request_bytes),
                Some(h) => format!(
                    "POST / of {} B ({} B with its head)",
                    self.message_bytes, h.request_bytes
                ),
            },
            if self.workload == LoadKind::Closed {
                format!(", depth {}", self.depth)
            } else {
                String::new()
            },
            self.client.threads,
            if self.client.threads == 1 { "" } else { "s" },
            if self.client.processes > 1 {
                format!(" in each of {} processes", self.client.processes)
            } else {
                String::new()
            },
        );
        let _ = writeln!(
            s,
            "  connections  {} up, {} failed; all up in {:.3} s (connect p50 {}, p99 {}, max {})",
            c.established,
            c.failed,
            self.connect.established_seconds,
            us(self.connect.latency_us.p50),
            us(self.connect.latency_us.p99),
            us(self.connect.latency_us.max),
        );
        if self.workload == LoadKind::Churn {
            let _ = writeln!(
                s,
                "  churn        {:.0} connects/s",
                self.connect.per_second
            );
        }
        match &self.http {
            None => {
                let _ = writeln!(
                    s,
                    "  messages     {} in {:.3} s: {:.0} round trips/s, {}/s each way",
                    self.messages,
                    self.measured_seconds,
                    self.throughput.messages_per_second,
                    bytes(self.throughput.bytes_per_second),
                );
            }
            Some(h) => {
                let status: Vec<String> =
                    h.status.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
                let _ = writeln!(
                    s,
                    "  requests     {} in {:.3} s: {:.0} requests/s, {}/s of responses",
                    self.messages,
                    self.measured_seconds,
                    self.throughput.messages_per_second,
                    bytes(self.throughput.bytes_per_second),
                );
                let _ = writeln!(
                    s,
                    "  responses    {}; {} reconnect{}",
                    if status.is_empty() {
                        "none".to_string()
                    } else {
                        status.join(", ")
                    },
                    h.reconnects,
                    if h.reconnects == 1 { "" } else { "s" },
                );
            }
        }
        if self.latency_us.count > 0 {
            let _ = writeln!(s, "  latency      {}", pct(&self.latency_us));
        }
        if let Some(o) = &self.open_loop {
            let _ = writeln!(s, "  uncorrected  {}", pct(&o.latency_uncorrected_us));
            let _ = writeln!(s, "  send lag     {}", pct(&o.send_lag_us));
            if o.interval_us > 0.0 {
                let iv = crate::present::units::seconds(o.interval_us / 1e6);
                let _ = writeln!(
                    s,
                    "  precision    passes {iv} apart (--interval): sends up to {iv} late, echoes read up to {iv} late, both in the latency"
                );
            }
            let _ = writeln!(
                s,
                "  rate         {:.0}/s achieved of {:.0}/s target{}",
                o.achieved_rate,
                o.target_rate,
                if o.missed > 0 {
                    format!(", {} sends skipped (backed up)", o.missed)
                } else {
                    String::new()
                },
            );
        }
        if let Some(b) = &self.burst {
            let spans: Vec<String> = b
                .makespan_us
                .iter()
                .map(|m| m.map_or("incomplete".into(), us))
                .collect();
            let _ = writeln!(s, "  makespan     {}", spans.join(", "));
        }
        if let Some(f) = &self.fairness {
            let _ = writeln!(
                s,
                "  fairness     round trips per connection: min {}, median {}, max {}; Jain's index {}{}",
                f.min,
                f.median,
                f.max,
                f.jain.map_or("-".into(), |j| format!("{j:.3}")),
                if f.starved > 0 {
                    format!("; {} connection(s) got none", f.starved)
                } else {
                    String::new()
                }
            );
        }
        let mut errors: Vec<String> = self
            .errors
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        errors.extend(self.http.iter().flat_map(Http::error_text));
        let _ = writeln!(
            s,
            "  errors       {}",
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }
        );
        let cl = &self.client;
        let _ = writeln!(
            s,
            "  client       CPU {:.2} s user + {:.2} s system, {:.2} µs per message; max RSS {} MiB; {}",
            cl.cpu_user_seconds,
            cl.cpu_system_seconds,
            cl.cpu_per_message_us,
            cl.max_rss_kib / 1024,
            match &cl.cpus {
                Some(v) => format!("pinned to CPUs {v:?}"),
                None => "not pinned".into(),
            }
        );
        if self.messages > 0 {
            let per = |n: u64| n as f64 / self.messages as f64;
            let _ = writeln!(
                s,
                "  syscalls     {:.3} reads, {:.3} writes, {:.3} waits per message",
                per(cl.syscalls.reads),
                per(cl.syscalls.writes),
                per(cl.syscalls.waits),
            );
            let runs = |r: Option<f64>| r.map(|r| format!("{:.3}", r / self.messages as f64));
            if let Some(c) = runs(self.limits.client_runs) {
                let server = runs(self.limits.server_runs)
                    .map_or(String::new(), |s| format!(", the server's {s}"));
                let _ = writeln!(
                    s,
                    "  wake-ups     {c} per message on a CPU for the client{server} (schedstat: \
                     a thread put on a CPU, after a sleep or a preemption)"
                );
            }
        }
        let _ = writeln!(
            s,
            "  limited by   {}: {}",
            self.limits.verdict, self.limits.why
        );
        if let Some(a) = &self.agents {
            let _ = writeln!(
                s,
                "  agents       {} (start skew {:.0} µs): connections, round trips, p99, CPU, errors each",
                a.each.len(),
                a.start_skew_us
            );
            for g in &a.each {
                let figures = match &g.lost {
                    Some(why) => format!("lost: {why}"),
                    None => format!(
                        "{} up, {} round trips, p99 {}, CPU {:.2} s, {} errors",
                        g.connections,
                        g.messages,
                        g.p99_us
                            .map_or("-".into(), |us| crate::present::units::seconds(us / 1e6)),
                        g.cpu_seconds,
                        g.errors
                    ),
                };
                // Its first source, or its first address, and how many
                // more sources it spread over.
                let first = g.sources.first().map(String::as_str).or_else(|| {
                    g.addresses
                        .first()
                        .and_then(|a| a.split_whitespace().nth(1))
                });
                let address = match (first, g.sources.len()) {
                    (Some(a), n) if n > 1 => format!("{a} (+{} sources)", n - 1),
                    (Some(a), _) => a.to_string(),
                    (None, _) => String::new(),
                };
                let _ = writeln!(
                    s,
                    "    {:>3}  {} {} {address}  {figures}",
                    g.agent, g.hostname, g.network_namespace
                );
            }
            // Each namespace's TCP counters, but this one's (in `tcp`).
            let here = |k: &str| self.environment.get(k).and_then(|v| v.as_str());
            for ns in &a.namespaces {
                if here("hostname") == Some(&ns.hostname)
                    && here("network_namespace") == Some(&ns.network_namespace)
                {
                    continue;
                }
                let count = |k: &str| ns.tcp.get(k).and_then(serde_json::Value::as_u64);
                let tcp = match (count("syn_retrans"), count("listen_overflows")) {
                    (Some(r), Some(o)) => format!("{r} SYN retransmits, {o} listen overflows"),
                    _ => "TCP counters unknown".into(),
                };
                let up: u64 = a
                    .each
                    .iter()
                    .filter(|g| ns.agents.contains(&g.agent))
                    .map(|g| g.connections)
                    .sum();
                let _ = writeln!(
                    s,
                    "  namespace    {} {} (agents {}): {up} up; {tcp}",
                    ns.hostname,
                    ns.network_namespace,
                    ns.agents
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        for w in &self.warnings {
            let _ = writeln!(s, "  warning      {w}");
        }
        s
    }

    fn workload_text(&self) -> &'static str {
        match self.workload {
            LoadKind::Closed => "closed loop",
            LoadKind::Open => "open loop",
            other => other.name(),
        }
    }
}

fn pct(p: &Percentiles) -> String {
    format!(
        "min {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        us(p.min),
        us(p.p50),
        us(p.p90),
        us(p.p99),
        us(p.p99_9),
        us(p.max)
    )
}

/// Microseconds as a person reads them: µs, ms or s.
fn us(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.2} ms", v / 1e3)
    } else {
        format!("{v:.1} µs")
    }
}

fn bytes(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} GB", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} kB", v / 1e3)
    } else {
        format!("{v:.0} B")
    }
}

/// A closed-loop report of `connections` that measured `messages` in 10 s
/// and got `echoed_bytes` back over the run: for the unit tests of what
/// reads reports.
#[cfg(test)]
pub(crate) fn example(connections: usize, messages: u64, echoed_bytes: u64) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        command: String::new(),
        target: "127.0.0.1:1".into(),
        protocol: crate::protocol::Protocol::Echo,
        workload: LoadKind::Closed,
        message_bytes: 64,
        depth: 1,
        warmup_seconds: 0.0,
        measured_seconds: 10.0,
        interrupted: false,
        connections: Connections {
            requested: connections,
            idle: 0,
            established: connections as u64,
            failed: 0,
        },
        connect: Connect {
            established_seconds: 1.0,
            per_second: 0.0,
            latency_us: Percentiles::default(),
        },
        messages,
        bytes_sent: echoed_bytes,
        bytes_received: echoed_bytes,
        throughput: Throughput {
            messages_per_second: messages as f64 / 10.0,
            bytes_per_second: 0.0,
        },
        latency_us: Percentiles::default(),
        open_loop: None,
        burst: None,
        errors: BTreeMap::new(),
        http: None,
        fairness: None,
        limits: Default::default(),
        client: Client {
            threads: 1,
            cpus: None,
            cpu_user_seconds: 0.0,
            cpu_system_seconds: 0.0,
            cpu_per_message_us: 0.0,
            max_rss_kib: 0,
            processes: 1,
            syscalls: Syscalls::default(),
        },
        tcp: serde_json::Value::Null,
        sources: Vec::new(),
        warnings: Vec::new(),
        agents: None,
        environment: serde_json::Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(connections: usize, messages: u64, echoed_bytes: u64) -> Report {
        example(connections, messages, echoed_bytes)
    }

    #[test]
    fn a_window_without_a_round_is_not_a_result() {
        // A million connections, 80,000 echoes over the 10 s: a round takes
        // 1,000,000 / 8,000 = 125 s, and not one finished in the window.
        let why = closed(1_000_000, 0, 80_000 * 64)
            .too_little()
            .unwrap_or_default();
        assert!(why.contains("measured 0 round trip(s)"), "{why}");
        assert!(why.contains("8000 round trips/s"), "{why}");
        assert!(why.contains("at least 125.0 s"), "{why}");
        // Nothing came back at all.
        let why = closed(10, 0, 0).too_little().unwrap_or_default();
        assert!(why.contains("no echo came back"), "{why}");
        // A round longer than the whole run (10 s here) is not a result
        // either: 1,000 connections at 99.9 round trips/s take 10.01 s.
        let why = closed(1000, 999, 999 * 64).too_little().unwrap_or_default();
        assert!(why.contains("takes 10.0 s"), "{why}");
        // A round of the whole run, or less, is: each connection had its
        // turns.
        assert!(closed(1000, 1000, 1000 * 64).too_little().is_none());
        assert!(closed(10_000, 1000, 1000 * 64).too_little().is_some());
        let mut warmed = closed(10_000, 1000, 1000 * 64);
        warmed.warmup_seconds = 90.0;
        assert!(warmed.too_little().is_none());
        // Burst and churn do fixed work per connection: not judged here.
        let mut r = closed(10, 0, 0);
        r.workload = LoadKind::Burst;
        assert!(r.too_little().is_none());
    }

    /// `r` with `n` of its connections ended by `kind`.
    fn failed(mut r: Report, kind: Failure, n: u64) -> Report {
        r.errors.insert(kind, n);
        r.connections.failed += n;
        r
    }

    #[test]
    fn a_run_whose_every_connection_failed_has_no_result() {
        // Nothing listening: the cause first, and no advice on the window.
        let mut refused = failed(closed(3, 0, 0), Failure::Refused, 3);
        refused.connections.established = 0;
        let why = refused.no_result().unwrap_or_default();
        assert_eq!(
            why,
            "every connection was refused: is anything listening on 127.0.0.1:1?"
        );
        assert_eq!(refused.too_little(), None);
        // Two causes are both named.
        let mixed = failed(
            failed(closed(3, 0, 0), Failure::Refused, 1),
            Failure::Reset,
            2,
        );
        let why = mixed.no_result().unwrap_or_default();
        assert!(why.starts_with("every connection to 127.0.0.1:1 failed (refused 1, reset 2)"));
        // Every connection failed, even after some echoes (a server that
        // corrupts them all): no connection finished its work.
        let corrupt = failed(closed(4, 16, 16 * 64), Failure::Mismatch, 4);
        assert!(corrupt.no_result().is_some());
        // Idle connections count: one of them standing is not all failed.
        let mut idle = failed(closed(2, 0, 64), Failure::Timeout, 2);
        idle.connections.idle = 1;
        assert_eq!(idle.no_result(), None);
        // Some failed, some measured: a result, with its errors.
        assert_eq!(
            failed(closed(4, 400, 400 * 64), Failure::Reset, 3).no_result(),
            None
        );
        // A cut-short run says so itself.
        let mut cut = refused.clone();
        cut.interrupted = true;
        assert_eq!(cut.no_result(), None);
    }

    #[test]
    fn a_run_without_an_echo_has_no_result() {
        let why = closed(10, 0, 0).no_result().unwrap_or_default();
        assert!(
            why.starts_with("no echo came back from 127.0.0.1:1 on any of the 10"),
            "{why}"
        );
        // Echoes in the warm-up only: a window too short, not no result.
        assert_eq!(closed(10, 0, 640).no_result(), None);
        // Churn measures connects: no echo is not a failure of it...
        let mut churn = closed(10, 0, 0);
        churn.workload = LoadKind::Churn;
        assert_eq!(churn.no_result(), None);
        // ...but not one connection up is.
        let mut churn = failed(churn, Failure::Refused, 50);
        churn.connections.established = 0;
        assert!(churn.no_result().is_some());
    }

    #[test]
    fn fairness_of_round_trips() {
        let f = Fairness::of(&mut [3, 0, 9, 6]);
        assert_eq!((f.min, f.median, f.max, f.starved), (0, 6, 9, 1));
        assert_eq!(f.connections, 4);
        assert!((f.jain.unwrap_or(0.0) - 324.0 / (4.0 * 126.0)).abs() < 1e-12);
        assert_eq!(Fairness::of(&mut []).jain, None);
    }
}
