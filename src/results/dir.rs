//! A results directory: `plan.json` (the matrix, written first, and again
//! before each cell `--runs auto` adds),
//! `environment.json` (recorded once), `results.jsonl` (one line appended
//! and synced after every cell), and everything made from them: the
//! exports and `report.html`.
//!
//! One definition of a record serves the reader ([`load`]) and the
//! appender ([`Appender`]) alike ([`record`]): a line of `results.jsonl`
//! that parses as a [`CellResult`], whether or not it ends in a newline. A
//! run killed mid-write leaves at most a partial last line (no newline,
//! does not parse): reading reports it as such, and the appender cuts it
//! before appending; a last record that lacks only its newline is counted
//! and completed, never cut. Every other line that is not a result of the
//! plan (unreadable, of another plan, a cell recorded again) is a
//! [`Problem`] with its line number, never dropped in silence. Blank lines
//! hold nothing and are passed over.
//!
//! A `c10k run` holds an exclusive lock on `results.jsonl` from before it
//! reads the directory until it exits ([`super::lock`]), and appends with
//! O_APPEND, so no write lands at a stale offset.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::cell::CellResult;
use super::identity::Identity;
use super::matrix::{RunPlan, READS};

pub(crate) const PLAN: &str = "plan.json";
pub(crate) const ENVIRONMENT: &str = "environment.json";
pub(crate) const RESULTS: &str = "results.jsonl";

/// Everything a finished (or interrupted) run left behind.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub plan: RunPlan,
    /// The environment as recorded once at the start (see [`crate::env`]).
    pub environment: serde_json::Value,
    /// Results of the plan's cells in the order they were recorded, each
    /// cell once: its last repeat.
    pub cells: Vec<CellResult>,
    /// Runs disturbed from outside that a repeat of the same cell
    /// replaced ([`crate::analysis::disturbed`]), in the order recorded.
    pub superseded: Vec<CellResult>,
}

/// What one synthetic cell measured, for unit tests.
#[cfg(test)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Figures {
    pub throughput: f64,
    pub p99_us: f64,
    /// The server's CPU over the cell, seconds (0: not observed).
    pub server_cpu_s: f64,
    pub idle_cpus: Option<f64>,
}

#[cfg(test)]
impl RunData {
    /// A closed-loop run at 10 connections of each model with one cell per
    /// round, measuring what its figures say, for unit tests.
    pub(crate) fn example_of(models: &[(&str, Vec<Figures>)]) -> RunData {
        let names: Vec<&str> = models.iter().map(|m| m.0).collect();
        let runs = models.iter().map(|m| m.1.len()).max().unwrap_or(1);
        let plan = RunPlan::example(&names, &[10], runs);
        let mut data = RunData::example(plan.clone());
        for spec in &plan.cells {
            let figures = &models
                .iter()
                .find(|m| m.0 == spec.model)
                .expect("a model")
                .1;
            let Some(f) = figures.get(spec.run - 1) else {
                continue;
            };
            let mut load = crate::client::report::example(10, 10_000, 640_000);
            load.throughput.messages_per_second = f.throughput;
            load.latency_us.p99 = f.p99_us;
            load.latency_us.count = u64::from(f.p99_us > 0.0);
            let server =
                (f.server_cpu_s > 0.0 || f.idle_cpus.is_some()).then(|| super::cell::ServerSide {
                    instances: 1,
                    args: Vec::new(),
                    cpu_user_seconds: f.server_cpu_s,
                    cpu_system_seconds: 0.0,
                    max_rss_kib: 0,
                    idle: Default::default(),
                    loaded: Default::default(),
                    end: Default::default(),
                    summaries: Vec::new(),
                    idle_cpus: f.idle_cpus,
                    cpu_error_seconds: None,
                });
            data.cells.push(CellResult {
                wall_seconds: 0.1,
                server,
                load: Some(load),
                ..CellResult::new(spec.clone(), super::cell::Status::Ok)
            });
        }
        data
    }

