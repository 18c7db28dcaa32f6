//! A capacity run's charts, per connection count: latency against the
//! offered rate (p50, p99, p99.9; log axes), each model's line through
//! the geometric means of its slots with their range as whiskers, every
//! target drawn across, and each model's queueing bound thin and dashed;
//! then what the server answered, the p99 uncorrected for coordinated
//! omission, and the server's CPU per message, against the same rates.
//! Cost: one analysis of each model's slots per count.

use super::charts::{Entry, Figure, Line, Panel, Point, XFormat};
use super::figures::Chart;
use crate::capacity::search::RatePoint;
use crate::capacity::tables::{searched, work_of, Searched};
use crate::present::units::{format_count, Unit};
use crate::results::dir::RunData;

/// Bound points drawn per model: rates up to just below the queue's
/// capacity, spaced evenly on the log axis.
const BOUND_POINTS: usize = 24;

/// The charts of every count, each with the count it is of.
pub fn charts(data: &RunData) -> Vec<(usize, Chart)> {
    let Some(search) = &data.plan.capacity else {
        return Vec::new();
    };
    let work = work_of(data);
    let targets = search.targets_under(work.as_ref());
    let mut out = Vec::new();
    for &n in &data.plan.connections {
        let all = searched(data, n);
        let rates: Vec<f64> = all
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.rate))
            .collect();
        if rates.is_empty() {
            out.push((
                n,
                Chart::Skipped {
                    title: format!("Latency against offered load, {n} connections"),
                    why: "no slot was measured".into(),
                },
            ));
            continue;
        }
        let legend = legend(&all);
        let ticks = ticks(&rates);
        let figure = |panels: Vec<Panel>| Figure {
            panels,
            legend: legend.clone(),
            x_ticks: ticks.clone(),
            x_label: "offered messages/s (Poisson)".into(),
            x_format: XFormat::Count,
            columns: None,
        };
        // The percentiles drawn: p50, p99, p99.9 (q), each with the
        // targets at that percentile drawn across it.
        let latency: Vec<Panel> = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)]
            .into_iter()
            .map(|(label, q)| {
                let pick = |p: &RatePoint| match label {
                    "p50" => p.p50,
                    "p99" => p.p99,
                    _ => p.p999,
                };
                let guides: Vec<f64> = search
                    .slo
                    .targets
                    .iter()
                    .zip(&targets)
                    .filter(|(t, _)| (t.quantile() - q).abs() < 1e-9)
                    .map(|(_, s)| *s)
                    .collect();
                Panel {
                    title: format!("{label} latency"),
                    y_label: "seconds".into(),
                    unit: Unit::Seconds,
                    lines: all
                        .iter()
                        .enumerate()
                        .map(|(i, s)| Line {
                            entry: i,
                            points: points(s, &pick),
                            fit: None,
                            fit_span: None,
                            bound: bound_line(s, q),
                        })
                        .collect(),
                    guides,
                    band: None,
                }
            })
            .collect();
        let uncovered: Vec<String> = search
            .slo
            .targets
            .iter()
            .filter(|t| {
                ![0.5, 0.99, 0.999]
                    .iter()
                    .any(|q| (t.quantile() - q).abs() < 1e-9)
            })
            .map(|t| t.label())
            .collect();
        let mut caption = vec![
            "Each point a rate a model was measured at: the geometric mean of its slots (their intervals are in the tables); the horizontal line is the target at that percentile.".to_string(),
            "Thin dashed: the model's queueing bound (an M/D/c queue of its handlers, its own latency at its lowest rate plus the queue's wait), to just below its capacity c/S; a foreign server has none.".to_string(),
        ];
        if !uncovered.is_empty() {
            caption.push(format!(
                "Targets at {} are in the tables, not drawn.",
                crate::present::words::and_list(&uncovered)
            ));
        }
        out.push((
            n,
            Chart::Drawn {
                id: "capacity-latency",
                title: format!(
                    "Latency against offered load, {} connections",
                    format_count(n as f64)
                ),
                caption,
                figure: figure(latency),
                tables: Vec::new(),
            },
        ));
        let panel = |title: &str, y: &str, unit: Unit, pick: &dyn Fn(&RatePoint) -> f64| Panel {
            title: title.into(),
            y_label: y.into(),
            unit,
            lines: all
                .iter()
                .enumerate()
                .map(|(i, s)| Line {
                    entry: i,
                    points: points(s, pick),
                    fit: None,
                    fit_span: None,
                    bound: Vec::new(),
                })
                .collect(),
            guides: Vec::new(),
            band: None,
        };
        out.push((
            n,
            Chart::Drawn {
                id: "capacity-load",
                title: format!(
                    "What the servers answered and what it cost, {} connections",
                    format_count(n as f64)
                ),
                caption: vec![
                    "Achieved: echoes a second in the measured part (a server at capacity falls below the offered rate). Uncorrected p99: from when each message was written, the figure a closed loop reports. CPU per message: the server tree's CPU over the slot, per message; geometric means (CPU: medians) over the slots.".into(),
                ],
                figure: figure(vec![
                    panel("achieved", "messages/s", Unit::Count, &|p| p.share * p.rate),
                    panel("p99 uncorrected", "seconds", Unit::Seconds, &|p| {
                        p.p99_uncorrected
                    }),
                    panel("server CPU per message", "seconds", Unit::Seconds, &|p| {
                        p.cpu_per_message.unwrap_or(f64::NAN)
                    }),
                ]),
                tables: Vec::new(),
            },
        ));
    }
    out
}

