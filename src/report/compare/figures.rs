//! The charts of the comparison's page, drawn from the [`Comparison`]
//! alone, per work profile: the figure that ranks, BASE and NEW, against
//! connections; NEW/BASE with its 95 % interval against the margin; and
//! the latency spectra of the cells that moved (at most [`MAX_SPECTRA`] a
//! profile, in rows of three). A model keeps its look from the report
//! (its colour and marker); its BASE line is dashed in a paler shade of
//! its colour. Cost: one pass over the cells per chart.

use crate::analysis::summary::margin_text;
use crate::compare::report::{Capacity, Cell, Comparison, Curve};
use crate::present::look::{Dash, Look};
use crate::present::units::{format_count, Unit};
use crate::report::charts::{self, Entry, Figure, Line, Panel, Point, XFormat};
use crate::report::figures::Chart;
use crate::results::matrix::Primary;

/// Most latency spectra in one profile's figure; the rest are named.
pub const MAX_SPECTRA: usize = 12;

/// Whether a cell's latency did not move at any tested quantile
/// (`equivalent throughout`, or `equivalent at p50, p90 and p99 (p99.9
/// untested)`).
fn equivalent(shift: &str) -> bool {
    shift.starts_with("equivalent")
}

/// The look of a model the comparison does not have (never drawn: every
/// cell's model has its own).
const FALLBACK: Look = Look {
    color: plotters::style::RGBColor(0x55, 0x55, 0x55),
    marker: crate::present::look::Marker::Circle,
    dash: Dash::Solid,
};

/// The models of the comparison, in order, with their looks (one look per
/// model on the whole page, as in a run's report).
fn looks(c: &Comparison) -> Vec<(String, Look)> {
    let mut models: Vec<String> = Vec::new();
    let named = c.cells.iter().map(|k| &k.model);
    for model in named.chain(c.capacity.iter().map(|k| &k.model)) {
        if !models.contains(model) {
            models.push(model.clone());
        }
    }
    let looks = crate::present::look::looks(&crate::server::names(), &models);
    models.into_iter().zip(looks).collect()
}

/// A model's look for BASE: its colour halfway to grey, and dashed
/// (dotted when its own line is already dashed).
fn base_look(look: Look) -> Look {
    let grey = |v: u8| (f64::from(v) * 0.5 + 190.0 * 0.5).round() as u8;
    let plotters::style::RGBColor(r, g, b) = look.color;
    Look {
        color: plotters::style::RGBColor(grey(r), grey(g), grey(b)),
        marker: look.marker,
        dash: if look.dash == Dash::Solid {
            Dash::Dashed
        } else {
            Dash::Dotted
        },
    }
}

/// `, work cpu:1ms`; empty without a work axis.
fn under(work: Option<&str>) -> String {
    work.map_or_else(String::new, |w| format!(", work {w}"))
}

/// The connection counts of `cells`, ascending.
fn counts(cells: &[&Cell]) -> Vec<f64> {
    let mut n: Vec<usize> = cells.iter().map(|c| c.connections).collect();
    n.sort_unstable();
    n.dedup();
    n.into_iter().map(|n| n as f64).collect()
}

/// A median and range as a point, when the median can sit on a log axis.
fn point(x: f64, median: Option<f64>, min: Option<f64>, max: Option<f64>) -> Option<Point> {
    let m = median.filter(|m| m.is_finite() && *m > 0.0)?;
    Some(Point {
        x,
        median: m,
        min: min.filter(|v| v.is_finite() && *v > 0.0).unwrap_or(m),
        max: max.filter(|v| v.is_finite() && *v > 0.0).unwrap_or(m),
    })
}

/// The ranking figure's axis: its label and unit (a ratio to the
/// reference when there is one).
fn axis(c: &Comparison) -> (String, Unit) {
    if let Some(r) = &c.reference {
        return (format!("{} over {r}'s", c.primary.label), Unit::Count);
    }
    match c.primary.figure {
        Primary::Time => ("time".into(), Unit::Seconds),
        Primary::Latency => ("p99 latency".into(), Unit::Micros),
        Primary::Throughput => ("round trips per second".into(), Unit::Count),
        Primary::AcceptRate => ("connections per second".into(), Unit::Count),
    }
}

