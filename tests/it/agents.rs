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
        if !err.contains("3 agents on") || !err.contains("start skew") {
            return Err(format!("{t}: no agents line: {err}").into());
        }
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
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
