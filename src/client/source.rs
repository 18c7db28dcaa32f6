//! Source addresses, and the one way the client opens a connection.
//!
//! A TCP connection is unique by its 4-tuple. With the kernel choosing the
//! source, one client address reaches one target `ip:port` through at most
//! the ephemeral port range (`net.ipv4.ip_local_port_range`, 28,232 ports by
//! default), so 100,000 connections to one server need several source
//! addresses. On loopback every 127.0.0.0/8 address is local, so sources
//! 127.0.0.1, 127.0.0.2, ... cost nothing: [`auto_loopback_sources`] picks
//! how many. Each socket is bound to its source with
//! `IP_BIND_ADDRESS_NO_PORT` (see [`crate::sys::net`]) so the port is chosen
//! at `connect()` time from the 4-tuple, not reserved at `bind()` time from
//! the address alone.

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::sys;

/// Whether a server at `ip` runs on this machine, so its sockets share this
/// machine's limits and its CPU is part of the machine's: a loopback
/// address, the unspecified address (0.0.0.0 or ::, which a connect reaches
/// this host by), or one a socket here can bind (no packet sent).
pub(crate) fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || ip.is_unspecified() || std::net::UdpSocket::bind((ip, 0)).is_ok()
}

/// At most this many source addresses (a /16 worth): more would only ever be
/// a typo in a range.
pub(crate) const MAX_SOURCES: usize = 65_536;

/// Ports kept in reserve per source when sizing automatic sources: 5%.
const HEADROOM_PERCENT: usize = 5;

/// The Linux default range, 32768-60999, when the sysctl cannot be read.
const DEFAULT_EPHEMERAL_PORTS: usize = 60999 - 32768 + 1;

/// Parses `--source`: a comma list of addresses and IPv4 ranges, e.g.
/// `127.0.0.2-127.0.0.40,127.0.1.1`. A range counts through the whole
/// address, so `127.0.0.250-127.0.1.4` is nine addresses. IPv6 addresses are
/// allowed one by one. Repeats are dropped, the order is kept.
pub(crate) fn parse_sources(text: &str) -> Result<Vec<IpAddr>, String> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let too_many = || format!("--source names more than {MAX_SOURCES} addresses");
    let mut push = |ip: IpAddr, out: &mut Vec<IpAddr>| -> Result<(), String> {
        if seen.insert(ip) {
            if out.len() == MAX_SOURCES {
                return Err(too_many());
            }
            out.push(ip);
        }
        Ok(())
    };
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            continue;
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (parse_one(a.trim())?, parse_one(b.trim())?);
                let (IpAddr::V4(a), IpAddr::V4(b)) = (a, b) else {
                    return Err(format!(
                        "bad source range '{part}': ranges are IPv4 only; list IPv6 addresses one by one"
                    ));
                };
                let (a, b) = (u32::from(a), u32::from(b));
                if a > b {
                    return Err(format!(
                        "bad source range '{part}': the first address is above the last"
                    ));
                }
                if (b - a) as usize >= MAX_SOURCES {
                    return Err(too_many());
                }
                for ip in a..=b {
                    push(IpAddr::V4(Ipv4Addr::from(ip)), &mut out)?;
                }
            }
            None => push(parse_one(part)?, &mut out)?,
        }
    }
    if out.is_empty() {
        return Err(format!("--source '{text}' names no address"));
    }
    Ok(out)
}

/// One source address: a unicast address this machine could own.
fn parse_one(text: &str) -> Result<IpAddr, String> {
    let ip: IpAddr = text.parse().map_err(|_| {
        format!("bad source address '{text}': expected e.g. 127.0.0.2 or 127.0.0.2-127.0.0.40")
    })?;
    let unusable = ip.is_unspecified()
        || ip.is_multicast()
        || matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    if unusable {
        return Err(format!(
            "bad source address '{text}': not a unicast address a connection can come from"
        ));
    }
    Ok(ip)
}

/// Checks that every source can reach `target`: the same address family.
pub(crate) fn check_family(sources: &[IpAddr], target: SocketAddr) -> Result<(), String> {
    match sources.iter().find(|s| s.is_ipv4() != target.is_ipv4()) {
        Some(s) => Err(format!(
            "source {s} cannot connect to {target}: the address families differ"
        )),
        None => Ok(()),
    }
}

