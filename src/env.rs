//! The environment a measurement ran in, recorded with every result: kernel,
//! CPUs and pinning, memory, limits and the sysctls that bound a TCP echo
//! benchmark. Also the kernel's TCP counters (SYN retransmits, listen queue
//! overflows, failed connects, resets), sampled before and after a run.
//!
//! Everything comes from /proc, /sys and `uname`; a value that cannot be read
//! is left empty (or omitted, for a sysctl) rather than failing the run.

use std::collections::BTreeMap;
use std::io;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sys;

pub mod tasks;

/// The sysctls that matter for these benchmarks, as `/proc/sys` paths with
/// dots. Why each: the listen backlog (`somaxconn`, `tcp_max_syn_backlog`,
/// `tcp_syncookies`, `netdev_max_backlog`); ports and TIME_WAIT
/// (`ip_local_port_range`, `tcp_tw_reuse`, `tcp_fin_timeout`); socket memory
/// (`rmem`/`wmem`, `tcp_mem`); descriptors (`file-max`, `nr_open`); threads
/// and their stacks for a thread per connection (`pid_max`, `threads-max`,
/// `max_map_count`); whether io_uring may run (`io_uring_disabled`).
pub(crate) const SYSCTLS: &[&str] = &[
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_syncookies",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.core.netdev_max_backlog",
    "fs.file-max",
    "fs.nr_open",
    "kernel.pid_max",
    "kernel.threads-max",
    "vm.max_map_count",
    "kernel.io_uring_disabled",
];

/// Where a measurement ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Environment {
    /// This build of c10k.
    pub c10k_version: String,
    /// The executable's size and modification time (`12345678 B,
    /// modified 1795570153`): two builds of other code share a version,
    /// not this. Empty when it cannot be read.
    #[serde(default)]
    pub c10k_build: String,
    /// `uname -srvm`: system, release, version, machine.
    pub kernel: String,
    /// The node name, from `uname`.
    pub hostname: String,
    /// The network namespace this process is in (`net:[INODE]`, from
    /// /proc/self/ns/net): agents in one namespace share its TCP counters
    /// and its ports. Empty when it cannot be read.
    #[serde(default)]
    pub network_namespace: String,
    /// Its interface addresses, `NAME ADDRESS` each (`lo 127.0.0.1`): the
    /// source addresses a client here can use.
    #[serde(default)]
    pub addresses: Vec<String>,
    /// CPUs online in the system (/sys/devices/system/cpu/online).
    pub cpus_online: usize,
    /// CPUs this process may run on (its affinity mask).
    pub cpus_allowed: Vec<usize>,
    /// Whether the process was limited to fewer CPUs than are online.
    pub pinned: bool,
    /// The first CPU's model name from /proc/cpuinfo; empty when unknown.
    pub cpu_model: String,
    /// MemTotal from /proc/meminfo; 0 when it could not be read.
    pub memory_total_kib: u64,
    /// Soft open-files limit; none (`null`) when unlimited.
    pub nofile_soft: Option<u64>,
    /// Hard open-files limit; none (`null`) when unlimited.
    pub nofile_hard: Option<u64>,
    /// `net.ipv4.ip_local_port_range`, low and high inclusive; both 0 when
    /// it could not be read.
    pub ephemeral_ports: (u16, u16),
    /// The [`SYSCTLS`] that exist here, whitespace collapsed to one space.
    #[schemars(
        description = "The sysctls that bound a TCP echo benchmark (listen backlog, ports and \
                       TIME_WAIT, socket memory, descriptors, threads, io_uring) that exist here, \
                       by dotted name, whitespace collapsed to one space."
    )]
    pub sysctls: BTreeMap<String, String>,
    /// The DAMON monitors running here ([`damon`]), `kdamond 0: paddr`
    /// each; empty when none runs. One over physical memory costs a fork
    /// server's children (see [`damon`]).
    #[serde(default)]
    pub damon: Vec<String>,
}

