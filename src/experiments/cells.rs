//! A study table's cells: a model's runs at one count, summarised by their
//! median, or what to print where there is no figure. Shared by every
//! study's table ([`super::tables`], [`super::c1m`]). Cost: a pass over the
//! results per call.

use crate::results::cell::{CellResult, Metrics, Status};
use crate::results::dir::RunData;
use crate::stats::Summary;

/// The summary of `f` over the measured repeats of `model` at `n`.
pub(super) fn summary(
    data: &RunData,
    model: &str,
    n: usize,
    f: impl Fn(&Metrics) -> Option<f64>,
) -> Option<Summary> {
    let v: Vec<f64> = cells(data, model, n)
        .filter(|c| c.status == Status::Ok)
        .filter_map(|c| f(&c.metrics()))
        .collect();
    Summary::of(&v)
}

pub(super) fn cells<'a>(
    data: &'a RunData,
    model: &'a str,
    n: usize,
) -> impl Iterator<Item = &'a CellResult> {
    data.cells
        .iter()
        .filter(move |c| c.cell.model == model && c.cell.connections == n)
}

/// What to print where a model has no figure at `n`: why, or blank when
/// the cell has not run.
pub(super) fn missing(data: &RunData, model: &str, n: usize) -> String {
    match cells(data, model, n).find(|c| c.status != Status::Ok) {
        Some(c) if c.status == Status::Skipped => "skipped".into(),
        Some(_) => "failed".into(),
        None => "-".into(),
    }
}
