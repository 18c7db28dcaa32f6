//! The inner loop of `c10k micro dispatch`: N socketpairs, A of them
//! readable, and one of four ways of asking the kernel which — `select`,
//! `poll`, `epoll_wait` level-triggered and edge-triggered — timed call by
//! call.
//!
//! The method is libevent's `test/bench.c` (with Davide Libenzi's chained
//! writes): the read end of every pair is watched; A pairs spread evenly
//! over the set are made readable by writing one byte; each byte read
//! triggers a one-byte write to the next pair (i + 1, wrapping), so every
//! call finds exactly A ready descriptors and the active ones walk through
//! the whole set. A call is timed on its own (a wait with a zero timeout,
//! which returns at once since the bytes are already there); then the
//! result set is scanned, the bytes read, and the next ones written, which
//! is timed as the rest of the loop.
//!
//! What each call costs the kernel: `select` and `poll` look at all N
//! descriptors (select's bitmaps are copied in and out, `nfds` bits each;
//! poll's array of N entries likewise), and the caller then scans the result
//! for the few set bits. `epoll_wait` looks only at its ready list, which a
//! write puts the pair on; level-triggered, each returned descriptor is put
//! back on the list and checked again at the next call, edge-triggered it is
//! not.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
use serde::Serialize;

use crate::sys::fdset::{self, FdSet, WORD_BITS};
use crate::sys::pollset::{self, PollFd, POLLIN};

/// The four ways of waiting, in the order the tables show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    Select,
    Poll,
    EpollLt,
    EpollEt,
}

impl Method {
    pub(crate) const ALL: [Method; 4] = [
        Method::Select,
        Method::Poll,
        Method::EpollLt,
        Method::EpollEt,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Method::Select => "select",
            Method::Poll => "poll",
            Method::EpollLt => "epoll LT",
            Method::EpollEt => "epoll ET",
        }
    }
}

/// N connected Unix stream socketpairs, non-blocking: `rx[i]` is watched,
/// `tx[i]` written to make it readable.
pub(crate) struct Pairs {
    pub rx: Vec<OwnedFd>,
    pub tx: Vec<OwnedFd>,
}

impl Pairs {
    pub fn new(n: usize) -> anyhow::Result<Pairs> {
        let mut rx = Vec::with_capacity(n);
        let mut tx = Vec::with_capacity(n);
        for i in 0..n {
            let (a, b) = socketpair(
                AddressFamily::UNIX,
                SocketType::STREAM,
                SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
                None,
            )
            .with_context(|| format!("socketpair {} of {n}", i + 1))?;
            rx.push(a);
            tx.push(b);
        }
        Ok(Pairs { rx, tx })
    }

    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// One more than the highest watched descriptor: select's `nfds`.
    pub fn nfds(&self) -> usize {
        self.rx
            .iter()
            .map(|f| f.as_raw_fd() as usize + 1)
            .max()
            .unwrap_or(0)
    }
}

/// One way of asking which pairs are readable.
trait Waiter {
    /// One call with a zero timeout; how many descriptors are ready.
    fn wait(&mut self) -> std::io::Result<usize>;
    /// Appends the pair index of each of the `nready` ready descriptors.
    fn collect(&mut self, nready: usize, ready: &mut Vec<usize>);
    /// select only: the result scanned bit by bit instead (the count found).
    fn scan_bits(&self) -> Option<usize> {
        None
    }
}

/// select over a bitmap sized past FD_SETSIZE: a master set copied into the
/// working set before each call (select overwrites its argument), the
/// result scanned a word at a time, stopping after `nready`.
struct SelectWaiter {
    master: FdSet,
    work: FdSet,
    nfds: usize,
    /// Pair index by descriptor.
    index: Vec<usize>,
}

impl SelectWaiter {
    fn new(pairs: &Pairs) -> SelectWaiter {
        let nfds = pairs.nfds();
        let mut master = FdSet::with_capacity(nfds);
        let mut index = vec![usize::MAX; nfds];
        for (i, fd) in pairs.rx.iter().enumerate() {
            let fd = fd.as_raw_fd();
            master.insert(fd);
            index[fd as usize] = i;
        }
        SelectWaiter {
            work: master.clone(),
            master,
            nfds,
            index,
        }
    }
}

impl Waiter for SelectWaiter {
    fn wait(&mut self) -> std::io::Result<usize> {
        self.work.copy_from(&self.master, self.nfds);
        fdset::select(self.nfds, &mut self.work, None, Some(Duration::ZERO))
    }

    fn collect(&mut self, nready: usize, ready: &mut Vec<usize>) {
        let words = &self.work.words()[..self.nfds.div_ceil(WORD_BITS)];
        let mut found = 0;
        for (w, &word) in words.iter().enumerate() {
            if found == nready {
                break;
            }
            let mut bits = word;
            while bits != 0 {
                let fd = w * WORD_BITS + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(&i) = self.index.get(fd) {
                    ready.push(i);
                }
                found += 1;
            }
        }
    }

