//! The report's generic tables: the primary figure of every model at every
//! connection count (median and range over the repeats), and every cell
//! that was skipped or failed with its reason. Both are plain [`Table`]s,
//! so the Markdown export can print them too.

use crate::export::table::Table;
use crate::present::units::Unit;
use crate::results::cell::Status;
use crate::results::dir::RunData;
use crate::results::matrix::Primary;
use crate::results::series::{self, Pick};
use crate::stats::Summary;

/// What the primary figure is called, how to pick it, how it is written,
/// and which way is better.
pub fn primary(p: Primary) -> (&'static str, Pick, Unit, &'static str) {
    match p {
        Primary::Time => (
            "Time for the fixed work",
            |m| m.time_seconds,
            Unit::Seconds,
            "lower is better",
        ),
        Primary::Throughput => (
            "Throughput, round trips per second",
            |m| m.throughput,
            Unit::Rate,
            "higher is better",
        ),
        Primary::AcceptRate => (
            "Accept rate, connections per second",
            |m| m.connects_per_second,
            Unit::Rate,
            "higher is better",
        ),
        Primary::Latency => (
            "Latency p99 at the offered rate (corrected)",
            |m| m.latency_p99_us,
            Unit::Micros,
            "lower is better",
        ),
    }
}

/// Models down, connection counts across; each cell the median of the
/// primary figure over the measured repeats with the smallest and largest
/// in brackets, or why there is no number.
pub fn summary_table(data: &RunData) -> Table {
    let (name, pick, unit, better) = primary(data.plan.primary);
    let conns = series::connections(data);
    let mut header = vec![format!("model \\ {}", data.plan.size_label)];
    header.extend(conns.iter().map(|n| n.to_string()));
    let mut table = Table {
        title: format!("{name}: median (min–max) over repeats"),
        header,
        rows: Vec::new(),
        notes: Vec::new(),
        fold: false,
    };
    for model in series::models(data) {
        let values = series::values(data, &model, pick);
        let mut row = vec![model.clone()];
        for &n in &conns {
            let st = series::statuses(data, &model, n);
            let summary = values.get(&n).and_then(|v| Summary::of(v));
            let mut text = match summary {
                Some(s) if s.n > 1 => format!(
                    "{} ({}–{})",
                    unit.format(s.median),
                    unit.format(s.min),
                    unit.format(s.max)
                ),
                Some(s) => unit.format(s.median),
                None if st.failed > 0 => "failed".to_string(),
                None if st.skipped > 0 => "skipped".to_string(),
                None if st.ok > 0 => "not measured".to_string(),
                None => "–".to_string(),
            };
            if summary.is_some() {
                for (k, what) in [(st.failed, "failed"), (st.skipped, "skipped")] {
                    if k > 0 {
                        text.push_str(&format!(", {k} {what}"));
                    }
                }
            }
            row.push(text);
        }
        table.rows.push(row);
    }
    table.notes.push(format!(
        "The median of the measured repeats ({better}), the smallest and largest in \
         brackets; \"failed\" or \"skipped\" where no repeat was measured (the reasons are \
         listed with the skipped and failed cells), \"–\" where no cell has run."
    ));
    table
}

/// Every cell that was skipped or failed, in run order, with its reason.
pub(crate) fn problems_table(data: &RunData) -> Table {
    let mut t = Table::new(
        "Skipped and failed cells",
        &["cell", "model", "connections", "run", "status", "reason"],
    );
    let mut cells: Vec<_> = series::latest(data)
        .into_iter()
        .filter(|c| c.status != Status::Ok)
        .collect();
    cells.sort_by_key(|c| c.cell.index);
    for c in cells {
        t.rows.push(vec![
            c.cell.id.clone(),
            c.cell.model.clone(),
            c.cell.connections.to_string(),
            c.cell.run.to_string(),
            match c.status {
                Status::Skipped => "skipped",
                Status::Failed => "failed",
                Status::Ok => "ok",
            }
            .to_string(),
            c.reason
                .clone()
                .unwrap_or_else(|| "(no reason recorded)".to_string()),
        ]);
    }
    t
}
