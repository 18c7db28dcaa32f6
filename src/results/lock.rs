//! The exclusive lock a `c10k run` holds on its results directory, so two
//! runs never measure the same cells on the same pinned CPUs or append to
//! one file: `flock(LOCK_EX | LOCK_NB)` on `results.jsonl`, taken before
//! the directory is read or written and held (by [`super::dir::Appender`],
//! which owns the descriptor) until the process exits, a kill included.
//!
//! The lock is on `results.jsonl` itself, not a lock file beside it: no
//! stale file to clean up, and the file is opened for writing, which a
//! network filesystem's emulation of flock needs. Who holds it is read
//! from `/proc/locks`; where that does not say, the message says so.
//! `c10k report` only reads and takes no lock.

use std::fs::File;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

/// Another `c10k run` holds the directory.
#[derive(Debug)]
pub struct InUse {
    pub dir: PathBuf,
    /// The holder, when `/proc/locks` names it.
    pub pid: Option<u32>,
}

impl std::fmt::Display for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is in use by another c10k run ({})",
            self.dir.display(),
            match self.pid {
                Some(p) => format!("pid {p}"),
                None => "its pid unknown".into(),
            }
        )
    }
}

impl std::error::Error for InUse {}

/// Takes the exclusive lock of `dir` on `file` (its `results.jsonl` at
/// `path`, opened for writing) without waiting.
///
/// A lock whose holder `/proc/locks` no longer shows was let go while we
/// looked, so the lock is tried again, a few times at most. This happens
/// right after a run is killed: a child it was starting holds a copy of
/// the descriptor from fork until its exec closes it.
pub fn exclusive(file: &File, path: &Path, dir: &Path) -> anyhow::Result<()> {
    const TRIES: usize = 3;
    for _ in 0..TRIES {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) => {
                if let Some(pid) = holder(file) {
                    return Err(InUse {
                        dir: dir.to_path_buf(),
                        pid: Some(pid),
                    }
                    .into());
                }
            }
            Err(e) => anyhow::bail!(
                "cannot lock {}: {e} (a filesystem without flock?)",
                path.display()
            ),
        }
    }
    Err(InUse {
        dir: dir.to_path_buf(),
        pid: None,
    }
    .into())
}

/// The process holding a flock on `file`, from `/proc/locks`, whose lines
/// read `1: FLOCK  ADVISORY  WRITE 2718 fe:00:10010839 0 EOF` (pid, then
/// device major:minor in hex and inode).
fn holder(file: &File) -> Option<u32> {
    let st = rustix::fs::fstat(file).ok()?;
    let at = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(st.st_dev),
        rustix::fs::minor(st.st_dev),
        st.st_ino
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(1) != Some(&"FLOCK") || f.get(5) != Some(&at.as_str()) {
            return None;
        }
        // 0: a holder outside this process's pid namespace.
        f.get(4)?.parse().ok().filter(|&p| p != 0)
    })
}
