//! The conformance suite for any TCP echo server or HTTP/1.1 server
//! (`--protocol http`): `c10k conform`, and the integration tests that
//! hold every c10k model to it (one suite, two front ends). Each check is
//! of one protocol or of both ([`Check::speaks`]): the checks of the
//! server's process and of many connections at once are asked in the
//! subject's protocol, the checks of the wire are the protocol's own. A check starts its own server (a fresh one, so what one
//! check leaves cannot fail the next), drives it over real sockets, and
//! says PASS with its evidence (bytes, counts, CPU seconds), FAIL with what
//! went wrong, or SKIP with why it could not run.
//!
//! The subject is a c10k model (`c10k serve --model M`), a foreign server
//! c10k starts (`--server`, `--peer`), or a bare address. A check that
//! reads the server's process (memory, CPU, its open-files limit, a
//! signal) runs only when c10k started it; a check of a c10k-only flag
//! (`--max-conns`) runs only on a model; a c10k model's own summary line is
//! checked against what its clients saw.
//!
//! Each check runs on a thread of its own under a watch ([`watch`]): once
//! its server is ready it has the suite's patience to finish, and SIGINT or
//! SIGTERM to `c10k conform` cuts it at once; either way its server is
//! killed, and an interrupted suite keeps the rows it has.
//!
//! Cost: about ten seconds for a conforming server, most of it in the
//! quiet windows that show a server is not spinning; every check is bounded
//! by the suite's patience after its server is ready (and its start by the
//! same patience), so a broken server costs at most that per check.

mod http;
mod process;
pub mod subject;
mod traffic;
mod watch;
mod wire;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::protocol::Protocol;
use subject::Checking;
pub use subject::Subject;
use watch::Watched;

/// How long any one wait of a check may take before the check fails,
/// unless the suite is told otherwise.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Skip,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        }
    }
}

/// One check's result: its verdict and the evidence for it.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub check: &'static str,
    pub about: &'static str,
    pub verdict: Verdict,
    /// What was measured (PASS), what went wrong (FAIL) or why it could not
    /// run (SKIP).
    pub evidence: String,
    pub seconds: f64,
}

/// A conformance check.
pub struct Check {
    /// Its name, as `--check` takes it and tests are named.
    pub name: &'static str,
    /// What it holds the server to, one line.
    pub about: &'static str,
    run: fn(&Checking) -> Checked,
    /// The protocols it checks.
    pub speaks: &'static [Protocol],
}

const ECHO: &[Protocol] = &[Protocol::Echo];
const HTTP: &[Protocol] = &[Protocol::Http];
const BOTH: &[Protocol] = &[Protocol::Echo, Protocol::Http];

/// Every check, in the order they run.
pub const CHECKS: &[Check] = &[
    Check {
        name: "echo_sizes_in_fragments",
        about: "1 B to 1 MiB in random fragments on 16 connections come back equal",
        run: traffic::echo_sizes_in_fragments,
        speaks: ECHO,
    },
    Check {
        name: "past_fd_setsize",
        about: "1,100 connections open at once (past FD_SETSIZE), every one served",
        run: traffic::past_fd_setsize,
        speaks: BOTH,
    },
    Check {
        name: "half_close",
        about: "after the client's shutdown(SHUT_WR), every byte comes back, then EOF",
        run: traffic::half_close,
        speaks: ECHO,
    },
    Check {
        name: "reset_mid_message",
        about: "clients that reset mid-message do not disturb the others",
        run: traffic::reset_mid_message,
        speaks: ECHO,
    },
    Check {
        name: "silent_connections",
        about: "connections that send nothing (or half a message) block no one",
        run: traffic::silent_connections,
        speaks: ECHO,
    },
    Check {
        name: "slow_reader_bounded_memory",
        about: "a peer that never reads leaves the server's memory bounded",
        run: process::slow_reader_bounded_memory,
        speaks: ECHO,
    },
    Check {
        name: "emfile",
        about: "out of descriptors (limit 64): no busy loop, served again once others leave",
        run: process::emfile,
        speaks: ECHO,
    },
    Check {
        name: "idle_no_busy_loop",
        about: "with connections open and no traffic, the server does not spin",
        run: process::idle_no_busy_loop,
        speaks: BOTH,
    },
    Check {
        name: "sigterm",
        about: "SIGTERM ends it cleanly, no process of its tree left",
        run: process::sigterm,
        speaks: BOTH,
    },
    Check {
        name: "max_conns_refuses_the_rest",
        about: "c10k's --max-conns 3: the rest are closed at once and counted",
        run: process::max_conns_refuses_the_rest,
        speaks: ECHO,
    },
    Check {
        name: "keep_alive",
        about: "4 connections × 50 requests one after another, each answered 2xx, none closed",
        run: http::keep_alive,
        speaks: HTTP,
    },
    Check {
        name: "pipelined_in_order",
        about: "32 GETs and HEADs in one write, then 2,000 more, answered in order",
        run: http::pipelined_in_order,
        speaks: HTTP,
    },
    Check {
        name: "split_byte_by_byte",
        about: "a GET and a POST written one byte per segment are answered",
        run: http::split_byte_by_byte,
        speaks: HTTP,
    },
    Check {
        name: "connection_close",
        about: "Connection: close gets its response, then EOF",
        run: http::connection_close,
        speaks: HTTP,
    },
    Check {
        name: "http10",
        about: "HTTP/1.0 is answered then closed; with Connection: keep-alive, kept",
        run: http::http10,
        speaks: HTTP,
    },
    Check {
        name: "bad_request_400",
        about: "a request line that does not parse gets 400 and a close; others are served",
        run: http::bad_request_400,
        speaks: HTTP,
    },
    Check {
        name: "header_too_large_431",
        about: "a header section past the server's limit gets 431 (or nginx's 400) and a close",
        run: http::header_too_large_431,
        speaks: HTTP,
    },
    Check {
        name: "unfinished_request",
        about: "half-sent heads and bodies hold only their own connections; then each is answered",
        run: http::unfinished_request,
        speaks: HTTP,
    },
];

