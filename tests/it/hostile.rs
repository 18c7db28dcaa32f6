//! Hostile and careless input, each case as a careless or hostile user
//! would meet it: bad flags, lying and dying servers, signals, odd output
//! paths, damaged results directories, two runs on one directory. Every
//! case asserts the exit code, the one-line message and that nothing
//! already measured was lost; a panic anywhere fails the case.

use std::process::{Command, Stdio};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::misbehave::{Fault, Misbehave};
use crate::support::{bin, run_c10k, Ran, Test, PATIENCE};

pub const TESTS: &[(&str, Test)] = &[
    ("cpus_this_machine_lacks", cpus_this_machine_lacks),
    ("missing_arguments_are_named", missing_arguments_are_named),
    ("rates_out_of_range", rates_out_of_range),
    (
        "server_args_are_checked_with_the_plan",
        server_args_are_checked_with_the_plan,
    ),
    (
        "a_server_that_never_answers_fails_the_check",
        a_server_that_never_answers_fails_the_check,
    ),
    ("an_interrupted_load_says_so", an_interrupted_load_says_so),
    (
        "the_client_reports_its_own_memory",
        the_client_reports_its_own_memory,
    ),
    (
        "churn_against_a_refusing_port_stays_bounded",
        churn_against_a_refusing_port_stays_bounded,
    ),
];

/// Runs `c10k ARGS…`; a panic or a hang is a failure whatever the case
/// expects.
fn c10k(args: &[&str]) -> Result<Ran, Failed> {
    let r = run_c10k(args)?;
    if r.panicked() {
        return Err(format!("c10k {} panicked: {}{}", args.join(" "), r.stdout, r.stderr).into());
    }
    Ok(r)
}

/// Asserts that `r` exited with `code` and said one line on stderr that
/// contains every one of `words`.
fn refused(r: &Ran, code: i32, words: &[&str]) -> Result<(), Failed> {
    let lines: Vec<&str> = r.stderr.lines().collect();
    if r.code != Some(code) || lines.len() != 1 || !words.iter().all(|w| lines[0].contains(w)) {
        return Err(format!(
            "expected exit {code} and one line with {words:?}; got exit {:?}, stderr {:?}",
            r.code, r.stderr
        )
        .into());
    }
    Ok(())
}

// ---- flags -------------------------------------------------------------

/// A CPU list naming CPUs the process may not use is exit 2 naming the
/// CPUs there are, and a huge range is refused before it is built.
fn cpus_this_machine_lacks() -> Result<(), Failed> {
    for cmd in [&["load", "127.0.0.1:9"][..], &["serve"][..]] {
        let with = |cpus: &'static str| [cmd, &["--cpus", cpus]].concat();
        refused(
            &c10k(&with("99"))?,
            2,
            &["--cpus", "CPU 99", "may use CPUs"],
        )?;
        refused(
            &c10k(&with("0-99999999999"))?,
            2,
            &["--cpus", "99999999999"],
        )?;
        refused(&c10k(&with("2-1"))?, 2, &["--cpus", "bad CPU list"])?;
    }
    Ok(())
}

/// A missing argument is named, not only "were not provided".
fn missing_arguments_are_named() -> Result<(), Failed> {
    refused(&c10k(&["load"])?, 2, &["<TARGET>"])?;
    refused(&c10k(&["report"])?, 2, &["<DIR>"])?;
    refused(
        &c10k(&["load", "127.0.0.1:9", "--churn-echo"])?,
        2,
        &["--churn"],
    )?;
    refused(
        &c10k(&["load", "127.0.0.1:9", "--rounds", "3"])?,
        2,
        &["--burst"],
    )?;
    Ok(())
}

/// Rates too small to give an interval or too large to count are refused
/// (they panicked, or spun forever never connecting).
fn rates_out_of_range() -> Result<(), Failed> {
    for (flag, value) in [
        ("-r", "1e-300"),
        ("--connect-rate", "1e-300"),
        ("--connect-rate", "1e30"),
        ("-r", "NaN"),
        ("-r", "inf"),
    ] {
        let r = c10k(&["load", "127.0.0.1:9", flag, value, "-d", "1s"])?;
        refused(&r, 2, &["rate", "per second"])?;
    }
    refused(
        &c10k(&["herd", "-r", "1e-300"])?,
        2,
        &["--rate", "per second"],
    )?;
    Ok(())
}

