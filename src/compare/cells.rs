//! Cell by cell: which cells the two sides share, and for each the figures
//! of its runs on both, tested.
//!
//! **Matching.** A cell is (work profile, model, connections), from each
//! side's plan; the run number and the run order are not part of it. A
//! variant (`--variant NAME=…`) is the same model only when its model and
//! flags are the same on both sides; otherwise it is listed on both sides
//! as a cell of its own, with why. A `--server` or `--target` matches by
//! name: its command changing is usually the change under test, and it is
//! named among the differing settings.
//!
//! **The test.** The repeats of two sessions are not paired (round r of
//! one has nothing in common with round r of the other), so every figure
//! is compared by Welch's t on the logarithms of each side's runs
//! ([`crate::stats::paired::welch`]), giving NEW/BASE with its 95 %
//! interval. The verdict is read off that interval as criterion.rs reads
//! its own: *slower* or *faster* only when the whole interval lies beyond
//! ±margin, *equivalent* when it lies wholly within it, *inconclusive*
//! otherwise; with a single run a side nothing is tested. A change within
//! the margin is therefore never called slower however many runs show it,
//! and a true 2 % change reads slower in about 1 % of tries at 3 runs a
//! side with 3–5 % noise (`tests::a_small_change_is_rarely_slower`).
//!
//! **Latency** is compared as a shift function over the quantiles every
//! run records (p50, p90, p99, p99.9, corrected in an open loop): each
//! quantile tested as above across the runs, the run being the unit of
//! replication (Rousselet, Pernet & Wilcox 2017, "Beyond differences in
//! means"). A two-sample test over the latencies themselves (Kolmogorov–
//! Smirnov and the like) is not used: the latencies of one run are not
//! independent (one stall delays many), millions of them make any 0.5 %
//! difference "significant" with no room for "equivalent", and they hold
//! none of the variation between sessions, which is the variation that
//! matters here. Cost: a pass over each side's records per cell.

use crate::present::words::and_list;
use std::collections::{BTreeMap, BTreeSet};

use super::input::Side;
use super::report::{Cell, Curve, FigurePair, Memory, Pair, Quantile, Runs, Unmatched, Verdict};
use crate::results::cell::{CellResult, Metrics, Status};
use crate::results::dir::RunData;
use crate::results::matrix::RunPlan;
use crate::stats::paired::{welch, Outcome, Sample};

/// What a cell is, across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub work: Option<String>,
    pub model: String,
    pub connections: usize,
}

impl Key {
    fn of(c: &crate::results::matrix::CellSpec) -> Key {
        Key {
            work: c.work.as_ref().map(ToString::to_string),
            model: c.model.clone(),
            connections: c.connections,
        }
    }

    /// `epoll at 1,000`, `hybrid under block:1ms at 100`.
    pub fn text(&self) -> String {
        format!(
            "{}{} at {}",
            self.model,
            self.work
                .as_ref()
                .map_or_else(String::new, |w| format!(" under {w}")),
            crate::present::units::format_count(self.connections as f64)
        )
    }
}

/// The quantiles of the shift function.
const QUANTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

/// The quantiles a histogram's curve is drawn through.
const SPECTRUM: [f64; 10] = [
    0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999,
];

/// The figure of one quantile.
fn quantile_of(m: &Metrics, q: f64) -> Option<f64> {
    match q {
        0.5 => m.latency_p50_us,
        0.9 => m.latency_p90_us,
        0.99 => m.latency_p99_us,
        _ => m.latency_p99_9_us,
    }
}

/// What the comparison needs of the settings.
pub struct Rules<'a> {
    pub margin: f64,
    pub fail_if_slower: Option<f64>,
    pub reference: Option<&'a str>,
}

/// How a model is defined in a plan: a variant's model and flags; `None`
/// for a model, server or target known by its name alone.
fn definition(plan: &RunPlan, model: &str) -> Option<String> {
    plan.variants.iter().find(|v| v.name == model).map(|v| {
        format!("{} {}", v.model, v.settings.text())
            .trim()
            .to_string()
    })
}

/// The keys a side planned, with the order they are listed in.
fn planned(data: &RunData) -> BTreeSet<Key> {
    data.plan.cells.iter().map(Key::of).collect()
}

