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
//! them to 5 % too. Costs nothing: a table.

/// Pocock's critical value for K = 1…5 looks at a two-sided 5 %.
const POCOCK_Z: [f64; 5] = [1.960, 2.178, 2.289, 2.361, 2.413];

/// The most looks the boundary is given for.
pub const MOST_LOOKS: usize = POCOCK_Z.len();

/// The two-sided confidence level of each of `looks` looks (1…5; more
/// count as 5, fewer than 1 as 1): 95 % for one, 98.18 % for four.
pub fn level(looks: usize) -> f64 {
    let z = POCOCK_Z[looks.clamp(1, MOST_LOOKS) - 1];
    1.0 - 2.0 * normal_tail(z)
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
        assert_eq!(level(9), level(5));
    }
}
