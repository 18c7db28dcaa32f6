//! Runs disturbed from outside: a cell whose measured window saw CPU used
//! by processes outside the run, or time stolen by the hypervisor
//! ([`crate::client::limit`] flags it; a resident slot, its steal), measured
//! the machine, not the model. Such a run is run again at once, up to the plan's
//! `repeat_disturbed` times (`--repeat-disturbed`); the repeat's result
//! replaces it in the figures ([`RunData::cells`]) and the disturbed one
//! stays in `results.jsonl` and in [`RunData::superseded`]. What could not
//! be repeated clean is kept, counted and marked. Costs a pass over the
//! run's records.

use std::collections::BTreeMap;

use crate::results::cell::{CellResult, Status};
use crate::results::dir::RunData;

/// Whether a measured cell was disturbed from outside the run: its
/// client saw interference over the window, or, in a resident slot, the
/// hypervisor stole CPU from the machine ([`crate::results::cell::Slot::stolen_seconds`];
/// a slot's window is too short for the client's own reading of it).
pub(crate) fn disturbed(c: &CellResult) -> bool {
    c.status == Status::Ok && (c.load.as_ref().is_some_and(|l| l.limits.interference) || stolen(c))
}

/// Whether a resident slot lost CPU to the hypervisor.
fn stolen(c: &CellResult) -> bool {
    c.slot
        .as_ref()
        .and_then(|s| s.stolen_seconds)
        .is_some_and(|s| s > 0.0)
}

/// The ids of the slots the figures leave out: stolen from in every try
/// (their repeats ran out), of a model that has two slots or more at the
/// count that were not. Their rounds then pair nothing with that model:
/// the steal is the host's, not either model's, so leaving the round out
/// takes nothing from the comparison but the noise. A model with fewer
/// clean slots keeps them all, counted and marked.
pub(crate) fn left_out(data: &RunData) -> std::collections::BTreeSet<String> {
    let key = |c: &CellResult| {
        (
            c.cell.model.clone(),
            c.cell.connections,
            c.cell.work.clone(),
        )
    };
    let mut clean: BTreeMap<_, usize> = BTreeMap::new();
    for c in data
        .cells
        .iter()
        .filter(|c| c.status == Status::Ok && c.slot.is_some())
    {
        *clean.entry(key(c)).or_default() += usize::from(!stolen(c));
    }
    data.cells
        .iter()
        .filter(|c| c.status == Status::Ok && stolen(c))
        .filter(|c| clean.get(&key(c)).is_some_and(|&n| n >= 2))
        .map(|c| c.cell.id.clone())
        .collect()
}

/// Whether cell `id`, just recorded, should run again: it was disturbed
/// and has been run at most the plan's `repeat_disturbed` times before.
pub(crate) fn repeat(data: &RunData, id: &str) -> bool {
    let last = data.cells.iter().find(|c| c.cell.id == id);
    let before = data.superseded.iter().filter(|c| c.cell.id == id).count();
    last.is_some_and(disturbed) && before < data.plan.repeat_disturbed
}

/// What disturbance did to one model at one count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Disturbed runs that were run again (superseded, not counted).
    pub repeated: usize,
    /// Runs that count although disturbed: their repeats ran out.
    pub kept: usize,
    /// Slots stolen from in every try, left out of the figures
    /// ([`left_out`]).
    pub left_out: usize,
}

/// The tally of every (model, connections) that had any.
pub(crate) fn tallies(data: &RunData) -> BTreeMap<(String, usize), Tally> {
    let mut out: BTreeMap<(String, usize), Tally> = BTreeMap::new();
    let key = |c: &CellResult| (c.cell.model.clone(), c.cell.connections);
    for c in data.superseded.iter().filter(|c| disturbed(c)) {
        out.entry(key(c)).or_default().repeated += 1;
    }
    let out_ids = left_out(data);
    for c in data.cells.iter().filter(|c| disturbed(c)) {
        let t = out.entry(key(c)).or_default();
        if out_ids.contains(&c.cell.id) {
            t.left_out += 1;
        } else {
            t.kept += 1;
        }
    }
    out
}

