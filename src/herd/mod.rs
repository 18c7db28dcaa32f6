//! `c10k herd`: the thundering herd (the 2017 study "Select is
//! fundamentally broken"), measured for each way a pool of processes can
//! wait on one listening socket.
//!
//! A cell is one wait method, M copies and W worker processes (up to the
//! study's 16,384, with up to its 1,019 copies), all blocked on one
//! listener (each holding M copies of it): select, poll, epoll
//! (level-triggered), epoll with EPOLLEXCLUSIVE, blocking accept, or each
//! worker on its own SO_REUSEPORT listener. A client in the parent opens
//! `-n` connections with non-blocking connects at `--rate` per second and
//! times each; the workers count their accepts and failed accepts, and
//! /proc counts how often they were woken. Cells run interleaved (every
//! method, M and W once, then again, `--runs` times). The setup (forking
//! and waiting for the herd to sleep) and the teardown are timed apart from
//! the measurement. SIGINT or SIGTERM stops the run: the cell's workers are
//! killed and reaped before the error.
//!
//! - [`plan`]: flags, checked first, and each cell against [`fit`]: the
//!   machine's task, descriptor, file, epoll and memory limits;
//! - [`cell`]: one cell, from the fork to the reaping of every worker, and
//!   the probe that measures a worker's memory;
//! - [`worker`]: the wait loops in the forked workers;
//! - [`client`]: the paced connects and their latency histograms;
//! - [`tally`]: shared counters, /proc readings, spread and Jain's index;
//! - [`report`], [`chart`]: the table, the JSON and the SVG chart.

pub mod cell;
pub mod chart;
pub mod client;
pub mod fit;
pub mod method;
pub mod plan;
pub mod report;
pub mod tally;
pub mod worker;

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;

use crate::micro::{BenchError, Output};
use plan::{Plan, Request, MAX_WORKERS};
use tally::Board;

/// Runs the herd as `request` asks.
pub fn run(request: &Request) -> Result<Output, BenchError> {
    let mut plan = Plan::new(request).map_err(BenchError::Usage)?;
    let stop = crate::sys::signals::interrupt_flag().context("installing the SIGINT handler")?;
    let most = plan.workers.last().copied().unwrap_or(1);
    let board = Board::shared(most).context("mapping shared memory for the workers' counts")?;
    let progress = std::io::stderr().is_terminal();
    let costs = measure_costs(&mut plan, board, &stop, progress)?;
    let total = plan.runs
        * plan
            .methods
            .iter()
            .flat_map(|&m| plan.dups.iter().map(move |&d| (m, d)))
            .flat_map(|(m, d)| plan.workers.iter().map(move |&w| (m, d, w)))
            .filter(|&(m, d, w)| plan.fits(m, d, w))
            .count();
    let mut cells = Vec::with_capacity(total);
    let mut stopped = None;
    'cells: for repeat in 0..plan.runs {
        for &method in &plan.methods {
            for &dups in &plan.dups {
                for &workers in &plan.workers {
                    if !plan.fits(method, dups, workers) {
                        continue;
                    }
                    let name = format!(
                        "{} with {workers} workers × {dups}, run {}",
                        method.name(),
                        repeat + 1
                    );
                    if progress {
                        eprint!("\rc10k herd: cell {}/{total}: {name}   ", cells.len() + 1);
                    }
                    match cell::run(&plan, method, dups, workers, repeat, board, &stop) {
                        Ok(c) => cells.push(c),
                        Err(e) if stop.load(Ordering::SeqCst) => {
                            stopped = Some(interrupted(&name, cells.len(), total, e));
                            break 'cells;
                        }
                        Err(e) => return Err(e.context(name).into()),
                    }
                }
            }
        }
    }
    if progress {
        eprintln!();
    }
    let children_left = children_left();
    let rows = report::rows(&plan, &cells);
    let tables = vec![report::table(&plan, &rows, &cells, &costs)];
    if let Some(path) = &plan.svg {
        let svg = chart::svg(&rows, &plan)?;
        crate::export::target::write(path, svg.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut json = report::json(&plan, &rows, &cells, &costs, children_left);
    json["interrupted"] = stopped.is_some().into();
    Ok(Output {
        json,
        tables,
        interrupted: stopped,
    })
}

/// Measures what a worker costs in memory for each method and copy count
/// (a few real workers each) and checks every cell's W against the memory
/// left; a cell that does not fit refuses the run, or with --skip-unfit is
/// left out.
fn measure_costs(
    plan: &mut Plan,
    board: Board,
    stop: &AtomicBool,
    progress: bool,
) -> Result<Vec<fit::WorkerCost>, BenchError> {
    let mut costs = Vec::new();
    for method in plan.methods.clone() {
        for dups in plan.dups.clone() {
            let Some(most) = plan
                .workers
                .iter()
                .copied()
                .filter(|&w| plan.fits(method, dups, w))
                .max()
            else {
                continue;
            };
            if progress {
                eprint!(
                    "\rc10k herd: measuring a {} worker with {dups} copies   ",
                    method.name()
                );
            }
            let cost = match cell::probe(plan, method, dups, most, board, stop) {
                Ok(c) => c,
                Err(e) if stop.load(Ordering::SeqCst) => {
                    return Err(BenchError::Interrupted(interrupted(
                        "the memory probe",
                        0,
                        0,
                        e,
                    )));
                }
                Err(e) => {
                    return Err(e
                        .context(format!(
                            "measuring the memory of a {} worker with {dups} copies",
                            method.name()
                        ))
                        .into())
                }
            };
            for w in plan.workers.clone() {
                if let Err(why) = fit::memory(&plan.machine, &cost, w) {
                    plan.refuse(method, dups, w, why)
                        .map_err(BenchError::Usage)?;
                }
            }
            costs.push(cost);
        }
    }
    if progress {
        eprint!("\r");
    }
    Ok(costs)
}

/// The line of a run stopped by SIGINT or SIGTERM, once every worker of
/// the cell was killed and reaped: the cells done before it are kept.
fn interrupted(what: &str, done: usize, total: usize, e: anyhow::Error) -> String {
    let left = children_left();
    format!(
        "{e} during {what} ({done} of {total} cells done, kept); every worker was stopped and \
         reaped, {left} child processes left"
    )
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