/// Sources 127.0.0.1, 127.0.0.2, ... 127.0.0.K, enough that each fills at
/// most a third of its `ports_per_source` (and never fewer than
/// [`sources_needed`]). Sparse on purpose: the kernel looks for a free port
/// at every connect, and that search slows as a source's range fills —
/// 100,000 connections from 4 sources took 42 s to establish here, from 12
/// sources 1.3 s. Always at least one; the addresses count on past
/// 127.0.0.255 (127.0.1.0 is as good a loopback address as any).
pub(crate) fn auto_loopback_sources(connections: usize, ports_per_source: usize) -> Vec<IpAddr> {
    let sparse = connections.div_ceil((ports_per_source / 3).max(1));
    let k = sources_needed(connections, ports_per_source)
        .max(sparse)
        .min(MAX_SOURCES);
    let first = u32::from(Ipv4Addr::new(127, 0, 0, 1));
    (0..k as u32)
        .map(|i| IpAddr::V4(Ipv4Addr::from(first + i)))
        .collect()
}

/// The addresses of the interface this host reaches `target` through (the
/// one whose address the kernel picks as the source), of `target`'s
/// family: an agent on a host or in a namespace with several spreads its
/// connections over them all, so that no address's port range fills (the
/// port search at each connect slows as it does). Empty for a loopback
/// target (sources there are [`auto_loopback_sources`]) or when the route
/// cannot be read; one address means nothing to spread.
pub(crate) fn interface_sources(target: SocketAddr) -> Vec<IpAddr> {
    if target.ip().is_loopback() {
        return Vec::new();
    }
    let any: SocketAddr = if target.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    // A UDP connect sends nothing: it only asks the routing table.
    let Ok(probe) = std::net::UdpSocket::bind(any) else {
        return Vec::new();
    };
    let Some(chosen) = probe
        .connect(target)
        .and_then(|()| probe.local_addr())
        .ok()
        .map(|a| a.ip())
    else {
        return Vec::new();
    };
    let all = sys::net::interface_addresses().unwrap_or_default();
    let Some(name) = all.iter().find(|(_, ip)| *ip == chosen).map(|(n, _)| n) else {
        return Vec::new();
    };
    let link_local = |ip: &IpAddr| match ip {
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        IpAddr::V4(v4) => v4.is_link_local(),
    };
    all.iter()
        .filter(|(n, ip)| n == name && ip.is_ipv4() == target.is_ipv4() && !link_local(ip))
        .map(|&(_, ip)| ip)
        .collect()
}

/// How many source addresses `connections` need at `ports_per_source` ports
/// each, 5% held back; at least one.
pub(crate) fn sources_needed(connections: usize, ports_per_source: usize) -> usize {
    let wanted =
        connections.saturating_add(connections.saturating_mul(HEADROOM_PERCENT).div_ceil(100));
    wanted.div_ceil(ports_per_source.max(1)).max(1)
}

/// Ports the kernel may pick for one (source, target) pair: the
/// `ip_local_port_range`, less `ip_local_reserved_ports` inside it. The Linux
/// default (28,232) when it cannot be read.
pub(crate) fn ephemeral_port_count() -> usize {
    let Some((lo, hi)) = crate::env::sysctl("net.ipv4.ip_local_port_range")
        .and_then(|v| crate::env::parse_port_range(&v))
    else {
        return DEFAULT_EPHEMERAL_PORTS;
    };
    let reserved = crate::env::sysctl("net.ipv4.ip_local_reserved_ports").unwrap_or_default();
    port_count(lo, hi, &reserved)
}

/// Ports in `lo..=hi` not named in `reserved` (`"8080,9000-9100"`).
fn port_count(lo: u16, hi: u16, reserved: &str) -> usize {
    let mut taken = vec![false; usize::from(hi - lo) + 1];
    for part in reserved.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.trim().parse::<u16>(), b.trim().parse::<u16>()) else {
            continue;
        };
        for p in a.max(lo)..=b.min(hi) {
            taken[usize::from(p - lo)] = true;
        }
    }
    taken.iter().filter(|&&t| !t).count()
}