/// The order cells are listed in: work profile, then model as the plans
/// list them (BASE's first), then connections.
fn order(base: &RunData, new: &RunData) -> impl Fn(&Key) -> (usize, usize, usize) {
    let mut works: Vec<Option<String>> = Vec::new();
    let mut models: Vec<String> = Vec::new();
    for d in [base, new] {
        for c in &d.plan.cells {
            let work = c.work.as_ref().map(ToString::to_string);
            if !works.contains(&work) {
                works.push(work);
            }
            if !models.contains(&c.model) {
                models.push(c.model.clone());
            }
        }
    }
    move |k: &Key| {
        (
            works
                .iter()
                .position(|w| *w == k.work)
                .unwrap_or(usize::MAX),
            models
                .iter()
                .position(|m| *m == k.model)
                .unwrap_or(usize::MAX),
            k.connections,
        )
    }
}

/// The matched keys in listing order, and what each side has alone.
pub fn matching(base: &Side, new: &Side) -> (Vec<Key>, Vec<Unmatched>, Vec<Unmatched>) {
    let (b, n) = (&base.data, &new.data);
    let (bk, nk) = (planned(b), planned(n));
    let redefined = |model: &str| {
        let (x, y) = (definition(&b.plan, model), definition(&n.plan, model));
        (x != y).then(|| {
            let say = |d: Option<String>| d.unwrap_or_else(|| model.to_string());
            format!(
                "{model} is {} in BASE, {} in NEW",
                say(definition(&b.plan, model)),
                say(definition(&n.plan, model))
            )
        })
    };
    let sort = order(b, n);
    let mut matched: Vec<Key> = bk
        .intersection(&nk)
        .filter(|k| redefined(&k.model).is_none())
        .cloned()
        .collect();
    matched.sort_by_key(|k| sort(k));
    let alone = |mine: &BTreeSet<Key>, theirs: &BTreeSet<Key>| {
        let mut groups: BTreeMap<(usize, usize, Option<String>, String), Vec<usize>> =
            BTreeMap::new();
        for k in mine {
            let why = redefined(&k.model);
            if theirs.contains(k) && why.is_none() {
                continue;
            }
            let (w, m, _) = sort(k);
            groups
                .entry((w, m, k.work.clone(), k.model.clone()))
                .or_default()
                .push(k.connections);
        }
        groups
            .into_iter()
            .map(|((_, _, work, model), connections)| Unmatched {
                why: redefined(&model),
                work,
                model,
                connections,
            })
            .collect::<Vec<_>>()
    };
    (matched, alone(&bk, &nk), alone(&nk, &bk))
}

/// The kept cells of `key` (a disturbed run's repeat, not the run).
fn cells_of<'a>(data: &'a RunData, key: &Key) -> Vec<&'a CellResult> {
    data.cells
        .iter()
        .filter(|c| Key::of(&c.cell) == *key)
        .collect()
}

/// (run, value) of the measured cells that have the figure.
fn values(cells: &[&CellResult], pick: &dyn Fn(&CellResult) -> Option<f64>) -> Vec<(usize, f64)> {
    cells
        .iter()
        .filter(|c| c.status == Status::Ok)
        .filter_map(|c| pick(c).map(|v| (c.cell.run, v)))
        .filter(|(_, v)| v.is_finite() && *v > 0.0)
        .collect()
}

impl Runs {
    fn of(values: Vec<(usize, f64)>) -> Runs {
        let mut v: Vec<f64> = values.iter().map(|x| x.1).collect();
        v.sort_by(f64::total_cmp);
        Runs {
            median: (!v.is_empty()).then(|| crate::stats::quantile(&v, 0.5)),
            min: v.first().copied(),
            max: v.last().copied(),
            values,
        }
    }
}

impl FigurePair {
    /// The ratio of `b`'s worse-way figure: NEW/BASE where lower is
    /// better, BASE/NEW where higher is; with its interval.
    pub fn worse(&self, higher_is_better: bool) -> Option<(f64, Option<(f64, f64)>)> {
        let r = self.ratio?;
        Some(if higher_is_better {
            (1.0 / r, self.interval.map(|(lo, hi)| (1.0 / hi, 1.0 / lo)))
        } else {
            (r, self.interval)
        })
    }

