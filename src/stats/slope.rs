//! A straight line by ordinary least squares, with the 95 % interval of its
//! slope: what one more unit of `x` adds to `y`. The runner fits memory
//! against connections over every measured cell of a model, so a cost per
//! connection far below what one sample resolves still shows in the slope.
//!
//! The interval is `slope ± t(0.975, n − 2) · s / √Sxx`, with `s²` the
//! residual variance over n − 2 degrees of freedom ([`super::student`]): it
//! assumes the points scatter independently around the line with one
//! spread. A flat series gives an interval holding 0.
//!
//! Values read in steps (memory in pages) are not noise the t interval
//! can see: a series that never moves a step has no residuals, and its
//! interval would be a point. [`LinearFit::fit_rounded`] takes, with each
//! point, how far rounding may have moved its `y` (at most `r_i`), and
//! widens the interval by the most that could move the slope,
//! `Σ |x_i − x̄| · r_i / Sxx`. Cost: two passes over the points.

use serde::Serialize;

/// A fitted `y = intercept + slope·x`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// The 95 % interval of the slope.
    pub slope_lo: f64,
    pub slope_hi: f64,
    /// Points used (finite).
    pub points: usize,
    /// The smallest and largest `x` of the points.
    pub x_min: f64,
    pub x_max: f64,
}

impl LinearFit {
    /// Fits the finite points; `None` with fewer than three (no spread is
    /// left to size an interval) or fewer than two distinct `x`.
    pub fn fit(points: &[(f64, f64)]) -> Option<LinearFit> {
        let exact: Vec<(f64, f64, f64)> = points.iter().map(|&(x, y)| (x, y, 0.0)).collect();
        LinearFit::fit_rounded(&exact)
    }

    /// Fits `(x, y, r)` points whose `y` rounding may have moved by up to
    /// `r`: the same line, its interval widened by what the rounding could
    /// do to the slope (see the module's doc).
    pub(crate) fn fit_rounded(points: &[(f64, f64, f64)]) -> Option<LinearFit> {
        let p: Vec<(f64, f64)> = points
            .iter()
            .filter(|(x, y, r)| x.is_finite() && y.is_finite() && r.is_finite())
            .map(|&(x, y, _)| (x, y))
            .collect();
        let rounding: Vec<f64> = points
            .iter()
            .filter(|(x, y, r)| x.is_finite() && y.is_finite() && r.is_finite())
            .map(|&(_, _, r)| r.abs())
            .collect();
        if p.len() < 3 || p.iter().all(|q| q.0 == p[0].0) {
            return None;
        }
        let n = p.len() as f64;
        let mx = p.iter().map(|q| q.0).sum::<f64>() / n;
        let my = p.iter().map(|q| q.1).sum::<f64>() / n;
        let sxx: f64 = p.iter().map(|(x, _)| (x - mx).powi(2)).sum();
        let sxy: f64 = p.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        let ss_res: f64 = p
            .iter()
            .map(|(x, y)| (y - intercept - slope * x).powi(2))
            .sum();
        let df = n - 2.0;
        let se = (ss_res / df / sxx).sqrt();
        let rounded: f64 = p
            .iter()
            .zip(&rounding)
            .map(|((x, _), r)| (x - mx).abs() * r)
            .sum::<f64>()
            / sxx;
        let half = super::student::t975(df) * se + rounded;
        let x_min = p.iter().map(|q| q.0).fold(f64::INFINITY, f64::min);
        let x_max = p.iter().map(|q| q.0).fold(f64::NEG_INFINITY, f64::max);
        Some(LinearFit {
            slope,
            intercept,
            slope_lo: slope - half,
            slope_hi: slope + half,
            points: p.len(),
            x_min,
            x_max,
        })
    }

    /// The interval of the slope holds 0: no cost per unit of `x` shown.
    #[cfg(test)]
    pub(crate) fn includes_zero(&self) -> bool {
        self.slope_lo <= 0.0 && self.slope_hi >= 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::SplitMix64;

    /// Uniform noise in ±`amp`, the same on every run of the test.
    fn noise(rng: &mut SplitMix64, amp: f64) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 * amp - amp
    }

