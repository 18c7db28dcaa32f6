//! Servers stopped whatever they and their children do (issue 29): a
//! server that leaves a `setsid` helper holding its output, one that
//! trickles its echo past a check's deadline, SIGTERM to `c10k conform`
//! itself mid-check, and fork and prefork stopped the moment their
//! connections end; every model stopped while a handler is 40 s into
//! blocking or CPU work; and `c10k conform --json` into a missing
//! directory, refused before any server starts. Each asserts what the user sees (exit
//! code, the row, the message) and that no process of the server is left;
//! every wait is bounded by [`PATIENCE`], as a guard against hangs, never
//! as a timing assertion.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;

use c10k::child::server::Launcher;
use c10k::metrics::tree::running;
use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{bin, run_c10k, scratch, wait_bounded, Pipes, Server, Started, PATIENCE};

tests![
    a_setsid_helper_cannot_hold_a_servers_stop,
    conform_sigterm_names_a_setsid_helper_and_ends,
    conform_patience_bounds_a_whole_check,
    conform_json_in_a_missing_directory_is_refused_first,
    conform_stops_on_sigterm_to_itself,
    fork_and_prefork_stop_as_their_connections_end,
    a_handler_in_long_work_does_not_hold_up_a_stop,
    a_run_interrupted_in_long_work_ends_and_says_so,
];

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The pid a server's shell wrote to `file` (before it exec'd the server).
fn pid_in(file: &Path) -> Result<u32, Failed> {
    let text = std::fs::read_to_string(file)?;
    Ok(text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} in {}: {e}", file.display()))?)
}

/// Ends a process this test caused, if it still runs (by its pid only).
fn end(pid: u32) {
    if running(pid) {
        let _ = c10k::sys::process::kill(pid as i32, libc::SIGKILL);
    }
}

/// `c10k conform ARGS --json FILE`: its exit code, stdout, stderr and JSON.
fn conform(json: &Path, args: &[&str]) -> Result<(Option<i32>, String, String, Value), Failed> {
    let json_arg = json.to_string_lossy().to_string();
    let mut all = vec!["conform"];
    all.extend_from_slice(args);
    all.extend(["--json", &json_arg]);
    let r = run_c10k(&all)?;
    let report = std::fs::read_to_string(json)
        .map_err(|e| format!("no JSON ({e}); exit {:?}; stderr {}", r.code, r.stderr))?;
    Ok((r.code, r.stdout, r.stderr, serde_json::from_str(&report)?))
}

/// The row of `check` in a conform report.
fn row<'a>(report: &'a Value, check: &str) -> Result<&'a Value, Failed> {
    report["checks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["check"] == check))
        .ok_or_else(|| format!("no row for {check}: {report}").into())
}

/// Issue 29 #3: a server started as `sh -c 'setsid sleep & exec server'`
/// leaves a helper in a session of its own holding its stdout and stderr.
/// Its stop must not wait for that helper: the server exited on SIGTERM
/// (no "killed"), the helper is named and killed.
fn a_setsid_helper_cannot_hold_a_servers_stop() -> Result<(), Failed> {
    let dir = scratch("setsid-stop")?;
    let pidfile = dir.join("helper.pid");
    let port = c10k::child::foreign::free_port()?;
    let script = format!(
        "setsid sleep 3600 & echo $! > {}; exec python3 {} {port}",
        pidfile.display(),
        repo("peers/asyncio_echo.py").display()
    );
    let launcher = Launcher {
        program: None,
        patience: PATIENCE,
    };
    let server = launcher
        .start_foreign(&["sh".into(), "-c".into(), script], port, &[], None)
        .map_err(|e| e.to_string())?;
    // Written before the shell became the server, so before READY.
    let helper = pid_in(&pidfile)?;
    // A stop that waited for the helper's output would wait an hour: the
    // guard fails it instead.
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.stop());
    });
    let stopped = rx.recv_timeout(PATIENCE);
    let helper_left = running(helper);
    end(helper);
    let stopped = stopped.map_err(|_| format!("the stop took more than {PATIENCE:?}"))?;
    if stopped.killed || stopped.trouble().is_some() {
        return Err(format!(
            "the server exited on SIGTERM, yet: {:?} (killed {})",
            stopped.trouble(),
            stopped.killed
        )
        .into());
    }
    let notes = stopped.notes().unwrap_or_default();
    if helper_left || !notes.contains(&format!("{helper} (sleep)")) {
        return Err(format!("helper {helper} left: {helper_left}; notes: {notes:?}").into());
    }
    Ok(())
}

