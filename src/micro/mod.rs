//! `c10k micro`: the mechanisms under the models, measured one at a time —
//! what a thread or a process costs to create and to keep ([`spawn`]), what
//! one call of select, poll or epoll_wait costs as the set grows
//! ([`dispatch`]), and how fast a listener accepts ([`accept`]). Each prints
//! tables and can write its results as JSON.

pub mod accept;
pub mod dispatch;
pub mod parked;
pub mod readiness;
pub mod spawn;

use crate::cli::MicroCommand;
use crate::export::table::Table;

/// What a micro-benchmark (or the herd) measured: tables for people, JSON
/// for machines.
#[derive(Debug, Clone)]
pub struct Output {
    pub tables: Vec<Table>,
    pub json: serde_json::Value,
}

/// Why a benchmark did not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad flags: one line saying what to change (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// "1 run", "5 runs": how many repeats a median is of.
pub(crate) fn runs(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} runs")
    }
}

/// Runs the micro-benchmark `cmd` names, its `--json` path checked first.
pub fn run(cmd: &MicroCommand) -> Result<Output, BenchError> {
    crate::export::target::check_flag("--json", json_path(cmd)).map_err(BenchError::Usage)?;
    match cmd {
        MicroCommand::Spawn(a) => spawn::run(a),
        MicroCommand::Dispatch(a) => dispatch::run(a),
        MicroCommand::Accept(a) => accept::run(a),
    }
}

/// Where `cmd` writes its JSON, when asked to.
pub fn json_path(cmd: &MicroCommand) -> Option<&std::path::Path> {
    match cmd {
        MicroCommand::Spawn(a) => a.output.json.as_deref(),
        MicroCommand::Dispatch(a) => a.output.json.as_deref(),
        MicroCommand::Accept(a) => a.output.json.as_deref(),
    }
}
