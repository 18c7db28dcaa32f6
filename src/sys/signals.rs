//! Turning SIGTERM, SIGINT and SIGCHLD into something an event loop can wait
//! on: a flag plus a byte in a non-blocking pipe (the self-pipe trick, via
//! signal-hook). Every model watches the pipe's read end beside its sockets.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustix::pipe::{pipe_with, PipeFlags};
use signal_hook::consts::{SIGCHLD, SIGINT, SIGTERM};

/// The stop request of a server.
#[derive(Debug)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
    read: OwnedFd,
}

impl Shutdown {
    /// Installs handlers for SIGTERM and SIGINT (and SIGCHLD when
    /// `children` is set, as a wake-up only).
    pub fn install(children: bool) -> io::Result<Shutdown> {
        let flag = Arc::clone(STOP.get_or_init(|| Arc::new(AtomicBool::new(false))));
        let (read, write) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
        for sig in [SIGTERM, SIGINT] {
            signal_hook::flag::register(sig, Arc::clone(&flag))?;
            signal_hook::low_level::pipe::register(sig, write.try_clone()?)?;
        }
        if children {
            signal_hook::low_level::pipe::register(SIGCHLD, write.try_clone()?)?;
        }
        Ok(Shutdown { flag, read })
    }

    /// Whether SIGTERM or SIGINT has arrived.
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The pipe to wait on: readable once any watched signal arrived.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// Empties the pipe so a level-triggered wait does not wake again for
    /// the same signals (leave it full after a stop so every waiter wakes).
    pub fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(&self.read, &mut buf), Ok(n) if n > 0) {}
    }
}

/// The server's stop flag, one per process (a server installs its
/// [`Shutdown`] once), so that work deep inside a handler can see it.
static STOP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();

/// Whether this process's server was asked to stop (SIGTERM or SIGINT):
/// a handler's long blocking call or CPU work ends early on it, so no
/// handler holds up a stop. `false` where no server runs.
pub fn stop_requested() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// A flag set by Ctrl-C (SIGINT) or SIGTERM, for a command that measures:
/// it ends its measurement, writes what it has (marked interrupted) and
/// exits 130, instead of dying with nothing written. One flag for the
/// whole process, its handlers installed by the first call (a run calls
/// this once per cell, and handlers are never removed): once set it stays
/// set, as a stop does. [`interrupted`] reads it anywhere.
pub(crate) fn interrupt_flag() -> io::Result<Arc<AtomicBool>> {
    if let Some(f) = INTERRUPTED.get() {
        return Ok(Arc::clone(f));
    }
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    // Two threads arming it at once: the first one's flag is kept, the
    // other's handlers set a flag nobody reads.
    Ok(Arc::clone(INTERRUPTED.get_or_init(|| flag)))
}

/// Set by SIGINT or SIGTERM once [`interrupt_flag`] was called.
static INTERRUPTED: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();

/// Whether SIGINT or SIGTERM arrived since a command armed its handlers
/// ([`interrupt_flag`]): for a wait deep in a measurement (a server's
/// connections, its readiness) to give up at once rather than run out its
/// patience. False when none was armed.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// In a freshly forked child: restore the default action of the signals the
/// parent handles, so SIGTERM ends the child instead of writing to the
/// parent's pipe.
pub(crate) fn reset_in_child() {
    for sig in [SIGTERM, SIGINT, SIGCHLD] {
        // SAFETY: installing SIG_DFL touches no Rust state and is
        // async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}
