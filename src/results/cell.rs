//! One cell's result: one line of `results.jsonl`. A cell that could not be
//! measured (a model refused here, a server that died, a limit hit) is a
//! result too, with its cause, so a run never hides what it could not do.
//!
//! [`Metrics`] flattens a result into the figures that tables, charts and
//! the ranking use, each derived in one place. A derived figure is checked
//! against what bounds it before it is a number ([`Unmeasurable`] says why
//! one is not): the server's CPU over the measured window can be no more
//! than the window's wall time on the CPUs the server may use, nor than
//! the whole cell's CPU, and must be resolved by the kernel's accounting
//! ([`CellResult::server_cpu_per_message`]).

use serde::{Deserialize, Serialize};

use super::matrix::CellSpec;
use crate::client::plan::LoadKind;
use crate::client::report::Report;
use crate::metrics::kernel::KernelMemory;
use crate::metrics::tree::TreeMemory;
use crate::present::units::Scale;
use crate::server::work::Capacity;

/// How a cell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured, with every connection served.
    Ok,
    /// The model cannot run on this machine (it said why); not a number.
    Skipped,
    /// The cell could not be measured or connections failed: see `reason`.
    Failed,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The server side of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSide {
    /// Server processes started (several share the port with SO_REUSEPORT
    /// when one process may not hold every connection).
    pub instances: usize,
    /// The `c10k serve` arguments of each instance.
    pub args: Vec<String>,
    /// CPU time of the whole tree from `wait4`, seconds.
    pub cpu_user_seconds: f64,
    pub cpu_system_seconds: f64,
    /// Peak RSS of the largest process from `wait4`, KiB.
    pub max_rss_kib: u64,
    /// Right after READY, before any connection.
    pub idle: TreeMemory,
    /// With every connection up (before the measured phase).
    pub loaded: TreeMemory,
    /// At the end of the measured phase, for the peaks (sockets are not
    /// counted: 0).
    pub end: TreeMemory,
    /// Each instance's JSON summary line, as printed.
    pub summaries: Vec<serde_json::Value>,
    /// CPUs' worth the tree used while it held no connection, over a short
    /// window right after READY (a model that polls spends it; one that
    /// waits in the kernel does not). Taken in each count's first run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_cpus: Option<f64>,
    /// A resident slot: seconds `cpu_user_seconds` (the tree's CPU from
    /// before the slot to after its drain, read from schedstat while the
    /// server sleeps) may be off ([`crate::metrics::cpu::TreeCpu::error`]
    /// at each end); absent for a cell measured on its own (`wait4`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_error_seconds: Option<f64>,
}

/// Where a resident slot fell: its place in its round's shuffled order,
/// of how many servers resident then, and whether it is the first slot of
/// its server's instance (that instance's memory samples count once,
/// there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    pub position: usize,
    pub of: usize,
    pub first: bool,
    /// Which instance of its model at this count served it (from 1;
    /// [`crate::results::matrix::Instances`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<usize>,
    /// On an instance's first slot: the seconds that instance took to
    /// start and take its connections, before the slot, with the stop of
    /// the instance it replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_seconds: Option<f64>,
    /// CPU seconds every process outside the run used over the slot
    /// ([`crate::metrics::cpu::Outside`]), and the wall seconds that
    /// covers: what else the machine ran beside the measured server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_cpu_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_seconds: Option<f64>,
    /// CPU seconds the hypervisor stole from the machine over the slot
    /// (`/proc/stat`'s steal; 0 below [`crate::metrics::cpu::STOLEN_TICKS`]
    /// clock ticks): a slot it took time from measured the host, not the
    /// model, and runs again ([`crate::analysis::disturbed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stolen_seconds: Option<f64>,
}

/// The latency at one percentile of a capacity slot, µs, and the share
/// of its echoes slower than the target there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantile {
    pub percentile: f64,
    pub us: f64,
    /// The share of the slot's echoes slower than the target at this
    /// percentile (what decides whether the slot met it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above: Option<f64>,
}

