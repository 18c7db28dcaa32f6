//! What limited a measurement: the bottleneck verdict and the interference.
//!
//! A throughput figure is the server's only if the client had CPU to spare.
//! Over the measured window each side's demand for CPU (the time it ran
//! plus the time it was runnable and waited for a CPU, from schedstat) is
//! set against what it could use (its threads on the CPUs it may run on):
//! a side at 90 % or more of that is saturated. Time the hypervisor stole
//! from a side's CPUs is taken out of what it could use. The verdict is
//!
//! - `client`: the client was saturated and the server was not: the figure
//!   is a lower bound of the server;
//! - `both`: both were (two sides sharing a CPU both wait for it);
//! - `server`: the client had CPU to spare, so the server set the pace:
//!   with its CPU, or by waiting (sleeps, locks, wake-ups, the path between);
//!   in an open loop that kept its rate, a server whose demand (running
//!   plus waiting in a run queue) passed 90 %: its queue for a CPU set the
//!   latency;
//! - `neither`: an open loop kept its target rate and neither side was
//!   saturated or late: the offered load set the figure;
//!
//! and an open loop's client is late, a limit whatever its CPU, when its
//! send lag p99 past its own `--interval` is more than a tenth of the
//! latency p99 it measured ([`Lag`]): `client`, or `both` with a saturated
//! server. The instrument's own CPU on this machine (reading /proc at the
//! window's ends; in `c10k run`, the runner hearing its worker processes
//! and sampling the server) is the instrument's, never interference.
//! - `unknown`: the server was not observed, or a side's share could not be
//!   resolved on the side of 90 % that decides (the `why` says which input
//!   and why).
//!
//! Each input is read at its own resolution ([`crate::metrics::cpu`]): the
//! client's and the server's CPU in microseconds or nanoseconds, off by a
//! kernel tick for each thread that was on a CPU when read; the machine's
//! in clock ticks. So a short window (a burst of a few milliseconds) still
//! gets a verdict when both sides sleep at its ends, and a side is called
//! saturated or not only when its share ± its error is on one side of 90 %.
//!
//! Interference is CPU used in the window by processes outside the run
//! (the machine's busy time minus the client, the server, the kernel's
//! softirq threads, which carry the run's own packets, and the
//! instrument's own reading of /proc at the window's ends), plus steal
//! time; the machine's share is over its own span, which reading a server
//! of a thousand tasks at each end makes longer than the client's window.
//! Above 5 % of one CPU it is flagged: the figures may be low for a reason
//! that is not in the run. It needs the machine's busy time, which a window
//! under [`crate::metrics::cpu::MACHINE_MIN_TICKS`] clock ticks cannot
//! resolve: such a window says so and flags nothing (nor does it take steal
//! out of what a side could use). Pure arithmetic on the window's figures.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::metrics::cpu::{self, WindowCpu};

/// A side using this share of its CPUs or more was the limit.
pub(crate) const SATURATED: f64 = 0.9;
/// CPU from outside the run above this (in CPUs) is flagged.
pub(crate) const INTERFERENCE: f64 = 0.05;

/// What limited the figures of one run: the verdict, in JSON and in
/// prose by the same word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// The client was saturated (or, in an open loop, late) and the server
    /// was not: the figure is a bound of the server's.
    Client,
    /// The client had CPU to spare: the server set the pace.
    Server,
    /// Both sides were saturated, or shared a machine they kept busy.
    Both,
    /// An open loop kept its rate with neither side saturated or late: the
    /// offered load set the figure.
    Neither,
    /// The server was not observed, or a share could not be resolved on
    /// the side of 90 % that decides.
    Unknown,
}

