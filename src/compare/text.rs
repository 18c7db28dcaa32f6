//! A comparison for people: the terminal's text and a pull request's
//! Markdown, from the same lines and tables (so they never disagree), which
//! the page ([`crate::report::compare`]) reuses. First the summary line,
//! then what differs and what one side has alone, then per work profile
//! the figure that ranks, the costs beside it, and memory per connection
//! (or, for two capacity searches, each cell's decided rates); the drift
//! warning and the gate last.

use std::fmt::Write as _;

use super::report::{Cell, Comparison, FigurePair, Runs, Unmatched, Verdict};
use crate::analysis::summary::{margin_text, times};
use crate::export::table::Table;
use crate::present::units::{format_count, seconds, sig3};
use crate::results::matrix::Primary;

/// The lines under the summary: differing settings, another machine,
/// cells on one side only, the test, warnings.
pub fn head_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(m) = &c.other_machine {
        out.push(m.clone());
    }
    if !c.differences.is_empty() {
        let list: Vec<String> = c
            .differences
            .iter()
            .map(|d| format!("{} {} → {}", d.key, d.base, d.new))
            .collect();
        out.push(format!("differs: {}", list.join("; ")));
    }
    let alone = |who: &str, cells: &[Unmatched]| {
        (!cells.is_empty()).then(|| {
            let list: Vec<String> = cells
                .iter()
                .map(|u| {
                    let counts: Vec<String> = u
                        .connections
                        .iter()
                        .map(|&n| format_count(n as f64))
                        .collect();
                    format!(
                        "{}{} at {}{}",
                        u.model,
                        u.work
                            .as_ref()
                            .map_or_else(String::new, |w| format!(" under {w}")),
                        crate::present::words::and_list(&counts),
                        u.why
                            .as_ref()
                            .map_or_else(String::new, |w| format!(" ({w})"))
                    )
                })
                .collect();
            format!("only in {who}: {}", list.join("; "))
        })
    };
    out.extend(alone("BASE", &c.only_base));
    out.extend(alone("NEW", &c.only_new));
    out.push(format!("test: {}", c.test));
    out.extend(c.warnings.iter().map(|w| format!("warning: {w}")));
    out
}

/// The lines after the tables: drift, gate.
pub fn tail_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(d) = &c.drift {
        out.push(format!("⚠ {d}"));
    }
    if let Some(g) = &c.gate {
        out.push(g.line.clone());
    }
    out
}

/// A figure's value in its unit.
fn value(p: Primary, v: f64) -> String {
    match p {
        Primary::Latency => seconds(v / 1e6),
        other => other.format(v),
    }
}

/// `1,234 (3 runs)`, `–`.
fn runs_text(r: &Runs, fmt: &dyn Fn(f64) -> String) -> String {
    match r.median {
        Some(m) if r.values.len() == 1 => format!("{} (1 run)", fmt(m)),
        Some(m) => format!(
            "{} ({} runs, {}–{})",
            fmt(m),
            r.values.len(),
            fmt(r.min.unwrap_or(m)),
            fmt(r.max.unwrap_or(m))
        ),
        None => "not measured".into(),
    }
}

/// What a verdict is called for this figure.
pub fn verdict_text(f: &FigurePair, worse: &str, better: &str) -> String {
    match f.verdict {
        Verdict::Slower => worse.to_string(),
        Verdict::Faster => better.to_string(),
        Verdict::Equivalent if f.interval == Some((1.0, 1.0)) => {
            "equivalent (the same runs)".into()
        }
        Verdict::Equivalent => "equivalent".into(),
        Verdict::Inconclusive => match (f.settle_runs, f.noise) {
            (Some(k), _) => format!("inconclusive (~{k} runs a side would settle it)"),
            (None, Some(n)) => format!("inconclusive (runs vary ±{} %)", sig3(n * 100.0)),
            _ => "inconclusive".into(),
        },
        Verdict::Untested if f.base.values.is_empty() || f.new.values.is_empty() => {
            "untested (not measured on a side)".into()
        }
        Verdict::Untested => "untested (a single run on a side)".into(),
    }
}

/// `a → b`.
fn arrow(a: Option<String>, b: Option<String>) -> String {
    let s = |x: Option<String>| x.unwrap_or_else(|| "–".into());
    format!("{} → {}", s(a), s(b))
}

/// The cells of each work profile, in order (`None`: no work axis).
pub fn by_work(c: &Comparison) -> Vec<(Option<String>, Vec<&Cell>)> {
    let mut out: Vec<(Option<String>, Vec<&Cell>)> = Vec::new();
    for cell in &c.cells {
        match out.iter_mut().find(|(w, _)| *w == cell.work) {
            Some((_, v)) => v.push(cell),
            None => out.push((cell.work.clone(), vec![cell])),
        }
    }
    out
}

