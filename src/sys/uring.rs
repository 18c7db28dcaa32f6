//! A safe, single-threaded io_uring for the `uring` model: one ring, one
//! provided-buffer ring, and the handful of operations an echo server needs.
//!
//! io_uring's contract is about memory, not descriptors: every buffer an
//! operation points at must stay valid and untouched until the kernel posts
//! the operation's last completion (CQE). This module keeps that promise by
//! owning such memory itself:
//!
//! - a send takes its `Vec<u8>` by value and hands it back in the completion;
//! - a timeout keeps its `timespec` until it fires;
//! - received data lands in a pool of buffers registered with
//!   `IORING_REGISTER_PBUF_RING`; a completion lends one of them to the
//!   caller (as a `&[u8]` borrowed from the ring) and the ring returns it to
//!   the kernel at the next [`Ring::submit_and_wait`], which needs `&mut`, so
//!   no borrow can outlive the loan;
//! - an accepted descriptor becomes an `OwnedFd` at once, so it is closed
//!   exactly once whatever the caller does with the completion;
//! - dropping the ring cancels everything in flight and waits for the kernel
//!   to let go; memory the kernel might still touch is leaked, never freed.
//!
//! Operations are identified to the kernel by an internal token (slot index
//! and generation), so a stale [`OpId`] can never cancel a newer operation
//! that reuses the slot; callers get their own `user_data` back.
//!
//! The ring is set up with `SINGLE_ISSUER | DEFER_TASKRUN` (Linux 6.1): the
//! kernel runs completion work only when this thread enters the ring to
//! wait, never by interrupting it, so completions arrive in batches at a
//! point the loop chose. It must therefore be used by the thread that made it
//! (it is neither `Send` nor `Sync`).

use std::collections::VecDeque;
use std::io;
use std::mem;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::types::{CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring, Probe};
use rustix::mm::{MapFlags, ProtFlags};

/// The buffer group id of the one provided-buffer ring.
const GROUP: u16 = 0;
/// The token of cancel requests, whose completions the ring swallows.
const CANCEL: u64 = u64::MAX;
/// How long dropping a ring waits for the kernel to finish cancelled work.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// A submitted operation, for cancelling it. Stale ids cancel nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpId(u64);

/// The memory an operation in flight owns.
#[derive(Debug)]
enum Kind {
    Accept,
    Recv,
    Send(Vec<u8>),
    Poll,
    /// Kept for the kernel (which reads it at submission), never read here.
    Timeout(#[allow(dead_code)] Box<Timespec>),
}

#[derive(Debug)]
struct Slot {
    gen: u32,
    op: Option<(u64, Kind)>,
}

/// What a completion carries besides its result.
#[derive(Debug)]
enum Payload {
    None,
    Fd(OwnedFd),
    Buffer(u16),
    Sent(Vec<u8>),
}

/// One completion (CQE), decoded.
#[derive(Debug)]
pub struct Completion {
    /// The caller's `user_data` of the operation.
    pub user_data: u64,
    /// The kernel's result: bytes, a descriptor, or `-errno`.
    pub result: i32,
    /// Whether the (multishot) operation stays armed and will complete again.
    pub more: bool,
    /// A receive left more data queued in the socket
    /// (`IORING_CQE_F_SOCK_NONEMPTY`).
    pub nonempty: bool,
    payload: Payload,
    epoch: u64,
}

impl Completion {
    /// The descriptor an accept produced (once).
    pub(crate) fn take_fd(&mut self) -> Option<OwnedFd> {
        match mem::replace(&mut self.payload, Payload::None) {
            Payload::Fd(fd) => Some(fd),
            other => {
                self.payload = other;
                None
            }
        }
    }

    /// The buffer of a finished send, given back (once).
    pub(crate) fn take_sent(&mut self) -> Option<Vec<u8>> {
        match mem::replace(&mut self.payload, Payload::None) {
            Payload::Sent(buf) => Some(buf),
            other => {
                self.payload = other;
                None
            }
        }
    }

