//! `c10k micro spawn` and `c10k micro dispatch` end to end at a small size:
//! the real binary runs, and its JSON is checked for sense — every thread
//! created is joined, every child forked is reaped and none is left, every
//! dispatch call found exactly A ready descriptors, N stays under the
//! open-files limit (and says so when capped). Bad flags get one line and
//! exit 2. No timing is asserted.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{bin, ensure, expect_contains, expect_eq};

tests![
    spawn_reaps_and_joins_everything,
    dispatch_every_call_finds_a_ready,
    dispatch_caps_n_to_the_limit,
    bad_flags_are_one_line_exit_2,
];

/// How long one benchmark run may take before the test fails (a guard
/// against a hang; the runs here take a second or two).
const PATIENCE: Duration = Duration::from_secs(120);

/// Runs `cmd` to its end, killing it after [`PATIENCE`].
fn run_bounded(mut cmd: Command) -> Result<Output, Failed> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start c10k: {e}"))?;
    let pid = child.id() as i32;
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(out) => Ok(out?),
        Err(_) => {
            let _ = c10k::sys::process::kill(pid, libc::SIGKILL);
            Err(format!("c10k did not finish within {PATIENCE:?}").into())
        }
    }
}

fn json_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("c10k-micro-{name}-{}.json", std::process::id()))
}

/// Runs `c10k micro ARGS… --json PATH`; exit 0 and the JSON, or why not.
fn micro(name: &str, args: &[&str], shell_prefix: Option<&str>) -> Result<(Value, String), Failed> {
    let path = json_path(name);
    let _ = std::fs::remove_file(&path);
    let mut all: Vec<String> = vec!["micro".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.push("--json".into());
    all.push(path.display().to_string());
    let cmd = match shell_prefix {
        // `sh -c 'ulimit …; exec "$0" "$@"' BIN ARGS…`: a limit for the
        // child alone.
        Some(prefix) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("{prefix} && exec \"$0\" \"$@\""))
                .arg(bin())
                .args(&all);
            c
        }
        None => {
            let mut c = Command::new(bin());
            c.args(&all);
            c
        }
    };
    let out = run_bounded(cmd)?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "c10k micro {args:?}: {}; stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let _ = std::fs::remove_file(&path);
    let json: Value = serde_json::from_str(&text).map_err(|e| format!("bad JSON: {e}"))?;
    Ok((json, stdout))
}

fn num(v: &Value, key: &str) -> Result<u64, Failed> {
    v[key]
        .as_u64()
        .ok_or_else(|| format!("no number {key} in {v}").into())
}

fn float(v: &Value, key: &str) -> Result<f64, Failed> {
    v[key]
        .as_f64()
        .ok_or_else(|| format!("no number {key} in {v}").into())
}

fn array<'a>(v: &'a Value, key: &str) -> Result<&'a Vec<Value>, Failed> {
    v[key]
        .as_array()
        .ok_or_else(|| format!("no array {key} in the JSON").into())
}

fn spawn_reaps_and_joins_everything() -> Result<(), Failed> {
    let (j, stdout) = micro(
        "spawn",
        &[
            "spawn",
            "--counts",
            "1,4",
            "--runs",
            "2",
            "--parked",
            "8",
            "--large-rss",
            "8MiB",
            "--small-stack",
            "64KiB",
        ],
        None,
    )?;
    ensure(j["benchmark"] == "micro spawn" && j["version"] == 1, || {
        format!("not a versioned spawn report: {}", j["benchmark"])
    })?;
    ensure(j["environment"]["kernel"].is_string(), || {
        format!("no kernel in the environment: {}", j["environment"])
    })?;
    for title in [
        "Thread create + join",
        "fork + reap",
        "Memory per parked thread",
    ] {
        expect_contains("the tables", &stdout, title)?;
    }

    let threads = array(&j, "threads")?;
    ensure(threads.len() == 4, || {
        format!("{} thread cells, want 2 stacks × 2 counts", threads.len())
    })?;
    for c in threads {
        let n = num(c, "count")?;
        let rounds = array(c, "rounds")?;
        ensure(rounds.len() == 2, || {
            format!("{} runs, want 2", rounds.len())
        })?;
        for r in rounds {
            ensure(num(r, "created")? == n && num(r, "joined")? == n, || {
                format!("{n} threads: {r}")
            })?;
        }
        ensure(float(&c["per_thread_us"], "median")? > 0.0, || {
            format!("no time per thread: {c}")
        })?;
    }

    let forks = array(&j, "forks")?;
    ensure(forks.len() == 4, || {
        format!("{} fork cells, want 2 parents × 2 counts", forks.len())
    })?;
    for c in forks {
        let n = num(c, "count")?;
        for r in array(c, "rounds")? {
            ensure(
                num(r, "forked")? == n && num(r, "reaped")? == n && num(r, "bad_exits")? == 0,
                || format!("{n} forks: {r}"),
            )?;
        }
        if c["parent"] == "large" {
            ensure(num(c, "parent_rss_kib")? >= 8 * 1024, || {
                format!("the large parent is not large: {c}")
            })?;
        }
    }
    ensure(j["children_left"] == 0, || {
        format!("children left: {}", j["children_left"])
    })?;

    let parked = array(&j, "parked")?;
    ensure(parked.len() == 2, || {
        format!("{} parked cells", parked.len())
    })?;
    for c in parked {
        let stack_kib = num(c, "stack_bytes")? as f64 / 1024.0;
        for r in array(c, "rounds")? {
            ensure(num(r, "parked")? == 8 && num(r, "joined")? == 8, || {
                format!("parked: {r}")
            })?;
            let before = num(&r["before"], "threads")?;
            let during = num(&r["during"], "threads")?;
            ensure(during == before + 8, || {
                format!("{before} threads before, {during} while 8 were parked")
            })?;
            // Each thread maps at least its stack.
            ensure(float(r, "vm_kib_per_thread")? >= 0.9 * stack_kib, || {
                format!("virtual memory per thread below the stack ({stack_kib} KiB): {r}")
            })?;
        }
    }
    Ok(())
}

