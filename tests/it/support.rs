//! Test support: a `c10k serve` child process (the library's launcher,
//! with the strict stop a test wants), /proc readings of its process tree,
//! and small client helpers. Every wait is bounded; nothing sleeps to wait
//! for readiness.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use std::sync::mpsc::channel;
use std::time::Duration;

use c10k::child::server::{Launcher, ServerChild, StartError};
use c10k::server::Summary;
use libtest_mimic::{Completion, Failed, Trial};

/// What a test gives when it did not fail: `()`, or, for a test that can
/// find it cannot run here, a [`Completion`] (ignored, with the reason).
pub trait Outcome {
    fn completion(self) -> Completion;
}

impl Outcome for () {
    fn completion(self) -> Completion {
        Completion::Completed
    }
}

impl Outcome for Completion {
    fn completion(self) -> Completion {
        self
    }
}

/// The group of the module at `module_path` (`it::agents`): its name
/// (`agents`), the first part of its tests' names.
pub fn group(module_path: &str) -> &str {
    module_path
        .split_once("::")
        .map_or(module_path, |(_, module)| module)
}

/// The trial of `test`, named `GROUP::NAME`: `Err` fails it, and a test
/// that returns a [`Completion`] may have it ignored with its reason.
pub fn trial<T: Outcome + 'static>(
    group: &str,
    name: &str,
    test: fn() -> Result<T, Failed>,
) -> Trial {
    Trial::ignorable_test(format!("{group}::{name}"), move || {
        test().map(Outcome::completion)
    })
}

/// How long any single wait in a test may take before the test fails
/// (a guard against hangs, not a timing assertion).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A running `c10k serve` (in a process group of its own, so that
/// dropping it reaches every process the server made).
pub struct Server {
    child: ServerChild,
    pub addr: SocketAddr,
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
    /// Starts `c10k serve ARGS…` and waits for READY.
    pub fn start(args: &[String]) -> Result<Started, String> {
        let launcher = Launcher {
            program: Some(bin().into()),
            patience: PATIENCE,
        };
        match launcher.start(args) {
            Ok(child) => Ok(Started::Running(Server {
                addr: child.addr,
                child,
            })),
            Err(StartError::Unsupported(why)) => Ok(Started::Unsupported(why)),
            Err(StartError::Failed(why)) => Err(why),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.pid() as i32
    }

    /// Sends SIGTERM and waits (bounded) for the exit and the summary line.
    pub fn stop(self) -> Result<(ExitStatus, Summary), String> {
        self.child.stop().checked()
    }
}

/// Waits for `child` to exit, failing after [`PATIENCE`].
pub fn wait_bounded(child: &mut Child) -> Result<ExitStatus, String> {
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
        return Err(format!("it did not exit within {PATIENCE:?}"));
    }
    status
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
    let pipes = Pipes::take(&mut child)?;
    let status = wait_bounded(&mut child).map_err(|e| format!("c10k {}: {e}", args.join(" ")))?;
    let (stdout, stderr) = pipes.read();
    Ok(Ran {
        code: status.code(),
        stdout,
        stderr,
    })
}

/// A child's stdout and stderr, each read to its end on its own thread so
/// that neither pipe fills and stalls the child while it runs.
pub struct Pipes {
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
}

impl Pipes {
    /// Starts reading both pipes of `child` (spawned with them piped).
    pub fn take(child: &mut Child) -> Result<Pipes, String> {
        let collect = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = pipe.read_to_string(&mut s);
                s
            })
        };
        Ok(Pipes {
            out: collect(Box::new(child.stdout.take().ok_or("no stdout")?)),
            err: collect(Box::new(child.stderr.take().ok_or("no stderr")?)),
        })
    }

    /// Both outputs, once the child closed them (it exited).
    pub fn read(self) -> (String, String) {
        (
            self.out.join().unwrap_or_default(),
            self.err.join().unwrap_or_default(),
        )
    }
}

/// A fresh, empty directory for one test.
/// The asyncio peer (`peers/asyncio_echo.py`) on a free port, started as
/// a user starts their own server: the child and the address it said it
/// listens on (its `READY` line).
pub fn asyncio_peer() -> Result<(Child, String), Failed> {
    use std::io::{BufRead, BufReader};
    let mut server = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/asyncio_echo.py"))
        .arg("0")
        .stdout(Stdio::piped())
        .spawn()?;
    let mut ready = String::new();
    if let Some(out) = server.stdout.take() {
        BufReader::new(out).read_line(&mut ready)?;
    }
    let addr = ready
        .trim()
        .strip_prefix("READY ")
        .unwrap_or("")
        .to_string();
    Ok((server, addr))
}

pub fn scratch(name: &str) -> Result<PathBuf, Failed> {
    let dir = std::env::temp_dir().join(format!("c10k-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The one results directory `c10k run --out OUT` made.
pub fn results_dir(out: &Path) -> Result<PathBuf, Failed> {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    match dirs.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "expected one results directory in {}, found {dirs:?}",
            out.display()
        )
        .into()),
    }
}

/// Where column `name` of results.csv is.
pub fn column(header: &csv::StringRecord, name: &str) -> Result<usize, String> {
    header
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| format!("results.csv has no {name} column"))
}

/// The records of results.jsonl that count, parsed: a repeated cell's last;
/// fails on a line that does not parse.
pub fn lines(dir: &Path) -> Result<Vec<serde_json::Value>, Failed> {
    let text = std::fs::read_to_string(dir.join("results.jsonl"))?;
    let all: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("bad line {l:?}: {e}")))
        .collect::<Result<_, String>>()?;
    // A run disturbed from outside is run again (`repeat` 1, 2, …) and the
    // repeat counts: one record per cell, the last, where the cell first
    // stood; what a loaded machine repeats does not change a test's count.
    let mut out: Vec<serde_json::Value> = Vec::new();
    for record in all {
        match out
            .iter_mut()
            .find(|r| r["id"] == record["id"] && r["id"].is_string())
        {
            Some(r) if record["repeat"].as_u64() > r["repeat"].as_u64() => *r = record,
            _ => out.push(record),
        }
    }
    Ok(out)
}

/// `Ok` when the command succeeded; otherwise its exit code and stderr,
/// after `what` (e.g. `"resume: "`).
pub fn succeeded(o: &std::process::Output, what: &str) -> Result<(), Failed> {
    if o.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what}exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    )
    .into())
}

/// Drives `server` with `c10k load ARGS --json` (in a scratch directory
/// named `name`), returning its JSON.
pub fn load_json(server: &Server, name: &str, args: &[&str]) -> Result<serde_json::Value, Failed> {
    let dir = scratch(name)?;
    let json = dir.join("load.json");
    let o = Command::new(bin())
        .arg("load")
        .arg(server.addr.to_string())
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()?;
    succeeded(&o, "c10k load: ")?;
    Ok(serde_json::from_slice(&std::fs::read(&json)?)?)
}
