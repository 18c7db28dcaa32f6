//! Test support: how a test runs ([`trial`]), its scratch directories
//! ([`scratch`]), checks that fail saying what was expected and what came
//! ([`expect_eq`], [`expect_contains`], [`ensure`]), a `c10k serve` child
//! process (the library's launcher, with the strict stop a test wants),
//! /proc readings of its process tree, and small client helpers. Every
//! wait is bounded; nothing sleeps to wait for readiness.
//!
//! A test takes its directory from `scratch("module-what")?` and never
//! removes it by hand: the directory goes when the test passes (or has
//! itself ignored), and stays when it fails, the failure naming it ("its
//! files are kept in …"); what one test makes and later ones read goes in
//! a [`shared_scratch`] directory, removed once the whole run passed. A
//! check is one line whose failure shows both sides, not only what was
//! wanted:
//!
//! ```ignore
//! let dir = scratch("agents-counts")?;
//! let (code, err) = load(&dir, &addr, &["-c", "30", "--json", &json])?;
//! expect_eq("exit code", Some(0), code)?;
//! expect_contains("stderr", &err, "3 agents")?;
//! let j: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("r.json"))?)?;
//! expect_eq("connections established", Some(30), j["connections"]["established"].as_u64())?;
//! ensure(ids.len() == 30, || format!("connection ids {ids:?}"))?;
//! ```

use std::cell::RefCell;
use std::fmt::{Debug, Display};
use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, channel};
use std::sync::{Arc, Mutex, MutexGuard};
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

/// The trial of `test`, named `GROUP::NAME`: `Err` (or a panic) fails it,
/// and a test that returns a [`Completion`] may have it ignored with its
/// reason. It settles the test's [`scratch`] directories once the test
/// returned: removed when it passed or was ignored, kept when it failed,
/// the failure naming them.
///
/// libtest-mimic runs each trial's closure whole on one thread (a worker
/// of its pool, or the main thread with `--test-threads 1`), and no test
/// outlives it, so the trial's record of its directories is found through
/// that thread: [`scratch`] called on the test's own thread joins it.
pub fn trial<T: Outcome + 'static>(
    group: &str,
    name: &str,
    test: impl FnOnce() -> Result<T, Failed> + Send + 'static,
) -> Trial {
    Trial::ignorable_test(format!("{group}::{name}"), move || {
        let record = Arc::new(Mutex::new(Record::default()));
        let outer = TRIAL.with(|t| t.replace(Some(Arc::clone(&record))));
        // Caught here rather than by libtest-mimic, so that a panic is
        // settled as any failure is: its directories kept and named.
        // (Unwind safety asserted as libtest-mimic asserts it: a panicked
        // test's state is not read again.)
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(test));
        TRIAL.with(|t| t.replace(outer));
        let ran = match ran {
            Ok(ran) => ran.map(Outcome::completion),
            Err(panic) => Err(panicked(&*panic)),
        };
        settle(&record, ran)
    })
}

/// A panic as libtest-mimic words it: `test panicked: MESSAGE`.
fn panicked(payload: &(dyn std::any::Any + Send)) -> Failed {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    match message {
        Some(m) => format!("test panicked: {m}").into(),
        None => "test panicked".into(),
    }
}

/// Ends a trial's record: on success its directories are removed; on
/// failure they are kept, and the failure says where.
fn settle(record: &Mutex<Record>, ran: Result<Completion, Failed>) -> Result<Completion, Failed> {
    let mut record = lock(record);
    match ran {
        Ok(done) => {
            record.passed = Some(true);
            for dir in &record.dirs {
                let _ = std::fs::remove_dir_all(dir);
            }
            Ok(done)
        }
        Err(failed) => {
            record.passed = Some(false);
            let kept: Vec<String> = record
                .dirs
                .iter()
                .filter(|d| d.exists())
                .map(|d| d.display().to_string())
                .collect();
            if kept.is_empty() {
                return Err(failed);
            }
            let note = format!("(its files are kept in {})", kept.join(", "));
            Err(match failed.message() {
                Some(m) => format!("{m}\n{note}").into(),
                None => note.into(),
            })
        }
    }
}

/// The scratch directories one trial made, and, once it returned, whether
/// it passed.
#[derive(Default)]
struct Record {
    dirs: Vec<PathBuf>,
    passed: Option<bool>,
}

fn lock(record: &Mutex<Record>) -> MutexGuard<'_, Record> {
    // A panic while it was held leaves the list whole: read on.
    record
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// The record of the trial running on this thread, if one is.
    static TRIAL: RefCell<Option<Arc<Mutex<Record>>>> = const { RefCell::new(None) };
}