/// A cell of either kind, by its model.
trait Named {
    fn model(&self) -> &str;
}

impl Named for Cell {
    fn model(&self) -> &str {
        &self.model
    }
}

impl Named for Capacity {
    fn model(&self) -> &str {
        &self.model
    }
}

/// Lines for BASE and NEW of each model that has a point on either side,
/// with their legend; `points` gives a cell's side's points.
fn paired_lines<T: Named>(
    c: &Comparison,
    cells: &[&T],
    skip: Option<&str>,
    points: impl Fn(&T, bool) -> Vec<Point>,
    missing: &str,
) -> (Vec<Line>, Vec<Entry>) {
    let mut lines = Vec::new();
    let mut legend = Vec::new();
    for (model, look) in looks(c) {
        if skip == Some(model.as_str()) {
            continue;
        }
        let mine: Vec<&&T> = cells.iter().filter(|k| k.model() == model).collect();
        if mine.is_empty() {
            continue;
        }
        for (new, side, look) in [(false, "BASE", base_look(look)), (true, "NEW", look)] {
            let pts: Vec<Point> = mine.iter().flat_map(|k| points(k, new)).collect();
            let has_data = !pts.is_empty();
            if has_data {
                lines.push(Line {
                    entry: legend.len(),
                    points: pts,
                    fit: None,
                    fit_span: None,
                    bound: Vec::new(),
                });
            }
            legend.push(Entry {
                look,
                text: if has_data {
                    format!("{model} ({side})")
                } else {
                    format!("{model} ({side}): {missing}")
                },
                has_data,
            });
        }
    }
    (lines, legend)
}

/// The figure that ranks, BASE and NEW, against connections.
pub fn before_after(c: &Comparison, work: Option<&str>, cells: &[&Cell]) -> Chart {
    let title = format!(
        "Before and after: {} against connections{}",
        c.primary.label,
        under(work)
    );
    // The reference's own cells stay as measured: another unit, so not in
    // a chart of ratios to it.
    let skip = c.reference.as_deref();
    let (lines, legend) = paired_lines(
        c,
        cells,
        skip,
        |k, new| {
            let r = if new { &k.primary.new } else { &k.primary.base };
            point(k.connections as f64, r.median, r.min, r.max)
                .into_iter()
                .collect()
        },
        "not measured",
    );
    if lines.is_empty() {
        return Chart::Skipped {
            title,
            why: "no cell has the figure above zero on either side".into(),
        };
    }
    let (y_label, unit) = axis(c);
    let mut caption = vec![format!(
        "The {} of each model at each connection count on both sides ({} is better): each \
         line runs through the medians of a model's runs, its whiskers from the smallest to \
         the largest run. NEW is drawn solid in the model's colour, BASE dashed in a paler \
         shade of it, so a gap between a model's two lines is the change; overlapping \
         whiskers mean the runs alone may not tell the two apart (the next chart tests it).",
        c.primary.label,
        if c.primary.higher_is_better {
            "higher"
        } else {
            "lower"
        }
    )];
    if let Some(r) = &c.reference {
        caption.push(format!(
            "Each value is a ratio to {r} in the same round (so drift the two sessions share \
             cancels); {r} itself, measured in its own unit, is not drawn."
        ));
    }
    if counts(cells).len() == 1 {
        caption.push("One connection count: a point per side, no line.".into());
    }
    Chart::Drawn {
        id: "before-after",
        title: title.clone(),
        caption,
        figure: Figure {
            panels: vec![Panel {
                title: format!("{}: BASE and NEW", c.primary.label),
                y_label,
                unit,
                lines,
                guides: Vec::new(),
                band: None,
            }],
            legend,
            x_ticks: counts(cells),
            x_label: "connections".into(),
            x_format: XFormat::Count,
            columns: None,
        },
        tables: Vec::new(),
    }
}

