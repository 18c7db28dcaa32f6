//! Whether two models differ, are equivalent, or cannot be told apart yet,
//! and the ranking that follows, so that a ranking never orders noise and
//! never calls noise a tie.
//!
//! **Three outcomes.** Each comparison gives the ratio of the two models'
//! figures with its 95 % interval, and one of:
//!
//! - *different* (faster or slower): the interval lies on one side of 1,
//!   and not wholly inside the margin;
//! - *equivalent*: the whole interval lies inside ±margin (5 % unless the
//!   run says otherwise), so any difference is smaller than the margin.
//!   This is Schuirmann's two one-sided tests, read off the same 95 %
//!   interval that is printed (each side then at 2.5 %, stricter than the
//!   usual 5 %, so that no row reads "equivalent" beside an interval that
//!   leaves the margin);
//! - *inconclusive*: neither. A wide interval is never read as a tie: it
//!   says how many runs would likely settle it ([`Comparison::settle_runs`],
//!   from the spread seen so far) or that the runs vary too much for that.
//!
//! **The test: paired rounds, Student's t on the logarithms.** A run
//! interleaves its repeats: round r runs every model once (in a shuffled
//! order) before round r+1 runs any. This machine's figures drift by a
//! third from hour to hour, and that drift is shared by every model of one
//! round; the ratio within a round cancels it. So when two models share
//! rounds, the test takes the ratio of their figures in each shared round
//! and gives the t interval of the mean of those ratios' logarithms
//! (`t(0.975, rounds − 1)`), as a ratio. Logarithms, because noise here is
//! multiplicative (a disturbed run loses a share, not an amount). Where the
//! rounds are not shared (too few in common), Welch's t on the logarithms
//! of each side's runs is used instead, without the pairing.
//!
//! **From 10 rounds, trimmed.** Short resident slots are sometimes hit by
//! a burst of another process's work (a slot in ten losing a third, on
//! this machine at rest): one such round moves a mean and inflates a
//! variance, and the t interval of ten rounds then spans the difference it
//! would otherwise have found. From 10 pairs, the interval is Yuen's: the
//! mean of the log ratios with the lowest and the highest tenth left out,
//! its standard error from their winsorized variance, and t with the
//! degrees of freedom of the values kept ([`trimmed`]). Under normal noise
//! it is nearly as narrow as Student's; a disturbed round is then one of
//! the values left out. Below 10 pairs nothing is trimmed. A rank interval
//! (Wilcoxon's signed-rank, around the Hodges–Lehmann median) was tried
//! first and is no help here: at 10 pairs it leaves out only 8 of the 55
//! Walsh averages at each end, and one outlier drags 10 of them
//! ([`tests::one_disturbed_round_in_ten`]).
//!
//! **Successive rounds.** The t interval takes the per-round ratios as
//! independent. A drift of the machine that outlasts a round (a
//! neighbour's job of a minute) can leave successive ratios alike, and
//! then the interval would be too narrow. So the ratios are taken in
//! round order and their lag-1 autocorrelation ρ estimated; when ρ is
//! beyond what chance gives independent ratios (ρ > 1.645/√n, the
//! one-sided 95 % bound of white noise), with 5 pairs or more, the pairs
//! count as n(1 − ρ)/(1 + ρ) independent ones (the effective sample size
//! of a first-order autoregressive series), which widens the interval and
//! lowers the degrees of freedom. A ρ within chance is not used (at 5 to
//! 10 pairs its estimate is too noisy: using every positive one cost a
//! third of the power to find a 10 % difference at 5 rounds), and a
//! negative one never narrows the interval. Resident slots are meant to
//! make the ratios independent (the two slots of a pair are seconds apart
//! and in shuffled order); this is the check that they are.
//!
//! Why these suit 3 to 10 repeats: a rank test cannot reach 5 % at all with
//! 3 against 3 (its smallest two-sided p is 0.1), nor a sign test with 5
//! pairs (0.0625), whatever the data; a bootstrap of medians from 3 values
//! is the ratio of the two ranges and separates identical models far more
//! often than 5 % of the time. The t interval is exact for log-normal noise,
//! usable from 2 pairs, and an outlier widens it (making the outcome
//! inconclusive, never a false difference). In simulation
//! (`tests::error_rates`: two models under a drift shared by each round of
//! up to ±30 %, and 3 % noise of their own per run, 2,000 tries each), the
//! paired test called identical models different in 2.5–4 % of tries at
//! every count of rounds from 2 to 10, and equivalent in 9 % at 3 rounds,
//! 24 % at 5 and 80 % at 10 (inconclusive otherwise); it found a 10 %
//! difference in 55 % of tries at 3 rounds, 84 % at 4, 95 % at 5 and
//! every try from 8. Unpaired, the drift hid that difference at any count
//! (2–3 % of tries).
//!
//! With a single run on either side nothing is tested
//! ([`Outcome::Untested`]).
//!
//! **Ranking.** Models are listed by median, best first, so a model is never
//! placed above one whose every run beat all of its own. Walking down that
//! list, a model joins the group above it unless some member of that group
//! is *different* from it (better, beyond the margin); then it starts the
//! next group, whose rank is its place in the list (competition ranking:
//! 1, 1, 3). Within a group every model is equivalent to, or not yet told
//! apart from, the group's first; the row says which. A model with a single
//! run has no rank and comes last.
//!
//! Cost: per pair of models, one pass over their rounds; nothing random.

use serde::{Deserialize, Serialize};

/// The equivalence margin unless a run sets its own: ±5 %.
pub const DEFAULT_MARGIN: f64 = 0.05;

/// The confidence of an interval unless a run looks at its rounds more
/// than once ([`super::looks`]): 95 %.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// What a comparison is held to: the equivalence margin, and the
/// confidence of the interval read against it and against 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Rule {
    /// 0.05: ±5 %.
    pub margin: f64,
    /// 0.95: a 95 % interval.
    pub level: f64,
}

