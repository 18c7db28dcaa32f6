//! The herd's results for people and machines: one summary row per (wait
//! method, copies, worker count) with the medians over the runs, a table of
//! them with the setup and teardown times beside the measurement, and the
//! JSON that carries every cell, the summaries with their spread, the
//! pre-flight (the machine's limits, each worker's measured memory, the
//! cells left out), the parameters and the environment.

use serde::Serialize;
use serde_json::{json, Value};

use super::cell::CellResult;
use super::fit::WorkerCost;
use super::plan::Plan;
use crate::export::table::Table;
use crate::present::units::sig3;
use crate::stats::Summary;

/// One (method, copies, W) over its runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub method: &'static str,
    pub dups: usize,
    pub workers: usize,
    pub runs: usize,
    /// connect() to writable, µs: medians and 99th percentiles of the runs.
    pub connect_p50_us: Option<Summary>,
    pub connect_p99_us: Option<Summary>,
    /// The connect() call alone, µs.
    pub connect_call_p50_us: Option<Summary>,
    pub wakeups_per_connection: Option<Summary>,
    pub returns_per_connection: Option<Summary>,
    pub failed_accepts_per_connection: Option<Summary>,
    pub accepts_min: Option<Summary>,
    pub accepts_max: Option<Summary>,
    pub jain: Option<Summary>,
    /// Fork to every worker asleep, s.
    pub setup_seconds: Option<Summary>,
    /// SIGTERM to the last worker reaped, s.
    pub teardown_seconds: Option<Summary>,
}

impl Row {
    /// The series this row belongs to: the method, and its copies when
    /// more than one.
    pub fn series(&self) -> String {
        series(self.method, self.dups)
    }
}

/// A series' name: `select`, or `select ×1019` with copies.
pub fn series(method: &str, dups: usize) -> String {
    if dups == 1 {
        method.to_string()
    } else {
        format!("{method} ×{dups}")
    }
}

/// The summary rows, in the plan's method order, then by copies and worker
/// count.
pub fn rows(plan: &Plan, cells: &[CellResult]) -> Vec<Row> {
    let mut rows = Vec::new();
    let series = plan
        .methods
        .iter()
        .flat_map(|&m| plan.dups.iter().map(move |&d| (m, d)));
    for (m, d) in series {
        for &w in &plan.workers {
            let mine: Vec<&CellResult> = cells
                .iter()
                .filter(|c| c.method == m.name() && c.dups == d && c.workers == w)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let of = |f: &dyn Fn(&CellResult) -> Option<f64>| {
                let v: Vec<f64> = mine.iter().filter_map(|c| f(c)).collect();
                Summary::of(&v)
            };
            rows.push(Row {
                method: m.name(),
                dups: d,
                workers: w,
                runs: mine.len(),
                connect_p50_us: of(&|c| {
                    (c.connect_us.count > 0).then_some(c.connect_us.p50 as f64)
                }),
                connect_p99_us: of(&|c| {
                    (c.connect_us.count > 0).then_some(c.connect_us.p99 as f64)
                }),
                connect_call_p50_us: of(&|c| {
                    (c.connect_call_us.count > 0).then_some(c.connect_call_us.p50 as f64)
                }),
                wakeups_per_connection: of(&|c| c.wakeups_per_connection),
                returns_per_connection: of(&|c| c.returns_per_connection),
                failed_accepts_per_connection: of(&|c| c.failed_accepts_per_connection),
                accepts_min: of(&|c| Some(c.spread.min as f64)),
                accepts_max: of(&|c| Some(c.spread.max as f64)),
                jain: of(&|c| c.spread.jain),
                setup_seconds: of(&|c| Some(c.phases.setup_seconds)),
                teardown_seconds: of(&|c| Some(c.phases.teardown_seconds)),
            });
        }
    }
    rows
}

/// The table a person reads.
pub fn table(plan: &Plan, rows: &[Row], cells: &[CellResult], costs: &[WorkerCost]) -> Table {
    let dups: Vec<String> = plan.dups.iter().map(|d| d.to_string()).collect();
    let mut t = Table::new(
        format!(
            "Thundering herd: W workers waiting on one listener ({} cop{} each), {} connects/s, \
             {} per cell, medians of {} run{}",
            dups.join(" or "),
            if plan.dups == [1] { "y" } else { "ies" },
            sig3(plan.rate),
            plan.connections,
            plan.runs,
            if plan.runs == 1 { "" } else { "s" }
        ),
        &[
            "method",
            "copies",
            "W",
            "connect p50 µs",
            "connect p99 µs",
            "connect() p50 µs",
            "wakeups/conn",
            "returns/conn",
            "failed accepts/conn",
            "accepts min",
            "accepts max",
            "Jain",
            "setup s",
            "teardown s",
        ],
    );
    let med = |s: &Option<Summary>| s.map_or("–".to_string(), |s| sig3(s.median));
    let whole = |s: &Option<Summary>| s.map_or("–".to_string(), |s| format!("{:.0}", s.median));
    for r in rows {
        t.rows.push(vec![
            r.method.to_string(),
            r.dups.to_string(),
            r.workers.to_string(),
            med(&r.connect_p50_us),
            med(&r.connect_p99_us),
            med(&r.connect_call_p50_us),
            med(&r.wakeups_per_connection),
            med(&r.returns_per_connection),
            med(&r.failed_accepts_per_connection),
            whole(&r.accepts_min),
            whole(&r.accepts_max),
            r.jain
                .map_or("–".to_string(), |s| format!("{:.3}", s.median)),
            med(&r.setup_seconds),
            med(&r.teardown_seconds),
        ]);
    }
    t.notes = notes(cells);
    t.notes.extend(preflight_notes(plan, costs));
    t
}

