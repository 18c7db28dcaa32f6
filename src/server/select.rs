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

use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};

use anyhow::Context as _;

use super::accept::{accept_all, Gate};
use super::conn::Want;
use super::table::{Step, Table};
use super::{Context, Model};
use crate::sys::fdset::{self, FdSet, WORD_BITS};
use crate::sys::rlimit;

pub struct Select;

impl Model for Select {
    fn name(&self) -> &'static str {
        "select"
    }
    fn about(&self) -> &'static str {
        "one thread, select(2) over a bitmap sized past FD_SETSIZE: O(highest fd) per call"
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        Loop::new(ctx).run(&listener)
    }
}

/// The select loop's state: master sets and the connections.
struct Loop<'a> {
    ctx: &'a Context<'a>,
    read: FdSet,
    write: FdSet,
    /// One more than the highest descriptor in the master sets.
    nfds: usize,
    table: Table,
    gate: Gate,
}

impl<'a> Loop<'a> {
    fn new(ctx: &'a Context<'a>) -> Self {
        // Every descriptor this process can open is below its open-files
        // limit, so a bitmap of that size holds them all.
        let capacity = rlimit::soft_nofile();
        Loop {
            ctx,
            read: FdSet::with_capacity(capacity),
            write: FdSet::with_capacity(capacity),
            nfds: 0,
            table: Table::new(ctx.config.buffer),
            gate: Gate::default(),
        }
    }

    fn watch(&mut self, fd: RawFd, want: Want) {
        if want == Want::Write {
            self.read.remove(fd);
            self.write.insert(fd);
        } else {
            self.write.remove(fd);
            self.read.insert(fd);
        }
        self.nfds = self.nfds.max(fd as usize + 1);
    }

    fn unwatch(&mut self, fd: RawFd) {
        self.read.remove(fd);
        self.write.remove(fd);
        if fd as usize + 1 == self.nfds {
            self.nfds = highest(&self.read, &self.write, self.nfds);
        }
    }

    fn run(&mut self, listener: &TcpListener) -> anyhow::Result<()> {
        let lfd = listener.as_raw_fd();
        let sfd = self.ctx.shutdown.fd().as_raw_fd();
        self.watch(sfd, Want::Read);
        let mut ready_r = self.read.clone();
        let mut ready_w = self.write.clone();
        loop {
            if self.gate.is_open() {
                self.watch(lfd, Want::Read);
            } else {
                self.unwatch(lfd);
            }
            ready_r.copy_from(&self.read, self.nfds);
            ready_w.copy_from(&self.write, self.nfds);
            let nready =
                match fdset::select(self.nfds, &mut ready_r, &mut ready_w, self.gate.timeout()) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e).context("select"),
                };
            let mut left = nready;
            let words = self.nfds.div_ceil(WORD_BITS);
            for i in 0..words {
                if left == 0 {
                    break;
                }
                let (r, w) = (ready_r.words()[i], ready_w.words()[i]);
                if r | w == 0 {
                    continue;
                }
                left = left.saturating_sub((r.count_ones() + w.count_ones()) as usize);
                let mut bits = r | w;
                while bits != 0 {
                    let fd = (i * WORD_BITS + bits.trailing_zeros() as usize) as RawFd;
                    bits &= bits - 1;
                    if fd == sfd {
                        if self.ctx.shutdown.requested() {
                            return Ok(());
                        }
                    } else if fd == lfd {
                        self.accept(listener);
                    } else {
                        self.service(fd);
                    }
                }
            }
        }
    }

    fn accept(&mut self, listener: &TcpListener) {
        let mut fresh = Vec::new();
        accept_all(listener, self.ctx, true, &mut self.gate, |s| fresh.push(s));
        for stream in fresh {
            let fd = stream.as_raw_fd();
            if fd as usize >= self.read.capacity() {
                // Only if the limit was raised after start: cannot select it.
                self.ctx.stats.spawn_failed();
                self.ctx.stats.closed();
                continue;
            }
            self.table.insert(stream);
            self.watch(fd, Want::Read);
        }
    }

    fn service(&mut self, fd: RawFd) {
        match self.table.service(fd, self.ctx.stats) {
            Step::Closed => {
                self.unwatch(fd);
                self.gate.resume();
            }
            Step::Wait(want) => self.watch(fd, want),
        }
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