    fn scan_bits(&self) -> Option<usize> {
        // The textbook loop: test every descriptor below nfds in turn.
        let mut found = 0;
        for fd in 0..self.nfds {
            if self.work.contains(fd as RawFd) {
                found += 1;
            }
        }
        Some(std::hint::black_box(found))
    }
}

/// poll over an array of N entries kept across calls (the kernel rewrites
/// only `revents`); the result scanned in order, stopping after `nready`.
struct PollWaiter {
    fds: Vec<PollFd>,
}

impl Waiter for PollWaiter {
    fn wait(&mut self) -> std::io::Result<usize> {
        pollset::poll(&mut self.fds, Some(Duration::ZERO))
    }

    fn collect(&mut self, nready: usize, ready: &mut Vec<usize>) {
        let mut found = 0;
        for (i, p) in self.fds.iter().enumerate() {
            if found == nready {
                break;
            }
            if p.revents != 0 {
                ready.push(i);
                found += 1;
            }
        }
    }
}

/// epoll with every read end registered once (pair index as its data); the
/// kernel returns only the ready ones.
struct EpollWaiter {
    ep: OwnedFd,
    events: Vec<Event>,
}

impl EpollWaiter {
    fn new(pairs: &Pairs, edge: bool, active: usize) -> anyhow::Result<EpollWaiter> {
        let ep = epoll::create(CreateFlags::CLOEXEC).context("epoll_create")?;
        let flags = if edge {
            EventFlags::IN | EventFlags::ET
        } else {
            EventFlags::IN
        };
        for (i, fd) in pairs.rx.iter().enumerate() {
            epoll::add(&ep, fd, EventData::new_u64(i as u64), flags).context("epoll_ctl ADD")?;
        }
        // Room for more than A, so a call that found too many would show.
        let room = (2 * active).max(64);
        let events = vec![
            Event {
                flags: EventFlags::empty(),
                data: EventData::new_u64(0),
            };
            room
        ];
        Ok(EpollWaiter { ep, events })
    }
}

impl Waiter for EpollWaiter {
    fn wait(&mut self) -> std::io::Result<usize> {
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        epoll::wait(&self.ep, &mut self.events[..], Some(&zero)).map_err(Into::into)
    }

    fn collect(&mut self, nready: usize, ready: &mut Vec<usize>) {
        ready.extend(self.events[..nready].iter().map(|e| e.data.u64() as usize));
    }
}

/// What one run of one cell measured.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Round {
    /// Calls timed (after the warm-up).
    pub calls: usize,
    /// Calls that returned exactly A ready descriptors, each with one byte.
    pub exact_calls: usize,
    /// Ready descriptors over all timed calls.
    pub events: usize,
    /// Bytes read over all timed calls (one per event when all is well).
    pub bytes_read: usize,
    /// Mean time of one wait call, ns.
    pub wait_ns: f64,
    /// Mean time to find the ready descriptors in the result, ns (select:
    /// a word at a time).
    pub scan_ns: f64,
    /// select only: mean time to scan the result bit by bit, ns.
    pub scan_bits_ns: Option<f64>,
    /// Mean time of a whole iteration as libevent's bench.c times it (wait,
    /// scan, read, chained write), ns; the bit-by-bit scan left out.
    pub loop_ns: f64,
}

/// The longest one cell may run: past it, the calls made so far are kept
/// and the rest are not made (the round's `calls` says how many were).
pub(crate) const CELL_BUDGET: Duration = Duration::from_secs(30);

/// Where the active pairs start and how many calls are made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walk {
    /// Readable pairs per call.
    pub active: usize,
    /// The first active pair (the others follow every N/A pairs). Each call
    /// moves them all one pair on, so a run covers `warmup + calls` places.
    pub offset: usize,
    pub warmup: usize,
    pub calls: usize,
}

/// Runs `walk.calls` timed calls (after `walk.warmup` untimed ones) of
/// `method` over `pairs` with `walk.active` of them readable, then leaves
/// every pair empty again. Stops early after [`CELL_BUDGET`].
pub(crate) fn measure(pairs: &Pairs, method: Method, walk: Walk) -> anyhow::Result<Round> {
    match method {
        Method::Select => chained(&mut SelectWaiter::new(pairs), pairs, walk),
        Method::Poll => {
            let mut w = PollWaiter {
                fds: pairs
                    .rx
                    .iter()
                    .map(|f| pollset::pollfd(f.as_raw_fd(), POLLIN))
                    .collect(),
            };
            chained(&mut w, pairs, walk)
        }
        Method::EpollLt | Method::EpollEt => {
            let mut w = EpollWaiter::new(pairs, method == Method::EpollEt, walk.active)?;
            chained(&mut w, pairs, walk)
        }
    }
}

fn write_byte(fd: &OwnedFd) -> anyhow::Result<()> {
    match rustix::io::write(fd, b"e") {
        Ok(1) => Ok(()),
        Ok(n) => anyhow::bail!("a one-byte write wrote {n}"),
        Err(e) => Err(e).context("write to a socketpair"),
    }
}