    /// Worse by more than `share` with 95 % confidence: the whole interval
    /// of the worse-way ratio lies above 1 + share.
    pub fn worse_by(&self, share: f64, higher_is_better: bool) -> bool {
        self.verdict != Verdict::Untested
            && self
                .worse(higher_is_better)
                .and_then(|w| w.1)
                .is_some_and(|(lo, _)| lo > 1.0 + share)
    }
}

/// A figure's runs on both sides, tested.
pub fn figure(
    base: Vec<(usize, f64)>,
    new: Vec<(usize, f64)>,
    higher_is_better: bool,
    margin: f64,
) -> FigurePair {
    let mut f = FigurePair {
        base: Runs::of(base),
        new: Runs::of(new),
        ratio: None,
        interval: None,
        verdict: Verdict::Untested,
        settle_runs: None,
        noise: None,
    };
    let (Some(b), Some(n)) = (Sample::new(&f.base.values), Sample::new(&f.new.values)) else {
        return f;
    };
    // The same runs on both sides (a run compared with itself): equal, not
    // a sample of two sessions to test.
    if f.base.values == f.new.values && f.base.values.len() > 1 {
        f.ratio = Some(1.0);
        f.interval = Some((1.0, 1.0));
        f.verdict = Verdict::Equivalent;
        f.noise = Some(0.0);
        return f;
    }
    let c = welch(&n, &b, crate::stats::paired::Rule::new(margin));
    f.ratio = Some(c.ratio);
    f.interval = c.interval;
    if c.outcome == Outcome::Untested {
        return f;
    }
    f.noise = Some(c.noise);
    let m = 1.0 + margin;
    let (_, w) = f.worse(higher_is_better).expect("a ratio");
    let (lo, hi) = w.expect("an interval");
    f.verdict = if lo > m {
        Verdict::Slower
    } else if hi < 1.0 / m {
        Verdict::Faster
    } else if c.outcome == Outcome::Equivalent {
        Verdict::Equivalent
    } else {
        Verdict::Inconclusive
    };
    if f.verdict == Verdict::Inconclusive {
        f.settle_runs = c.settle_runs;
    }
    f
}

/// The latency's shift in a word, from the verdicts of its tested
/// quantiles (intersection–union: a claim about all of them needs each).
pub fn shift(quantiles: &[Quantile]) -> String {
    let tested: Vec<(&str, Verdict)> = quantiles
        .iter()
        .filter(|q| q.figure.verdict != Verdict::Untested)
        .map(|q| (q.name.as_str(), q.figure.verdict))
        .collect();
    if tested.is_empty() {
        return "untested".into();
    }
    let all = |v: Verdict| tested.iter().all(|t| t.1 == v);
    let at = |name: &str| tested.iter().find(|t| t.0 == name).map(|t| t.1);
    let tail = |v: Verdict| {
        ["p99", "p99.9"]
            .iter()
            .filter_map(|n| at(n))
            .collect::<Vec<_>>()
            .as_slice()
            .iter()
            .all(|t| *t == v)
            && at("p99").is_some()
    };
    // "Throughout" only when every quantile was tested: a short run never
    // tests p99.9, and its shift there is not known.
    let untested: Vec<&str> = quantiles
        .iter()
        .filter(|q| q.figure.verdict == Verdict::Untested)
        .map(|q| q.name.as_str())
        .collect();
    let whole = |word: &str| match untested.as_slice() {
        [] => format!("{word} throughout"),
        _ => format!(
            "{word} at {} ({} untested)",
            and_list(&tested.iter().map(|t| t.0).collect::<Vec<_>>()),
            and_list(&untested)
        ),
    };
    if all(Verdict::Slower) {
        whole("longer")
    } else if all(Verdict::Faster) {
        whole("shorter")
    } else if all(Verdict::Equivalent) {
        whole("equivalent")
    } else if tail(Verdict::Slower) && at("p50") != Some(Verdict::Faster) {
        "longer in the tail".into()
    } else if tail(Verdict::Faster) && at("p50") != Some(Verdict::Slower) {
        "shorter in the tail".into()
    } else if at("p50") == Some(Verdict::Slower) {
        "longer at the median".into()
    } else if at("p50") == Some(Verdict::Faster) {
        "shorter at the median".into()
    } else {
        "not told apart".into()
    }
}

