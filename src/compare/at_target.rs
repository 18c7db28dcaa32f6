//! Two capacity searches (`c10k run --slo`) compared cell by cell. A
//! search's slots each offer a rate of their own, so no figure of theirs
//! is compared run by run; what each side decided is. A side's capacity
//! lies between the highest rate it held and the lowest it missed (each
//! decided by its own interval, [`crate::capacity::search`]), so NEW's
//! over BASE's lies between NEW held / BASE missed and NEW missed / BASE
//! held. That range is read as a cell's interval is ([`super::cells`]):
//! *higher* or *lower* when it lies wholly beyond ±margin, *equivalent*
//! when wholly within it, *inconclusive* otherwise; a side that decided no
//! rate leaves the cell untested. An end a side did not decide leaves the
//! range open on that end (a search that held every rate tried has no
//! upper end). Both sides must search against the same targets
//! ([`super::settings::frame`]). Cost: each side split by work profile
//! once, then each cell's slots read a few times over.

use super::cells::Key;
use super::input::Side;
use super::report::{Bracket, Capacity, Verdict};
use crate::capacity::search::{self as cap, State};
use crate::present::units::format_count;
use crate::results::axis::{parts, Part};
use crate::results::cell::Status;
use crate::results::dir::RunData;
use crate::server::work::Profile;

/// What `data` (one work profile's part of a side) decided of `key`'s
/// search.
fn bracket(data: &RunData, work: Option<&Profile>, key: &Key) -> Option<Bracket> {
    let search = data.plan.capacity.as_ref()?;
    let slots = cap::phase_slots(data, search, &key.model, key.connections, work).0;
    let points = cap::rates(&slots, search, &search.targets_under(work));
    let state = cap::state(data, &key.model, key.connections, work);
    let measured = data
        .cells
        .iter()
        .filter(|c| {
            c.cell.model == key.model
                && c.cell.connections == key.connections
                && c.status == Status::Ok
        })
        .count();
    let end = cap::end_of(&state, &points);
    let (held, missed) = end.as_ref().map_or((None, None), cap::bracket_of);
    Some(Bracket {
        held,
        missed,
        slots: slots.len(),
        measured,
        end: match (&state, &end) {
            (State::Failed(why), _) => format!("failed: {why}"),
            (_, Some(e)) => cap::end_text(e),
            (_, None) => "not searched".into(),
        },
    })
}

/// Each matched cell of two capacity searches, compared against
/// `margin`; `gate`: `--fail-if-slower`'s share. Each side is split by
/// work profile once.
pub fn cells(
    base: &Side,
    new: &Side,
    matched: &[Key],
    margin: f64,
    gate: Option<f64>,
) -> Vec<Capacity> {
    let (bp, np) = (parts(&base.data), parts(&new.data));
    let of = |all: &[Part<'_>], key: &Key| -> Bracket {
        all.iter()
            .find(|p| p.work.filter(|w| !w.is_none()).map(ToString::to_string) == key.work)
            .and_then(|p| bracket(&p.data, p.work.filter(|w| !w.is_none()), key))
            .unwrap_or_else(|| Bracket {
                held: None,
                missed: None,
                slots: 0,
                measured: 0,
                end: "not searched".into(),
            })
    };
    matched
        .iter()
        .map(|key| {
            let (b, n) = (of(&bp, key), of(&np, key));
            let (low, high) = range(&b, &n);
            let verdict = verdict(&b, &n, low, high, margin);
            // Lower by more than the share, as a cell's gate reads it.
            let gate_failed = verdict != Verdict::Untested
                && gate.is_some_and(|share| high.is_some_and(|h| h < 1.0 / (1.0 + share)));
            Capacity {
                work: key.work.clone(),
                model: key.model.clone(),
                connections: key.connections,
                base: b,
                new: n,
                low,
                high,
                verdict,
                gate_failed,
            }
        })
        .collect()
}

/// NEW's capacity over BASE's: at least NEW held / BASE missed, at most
/// NEW missed / BASE held (`None`: that end open).
fn range(b: &Bracket, n: &Bracket) -> (Option<f64>, Option<f64>) {
    let low = n.held.zip(b.missed).map(|(h, m)| h / m);
    let high = n.missed.zip(b.held).map(|(m, h)| m / h);
    (low, high)
}

