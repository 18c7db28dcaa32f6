//! The herd's client: non-blocking connects to the listener at a fixed rate
//! (open loop: the i-th connect is due at start + i/rate, whatever became of
//! the earlier ones), each timed from the call to connect() until epoll says
//! the socket is writable, in µs, into an HdrHistogram. The connect() call
//! alone is timed too: on loopback the handshake runs inside that call
//! (the kernel processes the SYN, SYN-ACK and ACK in line), so waking the
//! herd is paid there, which is what the study measured.
//!
//! A connection is closed as soon as it is up. It runs on the parent's main
//! thread after every worker was forked (fork needs a single thread), and
//! ends after `-n` connects or at its time limit, whichever is first (or at
//! once when SIGINT or SIGTERM sets the stop flag).

use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use hdrhistogram::Histogram;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};

/// Highest latency the histograms hold, µs (a minute).
const HIGHEST_US: u64 = 60_000_000;

/// What the client did in one cell.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// connect() calls made.
    pub attempted: u64,
    /// Connections that came up (writable, no socket error).
    pub established: u64,
    /// Connections that failed (a socket error, or no socket at all).
    pub failed: u64,
    /// Connects still pending at the time limit.
    pub timed_out: u64,
    /// Failures by errno name.
    pub errors: BTreeMap<String, u64>,
    /// connect() to writable, µs.
    pub connect_us: Histogram<u64>,
    /// The connect() call alone, µs.
    pub call_us: Histogram<u64>,
    pub elapsed: Duration,
}

/// A connect in flight.
struct Pending {
    sock: OwnedFd,
    start: Instant,
}

/// Connects `n` times to `addr` at `rate` per second, at most `in_flight`
/// at once, for at most `limit`, or until `stop` is set (SIGINT, SIGTERM).
pub fn run(
    addr: SocketAddrV4,
    n: usize,
    rate: f64,
    in_flight: usize,
    limit: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let histogram = || {
        Histogram::<u64>::new_with_bounds(1, HIGHEST_US, 3).context("making a latency histogram")
    };
    let mut out = Outcome {
        attempted: 0,
        established: 0,
        failed: 0,
        timed_out: 0,
        errors: BTreeMap::new(),
        connect_us: histogram()?,
        call_us: histogram()?,
        elapsed: Duration::ZERO,
    };
    let ep = epoll::create(CreateFlags::CLOEXEC).context("epoll_create for the client")?;
    let mut slots: Vec<Option<Pending>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut pending = 0usize;
    let mut events = vec![
        Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        };
        64
    ];
    let start = Instant::now();
    let deadline = start + limit;
    let due = |i: usize| start + Duration::from_secs_f64(i as f64 / rate);
    // Each pass opens at most one connect and waits once; a wait ends at the
    // next due connect or with connects finished, so passes are bounded by a
    // small multiple of n (the cap is a guard, the deadline the real bound).
    let cap = 64 * n as u64 + 100_000;
    for _ in 0..cap {
        let opened = out.attempted as usize;
        if opened >= n && pending == 0 {
            break;
        }
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::SeqCst) {
            break;
        }
        if opened < n && now >= due(opened) && pending < in_flight {
            out.attempted += 1;
            match open(addr) {
                Ok((sock, began, Connect::Done)) => {
                    let us = micros(began.elapsed());
                    record(&mut out.call_us, us);
                    record(&mut out.connect_us, us);
                    out.established += 1;
                    drop(sock);
                }
                Ok((sock, began, Connect::InProgress(call))) => {
                    record(&mut out.call_us, micros(call));
                    let i = free.pop().unwrap_or_else(|| {
                        slots.push(None);
                        slots.len() - 1
                    });
                    match epoll::add(
                        &ep,
                        &sock,
                        EventData::new_u64(i as u64),
                        EventFlags::OUT | EventFlags::ONESHOT,
                    ) {
                        Ok(()) => {
                            slots[i] = Some(Pending { sock, start: began });
                            pending += 1;
                        }
                        Err(e) => {
                            fail(&mut out, e);
                            free.push(i);
                        }
                    }
                }
                Err(e) => fail(&mut out, e),
            }
        }
        // Then wait for completions until the next connect is due (not at
        // all when it already is), so finished connects are timed between
        // opens even when the client runs behind.
        let opened = out.attempted as usize;
        let until = if opened < n && pending < in_flight {
            due(opened).min(deadline)
        } else {
            deadline
        };
        let wait = until.saturating_duration_since(Instant::now());
        let ts = rustix::event::Timespec::try_from(wait).unwrap_or_default();
        let ready = match epoll::wait(&ep, &mut events[..], Some(&ts)) {
            Ok(k) => k,
            Err(Errno::INTR) => 0,
            Err(e) => return Err(e).context("epoll_wait in the client"),
        };
        let seen = Instant::now();
        for ev in &events[..ready] {
            let i = ev.data.u64() as usize;
            let Some(p) = slots.get_mut(i).and_then(Option::take) else {
                continue;
            };
            pending -= 1;
            free.push(i);
            match rustix::net::sockopt::socket_error(&p.sock) {
                Ok(Ok(())) => {
                    out.established += 1;
                    record(
                        &mut out.connect_us,
                        micros(seen.saturating_duration_since(p.start)),
                    );
                }
                Ok(Err(e)) | Err(e) => fail(&mut out, e),
            }
            // Closing the socket also removes it from the epoll set.
            drop(p.sock);
        }
    }
    out.timed_out = pending as u64;
    out.elapsed = start.elapsed();
    Ok(out)
}

/// How a non-blocking connect() returned.
enum Connect {
    /// Connected at once.
    Done,
    /// EINPROGRESS, after a call that took this long.
    InProgress(Duration),
}

/// A fresh non-blocking socket connecting to `addr`.
fn open(addr: SocketAddrV4) -> Result<(OwnedFd, Instant, Connect), Errno> {
    let sock = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    let began = Instant::now();
    let r = rustix::net::connect(sock.as_fd(), &addr);
    let call = began.elapsed();
    match r {
        Ok(()) => Ok((sock, began, Connect::Done)),
        Err(Errno::INPROGRESS) => Ok((sock, began, Connect::InProgress(call))),
        Err(e) => Err(e),
    }
}

fn fail(out: &mut Outcome, e: Errno) {
    out.failed += 1;
    let name = std::io::Error::from(e).to_string();
    *out.errors.entry(name).or_insert(0) += 1;
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(HIGHEST_US)) as u64
}

fn record(h: &mut Histogram<u64>, us: u64) {
    // Values are clamped to the histogram's range above, so this holds.
    let _ = h.record(us.min(HIGHEST_US));
}
