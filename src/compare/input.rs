//! One side of a comparison, read from disk: a results directory of `c10k
//! run` as it is ([`crate::results::dir::load`]), or `c10k load --json`
//! reports (one file, or a directory of them, one per repeat) wrapped as a
//! run of one cell per repeat, so that every figure is read the one way a
//! run's cells are ([`CellResult::metrics`]). A report's `--hdr` log, when
//! it lies beside it (same name, `.hdr`) or where its command wrote it, is
//! read for the latency curve. Cost: reading the files once.
//!
//! Damaged input is refused in one line that names the file and the line
//! (a damaged `results.jsonl`, a JSON of another schema, a plan that does
//! not parse); a partial last line (a run killed while writing) or a cell
//! recorded again is a warning, as `--resume` and `c10k report` treat it
//! ([`crate::results::dir::Problem::refuses`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use crate::client::plan::LoadKind;
use crate::client::report::{Report, SCHEMA_VERSION};
use crate::results::cell::{CellResult, Status};
use crate::results::dir::{self as results, PlanCheck, RunData};
use crate::results::matrix::{
    CellSpec, Order, Pin, Primary, Rate, RunPlan, Shape, Workload, WorkloadKind, RESULTS_VERSION,
};

/// What a side was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A results directory of `c10k run`.
    Run,
    /// `c10k load --json` reports, one per repeat.
    Load,
}

/// The name a load's cells go by (a load measures one server, whatever it
/// was).
pub const LOAD_MODEL: &str = "load";

/// One side, ready to compare.
#[derive(Debug, Clone)]
pub struct Side {
    pub path: PathBuf,
    pub kind: Kind,
    /// A run as recorded, or the loads as a run of one cell per repeat.
    pub data: RunData,
    /// Loads: the latency histogram of each repeat (by run) that has one.
    pub histograms: BTreeMap<usize, Histogram<u64>>,
    /// Read, with something the reader must know (one line each).
    pub warnings: Vec<String>,
}

