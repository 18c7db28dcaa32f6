//! Socket options the safe crates lack.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// IP_BIND_ADDRESS_NO_PORT: bind() picks no port; connect() does, so only
/// the 4-tuple must be unique.
pub fn set_bind_address_no_port(sock: &impl AsFd, on: bool) -> io::Result<()> {
    let v: libc::c_int = on.into();
    // SAFETY: a live descriptor, and a pointer and length describing a c_int.
    let r = unsafe {
        libc::setsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
