//! One cell of the herd: one wait method, W workers, one run.
//!
//! 1. The parent (single-threaded) makes the listener on 127.0.0.1, port 0:
//!    non-blocking for the multiplexing methods, so a worker that lost the
//!    race gets EAGAIN; blocking for `accept`. For `reuseport` it only binds
//!    a SO_REUSEPORT socket to reserve a port (never listening, so the
//!    kernel hands it no connection) and each worker listens on that port.
//! 2. It forks the W workers ([`super::worker`]) and reads one byte from
//!    each on the readiness pipe, then waits until every worker is asleep
//!    (state `S` in /proc) with a steady switch count: all are in their
//!    wait. No sleeps stand in for readiness.
//! 3. It reads each worker's voluntary context switches, runs the client
//!    ([`super::client`]) on its own thread of control, waits until the
//!    workers' accepts add up to the connections made and the herd is
//!    asleep again, and reads the switches and counters once more.
//! 4. It stops every worker with SIGTERM and reaps each with wait4,
//!    recording how each ended; a worker still there after [`STOP_GRACE`]
//!    is killed. If anything fails on the way, a guard kills and reaps
//!    every worker before the error is returned.
//!
//! Every wait here is bounded in time and in passes.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use rustix::pipe::{pipe_with, PipeFlags};
use serde::Serialize;

use super::client;
use super::plan::{Method, Plan};
use super::tally::{self, Board, Counts, Spread};
use super::worker::{self, Setup};
use crate::sys::process::{self, Forked, Reaped};

/// Longest wait for every worker to report ready and fall asleep.
const READY_WAIT: Duration = Duration::from_secs(20);
/// Longest wait for the accepts to add up and the herd to settle after
/// the client is done.
const SETTLE_WAIT: Duration = Duration::from_secs(10);
/// Time between two looks at /proc while waiting for the herd to settle.
const LOOK_EVERY: Duration = Duration::from_millis(1);
/// How long a stopped worker has to exit before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

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

/// Everything one cell measured.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    pub method: &'static str,
    pub workers: usize,
    /// Which repeat (0-based).
    pub run: usize,
    pub dups: usize,
    /// connect() calls made.
    pub attempted: u64,
    /// Connections that came up.
    pub established: u64,
    pub failed_connects: u64,
    pub timed_out: u64,
    pub connect_errors: std::collections::BTreeMap<String, u64>,
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
    pub exits: Vec<Exit>,
    pub client_seconds: f64,
    pub cell_seconds: f64,
}

/// Runs one cell. `board` must have a slot per worker.
pub fn run(
    plan: &Plan,
    method: Method,
    workers: usize,
    repeat: usize,
    board: &'static Board,
) -> anyhow::Result<CellResult> {
    let started = Instant::now();
    board.clear(workers);
    let (listener, addr) = listener(method, plan.backlog)?;
    // Workers give up on their own after everything the parent may wait.
    let life = READY_WAIT + plan.client_limit + SETTLE_WAIT + STOP_GRACE + Duration::from_secs(30);
    if method == Method::Accept {
        // Blocking accept wakes at the worker's deadline, not before.
        socket2::SockRef::from(&listener)
            .set_read_timeout(Some(life))
            .context("setting SO_RCVTIMEO on the listener")?;
    }
    let (ready_r, ready_w) = pipe_with(PipeFlags::CLOEXEC).context("making the readiness pipe")?;
    let mut herd = Herd::default();
    let parent = std::process::id() as i32;
    let deadline = Instant::now() + life;
    // A worker returns from its wait about once per connection, a few times
    // more in a herd; the cap only stops a worker that spins.
    let cap = 16 * plan.connections as u64 + 10_000;
    for i in 0..workers {
        let setup = Setup {
            method,
            dups: plan.dups,
            listener: method.shares_listener().then(|| listener.as_fd()),
            addr,
            backlog: plan.backlog,
            ready: ready_w.as_fd(),
            deadline,
            cap,
        };
        match process::fork() {
            Ok(Forked::Child) => worker::run(&setup, board.slot(i), parent),
            Ok(Forked::Parent(pid)) => herd.pids.push(pid),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("forking worker {} of {workers} ({} forked)", i + 1, i)
                })
            }
        }
    }
    drop(ready_w);
    await_ready(&ready_r, &mut herd, method)?;
    let before = asleep(&herd.pids, Instant::now() + READY_WAIT)
        .context("the workers did not all fall asleep in their wait")?;
    let outcome = client::run(
        addr,
        plan.connections,
        plan.rate,
        plan.in_flight,
        plan.client_limit,
    )?;
    // The handshake is done when connect() reports writable, but a worker
    // may not have accepted yet: wait for the accepts to add up, then for
    // the herd to be asleep again.
    let until = Instant::now() + SETTLE_WAIT;
    while board.accepts(workers) < outcome.established && Instant::now() < until {
        std::thread::sleep(LOOK_EVERY);
    }
    let after = asleep(&herd.pids, until);
    let settled = after.is_some();
    let after = match after {
        Some(a) => a,
        None => switches(&herd.pids).unwrap_or_else(|| before.clone()),
    };
    let counts = board.read(workers);
    let exits = herd.stop();
    Ok(tabulate(
        method,
        workers,
        repeat,
        plan.dups,
        &outcome,
        &counts,
        &before,
        &after,
        settled,
        exits,
        started.elapsed(),
    ))
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
    exits: Vec<Exit>,
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
        workers_reaped: exits.iter().filter(|e| e.reaped).count(),
        workers_clean: exits.iter().filter(|e| e.clean).count(),
        exits,
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

