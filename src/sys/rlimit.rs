//! The open-files limit (RLIMIT_NOFILE): read it, lower it, raise it to the
//! hard limit. Descriptor-hungry code checks it before it runs out.

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

/// Sets the soft open-files limit, keeping the hard limit.
pub(crate) fn set_nofile_soft(soft: u64) -> io::Result<()> {
    let hard = nofile().hard;
    if let Some(h) = hard {
        if soft > h {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("open-files limit {soft} is above the hard limit {h}"),
            ));
        }
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(soft),
            maximum: hard,
        },
    )
    .map_err(io::Error::from)
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
