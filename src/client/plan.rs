//! What one `c10k load` run does: the [`LoadPlan`], its bounds, and its
//! one spelling as `c10k load` arguments ([`LoadPlan::to_args`]).
//!
//! Every plan passes [`LoadPlan::validate`], whoever made it: the flags of
//! `c10k load` (through [`crate::plan`]), a cell of `c10k run`, or the
//! controller of a run over agents handing each its share. The runner and
//! the agents' plans spell a plan with [`LoadPlan::to_args`], and the flags
//! read those arguments back into the same plan.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::protocol::Protocol;

/// Connects in progress per thread at most: enough to keep a fast server
/// busy, few enough not to overflow a default backlog.
pub(crate) const PENDING_CONNECTS: usize = 256;

/// The largest message, in bytes.
pub(crate) const MAX_MESSAGE: usize = 64 << 20;
/// The most messages in flight per connection.
pub(crate) const MAX_DEPTH: usize = 65_536;
/// The most burst rounds.
pub(crate) const MAX_ROUNDS: usize = 1_000_000;
/// The most connections (active or idle) one run may ask for.
pub(crate) const MAX_CONNECTIONS: usize = 10_000_000;
/// The most event-loop threads.
pub(crate) const MAX_THREADS: usize = 1024;
/// The highest rate of messages or connects, per second.
pub(crate) const MAX_RATE: f64 = 1e9;

/// How long a run measures when neither a duration nor a number of
/// messages is given (`c10k load` without `-d` or `-n`).
pub(crate) const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// How long a connect or an echo may take before it is a timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest duration any flag (or plan.json) may give, in seconds: a
/// year (kept with the parser of durations, below every engine).
pub(crate) use crate::present::units::MAX_SECONDS;

/// The least rate any flag accepts: one event per 1,000 s. Below it a
/// pacing interval is no longer a duration a run could wait out.
pub(crate) const MIN_RATE: f64 = 1e-3;

/// Checks a rate (events per second) given as `flag`: a finite number from
/// [`MIN_RATE`] to `max`, so every interval derived from it is a valid
/// duration and every count derived from it fits.
pub fn per_second(flag: &str, r: f64, max: f64) -> Result<f64, String> {
    if r.is_finite() && (MIN_RATE..=max).contains(&r) {
        Ok(r)
    } else {
        // 1e-300 printed in full is 300 digits: extremes in e-notation.
        let shown = if r.is_finite() && (1e-3..1e12).contains(&r.abs()) {
            r.to_string()
        } else {
            format!("{r:e}")
        };
        Err(format!(
            "{flag} {shown}: must be from {MIN_RATE} (one per 1,000 s) to {max:e} per second"
        ))
    }
}

/// What the load generator does with its connections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// Closed loop: `depth` messages in flight per connection.
    Closed { depth: usize },
    /// Open loop: `rate` messages per second in total, at most `depth` in
    /// flight per connection (later ones wait, keeping their due time).
    Open { rate: f64, depth: usize },
    /// Connect all, then send one message on each and time every echo back.
    Burst { rounds: usize },
    /// Open, optionally echo one message, close; repeat.
    Churn { echo: bool },
}

impl Workload {
    /// Which of the four it is, without its settings.
    pub fn kind(&self) -> LoadKind {
        match self {
            Workload::Closed { .. } => LoadKind::Closed,
            Workload::Open { .. } => LoadKind::Open,
            Workload::Burst { .. } => LoadKind::Burst,
            Workload::Churn { .. } => LoadKind::Churn,
        }
    }
}

/// A [`Workload`] without its settings: what a load report's `workload`
/// names, by the word its JSON and its readers use (`closed`, `open`,
/// `burst` or `churn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    Closed,
    Open,
    Burst,
    Churn,
}

impl LoadKind {
    /// The word for it, as in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Closed => "closed",
            LoadKind::Open => "open",
            LoadKind::Burst => "burst",
            LoadKind::Churn => "churn",
        }
    }
}

impl std::fmt::Display for LoadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// When an open loop's messages fall due on each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Every 1/rate, the connections' phases staggered evenly: the whole
    /// run's sends are evenly spaced (wrk2's schedule).
    #[default]
    Uniform,
    /// Exponential gaps of the same mean, drawn per connection: together a
    /// Poisson stream, the arrivals a queueing model assumes.
    Poisson,
}

impl Arrivals {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Poisson => "poisson",
        }
    }

    /// Whether this is the default (left out of a plan's JSON and args).
    pub fn is_uniform(&self) -> bool {
        *self == Arrivals::Uniform
    }
}

