//! `c10k run --tune`: the search of one model's knobs
//! ([`crate::server::knobs`]) at one connection count and work profile,
//! as a function of what has been measured, so a resumed or budget-cut
//! search reads the same. Knobs are searched one after another, each from
//! its starting value (Little's law for a pool: threads ≥ rate × the time
//! a request holds one, [`little`]) by hill-climbing its ladder of values,
//! a step at a time, to a neighbour faster than the current value in
//! every round they shared and by more than the margin at the median; the run's defaults are
//! measured in every round, and the settings found are kept only when
//! they beat the defaults by the paired test ([`crate::stats::paired`]),
//! else the defaults stay and the search says so. Cost: a few medians per
//! step.

use std::collections::BTreeMap;

use crate::server::knobs::{Knob, Values};
use crate::server::settings::{Settings, Value};
use crate::stats::paired::{self, Comparison, Rule, Sample};

/// What holds one of the threads a sizing knob counts, for its starting
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// A handler: the work's CPU, and its block and wait where the model's
    /// handler holds through them.
    Handler,
    /// A thread of a pool that takes only the blocking calls.
    Block,
}

/// Little's law for a pool: the threads that keep up with the rate a
/// closed loop of `in_flight` requests can offer (or `offered`, an open
/// loop's), where each request takes `all` seconds and holds a thread for
/// `hold` of them, and `cores` CPUs run `cpu` seconds of each: threads ≥
/// rate × hold. `None` when nothing holds a thread (the default stands).
pub fn little(
    in_flight: usize,
    offered: Option<f64>,
    all: f64,
    hold: f64,
    cpu: f64,
    cores: usize,
) -> Option<u64> {
    if hold <= 0.0 {
        return None;
    }
    let mut rate = offered.unwrap_or(f64::INFINITY);
    if all > 0.0 {
        rate = rate.min(in_flight as f64 / all);
    }
    if cpu > 0.0 {
        rate = rate.min(cores.max(1) as f64 / cpu);
    }
    rate.is_finite()
        .then(|| (rate * hold - 1e-9).ceil().max(1.0) as u64)
}

/// The values of one knob worth measuring, in order where order means
/// something (a count, a duration), and where its search starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    pub knob: Knob,
    /// Each value, typed: a count, microseconds, a switch, a word.
    pub values: Vec<Value>,
    /// Neighbours are near values (a count, a duration); else every value
    /// is measured.
    pub ordered: bool,
    /// The run's default among `values`.
    pub default: usize,
    /// Where the search starts.
    pub start: usize,
}

/// Durations an interval ladder tries, in microseconds.
const INTERVALS_US: [u64; 4] = [0, 50, 200, 1000];

impl Ladder {
    /// The ladder of `knob`, whose run default is `default`, starting at
    /// `guess` where one is given (a count): every power of two in its
    /// range, with the default and the guess; `None` for a knob the
    /// search leaves alone, or a default of another kind than its values.
    pub fn of(knob: &Knob, default: Value, guess: Option<u64>) -> Option<Ladder> {
        if knob.unsearched.is_some() {
            return None;
        }
        let (values, ordered): (Vec<Value>, bool) = match knob.values {
            Values::Count { least, most } => {
                let mut v: Vec<u64> = std::iter::successors(Some(1u64), |x| x.checked_mul(2))
                    .take_while(|x| *x <= most)
                    .filter(|x| *x >= least)
                    .collect();
                if let Value::Count(d) = default {
                    v.push(d);
                }
                v.extend(guess.map(|g| g.clamp(least, most)));
                v.sort_unstable();
                v.dedup();
                (v.into_iter().map(Value::Count).collect(), true)
            }
            Values::Micros { least, most } => {
                let mut v: Vec<u64> = INTERVALS_US
                    .iter()
                    .copied()
                    .filter(|u| (least..=most).contains(u))
                    .collect();
                if let Value::Micros(d) = default {
                    v.push(d);
                }
                v.sort_unstable();
                v.dedup();
                (v.into_iter().map(Value::Micros).collect(), true)
            }
            Values::Switch => (vec![Value::Switch(false), Value::Switch(true)], false),
            Values::Choice(words) => (words.iter().map(|w| Value::Word(w)).collect(), false),
            Values::Bytes { .. } => return None,
        };
        let default = values.iter().position(|v| *v == default)?;
        let start = match (knob.values, guess) {
            (Values::Count { least, most }, Some(g)) => {
                let g = Value::Count(g.clamp(least, most));
                values.iter().position(|v| *v == g).unwrap_or(default)
            }
            _ => default,
        };
        Some(Ladder {
            knob: *knob,
            values,
            ordered,
            default,
            start,
        })
    }