/// Two capacity searches: each model's highest rate held, its whisker up
/// to the lowest it missed, BASE and NEW, against connections.
pub fn capacity(c: &Comparison, work: Option<&str>, cells: &[&Capacity]) -> Chart {
    let title = format!(
        "Before and after: {} against connections{}",
        c.primary.label,
        under(work)
    );
    let (lines, legend) = paired_lines(
        c,
        cells,
        None,
        |k, new| {
            let b = if new { &k.new } else { &k.base };
            let held = b.held;
            point(k.connections as f64, held, held, b.missed.or(held))
                .into_iter()
                .collect()
        },
        "held no rate, decided",
    );
    if lines.is_empty() {
        return Chart::Skipped {
            title,
            why: "no search held a rate, decided, on either side".into(),
        };
    }
    let mut n: Vec<f64> = cells.iter().map(|k| k.connections as f64).collect();
    n.sort_by(f64::total_cmp);
    n.dedup();
    let mut caption = vec![format!(
        "Each model's capacity at the target on both sides: the point is the highest offered \
         rate its search held, decided, and the whisker runs up to the lowest it missed (none \
         where it held every rate tried); its capacity lies within. NEW is drawn solid in the \
         model's colour, BASE dashed in a paler shade; a search that held no rate is not \
         drawn. Whiskers that overlap mean the searches alone do not tell the two apart \
         (the table below says which do, against {}).",
        margin_text(c.margin)
    )];
    if n.len() == 1 {
        caption.push("One connection count: a point per side, no line.".into());
    }
    Chart::Drawn {
        id: "capacity-before-after",
        title,
        caption,
        figure: Figure {
            panels: vec![Panel {
                title: format!("{}: BASE and NEW", c.primary.label),
                y_label: "offered rate held (/s)".into(),
                unit: Unit::Count,
                lines,
                guides: Vec::new(),
                band: None,
            }],
            legend,
            x_ticks: n,
            x_label: "connections".into(),
            x_format: XFormat::Count,
            columns: None,
        },
        tables: Vec::new(),
    }
}

/// NEW/BASE of the figure that ranks, with its 95 % interval, against
/// connections, over the margin.
pub fn ratios(c: &Comparison, work: Option<&str>, cells: &[&Cell]) -> Chart {
    let title = format!(
        "NEW/BASE of {} against connections{}",
        c.primary.label,
        under(work)
    );
    let mut lines = Vec::new();
    let mut legend = Vec::new();
    for (model, look) in looks(c) {
        let pts: Vec<Point> = cells
            .iter()
            .filter(|k| k.model == model)
            .filter_map(|k| {
                let f = &k.primary;
                let (lo, hi) = f.interval.unzip();
                point(k.connections as f64, f.ratio, lo, hi)
            })
            .collect();
        if !cells.iter().any(|k| k.model == model) {
            continue;
        }
        let has_data = !pts.is_empty();
        if has_data {
            lines.push(Line {
                entry: legend.len(),
                points: pts,
                fit: None,
                fit_span: None,
                bound: Vec::new(),
            });
        }
        let reference = c.reference.as_deref() == Some(model.as_str());
        legend.push(Entry {
            look,
            text: match (has_data, reference) {
                (false, _) => format!("{model}: no ratio"),
                (true, true) => format!("{model} (the reference)"),
                (true, false) => model,
            },
            has_data,
        });
    }
    if lines.is_empty() {
        return Chart::Skipped {
            title,
            why: "no cell was measured on both sides".into(),
        };
    }
    let m = 1.0 + c.margin;
    let (worse, better) = (&c.primary.worse, &c.primary.better);
    let (above, below) = if c.primary.higher_is_better {
        (better, worse)
    } else {
        (worse, better)
    };
    let mut caption = vec![
        format!(
            "Each point is NEW/BASE of the {} for one model at one connection count (the \
             ratio of the runs' geometric means), its whisker the 95 % interval (Welch's t on \
             the logarithms). Above the line at 1 NEW is {above}, below it {below}. The shaded \
             band is the margin ({}): a whisker wholly inside it is equivalent, wholly beyond \
             it {worse} or {better}; one that crosses the band's edge is inconclusive.",
            c.primary.label,
            margin_text(c.margin)
        ),
        "A point without a whisker had a single run on a side: untested.".into(),
    ];
    if let Some(r) = &c.reference {
        caption.push(format!(
            "Every figure but {r}'s own was first divided by {r}'s in the same round."
        ));
    }
    let gated: Vec<String> = cells
        .iter()
        .filter(|k| k.gate_failed)
        .map(|k| format!("{} at {}", k.model, format_count(k.connections as f64)))
        .collect();
    if !gated.is_empty() {
        caption.push(format!("Failing the gate: {}.", gated.join(", ")));
    }
    Chart::Drawn {
        id: "ratio",
        title,
        caption,
        figure: Figure {
            panels: vec![Panel {
                title: "NEW / BASE".into(),
                y_label: "NEW / BASE".into(),
                unit: Unit::Count,
                lines,
                guides: vec![1.0],
                band: Some((1.0 / m, m)),
            }],
            legend,
            x_ticks: counts(cells),
            x_label: "connections".into(),
            x_format: XFormat::Count,
            columns: None,
        },
        tables: Vec::new(),
    }
}

