//! A latency target and the capacity search that measures against it, as
//! a plan records them: `--slo p99=1ms` (several at once:
//! `p50=200us,p99=2ms`; `p99=1ms+work` counts from the work's own time,
//! so one target reads the same under `none` and `block:1ms`), and the
//! settings of the search ([`Search`]) that finds, per model, count and
//! work profile, the highest offered rate that holds it
//! ([`crate::capacity::search`] decides, [`crate::capacity::search`]
//! runs). Parsing and arithmetic only; nothing here measures.

use serde::{Deserialize, Serialize};

use crate::server::work::{Capacity, Kind, Profile};

/// One target: the `percentile` (99 for p99) of the latency within
/// `seconds`, plus the work's mean time per request when `plus_work`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub percentile: f64,
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plus_work: bool,
}

impl Target {
    /// The quantile, 0.99 for p99.
    pub fn quantile(&self) -> f64 {
        self.percentile / 100.0
    }

    /// `p99`, `p99.9`.
    pub fn label(&self) -> String {
        format!("p{}", trim(self.percentile))
    }

    /// The target in seconds under `work` (its mean CPU, block and wait
    /// added when the target counts from the work).
    pub fn seconds_under(&self, work: Option<&Profile>) -> f64 {
        self.seconds
            + if self.plus_work {
                work.map_or(0.0, work_seconds)
            } else {
                0.0
            }
    }
}

/// The mean time one request's work takes, all its parts.
pub fn work_seconds(work: &Profile) -> f64 {
    [Kind::Cpu, Kind::Block, Kind::Wait]
        .iter()
        .map(|k| work.mean(*k).as_secs_f64())
        .sum()
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={}{}",
            self.label(),
            duration_text(self.seconds),
            if self.plus_work { "+work" } else { "" }
        )
    }
}

/// The whole objective: every target must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub targets: Vec<Target>,
}

impl Slo {
    /// `p99 ≤ 2 ms`, `p50 ≤ 200 µs, p99 ≤ 2 ms beyond the work`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .targets
            .iter()
            .map(|t| {
                format!(
                    "{} ≤ {}{}",
                    t.label(),
                    crate::present::units::seconds(t.seconds),
                    if t.plus_work { " beyond the work" } else { "" }
                )
            })
            .collect();
        parts.join(", ")
    }
}

impl std::fmt::Display for Slo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.targets.iter().map(Target::to_string).collect();
        write!(f, "{}", parts.join(","))
    }
}

/// The highest percentile a target may name: beyond it a slot of a few
/// thousand echoes holds no sample above it.
pub const MOST_PERCENTILE: f64 = 99.99;

/// The longest a latency target may be: an hour (a longer one no
/// search could decide within any budget).
pub const MOST_TARGET_SECONDS: f64 = 3600.0;

impl std::str::FromStr for Slo {
    type Err = String;

    /// `p99=1ms`, `p50=200us,p99=2ms`, `p99.9=5ms+work`.
    fn from_str(text: &str) -> Result<Slo, String> {
        let mut targets: Vec<Target> = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                format!("'{part}': a target is PERCENTILE=DURATION, e.g. p99=1ms")
            })?;
            let percentile = name
                .trim()
                .strip_prefix('p')
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|p| p.is_finite() && *p > 0.0 && *p <= MOST_PERCENTILE)
                .ok_or_else(|| {
                    format!(
                        "'{name}': not a percentile (p50, p99, p99.9: from above p0 to p{MOST_PERCENTILE})"
                    )
                })?;
            let (value, plus_work) = match value.trim().strip_suffix("+work") {
                Some(v) => (v, true),
                None => (value.trim(), false),
            };
            let d = crate::present::units::parse_duration(value)
                .map_err(|e| format!("{}: {e}", name.trim()))?;
            if d.is_zero() {
                return Err(format!(
                    "{}=0: a latency target must be above 0",
                    name.trim()
                ));
            }
            if d.as_secs_f64() > MOST_TARGET_SECONDS {
                return Err(format!(
                    "{}={}: a latency target is at most {}",
                    name.trim(),
                    value.trim(),
                    crate::present::units::seconds(MOST_TARGET_SECONDS)
                ));
            }
            if targets.iter().any(|t| t.percentile == percentile) {
                return Err(format!("{}: given twice", name.trim()));
            }
            targets.push(Target {
                percentile,
                seconds: d.as_secs_f64(),
                plus_work,
            });
        }
        targets.sort_by(|a, b| a.percentile.total_cmp(&b.percentile));
        Ok(Slo { targets })
    }
}

/// What a model's handlers can do, per work profile, recorded with the
/// plan for the queueing bound beside its curve (a foreign server has
/// none: c10k does not know its handlers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handlers {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<Profile>,
    pub capacity: Capacity,
}

