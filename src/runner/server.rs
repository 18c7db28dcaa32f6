//! A server under test: `c10k serve …` started as a child process (tied to
//! this one, in its own process group), its READY line awaited without
//! sleeping, then stopped with SIGTERM and reaped with `wait4`, which gives
//! the CPU time of its whole tree (a server reaps the children it forks)
//! and the peak RSS of its largest process.
//!
//! A foreign server (`--server NAME='COMMAND {port}'`, [`super::foreign`])
//! goes through the same launcher ([`Launcher::start_foreign`]): pinned
//! before it runs, ready when it prints a line starting `READY` or when a
//! socket listens on its port (/proc/net/tcp, checked every
//! [`PROBE_EVERY`], at most the launcher's patience), stopped with SIGTERM to its whole process group
//! and SIGKILL after [`GRACE`]; dying of that SIGTERM is a clean end for it.
//!
//! The one launcher of servers: the runner's cells, the integration tests
//! and the benches all start and stop their servers here ([`Launcher`]
//! says which binary and how long to wait; [`Stopped::checked`] is the
//! strict reading a test wants). Cost: two reader threads per server (its
//! stdout and stderr) and a blocking `wait4` when it is stopped.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::sys;

/// How long a server may take to print READY, and to exit after SIGTERM.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How long a foreign server may take to exit after SIGTERM before its
/// process group is killed.
pub const GRACE: Duration = Duration::from_secs(5);

/// How often a foreign server that has not printed READY is checked for a
/// listening socket.
pub const PROBE_EVERY: Duration = Duration::from_millis(20);

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Exit code 3: the model cannot run here, with the server's reason.
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Failed(String),
}

/// Which `c10k` to start as a server, and how long to wait for it.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The binary to run as `PROGRAM serve …`; `None`: this program.
    pub program: Option<PathBuf>,
    /// How long the server may take to print READY, and to exit after
    /// SIGTERM before it is killed.
    pub patience: Duration,
}

impl Default for Launcher {
    fn default() -> Launcher {
        Launcher {
            program: None,
            patience: PATIENCE,
        }
    }
}

/// A running server.
pub struct ServerChild {
    child: Child,
    pub addr: SocketAddr,
    lines: Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// How long it may take to exit after SIGTERM.
    patience: Duration,
    /// Not c10k's: SIGTERM goes to its whole group, and may end it.
    foreign: bool,
}

/// What a stopped server left.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// Its JSON summary line (`None` if it died without one).
    pub summary: Option<serde_json::Value>,
    pub reaped: Option<sys::process::Reaped>,
    /// What it wrote to stderr, trimmed.
    pub stderr: String,
    /// It had to be killed: it did not exit within the launcher's patience
    /// of SIGTERM.
    pub killed: bool,
    /// Dying of the SIGTERM that stopped it is a clean end (a foreign
    /// server need not catch it).
    pub term_is_clean: bool,
}

