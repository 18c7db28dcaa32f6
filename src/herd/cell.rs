//! One cell of the herd: one wait method, M copies, W workers, one run; and
//! the probe that measures what a worker costs in memory before the run.
//!
//! 1. The parent (single-threaded) makes the listener on 127.0.0.1, port 0:
//!    non-blocking for the multiplexing methods, so a worker that lost the
//!    race gets EAGAIN; blocking for `accept`. For `reuseport` it only binds
//!    a SO_REUSEPORT socket to reserve a port (never listening, so the
//!    kernel hands it no connection) and each worker listens on that port.
//! 2. Setup ([`Herd::start`]): it makes the M − 1 copies of the listener
//!    once, then forks the W workers ([`super::worker`]) in one burst (one
//!    thread check for the burst, nothing else per worker in the parent;
//!    each child inherits the copies and sets up its own wait), reads
//!    one byte from each on the readiness pipe, then waits until every
//!    worker is asleep (state `S` in /proc) with a steady switch count: all
//!    are in their wait. No sleeps stand in for readiness. Fork, ready and
//!    asleep are timed apart, and apart from the measurement.
//! 3. It reads each worker's voluntary context switches, runs the client
//!    ([`super::client`]), waits until the workers' accepts add up to the
//!    connections made and the herd is asleep again, and reads the switches
//!    and counters once more.
//! 4. Teardown ([`Herd::stop`]): SIGTERM to every worker, then every exited
//!    child reaped with wait4(-1) as it comes (each counted against its
//!    worker), SIGKILL to any still there after the grace time, and a last
//!    bounded reaping. If anything fails on the way, or SIGINT/SIGTERM
//!    reaches the parent, dropping the herd kills and reaps every worker
//!    before the error is returned.
//!
//! Every wait here is bounded in time and in passes; the bounds grow with
//! W (forking 16,384 workers with 1,019 copies each takes seconds on two
//! CPUs). Cost in the parent: O(W) reads of /proc per look while waiting
//! for the herd to fall asleep, O(1) per reaped worker.

use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use rustix::pipe::{pipe_with, PipeFlags};
use serde::Serialize;

use super::client;
use super::fit::WorkerCost;
use super::method::Method;
use super::plan::Plan;
use super::tally::{self, Board, Counts, Spread};
use super::worker::{self, Setup};
use crate::sys::process::{self, Reaped};

/// Time between two looks at /proc or wait4 while waiting on the herd.
const LOOK_EVERY: Duration = Duration::from_millis(1);
/// Workers forked to measure what one costs in memory (fewer when the
/// largest cell has fewer).
const PROBES: usize = 32;
/// Workers whose exits are listed one by one when they did not end cleanly.
const UNCLEAN_LISTED: usize = 32;

/// Longest wait for every worker to report ready and fall asleep.
fn ready_wait(workers: usize) -> Duration {
    Duration::from_secs(20) + Duration::from_millis(4) * workers as u32
}
/// Longest wait for the accepts to add up and the herd to settle after the
/// client is done.
fn settle_wait(workers: usize) -> Duration {
    Duration::from_secs(10) + Duration::from_millis(2) * workers as u32
}
/// How long stopped workers have to exit before they are killed, and then
/// how long the killed ones have.
fn stop_grace(workers: usize) -> Duration {
    Duration::from_secs(5) + Duration::from_millis(1) * workers as u32
}

/// Latency percentiles of one histogram, µs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
    pub count: u64,
}

impl Percentiles {
    fn of(h: &hdrhistogram::Histogram<u64>) -> Percentiles {
        Percentiles {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            count: h.len(),
        }
    }
}

/// How one worker ended.
#[derive(Debug, Clone, Serialize)]
pub struct Exit {
    pub pid: i32,
    /// Reaped with wait4.
    pub reaped: bool,
    /// `exit N`, `signal N`, or `not reaped`.
    pub status: String,
    /// Ended the expected way: by our SIGTERM (or at its deadline).
    pub clean: bool,
}

/// How the herd ended, counted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ending {
    /// Workers reaped with wait4 (every one, when all is well).
    pub reaped: usize,
    /// Workers that ended by our SIGTERM or at their deadline.
    pub clean: usize,
    /// Workers by how they ended (`signal 15`, `exit 0`, `not reaped`).
    pub by_status: BTreeMap<String, usize>,
    /// The first few workers that did not end cleanly.
    pub unclean: Vec<Exit>,
    /// Every worker's pid, in fork order.
    pub pids: Vec<i32>,
}

