//! Drawing a figure as inline SVG with plotters: one or more log-log panels
//! side by side (connections across, one figure up; or in rows of a few
//! when the figure says so), one line per model through the medians of its
//! repeats, min–max whiskers, an optional fitted power law per model drawn
//! dashed (a level when its exponent is 0, over a span of its own when
//! given), an optional bound per model drawn thin and finely dashed,
//! optional horizontal guides and a shaded band (a comparison's 1 and its
//! margin), and a legend under the panels. The x axis counts (connections)
//! or, for a latency spectrum, runs over quantiles by their nines
//! ([`XFormat::Nines`]: x = 1/(1−q), labelled p50, p90, p99, p99.9…).
//!
//! Text is written as SVG `<text>` for the browser to set: plotters is built
//! without a font feature, so it only estimates text widths for layout and
//! needs no font files here (see the report module's doc).

use anyhow::Context as _;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::present::look::{Look, Marker};
use crate::present::units::{self, Unit};
use crate::stats::fit::PowerLaw;

/// Width of every figure, pixels (the page scales it down to fit).
/// The namespace attribute plotters writes on its `<svg>`; inline SVG in
/// HTML does not need it, and without it the page holds no URL at all.
pub(super) const SVG_XMLNS: &str = " xmlns=\"http://www.w3.org/2000/svg\"";

const WIDTH: u32 = 960;
/// Height of a legend row.
const LEGEND_ROW: u32 = 22;
/// Sideways offset between models at one connection count, pixels, so that
/// their whiskers do not hide each other.
const DODGE_PX: f64 = 4.0;
const FONT: &str = "sans-serif";

/// One model at one connection count: the median of its repeats and their
/// range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// One model in one panel.
#[derive(Debug, Clone)]
pub struct Line {
    /// Index into the figure's legend.
    pub entry: usize,
    pub points: Vec<Point>,
    pub fit: Option<PowerLaw>,
    /// The x range to draw the fit over; `None`: the points' range.
    pub fit_span: Option<(f64, f64)>,
    /// What bounds the figure at each x (under `--work`, the throughput
    /// the work alone allows): drawn thin and dashed in the line's colour.
    pub bound: Vec<(f64, f64)>,
}

/// One chart of a figure.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub y_label: String,
    pub unit: Unit,
    pub lines: Vec<Line>,
    /// Values of y to draw a thin horizontal line across at (a ratio's 1).
    pub guides: Vec<f64>,
    /// A band of y shaded across the panel (a comparison's margin).
    pub band: Option<(f64, f64)>,
}

/// How the x axis is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XFormat {
    /// A count: 380, 1.5k, 100k.
    #[default]
    Count,
    /// Quantiles by their nines: x is 1/(1−q) (see [`nines`]), labelled
    /// p50, p90, p99, p99.9…, so that each nine of the tail is as wide as
    /// the last (HdrHistogram's plotter draws its percentiles so).
    Nines,
}

impl XFormat {
    /// The label of `x` on the axis.
    pub fn label(self, x: f64) -> String {
        match self {
            XFormat::Count => units::count(x),
            XFormat::Nines => nines_label(x),
        }
    }
}

/// Where quantile `q` (0 ≤ q < 1) lies on the nines axis: 1/(1−q), so
/// p50 is 2, p90 10, p99 100, p99.9 1,000.
pub fn nines(q: f64) -> f64 {
    1.0 / (1.0 - q)
}

/// The quantile at `x` on the nines axis, as `p99.9`: as many decimals as
/// its nines need.
fn nines_label(x: f64) -> String {
    if !(x.is_finite() && x >= 1.0) {
        return String::new();
    }
    let pct = 100.0 * (1.0 - 1.0 / x);
    let decimals = (x.log10() - 1e-9).ceil() as i32 - 2;
    let text = format!("{pct:.*}", decimals.max(0) as usize);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("p{text}")
}

/// A legend line: the model, how it is drawn, and what to say of it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub look: Look,
    pub text: String,
    /// False when the model has no point in any panel of the figure.
    pub has_data: bool,
}

