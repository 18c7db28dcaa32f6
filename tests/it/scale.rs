//! `c10k run c1m` in small: a few thousand connections spread over two
//! server processes and two client processes by a low open-files limit,
//! open loop, every connection echoing once; and the run's flags for the
//! open loop refused when they make no sense.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::{bin, column, ensure, lines, results_dir, scratch, succeeded};

tests![
    c1m_shaped_matrix_spreads_echoes_every_connection_and_measures_memory,
    a_late_client_is_named_the_limit,
    open_loop_flags_are_checked,
    a_cell_that_hits_a_limit_fails_naming_it,
];

/// The open-files limit the run is started under: 2,000 connections need
/// two server processes (1,072 each past 128 kept for the server's own
/// descriptors) and two client workers.
const NOFILE: u32 = 1200;

fn c1m_shaped_matrix_spreads_echoes_every_connection_and_measures_memory() -> Result<(), Failed> {
    let out = scratch("run-c1m")?;
    // `ulimit -n` in sh sets the soft and the hard limit: the run cannot
    // raise it, as on the machine whose hard limit is 20,000.
    let script = format!(
        "ulimit -n {NOFILE} && exec \"$0\" run c1m --models epoll,select -c 1000,2000 \
         --out \"$1\""
    );
    let o = Command::new("sh")
        .args(["-c", &script, bin(), out.to_str().unwrap_or(".")])
        .output()?;
    succeeded(&o, "c1m: ")?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let dir = results_dir(&out)?;
    let cells = lines(&dir)?;
    if cells.len() != 4 {
        return Err(format!("{} cells, expected 4", cells.len()).into());
    }
    for c in &cells {
        let id = c["id"].as_str().unwrap_or("");
        if c["status"] != "ok" {
            return Err(format!("cell {id}: {} ({})", c["status"], c["reason"]).into());
        }
        let n = c["connections"].as_u64().unwrap_or(0);
        let load = &c["load"];
        let f = &load["fairness"];
        // Open loop, one measured message per connection: every one
        // echoed, none twice.
        if load["workload"] != "open"
            || f["connections"] != n
            || f["starved"] != 0
            || f["min"] != 1
            || f["max"] != 1
            || load["messages"] != n
        {
            return Err(format!("cell {id}: not one echo per connection: {load}").into());
        }
        let instances = c["server"]["instances"].as_u64().unwrap_or(0);
        let workers = load["client"]["processes"].as_u64().unwrap_or(0);
        let want = if n == 2000 { 2 } else { 1 };
        if instances != want || workers != want {
            return Err(format!(
                "cell {id}: {instances} server and {workers} client processes, expected {want}"
            )
            .into());
        }
        let s = &c["server"];
        let held = s["loaded"]["sockets"].as_u64().unwrap_or(0)
            - s["idle"]["sockets"].as_u64().unwrap_or(0);
        if held != n {
            return Err(format!("cell {id}: sampled with {held} of {n} connections").into());
        }
        ensure(c["runner_cpu_seconds"].as_f64().is_some(), || {
            format!(
                "cell {id}: the runner's own CPU is not recorded: {}",
                c["runner_cpu_seconds"]
            )
        })?;
    }
    // The flattened figures: share 1, memory per connection present where
    // the cell resolves it, never a negative cost.
    let mut csv = csv::Reader::from_path(dir.join("results.csv"))?;
    let header = csv.headers()?.clone();
    let col = |name: &str| column(&header, name);
    let (share, kernel, user, client) = (
        col("echoed_share")?,
        col("kernel_kib_per_connection")?,
        col("user_kib_per_connection")?,
        col("client_kib_per_connection")?,
    );
    for row in csv.records() {
        let row = row?;
        let num = |i: usize| row.get(i).and_then(|v| v.parse::<f64>().ok());
        if num(share) != Some(1.0) {
            return Err(format!("echoed share is not 1: {row:?}").into());
        }
        // Kernel memory is system-wide, so other tests move it: a cell
        // may see it fall or move less than it resolves, and then shows no
        // figure, as the tables do (analysis::memory). A connection costs
        // the server and the client something.
        for i in [user, client] {
            if num(i).is_none() {
                return Err(format!("{} missing: {row:?}", &header[i]).into());
            }
        }
        for i in [kernel, user] {
            if num(i).is_some_and(|v| v <= 0.0) {
                return Err(format!("{} is not a cost: {row:?}", &header[i]).into());
            }
        }
        if !num(client).is_some_and(|v| v > 0.0) {
            return Err(format!("client memory per connection is not positive: {row:?}").into());
        }
    }
    // The study's table: a row per model and count, each echoed share 1.
    let table = stdout
        .split_once("Holding connections: per model and count")
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("no C1M table: {stdout}"))?;
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.trim_start().starts_with("epoll") || l.trim_start().starts_with("select"))
        .take(4)
        .collect();
    if rows.len() != 4 || rows.iter().any(|r| !r.contains(" 1.0000 ")) {
        return Err(format!("C1M table rows: {rows:?}").into());
    }
    let html = std::fs::read_to_string(dir.join("report.html"))?;
    if !html.contains("Holding connections: memory per connection and p99") {
        return Err("the report lacks the holding chart".into());
    }
    Ok(())
}

