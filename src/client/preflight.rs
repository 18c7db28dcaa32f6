//! Checks before a load run: every limit the run would hit, stated with the
//! exact shortfall and the fix, before a single connection is opened.
//!
//! A finding is [`Level::Info`] when the client works around the limit by
//! itself (it raises its soft open-files limit, spreads connections over
//! worker processes, picks loopback source addresses), [`Level::Warn`] when
//! the run can go ahead but its numbers may suffer (a listen queue that can
//! overflow, memory), and [`Level::Block`] when it cannot succeed as asked.
//!
//! The checks read the system once into [`System`] and are otherwise pure, so
//! the tests feed them any machine they like.
//!
//! Left out on purpose: `net.ipv4.tcp_mem` (sockets are charged only for data
//! queued in them, and echoes of small messages queue little; an estimate
//! from the connection count alone would cry wolf at 100,000 idle
//! connections, and the kernel logs "TCP: out of memory" when it is really
//! hit) and `kernel.io_uring_disabled` (the client waits with epoll).

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use super::source;
use crate::env;
use crate::sys;

/// Descriptors each process keeps beyond its connections: epoll instances,
/// eventfds, output files, stdio.
pub(crate) const HEADROOM: u64 = 64;

/// Ports per source address with the widest usual range, "1024 65535".
const WIDE_PORT_RANGE: usize = 65535 - 1024 + 1;

/// What a load run is about to ask for.
#[derive(Debug, Clone)]
pub struct Needs {
    /// All connections open at once: active plus idle.
    pub connections: usize,
    pub target: SocketAddr,
    /// Source addresses given with `--source`; 0 when none were (the kernel
    /// picks the address, or the client picks loopback sources itself).
    pub sources: usize,
    /// Event-loop threads per process.
    pub threads: usize,
    /// Listen queues the connects spread over: one per server process
    /// sharing the port with SO_REUSEPORT (each has its own), else 1.
    pub listen_queues: usize,
    /// The client runs on this machine; false when agents elsewhere run
    /// it, so only the server's half is checked here.
    pub client_here: bool,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    /// The client handles it by itself; said so nobody is surprised.
    Info,
    /// The run goes ahead, but its numbers may suffer.
    Warn,
    /// The run cannot succeed as asked.
    Block,
}

/// One limit, what it means for this run, and how to lift it.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub level: Level,
    /// The shortfall, with numbers.
    pub what: String,
    /// The command or flag that lifts it.
    pub fix: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Info => "note",
            Level::Warn => "warning",
            Level::Block => "error",
        };
        write!(f, "{level}: {}", self.what)?;
        if !self.fix.is_empty() {
            write!(f, " (fix: {})", self.fix)?;
        }
        Ok(())
    }
}

/// The limits the checks compare against, read once. `None`: unknown (or,
/// for the open-files limits, unlimited).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct System {
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
    /// `fs.nr_open`: the highest hard open-files limit root may set.
    pub nr_open: Option<u64>,
    /// `fs.file-max`: open files in the whole system.
    pub file_max: Option<u64>,
    /// Files open in the whole system now (first field of `fs.file-nr`).
    pub files_open: Option<u64>,
    /// Ports per (source, target) pair.
    pub ephemeral_ports: usize,
    pub somaxconn: Option<u64>,
    pub mem_available_kib: Option<u64>,
    /// The kernel's limits on tasks (pids, threads, cgroup).
    pub tasks: env::tasks::Tasks,
    pub max_map_count: Option<u64>,
    /// Buckets of the kernel's hash of established TCP sockets that this
    /// network namespace uses (`net.ipv4.tcp_ehash_entries`, Linux 6.1 on;
    /// negative there when the namespace shares the host's).
    pub ehash_buckets: Option<u64>,
    /// The DAMON monitors running ([`env::damon`]).
    pub damon: Vec<String>,
}

