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
//! A stop waits for the server's own exit (a pidfd), never for its output
//! to close: a process it started in a session of its own (`setsid`)
//! inherits its stdout and stderr and may hold them for ever. Such
//! processes, found in its tree before the SIGTERM, are killed once it has
//! exited, and the output is read until the grace period ends at most
//! ([`super::pipes`]); [`Stopped`] says which of these happened.
//!
//! The one launcher of servers: the runner's cells, the integration tests
//! and the benches all start and stop their servers here ([`Launcher`]
//! says which binary and how long to wait; [`Stopped::checked`] is the
//! strict reading a test wants). Cost: one reader thread per server (its
//! stdout and stderr), a pidfd wait and a blocking `wait4` when it is
//! stopped, and for a foreign server one scan of its process tree.

use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use super::pipes::Output;
use crate::sys;

/// How long a server may take to print READY, and to exit after SIGTERM.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// How long a foreign server may take to exit after SIGTERM before its
/// process group is killed.
pub const GRACE: Duration = Duration::from_secs(5);

/// How often a foreign server that has not printed READY is checked for a
/// listening socket.
pub const PROBE_EVERY: Duration = Duration::from_millis(20);

/// How long the output of a stopped server is read at least, after its
/// grace period: what it wrote before it exited is in the pipes already,
/// and processes killed at the end take a moment to close their copies.
const LINGER: Duration = Duration::from_millis(200);

/// A stop's patience once the user interrupted the command (Ctrl-C or
/// SIGTERM): they asked to stop within a second, so a server that has not
/// exited by then is killed.
const INTERRUPTED_PATIENCE: Duration = Duration::from_secs(1);

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
    /// Its stdout and stderr; `None` once stopped.
    output: Option<Output>,
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
    /// How long it had to exit after SIGTERM.
    pub grace: Duration,
    /// Processes it started outside its process group (`setsid`) still
    /// running when it had exited, killed then: `PID (NAME)` each.
    pub outlived: Vec<String>,
    /// Its stdout or stderr was still open when the reading ended: a
    /// process not found in its tree holds it. Not waited for.
    pub output_held: bool,
}

