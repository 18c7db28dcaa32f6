//! `c10k herd` end to end at a small size: every wait method with 1 and 4
//! workers, its JSON checked for sense (the accepts add up to the
//! connections made, every worker reaped and gone, the spread in range),
//! the chart written, and bad flags refused with one line and exit 2. No
//! timing is asserted.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{alive, bin, Test};

pub const TESTS: &[(&str, Test)] = &[
    ("every_method_adds_up_and_reaps_its_workers", every_method),
    ("dups_in_every_wait_set_add_up", dups),
    ("bad_flags_are_one_line_exit_2", bad_flags),
];

/// Longest a small herd may take before the test fails (a guard against
/// hangs, not a timing assertion).
const HERD_PATIENCE: Duration = Duration::from_secs(120);

/// What a finished `c10k herd` gave.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `c10k herd ARGS…` in its own process group, killing the group if
/// it takes longer than [`HERD_PATIENCE`].
fn herd(args: &[&str]) -> Result<Ran, Failed> {
    let mut child = Command::new(bin())
        .arg("herd")
        .args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id() as i32;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let mut err = child.stderr.take().ok_or("no stderr")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let (tx, rx) = channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(HERD_PATIENCE).is_err() {
            let _ = c10k::sys::process::kill(-pid, 9);
            return true;
        }
        false
    });
    let status = child.wait()?;
    let _ = tx.send(());
    let killed = watchdog.join().unwrap_or(false);
    let stdout = reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if killed {
        return Err(
            format!("c10k herd {args:?} took over {HERD_PATIENCE:?}; stderr: {stderr}").into(),
        );
    }
    Ok(Ran {
        code: status.code(),
        stdout,
        stderr,
    })
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("c10k-herd-{name}-{}", std::process::id()))
}

fn num(v: &Value, key: &str) -> Result<f64, Failed> {
    v.get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("no number {key:?} in {v}").into())
}