/// The tables of one work profile: the figure that ranks, the costs, and
/// memory per connection.
pub fn tables(c: &Comparison, work: Option<&str>, cells: &[&Cell]) -> Vec<Table> {
    let p = c.primary.figure;
    let under = work.map_or_else(String::new, |w| format!(", work {w}"));
    let mut main = Table::new(
        format!(
            "{}, NEW over BASE ({} is better){under}",
            c.primary.label,
            if c.primary.higher_is_better {
                "higher"
            } else {
                "lower"
            }
        ),
        &[
            "model",
            "connections",
            "BASE",
            "NEW",
            "NEW/BASE [95 %]",
            "verdict",
        ],
    );
    for cell in cells {
        let mut verdict = verdict_text(&cell.primary, &c.primary.worse, &c.primary.better);
        if cell.gate_failed {
            verdict.push_str(" ✗ gate");
        }
        let d = &cell.disturbed;
        if d.base + d.new > 0 {
            verdict.push_str(&format!(" ⚠ disturbed runs kept: {} / {}", d.base, d.new));
        }
        if c.reference.as_deref() == Some(cell.model.as_str()) {
            verdict.push_str(" (the reference)");
        }
        let fmt = |v: f64| {
            if c.reference.is_some() && c.reference.as_deref() != Some(cell.model.as_str()) {
                format!("{}×", times(v))
            } else {
                value(p, v)
            }
        };
        main.rows.push(vec![
            cell.model.clone(),
            format_count(cell.connections as f64),
            runs_text(&cell.primary.base, &fmt),
            runs_text(&cell.primary.new, &fmt),
            super::ratio_text(&cell.primary),
            verdict,
        ]);
    }
    let mut worse = c.primary.worse.clone();
    if let Some(first) = worse.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    main.notes.push(format!(
        "Medians of the runs (min–max). {worse} or {} only when the whole 95 % interval of \
         NEW/BASE lies beyond {}; equivalent when it lies within it.",
        c.primary.better,
        margin_text(c.margin)
    ));
    if let Some(r) = &c.reference {
        main.notes.push(format!(
            "Figures are ratios to {r} in the same round, so drift the two sessions share cancels."
        ));
    }
    let mut costs = Table::new(
        format!("Latency and costs, BASE → NEW{under}"),
        &[
            "model",
            "connections",
            "p50",
            "p99",
            "p99.9",
            "latency",
            "server CPU/message",
            "fairness (Jain)",
            "limited by",
        ],
    );
    let us = |v: Option<f64>| v.map(|v| seconds(v / 1e6));
    for cell in cells {
        let q = |name: &str| cell.latency.iter().find(|q| q.name == name);
        let quant = |name: &str| {
            q(name).map_or_else(
                || "–".into(),
                |q| arrow(us(q.figure.base.median), us(q.figure.new.median)),
            )
        };
        let cpu = cell.server_cpu_per_message_us.as_ref().map_or_else(
            || cell.server_cpu_why.clone().unwrap_or_else(|| "–".into()),
            |f| {
                let v = match f.verdict {
                    Verdict::Slower => "costlier",
                    Verdict::Faster => "cheaper",
                    Verdict::Equivalent => "equivalent",
                    Verdict::Inconclusive => "inconclusive",
                    Verdict::Untested => "untested",
                };
                format!("{}, {v}", arrow(us(f.base.median), us(f.new.median)))
            },
        );
        let jain = |j: Option<f64>, s: Option<u64>| {
            j.map(|j| {
                let starved = s.filter(|s| *s > 0).map_or_else(String::new, |s| {
                    format!(", {} starved", format_count(s as f64))
                });
                format!("{j:.3}{starved}")
            })
        };
        let limited = match (&cell.limited_by.base, &cell.limited_by.new) {
            (a, b) if a == b => a.clone().unwrap_or_else(|| "–".into()),
            (a, b) => arrow(a.clone(), b.clone()),
        };
        costs.rows.push(vec![
            cell.model.clone(),
            format_count(cell.connections as f64),
            quant("p50"),
            quant("p99"),
            quant("p99.9"),
            cell.shift.clone(),
            cpu,
            arrow(
                jain(cell.jain.base, cell.starved.base),
                jain(cell.jain.new, cell.starved.new),
            ),
            limited,
        ]);
    }
    costs.notes.push(
        "Latency: p50, p90, p99 and p99.9 each tested across the runs as above (a shift \
         function; in an open loop corrected for coordinated omission); a quantile is tested \
         only where every run has 10/(1−q) latencies."
            .into(),
    );
    let mut out = vec![main, costs];
    let memory: Vec<_> = c
        .memory
        .iter()
        .filter(|m| m.work.as_deref() == work)
        .collect();
    if !memory.is_empty() {
        let mut t = Table::new(
            format!("Server memory per connection (anonymous PSS), BASE → NEW{under}"),
            &["model", "BASE", "NEW", "verdict"],
        );
        let kib = |v: Option<(f64, f64, f64)>| {
            v.map_or_else(
                || "–".into(),
                |(s, lo, hi)| {
                    let k = crate::present::units::kib;
                    format!("{} [{}, {}]", k(s), k(lo), k(hi))
                },
            )
        };
        for m in memory {
            t.rows.push(vec![
                m.model.clone(),
                kib(m.base),
                kib(m.new),
                m.verdict.clone(),
            ]);
        }
        t.notes.push(
            "The slope over the connection counts with its 95 % interval; more or less only \
             when the two intervals are apart."
                .into(),
        );
        out.push(t);
    }
    out
}