    /// The error, when the result is negative.
    pub fn error(&self) -> Option<io::Error> {
        (self.result < 0).then(|| io::Error::from_raw_os_error(-self.result))
    }
}

/// An anonymous private mapping: page-aligned, zeroed, with an address that
/// never moves, as the kernel needs for memory it keeps a pointer to.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping at an address the kernel picks
        // aliases no existing memory.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we mapped exactly this range and nothing refers to it any
        // more: the owner drops it only once the kernel has let go.
        unsafe {
            let _ = rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// `struct io_uring_buf`: one slot of the provided-buffer ring. The kernel
/// reads the ring's tail from `resv` of slot 0.
#[repr(C)]
struct RawBuf {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

/// The provided-buffer ring (the kernel consumes from its head, we publish
/// at its tail) and the pool of buffers its slots point into.
#[derive(Debug)]
struct BufRing {
    ring: Mapping,
    pool: Mapping,
    entries: u16,
    size: u32,
    /// Our tail: slots before it are published or about to be.
    tail: u16,
}

impl BufRing {
    fn new(entries: u16, size: u32) -> io::Result<BufRing> {
        let ring = Mapping::new(entries as usize * mem::size_of::<RawBuf>())?;
        let pool = Mapping::new(entries as usize * size as usize)?;
        Ok(BufRing {
            ring,
            pool,
            entries,
            size,
            tail: 0,
        })
    }

    /// Puts buffer `bid` in the next free slot (published by [`Self::publish`]).
    fn push(&mut self, bid: u16) {
        let slot = (self.tail & (self.entries - 1)) as usize;
        let addr = self.pool.ptr.as_ptr() as u64 + bid as u64 * self.size as u64;
        // SAFETY: `slot < entries`, so the pointer is inside the ring mapping.
        // The kernel reads only slots between its head and the published
        // tail; this one is past the tail (each buffer id is in the ring at
        // most once, so at most `entries` are ever published), so nothing
        // reads it while we write. The fields are written through raw
        // pointers so the `resv` of slot 0, which the kernel reads as the
        // tail, is never covered by a Rust reference.
        unsafe {
            let e = self.ring.ptr.as_ptr().cast::<RawBuf>().add(slot);
            ptr::addr_of_mut!((*e).addr).write(addr);
            ptr::addr_of_mut!((*e).len).write(self.size);
            ptr::addr_of_mut!((*e).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the pushed slots visible to the kernel.
    fn publish(&self) {
        // SAFETY: offset 14 is `resv` of slot 0 (`addr` 8 + `len` 4 + `bid`
        // 2), 2-byte aligned inside the mapping; the kernel reads it with an
        // acquire load and only we write it, always atomically.
        let tail = unsafe {
            AtomicU16::from_ptr(
                self.ring
                    .ptr
                    .as_ptr()
                    .add(mem::offset_of!(RawBuf, resv))
                    .cast(),
            )
        };
        // Release: the slot contents above are visible before the new tail.
        tail.store(self.tail, Ordering::Release);
    }

    /// The first `len` bytes of buffer `bid`.
    ///
    /// # Safety
    ///
    /// The kernel must have handed buffer `bid` to us (a completion named it)
    /// and not have been given it back since, for as long as the slice lives.
    unsafe fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let bid = bid.min(self.entries - 1) as usize;
        let len = len.min(self.size as usize);
        // SAFETY: the range is inside the pool mapping (clamped above), and
        // by the caller's promise the kernel is not writing to it.
        unsafe {
            std::slice::from_raw_parts(self.pool.ptr.as_ptr().add(bid * self.size as usize), len)
        }
    }
}

/// Sizes of a ring.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Submission queue entries.
    pub sq: u32,
    /// Completion queue entries (at least `sq`).
    pub cq: u32,
    /// Buffers in the provided-buffer ring (a power of two, at most 32768).
    pub bufs: u16,
    /// Bytes per buffer.
    pub buf_size: u32,
}

/// An io_uring with a provided-buffer ring; see the module docs.
pub(crate) struct Ring {
    ring: IoUring,
    bufs: Option<BufRing>,
    ops: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    cancels: usize,
    /// Submissions that did not fit in the submission queue yet.
    backlog: VecDeque<squeue::Entry>,
    /// Buffers lent out by completions since the last submit.
    lent: Vec<u16>,
    epoch: u64,
}

impl Ring {
    /// Sets up a ring and registers a buffer ring of `sizes.bufs` buffers.
    pub fn new(sizes: Sizes) -> io::Result<Ring> {
        if !sizes.bufs.is_power_of_two() || sizes.bufs > 32768 || sizes.buf_size == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "buffer ring: entries must be a power of two up to 32768, buffers non-empty",
            ));
        }
        let ring = IoUring::builder()
            .setup_cqsize(sizes.cq.max(sizes.sq))
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(sizes.sq)
            .map_err(|e| context(e, "io_uring_setup"))?;
        if !ring.params().is_feature_nodrop() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring lacks IORING_FEAT_NODROP (Linux 5.5): completions could be lost",
            ));
        }
        let mut bufs = BufRing::new(sizes.bufs, sizes.buf_size)?;
        // SAFETY: the ring memory is a page-aligned mapping of `bufs` slots
        // owned by this `Ring`; it stays mapped until the group is
        // unregistered in `Drop` (or is leaked if that fails).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                bufs.ring.ptr.as_ptr() as u64,
                sizes.bufs,
                GROUP,
                0,
            )
        }
        .map_err(|e| context(e, "IORING_REGISTER_PBUF_RING"))?;
        for bid in 0..sizes.bufs {
            bufs.push(bid);
        }
        bufs.publish();
        Ok(Ring {
            ring,
            bufs: Some(bufs),
            ops: Vec::new(),
            free: Vec::new(),
            live: 0,
            cancels: 0,
            backlog: VecDeque::new(),
            lent: Vec::new(),
            epoch: 0,
        })
    }

    /// Operations submitted whose last completion has not been seen.
    pub(crate) fn in_flight(&self) -> usize {
        self.live + self.cancels
    }

    /// Multishot accept on `listener`: one completion per connection (close
    /// on exec), until an error ends it (`more == false`).
    pub(crate) fn accept_multi(&mut self, listener: BorrowedFd, user_data: u64) -> OpId {
        let e = opcode::AcceptMulti::new(Fd(listener.as_raw_fd()))
            .flags(libc::SOCK_CLOEXEC)
            .build();
        self.start(e, user_data, Kind::Accept)
    }

    /// Multishot receive on `fd` into buffers of the buffer ring: one
    /// completion per chunk, until EOF (result 0), an error, a cancel, or
    /// `-ENOBUFS` when the ring ran dry, each of which ends it.
    pub(crate) fn recv_multi(&mut self, fd: BorrowedFd, user_data: u64) -> OpId {
        let e = opcode::RecvMulti::new(Fd(fd.as_raw_fd()), GROUP).build();
        self.start(e, user_data, Kind::Recv)
    }

    /// One receive on `fd` into one buffer of the buffer ring (at most one
    /// buffer's worth of data); `-ENOBUFS` when the ring is dry.
    pub(crate) fn recv_once(&mut self, fd: BorrowedFd, user_data: u64) -> OpId {
        let e = opcode::Recv::new(Fd(fd.as_raw_fd()), ptr::null_mut(), 0)
            .buf_group(GROUP)
            .build()
            .flags(squeue::Flags::BUFFER_SELECT);
        self.start(e, user_data, Kind::Recv)
    }

    /// Sends `buf[start..]` on `fd` (possibly partially); the completion
    /// gives `buf` back through [`Completion::take_sent`].
    pub fn send(&mut self, fd: BorrowedFd, buf: Vec<u8>, start: usize, user_data: u64) -> OpId {
        let start = start.min(buf.len());
        let len = (buf.len() - start).min(u32::MAX as usize) as u32;
        // The pointer is into the Vec's heap block, which does not move when
        // the Vec itself is moved into the slot below.
        let p = buf[start..].as_ptr();
        let e = opcode::Send::new(Fd(fd.as_raw_fd()), p, len)
            .flags(libc::MSG_NOSIGNAL)
            .build();
        self.start(e, user_data, Kind::Send(buf))
    }

    /// One-shot poll for readability of `fd`.
    pub(crate) fn poll_readable(&mut self, fd: BorrowedFd, user_data: u64) -> OpId {
        let e = opcode::PollAdd::new(Fd(fd.as_raw_fd()), libc::POLLIN as u32).build();
        self.start(e, user_data, Kind::Poll)
    }

    /// A completion after `after` (result `-ETIME`).
    pub fn timeout(&mut self, after: Duration, user_data: u64) -> OpId {
        let ts = Box::new(
            Timespec::new()
                .sec(after.as_secs())
                .nsec(after.subsec_nanos()),
        );
        let e = opcode::Timeout::new(&*ts as *const Timespec).build();
        self.start(e, user_data, Kind::Timeout(ts))
    }

    /// Asks the kernel to cancel `op`; it then completes with `-ECANCELED`
    /// (unless it finished first). Harmless when `op` already finished.
    pub(crate) fn cancel(&mut self, op: OpId) {
        let e = opcode::AsyncCancel::new(op.0).build().user_data(CANCEL);
        self.cancels += 1;
        self.push(e);
    }

    /// Cancels every operation on descriptor `fd`.
    pub(crate) fn cancel_fd(&mut self, fd: BorrowedFd) {
        let e = opcode::AsyncCancel2::new(CancelBuilder::fd(Fd(fd.as_raw_fd())).all())
            .build()
            .user_data(CANCEL);
        self.cancels += 1;
        self.push(e);
    }

    /// Returns the buffers lent since the last call to the kernel, submits
    /// everything queued, and waits until at least `want` completions are
    /// ready. An interrupted or busy wait returns early; callers loop.
    pub(crate) fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        self.recycle();
        while let Some(e) = self.backlog.front() {
            // SAFETY: see `push`: the entry's memory is owned by its slot.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                self.backlog.pop_front();
                continue;
            }
            match self.ring.submit() {
                Ok(_) => {}
                Err(e) if transient(&e) => return Ok(()),
                Err(e) => return Err(context(e, "io_uring_enter")),
            }
        }
        match self.ring.submit_and_wait(want) {
            Ok(_) => Ok(()),
            Err(e) if transient(&e) => Ok(()),
            Err(e) => Err(context(e, "io_uring_enter")),
        }
    }

    /// Moves every ready completion into `out`.
    pub(crate) fn complete(&mut self, out: &mut Vec<Completion>) {
        let epoch = self.epoch;
        for cqe in self.ring.completion() {
            let (token, result, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            let buffer = cqueue::buffer_select(flags);
            if let Some(bid) = buffer {
                self.lent.push(bid);
            }
            if token == CANCEL {
                self.cancels = self.cancels.saturating_sub(1);
                continue;
            }
            let index = token as u32 as usize;
            let more = cqueue::more(flags);
            let Some(slot) = self.ops.get_mut(index) else {
                continue;
            };
            let (user_data, accept) = match &slot.op {
                Some((u, k)) if slot.gen == (token >> 32) as u32 => (*u, matches!(k, Kind::Accept)),
                _ => continue,
            };
            let finished = if more {
                None
            } else {
                slot.op.take().map(|(_, k)| k)
            };
            let payload = if accept && result >= 0 {
                // SAFETY: an accept's non-negative result is a descriptor
                // the kernel just installed for us; nothing else owns it.
                Payload::Fd(unsafe { OwnedFd::from_raw_fd(result) })
            } else if let Some(Kind::Send(buf)) = finished {
                Payload::Sent(buf)
            } else if let Some(bid) = buffer {
                Payload::Buffer(bid)
            } else {
                Payload::None
            };
            if !more {
                let slot = &mut self.ops[index];
                slot.gen = slot.gen.wrapping_add(1);
                self.free.push(index as u32);
                self.live -= 1;
            }
            out.push(Completion {
                user_data,
                result,
                more,
                nonempty: cqueue::sock_nonempty(flags),
                payload,
                epoch,
            });
        }
    }

    /// The received bytes of a completion from this batch (`None` when it
    /// carries none, or is from an earlier batch whose buffers went back).
    pub fn data(&self, c: &Completion) -> Option<&[u8]> {
        let (Payload::Buffer(bid), Some(bufs)) = (&c.payload, &self.bufs) else {
            return None;
        };
        if c.epoch != self.epoch || c.result <= 0 {
            return None;
        }
        // SAFETY: the completion named buffer `bid`, so the kernel handed it
        // over, and it is given back only by `recycle`, called from
        // `submit_and_wait` (which needs `&mut self` and so cannot run while
        // the returned slice, borrowed from `&self`, lives) and which moves
        // to a new epoch, so a completion from before it gets `None` above.
        Some(unsafe { bufs.bytes(*bid, c.result as usize) })
    }

    /// Gives the lent buffers back to the kernel.
    fn recycle(&mut self) {
        self.epoch += 1;
        if let Some(bufs) = &mut self.bufs {
            if !self.lent.is_empty() {
                for bid in self.lent.drain(..) {
                    bufs.push(bid);
                }
                bufs.publish();
            }
        }
    }

    fn start(&mut self, entry: squeue::Entry, user_data: u64, kind: Kind) -> OpId {
        let index = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.ops.push(Slot { gen: 0, op: None });
                self.ops.len() - 1
            }
        };
        let slot = &mut self.ops[index];
        slot.op = Some((user_data, kind));
        self.live += 1;
        let token = (slot.gen as u64) << 32 | index as u64;
        self.push(entry.user_data(token));
        OpId(token)
    }

    fn push(&mut self, entry: squeue::Entry) {
        if self.backlog.is_empty() {
            // SAFETY: every pointer in the entry refers to memory owned by
            // its operation's slot (a send's Vec, a timeout's Timespec) or
            // by the registered buffer ring, all of which stay valid until
            // the operation's last completion.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
        }
        self.backlog.push_back(entry);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.in_flight() > 0 {
            let e = opcode::AsyncCancel2::new(CancelBuilder::any())
                .build()
                .user_data(CANCEL);
            self.cancels += 1;
            self.push(e);
            let deadline = Instant::now() + DRAIN_LIMIT;
            let ts = Timespec::new().nsec(50_000_000);
            let mut scratch = Vec::new();
            while self.in_flight() > 0 && Instant::now() < deadline {
                self.recycle();
                while let Some(e) = self.backlog.pop_front() {
                    // SAFETY: as in `push`.
                    if unsafe { self.ring.submission().push(&e) }.is_err() {
                        self.backlog.push_front(e);
                        break;
                    }
                }
                let args = SubmitArgs::new().timespec(&ts);
                let _ = self.ring.submitter().submit_with_args(1, &args);
                self.complete(&mut scratch);
                scratch.clear();
            }
        }
        let unregistered = self.ring.submitter().unregister_buf_ring(GROUP).is_ok();
        if self.in_flight() > 0 || !unregistered {
            // The kernel may still write into the pool or read a send's
            // buffer: leak them rather than free memory it could touch.
            mem::forget(self.bufs.take());
            mem::forget(mem::take(&mut self.ops));
        }
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY | libc::ETIME)
    )
}

