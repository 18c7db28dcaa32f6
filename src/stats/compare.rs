//! Whether two models differ, and the ranks that follow, so that a ranking
//! never orders noise.
//!
//! **The rule.** Two models *tie* when 1 lies inside the 95 % interval of
//! the ratio of their medians, and *differ* when the whole interval lies on
//! one side of 1. The interval is the hull (the wider of the two ends) of
//! two estimates, so a difference must show under both:
//!
//! - a percentile bootstrap: each model's repeats resampled with
//!   replacement [`RESAMPLES`] times, the ratio of the resampled medians,
//!   its 2.5th and 97.5th percentiles. The draws come from splitmix64
//!   ([`SplitMix64`]) seeded from the values themselves, so the same results
//!   always give the same interval and the same ranks;
//! - Student's t (Welch) on the logarithms of the repeats: the t interval
//!   of the difference of mean logarithms, as a ratio.
//!
//! Why both: with few repeats the bootstrap interval of a median is the
//! ratio of the two ranges (a median resampled from 3 values is the
//! smallest or largest a quarter of the time each), so it separates two
//! models whose runs merely do not overlap. In a simulation with identical
//! noise on both sides it did so in 34 % of tries at 2 runs, 10 % at 3 and
//! 8 % at 4. Welch is exact for log-normal noise and widens with an
//! outlier, but relies on that shape. The hull separated identical models
//! in at most 4.5 % of tries at every run count from 2 to 10, under normal,
//! skewed and outlier-ridden noise, and separated a 10 % difference under
//! 3 % noise in 70 % of tries at 3 runs and 97 % at 5.
//!
//! With a single run on either side nothing is tested ([`Verdict::Untested`]):
//! the order is the medians' and is said to be untested.
//!
//! **Ranks.** A model's rank is 1 plus the number of models that differ
//! from it and are better (competition ranking over significant
//! differences): the models no other model beats share rank 1, and a
//! ranking reads "1, 1, 3". Rows go by rank, then by median; a model with a
//! single run has no rank and comes last.
//!
//! Cost: per model and connection count, [`RESAMPLES`] medians of a
//! resample (each O(runs) by selection); per pair of models, a sort of
//! [`RESAMPLES`] ratios. Well under a millisecond for 10 runs.

use serde::Serialize;

/// Bootstrap resamples per model.
pub(crate) const RESAMPLES: usize = 5000;

/// The fixed start of every seed (mixed with the values).
const SEED: u64 = 0xc10c_10c1_0c10_c10c;

/// splitmix64 (Steele, Lea and Flood, 2014): a 64-bit counter through a
/// mixing function; small, fast, and good enough for resampling. The same
/// seed gives the same stream on every machine.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.state)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift; the bias is
    /// below 2^-50 for any `n` a sample has).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// splitmix64's finaliser.
fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One model's repeats of a figure, prepared for comparison: the positive
/// finite values (a ratio and a logarithm need them), their median, the
/// mean and variance of their logarithms, and the medians of the bootstrap
/// resamples.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    sorted: Vec<f64>,
    median: f64,
    log_mean: f64,
    /// Sample variance of the logarithms (0 for one value).
    log_var: f64,
    /// Medians of the resamples, in draw order (empty for one value).
    boot: Vec<f64>,
}