impl System {
    /// Reads this machine's limits.
    pub fn read() -> System {
        let nofile = sys::rlimit::nofile();
        let first = |name: &str| env::sysctl_u64s(name).and_then(|v| v.first().copied());
        System {
            nofile_soft: nofile.soft,
            nofile_hard: nofile.hard,
            nr_open: env::sysctl_u64("fs.nr_open"),
            file_max: env::sysctl_u64("fs.file-max"),
            files_open: first("fs.file-nr"),
            ephemeral_ports: source::ephemeral_port_count(),
            somaxconn: env::sysctl_u64("net.core.somaxconn"),
            mem_available_kib: env::meminfo_kib("MemAvailable"),
            tasks: env::tasks::Tasks::read(),
            max_map_count: env::sysctl_u64("vm.max_map_count"),
            ehash_buckets: env::sysctl("net.ipv4.tcp_ehash_entries")
                .and_then(|v| v.parse::<i64>().ok())
                .map(i64::unsigned_abs)
                .filter(|&b| b > 0),
            damon: env::damon(),
        }
    }
}

/// Checks `needs` against this machine, with no connect rate limit known.
pub fn check(needs: &Needs) -> Vec<Finding> {
    check_with(needs, None, &System::read())
}

/// Checks `needs` against `system`; `connect_rate` is `--connect-rate`, which
/// keeps the listen queue from overflowing when it is below the server's
/// accept rate.
pub(crate) fn check_with(
    needs: &Needs,
    connect_rate: Option<f64>,
    system: &System,
) -> Vec<Finding> {
    evaluate(
        needs,
        connect_rate,
        system,
        source::is_local(needs.target.ip()),
    )
}

/// Worker processes needed to hold `connections` when each may open at most
/// `hard_limit` descriptors, [`HEADROOM`] of them kept for other uses.
pub(crate) fn processes_needed(connections: usize, hard_limit: u64) -> usize {
    let per = hard_limit.saturating_sub(HEADROOM).max(1);
    let per = usize::try_from(per).unwrap_or(usize::MAX);
    connections.div_ceil(per).max(1)
}

/// Raises the soft open-files limit to what `connections` need (plus
/// [`HEADROOM`]), at most to the hard limit, never lowering it. Returns the
/// soft limit now in force (`u64::MAX`: unlimited).
pub(crate) fn raise_nofile_for(connections: usize) -> io::Result<u64> {
    let limit = sys::rlimit::nofile();
    let want = (connections as u64).saturating_add(HEADROOM);
    let want = limit.hard.map_or(want, |h| want.min(h));
    match limit.soft {
        None => Ok(u64::MAX),
        Some(soft) if soft >= want => Ok(soft),
        Some(_) => {
            sys::rlimit::set_nofile_soft(want)?;
            Ok(want)
        }
    }
}

/// Tasks kept free for the rest of the machine when a server makes a task
/// per connection.
pub(crate) const TASK_MARGIN: u64 = 512;

/// What stops a server with a task per connection from holding `n`
/// connections here, each shortfall with its fix: the task limits, and
/// when the tasks are `threads` of one process, the two memory mappings
/// (stack and guard page) each takes.
pub(crate) fn task_shortfalls(n: u64, threads: bool, system: &System) -> Vec<(String, String)> {
    let count = |v: u64| crate::present::units::format_count(v as f64);
    let mut out = Vec::new();
    if let Some(limit) = system.tasks.refusing(n, TASK_MARGIN) {
        out.push((
            format!(
                "{} tasks do not fit: {} leaves room for {} (keeping {TASK_MARGIN} free)",
                count(n),
                limit.describe(),
                count(limit.room(TASK_MARGIN))
            ),
            limit.fix(n, TASK_MARGIN),
        ));
    }
    let maps = 2 * n + 1024;
    if let (true, Some(max)) = (threads, system.max_map_count) {
        if maps > max {
            out.push((
                format!(
                    "two memory mappings per thread: {} exceed vm.max_map_count={max}",
                    count(maps)
                ),
                format!("sysctl -w vm.max_map_count={}", suggest(maps)),
            ));
        }
    }
    out
}

