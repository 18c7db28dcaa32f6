//! A lock that holds between threads and between processes: it lives in
//! memory the processes share (a `MAP_SHARED` mapping made before they
//! fork, see [`super::shared`]), so a pthread mutex or rwlock is made
//! `PTHREAD_PROCESS_SHARED` and a spin lock is one atomic word.
//!
//! Cost, uncontended: an atomic compare-and-swap to lock and one to unlock
//! (a few nanoseconds, any kind). Contended: a mutex or rwlock sleeps in a
//! futex (a system call and a wake-up per hand-over); the spin lock spins,
//! yielding the CPU every [`SPINS`] tries so that a holder preempted on a
//! busy CPU can run (with more runnable threads than CPUs a pure spin lock
//! burns whole time slices). A process that dies holding the lock leaves it
//! held: the critical sections here make no system call, so only a kill
//! in those few instructions can do that.

use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// The kinds of lock.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// A process-shared pthread mutex (futex).
    Mutex,
    /// A spin lock on one atomic word, yielding every [`SPINS`] tries.
    Spin,
    /// A process-shared pthread rwlock, write-locked.
    RwLock,
}

impl LockKind {
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::Spin => "spin",
            LockKind::RwLock => "rwlock",
        }
    }
    fn code(self) -> u8 {
        match self {
            LockKind::Mutex => 1,
            LockKind::Spin => 2,
            LockKind::RwLock => 3,
        }
    }
    fn of(code: u8) -> Option<LockKind> {
        match code {
            1 => Some(LockKind::Mutex),
            2 => Some(LockKind::Spin),
            3 => Some(LockKind::RwLock),
            _ => None,
        }
    }
}

/// Spin-lock tries between two yields of the CPU.
pub const SPINS: u32 = 100;

/// While [`SharedLock::init`] writes the pthread object.
const INITIALIZING: u8 = u8::MAX;

/// A lock of one [`LockKind`], chosen once by [`SharedLock::init`]; until
/// then (and if never) locking it does nothing.
pub struct SharedLock {
    kind: AtomicU8,
    spin: AtomicU32,
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    rwlock: UnsafeCell<libc::pthread_rwlock_t>,
}

// SAFETY: the pthread objects are written only by `init`, which the `kind`
// compare-and-swap lets run once and publishes with Release before anyone
// locks them; after that they are used only through pthread calls, which
// are made for concurrent use (process-shared, even across processes).
unsafe impl Sync for SharedLock {}

impl Default for SharedLock {
    fn default() -> Self {
        SharedLock {
            kind: AtomicU8::new(0),
            spin: AtomicU32::new(0),
            mutex: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
            rwlock: UnsafeCell::new(libc::PTHREAD_RWLOCK_INITIALIZER),
        }
    }
}

fn check(what: &str, rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        let e = io::Error::from_raw_os_error(rc);
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    }
}

impl SharedLock {
    /// Makes this a lock of `kind`, process-shared. Only the first call
    /// does anything; call it before the processes fork.
    pub fn init(&self, kind: LockKind) -> io::Result<()> {
        if self
            .kind
            .compare_exchange(0, INITIALIZING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Ok(());
        }
        let made = match kind {
            LockKind::Spin => Ok(()),
            LockKind::Mutex => self.init_mutex(),
            LockKind::RwLock => self.init_rwlock(),
        };
        // A lock that could not be made stays off; the error says why.
        let code = if made.is_ok() { kind.code() } else { 0 };
        self.kind.store(code, Ordering::Release);
        made
    }

    fn init_mutex(&self) -> io::Result<()> {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        // SAFETY: `attr` is initialised by pthread_mutexattr_init before any
        // other use and destroyed after; the mutex is ours alone until the
        // Release store of `kind` publishes it (see `init`).
        unsafe {
            check(
                "pthread_mutexattr_init",
                libc::pthread_mutexattr_init(attr.as_mut_ptr()),
            )?;
            let rc =
                libc::pthread_mutexattr_setpshared(attr.as_mut_ptr(), libc::PTHREAD_PROCESS_SHARED);
            let made = check("pthread_mutexattr_setpshared", rc).and_then(|()| {
                check(
                    "pthread_mutex_init",
                    libc::pthread_mutex_init(self.mutex.get(), attr.as_ptr()),
                )
            });
            libc::pthread_mutexattr_destroy(attr.as_mut_ptr());
            made
        }
    }

