//! A run's results arranged for charts and tables: the cells that count
//! (the last result recorded for each cell id), the models in the plan's
//! order, and one figure's values over the repeats of each model at each
//! connection count.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::results::cell::{CellResult, Metrics, Status};
use crate::results::dir::RunData;

/// Picks one figure out of a cell's metrics.
pub(crate) type Pick = fn(&Metrics) -> Option<f64>;

/// One result per cell id, in the order recorded; when a cell was recorded
/// twice (a resumed run that ran it again), the later result stands.
pub fn latest(data: &RunData) -> Vec<&CellResult> {
    let mut seen = HashSet::new();
    let mut out: Vec<&CellResult> = data
        .cells
        .iter()
        .rev()
        .filter(|c| seen.insert(c.cell.id.as_str()))
        .collect();
    out.reverse();
    out
}

/// The plan's models in its order, then any model that only the results
/// name.
pub fn models(data: &RunData) -> Vec<String> {
    let mut out = data.plan.models.clone();
    for c in &data.cells {
        if !out.contains(&c.cell.model) {
            out.push(c.cell.model.clone());
        }
    }
    out
}

/// Every connection count of the plan or the results, ascending.
pub fn connections(data: &RunData) -> Vec<usize> {
    let set: BTreeSet<usize> = data
        .plan
        .connections
        .iter()
        .copied()
        .chain(data.cells.iter().map(|c| c.cell.connections))
        .collect();
    set.into_iter().collect()
}

/// Cells ok, skipped and failed, and cells of the plan with no result yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub ok: usize,
    pub skipped: usize,
    pub failed: usize,
    pub not_run: usize,
}

pub fn counts(data: &RunData) -> Counts {
    let cells = latest(data);
    let mut c = Counts::default();
    for r in &cells {
        match r.status {
            Status::Ok => c.ok += 1,
            Status::Skipped => c.skipped += 1,
            Status::Failed => c.failed += 1,
        }
    }
    let done: HashSet<&str> = cells.iter().map(|r| r.cell.id.as_str()).collect();
    c.not_run = data
        .plan
        .cells
        .iter()
        .filter(|s| !done.contains(s.id.as_str()))
        .count();
    c
}

/// The values of one figure in a model's measured cells, by connection
/// count; only finite values, and only counts that have one.
pub fn values(data: &RunData, model: &str, pick: Pick) -> BTreeMap<usize, Vec<f64>> {
    let mut out: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for c in latest(data) {
        if c.cell.model != model || c.status != Status::Ok {
            continue;
        }
        if let Some(v) = pick(&c.metrics()).filter(|v| v.is_finite()) {
            out.entry(c.cell.connections).or_default().push(v);
        }
    }
    out
}

/// Measured cells of a model.
pub fn measured(data: &RunData, model: &str) -> usize {
    latest(data)
        .iter()
        .filter(|c| c.cell.model == model && c.status == Status::Ok)
        .count()
}

/// Results of a model at a connection count, by status.
pub(crate) fn statuses(data: &RunData, model: &str, connections: usize) -> Counts {
    let mut c = Counts::default();
    for r in latest(data) {
        if r.cell.model == model && r.cell.connections == connections {
            match r.status {
                Status::Ok => c.ok += 1,
                Status::Skipped => c.skipped += 1,
                Status::Failed => c.failed += 1,
            }
        }
    }
    c
}