    /// A run of `plan` with no results, for unit tests.
    pub(crate) fn example(plan: RunPlan) -> RunData {
        RunData {
            dir: PathBuf::from("/nonexistent"),
            plan,
            environment: serde_json::Value::Null,
            cells: Vec::new(),
            superseded: Vec::new(),
        }
    }
}

impl RunData {
    /// Cells of the plan with no result yet, in run order.
    pub(crate) fn remaining(&self) -> Vec<super::matrix::CellSpec> {
        let done: std::collections::BTreeSet<&str> =
            self.cells.iter().map(|c| c.cell.id.as_str()).collect();
        self.plan
            .cells
            .iter()
            .filter(|c| !done.contains(c.id.as_str()))
            .cloned()
            .collect()
    }

    /// Why the run has no result, when no cell of it was measured: one line
    /// that starts with the cause (how many cells failed and were skipped),
    /// then the first one's reason. `None` when a cell was measured, or
    /// none has a result yet.
    pub fn no_result(&self) -> Option<String> {
        use super::cell::Status;
        if self.cells.is_empty() || self.cells.iter().any(|c| c.status == Status::Ok) {
            return None;
        }
        let count = |s: Status| self.cells.iter().filter(|c| c.status == s).count();
        let counts = [
            (count(Status::Failed), "failed"),
            (count(Status::Skipped), "skipped"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect::<Vec<_>>()
        .join(", ");
        let first = &self.cells[0];
        let reason = first
            .reason
            .as_deref()
            .unwrap_or("no reason recorded")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        Some(format!(
            "no cell was measured ({counts} of {}): the first, {}{} at {} {}, {}: {reason}",
            self.cells.len(),
            first.cell.model,
            first
                .cell
                .work
                .as_ref()
                .map_or_else(String::new, |w| format!(" under {w}")),
            crate::present::units::format_count(first.cell.connections as f64),
            self.plan.size_label,
            match first.status {
                Status::Skipped => "skipped",
                _ => "failed",
            },
        ))
    }
}

/// A line of `results.jsonl` that is not a result of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// From 1.
    pub line: usize,
    pub what: Trouble,
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trouble {
    /// The last line, without its newline, does not parse: a run killed
    /// while writing it. Nothing readable is lost; a resume cuts it.
    Partial(String),
    /// A line that does not parse as a result (the parser's words).
    Unreadable(String),
    /// A result, but not of this plan: why.
    OtherPlan(String),
    /// A second result for a cell; the first (on line `first`) is kept.
    Again { id: String, first: usize },
}

impl Problem {
    /// Only the trace of a run killed while writing its last line.
    pub fn is_partial(&self) -> bool {
        matches!(self.what, Trouble::Partial(_))
    }

    /// Whether the line makes the directory one nobody should build on:
    /// a line that is not a result, or a result of another plan. A partial
    /// last line (a killed run) and a cell recorded again (its first
    /// result kept) lose nothing the plan holds: a warning. The one rule
    /// for every reader: `--resume` refuses the first kind and goes on
    /// past the second, `c10k report` exits 1 on the first and 0 on the
    /// second, `c10k compare` likewise.
    pub fn refuses(&self) -> bool {
        matches!(self.what, Trouble::Unreadable(_) | Trouble::OtherPlan(_))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{RESULTS} line {}: ", self.line)?;
        match &self.what {
            Trouble::Partial(e) => write!(
                f,
                "a partial last line, not a result (a run killed while writing it: {e})"
            ),
            Trouble::Unreadable(e) => write!(f, "not a result: {e}"),
            Trouble::OtherPlan(why) => write!(f, "not a result of this plan: {why}"),
            Trouble::Again { id, first } => write!(
                f,
                "cell {id} recorded again (first on line {first}, which is kept)"
            ),
        }
    }
}

/// The one definition of a record: a line (without its newline) that
/// parses as a [`CellResult`]. The error is the parser's, with its column
/// (the line number is the caller's to give).
fn record(line: &[u8]) -> Result<CellResult, String> {
    serde_json::from_slice(line).map_err(|e| {
        let text = e.to_string();
        let at = format!(" at line {} column {}", e.line(), e.column());
        match text.strip_suffix(&at) {
            Some(m) => format!("{m} (column {})", e.column()),
            None => text,
        }
    })
}

/// The lines of `results.jsonl`: number (from 1), text without its
/// newline, and whether a newline ended it.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8], bool)> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| match l.strip_suffix(b"\n") {
            Some(text) => (i + 1, text, true),
            None => (i + 1, l, false),
        })
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// The results of `plan` in `bytes` (each cell's first, in file order) and
/// every line that is not one.
fn records(plan: &RunPlan, bytes: &[u8]) -> Records {
    let identity = Identity::of(plan);
    // Per cell id: the line of its first record, and where it is kept.
    let mut first: HashMap<String, (usize, usize)> = HashMap::new();
    let mut cells: Vec<CellResult> = Vec::new();
    let (mut superseded, mut problems) = (Vec::new(), Vec::new());
    for (line, text, ended) in lines(bytes) {
        if blank(text) {
            continue;
        }
        let what = match record(text) {
            Err(e) if !ended => Trouble::Partial(e),
            Err(e) => Trouble::Unreadable(e),
            Ok(c) => match identity.mismatch(&c) {
                Some(why) => Trouble::OtherPlan(why),
                None => match first.get(&c.cell.id) {
                    // A repeat of a disturbed run replaces it.
                    Some(&(_, at)) if cells[at].repeat < c.repeat => {
                        first.insert(c.cell.id.clone(), (line, at));
                        superseded.push(std::mem::replace(&mut cells[at], c));
                        continue;
                    }
                    Some(&(first, _)) => Trouble::Again {
                        id: c.cell.id.clone(),
                        first,
                    },
                    None => {
                        first.insert(c.cell.id.clone(), (line, cells.len()));
                        cells.push(c);
                        continue;
                    }
                },
            },
        };
        problems.push(Problem { line, what });
    }
    Records {
        cells,
        superseded,
        problems,
    }
}

