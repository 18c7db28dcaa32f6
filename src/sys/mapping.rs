//! A large resident set on demand: an anonymous private mapping with every
//! page written, kept in small (4 KiB) pages.
//!
//! `fork` copies the page tables of every private mapping that has pages, so
//! a parent's resident set makes each fork slower. Transparent huge pages
//! would map 2 MiB per entry and hide most of that cost, so the mapping asks
//! for none (`MADV_NOHUGEPAGE`): one page-table entry per 4 KiB, as a server
//! heap of many small allocations has.

use std::io;

use rustix::mm::{madvise, mmap_anonymous, munmap, Advice, MapFlags, ProtFlags};

/// A private anonymous mapping whose pages are all resident; unmapped on
/// drop.
#[derive(Debug)]
pub(crate) struct Touched {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

impl Touched {
    /// Maps `len` bytes, asks for no huge pages and writes one byte in every
    /// page, so each is faulted in and has a page-table entry of its own.
    pub fn new(len: usize) -> io::Result<Touched> {
        let len = len.max(1);
        // SAFETY: a fresh anonymous mapping with no address hint cannot alias
        // any existing Rust object.
        let ptr = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(io::Error::from)?;
        let mapping = Touched { ptr, len };
        // SAFETY: `ptr..ptr+len` is the mapping just made, owned by `mapping`.
        // A kernel without transparent huge pages refuses the advice with
        // EINVAL; its pages are small anyway, so that is not an error.
        match unsafe { madvise(ptr, len, Advice::LinuxNoHugepage) } {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
        let page = rustix::param::page_size();
        // SAFETY: the mapping is `len` bytes, readable and writable, and no
        // other reference to it exists; the slice lives only in this block.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) };
        for i in (0..len).step_by(page) {
            bytes[i] = 1;
        }
        std::hint::black_box(&*bytes);
        Ok(mapping)
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Touched {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` describe the mapping made in `new`, which
        // no reference outlives (none is ever handed out).
        let _ = unsafe { munmap(self.ptr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn maps_and_touches() {
        let m = super::Touched::new(1 << 20).expect("mmap 1 MiB");
        assert_eq!(m.len(), 1 << 20);
    }
}
