//! The peers: echo servers in the runtimes people would otherwise pick
//! (Go, Node.js, Python asyncio and uvloop, Erlang/OTP, socat), and the
//! web servers people run (nginx from the distribution, Go's `net/http`,
//! Node's `http`), each a small idiomatic program under `peers/`, carried
//! inside this binary and run as a foreign server
//! ([`crate::child::foreign`]) beside the models; each speaks one
//! protocol.
//!
//! A peer runs where its toolchain is installed: the first interpreter of
//! its list that answers its probe is used, and a compiled peer (Go) is
//! built once into a cache directory. Where none answers, the peer is
//! still in the plan, and each of its cells is skipped with the exact
//! `apt-get install` line (`scripts/install-peers.sh` installs them all).
//! Cost: one probe per peer and, the first time, a Go build (seconds), when
//! the run is planned.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::child::foreign::Foreign;
use crate::protocol::Protocol;

/// One peer.
pub struct Peer {
    /// Its name in tables.
    pub name: &'static str,
    /// What it serves: echo, or HTTP/1.1.
    pub speaks: Protocol,
    /// How it serves connections, one line.
    pub about: &'static str,
    /// The Debian package of its toolchain.
    pub package: &'static str,
    /// Programs that may run it, tried in order: the first for which
    /// `probe` (a command; `{run}` is the program) succeeds runs it.
    pub interpreters: &'static [&'static str],
    pub probe: &'static [&'static str],
    /// Its source: file name and text.
    pub source: (&'static str, &'static str),
    /// Built with `INTERPRETER ARGS…` in the cache directory (`{dir}`: the
    /// directory), when it is compiled.
    pub build: &'static [&'static str],
    /// How to start it: `{run}` is the interpreter (or the built program),
    /// `{dir}` the cache directory; `{port}` and `{addr}` are the cell's.
    pub command: &'static str,
}

/// Every peer, in the order tables list them.
pub const PEERS: &[Peer] = &[
    Peer {
        speaks: Protocol::Echo,
        name: "go",
        about: "a goroutine per connection on Go's netpoller",
        package: "golang-go",
        interpreters: &["go"],
        probe: &["{run}", "version"],
        source: ("go_echo.go", include_str!("../../peers/go_echo.go")),
        build: &["build", "-o", "{dir}/go_echo", "{dir}/go_echo.go"],
        command: "{dir}/go_echo {port} {addr}",
    },
    Peer {
        speaks: Protocol::Echo,
        name: "node",
        about: "Node.js net module: callbacks on libuv's event loop",
        package: "nodejs",
        interpreters: &["node", "nodejs"],
        probe: &["{run}", "--version"],
        source: ("node_echo.js", include_str!("../../peers/node_echo.js")),
        build: &[],
        command: "{run} {dir}/node_echo.js {port} {addr}",
    },
    Peer {
        speaks: Protocol::Echo,
        name: "asyncio",
        about: "Python asyncio: a coroutine per connection on one event loop",
        package: "python3",
        interpreters: &["python3", "/usr/bin/python3"],
        probe: &["{run}", "-c", "import asyncio"],
        source: (
            "asyncio_echo.py",
            include_str!("../../peers/asyncio_echo.py"),
        ),
        build: &[],
        command: "{run} {dir}/asyncio_echo.py {port} {addr}",
    },
    Peer {
        speaks: Protocol::Echo,
        name: "uvloop",
        about: "the same asyncio server on uvloop (libuv)",
        package: "python3-uvloop",
        interpreters: &["python3", "/usr/bin/python3"],
        probe: &["{run}", "-c", "import uvloop"],
        source: (
            "asyncio_echo.py",
            include_str!("../../peers/asyncio_echo.py"),
        ),
        build: &[],
        command: "{run} {dir}/asyncio_echo.py {port} {addr} --uvloop",
    },
    Peer {
        speaks: Protocol::Echo,
        name: "erlang",
        about: "Erlang/OTP: a process per connection with gen_tcp",
        package: "erlang-base",
        interpreters: &["escript"],
        probe: &["erl", "-noshell", "-eval", "halt()."],
        source: (
            "erlang_echo.escript",
            include_str!("../../peers/erlang_echo.escript"),
        ),
        build: &[],
        command: "{run} {dir}/erlang_echo.escript {port} {addr}",
    },
    Peer {
        speaks: Protocol::Echo,
        name: "socat",
        about: "socat: a fork per connection running cat, the inetd way",
        package: "socat",
        interpreters: &["socat"],
        probe: &["{run}", "-V"],
        source: ("", ""),
        build: &[],
        command: "{run} TCP-LISTEN:{port},bind={addr},reuseaddr,fork,backlog=4096 EXEC:cat",
    },
    Peer {
        speaks: Protocol::Http,
        name: "nginx",
        about: "nginx: one worker's event loop (epoll), return 200 from its configuration",
        package: "nginx-light",
        interpreters: &["sh"],
        probe: &[
            "{run}",
            "-c",
            "command -v nginx >/dev/null || test -x /usr/sbin/nginx",
        ],
        source: ("nginx_http.sh", include_str!("../../peers/nginx_http.sh")),
        build: &[],
        command: "{run} {dir}/nginx_http.sh {port} {addr}",
    },
    Peer {
        speaks: Protocol::Http,
        name: "go-http",
        about: "Go net/http: a goroutine per connection on Go's netpoller",
        package: "golang-go",
        interpreters: &["go"],
        probe: &["{run}", "version"],
        source: ("go_http.go", include_str!("../../peers/go_http.go")),
        build: &["build", "-o", "{dir}/go_http", "{dir}/go_http.go"],
        command: "{dir}/go_http {port} {addr}",
    },
    Peer {
        speaks: Protocol::Http,
        name: "node-http",
        about: "Node.js http module: callbacks on libuv's event loop",
        package: "nodejs",
        interpreters: &["node", "nodejs"],
        probe: &["{run}", "--version"],
        source: ("node_http.js", include_str!("../../peers/node_http.js")),
        build: &[],
        command: "{run} {dir}/node_http.js {port} {addr}",
    },
];

