//! The page itself: one polyglot HTML5 document (also well-formed XML) with
//! its style inline, in this order: the answer first (a study's own tables,
//! its question answered here beside the published figures, then each
//! count's forest plot and the verdict at each connection count), what the run was and how many cells
//! were measured, the ranking, the skipped and failed cells, the charts,
//! the tables, the environment, and the command that reruns it. A table of
//! many columns is set wider than the text column, up to the window.

use std::fmt::Write as _;

use super::figures::{self, Chart};
use super::summary;
use super::{charts, environment};
use crate::export::table::escape_html;
use crate::present::units;
use crate::protocol::Protocol;
use crate::results::axis;
use crate::results::dir::RunData;
use crate::results::matrix::{Order, RunPlan, Shape};
use crate::results::series;

const STYLE: &str = "
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif;
  margin: 0 auto; max-width: 1000px; padding: 1.5em; color: #222; background: #fff;
  line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.subtitle { font-size: 1.1em; color: #555; margin-top: 0; }
.counts span { display: inline-block; margin-right: 1.2em; font-weight: 600; }
.counts .ok { color: #2e7d32; }
.counts .skipped { color: #8a6d00; }
.counts .failed { color: #c62828; }
.counts .not-run { color: #555; }
figure { margin: 1.5em 0 2.5em 0; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figure.forest { margin: 1em 0 1.5em 0; }
figcaption { font-size: 0.92em; color: #333; margin-top: 0.5em; }
figcaption strong { color: #111; }
p.skipped-chart { color: #555; font-style: italic; }
table { border-collapse: collapse; margin: 1em 0 0.4em 0; font-size: 0.92em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f5f5f5; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
div.scroll { overflow-x: auto; }
td details { display: inline; }
td details summary { cursor: pointer; white-space: nowrap; }
td details[open] summary { margin-bottom: 0.2em; }
div.wide { width: calc(100vw - 3em); margin-left: calc(50% - 50vw + 1.5em); }
div.wide table { margin-left: auto; margin-right: auto; font-size: 0.76em; }
div.wide th, div.wide td { padding: 0.25em 0.35em; }
div.wide p.note { max-width: 1000px; margin-left: auto; margin-right: auto; }
p.note { font-size: 0.88em; color: #555; margin: 0.2em 0 1.2em 0; }
p.disturbed { background: #fff4e5; border-left: 4px solid #e8a33d; padding: 0.4em 0.8em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1.2em; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 0.8em; overflow-x: auto;
  white-space: pre-wrap; word-break: break-all; }
code { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 0.92em; }
";

/// The page's start, to `<body>`: its title and style (the report's and
/// the comparison's pages look alike).
pub(super) fn head(title: &str) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape_html(title)
    );
    out
}

/// The whole page.
pub fn render(data: &RunData) -> anyhow::Result<String> {
    let plan = &data.plan;
    let mut out = head(&format!("c10k {}: {}", plan.experiment, plan.title));
    let _ = write!(
        out,
        "<header>\n<h1>c10k — {}</h1>\n<p class=\"subtitle\">{}</p>\n</header>\n",
        escape_html(&plan.experiment),
        escape_html(&plan.title)
    );

    // Every section per work profile, under its heading (a run without a
    // work axis is one part, unheaded).
    let parts = axis::parts(data);
    let tables: Vec<super::tables::RunTables> = parts
        .iter()
        .map(|p| super::tables::RunTables::of(&p.data))
        .collect();
    let heading = |out: &mut String, part: &axis::Part| {
        if let Some(h) = part.heading() {
            let _ = writeln!(out, "<h3>{}</h3>", escape_html(&h));
        }
    };
    // The answer first: a study's own tables (its question, answered with
    // this machine's numbers beside the published ones), else the verdict
    // at each connection count.
    if tables.iter().any(|t| !t.study.is_empty()) {
        out.push_str("<section id=\"study\">\n<h2>The study's tables, measured here</h2>\n");
        for (part, t) in parts.iter().zip(&tables) {
            heading(&mut out, part);
            for t in &t.study {
                out.push_str(&boxed(t));
            }
        }
        out.push_str("</section>\n");
    }
    if tables.iter().any(|t| !t.verdict.is_empty()) {
        out.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n");
        for (i, (part, t)) in parts.iter().zip(&tables).enumerate() {
            if t.verdict.is_empty() {
                continue;
            }
            heading(&mut out, part);
            if let Some(line) = crate::analysis::disturbed::headline(&part.data) {
                let _ = writeln!(out, "<p class=\"disturbed\">{}</p>", escape_html(&line));
            }
            // Ids stay unique across the profiles: `forest-c100-w2`.
            let suffix = part
                .work
                .map_or_else(String::new, |_| format!("-w{}", i + 1));
            if part.data.plan.capacity.is_none() {
                out.push_str(&super::forest::html(&part.data, &suffix)?);
            }
            for t in &t.verdict {
                out.push_str(&boxed(t));
            }
        }
        out.push_str("</section>\n");
    }

    out.push_str("<section id=\"about\">\n<h2>What this is</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", escape_html(&about(plan)));
    out.push_str(&counts(data));
    out.push_str("</section>\n");

    out.push_str("<section id=\"ranking\">\n<h2>Ranking</h2>\n");
    for (part, t) in parts.iter().zip(&tables) {
        heading(&mut out, part);
        for t in &t.ranking {
            out.push_str(&boxed(t));
        }
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"problems\">\n<h2>Skipped and failed cells</h2>\n");
    let problems = summary::problems_table(data);
    if problems.rows.is_empty() {
        out.push_str("<p>None: every cell that ran was measured.</p>\n");
    } else {
        out.push_str(&boxed(&problems));
    }
    out.push_str("</section>\n");

    out.push_str(
        "<section id=\"charts\">\n<h2>Charts</h2>\n<p>The cell's size (connections, or what \
         the benchmark counts) runs across every chart on a log axis. Each point is the median of a model's repeats at that connection count, \
         its whiskers the smallest and largest; models at the same count are set a few pixels \
         apart so their whiskers stay visible. A model keeps its colour and marker in every \
         chart.</p>\n",
    );
    for (i, part) in parts.iter().enumerate() {
        heading(&mut out, part);
        // Ids stay unique across the profiles: `fig-throughput-w2`.
        let suffix = part
            .work
            .map_or_else(String::new, |_| format!("-w{}", i + 1));
        if part.data.plan.capacity.is_some() {
            for (n, chart) in super::curves::charts(&part.data) {
                out.push_str(&chart_html(&chart, &format!("-c{n}{suffix}"))?);
            }
            continue;
        }
        let mut charts = figures::charts(&part.data);
        // Memory per connection, after throughput as it always was: its own
        // builder, since a cell there may be below what one sample resolves.
        charts.insert(3.min(charts.len()), super::memory::chart(&part.data));
        for chart in charts {
            out.push_str(&chart_html(&chart, &suffix)?);
        }
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"tables\">\n<h2>Tables</h2>\n");
    for (part, t) in parts.iter().zip(&tables) {
        heading(&mut out, part);
        out.push_str(&boxed(&t.summary));
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"environment\">\n<h2>Environment</h2>\n");
    out.push_str(&environment::section(&data.environment, plan));
    out.push_str("</section>\n");

    let _ = write!(
        out,
        "<section id=\"rerun\">\n<h2>Rerun this</h2>\n<pre><code>{}</code></pre>\n</section>\n",
        escape_html(&plan.command)
    );
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

/// Columns from which a table is set wide: out of the text column to the
/// window's width, in a smaller type. The thesis's Table 2 with every
/// model has 18 (the published figures last), which the 1000 px column
/// would hide behind a scrollbar.
const WIDE_COLUMNS: usize = 10;

/// A table in a box that scrolls sideways when it is still wider than the
/// window; a wide one's box is the window's width.
pub(super) fn boxed(table: &crate::export::table::Table) -> String {
    let class = if table.header.len() >= WIDE_COLUMNS {
        "scroll wide"
    } else {
        "scroll"
    };
    format!("<div class=\"{class}\">\n{}</div>\n", table.to_html())
}

/// A chart as a `<figure>` whose id is `fig-` its own, then `suffix`.
pub(super) fn chart_html(chart: &Chart, suffix: &str) -> anyhow::Result<String> {
    match chart {
        Chart::Skipped { title, why } => Ok(format!(
            "<p class=\"skipped-chart\">{}: no chart, {}.</p>\n",
            escape_html(title),
            escape_html(why)
        )),
        Chart::Drawn {
            id,
            title,
            caption,
            figure,
            tables,
        } => {
            let svg = charts::svg(figure)?;
            let svg = svg.replacen(charts::SVG_XMLNS, "", 1).replacen(
                "<svg ",
                &format!("<svg role=\"img\" aria-label=\"{}\" ", escape_html(title)),
                1,
            );
            let mut out = format!("<figure id=\"fig-{id}{suffix}\">\n{svg}<figcaption><strong>");
            let _ = write!(out, "{}.</strong>", escape_html(title));
            for sentence in caption {
                let _ = write!(out, " {}", escape_html(sentence));
            }
            out.push_str("</figcaption>\n</figure>\n");
            for t in tables {
                out.push_str(&boxed(t));
            }
            Ok(out)
        }
    }
}

/// What the run did, in a paragraph.
fn about(plan: &RunPlan) -> String {
    let models = plan.models.join(", ");
    let conns: Vec<String> = plan.connections.iter().map(|n| n.to_string()).collect();
    let order = match plan.order {
        Order::Interleaved => "interleaved: one repeat of every cell before the next",
        Order::Sequential => "one cell's repeats back to back",
    };
    if plan.bench.is_some() {
        return format!(
            "c10k ran a micro-benchmark ({}) for each variant ({models}) at {} {}, {} \
             ({order}), each cell a run of the benchmark as its own process. Charts show \
             the median of the repeats with their range; the tables give the numbers.",
            plan.experiment,
            conns.join(", "),
            plan.size_label,
            times(plan),
        );
    }
    format!(
        "c10k ran each server model ({models}) as its own process at {} connection{}{}, {} \
         ({order}), and measured it from outside with its load generator: {}. \
         Charts show the median of the repeats with their range; the tables give the \
         numbers. Every server runs the same echo state machine, so a difference is how \
         the model waits and who runs the handler.{}{}",
        conns.join(", "),
        if plan.connections == [1] { "" } else { "s" },
        under_work(plan),
        times(plan),
        workload(plan),
        if plan.work.is_empty() {
            ""
        } else {
            " Each work profile is ranked and judged on its own, each figure beside the bound \
             the work alone allows the model (drawn thin and dashed in its colour in the \
             throughput chart); a server that is not c10k's cannot be given work and runs \
             under none only."
        },
        method(plan)
    )
}

/// How the cells were measured, a sentence: in resident slots, or one at
/// a time.
fn method(plan: &RunPlan) -> String {
    match plan.slots {
        Some(s) => format!(
            " The servers of each count stayed up together, each holding its connections, \
             and the load moved between them in slots of {} ({} of each a warm-up, not \
             measured), one slot per server in each round, in an order shuffled every round, \
             so two models were compared within seconds, {}; a record with no slot (a count \
             too large to hold at once) was measured on its own.",
            crate::present::units::seconds(s.seconds),
            crate::present::units::seconds(s.warmup_seconds),
            s.instances.said()
        ),
        None => {
            " Each cell was measured on its own: its server started, measured, stopped.".to_string()
        }
    }
}

/// `, under each of the work profiles none, block:1ms (a request is one
/// message: the server does its work, then echoes it)`; empty without the
/// axis.
fn under_work(plan: &RunPlan) -> String {
    if plan.work.is_empty() {
        return String::new();
    }
    format!(
        ", under each of the work profiles {} (a request is one message: the server does its \
         work, then echoes it)",
        crate::present::words::list(&plan.work)
    )
}

/// `3 times each`, or for `--runs auto` how many and until when.
fn times(plan: &RunPlan) -> String {
    if let Some(l) = plan.looks {
        return format!(
            "in looks of {} rounds, the models not yet told apart from the best going on, until \
             each was decided, after {} looks or within {} (every interval at {}, Pocock's \
             level for {} looks, so that together they keep 5 %)",
            l.every,
            l.most,
            units::seconds(l.budget_seconds),
            crate::analysis::summary::level_text(l.level()),
            l.most
        );
    }
    match plan.auto_runs {
        Some(a) => format!(
            "{} to {} times each, until the 95 % interval of the median was within ±{} % of it",
            a.min,
            a.max,
            units::sig3(a.tolerance * 100.0)
        ),
        None => format!(
            "{} time{} each",
            plan.runs,
            if plan.runs == 1 { "" } else { "s" }
        ),
    }
}

fn workload(plan: &RunPlan) -> String {
    let w = &plan.workload;
    let text = workload_kind(w);
    match w.connect_rate {
        Some(r) => format!(
            "{text}; connections opened at {} a second",
            units::amount(r)
        ),
        None => text,
    }
}

fn workload_kind(w: &crate::results::matrix::Workload) -> String {
    let bytes = match (&w.payload, w.protocol) {
        (_, Protocol::Http) if w.message_bytes == 0 => "an HTTP/1.1 GET / (keep-alive)".to_string(),
        (_, Protocol::Http) => format!(
            "an HTTP/1.1 POST / of {} bytes (keep-alive)",
            w.message_bytes
        ),
        (Some(p), _) => format!("the {}-byte message \"{p}\"", w.message_bytes),
        (None, _) => format!("a {}-byte message", w.message_bytes),
    };
    let timed = format!(
        "for {} s after {} s of warm-up",
        units::sig3(w.duration_seconds),
        units::sig3(w.warmup_seconds)
    );
    match (w.shape, w.rate) {
        (Shape::Burst { rounds }, _) => format!(
            "each cell connects every socket, sends {bytes} on all of them at once and times \
             until every echo is back ({} round{}, the mean reported)",
            rounds,
            if rounds == 1 { "" } else { "s" }
        ),
        (Shape::Closed { depth }, Some(rate)) => {
            let rate = rate.text();
            let work = match w.messages_for(1) {
                Some(m) => format!(
                    "{m} message{} on every connection, then the cell ends",
                    if m == 1 { "" } else { "s" }
                ),
                None => timed,
            };
            format!(
                "open loop at {rate}: {bytes} sent on each connection's schedule (its phase \
                 staggered over the interval) whatever the server's pace, at most {} in flight \
                 per connection, {work}; latency counted from when each message was due \
                 (corrected for coordinated omission)",
                depth
            )
        }
        (Shape::Closed { depth }, None) => {
            let depth = format!(
                "{} message{} in flight per connection",
                depth,
                if depth == 1 { "" } else { "s" }
            );
            match (w.total_messages, w.messages_per_connection) {
                (Some(t), _) => format!(
                    "{t} request/response pairs of {bytes} split evenly over the connections, \
                     {depth}, timed from first send to last echo"
                ),
                (None, Some(m)) => format!(
                    "{m} request/response pairs of {bytes} on every connection, {depth}, \
                     timed from first send to last echo"
                ),
                (None, None) => {
                    format!("closed loop with {bytes}, {depth}, {timed}")
                }
            }
        }
        (Shape::Churn { churn_echo }, _) => format!(
            "connections opened{} and closed as fast as the server takes them, as many at \
             once as the cell's connection count, {timed}",
            if churn_echo {
                format!(", echoing {bytes},")
            } else {
                String::new()
            }
        ),
    }
}

fn counts(data: &RunData) -> String {
    let c = series::counts(data);
    let mut out = format!(
        "<p class=\"counts\">Cells: <span class=\"ok\">{} measured</span> \
         <span class=\"skipped\">{} skipped</span> <span class=\"failed\">{} failed</span>",
        c.ok, c.skipped, c.failed
    );
    if c.not_run > 0 {
        let _ = write!(
            out,
            " <span class=\"not-run\">{} not run (the run stopped before them)</span>",
            c.not_run
        );
    }
    let _ = writeln!(out, " of {} planned.</p>", data.plan.cells.len());
    out
}
