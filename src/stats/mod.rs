//! Statistics over repeats: a summary with a spread (median, mean, standard
//! deviation, quartiles, outliers); whether two models differ, are
//! equivalent within a margin or cannot be told apart yet, and the ranking
//! that follows ([`paired`]: Student's t over paired rounds); the interval of a
//! median and the `--runs auto` stopping rule ([`median`]); the slope of a
//! least-squares line with its interval ([`slope`], memory per
//! connection); the power-law fit of time against connections ([`fit`]);
//! Student's t quantiles ([`student`]); the stricter level of repeated
//! looks ([`looks`]); and
//! Jain's fairness index ([`fairness`]).

pub mod fairness;
pub mod fit;
pub mod looks;
pub mod median;
pub mod paired;
pub mod rng;
pub mod slope;
pub mod student;

use serde::{Deserialize, Serialize};

/// Summary of one figure over the repeats of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (0 for one value).
    pub stdev: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// First and third quartiles (linear interpolation).
    pub q1: f64,
    pub q3: f64,
    /// Values beyond 1.5 interquartile ranges from the quartiles (Tukey's
    /// fences), counted, never removed.
    pub outliers: usize,
}

impl Summary {
    /// Summary of the finite values in `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let stdev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let q1 = quantile(&v, 0.25);
        let q3 = quantile(&v, 0.75);
        let iqr = q3 - q1;
        let outliers = v
            .iter()
            .filter(|&&x| x < q1 - 1.5 * iqr || x > q3 + 1.5 * iqr)
            .count();
        Some(Summary {
            n,
            mean,
            stdev,
            median: quantile(&v, 0.5),
            min: v[0],
            max: v[n - 1],
            q1,
            q3,
            outliers,
        })
    }
}

/// The `q` quantile of sorted `v` by linear interpolation between ranks.
pub(crate) fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 100.0, f64::NAN]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 100.0);
        assert_eq!(s.q1, 2.0);
        assert_eq!(s.q3, 4.0);
        assert_eq!(s.outliers, 1);
        assert!((s.mean - 22.0).abs() < 1e-9);
        assert!(Summary::of(&[]).is_none());
        assert_eq!(Summary::of(&[5.0]).unwrap().stdev, 0.0);
    }
}