/// Records the environment of this process now.
pub(crate) fn capture() -> Environment {
    let uname = rustix::system::uname();
    let text = |s: &std::ffi::CStr| s.to_string_lossy().into_owned();
    let kernel = [
        uname.sysname(),
        uname.release(),
        uname.version(),
        uname.machine(),
    ]
    .map(text)
    .join(" ");
    let online = online_cpus();
    let allowed = sys::affinity::current_cpus();
    let nofile = sys::rlimit::nofile();
    Environment {
        c10k_version: env!("CARGO_PKG_VERSION").to_string(),
        c10k_build: std::fs::metadata("/proc/self/exe")
            .ok()
            .and_then(|m| {
                let t = m
                    .modified()
                    .ok()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?;
                Some(format!("{} B, modified {}", m.len(), t.as_secs()))
            })
            .unwrap_or_default(),
        kernel,
        hostname: text(uname.nodename()),
        network_namespace: std::fs::read_link("/proc/self/ns/net")
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        addresses: sys::net::interface_addresses()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, ip)| format!("{name} {ip}"))
            .collect(),
        cpus_online: online.len(),
        pinned: !online.is_empty() && allowed != online,
        cpus_allowed: allowed,
        cpu_model: std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| cpu_model(&t))
            .unwrap_or_default(),
        memory_total_kib: meminfo_kib("MemTotal").unwrap_or(0),
        nofile_soft: nofile.soft,
        nofile_hard: nofile.hard,
        ephemeral_ports: sysctl("net.ipv4.ip_local_port_range")
            .and_then(|v| parse_port_range(&v))
            .unwrap_or((0, 0)),
        sysctls: SYSCTLS
            .iter()
            .filter_map(|&name| sysctl(name).map(|v| (name.to_string(), v)))
            .collect(),
        damon: damon(),
    }
}

/// Where the kernel lists its DAMON monitors.
pub(crate) const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// The DAMON monitors (`kdamond` threads) running here, `kdamond N: OPS`
/// each (OPS: what it watches, `paddr` for physical memory, `vaddr` for
/// chosen processes); empty when none runs or the kernel has no DAMON.
///
/// Why a benchmark records it: a monitor of physical memory (a proactive
/// reclaim scheme, say) checks whether a page was used by walking its
/// reverse map, every mapping of the page in every process. A page a fork
/// server's parent shares with its children (its code, its heap) is
/// mapped once per child, so the monitor's work grows with the
/// connections and takes CPU from the server: with 10,000 children here,
/// 20 to 28 % of the server's CPU in two profiles, and more for a larger
/// program (the README's "Against the plainest C program of each model").
pub(crate) fn damon() -> Vec<String> {
    damon_in(std::path::Path::new(KDAMONDS))
}

fn damon_in(dir: &std::path::Path) -> Vec<String> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.into_iter()
        .filter_map(|id| {
            let kd = dir.join(id.to_string());
            if read(kd.join("state"))?.trim() != "on" {
                return None;
            }
            let mut ops: Vec<String> = std::fs::read_dir(kd.join("contexts"))
                .into_iter()
                .flatten()
                .filter_map(|c| read(c.ok()?.path().join("operations")))
                .map(|o| o.trim().to_string())
                .filter(|o| !o.is_empty())
                .collect();
            ops.sort();
            ops.dedup();
            Some(format!("kdamond {id}: {}", ops.join(", ")))
        })
        .collect()
}

/// Whether one of `damon`'s monitors watches physical memory.
pub(crate) fn damon_watches_physical(damon: &[String]) -> bool {
    damon.iter().any(|d| {
        d.split_once(": ")
            .is_some_and(|(_, ops)| ops.split(", ").any(|o| o == "paddr"))
    })
}

/// Reads one sysctl by its dotted name (`net.core.somaxconn`), whitespace
/// collapsed to single spaces; `None` when it does not exist or cannot be
/// read (some are hidden in containers).
pub(crate) fn sysctl(name: &str) -> Option<String> {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    let raw = std::fs::read_to_string(path).ok()?;
    Some(raw.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A sysctl holding one number.
pub(crate) fn sysctl_u64(name: &str) -> Option<u64> {
    sysctl(name)?.parse().ok()
}

/// A sysctl holding several numbers (`tcp_rmem`, `tcp_mem`, ...).
pub(crate) fn sysctl_u64s(name: &str) -> Option<Vec<u64>> {
    sysctl(name)?.split(' ').map(|v| v.parse().ok()).collect()
}

/// A field of /proc/meminfo in KiB (`MemTotal`, `MemAvailable`, ...).
pub(crate) fn meminfo_kib(field: &str) -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?, field)
}

/// The CPUs online, from /sys; empty when it cannot be read.
pub(crate) fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| sys::affinity::parse_cpu_list(t.trim()).ok())
        .unwrap_or_default()
}

fn parse_meminfo(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name != field {
            return None;
        }
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The first CPU's model name: x86 says `model name`, some ARM kernels
/// `Model` or `Hardware`, others nothing useful.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "cpu model", "Hardware", "Processor"]
        .iter()
        .find_map(|&key| {
            cpuinfo.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
}

/// `"32768 60999"` (tabs or spaces) into `(32768, 60999)`.
pub(crate) fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(str::parse::<u16>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi)), None) if lo <= hi => Some((lo, hi)),
        _ => None,
    }
}