/// What `results.jsonl` holds for a plan.
struct Records {
    /// One per cell: its last repeat.
    cells: Vec<CellResult>,
    /// Disturbed runs a repeat replaced.
    superseded: Vec<CellResult>,
    problems: Vec<Problem>,
}

/// How `results.jsonl` must change to end on a record boundary before
/// anything is appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// The last line is a record that lacks its newline: add it.
    Completed { line: usize },
    /// The last line, without its newline, is not a record: cut it, keeping
    /// this many bytes.
    Cut { line: usize, keep: u64 },
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repair::Completed { line } => write!(
                f,
                "{RESULTS} line {line}: the last result lacked its newline; completed"
            ),
            Repair::Cut { line, .. } => write!(
                f,
                "{RESULTS} line {line}: a partial last line (a run killed while writing it); cut before appending"
            ),
        }
    }
}

/// What [`Appender::repair`] would do to a file holding `bytes`.
fn repair_of(bytes: &[u8]) -> Option<Repair> {
    let (line, text, ended) = lines(bytes).last()?;
    if ended {
        return None;
    }
    Some(if !blank(text) && record(text).is_ok() {
        Repair::Completed { line }
    } else {
        Repair::Cut {
            line,
            keep: (bytes.len() - text.len()) as u64,
        }
    })
}

/// Creates a new results directory for `plan` with its environment, and
/// returns its appender, which holds the directory's lock.
pub fn create(
    dir: &Path,
    plan: &RunPlan,
    environment: &serde_json::Value,
) -> anyhow::Result<Appender> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let appender = Appender::lock(dir, true)?;
    if dir.join(PLAN).exists() || appender.len()? > 0 {
        anyhow::bail!(
            "{} already holds a run; use --resume {} to finish it, or choose another --out",
            dir.display(),
            dir.display()
        );
    }
    crate::export::write_json(&dir.join(ENVIRONMENT), environment)
        .with_context(|| format!("cannot write {}", dir.join(ENVIRONMENT).display()))?;
    crate::export::write_json(&dir.join(PLAN), plan)
        .with_context(|| format!("cannot write {}", dir.join(PLAN).display()))?;
    Ok(appender)
}

