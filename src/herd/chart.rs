//! The herd's chart (`--svg`): two log-log panels against the number of
//! workers W — connect latency (median over runs of each run's p50, µs) and
//! wakeups per connection — one line per series (a wait method, and its
//! copies of the listener when there are several: `select`, `select ×1019`,
//! `epoll-exclusive` are the study's two charts in one) with min–max
//! whiskers over the runs, and a legend under them.
//!
//! The report's chart code (`report::charts`) draws connections across; the
//! herd's x axis is workers, so this is a small chart of its own with the
//! same plotters SVG backend, colours (`present::look`), markers and number
//! formats.
//!
//! Series often lie on each other: select, poll and epoll wake every worker
//! alike, so their lines coincide. Each series therefore has a colour, a
//! marker and a dash of its own (solid, dashed, dotted in turn, so a line
//! drawn over another shows it through its gaps), and the series at one
//! worker count are set a few pixels apart, as the report's charts do.

use anyhow::Context as _;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plan::Plan;
use super::report::{series, Row};
use crate::present::look::{looks, Look, DASHES, MARKERS};
use crate::present::units::{self, Unit};
use crate::report::charts::{legend_line, marker};
use crate::stats::Summary;

const WIDTH: u32 = 960;
const PANEL_H: u32 = 380;
const LEGEND_ROW: i32 = 22;
const FONT: &str = "sans-serif";
/// Sideways offset between series at one worker count, pixels: a marker's
/// width, so that markers at one point sit side by side.
const DODGE_PX: f64 = 8.0;

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
    // Spread the series at one x by a few pixels, centred on the true x.
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let step = DODGE_PX * (x_hi / x_lo).ln() / f64::from(plot_w.max(1));
    let k = methods.len() as f64;
    for (i, (m, look)) in methods.iter().zip(styles(methods)).enumerate() {
        let shift = ((i as f64 - (k - 1.0) / 2.0) * step).exp();
        let color = look.color;
        let points: Vec<(f64, Summary)> = rows
            .iter()
            .filter(|r| r.series() == *m)
            .filter_map(|r| (panel.pick)(r).map(|s| (r.workers as f64 * shift, s)))
            .filter(|(_, s)| s.median > 0.0 && s.median.is_finite())
            .collect();
        let line = points.iter().map(|(x, s)| (*x, s.median));
        match look.dash.pattern() {
            None => chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .map(|_| ())?,
            Some((dash, gap)) => chart
                .draw_series(DashedLineSeries::new(
                    line,
                    dash,
                    gap,
                    color.stroke_width(2),
                ))
                .map(|_| ())?,
        }
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
                .map(|(x, s)| EmptyElement::at((*x, s.median)) + marker(look, 4)),
        )?;
    }
    Ok(())
}

fn draw_legend(area: &Area<'_>, methods: &[&str], columns: usize) -> anyhow::Result<()> {
    let col_w = (WIDTH as usize / columns) as i32;
    for (j, (m, look)) in methods.iter().zip(styles(methods)).enumerate() {
        let x = 24 + (j % columns) as i32 * col_w;
        let y = 10 + (j / columns) as i32 * LEGEND_ROW + LEGEND_ROW / 2;
        legend_line(area, (x, y), look, look.color.stroke_width(2))?;
        area.draw(&(EmptyElement::at((x + 14, y)) + marker(look, 4)))?;
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(m.to_string(), (x + 36, y), style))?;
    }
    Ok(())
}