impl Side {
    /// A run of this process's own, as a side named `path`: the run just
    /// made (`c10k run --baseline`), or the plan about to run, with no
    /// cell yet, whose comparability is checked before it runs.
    pub fn of_run(path: PathBuf, data: RunData) -> Side {
        Side {
            path,
            kind: Kind::Run,
            data,
            histograms: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

/// Reads `path`: a results directory, a directory of load reports, or one
/// load report. `Err` is one line naming the file (and its line where one
/// is at fault).
pub fn open(path: &Path, check: PlanCheck) -> Result<Side, String> {
    let mut side = read(path, check)?;
    let impossible = impossible_figures(&side);
    side.warnings.extend(impossible);
    Ok(side)
}

/// The measured runs whose figure no run can produce (negative, or not a
/// number), one line each: the comparison leaves them out, and says so.
fn impossible_figures(side: &Side) -> Vec<String> {
    let primary = side.data.plan.primary;
    side.data
        .cells
        .iter()
        .filter(|c| c.status == crate::results::cell::Status::Ok)
        .filter_map(|c| {
            let v = c.metrics().primary(primary)?;
            (!v.is_finite() || v < 0.0).then(|| {
                format!(
                    "{}: cell {}: {} {v} is not a measurement; that run is left out",
                    side.path.display(),
                    c.cell.id,
                    primary.label()
                )
            })
        })
        .collect()
}

fn read(path: &Path, check: PlanCheck) -> Result<Side, String> {
    if path.is_dir() {
        if path.join(results::PLAN).exists() {
            return run(path, check);
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(format!(
                "{}: neither a results directory of c10k run (no {}) nor a directory of \
                 c10k load --json reports (no *.json)",
                path.display(),
                results::PLAN
            ));
        }
        return loads(path, &files);
    }
    // What the path is, as the system says: a symlink loop is not "no such
    // file".
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{}: no such file or directory", path.display()));
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
        Ok(_) => {}
    }
    loads(path, &[path.to_path_buf()])
}

/// A results directory.
fn run(dir: &Path, check: PlanCheck) -> Result<Side, String> {
    let (data, problems) = results::load(dir, check).map_err(|e| format!("{e:#}"))?;
    let at = |p: &results::Problem| format!("{}/{p}", dir.display());
    if let Some(bad) = problems.iter().find(|p| p.refuses()) {
        let more = problems.iter().filter(|p| p.refuses()).count() - 1;
        return Err(if more == 0 {
            at(bad)
        } else {
            format!(
                "{} (and {more} more lines; c10k report {} lists each)",
                at(bad),
                dir.display()
            )
        });
    }
    let mut warnings: Vec<String> = problems.iter().map(at).collect();
    if data.environment.is_null() {
        warnings.push(format!(
            "{}: environment.json does not parse: the machines cannot be compared",
            dir.display()
        ));
    }
    Ok(Side {
        path: dir.to_path_buf(),
        kind: Kind::Run,
        data,
        histograms: BTreeMap::new(),
        warnings,
    })
}

/// Load reports, each one repeat, in file-name order.
fn loads(path: &Path, files: &[PathBuf]) -> Result<Side, String> {
    let mut reports = Vec::with_capacity(files.len());
    for f in files {
        reports.push((f.clone(), load_report(f)?));
    }
    let (first_path, first) = &reports[0];
    for (p, r) in &reports[1..] {
        let frame = |r: &Report| {
            (
                r.workload,
                r.message_bytes,
                r.depth,
                r.connections.requested,
                r.protocol,
            )
        };
        if frame(r) != frame(first) {
            return Err(format!(
                "{}: a {} load of {} connections, {} B, depth {}, beside {}'s {} load of {} \
                 connections, {} B, depth {}: the repeats of one side must be one load",
                p.display(),
                r.workload,
                r.connections.requested,
                r.message_bytes,
                r.depth,
                first_path.display(),
                first.workload,
                first.connections.requested,
                first.message_bytes,
                first.depth
            ));
        }
    }
    let mut warnings = Vec::new();
    let mut histograms = BTreeMap::new();
    for (i, (p, r)) in reports.iter().enumerate() {
        match histogram_of(p, r) {
            Ok(Some(h)) => {
                histograms.insert(i + 1, h);
            }
            Ok(None) => {}
            Err(w) => warnings.push(w),
        }
    }
    let data = run_of_loads(path, reports.into_iter().map(|(_, r)| r).collect());
    Ok(Side {
        path: path.to_path_buf(),
        kind: Kind::Load,
        data,
        histograms,
        warnings,
    })
}

/// The line (from 1) of the first `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map_or(1, |i| text[..i].matches('\n').count() + 1)
}

/// serde_json's message without its own " at line L column C".
fn bare(e: &serde_json::Error) -> String {
    let s = e.to_string();
    s.split(" at line ").next().unwrap_or(&s).to_string()
}

/// A `c10k load --json` report, checked to be one of this version.
pub fn load_report(path: &Path) -> Result<Report, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: Option<u32>,
    }
    let v: Version = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} line {} column {}: not JSON: {}",
            path.display(),
            e.line(),
            e.column(),
            bare(&e)
        )
    })?;
    match v.schema_version {
        None => {
            return Err(format!(
                "{}: not a c10k load report (no schema_version); give a results directory of \
                 c10k run, a c10k load --json file or a directory of them",
                path.display()
            ))
        }
        Some(n) if n != SCHEMA_VERSION => {
            return Err(format!(
                "{} line {}: a load report of schema v{n}, this c10k reads v{SCHEMA_VERSION}",
                path.display(),
                line_of(&text, "\"schema_version\"")
            ))
        }
        Some(_) => {}
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} line {} column {}: not a load report: {}",
            path.display(),
            e.line(),
            e.column(),
            bare(&e)
        )
    })
}

/// The histogram log of a report: `x.hdr` beside `x.json`, else the
/// `--hdr PATH` of its command (relative to the report's directory).
/// `Ok(None)` when there is none; `Err` a warning: a log that cannot be
/// read or is not this run's.
fn histogram_of(path: &Path, report: &Report) -> Result<Option<Histogram<u64>>, String> {
    let beside = path.with_extension("hdr");
    let named = || {
        let words = shlex::split(&report.command)?;
        let i = words.iter().position(|w| w == "--hdr")?;
        let p = PathBuf::from(words.get(i + 1)?);
        Some(if p.is_relative() {
            path.parent().unwrap_or(Path::new(".")).join(p)
        } else {
            p
        })
    };
    let log = if beside.is_file() {
        beside
    } else {
        match named().filter(|p| p.is_file()) {
            Some(p) => p,
            None => return Ok(None),
        }
    };
    let h = read_hdr(&log)?;
    if h.len() != report.latency_us.count {
        return Err(format!(
            "{}: {} latencies, its report {} has {}: not this run's, left out",
            log.display(),
            h.len(),
            path.display(),
            report.latency_us.count
        ));
    }
    Ok(Some(h))
}

