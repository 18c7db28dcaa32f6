//! One event loop of the load generator: a thread, an epoll instance, and a
//! shard of the connections.
//!
//! Every socket is registered once, edge-triggered, for both directions, so
//! the hot path makes no `epoll_ctl` calls: a readable event reads until
//! EAGAIN, a writable one writes until EAGAIN. Connects are non-blocking and
//! paced (at most [`PENDING_CONNECTS`] in progress per thread, and
//! `--connect-rate` when given) so the server's listen backlog is not flooded.
//!
//! The loop's phases are set by the coordinator through [`Shared`]: connect
//! everything, then (after a barrier) warm up and measure until the schedule
//! ends. A resident plan (`c10k run`'s slots) measures window after window
//! over the same connections, each opened by the coordinator: between two,
//! the loop has drained what was owed and sends nothing, so a resident
//! client costs its server nothing while another server is measured.
//! Timers (open-loop sends, connect pacing, timeouts) come from a heap and
//! the wait's timeout; nothing sleeps.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};

use super::conn::{Conn, Failure, InFlight, Payload, State};
use super::http::Counts;
use super::measured::{histogram, Measured, Round, MAX_NS};
use super::plan::{Arrivals, LoadPlan, Stop, Workload, PENDING_CONNECTS};
use super::record::{ConnRecord, Records};
use super::report::Syscalls;
use super::source::{connect_socket, connected_to_itself};
use crate::protocol::Protocol;

/// Open loop: messages waiting for a free slot on one connection at most;
/// past this, sends are skipped and counted as missed.
const MAX_BACKLOG: usize = 1 << 16;
/// How often connections are checked for timeouts at least; the longest
/// wait of a loop.
const SWEEP: Duration = Duration::from_millis(100);
/// A sweep reads every connection of the loop, so it runs every
/// [`SWEEP`] or every this share of `--timeout`, whichever is longer: a
/// timeout is judged within 5 % of itself. At a million connections and
/// a 60 s timeout, sweeping every 100 ms took 8 % of this 2-CPU machine
/// (`perf`), every 3 s it is negligible.
const SWEEPS_PER_TIMEOUT: u32 = 20;
/// Churn records kept per event loop; later attempts are only counted.
pub const CHURN_RECORDS: usize = 100_000;

/// When the measured window runs (set once all connections are up).
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Start of the warm-up (open-loop phases are laid out from here).
    pub start: Instant,
    /// Start of the measured window.
    pub measure_from: Instant,
    /// End of the measured window (duration runs).
    pub until: Option<Instant>,
    /// Open loop, resident: this window's messages per second on each
    /// connection, where the coordinator asked for a rate of its own (the
    /// capacity search's slots); `None`: the plan's.
    pub rate_per_connection: Option<f64>,
}

impl Schedule {
    fn measures(&self, t: Instant) -> bool {
        t >= self.measure_from && self.until.is_none_or(|u| t < u)
    }
}

/// State shared by the coordinator and every event loop.
pub struct Shared {
    pub plan: LoadPlan,
    /// When the run began: loops report their times from here.
    pub origin: Instant,
    pub payload: Payload,
    /// HTTP: the request every message is, rendered once (`None`: echo).
    pub request: Option<Vec<u8>>,
    /// Set by the coordinator after the connect phase (and before each
    /// window of a resident plan); read by a loop as a phase starts.
    schedule: Mutex<Option<Schedule>>,
    /// Phase boundaries: every loop and the coordinator.
    pub barrier: Rendezvous,
    /// Burst: whether another round follows; resident: whether another
    /// window does (written before a barrier).
    pub more_rounds: AtomicBool,
    /// Ctrl-C: finish now, keep what was measured.
    pub interrupted: AtomicBool,
    // Progress, read by the coordinator once a second.
    pub up: AtomicU64,
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub live: Mutex<Histogram<u64>>,
    /// Whether a progress line reads `live` (a terminal is watching).
    pub live_progress: bool,
}

impl Shared {
    pub fn new(plan: LoadPlan) -> Shared {
        let payload = match &plan.payload {
            Some(t) => Payload::Text(t.clone()),
            None => Payload::Generated(plan.message_size),
        };
        let request = (plan.protocol == Protocol::Http)
            .then(|| super::http::request(&plan.target.to_string(), plan.message_size));
        Shared {
            origin: Instant::now(),
            barrier: Rendezvous::new(plan.threads + 1),
            plan,
            payload,
            request,
            schedule: Mutex::new(None),
            more_rounds: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            up: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            live: Mutex::new(histogram()),
            live_progress: false,
        }
    }
}

impl Shared {
    /// Publishes the next window's schedule (before the barrier that
    /// starts it).
    pub fn set_schedule(&self, s: Schedule) {
        *self.schedule.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }

    /// The current window's schedule, once published.
    pub fn schedule(&self) -> Option<Schedule> {
        *self.schedule.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A barrier whose parties may leave: a loop that ends early (an error, a
/// panic) leaves, and the rest stop waiting for it.
pub struct Rendezvous {
    /// (generation, arrived, parties)
    state: Mutex<(u64, usize, usize)>,
    all: Condvar,
}

impl Rendezvous {
    pub fn new(parties: usize) -> Rendezvous {
        Rendezvous {
            state: Mutex::new((0, 0, parties)),
            all: Condvar::new(),
        }
    }

    /// Waits until every remaining party has arrived.
    pub fn wait(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.1 += 1;
        if s.1 >= s.2 {
            s.0 += 1;
            s.1 = 0;
            self.all.notify_all();
            return;
        }
        // A party in `others_waiting` counts the arrivals.
        self.all.notify_all();
        let generation = s.0;
        while s.0 == generation {
            s = self.all.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Returns once every other remaining party waits at this rendezvous,
    /// without arriving: they stay parked until this party's [`wait`]
    /// (Self::wait). The coordinator reads the CPU times of threads that
    /// sleep, which the kernel has counted to the nanosecond.
    pub fn others_waiting(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: each arrival or departure wakes this once, and the
        // generation cannot pass without this party.
        while s.1 + 1 < s.2 {
            s = self.all.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Leaves for good: later rendezvous no longer wait for this party.
    pub fn leave(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.2 = s.2.saturating_sub(1);
        if s.1 > 0 && s.1 >= s.2 {
            s.0 += 1;
            s.1 = 0;
        }
        // The rest, and a party in `others_waiting`, see the change.
        self.all.notify_all();
    }
}

/// Leaves the rendezvous when dropped, panics included.
struct Leave<'a>(&'a Rendezvous);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Runs event loop `index` of `shared.plan.threads` to the end.
///
/// The phases meet the coordinator at the rendezvous: every loop has its
/// connections up; the coordinator has published the schedule; then (burst)
/// one pair per round. However this loop ends (an error, a panic), it leaves
/// the rendezvous, so the others never wait for it.
/// Runs event loop `index` through every phase; `traffic_ended` is called
/// once its traffic is over (after a burst's or churn's last round, after
/// a timed or counted window and the echoes still owed), before it closes
/// its connections, with `None`. A resident plan also calls it after each
/// window, with what the window measured.
pub fn run(
    shared: &Shared,
    index: usize,
    traffic_ended: &dyn Fn(Option<Measured>),
) -> io::Result<Measured> {
    let _leave = Leave(&shared.barrier);
    // Timed waits wake up to 50 µs late by default (timer slack); an open
    // loop that sends late measures its own lateness. Ask for 1 ns.
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    let mut e = Engine::new(shared, index)?;
    match shared.plan.workload {
        Workload::Closed { .. } | Workload::Open { .. } if shared.plan.resident => {
            e.connect_all();
            shared.barrier.wait();
            // Window after window, until the coordinator says no more or
            // this loop's wait fails.
            loop {
                shared.barrier.wait();
                if !shared.more_rounds.load(Relaxed) || e.failed.is_some() {
                    break;
                }
                e.traffic();
                traffic_ended(Some(e.window()));
            }
        }
        Workload::Closed { .. } | Workload::Open { .. } => {
            e.connect_all();
            shared.barrier.wait();
            shared.barrier.wait();
            e.traffic();
        }
        Workload::Burst { .. } => {
            e.connect_all();
            shared.barrier.wait();
            shared.barrier.wait();
            loop {
                shared.barrier.wait();
                if !shared.more_rounds.load(Relaxed) {
                    break;
                }
                let round = e.burst_round();
                e.rounds.push(round);
                shared.barrier.wait();
            }
        }
        Workload::Churn { echo } => {
            e.connected_at = Instant::now();
            shared.barrier.wait();
            shared.barrier.wait();
            e.churn(echo);
        }
    }
    traffic_ended(None);
    if let Some(err) = e.failed.take() {
        return Err(io::Error::new(err.kind(), format!("epoll_wait: {err}")));
    }
    Ok(e.finish())
}

struct Engine<'a> {
    shared: &'a Shared,
    plan: &'a LoadPlan,
    ep: OwnedFd,
    conns: Vec<Conn>,
    /// Next connection to open (index into `conns`).
    next_open: usize,
    pending: usize,
    opened: u64,
    started: Instant,
    /// Connects per second allowed to this loop.
    rate: Option<f64>,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    latency: Histogram<u64>,
    latency_raw: Histogram<u64>,
    send_lag: Histogram<u64>,
    connect: Histogram<u64>,
    /// Latencies since the last publication to `shared.live`.
    interval: Histogram<u64>,
    last_publish: Instant,
    records: Records,
    missed: u64,
    /// Measured echoes so far, and how many of them `shared.completed`
    /// has been told of.
    echoed: u64,
    echoed_published: u64,
    rounds: Vec<(Instant, Option<Instant>)>,
    connected_at: Instant,
    scratch: Vec<u8>,
    events: Vec<Event>,
    last_sweep: Instant,
    /// The connections before this index are all idle or done.
    done_upto: usize,
    /// How often [`Engine::sweep`] reads every connection.
    sweep_every: Duration,
    /// Open loop: the uncorrected latency and the send lag differ from the
    /// corrected one and are recorded; closed loop writes when it intends.
    open_loop: bool,
    /// Origin of the in-flight timestamps.
    epoch: Instant,
    /// A progress line shows live percentiles: keep the interval histogram.
    live: bool,
    /// Connections with messages queued by the current batch of timers.
    dirty: Vec<usize>,
    /// System calls so far, and at the start of the measured window.
    io: Syscalls,
    io_from: Option<Syscalls>,
    io_window: Syscalls,
    /// Why this loop's epoll_wait failed, which ends every phase.
    failed: Option<io::Error>,
    /// The current phase's schedule, as the coordinator published it.
    sched: Option<Schedule>,
    /// Resident: each connection's bytes sent and received when the
    /// current window began (its record counts the window's share).
    window_bytes: Vec<(u64, u64)>,
    /// HTTP: the status codes of the responses a read framed, in order
    /// (what [`Engine::completed`] counts for those it measures), and the
    /// counts so far.
    statuses: Vec<u16>,
    http: Counts,
    /// Draws the gaps of Poisson arrivals; seeded by the loop's place and
    /// the clock, so no two loops (or agents) send in step.
    rng: crate::stats::rng::SplitMix64,
}

/// One loop's share of the run's `--connect-rate` `total`: the run's
/// loops are `threads` in each of `processes` (agents).
fn per_loop(total: f64, threads: usize, processes: usize) -> f64 {
    total / (threads.max(1) * processes.max(1)) as f64
}

impl<'a> Engine<'a> {
    fn new(shared: &'a Shared, index: usize) -> io::Result<Engine<'a>> {
        let plan = &shared.plan;
        let threads = plan.threads;
        let now = Instant::now();
        // Ids are dealt out over processes, then threads: loop `index` of
        // process k of p takes ids j with j % (p * threads) == k + p *
        // index. Ids below `connections` are active, the rest idle.
        let (k, p) = plan.process.unwrap_or((0, 1));
        let slots = match plan.workload {
            Workload::Churn { .. } => plan.connections.max(1),
            _ => plan.connections + plan.idle,
        };
        let conns = (k + p * index..slots)
            .step_by(p * threads)
            .map(|j| {
                let mut c = Conn::new(j as u32, j >= plan.connections, now);
                if shared.request.is_some() {
                    c.framer = Some(Box::default());
                }
                let sources = &plan.sources;
                if !sources.is_empty() {
                    // By the id among this process's (j / p), not j: an
                    // agent's own sources are as many as the agents in its
                    // namespace often are, and j % p is the same for every
                    // id here, so j % sources would pick one of them.
                    c.source = Some(sources[(j / p) % sources.len()]);
                }
                c
            })
            .collect();
        Ok(Engine {
            shared,
            plan,
            ep: epoll::create(CreateFlags::CLOEXEC)?,
            conns,
            next_open: 0,
            pending: 0,
            opened: 0,
            started: now,
            rate: plan.connect_rate.map(|r| per_loop(r, threads, p)),
            timers: BinaryHeap::new(),
            latency: histogram(),
            latency_raw: histogram(),
            send_lag: histogram(),
            connect: histogram(),
            interval: histogram(),
            last_publish: now,
            // Churn's records grow with time, not with connections.
            records: Records::new(match plan.workload {
                Workload::Churn { .. } => CHURN_RECORDS,
                _ => usize::MAX,
            }),
            missed: 0,
            echoed: 0,
            echoed_published: 0,
            rounds: Vec::new(),
            connected_at: now,
            scratch: vec![0; 256 << 10],
            events: vec![
                Event {
                    flags: EventFlags::empty(),
                    data: EventData::new_u64(0),
                };
                1024
            ],
            last_sweep: now,
            done_upto: 0,
            sweep_every: SWEEP.max(plan.timeout / SWEEPS_PER_TIMEOUT),
            open_loop: matches!(plan.workload, Workload::Open { .. }),
            epoch: now,
            live: shared.live_progress,
            dirty: Vec::new(),
            io: Syscalls::default(),
            io_from: None,
            io_window: Syscalls::default(),
            failed: None,
            sched: None,
            window_bytes: Vec::new(),
            statuses: Vec::new(),
            http: Counts::default(),
            rng: crate::stats::rng::SplitMix64::new(
                (index as u64 + ((k as u64) << 20))
                    ^ std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64),
            ),
        })
    }

    /// Whether to end the current phase: Ctrl-C, or this loop's wait failed.
    fn stopping(&self) -> bool {
        self.failed.is_some() || self.shared.interrupted.load(Relaxed)
    }

    // ---- connecting ------------------------------------------------------

    /// Opens every connection of this loop, paced; returns when all are up
    /// or failed (or on Ctrl-C).
    fn connect_all(&mut self) {
        self.started = Instant::now();
        while !self.stopping() {
            self.open_more();
            if self.pending == 0 && self.next_open >= self.conns.len() {
                break;
            }
            let wait = self
                .pacing_wait(self.next_open < self.conns.len())
                .min(SWEEP);
            self.poll(Some(wait));
            self.sweep(Instant::now());
        }
        self.connected_at = Instant::now();
    }

    /// Starts connects while pacing and the pending cap allow.
    fn open_more(&mut self) {
        while self.next_open < self.conns.len() && self.pending < PENDING_CONNECTS {
            if !self.may_open() {
                return;
            }
            let i = self.next_open;
            self.next_open += 1;
            self.open(i);
        }
    }

    /// Whether `--connect-rate` allows another connect now: one at the
    /// start, then `rate` per second. Saturating: at a rate so high that the
    /// allowance passes u64, every connect is allowed (a wrapped `+ 1` once
    /// allowed none, and the loop spun forever).
    fn may_open(&self) -> bool {
        self.rate.is_none_or(|r| {
            let allowed = (self.started.elapsed().as_secs_f64() * r) as u64;
            self.opened < allowed.saturating_add(1)
        })
    }

    /// How long until pacing allows the next connect (when `more` are
    /// waiting to be opened).
    fn pacing_wait(&self, more: bool) -> Duration {
        match self.rate {
            Some(r) if more => {
                let due = self.started + Duration::from_secs_f64(self.opened as f64 / r);
                due.saturating_duration_since(Instant::now())
            }
            _ => Duration::from_secs(3600),
        }
    }

    /// Starts a non-blocking connect for `conns[i]`.
    fn open(&mut self, i: usize) {
        self.opened += 1;
        self.conns[i].connect_started = Some(Instant::now());
        self.dial(i);
    }

    /// The connect itself, the first or (HTTP) a reconnect.
    fn dial(&mut self, i: usize) {
        let now = Instant::now();
        let c = &mut self.conns[i];
        c.dialed = Some(now);
        c.last_progress = now;
        match connect_socket(self.plan.target, c.source, self.plan.linger0) {
            Ok((sock, _)) => {
                let sock = TcpStream::from(sock);
                let flags = EventFlags::IN | EventFlags::OUT | EventFlags::ET | EventFlags::RDHUP;
                if let Err(e) =
                    epoll::add(&self.ep, sock.as_fd(), EventData::new_u64(i as u64), flags)
                {
                    self.fail(i, Failure::of(&e.into()));
                    return;
                }
                let c = &mut self.conns[i];
                c.sock = Some(sock);
                c.state = State::Connecting;
                self.pending += 1;
            }
            Err(e) => self.fail(i, Failure::of(&e)),
        }
    }

    /// A connecting socket became writable (or failed).
    fn on_connected(&mut self, i: usize) {
        let result = match &self.conns[i].sock {
            Some(s) => s
                .take_error()
                .and_then(|e| e.map_or(Ok(()), Err))
                .and_then(|()| {
                    if connected_to_itself(s, self.plan.target)? {
                        // Nothing listens there: a refusal, not a server.
                        Err(io::Error::from_raw_os_error(libc::ECONNREFUSED))
                    } else {
                        Ok(())
                    }
                }),
            None => return,
        };
        match result {
            Ok(()) => {
                self.pending -= 1;
                let now = Instant::now();
                let c = &mut self.conns[i];
                c.state = State::Up;
                c.established.get_or_insert(now);
                c.last_progress = now;
                if let Some(t) = c.dialed {
                    let _ = self.connect.record(ns(now - t));
                }
                self.shared.up.fetch_add(1, Relaxed);
            }
            Err(e) => self.fail(i, Failure::of(&e)),
        }
    }

    // ---- traffic ---------------------------------------------------------

    /// Closed or open loop until the schedule or the message count ends.
    fn traffic(&mut self) {
        self.sched = self.shared.schedule();
        let Some(sched) = self.sched else {
            return;
        };
        let interval = match self.plan.workload {
            Workload::Open { rate, .. } => Some(Duration::from_secs_f64(
                sched
                    .rate_per_connection
                    .map_or(self.plan.connections as f64 / rate, |r| 1.0 / r),
            )),
            _ => None,
        };
        for i in 0..self.conns.len() {
            // A connection reconnecting (HTTP) starts too: what it is
            // given goes out once it is up.
            let c = &self.conns[i];
            if c.idle || !matches!(c.state, State::Up | State::Connecting) {
                continue;
            }
            match (interval, self.plan.workload) {
                (Some(iv), _) => {
                    // Staggered phases: connection j starts j/N of an
                    // interval after the start; or, Poisson, a random gap
                    // after it.
                    let phase = match self.plan.arrivals {
                        Arrivals::Uniform => {
                            iv.mul_f64(self.conns[i].id as f64 / self.plan.connections as f64)
                        }
                        Arrivals::Poisson => self.gap(iv),
                    };
                    let due = sched.start + phase;
                    self.timers.push(Reverse((due, i)));
                }
                (None, Workload::Closed { depth }) => {
                    // The first `depth` messages go out in one write.
                    let now = Instant::now();
                    let f = self.stamp(now, now, &sched);
                    for _ in 0..self.sendable(i, now, depth, &sched) {
                        self.queue(i, f, now);
                    }
                    self.flush(i);
                }
                _ => {}
            }
        }
        // `--interval`: passes at least this far apart. A pass that found
        // nothing to read and sent nothing lets the next wait block (an
        // idle loop makes no wake-ups); any other sleeps to the next pass
        // and then takes what is ready without waiting.
        let pace = if self.open_loop {
            self.plan.interval
        } else {
            Duration::ZERO
        };
        let mut idle = true;
        let mut next_pass = Instant::now();
        loop {
            if !pace.is_zero() && !idle {
                let now = Instant::now();
                if next_pass > now {
                    std::thread::sleep(next_pass - now);
                }
            }
            let now = Instant::now();
            next_pass = now + pace;
            if self.io_from.is_none() && now >= sched.measure_from {
                self.io_from = Some(self.io);
                self.end_warmup(&sched);
            }
            if self.stopping() || sched.until.is_some_and(|u| now >= u) || self.all_active_done() {
                break;
            }
            let writes = self.io.writes;
            if let (Some(iv), Workload::Open { depth, .. }) = (interval, self.plan.workload) {
                self.fire_timers(now, iv, depth, &sched);
            }
            let mut wait = SWEEP;
            if let Some(Reverse((t, _))) = self.timers.peek() {
                wait = wait.min(t.saturating_duration_since(now));
            }
            if let Some(u) = sched.until {
                wait = wait.min(u.saturating_duration_since(now));
            }
            if pace.is_zero() || idle {
                idle = self.poll(Some(wait)) == 0 && self.io.writes == writes;
            } else {
                // Everything ready, however many events it takes.
                let mut n = self.poll(Some(Duration::ZERO));
                let mut got = n;
                while n == self.events.len() {
                    n = self.poll(Some(Duration::ZERO));
                    got += n;
                }
                idle = got == 0 && self.io.writes == writes;
            }
            let now = Instant::now();
            self.sweep(now);
            self.publish(now);
        }
        self.io_window = self.io.since(self.io_from.unwrap_or(self.io));
        self.drain();
    }

    /// After the window: sends nothing more and collects the echoes still
    /// owed (they finish after the window, so they are not counted), so
    /// that closing sends a FIN rather than a reset of unread data, which
    /// the server would have to count as an error. It waits for them as
    /// the window does, up to `--timeout`: an echo still owed then fails
    /// its connection as a timeout. So a server that accepts and never
    /// answers is an error however short the window, not a quiet zero.
    fn drain(&mut self) {
        for c in &mut self.conns {
            c.backlog.clear();
            for f in &mut c.in_flight {
                f.measured = false;
            }
        }
        self.timers.clear();
        // One sweep past the timeout, so the last owed echo is judged.
        let deadline = Instant::now() + self.plan.timeout + self.sweep_every;
        while !self.stopping() {
            let owed = self
                .conns
                .iter()
                .any(|c| c.state == State::Up && !c.in_flight.is_empty());
            let now = Instant::now();
            if !owed || now >= deadline {
                break;
            }
            self.poll(Some((deadline - now).min(SWEEP)));
            self.sweep(Instant::now());
        }
    }

    /// Open loop: sends every message now due.
    fn fire_timers(&mut self, now: Instant, interval: Duration, depth: usize, sched: &Schedule) {
        while let Some(&Reverse((due, i))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            // A connection reconnecting (HTTP) keeps its schedule: what
            // falls due meanwhile goes out once it is up.
            if !matches!(self.conns[i].state, State::Up | State::Connecting) {
                continue;
            }
            let next = if due < sched.measure_from && now >= sched.measure_from {
                // A warm-up send reached only once the window is open is
                // dropped (see `end_warmup`): the connection's schedule
                // resumes at its first due time inside the window (a
                // Poisson stream, memoryless, at a fresh gap after the
                // window opens).
                if self.plan.arrivals == Arrivals::Poisson {
                    sched.measure_from + self.gap(interval)
                } else {
                    let behind = (sched.measure_from - due).as_nanos();
                    let step = interval.as_nanos().max(1);
                    due + Duration::from_nanos((behind.div_ceil(step) * step) as u64)
                }
            } else {
                if self.may_send(i, due, sched) {
                    let c = &mut self.conns[i];
                    if c.in_flight.len() < depth && c.backlog.is_empty() {
                        let f = self.stamp(due, now, sched);
                        self.queue(i, f, now);
                        self.dirty.push(i);
                    } else if c.backlog.len() < MAX_BACKLOG {
                        // Due, but the connection is busy: it goes out as
                        // soon as a slot frees, and its latency counts from
                        // now.
                        c.backlog.push_back(due);
                    } else {
                        self.missed += 1;
                    }
                }
                due + self.gap(interval)
            };
            if sched.until.is_none_or(|u| next < u) && self.may_send(i, next, sched) {
                self.timers.push(Reverse((next, i)));
            }
        }
        // Everything due is written before the loop waits again: one write
        // per connection, however many of its messages fell due together.
        while let Some(i) = self.dirty.pop() {
            self.flush(i);
        }
    }

    /// The time to a connection's next send, `interval` on average: that,
    /// or an exponential draw of that mean (Poisson arrivals).
    fn gap(&mut self, interval: Duration) -> Duration {
        match self.plan.arrivals {
            Arrivals::Uniform => interval,
            Arrivals::Poisson => {
                let u = 1.0 - self.rng.unit();
                interval.mul_f64(-u.ln())
            }
        }
    }

    /// Open loop, when the window opens: the warm-up's sends still waiting
    /// are dropped, not sent. They are not measured, and a client that fell
    /// behind in the warm-up would otherwise spend the window writing them:
    /// at 1,000,000/s on 2,000 connections, one client thread was still
    /// sending its 2 s warm-up 16 s later, and the window's rate and CPU
    /// per message counted only the measured sixth of what went out. So the
    /// window starts with at most `depth` warm-up messages in flight per
    /// connection; a client late in the window is then late with measured
    /// sends, which its send lag shows.
    fn end_warmup(&mut self, sched: &Schedule) {
        if !self.open_loop {
            return;
        }
        for c in &mut self.conns {
            c.backlog.retain(|t| *t >= sched.measure_from);
        }
    }

    /// How many of `k` messages due at `t` are still wanted (`-n` not
    /// reached).
    fn sendable(&self, i: usize, t: Instant, k: usize, sched: &Schedule) -> usize {
        match self.plan.stop {
            Stop::Messages(n) if sched.measures(t) => {
                (n.saturating_sub(self.measured_queued(i, sched)) as usize).min(k)
            }
            Stop::Messages(_) => k,
            Stop::Duration(_) if sched.until.is_none_or(|u| t < u) => k,
            Stop::Duration(_) => 0,
        }
    }

    /// Whether a message due at `t` is still wanted (`-n` not reached).
    fn may_send(&self, i: usize, t: Instant, sched: &Schedule) -> bool {
        self.sendable(i, t, 1, sched) > 0
    }

    /// Measured messages sent, in flight or waiting on connection `i`.
    fn measured_queued(&self, i: usize, sched: &Schedule) -> u64 {
        let c = &self.conns[i];
        let waiting = c.backlog.iter().filter(|t| sched.measures(**t)).count();
        c.requests + (c.in_flight.iter().filter(|f| f.measured).count() + waiting) as u64
    }

    /// Queues message number `queued` on connection `i`, due at `intended`,
    /// written at `now`. It is not written here: the caller flushes the
    /// connection once after queueing everything that became due in the
    /// same event, so k messages cost one `write`, not k (the C reference
    /// client does the same). The flush follows before the loop waits
    /// again, so no message goes out later than the event that made it due.
    fn queue(&mut self, i: usize, f: InFlight, now: Instant) {
        let c = &mut self.conns[i];
        if c.in_flight.is_empty() {
            c.last_progress = now;
        }
        match &self.shared.request {
            Some(request) => {
                // Nothing to compare a response with: what is written is
                // dropped.
                if c.out_pos == c.out.len() {
                    c.out.clear();
                    c.out_pos = 0;
                }
                c.out.extend_from_slice(request);
            }
            None => {
                self.shared.payload.write_at(c.next_at, &mut c.out);
                c.next_at = Payload::next_offset(c.next_at);
            }
        }
        c.queued += 1;
        c.in_flight.push_back(f);
    }

    /// The in-flight entry of a message due at `intended` and written at
    /// `now` (open loop: its send lag is recorded here, once).
    fn stamp(&mut self, intended: Instant, now: Instant, sched: &Schedule) -> InFlight {
        let measured = sched.measures(intended);
        if measured && self.open_loop {
            let _ = self
                .send_lag
                .record(ns(now.saturating_duration_since(intended)));
        }
        let sent = self.since_epoch(now);
        InFlight {
            intended: if intended == now {
                sent
            } else {
                self.since_epoch(intended)
            },
            sent,
            measured,
        }
    }

    /// Records `count` measured round trips stamped `f` that completed at
    /// `now_ns`.
    fn record(&mut self, i: usize, f: InFlight, count: u64, now_ns: u64) {
        let corrected = now_ns.saturating_sub(f.intended).max(1);
        let _ = self.latency.record_n(corrected, count);
        if self.open_loop {
            let raw = now_ns.saturating_sub(f.sent).max(1);
            let _ = self.latency_raw.record_n(raw, count);
        }
        if self.live {
            let _ = self.interval.record_n(corrected, count);
        }
        self.conns[i].record(corrected, count);
    }

    /// Nanoseconds from this loop's epoch to `t`.
    fn since_epoch(&self, t: Instant) -> u64 {
        ns(t.saturating_duration_since(self.epoch))
    }

    /// The first `k` messages in flight on connection `i` came back at
    /// `now`: records them, then refills (closed loop: as many new
    /// messages; open loop: as many from the backlog). The caller flushes
    /// once for the whole batch.
    ///
    /// A message costs one histogram record: the uncorrected figure only
    /// exists in open loop (closed loop writes when it intends to) and the
    /// live one only when a progress line shows it. The whole batch is
    /// recorded before refilling, so the `-n` count sees every completion.
    ///
    /// A timed window counts the echoes that come back inside it, those
    /// sent during the warm-up included, as wrk does. Counting only those
    /// also sent inside it would miss the last round trip of every
    /// connection: a share of the figure as large as the round trip is
    /// against the window (a loop that blocks 1 ms for each of 1,000
    /// connections answers each once a second). A fixed count (`-n`) and a
    /// burst count the messages they sent after the warm-up.
    fn completed(&mut self, i: usize, k: usize, now: Instant) {
        let now_ns = self.since_epoch(now);
        let mut measured = 0;
        let in_window = match (self.plan.stop, self.sched) {
            (Stop::Duration(_), Some(s)) if s.until.is_some() => Some(s.measures(now)),
            _ => None,
        };
        // Messages written together complete together with one latency:
        // a run of equal stamps is one record of `count` (the histogram is
        // the same as recording each; closed loop at depth D makes runs of
        // up to D).
        let mut run: Option<(InFlight, u64)> = None;
        for j in 0..k {
            let Some(f) = self.conns[i].in_flight.pop_front() else {
                break;
            };
            if !in_window.unwrap_or(f.measured) {
                continue;
            }
            measured += 1;
            if let Some(&code) = self.statuses.get(j) {
                *self.http.status.entry(code).or_default() += 1;
            }
            match &mut run {
                Some((g, count)) if g.intended == f.intended && g.sent == f.sent => *count += 1,
                _ => {
                    if let Some((g, count)) = run.replace((f, 1)) {
                        self.record(i, g, count, now_ns);
                    }
                }
            }
        }
        if let Some((g, count)) = run {
            self.record(i, g, count, now_ns);
        }
        self.echoed += measured;
        let Some(sched) = self.sched else {
            return;
        };
        match self.plan.workload {
            Workload::Closed { depth } if !self.stopping() => {
                let n = match &self.shared.request {
                    // HTTP: a pipeline is topped up once half of it is
                    // answered, in one write. A server that answers
                    // pipelined requests a write each (nginx) would
                    // otherwise cost the client a write (and, on loopback,
                    // the server's receive path) per response: at 100:16
                    // against nginx, 0.87 writes per request and 1.34×
                    // wrk's CPU per request, which writes once per batch.
                    Some(_) => {
                        let owed = self.conns[i].in_flight.len();
                        if owed * 2 > depth {
                            0
                        } else {
                            self.sendable(i, now, depth - owed, &sched)
                        }
                    }
                    None => self.sendable(i, now, k, &sched),
                };
                self.conns[i].out.reserve(n * self.shared.payload.len());
                let f = self.stamp(now, now, &sched);
                for _ in 0..n {
                    self.queue(i, f, now);
                }
            }
            Workload::Open { .. } => {
                for _ in 0..k {
                    let Some(due) = self.conns[i].backlog.pop_front() else {
                        break;
                    };
                    let f = self.stamp(due, now, &sched);
                    self.queue(i, f, now);
                }
            }
            _ => {}
        }
        // A closed loop's connection that has sent its `-n` hangs up, as
        // the studies' clients did. An open loop's stays open to the end:
        // it holds its connection (C1M measures the holding), and closing
        // it would put a close beside every message in the window.
        if let Stop::Messages(n) = self.plan.stop {
            let c = &self.conns[i];
            if c.requests >= n
                && c.in_flight.is_empty()
                && matches!(self.plan.workload, Workload::Closed { .. })
            {
                self.close(i);
            }
        }
    }

    /// Whether every active connection is done. Asked once per pass of
    /// the traffic loop, where a connection never leaves `Done`: the
    /// connections known done from the start are skipped, so the
    /// question costs nothing per pass once asked (scanning them all each
    /// pass was the largest cost of a `-n 1` run at a million connections,
    /// 20,000 per loop a hundred times a second).
    fn all_active_done(&mut self) -> bool {
        // An open loop's connection that has had its `-n` echoes is done
        // but still open.
        let echoed = match (self.plan.stop, self.plan.workload) {
            (Stop::Messages(n), Workload::Open { .. }) => Some(n),
            _ => None,
        };
        let conns = &self.conns;
        let skip = conns[self.done_upto..]
            .iter()
            .take_while(|c| {
                c.idle
                    || c.state == State::Done
                    || echoed.is_some_and(|n| {
                        c.requests >= n && c.in_flight.is_empty() && c.backlog.is_empty()
                    })
            })
            .count();
        self.done_upto += skip;
        self.done_upto == conns.len()
    }

    // ---- burst -----------------------------------------------------------

    /// Sends one message on every active connection and waits for every
    /// echo; returns the round's start and the time of its last echo.
    fn burst_round(&mut self) -> (Instant, Option<Instant>) {
        let start = Instant::now();
        let io_before = self.io;
        let sched = Schedule {
            start,
            measure_from: start,
            until: None,
            rate_per_connection: None,
        };
        for i in 0..self.conns.len() {
            if !self.conns[i].idle && self.conns[i].state == State::Up {
                let f = self.stamp(start, start, &sched);
                self.queue(i, f, start);
                self.flush(i);
            }
        }
        let mut last = None;
        while !self.stopping() {
            let waiting = self
                .conns
                .iter()
                .any(|c| c.state == State::Up && !c.in_flight.is_empty());
            if !waiting {
                break;
            }
            let before = self.echoed;
            self.poll(Some(SWEEP));
            if self.echoed > before {
                last = Some(Instant::now());
            }
            let now = Instant::now();
            self.sweep(now);
            self.publish(now);
        }
        self.io_window.add(self.io.since(io_before));
        (start, last)
    }

    // ---- churn -----------------------------------------------------------

    /// Opens, optionally echoes one message on, and closes connections in
    /// every slot until the schedule (or `-n` per slot) ends.
    fn churn(&mut self, echo: bool) {
        self.sched = self.shared.schedule();
        let Some(sched) = self.sched else {
            return;
        };
        self.started = Instant::now();
        let per_slot = match self.plan.stop {
            Stop::Messages(n) => Some(n),
            Stop::Duration(_) => None,
        };
        let mut cycles = vec![0u64; self.conns.len()];
        loop {
            let now = Instant::now();
            if self.stopping() || sched.until.is_some_and(|u| now >= u) {
                break;
            }
            // Connections that came up: echo one message or close.
            for i in 0..self.conns.len() {
                let c = &self.conns[i];
                if c.state != State::Up {
                    continue;
                }
                if echo && c.queued == 0 {
                    let now = Instant::now();
                    let f = self.stamp(now, now, &sched);
                    self.queue(i, f, now);
                    self.flush(i);
                } else if !echo || (c.queued > 0 && c.in_flight.is_empty()) {
                    self.close(i);
                }
            }
            // Slots that are free (never opened, or done) open again.
            for (i, cycle) in cycles.iter_mut().enumerate() {
                let c = &self.conns[i];
                let free = c.state == State::Waiting || c.state == State::Done;
                if !free
                    || per_slot.is_some_and(|n| *cycle >= n)
                    || self.pending >= PENDING_CONNECTS
                {
                    continue;
                }
                if !self.may_open() {
                    break;
                }
                if self.conns[i].state == State::Done {
                    let id = self.conns[i].id;
                    let source = self.conns[i].source;
                    self.conns[i] = Conn::new(id, false, now);
                    self.conns[i].source = source;
                    if self.shared.request.is_some() {
                        self.conns[i].framer = Some(Box::default());
                    }
                }
                *cycle += 1;
                self.open(i);
            }
            if per_slot.is_some()
                && self.conns.iter().enumerate().all(|(i, c)| {
                    c.state == State::Done && per_slot.is_some_and(|n| cycles[i] >= n)
                })
            {
                break;
            }
            let free = self.conns.iter().enumerate().any(|(i, c)| {
                matches!(c.state, State::Waiting | State::Done)
                    && per_slot.is_none_or(|n| cycles[i] < n)
            });
            let wait = self.pacing_wait(free).min(SWEEP);
            self.poll(Some(wait));
            let now = Instant::now();
            self.sweep(now);
            self.publish(now);
        }
    }

    // ---- I/O -------------------------------------------------------------

    /// Waits up to `timeout` and handles what is ready.
    fn poll(&mut self, timeout: Option<Duration>) -> usize {
        let ts = timeout.map(|d| rustix::event::Timespec::try_from(d).unwrap_or_default());
        self.io.waits += 1;
        let n = match epoll::wait(&self.ep, &mut self.events[..], ts.as_ref()) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => return 0,
            Err(e) => {
                // Not a signal: waiting again would fail again and spin.
                self.failed.get_or_insert(e.into());
                return 0;
            }
        };
        for k in 0..n {
            let ev = self.events[k];
            let i = ev.data.u64() as usize;
            let flags = ev.flags;
            match self.conns.get(i).map(|c| c.state) {
                Some(State::Connecting) => {
                    self.on_connected(i);
                    if self.conns[i].state == State::Up {
                        self.flush(i);
                        self.read(i, true);
                    }
                }
                Some(State::Up) => {
                    if flags.intersects(EventFlags::OUT) {
                        self.flush(i);
                    }
                    let hangup = EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR;
                    if flags.intersects(EventFlags::IN | hangup) {
                        self.read(i, flags.intersects(hangup));
                    }
                }
                _ => {}
            }
        }
        n
    }

    /// Writes queued bytes until the socket would block.
    fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(sock) = c.sock.as_ref().filter(|_| c.state == State::Up) else {
            return;
        };
        while c.out_pos < c.out.len() {
            self.io.writes += 1;
            // A raw send(2) (rustix): no libc wrapper on the hot path, and
            // none of write(2)'s file layer (position lock, permission and
            // fsnotify hooks), which is about 3 % of a depth-1 client's
            // CPU. NOSIGNAL: a reset peer is EPIPE here, never a signal.
            match rustix::net::send(sock, &c.out[c.out_pos..], rustix::net::SendFlags::NOSIGNAL) {
                Ok(n) => {
                    c.out_pos += n;
                    c.bytes_sent += n as u64;
                }
                Err(rustix::io::Errno::AGAIN) => return,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    self.fail(i, Failure::of(&e.into()));
                    return;
                }
            }
        }
    }

    /// Reads until the socket would block, checking every byte and timing
    /// every completed message.
    ///
    /// A read shorter than the buffer emptied the socket, and any byte that
    /// arrives later raises a new edge, so the loop stops there instead of
    /// paying a second `read` for its EAGAIN, unless the event also said the
    /// peer hung up (`to_end`): then it reads on to the end of the stream.
    fn read(&mut self, i: usize, to_end: bool) {
        loop {
            let Some(sock) = self.conns[i].sock.as_ref() else {
                return;
            };
            self.io.reads += 1;
            // recv(2) rather than read(2), for the reason given in flush.
            match rustix::net::recv(sock, &mut self.scratch[..], rustix::net::RecvFlags::empty())
                .map(|(n, _)| n)
            {
                Ok(0) if self.conns[i].framer.is_some() => {
                    self.server_closed(i);
                    return;
                }
                Ok(0) => {
                    // The server closed: a failure unless we were done.
                    self.fail(i, Failure::Closed);
                    return;
                }
                Ok(n) => {
                    let now = Instant::now();
                    let m = self.shared.payload.len();
                    let c = &mut self.conns[i];
                    c.last_progress = now;
                    let mut closes = false;
                    let got = match c.framer.as_deref_mut() {
                        None => c.receive(&self.scratch[..n], m),
                        Some(framer) => {
                            c.bytes_received += n as u64;
                            self.statuses.clear();
                            let statuses = &mut self.statuses;
                            let framed = framer.feed(&self.scratch[..n], |r| {
                                statuses.push(r.status);
                                closes |= r.closes;
                            });
                            let k = statuses.len();
                            self.http.responses += k as u64;
                            c.answered += k as u64;
                            // A response to no request is as wrong as
                            // bytes that are not one.
                            (framed.is_ok() && k <= c.in_flight.len()).then_some(k)
                        }
                    };
                    let Some(k) = got else {
                        self.fail(i, Failure::Mismatch);
                        return;
                    };
                    if k > 0 {
                        self.completed(i, k, now);
                        if closes && self.conns[i].state == State::Up {
                            // The server said it closes after this one.
                            self.reopen(i);
                            return;
                        }
                        // Everything the batch made due goes out in one
                        // write.
                        self.flush(i);
                    }
                    if self.conns[i].state != State::Up || (n < self.scratch.len() && !to_end) {
                        return;
                    }
                }
                Err(rustix::io::Errno::AGAIN) => return,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    self.fail(i, Failure::of(&e.into()));
                    return;
                }
            }
        }
    }

    /// HTTP: the server closed connection `i`. A response framed by the
    /// close completes; one cut short is counted. A connection the server
    /// closes after answering (idle, or after `Connection: close`) opens
    /// again, as a browser's or wrk's does; one it closes before any answer
    /// fails (`closed`), so a server that hangs up on every request is an
    /// error, not a loop of connects.
    fn server_closed(&mut self, i: usize) {
        let now = Instant::now();
        self.statuses.clear();
        let c = &mut self.conns[i];
        let statuses = &mut self.statuses;
        let cut = c
            .framer
            .as_deref_mut()
            .is_some_and(|f| f.eof(|r| statuses.push(r.status)).is_err());
        self.http.cut_short += u64::from(cut);
        let k = self.statuses.len().min(c.in_flight.len());
        self.http.responses += k as u64;
        c.answered += k as u64;
        if k > 0 {
            self.completed(i, k, now);
        }
        let c = &self.conns[i];
        if c.state != State::Up {
            return;
        }
        let owed = !c.in_flight.is_empty() || !c.backlog.is_empty();
        if c.answered == 0 && owed {
            self.fail(i, Failure::Closed);
        } else if owed || (c.answered > 0 && self.plan.resident) || self.in_traffic() {
            self.reopen(i);
        } else {
            self.close(i);
        }
    }

    /// Whether the traffic of a window is under way (not its drain, not
    /// churn, which closes every connection itself).
    fn in_traffic(&self) -> bool {
        !self.stopping()
            && !matches!(self.plan.workload, Workload::Churn { .. })
            && self
                .sched
                .is_some_and(|s| s.until.is_none_or(|u| Instant::now() < u))
    }

    /// HTTP: opens connection `i` again after the server closed it; the
    /// requests it still owed are written again once it is up, keeping
    /// their times, so their latency includes the reconnect.
    fn reopen(&mut self, i: usize) {
        if matches!(self.plan.workload, Workload::Churn { .. }) {
            self.close(i);
            return;
        }
        self.http.reconnects += 1;
        let c = &mut self.conns[i];
        if let Some(sock) = c.sock.take() {
            let _ = epoll::delete(&self.ep, sock.as_fd());
        }
        if c.state == State::Up {
            self.shared.up.fetch_sub(1, Relaxed);
        }
        c.state = State::Waiting;
        c.answered = 0;
        c.framer = Some(Box::default());
        c.out.clear();
        c.out_pos = 0;
        c.acked = 0;
        if let Some(request) = &self.shared.request {
            for _ in 0..c.in_flight.len() {
                c.out.extend_from_slice(request);
            }
        }
        self.dial(i);
    }

    /// Fails connections whose connect or echo is overdue.
    fn sweep(&mut self, now: Instant) {
        if now - self.last_sweep < self.sweep_every {
            return;
        }
        self.last_sweep = now;
        let timeout = self.plan.timeout;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let waiting = match c.state {
                State::Connecting => true,
                State::Up => !c.in_flight.is_empty(),
                _ => false,
            };
            if waiting && now.saturating_duration_since(c.last_progress) > timeout {
                self.fail(i, Failure::Timeout);
            }
        }
    }

