//! `c10k micro dispatch`: the return time of `select`, `poll` and
//! `epoll_wait` (level- and edge-triggered) over N descriptors of which A
//! are active, in the manner of libevent's `test/bench.c`, so the figures
//! compare with the published libevent and libev ones (the loop itself is
//! in [`super::readiness`]).
//!
//! For each N (default 10, 100, 1,000 and 10,000) N socketpairs are made,
//! and for each run, method and A, `--calls` calls are timed after a short
//! warm-up. Reported per cell, as medians over `--runs`: ns per wait call,
//! ns per ready event (call / A), the whole bench.c iteration (wait, scan,
//! read, chained write), and the time to find the ready descriptors in the
//! result — for select a word at a time (skipping 64 idle descriptors per
//! comparison, stopping after `nready`, as "select(2) done right" does)
//! against the textbook bit-by-bit loop to `nfds`.
//!
//! N is capped by the open-files limit: each pair is two descriptors, the
//! soft limit is raised to the hard one first, and a few descriptors are
//! kept for everything else. A capped N is reported with the reason. The
//! select bitmap is sized from the descriptors, past FD_SETSIZE (1024).
//! Every call must find exactly A ready descriptors with one byte each; the
//! benchmark counts those calls and reports them.

use anyhow::Context as _;
use serde::Serialize;

use super::readiness::{self, Method, Pairs, Round, Walk};
use super::{BenchError, Output};
use crate::export::table::Table;
use crate::present::units::format_count;
use crate::present::units::sig3;
use crate::stats::Summary;

/// Version of the JSON this benchmark writes.
pub(crate) const JSON_VERSION: u32 = 1;

/// N when `--fds` is not given (before the cap).
pub(crate) const DEFAULT_FDS: [usize; 4] = [10, 100, 1000, 10_000];

/// Descriptors kept free beside the pairs: standard streams, the epoll
/// descriptor, /proc reads, the JSON file.
const RESERVE_FDS: usize = 16;

/// A value of N lowered to fit the open-files limit.
#[derive(Debug, Clone, Serialize)]
pub struct Capped {
    pub asked: usize,
    pub used: usize,
}

/// What `c10k micro dispatch` was asked to measure, before [`Plan::new`]
/// checks it and fits it to the open-files limit.
#[derive(Debug, Clone)]
pub struct Request {
    /// Descriptors watched (`None`: the default sizes).
    pub fds: Option<Vec<usize>>,
    /// Active descriptors per call.
    pub active: Vec<usize>,
    /// Calls timed per cell.
    pub calls: usize,
    pub runs: usize,
}

/// The validated settings.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// N as asked.
    pub fds_asked: Vec<usize>,
    /// N as measured (capped, sorted, deduplicated).
    pub fds: Vec<usize>,
    pub active: Vec<usize>,
    pub calls: usize,
    /// Untimed calls before the timed ones, per cell and run.
    pub warmup: usize,
    pub runs: usize,
    /// The open-files limit after raising the soft limit to the hard one.
    pub nofile: usize,
    /// Descriptors open before the pairs were made.
    pub fds_open: usize,
    /// The largest N that fits.
    pub max_pairs: usize,
    pub capped: Vec<Capped>,
}

impl Plan {
    /// Checks the request; `nofile` and `open` are the open-files limit
    /// and the descriptors already open.
    pub fn new(a: &Request, nofile: usize, open: usize) -> Result<Plan, String> {
        let asked = a.fds.clone().unwrap_or_else(|| DEFAULT_FDS.to_vec());
        if asked.is_empty() || a.active.is_empty() {
            return Err("--fds and --active need at least one value".into());
        }
        if let Some(&bad) = asked.iter().find(|&&n| !(1..=10_000_000).contains(&n)) {
            return Err(format!("--fds {bad}: must be 1 to 10,000,000"));
        }
        if let Some(&bad) = a.active.iter().find(|&&n| !(1..=10_000_000).contains(&n)) {
            return Err(format!("--active {bad}: must be 1 to 10,000,000"));
        }
        if !(1..=10_000_000).contains(&a.calls) {
            return Err(format!("--calls {}: must be 1 to 10,000,000", a.calls));
        }
        if !(1..=1000).contains(&a.runs) {
            return Err(format!("--runs {}: must be 1 to 1000", a.runs));
        }
        let max_pairs = max_pairs(nofile, open);
        if max_pairs == 0 {
            return Err(format!(
                "the open-files limit {nofile} leaves no room for a socketpair \
                 ({open} descriptors open, {RESERVE_FDS} kept free)"
            ));
        }
        let mut capped = Vec::new();
        let mut fds: Vec<usize> = asked
            .iter()
            .map(|&n| {
                if n > max_pairs {
                    capped.push(Capped {
                        asked: n,
                        used: max_pairs,
                    });
                    max_pairs
                } else {
                    n
                }
            })
            .collect();
        fds.sort_unstable();
        fds.dedup();
        let mut active = a.active.clone();
        active.sort_unstable();
        active.dedup();
        Ok(Plan {
            fds_asked: asked,
            fds,
            active,
            calls: a.calls,
            warmup: (a.calls / 10).clamp(1, 1000),
            runs: a.runs,
            nofile,
            fds_open: open,
            max_pairs,
            capped,
        })
    }

