//! Starting a server's threads before it says READY: whether the threads
//! asked for fit in this process ([`threads_fit`]), the line at which
//! threads that set themselves up wait for each other ([`StartLine`]), and
//! a trial start for a runtime that cannot fail to start one
//! ([`try_threads`]).
//!
//! A model with a pool (hybrid's threads, epoll-workers' loops, uring's
//! rings, tokio's runtime) says READY only once every one of them exists,
//! and a pool that cannot be had is an error the model returns, one line.
//! A thread refused by the kernel is not always an error, though: std's
//! spawn reports a refused `pthread_create` (EAGAIN) as one, but a thread
//! that starts and then cannot map the signal stack std gives every thread
//! (with its guard page) panics inside itself and aborts the process,
//! which is how `vm.max_map_count` shows up; and tokio panics on any
//! worker thread it cannot start, then hangs joining the ones it did. So
//! the limits that would refuse a thread are checked before the first one
//! starts: the kernel's task limits ([`crate::env::tasks`]),
//! `vm.max_map_count` against this process's maps ([`MAPS_PER_THREAD`]
//! each) and RLIMIT_AS against its size and the stacks. Cost: reading
//! /proc/self/maps and /proc/self/status once, before the pool starts.

use std::io;
use std::sync::{Condvar, Mutex};

use crate::env::tasks::Tasks;
use crate::present::units::{format_count, kib};
use crate::sys;

/// Memory maps one std thread adds: its stack and the guard page below it
/// (glibc), and the signal stack std maps for it and that stack's guard
/// page (4 measured here: 1,000 threads, 4,024 maps more).
pub(crate) const MAPS_PER_THREAD: u64 = 4;

/// Address space a thread takes beside its stack: the guard page and std's
/// signal stack with its guard page, rounded up.
const SPACE_PER_THREAD: u64 = 64 << 10;

/// Maps kept free for everything else the process maps as it starts (a
/// ring's queues, the shared counters).
const MAP_MARGIN: u64 = 256;

/// Address space one of malloc's arenas may take: glibc gives a thread
/// that allocates an arena of its own, up to [`ARENAS_PER_CPU`] a CPU,
/// each a 64 MiB reservation (HEAP_MAX_SIZE) made by mapping twice that
/// and trimming it. Threads starting at once make theirs at once, and a
/// thread whose signal stack finds no room while another's arena holds it
/// aborts the process, so each counts at the most it holds.
const ARENA_SPACE: u64 = 128 << 20;

/// glibc's default most arenas per CPU on 64-bit (M_ARENA_MAX).
const ARENAS_PER_CPU: u64 = 8;

/// Maps one arena takes (its heap and the reserved rest).
const ARENA_MAPS: u64 = 2;

/// The stack std gives a thread when none is asked for (and tokio's
/// worker threads theirs), with `RUST_MIN_STACK` unset.
pub(crate) const STD_STACK: usize = 2 << 20;

/// What limits this process's threads, read once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Room {
    pub tasks: Tasks,
    /// This process's memory maps and `vm.max_map_count`.
    pub maps: Option<(u64, u64)>,
    /// This process's size (VmSize) and its RLIMIT_AS, bytes.
    pub space: Option<(u64, u64)>,
    /// CPUs online: what bounds malloc's arenas.
    pub cpus: u64,
}

impl Room {
    /// Reads the limits now.
    pub fn read() -> Room {
        let maps = std::fs::read_to_string("/proc/self/maps")
            .ok()
            .map(|m| m.lines().count() as u64)
            .zip(crate::env::sysctl_u64("vm.max_map_count"));
        let size = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| crate::metrics::tree::field(&s, "VmSize:"))
            .map(|k| k * 1024);
        Room {
            tasks: Tasks::read(),
            maps,
            space: size.zip(sys::rlimit::address_space()),
            cpus: crate::env::online_cpus().len().max(1) as u64,
        }
    }

    /// The arenas `n` more threads may make.
    fn arenas(&self, n: u64) -> u64 {
        n.min(self.cpus.saturating_mul(ARENAS_PER_CPU))
    }

    /// `Ok` when `n` more threads with `stack`-byte stacks fit under every
    /// limit; otherwise one line naming the first that refuses, and its fix.
    pub fn check(&self, n: usize, stack: usize) -> Result<(), String> {
        let n = n as u64;
        let count = |v: u64| format_count(v as f64);
        let bytes = |v: u64| kib(v as f64 / 1024.0);
        if let Some(limit) = self.tasks.refusing(n, 0) {
            return Err(format!(
                "{} threads do not fit: {} leaves room for {}; fix: {}",
                count(n),
                limit.describe(),
                count(limit.room(0)),
                limit.fix(n, 0)
            ));
        }
        if let Some((used, max)) = self.maps {
            let need = used
                .saturating_add(n.saturating_mul(MAPS_PER_THREAD))
                .saturating_add(self.arenas(n) * ARENA_MAPS)
                .saturating_add(MAP_MARGIN);
            if need > max {
                return Err(format!(
                    "{} threads take {} memory maps ({MAPS_PER_THREAD} each) beside this \
                     process's {}, past vm.max_map_count = {}; fix: sysctl -w vm.max_map_count={}",
                    count(n),
                    count(n.saturating_mul(MAPS_PER_THREAD)),
                    count(used),
                    count(max),
                    need.next_power_of_two()
                ));
            }
        }
        if let Some((size, limit)) = self.space {
            let stacks = n.saturating_mul(stack as u64 + SPACE_PER_THREAD);
            let arenas = self.arenas(n).saturating_mul(ARENA_SPACE);
            if size.saturating_add(stacks).saturating_add(arenas) > limit {
                return Err(format!(
                    "{} threads take {} of stacks and up to {} of malloc arenas beside this \
                     process's {}, past its address-space limit (ulimit -v) of {}",
                    count(n),
                    bytes(stacks),
                    bytes(arenas),
                    bytes(size),
                    bytes(limit)
                ));
            }
        }
        Ok(())
    }
}

