//! HTTP/1.1 on every model (`c10k serve --protocol http`), with `curl` as
//! the real client: several requests on one kept connection, a POST with
//! a body, a HEAD, and `Connection: close`; the server's own count of the
//! requests it answered agrees. The wire's corner cases (pipelining, a
//! head split byte by byte, 400, 431) are the conformance suite's, run on
//! every model over HTTP in `conformance`.
//!
//! And `c10k load --protocol http` against real web servers: c10k's own
//! (counts exact, the server agreeing), nginx from the distribution as the
//! peer runs it, nginx set to close every connection after 50 requests
//! (each close a reconnect, no request lost) and to answer 404 (every
//! response an error, named), over agents, and against what is not a web
//! server.

use std::path::PathBuf;
use std::process::Command;

use c10k::server::MODELS;
use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{
    bin, ensure, expect_contains, expect_eq, installed, load_json, on_path, run_c10k, scratch,
    Server, Started,
};

tests![
    curl_is_answered_by_every_model,
    load_counts_every_response_and_the_server_agrees,
    nginx_is_driven_as_its_users_run_it,
    a_server_that_closes_is_reconnected_and_errors_are_named,
    what_is_not_a_web_server_is_said,
];

/// nginx, installed by `scripts/install-web.sh` when missing.
pub fn nginx() -> Result<PathBuf, Failed> {
    let find = || {
        on_path("nginx").or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()))
    };
    installed(find, "install-web.sh", "nginx")
}

/// nginx from the distribution as the web peer starts it
/// (`peers/nginx_http.sh`).
pub fn nginx_peer() -> Result<Server, Failed> {
    nginx()?;
    let port = c10k::child::foreign::free_port()?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/peers/nginx_http.sh");
    let argv = ["sh".to_string(), script.to_string(), port.to_string()];
    Ok(Server::foreign(&argv, port)?)
}

/// nginx with `server` (the inside of a `server` block, after its
/// `listen`) in a configuration of its own under `dir`.
fn nginx_with(dir: &std::path::Path, server: &str) -> Result<Server, Failed> {
    let nginx = nginx()?;
    let port = c10k::child::foreign::free_port()?;
    let d = dir.display();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log stderr warn;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log off; client_body_temp_path {d}/body;\n\
             server {{ listen 127.0.0.1:{port}; {server} }} }}\n"
        ),
    )?;
    let argv: Vec<String> = [
        nginx.display().to_string(),
        "-e".into(),
        "stderr".into(),
        "-p".into(),
        d.to_string(),
        "-c".into(),
        conf.display().to_string(),
    ]
    .into();
    Ok(Server::foreign(&argv, port)?)
}

fn http_server() -> Result<Server, Failed> {
    let args: Vec<String> = ["--model", "epoll", "--protocol", "http"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    match Server::start(&args)? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(r) => Err(r.into()),
    }
}

fn count(j: &Value, path: &str) -> Option<u64> {
    path.split('.')
        .try_fold(j, |v, k| v.get(k))
        .and_then(Value::as_u64)
}

/// Closed loop with `-n`, pipelined, and a POST: every response counted
/// once, each a 200, and the server answered exactly as many; the report
/// says its protocol.
fn load_counts_every_response_and_the_server_agrees() -> Result<(), Failed> {
    let server = http_server()?;
    let j = load_json(
        &server,
        "http-load-counts",
        &[
            "--protocol",
            "http",
            "-c",
            "10",
            "-n",
            "100",
            "--depth",
            "4",
            "-q",
        ],
    )?;
    expect_eq("protocol", Some("http"), j["protocol"].as_str())?;
    expect_eq("messages", Some(1000), count(&j, "messages"))?;
    expect_eq("200s", Some(1000), count(&j, "http.status.200"))?;
    expect_eq("HTTP errors", Some(0), count(&j, "http.errors"))?;
    expect_eq("reconnects", Some(0), count(&j, "http.reconnects"))?;
    expect_eq("GET's bytes", Some(0), count(&j, "message_bytes"))?;
    let request = count(&j, "http.request_bytes").unwrap_or(0);
    expect_eq("bytes sent", Some(1000 * request), count(&j, "bytes_sent"))?;
    let post = load_json(
        &server,
        "http-load-post",
        &[
            "--protocol",
            "http",
            "-c",
            "2",
            "-n",
            "10",
            "-m",
            "100",
            "-q",
        ],
    )?;
    expect_eq("POST messages", Some(20), count(&post, "messages"))?;
    expect_eq("POST body", Some(100), count(&post, "message_bytes"))?;
    let post_request = count(&post, "http.request_bytes").unwrap_or(0);
    ensure(post_request > request + 100, || {
        format!("a POST of 100 B is {post_request} B on the wire, a GET {request} B")
    })?;
    // Open loop: the rate is kept, each response a 200.
    let open = load_json(
        &server,
        "http-load-open",
        &[
            "--protocol",
            "http",
            "-c",
            "4",
            "-n",
            "50",
            "--rate",
            "2000",
            "-q",
        ],
    )?;
    expect_eq("open-loop 200s", Some(200), count(&open, "http.status.200"))?;
    let (_, summary) = server.stop()?;
    expect_eq("requests the server answered", 1220, summary.requests)?;
    expect_eq("requests it refused", 0, summary.errors.bad_request)?;
    Ok(())
}

