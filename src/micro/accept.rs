//! `c10k micro accept`: how fast one thread can accept, and what the way it
//! waits changes. Client threads connect to a listener on 127.0.0.1 as fast
//! as it accepts (each connection closed with a reset at once, so no
//! TIME_WAIT piles up); the server thread, pinned apart from them, accepts
//! and closes, in one of five ways:
//!
//! - `one`: epoll_wait, then one accept per wake-up (the naive loop);
//! - `drain`: epoll_wait, then accept until EAGAIN ("select(2) done right");
//! - `one+interval`, `drain+interval`: the same with interval control — at
//!   least `--interval` between two waits, so each wait finds more queued;
//! - `uring`: one io_uring multishot accept, re-armed when it ends.
//!
//! The clients stay at most [`WINDOW`] connections ahead of the server, so
//! the listen queue never overflows (an overflow costs a 1 s SYN
//! retransmit and would measure the client's back-off, not the server).
//! Reported per mode: accepts per second, accepts per wait, waits per
//! second, failed accepts (EAGAIN) per wait, over the measured window after
//! a warm-up of a tenth of it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::net::SocketFlags;

use super::{BenchError, Output};
use crate::export::table::Table;
use crate::present::units::format_count;
use crate::server::pace::Pace;
use crate::stats::Summary;
use crate::sys;

/// How far (in connections) the clients may run ahead of the accepts.
pub(crate) const WINDOW: u64 = 512;

/// The most accepts one wait may drain (the loop must end even if the
/// clients keep pace with it forever).
const MAX_BATCH: u64 = 65_536;

/// io_uring `user_data` of the multishot accept and of the timer.
const ACCEPT: u64 = 1;
const TIMER: u64 = 2;

/// How the server waits and accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mode {
    One,
    Drain,
    OneInterval,
    DrainInterval,
    Uring,
}

impl Mode {
    pub(crate) const ALL: [Mode; 5] = [
        Mode::One,
        Mode::Drain,
        Mode::OneInterval,
        Mode::DrainInterval,
        Mode::Uring,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::One => "one",
            Mode::Drain => "drain",
            Mode::OneInterval => "one+interval",
            Mode::DrainInterval => "drain+interval",
            Mode::Uring => "uring",
        }
    }

    fn drains(self) -> bool {
        matches!(self, Mode::Drain | Mode::DrainInterval)
    }

    fn paced(self) -> bool {
        matches!(self, Mode::OneInterval | Mode::DrainInterval)
    }
}

/// One measurement of one mode.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub(crate) struct Sample {
    /// Accepts in the measured window.
    pub accepts: u64,
    /// Waits (epoll_wait or io_uring_enter calls) in the window.
    pub waits: u64,
    /// accept() calls that found the queue empty, in the window.
    pub eagain: u64,
    pub seconds: f64,
    /// Every connection the clients made, and every one the server
    /// accepted, over the whole run (warm-up and final drain included).
    pub connected_total: u64,
    pub accepted_total: u64,
    /// Connects that failed.
    pub connect_errors: u64,
}

impl Sample {
    pub fn rate(&self) -> f64 {
        self.accepts as f64 / self.seconds.max(1e-9)
    }
}

/// The validated settings of `c10k micro accept`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Client threads connecting (1 to 256).
    pub clients: usize,
    /// How long each mode is measured (10ms to 10m).
    pub duration: Duration,
    /// The least time between two waits, for interval control (at most 1s).
    pub interval: Duration,
    /// Repeats of every mode (1 to 100).
    pub runs: usize,
}

