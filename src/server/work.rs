//! `--work SPEC`: what a handler does for each request before it echoes it,
//! so the models can be compared where they really part: under handlers
//! that compute, block or wait.
//!
//! A request is every `--message-size` bytes of a connection's stream
//! ([`Work::request`]). A SPEC is `none` or one or more parts joined by `+`,
//! run in the order written, each a duration, fixed (`block:1ms`) or drawn
//! from an exponential distribution with that mean (`block:exp:1ms`):
//!
//! - `cpu:D`: on-CPU work, spent by the handling thread's own CPU clock
//!   (`CLOCK_THREAD_CPUTIME_ID`), so being preempted does not shorten it;
//! - `block:D`: a blocking call (a sleep) in the thread that runs the
//!   handler, as a synchronous database or disk call is. A model that hands
//!   such calls off (tokio's `spawn_blocking`) is told so by
//!   [`Work::offload_block`] and gets [`Next::Block`] to run elsewhere;
//! - `wait:D`: an asynchronous wait (an awaited backend reply): the handler
//!   is given [`Next::Wait`] with the instant it ends and serves others
//!   meanwhile (a reactor timer, an io_uring timeout, `tokio::time::sleep`);
//!   the blocking models simply sleep until then.
//!
//! [`Requests`] is the one place where a connection's bytes become requests
//! and requests get their work: the shared echo state machine
//! ([`super::conn`]) and the io_uring model's own use it. [`Capacity`] is
//! what a model's handlers can do at once; the throughput the work alone
//! allows with it is the analysis's ([`crate::analysis::bound::bound`]).
//!
//! Costs: with no work, nothing (the echo path is the plain one). With
//! work, per request: a division to find request boundaries, the parts'
//! own time, a clock read per part that waits, and one relaxed atomic add
//! (the request count, shared with forked children).

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::present::units::parse_duration;

/// The kind of one part of the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// On-CPU work, by the thread's CPU clock.
    Cpu,
    /// A blocking call in the handling thread.
    Block,
    /// An asynchronous wait.
    Wait,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::Block => "block",
            Kind::Wait => "wait",
        }
    }
}

/// One part: a kind and a duration, fixed or exponential with that mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Part {
    pub kind: Kind,
    pub mean: Duration,
    /// Drawn from an exponential distribution with mean `mean`.
    pub exp: bool,
}

impl Part {
    /// This request's duration of the part.
    fn sample(&self) -> Duration {
        if !self.exp {
            return self.mean;
        }
        RNG.with(|r| {
            let mut r = r.borrow_mut();
            // 1 - u is in (0, 1]: its logarithm is finite. A draw is at
            // most EXP_CAP means (one in 22,000 would be longer), so no
            // request's work is unbounded; the mean moves by 0.005 %.
            let u = 1.0 - r.unit();
            self.mean.mul_f64((-u.ln()).min(EXP_CAP))
        })
    }
}

thread_local! {
    /// Draws of the exponential parts, seeded per thread.
    static RNG: std::cell::RefCell<crate::stats::rng::SplitMix64> = std::cell::RefCell::new(
        crate::stats::rng::SplitMix64::new(seed()),
    );
}

/// A seed of its own for each thread (and forked child).
fn seed() -> u64 {
    static THREADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = THREADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::stats::rng::mix(nanos ^ (u64::from(std::process::id()) << 32) ^ n)
}

/// The longest exponential draw, in means: `block:exp:10s` blocks 100 s
/// at most.
const EXP_CAP: f64 = 10.0;

/// The longest part: a request's work must end within a cell.
pub const MAX_PART: Duration = Duration::from_secs(10);

/// A work profile: what a handler does per request, its parts in order
/// (none: the plain echo). Parsed once from its SPEC; (de)serialized as its
/// canonical spec (`none`, `cpu:20us+block:exp:1ms`), so it travels typed
/// in a run's plan and records ([`crate::results::matrix::CellSpec`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Profile {
    /// In order; empty: no work.
    pub parts: Vec<Part>,
}

impl Profile {
    /// Parses a SPEC (`none`, `cpu:20us`, `block:exp:1ms+wait:2ms`).
    pub fn parse(spec: &str) -> Result<Profile, String> {
        let spec = spec.trim();
        let mut parts = Vec::new();
        if spec != "none" {
            for text in spec.split('+') {
                parts.push(parse_part(text.trim())?);
            }
        }
        Ok(Profile { parts })
    }

