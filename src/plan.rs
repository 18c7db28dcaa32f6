//! Flags turned into validated settings before anything runs: every range
//! and name is checked here, with a one-line error that says what to change.

use std::net::SocketAddr;

use crate::cli::ServeArgs;
use crate::server::{self, run::Setup, Config, Model};

/// The longest duration any flag (or plan.json) may give, in seconds: a
/// year.
pub const MAX_SECONDS: f64 = 86_400.0 * 365.0;
/// The largest message, in bytes.
pub const MAX_MESSAGE: usize = 64 << 20;
/// The most messages in flight per connection.
pub const MAX_DEPTH: usize = 65_536;
/// The most burst rounds.
pub const MAX_ROUNDS: usize = 1_000_000;

/// A validated `c10k serve`.
pub struct ServePlan {
    pub model: &'static dyn Model,
    pub config: Config,
    pub setup: Setup,
}

/// Default workers: the CPUs this process may use.
pub fn cpus_available() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl ServePlan {
    pub fn from_args(a: &ServeArgs) -> Result<ServePlan, String> {
        let model = server::find(&a.model).ok_or_else(|| {
            format!(
                "unknown model '{}': expected one of {}",
                a.model,
                server::names().join(", ")
            )
        })?;
        let buffer = parse_size(&a.buffer).map_err(|e| format!("--buffer: {e}"))?;
        if !(64..=64 << 20).contains(&buffer) {
            return Err(format!("--buffer {buffer}: must be from 64 B to 64 MiB"));
        }
        let stack_size = match &a.stack_size {
            Some(s) => {
                let n = parse_size(s).map_err(|e| format!("--stack-size: {e}"))?;
                if n < 16 << 10 {
                    return Err(format!("--stack-size {n}: must be at least 16 KiB"));
                }
                Some(n)
            }
            None => None,
        };
        let default_workers = if model.worker_per_connection() {
            64
        } else {
            cpus_available()
        };
        let workers = a.workers.unwrap_or(default_workers);
        if !(1..=100_000).contains(&workers) {
            return Err(format!("--workers {workers}: must be from 1 to 100000"));
        }
        if a.max_conns == Some(0) {
            return Err("--max-conns 0 would refuse every connection".into());
        }
        if a.backlog < 1 {
            return Err(format!("--backlog {}: must be at least 1", a.backlog));
        }
        if a.nofile.is_some_and(|n| n < 16) {
            return Err("--nofile: below 16 descriptors the server cannot start".into());
        }
        let cpus = a
            .cpus
            .as_deref()
            .map(crate::sys::affinity::usable_cpu_list)
            .transpose()
            .map_err(|e| format!("--cpus: {e}"))?;
        Ok(ServePlan {
            model,
            config: Config {
                bind: SocketAddr::new(a.bind, a.port),
                buffer,
                max_conns: a.max_conns,
                workers,
                stack_size,
                edge: a.edge,
                accept: a.accept,
                backlog: a.backlog,
                reuseport: a.reuseport,
            },
            setup: Setup {
                nofile: a.nofile,
                cpus,
            },
        })
    }
}

/// `c10k serve` flags each `c10k run` cell sets itself: a `--server-arg`
/// may not override them (one naming another model was measured and
/// recorded under the cell's model).
const CELL_OWNED: [&str; 5] = ["model", "port", "cpus", "bind", "reuseport"];

/// Checks `c10k run --server-arg`s once, with the plan, before any cell
/// runs: they must be `c10k serve` flags with valid values, and none may
/// set what each cell sets itself. Returns the echo buffer the servers will
/// have (`--buffer` among them, or serve's default).
pub fn check_server_args(args: &[String]) -> Result<String, String> {
    use clap::{parser::ValueSource, Args, FromArgMatches};
    let cmd = ServeArgs::augment_args(clap::Command::new("serve").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(args)
        .map_err(|e| format!("--server-arg: {}", crate::cli::one_line(&e)))?;
    if let Some(id) = CELL_OWNED
        .iter()
        .find(|id| m.value_source(id) == Some(ValueSource::CommandLine))
    {
        return Err(format!(
            "--server-arg: --{id} is set by each cell (its model, port and CPUs), not by hand"
        ));
    }
    let a = ServeArgs::from_arg_matches(&m).map_err(|e| format!("--server-arg: {e}"))?;
    ServePlan::from_args(&a).map_err(|e| format!("--server-arg: {e}"))?;
    Ok(a.buffer)
}

/// Parses a byte size: `4096`, `16K`, `16KiB`, `1M`, `1MiB`, `1G` (binary
/// multiples; case does not matter).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 4096, 16KiB, 1MiB)"))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("'{text}': unknown unit '{unit}' (use K, M or G)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("16KiB"), Ok(16384));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }
}

