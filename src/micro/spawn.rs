//! `c10k micro spawn`: what a thread or a process costs to create, and what
//! a thread costs to keep — the price a thread-per-connection or
//! process-per-connection server pays once per connection.
//!
//! - **Threads.** N threads created with `std::thread::Builder`, each
//!   returning at once, then all joined; the elapsed time over N is one
//!   thread's whole life. Two stacks: the platform's default (what glibc
//!   gives a C program: the soft RLIMIT_STACK, usually 8 MiB; Rust's own
//!   default would be 2 MiB) and `--small-stack`.
//! - **Processes.** N children forked in a burst, each calling `_exit(0)` as
//!   its only action, then all reaped with `wait4`; the elapsed time over N
//!   is one fork and one reap (the fork alone is reported beside it). From
//!   this small process, and again after touching `--large-rss` of memory in
//!   4 KiB pages: `fork` copies one page-table entry per resident page, and
//!   that is what makes a large server slow to fork.
//! - **Memory per parked thread** ([`super::parked`]).
//!
//! Order: forks first, while the process has one thread (`fork` is only
//! safe then), then the parked threads (each run in a child of its own),
//! then thread creation. Every figure is measured `--runs` times, runs of
//! the different N interleaved, and reported as a median with its spread.
//! The benchmark reaps every child it makes and says so: the JSON counts
//! threads created and joined, children forked and reaped, and the children
//! still present at the end (zero).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;

use super::parked::{self, ParkedRound};
use super::{BenchError, Output};
use crate::export::table::Table;
use crate::present::units::format_count;
use crate::present::units::sig3;
use crate::stats::Summary;
use crate::sys;

/// Version of the JSON this benchmark writes.
pub(crate) const JSON_VERSION: u32 = 1;

/// The largest count accepted per measurement (also bounded by the kernel's
/// task limits, checked in [`Plan::new`]).
const MAX_COUNT: usize = 100_000;

/// Tasks kept free for the rest of the machine under the kernel's limits.
const TASK_MARGIN: u64 = 64;

/// What `c10k micro spawn` was asked to measure, before [`Plan::new`]
/// checks it against the machine.
#[derive(Debug, Clone)]
pub struct Request {
    /// Threads or processes created per measurement.
    pub counts: Vec<usize>,
    /// The small thread stack, as given (e.g. 64KiB).
    pub small_stack: String,
    /// The parent's resident set for the large fork, as given (e.g. 256MiB).
    pub large_rss: String,
    pub runs: usize,
    /// Threads parked at once.
    pub parked: usize,
}

/// The validated settings.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub counts: Vec<usize>,
    /// The platform's default thread stack in bytes.
    pub default_stack: usize,
    pub small_stack: usize,
    pub large_rss: usize,
    pub runs: usize,
    pub parked: usize,
}

impl Plan {
    pub fn new(a: &Request) -> Result<Plan, String> {
        if a.counts.is_empty() {
            return Err("--counts needs at least one count".into());
        }
        // A burst of N forks leaves up to N zombies and N threads may be
        // alive at once: each needs a task id.
        let tasks = crate::env::tasks::Tasks::read();
        for &n in a.counts.iter().chain([&a.parked]) {
            if n == 0 || n > MAX_COUNT {
                return Err(format!("count {n} is out of range 1..={MAX_COUNT}"));
            }
            tasks
                .check(n as u64, TASK_MARGIN)
                .map_err(|e| format!("count {n}: {e}"))?;
        }
        let small_stack = crate::present::units::parse_size(&a.small_stack)
            .map_err(|e| format!("--small-stack: {e}"))?;
        if !(16 << 10..=1 << 30).contains(&small_stack) {
            return Err(format!(
                "--small-stack {}: must be 16KiB (PTHREAD_STACK_MIN) to 1GiB",
                a.small_stack
            ));
        }
        let large_rss = crate::present::units::parse_size(&a.large_rss)
            .map_err(|e| format!("--large-rss: {e}"))?;
        let available = crate::env::meminfo_kib("MemAvailable").map(|k| k as usize * 1024);
        if large_rss < 1 << 20 {
            return Err(format!("--large-rss {}: at least 1MiB", a.large_rss));
        }
        if let Some(avail) = available {
            if large_rss > avail / 2 {
                return Err(format!(
                    "--large-rss {}: more than half of the memory available ({} MiB)",
                    a.large_rss,
                    avail >> 20
                ));
            }
        }
        if !(1..=1000).contains(&a.runs) {
            return Err(format!("--runs {}: must be 1 to 1000", a.runs));
        }
        let mut counts = a.counts.clone();
        counts.sort_unstable();
        counts.dedup();
        Ok(Plan {
            counts,
            default_stack: sys::rlimit::platform_thread_stack(),
            small_stack,
            large_rss,
            runs: a.runs,
            parked: a.parked,
        })
    }

