//! `c10k load` against real `c10k serve` children and against a server that
//! misbehaves on purpose (tests/servers/misbehaving_echo.rs): counts and
//! error kinds must be exact, and every output must be written whatever the
//! server did.

use std::process::Command;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::misbehaving_echo::{Fault, Misbehave};
use crate::support::{bin, ensure, scratch, Scratch, Server, Started};

tests![
    closed_loop_counts_are_exact,
    corrupted_echoes_are_mismatches,
    resets_are_counted_per_connection,
    dropped_bytes_end_in_timeout_or_mismatch,
    refused_connections_keep_every_output,
    a_stall_shows_in_corrected_latency_only,
    a_paced_open_loop_counts_exactly_and_states_its_precision,
    a_warmup_the_client_fell_behind_in_is_not_sent_in_the_window,
    churn_counts_every_connection,
    burst_times_every_round,
    idle_connections_stay_open_and_silent,
    bad_input_is_one_line_exit_2,
    past_the_open_files_limit_workers_split_the_run,
    a_slow_server_is_the_limit,
    a_saturated_client_is_the_limit,
];

/// Output files of one run, in a fresh [`scratch`] directory (removed
/// when the test passes, kept when it fails).
struct Outputs {
    dir: Scratch,
}

impl Outputs {
    fn new(name: &str) -> Result<Outputs, Failed> {
        Ok(Outputs {
            dir: scratch(&format!("load-{name}"))?,
        })
    }
    fn path(&self, f: &str) -> String {
        self.dir.join(f).to_string_lossy().into_owned()
    }
    fn json(&self) -> Result<Value, Failed> {
        let text =
            std::fs::read_to_string(self.path("r.json")).map_err(|e| format!("no JSON: {e}"))?;
        Ok(serde_json::from_str(&text)?)
    }
    fn csv(&self) -> Result<Vec<csv::StringRecord>, Failed> {
        let mut r =
            csv::Reader::from_path(self.path("c.csv")).map_err(|e| format!("no CSV: {e}"))?;
        Ok(r.records().collect::<Result<_, _>>()?)
    }
}

/// Runs `c10k load TARGET ARGS… -q --json --per-connection-csv --hdr`;
/// returns the exit code and stderr.
fn load(target: &str, args: &[&str], out: &Outputs) -> Result<(Option<i32>, String), Failed> {
    let o = Command::new(bin())
        .arg("load")
        .arg(target)
        .args(args)
        .args([
            "-q",
            "--json",
            &out.path("r.json"),
            "--per-connection-csv",
            &out.path("c.csv"),
        ])
        .args(["--hdr", &out.path("h.hdr")])
        .output()?;
    Ok((
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    ))
}

fn epoll() -> Result<Server, Failed> {
    match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(r) => Err(r.into()),
    }
}

fn num(v: &Value, path: &str) -> f64 {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN)
}

fn error_count(v: &Value, kind: &str) -> u64 {
    v["errors"][kind].as_u64().unwrap_or(u64::MAX)
}