impl Stopped {
    /// How it ended, in words, when that was not a clean exit 0.
    pub fn trouble(&self) -> Option<String> {
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
            Some(_) if self.killed => format!(
                "did not exit after SIGTERM and was killed {} after it",
                seconds(self.grace)
            ),
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

    /// What else its stop found, in words, though the server itself ended
    /// well: processes it left behind, an output held open.
    pub fn notes(&self) -> Option<String> {
        let mut notes = Vec::new();
        if !self.outlived.is_empty() {
            notes.push(format!(
                "{} it started in a session of its own outlived it and {} killed: {}",
                if self.outlived.len() == 1 {
                    "a process"
                } else {
                    "processes"
                },
                if self.outlived.len() == 1 {
                    "was"
                } else {
                    "were"
                },
                self.outlived.join(", ")
            ));
        }
        if self.output_held {
            notes.push(
                "its output stayed open after it was stopped (a process outside its tree holds it); not waited for"
                    .to_string(),
            );
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }

    /// The strict reading a test wants: the exit status, and the summary
    /// line parsed as the server's [`crate::server::Summary`]; an error
    /// when the server had to be killed, could not be reaped, or left no
    /// summary that parses.
    pub fn checked(self) -> Result<(ExitStatus, crate::server::Summary), String> {
        if self.killed {
            return Err(format!(
                "the server did not exit after SIGTERM and was killed {} after it; stderr: {}",
                seconds(self.grace),
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
        self.start_telling(args, &|_| {})
    }

    /// [`Launcher::start`], telling `spawned` the server's pid (its
    /// process group) as soon as it exists, so another thread can stop
    /// it while this one waits for READY.
    pub fn start_telling(
        &self,
        args: &[String],
        spawned: &dyn Fn(u32),
    ) -> Result<ServerChild, StartError> {
        let exe = match &self.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| StartError::Failed(format!("cannot find this program: {e}")))?,
        };
        let mut cmd = Command::new(exe);
        cmd.arg("serve").args(args);
        let mut server = self.spawn(cmd, "the server")?;
        spawned(server.pid());
        match server.line(self.patience) {
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
        self.start_foreign_telling(argv, port, cpus, nofile, &|_| {})
    }

    /// [`Launcher::start_foreign`], telling `spawned` the server's pid as
    /// [`Launcher::start_telling`] does.
    pub fn start_foreign_telling(
        &self,
        argv: &[String],
        port: u16,
        cpus: &[usize],
        nofile: Option<u64>,
        spawned: &dyn Fn(u32),
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
        spawned(server.pid());
        server.foreign = true;
        server.patience = GRACE;
        server.addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + self.patience;
        let mut said = None;
        loop {
            match server.line(PROBE_EVERY) {
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
    /// a reader thread on its output pipes.
    fn spawn(&self, mut cmd: Command, what: &str) -> Result<ServerChild, StartError> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        sys::process::tie_to_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| StartError::Failed(format!("cannot start {what}: {e}")))?;
        let pid = child.id() as i32;
        let gone = |why: String| {
            let _ = sys::process::kill(-pid, libc::SIGKILL);
            let _ = sys::process::reap(pid, true);
            StartError::Failed(why)
        };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(gone("the server has no output pipes".into()));
        };
        let output = Output::start(stdout, stderr)
            .map_err(|e| gone(format!("cannot read {what}'s output: {e}")))?;
        Ok(ServerChild {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            output: Some(output),
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

    /// The next line of its stdout, waiting at most `timeout`.
    fn line(&self, timeout: Duration) -> Result<String, RecvTimeoutError> {
        match &self.output {
            Some(o) => o.line(timeout),
            None => Err(RecvTimeoutError::Disconnected),
        }
    }

    /// SIGTERM, a wait for its exit, `wait4`, then its summary line. A
    /// server that does not exit within the launcher's patience is killed
    /// with its whole process group. A foreign server's SIGTERM goes to its
    /// whole group, and it has [`GRACE`] to exit; processes it started
    /// outside its group are killed once it has exited. Its output is read
    /// until EOF or the end of the grace period (at least [`LINGER`]),
    /// whichever comes first.
    pub fn stop(self) -> Stopped {
        let pid = self.pid() as i32;
        let started = Instant::now();
        // c10k serve keeps its children in its group; another server may
        // have started some elsewhere.
        let escaped = if self.foreign {
            Tree::find(self.pid(), false)
        } else {
            Tree::default()
        };
        let _ = sys::process::kill(if self.foreign { -pid } else { pid }, libc::SIGTERM);
        self.reap_after(started, escaped)
    }

    /// SIGTERM to its own process only, as `kill PID` or a container stop
    /// sends it, and a wait of up to `grace` for it to exit; then the
    /// processes of its tree (seen just before the signal) still running,
    /// which are killed, and the rest of a stop.
    pub fn terminate(self, grace: Duration) -> Terminated {
        let pid = self.pid() as i32;
        let started = Instant::now();
        let tree = Tree::find(self.pid(), true);
        let _ = sys::process::kill(pid, libc::SIGTERM);
        let exited = sys::process::exits_within(pid, grace).unwrap_or(true);
        let left = tree.kill_running();
        Terminated {
            exited,
            left,
            stopped: self.reap_after(started, Tree::default()),
        }
    }

    /// The end of a stop whose SIGTERM went out at `started`: the wait for
    /// its exit (SIGKILL to its group after its patience, or after a second
    /// once the command was interrupted), `wait4`, what
    /// is left of its group and `escaped` killed, its output read.
    fn reap_after(mut self, started: Instant, escaped: Tree) -> Stopped {
        let pid = self.pid() as i32;
        if sys::signals::interrupted() {
            self.patience = self.patience.min(INTERRUPTED_PATIENCE);
        }
        // Its own exit, not its output's EOF: a process that inherited the
        // output may hold it long after.
        let left = (started + self.patience).saturating_duration_since(Instant::now());
        let killed = !sys::process::exits_within(pid, left).unwrap_or(true);
        if killed {
            let _ = sys::process::kill(-pid, libc::SIGKILL);
        }
        let reaped = sys::process::reap(pid, true).ok().flatten();
        // Anything left in its group (a child that outlived it) goes too,
        // and so does what it started outside the group.
        let _ = sys::process::kill(-pid, libc::SIGKILL);
        let outlived = escaped.kill_running();
        let by = (started + self.patience).max(Instant::now() + LINGER);
        let drained = self.output.take().map(|o| o.finish(by)).unwrap_or_default();
        let summary =
            drained
                .lines
                .iter()
                .rev()
                .find_map(|line| match serde_json::from_str(line) {
                    Ok(v @ serde_json::Value::Object(_)) => Some(v),
                    _ => None,
                });
        Stopped {
            summary,
            reaped,
            stderr: drained.stderr.trim().to_string(),
            killed,
            term_is_clean: self.foreign,
            grace: self.patience,
            outlived,
            output_held: drained.held_open,
        }
    }
}

/// `d` as `5 s` or `0.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// What SIGTERM to a server's own process did ([`ServerChild::terminate`]).
#[derive(Debug)]
pub struct Terminated {
    /// It exited within the grace period.
    pub exited: bool,
    /// Processes of its tree still running when it had exited (or the
    /// grace period was over), killed then: `PID (NAME)` each.
    pub left: Vec<String>,
    pub stopped: Stopped,
}

/// Processes of a server's tree, each held by a pidfd so a signal reaches
/// that process and no other (a pid can be reused once its process is
/// gone).
#[derive(Default)]
struct Tree(Vec<(u32, String, OwnedFd)>);

impl Tree {
    /// The descendants of `root` now: all of them, or (`all` false) those
    /// outside `root`'s process group, which a signal to the group misses.
    fn find(root: u32, all: bool) -> Tree {
        use rustix::process::{pidfd_open, Pid, PidfdFlags};
        let found = crate::metrics::tree::descendants(root)
            .into_iter()
            .filter(|&p| p != root && (all || process_group(p).is_some_and(|g| g != root)))
            .filter_map(|p| {
                let fd = pidfd_open(Pid::from_raw(p as i32)?, PidfdFlags::empty()).ok()?;
                let name = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
                Some((p, name.trim().to_string(), fd))
            })
            .collect();
        Tree(found)
    }

    /// Kills those still running and waits (at most [`KILLED_WITHIN`] in
    /// all) for them to be gone, so a caller told "killed" finds them so;
    /// `PID (NAME)` of each.
    fn kill_running(self) -> Vec<String> {
        use rustix::process::{pidfd_send_signal, Signal};
        let killed: Vec<_> = self
            .0
            .into_iter()
            .filter(|(_, _, fd)| !exited_within(fd, Duration::ZERO))
            .inspect(|(_, _, fd)| {
                let _ = pidfd_send_signal(fd, Signal::KILL);
            })
            .collect();
        let by = Instant::now() + KILLED_WITHIN;
        killed
            .into_iter()
            .map(|(pid, name, fd)| {
                let _ = exited_within(&fd, by.saturating_duration_since(Instant::now()));
                format!("{pid} ({name})")
            })
            .collect()
    }
}

/// How long a stop waits, in all, for the processes it killed with SIGKILL
/// to be gone (a killed process exits as soon as the kernel runs it; this
/// bounds a machine too busy to).
const KILLED_WITHIN: Duration = Duration::from_secs(2);

/// Whether the process a pidfd refers to has exited within `wait` (an
/// error reads as not yet).
fn exited_within(fd: &OwnedFd, wait: Duration) -> bool {
    sys::process::pidfd_exits_within(fd.as_fd(), wait).unwrap_or(false)
}

/// The process group of `pid`, from /proc/PID/stat (the third field after
/// the command name).
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    sys::process::stat_fields(&stat)?.nth(2)?.parse().ok()
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        // Stopped servers were reaped already; this only catches an early
        // return, so no server outlives the cell that started it.
        if self.output.is_some() {
            let pid = self.pid() as i32;
            let _ = sys::process::kill(-pid, libc::SIGKILL);
            let _ = sys::process::reap(pid, true);
        }
    }
}
