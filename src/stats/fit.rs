//! Power-law fit: least squares of log(time) on log(connections).
//!
//! `y = a·x^b` is a straight line in log space, `ln y = ln a + b·ln x`, so an
//! ordinary least-squares line through `(ln x, ln y)` gives the exponent `b`
//! directly: 1 means the work grows linearly with the connections, 2
//! quadratically (select scanning every descriptor for every event), 0.5 less
//! than linearly. R² is computed in log space too, where the fit was made: it
//! says how well a single power law describes the points, not how close the
//! curve is to the largest values.

/// A fitted `y = a·x^exponent`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PowerLaw {
    /// The multiplier: the fitted `y` at `x = 1`.
    pub a: f64,
    /// The power of `x`.
    pub exponent: f64,
    /// Coefficient of determination of the line in log space, at most 1.
    pub r2: f64,
    /// Points the fit used (positive and finite).
    pub points: usize,
}

impl PowerLaw {
    /// Fits `points` (`(x, y)` pairs). Points with a non-positive or
    /// non-finite coordinate are ignored (they have no logarithm); `None`
    /// when fewer than two distinct `x` remain.
    pub fn fit(points: &[(f64, f64)]) -> Option<PowerLaw> {
        let logs: Vec<(f64, f64)> = points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
            .map(|(x, y)| (x.ln(), y.ln()))
            .collect();
        // Two distinct x are needed for a slope.
        let first = logs.first()?.0;
        if !logs.iter().any(|(u, _)| (u - first).abs() > 1e-12) {
            return None;
        }
        let n = logs.len() as f64;
        let mean_u = logs.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_v = logs.iter().map(|p| p.1).sum::<f64>() / n;
        let suu: f64 = logs.iter().map(|(u, _)| (u - mean_u).powi(2)).sum();
        if suu <= 0.0 {
            return None;
        }
        let suv: f64 = logs.iter().map(|(u, v)| (u - mean_u) * (v - mean_v)).sum();
        let exponent = suv / suu;
        let ln_a = mean_v - exponent * mean_u;
        let ss_res: f64 = logs
            .iter()
            .map(|(u, v)| (v - (ln_a + exponent * u)).powi(2))
            .sum();
        let ss_tot: f64 = logs.iter().map(|(_, v)| (v - mean_v).powi(2)).sum();
        // Every y equal (up to rounding in the logarithms and their mean):
        // the flat line through them is exact.
        let rounding = 1e-20 * n * (1.0 + mean_v.abs()).powi(2);
        let r2 = if ss_tot > rounding {
            1.0 - ss_res / ss_tot
        } else {
            1.0
        };
        Some(PowerLaw {
            a: ln_a.exp(),
            exponent,
            r2,
            points: logs.len(),
        })
    }

    /// The fitted `y` at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.a * x.powf(self.exponent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: [f64; 8] = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 512.0];

    fn exact(a: f64, b: f64) -> Vec<(f64, f64)> {
        NS.iter().map(|&x| (x, a * x.powf(b))).collect()
    }

    /// Multiplies each y by a fixed factor between 0.8 and 1.25: noise that
    /// is the same on every run of the test.
    fn noisy(a: f64, b: f64) -> Vec<(f64, f64)> {
        const FACTORS: [f64; 8] = [1.2, 0.85, 1.1, 0.9, 1.25, 0.8, 1.05, 0.95];
        exact(a, b)
            .into_iter()
            .zip(FACTORS)
            .map(|((x, y), f)| (x, y * f))
            .collect()
    }

    #[test]
    fn recovers_exact_exponents() {
        for b in [1.0, 0.5, 2.0, 0.0] {
            let f = PowerLaw::fit(&exact(1e-5, b)).unwrap();
            assert!((f.exponent - b).abs() < 1e-9, "b {b}: {f:?}");
            assert!((f.a - 1e-5).abs() < 1e-14, "b {b}: {f:?}");
            assert!((f.r2 - 1.0).abs() < 1e-9, "b {b}: {f:?}");
            assert_eq!(f.points, NS.len());
            assert!((f.at(100.0) - 1e-5 * 100f64.powf(b)).abs() < 1e-9);
        }
    }

    #[test]
    fn noisy_data_fits_near_the_exponent_with_lower_r2() {
        for b in [1.0, 0.5, 2.0] {
            let f = PowerLaw::fit(&noisy(3.0, b)).unwrap();
            assert!((f.exponent - b).abs() < 0.05, "b {b}: {f:?}");
            assert!(f.r2 < 0.9999, "b {b}: {f:?}");
            assert!(f.r2 > 0.9, "b {b}: {f:?}");
        }
        // The same noise on a flatter line explains less of the spread.
        let steep = PowerLaw::fit(&noisy(3.0, 2.0)).unwrap();
        let flat = PowerLaw::fit(&noisy(3.0, 0.5)).unwrap();
        assert!(flat.r2 < steep.r2, "{flat:?} {steep:?}");
    }

    #[test]
    fn ignores_points_without_a_logarithm() {
        let mut pts = exact(2.0, 1.0);
        pts.extend([
            (0.0, 1.0),
            (-4.0, 1.0),
            (8.0, 0.0),
            (8.0, -3.0),
            (f64::NAN, 1.0),
            (16.0, f64::INFINITY),
        ]);
        let f = PowerLaw::fit(&pts).unwrap();
        assert_eq!(f.points, NS.len());
        assert!((f.exponent - 1.0).abs() < 1e-9);
    }

    #[test]
    fn needs_two_distinct_x() {
        assert!(PowerLaw::fit(&[]).is_none());
        assert!(PowerLaw::fit(&[(4.0, 1.0)]).is_none());
        assert!(PowerLaw::fit(&[(4.0, 1.0), (4.0, 2.0), (4.0, 3.0)]).is_none());
        assert!(PowerLaw::fit(&[(4.0, 1.0), (0.0, 2.0)]).is_none());
        let two = PowerLaw::fit(&[(4.0, 1.0), (4.0, 3.0), (8.0, 4.0)]).unwrap();
        assert_eq!(two.points, 3);
    }
}
