//! The answer first: for each connection count, the models tied for best by
//! the experiment's primary figure, and what each model costs there, in the
//! spirit of hyperfine's summary: how many times worse than the best (with
//! the 95 % interval of that ratio, [`crate::stats::compare`]), its p99
//! latency, its memory per connection (the slope over the whole run,
//! [`super::memory`]), and the server's CPU per message. Printed last by
//! `c10k run` and shown first in `report.html`. Costs what the ranking
//! costs (a bootstrap per model and connection count).

use super::cell::{CellResult, Metrics, Status};
use super::memory::{self, Kind};
use super::results::RunData;
use super::summary::{self, Ranked};
use crate::export::table::Table;
use crate::present::units::Unit;
use crate::stats::Summary;

/// What limited a model at one connection count (its measured cells
/// there): the verdict most of its runs had (`client` marked as a lower
/// bound of the server), how many runs disagreed, and how many saw
/// interference from outside the run. `None` when no cell recorded one.
pub(crate) fn limit_note(cells: &[&CellResult]) -> Option<String> {
    let limits: Vec<&crate::client::limit::Limits> = cells
        .iter()
        .filter(|c| c.status == Status::Ok)
        .filter_map(|c| c.load.as_ref().map(|l| &l.limits))
        .filter(|l| l.why != "not recorded")
        .collect();
    if limits.is_empty() {
        return None;
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for l in &limits {
        match counts.iter_mut().find(|(v, _)| *v == l.verdict) {
            Some((_, k)) => *k += 1,
            None => counts.push((&l.verdict, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let (verdict, k) = counts[0];
    let mut note = if k * 2 <= limits.len() {
        // No majority: every verdict with its count.
        let each: Vec<String> = counts.iter().map(|(v, k)| format!("{v} {k}")).collect();
        format!("mixed: {}", each.join(", "))
    } else {
        match verdict {
            "client" => "client (a lower bound)".to_string(),
            v => v.to_string(),
        }
    };
    if k < limits.len() && k * 2 > limits.len() {
        note += &format!(" in {k} of {} runs", limits.len());
    }
    let noisy = limits.iter().filter(|l| l.interference).count();
    if noisy > 0 {
        note += &format!("; interference in {noisy} of {}", limits.len());
    }
    Some(note)
}

/// One table per connection count: the best first, then every model with
/// its cost; the last carries the notes. Columns no model has a figure for
/// are left out.
pub fn tables(data: &RunData) -> Vec<Table> {
    let p = data.plan.primary;
    let user = memory::slopes(data, Kind::User);
    let churn = data.plan.workload.kind == super::matrix::WorkloadKind::Churn;
    let mut out = Vec::new();
    for (n, rows) in summary::standings(data) {
        let cells_of = |model: &str| -> Vec<&CellResult> {
            crate::runner::series::latest(data)
                .into_iter()
                .filter(|c| c.cell.model == model && c.cell.connections == n)
                .collect()
        };
        let median = |cells: &[&CellResult], pick: fn(&Metrics) -> Option<f64>| {
            let v: Vec<f64> = cells
                .iter()
                .filter(|c| c.status == Status::Ok)
                .filter_map(|c| pick(&c.metrics()))
                .filter(|v| v.is_finite())
                .collect();
            Summary::of(&v).map(|s| s.median)
        };
        let mut header = vec![
            "model".to_string(),
            p.label().to_string(),
            "vs best".to_string(),
            "p99 latency".to_string(),
            "memory/conn".to_string(),
            if churn {
                "server CPU/conn".to_string()
            } else {
                "server CPU/msg".to_string()
            },
            "limited by".to_string(),
        ];
        let mut body: Vec<Vec<String>> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let cells = cells_of(&row.model);
            let p99 = median(&cells, |m| m.latency_p99_us).map(|v| Unit::Micros.format(v));
            let cpu = if churn {
                median(&cells, |m| m.server_cpu_per_connection_us)
            } else {
                median(&cells, |m| m.server_cpu_per_message_us)
            }
            .map(|v| Unit::Micros.format(v));
            let mem = memory_cell(data, &user, &row.model, n);
            let dash = || "–".to_string();
            // A --target's server runs outside c10k: nothing of it is seen.
            let unseen = || {
                if data.plan.targets.iter().any(|t| t.name == row.model) {
                    "not observed".to_string()
                } else {
                    dash()
                }
            };
            body.push(vec![
                row.model.clone(),
                p.format(row.summary.median),
                summary::versus_text(p, row, i == 0),
                p99.unwrap_or_else(dash),
                mem.unwrap_or_else(unseen),
                cpu.unwrap_or_else(unseen),
                limit_note(&cells).unwrap_or_else(dash),
            ]);
        }
        // Leave out the cost columns (from the fourth) no row has, and
        // the p99 when it is already the ranked figure.
        let keep: Vec<bool> = (0..header.len())
            .map(|i| {
                (i < 3 || body.iter().any(|r| r[i] != "–"))
                    && !(i == 3 && p == super::matrix::Primary::Latency)
            })
            .collect();
        header = only(header, &keep);
        out.push(Table {
            title: title(data, n, &rows),
            header,
            rows: body.into_iter().map(|r| only(r, &keep)).collect(),
            notes: Vec::new(),
        });
    }
    let costs = out.iter().any(|t| {
        t.header
            .iter()
            .any(|h| h == "memory/conn" || h.starts_with("server CPU"))
    });
    if let Some(last) = out.last_mut() {
        last.notes = notes(data, costs);
    }
    out
}

/// The cells of `row` whose column is kept.
fn only(row: Vec<String>, keep: &[bool]) -> Vec<String> {
    row.into_iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c)
        .collect()
}

/// `10 connections: epoll and poll tied for best (round trips/s, higher is
/// better)`.
fn title(data: &RunData, n: usize, rows: &[Ranked]) -> String {
    let p = data.plan.primary;
    let at = format!(
        "{} {}",
        crate::present::units::format_count(n as f64),
        data.plan.size_label
    );
    let what = format!(
        "{}, {} is better",
        p.label(),
        if p.higher_is_better() {
            "higher"
        } else {
            "lower"
        }
    );
    let best: Vec<&str> = rows
        .iter()
        .filter(|r| r.rank == Some(1))
        .map(|r| r.model.as_str())
        .collect();
    match best.as_slice() {
        [] => format!(
            "{at}: {} has the best median; {}: order not tested ({what})",
            rows.first().map_or("no model", |r| r.model.as_str()),
            if rows.iter().all(|r| r.summary.n < 2) {
                "1 run"
            } else {
                "too few runs"
            }
        ),
        [one] => format!("{at}: {one} is best ({what})"),
        many => format!("{at}: {} tied for best ({what})", and_list(many)),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A model's memory per connection: its slope over the run (`≤ X` when the
/// interval holds 0: no cost shown, at most X), or without a slope, what
/// this count's cells say ([`memory::cells_text`]).
fn memory_cell(data: &RunData, slopes: &[memory::Slope], model: &str, n: usize) -> Option<String> {
    let slope = slopes.iter().find(|s| s.model == model)?;
    if let Some(f) = &slope.fit {
        return Some(if f.includes_zero() {
            format!("≤ {}", memory::kib(f.slope_hi.max(0.0)))
        } else {
            memory::kib(f.slope)
        });
    }
    let here: Vec<memory::CellDelta> = memory::deltas(data, Kind::User)
        .into_iter()
        .filter(|d| d.model == model && d.connections == n)
        .collect();
    memory::cells_text(&here.iter().collect::<Vec<_>>())
}

/// The verdict for the terminal: a heading, one block per connection
/// count, and what the columns mean.
pub fn text(data: &RunData) -> String {
    let tables = tables(data);
    if tables.is_empty() {
        return String::new();
    }
    let mut s = String::from("Verdict\n");
    for t in &tables {
        for line in t.to_text().lines() {
            s += "  ";
            s += line;
            s += "\n";
        }
    }
    s
}

/// The tie rule, what the cost columns mean (when `costs`), and what
/// `--runs auto` could not settle.
fn notes(data: &RunData, costs: bool) -> Vec<String> {
    let mut notes = vec![summary::RULE.to_string()];
    if costs {
        notes.push(
            "Memory/conn: the slope of the server's anonymous PSS over the run's connection \
             counts (≤: no cost shown, at most that). CPU: the whole server tree over the whole \
             cell."
                .to_string(),
        );
    }
    notes.extend(super::auto::unsettled_note(&data.plan, &data.cells));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_english() {
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
    }

    #[test]
    fn the_limit_of_most_runs_is_named() {
        assert_eq!(limit_note(&[]), None);
        let cell = |verdict: &str, interference: bool| {
            let mut c: CellResult = serde_json::from_value(serde_json::json!({
                "version": 1, "id": "m/c1/r1", "index": 0, "model": "m", "connections": 1,
                "run": 1, "status": "ok", "reason": null, "started_unix": 0.0,
                "wall_seconds": 0.0, "server": null, "kernel_before": null,
                "kernel_loaded": null, "load": null, "per_connection_csv": null,
                "messages_per_connection": null
            }))
            .expect("a cell");
            let mut load = crate::client::report::example(1, 100, 6400);
            load.limits.verdict = verdict.into();
            load.limits.why = "figures".into();
            load.limits.interference = interference;
            c.load = Some(load);
            c
        };
        let (a, b, c) = (
            cell("client", false),
            cell("client", true),
            cell("server", false),
        );
        assert_eq!(
            limit_note(&[&a, &b, &c]).as_deref(),
            Some("client (a lower bound) in 2 of 3 runs; interference in 1 of 3")
        );
        assert_eq!(limit_note(&[&c]).as_deref(), Some("server"));
        let d = cell("both", false);
        assert_eq!(
            limit_note(&[&a, &c, &d]).as_deref(),
            Some("mixed: client 1, server 1, both 1")
        );
    }
}
