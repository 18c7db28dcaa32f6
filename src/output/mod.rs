//! Every output of a run, at the top of the crate (it reads the runner's
//! results and calls the report), so the writers in [`crate::export`] stay
//! at the bottom for every engine. The exports of a results directory, as
//! hyperfine writes them:
//! `results.csv` (one row per cell, every figure), `results.json` (the
//! plan, the environment, every cell and every answer the tables print,
//! under its schema: [`json`]), `results.md` (the
//! tables a person pastes into a document), and `report.html`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;

pub mod json;

use crate::report::Section;
use crate::results::dir::RunData;

/// Writes every export (and the report unless `report` is false); returns
/// the paths written. `sections`: the run's tables per work profile
/// ([`crate::report::sections`]).
pub fn write_all(
    data: &RunData,
    sections: &[Section],
    report: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let dir = &data.dir;
    let mut written = Vec::new();
    let csv = dir.join("results.csv");
    crate::export::target::write(&csv, &csv_bytes(data)?)
        .with_context(|| format!("cannot write {}", csv.display()))?;
    written.push(csv);
    let json = dir.join("results.json");
    crate::export::write_json(&json, &json::results(data))
        .with_context(|| format!("cannot write {}", json.display()))?;
    written.push(json);
    let md = dir.join("results.md");
    crate::export::target::write(&md, markdown(data, sections).as_bytes())
        .with_context(|| format!("cannot write {}", md.display()))?;
    written.push(md);
    if report {
        written.push(crate::report::write(data)?);
    }
    Ok(written)
}

/// One row per cell: its identity and outcome, then every metric (empty
/// where it does not apply). `work` is the cell's profile (`none` without
/// work), `work_bound` the term that set its bound (empty without work).
fn csv_bytes(data: &RunData) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fixed = [
        "id",
        "model",
        "connections",
        "run",
        "status",
        "reason",
        "wall_seconds",
        "server_instances",
        "work",
        "work_bound",
    ];
    let metric_names: Vec<String> =
        match serde_json::to_value(crate::results::cell::Metrics::default())? {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
    let mut header: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    header.extend(metric_names.iter().cloned());
    w.write_record(&header)?;
    for c in &data.cells {
        let metrics = serde_json::to_value(c.metrics())?;
        let mut row = vec![
            c.cell.id.clone(),
            c.cell.model.clone(),
            c.cell.connections.to_string(),
            c.cell.run.to_string(),
            serde_json::to_value(c.status)?
                .as_str()
                .unwrap_or("")
                .to_string(),
            c.reason.clone().unwrap_or_default(),
            format!("{:.3}", c.wall_seconds),
            c.server
                .as_ref()
                .map_or(String::new(), |s| s.instances.to_string()),
            c.cell.profile().to_string(),
            c.work_done
                .as_ref()
                .and_then(|w| w.bound.as_ref())
                .map_or(String::new(), |b| b.why.clone()),
        ];
        for name in &metric_names {
            row.push(match metrics.get(name) {
                Some(serde_json::Value::Number(n)) => n.to_string(),
                _ => String::new(),
            });
        }
        w.write_record(&row)?;
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// The Markdown summary: what ran, where, and every table (per work
/// profile, each under its heading).
fn markdown(data: &RunData, sections: &[Section]) -> String {
    let p = &data.plan;
    let esc = crate::export::table::escape_markdown;
    let mut out = format!("# c10k run {}\n\n{}\n\n", esc(&p.experiment), esc(&p.title));
    let ok = data
        .cells
        .iter()
        .filter(|c| c.status == crate::results::cell::Status::Ok)
        .count();
    let _ = writeln!(
        out,
        "{} of {} cells recorded, {ok} measured. Server CPUs {:?}, client CPUs {:?} (pin {:?}).\n",
        data.cells.len(),
        p.cells.len(),
        p.server_cpus,
        p.client_cpus,
        p.pin
    );
    let _ = writeln!(
        out,
        "Rerun: {}\n",
        crate::export::table::code_span(&p.command)
    );
    for section in sections {
        if let Some(h) = &section.heading {
            let _ = writeln!(out, "## {}\n", esc(h));
        }
        if let Some(line) = &section.disturbed {
            let _ = writeln!(out, "**{}**\n", esc(line));
        }
        for t in &section.tables {
            out.push_str(&t.to_markdown());
            out.push('\n');
        }
    }
    out
}

/// Writes a comparison where asked: its JSON, its Markdown and its page.
/// Each is tried whatever happened to the others; returns the paths
/// written and one line per file that could not be.
pub fn write_comparison(
    c: &crate::compare::report::Comparison,
    json: Option<&std::path::Path>,
    markdown: Option<&std::path::Path>,
    html: Option<&std::path::Path>,
) -> (Vec<PathBuf>, Vec<String>) {
    let mut written = Vec::new();
    let mut errors = Vec::new();
    let mut put = |path: Option<&std::path::Path>, bytes: anyhow::Result<Vec<u8>>| {
        let Some(path) = path else { return };
        match bytes.and_then(|b| {
            crate::export::target::write(path, &b)
                .with_context(|| format!("cannot write {}", path.display()))
        }) {
            Ok(()) => written.push(path.to_path_buf()),
            Err(e) => errors.push(format!("{e:#}")),
        }
    };
    put(
        json,
        serde_json::to_vec_pretty(c)
            .map(|mut b| {
                b.push(b'\n');
                b
            })
            .map_err(Into::into),
    );
    put(markdown, Ok(crate::compare::text::markdown(c).into_bytes()));
    put(
        html,
        crate::report::compare::render(c).map(String::into_bytes),
    );
    (written, errors)
}
