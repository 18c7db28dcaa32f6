//! Which charts a run gets and what goes in them: time (or mean latency)
//! with a fitted power law per model, latency percentiles, throughput,
//! memory per connection ([`super::memory`]), CPU per message, for an
//! open loop what holding connections costs (memory per connection and
//! p99 against them), and for churn the connect rate and connect latency. A chart (or one panel of it) with nothing to draw is
//! left out and said so in one line, never drawn empty.

use super::charts::{Entry, Figure, Line, Panel, Point};
use crate::present::units::Unit;
use crate::results::cell::Metrics;
use crate::results::dir::RunData;
use crate::results::matrix::WorkloadKind;
use crate::results::series::{self, Pick};
use crate::stats::fit::PowerLaw;
use crate::stats::Summary;

/// A chart of the report: drawn, or left out with the reason.
#[derive(Debug, Clone)]
pub enum Chart {
    Drawn {
        /// Stable HTML id of the figure.
        id: &'static str,
        title: String,
        /// Sentences under the chart: what it shows, the fits, what was
        /// left out.
        caption: Vec<String>,
        figure: Figure,
        /// Tables shown under the chart (the memory slopes).
        tables: Vec<crate::export::table::Table>,
    },
    Skipped {
        title: String,
        why: String,
    },
}

struct PanelSpec {
    title: &'static str,
    y_label: &'static str,
    unit: Unit,
    pick: Pick,
    /// What bounds the figure, drawn beside each model's line (the
    /// throughput the work allows, under `--work`).
    bound: Option<Pick>,
}

struct Spec {
    id: &'static str,
    title: String,
    about: String,
    panels: Vec<PanelSpec>,
    /// The symbol of the fitted quantity (`t`), when the figure fits a
    /// power law per model (single-panel figures only).
    fit: Option<&'static str>,
}