/// The capacity search of a run (`--slo`): per model, count and profile,
/// offered rates stepped up from `start_rate` (×4 while the latency sits
/// far below the target, else ×2), then bisected, each bracketing rate
/// measured in further slots until its interval decides it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub slo: Slo,
    /// The first rate tried, messages/s.
    pub start_rate: f64,
    /// The least rate tried: one that misses here never meets the target.
    pub least_rate: f64,
    /// The most: one that holds here ends the search (held every rate).
    pub most_rate: f64,
    /// Bisection stops when the bracket's ends are this close (0.05: 5 %,
    /// the margin, so that two models whose capacities lie within it can
    /// end in brackets that show it; 20 % before the recheck, which no
    /// pair of brackets within the margin could meet).
    pub resolution: f64,
    /// Slots a rate needs before its interval may decide it.
    pub confirm: usize,
    /// Slots a rate gets at most; still undecided then, it is at the
    /// target within noise.
    pub most_per_rate: usize,
    /// Slots a search gets at most; past them it is inconclusive.
    pub most_slots: usize,
    /// Echoes a slot aims to measure: its measured part is this over the
    /// rate, from `least_measured` to `most_measured` seconds.
    pub samples: f64,
    pub least_measured: f64,
    pub most_measured: f64,
    /// What the whole run may spend; each count and profile gets its share.
    pub budget_seconds: f64,
    /// Rounds of every model at the highest rate all of them hold, for
    /// their cost.
    pub cost_rounds: usize,
    /// Rounds in which every bracket's ends (the highest rate held, the
    /// lowest missed) are measured again, interleaved with every model's,
    /// once the searches at a count have ended: a bracket the host's drift
    /// overturned is widened and called unstable. 0 in a plan written
    /// before the recheck (read back as it ran).
    #[serde(default)]
    pub recheck_rounds: usize,
    /// Per model and profile, what its handlers can do.
    #[serde(default)]
    pub handlers: Vec<Handlers>,
    /// The host's own stalls, watched idle on the run's CPUs before the
    /// search ([`crate::micro::stalls`]); empty where not watched (agents
    /// on other hosts, or a plan older than the watch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<crate::micro::stalls::Watch>,
    /// The machine's unloaded round trip's median, seconds, measured with
    /// the stalls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip: Option<f64>,
}

impl Search {
    /// The settings with `slo` and the budget.
    pub fn new(slo: Slo, budget_seconds: f64) -> Search {
        Search {
            slo,
            start_rate: 1000.0,
            least_rate: 50.0,
            most_rate: 2_000_000.0,
            resolution: 0.05,
            confirm: 3,
            most_per_rate: 6,
            most_slots: 40,
            samples: 400.0,
            least_measured: 0.3,
            most_measured: 1.0,
            budget_seconds,
            cost_rounds: 3,
            recheck_rounds: 3,
            handlers: Vec::new(),
            stalls: Vec::new(),
            round_trip: None,
        }
    }

    /// Where target `j` under `work` meets the host's own stalls: the
    /// share of echoes they alone would hold past it (the time the watched
    /// CPUs spent stalled beyond the target's slack over the unloaded
    /// round trip and the work), with how many wake-ups were that late and
    /// the latest; `None` where the stalls were not watched.
    pub fn floor(&self, j: usize, work: Option<&Profile>) -> Option<(f64, usize, f64)> {
        use crate::micro::stalls::{past, share_past};
        let rtt = self.round_trip?;
        if self.stalls.is_empty() {
            return None;
        }
        let slack =
            self.slo.targets.get(j)?.seconds_under(work) - rtt - work.map_or(0.0, work_seconds);
        let (n, most) = past(&self.stalls, slack);
        Some((share_past(&self.stalls, slack), n, most))
    }

    /// One line per target whose allowed share the host's own stalls
    /// reach a quarter of: rates there may stay at the target within
    /// noise, whatever the model.
    pub fn floor_lines(&self, work: Option<&Profile>) -> Vec<String> {
        use crate::present::units::{format_count, seconds, sig3};
        let watched: f64 = self.stalls.iter().map(|w| w.seconds).fold(0.0, f64::max);
        let cpus: Vec<String> = self
            .stalls
            .iter()
            .map(|w| w.cpu.map_or("unpinned".into(), |c| c.to_string()))
            .collect();
        let cpus = crate::present::words::and_list(&cpus);
        self.slo
            .targets
            .iter()
            .enumerate()
            .filter_map(|(j, t)| {
                let (share, n, most) = self.floor(j, work)?;
                let allowed = 1.0 - t.quantile();
                (share >= allowed / 4.0).then(|| {
                    format!(
                        "{} ≤ {}: this host's own stalls, watched idle for {} on CPUs {}, woke {} times past the target's slack (up to {} late): an estimated {} % of echoes past it on any server, against the {} % it allows: rates near it may stay undecided; a looser target, or a quieter host, decides",
                        t.label(),
                        seconds(t.seconds_under(work)),
                        seconds(watched),
                        cpus,
                        format_count(n as f64),
                        seconds(most),
                        sig3(share * 100.0),
                        sig3(allowed * 100.0)
                    )
                })
            })
            .collect()
    }

