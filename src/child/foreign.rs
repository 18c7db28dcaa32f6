//! A server that is not c10k's: `c10k run --server NAME='COMMAND ARGS
//! {port}'`. The command is split into words once, as a shell would split
//! it (quotes and backslashes), but no shell runs it; each cell fills in
//! its placeholders and starts it through the one launcher
//! ([`super::server::Launcher::start_foreign`]), where it is measured as
//! our models are.
//!
//! Placeholders: `{port}` (a free port c10k picked, required), `{addr}`
//! (the address to bind, 127.0.0.1) and `{cpus}` (the CPU list the cell
//! gives the server side, e.g. `0` or `0-1`; every CPU this process may use
//! when the run does not pin). Cost: nothing until a cell starts it.
//!
//! A [`Target`] (`--target NAME=HOST:PORT`) is a server already running,
//! here or on another host: the cells drive it as they drive any server,
//! but c10k has no process to sample, so only the client's figures are
//! measured and the server's are "not observed".

use serde::{Deserialize, Serialize};

/// How long a foreign server may take to be ready, unless the run says.
pub fn default_ready_seconds() -> f64 {
    super::server::PATIENCE.as_secs_f64()
}

/// A port free on the loopback now, for a server to bind. It is taken
/// below the ephemeral range (`ip_local_port_range`), so no client's
/// connect can be given it between this check and the server's bind (a
/// port the kernel picks for bind(0) comes from that range, where the
/// load's own connects take theirs). Falls back to bind(0) when there is
/// no room below the range.
pub fn free_port() -> std::io::Result<u16> {
    Ok(free_listener()?.local_addr()?.port())
}

/// A listener on a free port chosen as [`free_port`] says, still bound.
fn free_listener() -> std::io::Result<std::net::TcpListener> {
    let low = ephemeral_low();
    if low > 10_000 {
        let span = u32::from(low - 10_000);
        // A different start for every call, spread over the span.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            ^ std::process::id().rotate_left(16);
        for k in 0..span.min(200) {
            let port = 10_000 + (seed.wrapping_add(k.wrapping_mul(7_919)) % span) as u16;
            if let Ok(l) = std::net::TcpListener::bind((ADDR, port)) {
                return Ok(l);
            }
        }
    }
    std::net::TcpListener::bind((ADDR, 0))
}

/// The first port of the ephemeral range (32768 when it cannot be read).
fn ephemeral_low() -> u16 {
    crate::env::sysctl_u64s("net.ipv4.ip_local_port_range")
        .and_then(|v| v.first().copied())
        .map_or(32_768, |p| p.min(u64::from(u16::MAX)) as u16)
}

/// Where foreign servers bind: the loopback, as every cell's client
/// connects there.
pub const ADDR: &str = "127.0.0.1";

/// A foreign server, as `plan.json` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Foreign {
    /// Its name in tables, charts and cell ids.
    pub name: String,
    /// The command, split into words, placeholders unfilled.
    pub command: Vec<String>,
    /// Why it cannot run here (a peer whose toolchain is missing): its
    /// cells are skipped with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl Foreign {
    /// Parses `NAME=COMMAND ARGS {port}`; `Err` is one line for the user.
    pub fn parse(spec: &str) -> Result<Foreign, String> {
        let (name, command) = spec
            .split_once('=')
            .ok_or_else(|| format!("--server {spec:?}: expected NAME='COMMAND ARGS {{port}}'"))?;
        let name = check_name("--server", spec, name)?;
        let words = shlex::split(command)
            .ok_or_else(|| format!("--server {name}: unbalanced quotes in {command:?}"))?;
        if words.is_empty() {
            return Err(format!("--server {name}: no command after '='"));
        }
        if !words.iter().any(|w| w.contains("{port}")) {
            return Err(format!(
                "--server {name}: the command must contain {{port}}, where it is told the port to listen on"
            ));
        }
        Ok(Foreign {
            name,
            command: words,
            unavailable: None,
        })
    }

    /// The command with its placeholders filled in.
    pub fn argv(&self, port: u16, cpus: &str) -> Vec<String> {
        self.command
            .iter()
            .map(|w| {
                w.replace("{port}", &port.to_string())
                    .replace("{addr}", ADDR)
                    .replace("{cpus}", cpus)
            })
            .collect()
    }
}

