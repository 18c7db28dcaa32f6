//! Test support: a `c10k serve` child process (READY line, stop, summary),
//! /proc readings of its process tree, and small client helpers. Every wait
//! is bounded; nothing sleeps to wait for readiness.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};

use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use c10k::server::Summary;

/// A test of the binary: `Ok` or a message saying what went wrong.
pub type Test = fn() -> Result<(), libtest_mimic::Failed>;

/// How long any single wait in a test may take before the test fails
/// (a guard against hangs, not a timing assertion).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A running `c10k serve`.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    lines: Receiver<String>,
    stderr: Stderr,
}

/// The server's stderr, collected by a thread until the pipe closes.
struct Stderr(Option<std::thread::JoinHandle<String>>);

impl Stderr {
    /// Everything the server wrote, once it has exited.
    fn text(&mut self) -> String {
        self.0
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// What starting a server gave.
pub enum Started {
    Running(Server),
    /// It exited with code 3: the model cannot run here; the reason.
    Unsupported(String),
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_c10k")
}

impl Server {
    /// Starts `c10k serve ARGS…` on 127.0.0.1 port 0 and waits for READY.
    pub fn start(args: &[String]) -> Result<Started, String> {
        let mut child = Command::new(bin())
            .arg("serve")
            .args(args)
            // Its own process group, so cleanup reaches every process the
            // server made, even those whose parent is gone.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start c10k: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut stderr_pipe = child.stderr.take().ok_or("no stderr")?;
        let mut stderr = Stderr(Some(std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr_pipe.read_to_string(&mut s);
            s
        })));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        match lines.recv_timeout(PATIENCE) {
            Ok(line) => {
                let addr = line
                    .strip_prefix("READY ")
                    .ok_or_else(|| format!("first line is not READY: {line:?}"))?
                    .parse()
                    .map_err(|e| format!("bad READY address in {line:?}: {e}"))?;
                Ok(Started::Running(Server {
                    child,
                    addr,
                    lines,
                    stderr,
                }))
            }
            Err(_) => {
                let status = wait_bounded(&mut child)?;
                let err = stderr.text();
                if status.code() == Some(3) {
                    Ok(Started::Unsupported(err.trim().to_string()))
                } else {
                    Err(format!("server exited ({status}) before READY: {err}"))
                }
            }
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn connect(&self) -> TcpStream {
        connect(self.addr)
    }

    /// The process and all its descendants.
    pub fn tree(&self) -> Vec<i32> {
        let mut pids = vec![self.pid()];
        pids.extend(descendants(self.pid()));
        pids
    }

    /// Resident memory of the whole process tree, in KiB.
    pub fn rss_kib(&self) -> u64 {
        self.tree()
            .iter()
            .filter_map(|&p| status_kib(p, "VmRSS:"))
            .sum()
    }

    /// CPU time (user + system) of the whole tree, in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.tree().iter().filter_map(|&p| cpu_ticks(p)).sum()
    }

    /// Sends SIGTERM and waits (bounded) for the exit and the summary line.
    pub fn stop(mut self) -> Result<(ExitStatus, Summary), String> {
        c10k::sys::process::kill(self.pid(), libc_sigterm()).map_err(|e| e.to_string())?;
        let status = wait_bounded(&mut self.child)?;
        let line = match self.lines.recv_timeout(PATIENCE) {
            Ok(l) => l,
            Err(_) => {
                return Err(format!(
                    "no summary line ({status}); stderr: {}",
                    self.stderr.text()
                ))
            }
        };
        let summary: Summary = serde_json::from_str(&line)
            .map_err(|e| format!("summary is not the expected JSON ({e}): {line}"))?;
        Ok((status, summary))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed test must not leave a server (or its children) behind:
        // kill the whole process group (after a clean stop, nobody is left).
        let _ = c10k::sys::process::kill(-self.pid(), 9);
        let _ = self.child.wait();
    }
}

/// A blocking client connection whose reads and writes fail after
/// [`PATIENCE`] instead of hanging.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect to the server");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    s
}

fn libc_sigterm() -> i32 {
    rustix::process::Signal::TERM.as_raw()
}

/// Waits for `child` to exit, failing after [`PATIENCE`].
fn wait_bounded(child: &mut Child) -> Result<ExitStatus, String> {
    let pid = child.id() as i32;
    // wait() blocks; a watchdog thread kills the child if it takes too long.
    let (tx, rx) = channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(PATIENCE).is_err() {
            let _ = c10k::sys::process::kill(pid, 9);
            return true;
        }
        false
    });
    let status = child.wait().map_err(|e| e.to_string());
    let _ = tx.send(());
    if watchdog.join().unwrap_or(false) {
        return Err(format!("server did not exit within {PATIENCE:?}"));
    }
    status
}

/// Every live descendant of `pid`, from /proc/*/stat parent links.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(fields) = stat_fields(p) {
                if let Some(pp) = fields.get(1).and_then(|s| s.parse::<i32>().ok()) {
                    parent_of.push((p, pp));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(c, pp) in &parent_of {
            if pp == p && !out.contains(&c) {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

/// Fields of /proc/PID/stat after the command name: state, ppid, …
pub fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// utime + stime of one process (including its exited, reaped children).
fn cpu_ticks(pid: i32) -> Option<u64> {
    let f = stat_fields(pid)?;
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(n(11)? + n(12)? + n(13)? + n(14)?)
}

/// Clock ticks per second, for [`Server::cpu_ticks`].
pub fn ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// A `Name:   123 kB` line of /proc/PID/status, in KiB.
pub fn status_kib(pid: i32, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Whether `pid` still exists (a zombie counts as existing).
pub fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// A deterministic byte pattern, so 64 MiB can be checked without a copy.
pub fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 9)) as u8
}

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Whether the binary panicked (Rust's panic message or exit 101).
    pub fn panicked(&self) -> bool {
        self.code == Some(101) || self.stderr.contains("panicked at")
    }
}

/// Runs `c10k ARGS…` with `stdin` closed, collecting both outputs, and
/// kills it if it runs past [`PATIENCE`] (an error, as a hang is).
pub fn run_c10k(args: &[&str]) -> Result<Ran, String> {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start c10k: {e}"))?;
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let out = collect(Box::new(child.stdout.take().ok_or("no stdout")?));
    let err = collect(Box::new(child.stderr.take().ok_or("no stderr")?));
    let status = wait_bounded(&mut child).map_err(|e| format!("c10k {}: {e}", args.join(" ")))?;
    Ok(Ran {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}