/// nginx as the `nginx` web peer runs it (`peers/nginx_http.sh`): a timed
/// pipelined run, every response a 200, no reconnect (the peer raises
/// keepalive_requests), and the stop removes its temporary directory.
fn nginx_is_driven_as_its_users_run_it() -> Result<(), Failed> {
    let server = nginx_peer()?;
    let j = load_json(
        &server,
        "http-nginx-peer",
        &[
            "--protocol",
            "http",
            "-c",
            "20",
            "-d",
            "1s",
            "--depth",
            "8",
            "-q",
        ],
    )?;
    let messages = count(&j, "messages").unwrap_or(0);
    ensure(messages > 0, || {
        format!("no response measured: {}", j["warnings"])
    })?;
    expect_eq("200s", Some(messages), count(&j, "http.status.200"))?;
    expect_eq("HTTP errors", Some(0), count(&j, "http.errors"))?;
    expect_eq("reconnects", Some(0), count(&j, "http.reconnects"))?;
    expect_eq(
        "connections failed",
        Some(0),
        count(&j, "connections.failed"),
    )?;
    server.stop_foreign()?;
    Ok(())
}

/// nginx closing every connection after 50 requests: each close is a
/// reconnect, and the pipelined requests it cut off are sent again, so
/// `-n` is still exact. nginx answering 404: every response an error,
/// named with its count, and `--fail-on-error` says so (exit 4).
fn a_server_that_closes_is_reconnected_and_errors_are_named() -> Result<(), Failed> {
    let dir = scratch("http-nginx-closes")?;
    let server = nginx_with(
        &dir,
        "keepalive_requests 50; location / { return 200 \"Hello, World!\"; }",
    )?;
    let j = load_json(
        &server,
        "http-nginx-closes-load",
        &[
            "--protocol",
            "http",
            "-c",
            "4",
            "-n",
            "200",
            "--depth",
            "8",
            "-q",
        ],
    )?;
    expect_eq("messages", Some(800), count(&j, "messages"))?;
    expect_eq("200s", Some(800), count(&j, "http.status.200"))?;
    expect_eq(
        "connections failed",
        Some(0),
        count(&j, "connections.failed"),
    )?;
    let reconnects = count(&j, "http.reconnects").unwrap_or(0);
    ensure(reconnects >= 12, || {
        format!("200 requests per connection closed after every 50, {reconnects} reconnects")
    })?;
    server.stop_foreign()?;
    let dir404 = scratch("http-nginx-404")?;
    let server = nginx_with(&dir404, "location / { return 404; }")?;
    let j = load_json(
        &server,
        "http-nginx-404-load",
        &["--protocol", "http", "-c", "2", "-n", "10", "-q"],
    )?;
    expect_eq("404s", Some(20), count(&j, "http.status.404"))?;
    expect_eq("HTTP errors", Some(20), count(&j, "http.errors"))?;
    let warned = j["warnings"].to_string();
    expect_contains(
        "warnings",
        &warned,
        "20 of 20 measured responses were not 2xx (HTTP 404 ×20)",
    )?;
    let addr = server.addr.to_string();
    let ran = run_c10k(&[
        "load",
        &addr,
        "--protocol",
        "http",
        "-c",
        "1",
        "-n",
        "3",
        "--fail-on-error",
    ])?;
    expect_eq("--fail-on-error's exit", Some(4), ran.code)?;
    expect_contains("summary", &ran.stdout, "errors       HTTP 404 ×3")?;
    server.stop_foreign()?;
    Ok(())
}