/// The charts of this run built from its figures, in the order the page
/// shows them; the page puts memory per connection ([`super::memory`])
/// after throughput.
pub fn charts(data: &RunData) -> Vec<Chart> {
    let mut specs = vec![time_spec(data)];
    specs.push(Spec {
        id: "latency",
        title: "Latency percentiles".into(),
        about: "Round-trip latency of the measured messages at each connection count: the \
                median (p50) and the 99th percentile (p99) of each cell, from the client's \
                histograms."
            .into(),
        panels: vec![
            panel("p50", "latency", Unit::Micros, |m| m.latency_p50_us),
            panel("p99", "latency", Unit::Micros, |m| m.latency_p99_us),
        ],
        fit: None,
    });
    specs.push(Spec {
        id: "throughput",
        title: "Throughput".into(),
        about: "Measured round trips per second (echoes back and checked) over the measured \
                window."
            .into(),
        panels: vec![PanelSpec {
            bound: Some(|m| m.work_bound_per_second),
            ..panel(
                "round trips per second",
                "round trips per second",
                Unit::Count,
                |m| m.throughput,
            )
        }],
        fit: None,
    });
    specs.push(Spec {
        id: "cpu",
        title: "CPU per message".into(),
        about: "CPU time (user plus system) per measured message over the measured window \
                (for a burst, its rounds). The server's is its whole process tree, drawn where \
                it is within what bounds it (the window's wall time on its CPUs, the whole \
                cell's CPU) and the kernel's accounting resolves it; the client's shows when \
                the load generator, not the server, was the limit."
            .into(),
        panels: vec![
            panel("server", "CPU per message", Unit::Micros, |m| {
                m.server_cpu_per_message_us
            }),
            panel("client", "CPU per message", Unit::Micros, |m| {
                m.client_cpu_per_message_us
            }),
        ],
        fit: None,
    });
    if data.plan.bench.is_none() && data.plan.workload.rate.is_some() {
        specs.push(Spec {
            id: "holding",
            title: "Holding connections: memory per connection and p99".into(),
            about: "What each connection costs as the count grows, at the open loop's offered \
                    rate: kernel memory (slab and TCP buffers, system-wide, both ends of each \
                    loopback connection), the server's anonymous memory with every connection \
                    up, each over the connections; the client's peak resident memory (its \
                    processes summed, each one's program pages and fixed cost included, so it \
                    falls with the count) divided by the connections; and the 99th percentile round trip, counted from when each \
                    message was due."
                .into(),
            panels: vec![
                panel("kernel", "KiB per connection", Unit::Count, |m| {
                    m.kernel_kib_per_connection
                }),
                panel("server", "KiB per connection", Unit::Count, |m| {
                    m.user_kib_per_connection
                }),
                panel("client peak RSS ÷ connections", "KiB per connection", Unit::Count, |m| {
                    m.client_kib_per_connection
                }),
                panel("p99", "latency", Unit::Micros, |m| m.latency_p99_us),
            ],
            fit: None,
        });
    }
    if data.plan.bench.is_none() && data.plan.workload.kind() == WorkloadKind::Closed {
        specs.push(Spec {
            id: "fairness",
            title: "Fairness across connections".into(),
            about: "Jain's index of the measured round trips over the connections of each \
                    cell: 1 when every connection was served equally often, 1/N when one got \
                    everything. A model with a good median and a long tail usually serves some \
                    connections far more often than others; this shows it."
                .into(),
            panels: vec![panel("Jain's index", "Jain's index", Unit::Count, |m| {
                m.jain
            })],
            fit: None,
        });
    }
    if data.plan.bench == Some(crate::results::matrix::Bench::Herd) {
        specs.push(Spec {
            id: "herd",
            title: "The herd: wake-ups and failed accepts per connection".into(),
            about: "Worker wake-ups per connection (voluntary context switches of every worker, \
                    from /proc: most losers of the herd go back to sleep inside the kernel and \
                    never show in user space), accepts that found nothing (EAGAIN) per \
                    connection, and Jain's fairness index of the accepts over the workers \
                    (1: even; 1/W: one worker took all)."
                .into(),
            panels: vec![
                panel("wake-ups", "wake-ups per connection", Unit::Count, |m| {
                    m.wakeups_per_connection
                }),
                panel(
                    "failed accepts",
                    "EAGAIN per connection",
                    Unit::Count,
                    |m| m.failed_accepts_per_connection,
                ),
                panel("fairness", "Jain's index", Unit::Count, |m| m.jain),
            ],
            fit: None,
        });
    }
    if data.plan.workload.kind() == WorkloadKind::Churn
        || matches!(
            data.plan.bench,
            Some(crate::results::matrix::Bench::Herd | crate::results::matrix::Bench::Accept)
        )
    {
        specs.push(Spec {
            id: "churn",
            title: "Connection churn".into(),
            about: "Connections opened, served and closed per second, the time from \
                    connect() to a writable socket (p50 and p99), and the server's CPU time \
                    (whole tree, whole cell) per connection."
                .into(),
            panels: vec![
                panel(
                    "connects per second",
                    "connects per second",
                    Unit::Count,
                    |m| m.connects_per_second,
                ),
                panel("connect p50", "connect latency", Unit::Micros, |m| {
                    m.connect_p50_us
                }),
                panel("connect p99", "connect latency", Unit::Micros, |m| {
                    m.connect_p99_us
                }),
                panel("server CPU", "CPU per connection", Unit::Micros, |m| {
                    m.server_cpu_per_connection_us
                }),
            ],
            fit: None,
        });
    }
    specs.iter().map(|s| build(data, s)).collect()
}

fn panel(title: &'static str, y_label: &'static str, unit: Unit, pick: Pick) -> PanelSpec {
    PanelSpec {
        title,
        y_label,
        unit,
        pick,
        bound: None,
    }
}