/// The server's CPU per message, µs: as the run checked it, or for a load
/// given `--server-pid`, from its limits when the kernel's accounting
/// resolves it.
fn server_cpu_us(c: &CellResult) -> Option<f64> {
    if let Some(v) = c.metrics().server_cpu_per_message_us {
        return Some(v);
    }
    let load = c.load.as_ref().filter(|_| c.server.is_none())?;
    let cpu = load.limits.server_cpu_seconds?;
    let error = load.limits.server_cpu_error_seconds.unwrap_or(0.0);
    (load.messages > 0 && error <= 0.1 * cpu).then(|| cpu * 1e6 / load.messages as f64)
}

/// A side's latency curve of one cell.
fn curve(side: &Side, cells: &[&CellResult]) -> Curve {
    let runs: BTreeSet<usize> = cells
        .iter()
        .filter(|c| c.status == Status::Ok)
        .map(|c| c.cell.run)
        .collect();
    let mut hist: Option<hdrhistogram::Histogram<u64>> = None;
    for (_, h) in side.histograms.iter().filter(|(r, _)| runs.contains(r)) {
        match &mut hist {
            Some(t) => {
                if t.add(h).is_err() {
                    hist = None;
                    break;
                }
            }
            None => hist = Some(h.clone()),
        }
    }
    if let Some(h) = hist.filter(|h| !h.is_empty()) {
        let points = SPECTRUM
            .iter()
            .filter(|&&q| h.len() as f64 >= 1.0 / (1.0 - q))
            .map(|&q| (q, h.value_at_quantile(q) as f64 / 1e3))
            .collect();
        return Curve {
            points,
            source: "hdr".into(),
        };
    }
    let points = QUANTILES
        .iter()
        .filter_map(|&(_, q)| {
            let v = Runs::of(values(cells, &|c| quantile_of(&c.metrics(), q)));
            v.median.map(|m| (q, m))
        })
        .collect();
    Curve {
        points,
        source: "quantiles".into(),
    }
}

/// The median of a figure over the measured cells.
fn median(cells: &[&CellResult], pick: &dyn Fn(&CellResult) -> Option<f64>) -> Option<f64> {
    Runs::of(values(cells, pick)).median
}