/// A curve's points on the nines axis.
fn curve_points(curve: &Curve) -> Vec<Point> {
    curve
        .points
        .iter()
        .filter(|(q, _)| (0.0..1.0).contains(q))
        .filter_map(|&(q, us)| point(charts::nines(q), Some(us), None, None))
        .collect()
}

/// How much a cell's latency moved, for choosing spectra: a shift found
/// first, then cells not told apart or untested, then equivalent ones.
fn rank(cell: &Cell) -> u8 {
    match cell.shift.as_str() {
        s if equivalent(s) => 2,
        s if s.starts_with("longer") || s.starts_with("shorter") => 0,
        _ => 1,
    }
}

/// Where the curves came from, in a sentence.
fn sources(shown: &[&Cell]) -> String {
    let says = |s: &str| match s {
        "hdr" => "the full latency histograms of every run (c10k load --hdr), merged",
        _ => "the quantiles each run recorded (p50, p90, p99, p99.9), the median over the runs",
    };
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for k in shown {
        for (side, curve) in [("BASE", &k.curve.base), ("NEW", &k.curve.new)] {
            if !curve.points.is_empty() && !seen.contains(&(side, curve.source.as_str())) {
                seen.push((side, curve.source.as_str()));
            }
        }
    }
    let all_one = seen.windows(2).all(|w| w[0].1 == w[1].1);
    match seen.first() {
        None => String::new(),
        Some((_, s)) if all_one => format!("The curves are drawn from {}.", says(s)),
        _ => {
            let each: Vec<String> = seen
                .iter()
                .map(|(side, s)| format!("{side} from {}", says(s)))
                .collect();
            format!(
                "The curves come from different sources, so read their tails with care: {}.",
                each.join("; ")
            )
        }
    }
}