/// One line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub version: u32,
    #[serde(flatten)]
    pub cell: CellSpec,
    /// 0 for a cell's first run; k for its k-th repeat after a run
    /// disturbed from outside ([`crate::analysis::disturbed`]). The highest counts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: usize,
    pub status: Status,
    /// Why the cell was skipped or failed.
    pub reason: Option<String>,
    /// When the cell started, seconds since the Unix epoch.
    pub started_unix: f64,
    /// Wall time of the whole cell (start to reap).
    pub wall_seconds: f64,
    /// CPU time (user plus system) of the runner's own process over the
    /// cell: starting and sampling the servers, reading /proc, hearing the
    /// client's processes. Not the client's nor the server's; it competes
    /// with both for the same CPUs. Absent in records written before it
    /// was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_cpu_seconds: Option<f64>,
    /// The runner's CPU from the moment the client was told to go (every
    /// connection up, the servers sampled) until its results were in: the
    /// warm-up, the window, the drain and hearing the results. What it
    /// took from the CPUs the cell measured on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_traffic_cpu_seconds: Option<f64>,
    pub server: Option<ServerSide>,
    /// Kernel memory before the server started and with every connection
    /// up (both ends of each loopback connection are in it).
    pub kernel_before: Option<KernelMemory>,
    pub kernel_loaded: Option<KernelMemory>,
    /// What the client measured (its environment is in `environment.json`).
    pub load: Option<Report>,
    /// Per-connection CSV of this cell, relative to the results directory.
    pub per_connection_csv: Option<String>,
    /// Messages each connection sent, when the cell was a fixed amount of
    /// work rather than a timed window.
    pub messages_per_connection: Option<u64>,
    /// A micro-benchmark cell's figures (no server, no load).
    #[serde(default)]
    pub bench: Option<BenchFigures>,
    /// A cell with work (`--work`): the requests its servers did, their
    /// capacity and the bound the work allows ([`crate::analysis::bound`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_done: Option<WorkDone>,
    /// Measured in a resident slot ([`crate::runner::resident`]): where in
    /// its round; absent for a cell measured on its own, one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Slot>,
    /// A capacity search's slot: the latency (corrected for coordinated
    /// omission) at each percentile its targets name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quantiles: Vec<Quantile>,
    /// The plan's settings the cell was measured under
    /// ([`super::identity::settings`]), so that no other plan takes it
    /// for one of its own; absent in records written before they carried
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
}

/// What one micro-benchmark cell measured, in the units of [`Metrics`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchFigures {
    /// Per task created (spawn), per wait call (dispatch), connect p50
    /// (herd).
    pub time_seconds: Option<f64>,
    /// Accepts per second (accept).
    pub connects_per_second: Option<f64>,
    pub connect_p50_us: Option<f64>,
    pub connect_p99_us: Option<f64>,
    pub wakeups_per_connection: Option<f64>,
    pub failed_accepts_per_connection: Option<f64>,
    /// Jain's fairness index of the accepts over the workers.
    pub jain: Option<f64>,
    /// The benchmark's own JSON for this variant and size.
    pub raw: serde_json::Value,
}

/// The figures of one cell, each `None` where it does not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Burst: seconds from the first send to the last echo (mean over the
    /// rounds). Fixed message count: seconds of the measured phase.
    pub time_seconds: Option<f64>,
    /// Measured round trips per second.
    pub throughput: Option<f64>,
    pub latency_mean_us: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p90_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub latency_p99_9_us: Option<f64>,
    /// Open loop: p99 from each message's actual write, beside the
    /// corrected one.
    pub uncorrected_p99_us: Option<f64>,
    /// Open loop: p99 of how late messages were written after they were
    /// due (the client's own lateness).
    pub send_lag_p99_us: Option<f64>,
    /// Open loop: measured messages per second, against the rate asked.
    pub achieved_rate: Option<f64>,
    /// Share of the connections that completed at least one measured round
    /// trip (1.0: every one echoed).
    pub echoed_share: Option<f64>,
    /// Connections the server held when sampled with every one up (its
    /// sockets then less its sockets idle); the client's count for a
    /// server c10k did not start.
    pub held: Option<f64>,
    /// Server CPU over the measured window per connection held, per second
    /// of the window, µs: with few messages, what holding a connection
    /// costs (an event loop waiting on epoll pays nothing, one scanning
    /// every descriptor pays per descriptor).
    pub server_cpu_per_connection_second_us: Option<f64>,
    /// Peak resident memory of the client's processes, summed, per
    /// connection, KiB (program pages of each process included).
    pub client_kib_per_connection: Option<f64>,
    /// Seconds from the first connect to the last connection up.
    pub connect_seconds: Option<f64>,
    /// SYNs sent again over the cell (a connect that found a listen queue
    /// full waits a second or more for its retransmit).
    pub syn_retrans: Option<f64>,
    /// CPU of the runner's own process over the cell, seconds.
    pub runner_cpu_seconds: Option<f64>,
    /// CPU of the runner's own process while the client sent, seconds.
    pub runner_traffic_cpu_seconds: Option<f64>,
    /// Churn: connections per second; otherwise the rate they came up at.
    pub connects_per_second: Option<f64>,
    pub connect_p50_us: Option<f64>,
    pub connect_p99_us: Option<f64>,
    /// Server CPU (whole tree) over the measured window per measured
    /// message, µs: for a burst, the CPU of the rounds (the window is
    /// taken with the client's loops parked on either side of them).
    /// `None` where it does not apply or is not measurable within its
    /// bounds ([`CellResult::server_cpu_per_message`] says why).
    pub server_cpu_per_message_us: Option<f64>,
    /// Server CPU (user + system, whole tree, whole cell: start, connects,
    /// idle time) per measured message, µs: what bounds the window's
    /// figure, not a cost per message (a burst's few messages carry the
    /// whole cell).
    pub server_cell_cpu_per_message_us: Option<f64>,
    /// Client CPU per measured message over the measured window, µs.
    pub client_cpu_per_message_us: Option<f64>,
    /// Times the client's threads were put on a CPU over the window, per
    /// measured message: its wake-ups (and returns after preemption).
    pub client_runs_per_message: Option<f64>,
    /// The server's, as the client's.
    pub server_runs_per_message: Option<f64>,
    /// Churn: server CPU (whole tree, whole cell) per connection, µs.
    pub server_cpu_per_connection_us: Option<f64>,
    /// Server anonymous PSS added per connection (loaded minus idle), KiB.
    pub user_kib_per_connection: Option<f64>,
    /// Server virtual size added per connection, KiB.
    pub virtual_kib_per_connection: Option<f64>,
    /// Kernel slab + TCP buffers added per connection (both ends), KiB.
    pub kernel_kib_per_connection: Option<f64>,
    /// CPUs' worth the server used with no connection ([`ServerSide::idle_cpus`]).
    pub server_idle_cpus: Option<f64>,
    /// Summed VmPeak of the server tree with every connection up, KiB.
    pub vm_peak_kib: Option<f64>,
    /// Summed VmHWM of the server tree at the end, KiB.
    pub vm_hwm_kib: Option<f64>,
    /// Connections that ended early.
    pub failed_connections: Option<f64>,
    /// Readiness loops: descriptors a wait returned, on average over the
    /// servers' whole lives (connection set-up included).
    pub events_per_wait: Option<f64>,
    /// `sigio`: times the real-time signal queue overflowed and every
    /// connection was polled instead, over the servers' lives.
    pub overflows: Option<f64>,
    /// Herd: worker wake-ups per connection.
    pub wakeups_per_connection: Option<f64>,
    /// Herd: accepts that found nothing (EAGAIN) per connection.
    pub failed_accepts_per_connection: Option<f64>,
    /// Jain's fairness index: of the accepts over the workers (herd), or
    /// of the round trips over the connections (closed and open loop).
    pub jain: Option<f64>,
    /// `--work`: requests whose work the server did over the whole cell
    /// (its summaries).
    pub work_requests: Option<f64>,
    /// `--work`: the throughput the work alone allows, per second
    /// ([`crate::analysis::bound`]).
    pub work_bound_per_second: Option<f64>,
    /// `--work`, closed and open loops: the measured throughput over that
    /// bound (1.0: all of it; clearly above 1 is a defect).
    pub work_bound_share: Option<f64>,
}

