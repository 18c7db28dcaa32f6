//! The herd's chart (`--svg`): two log-log panels against the number of
//! workers W — connect latency (median over runs of each run's p50, µs) and
//! wakeups per connection — one line per series (a wait method, and its
//! copies of the listener when there are several: `select`, `select ×1019`,
//! `epoll-exclusive` are the study's two charts in one) with min–max
//! whiskers over the runs, and a legend under them.
//!
//! The report's chart code (`report::charts`) draws connections across; the
//! herd's x axis is workers, so this is a small chart of its own with the
//! same plotters SVG backend, colours (`present::look`) and number formats.

use anyhow::Context as _;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plan::Plan;
use super::report::{series, Row};
use crate::present::look::look;
use crate::present::units::{self, Unit};
use crate::stats::Summary;

const WIDTH: u32 = 960;
const PANEL_H: u32 = 380;
const LEGEND_ROW: i32 = 22;
const FONT: &str = "sans-serif";

/// One panel: a title, a y label and unit, and a figure of a row.
struct Panel {
    title: &'static str,
    y_label: &'static str,
    unit: Unit,
    pick: fn(&Row) -> Option<Summary>,
}

const PANELS: [Panel; 2] = [
    Panel {
        title: "connect latency (p50)",
        y_label: "connect() to writable",
        unit: Unit::Micros,
        pick: |r| r.connect_p50_us,
    },
    Panel {
        title: "wakeups per connection",
        y_label: "voluntary switches / connection",
        unit: Unit::Count,
        pick: |r| r.wakeups_per_connection,
    },
];

/// The chart of `rows` as an SVG document, a line per series of the plan.
pub fn svg(rows: &[Row], plan: &Plan) -> anyhow::Result<String> {
    let names: Vec<String> = plan
        .methods
        .iter()
        .flat_map(|m| plan.dups.iter().map(move |&d| series(m.name(), d)))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    draw(rows, &names, &plan.workers)
}

/// The chart of `rows` for the series `methods` (names as
/// [`series`] gives them) over the worker counts `workers`.
fn draw(rows: &[Row], methods: &[&str], workers: &[usize]) -> anyhow::Result<String> {
    let columns = 3usize;
    let legend_h = 14 + methods.len().div_ceil(columns) as u32 * LEGEND_ROW as u32;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (WIDTH, PANEL_H + legend_h)).into_drawing_area();
        root.fill(&WHITE).context("drawing the background")?;
        let (top, bottom) = root.split_vertically(PANEL_H);
        let areas = top.split_evenly((1, PANELS.len()));
        for (area, panel) in areas.iter().zip(&PANELS) {
            draw_panel(area, panel, rows, methods, workers)
                .with_context(|| format!("drawing the {} chart", panel.title))?;
        }
        draw_legend(&bottom, methods, columns).context("drawing the legend")?;
        root.present().context("finishing the SVG")?;
    }
    Ok(out)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw_panel(
    area: &Area<'_>,
    panel: &Panel,
    rows: &[Row],
    methods: &[&str],
    workers: &[usize],
) -> anyhow::Result<()> {
    let xs: Vec<f64> = workers.iter().map(|&w| w as f64).collect();
    let (x_lo, x_hi) = range(&xs, 1.5);
    let ys: Vec<f64> = rows
        .iter()
        .filter_map(|r| (panel.pick)(r))
        .flat_map(|s| [s.min, s.max, s.median])
        .collect();
    let (y_lo, y_hi) = range(&ys, 1.5);
    let unit = panel.unit;
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, (FONT, 16))
        .margin(10)
        .margin_right(18)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale().with_key_points(xs.clone()),
            (y_lo..y_hi).log_scale().with_key_points(ticks(y_lo, y_hi)),
        )?;
    chart
        .configure_mesh()
        .x_desc("worker processes (W)")
        .y_desc(panel.y_label)
        .x_label_formatter(&|v| units::count(*v))
        .y_label_formatter(&|v| unit.format(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .bold_line_style(BLACK.mix(0.08))
        .axis_style(BLACK.mix(0.6))
        .draw()?;
    let palette = colors(methods);
    for (i, m) in methods.iter().enumerate() {
        let color = palette[i];
        let points: Vec<(f64, Summary)> = rows
            .iter()
            .filter(|r| r.series() == *m)
            .filter_map(|r| (panel.pick)(r).map(|s| (r.workers as f64, s)))
            .filter(|(_, s)| s.median > 0.0 && s.median.is_finite())
            .collect();
        chart.draw_series(LineSeries::new(
            points.iter().map(|(x, s)| (*x, s.median)),
            color.stroke_width(2),
        ))?;
        let stroke = color.stroke_width(1);
        chart.draw_series(
            points
                .iter()
                .filter(|(_, s)| s.max > s.min && s.min > 0.0)
                .map(|(x, s)| PathElement::new(vec![(*x, s.min), (*x, s.max)], stroke)),
        )?;
        chart.draw_series(
            points
                .iter()
                .map(|(x, s)| Circle::new((*x, s.median), 4, color.filled())),
        )?;
    }
    Ok(())
}

fn draw_legend(area: &Area<'_>, methods: &[&str], columns: usize) -> anyhow::Result<()> {
    let col_w = (WIDTH as usize / columns) as i32;
    let palette = colors(methods);
    for (j, m) in methods.iter().enumerate() {
        let x = 24 + (j % columns) as i32 * col_w;
        let y = 10 + (j / columns) as i32 * LEGEND_ROW + LEGEND_ROW / 2;
        let color = palette[j];
        area.draw(&PathElement::new(
            vec![(x, y), (x + 28, y)],
            color.stroke_width(2),
        ))?;
        area.draw(&Circle::new((x + 14, y), 4, color.filled()))?;
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(m.to_string(), (x + 36, y), style))?;
    }
    Ok(())
}

