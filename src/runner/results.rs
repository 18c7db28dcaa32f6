//! A results directory: `plan.json`, `environment.json`, `results.jsonl`,
//! and everything made from them (exports, report).

use std::path::{Path, PathBuf};

use super::cell::CellResult;
use super::matrix::RunPlan;

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

/// Reads a results directory.
pub fn load(dir: &Path) -> anyhow::Result<RunData> {
    let _ = dir;
    anyhow::bail!("not yet")
}