impl Metrics {
    /// The figure that ranks models in an experiment.
    pub fn primary(&self, p: super::matrix::Primary) -> Option<f64> {
        use super::matrix::Primary;
        match p {
            Primary::Time => self.time_seconds,
            Primary::Throughput => self.throughput,
            Primary::AcceptRate => self.connects_per_second,
            Primary::Latency => self.latency_p99_us,
        }
    }
}

/// Of a figure, this share may be unresolved by the kernel's accounting
/// and the figure still be given.
pub(crate) const RESOLVED_SHARE: f64 = 0.1;

/// Why a derived figure is not a number: it fails what bounds it, or the
/// kernel's accounting cannot resolve it.
#[derive(Debug, Clone, PartialEq)]
pub enum Unmeasurable {
    /// The kernel counts a thread that is on a CPU when read at its next
    /// tick: the figure is known only to ± `error` seconds of CPU, in a
    /// window of `window` seconds.
    Unresolved { error: f64, window: f64 },
    /// More CPU than the window holds: `cpu` seconds in `span` seconds of
    /// wall time on `cpus` CPUs.
    OverWindow { cpu: f64, span: f64, cpus: f64 },
    /// More CPU in the window than the whole cell used (`wait4`).
    OverCell { cpu: f64, cell: f64 },
    /// The server's CPU over the window was not recorded (results written
    /// before it was kept, or a server not observed).
    NotRecorded,
}

impl Unmeasurable {
    /// A table cell: short, and never a number that could pass for the
    /// figure.
    pub fn short(&self) -> String {
        match self {
            Unmeasurable::Unresolved { error, .. } => {
                format!(
                    "unresolved (± {} CPU)",
                    crate::present::units::seconds(*error)
                )
            }
            Unmeasurable::OverWindow { .. } => "not measurable (over its window)".into(),
            Unmeasurable::OverCell { .. } => "not measurable (over its cell)".into(),
            Unmeasurable::NotRecorded => "not recorded".into(),
        }
    }
}