/// Opens a connection to `target` the way every client connection is opened:
/// a non-blocking, close-on-exec TCP socket with TCP_NODELAY and
/// SO_REUSEADDR (SO_LINGER 0 when `linger0`, so closing sends a reset and
/// leaves no TIME_WAIT), bound
/// to `source` with `IP_BIND_ADDRESS_NO_PORT` when one is given, then a
/// non-blocking `connect()`.
///
/// Returns the socket and whether the connect finished at once. `false` is
/// EINPROGRESS: wait until the socket is writable, then read SO_ERROR
/// (`Socket::take_error`). Any other error comes back as is for the caller to
/// classify: ECONNREFUSED, EADDRNOTAVAIL (no port left for this 4-tuple),
/// EMFILE/ENFILE (descriptors), ENOBUFS/ENOMEM, EADDRINUSE.
pub(crate) fn connect_socket(
    target: SocketAddr,
    source: Option<IpAddr>,
    linger0: bool,
) -> io::Result<(Socket, bool)> {
    let socket = Socket::new(
        Domain::for_address(target),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    socket.set_tcp_nodelay(true)?;
    // The client closes first, so its side keeps each port in TIME_WAIT
    // for a minute. A TIME_WAIT socket without SO_REUSEADDR makes bind(2)
    // of that port fail even for a server that sets it: after a run of
    // 10,000 connections, a server started next on a port in the
    // ephemeral range could not listen (and the next load met a dead
    // port). With it, our leftovers never stand in a server's way.
    socket.set_reuse_address(true)?;
    if linger0 {
        socket.set_linger(Some(Duration::ZERO))?;
    }
    if let Some(ip) = source {
        sys::net::set_bind_address_no_port(&socket, true)?;
        socket.bind(&SocketAddr::new(ip, 0).into())?;
    }
    match socket.connect(&target.into()) {
        Ok(()) => Ok((socket, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok((socket, false)),
        Err(e) => Err(e),
    }
}

/// Whether a socket connected to `target` is connected to itself. A
/// connect to a port nobody listens on can, once in tens of thousands, be
/// given that very port as its source: TCP's simultaneous open then joins
/// the socket to itself, and it "echoes" everything sent. The peer is the
/// target by construction, so one getsockname(2) per connect tells.
pub(crate) fn connected_to_itself(s: &std::net::TcpStream, target: SocketAddr) -> io::Result<bool> {
    Ok(s.local_addr()? == target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_addresses_are_loopback_unspecified_or_bindable() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(is_local("127.0.0.9".parse().unwrap()));
        assert!(is_local("0.0.0.0".parse().unwrap()));
        assert!(is_local("::".parse().unwrap()));
        // TEST-NET-1 (RFC 5737) is no host's address.
        assert!(!is_local("192.0.2.1".parse().unwrap()));
    }
    use std::net::{Ipv6Addr, TcpListener};

    fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(parse_sources("127.0.0.2").unwrap(), vec![v4(127, 0, 0, 2)]);
        let got = parse_sources(" 127.0.0.2-127.0.0.4 , ::1,127.0.0.3").unwrap();
        assert_eq!(
            got,
            vec![
                v4(127, 0, 0, 2),
                v4(127, 0, 0, 3),
                v4(127, 0, 0, 4),
                IpAddr::V6(Ipv6Addr::LOCALHOST)
            ]
        );
        let across = parse_sources("127.0.0.254-127.0.1.1").unwrap();
        assert_eq!(
            across,
            vec![
                v4(127, 0, 0, 254),
                v4(127, 0, 0, 255),
                v4(127, 0, 1, 0),
                v4(127, 0, 1, 1)
            ]
        );
        assert_eq!(parse_sources("127.0.0.9-127.0.0.9").unwrap().len(), 1);
    }

    #[test]
    fn bad_sources_get_one_line_errors() {
        for (text, says) in [
            ("", "names no address"),
            (" , ", "names no address"),
            ("localhost", "bad source address 'localhost'"),
            ("127.0.0.5-127.0.0.2", "above the last"),
            ("::1-::3", "IPv4 only"),
            ("127.0.0.1-::3", "IPv4 only"),
            ("0.0.0.0", "not a unicast"),
            ("224.0.0.1", "not a unicast"),
            ("127.0.0.1-127.0.0.x", "bad source address '127.0.0.x'"),
            ("10.0.0.0-10.1.0.0", "more than 65536"),
            ("0.0.0.1-255.255.255.254", "more than 65536"),
        ] {
            let e = parse_sources(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            parse_sources("10.0.0.0-10.0.255.255").unwrap().len(),
            65_536
        );
        assert!(parse_sources("10.0.0.0-10.0.255.255,10.1.0.0").is_err());
        // Repeats do not count against the cap.
        assert!(parse_sources("10.0.0.0-10.0.255.255,10.0.0.1").is_ok());
    }

    #[test]
    fn family_check() {
        let t: SocketAddr = "127.0.0.1:7".parse().unwrap();
        assert!(check_family(&[v4(127, 0, 0, 2)], t).is_ok());
        let e = check_family(&[IpAddr::V6(Ipv6Addr::LOCALHOST)], t).unwrap_err();
        assert!(e.contains("families differ"), "{e}");
    }

    #[test]
    fn auto_sources_cover_the_connections_with_headroom() {
        assert_eq!(auto_loopback_sources(0, 28232), vec![v4(127, 0, 0, 1)]);
        assert_eq!(auto_loopback_sources(1000, 28232), vec![v4(127, 0, 0, 1)]);
        // At most a third of 28,232 ports (9,410) per source.
        assert_eq!(auto_loopback_sources(28_000, 28232).len(), 3);
        let s = auto_loopback_sources(100_000, 28232);
        assert_eq!(s.len(), 11);
        assert_eq!(s[10], v4(127, 0, 0, 11));
        for (n, ports) in [(1, 1), (100_000, 28_232), (99_999, 1000), (5, 0)] {
            let k = auto_loopback_sources(n, ports).len();
            assert!(
                k >= sources_needed(n, ports),
                "{n} {ports} {k}: fewer than needed"
            );
            assert!(
                n <= k * (ports / 3).max(1),
                "{n} {ports} {k}: a source over a third full"
            );
            assert!(
                k == sources_needed(n, ports) || n > (k - 1) * (ports / 3).max(1),
                "{n} {ports} {k}: more than either rule needs"
            );
        }
        let many = auto_loopback_sources(1000, 3);
        assert_eq!(many.len(), 1000);
        assert_eq!(many[255], v4(127, 0, 1, 0));
        assert_eq!(auto_loopback_sources(usize::MAX, 1).len(), MAX_SOURCES);
    }

    #[test]
    fn counts_ports_less_reserved() {
        assert_eq!(port_count(32768, 60999, ""), 28232);
        assert_eq!(port_count(32768, 60999, "8080,32768,40000-40009"), 28221);
        assert_eq!(port_count(1000, 1009, "1-65535"), 0);
        assert_eq!(port_count(1000, 1009, "junk,1005"), 9);
        assert!(ephemeral_port_count() > 0);
    }

    #[test]
    fn connects_from_a_chosen_loopback_source() -> io::Result<()> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let target = listener.local_addr()?;
        let (sock, done) = connect_socket(target, Some(v4(127, 0, 0, 3)), true)?;
        assert!(sys::net::bind_address_no_port(&sock)?);
        assert!(sock.tcp_nodelay()?);
        assert!(sock.reuse_address()?);
        assert_eq!(sock.linger()?, Some(Duration::ZERO));
        assert!(sock.nonblocking()?);
        // Accepting proves the connect completed; then SO_ERROR is clear.
        let (_conn, peer) = listener.accept()?;
        assert_eq!(peer.ip(), v4(127, 0, 0, 3));
        assert_ne!(peer.port(), 0);
        assert!(sock.take_error()?.is_none(), "done at once: {done}");
        assert_eq!(sock.local_addr()?.as_socket(), Some(peer));
        Ok(())
    }

    #[test]
    fn a_socket_connected_to_itself_is_seen() -> io::Result<()> {
        // Bound to a port and connected to that same address: TCP's
        // simultaneous open joins the socket to itself, as a connect to a
        // dead port can by chance.
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        sock.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
        let own = sock.local_addr()?;
        sock.connect(&own)?;
        let own = own.as_socket().ok_or(io::ErrorKind::InvalidData)?;
        assert!(connected_to_itself(&sock.into(), own)?);
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let other = std::net::TcpStream::connect(listener.local_addr()?)?;
        assert!(!connected_to_itself(&other, listener.local_addr()?)?);
        Ok(())
    }

    #[test]
    fn connect_without_source_and_refused() -> io::Result<()> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let target = listener.local_addr()?;
        let (sock, _) = connect_socket(target, None, false)?;
        assert_eq!(sock.linger()?, None);
        let (_conn, peer) = listener.accept()?;
        assert_eq!(sock.local_addr()?.as_socket(), Some(peer));
        drop(listener);
        // Nothing listens on the port now: refused, at once or via SO_ERROR.
        match connect_socket(target, Some(v4(127, 0, 0, 2)), false) {
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ECONNREFUSED)),
            Ok((sock, _)) => {
                let mut pfd = [sys::pollset::pollfd(
                    std::os::fd::AsRawFd::as_raw_fd(&sock),
                    sys::pollset::POLLOUT,
                )];
                sys::pollset::poll(&mut pfd, Some(Duration::from_secs(5)))?;
                let e = sock.take_error()?.expect("an error");
                assert_eq!(e.raw_os_error(), Some(libc::ECONNREFUSED));
            }
        }
        Ok(())
    }

    #[test]
    fn connects_over_ipv6_loopback_when_there_is_one() -> io::Result<()> {
        let Ok(listener) = TcpListener::bind("[::1]:0") else {
            return Ok(()); // no IPv6 here
        };
        let target = listener.local_addr()?;
        let (sock, _) = connect_socket(target, Some(IpAddr::V6(Ipv6Addr::LOCALHOST)), false)?;
        assert!(sys::net::bind_address_no_port(&sock)?);
        let (_conn, peer) = listener.accept()?;
        assert_eq!(sock.local_addr()?.as_socket(), Some(peer));
        Ok(())
    }

    #[test]
    fn a_foreign_source_address_is_returned_as_an_error() {
        // 192.0.2.1 (TEST-NET-1) is not an address of this machine.
        let target: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let e = connect_socket(target, Some(v4(192, 0, 2, 1)), false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EADDRNOTAVAIL), "{e}");
    }
}