    /// `settings` with value `i` set.
    pub fn set(&self, i: usize, settings: &mut Settings) {
        // A ladder holds only values of its knob's kind (`Ladder::of`).
        let set = settings.set(self.knob.field, self.values[i]);
        debug_assert!(set.is_ok(), "{set:?}");
    }

    /// Value `i` in words, as a tuned model is shown: `pool 128`, `edge`.
    pub fn label(&self, i: usize) -> String {
        let short = self.knob.short;
        match self.values[i] {
            Value::Switch(true) => short.into(),
            Value::Switch(false) => format!("no {short}"),
            Value::Micros(0) => format!("{short} 0"),
            Value::Micros(us) => format!(
                "{short} {}",
                crate::present::units::seconds(us as f64 / 1e6)
            ),
            Value::Count(n) => format!("{short} {n}"),
            Value::Word(w) => format!("{short} {w}"),
        }
    }
}

/// A setting of every knob searched: the value index on each ladder.
pub type Setting = Vec<usize>;

/// The settings `setting` gives (a knob at the run's default gives none,
/// so the defaults are the server the run would start).
pub fn settings_of(ladders: &[Ladder], setting: &Setting) -> Settings {
    let mut out = Settings::default();
    for (l, i) in ladders.iter().zip(setting) {
        if *i != l.default {
            l.set(*i, &mut out);
        }
    }
    out
}

/// `setting` in words: `pool 128, edge`; `defaults` when nothing moved.
pub fn label_of(ladders: &[Ladder], setting: &Setting) -> String {
    let parts: Vec<String> = ladders
        .iter()
        .zip(setting)
        .filter(|(l, i)| **i != l.default)
        .map(|(l, i)| l.label(*i))
        .collect();
    if parts.is_empty() {
        "defaults".into()
    } else {
        parts.join(", ")
    }
}

/// The run's defaults, in words: `pool 2` (every knob's default).
pub fn defaults_label(ladders: &[Ladder]) -> String {
    ladders
        .iter()
        .map(|l| l.label(l.default))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a search is run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Method {
    /// Rounds of each step: every setting of the step once in each, in a
    /// shuffled order.
    pub rounds: usize,
    /// Steps a ladder may climb past its first.
    pub most_steps: usize,
    /// A neighbour beats the current value when their paired ratio is
    /// above 1 + margin; the settings found beat the defaults by the
    /// paired test at this margin.
    pub rule: Rule,
}

/// What has been measured: for each setting, its figure in each round
/// (`None`: the slot failed).
pub type History = BTreeMap<Setting, Vec<(usize, Option<f64>)>>;

/// What the search does next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Measure these settings in `Method::rounds` rounds more.
    Measure(Vec<Setting>),
    Done(Found),
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    /// The setting kept: the defaults unless the search's beat them.
    pub setting: Setting,
    /// The best the search measured, kept or not.
    pub best: Setting,
    /// The best against the defaults, paired on the rounds they shared.
    pub versus_default: Option<Comparison>,
    pub why: Why,
}

/// Why the setting kept is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The defaults measured best.
    DefaultBest,
    /// The search's best beat the defaults.
    Faster,
    /// The search's best was not shown better than the defaults.
    NothingBetter,
    /// No slot of the defaults held a figure.
    DefaultsFailed,
}

/// The figures of `s` as a sample keyed by round (failed slots left out).
fn sample(history: &History, s: &Setting) -> Option<Sample> {
    let v: Vec<(usize, f64)> = history
        .get(s)?
        .iter()
        .filter_map(|(r, v)| v.map(|v| (*r, v)))
        .collect();
    Sample::new(&v)
}

