//! Every output of a run, at the top of the crate (it reads the runner's
//! results and calls the report), so the writers in [`crate::export`] stay
//! at the bottom for every engine. The exports of a results directory, as
//! hyperfine writes them:
//! `results.csv` (one row per cell, every figure; memory per connection
//! only where the cell resolves a cost, as the tables read it), `results.json` (the
//! plan, the environment, every cell and every answer the tables print,
//! under its schema: [`json`]), `results.md` (the
//! tables a person pastes into a document), and `report.html`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;

pub mod json;

use crate::analysis::memory::{self, CellsCost, Kind};
use crate::report::Section;
use crate::results::cell::CellResult;
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

/// The memory per connection among a cell's metrics, each with the kind
/// the memory tables read it as.
const MEMORY: [(&str, Kind); 3] = [
    ("user_kib_per_connection", Kind::User),
    ("virtual_kib_per_connection", Kind::Virtual),
    ("kernel_kib_per_connection", Kind::Kernel),
];

/// `c`'s memory per connection of `kind`, KiB, by the tables' one rule
/// ([`CellsCost`]): a figure only where the cell resolves a cost above
/// zero; `None` for a fall (memory the rest of the system gave back: never
/// a negative cost) or a delta below what one cell resolves. `cpus`:
/// online where the run took place.
fn memory_cost(c: &CellResult, kind: Kind, cpus: usize) -> Option<f64> {
    let delta = memory::delta(c, kind, cpus)?;
    match CellsCost::of(&[&delta])? {
        CellsCost::Median(kib) => Some(kib),
        CellsCost::NoneSeen { .. } | CellsCost::Below(_) => None,
    }
}

/// One row per cell: its identity and outcome, then every metric (empty
/// where it does not apply, and memory per connection where the cell
/// resolves no cost: [`memory_cost`]). `work` is the cell's profile
/// (`none` without work), `work_bound` the term that set its bound (empty
/// without work); `protocol` what the cell spoke (echo or http);
/// `offered_rate` the messages per second a capacity
/// search offered the slot, `cost_round` its round of the cost phase and
/// `recheck` its round of the recheck (all empty outside a search, the
/// rounds empty on a search step).
fn csv_bytes(data: &RunData) -> anyhow::Result<Vec<u8>> {
    // As the memory tables read it (1 where it was not recorded).
    let cpus = data.environment["cpus_online"].as_u64().unwrap_or(1) as usize;
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
        "protocol",
        "offered_rate",
        "cost_round",
        "recheck",
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
            data.plan.workload.protocol.to_string(),
            c.cell.offered.map_or(String::new(), |o| o.rate.to_string()),
            c.cell
                .offered
                .and_then(|o| o.cost_round)
                .map_or(String::new(), |r| r.to_string()),
            c.cell
                .offered
                .and_then(|o| o.recheck)
                .map_or(String::new(), |r| r.to_string()),
        ];
        for name in &metric_names {
            let memory = MEMORY.iter().find(|(m, _)| m == name);
            row.push(match (memory, metrics.get(name)) {
                (Some(&(_, kind)), _) => memory_cost(c, kind, cpus).map_or(String::new(), |kib| {
                    serde_json::Value::from(kib).to_string()
                }),
                (None, Some(serde_json::Value::Number(n))) => n.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::kernel::KernelMemory;
    use crate::metrics::tree::TreeMemory;
    use crate::results::cell::ServerSide;
    use crate::results::dir::Figures;

    /// `c` held `n` connections, its kernel memory (system-wide) moving by
    /// `kernel` KiB a connection and its server's anonymous memory by
    /// `user`.
    fn held(c: &mut CellResult, n: usize, kernel: f64, user: f64) {
        c.cell.connections = n;
        let kib = |per: f64| (per * n as f64) as i64;
        let kernel_at = |slab: i64| KernelMemory {
            slab_kib: slab as u64,
            tcp_buffers_kib: 0,
            tcp_sockets: 0,
        };
        c.kernel_before = Some(kernel_at(1_000_000));
        c.kernel_loaded = Some(kernel_at(1_000_000 + kib(kernel)));
        let tree = |pss: i64| TreeMemory {
            processes: 1,
            pss_anon_kib: pss as u64,
            vm_size_kib: 100_000,
            ..TreeMemory::default()
        };
        c.server = Some(ServerSide {
            instances: 1,
            args: Vec::new(),
            cpu_user_seconds: 0.0,
            cpu_system_seconds: 0.0,
            max_rss_kib: 0,
            idle: tree(100_000),
            loaded: tree(100_000 + kib(user)),
            end: tree(100_000 + kib(user)),
            summaries: Vec::new(),
            idle_cpus: None,
            cpu_error_seconds: None,
        });
    }

    #[test]
    fn results_csv_never_holds_a_negative_cost() {
        let mut data = RunData::example_of(&[("epoll", vec![Figures::default(); 4])]);
        data.environment = serde_json::json!({"cpus_online": 1});
        // On one CPU a cell resolves 1,532 KiB of kernel memory: -14 and
        // +3 KiB over 1,000 connections are a fall and a cost, +1 KiB is
        // below resolution, as -2 KiB is over 100.
        held(&mut data.cells[0], 1_000, -14.0, -2.0);
        held(&mut data.cells[1], 1_000, 3.0, 5.0);
        held(&mut data.cells[2], 1_000, 1.0, 0.0);
        held(&mut data.cells[3], 100, -2.0, 0.0);
        let bytes = csv_bytes(&data).unwrap();
        let mut r = csv::Reader::from_reader(bytes.as_slice());
        let header = r.headers().unwrap().clone();
        let at = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (kernel, user) = (
            at("kernel_kib_per_connection"),
            at("user_kib_per_connection"),
        );
        let rows: Vec<(String, String)> = r
            .records()
            .map(|row| {
                let row = row.unwrap();
                (row[kernel].to_string(), row[user].to_string())
            })
            .collect();
        let pair = |k: &str, u: &str| (k.to_string(), u.to_string());
        assert_eq!(
            rows,
            [pair("", ""), pair("3.0", "5.0"), pair("", ""), pair("", "")]
        );
    }
}
