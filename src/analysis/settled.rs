//! Whether each group of a `--runs auto` plan (a model at a connection
//! count under a work profile) has its median known: repeated until the
//! 95 % interval of its median lies within ±5 % of the median
//! ([`crate::stats::median::settled`]), at least 3 and at most 10 runs.
//! The runner grows the plan from these states ([`crate::runner::auto`]);
//! the verdict names the groups that never settled ([`unsettled_note`]).
//!
//! A group stops without settling when a run was skipped or failed (it
//! would only be so again) or when it reaches the maximum; [`unsettled`]
//! names the latter. Cost: a pass over the results per call.

use std::collections::BTreeMap;

use crate::results::cell::{CellResult, Status};
use crate::results::matrix::{AutoRuns, CellSpec, RunPlan};
use crate::server::work::Profile;
use crate::stats::median::{settled, MedianInterval};

/// Where a group stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Group {
    /// Cells of it are planned and not run yet.
    Running,
    /// Its median is known to the tolerance.
    Settled,
    /// It needs run `next`.
    NeedsMore { next: usize },
    /// It reached the maximum of runs without settling; the interval then.
    Exhausted { runs: usize, half_width: f64 },
    /// A run was skipped or failed, or gave no primary figure: more runs
    /// would not settle it.
    Stopped,
}

/// A group: a model, a work profile's work (`None` for none) and a count.
pub type Key = (String, Option<Profile>, usize);

/// The state of every group of the plan.
pub fn groups(plan: &RunPlan, cells: &[CellResult]) -> BTreeMap<Key, Group> {
    let auto = plan.auto_runs.unwrap_or_default();
    let mut results: BTreeMap<&str, &CellResult> = BTreeMap::new();
    for c in cells {
        results.entry(c.cell.id.as_str()).or_insert(c);
    }
    let mut out = BTreeMap::new();
    for model in &plan.models {
        for work in crate::results::matrix::profiles(&plan.work) {
            for &n in &plan.connections {
                let planned: Vec<&CellSpec> = plan
                    .cells
                    .iter()
                    .filter(|c| c.model == *model && c.work == work && c.connections == n)
                    .collect();
                let done: Vec<&CellResult> = planned
                    .iter()
                    .filter_map(|c| results.get(c.id.as_str()).copied())
                    .collect();
                out.insert(
                    (model.clone(), work.clone(), n),
                    state(
                        plan,
                        auto,
                        planned.len(),
                        &done,
                        planned.iter().map(|c| c.run),
                    ),
                );
            }
        }
    }
    out
}

fn state(
    plan: &RunPlan,
    auto: AutoRuns,
    planned: usize,
    done: &[&CellResult],
    runs: impl Iterator<Item = usize>,
) -> Group {
    if done.len() < planned {
        return Group::Running;
    }
    if done.iter().any(|c| c.status != Status::Ok) {
        return Group::Stopped;
    }
    let values: Vec<f64> = done
        .iter()
        .filter_map(|c| c.metrics().primary(plan.primary))
        .collect();
    if values.len() < done.len() {
        return Group::Stopped;
    }
    if settled(&values, auto.min, auto.tolerance) {
        return Group::Settled;
    }
    if planned >= auto.max {
        return Group::Exhausted {
            runs: planned,
            half_width: MedianInterval::of(&values)
                .map_or(f64::INFINITY, |m| m.relative_half_width()),
        };
    }
    Group::NeedsMore {
        next: runs.max().unwrap_or(0) + 1,
    }
}

/// Groups that reached the maximum of runs without settling: the group,
/// its runs, and the interval's half-width as a fraction of the median; in
/// plan order.
pub(crate) fn unsettled(plan: &RunPlan, cells: &[CellResult]) -> Vec<(Key, usize, f64)> {
    if plan.auto_runs.is_none() {
        return Vec::new();
    }
    let states = groups(plan, cells);
    let mut out = Vec::new();
    for &n in &plan.connections {
        for w in crate::results::matrix::profiles(&plan.work) {
            for m in &plan.models {
                let key = (m.clone(), w.clone(), n);
                if let Some(Group::Exhausted { runs, half_width }) = states.get(&key) {
                    out.push((key, *runs, *half_width));
                }
            }
        }
    }
    out
}

/// One line naming the groups that never settled, for the terminal and the
/// report; `None` when every group settled or the plan is not auto.
pub(crate) fn unsettled_note(plan: &RunPlan, cells: &[CellResult]) -> Option<String> {
    let a = plan.auto_runs?;
    let list = unsettled(plan, cells);
    if list.is_empty() {
        return None;
    }
    let which: Vec<String> = list
        .iter()
        .map(|((m, work, n), _, w)| {
            format!(
                "{m}{} at {} {} (±{} %)",
                work.as_ref()
                    .map_or_else(String::new, |work| format!(" under {work}")),
                crate::present::units::format_count(*n as f64),
                plan.size_label,
                crate::present::units::sig3(w * 100.0)
            )
        })
        .collect();
    let groups = plan.models.len() * plan.connections.len() * plan.work.len().max(1);
    let settled = groups_settled(plan, cells);
    Some(format!(
        "--runs auto: {} stopped at {} runs without {} median known to ±{} % (95 % interval); {} of {groups} settled.",
        which.join(", "),
        a.max,
        if list.len() == 1 { "its" } else { "their" },
        crate::present::units::sig3(a.tolerance * 100.0),
        settled,
    ))
}

/// Groups whose median is known to the tolerance.
fn groups_settled(plan: &RunPlan, cells: &[CellResult]) -> usize {
    groups(plan, cells)
        .values()
        .filter(|g| **g == Group::Settled)
        .count()
}