    /// The measured seconds of a slot at `rate`.
    pub fn measured_at(&self, rate: f64) -> f64 {
        (self.samples / rate).clamp(self.least_measured, self.most_measured)
    }

    /// The measured seconds of a slot at `rate`: a search's, or a cost
    /// round's, which reads CPU per message (to the nanosecond, asleep at
    /// both ends) and needs no tail, at most `COST_MEASURED`.
    pub fn slot_seconds(&self, rate: f64, cost: bool) -> f64 {
        let d = self.measured_at(rate);
        if cost {
            d.min(COST_MEASURED)
        } else {
            d
        }
    }

    /// What a slot at `rate` takes on the clock: its warm-up, its measured
    /// seconds ([`Search::slot_seconds`]) and [`SLOT_OVERHEAD`]. Every
    /// budget of a search counts its slots this one way.
    pub fn slot_wall_seconds(&self, rate: f64, cost: bool, warmup: f64) -> f64 {
        self.slot_seconds(rate, cost) + warmup + SLOT_OVERHEAD
    }

    /// What a block's cost phase takes on the clock: `cost_rounds` rounds
    /// of `models` slots, each at most [`COST_MEASURED`] measured. A
    /// search keeps it in reserve from its first round, and a plan's
    /// budget must hold it beside that round.
    pub fn cost_reserve(&self, models: usize, warmup: f64) -> f64 {
        let each = COST_MEASURED + warmup + SLOT_OVERHEAD;
        self.cost_rounds as f64 * models as f64 * each
    }

    /// What a block's recheck takes on the clock: `recheck_rounds` rounds
    /// of two slots (held and missed) for each of `models`, each as long
    /// as `slot_wall` (a slot of the round that asks for the reserve).
    pub fn recheck_reserve(&self, models: usize, slot_wall: f64) -> f64 {
        self.recheck_rounds as f64 * 2.0 * models as f64 * slot_wall
    }

    /// The targets in seconds under `work`, in the order of `slo`.
    pub fn targets_under(&self, work: Option<&Profile>) -> Vec<f64> {
        self.slo
            .targets
            .iter()
            .map(|t| t.seconds_under(work))
            .collect()
    }

    /// What `model`'s handlers can do under `work`, when known.
    pub fn handlers_of(&self, model: &str, work: Option<&Profile>) -> Option<Capacity> {
        self.handlers
            .iter()
            .find(|h| h.model == model && h.work.as_ref() == work)
            .map(|h| h.capacity)
    }

    /// Checks values read back from a `plan.json`.
    pub fn check(&self) -> Result<(), String> {
        if self.slo.targets.is_empty() {
            return Err("capacity.slo has no target".into());
        }
        for t in &self.slo.targets {
            let percentile = t.percentile > 0.0 && t.percentile <= MOST_PERCENTILE;
            let seconds =
                t.seconds.is_finite() && t.seconds > 0.0 && t.seconds <= MOST_TARGET_SECONDS;
            if !(percentile && seconds) {
                return Err(format!("capacity.slo: {t} is not a target"));
            }
        }
        let rates = [self.least_rate, self.start_rate, self.most_rate];
        if rates.iter().any(|r| !(r.is_finite() && *r >= 1.0))
            || !(self.least_rate <= self.start_rate && self.start_rate <= self.most_rate)
            || self.most_rate > crate::client::plan::MAX_RATE
        {
            return Err("capacity: the rates must be 1 ≤ least ≤ start ≤ most ≤ 1e9".into());
        }
        if !(self.resolution > 0.0 && self.resolution < 1.0)
            || self.confirm < 2
            || self.most_per_rate < self.confirm
            || self.most_slots < 1
            || self.most_slots > 10_000
            || !(self.samples >= 1.0 && self.samples.is_finite())
            || !(self.least_measured > 0.0 && self.least_measured <= self.most_measured)
            || self.most_measured > 600.0
            || !(self.budget_seconds > 0.0 && self.budget_seconds.is_finite())
            || self.cost_rounds > 100
            || self.recheck_rounds > 100
        {
            return Err("capacity: a setting of the search is out of range".into());
        }
        Ok(())
    }
}