/// `--server-arg`s are checked once, before any cell: one naming another
/// model (measured and recorded as the cell's before) or the cell's port or
/// CPUs is refused, and so is a bad serve flag (which failed every cell and
/// still exited 0). Nothing is created under `--out`.
fn server_args_are_checked_with_the_plan() -> Result<(), Failed> {
    let dir = Scratch::new("server-args");
    let out = dir.path("out");
    let run = |arg: &str| {
        c10k(&[
            "run", "--models", "epoll", "-c", "2", "--runs", "1", "-d", "100ms", "--out", &out, arg,
        ])
    };
    for (arg, words) in [
        (
            "--server-arg=--model=threads",
            &["--server-arg", "--model", "each cell"][..],
        ),
        ("--server-arg=--port=7", &["--server-arg", "--port"][..]),
        ("--server-arg=--cpus=0", &["--server-arg", "--cpus"][..]),
        ("--server-arg=--buffer=1", &["--server-arg", "--buffer"][..]),
        (
            "--server-arg=--no-such-flag",
            &["--server-arg", "--no-such-flag"][..],
        ),
    ] {
        refused(&run(arg)?, 2, words)?;
    }
    if std::path::Path::new(&out).exists() {
        return Err(format!("{out} was created by a refused run").into());
    }
    Ok(())
}

// ---- wire ----------------------------------------------------------------

