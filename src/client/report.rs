//! The results of a load run: one structure, written as JSON (a versioned
//! schema) and printed as a summary a person reads at a glance.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Connections {
    pub requested: usize,
    pub idle: usize,
    /// Connections that came up (ever, for churn).
    pub established: u64,
    /// Connections that ended with an error.
    pub failed: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Connect {
    /// From the first connect to the last connection up (or failed).
    pub established_seconds: f64,
    /// Connects per second over that time (churn: over the whole run).
    pub per_second: f64,
    pub latency_us: Percentiles,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    /// Measured echoes per second (round trips).
    pub messages_per_second: f64,
    /// Measured echoed bytes per second, one way.
    pub bytes_per_second: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpenLoop {
    pub target_rate: f64,
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Burst {
    /// Time from sending on every connection to the last echo, per round.
    pub makespan_us: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Client {
    pub threads: usize,
    /// CPUs the client was pinned to (`None`: not pinned).
    pub cpus: Option<Vec<usize>>,
    /// CPU time of the client over the measured window.
    pub cpu_user_seconds: f64,
    pub cpu_system_seconds: f64,
    /// Client CPU time per measured message.
    pub cpu_per_message_us: f64,
    /// Peak resident memory of the client process.
    pub max_rss_kib: u64,
    /// Worker processes the connections were spread over (1: this one).
    pub processes: usize,
}

/// Everything a load run measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub schema_version: u32,
    pub command: String,
    pub target: String,
    /// closed, open, burst or churn.
    pub workload: String,
    pub message_bytes: usize,
    pub depth: usize,
    pub warmup_seconds: f64,
    /// Length of the measured window.
    pub measured_seconds: f64,
    pub interrupted: bool,
    pub connections: Connections,
    pub connect: Connect,
    pub messages: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub throughput: Throughput,
    /// Round trips; in open loop corrected for coordinated omission (from
    /// the intended send time); in closed loop and burst from the write.
    pub latency_us: Percentiles,
    pub open_loop: Option<OpenLoop>,
    pub burst: Option<Burst>,
    /// Connections ended early, by kind.
    pub errors: BTreeMap<String, u64>,
    pub client: Client,
    /// System-wide TCP counters over the run (SYN retransmits and listen
    /// overflows show a backlog that overflowed).
    pub tcp: serde_json::Value,
    /// Source addresses the connections were spread over (empty: the
    /// kernel's choice).
    pub sources: Vec<String>,
    pub warnings: Vec<String>,
    pub environment: serde_json::Value,
}

impl Report {
    /// Total connections that ended early.
    pub fn failures(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The summary a person reads.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let c = &self.connections;
        let _ = writeln!(
            s,
            "c10k load {} — {}, {} connections{}, {} B messages{}, {} thread{}{}",
            self.target,
            self.workload_text(),
            c.requested,
            if c.idle > 0 {
                format!(" (+{} idle)", c.idle)
            } else {
                String::new()
            },
            self.message_bytes,
            if self.workload == "closed" {
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
        if self.workload == "churn" {
            let _ = writeln!(
                s,
                "  churn        {:.0} connects/s",
                self.connect.per_second
            );
        }
        let _ = writeln!(
            s,
            "  messages     {} in {:.3} s: {:.0} round trips/s, {}/s each way",
            self.messages,
            self.measured_seconds,
            self.throughput.messages_per_second,
            bytes(self.throughput.bytes_per_second),
        );
        if self.latency_us.count > 0 {
            let _ = writeln!(s, "  latency      {}", pct(&self.latency_us));
        }
        if let Some(o) = &self.open_loop {
            let _ = writeln!(s, "  uncorrected  {}", pct(&o.latency_uncorrected_us));
            let _ = writeln!(s, "  send lag     {}", pct(&o.send_lag_us));
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
        let errors: Vec<String> = self
            .errors
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
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
        for w in &self.warnings {
            let _ = writeln!(s, "  warning      {w}");
        }
        s
    }

    fn workload_text(&self) -> String {
        match self.workload.as_str() {
            "closed" => "closed loop".into(),
            "open" => "open loop".into(),
            other => other.into(),
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