/// One matched cell on both sides.
pub fn cell(base: &Side, new: &Side, key: &Key, rules: &Rules) -> Cell {
    let higher = base.data.plan.primary.higher_is_better();
    let primary = base.data.plan.primary;
    let (bc, nc) = (cells_of(&base.data, key), cells_of(&new.data, key));
    // The primary figure, over the reference's in its own round when one
    // is given (its own cells stay as measured).
    let reference = rules.reference.filter(|r| *r != key.model).map(|r| Key {
        model: r.to_string(),
        ..key.clone()
    });
    let primary_values = |data: &RunData, cells: &[&CellResult]| {
        let raw = values(cells, &|c| c.metrics().primary(primary));
        match &reference {
            None => raw,
            Some(r) => crate::stats::paired::per_round(
                &raw,
                &values(&cells_of(data, r), &|c| c.metrics().primary(primary)),
            ),
        }
    };
    let fig = figure(
        primary_values(&base.data, &bc),
        primary_values(&new.data, &nc),
        higher,
        rules.margin,
    );
    let gate_failed = rules.reference != Some(key.model.as_str())
        && rules
            .fail_if_slower
            .is_some_and(|p| fig.worse_by(p, higher));
    let count_ok = |c: &CellResult, q: f64| {
        c.load
            .as_ref()
            .is_some_and(|l| l.latency_us.count as f64 >= 10.0 / (1.0 - q))
    };
    let latency: Vec<Quantile> = QUANTILES
        .iter()
        .map(|&(name, q)| {
            let pick = |cells: &[&CellResult]| {
                let enough = cells
                    .iter()
                    .filter(|c| c.status == Status::Ok)
                    .all(|c| count_ok(c, q));
                let v = values(cells, &|c| quantile_of(&c.metrics(), q));
                (v, enough)
            };
            let ((bv, be), (nv, ne)) = (pick(&bc), pick(&nc));
            let mut figure = figure(bv, nv, false, rules.margin);
            if !(be && ne) {
                figure.verdict = Verdict::Untested;
                figure.interval = None;
            }
            Quantile {
                name: name.into(),
                q,
                figure,
            }
        })
        .collect();
    let cpu = figure(
        values(&bc, &server_cpu_us),
        values(&nc, &server_cpu_us),
        false,
        rules.margin,
    );
    let jain = |cells: &[&CellResult]| median(cells, &|c| c.metrics().jain);
    let starved = |cells: &[&CellResult]| {
        cells
            .iter()
            .filter(|c| c.status == Status::Ok)
            .filter_map(|c| c.load.as_ref()?.fairness.as_ref().map(|f| f.starved))
            .max()
    };
    let disturbed = |cells: &[&CellResult]| {
        cells
            .iter()
            .filter(|c| crate::analysis::disturbed::disturbed(c))
            .count()
    };
    let limited = |cells: &[&CellResult]| crate::analysis::verdict::limit_note(cells);
    Cell {
        work: key.work.clone(),
        model: key.model.clone(),
        connections: key.connections,
        shift: shift(&latency),
        primary: fig,
        gate_failed,
        latency,
        server_cpu_why: (cpu.base.values.is_empty() && cpu.new.values.is_empty())
            .then(|| {
                bc.iter()
                    .chain(&nc)
                    .find_map(|c| c.server_cpu_per_message()?.err())
                    .map(|u| u.short())
            })
            .flatten(),
        server_cpu_per_message_us: (!cpu.base.values.is_empty() || !cpu.new.values.is_empty())
            .then_some(cpu),
        jain: Pair {
            base: jain(&bc),
            new: jain(&nc),
        },
        starved: Pair {
            base: starved(&bc),
            new: starved(&nc),
        },
        limited_by: Pair {
            base: limited(&bc),
            new: limited(&nc),
        },
        disturbed: Pair {
            base: disturbed(&bc),
            new: disturbed(&nc),
        },
        curve: Pair {
            base: curve(base, &bc),
            new: curve(new, &nc),
        },
    }
}

