//! Memory of a process tree, summed from /proc: a server and every process
//! it forked. VmSize, VmPeak, VmRSS and VmHWM come from each process's
//! `status`; PSS from `smaps_rollup`, which splits each shared page between
//! its sharers, so a forking server is not charged N times for one page.
//! [`descendants`] is the one walk of a process tree through /proc: the
//! runner, `micro spawn`, the herd, the tests and the benches all use it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Memory of a server's process tree at one moment, summed over its
/// processes (fork and prefork have many).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeMemory {
    /// Processes in the tree.
    pub processes: u64,
    /// Threads in the tree.
    pub threads: u64,
    /// Summed VmSize (virtual), KiB.
    pub vm_size_kib: u64,
    /// Summed VmPeak (each process's peak virtual size), KiB.
    pub vm_peak_kib: u64,
    /// Summed VmRSS, KiB (counts a page shared by N processes N times).
    pub rss_kib: u64,
    /// Summed VmHWM (each process's peak RSS), KiB.
    pub vm_hwm_kib: u64,
    /// Summed PSS, KiB (a shared page split between its sharers): the
    /// honest total for a forking server.
    pub pss_kib: u64,
    /// Summed PSS of anonymous memory only (heap, stacks, buffers): what
    /// connections cost, without the program's file pages, whose PSS
    /// changes with every other process running the same binary.
    #[serde(default)]
    pub pss_anon_kib: u64,
    /// Distinct sockets open in the tree (listeners included).
    #[serde(default)]
    pub sockets: u64,
    /// Open descriptors summed over the tree's processes (a descriptor
    /// inherited by a child counts in each); 0 where the kernel does not
    /// count them (before Linux 6.2).
    #[serde(default)]
    pub fds: u64,
}

/// Whether process `pid` runs (a zombie, dead and not yet reaped, does
/// not): the state after the command name in `/proc/PID/stat`.
pub fn running(pid: u32) -> bool {
    state(pid).is_some_and(|s| !matches!(s.as_str(), "Z" | "X"))
}

/// The state letter of process `pid` (`R`, `S`, `Z`…): the field after the
/// command name in `/proc/PID/stat`; `None` when it is gone.
pub(crate) fn state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    crate::sys::process::stat_fields(&stat)?
        .next()
        .map(str::to_string)
}

/// `root` and all its descendants that exist now (children are found
/// through `/proc/PID/task/TID/children`).
pub fn descendants(root: u32) -> Vec<u32> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root];
    // Bounded: every pid is visited once, and pids are finite.
    while let Some(pid) = todo.pop() {
        if !seen.insert(pid) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            if let Ok(text) = std::fs::read_to_string(path) {
                todo.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
    }
    seen.into_iter().collect()
}

/// The summed memory of `roots` and their descendants, and their sockets
/// ([`sockets`]: a `readlink` per descriptor). Processes that exit while
/// being read are skipped.
pub fn sample(roots: &[u32]) -> TreeMemory {
    TreeMemory {
        sockets: sockets(roots) as u64,
        ..memory(roots)
    }
}

/// As [`sample`] without counting sockets (`sockets` is 0): the memory and
/// descriptor counts only, whatever the descriptors.
pub fn memory(roots: &[u32]) -> TreeMemory {
    let mut m = TreeMemory::default();
    for &root in roots {
        for pid in descendants(root) {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                continue;
            };
            m.processes += 1;
            m.fds += open_fds(pid).unwrap_or(0);
            m.threads += field(&status, "Threads:").unwrap_or(0);
            m.vm_size_kib += field(&status, "VmSize:").unwrap_or(0);
            m.vm_peak_kib += field(&status, "VmPeak:").unwrap_or(0);
            m.rss_kib += field(&status, "VmRSS:").unwrap_or(0);
            m.vm_hwm_kib += field(&status, "VmHWM:").unwrap_or(0);
            if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
                m.pss_kib += field(&rollup, "Pss:").unwrap_or(0);
                m.pss_anon_kib += field(&rollup, "Pss_Anon:").unwrap_or(0);
            }
        }
    }
    m
}

/// Open descriptors of process `pid`: the size `stat(2)` gives
/// `/proc/PID/fd` (Linux 6.2 and later), one call however many are open;
/// `None` where it reads 0 (older kernels) or the process is gone.
pub fn open_fds(pid: u32) -> Option<u64> {
    let n = std::fs::metadata(format!("/proc/{pid}/fd")).ok()?.len();
    (n > 0).then_some(n)
}

/// Sockets of `roots` counted cheaply, when each is a tree of one process
/// (no descriptor shared with a child) and the kernel counts descriptors:
/// its open descriptors less `others`, those that are not connections.
fn sockets_by_count(roots: &[u32], others: u64) -> Option<usize> {
    let mut total = 0;
    for &root in roots {
        if descendants(root).len() != 1 {
            return None;
        }
        total += open_fds(root)?;
    }
    Some(total.saturating_sub(others) as usize)
}

/// Distinct sockets open in the trees of `roots` (a socket shared by
/// several processes, like an inherited listener, counts once): a
/// `readlink` per descriptor, about a second of this process's CPU per
/// million.
pub fn sockets(roots: &[u32]) -> usize {
    let mut inodes = std::collections::HashSet::new();
    for &root in roots {
        for pid in descendants(root) {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                continue;
            };
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    let t = target.to_string_lossy();
                    if let Some(inode) = t
                        .strip_prefix("socket:[")
                        .and_then(|r| r.strip_suffix(']'))
                        .and_then(|i| i.parse::<u64>().ok())
                    {
                        inodes.insert(inode);
                    }
                }
            }
        }
    }
    inodes.len()
}

