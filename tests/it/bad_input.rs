//! Bad input, each case as a careless or hostile user would give it: bad
//! flags, lying and dying servers, signals, odd output paths, damaged
//! results directories, two runs on one directory. Every case asserts the
//! exit code, the one-line message and that nothing already measured was
//! lost; a panic anywhere fails the case.

use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::misbehaving_echo::{Fault, Misbehave};
use crate::support::{bin, expect_eq, run_c10k, scratch, Ran, Scratch, Server, Started, PATIENCE};

tests![
    cpus_this_machine_lacks,
    missing_arguments_are_named,
    rates_out_of_range,
    ranking_flags_out_of_range,
    server_args_are_checked_with_the_plan,
    a_server_that_never_answers_fails_the_check,
    an_interrupted_load_says_so,
    the_client_reports_its_own_memory,
    churn_against_a_refusing_port_stays_bounded,
    an_output_in_a_missing_directory_is_refused_before_connecting,
    a_read_only_output_is_refused_before_measuring,
    an_output_through_a_symlink_keeps_the_link,
    outputs_to_devices_are_written_in_place,
    micro_and_herd_outputs_are_checked_before_measuring,
    resume_completes_a_last_result_without_its_newline,
    resume_refuses_results_of_another_plan,
    report_names_every_unreadable_line,
    a_second_run_on_a_directory_is_refused,
    resume_checks_the_plan_as_a_fresh_run_does,
    one_name_one_server_and_names_are_capped,
    a_refused_target_says_refused,
    a_cell_recorded_twice_reads_one_way,
    paths_that_are_not_utf8_never_panic,
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

/// The ranking's equivalence margin and the repeats of a disturbed run out
/// of range are refused in one line, before anything runs.
fn ranking_flags_out_of_range() -> Result<(), Failed> {
    // The ranking's margin and the repeats of a disturbed run.
    for (flag, value, words) in [
        ("--margin", "80%", &["--margin 80%", "from 0.1% to 50%"][..]),
        ("--margin", "five", &["--margin five"][..]),
        (
            "--repeat-disturbed",
            "11",
            &["--repeat-disturbed 11", "at most 10"][..],
        ),
    ] {
        refused(&c10k(&["run", "--models", "epoll", flag, value])?, 2, words)?;
    }
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
    let dir = Case::new("server-args")?;
    let out = dir.path("out");
    let run = |arg: &str| {
        c10k(&[
            "run", "--models", "epoll", "-c", "2", "--runs", "1", "-d", "100ms", "--out", &out, arg,
        ])
    };
    for (arg, words) in [
        (
            "--server-arg=--model=threads",
            &["--server-arg", "--model", "each server it starts"][..],
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

/// A server that accepts and reads but never answers, loaded for less
/// than `--timeout`: the echoes still owed at the end are waited for up to
/// the timeout and then fail their connections, so a health check fails
/// (it passed with "errors none" before): every connection failed, the run
/// has no result, exit 5 with or without `--fail-on-error`.
fn a_server_that_never_answers_fails_the_check() -> Result<(), Failed> {
    let silent = Misbehave::start(Fault::DropBytes { every: 1 });
    let dir = Case::new("silent")?;
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
    let cause = "c10k load: every connection timed out waiting for its connect or its echo";
    if r.code != Some(5) || !r.stdout.contains("timeout 3") || !r.stderr.starts_with(cause) {
        return Err(format!("exit {:?}: {}{}", r.code, r.stdout, r.stderr).into());
    }
    let j = dir.json("r.json")?;
    if j["errors"]["timeout"] != 3 || j["messages"] != 0 {
        return Err(format!("errors {} messages {}", j["errors"], j["messages"]).into());
    }
    // Without --fail-on-error the outcome is the same.
    let r = c10k(&args)?;
    if r.code != Some(5) || !r.stdout.contains("timeout 3") {
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
        let dir = Case::new("interrupted")?;
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
    let dir = Case::new("rss")?;
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
    let dir = Case::new("churn")?;
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
    // Not one connection came up: no result (exit 5), every output kept.
    let cause =
        format!("c10k load: every connection was refused: is anything listening on {addr}?\n");
    if r.code != Some(5) || r.stderr != cause {
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

// ---- output paths ------------------------------------------------------

/// A fresh directory for one case ([`scratch`]: removed when the test
/// passes, kept when it fails), with ways to name and read what is in it.
struct Case(Scratch);

impl Case {
    fn new(name: &str) -> Result<Case, Failed> {
        Ok(Case(scratch(&format!("bad-input-{name}"))?))
    }

    /// `name` inside the directory, as an argument.
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// `name` inside the directory, read as JSON.
    fn json(&self, name: &str) -> Result<Value, Failed> {
        let text = std::fs::read_to_string(self.path(name)).map_err(|e| format!("{name}: {e}"))?;
        Ok(serde_json::from_str(&text)?)
    }

    /// The names in the directory, sorted (a temporary file left behind
    /// shows here).
    fn names(&self) -> Result<Vec<String>, Failed> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(&self.0)? {
            v.push(e?.file_name().to_string_lossy().into_owned());
        }
        v.sort();
        Ok(v)
    }
}

fn epoll() -> Result<Server, Failed> {
    match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(r) => Err(r.into()),
    }
}

/// Stops `server` and fails unless it accepted exactly `want` connections.
fn served(server: Server, want: u64) -> Result<(), Failed> {
    let (_, summary) = server.stop()?;
    if summary.connections != want {
        return Err(format!(
            "the server accepted {} connections, expected {want}",
            summary.connections
        )
        .into());
    }
    Ok(())
}

/// `c10k load ADDR -c 1 -n 10 -q` and more flags.
fn tiny_load(server: &Server, more: &[&str]) -> Result<Ran, Failed> {
    let addr = server.addr.to_string();
    c10k(&[&["load", &addr, "-c", "1", "-n", "10", "-q"][..], more].concat())
}

/// Every output of `load` whose directory does not exist is refused with
/// exit 2 and one line naming the flag and the directory, before a single
/// connection is made.
fn an_output_in_a_missing_directory_is_refused_before_connecting() -> Result<(), Failed> {
    let d = Case::new("missing-dir")?;
    let server = epoll()?;
    let path = d.path("missing/r.out");
    let dir = d.path("missing");
    for flag in ["--json", "--per-connection-csv", "--hdr"] {
        let ran = tiny_load(&server, &[flag, &path])?;
        refused(
            &ran,
            2,
            &[
                "c10k load:",
                &format!("{flag} {path}:"),
                &format!("directory {dir} does not exist"),
            ],
        )?;
        if !ran.stdout.is_empty() {
            return Err(format!("{flag}: printed a summary: {}", ran.stdout).into());
        }
    }
    served(server, 0)
}

/// A file with no write bit is refused before measuring, even for root
/// (for whom access(2) always says yes), and is left as it was.
fn a_read_only_output_is_refused_before_measuring() -> Result<(), Failed> {
    let d = Case::new("read-only")?;
    let path = d.path("r.json");
    std::fs::write(&path, b"keep me")?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444))?;
    let server = epoll()?;
    refused(
        &tiny_load(&server, &["--json", &path])?,
        2,
        &[&format!("--json {path}:"), "read-only (mode 0444)"],
    )?;
    served(server, 0)?;
    expect_eq(
        "the read-only file",
        "keep me",
        String::from_utf8_lossy(&std::fs::read(&path)?),
    )?;
    let mode = std::fs::metadata(&path)?.permissions().mode() & 0o7777;
    if mode != 0o444 {
        return Err(format!("the read-only file's mode became {mode:04o}").into());
    }
    Ok(())
}

/// `--json LINK` writes the file the link leads to (keeping its mode) and
/// leaves the link a link, with no temporary file left beside either.
fn an_output_through_a_symlink_keeps_the_link() -> Result<(), Failed> {
    let d = Case::new("symlink")?;
    std::fs::create_dir(d.0.join("real"))?;
    let real = d.0.join("real/r.json");
    std::fs::write(&real, b"old")?;
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640))?;
    let link = d.0.join("link.json");
    std::os::unix::fs::symlink("real/r.json", &link)?;
    let server = epoll()?;
    let ran = tiny_load(&server, &["--json", &d.path("link.json")])?;
    served(server, 1)?;
    if ran.code != Some(0) {
        return Err(format!("exit {:?}: {}", ran.code, ran.stderr).into());
    }
    if !std::fs::symlink_metadata(&link)?.file_type().is_symlink() {
        return Err("the symlink was replaced".into());
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&real)?)?;
    if v["schema_version"].is_null() {
        return Err(format!("the link's target is not the results: {v}").into());
    }
    let mode = std::fs::metadata(&real)?.permissions().mode() & 0o7777;
    if mode != 0o640 {
        return Err(format!("the target's mode 0640 became {mode:04o}").into());
    }
    let names = d.names()?;
    let inside: Vec<_> = std::fs::read_dir(d.0.join("real"))?.collect();
    if names != ["link.json", "real"] || inside.len() != 1 {
        return Err(format!("files left behind: {names:?}, {} in real/", inside.len()).into());
    }
    Ok(())
}