fn context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Checks that this kernel runs everything the `uring` model relies on, by
/// doing it once on loopback: ring setup with the flags used, the opcodes
/// (probe), a registered buffer ring, a multishot accept, a multishot
/// receive into the buffer ring, and a send. The reason when not.
pub(crate) fn probe() -> Result<(), String> {
    let mut ring = Ring::new(Sizes {
        sq: 8,
        cq: 16,
        bufs: 4,
        buf_size: 64,
    })
    .map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied => format!(
            "{e} (io_uring is disabled: see sysctl kernel.io_uring_disabled, \
             or a seccomp or container policy blocks it)"
        ),
        io::ErrorKind::Unsupported => format!("{e} (this kernel lacks io_uring support)"),
        io::ErrorKind::InvalidInput => format!("{e} (Linux 6.1 or later is needed)"),
        _ => e.to_string(),
    })?;
    let mut opcodes = Probe::new();
    ring.ring
        .submitter()
        .register_probe(&mut opcodes)
        .map_err(|e| format!("IORING_REGISTER_PROBE: {e}"))?;
    for (code, name) in [
        (opcode::AcceptMulti::CODE, "ACCEPT"),
        (opcode::RecvMulti::CODE, "RECV"),
        (opcode::Send::CODE, "SEND"),
        (opcode::PollAdd::CODE, "POLL_ADD"),
        (opcode::Timeout::CODE, "TIMEOUT"),
        (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    ] {
        if !opcodes.is_supported(code) {
            return Err(format!("io_uring lacks IORING_OP_{name}"));
        }
    }
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("probe listener: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // The server's listeners are non-blocking: probe the same.
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("probe listener: {e}"))?;
    ring.accept_multi(listener.as_fd(), 1);
    ring.timeout(Duration::from_secs(2), 0);
    let mut client = TcpStream::connect(addr).map_err(|e| format!("probe connect: {e}"))?;
    let mut c = wait_for(&mut ring, 1)?;
    let server = match c.take_fd() {
        Some(fd) if c.more => fd,
        Some(_) => return Err("multishot accept ended after one connection".into()),
        None => {
            return Err(format!(
                "multishot accept (Linux 5.19+) failed: {}",
                c.error().map_or("no descriptor".into(), |e| e.to_string())
            ))
        }
    };
    use std::io::{Read, Write};
    client
        .write_all(b"probe")
        .map_err(|e| format!("probe write: {e}"))?;
    let server_fd = server.as_fd();
    ring.recv_multi(server_fd, 2);
    let c = wait_for(&mut ring, 2)?;
    if c.result < 0 {
        return Err(format!(
            "multishot recv with a buffer ring (Linux 6.0+) failed: {}",
            io::Error::from_raw_os_error(-c.result)
        ));
    }
    if !c.more || ring.data(&c) != Some(&b"probe"[..]) {
        return Err("multishot recv did not deliver into the buffer ring".into());
    }
    ring.send(server_fd, b"ok".to_vec(), 0, 3);
    let c = wait_for(&mut ring, 3)?;
    if c.result != 2 {
        return Err(format!("send returned {}", c.result));
    }
    let mut back = [0u8; 2];
    client
        .read_exact(&mut back)
        .map_err(|e| format!("probe read: {e}"))?;
    Ok(())
}

