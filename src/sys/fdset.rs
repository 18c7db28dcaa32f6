//! A `select(2)` descriptor set of any size, past FD_SETSIZE (1024).
//!
//! glibc's `fd_set` is a fixed array of 1024 bits and its `FD_SET` macro
//! aborts past it, but the kernel reads exactly `nfds` bits from whatever
//! memory it is given. So the set here is a vector of machine words sized from
//! the open-files limit, and callers can read it a word at a time: a zero word
//! skips 64 descriptors in one comparison, the trick from "select(2) done
//! right".

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// One machine word of the bitmap, as the kernel lays it out.
pub(crate) type Word = libc::c_ulong;

/// Bits per word.
pub(crate) const WORD_BITS: usize = Word::BITS as usize;

/// A bitmap of descriptors `0..capacity`.
#[derive(Clone, Debug)]
pub struct FdSet {
    words: Vec<Word>,
}

impl FdSet {
    /// A set that can hold descriptors below `capacity`.
    pub fn with_capacity(capacity: usize) -> Self {
        FdSet {
            words: vec![0; capacity.div_ceil(WORD_BITS).max(1)],
        }
    }

    /// Descriptors below this number fit.
    pub(crate) fn capacity(&self) -> usize {
        self.words.len() * WORD_BITS
    }

    /// Adds `fd`; returns false when it does not fit.
    pub fn insert(&mut self, fd: RawFd) -> bool {
        let Ok(i) = usize::try_from(fd) else {
            return false;
        };
        match self.words.get_mut(i / WORD_BITS) {
            Some(w) => {
                *w |= 1 << (i % WORD_BITS);
                true
            }
            None => false,
        }
    }

    /// Removes `fd` (a no-op when absent).
    pub fn remove(&mut self, fd: RawFd) {
        if let Ok(i) = usize::try_from(fd) {
            if let Some(w) = self.words.get_mut(i / WORD_BITS) {
                *w &= !(1 << (i % WORD_BITS));
            }
        }
    }

    /// Whether `fd` is in the set.
    pub fn contains(&self, fd: RawFd) -> bool {
        usize::try_from(fd)
            .ok()
            .and_then(|i| {
                self.words
                    .get(i / WORD_BITS)
                    .map(|w| w >> (i % WORD_BITS) & 1 == 1)
            })
            .unwrap_or(false)
    }

    /// Copies `master` into this set, only the words below `nfds`.
    pub(crate) fn copy_from(&mut self, master: &FdSet, nfds: usize) {
        let n = nfds.div_ceil(WORD_BITS).min(self.words.len());
        self.words[..n].copy_from_slice(&master.words[..n]);
    }

    /// The raw words, for scanning a word at a time.
    pub fn words(&self) -> &[Word] {
        &self.words
    }
}

/// `select(nfds, read, write, NULL, timeout)`, with a NULL write set when
/// `write` is `None` (the kernel then copies and scans one bitmap, not two).
/// The sets must hold at least `nfds` bits and only descriptors the caller
/// keeps open.
pub fn select(
    nfds: usize,
    read: &mut FdSet,
    write: Option<&mut FdSet>,
    timeout: Option<Duration>,
) -> io::Result<usize> {
    assert!(nfds <= read.capacity() && write.as_ref().is_none_or(|w| nfds <= w.capacity()));
    let writep = write.map_or(std::ptr::null_mut(), |w| {
        w.words.as_mut_ptr().cast::<libc::fd_set>()
    });
    let mut tv = timeout.map(|d| libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    });
    let tvp = tv
        .as_mut()
        .map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    // SAFETY: both word vectors (or the read one, with a null write set)
    // hold at least `nfds` bits (asserted above), and the kernel reads and
    // writes only the first `nfds` bits of each;
    // `fd_set` is an array of `c_ulong` bits with the same layout as `Word`,
    // so the casts describe the memory correctly. `tvp` is null or points to
    // a live timeval.
    let n = unsafe {
        libc::select(
            nfds as libc::c_int,
            read.words.as_mut_ptr().cast::<libc::fd_set>(),
            writep,
            std::ptr::null_mut(),
            tvp,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_past_fd_setsize() {
        let mut s = FdSet::with_capacity(5000);
        assert!(s.capacity() >= 5000);
        assert!(s.insert(4097));
        assert!(s.contains(4097));
        assert!(!s.contains(4096));
        s.remove(4097);
        assert!(!s.contains(4097));
        assert!(!s.insert(s.capacity() as RawFd));
    }
}