/// `--json /dev/null` and `--json /dev/stdout` are written as the device
/// or pipe they are: the results arrive and /dev is untouched; a write that
/// fails after the check (/dev/full) is exit 1 after the summary.
fn outputs_to_devices_are_written_in_place() -> Result<(), Failed> {
    let server = epoll()?;
    let ran = tiny_load(&server, &["--json", "/dev/null", "--hdr", "/dev/null"])?;
    if ran.code != Some(0) {
        return Err(format!("/dev/null: exit {:?}: {}", ran.code, ran.stderr).into());
    }
    // Through the /dev/stdout symlink to this test's pipe.
    let ran = tiny_load(&server, &["--json", "/dev/stdout"])?;
    if ran.code != Some(0) || !ran.stdout.contains("\"schema_version\"") {
        return Err(format!(
            "/dev/stdout: exit {:?}: {}{}",
            ran.code, ran.stdout, ran.stderr
        )
        .into());
    }
    // A device that passes the check but fails the write (ENOSPC): the
    // summary is printed first, then one line saying which output failed.
    let full = tiny_load(&server, &["--json", "/dev/full"])?;
    refused(&full, 1, &["cannot write JSON /dev/full"])?;
    if !full.stdout.contains("round trips/s") {
        return Err(format!("/dev/full: no summary before the failure: {}", full.stdout).into());
    }
    served(server, 3)?;
    if !std::fs::symlink_metadata("/dev/null")?
        .file_type()
        .is_char_device()
    {
        return Err("/dev/null is no longer a character device".into());
    }
    if !std::fs::symlink_metadata("/dev/stdout")?
        .file_type()
        .is_symlink()
    {
        return Err("/dev/stdout is no longer a symlink".into());
    }
    Ok(())
}

