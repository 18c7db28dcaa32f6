//! Connections of a readiness loop, in an array indexed by descriptor (as in
//! redis's `ae.c`): a lookup is an index, and the kernel hands out the lowest
//! free descriptor, so the array stays dense.

use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

use super::conn::{Conn, Reads, Want};
use super::work::Work;
use super::Stats;

/// How many reads one connection may do per wake-up before others get a turn.
pub(crate) const READ_BUDGET: usize = 16;

/// One served connection.
#[derive(Debug)]
pub struct Served {
    pub stream: TcpStream,
    pub conn: Conn,
    /// What it waits for now (Read or Write).
    pub want: Want,
}

/// What became of a connection after it was serviced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Still open; wait for this.
    Wait(Want),
    /// Closed and removed.
    Closed,
}

/// Open connections by descriptor.
#[derive(Debug)]
pub struct Table {
    slots: Vec<Option<Served>>,
    buffer: usize,
    work: Work,
}

impl Table {
    /// An empty table whose connections get `buffer`-byte buffers and
    /// do `work` per request.
    pub fn new(buffer: usize, work: &Work) -> Table {
        Table {
            slots: Vec::new(),
            buffer,
            work: work.clone(),
        }
    }

    /// Adds a connection (waiting to read) and returns its descriptor.
    pub fn insert(&mut self, stream: TcpStream) -> RawFd {
        let fd = stream.as_raw_fd();
        let i = fd as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        debug_assert!(self.slots[i].is_none());
        self.slots[i] = Some(Served {
            stream,
            conn: Conn::new(self.buffer),
            want: Want::Read,
        });
        fd
    }

    /// The connection on `fd`, if any.
    pub fn get(&self, fd: RawFd) -> Option<&Served> {
        self.slots.get(fd as usize).and_then(Option::as_ref)
    }

    /// Removes and returns the connection on `fd` (it stays open until
    /// dropped).
    pub fn take(&mut self, fd: RawFd) -> Option<Served> {
        self.slots.get_mut(fd as usize)?.take()
    }

    /// Puts back a connection taken with [`Table::take`].
    pub(crate) fn put(&mut self, slot: Served) {
        let i = slot.stream.as_raw_fd() as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(slot);
    }

    /// Echoes on `fd` as far as the socket allows; closes it when done or
    /// broken. Unknown descriptors count as closed.
    pub(crate) fn service(&mut self, fd: RawFd, reads: Reads, stats: &Stats) -> Step {
        let Some(slot) = self.slots.get_mut(fd as usize).and_then(Option::as_mut) else {
            return Step::Closed;
        };
        match service(slot, reads, stats, &self.work) {
            Step::Closed => {
                self.take(fd);
                Step::Closed
            }
            step => step,
        }
    }
}

/// Services one connection; on `Closed` the caller drops the slot (closing
/// the socket), and the close is already counted in `stats`.
pub(crate) fn service(slot: &mut Served, reads: Reads, stats: &Stats, work: &Work) -> Step {
    match slot
        .conn
        .drive(&mut slot.stream, READ_BUDGET, reads, stats, work)
    {
        Ok(Want::Done) => {
            slot.conn.release();
            stats.closed();
            Step::Closed
        }
        Ok(want) => {
            slot.want = want;
            Step::Wait(want)
        }
        Err(e) => {
            slot.conn.release();
            stats.conn_failed(&e);
            stats.closed();
            Step::Closed
        }
    }
}