/// A colour per series, each its method's own where it is free (a method
/// that is also a model keeps the model's colour), else the first colour
/// of the palette not taken yet: `select ×1019` beside `select` must not
/// share its colour by chance.
fn colors(series: &[&str]) -> Vec<RGBColor> {
    let mut taken: Vec<RGBColor> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let own = look(s, i).color;
        let pick = std::iter::once(own)
            .chain((0..series.len() + 10).map(|k| look("", k).color))
            .find(|c| !taken.contains(c))
            .unwrap_or(own);
        taken.push(pick);
    }
    taken
}

/// The range of the positive values, widened by `factor` each side; (0.5,
/// 2) when there are none.
fn range(v: &[f64], factor: f64) -> (f64, f64) {
    let pos = v.iter().copied().filter(|x| x.is_finite() && *x > 0.0);
    match (pos.clone().reduce(f64::min), pos.reduce(f64::max)) {
        (Some(lo), Some(hi)) => (lo / factor, hi * factor),
        _ => (0.5, 2.0),
    }
}

/// 1-2-5 steps between `lo` and `hi` (each decade's 1 alone when that
/// gives enough).
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let decades = lo.log10().floor() as i32..=hi.log10().ceil() as i32;
    let pick = |steps: &[f64]| -> Vec<f64> {
        decades
            .clone()
            .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|t| *t >= lo && *t <= hi)
            .collect()
    };
    let ones = pick(&[1.0]);
    if ones.len() >= 4 {
        return ones;
    }
    let fine = pick(&[1.0, 2.0, 5.0]);
    if fine.len() >= 3 {
        fine
    } else {
        pick(&[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_in_range() {
        assert_eq!(ticks(8.0, 150.0), vec![10.0, 20.0, 50.0, 100.0]);
        assert_eq!(ticks(0.5, 2e4), vec![1.0, 10.0, 100.0, 1e3, 1e4]);
        assert!(ticks(0.0, 1.0).is_empty());
    }

    #[test]
    fn every_series_has_a_colour_of_its_own() {
        let names = [
            "select",
            "select ×1019",
            "epoll-exclusive",
            "epoll-exclusive ×1019",
        ];
        let c = colors(&names);
        for i in 0..c.len() {
            assert!(!c[..i].contains(&c[i]), "{names:?}: {c:?}");
        }
    }

    #[test]
    fn an_empty_chart_still_draws() {
        let svg = draw(&[], &["select", "select ×1019"], &[1, 8]).unwrap_or_default();
        assert!(svg.contains("<svg"));
    }
}