/// A micro-benchmark's and the herd's outputs are checked before anything
/// is measured: exit 2, one line, no table.
fn micro_and_herd_outputs_are_checked_before_measuring() -> Result<(), Failed> {
    let d = Case::new("micro")?;
    let path = d.path("missing/x.json");
    let dir = d.path("missing");
    let micro = [
        "micro", "dispatch", "--fds", "10", "--calls", "10", "--runs", "1",
    ];
    let herd = [
        "herd",
        "-w",
        "1",
        "-n",
        "1",
        "--runs",
        "1",
        "--methods",
        "epoll",
    ];
    for (cmd, flag) in [(&micro[..], "--json"), (&herd, "--json"), (&herd, "--svg")] {
        let ran = c10k(&[cmd, &[flag, &path]].concat())?;
        refused(
            &ran,
            2,
            &[
                &format!("{flag} {path}:"),
                &format!("directory {dir} does not exist"),
            ],
        )?;
        if !ran.stdout.is_empty() {
            return Err(format!("{cmd:?} measured: {}", ran.stdout).into());
        }
    }
    let dev = Path::new("/dev/null");
    let ran = c10k(&[&micro[..], &["--json", "/dev/null"]].concat())?;
    if ran.code != Some(0) || !std::fs::symlink_metadata(dev)?.file_type().is_char_device() {
        return Err(format!(
            "micro --json /dev/null: exit {:?}: {}",
            ran.code, ran.stderr
        )
        .into());
    }
    Ok(())
}

// ---- result files ------------------------------------------------------

/// A real results directory of 2 cells (epoll at 2 connections, 2 runs),
/// made by `c10k run` under a fresh scratch directory: (scratch, results).
fn measured(name: &str) -> Result<(Scratch, PathBuf), Failed> {
    let out = scratch(&format!("bad-input-{name}"))?;
    let r = c10k(&[
        "run",
        "--models",
        "epoll",
        "--connections",
        "2",
        "--runs",
        "2",
        "--duration",
        "50ms",
        "--warmup",
        "0ms",
        "--no-report",
        "--out",
        text(&out)?,
    ])?;
    if r.code != Some(0) {
        return Err(format!("c10k run: exit {:?}: {}", r.code, r.stderr).into());
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    // A matrix of one's own, not the tour: named custom, titled so.
    let custom = |d: &Path| {
        d.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("custom-"))
    };
    match dirs.as_slice() {
        [one] if !custom(one) => Err(format!("a custom run made {}", one.display()).into()),
        [one] if results(one)?.len() == 2 => Ok((out, one.clone())),
        _ => Err(format!("expected one directory of 2 results in {dirs:?}").into()),
    }
}