/// The line at the top of a run's tables when anything was disturbed:
/// how many runs were repeated, and which are kept disturbed.
pub(crate) fn headline(data: &RunData) -> Option<String> {
    let t = tallies(data);
    let repeated: usize = t.values().map(|x| x.repeated).sum();
    let kept: Vec<String> = t
        .iter()
        .filter(|(_, x)| x.kept > 0)
        .map(|((m, n), x)| {
            format!(
                "{m} at {}{}",
                crate::present::units::format_count(*n as f64),
                if x.kept > 1 {
                    format!(" ({} runs)", x.kept)
                } else {
                    String::new()
                }
            )
        })
        .collect();
    let kept_n: usize = t.values().map(|x| x.kept).sum();
    let out_n: usize = t.values().map(|x| x.left_out).sum();
    if repeated == 0 && kept_n == 0 && out_n == 0 {
        return None;
    }
    let mut s = format!(
        "Disturbed from outside the run: {repeated} run{} repeated",
        if repeated == 1 { "" } else { "s" }
    );
    if out_n > 0 {
        s += &format!(
            "; {out_n} slot{} the hypervisor stole CPU from in every try left out of the figures, with {} round{}' pairs",
            if out_n == 1 { "" } else { "s" },
            if out_n == 1 { "its" } else { "their" },
            if out_n == 1 { "'s" } else { "s" }
        );
    }
    if kept_n > 0 {
        s += &format!(
            "; {kept_n} still disturbed after {} repeat{} and counted, marked ⚠: {}",
            data.plan.repeat_disturbed,
            if data.plan.repeat_disturbed == 1 {
                ""
            } else {
                "s"
            },
            kept.join(", ")
        );
    } else {
        s += "; every figure below is from undisturbed runs";
    }
    Some(s + ".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::matrix::RunPlan;

    /// `plan`'s results: each of `runs` is a cell index and whether each
    /// of its records, in order, was disturbed.
    fn data(plan: &RunPlan, runs: &[(usize, &[bool])]) -> RunData {
        let measured = crate::results::dir::Figures {
            throughput: 1000.0,
            ..Default::default()
        };
        let names: Vec<&str> = plan.models.iter().map(String::as_str).collect();
        let each: Vec<(&str, Vec<_>)> = names.iter().map(|m| (*m, vec![measured])).collect();
        let cells = RunData::example_of(&each).cells;
        let mut d = RunData::example(plan.clone());
        for &(i, records) in runs {
            for (k, &noisy) in records.iter().enumerate() {
                let mut c = cells[i].clone();
                c.repeat = k;
                if let Some(l) = c.load.as_mut() {
                    l.limits.interference = noisy;
                }
                if k + 1 < records.len() {
                    d.superseded.push(c);
                } else {
                    d.cells.push(c);
                }
            }
        }
        d
    }

    /// A 300 ms slot the hypervisor stole `stolen` seconds from.
    fn slot(stolen: f64) -> crate::results::cell::Slot {
        crate::results::cell::Slot {
            position: 1,
            of: 2,
            first: false,
            instance: Some(1),
            start_seconds: None,
            outside_cpu_seconds: Some(0.0),
            outside_seconds: Some(0.3),
            stolen_seconds: Some(stolen),
        }
    }

    /// A slot whose client saw nothing (its window too short to read
    /// the machine) is still disturbed when the hypervisor stole CPU over
    /// it, and runs again; below the ticks' rounding it is not.
    #[test]
    fn a_slot_the_hypervisor_stole_from_is_disturbed_and_repeated() {
        let plan = RunPlan::example(&["a", "b"], &[10], 1);
        let id = plan.cells[0].id.clone();
        let mut d = data(&plan, &[(0, &[false])]);
        d.cells[0].slot = Some(slot(0.0));
        assert!(!disturbed(&d.cells[0]) && !repeat(&d, &id));
        d.cells[0].slot = Some(slot(0.04));
        assert!(disturbed(&d.cells[0]) && repeat(&d, &id));
        // Stolen from in every try: kept, and counted so.
        let mut c = d.cells[0].clone();
        for k in 0..2 {
            c.repeat = k;
            d.superseded.push(c.clone());
        }
        d.cells[0].repeat = 2;
        assert!(!repeat(&d, &id));
        // Its model has no other slot: kept, counted and marked.
        let t = tallies(&d);
        assert_eq!(
            t.values().next().map(|t| (t.repeated, t.kept, t.left_out)),
            Some((2, 1, 0))
        );
    }

    /// A slot stolen from in every try is left out of the figures, with
    /// its round's pairs, where its model has two clean slots or more:
    /// the ranking's values skip its round, and the headline says so.
    #[test]
    fn a_slot_stolen_from_in_every_try_is_left_out_where_its_model_has_clean_ones() {
        let at = |throughput| crate::results::dir::Figures {
            throughput,
            ..Default::default()
        };
        let mut d = RunData::example_of(&[("a", vec![at(1000.0); 3]), ("b", vec![at(900.0); 3])]);
        for c in d.cells.iter_mut() {
            c.slot = Some(slot(0.0));
        }
        let of_a = |d: &RunData, run: usize| {
            d.cells
                .iter()
                .position(|c| c.cell.model == "a" && c.cell.run == run)
                .expect("a's round")
        };
        let stolen = of_a(&d, 2);
        d.cells[stolen].slot = Some(slot(0.05));
        let out: Vec<String> = left_out(&d).into_iter().collect();
        assert_eq!(out, vec![d.cells[stolen].cell.id.clone()]);
        let values = crate::analysis::summary::rounds(&d, 10, &|m| m.throughput);
        let a = &values.iter().find(|(m, _)| m == "a").expect("a ranked").1;
        assert_eq!(a.iter().map(|v| v.0).collect::<Vec<_>>(), vec![1, 3]);
        let t = tallies(&d);
        assert_eq!(t[&("a".to_string(), 10)].left_out, 1);
        let line = headline(&d).unwrap();
        assert!(
            line.contains("1 slot the hypervisor stole CPU from in every try left out"),
            "{line}"
        );
        // With one clean slot left, the model keeps them all.
        let third = of_a(&d, 3);
        d.cells[third].slot = Some(slot(0.05));
        assert!(left_out(&d).is_empty());
    }

    #[test]
    fn a_disturbed_run_is_repeated_up_to_the_bound() {
        let plan = RunPlan::example(&["a", "b"], &[10], 1);
        let id = plan.cells[0].id.clone();
        assert!(repeat(&data(&plan, &[(0, &[true])]), &id));
        assert!(repeat(&data(&plan, &[(0, &[true, true])]), &id));
        assert!(
            !repeat(&data(&plan, &[(0, &[true, true, true])]), &id),
            "two repeats, then kept"
        );
        assert!(!repeat(&data(&plan, &[(0, &[true, false])]), &id));
        assert!(!repeat(&data(&plan, &[(0, &[false])]), &id));
        let mut never = plan.clone();
        never.repeat_disturbed = 0;
        assert!(!repeat(&data(&never, &[(0, &[true])]), &id));
    }

    #[test]
    fn the_tally_counts_repeats_and_what_was_kept() {
        let plan = RunPlan::example(&["a", "b"], &[10], 1);
        let d = data(&plan, &[(0, &[true, false]), (1, &[true, true, true])]);
        let t = tallies(&d);
        assert_eq!(
            t[&("a".to_string(), 10)],
            Tally {
                repeated: 1,
                kept: 0,
                left_out: 0
            }
        );
        assert_eq!(
            t[&("b".to_string(), 10)],
            Tally {
                repeated: 2,
                kept: 1,
                left_out: 0
            }
        );
        let line = headline(&d).unwrap();
        assert!(line.contains("3 runs repeated"), "{line}");
        assert!(line.contains("b at 10"), "{line}");
        let line = headline(&data(&plan, &[(0, &[true, false])])).unwrap();
        assert!(line.contains("undisturbed"), "{line}");
        assert_eq!(headline(&data(&plan, &[(0, &[false])])), None);
    }
}