/// How many rounds `s` was measured in (failed slots included).
fn measured(history: &History, s: &Setting) -> usize {
    history.get(s).map_or(0, Vec::len)
}

/// The median of `a`'s figure over `b`'s in the rounds both were
/// measured in (a failed slot of `a` counts as nothing); `None` with no
/// such round.
fn paired_ratio(history: &History, a: &Setting, b: &Setting) -> Option<f64> {
    let ratios = ratios(history, a, b);
    (!ratios.is_empty()).then(|| crate::stats::quantile(&ratios, 0.5))
}

/// `a`'s figure over `b`'s in each round both were measured in, sorted.
fn ratios(history: &History, a: &Setting, b: &Setting) -> Vec<f64> {
    let (Some(ha), Some(hb)) = (history.get(a), history.get(b)) else {
        return Vec::new();
    };
    // A failed slot of `a` counts as nothing; one of `b` pairs with none.
    let ha: Vec<(usize, f64)> = ha.iter().map(|&(r, x)| (r, x.unwrap_or(0.0))).collect();
    let hb: Vec<(usize, f64)> = hb.iter().filter_map(|&(r, y)| Some((r, y?))).collect();
    let mut ratios: Vec<f64> = crate::stats::paired::per_round(&ha, &hb)
        .into_iter()
        .map(|(_, x)| x)
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios
}

/// Whether `a` moves the search off `b`: faster in every round they
/// shared, and by more than `margin` at the median. Three rounds of noise
/// alone put a neighbour 5 % ahead at the median now and then (a pool on
/// a plateau then wanders along it); ahead in every round as well, it
/// rarely is.
fn moves(history: &History, a: &Setting, b: &Setting, margin: f64) -> Option<f64> {
    let r = ratios(history, a, b);
    let least = *r.first()?;
    let median = crate::stats::quantile(&r, 0.5);
    (least > 1.0 && median > 1.0 + margin).then_some(median)
}

