//! `c10k load --agent`: the run spread over agents started through every
//! kind of launcher template with the real binary (`{cmd}`, a shell given
//! `{cmd_sh}`, and a fake `ssh` first on PATH that prints a login banner,
//! drops its options and host and runs the command through `sh -c`, as
//! ssh does); counts must be exact and connection ids unique over the
//! agents. Launchers that fail, and bad flags, are one line.

use std::path::Path;
use std::process::Command;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{bin, scratch, Server, Started, Test};

pub const TESTS: &[(&str, Test)] = &[
    ("every_launcher_runs_the_same_run", every_launcher),
    ("a_launcher_that_fails_is_one_line", failing_launcher),
    ("an_agent_lost_mid_run_leaves_the_rest", lost_agent),
    ("bad_agent_flags_are_one_line_exit_2", bad_flags),
];

/// A fake `ssh`: a banner on stdout (noise the protocol must ignore), its
/// options and the host dropped, the rest joined and run by a shell.
const FAKE_SSH: &str = r#"#!/bin/sh
echo "Welcome to $(hostname)! Last login: yesterday"
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -[oiplFJ]) shift 2 ;;
    -*) shift ;;
    *) shift; [ "$1" = "--" ] && shift; break ;;
  esac
done
exec sh -c "$*"
"#;

fn epoll() -> Result<Server, Failed> {
    match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(r) => Err(r.into()),
    }
}

/// `c10k load ADDR ARGS…` with `dir` first on PATH; exit code, stderr.
fn load(dir: &Path, addr: &str, args: &[&str]) -> Result<(Option<i32>, String), Failed> {
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(bin())
        .env("PATH", path)
        .arg("load")
        .arg(addr)
        .args(args)
        .output()?;
    Ok((
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    ))
}

