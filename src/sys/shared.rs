//! Memory shared between a process and the children it forks.
//!
//! The fork and prefork models count connections and bytes in their
//! children; an anonymous `MAP_SHARED` mapping made before the fork is seen by
//! every process, so the parent's summary adds up the whole tree.

use std::io;

/// Places `T::default()` in a fresh shared anonymous mapping and returns a
/// reference that lives for the rest of the process (the mapping is never
/// unmapped). `T` must be plain data made of atomics and integers, with no
/// pointers, because children see the same bytes at the same address.
pub fn shared<T: Default + Sync + 'static>() -> io::Result<&'static T> {
    use rustix::mm::{mmap_anonymous, MapFlags, ProtFlags};
    let len = std::mem::size_of::<T>().max(1);
    // SAFETY: a fresh anonymous mapping with no address hint cannot alias any
    // existing Rust object.
    let ptr = unsafe {
        mmap_anonymous(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
        )
    }
    .map_err(io::Error::from)?
    .cast::<T>();
    // SAFETY: the mapping is page-aligned (enough for any T), at least
    // `size_of::<T>()` bytes, writable, and nothing else refers to it yet. It
    // is never unmapped, so the `'static` reference stays valid; `T: Sync`
    // makes shared access from threads sound, and atomics stay atomic across
    // processes that map the same page.
    unsafe {
        ptr.write(T::default());
        Ok(&*ptr)
    }
}