    /// One sentence per capped N, saying why.
    fn cap_notes(&self) -> Vec<String> {
        self.capped
            .iter()
            .map(|c| {
                format!(
                    "N = {} capped to {}: a socketpair is 2 descriptors and the open-files \
                     hard limit is {} ({} already open, {RESERVE_FDS} kept free); raise it \
                     (ulimit -Hn) to measure more.",
                    format_count(c.asked as f64),
                    format_count(c.used as f64),
                    format_count(self.nofile as f64),
                    self.fds_open,
                )
            })
            .collect()
    }
}

/// The largest number of pairs that fits beside `open` descriptors under
/// `nofile`, rounded down to two significant digits so the table reads well
/// (19,990 descriptors' worth becomes 9,900 pairs).
pub fn max_pairs(nofile: usize, open: usize) -> usize {
    let pairs = nofile.saturating_sub(open + RESERVE_FDS) / 2;
    let mut step = 1;
    while pairs / step >= 100 {
        step *= 10;
    }
    pairs / step * step
}

/// Every run of one (N, A, method).
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub fds: usize,
    pub active: usize,
    pub method: Method,
    /// select's `nfds` (one more than the highest descriptor); N otherwise.
    pub nfds: usize,
    pub rounds: Vec<Round>,
    /// ns per wait call.
    pub wait_ns: Option<Summary>,
    /// ns per ready event (per call / A).
    pub ns_per_event: Option<Summary>,
    /// ns to find the ready descriptors in the result (select: a word at a
    /// time).
    pub scan_ns: Option<Summary>,
    /// select only: ns to scan the result bit by bit.
    pub scan_bits_ns: Option<Summary>,
    /// ns per whole bench.c iteration.
    pub loop_ns: Option<Summary>,
}

impl Cell {
    fn summarize(&mut self) {
        let of = |f: &dyn Fn(&Round) -> Option<f64>| -> Option<Summary> {
            let v: Vec<f64> = self.rounds.iter().filter_map(f).collect();
            Summary::of(&v)
        };
        let a = self.active as f64;
        self.wait_ns = of(&|r| Some(r.wait_ns));
        self.ns_per_event = of(&|r| Some(r.wait_ns / a));
        self.scan_ns = of(&|r| Some(r.scan_ns));
        self.scan_bits_ns = of(&|r| r.scan_bits_ns);
        self.loop_ns = of(&|r| Some(r.loop_ns));
    }

    fn exact_calls(&self) -> (usize, usize) {
        (
            self.rounds.iter().map(|r| r.exact_calls).sum(),
            self.rounds.iter().map(|r| r.calls).sum(),
        )
    }
}

/// A cell not measured, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub fds: usize,
    pub active: usize,
    pub why: String,
}

/// Descriptors open in this process now.
fn open_fds() -> anyhow::Result<usize> {
    let dir = std::fs::read_dir("/proc/self/fd").context("reading /proc/self/fd")?;
    // The directory's own descriptor is listed too.
    Ok(dir.count().saturating_sub(1))
}

