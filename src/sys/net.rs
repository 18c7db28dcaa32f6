//! Socket options that neither socket2 nor rustix exposes, and the host's
//! interface addresses (`getifaddrs`).
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

/// This host's interface addresses (IPv4 and IPv6), each with its
/// interface's name, as `getifaddrs(3)` lists them: what an agent says it
/// can use as source addresses.
pub(crate) fn interface_addresses() -> io::Result<Vec<(String, std::net::IpAddr)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid place for the list's first node; on success
    // the list is ours until `freeifaddrs`.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut node = head;
    while !node.is_null() {
        // SAFETY: `node` is a node of the list getifaddrs returned, not yet
        // freed; its fields are read only.
        let ifa = unsafe { &*node };
        node = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: ifa_addr is non-null and points to a sockaddr, whose
        // first field is its family.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let ip = match family {
            libc::AF_INET => {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let a = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
                std::net::IpAddr::from(u32::from_be(a.sin_addr.s_addr).to_be_bytes())
            }
            libc::AF_INET6 => {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let a = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in6>() };
                std::net::IpAddr::from(a.sin6_addr.s6_addr)
            }
            _ => continue,
        };
        out.push((name, ip));
    }
    // SAFETY: `head` came from getifaddrs and is freed once, after the
    // last read of any node.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Socket, Type};

    #[test]
    fn loopback_is_among_the_interface_addresses() {
        let all = interface_addresses().unwrap();
        assert!(
            all.iter()
                .any(|(name, ip)| name == "lo" && *ip == std::net::Ipv4Addr::LOCALHOST),
            "{all:?}"
        );
    }

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
