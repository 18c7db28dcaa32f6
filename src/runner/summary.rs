//! The ranking a person reads at the end of a run, in the manner of
//! hyperfine: at each connection count, the models from best to worst by the
//! experiment's figure, each with its spread over the repeats and how many
//! times worse than the best it was.

use std::collections::BTreeMap;

use super::cell::Status;
use super::results::RunData;
use crate::export::table::Table;
use crate::stats::{self, Summary};

/// The primary figure of every (model, connections) over its measured
/// repeats, in plan order of models.
pub fn primary_by_cell(data: &RunData) -> BTreeMap<usize, Vec<(String, Summary)>> {
    let mut out: BTreeMap<usize, Vec<(String, Summary)>> = BTreeMap::new();
    for &n in &data.plan.connections {
        for model in &data.plan.models {
            let values: Vec<f64> = data
                .cells
                .iter()
                .filter(|c| c.cell.model == *model && c.cell.connections == n)
                .filter_map(|c| c.metrics().primary(data.plan.primary))
                .collect();
            if let Some(s) = Summary::of(&values) {
                out.entry(n).or_default().push((model.clone(), s));
            }
        }
    }
    out
}

/// One table per connection count, models ranked best first.
pub fn ranking(data: &RunData) -> Vec<Table> {
    let p = data.plan.primary;
    let mut tables = Vec::new();
    for (n, mut rows) in primary_by_cell(data) {
        rows.sort_by(|a, b| {
            let o = a.1.median.total_cmp(&b.1.median);
            if p.higher_is_better() {
                o.reverse()
            } else {
                o
            }
        });
        let best = rows[0].1;
        let mut t = Table::new(
            format!(
                "{} {}: {} ({} is better)",
                crate::runner::matrix::format_count(n as f64),
                data.plan.size_label,
                p.label(),
                if p.higher_is_better() {
                    "higher"
                } else {
                    "lower"
                }
            ),
            &[
                "#",
                "model",
                "median",
                "± stdev",
                "min … max",
                "runs",
                "vs best",
            ],
        );
        for (i, (model, s)) in rows.iter().enumerate() {
            let versus = if i == 0 {
                "best".to_string()
            } else {
                // How many times worse than the best, with its spread.
                let (r, e) = if p.higher_is_better() {
                    stats::ratio(&best, s)
                } else {
                    stats::ratio(s, &best)
                }
                .unwrap_or((f64::NAN, 0.0));
                format!(
                    "{r:.2} ± {e:.2}× {}",
                    if p.higher_is_better() {
                        "slower"
                    } else {
                        "longer"
                    }
                )
            };
            let outliers = if s.outliers > 0 {
                format!(
                    " ({} outlier{})",
                    s.outliers,
                    if s.outliers == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            };
            t.rows.push(vec![
                (i + 1).to_string(),
                model.clone(),
                p.format(s.median),
                p.format(s.stdev),
                format!("{} … {}", p.format(s.min), p.format(s.max)),
                format!("{}{outliers}", s.n),
                versus,
            ]);
        }
        let missing: Vec<String> = data
            .plan
            .models
            .iter()
            .filter(|m| !rows.iter().any(|(r, _)| r == *m))
            .filter_map(|m| {
                let why = data.cells.iter().find(|c| {
                    c.cell.model == *m && c.cell.connections == n && c.status != Status::Ok
                })?;
                Some(format!(
                    "{m}: {} ({})",
                    match why.status {
                        Status::Skipped => "skipped",
                        _ => "failed",
                    },
                    why.reason.as_deref().unwrap_or("no reason recorded")
                ))
            })
            .collect();
        t.notes.extend(missing);
        tables.push(t);
    }
    tables
}
