//! The agent protocol: how a controller (`c10k load`, `c10k run`) and its
//! load agents (`c10k agent`, local worker processes or programs on other
//! hosts started through a launcher) talk over the agent's stdin and
//! stdout. One message a line, as JSON behind the tag [`TAG`]: any other
//! line (a login banner, a shell's noise, in any encoding: lines are
//! bytes, [`Msg::parse_bytes`]) is not a message and is ignored; the
//! agent's stderr is its log.
//!
//! The conversation, in order:
//!
//! 1. agent: `hello` (protocol and program versions, its environment:
//!    open-files limits, port range, sysctls, CPUs, kernel, host);
//! 2. controller: `plan` (the agent's share as `c10k load` arguments, its
//!    index and the agent count, so connection ids interleave as in one
//!    process);
//! 3. agent: `connected` once its connections are up;
//! 4. controller: `ping`, agent: `pong` (its round trip, measured);
//! 5. controller: `go` with a delay, counted on the agent's own clock, so
//!    that every agent starts together without synchronised clocks; agent:
//!    `started` as it starts (the controller measures the start skew);
//! 6. agent: `result` (its [`Measured`], histograms as HdrHistogram V2,
//!    and its namespace's TCP counters), or `error` at any point; a
//!    controller that is interrupted (SIGINT, SIGTERM) says `stop` first,
//!    and the agent ends its measurement and reports what it has.
//!
//! A resident plan (`c10k run`'s slots) repeats step 5 window after
//! window over the same connections: after each, the agent says `window`
//! (what that window measured) and waits for the next `go`, or `end`, on
//! which it closes its connections and says `result` as in step 6.
//!
//! From `plan` to `result` the agent also says `progress` every second,
//! with its running totals ([`Tick`]): the controller's live view, and how
//! it tells a live agent from a lost one.
//!
//! Cost: a few lines per agent per run, and one JSON result.

use serde::{Deserialize, Serialize};

use super::live::Tick;
use super::measured::Measured;
use crate::env::{Environment, TcpCounters};

/// What starts every message line: the protocol's name and major version.
pub const TAG: &str = "C10K1 ";

/// The protocol's major version: agents of another are refused.
pub const PROTOCOL: u32 = 1;

/// One message.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Msg {
    Hello(Box<Hello>),
    Plan(Plan),
    Connected {
        seconds: f64,
    },
    Ping {
        n: u32,
    },
    Pong {
        n: u32,
    },
    Go {
        delay_seconds: f64,
        /// Resident: what this window asks beyond the plan.
        #[serde(default, skip_serializing_if = "is_plain")]
        window: super::drive::Ask,
    },
    Started,
    /// Every second from `plan` to `result`: the agent's running totals
    /// (and that it is alive).
    Progress {
        seconds: f64,
        tick: Tick,
    },
    Result(Box<Finished>),
    /// Agent to controller, resident: one window measured; the
    /// connections stay up.
    Window(Box<Measured>),
    /// Controller to agent, resident, between windows: no more; close
    /// the connections and report.
    End,
    /// Controller to agent, after `go`: the run was interrupted; end the
    /// measurement now and report what it holds (an agent of an older
    /// version ignores it, and is stopped with its launcher).
    Stop,
    Error {
        message: String,
    },
}

/// An agent's result: what it measured, and its network namespace's TCP
/// counters before it connected and after it ended (absolute, so that a
/// controller takes each namespace's whole span once, however many
/// agents share it).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Finished {
    pub measured: Measured,
    pub tcp: Option<(TcpCounters, TcpCounters)>,
    /// The source addresses it spread its connections over (empty: the
    /// kernel's choice).
    pub sources: Vec<String>,
}

/// An agent introducing itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Hello {
    pub protocol: u32,
    pub environment: Environment,
}

/// An agent's share of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Plan {
    /// Its `c10k load` arguments (without the program name).
    pub args: Vec<String>,
    /// It is agent `agent` of `agents`.
    pub agent: usize,
    pub agents: usize,
    /// Window after window over the same connections (see
    /// [`super::plan::LoadPlan::resident`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resident: bool,
}

fn is_plain(a: &super::drive::Ask) -> bool {
    *a == super::drive::Ask::default()
}

impl Msg {
    /// The message as one line, tagged, without the newline.
    pub fn line(&self) -> String {
        // A message is plain data: serialising it cannot fail.
        format!(
            "{TAG}{}",
            serde_json::to_string(self).unwrap_or_else(|_| "null".into())
        )
    }