/// When a measured run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many messages per connection.
    Messages(u64),
    /// After this long.
    Duration(Duration),
}

/// A validated `c10k load`. A run over agents hands each agent its share
/// as the arguments [`LoadPlan::to_args`] spells.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    pub target: SocketAddr,
    /// What the connections speak: echo, or HTTP/1.1 requests.
    pub protocol: Protocol,
    pub connections: usize,
    pub idle: usize,
    pub threads: usize,
    pub workload: Workload,
    pub stop: Stop,
    pub warmup: Duration,
    /// Bytes of each message; `payload` when the user gave the text. Over
    /// HTTP, the bytes of each request's body: 0 is a `GET`, more a `POST`.
    pub message_size: usize,
    pub payload: Option<Vec<u8>>,
    pub connect_rate: Option<f64>,
    /// Open loop: the least time between two passes of an event loop
    /// (zero: a pass per event or due send).
    pub interval: Duration,
    /// Open loop: when each connection's messages fall due.
    pub arrivals: Arrivals,
    pub linger0: bool,
    pub timeout: Duration,
    /// Explicit source addresses (empty: let the kernel choose, or pick
    /// loopback sources automatically).
    pub sources: Vec<IpAddr>,
    pub cpus: Option<Vec<usize>>,
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub hdr: Option<PathBuf>,
    pub fail_on_error: bool,
    pub quiet: bool,
    /// Print the pre-flight's warnings on stderr before the run (they are
    /// in the report's warnings either way). `c10k run` prints its own
    /// pre-flight once for the largest cell, so its cells do not repeat it.
    pub preflight_to_stderr: bool,
    /// The command line, for the results.
    pub command: String,
    /// As agent K of P of a run over agents: (K, P). Connection ids are
    /// interleaved over processes and their threads.
    pub process: Option<(usize, usize)>,
    /// The server's processes, when known: their CPU over the measured
    /// window decides what limited the figures.
    pub server_pids: Vec<u32>,
    /// Agents started through launcher templates (`--agent`); `None`: this
    /// machine runs the connections (in worker processes past its
    /// open-files limit).
    pub agents: Option<super::launch::Launch>,
    /// Resident (`c10k run`'s slots): the connections stay up across
    /// windows, each opened by the coordinator, until it says no more. Not
    /// a flag of `c10k load`: an agent learns it from its plan message.
    pub resident: bool,
}

impl LoadPlan {
    /// `connections` running `workload` against `target` on one event loop
    /// for 10 s with no warm-up: 64-byte messages, a 10 s echo timeout, no
    /// pacing, no outputs. Not yet checked: set what differs, then
    /// [`LoadPlan::validate`].
    pub fn new(target: SocketAddr, connections: usize, workload: Workload) -> LoadPlan {
        LoadPlan {
            target,
            protocol: Protocol::Echo,
            connections,
            idle: 0,
            threads: 1,
            workload,
            stop: Stop::Duration(Duration::from_secs(10)),
            warmup: Duration::ZERO,
            message_size: 64,
            payload: None,
            connect_rate: None,
            interval: Duration::ZERO,
            arrivals: Arrivals::Uniform,
            linger0: false,
            timeout: Duration::from_secs(10),
            sources: Vec::new(),
            cpus: None,
            json: None,
            csv: None,
            hdr: None,
            fail_on_error: false,
            quiet: false,
            preflight_to_stderr: true,
            command: String::new(),
            process: None,
            server_pids: Vec::new(),
            agents: None,
            resident: false,
        }
    }

