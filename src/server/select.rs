//! `select`: one thread, select(2) over a bitmap, done right.
//!
//! How it waits: every call hands the kernel a bitmap of all watched
//! descriptors up to the highest one, and the kernel checks each of them and
//! rewrites the bitmap, so a call costs O(highest fd) in the kernel and again
//! in user space to find what is ready. That is the price this model pays as
//! connections grow, and the reason epoll exists.
//!
//! The well-known pitfalls, avoided as "select(2) done right" describes:
//! - FD_SETSIZE (1024) is glibc's size, not the kernel's: the bitmap here is
//!   sized from the open-files limit, so descriptors past 1024 work.
//! - The kernel overwrites the sets, so master sets are kept and copied into
//!   working sets before each call (only the words below `nfds`).
//! - The result is scanned a machine word at a time (a zero word skips 64
//!   descriptors) and the scan stops once `nready` events were found.
//! - The listener is accepted until EAGAIN, so one wake-up drains a burst.
//! - The write set is passed only while some connection waits to write (its
//!   peer is slow to read); otherwise it is NULL, as in the plain C loop, so
//!   the kernel copies and scans one bitmap per call, not two.
//!
//! The loop around the wait is the shared [`reactor`](super::reactor); this
//! file is only the waiter.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use super::reactor::{Inline, Interest, Reactor, Waiter};
use super::{Context, Model};
use crate::sys::fdset::{self, FdSet, WORD_BITS};
use crate::sys::rlimit;

pub(crate) struct Select;

impl Model for Select {
    fn readiness(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "select"
    }
    fn about(&self) -> &'static str {
        "one thread, select(2) over a bitmap sized past FD_SETSIZE: O(highest fd) per call"
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let mut reactor = Reactor::new(ctx, SelectWaiter::new(), Inline)?.listen(&listener, false);
        ctx.ready();
        reactor.run()
    }
}

/// Master sets, the working sets the kernel rewrites, and `nfds`.
pub(crate) struct SelectWaiter {
    read: FdSet,
    write: FdSet,
    ready_r: FdSet,
    ready_w: FdSet,
    /// One more than the highest descriptor in the master sets.
    nfds: usize,
    /// Descriptors in the write set: none (the usual case, every peer
    /// reading) passes a NULL write set, as the plain C loop does.
    writers: usize,
}

impl SelectWaiter {
    pub fn new() -> Self {
        // Every descriptor this process can open is below its open-files
        // limit, so a bitmap of that size holds them all.
        let set = FdSet::with_capacity(rlimit::soft_nofile());
        SelectWaiter {
            read: set.clone(),
            write: set.clone(),
            ready_r: set.clone(),
            ready_w: set,
            nfds: 0,
            writers: 0,
        }
    }

    fn set(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let was = self.write.contains(fd);
        let (on, off) = match interest {
            Interest::Read => (&mut self.read, &mut self.write),
            Interest::Write => (&mut self.write, &mut self.read),
        };
        off.remove(fd);
        if !on.insert(fd) {
            // Only if the limit was raised after start.
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("descriptor {fd} is past the select bitmap"),
            ));
        }
        self.writers = self.writers + usize::from(interest == Interest::Write) - usize::from(was);
        self.nfds = self.nfds.max(fd as usize + 1);
        Ok(())
    }

    fn remove(&mut self, fd: RawFd) {
        self.writers -= usize::from(self.write.contains(fd));
        self.read.remove(fd);
        self.write.remove(fd);
        if fd as usize + 1 == self.nfds {
            self.nfds = highest(&self.read, &self.write, self.nfds);
        }
    }
}

impl Waiter for SelectWaiter {
    const CALL: &'static str = "select";

    fn watch_source(&mut self, fd: BorrowedFd<'_>, _exclusive: bool) -> io::Result<()> {
        self.set(fd.as_raw_fd(), Interest::Read)
    }

    fn watch(&mut self, fd: BorrowedFd<'_>, interest: Interest) -> io::Result<()> {
        self.set(fd.as_raw_fd(), interest)
    }

    fn change(&mut self, fd: BorrowedFd<'_>, to: Interest) -> io::Result<()> {
        self.set(fd.as_raw_fd(), to)
    }

    fn unwatch(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.remove(fd.as_raw_fd());
        Ok(())
    }

    fn forget(&mut self, fd: RawFd) {
        self.remove(fd);
    }

    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<RawFd>) -> io::Result<()> {
        self.ready_r.copy_from(&self.read, self.nfds);
        let writes = self.writers > 0;
        let write = if writes {
            self.ready_w.copy_from(&self.write, self.nfds);
            Some(&mut self.ready_w)
        } else {
            None
        };
        let nready = fdset::select(self.nfds, &mut self.ready_r, write, timeout)?;
        let mut left = nready;
        for i in 0..self.nfds.div_ceil(WORD_BITS) {
            if left == 0 {
                break;
            }
            let r = self.ready_r.words()[i];
            let w = if writes { self.ready_w.words()[i] } else { 0 };
            let mut bits = r | w;
            if bits == 0 {
                continue;
            }
            left = left.saturating_sub((r.count_ones() + w.count_ones()) as usize);
            while bits != 0 {
                ready.push((i * WORD_BITS + bits.trailing_zeros() as usize) as RawFd);
                bits &= bits - 1;
            }
        }
        Ok(())
    }
}

/// One more than the highest descriptor in either set below `nfds`, found by
/// scanning down a word at a time.
fn highest(a: &FdSet, b: &FdSet, nfds: usize) -> usize {
    let words = nfds.div_ceil(WORD_BITS);
    (0..words)
        .rev()
        .find_map(|i| {
            let w = a.words()[i] | b.words()[i];
            (w != 0).then(|| i * WORD_BITS + (WORD_BITS - w.leading_zeros() as usize))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    use super::*;

    fn ready(w: &mut SelectWaiter) -> Vec<RawFd> {
        let mut out = Vec::new();
        w.wait(Some(Duration::ZERO), &mut out).unwrap();
        out
    }

    #[test]
    fn the_write_set_is_passed_only_while_a_descriptor_waits_to_write() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        let mut w = SelectWaiter::new();
        w.watch(a.as_fd(), Interest::Write).unwrap();
        assert_eq!(w.writers, 1);
        assert_eq!(ready(&mut w), vec![fd], "an empty socket is writable");
        // Watched for reading again: no write set, and nothing to read.
        w.change(a.as_fd(), Interest::Read).unwrap();
        assert_eq!(w.writers, 0);
        assert_eq!(ready(&mut w), Vec::<RawFd>::new());
        b.write_all(b"x").unwrap();
        assert_eq!(ready(&mut w), vec![fd]);
        // Watching for writing twice counts once; unwatching clears it.
        w.change(a.as_fd(), Interest::Write).unwrap();
        w.change(a.as_fd(), Interest::Write).unwrap();
        assert_eq!(w.writers, 1);
        w.unwatch(a.as_fd()).unwrap();
        assert_eq!((w.writers, w.nfds), (0, 0));
    }
}