fn verdict(b: &Bracket, n: &Bracket, low: Option<f64>, high: Option<f64>, margin: f64) -> Verdict {
    let decided = |x: &Bracket| x.held.is_some() || x.missed.is_some();
    if !decided(b) || !decided(n) {
        return Verdict::Untested;
    }
    let m = 1.0 + margin;
    match (low, high) {
        (Some(lo), _) if lo > m => Verdict::Faster,
        (_, Some(hi)) if hi < 1.0 / m => Verdict::Slower,
        (Some(lo), Some(hi)) if lo >= 1.0 / m && hi <= m => Verdict::Equivalent,
        _ => Verdict::Inconclusive,
    }
}

/// `1.19× to 2.00×`, `at least 1.19×`, `at most 0.84×`, `–` (both ends
/// open).
pub fn range_text(c: &Capacity) -> String {
    let t = |x: f64| format!("{}×", crate::analysis::summary::small_times(x));
    match (c.low, c.high) {
        (Some(lo), Some(hi)) => format!("{} to {}", t(lo), t(hi)),
        (Some(lo), None) => format!("at least {}", t(lo)),
        (None, Some(hi)) => format!("at most {}", t(hi)),
        (None, None) => "–".into(),
    }
}

/// `215,000/s to 362,000/s`, `215,000/s to –`.
pub fn bracket_text(b: &Bracket) -> String {
    let r = |v: Option<f64>| v.map_or("–".into(), |v| format!("{}/s", format_count(v)));
    format!("{} to {}", r(b.held), r(b.missed))
}

/// How far a cell is worse: the upper end of its range (lower is worse;
/// an open end counts as no worse than 1).
pub fn worse_by(c: &Capacity) -> f64 {
    c.high.map_or(1.0, |h| 1.0 / h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(held: Option<f64>, missed: Option<f64>) -> Bracket {
        Bracket {
            held,
            missed,
            slots: 10,
            measured: 10,
            end: String::new(),
        }
    }

    fn call(base: Bracket, new: Bracket) -> (Verdict, Option<f64>, Option<f64>) {
        let (lo, hi) = range(&base, &new);
        (verdict(&base, &new, lo, hi, 0.05), lo, hi)
    }

    #[test]
    fn brackets_apart_decide_and_overlapping_do_not() {
        // NEW held a rate BASE missed: higher, by at least 215/181.
        let (v, lo, _) = call(b(Some(128e3), Some(181e3)), b(Some(215e3), Some(362e3)));
        assert_eq!(v, Verdict::Faster);
        assert!((lo.unwrap() - 215.0 / 181.0).abs() < 1e-9);
        // And the other way round: lower.
        let (v, _, hi) = call(b(Some(215e3), Some(362e3)), b(Some(128e3), Some(181e3)));
        assert_eq!(v, Verdict::Slower);
        assert!((hi.unwrap() - 181.0 / 215.0).abs() < 1e-9);
        // The same bracket on both sides, 20 % wide: not told apart.
        let (v, ..) = call(b(Some(181e3), Some(215e3)), b(Some(181e3), Some(215e3)));
        assert_eq!(v, Verdict::Inconclusive);
        // Both brackets within 5 % of each other: equivalent.
        let (v, ..) = call(b(Some(200e3), Some(203e3)), b(Some(199e3), Some(202e3)));
        assert_eq!(v, Verdict::Equivalent);
        // NEW missed at a rate just below what BASE held: within the
        // margin, so not lower.
        let (v, ..) = call(b(Some(100e3), None), b(Some(50e3), Some(98e3)));
        assert_eq!(v, Verdict::Inconclusive);
    }

    #[test]
    fn open_ends_and_undecided_sides() {
        // BASE held every rate tried; NEW missed below it: lower.
        let (v, lo, hi) = call(b(Some(362e3), None), b(Some(90e3), Some(128e3)));
        assert_eq!((v, lo), (Verdict::Slower, None));
        assert!(hi.unwrap() < 0.4);
        // NEW never met the target, BASE held 1,000/s: lower.
        let (v, ..) = call(b(Some(1e3), Some(2e3)), b(None, Some(50.0)));
        assert_eq!(v, Verdict::Slower);
        // A side that decided nothing: untested.
        let (v, ..) = call(b(None, None), b(Some(1e3), Some(2e3)));
        assert_eq!(v, Verdict::Untested);
        // Both held every rate: nothing tells them apart.
        let (v, ..) = call(b(Some(362e3), None), b(Some(362e3), None));
        assert_eq!(v, Verdict::Inconclusive);
    }
}