/// The kernel's TCP counters that show a load run going wrong.
///
/// They are counters of the whole network namespace (normally the whole
/// system), not of this process: a run on loopback sees both its own connects
/// and the server's listen queue, and also every other program's traffic in
/// the meantime. Take the difference of two samples with [`TcpCounters::since`].
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[schemars(
    deny_unknown_fields,
    description = "The kernel's TCP counters that show a load run going wrong. They are \
                   counters of the whole network namespace (normally the whole system), not of \
                   one process: a run on loopback sees both its own connects and the server's \
                   listen queue, and also every other program's traffic in the meantime."
)]
pub(crate) struct TcpCounters {
    /// SYNs (and SYN-ACKs) sent again: a connect that waited on the backlog
    /// (TcpExt TCPSynRetrans).
    pub syn_retrans: u64,
    /// Connections dropped because a listener's accept queue was full
    /// (TcpExt ListenOverflows).
    pub listen_overflows: u64,
    /// Connections dropped at a listener for any reason, overflows included
    /// (TcpExt ListenDrops).
    pub listen_drops: u64,
    /// Connects started (Tcp ActiveOpens).
    pub active_opens: u64,
    /// Connects that failed (Tcp AttemptFails).
    pub attempt_fails: u64,
    /// Established connections reset (Tcp EstabResets).
    pub estab_resets: u64,
}

impl TcpCounters {
    /// What happened between `before` and `self`; a counter that went
    /// backwards (a reset namespace) counts as zero.
    pub(crate) fn since(&self, before: &TcpCounters) -> TcpCounters {
        self.zip(before, u64::saturating_sub)
    }

    /// Each counter the smaller of the two.
    pub(crate) fn min_each(&self, o: &TcpCounters) -> TcpCounters {
        self.zip(o, u64::min)
    }

    /// Each counter the larger of the two.
    pub(crate) fn max_each(&self, o: &TcpCounters) -> TcpCounters {
        self.zip(o, u64::max)
    }

    fn zip(&self, o: &TcpCounters, f: fn(u64, u64) -> u64) -> TcpCounters {
        TcpCounters {
            syn_retrans: f(self.syn_retrans, o.syn_retrans),
            listen_overflows: f(self.listen_overflows, o.listen_overflows),
            listen_drops: f(self.listen_drops, o.listen_drops),
            active_opens: f(self.active_opens, o.active_opens),
            attempt_fails: f(self.attempt_fails, o.attempt_fails),
            estab_resets: f(self.estab_resets, o.estab_resets),
        }
    }
}

/// Samples the TCP counters of this network namespace from /proc/net/netstat
/// and /proc/net/snmp.
pub(crate) fn tcp_counters() -> io::Result<TcpCounters> {
    let netstat = std::fs::read_to_string("/proc/net/netstat")?;
    let snmp = std::fs::read_to_string("/proc/net/snmp")?;
    parse_tcp_counters(&netstat, &snmp)
}

fn parse_tcp_counters(netstat: &str, snmp: &str) -> io::Result<TcpCounters> {
    let get = |text: &str, file: &str, section: &str, name: &str| {
        proc_net_value(text, section, name).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("no {section} {name} in /proc/net/{file}"),
            )
        })
    };
    Ok(TcpCounters {
        syn_retrans: get(netstat, "netstat", "TcpExt", "TCPSynRetrans")?,
        listen_overflows: get(netstat, "netstat", "TcpExt", "ListenOverflows")?,
        listen_drops: get(netstat, "netstat", "TcpExt", "ListenDrops")?,
        active_opens: get(snmp, "snmp", "Tcp", "ActiveOpens")?,
        attempt_fails: get(snmp, "snmp", "Tcp", "AttemptFails")?,
        estab_resets: get(snmp, "snmp", "Tcp", "EstabResets")?,
    })
}