/// How long each part of the cell took, s.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phases {
    /// The parent's fork loop.
    pub fork_seconds: f64,
    /// From the last fork until every worker wrote its ready byte.
    pub ready_seconds: f64,
    /// Then until every worker was asleep in its wait with steady switches.
    pub asleep_seconds: f64,
    /// The three together: the setup, which the measurement leaves out.
    pub setup_seconds: f64,
    /// The client's connects (the measurement).
    pub client_seconds: f64,
    /// Until the accepts added up and the herd was asleep again.
    pub settle_seconds: f64,
    /// From the first SIGTERM until the last worker was reaped.
    pub teardown_seconds: f64,
}

/// Everything one cell measured.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    pub method: &'static str,
    pub workers: usize,
    /// Which repeat (0-based).
    pub run: usize,
    pub dups: usize,
    /// connect() calls asked for (`-n`).
    pub planned: u64,
    /// connect() calls made.
    pub attempted: u64,
    /// Connections that came up.
    pub established: u64,
    pub failed_connects: u64,
    pub timed_out: u64,
    pub connect_errors: BTreeMap<String, u64>,
    /// connect() to writable, µs.
    pub connect_us: Percentiles,
    /// The connect() call alone, µs.
    pub connect_call_us: Percentiles,
    /// Accepts summed over the workers.
    pub accepted: u64,
    /// Connections that came up but no worker accepted.
    pub unaccepted: u64,
    /// Voluntary context switches of all workers during the client's run.
    pub wakeups: u64,
    pub wakeups_per_connection: Option<f64>,
    /// Wait returns to user space, all workers.
    pub returns: u64,
    pub returns_per_connection: Option<f64>,
    /// Accepts that got EAGAIN.
    pub failed_accepts: u64,
    pub failed_accepts_per_connection: Option<f64>,
    /// Accepts that failed otherwise.
    pub accept_errors: u64,
    /// Accepts per worker.
    pub accepts: Vec<u64>,
    pub spread: Spread,
    /// Switches per worker, in worker order.
    pub wakeups_by_worker: Vec<u64>,
    /// Whether the herd was asleep before and after the client (when not,
    /// the switch counts may miss the last wakeups).
    pub settled: bool,
    pub workers_reaped: usize,
    pub workers_clean: usize,
    /// How the workers ended.
    pub ending: Ending,
    pub phases: Phases,
    pub client_seconds: f64,
    pub cell_seconds: f64,
}

/// What the cell shares with its workers, made before the fork: the
/// listener and its copies (the workers inherit them with the descriptor
/// table, one reference each per fork instead of a dup(2) each).
struct Ground {
    listener: OwnedFd,
    copies: Vec<OwnedFd>,
    addr: SocketAddrV4,
}

impl Ground {
    fn new(method: Method, dups: usize, backlog: i32, life: Duration) -> anyhow::Result<Ground> {
        let (listener, addr) = listener(method, backlog)?;
        if method == Method::Accept {
            // Blocking accept wakes at the worker's deadline, not before.
            socket2::SockRef::from(&listener)
                .set_read_timeout(Some(life))
                .context("setting SO_RCVTIMEO on the listener")?;
        }
        let copies = if method.shares_listener() {
            worker::dup_n(listener.as_fd(), dups.saturating_sub(1))
                .with_context(|| format!("making {} copies of the listener", dups - 1))?
        } else {
            Vec::new()
        };
        Ok(Ground {
            listener,
            copies,
            addr,
        })
    }
}

/// The error of a run stopped by SIGINT or SIGTERM.
fn interrupted() -> anyhow::Error {
    anyhow::anyhow!("interrupted")
}