impl Rule {
    /// `margin` at [`DEFAULT_LEVEL`].
    pub(crate) fn new(margin: f64) -> Rule {
        Rule {
            margin,
            level: DEFAULT_LEVEL,
        }
    }

    /// The two-sided quantile of Student's t at this level.
    fn t(&self, df: f64) -> f64 {
        super::student::two_sided(self.level, df)
    }
}

/// Beyond this many runs a model, "more runs" is not a useful answer.
pub(crate) const MAX_SETTLE_RUNS: usize = 30;

/// One model's repeats of a figure, each with the round it ran in, prepared
/// for comparison: the positive finite values (a ratio and a logarithm need
/// them), their median, and the mean and variance of their logarithms.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// (round, value), by round.
    rounds: Vec<(usize, f64)>,
    median: f64,
    log_mean: f64,
    /// Sample variance of the logarithms (0 for one value).
    log_var: f64,
}

impl Sample {
    /// `None` when no value is positive and finite.
    pub fn new(values: &[(usize, f64)]) -> Option<Sample> {
        let mut rounds: Vec<(usize, f64)> = values
            .iter()
            .copied()
            .filter(|(_, v)| v.is_finite() && *v > 0.0)
            .collect();
        if rounds.is_empty() {
            return None;
        }
        rounds.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut sorted: Vec<f64> = rounds.iter().map(|r| r.1).collect();
        sorted.sort_by(f64::total_cmp);
        let median = super::quantile(&sorted, 0.5);
        let (log_mean, log_var) = mean_var(&sorted.iter().map(|v| v.ln()).collect::<Vec<_>>());
        Some(Sample {
            rounds,
            median,
            log_mean,
            log_var,
        })
    }

    /// The median of the values.
    pub fn median(&self) -> f64 {
        self.median
    }

    /// Values used.
    pub fn n(&self) -> usize {
        self.rounds.len()
    }
}

/// Mean and sample variance (0 for fewer than two values).
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n.max(1.0);
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// What a comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A single run on one side: nothing to test.
    Untested,
    /// The interval lies on one side of 1 and leaves the margin.
    Different,
    /// The interval lies inside the margin.
    Equivalent,
    /// Neither: the runs do not settle it.
    Inconclusive,
}

/// Which test gave the interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// Student's t over the per-round ratios.
    Paired,
    /// From 10 rounds: Yuen's trimmed t over the per-round ratios
    /// ([`trimmed`]).
    Trimmed,
    /// Welch's t over each side's runs.
    Welch,
}

/// The ratio of two models' figures with its 95 % interval and what it
/// says (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    /// The first over the second: the geometric mean of the per-round
    /// ratios (paired), the same with a tenth at each end left out
    /// (trimmed), or the ratio of geometric means (Welch); the ratio of
    /// medians when untested.
    pub ratio: f64,
    /// The 95 % interval of the ratio; `None` when untested.
    pub interval: Option<(f64, f64)>,
    pub outcome: Outcome,
    /// `None` when untested.
    pub test: Option<Test>,
    /// Rounds paired (0 unless paired).
    pub pairs: usize,
    /// Of those, how many count as independent once the correlation of
    /// successive rounds is allowed for ([`effective_pairs`]).
    pub independent_pairs: f64,
    /// The equivalence margin (0.05: ±5 %).
    pub margin: f64,
    /// The interval's confidence (0.95).
    pub level: f64,
    /// Inconclusive only: the runs per model at which, if the spread seen
    /// so far holds, the interval would settle it; `None` past
    /// [`MAX_SETTLE_RUNS`].
    pub settle_runs: Option<usize>,
    /// The spread per run of the log ratio, as a share (0.08: runs vary
    /// about ±8 % against each other).
    pub noise: f64,
}

impl Comparison {
    /// The same comparison the other way round (b over a).
    pub(crate) fn inverse(self) -> Comparison {
        Comparison {
            ratio: 1.0 / self.ratio,
            interval: self.interval.map(|(lo, hi)| (1.0 / hi, 1.0 / lo)),
            ..self
        }
    }

    /// The first is larger, beyond noise and margin.
    pub(crate) fn larger(&self) -> bool {
        self.outcome == Outcome::Different && self.interval.is_some_and(|(lo, _)| lo > 1.0)
    }

    /// The first is smaller, beyond noise and margin.
    #[cfg(test)]
    pub(crate) fn smaller(&self) -> bool {
        self.outcome == Outcome::Different && self.interval.is_some_and(|(_, hi)| hi < 1.0)
    }
}

/// The rounds `a` and `b` were both measured in, each as `a`'s figure
/// over `b`'s in that round: the one paired per-round ratio that the
/// ranking, the tuning search and `compare --reference` read.
pub(crate) fn per_round(a: &[(usize, f64)], b: &[(usize, f64)]) -> Vec<(usize, f64)> {
    a.iter()
        .filter_map(|&(r, x)| b.iter().find(|&&(s, _)| s == r).map(|&(_, y)| (r, x / y)))
        .collect()
}

/// The rounds both samples ran in, as log ratios a/b.
fn paired_logs(a: &Sample, b: &Sample) -> Vec<f64> {
    per_round(&a.rounds, &b.rounds)
        .into_iter()
        .map(|(_, x)| x.ln())
        .collect()
}

/// Whether to pair: three shared rounds or more, or every run of two
/// models that ran twice each.
fn pairable(pairs: usize, a: &Sample, b: &Sample) -> bool {
    pairs >= 3 || (pairs == 2 && a.n().min(b.n()) == 2)
}

/// How `a` compares with `b` (a over b), with equivalence margin `margin`
/// (0.05: ±5 %).
pub(crate) fn compare(a: &Sample, b: &Sample, rule: Rule) -> Comparison {
    if a.n() < 2 || b.n() < 2 {
        return untested(a, b, rule);
    }
    let logs = paired_logs(a, b);
    test(a, b, rule, &logs, pairable(logs.len(), a, b))
}