/// A figure: panels side by side (or in rows) over one legend.
#[derive(Debug, Clone)]
pub struct Figure {
    pub panels: Vec<Panel>,
    pub legend: Vec<Entry>,
    /// Connection counts to mark on the x axis.
    pub x_ticks: Vec<f64>,
    /// What the x axis counts (connections, descriptors, workers…).
    pub x_label: String,
    /// How the x axis is labelled (counts, or a spectrum's quantiles).
    pub x_format: XFormat,
    /// At most this many panels in a row, the rest in rows below; `None`:
    /// every panel in one row.
    pub columns: Option<usize>,
}

/// The figure as an `<svg>` element (with its `xmlns` attribute, which the
/// page removes).
pub fn svg(figure: &Figure) -> anyhow::Result<String> {
    let panels = figure.panels.len().max(1);
    let columns_of_panels = figure.columns.unwrap_or(panels).clamp(1, panels);
    let panel_rows = panels.div_ceil(columns_of_panels);
    let row_h = match (panel_rows, columns_of_panels) {
        (1, 1) => 400,
        (1, 2) => 340,
        (1, _) => 300,
        _ => 270,
    };
    let panel_h = row_h * panel_rows as u32;
    let wide = figure.legend.iter().any(|e| e.text.chars().count() > 24);
    let columns = if wide { 2 } else { 4 };
    let rows = figure.legend.len().div_ceil(columns) as u32;
    let legend_h = 14 + rows * LEGEND_ROW;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (WIDTH, panel_h + legend_h)).into_drawing_area();
        root.fill(&WHITE).context("drawing the background")?;
        let (top, bottom) = root.split_vertically(panel_h);
        let areas = top.split_evenly((panel_rows, columns_of_panels));
        for (area, panel) in areas.iter().zip(&figure.panels) {
            draw_panel(area, panel, figure)
                .with_context(|| format!("drawing the {} chart", panel.title))?;
        }
        draw_legend(&bottom, &figure.legend, columns).context("drawing the legend")?;
        root.present().context("finishing the SVG")?;
    }
    Ok(out)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw_panel(area: &Area<'_>, panel: &Panel, figure: &Figure) -> anyhow::Result<()> {
    let (x_lo, x_hi) = padded(&figure.x_ticks, 1.3);
    let mut ys: Vec<f64> = panel.guides.clone();
    if let Some((lo, hi)) = panel.band {
        ys.extend([lo, hi]);
    }
    for line in &panel.lines {
        for p in &line.points {
            ys.extend([p.min, p.max, p.median]);
        }
        if let (Some(f), Some((a, b))) = (line.fit, fit_span(line)) {
            ys.extend([f.at(a), f.at(b)]);
        }
        ys.extend(line.bound.iter().map(|b| b.1));
    }
    ys.retain(|v| v.is_finite() && *v > 0.0);
    let (y_lo, y_hi) = padded(&ys, 1.4);
    let x_ticks = thin(&figure.x_ticks, 12);
    let y_ticks = log_ticks(y_lo, y_hi);
    let unit = panel.unit;
    let x_format = figure.x_format;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 16))
        .margin(10)
        .margin_right(18)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale().with_key_points(x_ticks),
            (y_lo..y_hi).log_scale().with_key_points(y_ticks),
        )?;
    chart
        .configure_mesh()
        .x_desc(figure.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .x_label_formatter(&|v| x_format.label(*v))
        .y_label_formatter(&|v| unit.format(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .bold_line_style(BLACK.mix(0.08))
        .axis_style(BLACK.mix(0.6))
        .draw()?;

    // Under the lines: the band, then the guides.
    if let Some((lo, hi)) = panel.band {
        let (lo, hi) = (lo.max(y_lo), hi.min(y_hi));
        if lo < hi {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x_lo, lo), (x_hi, hi)],
                BLACK.mix(0.07).filled(),
            )))?;
        }
    }
    for &g in panel.guides.iter().filter(|g| **g > y_lo && **g < y_hi) {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x_lo, g), (x_hi, g)],
            BLACK.mix(0.55).stroke_width(1),
        )))?;
    }

    // Spread the models at one x by a few pixels, centred on the true x.
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let step = DODGE_PX * (x_hi / x_lo).ln() / f64::from(plot_w.max(1));
    let k = panel.lines.len() as f64;
    for (i, line) in panel.lines.iter().enumerate() {
        let Some(entry) = figure.legend.get(line.entry) else {
            continue;
        };
        let look = entry.look;
        let shift = ((i as f64 - (k - 1.0) / 2.0) * step).exp();
        let points: Vec<Point> = line
            .points
            .iter()
            .filter(|p| p.median > 0.0 && p.median.is_finite())
            .map(|p| Point {
                x: p.x * shift,
                ..*p
            })
            .collect();
        if let (Some(f), Some((a, b))) = (line.fit, fit_span(line)) {
            let n = 24;
            let curve: Vec<(f64, f64)> = (0..=n)
                .map(|j| {
                    let x = a * (b / a).powf(f64::from(j) / f64::from(n));
                    (x, f.at(x))
                })
                .filter(|(_, y)| *y >= y_lo && *y <= y_hi)
                .collect();
            chart.draw_series(DashedLineSeries::new(
                curve,
                6,
                4,
                look.color.mix(0.7).stroke_width(1),
            ))?;
        }
        if !line.bound.is_empty() {
            let bound: Vec<(f64, f64)> = line
                .bound
                .iter()
                .filter(|(_, y)| y.is_finite() && *y > 0.0)
                .map(|&(x, y)| (x * shift, y))
                .collect();
            chart.draw_series(DashedLineSeries::new(
                bound,
                4,
                3,
                look.color.stroke_width(1),
            ))?;
        }
        let line = points.iter().map(|p| (p.x, p.median));
        match look.dash.pattern() {
            None => chart
                .draw_series(LineSeries::new(line, look.color.stroke_width(2)))
                .map(|_| ())?,
            Some((dash, gap)) => chart
                .draw_series(DashedLineSeries::new(
                    line,
                    dash,
                    gap,
                    look.color.stroke_width(2),
                ))
                .map(|_| ())?,
        }
        let whiskers: Vec<&Point> = points
            .iter()
            .filter(|p| p.max > p.min && p.min > 0.0)
            .collect();
        let stroke = look.color.stroke_width(1);
        chart.draw_series(
            whiskers
                .iter()
                .map(|p| PathElement::new(vec![(p.x, p.min), (p.x, p.max)], stroke)),
        )?;
        chart.draw_series(
            whiskers
                .iter()
                .flat_map(|p| [(p.x, p.min), (p.x, p.max)])
                .map(|c| EmptyElement::at(c) + PathElement::new(vec![(-4, 0), (4, 0)], stroke)),
        )?;
        chart.draw_series(
            points
                .iter()
                .map(|p| EmptyElement::at((p.x, p.median)) + marker(look, 4)),
        )?;
    }
    Ok(())
}