/// Memory per connection of each model both sides measured at two counts
/// or more: the slope of the server's anonymous PSS, compared by its
/// intervals (apart: more or less; overlapping: not told apart).
pub fn memory(base: &Side, new: &Side, matched: &[Key]) -> Vec<Memory> {
    use crate::analysis::memory::{slopes, Kind};
    use crate::results::axis::parts;
    let fits = |side: &Side| {
        let mut out: BTreeMap<(Option<String>, String), (f64, f64, f64)> = BTreeMap::new();
        for part in parts(&side.data) {
            let work = part.work.filter(|w| !w.is_none()).map(ToString::to_string);
            for s in slopes(&part.data, Kind::User) {
                if let Some(f) = s.fit {
                    out.insert((work.clone(), s.model), (f.slope, f.slope_lo, f.slope_hi));
                }
            }
        }
        out
    };
    let (b, n) = (fits(base), fits(new));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for k in matched {
        let id = (k.work.clone(), k.model.clone());
        if !seen.insert(id.clone()) {
            continue;
        }
        let (x, y) = (b.get(&id).copied(), n.get(&id).copied());
        if x.is_none() && y.is_none() {
            continue;
        }
        let verdict = match (x, y) {
            (Some(x), Some(y)) if y.1 > x.2 => "more",
            (Some(x), Some(y)) if y.2 < x.1 => "less",
            (Some(_), Some(_)) => "not told apart",
            _ => "untested",
        };
        out.push(Memory {
            work: id.0,
            model: id.1,
            base: x,
            new: y,
            verdict: verdict.into(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::SplitMix64 as Rng;

    fn runs(values: &[f64]) -> Vec<(usize, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i + 1, *v))
            .collect()
    }

    #[test]
    fn the_verdict_needs_the_whole_interval_beyond_the_margin() {
        let base = runs(&[100.0, 101.0, 99.0]);
        let f = figure(base.clone(), runs(&[80.0, 81.0, 79.0]), true, 0.05);
        assert_eq!(f.verdict, Verdict::Slower);
        assert!(f.worse_by(0.05, true) && !f.worse_by(0.3, true));
        let f = figure(base.clone(), runs(&[100.5, 99.5, 100.0]), true, 0.05);
        assert_eq!(f.verdict, Verdict::Equivalent);
        // 3 % slower beyond noise, but not beyond the margin.
        let f = figure(base.clone(), runs(&[97.0, 97.1, 96.9]), true, 0.05);
        assert!(f.interval.is_some_and(|(_, hi)| hi < 1.0));
        assert_ne!(f.verdict, Verdict::Slower);
        // A time: longer is worse.
        let f = figure(base.clone(), runs(&[130.0, 131.0, 129.0]), false, 0.05);
        assert_eq!(f.verdict, Verdict::Slower);
        let f = figure(base, runs(&[80.0]), true, 0.05);
        assert_eq!(f.verdict, Verdict::Untested);
        assert!(!f.worse_by(0.05, true));
    }

    /// At 3 and 5 runs a side with 3 % and 5 % noise per run: a true 2 %
    /// change is rarely called slower (the margin guards it), a 20 % one
    /// almost always is.
    #[test]
    fn a_small_change_is_rarely_slower() {
        let mut rng = Rng::new(28);
        for (n, sigma) in [(3, 0.03), (3, 0.05), (5, 0.03), (5, 0.05)] {
            let tries = 2000;
            let rate = |rng: &mut Rng, factor: f64| {
                (0..tries)
                    .filter(|_| {
                        let mut draw = |f: f64| -> Vec<(usize, f64)> {
                            (1..=n)
                                .map(|r| (r, 1000.0 * f * (sigma * rng.normal()).exp()))
                                .collect()
                        };
                        let (b, x) = (draw(1.0), draw(factor));
                        figure(b, x, true, 0.05).verdict == Verdict::Slower
                    })
                    .count() as f64
                    / tries as f64
            };
            let small = rate(&mut rng, 0.98);
            assert!(
                small < 0.025,
                "n {n} σ {sigma}: 2 % slower called slower in {small}"
            );
            let same = rate(&mut rng, 1.0);
            assert!(
                same < 0.02,
                "n {n} σ {sigma}: no change called slower in {same}"
            );
            if sigma == 0.03 {
                let big = rate(&mut rng, 0.8);
                assert!(big > 0.9, "n {n} σ {sigma}: 20 % slower found in {big}");
            }
        }
    }

    fn quantile(name: &str, verdict: Verdict) -> Quantile {
        let mut f = figure(vec![], vec![], false, 0.05);
        f.verdict = verdict;
        Quantile {
            name: name.into(),
            q: 0.5,
            figure: f,
        }
    }

    #[test]
    fn the_shift_in_a_word() {
        use Verdict::*;
        let word = |v: [Verdict; 4]| {
            let q: Vec<Quantile> = ["p50", "p90", "p99", "p99.9"]
                .iter()
                .zip(v)
                .map(|(n, v)| quantile(n, v))
                .collect();
            shift(&q)
        };
        assert_eq!(word([Slower; 4]), "longer throughout");
        assert_eq!(word([Equivalent; 4]), "equivalent throughout");
        assert_eq!(
            word([Equivalent, Inconclusive, Slower, Slower]),
            "longer in the tail"
        );
        assert_eq!(
            word([Inconclusive, Inconclusive, Faster, Faster]),
            "shorter in the tail"
        );
        assert_eq!(
            word([Equivalent, Inconclusive, Slower, Inconclusive]),
            "not told apart"
        );
        assert_eq!(word([Untested; 4]), "untested");
        assert_eq!(
            word([Slower, Slower, Untested, Untested]),
            "longer at p50 and p90 (p99 and p99.9 untested)"
        );
        assert_eq!(
            word([Equivalent, Equivalent, Equivalent, Untested]),
            "equivalent at p50, p90 and p99 (p99.9 untested)"
        );
    }
}