/// Runs one cell. `board` must have a slot per worker; `stop` is set by
/// SIGINT or SIGTERM.
pub fn run(
    plan: &Plan,
    method: Method,
    dups: usize,
    workers: usize,
    repeat: usize,
    board: Board,
    stop: &AtomicBool,
) -> anyhow::Result<CellResult> {
    let started = Instant::now();
    // Workers give up on their own after everything the parent may wait.
    let client_limit = plan.client_limit(workers, dups);
    let life = ready_wait(workers)
        + client_limit
        + settle_wait(workers)
        + 2 * stop_grace(workers)
        + Duration::from_secs(30);
    let ground = Ground::new(method, dups, plan.backlog, life)?;
    // A worker returns from its wait about once per connection, a few times
    // more in a herd; the cap only stops a worker that spins.
    let cap = 16 * plan.connections as u64 + 10_000;
    let mut herd = Herd::start(
        &ground,
        method,
        dups,
        workers,
        plan.backlog,
        life,
        cap,
        board,
        stop,
    )?;
    let before = herd.before.clone();
    let outcome = client::run(
        ground.addr,
        plan.connections,
        plan.rate,
        plan.in_flight,
        client_limit,
        stop,
    )?;
    if stop.load(Ordering::SeqCst) {
        return Err(interrupted());
    }
    // The handshake is done when connect() reports writable, but a worker
    // may not have accepted yet: wait for the accepts to add up, then for
    // the herd to be asleep again.
    let settling = Instant::now();
    let until = settling + settle_wait(workers);
    for _ in 0..10_000_000u64 {
        if board.accepts(workers) >= outcome.established || Instant::now() >= until {
            break;
        }
        if stop.load(Ordering::SeqCst) {
            return Err(interrupted());
        }
        std::thread::sleep(LOOK_EVERY);
    }
    let after = asleep(&herd.pids, until, stop);
    if stop.load(Ordering::SeqCst) {
        return Err(interrupted());
    }
    let settled = after.is_some();
    let after = match after {
        Some(a) => a,
        None => switches(&herd.pids).unwrap_or_else(|| before.clone()),
    };
    let settle_seconds = settling.elapsed().as_secs_f64();
    let counts = board.read(workers);
    let ending = herd.stop();
    let mut phases = herd.phases;
    phases.client_seconds = outcome.elapsed.as_secs_f64();
    phases.settle_seconds = settle_seconds;
    let mut result = tabulate(
        method,
        workers,
        repeat,
        dups,
        &outcome,
        &counts,
        &before,
        &after,
        settled,
        ending,
        phases,
        started.elapsed(),
    );
    result.planned = plan.connections as u64;
    Ok(result)
}

/// Measures what one worker of `method` with `dups` copies costs in memory:
/// forks up to [`PROBES`] real workers (never more than `most`, the largest
/// cell), lets them set up and fall asleep in their wait, and reads their
/// PSS and how the machine's memory moved; then stops them.
pub fn probe(
    plan: &Plan,
    method: Method,
    dups: usize,
    most: usize,
    board: Board,
    stop: &AtomicBool,
) -> anyhow::Result<WorkerCost> {
    let k = PROBES.min(most).max(1);
    let life = ready_wait(k) + 2 * stop_grace(k) + Duration::from_secs(30);
    let ground = Ground::new(method, dups, plan.backlog, life)?;
    let before = Meminfo::read();
    let mut herd = Herd::start(
        &ground,
        method,
        dups,
        k,
        plan.backlog,
        life,
        1000,
        board,
        stop,
    )?;
    let after = Meminfo::read();
    let pss: u64 = herd.pids.iter().filter_map(|&p| pss_kib(p)).sum();
    let ending = herd.stop();
    if ending.reaped != k {
        bail!("{} of {k} probe workers were not reaped", k - ending.reaped);
    }
    let k_f = k as f64;
    let pss_kib = pss as f64 / k_f;
    let by_available = before.available.saturating_sub(after.available) as f64 - pss as f64;
    let by_kernel = after.kernel().saturating_sub(before.kernel()) as f64;
    let kernel_kib = by_available.max(by_kernel).max(0.0) / k_f;
    Ok(WorkerCost {
        method: method.name(),
        dups,
        probes: k,
        pss_kib,
        kernel_kib,
        per_worker_kib: pss_kib + kernel_kib,
    })
}

/// The fields of /proc/meminfo the probe compares, KiB.
#[derive(Debug, Clone, Copy, Default)]
struct Meminfo {
    available: u64,
    kernel_stack: u64,
    page_tables: u64,
    slab_unreclaimable: u64,
}

impl Meminfo {
    fn read() -> Meminfo {
        let f = |name| crate::env::meminfo_kib(name).unwrap_or(0);
        Meminfo {
            available: f("MemAvailable"),
            kernel_stack: f("KernelStack"),
            page_tables: f("PageTables"),
            slab_unreclaimable: f("SUnreclaim"),
        }
    }

    /// Kernel memory that grows with tasks, descriptors and wait entries.
    fn kernel(&self) -> u64 {
        self.kernel_stack + self.page_tables + self.slab_unreclaimable
    }
}

