//! `c10k micro`: the mechanisms under the models, measured one at a time —
//! what a thread or a process costs to create and to keep ([`spawn`]), what
//! one call of select, poll or epoll_wait costs as the set grows
//! ([`dispatch`]), and how fast a listener accepts ([`accept`]), and the machine's unloaded
//! round trip ([`round_trip`]) and its own stalls ([`stalls`]). Each prints
//! tables and can write its results as JSON.

pub mod accept;
pub mod dispatch;
pub mod parked;
pub mod readiness;
pub mod round_trip;
pub mod spawn;
pub mod stalls;

use crate::export::table::Table;

/// What a micro-benchmark (or the herd) measured: tables for people, JSON
/// for machines.
#[derive(Debug, Clone)]
pub struct Output {
    pub tables: Vec<Table>,
    pub json: serde_json::Value,
    /// Stopped by SIGINT or SIGTERM: what was measured so far, and this
    /// line saying so (the command exits 130 after writing it all).
    pub interrupted: Option<String>,
}

/// Why a benchmark did not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad flags: one line saying what to change (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Stopped by SIGINT or SIGTERM before anything was measured (exit
    /// 130).
    #[error("{0}")]
    Interrupted(String),
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

/// A micro-benchmark and what it was asked to measure.
#[derive(Debug, Clone)]
pub enum Bench {
    Spawn(spawn::Request),
    Dispatch(dispatch::Request),
    Accept(accept::Settings),
}

/// Runs the micro-benchmark `bench`.
pub fn run(bench: &Bench) -> Result<Output, BenchError> {
    match bench {
        Bench::Spawn(r) => spawn::run(r),
        Bench::Dispatch(r) => dispatch::run(r),
        Bench::Accept(s) => accept::run(s),
    }
}
