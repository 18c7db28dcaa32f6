//! Memory shared between a process and the children it forks.
//!
//! The fork and prefork models count connections and bytes in their
//! children; an anonymous `MAP_SHARED` mapping made before the fork is seen by
//! every process, so the parent's summary adds up the whole tree. The herd's
//! workers count in a shared slice of slots, one per worker.

use std::io;

/// Places `T::default()` in a fresh shared anonymous mapping and returns a
/// reference that lives for the rest of the process (the mapping is never
/// unmapped). `T` must be plain data made of atomics and integers, with no
/// pointers, because children see the same bytes at the same address.
pub fn shared<T: Default + Sync + 'static>() -> io::Result<&'static T> {
    Ok(&shared_slice::<T>(1)?[0])
}

/// Places `n` values of `T::default()` in a fresh shared anonymous mapping,
/// written one by one (no temporary of the whole slice on the stack, which
/// for the herd's 16,384 slots would be half a MiB), and returns them for
/// the rest of the process. The same rules on `T` as [`shared`].
pub fn shared_slice<T: Default + Sync + 'static>(n: usize) -> io::Result<&'static [T]> {
    use rustix::mm::{mmap_anonymous, MapFlags, ProtFlags};
    let size = std::mem::size_of::<T>()
        .checked_mul(n)
        .ok_or_else(|| io::Error::other("shared slice too large"))?;
    // SAFETY: a fresh anonymous mapping with no address hint cannot alias any
    // existing Rust object.
    let ptr = unsafe {
        mmap_anonymous(
            std::ptr::null_mut(),
            size.max(1),
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
        )
    }
    .map_err(io::Error::from)?
    .cast::<T>();
    for i in 0..n {
        // SAFETY: element `i` lies inside the mapping (`size` covers `n`
        // elements), which is page-aligned (enough for any T) and writable;
        // nothing refers to it yet.
        unsafe { ptr.add(i).write(T::default()) };
    }
    // SAFETY: all `n` elements were initialised above; the mapping is never
    // unmapped, so the `'static` slice stays valid, and `T: Sync` makes
    // shared access sound (atomics stay atomic across processes).
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn a_shared_slice_is_initialised_and_writable() {
        let s = super::shared_slice::<AtomicU64>(10_000).unwrap_or_default();
        assert_eq!(s.len(), 10_000);
        s[9_999].fetch_add(3, Ordering::SeqCst);
        assert_eq!(s.iter().map(|a| a.load(Ordering::SeqCst)).sum::<u64>(), 3);
    }
}