/// The least rate any flag accepts: one event per 1,000 s. Below it a
/// pacing interval is no longer a duration a run could wait out.
pub const MIN_RATE: f64 = 1e-3;

/// Checks a rate flag (events per second): a finite number from
/// [`MIN_RATE`] to `max`, so every interval derived from it is a valid
/// duration and every count derived from it fits.
pub fn per_second(flag: &str, r: f64, max: f64) -> Result<f64, String> {
    if r.is_finite() && (MIN_RATE..=max).contains(&r) {
        Ok(r)
    } else {
        // 1e-300 printed in full is 300 digits: extremes in e-notation.
        let shown = if r.is_finite() && (1e-3..1e12).contains(&r.abs()) {
            r.to_string()
        } else {
            format!("{r:e}")
        };
        Err(format!(
            "{flag} {shown}: must be from {MIN_RATE} (one per 1,000 s) to {max:e} per second"
        ))
    }
}

/// Parses a duration: `10s`, `500ms`, `1.5s`, `2m`, `1h`, `250us`; a bare
/// number is seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        u => {
            return Err(format!(
                "'{text}': unknown unit '{u}' (use us, ms, s, m or h)"
            ))
        }
    };
    if !secs.is_finite() || !(0.0..=MAX_SECONDS).contains(&secs) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// What the load generator does with its connections.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]

pub enum Workload {
    /// Closed loop: `depth` messages in flight per connection.
    Closed { depth: usize },
    /// Open loop: `rate` messages per second in total, at most `depth` in
    /// flight per connection (later ones wait, keeping their due time).
    Open { rate: f64, depth: usize },
    /// Connect all, then send one message on each and time every echo back.
    Burst { rounds: usize },
    /// Open, optionally echo one message, close; repeat.
    Churn { echo: bool },
}

/// When a measured run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Stop {
    /// After this many messages per connection.
    Messages(u64),
    /// After this long.
    Duration(std::time::Duration),
}

/// A validated `c10k load`. Serializable: a run too big for one process
/// hands it to its worker processes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoadPlan {
    pub target: SocketAddr,
    pub connections: usize,
    pub idle: usize,
    pub threads: usize,
    pub workload: Workload,
    pub stop: Stop,
    pub warmup: std::time::Duration,
    /// Bytes of each message; `payload` when the user gave the text.
    pub message_size: usize,
    pub payload: Option<Vec<u8>>,
    pub connect_rate: Option<f64>,
    pub linger0: bool,
    pub timeout: std::time::Duration,
    /// Explicit source addresses (empty: let the kernel choose, or pick
    /// loopback sources automatically).
    pub sources: Vec<std::net::IpAddr>,
    pub cpus: Option<Vec<usize>>,
    pub json: Option<std::path::PathBuf>,
    pub csv: Option<std::path::PathBuf>,
    pub hdr: Option<std::path::PathBuf>,
    pub fail_on_error: bool,
    pub quiet: bool,
    /// The command line, for the results.
    pub command: String,
    /// As worker process K of P of a split run: (K, P). Connection ids are
    /// interleaved over processes and their threads.
    pub process: Option<(usize, usize)>,
    /// The server's processes, when known: their CPU over the measured
    /// window decides what limited the figures.
    #[serde(default)]
    pub server_pids: Vec<u32>,
}

