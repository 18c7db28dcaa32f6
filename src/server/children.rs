//! The child processes of the `fork` and `prefork` models: forking one,
//! reaping those that exited, and stopping them all.
//!
//! A child that exits stays a zombie until its parent reaps it with wait4, and
//! its pid cannot be reused until then. The set below therefore forgets a pid
//! only once it was reaped, which makes `kill(pid)` on a remembered pid always
//! reach our own child. The parent reaps without blocking whenever SIGCHLD
//! writes to the stop pipe, so a zombie lives at most until the next wake-up.

use std::collections::HashSet;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::Context;
use crate::sys::process::{self, Forked, Reaped};
use crate::sys::signals;

/// The live (not yet reaped) children of this process.
#[derive(Debug, Default)]
pub(super) struct Children {
    pids: HashSet<i32>,
}

impl Children {
    /// Forks; the parent learns the child's pid and remembers it. The
    /// process must be single-threaded (see [`process::fork`]).
    pub fn fork(&mut self) -> io::Result<Forked> {
        let parent = std::process::id() as i32;
        let forked = process::fork()?;
        match forked {
            Forked::Parent(pid) => {
                self.pids.insert(pid);
            }
            // A parent killed outright takes its children with it.
            Forked::Child => process::die_with_parent(parent),
        }
        Ok(forked)
    }

    /// Children not yet reaped.
    pub fn len(&self) -> usize {
        self.pids.len()
    }

    /// Reaps every child that has exited, without blocking, and hands each
    /// to `exited`.
    pub fn reap(&mut self, mut exited: impl FnMut(&Reaped)) -> io::Result<()> {
        while let Some(r) = process::reap(-1, false)? {
            self.pids.remove(&r.pid);
            exited(&r);
        }
        Ok(())
    }

    /// Sends SIGTERM to every child and waits until all are reaped, handing
    /// each to `exited`.
    pub fn stop(&mut self, mut exited: impl FnMut(&Reaped)) -> io::Result<()> {
        for &pid in &self.pids {
            process::kill(pid, libc::SIGTERM)?;
        }
        while !self.pids.is_empty() {
            // `None` means ECHILD: nothing left to wait for.
            let Some(r) = process::reap(-1, true)? else {
                self.pids.clear();
                break;
            };
            self.pids.remove(&r.pid);
            exited(&r);
        }
        Ok(())
    }
}

/// Runs `body` as a freshly forked child and ends the process; never returns
/// into the parent's code (which would, say, print a second summary).
///
/// The child first restores the default action of SIGTERM and SIGINT, so the
/// parent's SIGTERM (or a Ctrl-C to the process group) ends it. A signal that
/// arrived between the fork and that reset ran the inherited handler instead,
/// which only set the child's copy of the stop flag: the child checks the flag
/// after the reset and leaves at once, so no child can miss a stop. A panic
/// in `body` ends the child with status 1 rather than unwinding into the
/// parent's loop.
pub(super) fn run_child(ctx: &Context, body: impl FnOnce()) -> ! {
    signals::reset_in_child();
    if ctx.shutdown.requested() {
        // Status 1: left without doing its work (see `fork` on counting).
        process::exit_now(1);
    }
    let code = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(()) => 0,
        Err(_) => 1,
    };
    process::exit_now(code)
}
