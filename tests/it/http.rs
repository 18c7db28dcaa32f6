//! HTTP/1.1 on every model (`c10k serve --protocol http`), with `curl` as
//! the real client: several requests on one kept connection, a POST with
//! a body, a HEAD, and `Connection: close`; the server's own count of the
//! requests it answered agrees. The wire's corner cases (pipelining, a
//! head split byte by byte, 400, 431) are the conformance suite's, run on
//! every model over HTTP in `conformance`.

use std::path::PathBuf;
use std::process::Command;

use c10k::server::MODELS;
use libtest_mimic::Failed;

use crate::support::{ensure, expect_eq, installed, on_path, Server, Started};

tests![curl_is_answered_by_every_model];

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