    /// The two stacks measured, labelled.
    fn stacks(&self) -> [(&'static str, usize); 2] {
        [("default", self.default_stack), ("small", self.small_stack)]
    }
}

/// One run of N thread lives.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct ThreadRound {
    pub created: usize,
    pub joined: usize,
    /// Create and join, all N, in µs.
    pub total_us: f64,
}

/// One burst of N forks.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct ForkRound {
    pub forked: usize,
    pub reaped: usize,
    /// Children whose exit status was not 0.
    pub bad_exits: usize,
    /// The forks alone, in µs.
    pub fork_us: f64,
    /// Forks and reaps, in µs.
    pub total_us: f64,
}

/// Every run of one thread measurement (a stack and a count).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ThreadCell {
    pub stack: &'static str,
    pub stack_bytes: usize,
    pub count: usize,
    pub rounds: Vec<ThreadRound>,
    /// µs per thread (create + join), over the runs.
    pub per_thread_us: Option<Summary>,
}

/// Every run of one fork measurement (a parent and a count).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ForkCell {
    pub parent: &'static str,
    /// The parent's VmRSS when it forked, in KiB.
    pub parent_rss_kib: u64,
    pub count: usize,
    pub rounds: Vec<ForkRound>,
    /// µs per process (fork + reap), over the runs.
    pub per_process_us: Option<Summary>,
    /// µs per fork alone, over the runs.
    pub fork_only_us: Option<Summary>,
}

/// Every run of the parked-thread measurement with one stack.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ParkedCell {
    pub stack: &'static str,
    pub stack_bytes: usize,
    pub threads: usize,
    pub rounds: Vec<ParkedRound>,
    pub rss_kib_per_thread: Option<Summary>,
    pub vm_kib_per_thread: Option<Summary>,
    pub kernel_stack_kib_per_thread: Option<Summary>,
}

pub fn run(request: &Request) -> Result<Output, BenchError> {
    let plan = Plan::new(request).map_err(BenchError::Usage)?;
    let threads_now = sys::process::thread_count().context("reading /proc/self/status")?;
    if threads_now != 1 {
        return Err(anyhow::anyhow!(
            "c10k micro spawn must start with one thread to fork safely; it has {threads_now}"
        )
        .into());
    }
    let mut forks = fork_cells(&plan, "small", None)?;
    {
        let memory = sys::mapping::Touched::new(plan.large_rss)
            .with_context(|| format!("mapping --large-rss {} bytes", plan.large_rss))?;
        forks.extend(fork_cells(&plan, "large", Some(&memory))?);
    }
    let parked = parked_cells(&plan)?;
    let threads = thread_cells(&plan)?;
    let children_left = crate::metrics::tree::descendants(std::process::id())
        .len()
        .saturating_sub(1);
    let mut forks_t = fork_table(&plan, &forks);
    forks_t.notes.push(format!(
        "Children of this process left at the end (zombies included): {children_left}."
    ));
    let tables = vec![
        thread_table(&plan, &threads),
        forks_t,
        parked_table(&plan, &parked),
    ];
    let json = serde_json::json!({
        "benchmark": "micro spawn",
        "version": JSON_VERSION,
        "environment": crate::env::capture(),
        "parameters": plan,
        "threads": threads,
        "forks": forks,
        "parked": parked,
        "children_left": children_left,
    });
    Ok(Output {
        tables,
        json,
        interrupted: None,
    })
}