/// A server already running, as `plan.json` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub name: String,
    /// As given (`HOST:PORT`), and as resolved when the run was planned.
    pub given: String,
    pub addr: std::net::SocketAddr,
}

impl Target {
    /// Parses `NAME=HOST:PORT`, resolving the host; `Err` is one line.
    pub fn parse(spec: &str) -> Result<Target, String> {
        let (name, given) = spec
            .split_once('=')
            .ok_or_else(|| format!("--target {spec:?}: expected NAME=HOST:PORT"))?;
        let name = check_name("--target", spec, name)?;
        let given = given.trim();
        let addr = std::net::ToSocketAddrs::to_socket_addrs(given)
            .map_err(|e| format!("--target {name}: {given:?} is not HOST:PORT ({e})"))?
            .next()
            .ok_or_else(|| format!("--target {name}: {given:?} resolves to no address"))?;
        Ok(Target {
            name,
            given: given.to_string(),
            addr,
        })
    }
}

/// A server's name in tables and cell ids: short, plain, and not a
/// model's.
fn check_name(flag: &str, spec: &str, name: &str) -> Result<String, String> {
    let name = name.trim();
    let good = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || name.len() > 40 || !name.chars().all(good) {
        return Err(format!(
            "{flag} {spec:?}: the name must be 1 to 40 letters, digits, '-' or '_'"
        ));
    }
    if crate::server::find(name).is_some() {
        return Err(format!(
            "{flag} {name}: that is the name of a c10k model; choose another"
        ));
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_splits_like_a_shell_and_fills_its_placeholders() {
        let f = Foreign::parse("py=python3 'my server.py' --port={port} --cpus {cpus}").unwrap();
        assert_eq!(f.name, "py");
        assert_eq!(
            f.argv(4242, "0-1"),
            ["python3", "my server.py", "--port=4242", "--cpus", "0-1"]
        );
    }

    #[test]
    fn a_free_port_is_below_the_ephemeral_range_and_was_bound() {
        // Held from the choice on: no other test can take the port
        // between the choice and the check.
        let low = ephemeral_low();
        let held = free_listener().unwrap();
        let port = held.local_addr().unwrap().port();
        if low > 10_000 {
            assert!((10_000..low).contains(&port), "{port} vs {low}");
        }
        assert_eq!(held.local_addr().unwrap().ip().to_string(), ADDR);
    }

    #[test]
    fn a_target_resolves_and_bad_ones_are_one_line() {
        let t = Target::parse("mine=127.0.0.1:7000").unwrap();
        assert_eq!((t.name.as_str(), t.addr.port()), ("mine", 7000));
        for (spec, says) in [
            ("127.0.0.1:7000", "expected NAME=HOST:PORT"),
            ("mine=127.0.0.1", "is not HOST:PORT"),
            ("poll=127.0.0.1:7", "name of a c10k model"),
        ] {
            let e = Target::parse(spec).unwrap_err();
            assert!(e.contains(says), "{spec:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        for (spec, says) in [
            ("python3 srv.py {port}", "expected NAME="),
            ("=srv {port}", "the name must be"),
            ("a b=srv {port}", "the name must be"),
            ("epoll=srv {port}", "name of a c10k model"),
            ("x=", "no command"),
            ("x=srv --port 80", "must contain {port}"),
            ("x=srv \"--port {port}", "unbalanced quotes"),
        ] {
            let e = Foreign::parse(spec).unwrap_err();
            assert!(e.contains(says), "{spec:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