/// A `c1m`-shaped run whose client cannot keep its rate: 2,000
/// connections asked for 100,000 messages/s (one every 20 ms each), the
/// client working in passes 100 ms apart with one message in flight per
/// connection, so it writes at most one message per connection a pass,
/// 20,000/s, and falls further behind with every send. Neither side is
/// short of CPU; the client's send lag is most of the latency it measured,
/// and the verdict names it.
fn a_late_client_is_named_the_limit() -> Result<(), Failed> {
    let out = scratch("run-late")?;
    let o = Command::new(bin())
        .args([
            "run",
            "c1m",
            "--models",
            "epoll",
            "-c",
            "2000",
            "-r",
            "100000",
            "-n",
            "10",
            "--client-interval",
            "100ms",
            "--no-report",
            "--out",
            out.to_str().unwrap_or("."),
        ])
        .output()?;
    succeeded(&o, "late: ")?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let cells = lines(&results_dir(&out)?)?;
    let cell = cells.first().ok_or("no cell")?;
    let load = &cell["load"];
    let l = &load["limits"];
    let why = l["why"].as_str().unwrap_or("");
    if cell["status"] != "ok"
        || load["messages"] != 20_000
        || l["verdict"] != "client"
        || !why.contains("the client wrote its sends late")
    {
        return Err(format!("late client: {} {load}", cell["status"]).into());
    }
    let lag = load["open_loop"]["send_lag_us"]["p99"]
        .as_f64()
        .unwrap_or(0.0);
    let p99 = load["latency_us"]["p99"].as_f64().unwrap_or(0.0);
    if load["open_loop"]["interval_us"] != 100_000.0 || lag - 100_000.0 <= p99 / 10.0 {
        return Err(format!("send lag p99 {lag} µs against p99 {p99} µs").into());
    }
    // The ranking says which way the figure is off.
    if !stdout.contains("client (an upper bound)") {
        return Err(format!("no upper bound in the verdict table: {stdout}").into());
    }
    Ok(())
}

fn a_cell_that_hits_a_limit_fails_naming_it() -> Result<(), Failed> {
    let out = scratch("run-limit")?;
    // The server may hold 40 descriptors: of 60 connections, those past
    // its room wait in the backlog, unanswered, until the client's
    // timeout.
    let o = Command::new(bin())
        .args([
            "run",
            "--models",
            "epoll",
            "-c",
            "60",
            "--runs",
            "1",
            "-d",
            "200ms",
            "--timeout",
            "1s",
            "--no-report",
            "--server-arg=--nofile=40",
            "--out",
            out.to_str().unwrap_or("."),
        ])
        .output()?;
    // Its one cell failed: no cell measured, exit 5, the reports written.
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(5) || !err.contains("c10k run: no cell was measured (1 failed of 1)")
    {
        return Err(format!("limit: exit {:?}: {err}", o.status.code()).into());
    }
    let dir = results_dir(&out)?;
    let cells = lines(&dir)?;
    let reason = cells
        .first()
        .and_then(|c| c["reason"].as_str())
        .unwrap_or("");
    if cells.len() != 1
        || cells[0]["status"] != "failed"
        || !reason.contains("limit hit: the server's accept() ran out of descriptors")
    {
        return Err(format!("{cells:?}").into());
    }
    Ok(())
}

fn open_loop_flags_are_checked() -> Result<(), Failed> {
    for (args, want) in [
        (
            &["run", "-r", "0", "--models", "epoll"][..],
            "--rate 0e0: must be from",
        ),
        (
            &["run", "--rate-per-connection", "inf", "--models", "epoll"][..],
            "--rate-per-connection inf: must be from",
        ),
        (
            &["run", "accept", "-r", "100", "--models", "epoll"][..],
            "--rate: an open loop sends messages on connections it keeps; the churn workload",
        ),
        (
            &["run", "-r", "100", "--rate-per-connection", "1"][..],
            "cannot be used with",
        ),
        (
            &["run", "--connect-rate=0", "--models", "epoll"][..],
            "--connect-rate 0e0: must be from",
        ),
    ] {
        let o = Command::new(bin()).args(args).output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || !err.contains(want) {
            return Err(format!(
                "{args:?}: exit {:?}, expected 2 and {want:?}: {err}",
                o.status.code()
            )
            .into());
        }
    }
    Ok(())
}