impl Stopped {
    /// How it ended, in words, when that was not a clean exit 0.
    pub(crate) fn trouble(&self) -> Option<String> {
        let how = match self.reaped {
            None => "could not be reaped".to_string(),
            Some(r) if r.exit_code() == Some(0) && !self.killed => return None,
            Some(r)
                if self.term_is_clean
                    && !self.killed
                    && (r.signal() == Some(libc::SIGTERM)
                        || r.exit_code() == Some(128 + libc::SIGTERM)) =>
            {
                return None
            }
            Some(_) if self.killed => "did not exit after SIGTERM and was killed".to_string(),
            Some(r) => match (r.exit_code(), r.signal()) {
                (Some(c), _) => format!("exited with code {c}"),
                (_, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended oddly".to_string(),
            },
        };
        let last = self.stderr.lines().last().unwrap_or("").trim();
        Some(if last.is_empty() {
            format!("the server {how}")
        } else {
            format!("the server {how}: {last}")
        })
    }

    /// The strict reading a test wants: the exit status, and the summary
    /// line parsed as the server's [`crate::server::Summary`]; an error
    /// when the server had to be killed, could not be reaped, or left no
    /// summary that parses.
    pub fn checked(self) -> Result<(ExitStatus, crate::server::Summary), String> {
        if self.killed {
            return Err(format!(
                "the server did not exit after SIGTERM and was killed; stderr: {}",
                self.stderr
            ));
        }
        let status = self
            .reaped
            .map(|r| ExitStatus::from_raw(r.status))
            .ok_or_else(|| format!("the server could not be reaped; stderr: {}", self.stderr))?;
        let Some(summary) = self.summary else {
            return Err(format!(
                "no summary line ({status}); stderr: {}",
                self.stderr
            ));
        };
        let parsed = serde_json::from_value(summary.clone())
            .map_err(|e| format!("summary is not the expected JSON ({e}): {summary}"))?;
        Ok((status, parsed))
    }
}

impl Launcher {
    /// Starts `c10k serve ARGS…` and waits (at most [`Launcher::patience`])
    /// for its READY line.
    pub fn start(&self, args: &[String]) -> Result<ServerChild, StartError> {
        let exe = match &self.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| StartError::Failed(format!("cannot find this program: {e}")))?,
        };
        let mut cmd = Command::new(exe);
        cmd.arg("serve").args(args);
        let mut server = self.spawn(cmd, "the server")?;
        match server.lines.recv_timeout(self.patience) {
            Ok(line) => match line.strip_prefix("READY ").map(str::parse) {
                Some(Ok(addr)) => {
                    server.addr = addr;
                    Ok(server)
                }
                _ => {
                    let stopped = server.stop();
                    Err(StartError::Failed(format!(
                        "the server said {line:?} instead of READY ({})",
                        stopped.trouble().unwrap_or_default()
                    )))
                }
            },
            Err(e) => {
                let stopped = server.stop();
                let code = stopped.reaped.and_then(|r| r.exit_code());
                let text = stopped.stderr.trim().to_string();
                Err(match (code, e) {
                    (Some(3), _) => {
                        StartError::Unsupported(text.trim_start_matches("c10k serve: ").to_string())
                    }
                    (_, RecvTimeoutError::Timeout) => StartError::Failed(format!(
                        "the server printed no READY within {} s",
                        self.patience.as_secs()
                    )),
                    _ => StartError::Failed(
                        stopped
                            .trouble()
                            .unwrap_or_else(|| "the server exited before READY".into()),
                    ),
                })
            }
        }
    }

    /// Starts a foreign server, `argv` with its placeholders filled in,
    /// listening on `port` of the loopback, pinned to `cpus` (none: not
    /// pinned), with an open-files limit of `nofile` (soft and hard) when
    /// given; waits
    /// (at most [`Launcher::patience`]) until it prints a line starting
    /// `READY` (`READY ip:port` names its address) or a socket listens on
    /// the port (so a connect would succeed).
    pub fn start_foreign(
        &self,
        argv: &[String],
        port: u16,
        cpus: &[usize],
        nofile: Option<u64>,
    ) -> Result<ServerChild, StartError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(StartError::Failed("an empty server command".into()));
        };
        let mut cmd = Command::new(program);
        cmd.args(args);
        if !cpus.is_empty() {
            sys::affinity::pin_child(&mut cmd, cpus);
        }
        if let Some(n) = nofile {
            sys::rlimit::limit_child_nofile(&mut cmd, n);
        }
        let mut server = self.spawn(cmd, program)?;
        server.foreign = true;
        server.patience = GRACE;
        server.addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + self.patience;
        let mut said = None;
        loop {
            match server.lines.recv_timeout(PROBE_EVERY) {
                Ok(line) if line.starts_with("READY") => {
                    if let Some(Ok(addr)) = line.strip_prefix("READY ").map(str::parse) {
                        server.addr = addr;
                    }
                    return Ok(server);
                }
                Ok(line) => said = Some(line),
                Err(RecvTimeoutError::Timeout) => {}
                // Its stdout is closed, so the wait above returns at once:
                // wait for its exit instead (whether it still runs is
                // checked below), and the probes keep their pace.
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = sys::process::exits_within(server.pid() as i32, PROBE_EVERY);
                }
            }
            if listening(port) {
                return Ok(server);
            }
            if !server.running() {
                return Err(StartError::Failed(
                    server
                        .stop()
                        .trouble()
                        .map(|t| format!("{t} before it was ready"))
                        .unwrap_or_else(|| "the server exited before it was ready".into()),
                ));
            }
            if Instant::now() >= deadline {
                let _ = server.stop();
                let last = said
                    .map(|l| format!("; its last line: {l:?}"))
                    .unwrap_or_default();
                return Err(StartError::Failed(format!(
                    "the server neither printed READY nor accepted a connection on port {port} within {} s{last}",
                    self.patience.as_secs()
                )));
            }
        }
    }

    /// Starts `cmd` tied to this process, in its own process group, with
    /// a reader thread on each of its output pipes.
    fn spawn(&self, mut cmd: Command, what: &str) -> Result<ServerChild, StartError> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        sys::process::tie_to_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| StartError::Failed(format!("cannot start {what}: {e}")))?;
        let (Some(stdout), Some(mut err_pipe)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(StartError::Failed("the server has no output pipes".into()));
        };
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err_pipe.read_to_string(&mut s);
            s
        });
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(l) = line else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Ok(ServerChild {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            lines,
            stderr: Some(stderr),
            patience: self.patience,
            foreign: false,
        })
    }
}