/// Writes `plan.json` again (atomically), after `--runs auto` added cells
/// to it; called before those cells run.
pub(crate) fn save_plan(dir: &Path, plan: &RunPlan) -> anyhow::Result<()> {
    crate::export::write_json(&dir.join(PLAN), plan)
        .with_context(|| format!("cannot write {}", dir.join(PLAN).display()))
}

/// Checks a plan read back from `plan.json` as a plan made from flags is
/// checked: the plan layer's `plan::check::check` (it needs the flags'
/// parsers, which nothing under the plan layer sees), given by the caller.
pub(crate) type PlanCheck = fn(&RunPlan) -> Result<(), String>;

/// Reads a results directory: its data, with the results of the plan's
/// cells only (each cell's first), and every line of `results.jsonl` that
/// is not one, in file order.
pub fn load(dir: &Path, check: PlanCheck) -> anyhow::Result<(RunData, Vec<Problem>)> {
    let read = |name: &str| -> anyhow::Result<Vec<u8>> {
        let path = dir.join(name);
        std::fs::read(&path).with_context(|| {
            format!(
                "{} is not a c10k results directory: cannot read {}",
                dir.display(),
                path.display()
            )
        })
    };
    let plan: RunPlan = serde_json::from_slice(&read(PLAN)?)
        .with_context(|| format!("{} does not parse", dir.join(PLAN).display()))?;
    if !READS.contains(&plan.version) {
        anyhow::bail!(
            "{} is results format {}, this c10k reads {}",
            dir.display(),
            plan.version,
            crate::present::words::and_list(&READS.map(|v| v.to_string())).replace(" and ", " or ")
        );
    }
    check(&plan).map_err(|e| anyhow::anyhow!("{}: {e}", dir.join(PLAN).display()))?;
    let environment =
        serde_json::from_slice(&read(ENVIRONMENT)?).unwrap_or(serde_json::Value::Null);
    let Records {
        cells,
        superseded,
        problems,
    } = records(&plan, &read(RESULTS)?);
    Ok((
        RunData {
            dir: dir.to_path_buf(),
            plan,
            environment,
            cells,
            superseded,
        },
        problems,
    ))
}

/// `results.jsonl`, open for appending one cell at a time (O_APPEND), and
/// the lock of its directory for as long as it lives.
pub struct Appender {
    file: File,
}