pub fn run(request: &Request) -> Result<Output, BenchError> {
    let nofile = match crate::sys::rlimit::raise_nofile() {
        Ok(n) => n as usize,
        Err(_) => crate::sys::rlimit::soft_nofile(),
    }
    .min(1 << 24);
    let open = open_fds()?;
    let plan = Plan::new(request, nofile, open).map_err(BenchError::Usage)?;
    let environment = crate::env::capture();
    let clock_ns = readiness::clock_ns();
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    for &n in &plan.fds {
        let pairs = Pairs::new(n)?;
        let mut here: Vec<Cell> = Vec::new();
        for &a in &plan.active {
            if a > n {
                skipped.push(Skipped {
                    fds: n,
                    active: a,
                    why: format!("{a} active is more than the {n} descriptors"),
                });
                continue;
            }
            for method in Method::ALL {
                here.push(Cell {
                    fds: n,
                    active: a,
                    method,
                    nfds: if method == Method::Select {
                        pairs.nfds()
                    } else {
                        n
                    },
                    rounds: Vec::new(),
                    wait_ns: None,
                    ns_per_event: None,
                    scan_ns: None,
                    scan_bits_ns: None,
                    loop_ns: None,
                });
            }
        }
        // Runs interleaved; the order of the cells turns by one each run so
        // no method is always first after a pause.
        for run in 0..plan.runs {
            let k = here.len();
            for j in 0..k {
                let cell = &mut here[(j + run) % k];
                // Each run starts the walk somewhere else, spread over the
                // set, so the scans that stop after nready stop at varied
                // depths and every part of the set is exercised.
                let walk = Walk {
                    active: cell.active,
                    offset: (2 * run + 1) * n / (2 * plan.runs),
                    warmup: plan.warmup,
                    calls: plan.calls,
                };
                let round = readiness::measure(&pairs, cell.method, walk).with_context(|| {
                    format!(
                        "{} over {} descriptors, {} active",
                        cell.method.label(),
                        cell.fds,
                        cell.active
                    )
                })?;
                cell.rounds.push(round);
            }
        }
        for c in &mut here {
            c.summarize();
        }
        cells.extend(here);
    }
    let mut tables: Vec<Table> = plan
        .active
        .iter()
        .filter(|&&a| cells.iter().any(|c| c.active == a))
        .map(|&a| per_call_table(&plan, &cells, a, clock_ns))
        .collect();
    tables.push(detail_table(&plan, &cells, &skipped));
    tables.push(scan_table(&plan, &cells));
    let json = serde_json::json!({
        "benchmark": "micro dispatch",
        "version": JSON_VERSION,
        "environment": environment,
        "parameters": plan,
        "clock_ns": clock_ns,
        "cells": cells,
        "skipped": skipped,
    });
    Ok(Output {
        tables,
        json,
        interrupted: None,
    })
}

fn find(cells: &[Cell], n: usize, a: usize, m: Method) -> Option<&Cell> {
    cells
        .iter()
        .find(|c| c.fds == n && c.active == a && c.method == m)
}

fn median(s: &Option<Summary>) -> String {
    s.map_or("–".into(), |s| sig3(s.median))
}

/// N down, methods across: ns per call with A active.
fn per_call_table(plan: &Plan, cells: &[Cell], a: usize, clock_ns: f64) -> Table {
    let mut header = vec!["descriptors".to_string()];
    header.extend(Method::ALL.iter().map(|m| format!("{} ns", m.label())));
    let mut t = Table {
        title: format!(
            "Return time of one wait call, {a} active (ns per call, median of {})",
            super::runs(plan.runs)
        ),
        header,
        ..Table::default()
    };
    for &n in &plan.fds {
        if n < a {
            continue;
        }
        let mut row = vec![format_count(n as f64)];
        row.extend(
            Method::ALL
                .iter()
                .map(|&m| median(&find(cells, n, a, m).and_then(|c| c.wait_ns))),
        );
        t.rows.push(row);
    }
    t.notes.push(format!(
        "libevent's bench.c method: N socketpairs, {a} made readable by a one-byte write, \
         each byte read chained to a write to the next pair; one call with a zero timeout \
         timed on its own, {} calls per run after {} untimed. epoll_wait is issued as \
         epoll_pwait2 (rustix); select's bitmap is sized from the descriptors (past FD_SETSIZE when they are) \
         and copied from a master set before each call (the copy is timed with the call). One clock read, \
         about {} ns, is included in each figure.",
        format_count(plan.calls as f64),
        plan.warmup,
        sig3(clock_ns)
    ));
    t.notes.extend(plan.cap_notes());
    t
}

/// Every cell: per call, per event, the whole iteration, and the check that
/// every call found exactly A.
fn detail_table(plan: &Plan, cells: &[Cell], skipped: &[Skipped]) -> Table {
    let mut t = Table::new(
        format!(
            "select, poll and epoll_wait per call and per ready event (median of {})",
            super::runs(plan.runs)
        ),
        &[
            "descriptors",
            "active",
            "method",
            "ns/call",
            "± stdev",
            "ns/event",
            "loop ns/call",
            "calls with A ready",
        ],
    );
    for c in cells {
        let (exact, calls) = c.exact_calls();
        t.rows.push(vec![
            format_count(c.fds as f64),
            format_count(c.active as f64),
            c.method.label().to_string(),
            median(&c.wait_ns),
            c.wait_ns.map_or("–".into(), |s| sig3(s.stdev)),
            median(&c.ns_per_event),
            median(&c.loop_ns),
            format!("{exact}/{calls}"),
        ]);
    }
    t.notes.push(
        "ns/event = ns/call / A. loop ns/call: one whole bench.c iteration (wait, find the \
         ready ones, read each byte, write the next), the time libevent's and libev's \
         published figures are made of (bench.c prints N/A iterations' worth)."
            .into(),
    );
    t.notes.extend(
        cells
            .iter()
            .filter(|c| c.rounds.iter().any(|r| r.calls < plan.calls))
            .map(|c| {
                format!(
                    "N = {}, A = {}, {}: cut short after {:?} per run (see the calls column).",
                    c.fds,
                    c.active,
                    c.method.label(),
                    readiness::CELL_BUDGET
                )
            }),
    );
    t.notes.extend(
        skipped
            .iter()
            .map(|s| format!("N = {}, A = {}: skipped, {}.", s.fds, s.active, s.why)),
    );
    t.notes.extend(plan.cap_notes());
    t
}

