//! Kernel memory for sockets, system-wide: slab (socket structures, TCP
//! control blocks, dentries and inodes of socket files) from /proc/meminfo,
//! and the pages TCP holds for buffers from /proc/net/sockstat. Both ends of
//! a loopback connection are on this machine, so a difference over N
//! connections counts two sockets per connection.

use serde::{Deserialize, Serialize};

/// System-wide kernel memory, KiB (slab from /proc/meminfo, TCP buffer
/// pages from /proc/net/sockstat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelMemory {
    pub slab_kib: u64,
    pub tcp_buffers_kib: u64,
    /// TCP sockets in use (sockstat `inuse`).
    pub tcp_sockets: u64,
}

/// Reads the figures now; `None` when /proc cannot be read.
pub fn sample() -> Option<KernelMemory> {
    let slab_kib = crate::env::meminfo_kib("Slab")?;
    let sockstat = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let (inuse, pages) = parse_sockstat(&sockstat)?;
    let page_kib = rustix::param::page_size() as u64 / 1024;
    Some(KernelMemory {
        slab_kib,
        tcp_buffers_kib: pages * page_kib,
        tcp_sockets: inuse,
    })
}

/// From the `TCP:` line: sockets in use and memory pages.
fn parse_sockstat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find_map(|l| l.strip_prefix("TCP:"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let value = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((value("inuse")?, value("mem")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockstat_parses() {
        let text =
            "sockets: used 10\nTCP: inuse 7 orphan 0 tw 9 alloc 8 mem 3\nUDP: inuse 0 mem 0\n";
        assert_eq!(parse_sockstat(text), Some((7, 3)));
        assert_eq!(parse_sockstat("UDP: inuse 0 mem 0\n"), None);
    }

    #[test]
    fn this_machine_reports_slab() {
        let k = sample().expect("read /proc/meminfo and /proc/net/sockstat");
        assert!(k.slab_kib > 0);
    }
}
