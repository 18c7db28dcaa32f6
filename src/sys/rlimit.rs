//! The open-files limit (RLIMIT_NOFILE): read it, lower it, raise it to the
//! hard limit. Descriptor-hungry code checks it before it runs out. Also
//! the real-time signal queue's (RLIMIT_SIGPENDING), lowered for `sigio`,
//! and the address-space limit (RLIMIT_AS), read before a pool of threads
//! starts.

use std::io;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Current soft and hard open-files limits (`None` means unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoFile {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// Reads RLIMIT_NOFILE.
pub fn nofile() -> NoFile {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    NoFile {
        soft: current,
        hard: maximum,
    }
}

/// The soft address-space limit (RLIMIT_AS, `ulimit -v`) in bytes, `None`
/// when unlimited: what every thread's stack is mapped against.
pub(crate) fn address_space() -> Option<u64> {
    getrlimit(Resource::As).current
}

/// Sets the soft open-files limit, keeping the hard limit.
pub(crate) fn set_nofile_soft(soft: u64) -> io::Result<()> {
    set_soft(Resource::Nofile, "open-files limit", soft)
}

/// Sets the soft RLIMIT_SIGPENDING, the most signals the user's processes
/// may have queued to this one (the soft limit is what the kernel checks),
/// keeping the hard limit: to make `sigio`'s real-time queue overflow.
pub(crate) fn set_sigpending_soft(soft: u64) -> io::Result<()> {
    set_soft(Resource::Sigpending, "signal queue limit", soft)
}

/// Sets `resource`'s soft limit to `soft`, refused above its hard limit.
fn set_soft(resource: Resource, what: &str, soft: u64) -> io::Result<()> {
    let hard = getrlimit(resource).maximum;
    if let Some(h) = hard.filter(|&h| soft > h) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} {soft} is above the hard limit {h}"),
        ));
    }
    setrlimit(
        resource,
        Rlimit {
            current: Some(soft),
            maximum: hard,
        },
    )
    .map_err(io::Error::from)
}

/// Sets `cmd` up so the child starts with an open-files limit of `n`,
/// soft and hard (never above the hard limit it would inherit), as
/// `prlimit --nofile=N:N` would: the hard limit too, so a runtime that
/// raises its soft limit at start (Go's, Node's) cannot escape it. How the
/// conformance suite runs a foreign server out of descriptors.
pub(crate) fn limit_child_nofile(cmd: &mut std::process::Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, so it
    // must only make async-signal-safe calls: getrlimit and setrlimit are
    // raw system calls here (rustix), and nothing allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            let n = getrlimit(Resource::Nofile).maximum.map_or(n, |h| n.min(h));
            setrlimit(
                Resource::Nofile,
                Rlimit {
                    current: Some(n),
                    maximum: Some(n),
                },
            )
            .map_err(io::Error::from)
        });
    }
}

/// Raises the soft open-files limit to the hard limit and returns it.
pub fn raise_nofile() -> io::Result<u64> {
    let limit = nofile();
    let target = limit.hard.unwrap_or(1 << 20);
    if limit.soft != Some(target) {
        set_nofile_soft(target)?;
    }
    Ok(target)
}

/// The soft limit as a descriptor count, with "unlimited" capped at 1 Mi.
pub(crate) fn soft_nofile() -> usize {
    nofile().soft.unwrap_or(1 << 20) as usize
}

/// The stack size a C program's threads get by default: glibc's
/// `pthread_create` uses the soft RLIMIT_STACK when it is finite (8 MiB on
/// most systems) and 2 MiB when it is unlimited. Rust's std would use 2 MiB
/// either way; the `threads` model uses this to match the platform.
pub(crate) fn platform_thread_stack() -> usize {
    match getrlimit(Resource::Stack).current {
        Some(n) if n >= 16 << 10 => n as usize,
        _ => 2 << 20,
    }
}