/// Time against connections when the cells did a fixed amount of work;
/// mean latency when they ran for a fixed time.
fn time_spec(data: &RunData) -> Spec {
    let has = |pick: Pick| {
        series::latest(data)
            .iter()
            .any(|c| pick(&c.metrics()).is_some_and(|v| v.is_finite() && v > 0.0))
    };
    let time: Pick = |m: &Metrics| m.time_seconds;
    if let Some(bench) = data.plan.bench {
        use crate::results::matrix::Bench;
        let what = match bench {
            Bench::Spawn => "Time to create and join one thread, or fork and reap one process, in a burst of N",
            Bench::Dispatch => "Return time of one wait call over N descriptors with one active (select's copy of the master set included)",
            Bench::Herd => "Connect latency (connect() to writable), median, with W workers waiting on the listener",
            Bench::Accept => "Time is not this benchmark's figure: see accepts per second",
        };
        return Spec {
            id: "time",
            title: format!("Time against {}", data.plan.size_label),
            about: format!(
                "{what}. On log-log axes a power law t = a·N^b is a straight line of slope b, \
                 drawn dashed per variant: b = 1 means the time grows in proportion to N, b = 0 \
                 that it does not grow."
            ),
            panels: vec![panel("time", "time", Unit::Seconds, time)],
            fit: Some("t"),
        };
    }
    if has(time) || !has(|m| m.latency_mean_us) {
        Spec {
            id: "time",
            title: "Time against connections".into(),
            about: "Time to do the cell's fixed work (burst: from the first send to the last \
                    echo, the mean over rounds; a fixed message count: the whole measured \
                    phase). On log-log axes a power law t = a·N^b is a straight line of slope \
                    b, drawn dashed per model: b = 1 means time grows in proportion to the \
                    connections."
                .into(),
            panels: vec![panel("time", "time", Unit::Seconds, time)],
            fit: Some("t"),
        }
    } else {
        Spec {
            id: "time",
            title: "Mean latency against connections".into(),
            about: "The cells ran for a fixed time, so this is the mean round-trip latency \
                    instead of a time for fixed work. On log-log axes a power law is a straight \
                    line, drawn dashed per model with its exponent in the legend."
                .into(),
            panels: vec![panel("mean latency", "latency", Unit::Micros, |m| {
                m.latency_mean_us
            })],
            fit: Some("latency"),
        }
    }
}

fn build(data: &RunData, spec: &Spec) -> Chart {
    let models = series::models(data);
    let mut has_data = vec![false; models.len()];
    let mut fits: Vec<Option<PowerLaw>> = vec![None; models.len()];
    // (panel, model, values) left out for being at or below zero.
    let mut dropped: Vec<(&str, &str, usize)> = Vec::new();
    let mut panels = Vec::new();
    let mut empty_panels = Vec::new();
    let mut bounded = false;
    for ps in &spec.panels {
        let mut lines = Vec::new();
        for (i, model) in models.iter().enumerate() {
            let mut points = Vec::new();
            for (n, vals) in series::values(data, model, ps.pick) {
                let positive: Vec<f64> = vals.iter().copied().filter(|v| *v > 0.0).collect();
                let gone = vals.len() - positive.len();
                match dropped.last_mut() {
                    Some((p, m, k)) if *p == ps.title && *m == model.as_str() => *k += gone,
                    _ if gone > 0 => dropped.push((ps.title, model.as_str(), gone)),
                    _ => {}
                }
                if let Some(s) = Summary::of(&positive) {
                    points.push(Point {
                        x: n as f64,
                        median: s.median,
                        min: s.min,
                        max: s.max,
                    });
                }
            }
            if points.is_empty() {
                continue;
            }
            has_data[i] = true;
            let fit = spec.fit.and_then(|_| {
                let medians: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.median)).collect();
                PowerLaw::fit(&medians)
            });
            fits[i] = fit;
            // The bound at each count: the median of its runs'.
            let bound: Vec<(f64, f64)> = ps.bound.map_or_else(Vec::new, |pick| {
                series::values(data, model, pick)
                    .into_iter()
                    .filter_map(|(n, v)| Some((n as f64, Summary::of(&v)?.median)))
                    .collect()
            });
            bounded |= !bound.is_empty();
            lines.push(Line {
                entry: i,
                points,
                fit,
                fit_span: None,
                bound,
            });
        }
        if lines.is_empty() {
            empty_panels.push(ps.title);
        } else {
            panels.push(Panel {
                title: ps.title.to_string(),
                y_label: ps.y_label.to_string(),
                unit: ps.unit,
                lines,
                guides: Vec::new(),
                band: None,
            });
        }
    }
    if panels.is_empty() {
        return Chart::Skipped {
            title: spec.title.clone(),
            why: if !dropped.is_empty() {
                "every value is zero or below, which a log axis cannot show".to_string()
            } else {
                "no measured cell has this figure".to_string()
            },
        };
    }
    let measured = measured(data, &models);
    let legend = legend(&models, &has_data, |i, model| {
        legend_text(model, has_data[i], measured[i], spec.fit, fits[i].as_ref())
    });
    let mut caption = vec![spec.about.clone()];
    if let Some(sym) = spec.fit {
        let fitted: Vec<String> = models
            .iter()
            .zip(&fits)
            .filter_map(|(m, f)| f.map(|f| format!("{m} {}", fit_text(sym, &f))))
            .collect();
        if !fitted.is_empty() {
            caption.push(format!(
                "Power laws fitted by least squares on the medians in log space: {}.",
                fitted.join("; ")
            ));
        }
    }
    if bounded {
        caption.push(
            "Thin, finely dashed, in each model's colour: its bound, the throughput the work \
             alone allows it at each count (see the bound in the ranking); a point above its \
             bound beyond noise is a defect, flagged in the tables."
                .to_string(),
        );
    }
    for t in empty_panels {
        caption.push(format!("No {t} panel: no measured cell has it."));
    }
    if !dropped.is_empty() {
        let total: usize = dropped.iter().map(|d| d.2).sum();
        let which: Vec<String> = dropped
            .iter()
            .map(|(p, m, k)| format!("{m} in {p} ({k})"))
            .collect();
        caption.push(format!(
            "Left out, as a log axis cannot show values at or below zero: {total} value{}, \
             {}.",
            if total == 1 { "" } else { "s" },
            which.join(", ")
        ));
    }
    let unmeasured: Vec<&str> = missing(&models, &has_data, &measured, false);
    if !unmeasured.is_empty() {
        caption.push(format!(
            "Nothing to draw for {}: no cell of {} was measured (see the skipped and failed \
             cells).",
            unmeasured.join(", "),
            if unmeasured.len() == 1 { "it" } else { "them" }
        ));
    }
    let lacking: Vec<&str> = missing(&models, &has_data, &measured, true);
    if !lacking.is_empty() {
        caption.push(format!(
            "Nothing to draw for {}: measured, but without this figure.",
            lacking.join(", ")
        ));
    }
    Chart::Drawn {
        id: spec.id,
        title: spec.title.clone(),
        caption,
        figure: over_sizes(data, panels, legend),
        tables: Vec::new(),
    }
}

