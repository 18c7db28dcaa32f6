//! The deadline of one check, and its interruption: a check runs on a
//! thread of its own while the suite watches it. Its time, `--patience`,
//! starts once its server is ready (the start has its own bound, the same
//! patience); when that time is up, or SIGINT or SIGTERM arrives, the
//! watch cuts the check: the servers it started are killed with their
//! process groups, so every connection to them fails at once and the
//! check's thread returns. A bare address cannot be killed: its check's
//! thread is left to its own bounded waits, unwatched.
//!
//! Cost: a thread per check, and a look at the clock every [`STEP`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Checked, Stop};

/// How often the watch looks at the deadline and the interrupt flag.
pub const STEP: Duration = Duration::from_millis(50);

/// How long a cut check's thread has to return (its servers are dead by
/// then, so this is a wait for a few failed reads and a `wait4`).
pub const AFTERMATH: Duration = Duration::from_secs(2);

/// Why a check was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Its time was up.
    Deadline,
    /// SIGINT or SIGTERM.
    Interrupted,
}

/// What the thread running a check and the suite watching it share.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Servers started for the check (each its process group's leader).
    servers: Vec<i32>,
    /// When its (last) server was ready.
    ready: Option<Instant>,
    cut: Option<Cut>,
}

impl Watch {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A server of the check exists (it may not be ready yet); one started
    /// after the cut is killed at once.
    pub fn spawned(&self, pid: u32) {
        let mut s = self.state();
        s.servers.push(pid as i32);
        if s.cut.is_some() {
            kill(pid as i32);
        }
    }

    /// The check's server is ready: its time starts now.
    pub fn ready(&self) {
        self.state().ready = Some(Instant::now());
    }

    /// Cuts the check: its servers are killed.
    fn cut(&self, why: Cut) {
        let mut s = self.state();
        if s.cut.is_none() {
            s.cut = Some(why);
            for &pid in &s.servers {
                kill(pid);
            }
        }
    }

    /// Whether the check's time is up: `patience` after its server was
    /// ready, or, if it never was, past what starting one may take.
    fn due(&self, started: Instant, patience: Duration) -> bool {
        match self.state().ready {
            Some(at) => at.elapsed() >= patience,
            None => started.elapsed() >= patience * 2 + crate::child::server::GRACE,
        }
    }
}

/// SIGKILL to `pid`'s process group (a server and every process it forked).
fn kill(pid: i32) {
    let _ = crate::sys::process::kill(-pid, libc::SIGKILL);
}

/// How a watched check ended.
pub(crate) enum Watched {
    /// On its own.
    Done(Checked),
    /// Cut at its deadline; what the check said then, if it returned.
    Late(Option<Checked>),
    /// Cut by SIGINT or SIGTERM.
    Interrupted,
}

/// Runs `check` on a thread of its own, cutting it `patience` after its
/// server is ready, or when `interrupt` is set.
pub(crate) fn run(
    check: impl FnOnce(Arc<Watch>) -> Checked + Send + 'static,
    patience: Duration,
    interrupt: Option<&AtomicBool>,
) -> Watched {
    let watch = Arc::new(Watch::default());
    let (tx, rx) = mpsc::channel();
    let theirs = Arc::clone(&watch);
    let spawned = std::thread::Builder::new()
        .name("conform-check".into())
        .spawn(move || {
            let _ = tx.send(check(theirs));
        });
    if let Err(e) = spawned {
        return Watched::Done(Err(Stop::Fail(format!(
            "cannot start a thread for the check: {e}"
        ))));
    }
    let started = Instant::now();
    // Bounded: the check returns, or its deadline (at most twice the
    // patience and a grace after the start) or an interrupt cuts it.
    let why = loop {
        match rx.recv_timeout(STEP) {
            Ok(checked) => return Watched::Done(checked),
            Err(RecvTimeoutError::Disconnected) => {
                return Watched::Done(Err(Stop::Fail("the check panicked".into())))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if interrupt.is_some_and(|f| f.load(Ordering::SeqCst)) {
            break Cut::Interrupted;
        }
        if watch.due(started, patience) {
            break Cut::Deadline;
        }
    };
    watch.cut(why);
    let said = rx.recv_timeout(AFTERMATH).ok();
    match why {
        Cut::Deadline => Watched::Late(said),
        Cut::Interrupted => Watched::Interrupted,
    }
}