impl std::fmt::Display for Unmeasurable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = crate::present::units::seconds;
        match *self {
            Unmeasurable::Unresolved { error, window } => write!(
                f,
                "the server's CPU over the {} window is known only to ± {}: the kernel counts a \
                 thread on a CPU (or waiting for one) when read at its next tick",
                t(window),
                t(error)
            ),
            Unmeasurable::OverWindow { cpu, span, cpus } => write!(
                f,
                "the server's CPU over the window read {}, more than {} of wall time on {cpus} \
                 CPU{} holds",
                t(cpu),
                t(span),
                if cpus == 1.0 { "" } else { "s" }
            ),
            Unmeasurable::OverCell { cpu, cell } => write!(
                f,
                "the server's CPU over the window read {}, more than the {} of the whole cell",
                t(cpu),
                t(cell)
            ),
            Unmeasurable::NotRecorded => write!(
                f,
                "the server's CPU over the measured window was not recorded"
            ),
        }
    }
}

/// Server CPU seconds over a window, checked against its bounds: at most
/// `span` × `cpus` (no CPU outside the span is counted) and the whole
/// cell's `cell`, each less the `error` the accounting allows, and resolved
/// to [`RESOLVED_SHARE`] of itself. Pure arithmetic, for the tests.
pub(crate) fn check_window_cpu(
    cpu: f64,
    error: f64,
    span: f64,
    cpus: f64,
    cell: f64,
    window: f64,
) -> Result<f64, Unmeasurable> {
    // Rounding of the inputs (getrusage's µs, f64 sums).
    const SLACK: f64 = 2e-6;
    let cpus = cpus.max(1.0);
    if cpu - error > span * cpus + SLACK {
        return Err(Unmeasurable::OverWindow { cpu, span, cpus });
    }
    if cpu - error > cell + SLACK {
        return Err(Unmeasurable::OverCell { cpu, cell });
    }
    if error > RESOLVED_SHARE * cpu {
        return Err(Unmeasurable::Unresolved { error, window });
    }
    Ok(cpu)
}

/// What a model's runs at one count say of a checked figure.
#[derive(Debug, Clone, PartialEq)]
pub struct RunsFigure {
    /// The median of the runs whose figure is within its bounds.
    pub median: Option<f64>,
    /// Runs with a figure within its bounds.
    pub measured: usize,
    /// Runs with a figure or a reason.
    pub runs: usize,
    /// Why the others have none (the first such run's reason).
    pub unmeasurable: Option<Unmeasurable>,
}

impl RunsFigure {
    /// The median of the runs' figures within their bounds; `None` when
    /// no run has the figure or a reason.
    pub fn of(
        cells: &[&CellResult],
        figure: impl Fn(&CellResult) -> Option<Result<f64, Unmeasurable>>,
    ) -> Option<RunsFigure> {
        let all: Vec<Result<f64, Unmeasurable>> = cells.iter().filter_map(|c| figure(c)).collect();
        if all.is_empty() {
            return None;
        }
        let values: Vec<f64> = all
            .iter()
            .filter_map(|r| r.as_ref().ok().copied())
            .collect();
        Some(RunsFigure {
            median: crate::stats::Summary::of(&values).map(|s| s.median),
            measured: values.len(),
            runs: all.len(),
            unmeasurable: all.into_iter().find_map(Result::err),
        })
    }

    /// The median when most runs have the figure, else `None`.
    pub fn value(&self) -> Option<f64> {
        self.median.filter(|_| self.measured * 2 > self.runs)
    }

    /// What the runs say, as a table column and results.json hold it.
    pub fn cost(&self) -> RunsCost {
        RunsCost {
            us: self.value(),
            measured: self.measured,
            runs: self.runs,
            unmeasurable: self.unmeasurable.as_ref().map(Unmeasurable::short),
        }
    }
}

/// A checked figure over a model's runs ([`RunsFigure`]), in µs, as the
/// ranking shows it and results.json holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunsCost {
    /// The median µs of the runs within bounds, when most runs have one.
    pub us: Option<f64>,
    /// Runs with the figure within its bounds, of those with a figure or
    /// a reason.
    pub measured: usize,
    pub runs: usize,
    /// Why the others have none (the first such run's reason), in words.
    pub unmeasurable: Option<String>,
}

impl RunsCost {
    /// For a table column in `scale`: the median when most runs have the
    /// figure (with how many when not all do), or why most have none.
    pub fn text(&self, scale: &Scale) -> String {
        match (self.us, &self.unmeasurable) {
            (Some(v), _) if self.measured == self.runs => scale.format(v),
            (Some(v), _) => format!(
                "{} ({} of {} runs)",
                scale.format(v),
                self.measured,
                self.runs
            ),
            (None, Some(u)) => u.clone(),
            (None, None) => "–".into(),
        }
    }
}

impl CellResult {
    /// A record of `cell` with `status` and nothing measured yet: the
    /// start every record is built from, its figures filled in after.
    pub fn new(cell: CellSpec, status: Status) -> CellResult {
        CellResult {
            version: super::matrix::RESULTS_VERSION,
            cell,
            repeat: 0,
            status,
            reason: None,
            started_unix: 0.0,
            wall_seconds: 0.0,
            runner_cpu_seconds: None,
            runner_traffic_cpu_seconds: None,
            server: None,
            kernel_before: None,
            kernel_loaded: None,
            load: None,
            per_connection_csv: None,
            messages_per_connection: None,
            bench: None,
            work_done: None,
            slot: None,
            quantiles: Vec::new(),
            plan: None,
        }
    }