/// The smallest and largest x of a line's points.
fn x_span(line: &Line) -> Option<(f64, f64)> {
    let lo = line.points.iter().map(|p| p.x).reduce(f64::min)?;
    let hi = line.points.iter().map(|p| p.x).reduce(f64::max)?;
    Some((lo, hi))
}

/// Where a line's fit is drawn: its own span, or its points' range.
fn fit_span(line: &Line) -> Option<(f64, f64)> {
    line.fit_span.or_else(|| x_span(line))
}

/// A marker drawn around (0, 0) in pixels.
pub(crate) fn marker<DB: DrawingBackend>(
    look: Look,
    r: i32,
) -> DynElement<'static, DB, (i32, i32)> {
    let fill = look.color.filled();
    match look.marker {
        Marker::Circle => Circle::new((0, 0), r, fill).into_dyn(),
        Marker::Square => Rectangle::new([(-r, -r), (r, r)], fill).into_dyn(),
        Marker::Triangle => TriangleMarker::new((0, 0), r + 1, fill).into_dyn(),
        Marker::Diamond => {
            let d = r + 1;
            Polygon::new(vec![(0, -d), (d, 0), (0, d), (-d, 0)], fill).into_dyn()
        }
        Marker::Cross => Cross::new((0, 0), r, look.color.stroke_width(2)).into_dyn(),
    }
}

