//! One server's settings as one typed value: every `c10k serve` flag a
//! run may set (all but the model, port, address, CPUs and SO_REUSEPORT,
//! which each cell sets itself), each `None` (or off) where it is not
//! given, so serve's default applies. A run's settings travel as this
//! value from the plan to the child: the run's own, a `--variant`'s, what
//! `--tune` kept, and a `--server-arg`'s are laid over one another
//! ([`Settings::over`]), a knob's value is set on it ([`Settings::set`]),
//! and the queueing bound of its handlers is read from it; it becomes
//! flags in one place, [`Settings::args`], where the child is started,
//! and the child parses them once. Flags become settings in the plan
//! layer only (`plan::serve_settings`). Cost: a small struct, copied per
//! server started.

use serde::{Deserialize, Serialize};

use super::work::{Capacity, Profile};
use super::AcceptMode;
use crate::protocol::Protocol;
use crate::sys::lock::LockKind;

/// `--buffer` when not given: 16 KiB per connection (and an HTTP
/// server's header limit).
pub const DEFAULT_BUFFER: usize = 16 << 10;

/// How uring's connections receive (`--ring-recv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RingRecv {
    /// One armed recv per connection posts a completion per chunk.
    Multishot,
    /// A one-shot recv submitted after every chunk.
    Once,
}

/// When hybrid's pool threads wake the loop (`--hand-back`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HandBack {
    /// Once the thread finds no job waiting (or has 64 to give back).
    Idle,
    /// After every job.
    Each,
}

/// The settings of one server that a run may give; the JSON of a plan's
/// `server_settings`, a variant's `settings` and a tuned setting's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `--buffer`: bytes of echo buffer per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<usize>,
    /// `--max-conns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_conns: Option<u64>,
    /// `--workers`: threads, processes, loops or rings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// `--stack-size`, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_bytes: Option<usize>,
    /// `--edge`.
    #[serde(default, skip_serializing_if = "is_off")]
    pub edge: bool,
    /// `--accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept: Option<AcceptMode>,
    /// `--backlog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<i32>,
    /// `--interval`, in nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<u64>,
    /// `--shared-state` with its `--lock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_state: Option<LockKind>,
    /// `--work`, as its spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub work: Option<Profile>,
    /// `--message-size`: bytes of one request under `--work`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_size: Option<usize>,
    /// `--protocol`: what the server speaks (echo when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// `--response-size`: bytes of an HTTP response's body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<usize>,
    /// `--block-inline`.
    #[serde(default, skip_serializing_if = "is_off")]
    pub block_inline: bool,
    /// `--global-queue-interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_queue_interval: Option<u32>,
    /// `--blocking-threads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking_threads: Option<usize>,
    /// `--ring-entries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_entries: Option<u32>,
    /// `--ring-buffers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_buffers: Option<u16>,
    /// `--ring-recv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_recv: Option<RingRecv>,
    /// `--hand-back`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand_back: Option<HandBack>,
    /// `--nofile`: the soft open-files limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nofile: Option<u64>,
    /// `--sigpending`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigpending: Option<u64>,
}

fn is_off(b: &bool) -> bool {
    !*b
}

/// A setting a knob moves ([`super::knobs::Knob::field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Workers,
    StackSize,
    Edge,
    Accept,
    Interval,
    GlobalQueueInterval,
    BlockingThreads,
    RingEntries,
    RingBuffers,
    RingRecv,
    HandBack,
}

impl Field {
    /// The `c10k serve` flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Field::Workers => "--workers",
            Field::StackSize => "--stack-size",
            Field::Edge => "--edge",
            Field::Accept => "--accept",
            Field::Interval => "--interval",
            Field::GlobalQueueInterval => "--global-queue-interval",
            Field::BlockingThreads => "--blocking-threads",
            Field::RingEntries => "--ring-entries",
            Field::RingBuffers => "--ring-buffers",
            Field::RingRecv => "--ring-recv",
            Field::HandBack => "--hand-back",
        }
    }
}

/// One value of a knob: a count or bytes, a duration in microseconds, a
/// switch, or one of its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    Count(u64),
    Micros(u64),
    Switch(bool),
    Word(&'static str),
}