impl Appender {
    /// Opens `results.jsonl` in `dir` (creating it if `create`) and takes
    /// the directory's exclusive lock; [`super::lock::InUse`] when another
    /// run holds it.
    pub fn lock(dir: &Path, create: bool) -> anyhow::Result<Appender> {
        let path = dir.join(RESULTS);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => anyhow::anyhow!(
                    "{} is not a c10k results directory: no {RESULTS}",
                    dir.display()
                ),
                _ => anyhow::anyhow!("cannot open {} for appending: {e}", path.display()),
            })?;
        super::lock::exclusive(&file, &path, dir)?;
        Ok(Appender { file })
    }

    fn len(&self) -> anyhow::Result<u64> {
        Ok(self
            .file
            .metadata()
            .context("cannot read results.jsonl")?
            .len())
    }

    /// Leaves the file ending on a record boundary, as [`records`] reads
    /// it: a last record that lacks its newline gets it, a partial last
    /// line is cut. Says what it did.
    pub fn repair(&mut self) -> anyhow::Result<Option<Repair>> {
        let mut bytes = Vec::new();
        (&self.file)
            .read_to_end(&mut bytes)
            .context("cannot read results.jsonl")?;
        let repair = repair_of(&bytes);
        match repair {
            Some(Repair::Completed { .. }) => self.write_synced(b"\n"),
            Some(Repair::Cut { keep, .. }) => self
                .file
                .set_len(keep)
                .and_then(|()| self.file.sync_data())
                .context("cannot cut the partial last line of results.jsonl"),
            None => Ok(()),
        }?;
        Ok(repair)
    }

    /// Appends one result as a line and syncs it to disk. A result that
    /// would not read back as a record (a non-finite number is written as
    /// `null`) is refused rather than written as a line no reader counts.
    pub fn append(&mut self, cell: &CellResult) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(cell)?;
        if let Err(e) = record(&line) {
            anyhow::bail!(
                "the result of cell {} would not read back ({e}); not recorded",
                cell.cell.id
            );
        }
        line.push(b'\n');
        self.write_synced(&line)
    }

    fn write_synced(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.sync_data())
            .context("cannot append to results.jsonl")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_a_measured_cell_says_why() {
        let plan = plan();
        let mut cells: Vec<CellResult> = (0..plan.cells.len()).map(|i| result(&plan, i)).collect();
        for c in &mut cells {
            c.status = Status::Failed;
            c.reason = Some("2 of 2 connections\nfailed (refused 2)".into());
        }
        cells[3].status = Status::Skipped;
        let mut data = RunData {
            dir: PathBuf::from("results/x"),
            plan,
            environment: serde_json::Value::Null,
            cells,
            superseded: Vec::new(),
        };
        assert_eq!(
            data.no_result().as_deref(),
            Some(
                "no cell was measured (3 failed, 1 skipped of 4): the first, epoll at 2 \
                 connections, failed: 2 of 2 connections failed (refused 2)"
            )
        );
        data.cells[2].status = Status::Ok;
        assert_eq!(data.no_result(), None);
        data.cells.clear();
        assert_eq!(data.no_result(), None);
    }

    /// [`super::load`] with the plan layer's check, as `main.rs` calls it.
    fn load(dir: &Path) -> anyhow::Result<(RunData, Vec<Problem>)> {
        super::load(dir, crate::plan::check::check)
    }
    use crate::results::cell::Status;
    use crate::results::identity::settings;
    use crate::results::matrix::WorkloadKind;

    /// epoll and poll at 2 connections, 2 runs each: 4 cells.
    fn plan() -> RunPlan {
        RunPlan::example(&["epoll", "poll"], &[2], 2)
    }

    /// The result of cell `i` of `plan`, as the runner records it.
    fn result(plan: &RunPlan, i: usize) -> CellResult {
        CellResult {
            started_unix: 1.7e9 + i as f64,
            wall_seconds: 0.1,
            load: Some(crate::client::report::example(2, 100, 6400)),
            plan: Some(settings(plan)),
            ..CellResult::new(plan.cells[i].clone(), Status::Ok)
        }
    }

    fn line(c: &CellResult) -> Vec<u8> {
        let mut l = serde_json::to_vec(c).unwrap();
        l.push(b'\n');
        l
    }

    /// A results directory with `plan` and `results.jsonl` holding `bytes`.
    fn dir(name: &str, plan: &RunPlan, bytes: &[u8]) -> PathBuf {
        let d = std::env::temp_dir().join(format!("c10k-results-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        crate::export::write_json(&d.join(PLAN), plan).unwrap();
        crate::export::write_json(&d.join(ENVIRONMENT), &serde_json::json!({})).unwrap();
        std::fs::write(d.join(RESULTS), bytes).unwrap();
        d
    }

    fn ids(cells: &[CellResult]) -> Vec<&str> {
        cells.iter().map(|c| c.cell.id.as_str()).collect()
    }

    /// `d` now reads back as the three results appended, with no problem;
    /// then the appender lets go and the directory is removed.
    fn reads_back_whole(d: &Path, a: Appender) {
        let (data, problems) = load(d).unwrap();
        assert_eq!(
            ids(&data.cells),
            ["epoll/c2/r1", "poll/c2/r1", "epoll/c2/r2"]
        );
        assert!(problems.is_empty(), "{problems:?}");
        drop(a);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_last_record_without_its_newline_is_counted_and_completed() {
        let p = plan();
        let mut bytes = [line(&result(&p, 0)), line(&result(&p, 1))].concat();
        bytes.pop();
        let d = dir("unterminated", &p, &bytes);
        let (data, problems) = load(&d).unwrap();
        assert_eq!(ids(&data.cells), ["epoll/c2/r1", "poll/c2/r1"]);
        assert!(problems.is_empty(), "{problems:?}");
        let mut a = Appender::lock(&d, false).unwrap();
        assert_eq!(a.repair().unwrap(), Some(Repair::Completed { line: 2 }));
        a.append(&result(&p, 2)).unwrap();
        let after = std::fs::read(d.join(RESULTS)).unwrap();
        assert!(after.starts_with(&bytes) && after.ends_with(b"\n"));
        reads_back_whole(&d, a);
    }

    #[test]
    fn a_partial_last_line_is_reported_and_cut() {
        let p = plan();
        let whole = line(&result(&p, 0));
        let partial = &line(&result(&p, 1))[..120];
        let d = dir("partial", &p, &[&whole[..], partial].concat());
        let (data, problems) = load(&d).unwrap();
        assert_eq!(ids(&data.cells), ["epoll/c2/r1"]);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].is_partial() && problems[0].line == 2,
            "{problems:?}"
        );
        let mut a = Appender::lock(&d, false).unwrap();
        let keep = whole.len() as u64;
        assert_eq!(a.repair().unwrap(), Some(Repair::Cut { line: 2, keep }));
        assert_eq!(std::fs::read(d.join(RESULTS)).unwrap(), whole);
        assert_eq!(a.repair().unwrap(), None);
        drop(a);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn unreadable_lines_are_named_and_the_rest_kept() {
        let p = plan();
        let good = |i| line(&result(&p, i));
        let text = String::from_utf8(good(0)).unwrap();
        let nan = text.replace("\"wall_seconds\":0.1", "\"wall_seconds\":NaN");
        let inf = text.replace("\"wall_seconds\":0.1", "\"wall_seconds\":Infinity");
        assert!(nan != text && inf != text);
        let bytes = [
            good(0),
            nan.into_bytes(),
            b"\n".to_vec(),
            inf.into_bytes(),
            b"{\"version\":1,\xff}\n".to_vec(),
            good(1),
            b"garbage\n".to_vec(),
        ]
        .concat();
        let Records {
            cells, problems, ..
        } = records(&p, &bytes);
        assert_eq!(ids(&cells), ["epoll/c2/r1", "poll/c2/r1"]);
        let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [2, 4, 5, 7]);
        assert!(problems
            .iter()
            .all(|p| matches!(p.what, Trouble::Unreadable(_))));
        let said = problems[0].to_string();
        assert!(
            said.starts_with("results.jsonl line 2: not a result: ") && !said.contains("line 1"),
            "{said}"
        );
    }

    #[test]
    fn results_of_another_plan_are_not_counted() {
        let p = plan();
        let mut other = plan();
        other.workload.shape = crate::results::matrix::Shape::of(WorkloadKind::Burst);
        let mut moved = result(&p, 1);
        moved.cell.connections = 3;
        let mut legacy_burst = result(&p, 2);
        legacy_burst.plan = None;
        legacy_burst.load.as_mut().unwrap().workload = crate::client::plan::LoadKind::Burst;
        let mut longer = result(&p, 3);
        longer.plan.as_mut().unwrap()["workload"]["duration_seconds"] = serde_json::json!(1.0);
        let mut stranger = result(&p, 0);
        stranger.cell.id = "epoll/c2/r9".into();
        let mut legacy = result(&p, 0);
        legacy.plan = None;
        let bytes = [
            line(&result(&other, 0)),
            line(&moved),
            line(&legacy_burst),
            line(&longer),
            line(&stranger),
            line(&legacy),
        ]
        .concat();
        let Records {
            cells, problems, ..
        } = records(&p, &bytes);
        // Only the record without settings, judged on its cell and its
        // workload, is one of this plan's.
        assert_eq!(ids(&cells), ["epoll/c2/r1"]);
        let why: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let want = [
            "line 1: not a result of this plan: cell epoll/c2/r1 was measured with workload.kind burst, plan.json has closed",
            "line 2: not a result of this plan: cell poll/c2/r1 is poll at 3 connections, run 1 here, but poll at 2, run 1 in plan.json",
            "line 3: not a result of this plan: cell epoll/c2/r2 was measured with a burst workload, plan.json's is closed",
            "line 4: not a result of this plan: cell poll/c2/r2 was measured with workload.duration_seconds 1.0, plan.json has 0.05",
            "line 5: not a result of this plan: cell epoll/c2/r9 is not in plan.json",
        ];
        assert_eq!(why.len(), want.len(), "{why:#?}");
        for (w, g) in want.iter().zip(&why) {
            assert!(g.ends_with(w), "{g}");
        }
        // Never more cells recorded than planned, whatever the file holds.
        let all: Vec<Vec<u8>> = (0..4).map(|i| line(&result(&p, i))).collect();
        let Records { cells, .. } = records(&plan(), &all.concat().repeat(3));
        assert_eq!(cells.len(), 4);
        let mut one = plan();
        one.cells.truncate(1);
        let Records {
            cells, problems, ..
        } = records(&one, &all.concat());
        assert_eq!((cells.len(), problems.len()), (1, 3));
    }

    #[test]
    fn a_cell_recorded_again_keeps_the_first() {
        let p = plan();
        let mut again = result(&p, 0);
        again.wall_seconds = 9.0;
        let bytes = [line(&result(&p, 0)), line(&result(&p, 1)), line(&again)].concat();
        let Records {
            cells, problems, ..
        } = records(&p, &bytes);
        assert_eq!(ids(&cells), ["epoll/c2/r1", "poll/c2/r1"]);
        assert_eq!(cells[0].wall_seconds, 0.1);
        assert_eq!(
            problems,
            [Problem {
                line: 3,
                what: Trouble::Again {
                    id: "epoll/c2/r1".into(),
                    first: 1
                }
            }]
        );
    }

    #[test]
    fn a_second_appender_is_refused_while_the_first_lives() {
        let p = plan();
        let d = dir("lock", &p, b"");
        let first = Appender::lock(&d, false).unwrap();
        let e = Appender::lock(&d, false).err().expect("a second lock");
        let in_use = e
            .downcast_ref::<crate::results::lock::InUse>()
            .expect("InUse");
        assert_eq!(in_use.pid, Some(std::process::id()));
        assert!(e.to_string().ends_with(&format!(
            "is in use by another c10k run (pid {})",
            std::process::id()
        )));
        // A new run into a directory being run is refused the same way.
        assert!(create(&d, &p, &serde_json::json!({}))
            .err()
            .is_some_and(|e| e.downcast_ref::<crate::results::lock::InUse>().is_some()));
        drop(first);
        assert!(Appender::lock(&d, false).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn appends_land_at_the_end_whatever_was_written_since() {
        let p = plan();
        let d = dir("append", &p, b"");
        let mut a = Appender::lock(&d, false).unwrap();
        a.append(&result(&p, 0)).unwrap();
        // Written behind the appender's back after it opened the file.
        std::fs::OpenOptions::new()
            .append(true)
            .open(d.join(RESULTS))
            .and_then(|mut f| f.write_all(&line(&result(&p, 1))))
            .unwrap();
        a.append(&result(&p, 2)).unwrap();
        reads_back_whole(&d, a);
    }

    #[test]
    fn a_result_that_would_not_read_back_is_not_written() {
        let p = plan();
        let d = dir("nan", &p, b"");
        let mut a = Appender::lock(&d, false).unwrap();
        let mut r = result(&p, 0);
        r.wall_seconds = f64::NAN;
        let e = a.append(&r).expect_err("refused").to_string();
        assert!(
            e.starts_with("the result of cell epoll/c2/r1 would not read back"),
            "{e}"
        );
        assert!(std::fs::read(d.join(RESULTS)).unwrap().is_empty());
        drop(a);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_new_run_never_takes_a_directory_that_holds_one() {
        let p = plan();
        let d = dir("create", &p, b"");
        let e = create(&d, &p, &serde_json::json!({}))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("already holds a run"), "{e}");
        let fresh = d.join("fresh");
        let a = create(&fresh, &p, &serde_json::json!({})).unwrap();
        let (data, problems) = load(&fresh).unwrap();
        assert_eq!((data.plan, data.cells.len(), problems.len()), (p, 0, 0));
        drop(a);
        let _ = std::fs::remove_dir_all(&d);
    }
}
