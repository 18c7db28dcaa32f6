//! Starting a thread or a process that may not start. A limit on tasks
//! (`ulimit -u`, a pids cgroup's `pids.max`), on open files or on memory
//! makes `fork`, `clone` or `pipe` fail, and `std::thread::spawn` panics
//! then. Every thread and process of the client starts here instead: a
//! failure is an error of one line naming what could not start and why;
//! what was started before it is the caller's to stop, and each caller
//! holds it in a guard that does so when dropped (the agents' launchers:
//! [`super::agents`]). Cost: nothing beyond the start itself.

use std::io;
use std::process::{Child, Command};
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};

/// The stack of a thread that only reads lines and moves them on.
pub(crate) const SMALL_STACK: usize = 64 * 1024;

/// Starts thread `name` (with a stack of `stack` bytes when given).
pub(crate) fn thread<T, F>(name: &str, stack: Option<usize>, f: F) -> anyhow::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    builder(name, stack)
        .spawn(f)
        .map_err(|e| failed(&format!("a thread ({name})"), &e))
}

/// Starts thread `name` in `scope`.
pub(crate) fn scoped<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    name: &str,
    f: F,
) -> anyhow::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    builder(name, None)
        .spawn_scoped(scope, f)
        .map_err(|e| failed(&format!("a thread ({name})"), &e))
}

/// Starts `cmd`; `what` names it in the error.
pub(crate) fn process(cmd: &mut Command, what: &str) -> anyhow::Result<Child> {
    cmd.spawn().map_err(|e| failed(what, &e))
}

fn builder(name: &str, stack: Option<usize>) -> Builder {
    let b = Builder::new().name(name.to_string());
    match stack {
        Some(bytes) => b.stack_size(bytes),
        None => b,
    }
}

/// The one line for a start that failed, with the limit it most likely
/// met.
fn failed(what: &str, e: &io::Error) -> anyhow::Error {
    let hint = match e.raw_os_error() {
        Some(libc::EAGAIN) => {
            " (the limit on tasks: `ulimit -u`, or the pids.max of this process's cgroup)"
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => " (the limit on open files: `ulimit -n`)",
        Some(libc::ENOMEM) => " (out of memory, or the limit on tasks)",
        _ => "",
    };
    anyhow::anyhow!("cannot start {what}: {e}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_fails_is_one_line_naming_what() {
        let e = process(
            &mut Command::new("/nonexistent/c10k-launcher"),
            "agent 3 with \"/nonexistent/c10k-launcher\"",
        )
        .expect_err("no such program");
        let line = e.to_string();
        assert!(
            line.starts_with("cannot start agent 3 with") && line.lines().count() == 1,
            "{line}"
        );
        let e = failed("a thread (x)", &io::Error::from_raw_os_error(libc::EAGAIN));
        assert!(e.to_string().contains("pids.max"), "{e}");
        let h = thread("ok", Some(SMALL_STACK), || 7).expect("a thread starts");
        assert_eq!(h.join().ok(), Some(7));
    }
}