impl LoadPlan {
    pub fn from_args(a: &crate::cli::LoadArgs) -> Result<LoadPlan, String> {
        use std::net::ToSocketAddrs;
        let target = a
            .target
            .to_socket_addrs()
            .map_err(|e| format!("target '{}': {e} (expected HOST:PORT)", a.target))?
            .next()
            .ok_or_else(|| format!("target '{}' resolves to no address", a.target))?;
        if a.connections == 0 && !a.churn {
            return Err("--connections must be at least 1".into());
        }
        if a.connections > 10_000_000 || a.idle > 10_000_000 {
            return Err("more than 10,000,000 connections is beyond any machine".into());
        }
        let (message_size, payload) = match &a.payload {
            Some(text) if text.is_empty() => return Err("--payload must not be empty".into()),
            Some(text) => (text.len(), Some(text.as_bytes().to_vec())),
            None => {
                let n = parse_size(&a.message_size).map_err(|e| format!("--message-size: {e}"))?;
                if !(1..=MAX_MESSAGE).contains(&n) {
                    return Err(format!("--message-size {n}: must be from 1 B to 64 MiB"));
                }
                (n, None)
            }
        };
        if !(1..=MAX_DEPTH).contains(&a.depth) {
            return Err(format!(
                "--depth {}: must be from 1 to {MAX_DEPTH}",
                a.depth
            ));
        }
        let workload = if a.burst {
            if !(1..=MAX_ROUNDS).contains(&a.rounds) {
                return Err(format!(
                    "--rounds {}: must be from 1 to {MAX_ROUNDS}",
                    a.rounds
                ));
            }
            Workload::Burst { rounds: a.rounds }
        } else if a.churn {
            Workload::Churn { echo: a.churn_echo }
        } else if let Some(rate) = a.rate {
            Workload::Open {
                rate: per_second("--rate", rate, 1e9)?,
                depth: a.depth,
            }
        } else {
            Workload::Closed { depth: a.depth }
        };
        let stop = match (a.messages, &a.duration) {
            (Some(0), _) => return Err("--messages must be at least 1".into()),
            (Some(n), _) => Stop::Messages(n),
            (None, Some(d)) => {
                let d = parse_duration(d).map_err(|e| format!("--duration: {e}"))?;
                if d.is_zero() {
                    return Err("--duration must be above 0".into());
                }
                Stop::Duration(d)
            }
            (None, None) => Stop::Duration(std::time::Duration::from_secs(10)),
        };
        let warmup = parse_duration(&a.warmup).map_err(|e| format!("--warmup: {e}"))?;
        let timeout = parse_duration(&a.timeout).map_err(|e| format!("--timeout: {e}"))?;
        if timeout < std::time::Duration::from_millis(1) {
            return Err("--timeout must be at least 1ms".into());
        }
        let connect_rate = a
            .connect_rate
            .map(|r| per_second("--connect-rate", r, 1e9))
            .transpose()?;
        let sources = match &a.source {
            Some(s) => {
                crate::client::source::parse_sources(s).map_err(|e| format!("--source: {e}"))?
            }
            None => Vec::new(),
        };
        if let Some(&pid) = a
            .server_pid
            .iter()
            .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        {
            return Err(format!("--server-pid {pid}: no such process"));
        }
        let cpus = a
            .cpus
            .as_deref()
            .map(crate::sys::affinity::usable_cpu_list)
            .transpose()
            .map_err(|e| format!("--cpus: {e}"))?;
        let slots = a.connections.max(1);
        let threads = a
            .threads
            .unwrap_or_else(|| cpus.as_ref().map_or_else(cpus_available, Vec::len));
        if threads == 0 || threads > 1024 {
            return Err(format!("--threads {threads}: must be from 1 to 1024"));
        }
        // Checked before anything is measured, so a run is not thrown
        // away at the end for a path that could never be written.
        for (flag, path) in [
            ("--json", &a.json),
            ("--per-connection-csv", &a.per_connection_csv),
            ("--hdr", &a.hdr),
        ] {
            crate::export::target::check_flag(flag, path.as_deref())?;
        }
        Ok(LoadPlan {
            target,
            connections: a.connections,
            idle: a.idle,
            threads: threads.min(slots + a.idle).max(1),
            workload,
            stop,
            warmup,
            message_size,
            payload,
            connect_rate,
            linger0: a.linger0,
            timeout,
            sources,
            cpus,
            json: a.json.clone(),
            csv: a.per_connection_csv.clone(),
            hdr: a.hdr.clone(),
            fail_on_error: a.fail_on_error,
            quiet: a.quiet,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            process: None,
            server_pids: a.server_pid.clone(),
        })
    }
}