/// A process's proportional set size, KiB.
fn pss_kib(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[allow(clippy::too_many_arguments)]
fn tabulate(
    method: Method,
    workers: usize,
    repeat: usize,
    dups: usize,
    outcome: &client::Outcome,
    counts: &[Counts],
    before: &[u64],
    after: &[u64],
    settled: bool,
    ending: Ending,
    phases: Phases,
    elapsed: Duration,
) -> CellResult {
    let established = outcome.established;
    let per = |x: u64| (established > 0).then(|| x as f64 / established as f64);
    let wakeups_by_worker: Vec<u64> = before
        .iter()
        .zip(after)
        .map(|(b, a)| a.saturating_sub(*b))
        .collect();
    let wakeups = wakeups_by_worker.iter().sum();
    let accepts: Vec<u64> = counts.iter().map(|c| c.accepts).collect();
    let accepted: u64 = accepts.iter().sum();
    let returns = counts.iter().map(|c| c.returns).sum();
    let failed = counts.iter().map(|c| c.again).sum();
    CellResult {
        method: method.name(),
        workers,
        run: repeat,
        dups,
        planned: outcome.attempted,
        attempted: outcome.attempted,
        established,
        failed_connects: outcome.failed,
        timed_out: outcome.timed_out,
        connect_errors: outcome.errors.clone(),
        connect_us: Percentiles::of(&outcome.connect_us),
        connect_call_us: Percentiles::of(&outcome.call_us),
        accepted,
        unaccepted: established.saturating_sub(accepted),
        wakeups,
        wakeups_per_connection: per(wakeups),
        returns,
        returns_per_connection: per(returns),
        failed_accepts: failed,
        failed_accepts_per_connection: per(failed),
        accept_errors: counts.iter().map(|c| c.errors).sum(),
        spread: Spread::of(&accepts),
        accepts,
        wakeups_by_worker,
        settled,
        workers_reaped: ending.reaped,
        workers_clean: ending.clean,
        ending,
        phases,
        client_seconds: outcome.elapsed.as_secs_f64(),
        cell_seconds: elapsed.as_secs_f64(),
    }
}

/// The listener the workers share (or, for reuseport, the socket that
/// holds the port), and its address.
fn listener(method: Method, backlog: i32) -> anyhow::Result<(OwnedFd, SocketAddrV4)> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).context("making the listener")?;
    let any = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0);
    if method == Method::Reuseport {
        s.set_reuse_port(true).context("setting SO_REUSEPORT")?;
        s.bind(&any.into())
            .context("binding a port for reuseport")?;
    } else {
        s.bind(&any.into()).context("binding the listener")?;
        s.listen(backlog).context("listen")?;
        s.set_nonblocking(method.nonblocking())
            .context("setting the listener's blocking mode")?;
    }
    let addr = s
        .local_addr()
        .context("reading the listener's address")?
        .as_socket_ipv4()
        .context("the listener has no IPv4 address")?;
    Ok((s.into(), addr))
}

/// Voluntary switches of every worker; `None` when one cannot be read.
fn switches(pids: &[i32]) -> Option<Vec<u64>> {
    pids.iter().map(|&p| tally::voluntary_switches(p)).collect()
}

/// Waits until every worker is asleep (`S`) and the switch counts are the
/// same on two looks in a row; returns those counts, or `None` at `until`
/// or when `stop` is set. First walks the workers once, waiting at each
/// until it sleeps (one small read of /proc per worker, not a pass over
/// all of them per worker still setting up), then compares whole passes.
fn asleep(pids: &[i32], until: Instant, stop: &AtomicBool) -> Option<Vec<u64>> {
    let mut i = 0;
    // Bounded by `until`; the pass cap is a second guard.
    for _ in 0..100_000_000u64 {
        while i < pids.len() && tally::state(pids[i]) == Some('S') {
            i += 1;
        }
        if i == pids.len() {
            break;
        }
        if Instant::now() >= until || stop.load(Ordering::SeqCst) {
            return None;
        }
        std::thread::sleep(LOOK_EVERY);
    }
    let mut last: Option<Vec<u64>> = None;
    for _ in 0..1_000_000 {
        // One read of /proc/PID/status per worker: its state and switches.
        let now: Option<Vec<u64>> = pids.iter().map(|&p| tally::switches_if_asleep(p)).collect();
        match (&last, now) {
            (Some(a), Some(b)) if *a == b => return Some(b),
            (_, now) => last = now,
        }
        if Instant::now() >= until || stop.load(Ordering::SeqCst) {
            return None;
        }
        std::thread::sleep(LOOK_EVERY);
    }
    None
}

