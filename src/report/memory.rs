//! The memory-per-connection chart: for user (PSS), virtual and kernel
//! memory, each model's cells that resolve a cost (median and range over
//! the repeats at each connection count), and the model's slope over the
//! whole run ([`crate::analysis::memory`]) as a dashed level line. Nothing is
//! dropped silently: cells below what one sample resolves are listed under
//! the chart with their bound, resolved values at or below zero (which a
//! log axis cannot show) are counted there too, and the slopes with their
//! intervals are in a table under the chart. Cost: a pass over the results
//! per kind of memory and model.

use std::collections::BTreeMap;

use super::charts::{Line, Panel, Point};
use super::figures::Chart;
use crate::analysis::memory::{self, CellDelta, Kind};
use crate::present::units::Unit;
use crate::results::dir::RunData;
use crate::results::series;
use crate::stats::fit::PowerLaw;
use crate::stats::Summary;

/// The chart, or why there is none.
pub fn chart(data: &RunData) -> Chart {
    let title = "Memory per connection".to_string();
    let models = series::models(data);
    let mut has_data = vec![false; models.len()];
    let mut panels = Vec::new();
    let mut below: Vec<String> = Vec::new();
    let mut negative: Vec<String> = Vec::new();
    let mut any_cell = false;
    let mut empty: Vec<&str> = Vec::new();
    for kind in Kind::ALL {
        let deltas = memory::deltas(data, kind);
        any_cell |= !deltas.is_empty();
        let slopes = memory::slopes(data, kind);
        let mut lines = Vec::new();
        let mut below_here: Vec<String> = Vec::new();
        let mut negative_here = 0;
        for (i, model) in models.iter().enumerate() {
            let mine: Vec<&CellDelta> = deltas.iter().filter(|d| d.model == *model).collect();
            let mut by_n: BTreeMap<usize, Vec<&CellDelta>> = BTreeMap::new();
            for d in &mine {
                by_n.entry(d.connections).or_default().push(d);
            }
            let mut points = Vec::new();
            let mut unresolved: Vec<String> = Vec::new();
            for (n, cells) in &by_n {
                let resolved: Vec<f64> = cells
                    .iter()
                    .filter(|d| d.resolved())
                    .map(|d| d.per_connection_kib())
                    .collect();
                let positive: Vec<f64> = resolved.iter().copied().filter(|v| *v > 0.0).collect();
                negative_here += resolved.len() - positive.len();
                let short = cells.len() - resolved.len();
                if short > 0 {
                    let bound = cells.iter().map(|d| d.bound_kib()).fold(0.0, f64::max);
                    let runs = match (short, cells.len()) {
                        (1, 1) => String::new(),
                        (k, all) if k == all => format!("{k} runs, "),
                        (k, all) => format!("{k} of {all} runs, "),
                    };
                    unresolved.push(format!(
                        "{} ({runs}≤ {})",
                        crate::present::units::format_count(*n as f64),
                        crate::present::units::kib(bound)
                    ));
                }
                if let Some(s) = Summary::of(&positive) {
                    points.push(Point {
                        x: *n as f64,
                        median: s.median,
                        min: s.min,
                        max: s.max,
                    });
                }
            }
            if !unresolved.is_empty() {
                below_here.push(format!("{model} at {}", unresolved.join(", ")));
            }
            // The slope as a level across the counts it was fitted over.
            let level = slopes
                .iter()
                .find(|s| s.model == *model)
                .and_then(|s| s.fit)
                .filter(|f| f.slope_lo > 0.0);
            if points.is_empty() && level.is_none() {
                continue;
            }
            has_data[i] = true;
            lines.push(Line {
                entry: i,
                points,
                fit: level.map(|f| PowerLaw {
                    a: f.slope,
                    exponent: 0.0,
                    r2: 1.0,
                    points: f.points,
                }),
                fit_span: level.map(|f| (f.x_min, f.x_max)),
                bound: Vec::new(),
            });
        }
        if !below_here.is_empty() {
            below.push(format!("{}: {}", kind.label(), below_here.join("; ")));
        }
        if negative_here > 0 {
            negative.push(format!("{} in {}", negative_here, kind.label()));
        }
        if lines.is_empty() {
            empty.push(kind.label());
        } else {
            panels.push(Panel {
                title: kind.label().to_string(),
                y_label: "KiB per connection".to_string(),
                unit: Unit::Count,
                lines,
                guides: Vec::new(),
                band: None,
            });
        }
    }
    if !any_cell {
        return Chart::Skipped {
            title,
            why: "no measured cell held its connections (churn and micro-benchmarks have no \
                  memory per connection)"
                .into(),
        };
    }
    let mut caption = vec![
        "What each connection added to the server: with every connection up minus just after \
         start, over the connections. User memory is PSS of anonymous pages (a page shared by \
         forked processes counted once), virtual size shows thread stacks, kernel memory is \
         slab plus TCP buffers, system-wide, both ends of each loopback connection. Points are \
         the cells that resolve a cost (median and range of the repeats), fixed costs divided \
         by the connections included; the dashed level is \
         the model's slope of memory against connections over every measured cell, the best \
         estimate where one cell cannot resolve it, drawn where its 95 % interval is above \
         zero; the table under the chart gives every slope with its interval."
            .to_string(),
    ];
    for kind in &empty {
        caption.push(format!(
            "No {kind} panel: no cell resolves a cost and no slope is known to be above zero."
        ));
    }
    if !below.is_empty() {
        caption.push(format!(
            "Below resolution, not drawn (a page per process, or the kernel's per-CPU batches, \
             over the connections; they count in the slopes): {}.",
            below.join(". ")
        ));
    }
    if !negative.is_empty() {
        caption.push(format!(
            "Not drawn, as a log axis cannot show values at or below zero (memory returned \
             while the connections were up): {}.",
            negative.join(", ")
        ));
    }
    if panels.is_empty() {
        return Chart::Skipped {
            title,
            why: format!(
                "no cell resolves a cost and no slope is known to be above zero; {}",
                caption[1 + empty.len()..].join(" ")
            ),
        };
    }
    let measured = super::figures::measured(data, &models);
    let legend = super::figures::legend(&models, &has_data, |i, model| {
        match (has_data[i], measured[i]) {
            (true, _) => model.clone(),
            (false, true) => format!("{model}: nothing resolved"),
            (false, false) => format!("{model}: no measured cell"),
        }
    });
    Chart::Drawn {
        id: "memory",
        title,
        caption,
        figure: super::figures::over_sizes(data, panels, legend),
        tables: memory::table(data).into_iter().collect(),
    }
}