/// Waits until the trees of `roots` hold at least `sockets` sockets and
/// `threads` threads, or until neither count has grown for `stall` (a
/// server may refuse or drop connections; the caller records what it saw).
/// There is no event for "accepted", so this polls /proc. A tree of one
/// process is counted by its open descriptors less `others` (those that
/// are not sockets, from the idle sample): one `stat` per process, so
/// waiting on a million connections costs the servers nothing. A forking
/// tree shares descriptors and is scanned socket by socket, pausing at
/// least as long as a scan took (at least 1 ms) so that scanning does not
/// take the CPU the server needs to accept. Returns whether both counts
/// were reached; gives up at once on SIGINT or SIGTERM
/// ([`crate::sys::signals::interrupted`]).
pub(crate) fn wait_for(
    roots: &[u32],
    sockets: usize,
    others: u64,
    threads: u64,
    stall: std::time::Duration,
) -> bool {
    let mut best = (0, 0);
    let mut since = std::time::Instant::now();
    loop {
        let scan = std::time::Instant::now();
        let now_sockets = sockets_by_count(roots, others).unwrap_or_else(|| self::sockets(roots));
        // Threads are only read when asked for (a forking tree is large).
        let now_threads = if threads > 0 { thread_count(roots) } else { 0 };
        if now_sockets >= sockets && now_threads >= threads {
            return true;
        }
        if now_sockets > best.0 || now_threads > best.1 {
            best = (best.0.max(now_sockets), best.1.max(now_threads));
            since = std::time::Instant::now();
        } else if since.elapsed() >= stall || crate::sys::signals::interrupted() {
            return false;
        }
        std::thread::sleep(scan.elapsed().max(std::time::Duration::from_millis(1)));
    }
}

/// Threads in the trees of `roots`.
fn thread_count(roots: &[u32]) -> u64 {
    roots
        .iter()
        .flat_map(|&r| descendants(r))
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|s| field(&s, "Threads:"))
        .sum()
}

/// The first number after `name` at the start of a line (`VmPeak:  123 kB`).
pub fn field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childless_process_is_its_own_tree() {
        // A process of its own: this test process has children of other
        // tests running beside this one.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("start sleep");
        let pid = child.id();
        let tree = descendants(pid);
        let m = sample(&[pid]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree, vec![pid]);
        assert_eq!(m.processes, 1);
        assert!(m.threads >= 1);
        assert!(m.vm_peak_kib >= m.vm_size_kib && m.vm_size_kib > 0);
        assert!(m.vm_hwm_kib >= m.rss_kib && m.rss_kib > 0);
        assert!(m.pss_kib > 0);
    }

    /// A `sleep 30` with `stdin`, its output discarded, settled.
    fn sleeper(stdin: std::process::Stdio) -> std::process::Child {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(stdin)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start sleep");
        settled(child.id());
        child
    }

    /// Waits (at most 5 s) until `pid` sleeps: past its dynamic loader,
    /// which opens and closes files, so its descriptors stand still.
    fn settled(pid: u32) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline && state(pid).as_deref() != Some("S") {
            std::thread::yield_now();
        }
    }

    #[test]
    fn sockets_are_counted_and_awaited() {
        // A child whose stdin is a listening socket, in a tree of one
        // process (it may inherit descriptors other tests left without
        // close-on-exec: those are its others, as the idle sample's are).
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let fd = std::os::fd::OwnedFd::from(l);
        let mut child = sleeper(std::process::Stdio::from(fd));
        let pid = child.id();
        let stall = std::time::Duration::from_millis(100);
        let scanned = sockets(&[pid]);
        let others = open_fds(pid).map_or(0, |n| n - scanned as u64);
        // Counted by descriptors less those that are not sockets (the
        // kernel's count), or scanned (older kernels): one either way.
        let reached = wait_for(&[pid], scanned, others, 0, stall);
        let beyond = wait_for(&[pid], scanned + 1, others, 0, stall);
        let _ = child.kill();
        let _ = child.wait();
        assert!(scanned >= 1);
        assert!(reached);
        assert!(!beyond, "more sockets seen than the child holds");
    }

    #[test]
    fn descriptors_are_counted_with_one_stat() {
        let mut child = sleeper(std::process::Stdio::null());
        let pid = child.id();
        let listed = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
        let counted = open_fds(pid);
        let by_count = sockets_by_count(&[pid], 3);
        let _ = child.kill();
        let _ = child.wait();
        // Kernels before 6.2 report no count; then the scan is used.
        if let Some(n) = counted {
            assert_eq!(n as usize, listed);
            assert_eq!(by_count, Some(n as usize - 3));
        } else {
            assert_eq!(by_count, None);
        }
    }

    #[test]
    fn a_child_is_found() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("start sleep");
        let found = descendants(std::process::id()).contains(&child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(found);
    }

    #[test]
    fn fields_parse() {
        assert_eq!(
            field("Name:\tx\nVmPeak:\t  1234 kB\n", "VmPeak:"),
            Some(1234)
        );
        assert_eq!(field("Name:\tx\n", "VmPeak:"), None);
    }
}