    fn init_rwlock(&self) -> io::Result<()> {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_rwlockattr_t>::uninit();
        // SAFETY: as in `init_mutex`, for the rwlock.
        unsafe {
            check(
                "pthread_rwlockattr_init",
                libc::pthread_rwlockattr_init(attr.as_mut_ptr()),
            )?;
            let rc = libc::pthread_rwlockattr_setpshared(
                attr.as_mut_ptr(),
                libc::PTHREAD_PROCESS_SHARED,
            );
            let made = check("pthread_rwlockattr_setpshared", rc).and_then(|()| {
                check(
                    "pthread_rwlock_init",
                    libc::pthread_rwlock_init(self.rwlock.get(), attr.as_ptr()),
                )
            });
            libc::pthread_rwlockattr_destroy(attr.as_mut_ptr());
            made
        }
    }

    /// The kind chosen, once [`SharedLock::init`] has made it.
    pub fn kind(&self) -> Option<LockKind> {
        LockKind::of(self.kind.load(Ordering::Acquire))
    }

    /// Takes the lock (a no-op guard while it has no kind). The guard says
    /// whether it was held by someone else when asked for (one try first).
    pub fn lock(&self) -> Guard<'_> {
        let kind = self.kind();
        let contended = !self.try_lock(kind);
        if contended {
            self.wait(kind);
        }
        Guard {
            lock: self,
            kind,
            contended,
        }
    }

    /// One attempt; `true` when taken (or when there is no lock).
    fn try_lock(&self, kind: Option<LockKind>) -> bool {
        match kind {
            None => true,
            Some(LockKind::Spin) => self
                .spin
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok(),
            // SAFETY: as in `wait`.
            Some(LockKind::Mutex) => unsafe { libc::pthread_mutex_trylock(self.mutex.get()) == 0 },
            // SAFETY: as in `wait`.
            Some(LockKind::RwLock) => unsafe {
                libc::pthread_rwlock_trywrlock(self.rwlock.get()) == 0
            },
        }
    }

    /// Takes the lock, waiting as its kind waits.
    fn wait(&self, kind: Option<LockKind>) {
        match kind {
            None => {}
            Some(LockKind::Spin) => {
                let mut tries = 0u32;
                while self
                    .spin
                    .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    tries += 1;
                    if tries % SPINS == 0 {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
            // SAFETY: initialised by `init` (its kind was published after),
            // never moved (it lives in the shared mapping), never destroyed.
            Some(LockKind::Mutex) => unsafe {
                libc::pthread_mutex_lock(self.mutex.get());
            },
            // SAFETY: as for the mutex.
            Some(LockKind::RwLock) => unsafe {
                libc::pthread_rwlock_wrlock(self.rwlock.get());
            },
        }
    }
}

/// Held until dropped; unlocks the kind it locked.
pub struct Guard<'a> {
    lock: &'a SharedLock,
    kind: Option<LockKind>,
    contended: bool,
}

impl Guard<'_> {
    /// Whether another thread or process held the lock when it was asked
    /// for.
    pub fn contended(&self) -> bool {
        self.contended
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        match self.kind {
            None => {}
            Some(LockKind::Spin) => self.lock.spin.store(0, Ordering::Release),
            // SAFETY: this guard locked it on this thread (see `lock`).
            Some(LockKind::Mutex) => unsafe {
                libc::pthread_mutex_unlock(self.lock.mutex.get());
            },
            // SAFETY: as for the mutex.
            Some(LockKind::RwLock) => unsafe {
                libc::pthread_rwlock_unlock(self.lock.rwlock.get());
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// Four threads adding under each kind with a load and a store (not
    /// an atomic add): only mutual exclusion keeps every addition.
    #[test]
    fn every_kind_excludes() {
        for kind in [LockKind::Mutex, LockKind::Spin, LockKind::RwLock] {
            let lock = SharedLock::default();
            lock.init(kind).unwrap();
            assert_eq!(lock.kind(), Some(kind));
            let n = AtomicU64::new(0);
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| {
                        for _ in 0..20_000 {
                            let _g = lock.lock();
                            n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        }
                    });
                }
            });
            assert_eq!(n.load(Ordering::Relaxed), 80_000, "{}", kind.name());
        }
    }
}
