//! Signal-driven I/O: a descriptor with O_ASYNC raises a signal when it
//! becomes readable or writable (the approach the C10K page describes for
//! Linux 2.4).
//!
//! [`route`] points a descriptor's signal at the calling thread
//! (`F_SETOWN_EX` with `F_OWNER_TID`), makes it a real-time signal
//! (`F_SETSIG`), which queues one entry per event carrying the descriptor
//! in `si_fd`, and turns O_ASYNC on: three `fcntl` calls per descriptor.
//! [`SignalQueue`] blocks that signal and SIGIO in the thread and reads the
//! queued entries through a `signalfd`, many per `read`. When the
//! real-time queue is full (RLIMIT_SIGPENDING, counted per user) the kernel
//! sends a plain SIGIO instead, which carries no descriptor: the caller must
//! then find what is ready some other way.
//!
//! Neither `F_SETSIG` nor `F_SETOWN_EX` is in the `libc` crate for every
//! Linux target; their values are the kernel's generic ones
//! (`include/uapi/asm-generic/fcntl.h`), the same on every architecture
//! Linux runs on.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// `F_SETSIG`: the signal an O_ASYNC descriptor raises.
const F_SETSIG: libc::c_int = 10;
/// `F_SETOWN_EX`: who receives it (a thread, a process or a group).
const F_SETOWN_EX: libc::c_int = 15;
/// `F_OWNER_TID`: the owner is one thread.
const F_OWNER_TID: libc::c_int = 0;

/// `struct f_owner_ex`.
#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// The real-time signal descriptors are routed to: the first one the C
/// library leaves free.
pub fn signal() -> libc::c_int {
    libc::SIGRTMIN()
}

/// Makes `fd` (non-blocking) raise [`signal`] at the calling thread on
/// every readiness change, with `fd` in `si_fd`.
pub fn route(fd: BorrowedFd<'_>) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    let owner = OwnerEx {
        kind: F_OWNER_TID,
        pid: rustix::thread::gettid().as_raw_nonzero().get(),
    };
    // SAFETY: F_SETOWN_EX reads one `f_owner_ex` through the pointer, which
    // points to a live value of that layout for the duration of the call.
    check(unsafe { libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) })?;
    // SAFETY: F_SETSIG takes an integer argument; no memory is passed.
    check(unsafe { libc::fcntl(fd, F_SETSIG, signal()) })?;
    set_status(fd, libc::O_NONBLOCK | libc::O_ASYNC)
}

/// Stops `fd` raising signals (it stays non-blocking). Entries already
/// queued for it stay queued.
pub fn unroute(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_status(fd.as_raw_fd(), libc::O_NONBLOCK)
}

/// Sets the file status flags of `fd` (F_SETFL replaces all of them; the
/// callers' descriptors carry no other status flag).
fn set_status(fd: RawFd, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: F_SETFL takes an integer argument; no memory is passed.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) })
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// What one queued signal said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// A routed descriptor changed readiness.
    Ready(RawFd),
    /// The real-time queue overflowed: some events were lost.
    Overflow,
}

/// Entries fetched per `read` of the signalfd.
const BATCH: usize = 256;

/// The calling thread's queue of I/O signals, read through a signalfd.
pub struct SignalQueue {
    fd: OwnedFd,
    buf: Vec<libc::signalfd_siginfo>,
}

impl SignalQueue {
    /// Blocks [`signal`] and SIGIO in the calling thread (so they queue
    /// instead of running their default action, which ends the process)
    /// and opens a non-blocking signalfd for both. Must be made on the
    /// thread that [`route`]s and reads.
    pub fn open() -> io::Result<SignalQueue> {
        // SAFETY: a zeroed sigset_t is a valid value to pass to
        // sigemptyset, which initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live sigset_t; these calls only write it.
        unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal());
            libc::sigaddset(&mut set, libc::SIGIO);
        }
        // SAFETY: `set` is initialised; in a threaded process sigprocmask
        // changes the calling thread's mask only (as pthread_sigmask).
        check(unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
        // SAFETY: -1 asks for a new signalfd for the initialised `set`.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by signalfd and is owned by no one
        // else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: signalfd_siginfo is plain integers; all zeroes is valid.
        let zero: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        Ok(SignalQueue {
            fd,
            buf: vec![zero; BATCH],
        })
    }

    /// Takes every queued entry, waiting up to `timeout` (`None`: until one
    /// comes) when none is queued, and hands each to `note`. Returns how
    /// many were taken (0 when the timeout passed).
    pub fn take(
        &mut self,
        timeout: Option<Duration>,
        mut note: impl FnMut(Note),
    ) -> io::Result<usize> {
        let mut taken = self.read(&mut note)?;
        if taken == 0 && timeout != Some(Duration::ZERO) {
            let mut p = [super::pollset::pollfd(
                self.fd.as_raw_fd(),
                super::pollset::POLLIN,
            )];
            if super::pollset::poll(&mut p, timeout)? > 0 {
                taken = self.read(&mut note)?;
            }
        }
        // More may have been queued than one read holds.
        if taken == BATCH {
            loop {
                let n = self.read(&mut note)?;
                taken += n;
                if n < BATCH {
                    break;
                }
            }
        }
        Ok(taken)
    }

    /// One non-blocking read of up to [`BATCH`] entries.
    fn read(&mut self, note: &mut impl FnMut(Note)) -> io::Result<usize> {
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: the buffer is `BATCH` live, writable signalfd_siginfo
        // values; the kernel writes whole entries into it.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr().cast(),
                self.buf.len() * size,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(0),
                _ => Err(e),
            };
        }
        let count = n as usize / size;
        for info in &self.buf[..count] {
            if info.ssi_signo == libc::SIGIO as u32 {
                note(Note::Overflow);
            } else {
                note(Note::Ready(info.ssi_fd));
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_routed_socket_queues_its_descriptor() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut q = SignalQueue::open().unwrap();
        b.set_nonblocking(true).unwrap();
        route(b.as_fd()).unwrap();
        (&a).write_all(b"x").unwrap();
        let mut notes = Vec::new();
        q.take(Some(Duration::from_secs(10)), |n| notes.push(n))
            .unwrap();
        assert!(notes.contains(&Note::Ready(b.as_raw_fd())), "{notes:?}");
        unroute(b.as_fd()).unwrap();
        notes.clear();
        (&a).write_all(b"y").unwrap();
        q.take(Some(Duration::ZERO), |n| notes.push(n)).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
    }
}