/// Runs every mode `runs` times, interleaved.
pub fn run(settings: &Settings) -> Result<Output, BenchError> {
    let &Settings {
        clients,
        duration,
        interval,
        runs,
    } = settings;
    let uring = sys::uring::probe();
    let cpus = sys::affinity::current_cpus();
    let (server_cpu, client_cpus) = match cpus.as_slice() {
        [first, rest @ ..] if !rest.is_empty() => (vec![*first], rest.to_vec()),
        _ => (Vec::new(), Vec::new()),
    };
    let mut samples: Vec<(Mode, Sample)> = Vec::new();
    for _ in 0..runs {
        for mode in Mode::ALL {
            if mode == Mode::Uring && uring.is_err() {
                continue;
            }
            let s = measure(mode, clients, duration, interval, &server_cpu, &client_cpus)?;
            samples.push((mode, s));
        }
    }
    let mut t =
        Table::new(
            format!(
            "Accepts per second: {} client threads connecting and resetting, one server thread{}",
            clients,
            if server_cpu.is_empty() {
                String::new()
            } else {
                format!(" (server on CPU {:?}, clients on {:?})", server_cpu, client_cpus)
            }
        ),
            &[
                "mode",
                "accepts/s",
                "min … max",
                "accepts/wait",
                "waits/s",
                "EAGAIN/wait",
                "runs",
            ],
        );
    let mut json_modes = Vec::new();
    for mode in Mode::ALL {
        let runs: Vec<Sample> = samples
            .iter()
            .filter(|(m, _)| *m == mode)
            .map(|(_, s)| *s)
            .collect();
        if runs.is_empty() {
            let why = uring.as_ref().err().cloned().unwrap_or_default();
            t.rows.push(vec![
                mode.name().into(),
                "skipped".into(),
                why.clone(),
                "".into(),
                "".into(),
                "".into(),
                "0".into(),
            ]);
            json_modes.push(serde_json::json!({ "mode": mode, "skipped": why }));
            continue;
        }
        let rates: Vec<f64> = runs.iter().map(Sample::rate).collect();
        let per_wait: Vec<f64> = runs
            .iter()
            .map(|s| s.accepts as f64 / s.waits.max(1) as f64)
            .collect();
        let waits: Vec<f64> = runs
            .iter()
            .map(|s| s.waits as f64 / s.seconds.max(1e-9))
            .collect();
        let eagain: Vec<f64> = runs
            .iter()
            .map(|s| s.eagain as f64 / s.waits.max(1) as f64)
            .collect();
        let (Some(r), Some(pw), Some(w), Some(e)) = (
            Summary::of(&rates),
            Summary::of(&per_wait),
            Summary::of(&waits),
            Summary::of(&eagain),
        ) else {
            continue;
        };
        t.rows.push(vec![
            mode.name().into(),
            format_count(r.median),
            format!("{} … {}", format_count(r.min), format_count(r.max)),
            format!("{:.2}", pw.median),
            format_count(w.median),
            format!("{:.2}", e.median),
            runs.len().to_string(),
        ]);
        json_modes.push(serde_json::json!({
            "mode": mode,
            "accepts_per_second": r,
            "accepts_per_wait": pw,
            "waits_per_second": w,
            "eagain_per_wait": e,
            "runs": runs,
        }));
    }
    t.notes.push(format!(
        "Medians of the runs, each {} measured after {} of warm-up; interval control waits at least {} between two waits. The clients stay at most {WINDOW} connections ahead of the accepts, so the listen queue never overflows. The select(2) study reported about 40,000 accepts/s on one CPU.",
        crate::present::units::seconds(duration.as_secs_f64()),
        crate::present::units::seconds((duration / 10).as_secs_f64()),
        crate::present::units::seconds(interval.as_secs_f64()),
    ));
    let json = serde_json::json!({
        "benchmark": "accept",
        "version": 1,
        "clients": clients,
        "duration_seconds": duration.as_secs_f64(),
        "interval_seconds": interval.as_secs_f64(),
        "server_cpus": server_cpu,
        "client_cpus": client_cpus,
        "modes": json_modes,
        "environment": crate::env::capture(),
    });
    Ok(Output {
        tables: vec![t],
        json,
        interrupted: None,
    })
}

/// One mode once: clients on their own threads, the server on this one.
fn measure(
    mode: Mode,
    clients: usize,
    duration: Duration,
    interval: Duration,
    server_cpu: &[usize],
    client_cpus: &[usize],
) -> Result<Sample, BenchError> {
    let listener = crate::server::run::listen(SocketAddr::from(([127, 0, 0, 1], 0)), 4096, false)
        .context("listening on 127.0.0.1")?;
    let addr = listener.local_addr().context("the listener's address")?;
    let stop = AtomicBool::new(false);
    let connected = AtomicU64::new(0);
    let accepted = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let result = std::thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                if !client_cpus.is_empty() {
                    let _ = sys::affinity::pin_current(client_cpus);
                }
                connect_loop(addr, &stop, &connected, &accepted, &errors);
            });
        }
        if !server_cpu.is_empty() {
            let _ = sys::affinity::pin_current(server_cpu);
        }
        let r = serve(mode, &listener, duration, interval, &accepted);
        stop.store(true, Relaxed);
        r
    });
    // Every client has stopped: take what is still queued, uncounted.
    let _ = listener.set_nonblocking(true);
    let mut tail = 0;
    while tail < WINDOW * 4 + 4096
        && rustix::net::accept_with(&listener, SocketFlags::CLOEXEC).is_ok()
    {
        tail += 1;
    }
    let mut s = result?;
    s.accepted_total = accepted.load(Relaxed) + tail;
    s.connected_total = connected.load(Relaxed);
    s.connect_errors = errors.load(Relaxed);
    Ok(s)
}

