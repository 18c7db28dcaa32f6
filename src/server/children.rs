//! The child processes of the `fork` and `prefork` models: forking one,
//! reaping those that exited, and stopping them all.
//!
//! The parent keeps only a count of its live children, not their pids: a
//! table it writes on every fork and reap would be a few dozen pages of the
//! parent's memory, written all the time, and every such page has every
//! child forked since in its reverse map. The kernel's walks of that map
//! (DAMON's access checks, reclaim) then visit all 10,000 children per
//! page: measured here, a 128 KiB table written per fork cut the plain C
//! fork server from 50,000 to 30,000 echoes/s at 10,000 connections, the
//! difference spent by kdamond. The count costs one word.
//!
//! The same holds for every page the parent writes between two forks, not
//! only tables: the parent's write leaves the old page with the children
//! forked before, each child's copy filed under the parent. So the loop
//! writes no heap (its poll set is on the stack, the thread check reads
//! /proc into a small stack buffer), and each child writes the stack pages
//! below its first frame at once ([`take_stack`]), which moves them to
//! the child. Before that, at 10,000 connections, three quarters of
//! kdamond's CPU went to walking those copies, and fork ran at 0.75 of its
//! C program.
//!
//! To stop, the parent asks the kernel for its children
//! ([`process::children`]). A listed child that exits afterwards stays a
//! zombie until this parent reaps it, and it reaps only after the last
//! SIGTERM, so a pid it signals is always its own child's. The parent reaps
//! without blocking whenever SIGCHLD writes to the stop pipe, so a zombie
//! lives at most until the next wake-up.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::Context;
use crate::sys::process::{self, Forked, Reaped};
use crate::sys::signals;

/// How many children of this process are live (not yet reaped).
#[derive(Debug, Default)]
pub(super) struct Children {
    live: usize,
}

impl Children {
    /// Forks; the parent counts the child. The process must be
    /// single-threaded (see [`process::fork`]).
    pub fn fork(&mut self) -> io::Result<Forked> {
        let parent = std::process::id() as i32;
        let forked = process::fork()?;
        match forked {
            Forked::Parent(_) => self.live += 1,
            // A parent killed outright takes its children with it.
            Forked::Child => process::die_with_parent(parent),
        }
        Ok(forked)
    }

    /// Children not yet reaped.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Reaps every child that has exited, without blocking, and hands each
    /// to `exited`.
    pub fn reap(&mut self, mut exited: impl FnMut(&Reaped)) -> io::Result<()> {
        while let Some(r) = process::reap(-1, false)? {
            self.live = self.live.saturating_sub(1);
            exited(&r);
        }
        Ok(())
    }

    /// Sends SIGTERM to every child and waits until all are reaped, handing
    /// each to `exited`.
    pub fn stop(&mut self, mut exited: impl FnMut(&Reaped)) -> io::Result<()> {
        if self.live > 0 {
            for pid in process::children()? {
                process::kill(pid, libc::SIGTERM)?;
            }
        }
        // `None` means ECHILD: nothing left to wait for.
        while let Some(r) = process::reap(-1, true)? {
            exited(&r);
        }
        self.live = 0;
        Ok(())
    }
}

/// Runs `body` as a freshly forked child and ends the process; never returns
/// into the parent's code (which would, say, print a second summary).
///
/// The child first takes its own copy of the stack pages the parent goes
/// on writing ([`take_stack`]), then restores the default action of SIGTERM and SIGINT, so the
/// parent's SIGTERM (or a Ctrl-C to the process group) ends it. A signal that
/// arrived between the fork and that reset ran the inherited handler instead,
/// which only set the child's copy of the stop flag: the child checks the flag
/// after the reset and leaves at once, so no child can miss a stop. A panic
/// in `body` ends the child with status 1 rather than unwinding into the
/// parent's loop.
pub(super) fn run_child(ctx: &Context, body: impl FnOnce()) -> ! {
    take_stack();
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

/// How far below its first frame a child writes its stack: past the
/// deepest the parent goes between two forks (poll, accept, wait4, the
/// thread check's read of /proc, fork itself), with room to spare.
const STACK_TAKEN: usize = 12 << 10;

/// Writes [`STACK_TAKEN`] bytes of stack below the caller's frame, so the
/// new child holds a copy of its own of every stack page the parent wrote
/// after forking it.
///
/// Why: the parent goes on accepting and forking on the same stack. A page
/// it writes then is copied for the parent, and the child keeps the old
/// one; that page is the child's alone, but the kernel still files it
/// under the parent, so whoever checks it (the host's DAMON, reclaim)
/// visits every child forked since, 10,000 at 10,000 connections. Written
/// by the child, the page moves to the child. Measured at 10,000
/// connections, fork 1:1 (docs/results/2026-11-28-fork-family.md): the
/// monitor's CPU per cell fell from 1.3 to 1.5 s to 0.3 to 0.7 s, the plain
/// C server's 0.4 to 0.9 s, and its time in the children's pages from
/// three quarters of it to under 5 %. Cost: the stack pages the child
/// would keep anyway, at most 3 pages more.
#[inline(never)]
fn take_stack() {
    let stack = [1u8; STACK_TAKEN];
    std::hint::black_box(&stack);
}