/// Whether some socket listens on TCP `port` (any address, IPv4 or
/// IPv6), from /proc/net/tcp and tcp6. A connect would say the same, but
/// the server would accept it and count it: its idle sample could then
/// hold a connection that is gone by the loaded one.
fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|path| {
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines().skip(1).any(|l| {
                let mut f = l.split_whitespace();
                let local = f.nth(1).unwrap_or("");
                // `st` 0A is TCP_LISTEN.
                local.ends_with(&want) && f.nth(1) == Some("0A")
            })
        })
    })
}

impl ServerChild {
    /// Starts this binary as `c10k serve ARGS…` and waits for READY.
    pub fn start(args: &[String]) -> Result<ServerChild, StartError> {
        Launcher::default().start(args)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running (without reaping it).
    pub fn running(&self) -> bool {
        crate::metrics::tree::running(self.pid())
    }

    /// SIGTERM, its summary line, then `wait4`. A server that does not exit
    /// within the launcher's patience is killed with its whole process group.
    /// A foreign server's SIGTERM goes to its whole group, and it has
    /// [`GRACE`] to exit.
    pub fn stop(mut self) -> Stopped {
        let pid = self.pid() as i32;
        let _ = sys::process::kill(if self.foreign { -pid } else { pid }, libc::SIGTERM);
        let deadline = Instant::now() + self.patience;
        let mut summary = None;
        let mut killed = false;
        // Lines until its stdout closes: that is, until the server and every
        // process it forked (which inherit the pipe) are gone.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Ok(v @ serde_json::Value::Object(_)) = serde_json::from_str(&line) {
                        summary = Some(v);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    killed = true;
                    let _ = sys::process::kill(-pid, libc::SIGKILL);
                    break;
                }
            }
        }
        // A server that closed its output early may still be running: it
        // has what is left of its time to exit.
        if !killed {
            let left = deadline.saturating_duration_since(Instant::now());
            if !sys::process::exits_within(pid, left).unwrap_or(true) {
                killed = true;
                let _ = sys::process::kill(-pid, libc::SIGKILL);
            }
        }
        let reaped = sys::process::reap(pid, true).ok().flatten();
        // Anything left in its group (a child that outlived it) goes too.
        let _ = sys::process::kill(-pid, libc::SIGKILL);
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        Stopped {
            summary,
            reaped,
            stderr: stderr.trim().to_string(),
            killed,
            term_is_clean: self.foreign,
        }
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        // Stopped servers were reaped already; this only catches an early
        // return, so no server outlives the cell that started it.
        if self.stderr.is_some() {
            let pid = self.pid() as i32;
            let _ = sys::process::kill(-pid, libc::SIGKILL);
            let _ = sys::process::reap(pid, true);
        }
    }
}
