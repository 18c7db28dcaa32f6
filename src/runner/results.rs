//! A results directory: `plan.json` (the matrix, written first, and again
//! before each cell `--runs auto` adds),
//! `environment.json` (recorded once), `results.jsonl` (one line appended
//! and synced after every cell), and everything made from them: the
//! exports and `report.html`.
//!
//! A run killed mid-write leaves at most a partial last line in
//! `results.jsonl`; reading skips it, and resuming cuts it off before
//! appending, so no cell is lost or counted twice.

use std::collections::BTreeSet;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::cell::CellResult;
use super::matrix::{RunPlan, RESULTS_VERSION};

pub const PLAN: &str = "plan.json";
pub const ENVIRONMENT: &str = "environment.json";
pub const RESULTS: &str = "results.jsonl";

/// Everything a finished (or interrupted) run left behind.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub plan: RunPlan,
    /// The environment as recorded once at the start (see [`crate::env`]).
    pub environment: serde_json::Value,
    /// Results in the order they were recorded.
    pub cells: Vec<CellResult>,
}

impl RunData {
    /// Cells of the plan with no result yet, in run order.
    pub fn remaining(&self) -> Vec<super::matrix::CellSpec> {
        let done: BTreeSet<&str> = self.cells.iter().map(|c| c.cell.id.as_str()).collect();
        self.plan
            .cells
            .iter()
            .filter(|c| !done.contains(c.id.as_str()))
            .cloned()
            .collect()
    }
}

/// Creates a new results directory for `plan` with its environment.
pub fn create(dir: &Path, plan: &RunPlan, environment: &serde_json::Value) -> anyhow::Result<()> {
    if dir.join(PLAN).exists() {
        anyhow::bail!(
            "{} already holds a run; use --resume {} to finish it, or choose another --out",
            dir.display(),
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    crate::export::write_json(&dir.join(ENVIRONMENT), environment)
        .with_context(|| format!("cannot write {}", dir.join(ENVIRONMENT).display()))?;
    crate::export::write_json(&dir.join(PLAN), plan)
        .with_context(|| format!("cannot write {}", dir.join(PLAN).display()))?;
    std::fs::File::create(dir.join(RESULTS))
        .with_context(|| format!("cannot create {}", dir.join(RESULTS).display()))?;
    Ok(())
}

/// Writes `plan.json` again (atomically), after `--runs auto` added cells
/// to it; called before those cells run.
pub fn save_plan(dir: &Path, plan: &RunPlan) -> anyhow::Result<()> {
    crate::export::write_json(&dir.join(PLAN), plan)
        .with_context(|| format!("cannot write {}", dir.join(PLAN).display()))
}

/// Reads a results directory. Lines of `results.jsonl` that do not parse
/// (a partial last line from a killed run) are skipped; a cell recorded
/// twice keeps its first result.
pub fn load(dir: &Path) -> anyhow::Result<RunData> {
    let read = |name: &str| -> anyhow::Result<String> {
        let path = dir.join(name);
        std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{} is not a c10k results directory: cannot read {}",
                dir.display(),
                path.display()
            )
        })
    };
    let plan: RunPlan = serde_json::from_str(&read(PLAN)?)
        .with_context(|| format!("{} does not parse", dir.join(PLAN).display()))?;
    if plan.version != RESULTS_VERSION {
        anyhow::bail!(
            "{} is results format {}, this c10k reads {RESULTS_VERSION}",
            dir.display(),
            plan.version
        );
    }
    let environment = serde_json::from_str(&read(ENVIRONMENT)?).unwrap_or(serde_json::Value::Null);
    let text = read(RESULTS)?;
    let mut seen = BTreeSet::new();
    let cells = text
        .lines()
        .filter_map(|l| serde_json::from_str::<CellResult>(l).ok())
        .filter(|c| seen.insert(c.cell.id.clone()))
        .collect();
    Ok(RunData {
        dir: dir.to_path_buf(),
        plan,
        environment,
        cells,
    })
}

/// `results.jsonl`, open for appending one cell at a time.
pub struct Appender {
    file: std::fs::File,
}

impl Appender {
    /// Opens the file, first cutting off a partial last line.
    pub fn open(dir: &Path) -> anyhow::Result<Appender> {
        let path = dir.join(RESULTS);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        if keep < bytes.len() {
            file.set_len(keep as u64)
                .with_context(|| format!("cannot repair {}", path.display()))?;
        }
        file.seek(std::io::SeekFrom::End(0))?;
        Ok(Appender { file })
    }

    /// Appends one result as a line and syncs it to disk.
    pub fn append(&mut self, cell: &CellResult) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(cell)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .context("cannot append to results.jsonl")
    }
}
