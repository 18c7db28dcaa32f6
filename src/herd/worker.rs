//! A worker of the herd: a forked process that waits for connections on its
//! copies of the listener with one wait method, accepts, and counts.
//!
//! Setup, in the child: restore the default SIGINT and SIGTERM, ask to die
//! with the parent; take the listener (the
//! inherited shared one, or for `reuseport` a new SO_REUSEPORT listener on
//! the same port); make `dups − 1` more descriptors of it with dup(2); set up
//! the wait; write `R` to the readiness pipe (`F` when setup failed) and
//! wait.
//!
//! The loop: each time the wait returns with something ready, one
//! non-blocking accept on the listener. A connection is closed at once (the
//! herd measures the handoff, not a service); EAGAIN means another worker
//! took it first and counts as a failed accept. One accept per return, not
//! one per ready copy: with M copies of one listener all M report ready for
//! the same connection, and trying each would count M−1 failures that no
//! other worker caused.
//!
//! - `select`, `poll`: the whole set is handed to the kernel on every call,
//!   and every sleeping worker is on the listener's wait queue once per copy.
//! - `epoll`: level-triggered; the interest list lives in the kernel, but a
//!   new connection still wakes every worker's epoll instance.
//! - `epoll-exclusive`: EPOLLEXCLUSIVE on each copy, so the kernel wakes one
//!   (or a few) of the exclusive waiters instead of all.
//! - `accept`: blocking accept(2) on a blocking listener; the kernel queues
//!   accepters exclusively and wakes one. Only one descriptor can be waited
//!   on, so the dups are made but not waited on.
//! - `reuseport`: the kernel picks a listener by hashing the connection, so
//!   only that listener's worker is woken (epoll, level-triggered).
//!
//! The worker ends when the parent signals it (SIGTERM, the normal end), at
//! its deadline (exit 0), when its loop reaches its iteration cap (exit 4),
//! or when the wait fails (exit 3); it exits with 2 when setup failed.
//! Counts go to its [`WorkerTally`] in shared memory as they happen.

use std::net::SocketAddrV4;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::io::Errno;
use rustix::net::{accept_with, SocketFlags};

use super::method::Method;
use super::tally::WorkerTally;
use crate::sys::fdset::{self, FdSet};
use crate::sys::pollset::{self, POLLIN};
use crate::sys::process::{die_with_parent, exit_now};

/// Exit codes of a worker.
pub(crate) const EXIT_DEADLINE: i32 = 0;
pub(crate) const EXIT_SETUP: i32 = 2;
pub(crate) const EXIT_WAIT: i32 = 3;
pub(crate) const EXIT_CAP: i32 = 4;

/// What a worker is told at fork.
pub struct Setup<'a> {
    pub method: Method,
    pub dups: usize,
    /// The shared listener (every method but reuseport).
    pub listener: Option<BorrowedFd<'a>>,
    /// Its `dups − 1` copies, made by the parent before the fork (empty for
    /// reuseport).
    pub copies: &'a [BorrowedFd<'a>],
    /// The address every reuseport listener binds.
    pub addr: SocketAddrV4,
    pub backlog: i32,
    /// Write end of the readiness pipe.
    pub ready: BorrowedFd<'a>,
    /// When to give up if nobody stops the worker.
    pub deadline: Instant,
    /// Most loop iterations (wait returns) before giving up.
    pub cap: u64,
}

/// The body of a freshly forked worker; never returns.
pub fn run(setup: &Setup<'_>, slot: &WorkerTally, parent: i32) -> ! {
    // The parent turns SIGINT and SIGTERM into a flag; a worker must die
    // of them instead.
    crate::sys::signals::reset_in_child();
    die_with_parent(parent);
    let copies = match copies(setup) {
        Ok(c) => c,
        Err(_) => {
            tell(setup.ready, b'F');
            exit_now(EXIT_SETUP)
        }
    };
    let fds: Vec<BorrowedFd<'_>> = match (&copies.own, setup.listener) {
        (Some(own), _) => std::iter::once(own.as_fd())
            .chain(copies.dups.iter().map(|d| d.as_fd()))
            .collect(),
        (None, Some(shared)) => std::iter::once(shared)
            .chain(setup.copies.iter().copied())
            .collect(),
        (None, None) => {
            tell(setup.ready, b'F');
            exit_now(EXIT_SETUP)
        }
    };
    let code = match setup.method {
        Method::Select => select_loop(&fds, setup, slot),
        Method::Poll => poll_loop(&fds, setup, slot),
        Method::Epoll | Method::Reuseport => epoll_loop(&fds, false, setup, slot),
        Method::EpollExclusive => epoll_loop(&fds, true, setup, slot),
        Method::Accept => accept_loop(fds[0], setup, slot),
    };
    exit_now(code)
}

/// The worker's own descriptors of the listener (reuseport only; a shared
/// listener's copies come from the parent).
struct Copies {
    /// Its own listener.
    own: Option<OwnedFd>,
    /// The `dups − 1` extra descriptors of it.
    dups: Vec<OwnedFd>,
}

fn copies(setup: &Setup<'_>) -> std::io::Result<Copies> {
    if setup.listener.is_some() {
        return Ok(Copies {
            own: None,
            dups: Vec::new(),
        });
    }
    let own = reuseport_listener(setup.addr, setup.backlog)?;
    let dups = dup_n(own.as_fd(), setup.dups.saturating_sub(1))?;
    Ok(Copies {
        own: Some(own),
        dups,
    })
}