fn every_launcher() -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("agents-launchers")?;
    let ssh = dir.join("ssh");
    std::fs::write(&ssh, FAKE_SSH)?;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755))?;
    let server = epoll()?;
    let addr = server.addr.to_string();
    let templates = [
        "{cmd}",
        "sh -c {cmd_sh}",
        "ssh -T -o BatchMode=yes host{i} -- {cmd_sh}",
    ];
    for t in templates {
        let json = dir.join("r.json");
        let csv = dir.join("c.csv");
        let (code, err) = load(
            &dir,
            &addr,
            &[
                "-c",
                "30",
                "-n",
                "10",
                "--agent",
                t,
                "--agents",
                "3",
                "--json",
                &json.to_string_lossy(),
                "--per-connection-csv",
                &csv.to_string_lossy(),
            ],
        )?;
        if code != Some(0) {
            return Err(format!("{t}: exit {code:?}: {err}").into());
        }
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
        // Each agent's own figures add up to the whole.
        let each = j["agents"]["each"].as_array().cloned().unwrap_or_default();
        let sum = |f: &str| each.iter().map(|a| a[f].as_u64().unwrap_or(0)).sum::<u64>();
        if each.len() != 3
            || sum("connections") != 30
            || sum("messages") != 300
            || each
                .iter()
                .any(|a| !a["lost"].is_null() || a["p99_us"].as_f64().is_none())
            || j["agents"]["start_skew_us"].as_f64().is_none()
        {
            return Err(format!("{t}: agents {}", j["agents"]).into());
        }
        if j["messages"] != 300
            || j["connections"]["established"] != 30
            || j["client"]["processes"] != 3
        {
            return Err(format!(
                "{t}: messages {} connections {} processes {}",
                j["messages"], j["connections"], j["client"]["processes"]
            )
            .into());
        }
        let mut ids: Vec<u32> = csv::Reader::from_path(&csv)?
            .records()
            .map(|r| r.map(|r| r[0].parse().unwrap_or(u32::MAX)))
            .collect::<Result<_, _>>()?;
        ids.sort_unstable();
        if ids != (0..30).collect::<Vec<_>>() {
            return Err(format!("{t}: connection ids {ids:?}").into());
        }
    }
    let (_, summary) = server.stop()?;
    if summary.connections != 90 || summary.bytes_echoed != 900 * 64 {
        return Err(format!("the server saw {summary:?}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A template whose agent 1 is hit by `act` (a shell command; `$p` is the
/// agent's pid) the moment it says `started`; the other agents run as
/// `{cmd}` would.
fn hit_agent_one(act: &str) -> String {
    format!(
        "sh -c 'if [ {{i}} = 1 ]; then {{cmd_sh}} | while IFS= read -r l; do printf \"%s\\n\" \"$l\"; case \"$l\" in *started*) p=$(pgrep -P $$ c10k); {act};; esac; done; else exec {{cmd_sh}}; fi'"
    )
}

fn lost_agent() -> Result<(), Failed> {
    let dir = scratch("agents-lost")?;
    let server = epoll()?;
    let addr = server.addr.to_string();
    for (act, why, allow) in [
        ("kill -9 $p", "its output closed", false),
        ("kill -STOP $p", "no progress for 3 s", true),
    ] {
        let json = dir.join("r.json");
        let template = hit_agent_one(act);
        let mut args = vec![
            "-c", "30", "-d", "1s", "--agents", "3", "--agent", &template, "--json",
        ];
        let json_text = json.to_string_lossy().to_string();
        args.push(&json_text);
        if allow {
            args.push("--allow-partial");
        }
        let (code, err) = load(&dir, &addr, &args)?;
        let want = if allow { 0 } else { 1 };
        if code != Some(want) {
            return Err(format!("{act}: exit {code:?}, expected {want}: {err}").into());
        }
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
        let warned = j["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|w| {
                w.contains("agent 1 (")
                    && w.contains(why)
                    && w.contains("its 10 connections are missing")
            });
        let lost_one = j["agents"]["each"][1]["lost"]
            .as_str()
            .is_some_and(|w| w.contains(why));
        if j["connections"]["established"] != 20
            || !warned
            || !lost_one
            || j["messages"].as_u64() == Some(0)
        {
            return Err(format!("{act}: {} {}", j["connections"], j["warnings"]).into());
        }
    }
    // No agent outlived its run: every connection the server took is closed.
    let (_, summary) = server.stop()?;
    if summary.open_at_exit != 0 || summary.connections != 60 {
        return Err(format!("the server saw {summary:?}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn failing_launcher() -> Result<(), Failed> {
    let dir = scratch("agents-failing")?;
    let server = epoll()?;
    let addr = server.addr.to_string();
    for (template, says) in [
        ("no-such-launcher-c10k {cmd}", "cannot start agent 0"),
        ("false {cmd}", "ended before"),
        ("sh -c 'echo C10K1 {{\"hello\":7}}'", "does not parse"),
    ] {
        let (code, err) = load(&dir, &addr, &["-c", "4", "-n", "2", "--agent", template])?;
        let line = err.trim();
        if code != Some(1) || !line.contains(says) || line.lines().count() != 1 {
            return Err(format!("{template}: exit {code:?}: {err}").into());
        }
    }
    // Nothing reached the server but, at most, connections closed at once.
    let (_, summary) = server.stop()?;
    if summary.bytes_echoed != 0 {
        return Err(format!("the server echoed {summary:?}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn bad_flags() -> Result<(), Failed> {
    let dir = scratch("agents-bad")?;
    for (args, says) in [
        (&["--agents", "3"][..], "--agents needs --agent"),
        (&["--agent", "sh -c 'run {cmd}'"][..], "a word of its own"),
        (&["--agent", "ssh 'host"][..], "unbalanced quotes"),
        (&["--agent", "{cmd}", "--agents", "0"][..], "--agents 0"),
        (
            &["--agents-file", "/nonexistent/c10k-agents"][..],
            "--agents-file",
        ),
    ] {
        let (code, err) = load(&dir, "127.0.0.1:9", args)?;
        let line = err.trim();
        if code != Some(2) || !line.contains(says) || line.lines().count() != 1 {
            return Err(format!("{args:?}: exit {code:?}: {err}").into());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