impl Sample {
    /// `None` when no value is positive and finite.
    pub fn new(values: &[f64]) -> Option<Sample> {
        let mut sorted: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = super::quantile(&sorted, 0.5);
        let logs: Vec<f64> = sorted.iter().map(|v| v.ln()).collect();
        let log_mean = logs.iter().sum::<f64>() / n as f64;
        let log_var = if n > 1 {
            logs.iter().map(|l| (l - log_mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let boot = if n > 1 {
            // Seeded by the values (in order), so two models never share a
            // stream and the same results always draw the same resamples.
            let seed = sorted.iter().fold(SEED, |h, v| mix(h ^ v.to_bits()));
            let mut rng = SplitMix64::new(seed);
            let mut buf = vec![0.0; n];
            (0..RESAMPLES)
                .map(|_| {
                    for x in buf.iter_mut() {
                        *x = sorted[rng.below(n)];
                    }
                    median_in_place(&mut buf)
                })
                .collect()
        } else {
            Vec::new()
        };
        Some(Sample {
            sorted,
            median,
            log_mean,
            log_var,
            boot,
        })
    }

    /// Values used.
    pub fn n(&self) -> usize {
        self.sorted.len()
    }
}

/// The median of `v` (reordering it), by selection.
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (left, mid, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *mid;
    if n % 2 == 1 {
        upper
    } else {
        let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

/// What a comparison found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// A single run on one side: nothing to test.
    Untested,
    /// The interval of the ratio holds 1.
    Tied,
    /// The interval of the ratio lies on one side of 1.
    Different,
}

/// The ratio of two medians with its 95 % interval (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Comparison {
    /// Median of the first over median of the second.
    pub ratio: f64,
    /// The 95 % interval of the ratio; `None` when untested.
    pub interval: Option<(f64, f64)>,
    pub verdict: Verdict,
}

impl Comparison {
    /// The same comparison the other way round (b over a).
    pub(crate) fn inverse(self) -> Comparison {
        Comparison {
            ratio: 1.0 / self.ratio,
            interval: self.interval.map(|(lo, hi)| (1.0 / hi, 1.0 / lo)),
            verdict: self.verdict,
        }
    }

    /// The first is larger, significantly.
    pub(crate) fn larger(&self) -> bool {
        self.verdict == Verdict::Different && self.interval.is_some_and(|(lo, _)| lo > 1.0)
    }
}

/// How `a` compares with `b`: the ratio of their medians, a/b.
pub(crate) fn compare(a: &Sample, b: &Sample) -> Comparison {
    let ratio = a.median / b.median;
    if a.n() < 2 || b.n() < 2 {
        return Comparison {
            ratio,
            interval: None,
            verdict: Verdict::Untested,
        };
    }
    // The bootstrap: ratios of independently resampled medians.
    let mut ratios: Vec<f64> = a.boot.iter().zip(&b.boot).map(|(x, y)| x / y).collect();
    ratios.sort_by(f64::total_cmp);
    let (mut lo, mut hi) = (
        super::quantile(&ratios, 0.025),
        super::quantile(&ratios, 0.975),
    );
    // Welch's t on the logarithms.
    let (na, nb) = (a.n() as f64, b.n() as f64);
    let (va, vb) = (a.log_var / na, b.log_var / nb);
    let d = a.log_mean - b.log_mean;
    let se = (va + vb).sqrt();
    let half = if se > 0.0 {
        let df = (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
        super::student::t975(df) * se
    } else {
        0.0
    };
    lo = lo.min((d - half).exp());
    hi = hi.max((d + half).exp());
    Comparison {
        ratio,
        interval: Some((lo, hi)),
        verdict: if lo <= 1.0 && hi >= 1.0 {
            Verdict::Tied
        } else {
            Verdict::Different
        },
    }
}

/// One model's place in a ranking.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Standing {
    /// Index of the sample in the input.
    pub index: usize,
    /// 1 + the models significantly better; `None` with a single run.
    pub rank: Option<usize>,
    /// How many times worse than the first row (its figure over the best's
    /// when lower is better, the best's over its when higher is), with the
    /// interval; `None` for the first row itself.
    pub versus_best: Option<Comparison>,
}

/// The samples ranked best first (see the module's doc for the rule).
pub(crate) fn standings(samples: &[Sample], higher_is_better: bool) -> Vec<Standing> {
    let k = samples.len();
    // worse[m][j]: how many times m is worse than j.
    let mut worse: Vec<Vec<Option<Comparison>>> = vec![vec![None; k]; k];
    for m in 0..k {
        for j in m + 1..k {
            let c = if higher_is_better {
                compare(&samples[j], &samples[m])
            } else {
                compare(&samples[m], &samples[j])
            };
            worse[m][j] = Some(c);
            worse[j][m] = Some(c.inverse());
        }
    }
    let rank = |m: usize| -> Option<usize> {
        (samples[m].n() >= 2).then(|| {
            1 + (0..k)
                .filter(|&j| worse[m][j].is_some_and(|c| c.larger()))
                .count()
        })
    };
    let ranks: Vec<Option<usize>> = (0..k).map(rank).collect();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&x, &y| {
        let by_median = samples[x].median.total_cmp(&samples[y].median);
        ranks[x]
            .unwrap_or(usize::MAX)
            .cmp(&ranks[y].unwrap_or(usize::MAX))
            .then(if higher_is_better {
                by_median.reverse()
            } else {
                by_median
            })
            .then(x.cmp(&y))
    });
    let top = order.first().copied();
    order
        .into_iter()
        .map(|m| Standing {
            index: m,
            rank: ranks[m],
            versus_best: top.filter(|&t| t != m).and_then(|t| worse[m][t]),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(v: &[f64]) -> Sample {
        Sample::new(v).unwrap()
    }

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // The reference implementation's first outputs for seed 1234567.
        let mut r = SplitMix64::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
        let mut r = SplitMix64::new(7);
        let mut seen = [0usize; 3];
        for _ in 0..3000 {
            seen[r.below(3)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 900), "{seen:?}");
    }

    #[test]
    fn clearly_different_samples_are_not_tied() {
        let a = sample(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let b = sample(&[150.0, 151.0, 149.0, 150.5, 149.5]);
        let c = compare(&a, &b);
        assert_eq!(c.verdict, Verdict::Different, "{c:?}");
        let (lo, hi) = c.interval.unwrap();
        assert!((c.ratio - 100.0 / 150.0).abs() < 1e-12);
        assert!(lo <= c.ratio && c.ratio <= hi && hi < 1.0, "{c:?}");
        assert!(compare(&b, &a).larger());
        // Three quiet runs each are enough for a 10 % difference.
        let a = sample(&[100.0, 100.4, 99.7]);
        let b = sample(&[110.0, 110.3, 109.8]);
        assert_eq!(compare(&b, &a).verdict, Verdict::Different);
    }

    #[test]
    fn overlapping_noisy_samples_are_tied() {
        let a = sample(&[100.0, 120.0, 90.0, 110.0, 95.0]);
        let b = sample(&[105.0, 92.0, 118.0, 99.0, 112.0]);
        let c = compare(&a, &b);
        assert_eq!(c.verdict, Verdict::Tied, "{c:?}");
        let (lo, hi) = c.interval.unwrap();
        assert!(lo < 1.0 && hi > 1.0);
        // Two runs whose ranges do not overlap: the bootstrap alone would
        // call it; with two runs it is noise as often as not.
        let a = sample(&[100.0, 103.0]);
        let b = sample(&[104.0, 107.0]);
        assert_eq!(compare(&a, &b).verdict, Verdict::Tied);
        // Identical samples tie exactly.
        let c = compare(&a, &a.clone());
        assert_eq!(c.verdict, Verdict::Tied);
        assert_eq!(c.ratio, 1.0);
    }

    #[test]
    fn one_run_is_untested() {
        let a = sample(&[100.0]);
        let b = sample(&[150.0, 151.0, 149.0]);
        for c in [compare(&a, &b), compare(&b, &a)] {
            assert_eq!(c.verdict, Verdict::Untested);
            assert_eq!(c.interval, None);
            assert!(!c.larger());
        }
        assert!(Sample::new(&[0.0, -1.0, f64::NAN]).is_none());
    }

    #[test]
    fn the_same_values_give_the_same_interval_in_any_order() {
        let a = [10.0, 12.0, 11.0, 13.0, 9.5, 10.5];
        let b = [11.0, 12.5, 10.0, 14.0, 9.0, 12.0];
        let first = compare(&sample(&a), &sample(&b));
        let mut a2 = a;
        a2.reverse();
        assert_eq!(compare(&sample(&a2), &sample(&b)), first);
        assert_eq!(compare(&sample(&a), &sample(&b)), first);
    }

    #[test]
    fn inverse_swaps_the_sides() {
        let a = sample(&[100.0, 101.0, 99.0]);
        let b = sample(&[150.0, 151.0, 149.0]);
        let ab = compare(&a, &b);
        let ba = compare(&b, &a);
        let inv = ab.inverse();
        assert!((inv.ratio - ba.ratio).abs() < 1e-12);
        assert_eq!(inv.verdict, ba.verdict);
    }

    #[test]
    fn tied_models_share_a_rank() {
        // Higher is better: a and b tie for best, c is clearly worse.
        let s = [
            sample(&[100.0, 101.0, 99.0, 100.2]),
            sample(&[100.5, 99.2, 101.1, 99.9]),
            sample(&[80.0, 81.0, 79.0, 80.3]),
        ];
        let st = standings(&s, true);
        let ranks: Vec<Option<usize>> = st.iter().map(|x| x.rank).collect();
        assert_eq!(ranks, [Some(1), Some(1), Some(3)]);
        assert_eq!(st[0].versus_best, None);
        let second = st[1].versus_best.unwrap();
        assert_eq!(second.verdict, Verdict::Tied);
        let third = st[2].versus_best.unwrap();
        assert_eq!(st[2].index, 2);
        assert_eq!(third.verdict, Verdict::Different);
        // How many times worse: the best's over c's, above 1.
        assert!(third.ratio > 1.2 && third.interval.unwrap().0 > 1.0);
        // Lower is better: c is now alone at the top.
        let st = standings(&s, false);
        assert_eq!(st[0].index, 2);
        assert_eq!(st[0].rank, Some(1));
        assert_eq!(st[1].rank, Some(2));
        assert_eq!(st[2].rank, Some(2));
    }

    #[test]
    fn one_run_each_ranks_nothing() {
        let s = [sample(&[5.0]), sample(&[9.0]), sample(&[7.0])];
        let st = standings(&s, true);
        let order: Vec<usize> = st.iter().map(|x| x.index).collect();
        assert_eq!(order, [1, 2, 0]);
        assert!(st.iter().all(|x| x.rank.is_none()));
        assert_eq!(st[1].versus_best.unwrap().verdict, Verdict::Untested);
        assert!((st[1].versus_best.unwrap().ratio - 9.0 / 7.0).abs() < 1e-12);
    }
}
