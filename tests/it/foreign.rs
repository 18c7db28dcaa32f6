//! `c10k run --server`: a server that is not c10k's, measured as a model
//! (the asyncio peer, standard-library Python), and foreign servers
//! (tests/servers/) that never become ready, exit at once, or ignore
//! SIGTERM, each a failed cell with its cause and nothing of theirs left
//! running.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::Failed;

use crate::support::{bin, expect_contains, lines, results_dir, scratch, succeeded};

tests![
    asyncio_server_is_measured_as_a_model,
    never_ready_exits_at_once_and_ignores_sigterm_are_failed_cells,
    a_running_target_is_driven_and_not_observed,
    every_peer_runs_or_says_what_to_install,
    a_noisy_server_is_inconclusive_against_a_steady_one_never_tied,
    a_foreign_server_runs_under_none_and_is_skipped_under_work,
    the_web_peers_are_contestants_over_http,
];

/// Runs `c10k run ARGS --no-report --out DIR/out` (with `env` set) and
/// returns the records of the one results directory it made.
fn run_with(
    dir: &Path,
    env: &[(&str, PathBuf)],
    args: &[&str],
) -> Result<Vec<serde_json::Value>, Failed> {
    let out = dir.join("out");
    let o = Command::new(bin())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("run")
        .args(args)
        .args(["--no-report", "--out"])
        .arg(&out)
        .output()?;
    succeeded(&o, "")?;
    lines(&results_dir(&out)?)
}

/// [`run`] of a run none of whose cells can be measured: it must exit 5,
/// saying so, and still record every cell.
fn run_unmeasured(dir: &Path, args: &[&str]) -> Result<Vec<serde_json::Value>, Failed> {
    let out = dir.join("out");
    let o = Command::new(bin())
        .arg("run")
        .args(args)
        .args(["--no-report", "--out"])
        .arg(&out)
        .output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(5) || !err.contains("c10k run: no cell was measured") {
        return Err(format!("exit {:?}: {err}", o.status.code()).into());
    }
    lines(&results_dir(&out)?)
}

fn run(dir: &Path, args: &[&str]) -> Result<Vec<serde_json::Value>, Failed> {
    run_with(dir, &[], args)
}

/// Processes whose command line mentions `dir`: what a run left behind.
pub(crate) fn left_running(dir: &Path) -> Vec<String> {
    let mark = dir.to_string_lossy().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&mark))
        .collect()
}

fn asyncio_server_is_measured_as_a_model() -> Result<(), Failed> {
    let dir = scratch("foreign-asyncio")?;
    // A copy of the peer under this test's directory, so what it leaves
    // running can be told from any other test's.
    let script = dir.join("asyncio_echo.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/asyncio_echo.py"),
        &script,
    )?;
    let spec = format!("asyncio=python3 {} {{port}} {{addr}}", script.display());
    let cells = run(
        &dir,
        &[
            "--models",
            "",
            "--server",
            &spec,
            "--connections",
            "2,5",
            "--runs",
            "1",
            "--duration",
            "300ms",
            "--warmup",
            "20ms",
        ],
    )?;
    if cells.len() != 2 {
        return Err(format!("{} cells recorded, expected 2: {cells:?}", cells.len()).into());
    }
    for c in &cells {
        let id = c["id"].as_str().unwrap_or("");
        if c["status"] != "ok" || c["model"] != "asyncio" {
            return Err(format!("cell {id}: {} ({})", c["status"], c["reason"]).into());
        }
        let n = c["connections"].as_u64().unwrap_or(0);
        let load = &c["load"];
        if load["messages"].as_u64().unwrap_or(0) == 0 || load["connections"]["established"] != n {
            return Err(format!("cell {id}: no echoes or connections missing: {load}").into());
        }
        let s = &c["server"];
        // Its process tree was sampled holding every connection.
        let held = s["loaded"]["sockets"].as_u64().unwrap_or(0)
            - s["idle"]["sockets"].as_u64().unwrap_or(0);
        if held != n {
            return Err(format!("cell {id}: sampled with {held} of {n} connections: {s}").into());
        }
        if s["loaded"]["rss_kib"].as_u64().unwrap_or(0) == 0 {
            return Err(format!("cell {id}: no memory sampled: {s}").into());
        }
        if s["cpu_user_seconds"].as_f64().unwrap_or(0.0)
            + s["cpu_system_seconds"].as_f64().unwrap_or(0.0)
            <= 0.0
        {
            return Err(format!("cell {id}: no server CPU time from wait4: {s}").into());
        }
        // The command as run: the placeholders filled in.
        let args: Vec<&str> = s["args"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        if args.len() != 4 || args[2].parse::<u16>().is_err() || args[3] != "127.0.0.1" {
            return Err(format!("cell {id}: command {args:?}").into());
        }
    }
    let left = left_running(&dir);
    if !left.is_empty() {
        return Err(format!("left running: {left:?}").into());
    }
    Ok(())
}