/// Every histogram of an HdrHistogram interval log, added (values in
/// nanoseconds, as `c10k load --hdr` writes them).
pub fn read_hdr(path: &Path) -> Result<Histogram<u64>, String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut total: Option<Histogram<u64>> = None;
    let mut de = hdrhistogram::serialization::Deserializer::new();
    for (i, entry) in IntervalLogIterator::new(&bytes).enumerate() {
        let bad = |why: String| format!("{} entry {}: {why}", path.display(), i + 1);
        let LogEntry::Interval(h) = entry.map_err(|e| bad(format!("{e:?}")))? else {
            continue;
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(h.encoded_histogram())
            .map_err(|e| bad(format!("not base64: {e}")))?;
        let one: Histogram<u64> = de
            .deserialize(&mut raw.as_slice())
            .map_err(|e| bad(format!("not a histogram: {e:?}")))?;
        match &mut total {
            Some(t) => t.add(&one).map_err(|e| bad(format!("{e:?}")))?,
            None => total = Some(one),
        }
    }
    total.ok_or_else(|| format!("{}: no histogram in the log", path.display()))
}

/// The loads as a run: one model ([`LOAD_MODEL`]) at the connections
/// asked, one cell per repeat, the workload and the primary figure the
/// reports name.
fn run_of_loads(path: &Path, reports: Vec<Report>) -> RunData {
    let first = &reports[0];
    let n = first.connections.requested;
    let mut workload = Workload::closed(first.measured_seconds, first.warmup_seconds);
    workload.message_bytes = first.message_bytes;
    workload.protocol = first.protocol;
    workload.shape = Shape::Closed {
        depth: first.depth.max(1),
    };
    let primary = match first.workload {
        LoadKind::Open => {
            workload.rate = first.open_loop.as_ref().map(|o| Rate::Total(o.target_rate));
            Primary::Latency
        }
        LoadKind::Burst => {
            workload.shape = Shape::of(WorkloadKind::Burst);
            Primary::Time
        }
        LoadKind::Churn => {
            workload.shape = Shape::of(WorkloadKind::Churn);
            Primary::AcceptRate
        }
        LoadKind::Closed => Primary::Throughput,
    };
    let cells: Vec<CellSpec> = (1..=reports.len())
        .map(|run| CellSpec {
            offered: None,
            id: CellSpec::id_of(LOAD_MODEL, None, n, run),
            index: run - 1,
            model: LOAD_MODEL.into(),
            work: None,
            connections: n,
            run,
        })
        .collect();
    let environment = first.environment.clone();
    let plan = RunPlan {
        capacity: None,
        tune: None,
        tuned: Vec::new(),
        version: RESULTS_VERSION,
        experiment: "load".into(),
        title: format!("c10k load {}", first.target),
        command: first.command.clone(),
        models: vec![LOAD_MODEL.into()],
        connections: vec![n],
        work: Vec::new(),
        runs: reports.len(),
        auto_runs: None,
        order: Order::Interleaved,
        slots: None,
        looks: None,
        margin: crate::stats::paired::DEFAULT_MARGIN,
        repeat_disturbed: 0,
        pin: Pin::None,
        server_cpus: Vec::new(),
        client_cpus: first.client.cpus.clone().unwrap_or_default(),
        workload,
        primary,
        per_connection_csv: false,
        buffer: String::new(),
        server_settings: Default::default(),
        variants: Vec::new(),
        servers: Vec::new(),
        targets: Vec::new(),
        agents: None,
        bind: None,
        ready_timeout_seconds: 0.0,
        bench: None,
        bench_args: Vec::new(),
        size_label: "connections".into(),
        refused: Vec::new(),
        cells: cells.clone(),
    };
    let cells = cells
        .into_iter()
        .zip(reports)
        .map(|(cell, mut report)| {
            let failed = report.no_result();
            report.environment = serde_json::Value::Null;
            let status = match failed {
                Some(_) => Status::Failed,
                None => Status::Ok,
            };
            CellResult {
                reason: failed,
                wall_seconds: report.warmup_seconds + report.measured_seconds,
                load: Some(report),
                ..CellResult::new(cell, status)
            }
        })
        .collect();
    RunData {
        dir: path.to_path_buf(),
        plan,
        environment,
        cells,
        superseded: Vec::new(),
    }
}