/// Closed loop, `-n`: every message counted once, every byte back, one CSV
/// row per connection, and the server agrees.
fn closed_loop_counts_are_exact() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("closed")?;
    let (code, err) = load(
        &server.addr.to_string(),
        &["-c", "10", "-n", "100", "--depth", "3", "-m", "100"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(
        j["schema_version"] == c10k::client::report::SCHEMA_VERSION,
        || "schema_version".into(),
    )?;
    ensure(j["messages"] == 1000, || {
        format!("messages {}", j["messages"])
    })?;
    ensure(num(&j, "latency_us.count") == 1000.0, || {
        "latency count".into()
    })?;
    ensure(j["connections"]["established"] == 10, || {
        "established".into()
    })?;
    ensure(j["connections"]["failed"] == 0, || {
        format!("failed: {}", j["errors"])
    })?;
    ensure(num(&j, "client.cpu_per_message_us") > 0.0, || {
        "no client CPU".into()
    })?;
    // Every connection did exactly its 100: perfectly fair.
    let f = &j["fairness"];
    ensure(
        f["min"] == 100 && f["max"] == 100 && f["starved"] == 0 && f["jain"] == 1.0,
        || format!("fairness {f}"),
    )?;
    ensure(j["environment"]["kernel"].is_string(), || {
        "no environment".into()
    })?;
    let rows = out.csv()?;
    ensure(rows.len() == 10, || format!("{} CSV rows", rows.len()))?;
    for r in &rows {
        ensure(
            &r[2] == "100" && &r[3] == "10000" && &r[4] == "10000" && r[10].is_empty(),
            || format!("row {r:?}"),
        )?;
    }
    let hdr = std::fs::read_to_string(out.path("h.hdr"))?;
    ensure(hdr.lines().any(|l| l.starts_with("Tag=latency,")), || {
        "no histogram in the log".into()
    })?;
    // Fewer messages than the depth: the depth must not send more.
    let (code, err) = load(
        &server.addr.to_string(),
        &["-c", "2", "-n", "1", "--depth", "4"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(j["messages"] == 2 && j["bytes_sent"] == 128, || {
        format!(
            "-n 1 --depth 4 on 2 connections: {} messages, {} bytes sent",
            j["messages"], j["bytes_sent"]
        )
    })?;
    let (_, summary) = server.stop()?;
    ensure(summary.connections == 12, || {
        format!("server saw {}", summary.connections)
    })?;
    ensure(summary.bytes_echoed == 100_000 + 128, || {
        format!("server echoed {}", summary.bytes_echoed)
    })?;
    ensure(summary.errors.reset == 0, || {
        "the client's close reset connections".into()
    })?;
    Ok(())
}

/// A server that flips bytes: every connection ends as a mismatch, so the
/// run has no result (exit 5, the cause first), with or without
/// --fail-on-error; every output is still written.
fn corrupted_echoes_are_mismatches() -> Result<(), Failed> {
    let bad = Misbehave::start(Fault::Corrupt { every: 300 });
    let out = Outputs::new("corrupt")?;
    let (code, err) = load(&bad.addr.to_string(), &["-c", "4", "-n", "50"], &out)?;
    let cause = "c10k load: every connection got back bytes other than it sent";
    ensure(code == Some(5) && err.starts_with(cause), || {
        format!("exit {code:?}: {err}")
    })?;
    let j = out.json()?;
    ensure(error_count(&j, "mismatch") == 4, || {
        format!("errors {}", j["errors"])
    })?;
    // 300 / 64: the first 4 messages of each connection were intact.
    ensure(j["messages"] == 16, || {
        format!("messages {}", j["messages"])
    })?;
    let (code, _) = load(
        &bad.addr.to_string(),
        &["-c", "4", "-n", "50", "--fail-on-error"],
        &out,
    )?;
    ensure(code == Some(5), || format!("--fail-on-error exit {code:?}"))?;
    Ok(())
}

/// A server that resets after 640 bytes: exactly 10 echoes, then a reset,
/// on every connection (exit 5: no connection did its work).
fn resets_are_counted_per_connection() -> Result<(), Failed> {
    let bad = Misbehave::start(Fault::ResetAfter { bytes: 640 });
    let out = Outputs::new("reset")?;
    let (code, err) = load(&bad.addr.to_string(), &["-c", "3", "-n", "100"], &out)?;
    let cause = format!("c10k load: {} reset every connection\n", bad.addr);
    ensure(code == Some(5) && err == cause, || {
        format!("exit {code:?}: {err}")
    })?;
    let j = out.json()?;
    ensure(error_count(&j, "reset") == 3, || {
        format!("errors {}", j["errors"])
    })?;
    let rows = out.csv()?;
    ensure(rows.len() == 3, || format!("{} rows", rows.len()))?;
    for r in &rows {
        ensure(&r[2] == "10" && &r[10] == "reset", || format!("row {r:?}"))?;
    }
    Ok(())
}

/// A server that drops bytes: the stream either stalls (timeout) or shifts
/// (mismatch); either way every connection fails, and fast.
fn dropped_bytes_end_in_timeout_or_mismatch() -> Result<(), Failed> {
    let bad = Misbehave::start(Fault::DropBytes { every: 1000 });
    let out = Outputs::new("drop")?;
    let (code, err) = load(
        &bad.addr.to_string(),
        &["-c", "2", "-n", "100", "--timeout", "300ms"],
        &out,
    )?;
    ensure(code == Some(5), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    let failed = error_count(&j, "timeout") + error_count(&j, "mismatch");
    ensure(failed == 2, || format!("errors {}", j["errors"]))?;
    Ok(())
}

/// Nothing listens: every connection refused, and still every output; the
/// run has no result, so it exits 5 with the cause as the one line on
/// stderr, and gives no advice on the window (a timed run gave "give a
/// window longer than a round" and exit 0).
fn refused_connections_keep_every_output() -> Result<(), Failed> {
    let bad = Misbehave::start(Fault::Refuse);
    let out = Outputs::new("refused")?;
    let cause = format!(
        "c10k load: every connection was refused: is anything listening on {}?\n",
        bad.addr
    );
    for args in [&["-c", "5", "-n", "1"][..], &["-c", "1", "-d", "1s"]] {
        let _ = std::fs::remove_file(out.path("r.json"));
        let (code, err) = load(&bad.addr.to_string(), args, &out)?;
        ensure(code == Some(5) && err == cause, || {
            format!("{args:?}: exit {code:?}: {err}")
        })?;
        let j = out.json()?;
        let n = if args[1] == "5" { 5 } else { 1 };
        ensure(error_count(&j, "refused") == n, || {
            format!("errors {}", j["errors"])
        })?;
        ensure(out.csv()?.len() as u64 == n, || "CSV rows".into())?;
        let warnings = j["warnings"].to_string();
        ensure(
            warnings.contains("every connection was refused") && !warnings.contains("window"),
            || format!("{args:?}: warnings {warnings}"),
        )?;
    }
    // No result is no result, --fail-on-error or not.
    let (code, _) = load(
        &bad.addr.to_string(),
        &["-c", "5", "-n", "1", "--fail-on-error"],
        &out,
    )?;
    ensure(code == Some(5), || format!("--fail-on-error exit {code:?}"))?;
    Ok(())
}

/// Open loop against a server that stalls once for 200 ms: the corrected
/// latency shows the stall (at least 200 ms: the server guarantees that
/// much), while the uncorrected figure, which only a few messages written
/// before the stall carry, stays lower.
fn a_stall_shows_in_corrected_latency_only() -> Result<(), Failed> {
    let bad = Misbehave::start(Fault::StallOnce {
        after_bytes: 64 * 400,
        for_ms: 200,
    });
    let out = Outputs::new("stall")?;
    let (code, err) = load(
        &bad.addr.to_string(),
        &["-c", "4", "-r", "2000", "-d", "1.5s"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(j["connections"]["failed"] == 0, || {
        format!("errors {}", j["errors"])
    })?;
    let corrected_max = num(&j, "latency_us.max");
    let corrected_p99 = num(&j, "latency_us.p99");
    let raw_p99 = num(&j, "open_loop.latency_uncorrected_us.p99");
    ensure(corrected_max >= 200_000.0, || {
        format!("corrected max {corrected_max} µs < the 200 ms stall")
    })?;
    ensure(raw_p99 < corrected_p99, || {
        format!("uncorrected p99 {raw_p99} µs is not below corrected p99 {corrected_p99} µs")
    })?;
    Ok(())
}

/// An open loop in passes 5 ms apart (`--interval`) with a fixed count:
/// every connection has exactly its 10 echoes, none fails (each stays
/// open until the run ends, then closes with a FIN), the run ends when the
/// last echo is in, and the report states the interval.
fn a_paced_open_loop_counts_exactly_and_states_its_precision() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("paced")?;
    let (code, err) = load(
        &server.addr.to_string(),
        &["-c", "20", "-r", "2000", "-n", "10", "--interval", "5ms"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(j["messages"] == 200, || {
        format!("messages {}", j["messages"])
    })?;
    ensure(j["connections"]["failed"] == 0, || {
        format!("errors {}", j["errors"])
    })?;
    ensure(num(&j, "open_loop.interval_us") == 5000.0, || {
        format!("open_loop {}", j["open_loop"])
    })?;
    ensure(
        num(&j, "fairness.min") == 10.0 && num(&j, "fairness.max") == 10.0,
        || format!("fairness {}", j["fairness"]),
    )?;
    let (_, summary) = server.stop()?;
    ensure(
        summary.connections == 20 && summary.errors.reset == 0 && summary.errors.io_other == 0,
        || format!("server saw {summary:?}"),
    )?;
    // Past interval control's bound: one line, exit 2.
    let o = Command::new(bin())
        .args([
            "load",
            "127.0.0.1:1",
            "-c",
            "1",
            "-r",
            "10",
            "--interval",
            "2s",
        ])
        .output()?;
    let e = String::from_utf8_lossy(&o.stderr);
    ensure(
        o.status.code() == Some(2) && e.contains("--interval") && e.contains("at most 1s"),
        || format!("--interval 2s: exit {:?}, {e}", o.status.code()),
    )?;
    Ok(())
}

/// A client far behind its schedule in the warm-up drops what it still
/// owed there when the window opens, rather than spend the window sending
/// unmeasured messages. At 1,000,000/s on 20 connections, 1 s of warm-up is
/// 50,000 sends due per connection; in passes 100 ms apart, one message in
/// flight each, the client writes about ten of them. The server echoes the
/// 10 measured messages of each connection and the warm-up's few: with the
/// warm-up's backlog carried into the window it would owe tens of
/// thousands per connection and time out.
fn a_warmup_the_client_fell_behind_in_is_not_sent_in_the_window() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("behind")?;
    let (code, err) = load(
        &server.addr.to_string(),
        &[
            "-c",
            "20",
            "-r",
            "1000000",
            "-n",
            "10",
            "--warmup",
            "1s",
            "--interval",
            "100ms",
            "--timeout",
            "5s",
        ],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(
        j["messages"] == 200 && j["connections"]["failed"] == 0,
        || format!("messages {}, errors {}", j["messages"], j["errors"]),
    )?;
    // Late by the whole schedule, so a late client.
    ensure(num(&j, "open_loop.send_lag_us.p99") > 100_000.0, || {
        format!("open_loop {}", j["open_loop"])
    })?;
    let (_, summary) = server.stop()?;
    let echoed = summary.bytes_echoed / 64;
    ensure((200..=20 * 100).contains(&echoed), || {
        format!("the server echoed {echoed} messages for 200 measured")
    })?;
    Ok(())
}

/// Churn with an echo: -n 50 per slot on 2 slots is 100 connections, each
/// with one echo, one CSV row each, and the server agrees.
fn churn_counts_every_connection() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("churn")?;
    let (code, err) = load(
        &server.addr.to_string(),
        &["--churn", "--churn-echo", "-c", "2", "-n", "50"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(j["connections"]["established"] == 100, || {
        format!("established {}", j["connections"])
    })?;
    ensure(num(&j, "connect.latency_us.count") == 100.0, || {
        "connect latencies".into()
    })?;
    ensure(j["messages"] == 100, || {
        format!("messages {}", j["messages"])
    })?;
    ensure(out.csv()?.len() == 100, || "CSV rows".into())?;
    let (_, summary) = server.stop()?;
    ensure(summary.connections == 100, || {
        format!("server saw {}", summary.connections)
    })?;
    Ok(())
}

/// Burst: three rounds, each timed, one echo per connection per round.
fn burst_times_every_round() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("burst")?;
    let (code, err) = load(
        &server.addr.to_string(),
        &["--burst", "--rounds", "3", "-c", "50"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    let spans = j["burst"]["makespan_us"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure(
        spans.len() == 3 && spans.iter().all(|s| s.as_f64().is_some_and(|v| v > 0.0)),
        || format!("makespans {spans:?}"),
    )?;
    ensure(j["messages"] == 150, || {
        format!("messages {}", j["messages"])
    })?;
    Ok(())
}

/// Hot and cold: idle connections are up for the whole run and send nothing.
fn idle_connections_stay_open_and_silent() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("idle")?;
    let (code, err) = load(
        &server.addr.to_string(),
        &["-c", "2", "--idle", "20", "-n", "10"],
        &out,
    )?;
    ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
    let j = out.json()?;
    ensure(j["connections"]["established"] == 22, || {
        format!("{}", j["connections"])
    })?;
    let rows = out.csv()?;
    ensure(rows.len() == 22, || "CSV rows".into())?;
    let silent = rows
        .iter()
        .filter(|r| &r[2] == "0" && &r[3] == "0" && r[10].is_empty())
        .count();
    ensure(silent == 20, || format!("{silent} silent rows"))?;
    let (_, summary) = server.stop()?;
    ensure(summary.peak_connections == 22, || {
        format!("server peak {}", summary.peak_connections)
    })?;
    Ok(())
}

/// Bad flags and targets: one line, exit 2.
fn bad_input_is_one_line_exit_2() -> Result<(), Failed> {
    for args in [
        &["127.0.0.1:1", "--rate", "-5"][..],
        &["no-such-host.invalid:7"],
        &["127.0.0.1:7", "-d", "ten seconds"],
        &["127.0.0.1:7", "-m", "0"],
        &["127.0.0.1:7", "--source", "127.0.0.9-127.0.0.2"],
    ] {
        let o = Command::new(bin()).arg("load").args(args).output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        ensure(
            o.status.code() == Some(2) && err.trim().lines().count() == 1,
            || format!("{args:?}: exit {:?}, stderr {err:?}", o.status.code()),
        )?;
    }
    Ok(())
}

/// Under a hard open-files limit of 1,000, 2,500 connections are spread over
/// worker processes whose results merge into one exact run.
fn past_the_open_files_limit_workers_split_the_run() -> Result<(), Failed> {
    let server = epoll()?;
    let out = Outputs::new("split")?;
    let o = Command::new("sh")
        .args([
            "-c",
            r#"ulimit -Sn 1000 && ulimit -Hn 1000 && exec "$@""#,
            "sh",
            bin(),
            "load",
        ])
        .arg(server.addr.to_string())
        .args([
            "-c",
            "2500",
            "-n",
            "20",
            "-q",
            "--json",
            &out.path("r.json"),
        ])
        .args(["--per-connection-csv", &out.path("c.csv")])
        .output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    ensure(o.status.code() == Some(0), || {
        format!("exit {:?}: {err}", o.status.code())
    })?;
    let j = out.json()?;
    let processes = j["client"]["processes"].as_u64().unwrap_or(0);
    ensure(processes >= 3, || {
        format!("{processes} processes for 2,500 connections at 1,000 each")
    })?;
    ensure(j["messages"] == 50_000, || {
        format!("messages {}", j["messages"])
    })?;
    ensure(j["connections"]["established"] == 2500, || {
        format!("{}", j["connections"])
    })?;
    let mut ids: Vec<u32> = out
        .csv()?
        .iter()
        .map(|r| r[0].parse().unwrap_or(u32::MAX))
        .collect();
    ids.sort_unstable();
    ensure(ids == (0..2500).collect::<Vec<_>>(), || {
        "CSV ids are not 0..2500 once each".into()
    })?;
    let (_, summary) = server.stop()?;
    ensure(summary.connections == 2500, || {
        format!("server saw {}", summary.connections)
    })?;
    ensure(summary.bytes_echoed == 50_000 * 64, || {
        format!("server echoed {}", summary.bytes_echoed)
    })?;
    Ok(())
}

/// A server that sleeps 2 ms before each echo uses no CPU, and the client
/// waits on it: the verdict names the server, and says it was waiting, not
/// computing. The server is this test process, observed by its pid.
/// Runs `measure` until a result reports no interference, at most three
/// times, and returns the last: the tests of who limited a run judge a run
/// the machine left alone, and other tests (a `busy` server spins a whole
/// CPU by design) may be running beside them. A run that reports
/// interference is honest, but not the case under test.
fn measured_without_interference(
    mut measure: impl FnMut() -> Result<Value, Failed>,
) -> Result<Value, Failed> {
    let mut j = measure()?;
    for _ in 0..2 {
        if j["limits"]["interference"] != true {
            break;
        }
        j = measure()?;
    }
    Ok(j)
}

fn a_slow_server_is_the_limit() -> Result<(), Failed> {
    let slow = Misbehave::start(Fault::SlowReads { ms: 2 });
    let out = Outputs::new("slow")?;
    let pid = std::process::id().to_string();
    let j = measured_without_interference(|| {
        let (code, err) = load(
            &slow.addr.to_string(),
            &["-c", "4", "-d", "1s", "--server-pid", &pid],
            &out,
        )?;
        ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
        out.json()
    })?;
    let l = &j["limits"];
    ensure(l["verdict"] == "server", || format!("limits {l}"))?;
    ensure(
        l["server_cpus"].is_number() && l["client_demand"].as_f64() < Some(0.9),
        || format!("limits {l}"),
    )?;
    // Every connection was served, each at the server's pace.
    let f = &j["fairness"];
    ensure(f["connections"] == 4 && f["min"].as_u64() > Some(0), || {
        format!("fairness {f}")
    })?;
    Ok(())
}

/// A client pinned to one CPU, with far more to do per byte than its
/// server, is the limit and says so. With 1-byte messages, 65,536 in
/// flight on each of 16 connections, every 64 KiB the server echoes with
/// one read and one write is 65,536 checks, records and refills for the
/// client, so the client always has echoes waiting and runs flat out (a
/// million messages in flight are tens of ms of its work: enough to ride
/// out the server waiting for its CPU while other tests run), while the
/// server (on another CPU when there is one) mostly sleeps.
fn a_saturated_client_is_the_limit() -> Result<(), Failed> {
    let cpus = c10k::sys::affinity::current_cpus();
    let client_cpu = *cpus.last().ok_or("no CPU to run on")?;
    let server_cpu = cpus[0];
    let server = match Server::start(&[
        "--model".into(),
        "epoll".into(),
        "--cpus".into(),
        server_cpu.to_string(),
    ])? {
        Started::Running(s) => s,
        Started::Unsupported(r) => return Err(r.into()),
    };
    let out = Outputs::new("saturated")?;
    let j = measured_without_interference(|| {
        let (code, err) = load(
            &server.addr.to_string(),
            &[
                "-c",
                "16",
                "--depth",
                "65536",
                "-m",
                "1",
                "-d",
                "1s",
                "--cpus",
                &client_cpu.to_string(),
                "--server-pid",
                &server.pid().to_string(),
            ],
            &out,
        )?;
        ensure(code == Some(0), || format!("exit {code:?}: {err}"))?;
        out.json()
    })?;
    let l = &j["limits"];
    ensure(l["verdict"] == "client", || format!("limits {l}"))?;
    ensure(
        l["client_demand"].as_f64() >= Some(0.9) && l["server_demand"].as_f64() < Some(0.9),
        || format!("limits {l}"),
    )?;
    ensure(j["connections"]["failed"] == 0, || {
        format!("failed: {}", j["errors"])
    })?;
    server.stop()?;
    Ok(())
}
