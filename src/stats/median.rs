//! The distribution-free interval of a median, and the stopping rule of
//! `c10k run --runs auto` built on it.
//!
//! **The interval.** Sorted, `n` repeats split the line into pieces; the
//! true median lies below the k-th smallest value with the probability
//! that fewer than k of n fair coins come up heads. So the interval from
//! the k-th smallest to the k-th largest value covers the median with
//! probability `1 − 2·P(Binomial(n, ½) ≤ k − 1)`, whatever the
//! distribution. We take the largest k whose coverage is at least 95 %.
//! With 5 runs or fewer even the smallest-to-largest range covers less
//! than that (75 % at 3 runs, 87.5 % at 4, 93.8 % at 5); there the interval
//! is the range, and [`MedianInterval::coverage`] says what it is worth.
//! From 6 to 8 runs it is the range at 95 % or more; at 9 and 10 runs the
//! second smallest to the second largest.
//!
//! **The stopping rule.** A cell has settled when it has at least the
//! minimum of runs and this interval lies within ±tolerance of the median
//! (±5 % by default): at 3 runs, all three within 5 % of their median.
//! Cost: a sort of the repeats.

use serde::Serialize;

/// The median of some repeats with its order-statistic interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct MedianInterval {
    pub n: usize,
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    /// The probability that `lo..=hi` holds the true median (1 − 2·P(Bin(n,
    /// ½) ≤ k − 1)); below 0.95 only with 5 runs or fewer.
    pub coverage: f64,
}

impl MedianInterval {
    /// The interval of the finite values; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<MedianInterval> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mut k = 1;
        while k < n.div_ceil(2) && coverage(n, k + 1) >= 0.95 {
            k += 1;
        }
        Some(MedianInterval {
            n,
            median: super::quantile(&v, 0.5),
            lo: v[k - 1],
            hi: v[n - k],
            coverage: coverage(n, k),
        })
    }

    /// The larger distance from the median to an end of the interval, as a
    /// fraction of the median (0.05: ±5 %); infinite for a median at or
    /// below zero.
    pub(crate) fn relative_half_width(&self) -> f64 {
        if self.median <= 0.0 || !self.median.is_finite() {
            return f64::INFINITY;
        }
        (self.median - self.lo).max(self.hi - self.median) / self.median
    }
}

/// The probability that the k-th smallest to the k-th largest of `n`
/// values holds the median: `1 − 2·P(Bin(n, ½) ≤ k − 1)`.
fn coverage(n: usize, k: usize) -> f64 {
    if k == 0 || 2 * k > n + 1 {
        return 0.0;
    }
    // P(X = i) for X ~ Bin(n, 1/2), built up from P(X = 0) = 2^-n.
    let mut p = (-(n as f64) * std::f64::consts::LN_2).exp();
    let mut tail = 0.0;
    for i in 0..k {
        tail += p;
        p *= (n - i) as f64 / (i + 1) as f64;
    }
    (1.0 - 2.0 * tail).max(0.0)
}

/// Whether repeats with these values have settled: at least `min_runs`
/// finite values, and the median's interval within ±`tolerance` of the
/// median.
pub fn settled(values: &[f64], min_runs: usize, tolerance: f64) -> bool {
    MedianInterval::of(values)
        .is_some_and(|m| m.n >= min_runs && m.relative_half_width() <= tolerance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_of_the_order_statistics() {
        assert_eq!(coverage(3, 1), 0.75);
        assert_eq!(coverage(4, 1), 0.875);
        assert_eq!(coverage(5, 1), 0.9375);
        assert!((coverage(9, 2) - (1.0 - 20.0 / 512.0)).abs() < 1e-12);
        assert!(coverage(10, 3) < 0.95);
        assert_eq!(coverage(3, 3), 0.0);
    }

    #[test]
    fn the_interval_is_the_range_until_nine_runs() {
        let m = MedianInterval::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((m.lo, m.median, m.hi, m.coverage), (1.0, 2.0, 3.0, 0.75));
        let eight: Vec<f64> = (1..=8).map(f64::from).collect();
        let m = MedianInterval::of(&eight).unwrap();
        assert_eq!((m.lo, m.hi), (1.0, 8.0));
        assert!(m.coverage >= 0.95);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let m = MedianInterval::of(&ten).unwrap();
        assert_eq!((m.lo, m.median, m.hi), (2.0, 5.5, 9.0));
        assert!(m.coverage >= 0.95);
        // Many runs: a narrow interval around the median.
        let many: Vec<f64> = (1..=101).map(f64::from).collect();
        let m = MedianInterval::of(&many).unwrap();
        assert!(m.lo > 35.0 && m.hi < 67.0 && m.coverage >= 0.95, "{m:?}");
        assert!(MedianInterval::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn stopping_rule() {
        // Three runs within 5 % of their median: settled.
        assert!(settled(&[100.0, 103.0, 98.0], 3, 0.05));
        // Two runs are below the minimum, however close.
        assert!(!settled(&[100.0, 100.0], 3, 0.05));
        // One run 8 % off: not yet.
        assert!(!settled(&[100.0, 108.0, 99.0], 3, 0.05));
        // More runs bring it in: at 9 runs the extremes no longer count.
        let mut v = vec![100.0, 108.0, 99.0, 101.0, 100.5, 99.5, 100.2, 100.1];
        assert!(!settled(&v, 3, 0.05));
        v.push(90.0);
        assert!(settled(&v, 3, 0.05), "{:?}", MedianInterval::of(&v));
        // Noise of ±20 % never settles.
        let noisy = [
            80.0, 120.0, 100.0, 85.0, 115.0, 90.0, 110.0, 95.0, 105.0, 82.0,
        ];
        assert!(!settled(&noisy, 3, 0.05));
        assert!(!settled(&[0.0, 0.0, 0.0], 3, 0.05));
    }
}
