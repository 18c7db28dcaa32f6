//! One cell's result: one line of `results.jsonl`. A cell that could not be
//! measured (a model refused here, a server that died, a limit hit) is a
//! result too, with its cause, so a run never hides what it could not do.
//!
//! [`Metrics`] flattens a result into the figures that tables, charts and
//! the ranking use, each derived in one place.

use serde::{Deserialize, Serialize};

use super::matrix::CellSpec;
use crate::client::report::Report;
use crate::metrics::kernel::KernelMemory;
use crate::metrics::tree::TreeMemory;

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
}

/// One line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub version: u32,
    #[serde(flatten)]
    pub cell: CellSpec,
    /// 0 for a cell's first run; k for its k-th repeat after a run
    /// disturbed from outside ([`super::disturbed`]). The highest counts.
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
    /// Server CPU over the measured window per measured message, µs.
    pub server_window_cpu_per_message_us: Option<f64>,
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
    /// Server CPU (user + system, whole tree, whole cell) per measured
    /// message, µs. Includes connection setup, so it is an upper bound.
    pub server_cpu_per_message_us: Option<f64>,
    /// Client CPU per measured message over the measured window, µs.
    pub client_cpu_per_message_us: Option<f64>,
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

impl CellResult {
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
            None if load.workload == "closed" && self.messages_per_connection.is_some() => {
                positive(load.measured_seconds)
            }
            None => None,
        };
        let churn = load.workload == "churn";
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
            failed_connections: Some(load.connections.failed as f64),
            jain: load.fairness.as_ref().and_then(|f| f.jain),
            ..Metrics::default()
        };
        if let Some(s) = &self.server {
            if !churn {
                m.held = Some(s.loaded.sockets.saturating_sub(s.idle.sockets) as f64);
            }
            let cpu = s.cpu_user_seconds + s.cpu_system_seconds;
            m.server_cpu_per_message_us = per_message(cpu);
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
        if let (Some(cpus), false) = (load.limits.server_cpus, churn) {
            m.server_window_cpu_per_message_us = per_message(cpus * load.measured_seconds);
            let held = m.held.filter(|&h| h > 0.0).unwrap_or(n);
            m.server_cpu_per_connection_second_us = Some(cpus * 1e6 / held);
        }
        if let (Some(a), Some(b), false) = (self.kernel_before, self.kernel_loaded, churn) {
            let total = |k: KernelMemory| (k.slab_kib + k.tcp_buffers_kib) as f64;
            m.kernel_kib_per_connection = Some((total(b) - total(a)) / n);
        }
        m
    }
}