    /// No work: the plain echo.
    pub fn is_none(&self) -> bool {
        self.parts.is_empty()
    }

    /// The mean time per request of the parts of `kind`.
    pub fn mean(&self, kind: Kind) -> Duration {
        self.parts
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| p.mean)
            .sum()
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(spec: &str) -> Result<Profile, String> {
        Profile::parse(spec)
    }
}

/// A profile is its canonical spec: `block:1ms` equals the profile of
/// `block:1000us`.
impl PartialEq<&str> for Profile {
    fn eq(&self, spec: &&str) -> bool {
        Profile::parse(spec).is_ok_and(|p| p == *self)
    }
}

/// A profile read from a file (a plan, a record) is written as c10k writes
/// it, canonically, since the ids of its cells are made from that text.
impl TryFrom<String> for Profile {
    type Error = String;
    fn try_from(spec: String) -> Result<Profile, String> {
        let p = Profile::parse(&spec)?;
        if p.to_string() != spec {
            return Err(format!("work: '{spec}' is written '{p}' (canonical)"));
        }
        Ok(p)
    }
}

impl From<Profile> for String {
    fn from(p: Profile) -> String {
        p.to_string()
    }
}

/// How a server speaks HTTP: the settings of `--protocol http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http {
    /// Bytes of every `200` response's body (`--response-size`).
    pub response: usize,
    /// A request head longer than this gets `431`: the connection's read
    /// buffer (`--buffer`), which must hold a whole head.
    pub header_limit: usize,
}

/// What a server does per request, and how its model runs blocking calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Work {
    pub profile: Profile,
    /// Bytes per request (`--message-size`).
    pub request: usize,
    /// Blocking calls are handed to the caller ([`Next::Block`]) instead of
    /// made in place: tokio's `spawn_blocking`.
    pub offload_block: bool,
    /// `--protocol http`: requests are HTTP requests, framed by their
    /// parser (`super::http`), not every `request` bytes; `None`: echo.
    pub http: Option<Http>,
}

impl Default for Work {
    fn default() -> Work {
        Work {
            profile: Profile::default(),
            request: 64,
            offload_block: false,
            http: None,
        }
    }
}

impl Work {
    /// Parses a SPEC (`none`, `cpu:20us`, `block:exp:1ms+wait:2ms`) for
    /// requests of `request` bytes.
    pub fn parse(spec: &str, request: usize) -> Result<Work, String> {
        Ok(Work::of(Profile::parse(spec)?, request))
    }

    /// `profile` for requests of `request` bytes.
    pub fn of(profile: Profile, request: usize) -> Work {
        Work {
            profile,
            request: request.max(1),
            offload_block: false,
            http: None,
        }
    }

    /// No work: the plain echo.
    pub fn is_none(&self) -> bool {
        self.profile.is_none()
    }
}

/// The work's canonical spec (its profile's).
impl fmt::Display for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.profile.fmt(f)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parts.is_empty() {
            return f.write_str("none");
        }
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            let exp = if p.exp { "exp:" } else { "" };
            write!(f, "{}:{exp}{}", p.kind.name(), short(p.mean))?;
        }
        Ok(())
    }
}