/// A reaped worker's status in words.
fn status(r: &Reaped) -> String {
    match (r.exit_code(), r.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (_, Some(s)) => format!("signal {s}"),
        _ => format!("status {}", r.status),
    }
}

/// The forked workers, and how each ended once reaped. Dropping it kills
/// and reaps any worker not yet reaped.
#[derive(Default)]
struct Herd {
    /// In fork order.
    pids: Vec<i32>,
    /// Place of each pid in `pids`.
    index: HashMap<i32, usize>,
    /// How each ended, once reaped.
    ended: Vec<Option<Reaped>>,
    reaped: usize,
    /// Switch counts once all were asleep, before the client.
    before: Vec<u64>,
    phases: Phases,
}

impl Herd {
    /// Forks `workers` workers and waits until all are asleep in their
    /// wait; the herd is killed and reaped if that fails.
    #[allow(clippy::too_many_arguments)]
    fn start(
        ground: &Ground,
        method: Method,
        dups: usize,
        workers: usize,
        backlog: i32,
        life: Duration,
        cap: u64,
        board: Board,
        stop: &AtomicBool,
    ) -> anyhow::Result<Herd> {
        if workers > board.slots() {
            bail!("{workers} workers but {} slots to count in", board.slots());
        }
        board.clear(workers);
        let (ready_r, ready_w) =
            pipe_with(PipeFlags::CLOEXEC).context("making the readiness pipe")?;
        let parent = std::process::id() as i32;
        let deadline = Instant::now() + life;
        let copies: Vec<_> = ground.copies.iter().map(|c| c.as_fd()).collect();
        let setup = Setup {
            method,
            dups,
            listener: method.shares_listener().then(|| ground.listener.as_fd()),
            copies: &copies,
            addr: ground.addr,
            backlog,
            ready: ready_w.as_fd(),
            deadline,
            cap,
        };
        let mut herd = Herd::default();
        herd.pids.reserve_exact(workers);
        let t0 = Instant::now();
        let forked = crate::sys::forks::fork_each(
            workers,
            &mut herd.pids,
            |_| {
                if stop.load(Ordering::SeqCst) {
                    Err(std::io::Error::from(std::io::ErrorKind::Interrupted))
                } else {
                    Ok(())
                }
            },
            |i| worker::run(&setup, board.slot(i), parent),
        );
        herd.index = herd.pids.iter().enumerate().map(|(i, &p)| (p, i)).collect();
        herd.ended = vec![None; herd.pids.len()];
        if stop.load(Ordering::SeqCst) {
            return Err(interrupted());
        }
        forked.with_context(|| {
            format!(
                "forking worker {} of {workers} ({} forked)",
                herd.pids.len() + 1,
                herd.pids.len()
            )
        })?;
        drop(ready_w);
        let t1 = Instant::now();
        herd.phases.fork_seconds = (t1 - t0).as_secs_f64();
        let until = t0 + ready_wait(workers);
        herd.await_ready(&ready_r, method, until, stop)?;
        let t2 = Instant::now();
        herd.phases.ready_seconds = (t2 - t1).as_secs_f64();
        herd.before = match asleep(&herd.pids, until, stop) {
            Some(b) => b,
            None if stop.load(Ordering::SeqCst) => return Err(interrupted()),
            None => bail!(
                "the workers did not all fall asleep in their wait within {:?}",
                ready_wait(workers)
            ),
        };
        herd.phases.asleep_seconds = t2.elapsed().as_secs_f64();
        herd.phases.setup_seconds = t0.elapsed().as_secs_f64();
        Ok(herd)
    }