/// VmRSS of this process in KiB (0 when /proc cannot be read).
fn own_rss_kib() -> u64 {
    parked::Reading::now().map_or(0, |r| r.rss_kib)
}

/// Every count, `--runs` times interleaved, from this process as it is
/// (`memory` keeps the large resident set alive while it forks).
fn fork_cells(
    plan: &Plan,
    parent: &'static str,
    memory: Option<&sys::mapping::Touched>,
) -> anyhow::Result<Vec<ForkCell>> {
    let rss = own_rss_kib();
    let mut cells: Vec<ForkCell> = plan
        .counts
        .iter()
        .map(|&count| ForkCell {
            parent,
            parent_rss_kib: rss,
            count,
            rounds: Vec::new(),
            per_process_us: None,
            fork_only_us: None,
        })
        .collect();
    for _ in 0..plan.runs {
        for cell in &mut cells {
            cell.rounds.push(fork_burst(cell.count)?);
        }
    }
    std::hint::black_box(memory.map(|m| m.len()));
    for c in &mut cells {
        let per = |f: fn(&ForkRound) -> f64| -> Vec<f64> {
            c.rounds.iter().map(|r| f(r) / c.count as f64).collect()
        };
        c.per_process_us = Summary::of(&per(|r| r.total_us));
        c.fork_only_us = Summary::of(&per(|r| r.fork_us));
    }
    Ok(cells)
}

/// Forks `n` children that exit at once and reaps them all.
fn fork_burst(n: usize) -> anyhow::Result<ForkRound> {
    let mut pids = Vec::with_capacity(n);
    let start = Instant::now();
    let forked = sys::forks::fork_exiting(n, &mut pids);
    let fork_time = start.elapsed();
    let mut reaped = 0;
    let mut bad_exits = 0;
    // Bounded: one wait per child forked; each child exits at once.
    for _ in 0..pids.len() {
        match sys::process::reap(-1, true).context("wait4")? {
            Some(r) => {
                reaped += 1;
                if r.exit_code() != Some(0) {
                    bad_exits += 1;
                }
            }
            None => break,
        }
    }
    let total = start.elapsed();
    forked.with_context(|| format!("fork {} of {n}", pids.len() + 1))?;
    Ok(ForkRound {
        forked: pids.len(),
        reaped,
        bad_exits,
        fork_us: micros(fork_time),
        total_us: micros(total),
    })
}

/// Both stacks and every count, `--runs` times interleaved.
fn thread_cells(plan: &Plan) -> anyhow::Result<Vec<ThreadCell>> {
    let mut cells: Vec<ThreadCell> = plan
        .stacks()
        .into_iter()
        .flat_map(|(stack, bytes)| {
            plan.counts.iter().map(move |&count| ThreadCell {
                stack,
                stack_bytes: bytes,
                count,
                rounds: Vec::new(),
                per_thread_us: None,
            })
        })
        .collect();
    for _ in 0..plan.runs {
        for cell in &mut cells {
            cell.rounds
                .push(thread_lives(cell.count, cell.stack_bytes)?);
        }
    }
    for c in &mut cells {
        let per: Vec<f64> = c
            .rounds
            .iter()
            .map(|r| r.total_us / c.count as f64)
            .collect();
        c.per_thread_us = Summary::of(&per);
    }
    Ok(cells)
}

