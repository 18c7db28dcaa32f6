//! Student's t: the two-sided 95 % quantile `t(0.975, df)` that the
//! intervals of [`super::compare`] (Welch) and [`super::slope`] (least
//! squares) need: a table for 1 to 30 degrees of freedom, its logarithm
//! interpolated against `1/df` between entries (Welch's degrees of freedom
//! are fractional), and beyond 30 the Cornish–Fisher expansion around the
//! normal quantile, within 1e-4 of the exact value there. Costs nothing: a
//! lookup or a polynomial.

/// `t(0.975, df)` for df = 1…30 (four decimals, from the exact quantiles).
const T975: [f64; 30] = [
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
    2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
    2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
];

/// The normal quantile `z(0.975)`.
const Z975: f64 = 1.959_963_984_540_054;

/// The 0.975 quantile of Student's t with `df` degrees of freedom (the
/// half-width multiplier of a two-sided 95 % interval). Below 1 degree of
/// freedom it answers as for 1 (no interval here has fewer); infinite or
/// huge `df` gives the normal quantile.
pub(crate) fn t975(df: f64) -> f64 {
    if df.is_nan() || df <= 1.0 {
        return T975[0];
    }
    if df < 30.0 {
        let lo = df.floor();
        let hi = lo + 1.0;
        let (t_lo, t_hi) = (T975[lo as usize - 1], T975[hi as usize - 1]);
        // ln t is close to linear in 1/df between neighbours (within 3 %
        // between 1 and 2, 0.5 % from 2 on, always a little above: wider).
        let w = (1.0 / lo - 1.0 / df) / (1.0 / lo - 1.0 / hi);
        return (t_lo.ln() + (t_hi.ln() - t_lo.ln()) * w).exp();
    }
    if !df.is_finite() {
        return Z975;
    }
    let z = Z975;
    let g1 = (z.powi(3) + z) / 4.0;
    let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
    let g3 = (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / 384.0;
    z + g1 / df + g2 / df.powi(2) + g3 / df.powi(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_quantiles() {
        for (df, t) in [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (5.0, 2.5706),
            (10.0, 2.2281),
            (30.0, 2.0423),
            (40.0, 2.0211),
            (60.0, 2.0003),
            (120.0, 1.9799),
        ] {
            assert!((t975(df) - t).abs() < 2e-4, "df {df}: {} vs {t}", t975(df));
        }
        assert_eq!(t975(0.3), 12.7062);
        assert!((t975(f64::INFINITY) - 1.96).abs() < 1e-3);
    }

    #[test]
    fn fractional_df_lies_between_its_neighbours() {
        let t = t975(2.5);
        assert!(t < t975(2.0) && t > t975(3.0), "{t}");
        // The exact values are 3.5747 and 6.0167; the interpolation errs
        // wide, never narrow.
        assert!(t >= 3.5747 && t - 3.5747 < 0.02, "{t}");
        let t = t975(1.5);
        assert!(t >= 6.0167 && t - 6.0167 < 0.2, "{t}");
        let t = t975(7.5);
        assert!(t >= 2.333 && t - 2.333 < 0.005, "{t}");
        let mut last = f64::INFINITY;
        for i in 10..400 {
            let t = t975(f64::from(i) / 10.0);
            assert!(t <= last, "not decreasing at df {}", f64::from(i) / 10.0);
            last = t;
        }
    }
}
