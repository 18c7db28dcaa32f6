//! Server counters, kept in memory shared with forked children so that the
//! summary adds up the whole process tree, and the JSON summary line.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use super::shared_state::{SharedState, StateSummary};

/// Counters updated by every model. Plain atomics (and the shared state's
/// process-shared lock): safe to place in a `MAP_SHARED` mapping (see
/// [`crate::sys::shared`]).
#[derive(Debug, Default)]
pub struct Stats {
    accepted: AtomicU64,
    active: AtomicU64,
    peak: AtomicU64,
    bytes: AtomicU64,
    refused_max_conns: AtomicU64,
    accept_exhausted: AtomicU64,
    accept_other: AtomicU64,
    reset: AtomicU64,
    io_other: AtomicU64,
    spawn_failed: AtomicU64,
    waits: AtomicU64,
    events: AtomicU64,
    overflows: AtomicU64,
    bad_requests: AtomicU64,
    /// Requests whose work was done (`--work`), or HTTP requests answered.
    requests: AtomicU64,
    /// `--shared-state`: off unless enabled.
    pub(crate) state: SharedState,
}

/// The one line of JSON a server prints when it stops.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Summary {
    pub model: String,
    /// Connections accepted and served (refused ones not included).
    pub connections: u64,
    /// Most connections open at once.
    pub peak_connections: u64,
    /// Still open when the server stopped.
    pub open_at_exit: u64,
    pub bytes_echoed: u64,
    pub refused: Refused,
    pub errors: Errors,
    /// The waits of the readiness loops (zero for the other models).
    #[serde(default)]
    pub waits: Waits,
    /// `--shared-state`: what the shared table held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_state: Option<StateSummary>,
    /// Requests whose work was done (`--work`; 0 without work), or with
    /// `--protocol http` every request answered.
    #[serde(default)]
    pub requests: u64,
    /// `--work`: the work per request and what the model's handlers can
    /// do at once (absent without work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkSummary>,
}

/// The work a server did per request, as its summary reports it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct WorkSummary {
    /// The spec, canonical (`block:1ms`).
    pub spec: String,
    /// Bytes per request.
    pub request_bytes: usize,
    pub capacity: super::work::Capacity,
}

/// What the readiness loops' waits returned, over the server's life.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Waits {
    /// Calls that waited (select, poll, epoll_wait, a signalfd read; for
    /// `busy`, passes over every socket).
    pub waits: u64,
    /// Descriptors they reported ready (for `busy`, every one watched).
    pub events: u64,
    /// Times `sigio`'s real-time signal queue overflowed and every
    /// connection was polled instead.
    pub overflows: u64,
}

/// Connections closed on purpose.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Refused {
    /// Closed at once because `--max-conns` were open.
    pub max_conns: u64,
    /// Closed because no thread or process could be made for them.
    pub spawn_failed: u64,
}

/// Errors by kind.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Errors {
    /// accept() failed for lack of descriptors or memory (EMFILE, ENFILE,
    /// ENOBUFS, ENOMEM); the server backs off and retries.
    pub accept_exhausted: u64,
    pub accept_other: u64,
    /// Connections that ended with ECONNRESET or EPIPE.
    pub reset: u64,
    /// Connections that ended with any other I/O error.
    pub io_other: u64,
    /// HTTP: requests refused (400, 431, 501), each ending its connection.
    #[serde(default)]
    pub bad_request: u64,
}

impl Stats {
    /// Counts a connection as open unless `max` are open already; returns
    /// whether it was. The check and the count are one atomic step.
    pub(crate) fn try_open(&self, max: Option<u64>) -> bool {
        let limit = max.unwrap_or(u64::MAX);
        let Ok(before) = self
            .active
            .fetch_update(Relaxed, Relaxed, |a| (a < limit).then_some(a + 1))
        else {
            return false;
        };
        self.accepted.fetch_add(1, Relaxed);
        self.peak.fetch_max(before + 1, Relaxed);
        true
    }

    /// A served connection was closed.
    pub fn closed(&self) {
        self.active.fetch_sub(1, Relaxed);
    }

    pub(crate) fn add_bytes(&self, n: u64) {
        if n > 0 {
            self.bytes.fetch_add(n, Relaxed);
        }
    }

    /// A readiness loop made `waits` waits that returned `events`
    /// descriptors in all (added when the loop ends).
    pub(crate) fn waited(&self, waits: u64, events: u64) {
        self.waits.fetch_add(waits, Relaxed);
        self.events.fetch_add(events, Relaxed);
    }

    /// A request's work was done.
    pub(crate) fn requested(&self) {
        self.requests.fetch_add(1, Relaxed);
    }

    /// An HTTP request was refused (400, 431, 501).
    pub(crate) fn bad_request(&self) {
        self.bad_requests.fetch_add(1, Relaxed);
    }

    /// `sigio`'s signal queue overflowed.
    pub(crate) fn overflowed(&self) {
        self.overflows.fetch_add(1, Relaxed);
    }

    pub(crate) fn refused_max_conns(&self) {
        self.refused_max_conns.fetch_add(1, Relaxed);
    }

    pub(crate) fn spawn_failed(&self) {
        self.spawn_failed.fetch_add(1, Relaxed);
    }

    /// Counts a failed accept() as exhaustion (descriptors or memory) or
    /// another error; returns whether it was exhaustion.
    pub(crate) fn accept_failed(&self, e: &io::Error) -> bool {
        let exhausted = matches!(
            e.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        );
        if exhausted {
            self.accept_exhausted.fetch_add(1, Relaxed);
        } else {
            self.accept_other.fetch_add(1, Relaxed);
        }
        exhausted
    }

    /// Counts the error that ended a connection.
    pub(crate) fn conn_failed(&self, e: &io::Error) {
        match e.kind() {
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                self.reset.fetch_add(1, Relaxed)
            }
            _ => self.io_other.fetch_add(1, Relaxed),
        };
    }

    /// A snapshot for the summary line.
    pub fn summary(&self, model: &str) -> Summary {
        Summary {
            model: model.to_string(),
            connections: self.accepted.load(Relaxed),
            peak_connections: self.peak.load(Relaxed),
            open_at_exit: self.active.load(Relaxed),
            bytes_echoed: self.bytes.load(Relaxed),
            refused: Refused {
                max_conns: self.refused_max_conns.load(Relaxed),
                spawn_failed: self.spawn_failed.load(Relaxed),
            },
            errors: Errors {
                accept_exhausted: self.accept_exhausted.load(Relaxed),
                accept_other: self.accept_other.load(Relaxed),
                reset: self.reset.load(Relaxed),
                io_other: self.io_other.load(Relaxed),
                bad_request: self.bad_requests.load(Relaxed),
            },
            waits: Waits {
                waits: self.waits.load(Relaxed),
                events: self.events.load(Relaxed),
                overflows: self.overflows.load(Relaxed),
            },
            shared_state: self.state.summary(),
            requests: self.requests.load(Relaxed),
            work: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stats;

    #[test]
    fn try_open_never_passes_the_limit_under_contention() {
        let stats = Stats::default();
        let opened: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..1000).filter(|_| stats.try_open(Some(10))).count()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(opened, 10);
        let s = stats.summary("t");
        assert_eq!((s.connections, s.peak_connections), (10, 10));
        stats.closed();
        assert!(stats.try_open(Some(10)));
        assert!(stats.try_open(None));
    }
}
