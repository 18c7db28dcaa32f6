//! How evenly a resource was shared: Jain's fairness index, used for the
//! accepts of herd workers and for the round trips of a load's connections.

/// Jain's index of `x`: (Σx)² / (n·Σx²). 1 when every share is equal, 1/n
/// when one took everything; `None` when nothing was shared.
pub fn jain(x: &[u64]) -> Option<f64> {
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    let squares: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    if x.is_empty() || squares == 0.0 {
        return None;
    }
    Some(sum * sum / (x.len() as f64 * squares))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_runs_from_one_over_n_to_one() {
        assert_eq!(jain(&[5, 5, 5, 5]), Some(1.0));
        assert_eq!(jain(&[8, 0, 0, 0]), Some(0.25));
        assert_eq!(jain(&[0, 0]), None);
        assert_eq!(jain(&[]), None);
        let j = jain(&[1, 2, 3]).unwrap_or(0.0);
        assert!((j - 36.0 / 42.0).abs() < 1e-12);
        // Half the connections served twice as often as the other half.
        let j = jain(&[2, 2, 1, 1]).unwrap_or(0.0);
        assert!((j - 36.0 / 40.0).abs() < 1e-12);
    }
}