/// The checks of `protocol`, in the order they run.
pub fn checks(protocol: Protocol) -> Vec<&'static Check> {
    CHECKS
        .iter()
        .filter(|c| c.speaks.contains(&protocol))
        .collect()
}

/// The check named `name`.
pub fn find(name: &str) -> Option<&'static Check> {
    CHECKS.iter().find(|c| c.name == name)
}

/// Why a check stopped before passing.
#[derive(Debug)]
pub(crate) enum Stop {
    Fail(String),
    Skip(String),
}

/// What a check returns: the evidence of a pass, or why it stopped.
pub(crate) type Checked = Result<String, Stop>;

impl From<String> for Stop {
    fn from(s: String) -> Stop {
        Stop::Fail(s)
    }
}

impl From<&str> for Stop {
    fn from(s: &str) -> Stop {
        Stop::Fail(s.to_string())
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Stop {
        Stop::Fail(e.to_string())
    }
}

impl From<rustix::io::Errno> for Stop {
    fn from(e: rustix::io::Errno) -> Stop {
        Stop::Fail(std::io::Error::from(e).to_string())
    }
}

/// Fails with `msg` unless `cond`.
pub(crate) fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<(), Stop> {
    if cond {
        Ok(())
    } else {
        Err(Stop::Fail(msg()))
    }
}

/// A subject and how to check it.
#[derive(Debug, Clone)]
pub struct Suite {
    pub subject: Subject,
    /// The `c10k` binary that serves a model (`None`: this program).
    pub program: Option<PathBuf>,
    /// How long any one wait may take before the check fails.
    pub patience: Duration,
    /// Bytes of one request the subject works on before echoing it (`c10k
    /// serve --work` with its `--message-size`); 1 for a plain echo. Every
    /// message whose echo a check waits for is padded to whole requests,
    /// since a request's bytes come back only once it is whole.
    pub request: usize,
    /// What the subject speaks; a model is started with it.
    pub protocol: Protocol,
}

impl Suite {
    pub fn new(subject: Subject) -> Suite {
        Suite {
            subject,
            program: None,
            patience: PATIENCE,
            request: 1,
            protocol: Protocol::Echo,
        }
    }

    /// The subject in words, with its protocol when not echo.
    pub fn describe(&self) -> String {
        match self.protocol {
            Protocol::Echo => self.subject.describe(),
            Protocol::Http => format!("{}, over HTTP/1.1", self.subject.describe()),
        }
    }

    /// `n` bytes rounded up to whole requests.
    pub(crate) fn whole(&self, n: usize) -> usize {
        n.div_ceil(self.request.max(1)) * self.request.max(1)
    }