    /// The server's CPU (its whole tree) over the measured window per
    /// measured message, µs, checked against what bounds it
    /// ([`check_window_cpu`]): the window's wall time on the server's CPUs,
    /// the whole cell's CPU, and the kernel's resolution. `None` where it
    /// does not apply: a cell not measured, churn (no messages to carry
    /// it), a server c10k did not start, no message echoed.
    pub fn server_cpu_per_message(&self) -> Option<Result<f64, Unmeasurable>> {
        let load = self.load.as_ref().filter(|_| self.status == Status::Ok)?;
        let server = self.server.as_ref()?;
        if load.workload == LoadKind::Churn || load.messages == 0 {
            return None;
        }
        let l = &load.limits;
        // A resident slot: the tree's CPU from before the slot to after
        // its drain, read while the server sleeps, over every echo of the
        // slot (its bytes read back, warm-up and drain included).
        if let (Some(_), Some(error)) = (&self.slot, server.cpu_error_seconds) {
            let echoes = load.round_trips();
            if echoes > 0 {
                let cpu = server.cpu_user_seconds + server.cpu_system_seconds;
                let wall = self.wall_seconds;
                let cpus = l.server_capacity.unwrap_or(1.0);
                return Some(
                    check_window_cpu(cpu, error, wall, cpus, cpu, wall)
                        .map(|cpu| cpu * 1e6 / echoes as f64),
                );
            }
        }
        let cell = server.cpu_user_seconds + server.cpu_system_seconds;
        let (cpu, span, error, window) = match (l.server_cpu_seconds, l.server_cpus) {
            (Some(cpu), _) => {
                let window = l.window_seconds.unwrap_or(load.measured_seconds);
                (
                    cpu,
                    l.server_span_seconds.unwrap_or(window),
                    l.server_cpu_error_seconds.unwrap_or(0.0),
                    window,
                )
            }
            // Written before the window's CPU was kept: the share the
            // verdict was given with, over the measured seconds.
            (None, Some(cpus)) => {
                let w = load.measured_seconds;
                (cpus * w, w, 0.0, w)
            }
            (None, None) => return Some(Err(Unmeasurable::NotRecorded)),
        };
        let cpus = l.server_capacity.unwrap_or(1.0);
        Some(
            check_window_cpu(cpu, error, span, cpus, cell, window)
                .map(|cpu| cpu * 1e6 / load.messages as f64),
        )
    }