/// A duration as a spec writes it: `20us`, `1ms`, `1.5ms`, `2s`.
fn short(d: Duration) -> String {
    let ns = d.as_nanos();
    let (n, unit) = if ns >= 1_000_000_000 {
        (ns as f64 / 1e9, "s")
    } else if ns >= 1_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e3, "us")
    };
    let text = format!("{n:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

fn parse_part(text: &str) -> Result<Part, String> {
    let bad = || {
        format!("'{text}' is not a part of the work: expected cpu:D, block:D or wait:D (e.g. cpu:20us, block:exp:1ms), or none")
    };
    let (kind, rest) = text.split_once(':').ok_or_else(bad)?;
    let kind = match kind.trim() {
        "cpu" => Kind::Cpu,
        "block" => Kind::Block,
        "wait" => Kind::Wait,
        _ => return Err(bad()),
    };
    let (exp, dur) = match rest.split_once(':') {
        Some(("exp", d)) => (true, d),
        Some(_) => return Err(bad()),
        None => (false, rest),
    };
    let mean = parse_duration(dur).map_err(|e| format!("'{text}': {e}"))?;
    if mean.is_zero() {
        return Err(format!("'{text}': a part of the work takes some time"));
    }
    if mean > MAX_PART {
        return Err(format!("'{text}': a part of the work is at most 10s"));
    }
    Ok(Part { kind, mean, exp })
}

/// What a model's handlers can do at once, reported by the server in its
/// summary so the bound is its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    /// Threads or processes that run handlers; `None`: one per connection.
    pub handlers: Option<usize>,
    /// CPUs the server may run on.
    pub cores: usize,
    /// A `block` holds its handler (false: handed to a pool that grows per
    /// call, tokio's `spawn_blocking`).
    pub block_holds: bool,
    /// A `wait` holds its handler (the blocking models sleep in it).
    pub wait_holds: bool,
    /// Where a `block` is handed to a pool: the most threads it grows to
    /// (tokio's 512, or `--blocking-threads`); absent in records written
    /// before it was reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blockers: Option<usize>,
}

impl Capacity {
    /// What `model` run with `config` on `cores` CPUs can do at once.
    pub fn of(model: &dyn super::Model, config: &super::Config, cores: usize) -> Capacity {
        Capacity {
            handlers: model.handlers(config),
            cores,
            block_holds: !config.work.offload_block,
            wait_holds: model.sleeps_through_waits(),
            blockers: config.work.offload_block.then(|| {
                config
                    .blocking_threads
                    .unwrap_or(super::TOKIO_BLOCKING_THREADS)
            }),
        }
    }
}

/// What a connection's handler must do next about its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing until more bytes arrive.
    Idle,
    /// The request in hand waits until then: come back after it.
    Wait(Instant),
    /// Make this blocking call elsewhere, then [`Requests::blocked`], then
    /// come back.
    Block(Duration),
}

/// One connection's progress through its requests: the one place where
/// bytes become requests and each complete request gets its work once.
#[derive(Debug, Default, Clone)]
pub struct Requests {
    /// The next part of the request in hand (0: not started).
    part: usize,
    /// The wait in progress ends then.
    until: Option<Instant>,
    /// A blocking call was handed out and has not come back.
    offloaded: bool,
}

impl Requests {
    /// Works through the requests complete in `unready` bytes (those after
    /// the ones already ready to echo), in order; returns how many of them
    /// are now ready to echo and what is next. At `eof` a trailing partial
    /// request is ready too, without work (it never became a request).
    pub fn run(
        &mut self,
        work: &Work,
        unready: usize,
        eof: bool,
        stats: &super::Stats,
    ) -> (usize, Next) {
        let m = work.request;
        let mut ready = 0;
        // A stopping server starts no more work: the requests left are
        // never echoed, as the connection is closed.
        while unready - ready >= m && !crate::sys::signals::stop_requested() {
            if let Some(next) = self.step(work) {
                return (ready, next);
            }
            ready += m;
            stats.requested();
        }
        if eof {
            ready = unready;
        }
        (ready, Next::Idle)
    }

    /// The work of one whole request framed elsewhere (an HTTP request,
    /// by its parser), from where it stopped: `None` once done. A stopping
    /// server starts no more work: the request stays unanswered (`Idle`).
    pub(crate) fn one(&mut self, work: &Work) -> Option<Next> {
        if self.part == 0 && crate::sys::signals::stop_requested() {
            return Some(Next::Idle);
        }
        self.step(work)
    }

    /// Runs the parts of the request in hand from where it stopped; `None`
    /// once they are all done.
    fn step(&mut self, work: &Work) -> Option<Next> {
        while let Some(part) = work.profile.parts.get(self.part) {
            match part.kind {
                Kind::Cpu => spin(part.sample()),
                Kind::Block if work.offload_block => {
                    if !self.offloaded {
                        self.offloaded = true;
                        return Some(Next::Block(part.sample()));
                    }
                    // Still out: the caller comes back only after it.
                    return Some(Next::Block(Duration::ZERO));
                }
                Kind::Block => block(part.sample()),
                Kind::Wait => {
                    let until = *self
                        .until
                        .get_or_insert_with(|| Instant::now() + part.sample());
                    if Instant::now() < until {
                        return Some(Next::Wait(until));
                    }
                    self.until = None;
                }
            }
            self.part += 1;
        }
        self.part = 0;
        None
    }

