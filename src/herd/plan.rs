//! The herd's flags turned into a validated plan: wait methods parsed,
//! sizes in range, and every cell checked against the machine's limits
//! ([`super::fit`]: tasks, descriptors per process, open files and epoll
//! watches machine-wide) before anything forks; each refusal one line that
//! names the cell, the numbers needed and available, and the fix. Memory is
//! checked after, once a few workers were forked to measure their cost.

use std::path::PathBuf;
use std::time::Duration;

use super::fit::{self, Machine, PARENT_FD_MARGIN};
use super::method::Method;

/// The most workers one cell may fork (the study's largest herd).
pub(crate) const MAX_WORKERS: usize = 16_384;

/// The most copies of the listener a worker may hold (the open-files limit
/// is the real bound; this one only keeps the arithmetic sane).
const MAX_DUPS: usize = 1 << 20;

/// Longest the connects of one cell may be paced over (a day).
const MAX_CELL_SECONDS: f64 = 86_400.0;

/// Connects the client keeps in flight at most.
const MAX_IN_FLIGHT: usize = 1024;

/// What `c10k herd` was asked to measure, before [`Plan::new`] checks it
/// and the machine.
#[derive(Debug, Clone)]
pub struct Request {
    /// Worker counts, one cell each.
    pub workers: Vec<usize>,
    /// Copies of the listener in each worker's wait set, one series each.
    pub dups: Vec<usize>,
    /// Wait methods by name (`None`: all).
    pub methods: Option<Vec<String>>,
    /// New connections per second.
    pub rate: f64,
    /// Connections per cell.
    pub connections: usize,
    pub runs: usize,
    /// Where to draw the chart, if anywhere.
    pub svg: Option<PathBuf>,
    /// Where the JSON is to be written, if anywhere (checked here, written
    /// by the caller).
    pub json: Option<PathBuf>,
    /// Leave out the cells the machine cannot hold (named in the notes)
    /// instead of refusing the run.
    pub skip_unfit: bool,
}

/// A validated `c10k herd`.
#[derive(Debug, Clone)]
pub struct Plan {
    pub workers: Vec<usize>,
    /// Descriptors of the listener in each worker's wait set (1: the
    /// listener alone; M: it and M−1 dups), one series each, ascending.
    pub dups: Vec<usize>,
    pub methods: Vec<Method>,
    /// Connects per second.
    pub rate: f64,
    /// Connects per cell.
    pub connections: usize,
    pub runs: usize,
    /// Longest the client may take in one cell of one worker with one copy
    /// ([`Plan::client_limit`] gives a cell's).
    pub client_limit: Duration,
    /// Connects in flight at most.
    pub in_flight: usize,
    /// Listen backlog.
    pub backlog: i32,
    pub svg: Option<PathBuf>,
    pub skip_unfit: bool,
    /// The machine's limits as read before the run.
    pub machine: Machine,
    /// Cells left out because the machine cannot hold them, each with the
    /// one-line reason (only with `skip_unfit`).
    pub unfit: Vec<Unfit>,
}

/// A cell the machine cannot hold.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unfit {
    pub method: &'static str,
    pub dups: usize,
    pub workers: usize,
    pub why: String,
}

/// Time allowed a connect per copy of the listener in the herd: waking
/// 16,384 workers with 1,019 copies each (16.7 million wait entries) takes
/// about 1.2 s here, 70 ns an entry; the allowance is several times that.
const CONNECT_PER_ENTRY: Duration = Duration::from_nanos(500);

impl Plan {
    /// Longest the client may take in a cell of `workers` with `dups`
    /// copies: the pacing and 10 s, and for a large herd, whose connects
    /// each wait for the wakeup of every waiter, time for that too (a day
    /// at most).
    pub fn client_limit(&self, workers: usize, dups: usize) -> Duration {
        let nanos = (CONNECT_PER_ENTRY.as_nanos() as u64)
            .saturating_mul(workers as u64)
            .saturating_mul(dups as u64)
            .saturating_mul(self.connections as u64)
            .min(MAX_CELL_SECONDS as u64 * 1_000_000_000);
        self.client_limit + Duration::from_nanos(nanos)
    }

    /// Whether this cell is to run.
    pub fn fits(&self, method: Method, dups: usize, workers: usize) -> bool {
        !self
            .unfit
            .iter()
            .any(|u| u.method == method.name() && u.dups == dups && u.workers == workers)
    }

    /// Records a cell the machine cannot hold: refused (`Err`, the run
    /// stops) unless `skip_unfit`, then left out and kept for the notes.
    pub fn refuse(
        &mut self,
        method: Method,
        dups: usize,
        workers: usize,
        why: String,
    ) -> Result<(), String> {
        if !self.skip_unfit {
            return Err(why);
        }
        if self.fits(method, dups, workers) {
            self.unfit.push(Unfit {
                method: method.name(),
                dups,
                workers,
                why,
            });
        }
        Ok(())
    }
}

