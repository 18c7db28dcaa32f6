//! A burst of children that exit at once, for timing `fork` itself.
//!
//! [`super::process::fork`] checks on every call that the process has one
//! thread, by reading /proc/self/status, which costs about as much as forking
//! a small process; timing N forks through it would time N reads of /proc as
//! well. Here the check is made once, before the burst, and each child's only
//! action is `_exit(0)`.

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