    /// `bytes` padded with dots to whole requests.
    pub(crate) fn message(&self, bytes: &[u8]) -> Vec<u8> {
        let mut m = bytes.to_vec();
        m.resize(self.whole(bytes.len()), b'.');
        m
    }

    /// Runs one check, cut if it is not done within the patience of its
    /// server being ready.
    pub fn run(&self, check: &Check) -> Row {
        match self.run_watched(check, None) {
            Some(row) => row,
            // Without an interrupt flag nothing interrupts it.
            None => unreachable!("a check without an interrupt flag was interrupted"),
        }
    }

    /// [`Suite::run`], also cut when `interrupt` is set: `None` then.
    fn run_watched(&self, check: &Check, interrupt: Option<&AtomicBool>) -> Option<Row> {
        let started = Instant::now();
        let suite = self.clone();
        let run = check.run;
        let watched = watch::run(
            move |watch| run(&Checking::new(suite, watch)),
            self.patience,
            interrupt,
        );
        let checked = match watched {
            Watched::Done(c) => c,
            Watched::Interrupted => return None,
            Watched::Late(said) => {
                let then = match said {
                    Some(Err(Stop::Fail(e))) => format!("; the check had got to: {e}"),
                    _ => String::new(),
                };
                Err(Stop::Fail(format!(
                    "not done within --patience ({}) of its server being ready: the server was killed{then}",
                    humantime(self.patience)
                )))
            }
        };
        let (verdict, evidence) = match checked {
            Ok(e) => (Verdict::Pass, e),
            Err(Stop::Fail(e)) => (Verdict::Fail, e),
            Err(Stop::Skip(e)) => (Verdict::Skip, e),
        };
        Some(Row {
            check: check.name,
            about: check.about,
            verdict,
            evidence,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// `d` as `30 s` or `0.5 s`.
fn humantime(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// The suite's results, as `--json` writes them.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The version of this JSON's shape.
    pub schema_version: u32,
    /// What was checked, in words.
    pub subject: String,
    /// What it was checked as speaking.
    pub protocol: Protocol,
    pub checks: Vec<Row>,
    /// SIGINT or SIGTERM cut the suite: `checks` are those done before;
    /// the one in progress is not among them.
    pub interrupted: bool,
}

impl Suite {
    /// Runs `checks` in order, handing each row to `each` as it is done
    /// (so a table can be printed as the suite goes). The first SIGINT or
    /// SIGTERM to this process ends the suite (handlers are installed
    /// here): the check in progress is cut, its server killed, and the
    /// report holds the rows done before, marked interrupted.
    pub fn run_all(&self, checks: &[&Check], mut each: impl FnMut(&Row)) -> Report {
        let mut report = Report {
            schema_version: 1,
            subject: self.describe(),
            protocol: self.protocol,
            checks: Vec::new(),
            interrupted: false,
        };
        // Without handlers a signal ends the process as it always did.
        let interrupt = crate::sys::signals::interrupt_flag().ok();
        for check in checks {
            match self.run_watched(check, interrupt.as_deref()) {
                Some(row) => {
                    each(&row);
                    report.checks.push(row);
                }
                None => {
                    report.interrupted = true;
                    break;
                }
            }
        }
        report
    }
}

impl Report {
    /// How many checks had `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.checks.iter().filter(|r| r.verdict == verdict).count()
    }

    /// Whether no check failed.
    pub fn passed(&self) -> bool {
        self.count(Verdict::Fail) == 0
    }

    /// The table's title.
    pub fn title(subject: &str) -> String {
        format!("c10k conform: {subject}\n")
    }

    /// One row of the table: verdict, check, time, evidence.
    pub fn line(r: &Row) -> String {
        let width = CHECKS.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let indent = " ".repeat(width + 20);
        format!(
            "  {}  {:width$}  {:>6.1} s  {}",
            r.verdict.label(),
            r.check,
            r.seconds,
            r.evidence.replace('\n', &format!("\n{indent}")),
        )
    }

    /// The totals under the table.
    pub fn totals(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped{}",
            self.count(Verdict::Pass),
            self.count(Verdict::Fail),
            self.count(Verdict::Skip),
            if self.interrupted {
                " (interrupted: the rest not checked)"
            } else {
                ""
            }
        )
    }

    /// The whole table.
    pub fn table(&self) -> String {
        let mut out = Report::title(&self.subject) + "\n";
        for r in &self.checks {
            out += &Report::line(r);
            out.push('\n');
        }
        out + "\n" + &self.totals() + "\n"
    }
}