/// A fresh, empty directory for one test (`$TMPDIR/c10k-NAME-PID-N`), from
/// [`scratch`]. It reads as a [`Path`] (`dir.join("r.json")`, `&dir`
/// where a path is taken) and is removed for the test, never by hand:
///
/// - made during a trial, on its thread: the trial removes it once the
///   test passed, or keeps it and names it in the failure (dropping the
///   value earlier changes nothing: the outcome decides);
/// - made anywhere else (a thread the test started, which the trial
///   cannot see): removed when dropped, unless that thread is panicking.
///   No test makes one off its thread today; one that must, and wants its
///   files kept on failure, makes the directory on its own thread and
///   hands the thread the path.
pub struct Scratch {
    path: PathBuf,
    trial: Option<Arc<Mutex<Record>>>,
}

impl Scratch {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.path.fmt(f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let remove = match &self.trial {
            // Its trial settles it, or did: removed only if it passed (a
            // value that outlived its trial's return).
            Some(record) => lock(record).passed == Some(true),
            None => !std::thread::panicking(),
        };
        if remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
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

    /// Starts a server that is not c10k's, `argv` (which must listen on
    /// 127.0.0.1:`port`), through the same launcher `c10k run` starts
    /// foreign servers with: ready once it says READY or its port listens.
    pub fn foreign(argv: &[String], port: u16) -> Result<Server, String> {
        let launcher = Launcher {
            program: None,
            patience: PATIENCE,
        };
        match launcher.start_foreign(argv, port, &[], None) {
            Ok(child) => Ok(Server {
                addr: child.addr,
                child,
            }),
            Err(StartError::Unsupported(why) | StartError::Failed(why)) => {
                Err(format!("{argv:?}: {why}"))
            }
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.pid() as i32
    }

    /// Sends SIGTERM and waits (bounded) for the exit and the summary line.
    pub fn stop(self) -> Result<(ExitStatus, Summary), String> {
        self.child.stop().checked()
    }

    /// [`Server::stop`] for a server that is not c10k's (no summary line):
    /// an error when it did not end cleanly on SIGTERM.
    pub fn stop_foreign(self) -> Result<(), String> {
        self.child.stop().trouble().map_or(Ok(()), Err)
    }
}

/// Waits for `child` to exit, failing after [`PATIENCE`].
pub fn wait_bounded(child: &mut Child) -> Result<ExitStatus, String> {
    wait_within(child, PATIENCE)
}

/// [`wait_bounded`] with a guard of `limit`: for a run whose own budget
/// is longer than [`PATIENCE`] (still a guard against a hang, not a
/// timing assertion).
pub fn wait_within(child: &mut Child, limit: Duration) -> Result<ExitStatus, String> {
    let pid = child.id() as i32;
    // wait() blocks; a watchdog thread kills the child if it takes too long.
    let (tx, rx) = channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            let _ = c10k::sys::process::kill(pid, 9);
            return true;
        }
        false
    });
    let status = child.wait().map_err(|e| e.to_string());
    let _ = tx.send(());
    if watchdog.join().unwrap_or(false) {
        return Err(format!("it did not exit within {limit:?}"));
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
    run_c10k_within(args, PATIENCE)
}