fn draw_legend(area: &Area<'_>, entries: &[Entry], columns: usize) -> anyhow::Result<()> {
    let col_w = (WIDTH as usize / columns) as i32;
    for (j, e) in entries.iter().enumerate() {
        let x = 24 + (j % columns) as i32 * col_w;
        let y = 10 + (j / columns) as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        let (color, text_color) = if e.has_data {
            (e.look.color.to_rgba(), BLACK.to_rgba())
        } else {
            (e.look.color.mix(0.35), BLACK.mix(0.5))
        };
        legend_line(area, (x, y), e.look, color.stroke_width(2))?;
        area.draw(&(EmptyElement::at((x + 14, y)) + marker(e.look, 4)))?;
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&text_color)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(e.text.clone(), (x + 36, y), style))?;
    }
    Ok(())
}

/// A legend's sample of a line: 28 pixels from `at`, solid or in the
/// look's dash.
pub(crate) fn legend_line(
    area: &Area<'_>,
    at: (i32, i32),
    look: Look,
    style: ShapeStyle,
) -> anyhow::Result<()> {
    let (x, y) = at;
    let points = vec![(x, y), (x + 28, y)];
    match look.dash.pattern() {
        None => area.draw(&PathElement::new(points, style))?,
        Some((dash, gap)) => area.draw(&plotters::element::DashedPathElement::new(
            points, dash, gap, style,
        ))?,
    }
    Ok(())
}

/// The range of the positive values in `v`, widened by `factor` on each
/// side (a log axis needs room around a single value too); (0.5, 2) when
/// there is none.
fn padded(v: &[f64], factor: f64) -> (f64, f64) {
    let pos = v.iter().copied().filter(|x| x.is_finite() && *x > 0.0);
    let lo = pos.clone().reduce(f64::min);
    let hi = pos.reduce(f64::max);
    match (lo, hi) {
        (Some(lo), Some(hi)) => (lo / factor, hi * factor),
        _ => (0.5, 2.0),
    }
}

/// At most `max` of `ticks`, keeping the first and the last.
fn thin(ticks: &[f64], max: usize) -> Vec<f64> {
    if ticks.len() <= max {
        return ticks.to_vec();
    }
    let every = ticks.len().div_ceil(max);
    let last = ticks.len() - 1;
    ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0 || *i == last)
        .map(|(_, t)| *t)
        .collect()
}

