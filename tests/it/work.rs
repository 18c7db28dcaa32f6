//! `c10k serve --work` on real sockets, with counts physics bounds (never a
//! speed threshold): a loop that blocks 5 ms per request completes at most
//! one request per 5 ms of its window; a thread per connection with the
//! same load overlaps its calls; `cpu:` work is spent on the server's CPU
//! clock, at least its duration per request; every model does the work of
//! every request once and echoes every byte.

use c10k::server::MODELS;
use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{bin, load_json as load, Server, Started};

tests![
    a_loop_that_blocks_completes_at_most_one_request_per_call,
    cpu_work_is_spent_on_the_servers_cpu,
    every_model_does_each_requests_work_once_and_echoes_every_byte,
    a_message_size_past_the_buffer_is_refused_in_one_line,
];

/// Starts `c10k serve --model MODEL FLAGS…`; `None` when the model cannot
/// run here.
fn serve(model: &str, flags: &[&str]) -> Result<Option<Server>, Failed> {
    let mut args = vec!["--model".to_string(), model.to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    match Server::start(&args)? {
        Started::Running(s) => Ok(Some(s)),
        Started::Unsupported(_) => Ok(None),
    }
}

fn number(j: &Value, key: &str) -> Result<f64, Failed> {
    j[key]
        .as_f64()
        .ok_or_else(|| format!("no {key} in the load's JSON: {j}").into())
}

/// epoll makes its 5 ms blocking calls one after another: over a 1 s
/// window its 20 connections complete at most 1 s / 5 ms requests (plus
/// the one under way when the window opened). threads, the same load,
/// overlaps them: it completes several times more.
fn a_loop_that_blocks_completes_at_most_one_request_per_call() -> Result<(), Failed> {
    let mut done = Vec::new();
    for model in ["epoll", "threads"] {
        let server = serve(model, &["--work", "block:5ms"])?
            .ok_or_else(|| format!("{model} cannot run here"))?;
        let j = load(
            &server,
            &format!("work-block-{model}"),
            &["-c", "20", "-d", "1s"],
        )?;
        let (_, summary) = server.stop()?;
        let (messages, window) = (number(&j, "messages")?, number(&j, "measured_seconds")?);
        if summary.requests < messages as u64 {
            return Err(format!(
                "{model}: the client counted {messages} round trips, the server {} requests",
                summary.requests
            )
            .into());
        }
        done.push((model, messages, window));
    }
    let (_, epoll, window) = done[0];
    let most = (window / 0.005).floor() + 1.0;
    if epoll > most {
        return Err(format!(
            "epoll with block:5ms completed {epoll} requests in {window} s: more than one per 5 ms ({most})"
        )
        .into());
    }
    let (_, threads, _) = done[1];
    if threads < 3.0 * epoll.max(1.0) {
        return Err(format!(
            "threads completed {threads} requests against epoll's {epoll}: its 20 threads did not overlap their blocking calls"
        )
        .into());
    }
    Ok(())
}

/// epoll with `cpu:200us`: its thread's time on a CPU (schedstat, in
/// nanoseconds) is at least 200 µs per request it did.
fn cpu_work_is_spent_on_the_servers_cpu() -> Result<(), Failed> {
    let server = serve("epoll", &["--work", "cpu:200us"])?.ok_or("epoll cannot run here")?;
    let j = load(&server, "work-cpu", &["-c", "4", "-n", "250"])?;
    let stat = std::fs::read_to_string(format!("/proc/{}/schedstat", server.pid()))?;
    let on_cpu: u64 = stat
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("unreadable schedstat: {stat:?}"))?;
    let (_, summary) = server.stop()?;
    if j["messages"] != 1000 || summary.requests != 1000 {
        return Err(format!(
            "1,000 round trips expected: the client counted {}, the server {} requests",
            j["messages"], summary.requests
        )
        .into());
    }
    let least = summary.requests * 200_000;
    if on_cpu < least {
        return Err(format!(
            "the server spent {on_cpu} ns on a CPU for {} requests of cpu:200us ({least} ns at least)",
            summary.requests
        )
        .into());
    }
    Ok(())
}

/// Every model with `cpu:` and `wait:` work on requests of 100 bytes sent
/// 300 at a time (three requests a message, split and coalesced as the
/// kernel pleases): one request done per 100 bytes, every byte back, and
/// the summary names the work and the model's handlers.
fn every_model_does_each_requests_work_once_and_echoes_every_byte() -> Result<(), Failed> {
    const CONNS: u64 = 10;
    const MESSAGES: u64 = 20;
    let mut ran = 0;
    for model in MODELS {
        let name = model.name();
        let flags = [
            "--work",
            "cpu:5us+wait:100us",
            "--message-size",
            "100",
            "--workers",
            "2",
        ];
        let Some(server) = serve(name, &flags)? else {
            continue;
        };
        ran += 1;
        let (c, n) = (CONNS.to_string(), MESSAGES.to_string());
        let j = load(
            &server,
            &format!("work-{name}"),
            &["-c", &c, "-n", &n, "-m", "300", "--depth", "2"],
        )?;
        let (_, summary) = server.stop()?;
        let sent = CONNS * MESSAGES * 300;
        let work = summary.work.as_ref().ok_or("no work in the summary")?;
        if j["bytes_received"] != sent
            || summary.bytes_echoed != sent
            || summary.requests != sent / 100
            || work.spec != "cpu:5us+wait:100us"
            || work.request_bytes != 100
        {
            return Err(format!(
                "{name}: the client got {} of {sent} bytes; the server echoed {} and did {} requests of {} (work {work:?})",
                j["bytes_received"],
                summary.bytes_echoed,
                summary.requests,
                sent / 100
            )
            .into());
        }
        let per_connection = model.task_per_connection();
        if work.capacity.handlers.is_none() != per_connection {
            return Err(format!("{name}: its handlers are {:?}", work.capacity.handlers).into());
        }
    }
    if ran < 10 {
        return Err(format!("only {ran} models could run").into());
    }
    Ok(())
}

fn a_message_size_past_the_buffer_is_refused_in_one_line() -> Result<(), Failed> {
    let o = std::process::Command::new(bin())
        .args([
            "serve",
            "--work",
            "block:1ms",
            "--buffer",
            "4KiB",
            "--message-size",
            "8192",
        ])
        .output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(2) || err.trim().lines().count() != 1 || !err.contains("--buffer") {
        return Err(format!("exit {:?}, stderr {err:?}", o.status.code()).into());
    }
    for bad in ["disk:1ms", "block:0s", "cpu"] {
        let o = std::process::Command::new(bin())
            .args(["serve", "--work", bad])
            .output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || !err.contains("--work") {
            return Err(format!("--work {bad}: exit {:?}, stderr {err:?}", o.status.code()).into());
        }
    }
    for (args, says) in [
        (
            &["--model", "epoll", "--global-queue-interval", "1"][..],
            "it is tokio's",
        ),
        (
            &["--model", "tokio", "--global-queue-interval", "0"][..],
            "--global-queue-interval 0",
        ),
    ] {
        let o = std::process::Command::new(bin())
            .arg("serve")
            .args(args)
            .output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || !err.contains(says) || err.trim().lines().count() != 1 {
            return Err(format!("serve {args:?}: exit {:?}, {err:?}", o.status.code()).into());
        }
    }
    let o = std::process::Command::new(bin())
        .args(["serve", "--model", "epoll", "--block-inline"])
        .output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(2) || !err.contains("tokio") {
        return Err(format!(
            "--block-inline on epoll: exit {:?}, {err:?}",
            o.status.code()
        )
        .into());
    }
    Ok(())
}
