//! The answer drawn where a person looks first: a forest plot per
//! connection count at the top of a run's page. Each ranked model is a row:
//! how many times worse than the best it was (the ranking's paired ratio,
//! on a log axis, 1 = the best) with its 95 % interval, over the shaded
//! band of the equivalence margin, so "worse", "equivalent" and "not yet
//! told apart" read at a glance: an interval clear of 1 and the band is a
//! difference, one inside the band is equivalent, one across 1 and the
//! band's edge is undecided. The same comparisons as the ranking's table,
//! drawn; nothing is computed here. Cost: one small SVG per count.

use std::fmt::Write as _;

use anyhow::Context as _;
use plotters::coord::combinators::BindKeyPoints as _;
use plotters::prelude::*;

use crate::analysis::summary::{standings, Ranked};
use crate::export::table::escape_html;
use crate::present::units::{format_count, sig3};
use crate::results::dir::RunData;
use crate::stats::paired::Outcome;

const WIDTH: u32 = 760;
const ROW: u32 = 26;
const FONT: &str = "sans-serif";

/// The ratios the axis is ticked at, where they fall in its range.
const TICKS: [f64; 15] = [
    0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0,
];

/// A row's colour by what its comparison with the best says.
fn colour(r: &Ranked) -> RGBColor {
    match r.versus_best.map(|c| c.outcome) {
        None => RGBColor(0x11, 0x11, 0x11),
        Some(Outcome::Different) => RGBColor(0xc6, 0x28, 0x28),
        Some(Outcome::Equivalent) => RGBColor(0x2e, 0x7d, 0x32),
        Some(Outcome::Inconclusive) | Some(Outcome::Untested) => RGBColor(0xb2, 0x6a, 0x00),
    }
}

/// The plot of one count's ranked models, as an `<svg>` (with the
/// `xmlns` attribute, which the page removes).
fn svg(rows: &[&Ranked], margin: f64) -> anyhow::Result<String> {
    let level = rows
        .iter()
        .find_map(|r| r.versus_best.map(|c| c.level))
        .unwrap_or(crate::stats::paired::DEFAULT_LEVEL);
    let band = (1.0 / (1.0 + margin), 1.0 + margin);
    let mut xs = vec![band.0, band.1];
    for r in rows {
        if let Some(c) = r.versus_best {
            xs.push(c.ratio);
            xs.extend(c.interval.iter().flat_map(|(lo, hi)| [*lo, *hi]));
        }
    }
    xs.retain(|x| x.is_finite() && *x > 0.0);
    // The axis is the ratio's logarithm in thousandths (an integer axis,
    // whose ticks can be placed at round ratios).
    let at = |x: f64| (x.ln() * 1000.0).round() as i32;
    let lo = at(xs.iter().copied().fold(f64::INFINITY, f64::min) / 1.1);
    let hi = at(xs.iter().copied().fold(0.0, f64::max) * 1.1);
    let ticks: Vec<i32> = TICKS
        .iter()
        .map(|&t| at(t))
        .filter(|t| (lo..=hi).contains(t))
        .collect();
    let n = rows.len() as i32;
    let height = 70 + ROW * rows.len() as u32;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).context("drawing the background")?;
        let names: Vec<&str> = rows.iter().map(|r| r.model.as_str()).collect();
        let label = |y: &i32| {
            usize::try_from(n - 1 - *y)
                .ok()
                .and_then(|i| names.get(i))
                .map_or_else(String::new, |s| s.to_string())
        };
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(130)
            .build_cartesian_2d((lo..hi).with_key_points(ticks), -1..n)
            .context("laying out the plot")?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len() + 2)
            .y_label_formatter(&label)
            .x_label_formatter(&|x| format!("{}×", sig3((f64::from(*x) / 1000.0).exp())))
            .x_desc(format!(
                "times worse than the best (log), with the {} interval",
                crate::analysis::summary::level_text(level)
            ))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 13))
            .draw()
            .context("drawing the axes")?;
        chart
            .draw_series([Rectangle::new(
                [(at(band.0), -1), (at(band.1), n)],
                RGBColor(0xe3, 0xee, 0xe3).filled(),
            )])
            .context("drawing the margin")?;
        chart
            .draw_series([PathElement::new(
                [(0, -1), (0, n)],
                RGBColor(0x88, 0x88, 0x88),
            )])
            .context("drawing the best")?;
        for (i, r) in rows.iter().enumerate() {
            let y = n - 1 - i as i32;
            let c = colour(r);
            let (ratio, interval) = match r.versus_best {
                Some(v) => (v.ratio, v.interval),
                None => (1.0, None),
            };
            if let Some((a, b)) = interval {
                chart
                    .draw_series([PathElement::new(
                        [(at(a), y), (at(b), y)],
                        c.stroke_width(2),
                    )])
                    .context("drawing an interval")?;
            }
            chart
                .draw_series([Circle::new((at(ratio), y), 4, c.filled())])
                .context("drawing a ratio")?;
        }
        root.present().context("finishing the SVG")?;
    }
    Ok(out)
}

/// The figures of `data`, one per count whose models were ranked (at least
/// two): `<figure class="forest">` with the plot and a caption that says
/// how to read it; empty when nothing was ranked.
pub(super) fn html(data: &RunData, suffix: &str) -> anyhow::Result<String> {
    let margin = data.plan.margin;
    let mut out = String::new();
    for (n, rows) in standings(data) {
        let ranked: Vec<&Ranked> = rows.iter().filter(|r| r.rank.is_some()).collect();
        if ranked.len() < 2 {
            continue;
        }
        let title = format!(
            "{} {}: each model against the best by {}",
            format_count(n as f64),
            data.plan.size_label,
            crate::analysis::summary::ranked_by(data, n).label(&data.plan)
        );
        let svg = svg(&ranked, margin)?
            .replacen(super::charts::SVG_XMLNS, "", 1)
            .replacen(
                "<svg ",
                &format!("<svg role=\"img\" aria-label=\"{}\" ", escape_html(&title)),
                1,
            );
        if let Some(line) = crate::analysis::summary::glance_line(data, n, &rows) {
            let _ = writeln!(out, "<p class=\"glance\">{}</p>", escape_html(&line));
        }
        let _ = write!(
            out,
            "<figure class=\"forest\" id=\"forest-c{n}{suffix}\">\n{svg}<figcaption><strong>{}.\
             </strong> A dot is how many times worse than the best ({}) a model was, the \
             geometric mean of its per-round ratios (from 10 rounds, without the highest and \
             lowest tenth); its line, the {} interval. In the \
             shaded band (±{} %) a model whose whole interval lies there is equivalent \
             (green); an interval clear of 1 and of the band is worse (red); one that \
             crosses them is not yet told apart (orange). The ranking below gives the \
             numbers.</figcaption>\n</figure>\n",
            escape_html(&title),
            escape_html(&ranked[0].model),
            crate::analysis::summary::level_text(data.plan.rule().level),
            sig3(margin * 100.0)
        );
    }
    Ok(out)
}