/// Finding the ready descriptors in what the call returned.
fn scan_table(plan: &Plan, cells: &[Cell]) -> Table {
    let mut t = Table::new(
        format!(
            "Finding the ready descriptors in the result (ns per call, median of {})",
            super::runs(plan.runs)
        ),
        &[
            "descriptors",
            "active",
            "select nfds",
            "select word-at-a-time ns",
            "select bit-by-bit ns",
            "bit / word",
            "poll revents ns",
            "epoll events ns",
        ],
    );
    for c in cells.iter().filter(|c| c.method == Method::Select) {
        let other = |m| find(cells, c.fds, c.active, m).and_then(|c| c.scan_ns);
        let ratio = match (c.scan_bits_ns, c.scan_ns) {
            (Some(b), Some(w)) if w.median > 0.0 => format!("{}×", sig3(b.median / w.median)),
            _ => "–".into(),
        };
        t.rows.push(vec![
            format_count(c.fds as f64),
            format_count(c.active as f64),
            format_count(c.nfds as f64),
            median(&c.scan_ns),
            median(&c.scan_bits_ns),
            ratio,
            median(&other(Method::Poll)),
            median(&other(Method::EpollLt)),
        ]);
    }
    t.notes.push(
        "select word-at-a-time: skip zero words (64 descriptors per comparison), take each \
         set bit with trailing_zeros, stop after nready. Bit by bit: test every descriptor \
         below nfds, as the FD_ISSET loop of most select servers does. poll: the revents \
         array in order, stopping after nready. epoll: read the nready events returned. \
         The active pairs move one pair per call from a place that differs per run, \
         spread over the set, so a scan that stops early stops at varied depths."
            .into(),
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(fds: Option<Vec<usize>>) -> Request {
        Request {
            fds,
            active: vec![1],
            calls: 100,
            runs: 2,
        }
    }

    #[test]
    fn the_limit_caps_n_and_says_so() {
        assert_eq!(max_pairs(20_000, 4), 9900);
        assert_eq!(max_pairs(1024, 4), 500);
        assert_eq!(max_pairs(256, 3), 110);
        assert_eq!(max_pairs(10, 3), 0);
        let p = Plan::new(&args(None), 20_000, 4).expect("valid");
        assert_eq!(p.fds, vec![10, 100, 1000, 9900]);
        assert_eq!(p.capped.len(), 1);
        assert_eq!((p.capped[0].asked, p.capped[0].used), (10_000, 9900));
        assert!(p.cap_notes()[0].contains("capped to 9,900"));
        let p = Plan::new(&args(Some(vec![1000, 100_000])), 256, 3).expect("valid");
        assert_eq!(p.fds, vec![110]);
    }

    #[test]
    fn bad_flags_are_refused() {
        assert!(Plan::new(&args(Some(vec![0])), 20_000, 4).is_err());
        assert!(Plan::new(&args(Some(vec![])), 20_000, 4).is_err());
        let mut a = args(None);
        a.calls = 0;
        assert!(Plan::new(&a, 20_000, 4).is_err());
        let mut a = args(None);
        a.active = vec![0];
        assert!(Plan::new(&a, 20_000, 4).is_err());
        assert!(Plan::new(&args(None), 10, 4).is_err());
    }

    #[test]
    fn a_small_run_end_to_end() {
        let mut a = args(Some(vec![10, 50]));
        a.active = vec![1, 20];
        let out = run(&a).expect("runs");
        let cells = out.json["cells"].as_array().expect("cells");
        // N = 10 with A = 20 is skipped; the rest is 3 (N, A) × 4 methods.
        assert_eq!(cells.len(), 12);
        assert_eq!(out.json["skipped"].as_array().map(|s| s.len()), Some(1));
        for c in cells {
            for r in c["rounds"].as_array().expect("rounds") {
                assert_eq!(r["calls"], 100);
                assert_eq!(r["exact_calls"], 100);
            }
        }
    }
}