/// The longest measured part of a cost round's slot, seconds.
pub const COST_MEASURED: f64 = 0.5;

/// Seconds a slot takes on the clock beside its warm-up and measured ones:
/// sampling the servers at both ends and handing the load over.
pub const SLOT_OVERHEAD: f64 = 0.1;

/// A rate rounded to 3 significant digits: the search's rates, so that a
/// rate measured again is the same number.
pub fn round_rate(r: f64) -> f64 {
    if !(r.is_finite() && r > 0.0) {
        return r;
    }
    let digits = r.log10().floor() as i32 - 2;
    let unit = 10f64.powi(digits);
    (r / unit).round() * unit
}

fn trim(v: f64) -> String {
    let s = format!("{v}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

/// Seconds as `--slo` reads them back: µs, ms or s, whichever is whole.
fn duration_text(s: f64) -> String {
    let us = s * 1e6;
    if (us - us.round()).abs() < 1e-6 {
        let us = us.round() as u64;
        if us % 1_000_000 == 0 {
            format!("{}s", us / 1_000_000)
        } else if us % 1000 == 0 {
            format!("{}ms", us / 1000)
        } else {
            format!("{us}us")
        }
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hosts_floor_counts_the_stalls_past_the_slack() {
        use crate::micro::stalls::Watch;
        let slo: Slo = "p99=2ms".parse().unwrap();
        let mut s = Search::new(slo, 60.0);
        assert_eq!(s.floor(0, None), None, "not watched");
        s.round_trip = Some(100e-6);
        // 2 s watched on one CPU; slack 1.9 ms: a 6 ms stall holds 4.1 ms,
        // a 1 ms one nothing: 0.205 % of the time.
        s.stalls = vec![Watch {
            cpu: Some(0),
            role: crate::micro::stalls::Role::Both,
            seconds: 2.0,
            late: vec![6e-3, 1e-3],
        }];
        let (share, n, most) = s.floor(0, None).unwrap();
        assert!((share - 4.1e-3 / 2.0).abs() < 1e-12, "{share}");
        assert_eq!((n, most), (1, 6e-3));
        // Below a quarter of the 1 % allowed: not said; past it, said.
        assert_eq!(s.floor_lines(None).len(), 0);
        s.stalls[0].late = vec![12e-3, 9e-3];
        let lines = s.floor_lines(None);
        assert!(
            lines.len() == 1 && lines[0].starts_with("p99 ≤ 2 ms: this host's own stalls"),
            "{lines:?}"
        );
    }

    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        let s: Slo = "p99=2ms,p50=200us".parse().unwrap();
        assert_eq!(s.targets.len(), 2);
        assert_eq!(s.targets[0].label(), "p50");
        assert!((s.targets[1].seconds - 2e-3).abs() < 1e-12);
        assert_eq!(s.to_string(), "p50=200us,p99=2ms");
        let w: Slo = "p99.9=1ms+work".parse().unwrap();
        assert_eq!(w.to_string(), "p99.9=1ms+work");
        assert!((w.targets[0].quantile() - 0.999).abs() < 1e-12);
        let block: Profile = "block:1ms".parse().unwrap();
        assert!((w.targets[0].seconds_under(Some(&block)) - 2e-3).abs() < 1e-12);
        assert!((w.targets[0].seconds_under(None) - 1e-3).abs() < 1e-12);
    }

    #[test]
    fn bad_targets_get_one_line_each() {
        for (text, says) in [
            ("q99=1ms", "not a percentile"),
            ("p100=1ms", "not a percentile"),
            ("p0=1ms", "not a percentile"),
            ("p99=0ms", "must be above 0"),
            ("p99=fast", "not a duration"),
            ("p99", "PERCENTILE=DURATION"),
            ("p99=1ms,p99=2ms", "given twice"),
            ("p99=2h", "p99=2h: a latency target is at most"),
        ] {
            let e = text.parse::<Slo>().unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn rates_round_to_three_digits() {
        assert_eq!(round_rate(1414.2135), 1410.0);
        assert_eq!(round_rate(707.1), 707.0);
        assert_eq!(round_rate(123_456.0), 123_000.0);
        let s = Search::new("p99=1ms".parse().unwrap(), 60.0);
        assert!(s.check().is_ok());
        assert!((s.measured_at(1000.0) - 0.4).abs() < 1e-12);
        assert!((s.slot_seconds(100.0, true) - COST_MEASURED).abs() < 1e-12);
        assert_eq!(s.measured_at(1e6), s.least_measured);
        assert_eq!(s.measured_at(10.0), s.most_measured);
    }
}