/// The machine's limits, each worker's memory and the cells left out.
fn preflight_notes(plan: &Plan, costs: &[WorkerCost]) -> Vec<String> {
    let mut n = vec![format!("machine: {}.", plan.machine.describe())];
    if !costs.is_empty() {
        let each: Vec<String> = costs
            .iter()
            .map(|c| {
                format!(
                    "{} {} (PSS {} + kernel {})",
                    series(c.method, c.dups),
                    crate::present::units::kib(c.per_worker_kib),
                    crate::present::units::kib(c.pss_kib),
                    crate::present::units::kib(c.kernel_kib)
                )
            })
            .collect();
        n.push(format!(
            "memory per worker, measured on {} workers in their wait: {}.",
            costs[0].probes,
            each.join("; ")
        ));
    }
    for u in &plan.unfit {
        n.push(format!("left out: {}", u.why));
    }
    n
}

/// What the columns mean, and anything that went wrong.
fn notes(cells: &[CellResult]) -> Vec<String> {
    let mut n = vec![
        "connect: from connect() to writable (epoll); connect(): the call alone — on loopback \
         the handshake, and the waking of the herd, run inside it."
            .to_string(),
        "wakeups/conn: voluntary context switches of all workers (/proc/PID/status) per \
         connection. Every sleep counts, not only waits on the listener, so it is a proxy; \
         about 1 is the floor (the worker that accepts goes back to sleep). select, poll and \
         level-triggered epoll re-check the listener in the kernel and sleep again, so only \
         this count sees most of the herd."
            .to_string(),
        "returns/conn: waits that returned to user space; failed accepts: EAGAIN, another \
         worker took the connection first (blocking accept cannot fail that way). One \
         accept per return; accepted connections are closed at once."
            .to_string(),
        "accepts min/max per worker and Jain's fairness index: 1 = even, 1/W = one worker \
         took all. accept: blocking accept(2); reuseport: a SO_REUSEPORT listener per worker \
         (epoll)."
            .to_string(),
        "setup: fork of every worker until all sleep in their wait; teardown: SIGTERM until \
         every worker is reaped. Neither is in the connect figures."
            .to_string(),
    ];
    let total = |f: fn(&CellResult) -> u64| cells.iter().map(f).sum::<u64>();
    let counted = [
        (
            total(|c| c.unaccepted),
            "connections came up but no worker accepted them (listen queue overflow?)",
        ),
        (
            total(|c| c.failed_connects + c.timed_out),
            "connects failed or timed out (see connect_errors in the JSON)",
        ),
        (
            total(|c| c.workers.saturating_sub(c.workers_clean) as u64),
            "workers did not end by our SIGTERM (see ending in the JSON)",
        ),
        (
            total(|c| c.planned.saturating_sub(c.attempted)),
            "connects were not made before the client's time limit",
        ),
        (
            total(|c| c.workers.saturating_sub(c.workers_reaped) as u64),
            "workers were not reaped within the teardown's time limit",
        ),
    ];
    for (count, what) in counted {
        if count > 0 {
            n.push(format!("warning: {count} {what}"));
        }
    }
    let unsettled = cells.iter().filter(|c| !c.settled).count();
    if unsettled > 0 {
        n.push(format!(
            "warning: in {unsettled} cells the herd was not asleep again within the wait; \
             their wakeups may be undercounted"
        ));
    }
    n
}

/// Everything, for machines.
pub fn json(
    plan: &Plan,
    rows: &[Row],
    cells: &[CellResult],
    costs: &[WorkerCost],
    children_left: usize,
) -> Value {
    let forked: usize = cells.iter().map(|c| c.workers).sum();
    let reaped: usize = cells.iter().map(|c| c.workers_reaped).sum();
    json!({
        "benchmark": "herd",
        "environment": crate::env::capture(),
        "parameters": {
            "workers": plan.workers,
            "dups": plan.dups,
            "methods": plan.methods.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "rate": plan.rate,
            "connections": plan.connections,
            "runs": plan.runs,
            "skip_unfit": plan.skip_unfit,
            "client_limit_s": plan.client_limit.as_secs_f64(),
            "in_flight": plan.in_flight,
            "backlog": plan.backlog,
        },
        "preflight": {
            "machine": plan.machine,
            "worker_memory": costs,
            "left_out": plan.unfit,
        },
        "summary": rows,
        "cells": cells,
        "workers_forked": forked,
        "workers_reaped": reaped,
        "children_left": children_left,
        "notes": notes(cells),
    })
}