/// `--work`: a server that is not c10k's cannot be given work: its cells
/// with work are skipped with that reason (never a number), its none cells
/// measured; a c10k model beside it runs under both.
fn a_foreign_server_runs_under_none_and_is_skipped_under_work() -> Result<(), Failed> {
    let dir = scratch("foreign-work")?;
    let script = dir.join("asyncio_echo.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/asyncio_echo.py"),
        &script,
    )?;
    let spec = format!("asyncio=python3 {} {{port}} {{addr}}", script.display());
    let cells = run(
        &dir,
        &[
            "--models",
            "epoll",
            "--server",
            &spec,
            "--work",
            "none,block:1ms",
            "--connections",
            "2",
            "--runs",
            "1",
            "--duration",
            "100ms",
            "--warmup",
            "0ms",
        ],
    )?;
    if cells.len() != 4 {
        return Err(format!("{} cells recorded, expected 4: {cells:?}", cells.len()).into());
    }
    for c in &cells {
        let id = c["id"].as_str().unwrap_or("");
        let reason = c["reason"].as_str().unwrap_or("");
        let fine = match (c["model"].as_str(), c["work"].as_str()) {
            (Some("asyncio"), Some("block:1ms")) => {
                c["status"] == "skipped"
                    && c["load"].is_null()
                    && c["server"].is_null()
                    && reason.contains("asyncio is not a c10k model: --work block:1ms")
            }
            _ => c["status"] == "ok" && c["load"]["messages"].as_u64().unwrap_or(0) > 0,
        };
        if !fine {
            return Err(format!("cell {id}: {} ({reason})", c["status"]).into());
        }
    }
    let left = left_running(&dir);
    if !left.is_empty() {
        return Err(format!("left running: {left:?}").into());
    }
    Ok(())
}

fn every_peer_runs_or_says_what_to_install() -> Result<(), Failed> {
    let dir = scratch("foreign-peers")?;
    // The peers are written (and Go built) under this test's directory.
    let cells = run_with(
        &dir,
        &[("XDG_CACHE_HOME", dir.join("cache"))],
        &[
            "peers", "--models", "", "-c", "3", "--runs", "1", "-d", "100ms",
        ],
    )?;
    let names: Vec<&str> = cells.iter().filter_map(|c| c["model"].as_str()).collect();
    if names != ["go", "node", "asyncio", "uvloop", "erlang", "socat"] {
        return Err(format!("peers run: {names:?}").into());
    }
    for c in &cells {
        let (model, status) = (c["model"].as_str().unwrap_or(""), &c["status"]);
        let reason = c["reason"].as_str().unwrap_or("");
        let fine = status == "ok" && c["load"]["connections"]["established"] == 3;
        let skipped = status == "skipped" && reason.contains("(apt-get install ");
        // asyncio needs python3 only, which runs the tests themselves.
        if !(fine || skipped && model != "asyncio") {
            return Err(format!("{model}: {status} ({reason})").into());
        }
    }
    let left = left_running(&dir);
    if !left.is_empty() {
        return Err(format!("left running: {left:?}").into());
    }
    Ok(())
}