/// Two capacity searches, one table per work profile (`None`: no work
/// axis).
pub fn capacity_tables(c: &Comparison) -> Vec<(Option<String>, Table)> {
    use super::at_target::{bracket_text, range_text};
    let mut out: Vec<(Option<String>, Table)> = Vec::new();
    for cell in &c.capacity {
        if !out.iter().any(|(w, _)| *w == cell.work) {
            let under = cell
                .work
                .as_ref()
                .map_or_else(String::new, |w| format!(", work {w}"));
            let mut t = Table::new(
                format!("{}, NEW over BASE{under}", c.primary.label),
                &[
                    "model",
                    "connections",
                    "BASE held to missed",
                    "NEW held to missed",
                    "NEW/BASE",
                    "verdict",
                    "slots",
                    "BASE ended",
                    "NEW ended",
                ],
            );
            t.notes.push(format!(
                "Each side's capacity lies between the highest offered rate it held and the \
                 lowest it missed, each decided by its own interval; so NEW's over BASE's lies \
                 between NEW held / BASE missed and NEW missed / BASE held (open where a side \
                 decided no such rate). Lower or higher only when that whole range lies beyond \
                 {}; equivalent when it lies within it; untested when a side decided no rate.",
                margin_text(c.margin)
            ));
            out.push((cell.work.clone(), t));
        }
        let t = &mut out
            .iter_mut()
            .find(|(w, _)| *w == cell.work)
            .expect("its table")
            .1;
        let mut verdict = match cell.verdict {
            Verdict::Slower => "lower".to_string(),
            Verdict::Faster => "higher".into(),
            Verdict::Equivalent => "equivalent".into(),
            Verdict::Inconclusive if cell.low.is_none() && cell.high.is_none() => {
                "inconclusive: neither side decided an end that bounds the other".into()
            }
            Verdict::Inconclusive => "inconclusive: the range crosses the margin".into(),
            Verdict::Untested => "untested (no rate decided on a side)".into(),
        };
        if cell.gate_failed {
            verdict.push_str(" ✗ gate");
        }
        t.rows.push(vec![
            cell.model.clone(),
            format_count(cell.connections as f64),
            bracket_text(&cell.base),
            bracket_text(&cell.new),
            range_text(cell),
            verdict,
            format!("{} / {}", cell.base.slots, cell.new.slots),
            cell.base.end.clone(),
            cell.new.end.clone(),
        ]);
    }
    out
}

/// The comparison for the terminal.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "c10k compare {} → {}", c.base.path, c.new.path);
    let _ = writeln!(out, "{}", c.summary.line);
    // Warnings go to stderr, where the command prints them.
    for l in head_lines(c).iter().filter(|l| !l.starts_with("warning: ")) {
        let _ = writeln!(out, "  {l}");
    }
    for (work, cells) in by_work(c) {
        for t in tables(c, work.as_deref(), &cells) {
            let _ = write!(out, "\n{}", t.to_text());
        }
    }
    for (_, t) in capacity_tables(c) {
        let _ = write!(out, "\n{}", t.to_text());
    }
    let tail = tail_lines(c);
    if !tail.is_empty() {
        out.push('\n');
    }
    for l in tail {
        let _ = writeln!(out, "{l}");
    }
    out
}

/// The comparison as a pull-request comment: the summary in bold, the
/// figure that ranks as a table, the costs and memory folded.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**{}**\n", c.summary.line);
    let _ = writeln!(out, "`{}` → `{}`\n", c.base.path, c.new.path);
    for l in head_lines(c).iter().chain(&tail_lines(c)) {
        let _ = writeln!(out, "- {l}");
    }
    for (work, cells) in by_work(c) {
        let mut tables = tables(c, work.as_deref(), &cells).into_iter();
        if let Some(main) = tables.next() {
            let _ = write!(out, "\n{}", main.to_markdown());
        }
        for t in tables {
            let _ = write!(
                out,
                "\n<details><summary>{}</summary>\n\n{}\n</details>\n",
                t.title,
                t.to_markdown()
            );
        }
    }
    for (_, t) in capacity_tables(c) {
        let _ = write!(out, "\n{}", t.to_markdown());
    }
    out
}