/// One value from the /proc/net/{netstat,snmp} format: for each section a
/// line `Section: Name1 Name2 ...` followed by `Section: v1 v2 ...`.
fn proc_net_value(text: &str, section: &str, name: &str) -> Option<u64> {
    let prefix = format!("{section}:");
    let mut lines = text.lines().filter_map(|l| l.strip_prefix(&prefix));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if let Some(i) = names.split_whitespace().position(|n| n == name) {
            return values.split_whitespace().nth(i)?.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const NETSTAT: &str = "\
TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans
TcpExt: 0 7 9 123
IpExt: InNoRoutes InOctets
IpExt: 0 5555
";
    const SNMP: &str = "\
Ip: Forwarding DefaultTTL
Ip: 1 64
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab
Tcp: 1 200 120000 -1 948578 948529 3 50766 1
Udp: InDatagrams
Udp: 10
";

    #[test]
    fn parses_tcp_counters() {
        let c = parse_tcp_counters(NETSTAT, SNMP).unwrap();
        assert_eq!(
            c,
            TcpCounters {
                syn_retrans: 123,
                listen_overflows: 7,
                listen_drops: 9,
                active_opens: 948578,
                attempt_fails: 3,
                estab_resets: 50766,
            }
        );
    }

    #[test]
    fn missing_counter_is_an_error_that_names_it() {
        let e = parse_tcp_counters("TcpExt: ListenDrops\nTcpExt: 1\n", SNMP).unwrap_err();
        assert!(e.to_string().contains("TCPSynRetrans"), "{e}");
    }

    #[test]
    fn proc_net_value_skips_other_sections_and_negative_fields() {
        assert_eq!(proc_net_value(SNMP, "Udp", "InDatagrams"), Some(10));
        assert_eq!(proc_net_value(SNMP, "Tcp", "MaxConn"), None);
        assert_eq!(proc_net_value(SNMP, "Tcp", "Nope"), None);
        assert_eq!(proc_net_value(SNMP, "Icmp", "InMsgs"), None);
    }

    #[test]
    fn since_saturates() {
        let before = TcpCounters {
            syn_retrans: 5,
            active_opens: 100,
            ..Default::default()
        };
        let after = TcpCounters {
            syn_retrans: 2,
            active_opens: 150,
            estab_resets: 1,
            ..Default::default()
        };
        let d = after.since(&before);
        assert_eq!(d.syn_retrans, 0);
        assert_eq!(d.active_opens, 50);
        assert_eq!(d.estab_resets, 1);
    }

    #[test]
    fn parses_meminfo_cpuinfo_and_port_range() {
        let mem = "MemTotal:       24684084 kB\nMemAvailable:   24095204 kB\n";
        assert_eq!(parse_meminfo(mem, "MemTotal"), Some(24684084));
        assert_eq!(parse_meminfo(mem, "MemAvailable"), Some(24095204));
        assert_eq!(parse_meminfo(mem, "Mem"), None);
        let x86 = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n";
        assert_eq!(cpu_model(x86).as_deref(), Some("Intel(R) Xeon(R)"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nModel\t: Raspberry Pi 4\n";
        assert_eq!(cpu_model(arm).as_deref(), Some("Raspberry Pi 4"));
        assert_eq!(cpu_model("processor\t: 0\n"), None);
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("60999 32768"), None);
        assert_eq!(parse_port_range("1 2 3"), None);
    }

    #[test]
    fn damon_lists_the_monitors_that_run_and_what_they_watch() {
        let dir = std::env::temp_dir().join(format!("c10k-damon-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let kd = |id: &str, state: &str, ops: &[&str]| {
            let k = dir.join(id);
            std::fs::create_dir_all(k.join("contexts")).unwrap();
            std::fs::write(k.join("state"), format!("{state}\n")).unwrap();
            for (i, o) in ops.iter().enumerate() {
                let c = k.join("contexts").join(i.to_string());
                std::fs::create_dir_all(&c).unwrap();
                std::fs::write(c.join("operations"), format!("{o}\n")).unwrap();
            }
        };
        kd("0", "on", &["paddr"]);
        kd("1", "off", &["paddr"]);
        kd("10", "on", &["vaddr", "vaddr"]);
        std::fs::write(dir.join("nr_kdamonds"), "3\n").unwrap();
        let found = damon_in(&dir);
        assert_eq!(found, ["kdamond 0: paddr", "kdamond 10: vaddr"]);
        assert!(damon_watches_physical(&found));
        assert!(!damon_watches_physical(&found[1..]));
        // No DAMON at all: nothing, not an error.
        assert!(damon_in(&dir.join("absent")).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Run with `--nocapture` to see what this machine reports.
    #[test]
    fn capture_reads_this_machine() {
        let env = capture();
        println!("{}", serde_json::to_string_pretty(&env).unwrap());
        assert!(!env.kernel.is_empty());
        assert!(env.cpus_online >= 1);
        assert!(!env.cpus_allowed.is_empty());
        assert!(env.memory_total_kib > 0);
        assert!(env.sysctls.contains_key("net.core.somaxconn"));
        let back: Environment =
            serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
        assert_eq!(back, env);
        let counters = tcp_counters().unwrap();
        println!("{counters:?}");
        assert_eq!(counters.since(&counters), TcpCounters::default());
    }
}