fn text(p: &Path) -> Result<&str, Failed> {
    Ok(p.to_str().ok_or("a temporary path that is not UTF-8")?)
}

/// The lines of `results.jsonl`, each with its newline when it has one.
fn results(dir: &Path) -> Result<Vec<String>, Failed> {
    let t = std::fs::read_to_string(dir.join("results.jsonl"))?;
    Ok(t.split_inclusive('\n').map(str::to_string).collect())
}

/// The cell ids of the results in `results.json`, as `c10k report` wrote it.
fn reported(dir: &Path) -> Result<Vec<String>, Failed> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json"))?)?;
    let cells = json["cells"].as_array().ok_or("results.json lacks cells")?;
    Ok(cells
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("").to_string())
        .collect())
}

/// `c10k report DIR`, which must write its exports whatever it says.
fn report(dir: &Path) -> Result<Ran, Failed> {
    let r = c10k(&["report", text(dir)?])?;
    if !r.stdout.contains("wrote") {
        return Err(format!("c10k report wrote nothing: {}{}", r.stdout, r.stderr).into());
    }
    Ok(r)
}

/// Every stderr line of `r` is `c10k report: results.jsonl line N: …` for
/// the lines `numbers` in order, each saying `what`.
fn named_lines(r: &Ran, numbers: &[usize], what: &[&str]) -> Result<(), Failed> {
    let lines: Vec<&str> = r.stderr.lines().collect();
    let ok = lines.len() == numbers.len()
        && lines.iter().zip(numbers).zip(what).all(|((l, n), w)| {
            l.starts_with(&format!("c10k report: results.jsonl line {n}: ")) && l.contains(w)
        });
    if !ok {
        return Err(format!("expected lines {numbers:?} named ({what:?}); got {lines:#?}").into());
    }
    Ok(())
}

/// A killed run whose last result was written whole but for its newline:
/// resuming counts that cell as done, completes the line instead of
/// cutting it, and runs only the other cell.
fn resume_completes_a_last_result_without_its_newline() -> Result<(), Failed> {
    let (_out, dir) = measured("newline")?;
    let before = results(&dir)?;
    std::fs::write(dir.join("results.jsonl"), before[0].trim_end())?;
    let r = c10k(&["run", "--resume", text(&dir)?, "--no-report"])?;
    if r.code != Some(0)
        || !r
            .stderr
            .contains("results.jsonl line 1: the last result lacked its newline; completed")
        || !r.stderr.contains("1 of 2 cells recorded")
    {
        return Err(format!("resume: exit {:?}: {}", r.code, r.stderr).into());
    }
    let after = results(&dir)?;
    if after.len() != 2 || after[0] != before[0] || !after[1].contains("\"id\":\"epoll/c2/r2\"") {
        return Err(format!("after the resume: {after:#?}").into());
    }
    Ok(())
}

