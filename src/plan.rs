//! Flags turned into validated settings before anything runs: every range
//! and name is checked here, with a one-line error that says what to change.

use std::net::SocketAddr;

use crate::cli::ServeArgs;
use crate::server::{self, run::Setup, Config, Model};

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
        let default_workers = if model.name() == "prefork" {
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
            .map(crate::sys::affinity::parse_cpu_list)
            .transpose()?;
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
