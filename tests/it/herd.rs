//! `c10k herd` end to end at a small size: every wait method with 1 and 4
//! workers, its JSON checked for sense (the accepts add up to the
//! connections made, every worker reaped and gone, the spread in range),
//! the chart written, and bad flags refused with one line and exit 2; a
//! few hundred workers with 50 copies each, every one reaped; a herd the
//! machine cannot hold refused before it forks, with the numbers; and a
//! herd stopped by SIGTERM mid-run, its workers all reaped. No timing is
//! asserted.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{alive, bin, Pipes};

tests![
    every_method_adds_up_and_reaps_its_workers,
    dups_in_every_wait_set_add_up,
    bad_flags_are_one_line_exit_2,
    three_hundred_workers_with_fifty_copies_are_all_reaped,
    a_herd_past_the_limits_is_refused_with_numbers,
    cells_past_the_limits_are_skipped_when_asked,
    sigterm_mid_run_reaps_every_worker,
    a_pids_cgroup_of_either_version_refuses_it_up_front,
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
    let pipes = Pipes::take(&mut child)?;
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
    let (stdout, stderr) = pipes.read();
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
        let ending = c.get("ending").ok_or_else(|| at("no ending".into()))?;
        if num(c, "workers_reaped")? != w
            || num(c, "workers_clean")? != w
            || num(ending, "reaped")? != w
            || ending["by_status"]["signal 15"].as_f64() != Some(w)
        {
            return Err(at(format!("not every worker was reaped cleanly: {ending}")));
        }
        let pids = ending
            .get("pids")
            .and_then(Value::as_array)
            .ok_or_else(|| at("no pids".into()))?;
        if pids.len() as f64 != w {
            return Err(at(format!("{} pids for {w} workers", pids.len())));
        }
        for p in pids {
            let pid = p.as_i64().ok_or_else(|| at(format!("pid {p}")))? as i32;
            if alive(pid) && same_binary(pid) {
                return Err(at(format!("worker {pid} is still there")));
            }
        }
        let phases = c.get("phases").ok_or_else(|| at("no phases".into()))?;
        for key in ["fork_seconds", "setup_seconds", "teardown_seconds"] {
            if num(phases, key)? < 0.0 {
                return Err(at(format!("{key} {}", phases[key])));
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

fn every_method_adds_up_and_reaps_its_workers() -> Result<(), Failed> {
    checked(
        "all",
        &["-w", "1,4", "-n", "60", "--rate", "2000", "--runs", "1"],
        &METHODS,
        &[1, 4],
    )?;
    Ok(())
}

fn dups_in_every_wait_set_add_up() -> Result<(), Failed> {
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

fn bad_flags_are_one_line_exit_2() -> Result<(), Failed> {
    for args in [
        &["--methods", "carrier-pigeon"][..],
        &["--workers", "0"],
        &["--workers", "16385"],
        &["--dups", "1,0"],
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

fn three_hundred_workers_with_fifty_copies_are_all_reaped() -> Result<(), Failed> {
    let methods = "select,epoll-exclusive";
    let v = checked(
        "hundreds",
        &[
            "-w",
            "300",
            "--dups",
            "50",
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
        &[300],
    )?;
    let costs = v["preflight"]["worker_memory"]
        .as_array()
        .ok_or("no worker memory in the pre-flight")?;
    if costs.len() != 2
        || costs
            .iter()
            .any(|c| c["per_worker_kib"].as_f64().is_none_or(|k| k <= 0.0))
    {
        return Err(format!("worker memory {costs:?}").into());
    }
    Ok(())
}

/// The first line of stderr when it is the only one.
fn one_line(ran: &Ran, args: &[&str]) -> Result<String, Failed> {
    if ran.code != Some(2) || ran.stderr.lines().count() != 1 {
        return Err(format!("{args:?}: exit {:?}, stderr {:?}", ran.code, ran.stderr).into());
    }
    Ok(ran.stderr.trim().to_string())
}

fn a_herd_past_the_limits_is_refused_with_numbers() -> Result<(), Failed> {
    // More copies than any open-files limit allows (RLIMIT_NOFILE cannot
    // pass fs.nr_open, 1048576 unless raised).
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")?
        .trim()
        .parse()?;
    if nr_open <= 1 << 20 {
        let args = ["-w", "2", "--dups", "1048576", "--methods", "select"];
        let e = one_line(&herd(&args)?, &args)?;
        if !(e.contains(
            "select with 2 workers × 1048576 copies: each worker needs 1048592 descriptors",
        ) && e.contains("open-files limit is"))
        {
            return Err(format!("{args:?}: {e}").into());
        }
    }
    // The study's largest EPOLLEXCLUSIVE herd needs 16.7 million epoll
    // watches; refused where fs.epoll.max_user_watches is below that.
    let watches: u64 = std::fs::read_to_string("/proc/sys/fs/epoll/max_user_watches")?
        .trim()
        .parse()?;
    if watches < 16_384 * 1019 + 4096 {
        let args = [
            "-w",
            "16384",
            "--dups",
            "1019",
            "--methods",
            "epoll-exclusive",
        ];
        let e = one_line(&herd(&args)?, &args)?;
        let want = format!(
            "epoll-exclusive with 16384 workers × 1019 copies: needs 16695296 epoll watches \
             (16384 × 1019) but fs.epoll.max_user_watches = {watches}"
        );
        if !e.contains(&want) {
            return Err(format!("{args:?}: {e}").into());
        }
    }
    Ok(())
}

fn cells_past_the_limits_are_skipped_when_asked() -> Result<(), Failed> {
    let json_path = scratch("skipped.json");
    let json_arg = json_path.to_string_lossy().into_owned();
    let args = [
        "-w",
        "2",
        "--dups",
        "1,1048576",
        "--methods",
        "select",
        "-n",
        "20",
        "--rate",
        "2000",
        "--runs",
        "1",
        "--skip-unfit",
        "--json",
        &json_arg,
    ];
    let ran = herd(&args)?;
    if ran.code != Some(0) {
        return Err(format!("exit {:?}; stderr: {}", ran.code, ran.stderr).into());
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json_path)?)?;
    let _ = std::fs::remove_file(&json_path);
    let cells = v["cells"].as_array().ok_or("no cells")?;
    let left_out = v["preflight"]["left_out"].as_array().ok_or("no left_out")?;
    if cells.len() != 1 || cells[0]["dups"] != 1 || left_out.len() != 1 {
        return Err(format!("cells {cells:?}, left out {left_out:?}").into());
    }
    if !ran
        .stdout
        .contains("left out: select with 2 workers × 1048576 copies")
    {
        return Err(format!("no note of the cell left out: {}", ran.stdout).into());
    }
    Ok(())
}

/// The children of `pid` now.
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn sigterm_mid_run_reaps_every_worker() -> Result<(), Failed> {
    const WORKERS: usize = 200;
    // A client that would run for a day: only the signal ends it.
    let mut child = Command::new(bin())
        .args(["herd", "-w", "200", "--methods", "select", "--dups", "4"])
        .args(["-n", "86400", "--rate", "1", "--runs", "1"])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id() as i32;
    // Wait (bounded in time and passes) until the herd has forked every
    // worker, then stop it with SIGTERM to the parent alone.
    let until = std::time::Instant::now() + HERD_PATIENCE;
    let mut seen = Vec::new();
    for _ in 0..1_000_000 {
        seen = children(pid);
        if seen.len() >= WORKERS || std::time::Instant::now() >= until {
            break;
        }
        std::thread::yield_now();
    }
    let _ = c10k::sys::process::kill(pid, 15);
    let status = crate::support::wait_bounded(&mut child);
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = status?;
    if seen.len() < WORKERS {
        return Err(format!("only {} workers seen; stderr {err:?}", seen.len()).into());
    }
    if status.code() != Some(130)
        || err.lines().count() != 1
        || !err.contains("interrupted")
        || !err.contains("(0 of 1 cells done, kept)")
        || !err.contains("0 child processes left")
    {
        return Err(format!("exit {status}, stderr {err:?}").into());
    }
    if let Some(p) = seen.iter().find(|&&p| alive(p) && same_binary(p)) {
        return Err(format!("worker {p} outlived the herd").into());
    }
    Ok(())
}

/// A cgroup made for one test and removed after it.
struct Cgroup(std::path::PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A herd started inside a pids cgroup whose `pids.max` cannot hold its
/// workers is refused by the pre-flight (exit 2, the limit and its fix
/// named), never half-forked: in the v1 `pids` hierarchy where the host
/// mounts one (this one mixes v1 and v2), else in v2.
fn a_pids_cgroup_of_either_version_refuses_it_up_front() -> Result<(), Failed> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mount = |v2: bool| {
        mounts.lines().find_map(|l| {
            let (m, after) = l.split_once(" - ")?;
            let point = m.split_whitespace().nth(4)?;
            let mut a = after.split_whitespace();
            let (fstype, _, options) = (a.next()?, a.next()?, a.next().unwrap_or(""));
            let fits = if v2 {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup" && options.split(',').any(|o| o == "pids")
            };
            fits.then(|| std::path::PathBuf::from(point))
        })
    };
    let root = mount(false)
        .or_else(|| mount(true).filter(|m| m.join("cgroup.subtree_control").exists()))
        .ok_or("no pids cgroup hierarchy is mounted here to make a cgroup in")?;
    let group = Cgroup(root.join(format!("c10k-herd-test-{}", std::process::id())));
    std::fs::create_dir(&group.0)
        .map_err(|e| format!("cannot make a cgroup in {}: {e}", root.display()))?;
    std::fs::write(group.0.join("pids.max"), "40")?;
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} herd -w 300 --runs 1 -n 10",
        group.0.display(),
        bin()
    );
    let o = Command::new("sh").args(["-c", &script]).output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    let max = format!("{}/pids.max", group.0.display());
    if o.status.code() != Some(2)
        || err.lines().count() != 1
        || !err.contains("pids.max = 40")
        || !err.contains(&max)
    {
        return Err(format!("exit {:?}: {err}", o.status.code()).into());
    }
    Ok(())
}