/// Runs the herd with `args` plus --json, and checks every cell for sense.
/// Returns the parsed JSON.
fn checked(
    name: &str,
    args: &[&str],
    methods: &[&str],
    workers: &[usize],
) -> Result<Value, Failed> {
    let json_path = scratch(&format!("{name}.json"));
    let svg_path = scratch(&format!("{name}.svg"));
    let json_arg = json_path.to_string_lossy().into_owned();
    let svg_arg = svg_path.to_string_lossy().into_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", &json_arg, "--svg", &svg_arg]);
    let ran = herd(&all)?;
    if ran.code != Some(0) {
        return Err(format!("exit {:?}; stderr: {}", ran.code, ran.stderr).into());
    }
    if !ran.stdout.contains("Thundering herd") {
        return Err(format!("no table on stdout: {}", ran.stdout).into());
    }
    let text = std::fs::read_to_string(&json_path)?;
    let _ = std::fs::remove_file(&json_path);
    let svg = std::fs::read_to_string(&svg_path)?;
    let _ = std::fs::remove_file(&svg_path);
    if !svg.contains("<svg") || !svg.contains("wakeups per connection") {
        return Err("the chart is not an SVG of the herd".into());
    }
    let v: Value = serde_json::from_str(&text)?;
    let cells = v
        .get("cells")
        .and_then(Value::as_array)
        .ok_or("no cells in the JSON")?;
    if cells.len() != methods.len() * workers.len() {
        return Err(format!(
            "{} cells for {} methods × {} worker counts",
            cells.len(),
            methods.len(),
            workers.len()
        )
        .into());
    }
    let mut forked = 0.0;
    for c in cells {
        let label = format!(
            "{} W={}",
            c.get("method").and_then(Value::as_str).unwrap_or("?"),
            c.get("workers").and_then(Value::as_u64).unwrap_or(0)
        );
        let at = |e: String| -> Failed { format!("{label}: {e}").into() };
        let w = num(c, "workers")?;
        forked += w;
        let attempted = num(c, "attempted")?;
        let established = num(c, "established")?;
        let accepted = num(c, "accepted")?;
        if attempted != 60.0 || established != attempted || accepted != established {
            return Err(at(format!(
                "attempted {attempted}, established {established}, accepted {accepted}: \
                 all should be 60"
            )));
        }
        let per_worker: Vec<f64> = c
            .get("accepts")
            .and_then(Value::as_array)
            .ok_or_else(|| at("no accepts per worker".into()))?
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        if per_worker.len() as f64 != w || per_worker.iter().sum::<f64>() != accepted {
            return Err(at(format!(
                "accepts per worker {per_worker:?} do not sum to {accepted} over {w} workers"
            )));
        }
        let spread = c.get("spread").ok_or_else(|| at("no spread".into()))?;
        let (min, max, jain) = (
            num(spread, "min")?,
            num(spread, "max")?,
            num(spread, "jain")?,
        );
        if min > max || !(jain > 0.0 && jain <= 1.0 + 1e-12) || (w == 1.0 && jain != 1.0) {
            return Err(at(format!("spread min {min} max {max} Jain {jain}")));
        }
        let wakeups = num(c, "wakeups")?;
        let failed = num(c, "failed_accepts")?;
        if wakeups < 0.0 || failed < 0.0 || num(c, "wakeups_per_connection")? < 0.0 {
            return Err(at(format!("wakeups {wakeups}, failed accepts {failed}")));
        }
        if c.get("method").and_then(Value::as_str) == Some("accept") && failed != 0.0 {
            return Err(at(format!(
                "blocking accept cannot fail with EAGAIN: {failed}"
            )));
        }
        if num(c, "workers_reaped")? != w || num(c, "workers_clean")? != w {
            return Err(at(format!(
                "not every worker was reaped cleanly: {}",
                c["exits"]
            )));
        }
        for e in c
            .get("exits")
            .and_then(Value::as_array)
            .ok_or_else(|| at("no exits".into()))?
        {
            let pid = num(e, "pid")? as i32;
            if alive(pid) && same_binary(pid) {
                return Err(at(format!("worker {pid} is still there")));
            }
        }
        let p50 = num(&c["connect_us"], "p50")?;
        let count = num(&c["connect_us"], "count")?;
        if count != established || p50 < 0.0 {
            return Err(at(format!(
                "{count} latencies for {established} connections"
            )));
        }
    }
    if num(&v, "workers_forked")? != forked || num(&v, "workers_reaped")? != forked {
        return Err(format!(
            "forked {}, reaped {}, cells say {forked}",
            v["workers_forked"], v["workers_reaped"]
        )
        .into());
    }
    if num(&v, "children_left")? != 0.0 {
        return Err(format!("{} children left", v["children_left"]).into());
    }
    let rows = v
        .get("summary")
        .and_then(Value::as_array)
        .ok_or("no summary")?;
    if rows.len() != cells.len() {
        return Err(format!("{} summary rows for {} cells", rows.len(), cells.len()).into());
    }
    Ok(v)
}

/// Whether `pid` runs our binary (a reused pid would run something else).
fn same_binary(pid: i32) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"));
    let ours = std::fs::canonicalize(bin());
    matches!((exe, ours), (Ok(a), Ok(b)) if a == b)
}

const METHODS: [&str; 6] = [
    "select",
    "poll",
    "epoll",
    "epoll-exclusive",
    "accept",
    "reuseport",
];

fn every_method() -> Result<(), Failed> {
    checked(
        "all",
        &["-w", "1,4", "-n", "60", "--rate", "2000", "--runs", "1"],
        &METHODS,
        &[1, 4],
    )?;
    Ok(())
}

fn dups() -> Result<(), Failed> {
    let methods = "select,poll,epoll,epoll-exclusive,reuseport";
    checked(
        "dups",
        &[
            "-w",
            "3",
            "--dups",
            "3",
            "-n",
            "60",
            "--rate",
            "2000",
            "--runs",
            "1",
            "--methods",
            methods,
        ],
        &methods.split(',').collect::<Vec<_>>(),
        &[3],
    )?;
    Ok(())
}

fn bad_flags() -> Result<(), Failed> {
    for args in [
        &["--methods", "carrier-pigeon"][..],
        &["--workers", "0"],
        &["--workers", "5000"],
        &["--workers", "many"],
        &["--rate", "0"],
        &["-n", "0"],
        &["--dups", "0"],
        &["--runs", "0"],
        &["--svg", "/nonexistent-dir/herd.svg"],
    ] {
        let ran = herd(args)?;
        if ran.code != Some(2) || ran.stderr.lines().count() != 1 {
            return Err(format!("{args:?}: exit {:?}, stderr {:?}", ran.code, ran.stderr).into());
        }
    }
    Ok(())
}
