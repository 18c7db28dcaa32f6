//! `c10k run` end to end on real servers: a tiny matrix, a run killed with
//! SIGKILL and resumed, `--runs auto` growing its plan, failed cells
//! recorded with their cause, variants of a model, bad input.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use libtest_mimic::Failed;

use crate::support::{
    bin, column, ensure, expect_contains, expect_eq, lines, results_dir, scratch, succeeded,
    PATIENCE,
};

tests![
    tiny_matrix_end_to_end,
    kill_9_then_resume_loses_and_repeats_nothing,
    runs_auto_settles_or_stops_at_ten,
    failed_cells_are_results_with_a_cause,
    bad_input_is_one_line,
    variants_run_beside_their_models,
    micro_benchmarks_run_as_experiments,
    burst_figures_stay_within_their_bounds,
    work_axis_records_work_requests_and_bounds,
    a_resumed_plan_with_a_damaged_work_spec_is_refused,
    sigterm_to_the_runner_alone_abandons_the_cell,
    a_preset_variant_not_run_is_not_in_the_plan,
    the_terminal_fits_its_width,
];

fn run(args: &[&str]) -> Result<std::process::Output, Failed> {
    Ok(Command::new(bin()).arg("run").args(args).output()?)
}

fn tiny_matrix_end_to_end() -> Result<(), Failed> {
    let out = scratch("run-tiny")?;
    let o = run(&[
        "--models",
        "epoll,threads",
        "--connections",
        "2,5",
        "--runs",
        "2",
        // Long enough for a round trip per connection even on a CPU that
        // another test's pinned client saturates (100 ms once measured none).
        "--duration",
        "300ms",
        "--warmup",
        "20ms",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    succeeded(&o, "")?;
    let dir = results_dir(&out)?;
    let cells = lines(&dir)?;
    if cells.len() != 8 {
        return Err(format!("{} cells recorded, expected 8", cells.len()).into());
    }
    let mut ids = std::collections::BTreeSet::new();
    for c in &cells {
        let id = c["id"].as_str().unwrap_or("");
        if !ids.insert(id.to_string()) {
            return Err(format!("cell {id} recorded twice").into());
        }
        if c["status"] != "ok" {
            return Err(format!("cell {id}: {} ({})", c["status"], c["reason"]).into());
        }
        let n = c["connections"].as_u64().unwrap_or(0);
        let load = &c["load"];
        if load["messages"].as_u64().unwrap_or(0) == 0 || load["connections"]["established"] != n {
            return Err(
                format!("cell {id}: no echoes measured or connections missing: {load}").into(),
            );
        }
        let s = &c["server"];
        // The server was sampled holding every connection.
        let held = s["loaded"]["sockets"].as_u64().unwrap_or(0)
            - s["idle"]["sockets"].as_u64().unwrap_or(0);
        if held != n {
            return Err(format!("cell {id}: sampled with {held} of {n} connections").into());
        }
        if c["model"] == "threads" && s["loaded"]["threads"].as_u64().unwrap_or(0) < n + 1 {
            return Err(format!("cell {id}: a thread per connection was not seen: {s}").into());
        }
        if s["cpu_user_seconds"].as_f64().unwrap_or(0.0)
            + s["cpu_system_seconds"].as_f64().unwrap_or(0.0)
            <= 0.0
        {
            return Err(format!("cell {id}: no server CPU time from wait4").into());
        }
        if s["summaries"][0]["connections"] != n {
            return Err(format!(
                "cell {id}: the server's own count differs: {}",
                s["summaries"]
            )
            .into());
        }
    }
    let csv = std::fs::read_to_string(dir.join("results.csv"))?;
    if csv.lines().count() != 9 || !csv.starts_with("id,model,connections,run,status") {
        return Err(format!("results.csv: {csv}").into());
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json"))?)?;
    expect_eq(
        "results.json's cells",
        Some(8),
        json["cells"].as_array().map(Vec::len),
    )?;
    ensure(!json["environment"]["kernel"].is_null(), || {
        format!("results.json's environment: {}", json["environment"])
    })?;
    let md = std::fs::read_to_string(dir.join("results.md"))?;
    for want in [
        "# c10k run custom\n\na custom matrix: epoll, threads at 2, 5 connections, closed loop",
        "### 2 connections",
        "### 5 connections",
        "| 1 | ",
    ] {
        if !md.contains(want) {
            return Err(format!("results.md lacks {want:?}:\n{md}").into());
        }
    }
    if !dir.join("report.html").is_file() {
        return Err("no report.html".into());
    }
    // The terminal summary ranks both models at both counts, states the
    // rule of its groups, gives memory per connection as slopes, and ends with the
    // verdict: at each count, who is best and what each model costs.
    if stdout.lines().filter(|l| l.ends_with("  best")).count() != 2
        || !stdout.contains("epoll")
        || !stdout.contains("threads")
        || !stdout.contains("Rows by median. Rank: a model's group")
    {
        return Err(format!("summary: {stdout}").into());
    }
    let memory = stdout
        .split_once("Memory per connection: slope over 2…5 connections")
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("no memory slopes: {stdout}"))?;
    for m in ["epoll", "threads"] {
        let row = memory
            .lines()
            .find(|l| l.trim_start().starts_with(m))
            .ok_or_else(|| format!("no memory row for {m}: {stdout}"))?;
        // For each kind a slope with its interval, or no cost shown
        // ("≤ X", "no cost seen"), never a negative cost; and the cells.
        let said = row.matches(" [").count()
            + row.matches("≤ ").count()
            + row.matches("no cost seen").count();
        if said != 3 || !row.trim_end().ends_with('4') || row.contains(" -") {
            return Err(format!("memory row: {row}").into());
        }
    }
    let verdict = stdout
        .split_once("\nVerdict\n")
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("no verdict: {stdout}"))?;
    for n in [2, 5] {
        let title = format!("{n} connections: ");
        if !verdict
            .lines()
            .any(|l| l.trim_start().starts_with(&title) && l.contains(" is best"))
        {
            return Err(format!("the verdict at {n} names no best: {verdict}").into());
        }
    }
    for column in ["vs best", "p99 latency", "memory/conn", "server CPU/msg"] {
        if !verdict.contains(column) {
            return Err(format!("the verdict lacks {column}: {verdict}").into());
        }
    }
    // The verdict comes last, after the ranking and the memory table (the
    // verdict's tables have a rank column too, but no spread).
    if verdict.contains("Memory per connection") || verdict.contains("± stdev") {
        return Err(format!("the verdict is not last: {stdout}").into());
    }
    // Run again from the files alone: the same exports.
    let again = Command::new(bin()).arg("report").arg(&dir).output()?;
    if !again.status.success() || std::fs::read_to_string(dir.join("results.csv"))? != csv {
        return Err(format!("c10k report: {}", String::from_utf8_lossy(&again.stderr)).into());
    }
    Ok(())
}

fn kill_9_then_resume_loses_and_repeats_nothing() -> Result<(), Failed> {
    let out = scratch("run-resume")?;
    let mut child = Command::new(bin())
        .args([
            "run",
            "--models",
            "epoll,select",
            "--connections",
            "2,3",
            "--runs",
            "3",
            "--duration",
            "50ms",
            "--warmup",
            "0ms",
            "--no-report",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    // Off a terminal the run reports each finished cell as "[k/12] …".
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(PATIENCE)
            .map_err(|_| format!("no progress; saw {seen:?}"))?;
        let third = line.starts_with("[3/12]");
        seen.push(line);
        if third {
            break;
        }
    }
    // SIGKILL: no handler runs, no file is closed properly.
    child.kill()?;
    child.wait()?;
    let dir = results_dir(&out)?;
    let before = lines(&dir)?;
    if before.len() < 3 || before.len() >= 12 {
        return Err(format!("{} cells recorded before the kill", before.len()).into());
    }
    // As if the kill had come in the middle of a write.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("results.jsonl"))?;
        f.write_all(br#"{"version":1,"id":"epoll/c2/r"#)?;
    }
    let o = Command::new(bin())
        .arg("run")
        .arg("--resume")
        .arg(&dir)
        .arg("--no-report")
        .output()?;
    succeeded(&o, "resume: ")?;
    let after = lines(&dir)?;
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for c in &after {
        *count
            .entry(c["id"].as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }
    let mut want = Vec::new();
    for m in ["epoll", "select"] {
        for n in [2, 3] {
            for r in 1..=3 {
                want.push(format!("{m}/c{n}/r{r}"));
            }
        }
    }
    want.sort();
    let got: Vec<String> = count.keys().cloned().collect();
    if got != want || count.values().any(|&k| k != 1) || after.len() != 12 {
        return Err(format!("after resume: {count:?}").into());
    }
    // The cells recorded before the kill are kept as they were.
    for (a, b) in before.iter().zip(&after) {
        if a != b {
            return Err(format!("a recorded cell changed: {a} became {b}").into());
        }
    }
    Ok(())
}

/// `--runs auto` on a tiny matrix: every model at every count runs 3 to
/// 10 times; a group that stopped early had just settled (its median's
/// interval within ±5 %, and not one run before), one at 10 runs that did
/// not is named; and the plan on disk lists exactly the cells recorded.
fn runs_auto_settles_or_stops_at_ten() -> Result<(), Failed> {
    let out = scratch("run-auto")?;
    let o = run(&[
        "--models",
        "epoll,poll",
        "--connections",
        "2",
        "--runs",
        "auto",
        "--duration",
        "50ms",
        "--warmup",
        "0ms",
        "--no-report",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    succeeded(&o, "")?;
    let dir = results_dir(&out)?;
    let cells = lines(&dir)?;
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json"))?)?;
    let auto = &plan["auto_runs"];
    if auto["min"] != 3 || auto["max"] != 10 || auto["tolerance"] != 0.05 {
        return Err(format!("plan.json does not record auto mode: {auto}").into());
    }
    let planned: Vec<&str> = plan["cells"]
        .as_array()
        .ok_or("plan.json has no cells")?
        .iter()
        .map(|c| c["id"].as_str().unwrap_or(""))
        .collect();
    let mut recorded: Vec<&str> = cells
        .iter()
        .map(|c| c["id"].as_str().unwrap_or(""))
        .collect();
    let mut sorted_plan = planned.clone();
    sorted_plan.sort_unstable();
    recorded.sort_unstable();
    if sorted_plan != recorded || recorded.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("plan {planned:?} and results {recorded:?} disagree").into());
    }
    for model in ["epoll", "poll"] {
        let mut runs: Vec<(u64, f64)> = cells
            .iter()
            .filter(|c| c["model"] == model)
            .map(|c| {
                (
                    c["run"].as_u64().unwrap_or(0),
                    c["load"]["throughput"]["messages_per_second"]
                        .as_f64()
                        .unwrap_or(f64::NAN),
                )
            })
            .collect();
        runs.sort_by_key(|r| r.0);
        let k = runs.len();
        let numbers: Vec<u64> = runs.iter().map(|r| r.0).collect();
        if !(3..=10).contains(&k) || numbers != (1..=k as u64).collect::<Vec<_>>() {
            return Err(format!("{model}: runs {numbers:?}").into());
        }
        if cells
            .iter()
            .any(|c| c["model"] == model && c["status"] != "ok")
        {
            return Err(format!("{model}: a cell failed: {cells:?}").into());
        }
        let values: Vec<f64> = runs.iter().map(|r| r.1).collect();
        let settled = |v: &[f64]| c10k::stats::median::settled(v, 3, 0.05);
        if k < 10 && !(settled(&values) && (k == 3 || !settled(&values[..k - 1]))) {
            return Err(format!("{model} stopped at {k} runs: {values:?}").into());
        }
        if k == 10 && !settled(&values) && !stdout.contains(&format!("{model} at 2 connections")) {
            return Err(format!("{model} never settled and is not named: {stdout}").into());
        }
    }
    Ok(())
}

fn failed_cells_are_results_with_a_cause() -> Result<(), Failed> {
    let out = scratch("run-failed")?;
    // The server refuses past one connection: three of four fail. The run
    // records the cell as failed, with its cause, and goes on. (A bad
    // server flag no longer reaches a cell: it is refused with the plan,
    // see bad_input::server_args_are_checked_with_the_plan.)
    let (arg, want) = ("--server-arg=--max-conns=1", "3 of 4 connections failed");
    let o = run(&[
        "--models",
        "poll",
        "--connections",
        "4",
        "--runs",
        "1",
        "--duration",
        "50ms",
        "--no-report",
        arg,
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    // Its only cell failed: no cell measured, exit 5, saying why.
    let err = String::from_utf8_lossy(&o.stderr);
    let line = "c10k run: no cell was measured (1 failed of 1): the first, poll at 4 connections, failed: 3 of 4 connections failed";
    if o.status.code() != Some(5) || !err.contains(line) {
        return Err(format!("{arg}: exit {:?}: {err}", o.status.code()).into());
    }
    let dir = results_dir(&out)?;
    let cells = lines(&dir)?;
    let reason = cells[0]["reason"].as_str().unwrap_or("");
    if cells.len() != 1 || cells[0]["status"] != "failed" || !reason.contains(want) {
        return Err(format!("{arg}: {cells:?}").into());
    }
    Ok(())
}

fn micro_benchmarks_run_as_experiments() -> Result<(), Failed> {
    for (preset, models, sizes) in [
        ("dispatch", "select,epoll-et", "10,20"),
        ("herd", "select,epoll-exclusive", "2"),
        ("spawn", "thread,fork", "4"),
    ] {
        let out = scratch(&format!("bench-{preset}"))?;
        let o = run(&[
            preset,
            "--models",
            models,
            "--connections",
            sizes,
            "--runs",
            "1",
            "--out",
            out.to_str().unwrap_or("."),
        ])?;
        succeeded(&o, &format!("{preset}: "))?;
        let dir = results_dir(&out)?;
        let cells = lines(&dir)?;
        let want = models.split(',').count() * sizes.split(',').count();
        if cells.len() != want {
            return Err(format!("{preset}: {} cells, expected {want}", cells.len()).into());
        }
        for c in &cells {
            let b = &c["bench"];
            if c["status"] != "ok" || b["time_seconds"].as_f64().unwrap_or(0.0) <= 0.0 {
                return Err(format!("{preset}: {c}").into());
            }
            if preset == "herd" {
                let jain = b["jain"].as_f64().unwrap_or(-1.0);
                if !(jain > 0.0 && jain <= 1.0)
                    || b["wakeups_per_connection"].as_f64().unwrap_or(0.0) <= 0.0
                {
                    return Err(format!("herd figures out of range: {b}").into());
                }
            }
        }
        let html = std::fs::read_to_string(dir.join("report.html"))?;
        if !html.contains("Time against")
            || (preset == "herd" && !html.contains("The herd: wake-ups"))
        {
            return Err(format!("{preset}: the report lacks its charts").into());
        }
    }
    Ok(())
}

fn bad_input_is_one_line() -> Result<(), Failed> {
    for (args, want) in [
        (&["run", "nosuch"][..], "unknown experiment 'nosuch'"),
        (
            &["run", "--models", "carrier-pigeon"],
            "unknown model 'carrier-pigeon'",
        ),
        (&["run", "--connections", "0"], "--connections"),
        (&["run", "--runs", "0"], "--runs 0"),
        (&["run", "--runs", "often"], "or auto"),
        (&["run", "--slot", "0s"], "--slot must be above 0"),
        (&["run", "--slot=-1s"], "--slot"),
        (
            &["run", "--slot", "100ms", "--slot-warmup", "100ms"],
            "--slot 100 ms is not longer than its warm-up (100 ms)",
        ),
        (&["run", "--slot", "2m"], "at most 60s"),
        (&["run", "--budget", "0s"], "--budget must be above 0"),
        (&["run", "--budget", "soon"], "--budget"),
        (
            &["run", "--budget", "10s"],
            "--budget 10 s: the plan's 180 cells take at least 36 s (the first look's slots alone)",
        ),
        (
            &["run", "--runs", "auto", "--budget", "30s"],
            "the first look's slots alone",
        ),
        // The machine's floor holds whoever runs the clients (58.6).
        (
            &[
                "run", "--models", "epoll", "-c", "4", "--slo", "p99=10us", "--agent", "{cmd}",
            ],
            "--slo p99=10us: below what this machine allows: its unloaded round trip is",
        ),
        (
            &[
                "run", "--models", "epoll", "-c", "4", "--slo", "p99=10us", "--bind", "127.0.0.2",
            ],
            "--slo p99=10us: below what this machine allows",
        ),
        // A search slot at the first rate and the cost rounds it keeps in
        // reserve, as the search times them (issue 58.4).
        (
            &[
                "run", "--models", "epoll,poll", "-c", "4", "--slo", "p99=50ms", "--budget", "1s",
            ],
            "--budget 1 s: the plan's 2 cells take at least 5.4 s (the first search round's slots and 4.2 s of cost rounds kept in reserve alone); search fewer models",
        ),
        (
            &["run", "--slot", "1s", "--workload", "burst"],
            "--slot: the burst workload times its own rounds",
        ),
        (
            &["run", "--instances", "round", "--workload", "burst"],
            "--instances: the burst workload times its own rounds",
        ),
        (
            &["run", "--slot", "1s", "--duration", "2s"],
            "--duration and --warmup set the window of a cell measured on its own",
        ),
        (
            &["run", "--slot", "1s", "--sequential"],
            "cannot be used with",
        ),
        (&["run", "--models", ""], "--models names no model"),
        (
            &["run", "--server", "python3 srv.py {port}"],
            "expected NAME=",
        ),
        (
            &["run", "--server", "epoll=srv {port}"],
            "name of a c10k model",
        ),
        (
            &["run", "--server", "x=srv --port 80"],
            "must contain {port}",
        ),
        (
            &["run", "--server", "x=a {port}", "--server", "x=b {port}"],
            "--server names 'x' twice",
        ),
        (&["run", "--target", "x=127.0.0.1"], "is not HOST:PORT"),
        (
            &["run", "--variant", "x=threads --interval 1ms"],
            "interval control is for",
        ),
        (&["run", "--variant", "epoll=epoll"], "a model's own name"),
        (&["run", "--variant", "x=nosuch"], "unknown model 'nosuch'"),
        (&["run", "--variant", "x=select --port 80"], "set by c10k"),
        (&["run", "--variant", "x select"], "expected NAME="),
        (
            &["run", "--work", "none,disk:1ms"],
            "--work: 'disk:1ms' is not a part of the work",
        ),
        (
            &["run", "--work", "block:1ms,block:1000us"],
            "--work names 'block:1ms' twice",
        ),
        (&["run", "--work", ","], "--work names no profile"),
        (
            &["run", "dispatch", "--work", "cpu:10us"],
            "a micro-benchmark has no handler",
        ),
        (
            &["run", "--work", "block:1ms", "-m", "1MiB"],
            "more than the servers' echo buffer",
        ),
        (
            &["run", "--work", "block:1ms", "--server-arg=--work=cpu:1ms"],
            "--server-arg: --work is set per cell by --work",
        ),
        // Without the axis too: the cells would be filed under none.
        (
            &["run", "--server-arg=--work=block:1ms"],
            "--server-arg: --work is set per cell by --work",
        ),
        (
            &["run", "--variant", "x=epoll --work block:1ms"],
            "--variant x: --work is set per cell by --work",
        ),
        (
            &["run", "--resume", "/nonexistent/c10k"],
            "not a c10k results directory",
        ),
        (
            &["report", "/nonexistent/c10k"],
            "not a c10k results directory",
        ),
    ] {
        let o = Command::new(bin()).args(args).output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || err.lines().count() != 1 || !err.contains(want) {
            return Err(format!("{args:?}: exit {:?}, stderr {err:?}", o.status.code()).into());
        }
    }
    Ok(())
}

/// `--variant`: a model with more serve flags runs under its own name
/// beside the model, its flags on its server's command line and their
/// effect in its summary.
fn variants_run_beside_their_models() -> Result<(), Failed> {
    let out = scratch("run-variants")?;
    let o = run(&[
        "--models",
        "select",
        "--variant",
        "select+lock=select --shared-state --lock spin",
        "--variant",
        "select@1ms=select --interval 1ms",
        "--connections",
        "4",
        "--runs",
        "1",
        "--duration",
        "300ms",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    succeeded(&o, "")?;
    let cells = lines(&results_dir(&out)?)?;
    let by: BTreeMap<String, &serde_json::Value> = cells
        .iter()
        .map(|c| (c["model"].as_str().unwrap_or("").to_string(), c))
        .collect();
    let names: Vec<&str> = by.keys().map(String::as_str).collect();
    if names != ["select", "select+lock", "select@1ms"] {
        return Err(format!("cells of {names:?}").into());
    }
    for (name, c) in &by {
        if c["status"] != "ok" {
            return Err(format!("{name}: {} ({})", c["status"], c["reason"]).into());
        }
        let args = c["server"]["args"].to_string();
        let summary = &c["server"]["summaries"][0];
        let state = &summary["shared_state"];
        match name.as_str() {
            "select+lock"
                if !args.contains("--shared-state")
                    || state["lock"] != "spin"
                    || state["total"] != summary["bytes_echoed"]
                    || state["table_sum"] != summary["bytes_echoed"] =>
            {
                return Err(format!("select+lock: args {args}, summary {summary}").into());
            }
            "select@1ms" if !args.contains("\"--interval\",\"1ms\"") => {
                return Err(format!("select@1ms: args {args}").into());
            }
            _ if name == "select" && (args.contains("--interval") || !state.is_null()) => {
                return Err(format!("select got a variant's flags: {args}").into());
            }
            _ => {}
        }
    }
    Ok(())
}

/// `61.2 µs`, `0.0765 ms`: seconds.
fn time_text(text: &str) -> Option<f64> {
    let (number, unit) = text.trim().split_once(' ')?;
    let v: f64 = number.replace(',', "").parse().ok()?;
    let per = match unit {
        "ns" => 1e-9,
        "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    Some(v * per)
}

/// A small thesis run (the burst method): every cell gets a "limited by"
/// verdict or says which share it could not resolve, never that its window
/// was too short; and every server CPU per message it prints (the CSV, the
/// verdict) is at most what its window holds: the window's wall time on
/// the server's CPUs over the messages, and at most the whole cell's.
fn burst_figures_stay_within_their_bounds() -> Result<(), Failed> {
    let out = scratch("run-burst-bounds")?;
    let o = run(&[
        "thesis",
        "--models",
        "select,threads,busy",
        "-c",
        "2,32",
        "--runs",
        "2",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    succeeded(&o, "")?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let dir = results_dir(&out)?;
    // Per model and count: the most CPU per message a window could hold.
    let mut most: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let mut per_cell: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for c in lines(&dir)? {
        let id = c["id"].as_str().unwrap_or("").to_string();
        if c["status"] != "ok" {
            return Err(format!("cell {id}: {} ({})", c["status"], c["reason"]).into());
        }
        let load = &c["load"];
        let l = &load["limits"];
        let why = l["why"].as_str().unwrap_or("");
        if why.contains("shorter than") || why.is_empty() {
            return Err(format!("cell {id}: no verdict for its window's length: {why}").into());
        }
        if l["verdict"] == "unknown" && !why.contains("too close") {
            return Err(format!(
                "cell {id}: unknown without the share it could not resolve: {why}"
            )
            .into());
        }
        let f = |v: &serde_json::Value| v.as_f64().ok_or_else(|| format!("cell {id}: {l}"));
        let (span, capacity) = (f(&l["server_span_seconds"])?, f(&l["server_capacity"])?);
        // The server's CPU over the window is kept whatever the verdict.
        f(&l["server_cpu_seconds"])?;
        let window = f(&l["window_seconds"])?;
        let messages = load["messages"].as_f64().unwrap_or(0.0);
        let makespan: f64 = load["burst"]["makespan_us"]
            .as_array()
            .map(|r| r.iter().filter_map(serde_json::Value::as_f64).sum())
            .unwrap_or(0.0);
        // The window holds the burst, and the server's span the window.
        if window * 1e6 < makespan || span < window || messages <= 0.0 {
            return Err(format!(
                "cell {id}: makespan {makespan} µs, window {window} s, span {span} s, {messages} messages"
            )
            .into());
        }
        let s = &c["server"];
        let cell = f(&s["cpu_user_seconds"])? + f(&s["cpu_system_seconds"])?;
        let bound = (span * capacity).min(cell) * 1e6 / messages;
        let key = (
            c["model"].as_str().unwrap_or("").to_string(),
            c["connections"].as_u64().unwrap_or(0),
        );
        let e = most.entry(key).or_insert(0.0);
        *e = e.max(bound);
        per_cell.insert(id, (bound, cell * 1e6 / messages));
    }
    // The CSV's figures.
    let mut csv = csv::Reader::from_path(dir.join("results.csv"))?;
    let header = csv.headers()?.clone();
    let col = |name: &str| column(&header, name);
    let (id_col, cpu_col, cell_col) = (
        col("id")?,
        col("server_cpu_per_message_us")?,
        col("server_cell_cpu_per_message_us")?,
    );
    for row in csv.records() {
        let row = row?;
        let id = row.get(id_col).unwrap_or("");
        let Some(v) = row.get(cpu_col).and_then(|v| v.parse::<f64>().ok()) else {
            continue; // not measurable: no number
        };
        let (bound, cell) = per_cell.get(id).copied().unwrap_or((0.0, 0.0));
        let whole: f64 = row
            .get(cell_col)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        if v > bound * (1.0 + 1e-9) + 0.01 || v > whole + 0.01 || (whole - cell).abs() > 0.01 {
            return Err(format!(
                "{id}: server CPU/msg {v} µs, bound {bound} µs, whole cell {whole} µs: {row:?}"
            )
            .into());
        }
    }
    // The verdict's column: each figure within what its cells could hold.
    let verdict = stdout
        .split_once("\nVerdict\n")
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("no verdict: {stdout}"))?;
    let split = |l: &str| -> Vec<String> {
        l.trim()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut n = 0u64;
    let mut at = None;
    let mut checked = 0;
    for line in verdict.lines() {
        let t = line.trim_start();
        if let Some((count, _)) = t.split_once(" connections: ") {
            n = count.replace(',', "").parse().unwrap_or(0);
            continue;
        }
        let cells = split(line);
        if let Some(i) = cells.iter().position(|c| c == "server CPU/msg") {
            at = Some((i, cells.iter().position(|c| c == "model").unwrap_or(0)));
            continue;
        }
        let Some((i, m)) = at else {
            continue;
        };
        let Some(model) = cells.get(m) else {
            continue;
        };
        let Some(bound) = most.get(&(model.clone(), n)) else {
            continue;
        };
        if let Some(v) = cells.get(i).and_then(|c| time_text(c)) {
            checked += 1;
            if v * 1e6 > bound * (1.0 + 1e-9) + 0.01 {
                return Err(format!(
                    "{model} at {n}: the verdict prints {v} s of server CPU a message, more than its window holds ({bound} µs): {line}"
                )
                .into());
            }
        }
    }
    if checked == 0 {
        return Err(format!("no server CPU/msg figure checked in: {verdict}").into());
    }
    Ok(())
}

/// The server's `args` of a record, as strings.
fn server_args(c: &serde_json::Value) -> Vec<String> {
    c["server"]["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// `--work none,block:5ms`: every model at the count under each profile;
/// a cell with work passes it to its server, records the server's
/// requests and the bound its capacity gives, and never does more than
/// physics allows (one epoll thread sleeping 5 ms per request completes at
/// most one request per 5 ms of its life); the tables, the exports and
/// the report come per profile, the bound beside each figure; the none
/// profile's cells keep the ids and records of a run without the axis.
fn work_axis_records_work_requests_and_bounds() -> Result<(), Failed> {
    let out = scratch("run-work")?;
    let o = run(&[
        "--models",
        "epoll,threads",
        "--connections",
        "4",
        "--work",
        "none,block:5ms",
        "--runs",
        "2",
        "--duration",
        "300ms",
        "--warmup",
        "20ms",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    succeeded(&o, "")?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let dir = results_dir(&out)?;
    let cells = lines(&dir)?;
    let mut ids: Vec<&str> = cells.iter().filter_map(|c| c["id"].as_str()).collect();
    ids.sort_unstable();
    let want = [
        "epoll/block:5ms/c4/r1",
        "epoll/block:5ms/c4/r2",
        "epoll/c4/r1",
        "epoll/c4/r2",
        "threads/block:5ms/c4/r1",
        "threads/block:5ms/c4/r2",
        "threads/c4/r1",
        "threads/c4/r2",
    ];
    if ids != want {
        return Err(format!("cells {ids:?}").into());
    }
    for c in &cells {
        let id = c["id"].as_str().unwrap_or("");
        if c["status"] != "ok" {
            return Err(format!("cell {id}: {} ({})", c["status"], c["reason"]).into());
        }
        let args = server_args(c);
        let given = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .map(String::as_str)
        };
        if c["work"].is_null() {
            // The none profile: a cell as a run without the axis makes.
            if !c["work_done"].is_null() || given("--work").is_some() {
                return Err(format!("cell {id} has work: {args:?} {}", c["work_done"]).into());
            }
            continue;
        }
        if c["work"] != "block:5ms"
            || given("--work") != Some("block:5ms")
            || given("--message-size") != Some("64")
        {
            return Err(format!("cell {id}: work {} with {args:?}", c["work"]).into());
        }
        let done = &c["work_done"];
        let requests = done["requests"].as_u64().unwrap_or(0);
        let messages = c["load"]["messages"].as_u64().unwrap_or(0);
        // Every echo measured was a request whose work was done.
        if messages == 0 || requests < messages {
            return Err(format!("cell {id}: {requests} requests, {messages} messages").into());
        }
        let bound = done["bound"]["per_second"].as_f64().unwrap_or(0.0);
        let why = done["bound"]["why"].as_str().unwrap_or("");
        let wall = c["wall_seconds"].as_f64().unwrap_or(0.0);
        match c["model"].as_str() {
            // One thread: 1 / 5 ms, and no more requests than 5 ms each of
            // the server's life (within the cell) holds.
            Some("epoll") => {
                if (bound - 200.0).abs() > 1e-6 || !why.starts_with("1 thread") {
                    return Err(format!("cell {id}: bound {bound} ({why})").into());
                }
                if requests as f64 * 0.005 > wall + 0.005 {
                    return Err(format!(
                        "cell {id}: {requests} requests of 5 ms on one thread in {wall} s"
                    )
                    .into());
                }
            }
            // A thread per connection: the 4 in flight over 5 ms.
            _ if (bound - 800.0).abs() > 1e-6 => {
                return Err(format!("cell {id}: bound {bound} ({why})").into());
            }
            _ => {}
        }
    }
    // The terminal: each profile under its heading, the bound beside the
    // figure in the ranking and the verdict of the profile with work.
    let (none, block) = stdout
        .split_once("== Work: block:5ms ==")
        .ok_or_else(|| format!("no block:5ms heading: {stdout}"))?;
    if !none.contains("== Work: none ==") || none.contains("of bound") {
        return Err(format!("the none profile: {none}").into());
    }
    for want in [
        "bound",
        "of bound",
        "200/s: 1 thread / 5 ms each",
        "800/s: 4 in flight / 5 ms",
        "\nVerdict\n",
    ] {
        if !block.contains(want) {
            return Err(format!("the block:5ms profile lacks {want:?}: {block}").into());
        }
    }
    let mut csv = csv::Reader::from_path(dir.join("results.csv"))?;
    let header = csv.headers()?.clone();
    let (id_col, work_col, bound_col) = (
        column(&header, "id")?,
        column(&header, "work")?,
        column(&header, "work_bound_per_second")?,
    );
    for row in csv.records() {
        let row = row?;
        let id = row.get(id_col).unwrap_or("");
        let (work, bound) = (row.get(work_col), row.get(bound_col));
        let fine = if id.contains("/block:5ms/") {
            work == Some("block:5ms") && bound.is_some_and(|b| !b.is_empty())
        } else {
            work == Some("none") && bound == Some("")
        };
        if !fine {
            return Err(format!("results.csv row {row:?}").into());
        }
    }
    let json = crate::schema::results_agree(&dir)?;
    let rows = json["summary"].as_array().ok_or("no summary")?;
    if rows.len() != 4
        || !rows
            .iter()
            .any(|r| r["work"] == "block:5ms" && r["bound"]["per_second"].as_f64() == Some(200.0))
    {
        return Err(format!("results.json summary: {rows:?}").into());
    }
    let md = std::fs::read_to_string(dir.join("results.md"))?;
    let html = std::fs::read_to_string(dir.join("report.html"))?;
    if !md.contains("## Work: none") || !md.contains("## Work: block:5ms") {
        return Err(format!("results.md: {md}").into());
    }
    for want in [
        "<h3>Work: block:5ms</h3>",
        "id=\"fig-throughput-w2\"",
        "its bound, the throughput the work",
    ] {
        if !html.contains(want) {
            return Err(format!("report.html lacks {want:?}").into());
        }
    }
    Ok(())
}

/// A `plan.json` read back on `--resume` has its work axis checked as the
/// flags were: a damaged spec refuses the resume in one line (exit 2), and
/// nothing is run or appended.
fn a_resumed_plan_with_a_damaged_work_spec_is_refused() -> Result<(), Failed> {
    let out = scratch("run-work-resume")?;
    let o = run(&[
        "--models",
        "epoll",
        "--connections",
        "2",
        "--work",
        "none,wait:1ms",
        "--runs",
        "1",
        "--duration",
        "50ms",
        "--warmup",
        "0ms",
        "--no-report",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    succeeded(&o, "")?;
    let dir = results_dir(&out)?;
    let results = std::fs::read(dir.join("results.jsonl"))?;
    let plan_path = dir.join("plan.json");
    let plan = std::fs::read_to_string(&plan_path)?;
    if !plan.contains("\"wait:1ms\"") {
        return Err(format!("plan.json lacks the profile: {plan}").into());
    }
    for (damaged, want) in [
        ("\"wait:1zz\"", "plan.json does not parse: 'wait:1zz'"),
        ("\"wait:1000us\"", "canonical"),
    ] {
        std::fs::write(&plan_path, plan.replacen("\"wait:1ms\"", damaged, 1))?;
        let o = Command::new(bin())
            .arg("run")
            .arg("--resume")
            .arg(&dir)
            .arg("--no-report")
            .output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || err.lines().count() != 1 || !err.contains(want) {
            return Err(format!("{damaged}: exit {:?}, stderr {err:?}", o.status.code()).into());
        }
        if std::fs::read(dir.join("results.jsonl"))? != results {
            return Err(format!("{damaged}: results.jsonl changed").into());
        }
    }
    Ok(())
}

/// Whether process `pid`'s command line has `word` as one of its words.
pub(crate) fn has_word(pid: &str, word: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|&b| b == 0).any(|w| w == word.as_bytes()))
}

/// Waits, bounded, until `n` processes with `mark` in their environment
/// have `word` on their command line, and returns them; past
/// [`PATIENCE`], kills `child` and fails.
pub(crate) fn wait_for_marked(
    mark: &str,
    word: &str,
    n: usize,
    child: &mut std::process::Child,
) -> Result<Vec<String>, Failed> {
    let started = std::time::Instant::now();
    loop {
        let found: Vec<String> = marked(mark)
            .into_iter()
            .filter(|p| has_word(p, word))
            .collect();
        if found.len() >= n {
            return Ok(found);
        }
        if started.elapsed() > PATIENCE {
            let _ = child.kill();
            return Err(format!("{n} '{word}' processes never started").into());
        }
        std::thread::yield_now();
    }
}

/// Starts `c10k run ARGS --no-report --out OUT` with `mark` (`KEY=VALUE`)
/// in its environment, its stderr piped: a run a test watches and signals.
pub(crate) fn spawn_marked(
    args: &[&str],
    out: &std::path::Path,
    mark: &str,
) -> Result<std::process::Child, Failed> {
    let (key, value) = mark.split_once('=').ok_or("a mark")?;
    Ok(Command::new(bin())
        .arg("run")
        .args(args)
        .args(["--no-report", "--out"])
        .arg(out)
        .env(key, value)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// SIGTERM to `child` alone; how it exited and what it said on stderr.
pub(crate) fn terminate(
    mut child: std::process::Child,
) -> Result<(std::process::ExitStatus, String), Failed> {
    c10k::sys::process::kill(child.id() as i32, 15)?;
    let status = crate::support::wait_bounded(&mut child)?;
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().ok_or("no stderr")?, &mut err)?;
    Ok((status, err))
}

/// The processes (other than this test's) whose environment holds
/// `mark`: what a run started and left behind.
pub(crate) fn marked(mark: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|p| p.chars().all(|c| c.is_ascii_digit()) && *p != me)
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == mark.as_bytes()))
        })
        .filter(|p| {
            // A zombie has given back everything but its entry.
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        })
        .collect()
}

/// SIGTERM to the runner alone (as `kill PID`, a CI timeout or a
/// supervisor sends it), once its cell's client is running: the cell in
/// progress is abandoned (not recorded), the client and the server are
/// stopped and reaped, the exports are written, exit 130, and the message
/// names the cell and the resume command.
fn sigterm_to_the_runner_alone_abandons_the_cell() -> Result<(), Failed> {
    let out = scratch("run-sigterm")?;
    let mark = format!("C10K_TEST_MARK=sigterm-{}", std::process::id());
    let mut child = spawn_marked(
        &[
            "--models", "epoll", "-c", "2", "-d", "60s", "--warmup", "0", "--runs", "1",
        ],
        &out,
        &mark,
    )?;
    // The cell's client runs in a worker process (`c10k agent`).
    let agent = wait_for_marked(&mark, "agent", 1, &mut child)?.join(",");
    let (status, err) = terminate(child)?;
    if status.code() != Some(130) {
        return Err(format!("exit {:?} (agent {agent}): {err}", status.code()).into());
    }
    let dir = results_dir(&out)?;
    let said = format!(
        "c10k run: interrupted during epoll/c2/r1 (abandoned, not recorded) with 1 cells left; finish with: c10k run --resume {}",
        dir.display()
    );
    expect_contains("stderr", &err, &said)?;
    let recorded: Vec<String> = lines(&dir)?.iter().map(|c| c["id"].to_string()).collect();
    expect_eq(
        "cells recorded (one was abandoned)",
        Vec::<String>::new(),
        recorded,
    )?;
    ensure(dir.join("results.csv").is_file(), || {
        format!("no results.csv in {}", dir.display())
    })?;
    let left = marked(&mark);
    if !left.is_empty() {
        return Err(format!("processes of the run left behind: {left:?}").into());
    }
    Ok(())
}

/// `c10k run handlers --models epoll` runs no tokio-inline, and its plan
/// does not record that variant as if it had.
fn a_preset_variant_not_run_is_not_in_the_plan() -> Result<(), Failed> {
    let out = scratch("run-preset-variant")?;
    let o = run(&[
        "handlers",
        "--models",
        "epoll",
        "--work",
        "none",
        "-c",
        "2",
        "--runs",
        "1",
        "-d",
        "50ms",
        "--warmup",
        "0",
        "--no-report",
        "--out",
        out.to_str().unwrap_or("."),
    ])?;
    succeeded(&o, "")?;
    let dir = results_dir(&out)?;
    let plan: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("plan.json"))?)?;
    if plan["models"] != serde_json::json!(["epoll"])
        || plan["variants"].as_array().is_some_and(|v| !v.is_empty())
    {
        return Err(format!(
            "plan: models {}, variants {}",
            plan["models"], plan["variants"]
        )
        .into());
    }
    Ok(())
}

/// At the width the terminal gives (`COLUMNS` here), no line of what `c10k
/// run` prints is wider, a note said under several tables comes once at
/// the end, and the answer is the last thing printed.
fn the_terminal_fits_its_width() -> Result<(), Failed> {
    let out = scratch("terminal-width")?;
    let o = Command::new(bin())
        .env("COLUMNS", "80")
        .args([
            "run",
            "--models",
            "epoll,poll",
            "-c",
            "2,3",
            "--runs",
            "2",
            "--slot",
            "100ms",
            "--slot-warmup",
            "50ms",
            "--pin",
            "none",
            "--no-report",
            "--out",
        ])
        .arg(out.path())
        .output()?;
    succeeded(&o, "")?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let wide: Vec<&str> = stdout.lines().filter(|l| l.chars().count() > 80).collect();
    if !wide.is_empty() {
        return Err(format!("lines past 80 columns: {wide:#?}").into());
    }
    let rule = "Rows by median. Rank:";
    if stdout.matches(rule).count() != 1 {
        return Err(format!(
            "the rule is said {} times, not once:\n{stdout}",
            stdout.matches(rule).count()
        )
        .into());
    }
    let last = stdout.trim_end().rsplit("\n\n").next().unwrap_or("");
    if !last.starts_with("The answer") {
        return Err(format!("the last block is not the answer: {last:?}").into());
    }
    Ok(())
}