/// The chained loop of bench.c around one waiter.
fn chained<W: Waiter>(w: &mut W, pairs: &Pairs, walk: Walk) -> anyhow::Result<Round> {
    let Walk {
        active,
        offset,
        warmup,
        calls,
    } = walk;
    let n = pairs.len();
    anyhow::ensure!(
        (1..=n).contains(&active),
        "{active} active out of {n} pairs"
    );
    let space = n / active;
    let mut pending: Vec<usize> = (0..active).map(|i| (offset + i * space) % n).collect();
    for &i in &pending {
        write_byte(&pairs.tx[i])?;
    }
    let mut ready = Vec::with_capacity(n);
    let mut buf = [0u8; 16];
    let mut r = Round::default();
    let (mut wait, mut scan, mut scan_bits, mut whole) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let start = Instant::now();
    // Bounded: warmup + calls iterations, each a call with a zero timeout,
    // and CELL_BUDGET.
    for call in 0..warmup + calls {
        let t0 = Instant::now();
        let nready = w.wait().context("waiting for readiness")?;
        let t1 = Instant::now();
        ready.clear();
        w.collect(nready, &mut ready);
        let t2 = Instant::now();
        let bits = w.scan_bits();
        let t3 = Instant::now();
        let mut bytes = 0;
        for &i in &ready {
            match rustix::io::read(&pairs.rx[i], &mut buf[..]) {
                Ok(k) => bytes += k,
                Err(rustix::io::Errno::AGAIN) => {}
                Err(e) => return Err(e).context("read from a socketpair"),
            }
        }
        // Reads first, then writes: with A = N the next pair may be one just
        // read, and its new byte must wait for the next call.
        pending.clear();
        for &i in &ready {
            let next = (i + 1) % n;
            write_byte(&pairs.tx[next])?;
            pending.push(next);
        }
        let t4 = Instant::now();
        if ready.is_empty() {
            anyhow::bail!("a call found no ready descriptor: the chain of writes broke");
        }
        if call < warmup {
            continue;
        }
        r.calls += 1;
        r.events += ready.len();
        r.bytes_read += bytes;
        if nready == active && ready.len() == active && bytes == active {
            r.exact_calls += 1;
        }
        if let Some(b) = bits {
            if b != nready {
                anyhow::bail!("the bit-by-bit scan found {b} ready, select said {nready}");
            }
        }
        wait += t1 - t0;
        scan += t2 - t1;
        scan_bits += t3 - t2;
        whole += (t4 - t0) - (t3 - t2);
        if t4 - start > CELL_BUDGET {
            break;
        }
    }
    // Leave the set quiet for the next cell: read the bytes still in flight.
    for &i in &pending {
        // Bounded: each pending pair holds one byte.
        let _ = rustix::io::read(&pairs.rx[i], &mut buf[..]);
    }
    let per = |d: Duration| d.as_secs_f64() * 1e9 / r.calls.max(1) as f64;
    r.wait_ns = per(wait);
    r.scan_ns = per(scan);
    r.scan_bits_ns = w.scan_bits().map(|_| per(scan_bits));
    r.loop_ns = per(whole);
    Ok(r)
}

/// The cost of reading the clock once (`Instant::now`), ns: each timed wait
/// includes about one.
pub(crate) fn clock_ns() -> f64 {
    const READS: u32 = 10_000;
    let start = Instant::now();
    for _ in 0..READS {
        std::hint::black_box(Instant::now());
    }
    start.elapsed().as_secs_f64() * 1e9 / f64::from(READS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_finds_exactly_the_active_pairs() {
        let pairs = Pairs::new(20).expect("socketpairs");
        for method in Method::ALL {
            for active in [1, 3, 20] {
                let walk = Walk {
                    active,
                    offset: 17,
                    warmup: 5,
                    calls: 50,
                };
                let r = measure(&pairs, method, walk).expect("measure");
                assert_eq!(r.calls, 50, "{method:?}");
                assert_eq!(r.exact_calls, 50, "{method:?} A={active}");
                assert_eq!(r.events, 50 * active, "{method:?}");
                assert_eq!(r.bytes_read, 50 * active, "{method:?}");
                assert_eq!(r.scan_bits_ns.is_some(), method == Method::Select);
            }
        }
        // Everything was drained: nothing is readable now.
        let mut buf = [0u8; 4];
        for fd in &pairs.rx {
            assert_eq!(
                rustix::io::read(fd, &mut buf[..]),
                Err(rustix::io::Errno::AGAIN)
            );
        }
    }

    #[test]
    fn word_scan_agrees_with_bit_scan_past_fd_setsize() {
        let pairs = Pairs::new(2).expect("socketpairs");
        let mut w = SelectWaiter::new(&pairs);
        // Pretend select returned descriptors scattered past 1024.
        w.nfds = 3000;
        w.index = (0..3000).collect();
        w.work = FdSet::with_capacity(3000);
        for fd in [5, 63, 64, 1500, 2999] {
            w.work.insert(fd);
        }
        let mut ready = Vec::new();
        w.collect(5, &mut ready);
        assert_eq!(ready, vec![5, 63, 64, 1500, 2999]);
        assert_eq!(w.scan_bits(), Some(5));
        ready.clear();
        w.collect(2, &mut ready);
        assert_eq!(ready, vec![5, 63]);
    }
}