    /// The blocking call handed out with [`Next::Block`] returned.
    pub fn blocked(&mut self) {
        if std::mem::take(&mut self.offloaded) {
            self.part += 1;
        }
    }

    /// Whether a request is part-way through its work.
    pub fn busy(&self) -> bool {
        self.part > 0 || self.until.is_some() || self.offloaded
    }
}

/// How often a long part of the work looks whether the server is stopping:
/// a stop waits this long at most for a handler in `block` or `cpu` work.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// The blocking call of `block:D`: this thread sleeps for `d`, as it would
/// in a synchronous call to a database or a disk, in slices of at most
/// [`STOP_CHECK`] so that a stop of the server ends it early (a `block:1ms`
/// is one sleep).
pub fn block(d: Duration) {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= end || crate::sys::signals::stop_requested() {
            return;
        }
        std::thread::sleep((end - now).min(STOP_CHECK));
    }
}

/// This thread's CPU time so far.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Spends `d` of this thread's CPU time, or less when the server stops.
fn spin(d: Duration) {
    let start = thread_cpu();
    let mut x = 0u64;
    while thread_cpu().saturating_sub(start) < d && !crate::sys::signals::stop_requested() {
        // A little arithmetic between clock reads, so most of the time is
        // spent computing rather than asking the kernel the time.
        for i in 0..64u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        let w = Work::parse("cpu:20us+block:exp:1ms+wait:1.5ms", 64).unwrap();
        assert_eq!(w.to_string(), "cpu:20us+block:exp:1ms+wait:1.5ms");
        assert_eq!(w.profile.mean(Kind::Block), Duration::from_millis(1));
        let p: Profile = serde_json::from_str("\"block:1ms\"").unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"block:1ms\"");
        let loose = serde_json::from_str::<Profile>("\"block:1000us\"");
        assert!(loose.unwrap_err().to_string().contains("canonical"));
        assert!(serde_json::from_str::<Profile>("\"disk:1ms\"").is_err());
        assert!(Work::parse("none", 64).unwrap().is_none());
        for bad in [
            "",
            "cpu",
            "cpu:",
            "disk:1ms",
            "cpu:0s",
            "block:norm:1ms",
            "wait:11s",
        ] {
            assert!(Work::parse(bad, 64).is_err(), "{bad}");
        }
    }

    #[test]
    fn exponential_draws_are_capped_at_ten_means() {
        let p = Part {
            kind: Kind::Block,
            mean: Duration::from_millis(1),
            exp: true,
        };
        // Uncapped, about 9 of 200,000 draws would pass ten means.
        let longest = (0..200_000).map(|_| p.sample()).max().unwrap();
        assert!(longest <= Duration::from_millis(10), "{longest:?}");
        assert!(longest > Duration::from_millis(5), "{longest:?}");
    }

    #[test]
    fn requests_get_their_work_once_in_order() {
        let stats = super::super::Stats::default();
        let work = Work::parse("wait:1ms", 4).unwrap();
        let mut r = Requests::default();
        // Two requests and a half: the first waits.
        let (ready, next) = r.run(&work, 10, false, &stats);
        assert_eq!(ready, 0);
        let Next::Wait(until) = next else {
            panic!("{next:?}")
        };
        // Called early, it waits for the same instant.
        assert_eq!(r.run(&work, 10, false, &stats), (0, Next::Wait(until)));
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        let (ready, next) = r.run(&work, 10, false, &stats);
        assert_eq!(ready, 4, "the first is ready, the second waits");
        assert!(matches!(next, Next::Wait(_)));
        let offload = Work {
            offload_block: true,
            ..Work::parse("block:5ms", 4).unwrap()
        };
        let mut r = Requests::default();
        let (ready, next) = r.run(&offload, 5, false, &stats);
        assert_eq!((ready, next), (0, Next::Block(Duration::from_millis(5))));
        r.blocked();
        // The trailing byte is no request; at EOF it is echoed as is.
        assert_eq!(r.run(&offload, 5, false, &stats), (4, Next::Idle));
        assert_eq!(r.run(&offload, 1, true, &stats), (1, Next::Idle));
        assert_eq!(stats.summary("t").requests, 2);
    }
}