/// Checks every cell of a dispatch report: the calls asked for, each with
/// exactly A ready descriptors and one byte each.
fn check_cells(j: &Value, calls: u64) -> Result<usize, Failed> {
    let cells = array(j, "cells")?;
    for c in cells {
        let a = num(c, "active")?;
        let n = num(c, "fds")?;
        ensure(num(c, "nfds")? >= n, || format!("nfds below N: {c}"))?;
        for r in array(c, "rounds")? {
            let ok = num(r, "calls")? == calls
                && num(r, "exact_calls")? == calls
                && num(r, "events")? == calls * a
                && num(r, "bytes_read")? == calls * a;
            ensure(ok, || format!("N = {n}, A = {a}, {}: {r}", c["method"]))?;
        }
        ensure(c["wait_ns"]["median"].as_f64().is_some(), || {
            format!("no time per call: {c}")
        })?;
        let select = c["method"] == "select";
        ensure(c["scan_bits_ns"].is_null() != select, || {
            format!("the bit-by-bit scan belongs to select alone: {c}")
        })?;
    }
    Ok(cells.len())
}

fn dispatch_every_call_finds_a_ready() -> Result<(), Failed> {
    let (j, stdout) = micro(
        "dispatch",
        &[
            "dispatch", "--fds", "10,50", "--active", "1,3", "--calls", "200", "--runs", "2",
        ],
        None,
    )?;
    ensure(
        j["benchmark"] == "micro dispatch" && j["version"] == 1,
        || format!("not a versioned dispatch report: {}", j["benchmark"]),
    )?;
    let cells = check_cells(&j, 200)?;
    ensure(cells == 16, || {
        format!("{cells} cells, want 2 N × 2 A × 4 methods")
    })?;
    for m in ["select", "poll", "epoll-lt", "epoll-et"] {
        let seen = array(&j, "cells")?.iter().any(|c| c["method"] == m);
        ensure(seen, || format!("no {m} cell"))?;
    }
    for title in [
        "Return time of one wait call",
        "per ready event",
        "Finding the ready",
    ] {
        expect_contains("the tables", &stdout, title)?;
    }
    let capped = array(&j["parameters"], "capped")?;
    ensure(capped.is_empty(), || {
        format!("nothing should be capped at N = 50, yet: {capped:?}")
    })?;
    Ok(())
}

fn dispatch_caps_n_to_the_limit() -> Result<(), Failed> {
    let (j, stdout) = micro(
        "capped",
        &[
            "dispatch", "--fds", "10,1000", "--calls", "20", "--runs", "1",
        ],
        Some("ulimit -n 200"),
    )?;
    let p = &j["parameters"];
    ensure(num(p, "nofile")? == 200, || format!("limit not seen: {p}"))?;
    let max = num(p, "max_pairs")?;
    let open = num(p, "fds_open")?;
    ensure(2 * max + open <= 200 && max >= 10, || {
        format!("{max} pairs do not fit in 200 descriptors with {open} open")
    })?;
    let fds: Vec<u64> = array(p, "fds")?.iter().filter_map(Value::as_u64).collect();
    expect_eq("N measured", vec![10, max], fds)?;
    let capped = array(p, "capped")?;
    ensure(
        capped.len() == 1 && capped[0]["asked"] == 1000 && capped[0]["used"] == max,
        || format!("capped: {capped:?}"),
    )?;
    expect_contains("the tables, of N capped", &stdout, "capped to")?;
    check_cells(&j, 20)?;
    Ok(())
}

fn bad_flags_are_one_line_exit_2() -> Result<(), Failed> {
    for args in [
        &["spawn", "--counts", "0"][..],
        &["spawn", "--small-stack", "1KiB"],
        &["spawn", "--large-rss", "lots"],
        &["spawn", "--runs", "0"],
        &["dispatch", "--fds", "0"],
        &["dispatch", "--calls", "0"],
        &["dispatch", "--active", "0"],
        &["dispatch", "--frobnicate"],
    ] {
        let mut cmd = Command::new(bin());
        cmd.arg("micro").args(args);
        let out = run_bounded(cmd)?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure(
            out.status.code() == Some(2) && err.lines().count() == 1,
            || format!("{args:?}: {}, stderr {err:?}", out.status),
        )?;
    }
    Ok(())
}