    /// Publishes recent latencies for the progress line.
    fn publish(&mut self, now: Instant) {
        if now - self.last_publish < Duration::from_millis(250) {
            return;
        }
        self.last_publish = now;
        // The count shared with the progress line moves here, not per
        // message: an atomic add per read is a locked instruction on the
        // hot path for a figure read once a second.
        self.shared
            .completed
            .fetch_add(self.echoed - self.echoed_published, Relaxed);
        self.echoed_published = self.echoed;
        if let Ok(mut live) = self.shared.live.lock() {
            let _ = live.add(&self.interval);
        }
        self.interval.reset();
    }

    // ---- ending ----------------------------------------------------------

    /// Ends connection `i` with `why`.
    fn fail(&mut self, i: usize, why: Failure) {
        let c = &mut self.conns[i];
        if c.state == State::Done {
            return;
        }
        if c.state == State::Connecting {
            self.pending -= 1;
        }
        if c.failure.is_none() {
            c.failure = Some(why);
        }
        self.shared.failed.fetch_add(1, Relaxed);
        self.end(i);
    }

    /// Closes connection `i` normally.
    fn close(&mut self, i: usize) {
        if self.conns[i].state == State::Connecting {
            self.pending -= 1;
        }
        self.end(i);
    }

    fn end(&mut self, i: usize) {
        let now = Instant::now();
        let c = &mut self.conns[i];
        if c.state == State::Done {
            return;
        }
        if c.state == State::Up {
            self.shared.up.fetch_sub(1, Relaxed);
        }
        c.state = State::Done;
        c.ended = Some(now);
        if let Some(sock) = c.sock.take() {
            let _ = epoll::delete(&self.ep, sock.as_fd());
            drop(sock);
        }
        self.records.push(ConnRecord::of(c));
    }