/// The peer named `name`.
pub fn find(name: &str) -> Option<&'static Peer> {
    PEERS.iter().find(|p| p.name == name)
}

/// Where peers are written and built: `$XDG_CACHE_HOME/c10k/peers`, or
/// `~/.cache/c10k/peers`, or the temporary directory.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("c10k").join("peers")
}

impl Peer {
    /// The peer as a foreign server: written out (and built) under `dir`,
    /// or marked unavailable with the reason and the install line.
    pub fn resolve(&self, dir: &Path) -> Foreign {
        let command = match self.prepare(dir) {
            Ok(c) => c,
            Err(why) => {
                return Foreign {
                    name: self.name.to_string(),
                    command: Vec::new(),
                    unavailable: Some(why),
                }
            }
        };
        Foreign {
            name: self.name.to_string(),
            command,
            unavailable: None,
        }
    }

    fn prepare(&self, dir: &Path) -> Result<Vec<String>, String> {
        let run = self
            .interpreters
            .iter()
            .find(|i| answers(i, self.probe))
            .ok_or_else(|| {
                format!(
                    "the {} peer needs {} (apt-get install {})",
                    self.name, self.package, self.package
                )
            })?;
        let dir_text = dir.display().to_string();
        let (file, text) = self.source;
        if !file.is_empty() {
            std::fs::create_dir_all(dir)
                .and_then(|()| write_if_changed(&dir.join(file), text))
                .map_err(|e| format!("writing the {} peer to {dir_text}: {e}", self.name))?;
        }
        if !self.build.is_empty() {
            let args: Vec<String> = self
                .build
                .iter()
                .map(|a| a.replace("{dir}", &dir_text))
                .collect();
            let out = Command::new(run)
                .args(&args)
                .current_dir(dir)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("building the {} peer: {e}", self.name))?;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                return Err(format!(
                    "building the {} peer failed: {}",
                    self.name,
                    err.lines().next().unwrap_or("").trim()
                ));
            }
        }
        Ok(self
            .command
            .split_whitespace()
            .map(|w| w.replace("{run}", run).replace("{dir}", &dir_text))
            .collect())
    }
}

/// Whether `probe`, with `{run}` standing for `program`, runs and
/// succeeds.
fn answers(program: &str, probe: &[&str]) -> bool {
    let argv: Vec<String> = probe.iter().map(|a| a.replace("{run}", program)).collect();
    let Some((first, rest)) = argv.split_first() else {
        return false;
    };
    Command::new(first)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Writes `text` to `path` unless it already holds it (so a built peer is
/// not rebuilt for nothing, and two runs do not race on a rewrite).
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_toolchain_is_named_with_its_install_line() {
        let p = Peer {
            speaks: Protocol::Echo,
            name: "nothing",
            about: "",
            package: "no-such-package",
            interpreters: &["/nonexistent/c10k-peer"],
            probe: &["{run}"],
            source: ("", ""),
            build: &[],
            command: "{run} {port}",
        };
        let f = p.resolve(&std::env::temp_dir());
        assert_eq!(
            f.unavailable.as_deref(),
            Some("the nothing peer needs no-such-package (apt-get install no-such-package)")
        );
    }

    #[test]
    fn the_asyncio_peer_is_written_and_its_command_filled() {
        let dir = std::env::temp_dir().join(format!("c10k-peers-{}", std::process::id()));
        let f = find("asyncio").unwrap().resolve(&dir);
        // python3 runs this project's tests (the report test's helper, the
        // grid), so the stdlib peer is always there.
        assert_eq!(f.unavailable, None);
        assert!(dir.join("asyncio_echo.py").exists());
        assert_eq!(
            f.argv(7, "0")[1..],
            [
                format!("{}/asyncio_echo.py", dir.display()),
                "7".into(),
                "127.0.0.1".into()
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