impl AcceptMode {
    /// Its `--accept` word.
    pub fn name(self) -> &'static str {
        match self {
            AcceptMode::Acceptor => "acceptor",
            AcceptMode::Shared => "shared",
            AcceptMode::Exclusive => "exclusive",
            AcceptMode::Reuseport => "reuseport",
        }
    }
}

impl RingRecv {
    /// Its `--ring-recv` word.
    pub fn name(self) -> &'static str {
        match self {
            RingRecv::Multishot => "multishot",
            RingRecv::Once => "once",
        }
    }
}

impl HandBack {
    /// Its `--hand-back` word.
    pub fn name(self) -> &'static str {
        match self {
            HandBack::Idle => "idle",
            HandBack::Each => "each",
        }
    }
}

/// An interval as `--interval` takes it, in the largest unit that holds
/// it whole: `1ms`, `200us`, `0.5us`.
fn interval_text(ns: u64) -> String {
    match ns {
        0 => "0s".into(),
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{}us", ns as f64 / 1e3),
    }
}

/// `n` as the field's type, or what `wrong` says.
fn fit<T: TryFrom<u64>>(n: u64, wrong: impl Fn() -> String) -> Result<T, String> {
    T::try_from(n).map_err(|_| wrong())
}

/// The one of `all` whose word is `word`.
fn word<T: Copy>(all: &[T], name: fn(T) -> &'static str, word: &str) -> Option<T> {
    all.iter().copied().find(|v| name(*v) == word)
}

impl Settings {
    /// `self` with every setting `top` gives laid over it: a variant's
    /// over the run's, what `--tune` kept over both, a user's over all.
    #[must_use]
    pub fn over(&self, top: &Settings) -> Settings {
        Settings {
            buffer_bytes: top.buffer_bytes.or(self.buffer_bytes),
            max_conns: top.max_conns.or(self.max_conns),
            workers: top.workers.or(self.workers),
            stack_bytes: top.stack_bytes.or(self.stack_bytes),
            edge: top.edge || self.edge,
            accept: top.accept.or(self.accept),
            backlog: top.backlog.or(self.backlog),
            interval_ns: top.interval_ns.or(self.interval_ns),
            shared_state: top.shared_state.or(self.shared_state),
            work: top.work.clone().or_else(|| self.work.clone()),
            message_size: top.message_size.or(self.message_size),
            protocol: top.protocol.or(self.protocol),
            response_bytes: top.response_bytes.or(self.response_bytes),
            block_inline: top.block_inline || self.block_inline,
            global_queue_interval: top.global_queue_interval.or(self.global_queue_interval),
            blocking_threads: top.blocking_threads.or(self.blocking_threads),
            ring_entries: top.ring_entries.or(self.ring_entries),
            ring_buffers: top.ring_buffers.or(self.ring_buffers),
            ring_recv: top.ring_recv.or(self.ring_recv),
            hand_back: top.hand_back.or(self.hand_back),
            nofile: top.nofile.or(self.nofile),
            sigpending: top.sigpending.or(self.sigpending),
        }
    }

    /// Whether nothing is set: the defaults.
    pub fn is_empty(&self) -> bool {
        *self == Settings::default()
    }

    /// Whether the setting a knob moves is given.
    pub fn has(&self, field: Field) -> bool {
        match field {
            Field::Workers => self.workers.is_some(),
            Field::StackSize => self.stack_bytes.is_some(),
            Field::Edge => self.edge,
            Field::Accept => self.accept.is_some(),
            Field::Interval => self.interval_ns.is_some(),
            Field::GlobalQueueInterval => self.global_queue_interval.is_some(),
            Field::BlockingThreads => self.blocking_threads.is_some(),
            Field::RingEntries => self.ring_entries.is_some(),
            Field::RingBuffers => self.ring_buffers.is_some(),
            Field::RingRecv => self.ring_recv.is_some(),
            Field::HandBack => self.hand_back.is_some(),
        }
    }

