//! A server that cannot have what it was asked for says so before READY
//! (issue 58.2): a worker count past the open-files limit (epoll-workers'
//! listeners and epoll instances, uring's rings, some of which start
//! before one fails), and past the address-space limit (hybrid's pool,
//! epoll-workers' loops, tokio's runtime, which would panic and then hang).
//! Each case asserts what the user sees: no READY on stdout, exit 1, one
//! line on stderr naming the count and the cause, no panic; every wait is
//! bounded by [`PATIENCE`], so a server that hangs fails the case.

use std::process::{Command, Stdio};

use libtest_mimic::{Completion, Failed};

use crate::support::{bin, run_c10k, wait_bounded, Pipes, Ran};

tests![
    epoll_workers_past_the_open_files_limit_print_no_ready,
    uring_rings_past_the_open_files_limit_print_no_ready,
    pools_past_the_address_space_limit_print_no_ready,
    tokio_past_the_address_space_limit_exits_without_a_panic,
];

/// Asserts that `r`, a `c10k serve` that could not start, printed no
/// READY (nothing on stdout), exited 1 without a panic and said one line
/// on stderr with every one of `words`.
fn failed_to_start(what: &str, r: &Ran, words: &[&str]) -> Result<(), Failed> {
    let lines: Vec<&str> = r.stderr.lines().collect();
    if r.code != Some(1)
        || !r.stdout.is_empty()
        || r.panicked()
        || lines.len() != 1
        || !words.iter().all(|w| lines[0].contains(w))
    {
        return Err(format!(
            "{what}: expected no READY, exit 1 and one line with {words:?}; \
             got exit {:?}, stdout {:?}, stderr {:?}",
            r.code, r.stdout, r.stderr
        )
        .into());
    }
    Ok(())
}

/// Runs `c10k ARGS…` under `prlimit --as=BYTES` (util-linux), bounded;
/// `None` when prlimit is not installed.
fn under_address_space(bytes: u64, args: &[&str]) -> Result<Option<Ran>, Failed> {
    let mut child = match Command::new("prlimit")
        .arg(format!("--as={bytes}"))
        .arg(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot start prlimit: {e}").into()),
    };
    let pipes = Pipes::take(&mut child)?;
    let status = wait_bounded(&mut child).map_err(|e| format!("c10k {}: {e}", args.join(" ")))?;
    let (stdout, stderr) = pipes.read();
    Ok(Some(Ran {
        code: status.code(),
        stdout,
        stderr,
    }))
}

/// A listener and an epoll instance per loop: 1,000 loops (within the
/// knob's 1–1,024) cannot have them under 64 descriptors, with either way
/// of sharing the listener.
fn epoll_workers_past_the_open_files_limit_print_no_ready() -> Result<(), Failed> {
    let serve = [
        "serve",
        "-m",
        "epoll-workers",
        "--workers",
        "1000",
        "--nofile",
        "64",
    ];
    failed_to_start(
        "reuseport",
        &run_c10k(&serve)?,
        &[
            "c10k serve: cannot open a listener for each of 1000 loops",
            "Too many open files",
        ],
    )?;
    let acceptor = [&serve[..], &["--accept", "acceptor"]].concat();
    failed_to_start(
        "acceptor",
        &run_c10k(&acceptor)?,
        &[
            "c10k serve: cannot set up 1000 epoll loops",
            "Too many open files",
        ],
    )
}

/// 39 more listeners fit under 64 descriptors, 40 rings (a descriptor each,
/// made by each ring's own thread) do not: some rings start, one fails,
/// and the started ones stop instead of serving.
fn uring_rings_past_the_open_files_limit_print_no_ready() -> Result<Completion, Failed> {
    let r = run_c10k(&["serve", "-m", "uring", "--workers", "40", "--nofile", "64"])?;
    if r.code == Some(3) {
        return Ok(Completion::ignored_with(r.stderr.trim().to_string()));
    }
    failed_to_start(
        "uring",
        &r,
        &["c10k serve: cannot start 40 rings", "Too many open files"],
    )?;
    Ok(Completion::Completed)
}

/// 1,000 threads' stacks (2 MiB each) do not fit in 1 GiB of address
/// space: hybrid's pool and epoll-workers' loops are refused before the
/// first thread starts.
fn pools_past_the_address_space_limit_print_no_ready() -> Result<Completion, Failed> {
    for (model, says) in [
        ("hybrid", "cannot start 1000 pool threads"),
        ("epoll-workers", "cannot start 1000 epoll loops"),
    ] {
        let args = ["serve", "-m", model, "--workers", "1000"];
        let Some(r) = under_address_space(1 << 30, &args)? else {
            return Ok(Completion::ignored_with(
                "prlimit (util-linux) is not installed",
            ));
        };
        failed_to_start(
            model,
            &r,
            &[says, "address-space limit (ulimit -v) of 1 GiB"],
        )?;
    }
    Ok(Completion::Completed)
}

/// tokio panics on a worker thread it cannot start and then hangs joining
/// the others: asked for 1,000 under 1 GiB it must be refused before the
/// runtime is built, and exit (the wait is bounded).
fn tokio_past_the_address_space_limit_exits_without_a_panic() -> Result<Completion, Failed> {
    let args = ["serve", "-m", "tokio", "--workers", "1000"];
    let Some(r) = under_address_space(1 << 30, &args)? else {
        return Ok(Completion::ignored_with(
            "prlimit (util-linux) is not installed",
        ));
    };
    failed_to_start(
        "tokio",
        &r,
        &[
            "c10k serve: cannot start 1000 runtime worker threads",
            "address-space limit",
        ],
    )?;
    Ok(Completion::Completed)
}
