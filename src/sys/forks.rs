//! A burst of children that exit at once, for timing `fork` itself.
//!
//! [`super::process::fork`] checks on every call that the process has one
//! thread, by reading /proc/self/status, which costs about as much as forking
//! a small process; timing N forks through it would time N reads of /proc as
//! well. Here the check is made once, before the burst, and each child's only
//! action is `_exit(0)`.
//!
//! [`fork_each`] is the same single check for a burst of children that each
//! run a body of their own (the herd's workers): thousands of forks pay one
//! read of /proc, not one each.

use std::io;

/// Forks `n` children that exit with status 0 at once, pushing each child's
/// pid onto `pids` (reserve room first to keep allocation out of a timed
/// loop). On an error, `pids` holds the children forked so far: the caller
/// must still reap them.
pub(crate) fn fork_exiting(n: usize, pids: &mut Vec<i32>) -> io::Result<()> {
    let threads = super::process::thread_count()?;
    if threads != 1 {
        return Err(io::Error::other(format!(
            "refusing to fork a process with {threads} threads"
        )));
    }
    for _ in 0..n {
        // SAFETY: the process has one thread (checked above, and nothing in
        // this loop starts one), so no lock can be held by a thread missing
        // from the child. The child makes a single async-signal-safe call,
        // `_exit`, and never returns into Rust code.
        match unsafe { libc::fork() } {
            -1 => return Err(io::Error::last_os_error()),
            // SAFETY: `_exit` is always safe to call; it never returns.
            0 => unsafe { libc::_exit(0) },
            pid => pids.push(pid),
        }
    }
    Ok(())
}

/// Forks `n` children; child `i` runs `child(i)`, which never returns
/// (`Infallible`: a body that ends the process, such as `-> !`).
/// Each child's pid is pushed onto `pids` as it is forked (reserve room
/// first), so on an error `pids` holds every child forked so far and the
/// caller must still reap them. `parent_check(i)` runs in the parent before
/// child `i` is forked; `Err` stops the burst there (an interrupt).
///
/// Cost: one read of /proc/self/status for the burst, then one `fork`
/// (the parent's page tables copied) per child.
pub(crate) fn fork_each(
    n: usize,
    pids: &mut Vec<i32>,
    mut parent_check: impl FnMut(usize) -> io::Result<()>,
    mut child: impl FnMut(usize) -> std::convert::Infallible,
) -> io::Result<()> {
    let threads = super::process::thread_count()?;
    if threads != 1 {
        return Err(io::Error::other(format!(
            "refusing to fork a process with {threads} threads"
        )));
    }
    for i in 0..n {
        parent_check(i)?;
        // SAFETY: the process has one thread (checked above; neither this
        // loop nor `parent_check` starts one, and `child` runs only in the
        // new process), so no lock can be held by a thread missing from the
        // child. The child continues in ordinary single-threaded Rust and
        // never returns into this loop.
        match unsafe { libc::fork() } {
            -1 => return Err(io::Error::last_os_error()),
            0 => {
                child(i);
            }
            pid => pids.push(pid),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn refuses_a_threaded_process() {
        // The test harness runs tests on threads of their own.
        let mut pids = Vec::new();
        if super::super::process::thread_count().unwrap_or(1) > 1 {
            assert!(super::fork_exiting(1, &mut pids).is_err());
            assert!(pids.is_empty());
        }
    }
}