/// Whether `n` more threads with `stack`-byte stacks fit in this process
/// now ([`Room::check`]).
pub(crate) fn threads_fit(n: usize, stack: usize) -> Result<(), String> {
    Room::read().check(n, stack)
}

/// Starts `n` threads with std's default stack, holds them until all exist
/// and lets them end: whether the kernel gives `n` threads to this process
/// now, for a runtime that cannot be told no (tokio's panics on a refused
/// worker thread). The kernel's own answer, which [`threads_fit`] can only
/// estimate (RLIMIT_NPROC counts the user's other tasks, malloc's arenas
/// take address space); it costs `n` thread starts, and the stacks come
/// back before the runtime asks for its own.
pub(crate) fn try_threads(n: usize) -> io::Result<()> {
    let line = StartLine::new(n + 1);
    let line = &line;
    std::thread::scope(|s| {
        let mut spawned = Ok(());
        for i in 0..n {
            let tried = std::thread::Builder::new()
                .name(format!("c10k-try-{i}"))
                .spawn_scoped(s, move || line.arrive(true));
            if let Err(e) = tried {
                spawned = Err(e);
                break;
            }
        }
        // Releases the threads started either way; the scope joins them.
        line.arrive(spawned.is_ok());
        spawned
    })
}

/// Where threads that set themselves up wait for each other before any
/// serves: like a barrier, but one that any failure releases at once. A
/// thread that began serving first could take the descriptors the others
/// still need, and READY waits for them all.
pub(crate) struct StartLine {
    /// Arrivals still expected, and whether every one so far was set up.
    state: Mutex<(usize, bool)>,
    all: Condvar,
}

impl StartLine {
    /// A line for `arrivals` calls of [`StartLine::arrive`].
    pub fn new(arrivals: usize) -> Self {
        StartLine {
            state: Mutex::new((arrivals, true)),
            all: Condvar::new(),
        }
    }

    /// Reports this arrival's setup (`ok`) and waits for the rest; returns
    /// whether every one set up (`false` at once after a failure).
    pub fn arrive(&self, ok: bool) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 = s.0.saturating_sub(1);
        s.1 &= ok;
        self.all.notify_all();
        while s.0 > 0 && s.1 {
            s = self.all.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tasks::{Kind, Limit};

    /// A room on 2 CPUs: up to 16 arenas.
    fn room(maps: Option<(u64, u64)>, space: Option<(u64, u64)>) -> Room {
        Room {
            tasks: Tasks::default(),
            maps,
            space,
            cpus: 2,
        }
    }

    #[test]
    fn threads_that_fit_pass() {
        assert_eq!(room(None, None).check(100_000, STD_STACK), Ok(()));
        let r = room(Some((42, 65_530)), Some((80 << 20, 8 << 30)));
        assert_eq!(r.check(1_000, STD_STACK), Ok(()));
    }

    #[test]
    fn the_map_limit_refuses_with_its_fix() {
        // 42 + 4 × 16,000 + 2 × 16 + 256 = 64,330 fits 65,530; 16,400 does
        // not.
        let r = room(Some((42, 65_530)), None);
        assert_eq!(r.check(16_000, STD_STACK), Ok(()));
        let e = r.check(16_400, STD_STACK).unwrap_err();
        assert!(e.contains("16,400 threads take 65,600 memory maps"), "{e}");
        assert!(e.contains("vm.max_map_count = 65,530"), "{e}");
        assert!(e.contains("sysctl -w vm.max_map_count=131072"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn the_address_space_limit_refuses_the_stacks_and_arenas() {
        // 4 GiB less 80 MiB and 16 arenas of 128 MiB holds 930 stacks of
        // 2 MiB and 64 KiB, not 1,000.
        let r = room(None, Some((80 << 20, 4 << 30)));
        assert_eq!(r.check(930, STD_STACK), Ok(()));
        let e = r.check(1_000, STD_STACK).unwrap_err();
        assert!(e.contains("1,000 threads take 2.01 GiB of stacks"), "{e}");
        assert!(e.contains("up to 2 GiB of malloc arenas"), "{e}");
        assert!(
            e.contains("address-space limit (ulimit -v) of 4 GiB"),
            "{e}"
        );
        // Two threads make at most two arenas.
        assert_eq!(
            room(None, Some((80 << 20, 512 << 20))).check(2, STD_STACK),
            Ok(())
        );
    }

    #[test]
    fn a_task_limit_refuses_first() {
        let r = Room {
            tasks: Tasks {
                limits: vec![Limit {
                    kind: Kind::Sysctl("kernel.threads-max"),
                    max: 1_000,
                    used: 900,
                }],
            },
            ..room(Some((42, 65_530)), None)
        };
        assert_eq!(r.check(100, STD_STACK), Ok(()));
        let e = r.check(101, STD_STACK).unwrap_err();
        assert!(
            e.starts_with("101 threads do not fit: kernel.threads-max"),
            "{e}"
        );
    }

    #[test]
    fn a_failed_arrival_releases_the_line() {
        let line = StartLine::new(3);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| line.arrive(true));
            assert!(!line.arrive(false));
            assert!(!waiting.join().unwrap());
        });
        let line = StartLine::new(2);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| line.arrive(true));
            assert!(line.arrive(true));
            assert!(waiting.join().unwrap());
        });
    }

    #[test]
    fn a_few_threads_can_be_tried() {
        try_threads(4).unwrap();
    }
}