/// Waits (bounded by the probe's timeout op, user_data 0) for the
/// completion with `user_data`.
fn wait_for(ring: &mut Ring, user_data: u64) -> Result<Completion, String> {
    let mut out = Vec::new();
    for _ in 0..64 {
        ring.submit_and_wait(1)
            .map_err(|e| format!("io_uring_enter: {e}"))?;
        ring.complete(&mut out);
        if let Some(i) = out.iter().position(|c| c.user_data == user_data) {
            return Ok(out.swap_remove(i));
        }
        if out.iter().any(|c| c.user_data == 0) {
            return Err("io_uring probe timed out".into());
        }
        out.clear();
    }
    Err("io_uring probe got no completion".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    /// A small ring, or `None` (the test is skipped) where io_uring is not
    /// available at all.
    fn ring(bufs: u16, buf_size: u32) -> Option<Ring> {
        match Ring::new(Sizes {
            sq: 8,
            cq: 64,
            bufs,
            buf_size,
        }) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("skipped: no io_uring here: {e}");
                None
            }
        }
    }

    #[test]
    fn probe_passes_where_a_ring_can_be_made() {
        if ring(2, 4).is_some() {
            assert_eq!(probe(), Ok(()));
        } else {
            assert!(probe().is_err());
        }
    }

    #[test]
    fn buffers_of_an_old_batch_are_not_readable() {
        let Some(mut ring) = ring(2, 16) else {
            return;
        };
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(b"abc").unwrap();
        ring.recv_multi(b.as_fd(), 1);
        let mut out = Vec::new();
        while out.is_empty() {
            ring.submit_and_wait(1).unwrap();
            ring.complete(&mut out);
        }
        assert_eq!(ring.data(&out[0]), Some(&b"abc"[..]));
        // The next submit gives the buffer back to the kernel.
        ring.submit_and_wait(0).unwrap();
        assert_eq!(ring.data(&out[0]), None);
    }

    #[test]
    fn enobufs_loses_nothing() {
        let Some(mut ring) = ring(2, 4) else {
            return;
        };
        let (mut a, b) = UnixStream::pair().unwrap();
        let data: Vec<u8> = (0..100u8).collect();
        a.write_all(&data).unwrap();
        let mut got = Vec::new();
        let mut out = Vec::new();
        ring.recv_multi(b.as_fd(), 7);
        for _ in 0..200 {
            ring.submit_and_wait(1).unwrap();
            ring.complete(&mut out);
            let mut rearm = false;
            for c in out.drain(..) {
                if let Some(d) = ring.data(&c) {
                    got.extend_from_slice(d);
                }
                if !c.more {
                    rearm = true;
                }
            }
            if got.len() == data.len() {
                break;
            }
            if rearm {
                ring.recv_multi(b.as_fd(), 7);
            }
        }
        assert_eq!(got, data);
    }
}