/// A client thread: connect, reset, repeat, never more than [`WINDOW`]
/// connections ahead of the server's accepts.
fn connect_loop(
    addr: SocketAddr,
    stop: &AtomicBool,
    connected: &AtomicU64,
    accepted: &AtomicU64,
    errors: &AtomicU64,
) {
    let started = Instant::now();
    // Bounded in time even if the server never stops it.
    while !stop.load(Relaxed) && started.elapsed() < Duration::from_secs(660) {
        if connected.load(Relaxed) >= accepted.load(Relaxed) + WINDOW {
            std::thread::yield_now();
            continue;
        }
        match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Ok(s) => {
                connected.fetch_add(1, Relaxed);
                let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
            }
            Err(_) => {
                errors.fetch_add(1, Relaxed);
            }
        }
    }
}

/// The server thread: accepts for `duration` in `mode`.
fn serve(
    mode: Mode,
    listener: &TcpListener,
    duration: Duration,
    interval: Duration,
    accepted: &AtomicU64,
) -> Result<Sample, BenchError> {
    let start = Instant::now();
    let measure_from = start + duration / 10;
    let end = measure_from + duration;
    let mut s = Sample {
        accepts: 0,
        waits: 0,
        eagain: 0,
        seconds: 0.0,
        connected_total: 0,
        accepted_total: 0,
        connect_errors: 0,
    };
    let mut window_started = None;
    let mut count = |s: &mut Sample, accepts: u64, eagain: u64| {
        accepted.fetch_add(accepts, Relaxed);
        let now = Instant::now();
        if now >= measure_from {
            window_started.get_or_insert(now);
            s.accepts += accepts;
            s.eagain += eagain;
            s.waits += 1;
        }
    };
    if mode == Mode::Uring {
        let mut ring = sys::uring::Ring::new(sys::uring::Sizes {
            sq: 64,
            cq: 4096,
            bufs: 2,
            buf_size: 64,
        })
        .context("io_uring setup")?;
        ring.accept_multi(listener.as_fd(), ACCEPT);
        let mut done = Vec::new();
        let mut timer = false;
        while Instant::now() < end {
            // A timer, so a wait ends even when no connection comes.
            if !timer {
                ring.timeout(Duration::from_millis(10), TIMER);
                timer = true;
            }
            ring.submit_and_wait(1).context("io_uring_enter")?;
            done.clear();
            ring.complete(&mut done);
            let mut n = 0;
            let mut rearm = false;
            for c in &mut done {
                if c.user_data == TIMER {
                    timer = false;
                    continue;
                }
                if c.take_fd().is_some() {
                    n += 1;
                }
                rearm |= !c.more;
            }
            if rearm {
                ring.accept_multi(listener.as_fd(), ACCEPT);
            }
            count(&mut s, n, 0);
        }
    } else {
        let ep = epoll::create(CreateFlags::CLOEXEC).context("epoll_create")?;
        epoll::add(&ep, listener, EventData::new_u64(0), EventFlags::IN).context("epoll_ctl")?;
        let mut events = [Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        }];
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        let mut pace = Pace::new(if mode.paced() {
            interval
        } else {
            Duration::ZERO
        });
        while Instant::now() < end {
            pace.before_wait();
            let n = match epoll::wait(&ep, &mut events[..], Some(&timeout)) {
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => 0,
                Err(e) => return Err(anyhow::Error::from(e).context("epoll_wait").into()),
            };
            if n == 0 {
                continue;
            }
            let (mut got, mut again) = (0, 0);
            loop {
                match rustix::net::accept_with(listener, SocketFlags::CLOEXEC) {
                    Ok(_fd) => {
                        got += 1;
                        // Bounded even if the clients keep pace forever.
                        if !mode.drains() || got >= MAX_BATCH {
                            break;
                        }
                    }
                    Err(rustix::io::Errno::AGAIN) => {
                        again += 1;
                        break;
                    }
                    Err(rustix::io::Errno::INTR | rustix::io::Errno::CONNABORTED) => {}
                    Err(e) => return Err(anyhow::Error::from(e).context("accept").into()),
                }
            }
            count(&mut s, got, again);
        }
    }
    s.seconds = window_started.map_or(0.0, |w| w.elapsed().as_secs_f64());
    Ok(s)
}