fn a_running_target_is_driven_and_not_observed() -> Result<(), Failed> {
    let dir = scratch("foreign-target")?;
    // The peer, started by the test as a user would start their server.
    let (mut server, addr) = crate::support::asyncio_peer()?;
    let target = format!("mine={addr}");
    let cells = run(
        &dir,
        &[
            "--models", "", "--target", &target, "-c", "3", "--runs", "1", "-d", "100ms",
        ],
    );
    let _ = server.kill();
    let _ = server.wait();
    let cells = cells?;
    let c = cells.first().ok_or("no cell")?;
    if cells.len() != 1 || c["status"] != "ok" || c["model"] != "mine" {
        return Err(format!("{cells:?}").into());
    }
    if c["load"]["connections"]["established"] != 3 || c["load"]["messages"].as_u64() == Some(0) {
        return Err(format!("not driven: {}", c["load"]).into());
    }
    // Not c10k's process: no server side is recorded, and the table says
    // so rather than leave a gap.
    if !c["server"].is_null() {
        return Err(format!("a server side was recorded: {}", c["server"]).into());
    }
    let out = dir.join("out");
    let md = std::fs::read_dir(&out)?
        .flatten()
        .map(|e| e.path().join("results.md"))
        .find(|p| p.exists())
        .ok_or("no results.md")?;
    expect_contains("results.md", &std::fs::read_to_string(md)?, "not observed")?;
    Ok(())
}

fn never_ready_exits_at_once_and_ignores_sigterm_are_failed_cells() -> Result<(), Failed> {
    let dir = scratch("foreign-misbehaving")?;
    // Copies of the servers (tests/servers/) under this test's directory,
    // so what they leave running can be told from any other test's.
    let copy = |name: &str| -> Result<String, Failed> {
        let p = dir.join(name);
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/servers")
                .join(name),
            &p,
        )?;
        Ok(p.display().to_string())
    };
    let never = copy("never_ready.py")?;
    let exits = copy("exits_at_once.py")?;
    // Serves, ignores SIGTERM, and leaves a child of its own in its
    // process group.
    let stubborn = copy("ignores_sigterm.py")?;
    let specs = [
        format!("never=python3 {never} {{port}}"),
        format!("exits=python3 {exits} {{port}}"),
        format!("stubborn=python3 {stubborn} {{port}}"),
    ];
    let mut args = vec!["--models", "", "--connections", "2", "--runs", "1"];
    args.extend(["--duration", "100ms", "--warmup", "0ms"]);
    args.extend(["--ready-timeout", "2s"]);
    for s in &specs {
        args.extend(["--server", s.as_str()]);
    }
    let cells = run_unmeasured(&dir, &args)?;
    for (model, want) in [
        (
            "never",
            "never: the server neither printed READY nor accepted a connection on port",
        ),
        (
            "exits",
            "exits: the server exited with code 1: cannot start: no such thing before it was ready",
        ),
        (
            "stubborn",
            "the server did not exit after SIGTERM and was killed",
        ),
    ] {
        let c = cells
            .iter()
            .find(|c| c["model"] == model)
            .ok_or_else(|| format!("no cell of {model}: {cells:?}"))?;
        let reason = c["reason"].as_str().unwrap_or("");
        if c["status"] != "failed" || !reason.contains(want) {
            return Err(format!("{model}: {} ({reason:?}), expected {want:?}", c["status"]).into());
        }
    }
    let left = left_running(&dir);
    if !left.is_empty() {
        return Err(format!("left running: {left:?}").into());
    }
    Ok(())
}

