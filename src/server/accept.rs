//! The accept policy every model shares.
//!
//! - `accept4` straight into the blocking mode the model wants, TCP_NODELAY on.
//! - `--max-conns`: a connection past the limit is closed at once and counted.
//! - Transient failures (ECONNABORTED, EINTR, EPROTO) are retried.
//! - Descriptor or memory exhaustion (EMFILE, ENFILE, ENOBUFS, ENOMEM) makes
//!   the model stop watching the listener: a level-triggered listener with a
//!   full backlog would otherwise report readable forever and the loop would
//!   spin at full CPU. Accepting resumes when a connection closes (a
//!   descriptor is free) or after [`Gate::PAUSE`] in case one was freed
//!   elsewhere. Pending clients wait in the kernel's backlog meanwhile.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{accept_with, SocketFlags};

use super::{Context, Stats};
use crate::sys::pollset::{self, POLLIN};

/// The result of one accept.
#[derive(Debug)]
pub enum Accepted {
    /// A connection to serve.
    Conn(TcpStream),
    /// Nothing pending (EAGAIN).
    Empty,
    /// Out of descriptors or memory: stop accepting for a while.
    Exhausted,
}

/// Accepts one connection that passes `--max-conns`, refusing (closing) any
/// that do not. `nonblocking` sets O_NONBLOCK on the new socket.
pub fn accept(listener: &TcpListener, ctx: &Context, nonblocking: bool) -> Accepted {
    let flags = if nonblocking {
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK
    } else {
        SocketFlags::CLOEXEC
    };
    loop {
        match accept_with(listener, flags) {
            Ok(fd) => {
                if let Some(stream) = admit(fd, ctx.config.max_conns, ctx.stats) {
                    return Accepted::Conn(stream);
                }
            }
            Err(Errno::AGAIN) => return Accepted::Empty,
            Err(Errno::INTR | Errno::CONNABORTED | Errno::PROTO) => {}
            Err(e) => {
                // Exhaustion, or a failure we do not know: either way,
                // retrying at once would spin, so back off.
                ctx.stats.accept_failed(&e.into());
                return Accepted::Exhausted;
            }
        }
    }
}

/// Accepts until the backlog is empty (EAGAIN) or descriptors run out,
/// handing each connection (in the given blocking mode) to `serve`. Pauses `gate` on exhaustion.
pub(crate) fn accept_all(
    listener: &TcpListener,
    ctx: &Context,
    nonblocking: bool,
    gate: &mut Gate,
    mut serve: impl FnMut(TcpStream),
) {
    loop {
        match accept(listener, ctx, nonblocking) {
            Accepted::Conn(s) => serve(s),
            Accepted::Empty => return,
            Accepted::Exhausted => {
                gate.pause();
                return;
            }
        }
    }
}

/// Waits in poll(2) on the stop pipe and, while `gate` is open, the
/// listener. `Ok(None)` when a stop was requested, else whether the
/// listener is readable. The wait of every thread that only accepts.
pub(crate) fn wait_for_listener(
    listener: &TcpListener,
    ctx: &Context,
    gate: &mut Gate,
) -> io::Result<Option<bool>> {
    // A stop whose byte a caller drained from the pipe (fork drains it to
    // hear SIGCHLD) is seen here, not lost in a poll that nothing wakes.
    if ctx.shutdown.requested() {
        return Ok(None);
    }
    let open = gate.is_open();
    // On the stack: the fork family's parent writes no heap between two
    // forks (see `children`).
    let mut fds = [
        pollset::pollfd(ctx.shutdown.fd().as_raw_fd(), POLLIN),
        pollset::pollfd(listener.as_raw_fd(), POLLIN),
    ];
    let watched = if open { 2 } else { 1 };
    match pollset::poll(&mut fds[..watched], gate.timeout()) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
        Err(e) => return Err(e),
    }
    if ctx.shutdown.requested() {
        return Ok(None);
    }
    Ok(Some(open && fds[1].revents != 0))
}

/// The loop of a thread that only accepts (threads, the epoll-workers
/// acceptor): accepts until EAGAIN whenever the listener is readable and
/// hands each connection to `serve`. Returns once a stop is requested.
pub fn accept_loop(
    listener: &TcpListener,
    ctx: &Context,
    nonblocking: bool,
    mut serve: impl FnMut(TcpStream),
) -> io::Result<()> {
    let mut gate = Gate::default();
    while let Some(readable) = wait_for_listener(listener, ctx, &mut gate)? {
        if readable {
            accept_all(listener, ctx, nonblocking, &mut gate, &mut serve);
        }
    }
    Ok(())
}

/// Applies `--max-conns` and TCP_NODELAY to a fresh connection; `None` when
/// it was refused (and closed).
pub(crate) fn admit(fd: OwnedFd, max_conns: Option<u64>, stats: &Stats) -> Option<TcpStream> {
    // One atomic step: threads or processes accepting at once cannot both
    // take the last slot.
    if !stats.try_open(max_conns) {
        stats.refused_max_conns();
        return None;
    }
    let stream = TcpStream::from(fd);
    // Best effort: a peer that already reset shows up on the first read.
    let _ = stream.set_nodelay(true);
    Some(stream)
}

/// Whether the listener is being watched, or paused after exhaustion.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    paused_until: Option<Instant>,
}

impl Gate {
    /// How long accepting stays paused unless a connection closes first.
    pub(crate) const PAUSE: Duration = Duration::from_millis(100);

    /// Stops accepting for [`Gate::PAUSE`].
    pub fn pause(&mut self) {
        self.paused_until = Some(Instant::now() + Self::PAUSE);
    }

    /// A descriptor was freed: accept again.
    pub fn resume(&mut self) {
        self.paused_until = None;
    }

    /// Whether to watch the listener now (reopens once the pause is over).
    pub(crate) fn is_open(&mut self) -> bool {
        match self.paused_until {
            Some(t) if Instant::now() < t => false,
            _ => {
                self.paused_until = None;
                true
            }
        }
    }

    /// How long a wait may block before the gate must be looked at again.
    pub fn timeout(&self) -> Option<Duration> {
        self.paused_until
            .map(|t| t.saturating_duration_since(Instant::now()))
    }
}
