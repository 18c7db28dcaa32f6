//! `--shared-state`: the thesis's question, "if we use locking after each
//! read, will threading be equal to select?", made measurable. After every
//! read the handler adds the bytes to the connection's counter in a table
//! shared by the whole server and to a global total, both under one lock.
//!
//! The state lives in the server's shared mapping (beside [`Stats`]), so
//! the threads of `threads`, `epoll-workers`, `uring`, `tokio` and `hybrid`
//! and the processes of `fork` and `prefork` all update the same table; the
//! single-threaded loops take the same lock and never wait for it. The lock
//! is process-shared for every model (`--lock mutex|spin|rwlock`, see
//! [`crate::sys::lock`]), so models are compared with one lock, not with
//! different ones.
//!
//! Cost: an uncontended lock and unlock and two cache lines per read (a few
//! tens of nanoseconds); contended, whatever the lock's kind makes waiting
//! cost. A connection's number comes from a shared counter at its first
//! read; its counter is slot `number % SLOTS` (connections past
//! [`SLOTS`] share slots, so the table always adds up to the total). The
//! summary reports the total, the table's sum and the updates, which must
//! agree with each other and with the bytes echoed, and how many updates
//! found the lock held (each asks once without waiting first).
//!
//! [`Stats`]: super::Stats

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

use crate::sys::lock::{LockKind, SharedLock};

/// Counters in the shared table.
pub const SLOTS: usize = 4096;

/// The shared table, its total and its lock.
pub struct SharedState {
    lock: SharedLock,
    next_id: AtomicU64,
    /// Updated under the lock with a load and a store (not an atomic add),
    /// so the lock is what keeps every byte.
    total: AtomicU64,
    updates: AtomicU64,
    /// Updates that found the lock held by another thread or process.
    contended: AtomicU64,
    table: [AtomicU64; SLOTS],
}

impl Default for SharedState {
    fn default() -> Self {
        SharedState {
            lock: SharedLock::default(),
            next_id: AtomicU64::new(0),
            total: AtomicU64::new(0),
            updates: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            table: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl std::fmt::Debug for SharedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedState")
            .field("lock", &self.lock.kind())
            .finish_non_exhaustive()
    }
}

/// What the shared state held when the server stopped (in its summary).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StateSummary {
    /// `mutex`, `spin` or `rwlock`.
    pub lock: String,
    /// Bytes read, as the global total counted them.
    pub total: u64,
    /// The per-connection table's counters, summed.
    pub table_sum: u64,
    /// Reads that updated the state.
    pub updates: u64,
    /// Updates that found the lock held by another thread or process (and
    /// waited for it): how often the lock was the bottleneck.
    #[serde(default)]
    pub contended: u64,
    /// Connections numbered (those that read at least once).
    pub connections: u64,
}

impl SharedState {
    /// Turns the state on with a lock of `kind` (before serving, and
    /// before any fork).
    pub fn enable(&self, kind: LockKind) -> std::io::Result<()> {
        self.lock.init(kind)
    }

    /// After a read of `n` bytes on the connection numbered `id` (numbered
    /// here at its first read): both counters, under the lock. Nothing
    /// unless enabled.
    #[inline]
    pub fn read(&self, id: &mut Option<u64>, n: u64) {
        if self.lock.kind().is_none() {
            return;
        }
        let id = *id.get_or_insert_with(|| self.next_id.fetch_add(1, Relaxed));
        let slot = &self.table[id as usize % SLOTS];
        let held = self.lock.lock();
        slot.store(slot.load(Relaxed) + n, Relaxed);
        self.total.store(self.total.load(Relaxed) + n, Relaxed);
        self.updates.store(self.updates.load(Relaxed) + 1, Relaxed);
        if held.contended() {
            self.contended
                .store(self.contended.load(Relaxed) + 1, Relaxed);
        }
    }

    /// The state's figures, when it is on.
    pub fn summary(&self) -> Option<StateSummary> {
        let kind = self.lock.kind()?;
        let _held = self.lock.lock();
        Some(StateSummary {
            lock: kind.name().to_string(),
            total: self.total.load(Relaxed),
            table_sum: self.table.iter().map(|c| c.load(Relaxed)).sum(),
            updates: self.updates.load(Relaxed),
            contended: self.contended.load(Relaxed),
            connections: self.next_id.load(Relaxed),
        })
    }
}