/// A server whose runs swing by 25× (tests/servers/sleepy_echo.py: fast,
/// slow, fast) beside a steady one: their comparison is inconclusive, the
/// ranking says so in its heading, its rank column and the row, and
/// nothing reads as a tie.
fn a_noisy_server_is_inconclusive_against_a_steady_one_never_tied() -> Result<(), Failed> {
    let dir = scratch("foreign-noisy")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/sleepy_echo.py");
    let noisy = format!(
        "noisy=python3 {} {{port}} {}",
        script.display(),
        dir.join("noisy.state").display()
    );
    let steady = format!(
        "steady=python3 {} {{port}} {} 0.001",
        script.display(),
        dir.join("steady.state").display()
    );
    let o = Command::new(bin())
        .args([
            "run", "--models", "", "--server", &noisy, "--server", &steady,
        ])
        .args(["-c", "2", "--runs", "3", "-d", "300ms", "--warmup", "20ms"])
        .args(["--repeat-disturbed", "0", "--no-report", "--out"])
        .arg(dir.join("out"))
        .output()?;
    succeeded(&o, "")?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let ranking = stdout.split("Verdict").next().ok_or("no ranking")?;
    let rows: Vec<&str> = ranking
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("1 ") || l.starts_with("1? "))
        .collect();
    let heading = ranking
        .lines()
        .find(|l| l.starts_with("2 connections: "))
        .ok_or_else(|| format!("no heading: {stdout}"))?;
    // Fast, slow, fast: the noisy server's median is the fast one on a
    // quiet machine; beside the rest of the suite its fast runs may be
    // starved of CPU, and the steady one is best. Either way the two are
    // not told apart, and nothing reads as a tie.
    let told = |best: &str, other: &str| {
        heading.contains(&format!(
            "{best} is best; {other} not told apart from it (inconclusive)"
        )) && rows.len() == 2
            && rows[0].starts_with("1 ")
            && rows[0].contains(best)
            && rows[0].ends_with("best")
            && rows[1].starts_with("1? ")
            && rows[1].contains(other)
            && rows[1].contains("inconclusive (")
    };
    let fine = (told("noisy", "steady") || told("steady", "noisy"))
        && !stdout.contains("tied")
        && !stdout.contains("equivalent (");
    if !fine {
        return Err(format!("the noisy server's ranking: {stdout}").into());
    }
    let left = left_running(&dir);
    if !left.is_empty() {
        return Err(format!("left running: {left:?}").into());
    }
    Ok(())
}

/// `c10k run web` with one model: nginx, Go's net/http and Node's http
/// beside it, every cell measured over HTTP/1.1 with every response a
/// 200, and nothing of theirs left running.
fn the_web_peers_are_contestants_over_http() -> Result<(), Failed> {
    crate::http::nginx()?;
    for tool in ["go", "node"] {
        crate::support::installed(|| crate::support::on_path(tool), "install-web.sh", tool)?;
    }
    let dir = scratch("foreign-web")?;
    let cells = run_with(
        &dir,
        &[("XDG_CACHE_HOME", dir.join("cache"))],
        &[
            "web", "--models", "epoll", "-c", "3", "--runs", "1", "-d", "200ms",
        ],
    )?;
    let names: Vec<&str> = cells.iter().filter_map(|c| c["model"].as_str()).collect();
    crate::support::expect_eq(
        "the contestants",
        vec!["epoll", "nginx", "go-http", "node-http"],
        names,
    )?;
    for c in &cells {
        let model = c["model"].as_str().unwrap_or("");
        let load = &c["load"];
        let messages = load["messages"].as_u64().unwrap_or(0);
        crate::support::ensure(
            c["status"] == "ok"
                && load["protocol"] == "http"
                && messages > 0
                && load["http"]["status"]["200"].as_u64() == Some(messages)
                && load["http"]["errors"] == 0,
            || format!("{model}: {} {} {}", c["status"], c["reason"], load["http"]),
        )?;
    }
    let left = left_running(&dir);
    if !left.is_empty() {
        return Err(format!("left running: {left:?}").into());
    }
    Ok(())
}