/// `n` more descriptors of `fd` (close-on-exec), one dup(2) each.
pub(crate) fn dup_n(fd: BorrowedFd<'_>, n: usize) -> std::io::Result<Vec<OwnedFd>> {
    let mut dups = Vec::with_capacity(n);
    for _ in 0..n {
        dups.push(rustix::io::fcntl_dupfd_cloexec(fd, 0)?);
    }
    Ok(dups)
}

/// A non-blocking listener on `addr` with SO_REUSEPORT, beside the others.
pub(crate) fn reuseport_listener(addr: SocketAddrV4, backlog: i32) -> std::io::Result<OwnedFd> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Writes one status byte to the readiness pipe (`R` ready, `F` failed).
fn tell(ready: BorrowedFd<'_>, byte: u8) {
    for _ in 0..8 {
        match rustix::io::write(ready, &[byte]) {
            Err(Errno::INTR) => continue,
            _ => return,
        }
    }
}

/// Time left until `deadline`, or `None` when it has passed.
fn left(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// One non-blocking accept; the connection is closed at once.
fn try_accept(listener: BorrowedFd<'_>, slot: &WorkerTally) {
    for _ in 0..8 {
        match accept_with(listener, SocketFlags::CLOEXEC) {
            Ok(conn) => {
                drop(conn);
                WorkerTally::add(&slot.accepts);
                return;
            }
            Err(Errno::AGAIN) => {
                WorkerTally::add(&slot.again);
                return;
            }
            Err(Errno::INTR) => continue,
            Err(_) => {
                WorkerTally::add(&slot.errors);
                return;
            }
        }
    }
}

/// The loop every readiness method shares: wait (at most until the
/// deadline), and on a return try one accept. `wait` is the method's own
/// call; it returns how many descriptors are ready.
fn wait_loop(
    listener: BorrowedFd<'_>,
    setup: &Setup<'_>,
    slot: &WorkerTally,
    mut wait: impl FnMut(Duration) -> Result<usize, Errno>,
) -> i32 {
    tell(setup.ready, b'R');
    for _ in 0..setup.cap {
        let Some(left) = left(setup.deadline) else {
            return EXIT_DEADLINE;
        };
        match wait(left) {
            Ok(0) | Err(Errno::INTR) => {}
            Ok(_) => {
                WorkerTally::add(&slot.returns);
                try_accept(listener, slot);
            }
            Err(_) => return EXIT_WAIT,
        }
    }
    EXIT_CAP
}

fn select_loop(fds: &[BorrowedFd<'_>], setup: &Setup<'_>, slot: &WorkerTally) -> i32 {
    let nfds = fds.iter().map(|f| f.as_raw_fd()).max().unwrap_or(0) as usize + 1;
    let mut master = FdSet::with_capacity(nfds);
    for f in fds {
        master.insert(f.as_raw_fd());
    }
    let mut read = FdSet::with_capacity(nfds);
    wait_loop(fds[0], setup, slot, |wait| {
        read.copy_from(&master, nfds);
        fdset::select(nfds, &mut read, None, Some(wait)).map_err(io_errno)
    })
}

fn poll_loop(fds: &[BorrowedFd<'_>], setup: &Setup<'_>, slot: &WorkerTally) -> i32 {
    let mut set: Vec<pollset::PollFd> = fds
        .iter()
        .map(|f| pollset::pollfd(f.as_raw_fd(), POLLIN))
        .collect();
    wait_loop(fds[0], setup, slot, |wait| {
        pollset::poll(&mut set, Some(wait)).map_err(io_errno)
    })
}

/// An I/O error as the errno the shared loop matches on.
fn io_errno(e: std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error)
}

fn epoll_loop(
    fds: &[BorrowedFd<'_>],
    exclusive: bool,
    setup: &Setup<'_>,
    slot: &WorkerTally,
) -> i32 {
    let Ok(ep) = epoll::create(CreateFlags::CLOEXEC) else {
        tell(setup.ready, b'F');
        return EXIT_SETUP;
    };
    let flags = if exclusive {
        EventFlags::IN | EventFlags::EXCLUSIVE
    } else {
        EventFlags::IN
    };
    for (i, f) in fds.iter().enumerate() {
        if epoll::add(&ep, f, EventData::new_u64(i as u64), flags).is_err() {
            tell(setup.ready, b'F');
            return EXIT_SETUP;
        }
    }
    let mut events = vec![
        epoll::Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        };
        fds.len().min(64)
    ];
    wait_loop(fds[0], setup, slot, |wait| {
        let ts = rustix::event::Timespec::try_from(wait).unwrap_or_default();
        epoll::wait(&ep, &mut events[..], Some(&ts))
    })
}

/// Blocking accept. The parent set SO_RCVTIMEO on the listener to the
/// workers' lifetime, so accept returns EAGAIN only at the deadline, never
/// during a measurement (a periodic timeout would add wakeups of its own).
fn accept_loop(listener: BorrowedFd<'_>, setup: &Setup<'_>, slot: &WorkerTally) -> i32 {
    tell(setup.ready, b'R');
    for _ in 0..setup.cap {
        if left(setup.deadline).is_none() {
            return EXIT_DEADLINE;
        }
        match accept_with(listener, SocketFlags::CLOEXEC) {
            Ok(conn) => {
                drop(conn);
                WorkerTally::add(&slot.returns);
                WorkerTally::add(&slot.accepts);
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(_) => {
                WorkerTally::add(&slot.returns);
                WorkerTally::add(&slot.errors);
            }
        }
    }
    EXIT_CAP
}