    /// The message a line of bytes carries, as [`Msg::parse`]: untagged
    /// lines are noise whatever their encoding (a Latin-1 login banner);
    /// a tagged line must be UTF-8.
    pub fn parse_bytes(line: &[u8]) -> Option<Result<Msg, String>> {
        let tag = TAG.as_bytes();
        match line.windows(tag.len()).position(|w| w == tag) {
            Some(at) => match std::str::from_utf8(&line[at..]) {
                Ok(text) => Msg::parse(text),
                Err(_) => Some(Err("a message that is not UTF-8".into())),
            },
            // Noise, or another version's tag (said so by `parse`).
            None => Msg::parse(&String::from_utf8_lossy(line)),
        }
    }

    /// The message a line carries: `None` for a line that is not one (not
    /// tagged: noise), an error for a tagged line that does not parse.
    pub fn parse(line: &str) -> Option<Result<Msg, String>> {
        let line = line.trim_end_matches(['\r', '\n']);
        let body = match line.find(TAG) {
            Some(at) => &line[at + TAG.len()..],
            // Another major version of the protocol: say so, not "noise".
            None if line.starts_with("C10K")
                && line[4..].starts_with(|c: char| c.is_ascii_digit()) =>
            {
                let tag = line.split_whitespace().next().unwrap_or("");
                return Some(Err(format!(
                    "it speaks protocol {tag}, this c10k {}",
                    TAG.trim()
                )));
            }
            None => return None,
        };
        Some(serde_json::from_str(body).map_err(|e| format!("a message that does not parse ({e})")))
    }
}

impl Hello {
    /// This program's hello.
    pub fn here() -> Hello {
        Hello {
            protocol: PROTOCOL,
            environment: crate::env::capture(),
        }
    }

    /// Refuses an agent of another protocol, naming both versions.
    pub fn check(&self) -> Result<(), String> {
        if self.protocol == PROTOCOL {
            return Ok(());
        }
        Err(format!(
            "it speaks protocol {} (c10k {}); this c10k {} speaks protocol {PROTOCOL}",
            self.protocol,
            self.environment.c10k_version,
            env!("CARGO_PKG_VERSION")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_survives_a_line_and_noise_is_not_a_message() {
        let plan = Msg::Plan(Plan {
            args: vec!["load".into(), "127.0.0.1:7".into()],
            agent: 1,
            agents: 4,
            resident: false,
        });
        let line = plan.line();
        assert!(line.starts_with(TAG) && !line.contains('\n'));
        match Msg::parse(&line) {
            Some(Ok(Msg::Plan(p))) => assert_eq!((p.agent, p.agents, p.args.len()), (1, 4, 2)),
            other => panic!("{other:?}"),
        }
        // A login banner, a shell's prompt, an empty line: not messages.
        for noise in ["Welcome to host7!", "", "$ ", "C10K", "last login: C10K1"] {
            assert!(Msg::parse(noise).is_none(), "{noise:?}");
        }
        // Noise before the tag on the same line (a shell echo) is skipped.
        assert!(matches!(
            Msg::parse(&format!("motd {}", Msg::Started.line())),
            Some(Ok(Msg::Started))
        ));
        assert!(Msg::parse("C10K1 {broken").unwrap().is_err());
        // Lines are bytes: a Latin-1 banner is noise, a tagged line after
        // one is a message, a tagged line that is not UTF-8 is an error.
        assert!(Msg::parse_bytes(b"Willkommen auf \xfcberall\r\n").is_none());
        let mut line = b"\xe9t\xe9 ".to_vec();
        line.extend_from_slice(Msg::Stop.line().as_bytes());
        assert!(matches!(Msg::parse_bytes(&line), Some(Ok(Msg::Stop))));
        assert!(
            Msg::parse_bytes(b"C10K1 {\"error\":{\"message\":\"\xff\"}}")
                .unwrap()
                .is_err()
        );
        assert!(Msg::parse_bytes(b"C10K2 \xff").unwrap().is_err());
    }

    #[test]
    fn another_protocol_is_refused_naming_both_versions() {
        let mut hello = Hello::here();
        assert!(hello.check().is_ok());
        hello.protocol = 2;
        hello.environment.c10k_version = "9.0.0".into();
        let e = hello.check().unwrap_err();
        assert!(
            e.contains("protocol 2 (c10k 9.0.0)") && e.contains("speaks protocol 1"),
            "{e}"
        );
        let e = Msg::parse("C10K2 {\"started\":null}").unwrap().unwrap_err();
        assert!(e.contains("C10K2") && e.contains("C10K1"), "{e}");
    }
}
