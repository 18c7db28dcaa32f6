//! `poll`: one thread, poll(2) over an array of `pollfd`.
//!
//! How it waits: every call copies the whole array into the kernel, which
//! checks each descriptor, and back; then user space walks the array to find
//! the ready ones. A call costs O(watched connections), with no FD_SETSIZE
//! limit and no cost for gaps between descriptor numbers (unlike select).
//!
//! The array is maintained incrementally ([`PollSet`]): a connection that
//! changes interest updates its entry in place, a closed one is swapped out,
//! and nothing is rebuilt per call. The scan stops after `nready` entries.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};

use anyhow::Context as _;

use super::accept::{accept_all, Gate};
use super::conn::Want;
use super::table::{Step, Table};
use super::{Context, Model};
use crate::sys::pollset::{PollSet, POLLIN, POLLOUT};

pub struct Poll;

impl Model for Poll {
    fn name(&self) -> &'static str {
        "poll"
    }
    fn about(&self) -> &'static str {
        "one thread, poll(2) over an incrementally kept pollfd array: O(connections) per call"
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let lfd = listener.as_raw_fd();
        let sfd = ctx.shutdown.fd().as_raw_fd();
        let mut set = PollSet::default();
        let mut table = Table::new(ctx.config.buffer);
        let mut gate = Gate::default();
        set.set(sfd, POLLIN);
        loop {
            if gate.is_open() {
                set.set(lfd, POLLIN);
            } else {
                set.remove(lfd);
            }
            let n = match set.wait(gate.timeout()) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("poll"),
            };
            for (fd, _) in set.ready(n) {
                if fd == sfd {
                    if ctx.shutdown.requested() {
                        return Ok(());
                    }
                } else if fd == lfd {
                    accept_all(&listener, ctx, true, &mut gate, |s| {
                        set.set(table.insert(s), POLLIN);
                    });
                } else {
                    match table.service(fd as RawFd, ctx.stats) {
                        Step::Closed => {
                            set.remove(fd);
                            gate.resume();
                        }
                        Step::Wait(Want::Write) => set.set(fd, POLLOUT),
                        Step::Wait(_) => set.set(fd, POLLIN),
                    }
                }
            }
        }
    }
}
