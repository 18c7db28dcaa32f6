//! `c10k herd`: the thundering herd (the 2017 study "Select is
//! fundamentally broken"), measured for each way a pool of processes can
//! wait on one listening socket.
//!
//! A cell is one wait method and W worker processes, all blocked on one
//! listener (each holding `--dups` copies of it): select, poll, epoll
//! (level-triggered), epoll with EPOLLEXCLUSIVE, blocking accept, or each
//! worker on its own SO_REUSEPORT listener. A client in the parent opens
//! `-n` connections with non-blocking connects at `--rate` per second and
//! times each; the workers count their accepts and failed accepts, and
//! /proc counts how often they were woken. Cells run interleaved (every
//! method and W once, then again, `--runs` times).
//!
//! - [`plan`]: flags and the machine's limits, checked first;
//! - [`cell`]: one cell, from the fork to the reaping of every worker;
//! - [`worker`]: the wait loops in the forked workers;
//! - [`client`]: the paced connects and their latency histograms;
//! - [`tally`]: shared counters, /proc readings, spread and Jain's index;
//! - [`report`], [`chart`]: the table, the JSON and the SVG chart.

pub mod cell;
pub mod chart;
pub mod client;
pub mod plan;
pub mod report;
pub mod tally;
pub mod worker;

use std::io::IsTerminal as _;

use anyhow::Context as _;

use crate::micro::{BenchError, Output};
use plan::{Plan, Request, MAX_WORKERS};
use tally::Board;

/// Runs the herd as `request` asks.
pub fn run(request: &Request) -> Result<Output, BenchError> {
    let plan = Plan::new(request).map_err(BenchError::Usage)?;
    let board = Board::shared().context("mapping shared memory for the workers' counts")?;
    let total = plan.runs * plan.methods.len() * plan.workers.len();
    let progress = std::io::stderr().is_terminal();
    let mut cells = Vec::with_capacity(total);
    for repeat in 0..plan.runs {
        for &method in &plan.methods {
            for &workers in &plan.workers {
                if progress {
                    eprint!(
                        "\rc10k herd: cell {}/{total}: {} W={workers} run {}   ",
                        cells.len() + 1,
                        method.name(),
                        repeat + 1
                    );
                }
                let c = cell::run(&plan, method, workers, repeat, board).with_context(|| {
                    format!(
                        "{} with {workers} workers, run {}",
                        method.name(),
                        repeat + 1
                    )
                })?;
                cells.push(c);
            }
        }
    }
    if progress {
        eprintln!();
    }
    let children_left = children_left();
    let rows = report::rows(&plan, &cells);
    let tables = vec![report::table(&plan, &rows, &cells)];
    if let Some(path) = &plan.svg {
        let methods: Vec<&str> = plan.methods.iter().map(|m| m.name()).collect();
        let svg = chart::svg(&rows, &methods, &plan.workers)?;
        crate::export::target::write(path, svg.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(Output {
        json: report::json(&plan, &rows, &cells, children_left),
        tables,
    })
}

/// Child processes still there after every cell reaped its workers (0 when
/// all is well); any that already exited are reaped here.
fn children_left() -> usize {
    let mut zombies = 0;
    for _ in 0..2 * MAX_WORKERS {
        match crate::sys::process::reap(-1, false) {
            Ok(Some(_)) => zombies += 1,
            _ => break,
        }
    }
    let me = std::process::id();
    let live = crate::metrics::tree::descendants(me)
        .into_iter()
        .filter(|&p| p != me)
        .count();
    zombies + live
}