/// How `a` compares with `b` (a over b) by Welch's t alone, whatever
/// rounds they share: for runs made apart (two sessions of `c10k
/// compare`), where round r of one has nothing in common with round r of
/// the other.
pub(crate) fn welch(a: &Sample, b: &Sample, rule: Rule) -> Comparison {
    if a.n() < 2 || b.n() < 2 {
        return untested(a, b, rule);
    }
    test(a, b, rule, &[], false)
}

/// A single run on one side: the ratio of medians, nothing tested.
fn untested(a: &Sample, b: &Sample, rule: Rule) -> Comparison {
    Comparison {
        ratio: a.median / b.median,
        interval: None,
        outcome: Outcome::Untested,
        test: None,
        pairs: 0,
        independent_pairs: 0.0,
        margin: rule.margin,
        level: rule.level,
        settle_runs: None,
        noise: 0.0,
    }
}

/// How many of the per-round log ratios `logs` (in round order) count as
/// independent: n(1 − ρ)/(1 + ρ) for a lag-1 autocorrelation ρ past
/// chance (ρ > 1.645/√n) with 5 pairs or more (at least 2), else n.
pub(crate) fn effective_pairs(logs: &[f64]) -> f64 {
    let n = logs.len();
    let k = n as f64;
    if n < 5 {
        return k;
    }
    let (mean, var) = mean_var(logs);
    if var <= 0.0 {
        return k;
    }
    let lagged: f64 = logs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    let rho = lagged / (var * (k - 1.0));
    if rho <= 1.645 / k.sqrt() {
        return k;
    }
    (k * (1.0 - rho) / (1.0 + rho)).clamp(2.0, k)
}

/// Yuen's interval of the center of `d`: the mean with the `g` lowest
/// and `g` highest values left out (g = ⌊n/10⌋), its standard error
/// s_w / ((1 − 2g/n) √n) from the winsorized variance s_w² (each left-out
/// value counted as its nearest kept one), and t at 97.5 % with h − 1
/// degrees of freedom (h = n − 2g kept). The center and the half-width;
/// `None` below 10 values, where nothing would be left out.
pub(crate) fn trimmed(d: &[f64], rule: Rule) -> Option<(f64, f64)> {
    let n = d.len();
    let g = n / 10;
    if g == 0 {
        return None;
    }
    let mut v = d.to_vec();
    v.sort_by(f64::total_cmp);
    let h = n - 2 * g;
    let center = v[g..n - g].iter().sum::<f64>() / h as f64;
    let (lo, hi) = (v[g], v[n - 1 - g]);
    let winsorized: Vec<f64> = v.iter().map(|x| x.clamp(lo, hi)).collect();
    let (_, var) = mean_var(&winsorized);
    let se = var.sqrt() / ((h as f64 / n as f64) * (n as f64).sqrt());
    Some((center, rule.t(h as f64 - 1.0) * se))
}

/// The interval and outcome of a over b: paired over `logs` (the per-round
/// log ratios) when `paired`, else Welch's t over each side's runs.
fn test(a: &Sample, b: &Sample, rule: Rule, logs: &[f64], paired: bool) -> Comparison {
    let independent = if paired { effective_pairs(logs) } else { 0.0 };
    // From 10 rounds that count as independent, trimmed: a disturbed
    // round is then left out rather than widening the interval by its
    // whole distance.
    let trim = (paired && independent == logs.len() as f64)
        .then(|| trimmed(logs, rule))
        .flatten();
    // (center, half-width, per-run spread, runs, test)
    let (center, half, spread, runs, test) = if let Some((center, half)) = trim {
        let (_, var) = mean_var(logs);
        (center, half, var.sqrt(), logs.len(), Test::Trimmed)
    } else if paired {
        let k = independent;
        let (mean, var) = mean_var(logs);
        let sd = var.sqrt();
        (
            mean,
            rule.t(k - 1.0) * sd / k.sqrt(),
            sd,
            logs.len(),
            Test::Paired,
        )
    } else {
        let (na, nb) = (a.n() as f64, b.n() as f64);
        let (va, vb) = (a.log_var / na, b.log_var / nb);
        let se = (va + vb).sqrt();
        let half = if se > 0.0 {
            let df = (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
            rule.t(df) * se
        } else {
            0.0
        };
        (
            a.log_mean - b.log_mean,
            half,
            (a.log_var + b.log_var).sqrt(),
            a.n().min(b.n()),
            Test::Welch,
        )
    };
    let (log_lo, log_hi) = (center - half, center + half);
    let (lo, hi) = (log_lo.exp(), log_hi.exp());
    let m = (1.0 + rule.margin).ln();
    let outcome = if log_lo >= -m && log_hi <= m {
        Outcome::Equivalent
    } else if lo > 1.0 || hi < 1.0 {
        Outcome::Different
    } else {
        Outcome::Inconclusive
    };
    let settle_runs = (outcome == Outcome::Inconclusive)
        .then(|| settle(center.abs(), spread, m, runs, test, rule))
        .flatten();
    Comparison {
        ratio: center.exp(),
        interval: Some((lo, hi)),
        outcome,
        test: Some(test),
        pairs: if test == Test::Welch { 0 } else { logs.len() },
        independent_pairs: independent,
        margin: rule.margin,
        level: rule.level,
        settle_runs,
        noise: spread.exp() - 1.0,
    }
}

/// The runs per model past `runs` at which an interval of this spread
/// would either leave 1 behind (`d` the distance of the center from 1, in
/// logarithms) or fit inside the margin `m`; `None` past
/// [`MAX_SETTLE_RUNS`].
fn settle(d: f64, spread: f64, m: f64, runs: usize, test: Test, rule: Rule) -> Option<usize> {
    (runs + 1..=MAX_SETTLE_RUNS).find(|&k| {
        let k_f = k as f64;
        let half = match test {
            Test::Paired | Test::Trimmed => rule.t(k_f - 1.0) * spread / k_f.sqrt(),
            Test::Welch => rule.t(2.0 * k_f - 2.0) * spread / k_f.sqrt(),
        };
        half < d || d + half < m
    })
}

/// One model's place in a ranking.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Standing {
    /// Index of the sample in the input.
    pub index: usize,
    /// The rank of its group (its first row's place in the list); `None`
    /// with a single run.
    pub rank: Option<usize>,
    /// Index (in the input) of its group's first model.
    pub leader: usize,
    /// How many times worse than the first row (its figure over the best's
    /// when lower is better, the best's over its when higher is), with the
    /// interval; `None` for the first row itself.
    pub versus_best: Option<Comparison>,
    /// How many times worse than its group's first model; `None` for that
    /// model itself.
    pub versus_leader: Option<Comparison>,
    /// For a group's first model below the top: the model of the group
    /// above that is better beyond noise and margin (its input index), and
    /// how many times worse this one is. What put it below.
    pub placed_by: Option<(usize, Comparison)>,
}