/// Issue 29 #3 in `c10k conform --check sigterm`: the check fails naming
/// the helper that outlived the server, and ends; the helper is killed.
fn conform_sigterm_names_a_setsid_helper_and_ends() -> Result<(), Failed> {
    let dir = scratch("setsid-conform")?;
    let pidfile = dir.join("helper.pid");
    let server = format!(
        "sh -c 'setsid sleep 3600 & echo $! > {}; exec python3 {} {{port}}'",
        pidfile.display(),
        repo("peers/asyncio_echo.py").display()
    );
    let outcome = conform(
        &dir.join("conform.json"),
        &["--server", &server, "--check", "sigterm"],
    );
    let helper = pid_in(&pidfile)?;
    let helper_left = running(helper);
    end(helper);
    let (code, stdout, _, report) = outcome?;
    let evidence = row(&report, "sigterm")?["evidence"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if code != Some(1)
        || row(&report, "sigterm")?["verdict"] != "fail"
        || !evidence.contains(&format!("{helper} (sleep)"))
        || helper_left
    {
        return Err(format!("exit {code:?}, helper left {helper_left}:\n{stdout}").into());
    }
    Ok(())
}

/// Issue 29 #4: a server that echoes a byte every 10 ms answers every wait
/// in time, so only a deadline on the whole check can end it: FAIL saying
/// so, and the server gone.
fn conform_patience_bounds_a_whole_check() -> Result<(), Failed> {
    let dir = scratch("trickle")?;
    let pidfile = dir.join("server.pid");
    let server = format!(
        "sh -c 'echo $$ > {}; exec python3 {} {{port}}'",
        pidfile.display(),
        repo("tests/servers/trickle_echo.py").display()
    );
    let outcome = conform(
        &dir.join("conform.json"),
        &[
            "--server",
            &server,
            "--check",
            "echo_sizes_in_fragments",
            "--patience",
            "1s",
        ],
    );
    let pid = pid_in(&pidfile)?;
    let left = running(pid);
    end(pid);
    let (code, stdout, _, report) = outcome?;
    let r = row(&report, "echo_sizes_in_fragments")?;
    let evidence = r["evidence"].as_str().unwrap_or_default();
    if code != Some(1)
        || r["verdict"] != "fail"
        || !evidence.contains("not done within --patience (1 s)")
        || left
    {
        return Err(format!("exit {code:?}, server left {left}:\n{stdout}").into());
    }
    Ok(())
}

/// Issue 29 #14: `--json` into a directory that does not exist is refused
/// before any check runs, in one line, as load, micro and herd refuse it.
fn conform_json_in_a_missing_directory_is_refused_first() -> Result<(), Failed> {
    let dir = scratch("conform-json-missing")?;
    let json = dir.join("no/such/dir/conform.json");
    let r = run_c10k(&[
        "conform",
        "--model",
        "epoll",
        "--json",
        &json.to_string_lossy(),
    ])?;
    let err = r.stderr.trim();
    if r.code != Some(2)
        || !err.starts_with("c10k conform: --json")
        || err.lines().count() != 1
        || !r.stdout.trim().is_empty()
    {
        return Err(format!("exit {:?}, stderr {err:?}, stdout {:?}", r.code, r.stdout).into());
    }
    Ok(())
}

/// Interruption: SIGTERM to `c10k conform` alone (as `kill PID` sends it)
/// while a check is in progress: exit 130, the check in progress cut and
/// not recorded, the JSON written and marked interrupted, the server
/// stopped. The server's shell tells its pid through a FIFO, which this
/// test opens and reads: no sleep.
fn conform_stops_on_sigterm_to_itself() -> Result<(), Failed> {
    let dir = scratch("conform-sigterm")?;
    let fifo = dir.join("started");
    let made = Command::new("mkfifo").arg(&fifo).status()?;
    if !made.success() {
        return Err("mkfifo failed".into());
    }
    let json = dir.join("conform.json");
    let server = format!(
        "sh -c 'echo $$ > {}; exec python3 {} {{port}}'",
        fifo.display(),
        repo("tests/servers/trickle_echo.py").display()
    );
    let mut child = Command::new(bin())
        .args(["conform", "--server", &server])
        .args([
            "--check",
            "echo_sizes_in_fragments",
            "--check",
            "half_close",
        ])
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pipes = Pipes::take(&mut child)?;
    let (tx, rx) = channel();
    let reader = fifo.clone();
    std::thread::spawn(move || tx.send(std::fs::read_to_string(reader)));
    let pid = match rx.recv_timeout(PATIENCE) {
        Ok(Ok(text)) => text.trim().parse::<u32>().map_err(|e| e.to_string()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => {
            // Release the reader blocked in open, then fail.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
            Err(format!("no server started within {PATIENCE:?}"))
        }
    };
    let _ = c10k::sys::process::kill(child.id() as i32, libc::SIGTERM);
    let status = wait_bounded(&mut child)?;
    let (stdout, stderr) = pipes.read();
    let pid = pid?;
    let left = running(pid);
    end(pid);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    if status.code() != Some(130)
        || report["interrupted"] != true
        || report["checks"].as_array().map(Vec::len) != Some(0)
        || !stdout.contains("interrupted")
        || !stderr.trim().starts_with("c10k conform: interrupted")
        || left
    {
        return Err(format!(
            "exit {:?}, server left {left}, report {report}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            status.code()
        )
        .into());
    }
    Ok(())
}

/// The flaky `conformance::fork::echo_sizes_in_fragments`: fork and
/// prefork stopped the moment their connections end, when their children
/// exit and SIGCHLD and SIGTERM reach the parent together, again and
/// again; each stop must end in an exit 0 with the summary, never in a
/// kill after the patience.
fn fork_and_prefork_stop_as_their_connections_end() -> Result<(), Failed> {
    const ROUNDS: usize = 20;
    const CONNS: usize = 16;
    for model in ["fork", "prefork"] {
        for round in 0..ROUNDS {
            let mut args = vec!["--model".to_string(), model.to_string()];
            if model == "prefork" {
                // One worker per connection, so every one is served at once.
                args.extend(["--workers".to_string(), CONNS.to_string()]);
            }
            let server = match Server::start(&args)? {
                Started::Running(s) => s,
                Started::Unsupported(why) => return Err(why.into()),
            };
            let streams: Vec<TcpStream> = (0..CONNS)
                .map(|_| TcpStream::connect(server.addr))
                .collect::<Result<_, _>>()?;
            for mut s in &streams {
                s.set_read_timeout(Some(PATIENCE))?;
                s.write_all(&[7u8; 1000])?;
            }
            for mut s in &streams {
                let mut back = [0u8; 1000];
                s.read_exact(&mut back)?;
                s.shutdown(Shutdown::Write)?;
                if s.read(&mut back)? != 0 {
                    return Err(format!("{model} round {round}: bytes after the echo").into());
                }
            }
            drop(streams);
            let (status, summary) = server
                .stop()
                .map_err(|e| format!("{model} round {round}: {e}"))?;
            if !status.success() || summary.connections != CONNS as u64 {
                return Err(format!(
                    "{model} round {round}: {status}, {} connections",
                    summary.connections
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Whether a task of a `c10k serve` in `pid`'s tree is in
/// `clock_nanosleep` (a handler's `block`), read from
/// `/proc/PID/task/TID/syscall`.
fn sleeping_in_a_handler(pid: u32) -> bool {
    let nanosleep = libc::SYS_clock_nanosleep.to_string();
    let serves = |p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.split(|&b| b == 0).any(|w| w == b"serve"))
    };
    c10k::metrics::tree::descendants(pid)
        .iter()
        .filter(|p| serves(p))
        .any(|p| {
            std::fs::read_dir(format!("/proc/{p}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|task| {
                    std::fs::read_to_string(task.path().join("syscall"))
                        .is_ok_and(|s| s.split_whitespace().next() == Some(nanosleep.as_str()))
                })
        })
}

/// Waits until `working` says a handler is in its work, or fails with
/// `what` after [`PATIENCE`] (or once `alive` says the process is gone).
/// The kernel notifies no one when another process's thread enters a
/// system call or spends CPU, so this reads /proc again and again,
/// yielding between reads: a bounded wait on that condition.
fn until_working(
    what: &str,
    working: impl Fn() -> bool,
    alive: impl Fn() -> bool,
) -> Result<(), Failed> {
    let start = std::time::Instant::now();
    while !working() {
        if start.elapsed() > PATIENCE || !alive() {
            return Err(format!("{what}: the handler never started its work").into());
        }
        std::thread::yield_now();
    }
    Ok(())
}

/// Every model, with a handler 40 s into `block` or `cpu` work (four parts
/// of 10 s, longer than [`PATIENCE`]), exits on SIGTERM: the stop ends
/// the work rather than waiting for it. The test waits (bounded) until the
/// handler is in its work: a task in `clock_nanosleep` for `block`, the
/// tree's CPU a fifth of a second past the request for `cpu` (busy spins
/// anyway, so there it only shows the work may have begun).
fn a_handler_in_long_work_does_not_hold_up_a_stop() -> Result<(), Failed> {
    for model in c10k::server::names() {
        for kind in ["block", "cpu"] {
            let work = vec![format!("{kind}:10s"); 4].join("+");
            let args: Vec<String> = ["--model", model, "--work", &work]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let server = match Server::start(&args)? {
                Started::Running(s) => s,
                Started::Unsupported(_) => continue,
            };
            let pid = server.pid() as u32;
            let before = c10k::metrics::cpu::tree(&[pid]).map_or(0.0, |c| c.seconds);
            let mut stream = TcpStream::connect(server.addr)?;
            stream.write_all(&[7u8; 64])?;
            let in_work = || match kind {
                "block" => sleeping_in_a_handler(pid),
                _ => c10k::metrics::cpu::tree(&[pid]).is_some_and(|c| c.seconds - before > 0.2),
            };
            until_working(&format!("{model} under {work}"), in_work, || true)?;
            let (status, _) = server
                .stop()
                .map_err(|e| format!("{model} under {work}: {e}"))?;
            if !status.success() {
                return Err(format!("{model} under {work}: {status}").into());
            }
        }
    }
    Ok(())
}

/// `c10k run` interrupted (SIGINT) while its server's handler is 40 s into
/// a blocking call ends as an interrupted run does: exit 130, the line
/// that says how to resume, and no server left. Its wait is bounded by
/// [`PATIENCE`], shorter than the work.
fn a_run_interrupted_in_long_work_ends_and_says_so() -> Result<(), Failed> {
    let out = scratch("interrupted-work")?;
    let mut run = Command::new(bin())
        .args([
            "run", "--models", "epoll", "-c", "2", "--runs", "1", "-d", "20s",
        ])
        .args([
            "--work",
            "block:10s+block:10s+block:10s+block:10s",
            "--no-report",
        ])
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pipes = Pipes::take(&mut run)?;
    let pid = run.id();
    if let Err(e) = until_working("the run", || sleeping_in_a_handler(pid), || running(pid)) {
        let _ = c10k::sys::process::kill(pid as i32, libc::SIGKILL);
        let _ = wait_bounded(&mut run);
        return Err(e);
    }
    let servers: Vec<u32> = c10k::metrics::tree::descendants(pid);
    c10k::sys::process::kill(pid as i32, libc::SIGINT)?;
    let status = wait_bounded(&mut run)?;
    let (_, stderr) = pipes.read();
    if status.code() != Some(130) || !stderr.contains("c10k run --resume") {
        return Err(format!("exit {status}, stderr {stderr:?}").into());
    }
    if let Some(p) = servers.iter().find(|&&p| p != pid && running(p)) {
        return Err(format!("process {p} of the run is left").into());
    }
    Ok(())
}