    /// The figures of this cell (all `None` unless it was measured).
    pub fn metrics(&self) -> Metrics {
        if let (Some(b), Status::Ok) = (&self.bench, self.status) {
            return Metrics {
                time_seconds: b.time_seconds,
                connects_per_second: b.connects_per_second,
                connect_p50_us: b.connect_p50_us,
                connect_p99_us: b.connect_p99_us,
                wakeups_per_connection: b.wakeups_per_connection,
                failed_accepts_per_connection: b.failed_accepts_per_connection,
                jain: b.jain,
                ..Metrics::default()
            };
        }
        let Some(load) = self.load.as_ref().filter(|_| self.status == Status::Ok) else {
            return Metrics::default();
        };
        let n = self.cell.connections.max(1) as f64;
        let messages = load.messages as f64;
        let positive = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
        let per_message = |cpu: f64| (messages > 0.0).then(|| cpu * 1e6 / messages);
        let has_latency = load.latency_us.count > 0;
        let lat = |v: f64| has_latency.then_some(v);
        let time_seconds = match &load.burst {
            Some(b) => {
                let done: Vec<f64> = b.makespan_us.iter().flatten().copied().collect();
                (!done.is_empty()).then(|| done.iter().sum::<f64>() / done.len() as f64 / 1e6)
            }
            None if load.workload == LoadKind::Closed && self.messages_per_connection.is_some() => {
                positive(load.measured_seconds)
            }
            None => None,
        };
        let churn = load.workload == LoadKind::Churn;
        let mut m = Metrics {
            time_seconds,
            throughput: (!churn).then_some(load.throughput.messages_per_second),
            latency_mean_us: lat(load.latency_us.mean),
            latency_p50_us: lat(load.latency_us.p50),
            latency_p90_us: lat(load.latency_us.p90),
            latency_p99_us: lat(load.latency_us.p99),
            latency_p99_9_us: lat(load.latency_us.p99_9),
            uncorrected_p99_us: load
                .open_loop
                .as_ref()
                .filter(|o| o.latency_uncorrected_us.count > 0)
                .map(|o| o.latency_uncorrected_us.p99),
            send_lag_p99_us: load
                .open_loop
                .as_ref()
                .filter(|o| o.send_lag_us.count > 0)
                .map(|o| o.send_lag_us.p99),
            achieved_rate: load.open_loop.as_ref().map(|o| o.achieved_rate),
            echoed_share: load.fairness.as_ref().map(|f| {
                f.connections.saturating_sub(f.starved) as f64
                    / load.connections.requested.max(1) as f64
            }),
            held: (!churn).then_some(load.connections.established as f64),
            connect_seconds: (!churn).then_some(load.connect.established_seconds),
            syn_retrans: load
                .tcp
                .get("syn_retrans")
                .and_then(serde_json::Value::as_u64)
                .map(|v| v as f64),
            runner_cpu_seconds: self.runner_cpu_seconds,
            runner_traffic_cpu_seconds: self.runner_traffic_cpu_seconds,
            client_kib_per_connection: (!churn && load.client.max_rss_kib > 0)
                .then(|| load.client.max_rss_kib as f64 / n),
            connects_per_second: positive(load.connect.per_second),
            connect_p50_us: (load.connect.latency_us.count > 0)
                .then_some(load.connect.latency_us.p50),
            connect_p99_us: (load.connect.latency_us.count > 0)
                .then_some(load.connect.latency_us.p99),
            client_cpu_per_message_us: per_message(
                load.client.cpu_user_seconds + load.client.cpu_system_seconds,
            ),
            client_runs_per_message: load
                .limits
                .client_runs
                .filter(|_| load.messages > 0)
                .map(|r| r / load.messages as f64),
            server_runs_per_message: load
                .limits
                .server_runs
                .filter(|_| load.messages > 0)
                .map(|r| r / load.messages as f64),
            failed_connections: Some(load.connections.failed as f64),
            jain: load.fairness.as_ref().and_then(|f| f.jain),
            ..Metrics::default()
        };
        if let Some(s) = &self.server {
            if !churn {
                m.held = Some(s.loaded.sockets.saturating_sub(s.idle.sockets) as f64);
            }
            let cpu = s.cpu_user_seconds + s.cpu_system_seconds;
            m.server_cell_cpu_per_message_us = per_message(cpu);
            m.server_cpu_per_message_us = self.server_cpu_per_message().and_then(Result::ok);
            let opened = load.connections.established as f64;
            if churn && opened > 0.0 {
                m.server_cpu_per_connection_us = Some(cpu * 1e6 / opened);
            }
            let grew = |a: u64, b: u64| b as f64 - a as f64;
            if !churn {
                m.user_kib_per_connection =
                    Some(grew(s.idle.pss_anon_kib, s.loaded.pss_anon_kib) / n);
                m.virtual_kib_per_connection =
                    Some(grew(s.idle.vm_size_kib, s.loaded.vm_size_kib) / n);
            }
            m.server_idle_cpus = s.idle_cpus.map(|c| c.max(0.0));
            m.vm_peak_kib = positive(s.loaded.vm_peak_kib.max(s.end.vm_peak_kib) as f64);
            m.vm_hwm_kib = positive(s.end.vm_hwm_kib.max(s.loaded.vm_hwm_kib) as f64);
            let waits = |k: &str| -> u64 {
                let of = |v: &serde_json::Value| v["waits"][k].as_u64().unwrap_or(0);
                s.summaries.iter().map(of).sum()
            };
            let (calls, events) = (waits("waits"), waits("events"));
            if calls > 0 {
                m.events_per_wait = Some(events as f64 / calls as f64);
                m.overflows = Some(waits("overflows") as f64);
            }
        }
        // Holding a connection: the window's CPU, where it is measurable.
        let measurable = !matches!(self.server_cpu_per_message(), Some(Err(_)));
        if let (Some(cpus), false, true) = (load.limits.server_cpus, churn, measurable) {
            let held = m.held.filter(|&h| h > 0.0).unwrap_or(n);
            m.server_cpu_per_connection_second_us = Some(cpus * 1e6 / held);
        }
        if let (Some(a), Some(b), false) = (self.kernel_before, self.kernel_loaded, churn) {
            let total = |k: KernelMemory| (k.slab_kib + k.tcp_buffers_kib) as f64;
            m.kernel_kib_per_connection = Some((total(b) - total(a)) / n);
        }
        if let Some(w) = &self.work_done {
            m.work_requests = Some(w.requests as f64);
            m.work_bound_per_second = w.bound.as_ref().map(|b| b.per_second);
            // A throughput is requests per second in a timed loop only (a
            // burst's few messages or churn's connections are not).
            let looped = matches!(load.workload, LoadKind::Closed | LoadKind::Open);
            m.work_bound_share = match (&w.bound, m.throughput) {
                (Some(b), Some(t)) if looped && b.per_second > 0.0 => Some(t / b.per_second),
                _ => None,
            };
        }
        m
    }
}