impl LimitedBy {
    /// The verdict's word, as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            LimitedBy::Client => "client",
            LimitedBy::Server => "server",
            LimitedBy::Both => "both",
            LimitedBy::Neither => "neither",
            LimitedBy::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for LimitedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What limited the figures of one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Limits {
    /// client, server, both, neither or unknown.
    #[schemars(
        with = "String",
        extend("enum" = ["client", "server", "both", "neither", "unknown"])
    )]
    pub verdict: LimitedBy,
    /// The verdict in one line, with its figures.
    pub why: String,
    /// The client's demand for CPU: the time it ran plus the time it waited
    /// for a CPU, as a share of its capacity (0.9 and above: saturated).
    pub client_demand: f64,
    /// CPUs' worth the client used over the window (1.0: one CPU busy).
    pub client_cpus: f64,
    /// CPUs the client could keep busy: its event loops on its CPUs.
    pub client_capacity: f64,
    /// The server's demand for CPU, as the client's (`null`: not observed).
    pub server_demand: Option<f64>,
    /// CPUs' worth the server used (`null`: not observed).
    pub server_cpus: Option<f64>,
    /// CPUs the server could keep busy (`null`: not observed).
    pub server_capacity: Option<f64>,
    /// CPUs' worth used by processes outside the run (`null`: not known,
    /// because a server on this machine was not observed).
    pub others_cpus: Option<f64>,
    /// CPUs' worth of the kernel's softirq threads (packet processing,
    /// mostly the run's own; not counted as interference).
    pub softirq_cpus: Option<f64>,
    /// CPUs' worth stolen by the hypervisor.
    pub steal_cpus: Option<f64>,
    /// Whether outside CPU or steal passed 5 % of one CPU.
    pub interference: bool,
    /// The measured window, seconds (between the client's two reads of
    /// its own CPU; `null` in reports written before it was kept).
    #[serde(default)]
    pub window_seconds: Option<f64>,
    /// The server's CPU seconds over the window, whatever the verdict
    /// (`null`: not observed).
    #[serde(default)]
    pub server_cpu_seconds: Option<f64>,
    /// Wall seconds from the server's first read at the window's start to
    /// its last at the end: no CPU outside them is in
    /// `server_cpu_seconds`, which is at most this times
    /// `server_capacity`.
    #[serde(default)]
    pub server_span_seconds: Option<f64>,
    /// Seconds `server_cpu_seconds` may be off: the kernel counts a thread
    /// that is on a CPU at its next tick, a process's `stat` in clock ticks.
    #[serde(default)]
    pub server_cpu_error_seconds: Option<f64>,
    /// Times the client's threads were put on a CPU over the window
    /// (schedstat's third field, summed over its processes): each wake-up
    /// from a sleep, and each return after being preempted (`null`: not
    /// read).
    #[serde(default)]
    pub client_runs: Option<f64>,
    /// The server's live threads', as the client's (`null`: not observed).
    #[serde(default)]
    pub server_runs: Option<f64>,
}

impl Default for Limits {
    /// What results recorded before the verdict existed read as.
    fn default() -> Limits {
        Limits {
            verdict: LimitedBy::Unknown,
            why: "not recorded".into(),
            client_demand: 0.0,
            client_cpus: 0.0,
            client_capacity: 0.0,
            server_demand: None,
            server_cpus: None,
            server_capacity: None,
            others_cpus: None,
            softirq_cpus: None,
            steal_cpus: None,
            interference: false,
            window_seconds: None,
            server_cpu_seconds: None,
            server_span_seconds: None,
            server_cpu_error_seconds: None,
            client_runs: None,
            server_runs: None,
        }
    }
}

/// Whether a side whose demand is `share` ± `error` (shares of its
/// capacity) was saturated: `None` when the interval holds the threshold.
fn saturated(share: f64, error: f64) -> Option<bool> {
    if share - error >= SATURATED {
        Some(true)
    } else if share + error < SATURATED {
        Some(false)
    } else {
        None
    }
}

/// What the verdict is computed from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inputs {
    pub window: WindowCpu,
    /// The client's CPU seconds over the window (every worker process).
    pub client_seconds: f64,
    pub client_capacity: f64,
    /// The client runs on this machine (its CPU is in the machine's; not
    /// so for agents on other hosts).
    pub client_local: bool,
    /// The server runs on this machine (its CPU is in the machine's).
    pub server_local: bool,
    /// An open loop that achieved its target rate.
    pub rate_kept: bool,
    /// CPUs of the machine (the steal in `window` is spread over them).
    pub machine_cpus: f64,
    /// An open loop's own lateness (`None`: not an open loop).
    pub lag: Option<Lag>,
}

/// How late an open loop wrote its sends, against the latency it measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lag {
    /// p99 of the send lag, seconds.
    pub send_p99: f64,
    /// p99 of the corrected latency, seconds (which includes the lag).
    pub latency_p99: f64,
    /// The client's `--interval`: lag up to it is the schedule's chosen
    /// precision, not lateness.
    pub interval: f64,
}

/// A client whose send lag past its interval is more than this share of
/// the p99 it measured set part of that p99 itself.
pub(crate) const LATE: f64 = 0.1;

impl Lag {
    /// Whether the lag past the interval is more than [`LATE`] of the p99.
    fn late(&self) -> bool {
        let past = self.send_p99 - self.interval;
        past > LATE * self.latency_p99 && past > 0.0
    }