/// The samples ranked best first (see the module's doc for the rule), with
/// `rule`.
pub(crate) fn standings(samples: &[Sample], higher_is_better: bool, rule: Rule) -> Vec<Standing> {
    // How many times m is worse than j.
    let worse = |m: usize, j: usize| -> Comparison {
        if higher_is_better {
            compare(&samples[j], &samples[m], rule)
        } else {
            compare(&samples[m], &samples[j], rule)
        }
    };
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by(|&x, &y| {
        let tested = |i: usize| samples[i].n() < 2;
        let by_median = samples[x].median.total_cmp(&samples[y].median);
        tested(x)
            .cmp(&tested(y))
            .then(if higher_is_better {
                by_median.reverse()
            } else {
                by_median
            })
            .then(x.cmp(&y))
    });
    let top = order.first().copied();
    let mut out: Vec<Standing> = Vec::with_capacity(order.len());
    let mut group: Vec<usize> = Vec::new();
    let mut rank = 1;
    for (place, &m) in order.iter().enumerate() {
        let versus_best = top.filter(|&t| t != m).map(|t| worse(m, t));
        if samples[m].n() < 2 {
            out.push(Standing {
                index: m,
                rank: None,
                leader: m,
                versus_best,
                versus_leader: None,
                placed_by: None,
            });
            continue;
        }
        let beaten = group
            .iter()
            .map(|&g| (g, worse(m, g)))
            .find(|(_, c)| c.larger());
        if group.is_empty() || beaten.is_some() {
            group = vec![m];
            rank = place + 1;
            out.push(Standing {
                index: m,
                rank: Some(rank),
                leader: m,
                versus_best,
                versus_leader: None,
                placed_by: beaten,
            });
        } else {
            let leader = group[0];
            group.push(m);
            out.push(Standing {
                index: m,
                rank: Some(rank),
                leader,
                versus_best,
                versus_leader: Some(worse(m, leader)),
                placed_by: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_never_pairs_rounds() {
        // Round by round the second is 10 % faster, but the rounds drift
        // together: paired, that is a difference; unpaired, the drift hides it.
        let a: Vec<(usize, f64)> = [100.0, 150.0, 200.0, 120.0]
            .iter()
            .enumerate()
            .map(|(i, v)| (i + 1, *v))
            .collect();
        let b: Vec<(usize, f64)> = a.iter().map(|&(r, v)| (r, v * 1.1)).collect();
        let (a, b) = (Sample::new(&a).unwrap(), Sample::new(&b).unwrap());
        assert_eq!(compare(&b, &a, Rule::new(0.05)).test, Some(Test::Paired));
        let w = welch(&b, &a, Rule::new(0.05));
        assert_eq!((w.test, w.pairs), (Some(Test::Welch), 0));
        assert_eq!(w.outcome, Outcome::Inconclusive);
        assert!((w.ratio - 1.1).abs() < 1e-9);
    }
    use crate::stats::rng::SplitMix64;

    /// Values in rounds 1, 2, 3…
    fn sample(v: &[f64]) -> Sample {
        Sample::new(&rounds(v)).unwrap()
    }

    fn rounds(v: &[f64]) -> Vec<(usize, f64)> {
        v.iter().enumerate().map(|(i, &x)| (i + 1, x)).collect()
    }

    #[test]
    fn clearly_different_samples_are_different() {
        let a = sample(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let b = sample(&[150.0, 151.0, 149.0, 150.5, 149.5]);
        let c = compare(&a, &b, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Different, "{c:?}");
        assert_eq!(c.test, Some(Test::Paired));
        assert_eq!(c.pairs, 5);
        let (lo, hi) = c.interval.unwrap();
        assert!((c.ratio - 100.0 / 150.0).abs() < 0.01);
        assert!(lo <= c.ratio && c.ratio <= hi && hi < 1.0, "{c:?}");
        assert!(compare(&b, &a, Rule::new(DEFAULT_MARGIN)).larger());
        assert!(c.smaller());
        // Three quiet runs each are enough for a 10 % difference.
        let a = sample(&[100.0, 100.4, 99.7]);
        let b = sample(&[110.0, 110.3, 109.8]);
        assert_eq!(
            compare(&b, &a, Rule::new(DEFAULT_MARGIN)).outcome,
            Outcome::Different
        );
    }

    #[test]
    fn disjoint_runs_under_drift_are_different_when_paired() {
        // Every round drifts, the same for both; b is 12 % faster in each.
        let a = sample(&[100.0, 140.0, 80.0]);
        let b = sample(&[112.0, 157.0, 89.5]);
        let c = compare(&b, &a, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Different, "{c:?}");
        assert!(c.larger());
        // Unpaired (the same values in rounds the other never ran) the
        // drift hides it.
        let b2 = Sample::new(&[(4, 112.0), (5, 157.0), (6, 89.5)]).unwrap();
        let c = compare(&b2, &a, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.test, Some(Test::Welch));
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
    }

    #[test]
    fn a_tight_and_a_noisy_model_with_the_same_median_are_inconclusive() {
        let tight = sample(&[100.0, 100.5, 99.5]);
        let noisy = sample(&[70.0, 100.0, 135.0]);
        let c = compare(&noisy, &tight, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
        assert!(c.noise > 0.2, "{c:?}");
        // Either way round.
        assert_eq!(
            compare(&tight, &noisy, Rule::new(DEFAULT_MARGIN)).outcome,
            Outcome::Inconclusive
        );
        // So spread that 30 runs would not settle it.
        assert_eq!(c.settle_runs, None, "{c:?}");
    }

    #[test]
    fn two_quiet_models_within_the_margin_are_equivalent() {
        let a = sample(&[100.0, 120.0, 90.0, 110.0, 95.0]);
        let b = sample(&[101.0, 121.5, 90.5, 111.0, 96.5]);
        let c = compare(&a, &b, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Equivalent, "{c:?}");
        let (lo, hi) = c.interval.unwrap();
        assert!(lo > 1.0 / 1.05 && hi < 1.05);
        // A 1 % margin is tighter than this interval: inconclusive, and a
        // few more runs would settle it.
        let c = compare(&a, &b, Rule::new(0.01));
        assert_eq!(c.outcome, Outcome::Different, "{c:?}");
        // Identical samples are equivalent exactly.
        let c = compare(&a, &a.clone(), Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Equivalent);
        assert_eq!(c.ratio, 1.0);
    }

    #[test]
    fn a_small_significant_difference_inside_the_margin_is_equivalent() {
        // 2 % slower in every round: different from 1, but inside ±5 %.
        let a = sample(&[100.0, 110.0, 95.0, 105.0]);
        let b = sample(&[98.0, 107.8, 93.1, 102.9]);
        let c = compare(&b, &a, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Equivalent, "{c:?}");
        assert!(!c.larger() && !c.smaller());
    }

    #[test]
    fn one_outlier_run_makes_it_inconclusive_and_says_how_many_runs() {
        // 8 % apart in two rounds; the third round of b was disturbed.
        let a = sample(&[100.0, 102.0, 101.0]);
        let b = sample(&[108.0, 110.0, 70.0]);
        let c = compare(&b, &a, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
        // Moderate noise: more runs would settle it.
        let a = sample(&[100.0, 102.0, 101.0]);
        let b = sample(&[108.0, 104.0, 115.0]);
        let c = compare(&b, &a, Rule::new(DEFAULT_MARGIN));
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
        let k = c.settle_runs.expect("a count of runs");
        assert!((4..=MAX_SETTLE_RUNS).contains(&k), "{c:?}");
    }

    #[test]
    fn one_run_is_untested() {
        let a = sample(&[100.0]);
        let b = sample(&[150.0, 151.0, 149.0]);
        for c in [
            compare(&a, &b, Rule::new(DEFAULT_MARGIN)),
            compare(&b, &a, Rule::new(DEFAULT_MARGIN)),
        ] {
            assert_eq!(c.outcome, Outcome::Untested);
            assert_eq!(c.interval, None);
            assert!(!c.larger());
        }
        assert!(Sample::new(&rounds(&[0.0, -1.0, f64::NAN])).is_none());
    }

    #[test]
    fn the_same_values_give_the_same_interval_in_any_order() {
        let a = [10.0, 12.0, 11.0, 13.0, 9.5, 10.5];
        let b = [11.0, 12.5, 10.0, 14.0, 9.0, 12.0];
        let first = compare(&sample(&a), &sample(&b), Rule::new(DEFAULT_MARGIN));
        let mut shuffled = rounds(&a);
        shuffled.reverse();
        let again = compare(
            &Sample::new(&shuffled).unwrap(),
            &sample(&b),
            Rule::new(0.05),
        );
        assert_eq!(again, first);
    }

    #[test]
    fn inverse_swaps_the_sides() {
        let a = sample(&[100.0, 101.0, 99.0]);
        let b = sample(&[150.0, 151.0, 149.0]);
        let ab = compare(&a, &b, Rule::new(DEFAULT_MARGIN));
        let ba = compare(&b, &a, Rule::new(DEFAULT_MARGIN));
        let inv = ab.inverse();
        assert!((inv.ratio - ba.ratio).abs() < 1e-12);
        assert_eq!(inv.outcome, ba.outcome);
        let ((l1, h1), (l2, h2)) = (inv.interval.unwrap(), ba.interval.unwrap());
        assert!((l1 - l2).abs() < 1e-12 && (h1 - h2).abs() < 1e-12);
    }

    fn ranks(st: &[Standing]) -> Vec<(usize, Option<usize>)> {
        st.iter().map(|s| (s.index, s.rank)).collect()
    }

    #[test]
    fn groups_go_by_median_and_a_noisy_model_is_not_rewarded() {
        // The tour's case: a steady model with the higher median, a noisy
        // one below it, and a slow steady one.
        let s = [
            sample(&[157_333.0, 162_397.0, 214_539.0]), // select: noisy
            sample(&[212_731.0, 202_959.0, 215_595.0]), // epoll: steady
            sample(&[113_755.0, 110_000.0, 116_000.0]), // threads
        ];
        let st = standings(&s, true, Rule::new(DEFAULT_MARGIN));
        // epoll first (higher median); select not told apart from it, so
        // in its group, as inconclusive; threads below, slower than epoll.
        assert_eq!(ranks(&st), [(1, Some(1)), (0, Some(1)), (2, Some(3))]);
        assert_eq!(st[0].versus_best, None);
        let select = st[1].versus_leader.unwrap();
        assert_eq!(select.outcome, Outcome::Inconclusive, "{select:?}");
        let threads = st[2].versus_best.unwrap();
        assert_eq!(threads.outcome, Outcome::Different);
        assert!(threads.ratio > 1.5);
        assert_eq!(st[2].placed_by.map(|p| p.0), Some(1));
    }

    #[test]
    fn a_model_is_never_above_one_whose_every_run_beat_its_own() {
        // b's runs are all above a's; a is noisy enough to tie nothing.
        let s = [sample(&[50.0, 90.0, 99.0]), sample(&[100.0, 101.0, 102.0])];
        let st = standings(&s, true, Rule::new(DEFAULT_MARGIN));
        assert_eq!(st[0].index, 1);
        // Lower is better: the other way round.
        let st = standings(&s, false, Rule::new(DEFAULT_MARGIN));
        assert_eq!(st[0].index, 0);
    }

    #[test]
    fn a_model_beaten_by_a_steady_member_leaves_the_group_of_a_noisy_leader() {
        // The leader is noisy (best median); the second is steady and
        // beats the third, which the noisy leader alone cannot separate.
        let s = [
            sample(&[150.0, 230.0, 300.0]),
            sample(&[212.0, 210.0, 214.0]),
            sample(&[113.0, 111.0, 115.0]),
        ];
        let st = standings(&s, true, Rule::new(DEFAULT_MARGIN));
        assert_eq!(ranks(&st), [(0, Some(1)), (1, Some(1)), (2, Some(3))]);
        let (by, c) = st[2].placed_by.unwrap();
        assert_eq!(by, 1);
        assert!(c.larger());
    }

    #[test]
    fn equivalent_models_share_a_rank_and_lower_is_better_turns_it_round() {
        let s = [
            sample(&[100.0, 101.0, 99.0, 100.2]),
            sample(&[100.5, 101.2, 99.6, 100.6]),
            sample(&[80.0, 81.0, 79.0, 80.3]),
        ];
        let st = standings(&s, true, Rule::new(DEFAULT_MARGIN));
        assert_eq!(ranks(&st), [(1, Some(1)), (0, Some(1)), (2, Some(3))]);
        assert_eq!(st[1].versus_leader.unwrap().outcome, Outcome::Equivalent);
        let third = st[2].versus_best.unwrap();
        assert!(third.ratio > 1.2 && third.interval.unwrap().0 > 1.0);
        let st = standings(&s, false, Rule::new(DEFAULT_MARGIN));
        assert_eq!(ranks(&st), [(2, Some(1)), (0, Some(2)), (1, Some(2))]);
    }

    #[test]
    fn one_run_each_ranks_nothing() {
        let s = [sample(&[5.0]), sample(&[9.0]), sample(&[7.0])];
        let st = standings(&s, true, Rule::new(DEFAULT_MARGIN));
        let order: Vec<usize> = st.iter().map(|x| x.index).collect();
        assert_eq!(order, [1, 2, 0]);
        assert!(st.iter().all(|x| x.rank.is_none()));
        assert_eq!(st[1].versus_best.unwrap().outcome, Outcome::Untested);
        assert!((st[1].versus_best.unwrap().ratio - 9.0 / 7.0).abs() < 1e-12);
    }

    /// The simulation the module's doc quotes: rounds drift together by up
    /// to ±30 %, each run has 3 % noise of its own.
    fn simulate(rounds: usize, truth: f64, tries: usize, paired: bool) -> (f64, f64) {
        let mut rng = SplitMix64::new(rounds as u64 * 7919 + (truth * 1000.0) as u64);
        let (mut different, mut equivalent) = (0, 0);
        for _ in 0..tries {
            let mut a = Vec::new();
            let mut b = Vec::new();
            for r in 1..=rounds {
                let drift = 1.0 + 0.3 * (2.0 * rng.unit() - 1.0);
                a.push((r, 100.0 * drift * (0.03 * rng.normal()).exp()));
                let rb = if paired { r } else { r + rounds };
                b.push((rb, 100.0 * truth * drift * (0.03 * rng.normal()).exp()));
            }
            let c = compare(
                &Sample::new(&b).unwrap(),
                &Sample::new(&a).unwrap(),
                Rule::new(DEFAULT_MARGIN),
            );
            match c.outcome {
                Outcome::Different => different += 1,
                Outcome::Equivalent => equivalent += 1,
                _ => {}
            }
        }
        (
            different as f64 / tries as f64,
            equivalent as f64 / tries as f64,
        )
    }

    /// Resident slots against one cell at a time, in simulation: the
    /// machine's speed drifts as a random walk in time (±4 % per slot's
    /// time), every slot has 2 % noise of its own; 11 models, 10 rounds.
    /// Resident, the two slots of a pair are at most a round apart in a
    /// shuffled order; one at a time, a round of 11 cells of 1.25 s and
    /// their start-up spans 30 slots' time, and B's run of a round comes
    /// 15 slots after A's. `truth` is B over A. Returns how often the
    /// paired test called B different (larger when truth > 1).
    fn simulate_slots(truth: f64, tries: usize, resident: bool, seed: u64) -> f64 {
        let mut rng = SplitMix64::new(seed);
        let mut different = 0;
        for _ in 0..tries {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut level = 0.0;
            for r in 1..=10 {
                let span = if resident { 11 } else { 30 };
                let mut slots: Vec<usize> = (0..span).collect();
                if resident {
                    rng.shuffle(&mut slots);
                }
                let (sa, sb) = if resident {
                    (slots[0], slots[1])
                } else {
                    (0, 15)
                };
                let mut speed = Vec::with_capacity(span);
                for _ in 0..span {
                    level += 0.04 * rng.normal();
                    speed.push(level);
                }
                let noise = |rng: &mut SplitMix64| (0.02 * rng.normal()).exp();
                a.push((r, 100.0 * speed[sa].exp() * noise(&mut rng)));
                b.push((r, 100.0 * truth * speed[sb].exp() * noise(&mut rng)));
            }
            let c = compare(
                &Sample::new(&b).unwrap(),
                &Sample::new(&a).unwrap(),
                Rule::new(DEFAULT_MARGIN),
            );
            if c.outcome == Outcome::Different && (truth == 1.0 || c.larger()) {
                different += 1;
            }
        }
        different as f64 / tries as f64
    }

    #[test]
    fn drift_within_seconds_cancels_in_resident_slots_and_not_one_at_a_time() {
        // A/A: identical models are called different in 5 % of tries at
        // most, within two standard errors of 1,000 tries (0.7 %): the
        // interval keeps its level.
        let aa = simulate_slots(1.0, 1000, true, 11);
        assert!(aa <= 0.064, "A/A resident: {aa}");
        // A 10 % difference: resident slots find it nearly always; one at
        // a time, the drift between the two runs of a pair hides it.
        let resident = simulate_slots(1.1, 1000, true, 12);
        let apart = simulate_slots(1.1, 1000, false, 12);
        assert!(
            resident > 0.8 && apart < 0.5,
            "resident: {resident}, one at a time: {apart}"
        );
    }

    /// `--runs auto` over slots, in simulation: looks of 10 rounds, at
    /// most 4, each at `level`, stopping at the first look that decides
    /// B against A (truth: B over A); each round's ratio has 8 % noise
    /// (wide against the ±5 % margin, so that many tries need every look).
    /// Returns how often B was called different, and the mean rounds run.
    /// How often, in `tries` of up to `looks` looks of 10 rounds each,
    /// a true ratio `truth` through `noise` per round (log sd) under ±30 %
    /// drift shared by the pair is called different, and equivalent; and
    /// the rounds a try took on average.
    fn looked(truth: f64, tries: usize, looks: usize, noise: f64, seed: u64) -> (f64, f64, f64) {
        let rule = Rule {
            margin: DEFAULT_MARGIN,
            level: crate::stats::looks::level(looks),
        };
        looked_at(truth, tries, (10, looks), noise, rule, seed)
    }

    /// As [`looked`], with `looks` = (rounds a look, looks at most).
    fn looked_at(
        truth: f64,
        tries: usize,
        (every, looks): (usize, usize),
        noise: f64,
        rule: Rule,
        seed: u64,
    ) -> (f64, f64, f64) {
        let mut rng = SplitMix64::new(seed);
        let (mut different, mut equivalent, mut rounds) = (0, 0, 0);
        for _ in 0..tries {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for look in 1..=looks {
                for r in (look - 1) * every + 1..=look * every {
                    let drift = 1.0 + 0.3 * (2.0 * rng.unit() - 1.0);
                    a.push((r, 100.0 * drift));
                    b.push((r, 100.0 * truth * drift * (noise * rng.normal()).exp()));
                }
                let c = compare(&Sample::new(&b).unwrap(), &Sample::new(&a).unwrap(), rule);
                if c.outcome != Outcome::Inconclusive || look == looks {
                    different += usize::from(c.outcome == Outcome::Different);
                    equivalent += usize::from(c.outcome == Outcome::Equivalent);
                    rounds += look * every;
                    break;
                }
            }
        }
        let share = |n: usize| n as f64 / tries as f64;
        (share(different), share(equivalent), share(rounds))
    }

    #[test]
    fn looks_at_pococks_level_keep_identical_models_apart_no_more_than_5_percent() {
        let (aa, _, _) = looked(1.0, 2000, 4, 0.08, 41);
        // Within two standard errors of 5 % over 2,000 tries.
        assert!(aa <= 0.06, "A/A at Pocock's level: {aa}");
        // Four looks at 95 % each call noise a difference more often.
        let naive = Rule {
            margin: DEFAULT_MARGIN,
            level: DEFAULT_LEVEL,
        };
        let (naive, _, _) = looked_at(1.0, 2000, (10, 4), 0.08, naive, 41);
        assert!(naive > aa, "A/A at 95 % each look: {naive} against {aa}");
        // A 10 % difference is still found nearly always.
        let (power, _, rounds) = looked(1.1, 2000, 4, 0.08, 42);
        assert!(power > 0.9, "power {power} in {rounds} rounds");
    }

    /// Twenty looks, as two models given minutes plan: through 15 % noise
    /// a round (1,000 connections here), identical models are still
    /// called different at most 5 % of the time, and equivalent in most
    /// tries, where four looks seldom get there.
    #[test]
    fn twenty_looks_keep_five_per_cent_and_reach_equivalence_through_noise() {
        let (aa, same, rounds) = looked(1.0, 1000, 20, 0.15, 43);
        assert!(aa <= 0.065, "A/A over 20 looks: {aa}");
        assert!(same > 0.6, "equivalent in {same} of tries, {rounds} rounds");
        let (_, four, _) = looked(1.0, 1000, 4, 0.15, 43);
        assert!(four < same / 2.0, "four looks: equivalent in {four}");
        // A 10 % difference is found through the same noise.
        let (power, _, _) = looked(1.1, 1000, 20, 0.15, 44);
        assert!(power > 0.8, "power {power}");
    }

    /// Looks of 5 rounds, as the tour plans (eight, to 40 rounds): the
    /// boundary for eight keeps identical models to 5 % as looks of 10
    /// do, and a model 1.3× slower is decided at the first look, after 5
    /// rounds where looks of 10 took 10.
    #[test]
    fn looks_of_five_keep_five_per_cent_and_let_the_clearly_slower_go_after_five() {
        let rule = |k| Rule {
            margin: DEFAULT_MARGIN,
            level: crate::stats::looks::level(k),
        };
        let (aa, _, _) = looked_at(1.0, 4000, (5, 8), 0.08, rule(8), 45);
        assert!(aa <= 0.06, "A/A over 8 looks of 5: {aa}");
        let (power, _, fives) = looked_at(1.3, 2000, (5, 8), 0.08, rule(8), 46);
        let (_, _, tens) = looked_at(1.3, 2000, (10, 4), 0.08, rule(4), 46);
        assert!(
            power > 0.99 && fives < 6.0 && tens >= 10.0,
            "{power}: {fives} against {tens} rounds"
        );
        let (power, _, _) = looked_at(1.1, 2000, (5, 8), 0.08, rule(8), 47);
        assert!(power > 0.95, "power {power}");
    }

    #[test]
    fn trimming_leaves_out_a_tenth_at_each_end() {
        assert_eq!(trimmed(&[1.0; 9], Rule::new(0.05)), None);
        // Ten values, one far out: left out, and the rest's spread kept.
        let mut d = vec![0.10, 0.11, 0.09, 0.10, 0.12, 0.08, 0.10, 0.11, 0.09, -0.30];
        let (c, half) = trimmed(&d, Rule::new(0.05)).expect("10 values");
        assert!((c - 0.10).abs() < 0.005, "{c}");
        assert!(half < 0.02, "{half}");
        // Without it, the ends are still trimmed: as narrow.
        d[9] = 0.10;
        let (c2, half2) = trimmed(&d, Rule::new(0.05)).expect("10 values");
        assert!((c2 - 0.10).abs() < 0.005 && half2 < 0.02, "{c2} {half2}");
    }

    /// How often, in `tries`, a 10 % difference is found through 2 %
    /// noise per slot when in each try one round of ten has B's slot
    /// slowed by a third: by the comparison (trimmed at 10 rounds), by
    /// Student's t on the same logs, and by the signed-rank interval.
    fn disturbed_power(tries: usize) -> (f64, f64, f64) {
        let mut rng = SplitMix64::new(77);
        let (mut by_trim, mut by_t, mut by_ranks) = (0, 0, 0);
        for _ in 0..tries {
            let hit = rng.below(10);
            let logs: Vec<f64> = (0..10)
                .map(|r| {
                    let slowed = if r == hit { (1.0f64 / 1.5).ln() } else { 0.0 };
                    1.1f64.ln() + slowed + 0.02 * rng.normal() - 0.02 * rng.normal()
                })
                .collect();
            let a: Vec<(usize, f64)> = (1..=10).map(|r| (r, 100.0)).collect();
            let b: Vec<(usize, f64)> = logs
                .iter()
                .enumerate()
                .map(|(i, l)| (i + 1, 100.0 * l.exp()))
                .collect();
            let (sa, sb) = (Sample::new(&a).unwrap(), Sample::new(&b).unwrap());
            if compare(&sb, &sa, Rule::new(DEFAULT_MARGIN)).larger() {
                by_trim += 1;
            }
            let (mean, var) = mean_var(&logs);
            if mean - super::super::student::t975(9.0) * (var / 10.0).sqrt() > 1.05f64.ln() {
                by_t += 1;
            }
            // Wilcoxon's signed-rank interval: the 9th smallest of the 55
            // Walsh averages (8 left out at n = 10).
            let mut walsh: Vec<f64> = (0..10)
                .flat_map(|i| (i..10).map(move |j| (i, j)))
                .map(|(i, j)| (logs[i] + logs[j]) / 2.0)
                .collect();
            walsh.sort_by(f64::total_cmp);
            if walsh[8] > 1.05f64.ln() {
                by_ranks += 1;
            }
        }
        let share = |k: usize| k as f64 / tries as f64;
        (share(by_trim), share(by_t), share(by_ranks))
    }

    #[test]
    fn one_disturbed_round_in_ten() {
        let (trim, t, ranks) = disturbed_power(1000);
        assert!(
            trim > 0.9 && t < 0.5 && ranks < 0.5,
            "trimmed {trim}, t {t}, ranks {ranks}"
        );
    }

    #[test]
    fn correlated_rounds_count_as_fewer_pairs() {
        // White noise: every pair counts.
        let mut rng = SplitMix64::new(5);
        let white: Vec<f64> = (0..20).map(|_| 0.05 * rng.normal()).collect();
        assert!(
            effective_pairs(&white) > 15.0,
            "{}",
            effective_pairs(&white)
        );
        // A slow wave through the rounds: successive ratios alike.
        let slow: Vec<f64> = (0..20).map(|i| 0.1 * (i as f64 / 6.0).sin()).collect();
        let k = effective_pairs(&slow);
        assert!(k < 5.0, "{k}");
        // And its interval is wider than the same ratios shuffled.
        let mut shuffled = slow.clone();
        SplitMix64::new(3).shuffle(&mut shuffled);
        let as_sample = |logs: &[f64]| {
            let one: Vec<(usize, f64)> = (1..=logs.len()).map(|r| (r, 1.0)).collect();
            let other: Vec<(usize, f64)> = logs
                .iter()
                .enumerate()
                .map(|(i, l)| (i + 1, l.exp()))
                .collect();
            compare(
                &Sample::new(&other).unwrap(),
                &Sample::new(&one).unwrap(),
                Rule::new(DEFAULT_MARGIN),
            )
        };
        let width = |c: Comparison| c.interval.map_or(0.0, |(lo, hi)| hi / lo);
        assert!(width(as_sample(&slow)) > width(as_sample(&shuffled)));
        // Fewer than five pairs, or none alike: nothing changes.
        assert_eq!(effective_pairs(&slow[..4]), 4.0);
        assert_eq!(effective_pairs(&[0.1, -0.1, 0.1, -0.1, 0.1, -0.1]), 6.0);
    }

    #[test]
    fn error_rates() {
        for rounds in 3..=10 {
            let (false_difference, _) = simulate(rounds, 1.0, 2000, true);
            assert!(false_difference < 0.075, "{rounds}: {false_difference}");
        }
        let (power3, _) = simulate(3, 1.1, 2000, true);
        let (power5, _) = simulate(5, 1.1, 2000, true);
        assert!(power3 > 0.5 && power5 > 0.93, "{power3} {power5}");
        let (unpaired, _) = simulate(10, 1.1, 2000, false);
        assert!(unpaired < 0.2, "{unpaired}");
        // Identical models come out equivalent often once the rounds are
        // enough for 3 % noise.
        let (_, equivalent) = simulate(10, 1.0, 2000, true);
        assert!(equivalent > 0.7, "{equivalent}");
    }
}
