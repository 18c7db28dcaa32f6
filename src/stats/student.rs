//! Student's t: the two-sided 95 % quantile `t(0.975, df)` that the
//! intervals of [`super::paired`] (Welch) and [`super::slope`] (least
//! squares) need: a table for 1 to 30 degrees of freedom, its logarithm
//! interpolated against `1/df` between entries (Welch's degrees of freedom
//! are fractional), and beyond 30 the Cornish–Fisher expansion around the
//! normal quantile, within 1e-4 of the exact value there. Costs nothing: a
//! lookup or a polynomial.
//!
//! Any other level ([`two_sided`]: the stricter intervals of a run that
//! looks at its rounds several times, [`super::looks`]) is found from the
//! distribution itself: the t CDF through the regularized incomplete beta
//! function (its continued fraction, evaluated by Lentz's method), inverted
//! by bisection to 1e-10. Degrees of freedom past [`MAX_DF`] count as that
//! many (the quantile is then within 0.3 % of the normal's, and wider).
//! About a microsecond or two per quantile.

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

/// Degrees of freedom [`two_sided`] counts at most.
const MAX_DF: f64 = 1000.0;

/// The half-width multiplier of a two-sided interval of confidence `level`
/// (0.95: a 95 % interval) with `df` degrees of freedom: the quantile
/// `t((1 + level) / 2, df)`. At 95 % exactly, [`t975`]; below 1 degree of
/// freedom it answers as for 1.
pub(crate) fn two_sided(level: f64, df: f64) -> f64 {
    if level == 0.95 {
        return t975(df);
    }
    let df = if df.is_nan() {
        1.0
    } else {
        df.clamp(1.0, MAX_DF)
    };
    let p = (1.0 + level.clamp(0.5, 0.999_999)) / 2.0;
    // Bracket, then halve: the CDF rises with t.
    let (mut lo, mut hi) = (0.0, 1.0);
    while cdf(hi, df) < p && hi < 1e6 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-10 {
            break;
        }
    }
    hi
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
fn cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / (df + t * t), df / 2.0, 0.5);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1.
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast below its mean; above, by
    // symmetry I_x(a, b) = 1 − I_{1−x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the incomplete beta function, by the
/// modified Lentz method.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=500 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0: Lanczos's approximation (g = 7, 9 terms), to about
/// 1e-15 relative.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
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

    #[test]
    fn any_level_from_the_distribution_itself() {
        // The table's 95 % from the CDF, at every tabled df.
        for (i, t) in T975.iter().enumerate() {
            let df = (i + 1) as f64;
            let q = two_sided(0.950_000_001, df);
            assert!((q - t).abs() < 2e-4, "df {df}: {q} vs {t}");
        }
        // Other levels, from published tables.
        for (level, df, t) in [
            (0.99, 5.0, 4.0321),
            (0.99, 10.0, 3.1693),
            (0.98, 20.0, 2.5280),
            (0.90, 7.0, 1.8946),
            (0.999, 9.0, 4.7809),
            (0.99, 1.0, 63.6567),
        ] {
            let q = two_sided(level, df);
            assert!((q - t).abs() < 2e-4 * t, "{level} at df {df}: {q} vs {t}");
        }
        // Stricter is wider; more degrees of freedom narrower.
        assert!(two_sided(0.9818, 9.0) > two_sided(0.95, 9.0));
        assert!(two_sided(0.9818, 9.0) > two_sided(0.9818, 20.0));
        // Huge df: near the normal's 2.5758 at 99 %.
        assert!((two_sided(0.99, 1e9) - 2.5758).abs() < 0.01);
    }
}