/// An echo server driven over HTTP sends back the request, not a
/// response: no result, said as such (exit 5); over agents the protocol
/// travels with the plan; `--payload` is an echo's and is refused.
fn what_is_not_a_web_server_is_said() -> Result<(), Failed> {
    let echo = match Server::start(&["--model".to_string(), "epoll".to_string()])? {
        Started::Running(s) => s,
        Started::Unsupported(r) => return Err(r.into()),
    };
    let addr = echo.addr.to_string();
    let ran = run_c10k(&[
        "load",
        &addr,
        "--protocol",
        "http",
        "-c",
        "2",
        "-n",
        "1",
        "-q",
    ])?;
    expect_eq("exit", Some(5), ran.code)?;
    expect_contains("stderr", &ran.stderr, "not an HTTP/1.1 response")?;
    echo.stop()?;
    let ran = run_c10k(&["load", &addr, "--protocol", "http", "--payload", "x"])?;
    expect_eq("--payload's exit", Some(2), ran.code)?;
    expect_contains("stderr", &ran.stderr, "--payload is an echo message")?;
    let web = http_server()?;
    let j = load_json(
        &web,
        "http-agents",
        &[
            "--protocol",
            "http",
            "-c",
            "4",
            "-n",
            "10",
            "--agents",
            "2",
            "--agent",
            "{cmd}",
            "-q",
        ],
    )?;
    expect_eq("over agents: 200s", Some(40), count(&j, "http.status.200"))?;
    expect_eq(
        "over agents: processes",
        Some(2),
        count(&j, "client.processes"),
    )?;
    let (_, summary) = web.stop()?;
    expect_eq("requests the server answered", 40, summary.requests)?;
    let _ = bin();
    Ok(())
}

/// curl, installed by `scripts/install-web.sh` when missing.
pub fn curl() -> Result<PathBuf, Failed> {
    installed(|| on_path("curl"), "install-web.sh", "curl")
}

fn curl_is_answered_by_every_model() -> Result<(), Failed> {
    let curl = curl()?;
    let mut skipped = Vec::new();
    for m in MODELS {
        let args: Vec<String> = [
            "--model",
            m.name(),
            "--protocol",
            "http",
            "--response-size",
            "20",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        let server = match Server::start(&args)? {
            Started::Running(s) => s,
            Started::Unsupported(why) => {
                skipped.push(format!("{}: {why}", m.name()));
                continue;
            }
        };
        let url = format!("http://{}/", server.addr);
        // Three GETs, a POST and a HEAD in one curl: one connection, kept.
        let out = Command::new(&curl)
            .args([
                "-s",
                "--max-time",
                "30",
                "-w",
                "|%{http_code} %{num_connects}\n",
            ])
            .args([&url, &format!("{url}a"), &format!("{url}b")])
            .args([
                "--next",
                "-s",
                "--max-time",
                "30",
                "-w",
                "|%{http_code} %{num_connects}\n",
            ])
            .args(["--data-binary", &"x".repeat(5000), &url])
            .args([
                "--next",
                "-s",
                "--max-time",
                "30",
                "-I",
                "-w",
                "|%{http_code} %{num_connects}\n",
            ])
            .arg(&url)
            .output()
            .map_err(|e| format!("{}: {e}", curl.display()))?;
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        ensure(out.status.success(), || {
            format!(
                "{}: curl failed: {said} {}",
                m.name(),
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        let body = "Hello, World!Hello, ";
        let lines: Vec<&str> = said.lines().collect();
        expect_eq(
            format!("{}: what curl got", m.name()),
            vec![
                format!("{body}|200 1"),
                format!("{body}|200 0"),
                format!("{body}|200 0"),
                format!("{body}|200 0"),
            ],
            lines.get(..4).map(<[&str]>::to_vec).unwrap_or_default(),
        )?;
        ensure(
            said.contains("Content-Length: 20\r")
                && said.contains("Server: c10k\r")
                && said.contains("Date: "),
            || format!("{}: the HEAD's head lacks a header: {said}", m.name()),
        )?;
        expect_eq(
            format!("{}: HEAD", m.name()),
            Some("|200 0"),
            lines.last().copied(),
        )?;
        // Connection: close: the server ends the connection after it.
        let out = Command::new(&curl)
            .args(["-sv", "--max-time", "30", "-H", "Connection: close", &url])
            .output()
            .map_err(|e| format!("{}: {e}", curl.display()))?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure(
            out.status.success() && err.contains("Closing connection"),
            || format!("{}: the close was not honoured: {err}", m.name()),
        )?;
        let (_, summary) = server.stop()?;
        expect_eq(
            format!("{}: requests the server answered", m.name()),
            6,
            summary.requests,
        )?;
        expect_eq(
            format!("{}: refused", m.name()),
            0,
            summary.errors.bad_request,
        )?;
    }
    ensure(skipped.len() < MODELS.len(), || {
        format!("no model ran: {skipped:?}")
    })?;
    Ok(())
}