/// Each series' look: its colour as `present::look` gives it (a method
/// that is also a model keeps the model's colour, and no two series share
/// one), a marker and a dash by its place in the chart, so that the first
/// 15 series differ in both (three that coincide, in all three).
fn styles(series: &[&str]) -> Vec<Look> {
    looks(&crate::server::names(), series)
        .into_iter()
        .enumerate()
        .map(|(i, look)| Look {
            marker: MARKERS[i % MARKERS.len()],
            dash: DASHES[i % DASHES.len()],
            ..look
        })
        .collect()
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
    fn every_series_has_a_style_of_its_own() {
        let names = [
            "select",
            "select ×1019",
            "epoll-exclusive",
            "epoll-exclusive ×1019",
            "poll",
            "epoll",
        ];
        let s = styles(&names);
        for i in 0..s.len() {
            for j in 0..i {
                assert_ne!(s[i].color, s[j].color, "{} and {}", names[i], names[j]);
                assert_ne!(
                    (s[i].marker, s[i].dash),
                    (s[j].marker, s[j].dash),
                    "{} and {}",
                    names[i],
                    names[j]
                );
            }
        }
        // A method that is a model keeps the model's colour.
        assert_eq!(
            s[5].color,
            looks(&crate::server::names(), &["epoll"])[0].color
        );
    }

    /// A row of `method` at `workers` whose every figure is `v`.
    fn row(method: &'static str, workers: usize, v: f64) -> Row {
        let s = Summary::of(&[v]);
        Row {
            method,
            dups: 1,
            workers,
            runs: 1,
            connect_p50_us: s,
            connect_p99_us: s,
            connect_call_p50_us: s,
            wakeups_per_connection: s,
            returns_per_connection: s,
            failed_accepts_per_connection: s,
            accepts_min: s,
            accepts_max: s,
            jain: s,
            setup_seconds: s,
            teardown_seconds: s,
        }
    }

    /// The `<polyline>` elements of `svg` 2 px wide in `colour` (upper
    /// case hex, as plotters writes it): a series' line, in one piece when
    /// solid and one a dash otherwise, and its legend sample.
    fn lines<'a>(svg: &'a str, colour: &str) -> Vec<&'a str> {
        svg.split('<')
            .filter(|e| e.starts_with("polyline"))
            .filter(|e| e.contains(&format!("stroke=\"{colour}\"")))
            .filter(|e| e.contains("stroke-width=\"2\""))
            .collect()
    }

    /// The `points` of a polyline element.
    fn points(e: &str) -> &str {
        e.split("points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap_or("")
    }

    #[test]
    fn lines_lying_on_each_other_stay_visible() {
        // select, poll and epoll with the very same figures.
        let methods = ["select", "poll", "epoll"];
        let rows: Vec<Row> = methods
            .iter()
            .flat_map(|&m| [row(m, 1, 10.0), row(m, 8, 40.0), row(m, 64, 300.0)])
            .collect();
        let svg = draw(&rows, &methods, &[1, 8, 64]).unwrap_or_default();
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        let s = styles(&methods);
        let drawn: Vec<Vec<&str>> = s.iter().map(|l| lines(&svg, &hex(l.color))).collect();
        // Solid: the line in each of the two panels and the legend's
        // sample; dashed and dotted: many pieces, the dotted the most.
        assert_eq!(drawn[0].len(), 3, "select: {:?}", drawn[0]);
        assert!(drawn[1].len() > 10, "poll: {} pieces", drawn[1].len());
        assert!(
            drawn[2].len() > drawn[1].len(),
            "epoll: {} pieces",
            drawn[2].len()
        );
        // Set apart: no two series' first points are the same.
        let first: Vec<&str> = drawn
            .iter()
            .map(|d| points(d[0]).split(' ').next().unwrap_or(""))
            .collect();
        assert!(first[0] != first[1] && first[1] != first[2] && first[0] != first[2]);
        // Three markers: select's circles, poll's squares, epoll's triangles.
        let fill = |c: RGBColor, el: &str| {
            svg.split('<')
                .filter(|e| e.starts_with(el) && e.contains(&format!("fill=\"{}\"", hex(c))))
                .count()
        };
        assert_eq!(s.iter().map(|l| l.marker).collect::<Vec<_>>(), MARKERS[..3]);
        assert_eq!(
            fill(s[0].color, "circle"),
            7,
            "two panels of 3, one in the legend"
        );
        assert_eq!(fill(s[1].color, "rect"), 7);
        assert_eq!(fill(s[2].color, "polygon"), 7);
    }

    #[test]
    fn an_empty_chart_still_draws() {
        let svg = draw(&[], &["select", "select ×1019"], &[1, 8]).unwrap_or_default();
        assert!(svg.contains("<svg"));
    }
}