    /// The plan, checked: every count, size and rate in its bounds, each
    /// refusal one line naming the flag that sets it. Threads beyond the
    /// sockets are no use and are cut to their number.
    pub fn validate(mut self) -> Result<LoadPlan, String> {
        let churn = matches!(self.workload, Workload::Churn { .. });
        if self.connections == 0 && !churn {
            return Err("--connections must be at least 1".into());
        }
        if self.connections > MAX_CONNECTIONS || self.idle > MAX_CONNECTIONS {
            return Err("more than 10,000,000 connections is beyond any machine".into());
        }
        let http = self.protocol == Protocol::Http;
        match &self.payload {
            Some(_) if http => return Err(
                "--payload is an echo message; over --protocol http, -m N sends a POST of N bytes"
                    .into(),
            ),
            None if http && self.message_size > MAX_MESSAGE => {
                return Err(format!(
                    "--message-size {}: a request body must be from 0 (a GET) to 64 MiB",
                    self.message_size
                ))
            }
            None if http => {}
            Some(p) if p.is_empty() => return Err("--payload must not be empty".into()),
            Some(p) if p.len() != self.message_size => {
                return Err(format!(
                    "--payload of {} bytes with a message size of {}",
                    p.len(),
                    self.message_size
                ))
            }
            Some(_) => {}
            None if !(1..=MAX_MESSAGE).contains(&self.message_size) => {
                return Err(format!(
                    "--message-size {}: must be from 1 B to 64 MiB",
                    self.message_size
                ))
            }
            None => {}
        }
        let depth = match self.workload {
            Workload::Closed { depth } | Workload::Open { depth, .. } => depth,
            _ => 1,
        };
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(format!("--depth {depth}: must be from 1 to {MAX_DEPTH}"));
        }
        match self.workload {
            Workload::Burst { rounds } if !(1..=MAX_ROUNDS).contains(&rounds) => {
                return Err(format!("--rounds {rounds}: must be from 1 to {MAX_ROUNDS}"));
            }
            Workload::Open { rate, .. } => {
                per_second("--rate", rate, MAX_RATE)?;
            }
            _ if !self.interval.is_zero() => {
                return Err("--interval paces an open loop: give --rate".into());
            }
            _ if !self.arrivals.is_uniform() => {
                return Err("--arrivals shapes an open loop: give --rate".into());
            }
            _ => {}
        }
        if self.interval > crate::server::pace::MAX_INTERVAL {
            return Err(format!(
                "--interval {}: must be at most 1s",
                crate::present::units::seconds(self.interval.as_secs_f64())
            ));
        }
        match self.stop {
            Stop::Messages(0) => return Err("--messages must be at least 1".into()),
            Stop::Duration(d) if d.is_zero() => return Err("--duration must be above 0".into()),
            _ => {}
        }
        if self.timeout < Duration::from_millis(1) {
            return Err("--timeout must be at least 1ms".into());
        }
        if let Some(r) = self.connect_rate {
            per_second("--connect-rate", r, MAX_RATE)?;
        }
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(format!(
                "--threads {}: must be from 1 to {MAX_THREADS}",
                self.threads
            ));
        }
        let timed_loop = matches!(
            (self.workload, self.stop),
            (
                Workload::Closed { .. } | Workload::Open { .. },
                Stop::Duration(_)
            )
        );
        if self.resident && !timed_loop {
            return Err(
                "resident windows run a timed closed or open loop (not --messages, --burst or --churn)"
                    .into(),
            );
        }
        self.threads = self.threads.min(self.connections.max(1) + self.idle);
        Ok(self)
    }

    /// The arguments of `c10k load` (from `load` on) that make this plan:
    /// every setting that differs from the flags' defaults, in one fixed
    /// order. Not spelled: `command` (the flags record their own) and
    /// `process` (a worker's place in a split run).
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut a = Words(vec!["load".into(), self.target.to_string()]);
        if !self.protocol.is_echo() {
            a.flag("--protocol", self.protocol);
        }
        a.flag("-c", self.connections);
        if self.idle > 0 {
            a.flag("--idle", self.idle);
        }
        a.flag("-t", self.threads);
        match self.stop {
            Stop::Messages(n) => a.flag("-n", n),
            Stop::Duration(d) if d != DEFAULT_DURATION => a.flag("-d", duration(d)),
            Stop::Duration(_) => {}
        }
        if !self.warmup.is_zero() {
            a.flag("--warmup", duration(self.warmup));
        }
        match self.workload {
            Workload::Closed { depth } | Workload::Open { depth, .. } => {
                if let Workload::Open { rate, .. } = self.workload {
                    a.flag("--rate", rate);
                    if !self.arrivals.is_uniform() {
                        a.flag("--arrivals", self.arrivals.name());
                    }
                }
                if depth != 1 {
                    a.flag("--depth", depth);
                }
            }
            Workload::Burst { rounds } => {
                a.switch("--burst");
                if rounds != 1 {
                    a.flag("--rounds", rounds);
                }
            }
            Workload::Churn { echo } => {
                a.switch("--churn");
                if echo {
                    a.switch("--churn-echo");
                }
            }
        }
        match &self.payload {
            Some(p) => a.flag("--payload", String::from_utf8_lossy(p)),
            None => a.flag("-m", self.message_size),
        }
        if let Some(r) = self.connect_rate {
            a.flag("--connect-rate", r);
        }
        if !self.interval.is_zero() {
            a.flag("--interval", duration(self.interval));
        }
        if self.timeout != DEFAULT_TIMEOUT {
            a.flag("--timeout", duration(self.timeout));
        }
        if !self.sources.is_empty() {
            a.flag("--source", source_list(&self.sources));
        }
        if let Some(c) = &self.cpus {
            a.flag("--cpus", crate::sys::affinity::format_cpu_list(c));
        }
        for (name, path) in [
            ("--json", &self.json),
            ("--per-connection-csv", &self.csv),
            ("--hdr", &self.hdr),
        ] {
            if let Some(p) = path {
                a.flag(name, p.display());
            }
        }
        if !self.server_pids.is_empty() {
            let pids: Vec<String> = self.server_pids.iter().map(u32::to_string).collect();
            a.flag("--server-pid", pids.join(","));
        }
        for (on, name) in [
            (self.linger0, "--linger0"),
            (self.fail_on_error, "--fail-on-error"),
            (self.quiet, "-q"),
        ] {
            if on {
                a.switch(name);
            }
        }
        a.0
    }

    /// [`LoadPlan::to_args`] as a command line to read or paste: `c10k`,
    /// then the arguments, each quoted for a POSIX shell where it needs it.
    pub(crate) fn command_line(&self) -> String {
        let mut line = String::from("c10k");
        for arg in self.to_args() {
            line.push(' ');
            line.push_str(&shell_quote(&arg));
        }
        line
    }
}