/// The latency spectra of the profile's cells that moved most, BASE and
/// NEW in each panel.
pub fn spectra(c: &Comparison, work: Option<&str>, cells: &[&Cell]) -> Chart {
    let title = format!("Latency spectra, BASE and NEW{}", under(work));
    let drawable: Vec<&Cell> = cells
        .iter()
        .copied()
        .filter(|k| !k.curve.base.points.is_empty() || !k.curve.new.points.is_empty())
        .collect();
    let mut order: Vec<usize> = (0..drawable.len()).collect();
    order.sort_by_key(|&i| rank(drawable[i]));
    let mut keep: Vec<usize> = order.iter().copied().take(MAX_SPECTRA).collect();
    keep.sort_unstable();
    let shown: Vec<&Cell> = keep.iter().map(|&i| drawable[i]).collect();
    let left: Vec<&Cell> = order
        .iter()
        .skip(MAX_SPECTRA)
        .map(|&i| drawable[i])
        .collect();
    if shown.is_empty() {
        return Chart::Skipped {
            title,
            why: "no cell has a latency curve on either side".into(),
        };
    }
    let looks = looks(c);
    let mut legend: Vec<Entry> = Vec::new();
    let mut panels = Vec::new();
    // A side of a model's place in the legend, added when first drawn.
    let entry_of = |model: &str, new: bool, legend: &mut Vec<Entry>| -> usize {
        let side = if new { "NEW" } else { "BASE" };
        let text = format!("{model} ({side})");
        if let Some(i) = legend.iter().position(|e| e.text == text) {
            return i;
        }
        let look = looks
            .iter()
            .find(|(m, _)| m == model)
            .map_or(FALLBACK, |(_, l)| *l);
        legend.push(Entry {
            look: if new { look } else { base_look(look) },
            text,
            has_data: true,
        });
        legend.len() - 1
    };
    let mut x_max: f64 = 2.0;
    for k in &shown {
        let mut lines = Vec::new();
        for (new, curve) in [(false, &k.curve.base), (true, &k.curve.new)] {
            let points = curve_points(curve);
            if points.is_empty() {
                continue;
            }
            x_max = points.iter().map(|p| p.x).fold(x_max, f64::max);
            lines.push(Line {
                entry: entry_of(&k.model, new, &mut legend),
                points,
                fit: None,
                fit_span: None,
                bound: Vec::new(),
            });
        }
        panels.push(Panel {
            title: format!("{} at {}", k.model, format_count(k.connections as f64)),
            y_label: "latency".into(),
            unit: Unit::Micros,
            lines,
            guides: Vec::new(),
            band: None,
        });
    }
    // p50, p90, p99, … as far as the curves reach.
    let x_ticks: Vec<f64> = std::iter::once(2.0)
        .chain((1..=9).map(|e| 10f64.powi(e)))
        .take_while(|x| *x <= x_max * 1.000_001)
        .collect();
    // The shifts, each with its cells: `longer throughout for threads at
    // 10, threads at 100`.
    let mut shifts: Vec<(&str, Vec<String>)> = Vec::new();
    for k in &shown {
        let at = format!("{} at {}", k.model, format_count(k.connections as f64));
        match shifts.iter_mut().find(|(s, _)| *s == k.shift) {
            Some((_, cells)) => cells.push(at),
            None => shifts.push((k.shift.as_str(), vec![at])),
        }
    }
    let shifts: Vec<String> = shifts
        .iter()
        .map(|(s, cells)| format!("{s} for {}", cells.join(", ")))
        .collect();
    let mut caption = vec![
        format!(
            "The round trip's latency (up, log) at each quantile (across) of {} cell{}, one \
             panel each, BASE dashed and paler, NEW solid. The quantiles run by their nines, \
             1/(1−q) on a log axis, so p90 to p99 is as wide as p50 to p90 and the tail is \
             not squeezed into the right edge; where NEW lies above BASE its echoes took \
             longer at that quantile.",
            shown.len(),
            if shown.len() == 1 { "" } else { "s" }
        ),
        sources(&shown),
        format!(
            "The latency's shift, each quantile tested at 95 % within {}: {}.",
            margin_text(c.margin),
            shifts.join("; ")
        ),
    ];
    if !left.is_empty() {
        let names: Vec<String> = left
            .iter()
            .map(|k| format!("{} at {}", k.model, format_count(k.connections as f64)))
            .collect();
        let equivalent = left.iter().filter(|k| equivalent(&k.shift)).count();
        caption.push(format!(
            "Left out to keep the page readable: {} cell{} ({} of {} equivalent at every \
             quantile tested), \
             {}; the latency table above gives their p50, p99 and shift.",
            left.len(),
            if left.len() == 1 { "" } else { "s" },
            equivalent,
            left.len(),
            names.join(", ")
        ));
    }
    let without = cells.len() - drawable.len();
    if without > 0 {
        caption.push(format!(
            "{without} cell{} had no latency on either side and {} not drawn.",
            if without == 1 { "" } else { "s" },
            if without == 1 { "is" } else { "are" }
        ));
    }
    // Rows of three: a panel stays wide enough to read its quantiles.
    let columns = Some(3);
    Chart::Drawn {
        id: "spectra",
        title,
        caption,
        figure: Figure {
            panels,
            legend,
            x_ticks,
            x_label: "quantile".into(),
            x_format: XFormat::Nines,
            columns,
        },
        tables: Vec::new(),
    }
}
