//! What a load run measured, at every scale: one event loop, one process,
//! a run over several worker processes. They are the same type,
//! [`Measured`], and combine in one way, [`Measured::merge`]: histograms
//! are added (never percentiles averaged), counts summed, windows taken at
//! their longest. An event loop fills what it sees (round trips, connects,
//! records, system calls); the process around it adds what only a process
//! sees (its CPU, memory and measured window); a worker process sends its
//! whole `Measured` to the parent as JSON, histograms as base64
//! HdrHistogram V2, and the parent merges them as a process merges its
//! loops.
//!
//! Cost: a merge is one histogram addition per histogram (a few µs each)
//! and a move of the records; nothing here runs during the measured window.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::record::Records;
use super::report::Syscalls;
use crate::metrics::cpu::WindowCpu;

/// Largest latency recorded: an hour, in nanoseconds.
pub(crate) const MAX_NS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// What one event loop, one process or a whole run measured.
#[derive(Debug, Serialize, Deserialize)]
pub struct Measured {
    /// Round trips from the intended send time (open loop: corrected for
    /// coordinated omission), in ns.
    #[serde(with = "hdr_base64")]
    pub latency: Histogram<u64>,
    /// Open loop: round trips from the actual write, in ns.
    #[serde(with = "hdr_base64")]
    pub uncorrected: Histogram<u64>,
    /// Open loop: how late the client wrote each measured message (its own
    /// wake-up lateness, plus the wait for a free slot), in ns.
    #[serde(with = "hdr_base64")]
    pub send_lag: Histogram<u64>,
    /// Connect start to writable, in ns.
    #[serde(with = "hdr_base64")]
    pub connect: Histogram<u64>,
    pub records: Records,
    /// Open loop: sends skipped because the connection was backed up.
    pub missed: u64,
    /// Burst: each round, from its first send to its last echo, in seconds
    /// since the process started its loops. A burst runs in one process, so
    /// every loop counts from the same start.
    pub rounds: Vec<Round>,
    /// From the first connect to every connection up or failed.
    pub connect_seconds: f64,
    /// Length of the measured window (set by the process).
    pub measured_seconds: f64,
    /// CPU over the measured window (set by the process).
    pub cpu_user: f64,
    pub cpu_system: f64,
    /// Peak memory: a process's own, the sum of its workers' for a run.
    pub max_rss_kib: u64,
    pub interrupted: bool,
    /// The event loops' system calls over the measured window.
    pub io: Syscalls,
    /// What the machine and the server used over the measured window (set
    /// by the process).
    pub window: WindowCpu,
    /// HTTP: the responses' status codes, reconnects and cut responses.
    #[serde(default)]
    pub http: super::http::Counts,
}

/// One burst round, in seconds since the process started its loops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub start: f64,
    /// The last echo; `None` when not every echo came.
    pub end: Option<f64>,
}

impl Round {
    /// From the first send to the last echo, in µs, when every echo came.
    pub fn makespan_us(&self) -> Option<f64> {
        self.end.map(|e| (e - self.start).max(0.0) * 1e6)
    }
}

impl Measured {
    /// Nothing measured yet: what merges start from.
    pub fn empty() -> Measured {
        Measured {
            latency: histogram(),
            uncorrected: histogram(),
            send_lag: histogram(),
            connect: histogram(),
            records: Records::new(usize::MAX),
            missed: 0,
            rounds: Vec::new(),
            connect_seconds: 0.0,
            measured_seconds: 0.0,
            cpu_user: 0.0,
            cpu_system: 0.0,
            max_rss_kib: 0,
            interrupted: false,
            io: Syscalls::default(),
            window: WindowCpu::default(),
            http: Default::default(),
        }
    }

    /// Adds `o` (another loop's or process's measurements) to these.
    pub fn merge(&mut self, o: Measured) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.latency.add(&o.latency);
        let _ = self.uncorrected.add(&o.uncorrected);
        let _ = self.send_lag.add(&o.send_lag);
        let _ = self.connect.add(&o.connect);
        self.records.merge(o.records);
        self.missed += o.missed;
        for (k, r) in o.rounds.into_iter().enumerate() {
            match self.rounds.get_mut(k) {
                Some(mine) => {
                    mine.start = mine.start.min(r.start);
                    mine.end = match (mine.end, r.end) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                }
                None => self.rounds.push(r),
            }
        }
        self.connect_seconds = self.connect_seconds.max(o.connect_seconds);
        self.measured_seconds = self.measured_seconds.max(o.measured_seconds);
        self.cpu_user += o.cpu_user;
        self.cpu_system += o.cpu_system;
        self.max_rss_kib += o.max_rss_kib;
        self.interrupted |= o.interrupted;
        self.io.add(o.io);
        self.window.merge(&o.window);
        self.http.merge(&o.http);
    }
}

/// Histograms in JSON: HdrHistogram V2, base64.
mod hdr_base64 {
    use super::*;

    pub(crate) fn serialize<S: serde::Serializer>(
        h: &Histogram<u64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut bytes)
            .map_err(|e| serde::ser::Error::custom(format!("{e:?}")))?;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Histogram<u64>, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)?;
        Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| serde::de::Error::custom(format!("a histogram does not decode: {e:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(latencies: &[u64], rounds: Vec<Round>) -> Measured {
        let mut m = Measured::empty();
        for &l in latencies {
            m.latency.record(l).unwrap();
        }
        m.rounds = rounds;
        m
    }

    #[test]
    fn merging_adds_histograms_and_keeps_the_longest_windows() {
        let mut a = with(&[1_000, 2_000], Vec::new());
        a.connect_seconds = 0.5;
        a.cpu_user = 1.0;
        a.max_rss_kib = 100;
        let mut b = with(&[1_000_000], Vec::new());
        b.connect_seconds = 0.7;
        b.cpu_user = 2.0;
        b.max_rss_kib = 50;
        b.interrupted = true;
        a.merge(b);
        assert_eq!(a.latency.len(), 3);
        assert!(a.latency.value_at_quantile(1.0) >= 999_000);
        assert_eq!(a.connect_seconds, 0.7);
        assert_eq!(a.cpu_user, 3.0);
        assert_eq!(a.max_rss_kib, 150);
        assert!(a.interrupted);
    }

    #[test]
    fn a_round_spans_every_loop_and_has_no_end_when_one_loop_missed_an_echo() {
        let r = |start, end| Round { start, end };
        let mut a = with(&[], vec![r(1.0, Some(2.0)), r(3.0, Some(4.0))]);
        a.merge(with(&[], vec![r(0.5, Some(2.5)), r(3.0, None)]));
        assert_eq!(a.rounds, vec![r(0.5, Some(2.5)), r(3.0, None)]);
        assert_eq!(a.rounds[0].makespan_us(), Some(2e6));
        assert_eq!(a.rounds[1].makespan_us(), None);
    }

    #[test]
    fn a_worker_result_survives_json_exactly() {
        let m = with(
            &[5, 50_000, 7_000_000],
            vec![Round {
                start: 0.25,
                end: None,
            }],
        );
        let back: Measured = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back.latency, m.latency);
        assert_eq!(back.rounds, m.rounds);
        let broken =
            serde_json::to_string(&m)
                .unwrap()
                .replacen("\"latency\":\"", "\"latency\":\"!", 1);
        assert!(serde_json::from_str::<Measured>(&broken).is_err());
    }
}