/// The next step of the search over `ladders`, given `history`.
pub(crate) fn next(ladders: &[Ladder], method: &Method, history: &History) -> Step {
    let defaults: Setting = ladders.iter().map(|l| l.default).collect();
    let mut base = defaults.clone();
    let want = |settings: Vec<Setting>| -> Option<Step> {
        let mut all = vec![defaults.clone()];
        for s in settings {
            if !all.contains(&s) {
                all.push(s);
            }
        }
        all.iter()
            .any(|s| measured(history, s) < method.rounds)
            .then_some(Step::Measure(all))
    };
    for (k, ladder) in ladders.iter().enumerate() {
        let at = |i: usize| {
            let mut s = base.clone();
            s[k] = i;
            s
        };
        if !ladder.ordered {
            let all: Vec<Setting> = (0..ladder.values.len()).map(at).collect();
            if let Some(step) = want(all.clone()) {
                return step;
            }
            let best = all
                .iter()
                .max_by(|a, b| {
                    let r = paired_ratio(history, a, b).unwrap_or(1.0);
                    r.total_cmp(&1.0)
                })
                .cloned()
                .unwrap_or_else(|| at(ladder.default));
            // Only a value that beats the default by the margin moves it.
            let beats = moves(history, &best, &at(ladder.default), method.rule.margin).is_some();
            base = if beats { best } else { at(ladder.default) };
            continue;
        }
        let neighbours = |i: usize| {
            [i.checked_sub(1), Some(i + 1)]
                .into_iter()
                .flatten()
                .filter(|j| *j < ladder.values.len())
                .collect::<Vec<_>>()
        };
        let mut current = ladder.start;
        let mut first: Vec<Setting> = vec![at(current), at(ladder.default)];
        first.extend(neighbours(current).into_iter().map(at));
        if let Some(step) = want(first) {
            return step;
        }
        for _ in 0..=method.most_steps {
            let mut step: Vec<Setting> = Vec::new();
            for j in neighbours(current) {
                if measured(history, &at(j)) < method.rounds {
                    step.push(at(j));
                }
            }
            if !step.is_empty() {
                step.insert(0, at(current));
                if let Some(s) = want(step) {
                    return s;
                }
            }
            let better = neighbours(current)
                .into_iter()
                .filter_map(|j| {
                    moves(history, &at(j), &at(current), method.rule.margin).map(|r| (j, r))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match better {
                Some((j, _)) => current = j,
                None => break,
            }
        }
        base = at(current);
    }
    Step::Done(found(history, method, defaults, base))
}

/// What a search stopped before its end (the budget) found: the setting
/// measured beside the defaults that beat them most in the rounds they
/// shared, decided against them as at the end.
pub(crate) fn so_far(ladders: &[Ladder], method: &Method, history: &History) -> Found {
    let defaults: Setting = ladders.iter().map(|l| l.default).collect();
    let best = history
        .keys()
        .filter(|s| **s != defaults)
        .filter_map(|s| paired_ratio(history, s, &defaults).map(|r| (s, r)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or_else(|| defaults.clone(), |(s, _)| s.clone());
    found(history, method, defaults, best)
}

/// The median figure of `s` over its slots that held one.
pub fn median(history: &History, s: &Setting) -> Option<f64> {
    sample(history, s).map(|s| s.median())
}

/// The search's best `best` against the `defaults`, decided.
fn found(history: &History, method: &Method, defaults: Setting, best: Setting) -> Found {
    let Some(d) = sample(history, &defaults) else {
        return Found {
            setting: if sample(history, &best).is_some() {
                best.clone()
            } else {
                defaults
            },
            best,
            versus_default: None,
            why: Why::DefaultsFailed,
        };
    };
    if best == defaults {
        return Found {
            setting: defaults,
            best,
            versus_default: None,
            why: Why::DefaultBest,
        };
    }
    let c = sample(history, &best).map(|b| paired::compare(&b, &d, method.rule));
    let faster = c.is_some_and(|c| c.larger());
    Found {
        setting: if faster { best.clone() } else { defaults },
        best,
        versus_default: c,
        why: if faster {
            Why::Faster
        } else {
            Why::NothingBetter
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::knobs::{EDGE, POOL};

    fn method() -> Method {
        Method {
            rounds: 3,
            most_steps: 8,
            rule: Rule::new(0.05),
        }
    }

    /// Runs the search against `figure` (the synthetic server's
    /// throughput for a setting, with a little noise by round) to its end,
    /// counting steps.
    fn search(ladders: &[Ladder], figure: &dyn Fn(&Setting) -> Option<f64>) -> (Found, usize) {
        let m = method();
        let mut history = History::new();
        let mut round = 0;
        for steps in 0..50 {
            match next(ladders, &m, &history) {
                Step::Done(f) => return (f, steps),
                Step::Measure(settings) => {
                    for _ in 0..m.rounds {
                        round += 1;
                        for s in &settings {
                            let noise = 1.0 + 0.01 * ((round * 7 + s[0]) % 5) as f64 / 4.0;
                            history
                                .entry(s.clone())
                                .or_default()
                                .push((round, figure(s).map(|f| f * noise)));
                        }
                    }
                }
            }
        }
        panic!("the search did not end in 50 steps");
    }

    #[test]
    fn littles_law_sizes_a_pool_for_blocking_and_not_for_cpu() {
        // 100 connections under block:1ms: 100,000/s could be offered, each
        // holding a thread 1 ms: 100 threads.
        assert_eq!(little(100, None, 1e-3, 1e-3, 0.0, 2), Some(100));
        assert_eq!(little(1000, None, 1e-3, 1e-3, 0.0, 2), Some(1000));
        // cpu:100us on 2 cores: 20,000/s, each holding 100 µs: 2 threads.
        assert_eq!(little(1000, None, 1e-4, 1e-4, 1e-4, 2), Some(2));
        // An open loop offering 5,000/s under block:1ms: 5 threads.
        assert_eq!(little(1000, Some(5000.0), 1e-3, 1e-3, 0.0, 2), Some(5));
        // Nothing holds a thread: the default stands.
        assert_eq!(little(100, None, 1e-3, 0.0, 0.0, 2), None);
    }

    #[test]
    fn a_pool_ladder_holds_powers_of_two_the_default_and_the_guess() {
        let l = Ladder::of(&POOL, Value::Count(2), Some(100)).unwrap();
        assert!(l.values.contains(&Value::Count(100)));
        assert!(l.values.contains(&Value::Count(4096)));
        assert_eq!(l.values[l.default], Value::Count(2));
        assert_eq!(l.values[l.start], Value::Count(100));
        let mut s = Settings::default();
        l.set(l.start, &mut s);
        assert_eq!(s.workers, Some(100));
        assert_eq!(l.label(l.start), "pool 100");
        let e = Ladder::of(&EDGE, Value::Switch(false), None).unwrap();
        let mut s = Settings::default();
        e.set(1, &mut s);
        assert_eq!((s.edge, e.label(1)), (true, "edge".into()));
        // A knob the search leaves alone has no ladder.
        let stack = crate::server::find("threads").unwrap().knobs()[0];
        assert!(Ladder::of(&stack, Value::Count(8388608), None).is_none());
    }

    /// A count value as a figure.
    fn count(v: Value) -> f64 {
        match v {
            Value::Count(n) => n as f64,
            _ => panic!("{v:?} is not a count"),
        }
    }

    /// A synthetic pool under blocking work whose throughput rises with
    /// the pool to `best` threads and falls past it.
    fn peaked(best: f64) -> impl Fn(&Setting, &Ladder) -> Option<f64> {
        move |s: &Setting, l: &Ladder| {
            let w = count(l.values[s[0]]);
            Some(1000.0 * w.min(best) / (1.0 + (w - best).max(0.0) / best))
        }
    }

    #[test]
    fn the_search_finds_a_known_best_pool_from_a_poor_guess() {
        let l = Ladder::of(&POOL, Value::Count(2), Some(16)).unwrap();
        let f = peaked(64.0);
        let (found, steps) = search(std::slice::from_ref(&l), &|s| f(s, &l));
        assert_eq!(l.values[found.setting[0]], Value::Count(64), "{found:?}");
        assert_eq!(found.why, Why::Faster);
        assert!(found.versus_default.unwrap().ratio > 20.0);
        assert!(steps <= 4, "{steps} steps");
        assert_eq!(
            settings_of(std::slice::from_ref(&l), &found.setting).workers,
            Some(64)
        );
        assert_eq!(
            label_of(std::slice::from_ref(&l), &found.setting),
            "pool 64"
        );
        assert_eq!(defaults_label(&[l]), "pool 2");
    }

    #[test]
    fn little_guess_lands_on_the_best_in_one_step() {
        let l = Ladder::of(&POOL, Value::Count(2), Some(100)).unwrap();
        let f = peaked(100.0);
        let (found, steps) = search(std::slice::from_ref(&l), &|s| f(s, &l));
        assert_eq!(l.values[found.setting[0]], Value::Count(100));
        assert_eq!(steps, 1);
    }

    #[test]
    fn a_flat_figure_keeps_the_default_and_says_so() {
        let l = Ladder::of(&POOL, Value::Count(2), Some(2)).unwrap();
        let (found, _) = search(std::slice::from_ref(&l), &|_| Some(1000.0));
        assert_eq!(found.setting, vec![l.default]);
        assert!(matches!(found.why, Why::DefaultBest | Why::NothingBetter));
        // Settings that fail to start are never chosen.
        let (found, _) = search(std::slice::from_ref(&l), &|s| {
            (l.values[s[0]] == Value::Count(2)).then_some(500.0)
        });
        assert_eq!(found.setting, vec![l.default]);
    }

    #[test]
    fn knobs_are_searched_one_after_another() {
        let pool = Ladder::of(&POOL, Value::Count(2), Some(8)).unwrap();
        let edge = Ladder::of(&EDGE, Value::Switch(false), None).unwrap();
        let ladders = [pool.clone(), edge];
        // Best at pool 8 with edge on (10 % more).
        let (found, _) = search(&ladders, &|s| {
            let w = count(pool.values[s[0]]);
            let base = 1000.0 * w.min(8.0);
            Some(if s[1] == 1 { base * 1.1 } else { base })
        });
        assert_eq!(label_of(&ladders, &found.setting), "pool 8, edge");
        assert_eq!(found.why, Why::Faster);
    }
}