    /// The number `field` is set to, where it is one: a count, bytes, or
    /// for `--interval` nanoseconds; `None` where it is not set or not a
    /// number (a switch, a word).
    pub fn number(&self, field: Field) -> Option<u64> {
        let n = |v: Option<usize>| v.map(|v| v as u64);
        match field {
            Field::Workers => n(self.workers),
            Field::StackSize => n(self.stack_bytes),
            Field::Interval => self.interval_ns,
            Field::GlobalQueueInterval => self.global_queue_interval.map(u64::from),
            Field::BlockingThreads => n(self.blocking_threads),
            Field::RingEntries => self.ring_entries.map(u64::from),
            Field::RingBuffers => self.ring_buffers.map(u64::from),
            Field::Edge | Field::Accept | Field::RingRecv | Field::HandBack => None,
        }
    }

    /// `self` with `field` at `value`; an error names a value the field
    /// does not take (a word of another knob's, a count for a switch).
    pub fn set(&mut self, field: Field, value: Value) -> Result<(), String> {
        let wrong = || format!("{} does not take {value:?}", field.flag());
        let count = |v: Value| match v {
            Value::Count(n) => Ok(n),
            _ => Err(wrong()),
        };
        match field {
            Field::Workers => self.workers = Some(fit(count(value)?, wrong)?),
            Field::StackSize => self.stack_bytes = Some(fit(count(value)?, wrong)?),
            Field::GlobalQueueInterval => {
                self.global_queue_interval = Some(fit(count(value)?, wrong)?);
            }
            Field::BlockingThreads => self.blocking_threads = Some(fit(count(value)?, wrong)?),
            Field::RingEntries => self.ring_entries = Some(fit(count(value)?, wrong)?),
            Field::RingBuffers => self.ring_buffers = Some(fit(count(value)?, wrong)?),
            Field::Edge => match value {
                Value::Switch(on) => self.edge = on,
                _ => return Err(wrong()),
            },
            Field::Interval => match value {
                Value::Micros(us) => self.interval_ns = Some(us.saturating_mul(1000)),
                _ => return Err(wrong()),
            },
            Field::Accept => {
                let all = [
                    AcceptMode::Acceptor,
                    AcceptMode::Shared,
                    AcceptMode::Exclusive,
                    AcceptMode::Reuseport,
                ];
                self.accept = Some(match value {
                    Value::Word(w) => word(&all, AcceptMode::name, w).ok_or_else(wrong)?,
                    _ => return Err(wrong()),
                });
            }
            Field::RingRecv => {
                let all = [RingRecv::Multishot, RingRecv::Once];
                self.ring_recv = Some(match value {
                    Value::Word(w) => word(&all, RingRecv::name, w).ok_or_else(wrong)?,
                    _ => return Err(wrong()),
                });
            }
            Field::HandBack => {
                let all = [HandBack::Idle, HandBack::Each];
                self.hand_back = Some(match value {
                    Value::Word(w) => word(&all, HandBack::name, w).ok_or_else(wrong)?,
                    _ => return Err(wrong()),
                });
            }
        }
        Ok(())
    }

    /// The `c10k serve` flags that give these settings: the one place a
    /// server's settings become flags, where its child is started (and
    /// where a person is shown the variant they typed).
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut put = |flag: &str, value: Option<String>| {
            if let Some(v) = value {
                a.extend([flag.to_string(), v]);
            }
        };
        put("--buffer", self.buffer_bytes.map(|b| b.to_string()));
        put("--max-conns", self.max_conns.map(|n| n.to_string()));
        put("--workers", self.workers.map(|n| n.to_string()));
        put("--stack-size", self.stack_bytes.map(|n| n.to_string()));
        put("--accept", self.accept.map(|m| m.name().to_string()));
        put("--backlog", self.backlog.map(|n| n.to_string()));
        put("--interval", self.interval_ns.map(interval_text));
        put("--lock", self.shared_state.map(|k| k.name().to_string()));
        put("--work", self.work.as_ref().map(ToString::to_string));
        put("--message-size", self.message_size.map(|n| n.to_string()));
        put("--protocol", self.protocol.map(|p| p.name().to_string()));
        put(
            "--response-size",
            self.response_bytes.map(|n| n.to_string()),
        );
        put(
            "--global-queue-interval",
            self.global_queue_interval.map(|n| n.to_string()),
        );
        put(
            "--blocking-threads",
            self.blocking_threads.map(|n| n.to_string()),
        );
        put("--ring-entries", self.ring_entries.map(|n| n.to_string()));
        put("--ring-buffers", self.ring_buffers.map(|n| n.to_string()));
        put("--ring-recv", self.ring_recv.map(|r| r.name().to_string()));
        put("--hand-back", self.hand_back.map(|h| h.name().to_string()));
        put("--nofile", self.nofile.map(|n| n.to_string()));
        put("--sigpending", self.sigpending.map(|n| n.to_string()));
        let switches = [
            (self.edge, "--edge"),
            (self.shared_state.is_some(), "--shared-state"),
            (self.block_inline, "--block-inline"),
        ];
        a.extend(
            switches
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, f)| f.to_string()),
        );
        a
    }

    /// The flags as a person reads them: `--workers 128 --edge`.
    pub fn text(&self) -> String {
        self.args().join(" ")
    }
}