    /// Resident: what the window just ended measured, handed over and
    /// started afresh for the next: its histograms, missed sends and
    /// system calls, and a record of every connection with the window's
    /// share of its counts (one that failed keeps its error, so every
    /// later window of a broken connection says so).
    fn window(&mut self) -> Measured {
        self.window_bytes.resize(self.conns.len(), (0, 0));
        let mut records = Records::new(usize::MAX);
        for (c, base) in self.conns.iter_mut().zip(&mut self.window_bytes) {
            if c.idle {
                continue;
            }
            let mut r = ConnRecord::of(c);
            r.bytes_sent -= base.0.min(r.bytes_sent);
            r.bytes_received -= base.1.min(r.bytes_received);
            *base = (c.bytes_sent, c.bytes_received);
            c.requests = 0;
            c.rt_sum_ns = 0;
            c.rt_min_ns = u64::MAX;
            c.rt_max_ns = 0;
            records.push(r);
        }
        // A connection that ended in the window also keeps the record it
        // ended with, for the final result.
        self.io_from = None;
        Measured {
            latency: std::mem::replace(&mut self.latency, histogram()),
            uncorrected: std::mem::replace(&mut self.latency_raw, histogram()),
            send_lag: std::mem::replace(&mut self.send_lag, histogram()),
            records,
            missed: std::mem::take(&mut self.missed),
            io: std::mem::take(&mut self.io_window),
            http: std::mem::take(&mut self.http),
            ..Measured::empty()
        }
    }