/// A plan that is not the one these results were measured under: another
/// workload (a closed-loop cell taken for a burst cell), or fewer cells
/// than were recorded. A resume refuses, naming the first line, and
/// changes nothing; a report names every line, counts only results of the
/// plan, and exits 1.
fn resume_refuses_results_of_another_plan() -> Result<(), Failed> {
    let (_out, dir) = measured("plan")?;
    let original = std::fs::read(dir.join("plan.json"))?;
    let before = std::fs::read(dir.join("results.jsonl"))?;
    let edit = |f: &dyn Fn(&mut serde_json::Value)| -> Result<(), Failed> {
        let mut plan: serde_json::Value = serde_json::from_slice(&original)?;
        f(&mut plan);
        std::fs::write(dir.join("plan.json"), serde_json::to_vec(&plan)?)?;
        Ok(())
    };
    let resume = || c10k(&["run", "--resume", text(&dir)?, "--no-report"]);

    edit(&|p| p["workload"]["kind"] = "burst".into())?;
    refused(
        &resume()?,
        2,
        &[
            "cannot resume",
            "results.jsonl line 1: not a result of this plan: cell epoll/c2/r1 was measured with a closed workload, plan.json's is burst",
            "(and 1 more line;",
        ],
    )?;
    let r = report(&dir)?;
    named_lines(&r, &[1, 2], &["closed workload, plan.json's is burst"; 2])?;
    if r.code != Some(1) || !reported(&dir)?.is_empty() {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }

    // The same settings, but a plan of one cell over two results: "2 of
    // 1 cells" before.
    edit(&|p| {
        if let Some(cells) = p["cells"].as_array_mut() {
            cells.truncate(1);
        }
    })?;
    refused(
        &resume()?,
        2,
        &[
            "cannot resume",
            "results.jsonl line 2: not a result of this plan: cell epoll/c2/r2 is not in plan.json",
        ],
    )?;
    let r = report(&dir)?;
    named_lines(&r, &[2], &["cell epoll/c2/r2 is not in plan.json"])?;
    if r.code != Some(1) || reported(&dir)? != ["epoll/c2/r1"] {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }
    // Values no flag would have passed (a window of 1e300 s panicked on
    // resume), and a server flag a cell sets itself: plan.json is refused
    // by name, by resume and report alike, before anything runs.
    for (edit_plan, words) in [
        (
            &(|p: &mut serde_json::Value| p["workload"]["duration_seconds"] = 1e300.into())
                as &dyn Fn(&mut serde_json::Value),
            &["plan.json", "workload.duration_seconds 1e300"][..],
        ),
        (
            &|p: &mut serde_json::Value| {
                p["server_settings"] = serde_json::json!({"model": "threads"})
            },
            &["plan.json", "unknown field `model`"][..],
        ),
    ] {
        edit(edit_plan)?;
        refused(&resume()?, 2, words)?;
        refused(&c10k(&["report", text(&dir)?])?, 2, words)?;
    }
    expect_eq(
        "results.jsonl after the refused resumes",
        String::from_utf8_lossy(&before),
        String::from_utf8_lossy(&std::fs::read(dir.join("results.jsonl"))?),
    )?;
    Ok(())
}

/// NaN and Infinity (which JSON has not) and a damaged line: a report
/// names each line, still reports the readable results, and exits 1; a
/// resume refuses. A partial last line alone (a killed run) is a warning
/// and exit 0.
fn report_names_every_unreadable_line() -> Result<(), Failed> {
    let (_out, dir) = measured("unreadable")?;
    let lines = results(&dir)?;
    let with = |line: &str, key: &str, token: &str| -> Result<String, Failed> {
        let mut v: serde_json::Value = serde_json::from_str(line)?;
        v[key] = 123_456.5.into();
        Ok(v.to_string().replace("123456.5", token) + "\n")
    };
    let damaged = [
        lines[0].clone(),
        with(&lines[0], "wall_seconds", "NaN")?,
        format!("{}\n", &lines[1][..lines[1].len() / 2]),
        with(&lines[1], "started_unix", "-Infinity")?,
        lines[1].clone(),
    ]
    .concat();
    std::fs::write(dir.join("results.jsonl"), &damaged)?;
    let r = report(&dir)?;
    named_lines(&r, &[2, 3, 4], &["not a result: "; 3])?;
    if r.code != Some(1) || reported(&dir)? != ["epoll/c2/r1", "epoll/c2/r2"] {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }
    refused(
        &c10k(&["run", "--resume", text(&dir)?, "--no-report"])?,
        2,
        &[
            "cannot resume",
            "results.jsonl line 2: ",
            "(and 2 more lines;",
        ],
    )?;
    expect_eq(
        "results.jsonl after a refused resume",
        &damaged,
        &std::fs::read_to_string(dir.join("results.jsonl"))?,
    )?;

    let killed = [lines[0].as_str(), &lines[1], &lines[1][..100]].concat();
    std::fs::write(dir.join("results.jsonl"), &killed)?;
    let r = report(&dir)?;
    named_lines(&r, &[3], &["a partial last line"])?;
    if r.code != Some(0) || reported(&dir)? != ["epoll/c2/r1", "epoll/c2/r2"] {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }
    Ok(())
}

