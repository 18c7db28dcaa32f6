//! The ranking a person reads at the end of a run, in the manner of
//! hyperfine: at each connection count, the models from best to worst by the
//! experiment's figure, each with its spread over the repeats and how many
//! times worse than the best it was, with the 95 % interval of that ratio.
//! Models whose difference is not significant share a rank and read "tied
//! with best" ([`crate::stats::compare`] holds the rule); with a single run
//! nothing is tested and the table says so. Costs a bootstrap per model and
//! connection count (milliseconds).

use std::collections::BTreeMap;

use super::cell::Status;
use super::matrix::Primary;
use super::results::RunData;
use crate::export::table::Table;
use crate::present::units::sig3;
use crate::stats::compare::{self, Comparison, Sample, Verdict};
use crate::stats::Summary;

/// The primary figure's values of every (model, connections) that has any,
/// in plan order of models.
pub(crate) fn primary_values(data: &RunData) -> BTreeMap<usize, Vec<(String, Vec<f64>)>> {
    let mut out: BTreeMap<usize, Vec<(String, Vec<f64>)>> = BTreeMap::new();
    for &n in &data.plan.connections {
        for model in &data.plan.models {
            let values: Vec<f64> = data
                .cells
                .iter()
                .filter(|c| c.cell.model == *model && c.cell.connections == n)
                .filter_map(|c| c.metrics().primary(data.plan.primary))
                .filter(|v| v.is_finite())
                .collect();
            if !values.is_empty() {
                out.entry(n).or_default().push((model.clone(), values));
            }
        }
    }
    out
}

/// One model's place at one connection count.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Ranked {
    pub model: String,
    pub summary: Summary,
    /// 1 + the models significantly better; `None` when untested (a single
    /// run, or no positive value).
    pub rank: Option<usize>,
    /// How many times worse than the first row, with its interval; `None`
    /// for the first row.
    pub versus_best: Option<Comparison>,
}

/// The models at each connection count, best first, ties sharing a rank.
pub(crate) fn standings(data: &RunData) -> BTreeMap<usize, Vec<Ranked>> {
    let higher = data.plan.primary.higher_is_better();
    primary_values(data)
        .into_iter()
        .map(|(n, rows)| {
            let mut testable = Vec::new();
            let mut samples = Vec::new();
            let mut rest = Vec::new();
            for (model, values) in rows {
                let Some(summary) = Summary::of(&values) else {
                    continue;
                };
                match Sample::new(&values) {
                    Some(s) => {
                        testable.push((model, summary));
                        samples.push(s);
                    }
                    None => rest.push(Ranked {
                        model,
                        summary,
                        rank: None,
                        versus_best: None,
                    }),
                }
            }
            let mut out: Vec<Ranked> = compare::standings(&samples, higher)
                .into_iter()
                .map(|st| Ranked {
                    model: testable[st.index].0.clone(),
                    summary: testable[st.index].1,
                    rank: st.rank,
                    versus_best: st.versus_best,
                })
                .collect();
            out.extend(rest);
            (n, out)
        })
        .collect()
}

/// `1.42`, `0.973`, `120`: a ratio to three significant digits, at least
/// two decimals below 10.
pub fn times(x: f64) -> String {
    if x.is_finite() && x.abs() < 10.0 {
        format!("{x:.2}")
    } else {
        sig3(x)
    }
}

/// The word for "worse" under this figure.
fn worse_word(p: Primary) -> &'static str {
    if p.higher_is_better() {
        "slower"
    } else {
        "longer"
    }
}

/// What the "vs best" column says of a row: `best`, `tied with best
/// (0.97–1.05×)`, `1.42× slower (1.31–1.55×)`, or `1.42× slower (untested:
/// 1 run)`.
/// `first`: the row is the table's first.
pub(crate) fn versus_text(p: Primary, row: &Ranked, first: bool) -> String {
    let Some(c) = row.versus_best else {
        return match (first, row.rank) {
            (true, Some(_)) => "best".into(),
            (true, None) => "best median (untested)".into(),
            // No positive value: nothing to take a ratio of.
            (false, _) => "untested: no positive value".into(),
        };
    };
    let span = |(lo, hi): (f64, f64)| format!("{}–{}×", times(lo), times(hi));
    match (c.verdict, c.interval) {
        (Verdict::Tied, Some(i)) => format!("tied with best ({})", span(i)),
        (Verdict::Different, Some(i)) => {
            format!("{}× {} ({})", times(c.ratio), worse_word(p), span(i))
        }
        _ => format!(
            "{}× {} (untested: {})",
            times(c.ratio),
            worse_word(p),
            if row.summary.n < 2 {
                "1 run"
            } else {
                "best had 1 run"
            }
        ),
    }
}

/// The rule, in one sentence under every ranking.
pub(crate) const RULE: &str = "Rank: 1 + the models significantly better; tied: the 95 % interval \
    of the ratio of medians holds 1 (bootstrap and Welch's t, both).";

/// One table per connection count, models ranked best first.
pub fn ranking(data: &RunData) -> Vec<Table> {
    let p = data.plan.primary;
    let mut tables = Vec::new();
    for (n, rows) in standings(data) {
        let untested = rows.iter().all(|r| r.rank.is_none());
        let mut t = Table::new(
            format!(
                "{} {}: {} ({} is better){}",
                crate::present::units::format_count(n as f64),
                data.plan.size_label,
                p.label(),
                if p.higher_is_better() {
                    "higher"
                } else {
                    "lower"
                },
                if untested {
                    format!(
                        "; {}: order not tested",
                        if rows.iter().all(|r| r.summary.n == 1) {
                            "1 run"
                        } else {
                            "too few runs"
                        }
                    )
                } else {
                    String::new()
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
        for (i, row) in rows.iter().enumerate() {
            let s = row.summary;
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
                row.rank.map_or_else(|| "–".into(), |r| r.to_string()),
                row.model.clone(),
                p.format(s.median),
                p.format(s.stdev),
                format!("{} … {}", p.format(s.min), p.format(s.max)),
                format!("{}{outliers}", s.n),
                versus_text(p, row, i == 0),
            ]);
        }
        t.notes.push(RULE.into());
        let missing: Vec<String> = data
            .plan
            .models
            .iter()
            .filter(|m| !rows.iter().any(|r| r.model == **m))
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