    fn finish(mut self) -> Measured {
        for i in 0..self.conns.len() {
            if self.conns[i].state != State::Waiting || self.conns[i].connect_started.is_some() {
                self.close(i);
            }
        }
        self.publish(Instant::now() + Duration::from_secs(1));
        let origin = self.shared.origin;
        let since = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
        Measured {
            latency: self.latency,
            uncorrected: self.latency_raw,
            send_lag: self.send_lag,
            connect: self.connect,
            records: self.records,
            missed: self.missed,
            rounds: self
                .rounds
                .iter()
                .map(|&(start, end)| Round {
                    start: since(start),
                    end: end.map(since),
                })
                .collect(),
            connect_seconds: since(self.connected_at),
            io: self.io_window,
            http: self.http,
            ..Measured::empty()
        }
    }
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(MAX_NS as u128) as u64
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn the_coordinator_sees_the_others_parked_before_it_arrives() {
        let r = Rendezvous::new(3);
        let passed = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    r.wait();
                    passed.fetch_add(1, Relaxed);
                });
            }
            // Returns once both wait, and releases neither.
            r.others_waiting();
            assert_eq!(passed.load(Relaxed), 0);
            r.wait();
        });
        assert_eq!(passed.load(Relaxed), 2);
        // A party that leaves is not waited for.
        let r = Rendezvous::new(2);
        r.leave();
        r.others_waiting();
    }

    fn plan(target: std::net::SocketAddr, connections: usize, workload: Workload) -> LoadPlan {
        LoadPlan {
            stop: Stop::Duration(Duration::from_secs(60)),
            quiet: true,
            ..LoadPlan::new(target, connections, workload)
        }
    }

    /// A window that opened a second ago (messages a test makes overdue
    /// by milliseconds are in it) and runs a minute.
    fn schedule(shared: &Shared) -> Schedule {
        let now = Instant::now();
        let s = Schedule {
            start: now - Duration::from_secs(1),
            measure_from: now - Duration::from_secs(1),
            until: Some(now + Duration::from_secs(60)),
            rate_per_connection: None,
        };
        shared.set_schedule(s);
        s
    }

    #[test]
    fn an_agent_spreads_over_all_its_sources_whatever_its_index() {
        // Agent 1 of 4, whose namespace has 4 addresses: ids 1, 5, 9, …
        // are all ≡ 1 mod 4, and must still use every address.
        let target = "127.0.0.1:9".parse().expect("addr");
        let mut p = plan(target, 64, Workload::Closed { depth: 1 });
        p.process = Some((1, 4));
        p.sources = (1..=4)
            .map(|i| std::net::IpAddr::from([127, 0, 1, i]))
            .collect();
        let shared = Shared::new(p);
        let e = Engine::new(&shared, 0).expect("an event loop");
        let used: std::collections::BTreeSet<_> = e.conns.iter().filter_map(|c| c.source).collect();
        assert_eq!(e.conns.len(), 16);
        assert_eq!(used.len(), 4, "{used:?}");
    }

    #[test]
    fn the_connect_rate_is_the_runs_over_every_loop_of_every_agent() {
        // 1,000 a second over 8 agents of 2 loops: 62.5 each, 1,000 in all.
        assert_eq!(per_loop(1000.0, 2, 8), 62.5);
        assert_eq!(per_loop(1000.0, 4, 1), 250.0);
        assert_eq!(per_loop(1000.0, 0, 0), 1000.0);
    }

    #[test]
    fn completions_of_one_read_go_out_in_one_write() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let shared = Shared::new(plan(
            listener.local_addr().expect("addr"),
            1,
            Workload::Closed { depth: 8 },
        ));
        let mut e = Engine::new(&shared, 0).expect("an event loop");
        e.connect_all();
        assert_eq!(e.conns[0].state, State::Up);
        let (mut server, _) = listener.accept().expect("accept");
        let sched = schedule(&shared);
        e.sched = Some(sched);
        // The first eight messages: one write.
        let f = e.stamp(sched.start, sched.start, &sched);
        for _ in 0..8 {
            e.queue(0, f, sched.start);
        }
        e.flush(0);
        assert_eq!(e.io.writes, 1);
        let mut batch = vec![0u8; 8 * 64];
        server.read_exact(&mut batch).expect("the eight messages");
        // All eight echoed at once: one read completes them, and the eight
        // that replace them leave in one write.
        server.write_all(&batch).expect("echo");
        let (reads, writes) = (e.io.reads, e.io.writes);
        for _ in 0..100 {
            e.poll(Some(Duration::from_secs(1)));
            if e.echoed == 8 {
                break;
            }
        }
        assert_eq!(e.echoed, 8);
        assert_eq!(e.io.reads - reads, 1, "one read took the whole batch");
        assert_eq!(e.io.writes - writes, 1, "eight messages, one write");
        let c = &e.conns[0];
        assert_eq!(
            (c.in_flight.len(), c.out_pos, c.queued),
            (8, c.out.len(), 16)
        );
        server
            .read_exact(&mut batch)
            .expect("the next eight, together");
        // And they are the next eight messages, byte for byte.
        let mut expected = Vec::new();
        for k in 8..16 {
            shared.payload.write_message(0, k, &mut expected);
        }
        assert_eq!(batch, expected);
    }

    /// Sends the warm-up owed when the window opens are not written: the
    /// backlog keeps only the window's, and a timer still in the warm-up
    /// resumes at its first due time inside the window.
    #[test]
    fn warmup_sends_owed_when_the_window_opens_are_dropped() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let shared = Shared::new(plan(
            listener.local_addr().expect("addr"),
            1,
            Workload::Open {
                rate: 10.0,
                depth: 16,
            },
        ));
        let mut e = Engine::new(&shared, 0).expect("an event loop");
        e.connect_all();
        let _end = listener.accept().expect("accept");
        let sched = schedule(&shared);
        e.sched = Some(sched);
        let ms = Duration::from_millis;
        let from = sched.measure_from;
        e.conns[0].backlog.extend([from - ms(100), from + ms(1)]);
        e.end_warmup(&sched);
        assert_eq!(e.conns[0].backlog, [from + ms(1)]);
        e.conns[0].backlog.clear();
        // Due 250 ms before the window, every 100 ms: 150 ms before, 50 ms
        // before, then 50 ms into it; the window opened a second ago.
        e.timers.push(Reverse((from - ms(250), 0)));
        let writes = e.io.writes;
        e.fire_timers(from + ms(1000), ms(100), 16, &sched);
        assert_eq!(e.io.writes - writes, 1);
        // 50, 150, … 950 ms into the window: ten, the warm-up's none.
        assert_eq!(e.conns[0].in_flight.len(), 10);
        assert!(e.conns[0].in_flight.iter().all(|f| f.measured));
        assert_eq!(e.timers.peek(), Some(&Reverse((from + ms(1050), 0))));
    }

    #[test]
    fn open_loop_writes_everything_due_and_nothing_early() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let shared = Shared::new(plan(
            listener.local_addr().expect("addr"),
            2,
            Workload::Open {
                rate: 1000.0,
                depth: 16,
            },
        ));
        let mut e = Engine::new(&shared, 0).expect("an event loop");
        e.connect_all();
        let _ends: Vec<_> = (0..2).map(|_| listener.accept().expect("accept")).collect();
        let sched = schedule(&shared);
        e.sched = Some(sched);
        let now = Instant::now();
        let ms = Duration::from_millis;
        // Connection 0: three messages overdue; connection 1: one overdue,
        // one due only in an hour.
        for (due, i) in [
            (now - ms(3), 0),
            (now - ms(2), 0),
            (now - ms(1), 0),
            (now - ms(1), 1),
            (now + ms(3_600_000), 1),
        ] {
            e.timers.push(Reverse((due, i)));
        }
        let writes = e.io.writes;
        // An interval of an hour: no timer fired now comes due again.
        e.fire_timers(now, ms(3_600_000), 16, &sched);
        assert_eq!(e.io.writes - writes, 2, "one write per connection");
        assert_eq!(e.conns[0].in_flight.len(), 3);
        assert_eq!(e.conns[1].in_flight.len(), 1);
        for c in &e.conns {
            // Everything due is on the wire before the loop could wait.
            assert_eq!(c.out_pos, c.out.len());
            // Stamped with when it was due, and not written before it.
            let now_ns = e.since_epoch(now);
            assert!(c
                .in_flight
                .iter()
                .all(|f| f.intended <= now_ns && f.sent >= f.intended));
        }
        assert!(
            e.timers.iter().all(|Reverse((due, _))| *due > now),
            "what is not due stays queued"
        );
    }
}