    fn text(&self) -> String {
        let interval = if self.interval > 0.0 {
            format!(", {} of it its --interval", secs(self.interval))
        } else {
            String::new()
        };
        format!(
            "the client wrote its sends late (send lag p99 {}{interval}, against a latency p99 of {}: \
             more than {:.0} % of it)",
            secs(self.send_p99),
            secs(self.latency_p99),
            LATE * 100.0
        )
    }
}

/// Seconds for a verdict line.
fn secs(s: f64) -> String {
    crate::present::units::seconds(s)
}

/// The verdict on `x`.
pub(crate) fn judge(x: &Inputs) -> Limits {
    let w = &x.window;
    let secs = w.seconds.max(1e-9);
    let client_cpus = x.client_seconds / secs;
    let client_capacity = x.client_capacity.max(1.0);
    // The machine's busy, steal and softirq times are in clock ticks: over
    // a short window they say nothing, and are left out.
    let machine_ok = cpu::machine_resolves(w.seconds);
    let machine = |v: Option<f64>| v.filter(|_| machine_ok);
    // Time the hypervisor stole is in neither a task's CPU time nor its
    // wait for a CPU, so a side running flat out on a CPU that lost 10 %
    // to steal read 90 %. Each side's capacity loses its CPUs' share of
    // the steal (the machine's, spread evenly over its CPUs).
    let kept = 1.0
        - machine(w.steal)
            .map_or(0.0, |s| s / secs / x.machine_cpus.max(1.0))
            .clamp(0.0, 0.9);
    let client_demand = (x.client_seconds + w.client_waited) / secs / (client_capacity * kept);
    let client_error = w.client_error / secs / (client_capacity * kept);
    // The server's own window: its processes are read a little before and
    // after the client's own CPU.
    let server_secs = w.server_seconds.unwrap_or(secs).max(1e-9);
    let server_cpus = w.server_cpu.map(|c| c / server_secs);
    let server_capacity = w.server_capacity.filter(|_| server_cpus.is_some());
    let server_share = |v: f64| v / server_secs / (server_capacity.unwrap_or(1.0).max(1.0) * kept);
    let server_demand = w
        .server_cpu
        .zip(server_capacity)
        .map(|(c, _)| server_share(c + w.server_waited.unwrap_or(0.0)));
    let server_error = server_share(w.server_error.unwrap_or(0.0));
    // The machine's times are over its own span, from its first read to
    // its last, which is longer than the client's window by the time the
    // server's tree takes to read.
    let machine_secs = w.machine_seconds.unwrap_or(secs).max(1e-9);
    let softirq_cpus = machine(w.softirq).map(|s| s / machine_secs);
    let steal_cpus = machine(w.steal).map(|s| s / machine_secs);
    // Outside the run: the machine less the run's own processes. A local
    // server that was not observed is somewhere in that remainder.
    let client_here = if x.client_local { client_cpus } else { 0.0 };
    let others_cpus = match (machine(w.machine_busy), server_cpus, x.server_local) {
        (Some(busy), Some(s), _) => Some(busy / machine_secs - client_here - s),
        (Some(busy), None, false) => Some(busy / machine_secs - client_here),
        _ => None,
    }
    // Reading the server and the machine at the window's ends is the
    // instrument's own work, inside the machine's window.
    .map(|o| (o - softirq_cpus.unwrap_or(0.0) - w.instrument / machine_secs).max(0.0));
    let interference = others_cpus.is_some_and(|o| o > INTERFERENCE)
        || steal_cpus.is_some_and(|s| s > INTERFERENCE);
    let tick_ms = cpu::kernel_tick() * 1e3;
    // Demand past 100 % is time spent waiting for a CPU (several
    // processes on too few CPUs): said in CPUs' worth beside it. A share
    // known only roughly says how roughly.
    let side = |name: &str, demand: f64, error: f64, capacity: f64, ran: f64, waited: f64| {
        let split = if waited >= INTERFERENCE {
            format!(" ({ran:.2} CPUs running, {waited:.2} waiting for one)")
        } else {
            String::new()
        };
        let plus = if error >= 0.005 {
            format!(" ± {:.0} %", error * 100.0)
        } else {
            String::new()
        };
        format!(
            "{name} {:.0} %{plus} of {capacity} CPU{}{split}",
            demand * 100.0,
            if capacity == 1.0 { "" } else { "s" }
        )
    };
    let client_text = side(
        "client",
        client_demand,
        client_error,
        client_capacity,
        client_cpus,
        w.client_waited / secs,
    );
    let client_saturated = saturated(client_demand, client_error);
    let unresolved = |who: &str| {
        format!(
            "{who}'s share is too close to {:.0} % for what a {:.1} ms window resolves (a thread on \
             a CPU when its time is read is counted at its next tick, up to {tick_ms:.0} ms)",
            SATURATED * 100.0,
            w.seconds * 1e3
        )
    };
    // Both sides here with more CPUs between them than the machine has
    // (unpinned): they share its CPUs, and a machine kept busy is a limit
    // to both, however each side's share of it reads.
    let shared = x.client_local
        && x.server_local
        && client_capacity + server_capacity.unwrap_or(0.0) > x.machine_cpus;
    // The share of the machine the run itself kept busy: CPU used outside
    // the run is interference (said below), not one side waiting for what
    // the other used.
    let machine_share = machine(w.machine_busy).map(|b| {
        (b / machine_secs - others_cpus.unwrap_or(0.0)) / (x.machine_cpus.max(1.0) * kept)
    });
    let machine_saturated = shared && machine_share.is_some_and(|m| m >= SATURATED);
    let (verdict, why) = match server_demand {
        None => match client_saturated {
            Some(true) => (
                LimitedBy::Unknown,
                format!("{client_text}: the client was saturated and may be the limit; the server was not observed (give --server-pid)"),
            ),
            Some(false) => (
                LimitedBy::Unknown,
                format!("{client_text}: the client had CPU to spare, so the server or the path to it set the pace; the server was not observed (give --server-pid)"),
            ),
            None => (
                LimitedBy::Unknown,
                format!("{client_text}: the {}; the server was not observed (give --server-pid)", unresolved("client")),
            ),
        },
        Some(s) => {
            let both = format!(
                "{client_text}, {}",
                side(
                    "server",
                    s,
                    server_error,
                    server_capacity.unwrap_or(1.0),
                    server_cpus.unwrap_or(0.0),
                    w.server_waited.unwrap_or(0.0) / server_secs
                )
            );
            let server_saturated = saturated(s, server_error);
            let late = x.lag.filter(Lag::late);
            match (client_saturated, server_saturated) {
                (None, _) => (LimitedBy::Unknown, format!("{both}: the {}", unresolved("client"))),
                (Some(true), None) => (
                    LimitedBy::Unknown,
                    format!("{both}: the client was saturated; whether the server was too is unknown: the {}", unresolved("server")),
                ),
                (Some(true), Some(false)) => (
                    LimitedBy::Client,
                    format!("{both}: the client was the limit, so the figure is a lower bound of the server"),
                ),
                (Some(true), Some(true)) => (LimitedBy::Both, format!("{both}: both sides were saturated")),
                _ if machine_saturated => (
                    LimitedBy::Both,
                    format!(
                        "{both}: they share the machine's {} CPUs and kept them {:.0} % busy, each \
                         waiting for what the other used: both sides were saturated",
                        x.machine_cpus,
                        machine_share.unwrap_or(0.0) * 100.0
                    ),
                ),
                _ if late.is_some() && server_saturated == Some(true) => (
                    LimitedBy::Both,
                    format!(
                        "{both}: {}, and the server was saturated: both set the latency",
                        late.map(|l| l.text()).unwrap_or_default()
                    ),
                ),
                _ if late.is_some() => (
                    LimitedBy::Client,
                    format!(
                        "{both}: {}: the client set part of the latency, so it is an upper bound of the server's",
                        late.map(|l| l.text()).unwrap_or_default()
                    ),
                ),
                _ if shared && !machine_ok => (
                    LimitedBy::Unknown,
                    format!(
                        "{both}: they share the machine's {} CPUs, whose busy time a {:.1} ms \
                         window cannot resolve (it is counted in clock ticks; {:.0} ms needed): \
                         whether it was kept busy, a limit to both, is unknown",
                        x.machine_cpus,
                        w.seconds * 1e3,
                        cpu::machine_min_seconds() * 1e3
                    ),
                ),
                (Some(false), Some(true)) if x.rate_kept => (
                    LimitedBy::Server,
                    format!("{both}: the open loop kept its target rate, but the server wanted more CPU than it had: its queue for a CPU set the latency"),
                ),
                (Some(false), _) if x.rate_kept => (
                    LimitedBy::Neither,
                    format!("{both}: the open loop kept its target rate; the offered load set the figure"),
                ),
                (Some(false), Some(true)) => (LimitedBy::Server, format!("{both}: the server's CPU was the limit")),
                (Some(false), Some(false)) => (
                    LimitedBy::Server,
                    format!("{both}: the client had CPU to spare and the server did not use its own: the server's waits (sleeps, locks, wake-ups) or the path between set the pace"),
                ),
                (Some(false), None) => (
                    LimitedBy::Server,
                    format!("{both}: the client had CPU to spare, so the server set the pace (with its CPU or its waits: the {})", unresolved("server")),
                ),
            }
        }
    };
    let mut why = why;
    if interference {
        why += &format!(
            "; interference: {:.2} CPUs outside the run, {:.2} stolen",
            others_cpus.unwrap_or(0.0),
            steal_cpus.unwrap_or(0.0)
        );
    } else if !machine_ok {
        why += &format!(
            "; interference not known: the machine's CPU time is counted in clock ticks, which a \
             {:.1} ms window cannot resolve ({:.0} ms needed)",
            w.seconds * 1e3,
            cpu::machine_min_seconds() * 1e3
        );
    }
    Limits {
        verdict,
        why,
        client_demand,
        client_cpus,
        client_capacity,
        server_demand,
        server_cpus,
        server_capacity,
        others_cpus,
        softirq_cpus,
        steal_cpus,
        interference,
        window_seconds: Some(w.seconds),
        server_cpu_seconds: w.server_cpu,
        server_span_seconds: w.server_span.or(w.server_cpu.map(|_| w.seconds)),
        server_cpu_error_seconds: w.server_error.or(w.server_cpu.map(|_| 0.0)),
        client_runs: (w.client_runs > 0.0).then_some(w.client_runs),
        server_runs: w.server_runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2 s window: client and server demand as shares of one CPU each,
    /// the machine's busy CPUs.
    fn inputs(client: f64, server: Option<f64>, machine: f64) -> Inputs {
        Inputs {
            window: WindowCpu {
                seconds: 2.0,
                machine_busy: Some(machine * 2.0),
                steal: Some(0.0),
                softirq: Some(0.0),
                server_cpu: server.map(|s| s * 2.0),
                server_waited: server.map(|_| 0.0),
                client_waited: 0.0,
                server_capacity: server.map(|_| 1.0),
                ..WindowCpu::default()
            },
            client_seconds: client * 2.0,
            client_capacity: 1.0,
            client_local: true,
            server_local: true,
            rate_kept: false,
            machine_cpus: 2.0,
            lag: None,
        }
    }

    #[test]
    fn a_verdict_reads_as_the_word_the_json_and_the_schema_give_it() {
        let all = [
            LimitedBy::Client,
            LimitedBy::Server,
            LimitedBy::Both,
            LimitedBy::Neither,
            LimitedBy::Unknown,
        ];
        for v in all {
            let json = serde_json::to_value(v).expect("a verdict serializes");
            assert_eq!(json, v.to_string());
            assert_eq!(serde_json::from_value::<LimitedBy>(json).ok(), Some(v));
        }
        let schema = crate::client::report::schema();
        let listed = &schema.as_value()["$defs"]["Limits"]["properties"]["verdict"]["enum"];
        let words: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(listed, &serde_json::json!(words));
    }

    #[test]
    fn stolen_time_is_taken_out_of_what_a_side_could_use() {
        // The client ran 0.84 of its CPU while the hypervisor stole 0.2
        // CPUs of two: 0.1 of each. It had 0.9 to use and used nearly all.
        let mut x = inputs(0.84, Some(0.2), 1.1);
        assert_eq!(judge(&x).verdict, LimitedBy::Server);
        x.window.steal = Some(0.2 * 2.0);
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Client, "{}", l.why);
        assert!((l.client_demand - 0.84 / 0.9).abs() < 1e-9);
        assert!((l.server_demand.unwrap_or(0.0) - 0.2 / 0.9).abs() < 1e-9);
    }

    #[test]
    fn sides_sharing_a_busy_machine_are_both_saturated() {
        // Unpinned: each side may use both CPUs; together they kept the
        // machine 95 % busy, neither past 90 % of its own capacity.
        let mut x = inputs(0.99, Some(0.9), 1.9);
        x.client_capacity = 2.0;
        x.window.server_capacity = Some(2.0);
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Both, "{}", l.why);
        assert!(
            l.why
                .contains("share the machine's 2 CPUs and kept them 94 % busy"),
            "{}",
            l.why
        );
        // The same figures an open loop kept its rate with.
        x.rate_kept = true;
        assert_eq!(judge(&x).verdict, LimitedBy::Both);
        // A quieter machine: the open loop's rate set the figure.
        let mut q = inputs(0.5, Some(0.4), 0.9);
        q.client_capacity = 2.0;
        q.window.server_capacity = Some(2.0);
        q.rate_kept = true;
        assert_eq!(judge(&q).verdict, LimitedBy::Neither);
        // Pinned apart (a CPU each), a busy machine is each side's own
        // business: the client alone was saturated.
        assert_eq!(
            judge(&inputs(0.99, Some(0.85), 1.84)).verdict,
            LimitedBy::Client
        );
    }

    #[test]
    fn a_machine_kept_busy_from_outside_is_interference_not_both() {
        // Unpinned, a slow server and an idle client on a machine other
        // processes keep busy (0.9 CPUs of two, and the rest of it): the
        // run did not fill the machine, the server set the pace.
        let mut x = inputs(0.05, Some(0.1), 1.95);
        x.client_capacity = 2.0;
        x.window.server_capacity = Some(2.0);
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Server, "{}", l.why);
        assert!(
            l.interference && l.why.contains("interference: 1.80 CPUs outside the run"),
            "{}",
            l.why
        );
    }

    #[test]
    fn the_saturated_side_is_named() {
        assert_eq!(
            judge(&inputs(0.99, Some(0.4), 1.4)).verdict,
            LimitedBy::Client
        );
        assert_eq!(
            judge(&inputs(0.5, Some(0.97), 1.5)).verdict,
            LimitedBy::Server
        );
        assert_eq!(
            judge(&inputs(0.95, Some(0.95), 1.9)).verdict,
            LimitedBy::Both
        );
        assert_eq!(judge(&inputs(0.99, None, 1.9)).verdict, LimitedBy::Unknown);
        assert_eq!(judge(&inputs(0.2, None, 0.5)).verdict, LimitedBy::Unknown);
        // A server that sleeps: neither side busy, the server sets the pace.
        let l = judge(&inputs(0.3, Some(0.05), 0.35));
        assert_eq!(l.verdict, LimitedBy::Server);
        assert!(l.why.contains("waits"), "{}", l.why);
        // An open loop that kept its rate was limited by nobody.
        let mut x = inputs(0.3, Some(0.3), 0.6);
        x.rate_kept = true;
        assert_eq!(judge(&x).verdict, LimitedBy::Neither);
        let l = judge(&inputs(0.99, Some(0.4), 1.4));
        assert!(l.why.contains("lower bound"), "{}", l.why);
        assert!(!l.interference);
    }

    #[test]
    fn waiting_for_a_cpu_is_demand() {
        // The client ran half the window and waited the other half for a
        // CPU something else held: saturated, though it used only half.
        let mut x = inputs(0.5, Some(0.5), 1.5);
        x.window.client_waited = 0.48 * 2.0;
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Client);
        assert!((l.client_cpus - 0.5).abs() < 1e-9);
        assert!(l.client_demand > 0.97);
        // Demand is said with what ran and what waited.
        assert!(
            l.why
                .contains("client 98 % of 1 CPU (0.50 CPUs running, 0.48 waiting for one)"),
            "{}",
            l.why
        );
        // Two threads on two CPUs: one CPU's worth is half the capacity.
        let mut x = inputs(1.0, Some(0.5), 1.5);
        x.client_capacity = 2.0;
        assert_eq!(judge(&x).verdict, LimitedBy::Server);
    }

    #[test]
    fn a_client_on_other_hosts_is_not_in_this_machines_cpu() {
        // The machine ran the server (0.5) and 0.45 of something else; the
        // client's 0.9 CPUs were on agents elsewhere.
        let mut x = inputs(0.9, Some(0.5), 0.95);
        assert!(!judge(&x).interference);
        x.client_local = false;
        let l = judge(&x);
        assert!(l.interference, "{}", l.why);
        assert!((l.others_cpus.unwrap_or(0.0) - 0.45).abs() < 1e-9);
    }

    /// `inputs` over a window of `seconds` instead of 2 s, the same shares.
    fn short(client: f64, server: Option<f64>, machine: f64, seconds: f64) -> Inputs {
        let mut x = inputs(client, server, machine);
        let k = seconds / 2.0;
        let w = &mut x.window;
        w.seconds = seconds;
        w.machine_busy = w.machine_busy.map(|v| v * k);
        w.server_cpu = w.server_cpu.map(|v| v * k);
        x.client_seconds *= k;
        x
    }

    #[test]
    fn a_short_window_is_judged_from_what_resolves_it() {
        // A 6 ms burst: the client and the server asleep at both ends, so
        // their times are exact; the machine's ticks say nothing.
        let l = judge(&short(0.99, Some(0.4), 1.9, 0.006));
        assert_eq!(l.verdict, LimitedBy::Client, "{}", l.why);
        assert!(l.why.contains("interference not known"), "{}", l.why);
        assert!(!l.interference);
        assert_eq!(l.others_cpus, None);
        // Even CPU from outside the run is not told apart in 6 ms.
        assert!(!judge(&short(0.5, Some(0.5), 1.9, 0.006)).interference);
        // The raw figures are kept whatever the verdict.
        assert!((l.server_cpu_seconds.unwrap_or(0.0) - 0.4 * 0.006).abs() < 1e-12);
        assert_eq!(l.window_seconds, Some(0.006));
    }

    #[test]
    fn a_share_that_cannot_be_resolved_decides_nothing() {
        // A server thread on a CPU at both ends of a 2 ms window: its time
        // is known to two ticks (here 8 ms), far more than the window.
        let mut x = short(0.3, Some(0.5), 0.8, 0.002);
        x.window.server_error = Some(0.008);
        let l = judge(&x);
        // The client had CPU to spare: the server set the pace however
        // busy it was.
        assert_eq!(l.verdict, LimitedBy::Server, "{}", l.why);
        assert!(l.why.contains("too close"), "{}", l.why);
        assert!(l.why.contains("server 50 % ± 400 %"), "{}", l.why);
        // With a saturated client, client and both cannot be told apart.
        let mut x = short(0.99, Some(0.5), 1.5, 0.002);
        x.window.server_error = Some(0.008);
        assert_eq!(judge(&x).verdict, LimitedBy::Unknown);
        // A client known only roughly decides nothing either.
        let mut x = short(0.85, Some(0.5), 1.5, 0.002);
        x.window.client_error = 0.0002;
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Unknown, "{}", l.why);
        assert!(l.why.contains("client's share"), "{}", l.why);
        // An error that leaves the share on one side of 90 % decides.
        let mut x = short(0.5, Some(0.99), 1.5, 0.002);
        x.window.server_error = Some(0.00001);
        assert_eq!(judge(&x).verdict, LimitedBy::Server);
        assert_eq!(saturated(0.95, 0.04), Some(true));
        assert_eq!(saturated(0.95, 0.06), None);
        assert_eq!(saturated(0.5, 0.3), Some(false));
    }

    #[test]
    fn sides_sharing_a_machine_need_its_time() {
        // Unpinned and sharing the machine: a short window cannot tell
        // whether the machine was kept busy, a limit to both.
        let mut x = short(0.5, Some(0.4), 0.9, 0.006);
        x.client_capacity = 2.0;
        x.window.server_capacity = Some(2.0);
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Unknown, "{}", l.why);
        assert!(l.why.contains("share the machine"), "{}", l.why);
    }

    #[test]
    fn cpu_outside_the_run_is_interference() {
        // The machine used 0.3 CPU more than client and server together.
        let l = judge(&inputs(0.5, Some(0.5), 1.3));
        assert!((l.others_cpus.unwrap_or(0.0) - 0.3).abs() < 1e-9);
        assert!(l.interference);
        assert!(l.why.contains("interference"), "{}", l.why);
        // Softirq threads carry the run's packets: not interference.
        let mut x = inputs(0.5, Some(0.5), 1.3);
        x.window.softirq = Some(0.3 * 2.0);
        assert!(!judge(&x).interference);
        // Steal alone is interference.
        let mut x = inputs(0.5, Some(0.5), 1.0);
        x.window.steal = Some(0.2);
        assert!(judge(&x).interference);
        // A local server not observed: outside CPU cannot be told apart.
        let l = judge(&inputs(0.5, None, 1.3));
        assert_eq!(l.others_cpus, None);
        assert!(!l.interference);
    }

    #[test]
    fn the_machine_is_read_over_its_own_span_and_the_instrument_is_not_interference() {
        // A server of a thousand tasks took 0.25 s to read at each end: the
        // machine was busy at 1.0 CPU over 2.5 s, the client's window 2 s.
        let mut x = inputs(0.5, Some(0.5), 1.0);
        x.window.machine_busy = Some(2.5);
        assert!(
            judge(&x).interference,
            "over the client's window it reads 0.25"
        );
        x.window.machine_seconds = Some(2.5);
        let l = judge(&x);
        assert!(!l.interference, "{}", l.why);
        assert!(l.others_cpus.unwrap_or(1.0) < 1e-9);
        // What the instrument spent reading /proc at the ends is its own.
        let mut x = inputs(0.5, Some(0.5), 1.1);
        assert!(judge(&x).interference);
        x.window.instrument = 0.2;
        assert!(!judge(&x).interference);
    }

    /// The C1M cell that read `neither`: 1,000,000 connections at
    /// 20,000/s, rate kept, the server's 51 processes 0.75 CPUs running
    /// and 49 CPUs' worth waiting for one, the client 0.72 CPUs, 750 ms of
    /// send lag against a p99 of 3.5 s. Unpinned on 2 CPUs, 0.4 CPUs
    /// outside the run.
    fn c1m() -> Inputs {
        let secs = 50.0;
        Inputs {
            window: WindowCpu {
                seconds: secs,
                machine_busy: Some(1.6 * secs),
                steal: Some(0.0),
                softirq: Some(0.0),
                server_cpu: Some(0.75 * secs),
                server_waited: Some(49.1 * secs),
                client_waited: 0.0,
                server_capacity: Some(2.0),
                ..WindowCpu::default()
            },
            client_seconds: 0.72 * secs,
            client_capacity: 2.0,
            client_local: true,
            server_local: true,
            rate_kept: true,
            machine_cpus: 2.0,
            lag: Some(Lag {
                send_p99: 0.75,
                latency_p99: 3.53,
                interval: 0.0,
            }),
        }
    }

    #[test]
    fn a_server_queued_for_cpu_is_the_limit_though_the_rate_was_kept() {
        let mut x = c1m();
        x.lag = None;
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Server, "{}", l.why);
        assert!(l.why.contains("49.10 waiting for one"), "{}", l.why);
        assert!(l.why.contains("its queue for a CPU"), "{}", l.why);
        // Nothing waited: the offered load set the figure.
        x.window.server_waited = Some(0.0);
        assert_eq!(judge(&x).verdict, LimitedBy::Neither);
    }

    #[test]
    fn a_client_late_with_its_sends_is_a_limit() {
        // Late (0.75 s of 3.53 s) while the server queued: both.
        let l = judge(&c1m());
        assert_eq!(l.verdict, LimitedBy::Both, "{}", l.why);
        assert!(l.why.contains("send lag p99 750 ms"), "{}", l.why);
        // Late with the server at ease: the client.
        let mut x = c1m();
        x.window.server_waited = Some(0.0);
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Client, "{}", l.why);
        assert!(l.why.contains("upper bound"), "{}", l.why);
        // A tenth of the p99 or less is not late.
        x.lag = Some(Lag {
            send_p99: 0.3,
            latency_p99: 3.53,
            interval: 0.0,
        });
        assert_eq!(judge(&x).verdict, LimitedBy::Neither);
    }

    #[test]
    fn lag_within_the_clients_interval_is_its_precision_not_lateness() {
        // Sends batched every 2 ms: a lag p99 of 2.1 ms against a p99 of
        // 5 ms is the schedule's chosen precision.
        let mut x = c1m();
        x.window.server_waited = Some(0.0);
        x.lag = Some(Lag {
            send_p99: 0.0021,
            latency_p99: 0.005,
            interval: 0.002,
        });
        assert_eq!(judge(&x).verdict, LimitedBy::Neither);
        // 3 ms past it is lateness.
        x.lag = Some(Lag {
            send_p99: 0.005,
            latency_p99: 0.008,
            interval: 0.002,
        });
        let l = judge(&x);
        assert_eq!(l.verdict, LimitedBy::Client, "{}", l.why);
        assert!(l.why.contains("2 ms of it its --interval"), "{}", l.why);
    }

    #[test]
    fn the_runners_own_cpu_is_the_instrument_not_interference() {
        // The runner heard 51 workers and sampled the server: 0.3 CPUs
        // over the window, on this machine, in no worker's own CPU.
        let mut x = c1m();
        x.lag = None;
        x.window.machine_busy = Some((0.75 + 0.72 + 0.3) * 50.0);
        assert!(judge(&x).interference);
        x.window.instrument = 0.3 * 50.0;
        let l = judge(&x);
        assert!(!l.interference, "{}", l.why);
    }
}