/// While one run holds a directory (here the test holds its lock), a
/// second `--resume` of it is refused before it runs or writes anything;
/// `c10k report` still reads it. Once the lock is gone, the resume runs.
fn a_second_run_on_a_directory_is_refused() -> Result<(), Failed> {
    let (_out, dir) = measured("lock")?;
    let before = results(&dir)?;
    std::fs::write(dir.join("results.jsonl"), &before[0])?;
    let plan = std::fs::read(dir.join("plan.json"))?;
    let held = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(dir.join("results.jsonl"))?;
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
    let pid = format!("(pid {})", std::process::id());
    refused(
        &c10k(&["run", "--resume", text(&dir)?, "--no-report"])?,
        2,
        &[
            &format!("c10k run: {} is in use by another c10k run", dir.display()),
            &pid,
        ],
    )?;
    expect_eq(
        "results.jsonl after a refused run",
        &before[..1],
        &results(&dir)?[..],
    )?;
    expect_eq(
        "plan.json after a refused run",
        String::from_utf8_lossy(&plan),
        String::from_utf8_lossy(&std::fs::read(dir.join("plan.json"))?),
    )?;
    let r = report(&dir)?;
    if r.code != Some(0) {
        return Err(format!("report beside a run: exit {:?}: {}", r.code, r.stderr).into());
    }
    expect_eq(
        "cells reported beside a run",
        ["epoll/c2/r1"],
        reported(&dir)?,
    )?;
    drop(held);
    let r = c10k(&["run", "--resume", text(&dir)?, "--no-report"])?;
    let after = results(&dir)?;
    if r.code != Some(0) || after.len() != 2 || after[0] != before[0] {
        return Err(format!("resume after the lock: exit {:?}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A plan.json edited by hand is refused on `--resume` (exit 2, the field
/// named, nothing started) as the flags that would make it are: a cell of
/// a billion connections, a variant with a flag `c10k serve` refuses, a
/// buffer of a gibibyte. `c10k report` and `c10k compare` read it the same
/// way.
fn resume_checks_the_plan_as_a_fresh_run_does() -> Result<(), Failed> {
    let (_out, dir) = measured("resume-plan")?;
    let plan_path = dir.join("plan.json");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&plan_path)?)?;
    type Edit<'a> = &'a dyn Fn(&mut Value);
    let cases: [(&str, Edit, &str); 3] = [
        (
            "a billion connections",
            &|p| p["cells"][1]["connections"] = 1_000_000_000u64.into(),
            "cells[1].connections 1000000000 is not one of connections [2]",
        ),
        (
            "a bogus variant",
            &|p| {
                p["variants"] = serde_json::json!([{"name": "poll@x", "model": "poll",
                        "settings": {"ring_entries": 64}}]);
                p["models"] = serde_json::json!(["epoll", "poll@x"]);
            },
            "variants[0].settings: --ring-entries: poll has no io_uring ring",
        ),
        (
            "a gibibyte buffer",
            &|p| p["buffer"] = "1GiB".into(),
            "buffer 1GiB: must be from 64 B to 64 MiB",
        ),
    ];
    for (what, edit, says) in cases {
        let mut plan = good.clone();
        edit(&mut plan);
        std::fs::write(&plan_path, serde_json::to_string_pretty(&plan)?)?;
        std::fs::write(dir.join("results.jsonl"), "")?;
        let r = c10k(&["run", "--resume", text(&dir)?])?;
        refused(&r, 2, &["plan.json: ", says]).map_err(|e| format!("{what}: {e:?}"))?;
        let r = c10k(&["report", text(&dir)?])?;
        refused(&r, 2, &["plan.json: ", says]).map_err(|e| format!("report, {what}: {e:?}"))?;
    }
    Ok(())
}

/// A --variant, --server or --target sharing a name with another is
/// refused (the second would never run), and a name longer than 40
/// characters too (it names files).
fn one_name_one_server_and_names_are_capped() -> Result<(), Failed> {
    let r = c10k(&[
        "run",
        "--models",
        "epoll",
        "--variant",
        "mine=poll --interval 1ms",
        "--target",
        "mine=127.0.0.1:9",
    ])?;
    refused(
        &r,
        2,
        &["--variant and --target both name 'mine': give each server a name of its own"],
    )?;
    let long = format!("{}=poll", "v".repeat(41));
    let r = c10k(&["run", "--models", "epoll", "--variant", &long])?;
    refused(
        &r,
        2,
        &["the name must be 1 to 40 letters, digits and - _ + @ ."],
    )?;
    Ok(())
}

/// A --target nothing listens on fails its cell with that cause, not a
/// window too short: every connection was refused.
fn a_refused_target_says_refused() -> Result<(), Failed> {
    // A port of a listener just closed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let dir = scratch("bad-input-target")?;
    let out = dir.join("out");
    let target = format!("gone=127.0.0.1:{port}");
    let r = c10k(&[
        "run",
        "--models",
        "",
        "--target",
        &target,
        "-c",
        "2",
        "-d",
        "1s",
        "--runs",
        "1",
        "--no-report",
        "--out",
        text(&out)?,
    ])?;
    let said = format!("every connection was refused: is anything listening on 127.0.0.1:{port}? (2 of 2 connections failed: refused 2)");
    if r.code != Some(5) || !r.stderr.contains(&said) {
        return Err(format!("exit {:?}, stderr {:?}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A cell recorded twice loses nothing of the plan (its first result is
/// kept): `c10k report` and `--resume` read it the one way, a warning
/// naming the line, and go on.
fn a_cell_recorded_twice_reads_one_way() -> Result<(), Failed> {
    let (_out, dir) = measured("twice")?;
    let lines = results(&dir)?;
    std::fs::write(
        dir.join("results.jsonl"),
        [lines[0].as_str(), &lines[1], &lines[0]].concat(),
    )?;
    let said =
        "results.jsonl line 3: cell epoll/c2/r1 recorded again (first on line 1, which is kept)";
    let r = report(&dir)?;
    if r.code != Some(0)
        || !r.stderr.contains(said)
        || reported(&dir)? != ["epoll/c2/r1", "epoll/c2/r2"]
    {
        return Err(format!("report: exit {:?}: {}", r.code, r.stderr).into());
    }
    let r = c10k(&["run", "--resume", text(&dir)?, "--no-report"])?;
    if r.code != Some(0) || !r.stderr.contains(said) {
        return Err(format!("resume: exit {:?}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// Paths whose names are not UTF-8 (a byte 0xff), as Linux allows: `c10k
/// compare`, `run --out`, `run --baseline` and `load --json` each finish or
/// refuse in one line, never panic, and a run records its command line with
/// the name as bash's `$'…'`, so it runs again as given.
fn paths_that_are_not_utf8_never_panic() -> Result<(), Failed> {
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
    let dir = scratch("bad-input-utf8")?;
    let odd = dir.join(OsString::from_vec(b"res\xff".to_vec()));
    let run = |args: &[&OsStr]| -> Result<Ran, Failed> {
        let o = Command::new(bin())
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        let r = Ran {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        };
        if r.panicked() {
            return Err(format!("{args:?} panicked: {}", r.stderr).into());
        }
        Ok(r)
    };
    let os = |s: &'static str| OsStr::new(s);
    let r = run(&[os("compare"), odd.as_os_str(), odd.as_os_str()])?;
    refused(&r, 2, &["no such file"])?;
    let r = run(&[os("run"), os("--baseline"), odd.as_os_str()])?;
    refused(&r, 2, &["--baseline"])?;
    let r = run(&[
        os("run"),
        os("--models"),
        os("epoll"),
        os("-c"),
        os("2"),
        os("--runs"),
        os("1"),
        os("-d"),
        os("50ms"),
        os("--warmup"),
        os("0"),
        os("--no-report"),
        os("--out"),
        odd.as_os_str(),
    ])?;
    if r.code != Some(0) {
        return Err(format!("run --out: exit {:?}, {}", r.code, r.stderr).into());
    }
    let made = std::fs::read_dir(&odd)?
        .flatten()
        .next()
        .ok_or("no results directory")?;
    let plan: Value = serde_json::from_slice(&std::fs::read(made.path().join("plan.json"))?)?;
    let command = plan["command"].as_str().unwrap_or_default();
    if !command.contains("$'") || !command.ends_with("res\\xff'") {
        return Err(format!("the recorded command: {command}").into());
    }
    let server = match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => s,
        Started::Unsupported(why) => return Err(why.into()),
    };
    let json = dir.join(OsStr::from_bytes(b"load\xff.json"));
    let target = OsString::from(server.addr.to_string());
    let r = run(&[
        os("load"),
        &target,
        os("-c"),
        os("2"),
        os("-d"),
        os("50ms"),
        os("--json"),
        json.as_os_str(),
    ])?;
    if r.code != Some(0) || !json.is_file() {
        return Err(format!("load --json: exit {:?}, {}", r.code, r.stderr).into());
    }
    server.stop()?;
    Ok(())
}