/// A round number at or above `n` for a sysctl suggestion.
fn suggest(n: u64) -> u64 {
    n.max(1).next_power_of_two()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn evaluate(
    needs: &Needs,
    connect_rate: Option<f64>,
    system: &System,
    local: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let processes = open_files(needs, system, local, &mut out);
    if needs.client_here {
        ports(needs, system, &mut out);
        backlog(needs, connect_rate, system, &mut out);
    }
    memory(needs, system, local, &mut out);
    threads(needs, processes, system, local, &mut out);
    established_hash(needs, system, local, &mut out);
    out
}

/// Sockets per bucket of the established hash past which it is warned.
pub(crate) const SOCKETS_PER_BUCKET: u64 = 4;

/// The kernel finds the socket of every arriving segment in a hash of the
/// established connections, a chain per bucket, sized at boot from memory
/// (262,144 buckets on this 24 GiB machine). Past a few sockets a bucket,
/// the walk is the kernel's TCP cost per message: at a million loopback
/// connections (2,000,000 sockets, 7.6 a bucket) `__inet_lookup_established`
/// was 16.5 % of all CPU here, and 3.9 % in a network namespace with its
/// own 2,097,152 buckets. The figures then carry it, for every model alike.
fn established_hash(needs: &Needs, system: &System, local: bool, out: &mut Vec<Finding>) {
    let Some(buckets) = system.ehash_buckets else {
        return;
    };
    let ends = u64::from(local) + u64::from(needs.client_here);
    let sockets = needs.connections as u64 * ends;
    if sockets <= buckets * SOCKETS_PER_BUCKET {
        return;
    }
    let want = sockets.next_power_of_two();
    out.push(Finding {
        level: Level::Warn,
        what: format!(
            "{sockets} sockets in the kernel's hash of established connections, {buckets} buckets \
             ({:.1} a bucket): every segment's lookup walks a chain, CPU per message the figures \
             will carry (at 7.6 a bucket it was 16 % of the CPU here)",
            sockets as f64 / buckets as f64
        ),
        fix: format!(
            "boot with `thash_entries={want}`, or run server and client in a network namespace \
             made after `sysctl -w net.ipv4.tcp_child_ehash_entries={want}`"
        ),
    });
}

/// The open-files limit of this process, of the server beside it, and of
/// the system. Returns the client processes the run will use.
fn open_files(needs: &Needs, system: &System, local: bool, out: &mut Vec<Finding>) -> usize {
    let n = needs.connections as u64;
    let want = n.saturating_add(HEADROOM);
    let soft = system.nofile_soft.unwrap_or(u64::MAX);
    let hard = system.nofile_hard.unwrap_or(u64::MAX);
    let mut processes = usize::from(needs.client_here);
    // Root may raise the hard limit up to fs.nr_open, and nr_open itself.
    let raise_hard = match system.nr_open {
        Some(nr) if want > nr => format!(
            "`sysctl -w fs.nr_open={}` and `ulimit -Hn {want}` as root",
            suggest(want)
        ),
        _ => format!("`ulimit -Hn {want}` as root"),
    };
    if !needs.client_here {
        // Only the server's half below.
    } else if want > soft && want <= hard {
        out.push(Finding {
            level: Level::Info,
            what: format!(
                "raising the soft open-files limit from {soft} to {want} for {n} connections"
            ),
            fix: format!("none needed; `ulimit -n {want}` beforehand does the same"),
        });
    } else if want > hard {
        processes = processes_needed(needs.connections, hard);
        out.push(Finding {
            level: Level::Info,
            what: format!(
                "{n} connections need {processes} processes at the hard open-files limit \
                 {hard}: spreading over {processes} worker processes"
            ),
            fix: format!("to use one process: {raise_hard}"),
        });
    }
    // A server on this machine holds as many sockets; if it runs under the
    // same limits, one process of it cannot.
    if local && want > hard {
        let servers = processes_needed(needs.connections, hard);
        out.push(Finding {
            level: Level::Info,
            what: format!(
                "the server at {} needs {n} descriptors too: under a hard open-files limit \
                 of {hard}, one server process holds at most {}",
                needs.target,
                hard.saturating_sub(HEADROOM)
            ),
            fix: format!(
                "run {servers} `c10k serve --reuseport --port {}` processes on the port, \
                 or one with `--nofile {want}` after {raise_hard}",
                needs.target.port()
            ),
        });
    }
    if let Some(max) = system.file_max {
        let server = if local { n } else { 0 };
        let client = if needs.client_here { n } else { 0 };
        let open = system.files_open.unwrap_or(0);
        let total = open + client + server + HEADROOM * processes as u64;
        if total > max {
            let mut parts = vec![format!("{open} open now")];
            if needs.client_here {
                parts.push(format!("{n} for the client"));
            }
            if local {
                parts.push(format!("{n} for the server"));
            }
            out.push(Finding {
                level: Level::Block,
                what: format!(
                    "{total} files open system-wide would pass fs.file-max={max} ({})",
                    parts.join(", ")
                ),
                fix: format!("sysctl -w fs.file-max={}", suggest(total)),
            });
        }
    }
    processes
}

/// Ephemeral ports: one source address reaches one target through at most
/// the port range.
fn ports(needs: &Needs, system: &System, out: &mut Vec<Finding>) {
    let n = needs.connections;
    let ports = system.ephemeral_ports.max(1);
    let given = needs.sources.max(1);
    let k = source::sources_needed(n, ports);
    if k <= given {
        return;
    }
    let v4_loopback = matches!(needs.target.ip(), IpAddr::V4(ip) if ip.is_loopback());
    let range = || {
        let auto = source::auto_loopback_sources(n, ports);
        let last = auto
            .last()
            .map_or("127.0.0.1".to_string(), IpAddr::to_string);
        format!("127.0.0.1-{last}")
    };
    if needs.sources == 0 && v4_loopback {
        out.push(Finding {
            level: Level::Info,
            what: format!(
                "{n} connections pass the {ports} ephemeral ports of one source address: \
                 connecting from {} ({} loopback sources, each at most a third full)",
                range(),
                source::auto_loopback_sources(n, ports).len()
            ),
            fix: "none needed; --source chooses them".to_string(),
        });
        return;
    }
    let capacity = ports * given;
    let sources = plural(given, "source address", "source addresses");
    let mut fixes = Vec::new();
    if v4_loopback {
        fixes.push(format!("--source {}", range()));
    } else if needs.target.is_ipv4() {
        fixes.push(format!("--source with {k} addresses of this machine"));
    } else {
        fixes.push(format!(
            "--source with {k} IPv6 addresses of this machine, or an IPv4 target \
             (loopback sources are automatic on 127.0.0.1)"
        ));
    }
    if source::sources_needed(n, WIDE_PORT_RANGE) <= given && ports < WIDE_PORT_RANGE {
        fixes.push("sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"".to_string());
    }
    let (level, what) = if n <= capacity {
        (
            Level::Warn,
            format!(
                "{n} connections to {} leave less than 5% of the {capacity} ports of \
                 {sources} spare: ports held by other programs or in TIME_WAIT make \
                 connects fail with EADDRNOTAVAIL",
                needs.target
            ),
        )
    } else {
        (
            Level::Block,
            format!(
                "{n} connections to {} need {k} source addresses: {sources} × {ports} \
                 ephemeral ports reach only {capacity}",
                needs.target
            ),
        )
    };
    out.push(Finding {
        level,
        what,
        fix: fixes.join(", or "),
    });
}

/// The server's listen queue: `somaxconn` caps every listen backlog, and a
/// connect that finds the queue full waits a second for a SYN retransmit.
fn backlog(needs: &Needs, connect_rate: Option<f64>, system: &System, out: &mut Vec<Finding>) {
    let (Some(max), None) = (system.somaxconn, connect_rate) else {
        return;
    };
    let n = needs.connections as u64;
    // The client keeps at most PENDING_CONNECTS connects in flight per event
    // loop, so that is the most the server's queue sees at once.
    let processes = processes_needed(needs.connections, system.nofile_hard.unwrap_or(u64::MAX));
    let burst = (crate::client::plan::PENDING_CONNECTS * needs.threads.max(1) * processes) as u64;
    // SO_REUSEPORT hashes connects over the queues: each sees its share.
    if n.min(burst).div_ceil(needs.listen_queues.max(1) as u64) <= max {
        return;
    }
    out.push(Finding {
        level: Level::Warn,
        what: format!(
            "up to {} connects in flight at once ({} per event loop) can overflow the server's \
             listen queue (net.core.somaxconn={max} caps every backlog): an overflowed connect \
             waits 1 s or more for a SYN retransmit, which shows as connect latency",
            n.min(burst),
            crate::client::plan::PENDING_CONNECTS
        ),
        fix: format!(
            "--connect-rate below the server's accept rate, or sysctl -w \
             net.core.somaxconn={} with a server backlog to match (c10k serve --backlog)",
            suggest(n)
        ),
    });
}

/// Kernel memory of one idle TCP socket (one end of a connection, no data
/// queued): the socket and its TCP control block, its file, dentry and
/// inode, its epoll entry. Measured here (Linux 6.18, x86-64) as slab
/// deltas of 9.19 to 9.31 KiB per loopback connection, both ends, from
/// 100,000 to 1,000,000 connections; rounded up.
pub(crate) const KERNEL_BYTES_PER_SOCKET: u64 = 4_800;

/// The client's own memory per connection (its state and buffers): about
/// 1.2 KB measured at 1,000,000 connections.
pub(crate) const CLIENT_BYTES_PER_CONNECTION: u64 = 1_250;

/// An event loop server's memory per connection: 64 to 122 B measured
/// (epoll and uring at 100,000). A server with a thread or process per
/// connection is held to the task limits instead ([`threads`]).
pub(crate) const SERVER_BYTES_PER_CONNECTION: u64 = 128;

/// Memory at the measured cost of an idle connection: the kernel's for
/// every socket here (both ends when the server runs here too), the
/// client's and the server's own. Past what is available the run is
/// refused; past half, warned (data queued in sockets adds to it).
fn memory(needs: &Needs, system: &System, local: bool, out: &mut Vec<Finding>) {
    let Some(available) = system.mem_available_kib else {
        return;
    };
    let n = needs.connections as u64;
    let ends = u64::from(local) + u64::from(needs.client_here);
    let sockets = n * ends;
    let per_connection = KERNEL_BYTES_PER_SOCKET * ends
        + if needs.client_here {
            CLIENT_BYTES_PER_CONNECTION
        } else {
            0
        }
        + if local {
            SERVER_BYTES_PER_CONNECTION
        } else {
            0
        };
    if per_connection == 0 {
        return;
    }
    let kib = n.saturating_mul(per_connection) / 1024;
    if kib <= available / 2 {
        return;
    }
    let mut own = Vec::new();
    if needs.client_here {
        own.push(format!(
            "{CLIENT_BYTES_PER_CONNECTION} B per connection for the client"
        ));
    }
    if local {
        own.push(format!(
            "{SERVER_BYTES_PER_CONNECTION} B for an event-loop server"
        ));
    }
    let (level, share, fix) = if kib > available {
        (
            Level::Block,
            "more than",
            format!(
                "at most {} connections on this machine, or more memory",
                available.saturating_mul(1024) / per_connection
            ),
        )
    } else {
        (
            Level::Warn,
            "more than half of",
            "fewer connections, or more memory".to_string(),
        )
    };
    out.push(Finding {
        level,
        what: format!(
            "{n} connections take about {} MiB here ({sockets} sockets at {KERNEL_BYTES_PER_SOCKET} B \
             of kernel memory each, measured idle; {}), {share} the {} MiB available",
            kib / 1024,
            own.join(", "),
            available / 1024
        ),
        fix,
    });
}

/// Threads and pids: the client's own event loops (trivial, but checked),
/// and what a thread- or process-per-connection server beside it needs.
fn threads(needs: &Needs, processes: usize, system: &System, local: bool, out: &mut Vec<Finding>) {
    // Each worker process runs `threads` loops plus its main thread.
    let client = (processes * (needs.threads + 1)) as u64;
    if let Some(limit) = system
        .tasks
        .refusing(client, 0)
        .filter(|_| needs.client_here)
    {
        out.push(Finding {
            level: Level::Block,
            what: format!(
                "{client} client threads ({processes} processes × {} threads) do not fit: \
                 {} leaves room for {}",
                needs.threads + 1,
                limit.describe(),
                limit.room(0)
            ),
            fix: "fewer --threads".to_string(),
        });
    }
    if !local {
        return;
    }
    let n = needs.connections as u64;
    let (short, fixes): (Vec<String>, Vec<String>) =
        task_shortfalls(n, true, system).into_iter().unzip();
    if !short.is_empty() {
        out.push(Finding {
            level: Level::Info,
            what: format!(
                "a server with a thread or process per connection cannot hold {n} \
                 connections here: {}",
                short.join("; ")
            ),
            fix: fixes.join(" && "),
        });
    }
}

#[cfg(test)]
impl System {
    /// A machine like this project's: 20,000 open files per process,
    /// 2,466,170 in all, 24 GB available, `kernel.pid_max` 32,768.
    pub(crate) fn example() -> System {
        System {
            nofile_soft: Some(1024),
            nofile_hard: Some(20_000),
            nr_open: Some(1_048_576),
            file_max: Some(2_466_170),
            files_open: Some(500),
            ephemeral_ports: 28_232,
            somaxconn: Some(4096),
            mem_available_kib: Some(24_000_000),
            tasks: crate::env::tasks::Tasks {
                limits: vec![
                    crate::env::tasks::Limit {
                        kind: crate::env::tasks::Kind::Sysctl("kernel.pid_max"),
                        max: 32_768,
                        used: 0,
                    },
                    crate::env::tasks::Limit {
                        kind: crate::env::tasks::Kind::Sysctl("kernel.threads-max"),
                        max: 192_730,
                        used: 0,
                    },
                ],
            },
            max_map_count: Some(65_530),
            ehash_buckets: Some(262_144),
            damon: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> System {
        System::example()
    }

    fn needs(connections: usize, target: &str, sources: usize) -> Needs {
        Needs {
            connections,
            target: target.parse().unwrap(),
            sources,
            threads: 2,
            listen_queues: 1,
            client_here: true,
        }
    }

    fn run(n: &Needs, rate: Option<f64>, s: &System, local: bool) -> Vec<Finding> {
        let f = evaluate(n, rate, s, local);
        for x in &f {
            assert!(!x.what.contains('\n') && !x.fix.contains('\n'), "{x}");
        }
        f
    }

    fn find<'a>(f: &'a [Finding], word: &str) -> Option<&'a Finding> {
        f.iter().find(|x| x.what.contains(word))
    }

    #[test]
    fn small_runs_find_nothing() {
        let f = run(&needs(100, "127.0.0.1:7", 0), None, &machine(), true);
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn soft_limit_is_raised_up_to_the_hard_limit() {
        let f = run(&needs(5000, "127.0.0.1:7", 0), None, &machine(), true);
        let x = find(&f, "soft open-files").unwrap();
        assert_eq!(x.level, Level::Info);
        assert!(x.what.contains("from 1024 to 5064"), "{x}");
        assert!(find(&f, "worker processes").is_none());
    }

    #[test]
    fn past_the_hard_limit_the_connections_are_spread() {
        let f = run(&needs(100_000, "127.0.0.1:7", 0), None, &machine(), true);
        let x = find(&f, "worker processes").unwrap();
        assert_eq!(x.level, Level::Info);
        assert!(
            x.what
                .contains("100000 connections need 6 processes at the hard open-files limit 20000"),
            "{x}"
        );
        assert!(x.fix.contains("ulimit -Hn 100064"), "{x}");
        let server = find(&f, "the server at").unwrap();
        assert!(
            server
                .fix
                .contains("run 6 `c10k serve --reuseport --port 7`"),
            "{server}"
        );
        // Not local: nothing said about the server.
        let f = run(&needs(100_000, "10.0.0.1:7", 4), None, &machine(), false);
        assert!(find(&f, "the server at").is_none());
    }

    #[test]
    fn nr_open_enters_the_fix_when_passed() {
        let s = System {
            nr_open: Some(65_536),
            ..machine()
        };
        let f = run(&needs(100_000, "127.0.0.1:7", 0), None, &s, true);
        let x = find(&f, "worker processes").unwrap();
        assert!(x.fix.contains("sysctl -w fs.nr_open=131072"), "{x}");
    }

    #[test]
    fn file_max_blocks() {
        let s = System {
            file_max: Some(150_000),
            files_open: Some(10_000),
            ..machine()
        };
        let f = run(&needs(70_000, "127.0.0.1:7", 0), None, &s, true);
        let x = find(&f, "fs.file-max").unwrap();
        assert_eq!(x.level, Level::Block);
        assert!(
            x.what
                .contains("(10000 open now, 70000 for the client, 70000 for the server)"),
            "{x}"
        );
        assert_eq!(x.fix, "sysctl -w fs.file-max=262144");
        // A remote server's sockets do not count here.
        let f = run(&needs(70_000, "10.0.0.1:7", 3), None, &s, false);
        assert!(find(&f, "fs.file-max").is_none(), "{f:?}");
    }

    #[test]
    fn loopback_sources_are_automatic() {
        let f = run(&needs(100_000, "127.0.0.1:7", 0), None, &machine(), true);
        let x = find(&f, "ephemeral ports").unwrap();
        assert_eq!(x.level, Level::Info);
        assert!(
            x.what
                .contains("127.0.0.1-127.0.0.11 (11 loopback sources, each at most a third full)"),
            "{x}"
        );
    }

    #[test]
    fn too_few_sources_block_with_the_fix() {
        let f = run(&needs(100_000, "127.0.0.1:7", 2), None, &machine(), true);
        let x = find(&f, "source addresses").unwrap();
        assert_eq!(x.level, Level::Block);
        assert!(x.what.contains("need 4 source addresses"), "{x}");
        assert!(
            x.what
                .contains("2 source addresses × 28232 ephemeral ports reach only 56464"),
            "{x}"
        );
        assert!(x.fix.contains("--source 127.0.0.1-127.0.0.11"), "{x}");
        assert!(x.fix.contains("ip_local_port_range=\"1024 65535\""), "{x}");
        // Too many for even the widest range with two sources: no sysctl fix.
        let f = run(&needs(200_000, "127.0.0.1:7", 2), None, &machine(), true);
        let x = find(&f, "source addresses").unwrap();
        assert!(!x.fix.contains("ip_local_port_range"), "{x}");
        // A remote IPv4 target, and IPv6 loopback, cannot use 127.0.0.x.
        let f = run(&needs(40_000, "10.0.0.1:7", 0), None, &machine(), false);
        let x = find(&f, "source addresses").unwrap();
        assert_eq!(x.level, Level::Block);
        assert!(
            x.fix.contains("--source with 2 addresses of this machine"),
            "{x}"
        );
        let f = run(&needs(40_000, "[::1]:7", 0), None, &machine(), true);
        let x = find(&f, "source addresses").unwrap();
        assert!(x.fix.contains("IPv6"), "{x}");
    }

    #[test]
    fn tight_ports_warn() {
        let f = run(&needs(28_000, "127.0.0.1:7", 1), None, &machine(), true);
        let x = find(&f, "spare").unwrap();
        assert_eq!(x.level, Level::Warn);
    }

    #[test]
    fn somaxconn_warns_unless_a_connect_rate_is_set() {
        // Two loops keep at most 512 connects in flight: no overflow.
        let f = run(&needs(10_000, "127.0.0.1:7", 0), None, &machine(), true);
        assert!(find(&f, "somaxconn").is_none());
        // Thirty-two loops keep up to 8,192 in flight: past 4,096.
        let many = Needs {
            threads: 32,
            ..needs(10_000, "127.0.0.1:7", 0)
        };
        let f = run(&many, None, &machine(), true);
        let x = find(&f, "somaxconn=4096").unwrap();
        assert_eq!(x.level, Level::Warn);
        assert!(x.fix.contains("net.core.somaxconn=16384"), "{x}");
        let f = run(&many, Some(5000.0), &machine(), true);
        assert!(find(&f, "somaxconn").is_none());
        // Eight server processes sharing the port: eight queues.
        let spread = Needs {
            listen_queues: 8,
            ..many
        };
        assert!(find(&run(&spread, None, &machine(), true), "somaxconn").is_none());
    }

    #[test]
    fn memory_warns_past_half_and_refuses_past_what_is_available() {
        let s = System {
            mem_available_kib: Some(1_000_000),
            ..machine()
        };
        // 60,000 × (2 × 4,800 + 1,250 + 128) B = 628 MiB: over half of 976.
        let f = run(&needs(60_000, "127.0.0.1:7", 0), None, &s, true);
        let x = find(&f, "kernel memory").unwrap();
        assert_eq!(x.level, Level::Warn);
        assert!(x.what.contains("120000 sockets"), "{x}");
        // 100,000 of them: 1,047 MiB, more than there is.
        let f = run(&needs(100_000, "127.0.0.1:7", 0), None, &s, true);
        let x = find(&f, "kernel memory").unwrap();
        assert_eq!(x.level, Level::Block);
        assert!(x.fix.contains("at most 93277 connections"), "{x}");
        // Remote: half as many sockets here, under the line.
        let f = run(&needs(60_000, "10.0.0.1:7", 2), None, &s, false);
        assert!(find(&f, "kernel memory").is_none());
    }

    #[test]
    fn a_crowded_established_hash_is_warned_with_both_fixes() {
        // 2 × 500,000 sockets on 262,144 buckets: 3.8 a bucket, quiet.
        let f = run(&needs(500_000, "127.0.0.1:7", 0), None, &machine(), true);
        assert!(find(&f, "established connections").is_none(), "{f:?}");
        // A million: 2,000,000 sockets, 7.6 a bucket.
        let f = run(&needs(1_000_000, "127.0.0.1:7", 0), None, &machine(), true);
        let x = find(&f, "established connections").unwrap();
        assert_eq!(x.level, Level::Warn);
        assert!(
            x.what.contains("2000000 sockets") && x.what.contains("7.6 a bucket"),
            "{x}"
        );
        assert!(x.fix.contains("thash_entries=2097152"), "{x}");
        assert!(x.fix.contains("tcp_child_ehash_entries=2097152"), "{x}");
        // The server elsewhere: only the client's million here.
        let f = run(&needs(1_000_000, "10.0.0.1:7", 2), None, &machine(), false);
        assert!(find(&f, "established connections").is_none(), "{f:?}");
        // Not known (before Linux 6.1): nothing said.
        let s = System {
            ehash_buckets: None,
            ..machine()
        };
        let f = run(&needs(1_000_000, "127.0.0.1:7", 0), None, &s, true);
        assert!(find(&f, "established connections").is_none(), "{f:?}");
    }

    #[test]
    fn thread_limits() {
        let f = run(&needs(100_000, "127.0.0.1:7", 0), None, &machine(), true);
        let x = find(&f, "thread or process per connection").unwrap();
        assert_eq!(x.level, Level::Info);
        assert!(x.what.contains("kernel.pid_max = 32768"), "{x}");
        assert!(x.what.contains("vm.max_map_count=65530"), "{x}");
        assert!(!x.what.contains("threads-max"), "{x}");
        let n = Needs {
            threads: 40_000,
            ..needs(10, "127.0.0.1:7", 0)
        };
        let f = run(&n, None, &machine(), true);
        assert_eq!(find(&f, "client threads").unwrap().level, Level::Block);
    }

    #[test]
    fn processes_needed_keeps_headroom() {
        assert_eq!(processes_needed(0, 20_000), 1);
        assert_eq!(processes_needed(19_936, 20_000), 1);
        assert_eq!(processes_needed(19_937, 20_000), 2);
        assert_eq!(processes_needed(100_000, 20_000), 6);
        assert_eq!(processes_needed(10, 10), 10);
        assert_eq!(processes_needed(10, u64::MAX), 1);
    }

    #[test]
    fn raise_nofile_never_lowers() -> io::Result<()> {
        let before = sys::rlimit::nofile();
        let got = raise_nofile_for(10)?;
        assert_eq!(Some(got), before.soft.or(Some(u64::MAX)));
        Ok(())
    }

    /// This machine's limits are read (run with `--nocapture` to see
    /// them), a small run fits, and one past every port of one source does
    /// not.
    #[test]
    fn check_this_machine() {
        let system = System::read();
        println!("{system:#?}");
        assert!(system.ephemeral_ports > 0, "{system:?}");
        assert!(!system.tasks.limits.is_empty() && system.file_max.is_some());
        let blocked = |n: usize, sources: usize| {
            let needs = needs(n, "127.0.0.1:7", sources);
            let found = check(&needs);
            for f in &found {
                println!("-- {n} connections, {sources} sources: {f}");
            }
            found.iter().any(|f| f.level == Level::Block)
        };
        assert!(!blocked(100, 0));
        // Ten million connections from one source to one port: more than
        // its 65,535 ports, whatever the machine.
        assert!(blocked(10_000_000, 1));
    }
}