/// Round values between `lo` and `hi` for a log axis: powers of ten when
/// the range spans several, else 1-2-5 steps, else every digit.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    const SETS: [&[f64]; 3] = [
        &[1.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ];
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let mut best = Vec::new();
    for (k, set) in SETS.iter().enumerate() {
        let ticks: Vec<f64> = (first..=last)
            .flat_map(|e| set.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|t| *t >= lo && *t <= hi)
            .collect();
        let enough = if k == 0 { 4 } else { 3 };
        best = ticks;
        if best.len() >= enough {
            break;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::look::looks;

    #[test]
    fn log_ticks_are_round_and_in_range() {
        assert_eq!(log_ticks(0.5, 2e4), vec![1.0, 10.0, 100.0, 1e3, 1e4]);
        assert_eq!(log_ticks(0.9, 30.0), vec![1.0, 2.0, 5.0, 10.0, 20.0]);
        let dense = log_ticks(0.7, 1.6);
        assert_eq!(dense.len(), 5, "{dense:?}");
        assert!(log_ticks(0.0, 1.0).is_empty());
        assert!(log_ticks(f64::NAN, 1.0).is_empty());
    }

    #[test]
    fn thinning_keeps_the_ends() {
        let t: Vec<f64> = (1..=20).map(f64::from).collect();
        let thinned = thin(&t, 6);
        assert!(thinned.len() <= 7);
        assert_eq!(thinned.first(), Some(&1.0));
        assert_eq!(thinned.last(), Some(&20.0));
        assert_eq!(thin(&t[..3], 6), vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn the_nines_axis_is_labelled_by_quantile() {
        let labels: Vec<String> = [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 0.99999]
            .iter()
            .map(|&q| XFormat::Nines.label(nines(q)))
            .collect();
        assert_eq!(
            labels,
            ["p50", "p75", "p90", "p95", "p99", "p99.5", "p99.9", "p99.99", "p99.999"]
        );
        assert_eq!(XFormat::Count.label(1500.0), "1500");
        assert_eq!(XFormat::Count.label(15_000.0), "15k");
    }

    #[test]
    fn a_band_and_a_guide_are_drawn_under_a_grid_of_panels() {
        let mut f = figure(2);
        f.panels[0].guides = vec![1.5];
        f.panels[0].band = Some((1.2, 1.8));
        f.panels = vec![f.panels[0].clone(); 5];
        f.columns = Some(3);
        let svg = svg(&f).unwrap_or_default();
        // Five panels' titles, in two rows: the second row lower.
        let ys: Vec<f64> = svg
            .split("<text")
            .filter_map(|t| t.split_once('>'))
            .filter(|(_, text)| text.split("</text>").next().map(str::trim) == Some("t"))
            .filter_map(|(attrs, _)| attrs.split(" y=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(ys.len(), 5, "{ys:?}");
        assert!(ys[3] > ys[0] && ys[0] == ys[2], "{ys:?}");
        // The band: one shaded rectangle per panel.
        let bands = svg.matches("opacity=\"0.07\"").count();
        assert_eq!(bands, 5, "{bands} bands");
    }

    /// A figure of `n` series (the registry's models, then others), each
    /// with one point at each of two counts.
    fn figure(n: usize) -> Figure {
        let mut names: Vec<String> = crate::server::names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        names.extend((0..n).map(|i| format!("peer-{i}")));
        names.truncate(n);
        let looks = looks(&crate::server::names(), &names);
        let point = |x: f64, y: f64| Point {
            x,
            median: y,
            min: y,
            max: y,
        };
        Figure {
            panels: vec![Panel {
                title: "t".into(),
                y_label: "y".into(),
                unit: Unit::Count,
                guides: Vec::new(),
                band: None,
                lines: (0..n)
                    .map(|i| Line {
                        entry: i,
                        points: vec![point(10.0, 1.0 + i as f64), point(100.0, 2.0 + i as f64)],
                        fit: None,
                        fit_span: None,
                        bound: Vec::new(),
                    })
                    .collect(),
            }],
            legend: names
                .iter()
                .zip(looks)
                .map(|(m, look)| Entry {
                    look,
                    text: m.clone(),
                    has_data: true,
                })
                .collect(),
            x_ticks: vec![10.0, 100.0],
            x_label: "connections".into(),
            x_format: XFormat::Count,
            columns: None,
        }
    }

    /// The stroke colours of the lines 2 px wide in `svg` (a series' line
    /// and its legend sample), each once.
    fn line_colours(svg: &str) -> Vec<String> {
        let mut out: Vec<String> = svg
            .split('<')
            .filter(|e| e.starts_with("polyline") && e.contains("stroke-width=\"2\""))
            .filter_map(|e| e.split("stroke=\"").nth(1))
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn every_series_of_a_chart_has_a_colour_of_its_own() {
        // The thesis and the tour draw 12 models, peers 10 series; 24 is
        // what the palette guarantees.
        for n in [10, 12, 24] {
            let svg = svg(&figure(n)).unwrap_or_default();
            let colours = line_colours(&svg);
            assert_eq!(colours.len(), n, "{n} series drew {colours:?}");
        }
        // Past 24 a colour comes round again, dashed.
        let f = figure(30);
        assert_eq!(f.legend[24].look.color, f.legend[0].look.color);
        assert_ne!(f.legend[24].look, f.legend[0].look);
        assert!(svg(&f).is_ok());
    }
}