/// The throughput the work allows, and the term that set it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bound {
    pub per_second: f64,
    /// `1 thread / 1 ms each`, `2 cores / 100 µs of CPU`, …
    pub why: String,
}

/// What a cell's servers did under its work, and what the work allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkDone {
    /// Requests whose work the servers did over the whole cell
    /// (connections coming up, the warm-up, the window and the drain),
    /// summed over its instances.
    pub requests: u64,
    /// Bytes of one request: the workload's message.
    pub request_bytes: usize,
    /// What the model's handlers can do at once, as its server reported
    /// it (handlers summed over the instances sharing the port).
    pub capacity: Capacity,
    /// The throughput the work alone allows at the cell's connections and
    /// depth (for an open loop, at most its offered rate).
    pub bound: Option<Bound>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured burst cell of `messages` messages: the server's CPU over
    /// the window `cpu` ± `error`, in `span` seconds on one CPU, `cell`
    /// over the whole cell.
    fn burst(messages: u64, cpu: f64, error: f64, span: f64, cell: f64) -> CellResult {
        let mut c: CellResult = serde_json::from_value(serde_json::json!({
            "version": 1, "id": "m/c2/r1", "index": 0, "model": "m", "connections": 2,
            "run": 1, "status": "ok", "reason": null, "started_unix": 0.0,
            "wall_seconds": 0.1, "server": null, "kernel_before": null,
            "kernel_loaded": null, "load": null, "per_connection_csv": null,
            "messages_per_connection": null
        }))
        .expect("a cell");
        let mut load = crate::client::report::example(2, messages, 64 * messages);
        load.workload = LoadKind::Burst;
        load.measured_seconds = span;
        load.limits.window_seconds = Some(span * 0.9);
        load.limits.server_cpu_seconds = Some(cpu);
        load.limits.server_span_seconds = Some(span);
        load.limits.server_cpu_error_seconds = Some(error);
        load.limits.server_capacity = Some(1.0);
        load.limits.server_cpus = Some(cpu / span);
        c.load = Some(load);
        c.server = Some(ServerSide {
            instances: 1,
            args: Vec::new(),
            cpu_user_seconds: cell / 2.0,
            cpu_system_seconds: cell / 2.0,
            max_rss_kib: 0,
            idle: TreeMemory::default(),
            loaded: TreeMemory::default(),
            end: TreeMemory::default(),
            summaries: Vec::new(),
            idle_cpus: None,
            cpu_error_seconds: None,
        });
        c
    }

    #[test]
    fn a_slot_counts_the_servers_cpu_asleep_at_both_ends_over_every_echo() {
        // A closed-loop slot: 1,000 messages in its window, 1,500 echoed
        // over the whole slot (warm-up and drain), 0.15 s of server CPU
        // read while it slept: 100 µs per echo, not 150 per measured one.
        let mut c = burst(1000, 0.0, 0.0, 0.2, 0.15);
        c.wall_seconds = 0.31;
        c.slot = Some(Slot {
            position: 1,
            of: 2,
            first: true,
            instance: None,
            start_seconds: None,
            outside_cpu_seconds: None,
            outside_seconds: None,
            stolen_seconds: None,
        });
        if let Some(load) = c.load.as_mut() {
            load.workload = LoadKind::Closed;
            load.message_bytes = 64;
            load.bytes_received = 64 * 1500;
        }
        if let Some(s) = c.server.as_mut() {
            s.cpu_error_seconds = Some(0.0);
        }
        let v = c
            .server_cpu_per_message()
            .expect("applies")
            .expect("resolved");
        assert!((v - 100.0).abs() < 1e-9, "{v}");
        // A thread on a CPU at a read, 4 ms against 150: still resolved.
        if let Some(s) = c.server.as_mut() {
            s.cpu_error_seconds = Some(0.004);
        }
        assert!(c.server_cpu_per_message().expect("applies").is_ok());
        // 40 ms against 150 is not.
        if let Some(s) = c.server.as_mut() {
            s.cpu_error_seconds = Some(0.04);
        }
        assert!(matches!(
            c.server_cpu_per_message(),
            Some(Err(Unmeasurable::Unresolved { .. }))
        ));
        // Without the error (a record of a cell measured on its own), the
        // window's figure, as before.
        if let Some(s) = c.server.as_mut() {
            s.cpu_error_seconds = None;
        }
        assert!(matches!(
            c.server_cpu_per_message(),
            Some(Ok(v)) if v == 0.0
        ));
    }

    #[test]
    fn window_cpu_within_its_bounds_is_the_figure() {
        // 150 µs of server CPU over a 200 µs window, two messages: 75 µs
        // each, at most the window's 100 µs each on one CPU.
        let c = burst(2, 150e-6, 0.0, 200e-6, 3e-3);
        let v = c
            .server_cpu_per_message()
            .expect("applies")
            .expect("within bounds");
        assert!((v - 75.0).abs() < 1e-9, "{v}");
        assert!(v <= 200e-6 * 1e6 / 2.0);
        let m = c.metrics();
        assert_eq!(m.server_cpu_per_message_us, Some(v));
        // The whole cell over the two messages is kept apart, as the bound.
        assert!((m.server_cell_cpu_per_message_us.unwrap_or(0.0) - 1500.0).abs() < 1e-6);
        assert!(m.server_cpu_per_connection_second_us.is_some());
    }

    #[test]
    fn more_cpu_than_the_window_holds_is_not_a_figure() {
        // 300 µs of CPU in a 200 µs window on one CPU cannot be.
        let c = burst(2, 300e-6, 0.0, 200e-6, 3e-3);
        let e = c.server_cpu_per_message().expect("applies").unwrap_err();
        assert!(matches!(e, Unmeasurable::OverWindow { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("more than 200 µs of wall time on 1 CPU"),
            "{e}"
        );
        assert_eq!(c.metrics().server_cpu_per_message_us, None);
        assert_eq!(c.metrics().server_cpu_per_connection_second_us, None);
        // On two CPUs it could.
        assert!(check_window_cpu(300e-6, 0.0, 200e-6, 2.0, 1.0, 200e-6).is_ok());
        // Within what the accounting allows, it still could.
        assert!(check_window_cpu(210e-6, 20e-6, 200e-6, 1.0, 1.0, 200e-6).is_ok());
    }

    #[test]
    fn more_cpu_than_the_whole_cell_is_not_a_figure() {
        let c = burst(2, 150e-6, 0.0, 200e-6, 100e-6);
        let e = c.server_cpu_per_message().expect("applies").unwrap_err();
        assert!(matches!(e, Unmeasurable::OverCell { .. }), "{e}");
        assert!(e.short().starts_with("not measurable"));
    }

    #[test]
    fn cpu_the_kernel_did_not_resolve_is_not_a_figure() {
        // A server spinning on its CPU at both ends of a 10 ms window:
        // its time is known to two 10 ms ticks.
        let c = burst(2, 3e-3, 20e-3, 10e-3, 40e-3);
        let e = c.server_cpu_per_message().expect("applies").unwrap_err();
        assert!(matches!(e, Unmeasurable::Unresolved { .. }), "{e}");
        assert_eq!(e.short(), "unresolved (± 20 ms CPU)");
        // An error of a tenth of the figure is resolved; more is not.
        assert!(check_window_cpu(1.0, 0.1, 2.0, 1.0, 2.0, 2.0).is_ok());
        assert!(check_window_cpu(1.0, 0.11, 2.0, 1.0, 2.0, 2.0).is_err());
        // Nothing used, nothing unresolved: zero is a figure.
        assert_eq!(check_window_cpu(0.0, 0.0, 2.0, 1.0, 2.0, 2.0), Ok(0.0));
    }

    #[test]
    fn a_window_never_recorded_says_so() {
        let mut c = burst(2, 150e-6, 0.0, 200e-6, 3e-3);
        if let Some(l) = c.load.as_mut() {
            l.limits.server_cpu_seconds = None;
            l.limits.server_cpus = None;
        }
        assert_eq!(
            c.server_cpu_per_message(),
            Some(Err(Unmeasurable::NotRecorded))
        );
        // Written before the raw window was kept: the verdict's share over
        // the measured seconds, checked the same way.
        if let Some(l) = c.load.as_mut() {
            l.limits.server_cpus = Some(0.75);
        }
        let v = c
            .server_cpu_per_message()
            .expect("applies")
            .expect("within bounds");
        assert!((v - 75.0).abs() < 1e-9, "{v}");
    }

    #[test]
    fn runs_give_the_median_of_those_within_bounds() {
        let ok = [
            burst(2, 100e-6, 0.0, 200e-6, 3e-3),
            burst(2, 150e-6, 0.0, 200e-6, 3e-3),
            burst(2, 120e-6, 0.0, 200e-6, 3e-3),
        ];
        let bad = burst(2, 3e-3, 20e-3, 10e-3, 40e-3);
        let of = |cells: &[&CellResult]| {
            RunsFigure::of(cells, CellResult::server_cpu_per_message).expect("figures")
        };
        let all = of(&[&ok[0], &ok[1], &ok[2]]);
        assert_eq!(all.value(), Some(60.0));
        let scale = Scale::micros([60.0]);
        assert_eq!(all.cost().text(&scale), "60 µs");
        let most = of(&[&ok[0], &ok[1], &bad]);
        assert_eq!(most.cost().text(&scale), "62.5 µs (2 of 3 runs)");
        let few = of(&[&ok[0], &bad, &bad]);
        assert_eq!(few.value(), None);
        assert_eq!(few.cost().text(&scale), "unresolved (± 20 ms CPU)");
        assert_eq!(
            RunsFigure::of(&[], CellResult::server_cpu_per_message),
            None
        );
    }
}