    /// Reads one status byte per worker from the readiness pipe; fails on
    /// an `F` (a worker could not set up), on a worker that died, at
    /// `until`, or when `stop` is set.
    fn await_ready(
        &mut self,
        pipe: &OwnedFd,
        method: Method,
        until: Instant,
        stop: &AtomicBool,
    ) -> anyhow::Result<()> {
        use crate::sys::pollset::{self, POLLIN};
        use std::os::fd::AsRawFd;
        let mut ready = 0;
        let mut buf = [0u8; 4096];
        let n = self.pids.len();
        // Bounded by `until`; each pass reads or waits up to 100 ms.
        for _ in 0..100_000_000u64 {
            if ready >= n {
                return Ok(());
            }
            if stop.load(Ordering::SeqCst) {
                return Err(interrupted());
            }
            let Some(left) = until.checked_duration_since(Instant::now()) else {
                bail!("{} of {n} workers were not ready in time", n - ready);
            };
            let mut fds = [pollset::pollfd(pipe.as_raw_fd(), POLLIN)];
            match pollset::poll(&mut fds, Some(left.min(Duration::from_millis(100)))) {
                Ok(0) => {
                    // Nothing yet: a worker that died before it wrote would
                    // keep us waiting the whole time, so look for one.
                    if let Some(r) = process::reap(-1, false).context("wait4")? {
                        self.note(r);
                        bail!(
                            "a {} worker died while setting up ({})",
                            method.name(),
                            status(&r)
                        );
                    }
                    continue;
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("poll on the readiness pipe"),
            }
            let got = match rustix::io::read(pipe, &mut buf) {
                Ok(0) => bail!("every worker closed the readiness pipe before all were ready"),
                Ok(k) => k,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e).context("reading the readiness pipe"),
            };
            if buf[..got].contains(&b'F') {
                bail!(
                    "a {} worker could not set up its {} (see the open-files and \
                     process limits)",
                    method.name(),
                    if method == Method::Reuseport {
                        "SO_REUSEPORT listener"
                    } else {
                        "wait set"
                    }
                );
            }
            ready += got;
        }
        bail!("the readiness pipe was read too many times")
    }

    /// Records a reaped child, if it is one of ours and not yet recorded.
    fn note(&mut self, r: Reaped) {
        if let Some(&i) = self.index.get(&r.pid) {
            if self.ended[i].is_none() {
                self.ended[i] = Some(r);
                self.reaped += 1;
            }
        }
    }

    /// Sends `signal` to every worker not yet reaped.
    fn signal_all(&self, signal: i32) {
        for (pid, end) in self.pids.iter().zip(&self.ended) {
            if end.is_none() {
                let _ = process::kill(*pid, signal);
            }
        }
    }

    /// Reaps every child that has exited, as they come, until all workers
    /// are reaped or `until`.
    fn reap_until(&mut self, until: Instant) {
        let n = self.pids.len();
        // Bounded by `until`; each pass reaps what has exited, then waits
        // a moment.
        for _ in 0..100_000_000u64 {
            for _ in 0..=n {
                match process::reap(-1, false) {
                    Ok(Some(r)) => self.note(r),
                    _ => break,
                }
            }
            if self.reaped >= n || Instant::now() >= until {
                return;
            }
            std::thread::sleep(LOOK_EVERY);
        }
    }

    /// SIGTERM to every worker, then reaps them all (SIGKILL after the
    /// grace time); returns how they ended.
    fn stop(&mut self) -> Ending {
        let t0 = Instant::now();
        let term = rustix::process::Signal::TERM.as_raw();
        self.signal_all(term);
        let grace = stop_grace(self.pids.len());
        self.reap_until(t0 + grace);
        self.kill_rest();
        self.phases.teardown_seconds = t0.elapsed().as_secs_f64();
        let mut ending = Ending {
            reaped: self.reaped,
            pids: self.pids.clone(),
            ..Ending::default()
        };
        for (&pid, end) in self.pids.iter().zip(&self.ended) {
            let exit = match end {
                Some(r) => Exit {
                    pid,
                    reaped: true,
                    status: status(r),
                    clean: r.signal() == Some(term) || r.exit_code() == Some(worker::EXIT_DEADLINE),
                },
                None => Exit {
                    pid,
                    reaped: false,
                    status: "not reaped".into(),
                    clean: false,
                },
            };
            *ending.by_status.entry(exit.status.clone()).or_insert(0) += 1;
            if exit.clean {
                ending.clean += 1;
            } else if ending.unclean.len() < UNCLEAN_LISTED {
                ending.unclean.push(exit);
            }
        }
        ending
    }

    /// SIGKILL to every worker not reaped yet, and a bounded reaping.
    fn kill_rest(&mut self) {
        if self.reaped < self.pids.len() {
            self.signal_all(rustix::process::Signal::KILL.as_raw());
            self.reap_until(Instant::now() + stop_grace(self.pids.len()));
        }
    }
}

impl Drop for Herd {
    fn drop(&mut self) {
        self.kill_rest();
    }
}