/// Reads one status byte per worker from the readiness pipe; fails on an
/// `F` (a worker could not set up), on a worker that died, or at the time
/// limit.
fn await_ready(pipe: &OwnedFd, herd: &mut Herd, method: Method) -> anyhow::Result<()> {
    use crate::sys::pollset::{self, POLLIN};
    use std::os::fd::AsRawFd;
    let until = Instant::now() + READY_WAIT;
    let mut ready = 0;
    let mut buf = [0u8; 256];
    while ready < herd.pids.len() {
        let Some(left) = until.checked_duration_since(Instant::now()) else {
            bail!(
                "{} of {} workers were not ready within {READY_WAIT:?}",
                herd.pids.len() - ready,
                herd.pids.len()
            );
        };
        let mut fds = [pollset::pollfd(pipe.as_raw_fd(), POLLIN)];
        match pollset::poll(&mut fds, Some(left.min(Duration::from_millis(100)))) {
            Ok(0) => {
                // Nothing yet: a worker that died before it wrote would
                // keep us waiting the whole time, so look for one.
                if let Some(r) = process::reap(-1, false).context("wait4")? {
                    herd.note_reaped(r);
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
        let n = match rustix::io::read(pipe, &mut buf) {
            Ok(0) => bail!("every worker closed the readiness pipe before all were ready"),
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e).context("reading the readiness pipe"),
        };
        if buf[..n].contains(&b'F') {
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
        ready += n;
    }
    Ok(())
}

/// Voluntary switches of every worker; `None` when one cannot be read.
fn switches(pids: &[i32]) -> Option<Vec<u64>> {
    pids.iter().map(|&p| tally::voluntary_switches(p)).collect()
}

/// Waits until every worker is asleep (`S`) and the switch counts are the
/// same on two looks in a row; returns those counts, or `None` at `until`.
fn asleep(pids: &[i32], until: Instant) -> Option<Vec<u64>> {
    let mut last: Option<Vec<u64>> = None;
    // Bounded by `until`; the pass cap is a second guard.
    for _ in 0..1_000_000 {
        let all_asleep = pids.iter().all(|&p| tally::state(p) == Some('S'));
        let now = if all_asleep { switches(pids) } else { None };
        match (&last, now) {
            (Some(a), Some(b)) if *a == b => return Some(b),
            (_, now) => last = now,
        }
        if Instant::now() >= until {
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
    pids: Vec<i32>,
    reaped: Vec<Reaped>,
}

impl Herd {
    fn note_reaped(&mut self, r: Reaped) {
        self.reaped.push(r);
    }

    fn unreaped(&self) -> Vec<i32> {
        self.pids
            .iter()
            .copied()
            .filter(|p| !self.reaped.iter().any(|r| r.pid == *p))
            .collect()
    }

    /// SIGTERM to every worker, then reaps them all (SIGKILL after the
    /// grace time); returns how each ended.
    fn stop(&mut self) -> Vec<Exit> {
        let term = rustix::process::Signal::TERM.as_raw();
        for pid in self.unreaped() {
            let _ = process::kill(pid, term);
        }
        let until = Instant::now() + STOP_GRACE;
        let mut waiting = self.unreaped();
        // Bounded by STOP_GRACE (and a pass cap); each pass reaps what has
        // exited and looks again a moment later.
        for _ in 0..1_000_000 {
            waiting.retain(|&pid| match process::reap(pid, false) {
                Ok(Some(r)) => {
                    self.reaped.push(r);
                    false
                }
                Ok(None) => !self.reaped.iter().any(|r| r.pid == pid) && alive(pid),
                Err(_) => false,
            });
            if waiting.is_empty() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(LOOK_EVERY);
        }
        self.kill_rest();
        self.pids
            .iter()
            .map(|&pid| match self.reaped.iter().find(|r| r.pid == pid) {
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
            })
            .collect()
    }

    /// SIGKILL and a blocking reap for every worker not reaped yet.
    fn kill_rest(&mut self) {
        for pid in self.unreaped() {
            let _ = process::kill(pid, rustix::process::Signal::KILL.as_raw());
            if let Ok(Some(r)) = process::reap(pid, true) {
                self.reaped.push(r);
            }
        }
    }
}

impl Drop for Herd {
    fn drop(&mut self) {
        self.kill_rest();
    }
}

/// Whether `pid` is still our child (wait4 said "not yet" rather than
/// "no such child").
fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}