/// A temporary directory removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("c10k-hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        Scratch(d)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).to_string_lossy().into_owned()
    }
    fn json(&self, f: &str) -> Result<Value, Failed> {
        let text = std::fs::read_to_string(self.path(f)).map_err(|e| format!("{f}: {e}"))?;
        Ok(serde_json::from_str(&text)?)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server that accepts and reads but never answers, loaded for less
/// than `--timeout`: the echoes still owed at the end are waited for up to
/// the timeout and then fail their connections, so a health check with
/// `--fail-on-error` exits 4 (it passed with "errors none" before).
fn a_server_that_never_answers_fails_the_check() -> Result<(), Failed> {
    let silent = Misbehave::start(Fault::DropBytes { every: 1 });
    let dir = Scratch::new("silent");
    let json = dir.path("r.json");
    let addr = silent.addr.to_string();
    let args = [
        "load",
        &addr,
        "-c",
        "3",
        "-d",
        "200ms",
        "--timeout",
        "500ms",
        "-q",
    ];
    let r = c10k(&[&args[..], &["--fail-on-error", "--json", &json]].concat())?;
    if r.code != Some(4) || !r.stdout.contains("timeout 3") {
        return Err(format!("exit {:?}: {}{}", r.code, r.stdout, r.stderr).into());
    }
    let j = dir.json("r.json")?;
    if j["errors"]["timeout"] != 3 || j["messages"] != 0 {
        return Err(format!("errors {} messages {}", j["errors"], j["messages"]).into());
    }
    // Without --fail-on-error the outcome is the same, the exit code 0.
    let r = c10k(&args)?;
    if r.code != Some(0) || !r.stdout.contains("timeout 3") {
        return Err(format!("exit {:?}: {}", r.code, r.stdout).into());
    }
    Ok(())
}

// ---- signals -------------------------------------------------------------

/// Ctrl-C (or SIGTERM) during `c10k load` writes the part measured, marked
/// interrupted, and exits 130, as `c10k run` does: a script can tell a
/// cut-short run from a whole one.
fn an_interrupted_load_says_so() -> Result<(), Failed> {
    for sig in [rustix::process::Signal::INT, rustix::process::Signal::TERM] {
        let server = Misbehave::start(Fault::Echo);
        let dir = Scratch::new("interrupted");
        let json = dir.path("r.json");
        let mut child = Command::new(bin())
            .args([
                "load",
                &server.addr.to_string(),
                "-d",
                "60s",
                "-q",
                "--json",
                &json,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        // The signal is sent once echoes flow (bounded: a stuck client
        // fails the test instead of hanging it).
        let start = std::time::Instant::now();
        while server.bytes_in() < 64 * 100 {
            if start.elapsed() > PATIENCE {
                let _ = child.kill();
                return Err("no traffic reached the server".into());
            }
            std::thread::yield_now();
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).ok_or("no pid")?;
        rustix::process::kill_process(pid, sig)?;
        let out = child.wait_with_output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(130)
            || stderr.lines().count() != 1
            || !stderr.contains("interrupted")
        {
            return Err(format!("{sig:?}: exit {:?}, stderr {stderr:?}", out.status.code()).into());
        }
        let j = dir.json("r.json")?;
        if j["interrupted"] != true || j["messages"].as_u64() < Some(1) {
            return Err(format!(
                "{sig:?}: interrupted {} messages {}",
                j["interrupted"], j["messages"]
            )
            .into());
        }
    }
    Ok(())
}

// ---- measurements --------------------------------------------------------

/// The client's peak memory is its own: a parent holding 256 MiB made
/// `ru_maxrss` (which survives exec) report 280 MiB for a 6 MiB client.
fn the_client_reports_its_own_memory() -> Result<(), Failed> {
    const HELD: usize = 256 << 20;
    let mut held = vec![0u8; HELD];
    for page in held.chunks_mut(4096) {
        page[0] = 1;
    }
    let server = Misbehave::start(Fault::Echo);
    let dir = Scratch::new("rss");
    let json = dir.path("r.json");
    let r = c10k(&[
        "load",
        &server.addr.to_string(),
        "-n",
        "10",
        "-q",
        "--json",
        &json,
    ])?;
    if r.code != Some(0) {
        return Err(format!("exit {:?}: {}", r.code, r.stderr).into());
    }
    let kib = dir.json("r.json")?["client"]["max_rss_kib"]
        .as_u64()
        .ok_or("no client.max_rss_kib")?;
    // Still held while the client ran.
    std::hint::black_box(&held);
    if kib == 0 || kib as usize * 1024 >= HELD / 2 {
        return Err(format!(
            "client max RSS {kib} KiB while its parent held {} MiB",
            HELD >> 20
        )
        .into());
    }
    Ok(())
}

/// Churn against a port that refuses makes an attempt every few µs; the
/// records kept are capped per event loop while every count covers every
/// attempt (it kept ~160 bytes per attempt, ~4 GiB in ten minutes).
fn churn_against_a_refusing_port_stays_bounded() -> Result<(), Failed> {
    let refusing = Misbehave::start(Fault::Refuse);
    let dir = Scratch::new("churn");
    let (json, csv) = (dir.path("r.json"), dir.path("c.csv"));
    let addr = refusing.addr.to_string();
    let r = c10k(&[
        "load",
        &addr,
        "--churn",
        "-c",
        "50",
        "-d",
        "2s",
        "--threads",
        "1",
        "-q",
        "--json",
        &json,
        "--per-connection-csv",
        &csv,
    ])?;
    if r.code != Some(0) {
        return Err(format!("exit {:?}: {}", r.code, r.stderr).into());
    }
    let j = dir.json("r.json")?;
    let failed = j["connections"]["failed"]
        .as_u64()
        .ok_or("no failed count")?;
    let rows = std::fs::read_to_string(&csv)?.lines().count() as u64 - 1;
    let cap = c10k::client::engine::CHURN_RECORDS as u64;
    let capped = j["warnings"].to_string().contains("hold the first");
    if j["errors"]["refused"] != failed
        || failed == 0
        || rows != failed.min(cap)
        || capped != (failed > cap)
    {
        return Err(format!(
            "failed {failed}, rows {rows}, errors {}, warnings {}",
            j["errors"], j["warnings"]
        )
        .into());
    }
    Ok(())
}