/// Creates `n` threads that return at once, then joins them all.
fn thread_lives(n: usize, stack: usize) -> anyhow::Result<ThreadRound> {
    let mut handles = Vec::with_capacity(n);
    let start = Instant::now();
    let mut failure = None;
    for _ in 0..n {
        match std::thread::Builder::new().stack_size(stack).spawn(|| {}) {
            Ok(h) => handles.push(h),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let created = handles.len();
    let joined = handles.into_iter().filter_map(|h| h.join().ok()).count();
    let total = start.elapsed();
    if let Some(e) = failure {
        return Err(e).with_context(|| format!("creating thread {} of {n}", created + 1));
    }
    Ok(ThreadRound {
        created,
        joined,
        total_us: micros(total),
    })
}

/// Both stacks, `--runs` times interleaved, each run in a child of its own.
fn parked_cells(plan: &Plan) -> anyhow::Result<Vec<ParkedCell>> {
    let mut cells: Vec<ParkedCell> = plan
        .stacks()
        .into_iter()
        .map(|(stack, bytes)| ParkedCell {
            stack,
            stack_bytes: bytes,
            threads: plan.parked,
            rounds: Vec::new(),
            rss_kib_per_thread: None,
            vm_kib_per_thread: None,
            kernel_stack_kib_per_thread: None,
        })
        .collect();
    for _ in 0..plan.runs {
        for cell in &mut cells {
            cell.rounds
                .push(parked::measure(cell.threads, cell.stack_bytes)?);
        }
    }
    for c in &mut cells {
        let per = |f: fn(&ParkedRound) -> f64| -> Vec<f64> { c.rounds.iter().map(f).collect() };
        c.rss_kib_per_thread = Summary::of(&per(|r| r.rss_kib_per_thread));
        c.vm_kib_per_thread = Summary::of(&per(|r| r.vm_kib_per_thread));
        c.kernel_stack_kib_per_thread = Summary::of(&per(|r| r.kernel_stack_kib_per_thread));
    }
    Ok(cells)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `1.23`, `± 0.04`, `1.2 … 1.3` of a summary, or dashes.
fn spread(s: &Option<Summary>) -> [String; 3] {
    match s {
        Some(s) => [
            sig3(s.median),
            sig3(s.stdev),
            format!("{} … {}", sig3(s.min), sig3(s.max)),
        ],
        None => ["–".into(), "–".into(), "–".into()],
    }
}

/// A stack size as people write it: 8 MiB, 64 KiB.
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn thread_table(plan: &Plan, cells: &[ThreadCell]) -> Table {
    let mut t = Table::new(
        "Thread create + join (µs per thread)",
        &[
            "stack",
            "threads",
            "median µs",
            "± stdev",
            "min … max",
            "runs",
            "created/joined",
        ],
    );
    for c in cells {
        let [m, s, r] = spread(&c.per_thread_us);
        let created: usize = c.rounds.iter().map(|r| r.created).sum();
        let joined: usize = c.rounds.iter().map(|r| r.joined).sum();
        t.rows.push(vec![
            format!("{} ({})", c.stack, size(c.stack_bytes)),
            format_count(c.count as f64),
            m,
            s,
            r,
            c.rounds.len().to_string(),
            format!("{created}/{joined}"),
        ]);
    }
    t.notes.push(format!(
        "N threads that return at once are created with std::thread::Builder, then all \
         joined; elapsed time / N. Median of {}. The default stack is the platform's \
         (glibc takes it from the soft RLIMIT_STACK), not Rust's 2 MiB. glibc keeps freed \
         stacks (up to 40 MiB) for the next thread, as a long-running server would. At \
         small N the join mostly waits for an idle CPU to wake up and run the new thread \
         (in a virtual machine that can take milliseconds); the largest N gives the cost \
         per thread.",
        super::runs(plan.runs)
    ));
    t
}

fn fork_table(plan: &Plan, cells: &[ForkCell]) -> Table {
    let mut t = Table::new(
        "fork + reap (µs per process)",
        &[
            "parent",
            "parent RSS MiB",
            "processes",
            "median µs",
            "± stdev",
            "min … max",
            "fork alone µs",
            "forked/reaped",
        ],
    );
    for c in cells {
        let [m, s, r] = spread(&c.per_process_us);
        let forked: usize = c.rounds.iter().map(|r| r.forked).sum();
        let reaped: usize = c.rounds.iter().map(|r| r.reaped).sum();
        t.rows.push(vec![
            c.parent.to_string(),
            sig3(c.parent_rss_kib as f64 / 1024.0),
            format_count(c.count as f64),
            m,
            s,
            r,
            c.fork_only_us.map_or("–".into(), |s| sig3(s.median)),
            format!("{forked}/{reaped}"),
        ]);
    }
    t.notes.push(format!(
        "N children forked in a burst, each calling _exit(0) at once, then all reaped \
         with wait4; elapsed time / N (\"fork alone\": the burst without the reaping). \
         Median of {}. The large parent first wrote one byte in every 4 KiB page \
         of {} (no huge pages), so each fork copies that many page-table entries. At small N the reap mostly waits \
         for an idle CPU to wake up and run the child's exit.",
        super::runs(plan.runs),
        size(plan.large_rss)
    ));
    t
}

fn parked_table(plan: &Plan, cells: &[ParkedCell]) -> Table {
    let mut t = Table::new(
        "Memory per parked thread (KiB per thread)",
        &[
            "stack",
            "threads",
            "user RSS KiB",
            "virtual KiB",
            "kernel stack KiB",
            "runs",
        ],
    );
    for c in cells {
        let med = |s: &Option<Summary>| s.map_or("–".into(), |s| sig3(s.median));
        t.rows.push(vec![
            format!("{} ({})", c.stack, size(c.stack_bytes)),
            format_count(c.threads as f64),
            med(&c.rss_kib_per_thread),
            med(&c.vm_kib_per_thread),
            med(&c.kernel_stack_kib_per_thread),
            c.rounds.len().to_string(),
        ]);
    }
    t.notes.push(format!(
        "{} threads started and left blocked on a condition variable (asleep, not \
         spinning); VmRSS and VmSize of the process (/proc/self/status) and KernelStack of \
         the system (/proc/meminfo) read before they start and while all wait, the \
         difference divided by the count. Median of {}, each in a freshly forked \
         child so no stack cached by an earlier run is reused. KernelStack is system-wide: \
         other work on the machine adds noise to it. Virtual memory includes glibc's malloc \
         arenas: the first threads to allocate (up to 8 per core) each get one of 64 MiB of \
         address space, shared out over the count here.",
        format_count(plan.parked as f64),
        super::runs(plan.runs)
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(counts: &[usize]) -> Request {
        Request {
            counts: counts.to_vec(),
            small_stack: "64KiB".into(),
            large_rss: "16MiB".into(),
            runs: 2,
            parked: 10,
        }
    }

    #[test]
    fn plan_validates_its_flags() {
        let p = Plan::new(&args(&[10, 1, 10])).expect("valid");
        assert_eq!(p.counts, vec![1, 10]);
        assert_eq!(p.small_stack, 64 << 10);
        assert!(Plan::new(&args(&[])).is_err());
        assert!(Plan::new(&args(&[0])).is_err());
        assert!(Plan::new(&args(&[10_000_000])).is_err());
        let mut a = args(&[1]);
        a.small_stack = "1KiB".into();
        assert!(Plan::new(&a).is_err());
        let mut a = args(&[1]);
        a.runs = 0;
        assert!(Plan::new(&a).is_err());
    }

    #[test]
    fn thread_lives_are_all_joined() {
        let r = thread_lives(5, 64 << 10).expect("threads");
        assert_eq!((r.created, r.joined), (5, 5));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(8 << 20), "8 MiB");
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(1000), "1000 B");
    }
}
