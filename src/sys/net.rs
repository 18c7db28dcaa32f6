//! Socket options that neither socket2 nor rustix exposes.
//!
//! `IP_BIND_ADDRESS_NO_PORT` (Linux 4.2): a `bind()` to a source address with
//! port 0 normally picks a free local port at once, and that port is then
//! unique for the source address whatever the destination, so one source
//! address holds at most the ephemeral range (about 28,000 ports by default).
//! With the option set, `bind()` only records the address and `connect()`
//! picks the port, needing only the whole 4-tuple to be unique: each source
//! address then reaches the full range again for every destination. That is
//! how the load generator spreads 100,000 connections over a few loopback
//! source addresses.
//!
//! (SO_ERROR, the other option a non-blocking connect needs, is covered by
//! `socket2::Socket::take_error` and `rustix::net::sockopt::socket_error`.)

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Sets or clears `IP_BIND_ADDRESS_NO_PORT` on a TCP socket (IPv4, or IPv6,
/// whose stack forwards `SOL_IP` options to the IPv4 code). Set it before
/// `bind()`; it has no effect afterwards.
pub(crate) fn set_bind_address_no_port(sock: &impl AsFd, on: bool) -> io::Result<()> {
    let value: libc::c_int = on.into();
    // SAFETY: the descriptor is open for the duration of the borrow; the
    // pointer and length describe a live `c_int`, which is what the kernel
    // reads for this option, and it is only read.
    let r = unsafe {
        libc::setsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `IP_BIND_ADDRESS_NO_PORT` is set on the socket.
#[cfg(test)]
pub(crate) fn bind_address_no_port(sock: &impl AsFd) -> io::Result<bool> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the descriptor is open for the duration of the borrow; `value`
    // and `len` are live, writable locals, and `len` holds the size of
    // `value`, so the kernel writes at most that many bytes.
    let r = unsafe {
        libc::getsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        Ok(value != 0)
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Socket, Type};

    #[test]
    fn bind_address_no_port_round_trips() -> io::Result<()> {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        assert!(!bind_address_no_port(&s)?);
        set_bind_address_no_port(&s, true)?;
        assert!(bind_address_no_port(&s)?);
        set_bind_address_no_port(&s, false)?;
        assert!(!bind_address_no_port(&s)?);
        Ok(())
    }

    #[test]
    fn bind_with_the_option_leaves_the_port_for_connect() -> io::Result<()> {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        set_bind_address_no_port(&s, true)?;
        s.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )?;
        let local = s.local_addr()?.as_socket().map(|a| a.port());
        assert_eq!(local, Some(0), "no port is taken at bind time");
        Ok(())
    }
}