/// A model's points at each rate: the figure `pick` reads.
fn points(s: &Searched, pick: &dyn Fn(&RatePoint) -> f64) -> Vec<Point> {
    s.points
        .iter()
        .filter(|p| pick(p).is_finite() && pick(p) > 0.0)
        .map(|p| Point {
            x: p.rate,
            median: pick(p),
            min: pick(p),
            max: pick(p),
        })
        .collect()
}

/// The bound's latency at quantile `q`, from the lowest measured rate to
/// just below the queue's capacity.
fn bound_line(s: &Searched, q: f64) -> Vec<(f64, f64)> {
    let (Some(b), Some(first)) = (&s.bound, s.points.first()) else {
        return Vec::new();
    };
    let lo = first.rate;
    let hi = b.queue.capacity() * 0.98;
    if hi <= lo {
        return Vec::new();
    }
    let unloaded = match q {
        q if (q - 0.5).abs() < 1e-9 => first.p50,
        q if (q - 0.999).abs() < 1e-9 => first.p999,
        _ => first.p99,
    };
    (0..=BOUND_POINTS)
        .filter_map(|k| {
            let r = lo * (hi / lo).powf(k as f64 / BOUND_POINTS as f64);
            Some((r, unloaded + b.wait(r, q)?))
        })
        .collect()
}

fn legend(all: &[Searched]) -> Vec<Entry> {
    let names: Vec<String> = all.iter().map(|s| s.model.clone()).collect();
    let looks = crate::present::look::looks(&crate::server::names(), &names);
    all.iter()
        .zip(looks)
        .map(|(s, look)| Entry {
            look,
            text: s.model.clone(),
            has_data: !s.points.is_empty(),
        })
        .collect()
}

/// Ticks on the rate axis: powers of two of a thousand spanning the rates.
fn ticks(rates: &[f64]) -> Vec<f64> {
    let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = rates.iter().copied().fold(0.0, f64::max);
    let mut t = Vec::new();
    let mut x = 10f64.powf(lo.log10().floor());
    while x <= hi * 1.5 {
        for m in [1.0, 2.0, 5.0] {
            let v = x * m;
            if v >= lo / 1.5 && v <= hi * 1.5 {
                t.push(v);
            }
        }
        x *= 10.0;
    }
    t
}