/// An argument list being written.
struct Words(Vec<String>);

impl Words {
    fn flag(&mut self, name: &str, value: impl std::fmt::Display) {
        self.0.extend([name.to_string(), value.to_string()]);
    }

    fn switch(&mut self, name: &str) {
        self.0.push(name.to_string());
    }
}

/// Source addresses as `--source` reads them back in the same order: each
/// run of consecutive IPv4 addresses as one range, so thousands of them
/// stay a short argument.
fn source_list(ips: &[IpAddr]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ips.len() {
        let mut j = i;
        if let IpAddr::V4(first) = ips[i] {
            while let Some(IpAddr::V4(next)) = ips.get(j + 1) {
                let step = u32::try_from(j + 1 - i).ok();
                if step.and_then(|n| u32::from(first).checked_add(n)) != Some(u32::from(*next)) {
                    break;
                }
                j += 1;
            }
        }
        parts.push(if j > i {
            format!("{}-{}", ips[i], ips[j])
        } else {
            ips[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// A duration as `parse_duration` reads it back exactly: whole seconds as
/// `Ns`, whole milliseconds as `Nms`, anything finer as seconds.
fn duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// `text` as one word of a POSIX shell: as it is when it is only safe
/// characters, in single quotes otherwise.
fn shell_quote(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_.,:/=@%+[]".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_kind_reads_as_the_word_the_json_and_the_schema_give_it() {
        let all = [
            LoadKind::Closed,
            LoadKind::Open,
            LoadKind::Burst,
            LoadKind::Churn,
        ];
        for k in all {
            let json = serde_json::to_value(k).expect("a kind serializes");
            assert_eq!(json, k.to_string());
            assert_eq!(serde_json::from_value::<LoadKind>(json).ok(), Some(k));
        }
        let schema = crate::client::report::schema();
        let listed = &schema.as_value()["properties"]["workload"]["enum"];
        let words: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(listed, &serde_json::json!(words));
        assert!(serde_json::from_str::<LoadKind>("\"bogus\"").is_err());
    }

    #[test]
    fn durations_are_spelled_as_they_read_back() {
        assert_eq!(duration(Duration::from_secs(10)), "10s");
        assert_eq!(duration(Duration::from_millis(250)), "250ms");
        assert_eq!(duration(Duration::from_micros(1500)), "0.0015s");
    }

    #[test]
    fn consecutive_sources_are_one_range() {
        let ips: Vec<IpAddr> = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "::1", "10.0.0.1"]
            .iter()
            .map(|s| s.parse().expect("ip"))
            .collect();
        assert_eq!(source_list(&ips), "127.0.0.2-127.0.0.4,::1,10.0.0.1");
    }

    #[test]
    fn words_are_quoted_for_the_shell_when_they_need_it() {
        assert_eq!(shell_quote("127.0.0.1:7"), "127.0.0.1:7");
        assert_eq!(shell_quote("hello world"), "'hello world'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