impl Plan {
    /// Checks the request and the machine; `Err` is one line for the user.
    pub fn new(a: &Request) -> Result<Plan, String> {
        if a.workers.is_empty() {
            return Err("--workers needs at least one count".into());
        }
        let mut workers = a.workers.clone();
        workers.sort_unstable();
        workers.dedup();
        if let Some(&w) = workers.iter().find(|&&w| w == 0 || w > MAX_WORKERS) {
            return Err(format!(
                "--workers {w} is out of range: 1 to {MAX_WORKERS} worker processes"
            ));
        }
        if a.dups.is_empty() {
            return Err("--dups needs at least one count".into());
        }
        let mut dups = a.dups.clone();
        dups.sort_unstable();
        dups.dedup();
        if let Some(&d) = dups.iter().find(|&&d| d == 0 || d > MAX_DUPS) {
            return Err(format!(
                "--dups {d} is out of range: 1 (the listener alone) to {MAX_DUPS}"
            ));
        }
        let methods = match &a.methods {
            None => Method::ALL.to_vec(),
            Some(names) => {
                let mut ms = Vec::new();
                for n in names {
                    let m = Method::parse(n.trim()).ok_or_else(|| {
                        format!(
                            "unknown wait method {n:?}: choose from {}",
                            Method::ALL.map(Method::name).join(", ")
                        )
                    })?;
                    if !ms.contains(&m) {
                        ms.push(m);
                    }
                }
                if ms.is_empty() {
                    return Err("--methods needs at least one wait method".into());
                }
                ms
            }
        };
        crate::client::plan::per_second("--rate", a.rate, 1e6)?;
        if a.connections == 0 || a.connections > 10_000_000 {
            return Err(format!(
                "-n {} is out of range: 1 to 10000000 connections per cell",
                a.connections
            ));
        }
        if a.runs == 0 || a.runs > 1000 {
            return Err(format!("--runs {} is out of range: 1 to 1000", a.runs));
        }
        crate::export::target::check_flag("--svg", a.svg.as_deref())?;
        crate::export::target::check_flag("--json", a.json.as_deref())?;
        let machine = Machine::read();
        // The parent holds the copies it hands down beside the connects.
        let most_dups = dups.last().copied().unwrap_or(1);
        let in_flight = MAX_IN_FLIGHT.min(
            machine
                .nofile
                .saturating_sub(PARENT_FD_MARGIN + most_dups)
                .max(1),
        );
        let backlog = crate::env::sysctl_u64("net.core.somaxconn")
            .unwrap_or(4096)
            .clamp(128, 65535) as i32;
        let pacing = a.connections as f64 / a.rate;
        if pacing > MAX_CELL_SECONDS {
            return Err(format!(
                "-n {} at --rate {} would take {:.0} s per cell, over the {MAX_CELL_SECONDS} s                  allowed; raise --rate or lower -n",
                a.connections, a.rate, pacing
            ));
        }
        let client_limit = Duration::from_secs_f64(pacing) + Duration::from_secs(10);
        let mut plan = Plan {
            workers,
            dups,
            methods,
            rate: a.rate,
            connections: a.connections,
            runs: a.runs,
            client_limit,
            in_flight,
            backlog,
            svg: a.svg.clone(),
            skip_unfit: a.skip_unfit,
            machine,
            unfit: Vec::new(),
        };
        for m in plan.methods.clone() {
            for d in plan.dups.clone() {
                for w in plan.workers.clone() {
                    if let Err(why) = fit::limits(&plan.machine, m, d, w, in_flight) {
                        plan.refuse(m, d, w, why)?;
                    }
                }
            }
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_round_trip() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.name()), Some(m));
        }
        assert_eq!(Method::parse("kqueue"), None);
    }

    fn request() -> Request {
        Request {
            workers: vec![1],
            dups: vec![1],
            methods: Some(vec!["select".into()]),
            rate: 1000.0,
            connections: 10,
            runs: 1,
            svg: None,
            json: None,
            skip_unfit: false,
        }
    }

    #[test]
    fn the_machine_has_room_for_one_worker() {
        let p = Plan::new(&request()).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.unfit.is_empty());
    }

    #[test]
    fn a_herd_past_every_limit_is_refused_or_skipped() {
        let mut r = request();
        r.dups = vec![1, 1 << 20];
        let e = Plan::new(&r).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with("select with 1 worker × 1048576 copies"),
            "{e}"
        );
        r.skip_unfit = true;
        let p = Plan::new(&r).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.fits(Method::Select, 1, 1));
        assert!(!p.fits(Method::Select, 1 << 20, 1));
    }
}
