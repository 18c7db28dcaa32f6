//! Looking at paired rounds more than once: `--runs auto` over resident
//! slots reads every comparison after each look of rounds and stops when
//! each is decided. Each look is one more chance to read noise as a
//! difference: five looks at 95 % call identical models different in about
//! 14 % of tries, not 5 %. So every look reads its intervals at the
//! stricter level of Pocock's group-sequential boundary (Pocock 1977;
//! Jennison and Turnbull, *Group Sequential Methods*, table 2.1): the same
//! nominal level at each of K equally spaced looks, chosen so that K looks
//! together call a true null different in 5 % of tries. A run that stops
//! at an early look, or runs fewer looks than planned, errs on the safe
//! side. Pocock's constants are for a normal statistic; the intervals here
//! are Student's or Yuen's t on the per-round log ratios, and the
//! simulation in [`super::paired`]'s tests checks that the boundary holds
//! them to 5 % too. How many looks a run plans follows its budget
//! ([`planned`]): the tour's four, up to twenty for two models given
//! minutes. Costs nothing: a table.

/// Pocock's critical value for K looks at a two-sided 5 % (Jennison and
/// Turnbull's table 2.1), for the K it gives: 1 to 12, 15 and 20.
const POCOCK_Z: [(usize, f64); 14] = [
    (1, 1.960),
    (2, 2.178),
    (3, 2.289),
    (4, 2.361),
    (5, 2.413),
    (6, 2.453),
    (7, 2.485),
    (8, 2.512),
    (9, 2.535),
    (10, 2.555),
    (11, 2.572),
    (12, 2.588),
    (15, 2.626),
    (20, 2.672),
];

/// The most looks the boundary is given for.
pub const MOST_LOOKS: usize = POCOCK_Z[POCOCK_Z.len() - 1].0;

/// The two-sided confidence level of each of `looks` looks (1…20; more
/// count as 20, fewer than 1 as 1, one between two the table gives as the
/// larger, which is stricter): 95 % for one, 98.18 % for four, 99.25 %
/// for twenty.
pub fn level(looks: usize) -> f64 {
    let k = looks.clamp(1, MOST_LOOKS);
    let z = POCOCK_Z
        .iter()
        .find(|(n, _)| *n >= k)
        .map_or(POCOCK_Z[POCOCK_Z.len() - 1].1, |(_, z)| *z);
    1.0 - 2.0 * normal_tail(z)
}

/// The most looks a run may plan when `fit` looks fit its budget: the
/// largest K the table gives that is at most `fit`, and at least `least`.
pub fn planned(fit: usize, least: usize) -> usize {
    POCOCK_Z
        .iter()
        .map(|(n, _)| *n)
        .filter(|&n| n <= fit.min(MOST_LOOKS))
        .max()
        .unwrap_or(1)
        .max(least)
}

/// P(Z > z) for a standard normal z ≥ 0 (Abramowitz and Stegun 26.2.17,
/// within 7.5e-8).
fn normal_tail(z: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.231_641_9 * z);
    let poly = t
        * (0.319_381_530
            + t * (-0.356_563_782
                + t * (1.781_477_937 + t * (-1.821_255_978 + t * 1.330_274_429))));
    (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * poly
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_levels_are_pococks() {
        assert!((level(1) - 0.95).abs() < 1e-4, "{}", level(1));
        // Nominal two-sided 0.0294, 0.0221, 0.0182, 0.0158.
        for (k, alpha) in [(2, 0.0294), (3, 0.0221), (4, 0.0182), (5, 0.0158)] {
            assert!((1.0 - level(k) - alpha).abs() < 2e-4, "{k}: {}", level(k));
        }
        assert_eq!(level(0), level(1));
        assert_eq!(level(99), level(20));
        assert!((1.0 - level(20) - 0.0075).abs() < 2e-4, "{}", level(20));
        // Between two the table gives: the stricter.
        assert_eq!(level(13), level(15));
        assert_eq!(planned(14, 4), 12);
        assert_eq!(planned(2, 4), 4);
        assert_eq!(planned(500, 4), 20);
    }

    /// K looks at Pocock's constant call a true null different in 5 % of
    /// tries: z statistics of a random walk read at each look.
    #[test]
    fn the_constants_keep_five_per_cent_over_their_looks() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut uniform = || {
            // splitmix64
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let tries = 40_000;
        for &(k, z) in &POCOCK_Z {
            let mut hits = 0;
            for _ in 0..tries {
                let mut sum = 0.0;
                for look in 1..=k {
                    // Box–Muller.
                    let (u, v) = (uniform().max(1e-300), uniform());
                    sum += (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
                    if sum.abs() / (look as f64).sqrt() > z {
                        hits += 1;
                        break;
                    }
                }
            }
            let rate = hits as f64 / tries as f64;
            // Five standard errors of a 5 % rate over the tries.
            assert!((rate - 0.05).abs() < 0.0055, "{k} looks at {z}: {rate}");
        }
    }
}