/// `t ∝ N^1.02, R² 0.99`.
pub(crate) fn fit_text(symbol: &str, f: &PowerLaw) -> String {
    format!("{symbol} ∝ N^{:.2}, R² {:.2}", f.exponent, f.r2)
}

/// Models with nothing in the figure, whose cells were (`measured`) or
/// were not measured.
fn missing<'a>(
    models: &'a [String],
    has_data: &[bool],
    ok: &[bool],
    measured: bool,
) -> Vec<&'a str> {
    models
        .iter()
        .zip(has_data.iter().zip(ok))
        .filter(|(_, (has, ok))| !**has && **ok == measured)
        .map(|(m, _)| m.as_str())
        .collect()
}

/// Whether each model has any measured cell.
/// A figure over the run's sizes (connections, descriptors, …): its
/// ticks and axis label are the plan's.
pub(super) fn over_sizes(data: &RunData, panels: Vec<Panel>, legend: Vec<Entry>) -> Figure {
    Figure {
        panels,
        legend,
        x_ticks: series::connections(data)
            .into_iter()
            .map(|n| n as f64)
            .collect(),
        x_label: data.plan.size_label.clone(),
        x_format: super::charts::XFormat::Count,
        columns: None,
    }
}

pub(super) fn measured(data: &RunData, models: &[String]) -> Vec<bool> {
    models
        .iter()
        .map(|m| series::measured(data, m) > 0)
        .collect()
}

/// One legend entry per model, in its look; `text` gets the model's index
/// and name.
pub(super) fn legend(
    models: &[String],
    has_data: &[bool],
    text: impl Fn(usize, &String) -> String,
) -> Vec<Entry> {
    let looks = crate::present::look::looks(&crate::server::names(), models);
    models
        .iter()
        .zip(looks)
        .enumerate()
        .map(|(i, (model, look))| Entry {
            look,
            text: text(i, model),
            has_data: has_data[i],
        })
        .collect()
}

fn legend_text(
    model: &str,
    has_data: bool,
    measured: bool,
    fit: Option<&str>,
    f: Option<&PowerLaw>,
) -> String {
    match (has_data, fit, f) {
        (false, _, _) if measured => format!("{model}: no data"),
        (false, _, _) => format!("{model}: no measured cell"),
        (true, Some(sym), Some(f)) => format!("{model}  {}", fit_text(sym, f)),
        (true, Some(_), None) => format!("{model}  (one connection count: no fit)"),
        (true, None, _) => model.to_string(),
    }
}