impl Capacity {
    /// This capacity with the pool sizes of `settings` (`--workers`,
    /// which every model with a pool counts its handlers by, and
    /// `--blocking-threads`), as `--tune` keeps them.
    pub fn with_settings(mut self, settings: &Settings) -> Capacity {
        if let (Some(_), Some(n)) = (self.handlers, settings.workers) {
            self.handlers = Some(n);
        }
        if let (Some(_), Some(n)) = (self.blockers, settings.blocking_threads) {
            self.blockers = Some(n);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_settings_win_and_the_rest_stay() {
        let run = Settings {
            workers: Some(2),
            buffer_bytes: Some(4096),
            ..Settings::default()
        };
        let tuned = Settings {
            workers: Some(128),
            edge: true,
            ..Settings::default()
        };
        let s = run.over(&tuned);
        assert_eq!(
            (s.workers, s.buffer_bytes, s.edge),
            (Some(128), Some(4096), true)
        );
        assert_eq!(s.args(), ["--buffer", "4096", "--workers", "128", "--edge"]);
        assert!(Settings::default().is_empty() && Settings::default().args().is_empty());
    }

    #[test]
    fn a_knob_sets_its_field_and_nothing_else() {
        let mut s = Settings::default();
        s.set(Field::Interval, Value::Micros(200)).unwrap();
        s.set(Field::Accept, Value::Word("exclusive")).unwrap();
        s.set(Field::HandBack, Value::Word("each")).unwrap();
        assert_eq!(s.interval_ns, Some(200_000));
        assert_eq!(s.accept, Some(AcceptMode::Exclusive));
        assert_eq!(s.hand_back, Some(HandBack::Each));
        assert!(s.has(Field::Interval) && !s.has(Field::Workers));
        assert!(s.set(Field::Edge, Value::Count(3)).is_err());
        assert!(s.set(Field::Accept, Value::Word("each")).is_err());
        assert!(s.set(Field::RingBuffers, Value::Count(1 << 20)).is_err());
    }

    #[test]
    fn a_capacity_takes_the_pool_sizes_a_search_kept() {
        let workers = |n| Settings {
            workers: Some(n),
            interval_ns: Some(50_000),
            ..Settings::default()
        };
        let pool = Capacity {
            handlers: Some(2),
            cores: 2,
            block_holds: true,
            wait_holds: false,
            blockers: None,
        };
        let c = pool.with_settings(&workers(64));
        assert_eq!((c.handlers, c.blockers), (Some(64), None));
        // One task per connection stays so; a pool of blocking threads
        // only where blocks go to one.
        let per_connection = Capacity {
            handlers: None,
            ..pool
        };
        assert_eq!(per_connection.with_settings(&workers(8)).handlers, None);
        let tokio = Capacity {
            blockers: Some(512),
            block_holds: false,
            ..pool
        };
        let t = tokio.with_settings(&Settings {
            blocking_threads: Some(1000),
            ..Settings::default()
        });
        assert_eq!((t.handlers, t.blockers), (Some(2), Some(1000)));
        assert_eq!(pool.with_settings(&Settings::default()), pool);
    }
}