/// [`run_c10k`] of a run whose own budget passes [`PATIENCE`], guarded
/// against a hang at `limit` instead.
pub fn run_c10k_within(args: &[&str], limit: Duration) -> Result<Ran, String> {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start c10k: {e}"))?;
    let pipes = Pipes::take(&mut child)?;
    let status =
        wait_within(&mut child, limit).map_err(|e| format!("c10k {}: {e}", args.join(" ")))?;
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

/// A fresh, empty directory for one test, `$TMPDIR/c10k-NAME-PID-N`
/// (NAME says whose, `module-what`; N counts the directories this process
/// made, so two tests, or two turns of a loop, never share one), removed
/// when the test passes and kept, and named, when it fails: see
/// [`Scratch`].
pub fn scratch(name: &str) -> Result<Scratch, Failed> {
    scratch_in(&std::env::temp_dir(), name)
}

/// [`scratch`] in `base` rather than `$TMPDIR`: `BASE/c10k-NAME-PID-N`
/// (the report's tests keep what Chromium opens under the build's
/// `CARGO_TARGET_TMPDIR`).
pub fn scratch_in(base: &Path, name: &str) -> Result<Scratch, Failed> {
    let path = fresh(base, name)?;
    let trial = TRIAL.with(|t| t.borrow().clone());
    if let Some(record) = &trial {
        lock(record).dirs.push(path.clone());
    }
    Ok(Scratch { path, trial })
}

/// A fresh, empty `BASE/c10k-NAME-PID-N`.
fn fresh(base: &Path, name: &str) -> Result<PathBuf, Failed> {
    static MADE: AtomicUsize = AtomicUsize::new(0);
    let n = MADE.fetch_add(1, Ordering::Relaxed);
    let path = base.join(format!("c10k-{name}-{}-{n}", std::process::id()));
    // What an earlier process of the same pid left (it failed): this one
    // starts empty.
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The directories made by [`shared_scratch`].
static SHARED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A fresh directory that outlasts the test that made it, for what many
/// tests read and one makes (a results directory made once, behind a
/// `OnceLock`): no trial owns it, so none removes it; `main` does once
/// every test ran ([`settle_shared`]). A test's own files go in
/// [`scratch`].
pub fn shared_scratch(name: &str) -> Result<PathBuf, Failed> {
    let path = fresh(&std::env::temp_dir(), name)?;
    SHARED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(path.clone());
    Ok(path)
}

/// Once every test ran: removes the [`shared_scratch`] directories when
/// none failed, or keeps them and says where when one did.
pub fn settle_shared(failed: bool) {
    let shared = SHARED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for dir in shared.iter() {
        if failed {
            eprintln!("files shared by the tests are kept in {}", dir.display());
        } else {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `Ok` when `got` is `expected`; otherwise a failure naming `what` and
/// both, as `Debug` shows them: `connections: expected 30, got 29`.
/// `expected` and `got` may differ in type where they compare (a
/// `Vec<String>` against `["a", "b"]`). Read a JSON field out first
/// (`.as_u64()`, `.as_str()`): a `Value` shows as `Number(29)`.
pub fn expect_eq<E: Debug, G: Debug + PartialEq<E>>(
    what: impl Display,
    expected: E,
    got: G,
) -> Result<(), Failed> {
    if got == expected {
        return Ok(());
    }
    Err(format!("{what}: expected {expected:?}, got {got:?}").into())
}

/// `Ok` when `haystack` contains `needle`; otherwise a failure naming
/// `what`, the needle and the whole haystack (quoted when it is one line,
/// as it stands when it is more): `stderr: expected "ports to reach" in
/// "c10k load: …"`.
pub fn expect_contains(what: impl Display, haystack: &str, needle: &str) -> Result<(), Failed> {
    if haystack.contains(needle) {
        return Ok(());
    }
    if haystack.trim_end().contains('\n') {
        return Err(format!("{what}: expected {needle:?} in:\n{haystack}").into());
    }
    Err(format!("{what}: expected {needle:?} in {haystack:?}").into())
}

/// `Ok` when `ok`; otherwise a failure with what `said` gives, which
/// should show what came (`format!("agents {}", j["agents"])`), not only
/// what was wanted. For a check the two above do not word.
pub fn ensure(ok: bool, said: impl FnOnce() -> String) -> Result<(), Failed> {
    if ok {
        return Ok(());
    }
    Err(said().into())
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

// ------------------------------------------------ tools the tests install

/// The longest an installer may take before it is killed: a guard against
/// a hang, not a timing assertion.
const INSTALL_PATIENCE: Duration = Duration::from_secs(900);

/// The file `name` names on PATH.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// What `find` finds, after `scripts/SCRIPT` installed it when it was
/// missing; a failure names the tool and the installer's last line.
pub fn installed(
    find: impl Fn() -> Option<PathBuf>,
    script: &str,
    tool: &str,
) -> Result<PathBuf, Failed> {
    if let Some(p) = find() {
        return Ok(p);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(script);
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{tool}-install.log"));
    let mut cmd = Command::new("sh");
    cmd.arg(&script);
    let status = run_bounded(cmd, &log, INSTALL_PATIENCE)?;
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let last = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    match (status, find()) {
        (Some(0), Some(p)) => Ok(p),
        _ => Err(format!(
            "{tool} is not installed and {} could not install it (no network?): {last}",
            script.display()
        )
        .into()),
    }
}

/// Runs `cmd` in its own process group with stdout and stderr into `log`;
/// kills the whole group after `patience`. The exit code, `None` when
/// killed by a signal.
pub fn run_bounded(
    mut cmd: Command,
    log: &Path,
    patience: Duration,
) -> Result<Option<i32>, Failed> {
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(patience) {
        Ok(status) => status.map_err(|e| e.to_string())?,
        Err(_) => {
            let _ = c10k::sys::process::kill(-pid, libc::SIGKILL);
            let _ = waiter.join();
            return Err(format!("{cmd:?} was still running after {patience:?}: killed").into());
        }
    };
    let _ = waiter.join();
    // Helpers Chromium left in its group go too.
    let _ = c10k::sys::process::kill(-pid, libc::SIGKILL);
    Ok(status.code())
}