    const XS: [f64; 7] = [10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10_000.0];

    #[test]
    fn recovers_an_exact_line() {
        let p: Vec<(f64, f64)> = XS.iter().map(|&x| (x, 500.0 + 1.25 * x)).collect();
        let f = LinearFit::fit(&p).unwrap();
        assert!((f.slope - 1.25).abs() < 1e-9, "{f:?}");
        assert!((f.intercept - 500.0).abs() < 1e-6, "{f:?}");
        assert!(f.slope_hi - f.slope_lo < 1e-6, "{f:?}");
        assert_eq!((f.points, f.x_min, f.x_max), (7, 10.0, 10_000.0));
    }

    #[test]
    fn recovers_a_known_slope_through_noise() {
        // 1.1 KiB per connection under ±40 KiB of noise, three runs at each
        // count: far below what one cell at 10 connections resolves.
        let mut rng = SplitMix64::new(3);
        let mut p = Vec::new();
        for &x in &XS[..5] {
            for _ in 0..3 {
                p.push((x, 1.1 * x + noise(&mut rng, 40.0)));
            }
        }
        let f = LinearFit::fit(&p).unwrap();
        assert!(f.slope_lo < 1.1 && f.slope_hi > 1.1, "{f:?}");
        assert!((f.slope - 1.1).abs() < 0.1, "{f:?}");
        assert!(!f.includes_zero(), "{f:?}");
        assert_eq!(f.points, 15);
    }

    #[test]
    fn a_flat_series_includes_zero() {
        let mut rng = SplitMix64::new(11);
        let p: Vec<(f64, f64)> = XS
            .iter()
            .flat_map(|&x| [x, x])
            .map(|x| (x, 2000.0 + noise(&mut rng, 8.0)))
            .collect();
        let f = LinearFit::fit(&p).unwrap();
        assert!(f.includes_zero(), "{f:?}");
        assert!(f.slope.abs() < 0.01, "{f:?}");
    }

    #[test]
    fn rounding_widens_a_series_that_never_moved_a_step() {
        // Less than a 4 KiB page per cell at every count: every delta
        // reads 0, yet the cost may be up to 4 KiB over the span.
        let p: Vec<(f64, f64, f64)> = [10.0, 10.0, 50.0, 50.0, 100.0, 100.0]
            .iter()
            .map(|&x| (x, 0.0, 4.0))
            .collect();
        let f = LinearFit::fit_rounded(&p).unwrap();
        assert_eq!(f.slope, 0.0);
        assert!(f.includes_zero());
        // Σ|x − x̄|·4 / Sxx with x̄ = 53.3: 2·(43.3 + 3.3 + 46.7)·4 /
        // (2·(43.3² + 3.3² + 46.7²)) = 746.7 / 8133.3 ≈ 0.0918.
        assert!((f.slope_hi - 0.0918).abs() < 1e-3, "{f:?}");
        assert!((f.slope_lo + f.slope_hi).abs() < 1e-12);
        // Without rounding the same points give a point interval.
        let exact: Vec<(f64, f64)> = p.iter().map(|&(x, y, _)| (x, y)).collect();
        let f = LinearFit::fit(&exact).unwrap();
        assert_eq!((f.slope_lo, f.slope_hi), (0.0, 0.0));
    }

    #[test]
    fn needs_three_points_and_two_x() {
        assert!(LinearFit::fit(&[]).is_none());
        assert!(LinearFit::fit(&[(1.0, 1.0), (2.0, 2.0)]).is_none());
        assert!(LinearFit::fit(&[(5.0, 1.0), (5.0, 2.0), (5.0, 3.0)]).is_none());
        let f = LinearFit::fit(&[(1.0, 1.0), (1.0, 3.0), (2.0, 4.0), (f64::NAN, 0.0)]).unwrap();
        assert_eq!(f.points, 3);
        assert!((f.slope - 2.0).abs() < 1e-12);
    }
}
