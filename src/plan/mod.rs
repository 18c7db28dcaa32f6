//! The plan layer: each command's parsed flags ([`crate::cli`]) turned into
//! the validated settings the engine takes, before anything runs. Every
//! range and name is checked here (or by the settings' own constructor),
//! with a one-line error that says what to change. Only this layer,
//! `cli.rs`, the commands' drivers (`commands/`) and `main.rs` see a flag: nothing below imports `crate::cli`
//! or clap (a test below holds every other file to that).
//!
//! - this file: `c10k serve`, the `--server-arg`s of `c10k run`, and the
//!   parsers of sizes and durations every command shares;
//! - [`load`]: `c10k load` into a [`crate::client::plan::LoadPlan`];
//! - [`run`]: `c10k run` into a [`crate::results::matrix::RunPlan`];
//! - [`compare`]: `c10k compare` (and `run --baseline`'s comparison);
//! - [`check`]: a run's plan checked whole, made from flags or read back;
//! - [`micro`], [`herd`]: the micro-benchmarks and the herd;
//! - [`conform`]: `c10k conform` into a suite and its checks.

pub mod check;
pub mod compare;
pub mod conform;
pub mod herd;
pub mod load;
pub mod micro;
pub mod run;
pub mod tune;

use std::net::SocketAddr;

use crate::cli::ServeArgs;
use crate::present::units::parse_size;
use crate::protocol::{Protocol, HELLO};
use crate::server::http::MAX_RESPONSE;
use crate::server::settings::{HandBack, RingRecv, Settings};
use crate::server::work::{Http, Profile, Work};
use crate::server::{self, run::Setup, Config, Model};
use crate::sys::affinity::cpus_available;

/// A validated `c10k serve`.
pub struct ServePlan {
    pub model: &'static dyn Model,
    pub config: Config,
    pub setup: Setup,
}

/// Where a server listens and runs, which each cell sets itself: never a
/// setting a run lays over another ([`Settings`]).
pub struct Place {
    pub bind: SocketAddr,
    pub reuseport: bool,
    pub cpus: Option<Vec<usize>>,
}

impl Place {
    /// Port 0 on loopback, unpinned: a server whose settings alone are
    /// asked about (its handlers, its request).
    fn nowhere() -> Place {
        Place {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            reuseport: false,
            cpus: None,
        }
    }
}

/// serve's defaults where a setting is not given; clap shows the same
/// ones in `--help` (a test holds the two together).
const DEFAULT_BACKLOG: i32 = 4096;
pub(crate) const DEFAULT_MESSAGE: usize = 64;

impl ServePlan {
    /// `c10k serve`'s flags as a plan: the settings they give, checked.
    pub fn from_args(a: &ServeArgs) -> Result<ServePlan, String> {
        let model = find_model(&a.model)?;
        let place = Place {
            bind: SocketAddr::new(a.bind, a.port),
            reuseport: a.reuseport,
            cpus: cpus_flag(a.cpus.as_deref())?,
        };
        ServePlan::of(model, place, &settings_from(a, &|_| true)?)
    }

    /// `model` with `s` at `place`, every range and pairing checked with
    /// a one-line error that names the flag; serve's defaults where `s`
    /// gives nothing.
    pub fn of(model: &'static dyn Model, place: Place, s: &Settings) -> Result<ServePlan, String> {
        let buffer = s
            .buffer_bytes
            .unwrap_or(crate::server::settings::DEFAULT_BUFFER);
        if !(64..=64 << 20).contains(&buffer) {
            return Err(format!("--buffer {buffer}: must be from 64 B to 64 MiB"));
        }
        if let Some(n) = s.stack_bytes {
            if n < 16 << 10 {
                return Err(format!("--stack-size {n}: must be at least 16 KiB"));
            }
        }
        // One per CPU it may use: pinned to one CPU, two uring rings or
        // two epoll loops only take turns on it (as `c10k run` already
        // passes --workers for the CPUs it gives the server).
        let default_workers = if model.worker_per_connection() {
            64
        } else {
            place.cpus.as_ref().map_or_else(cpus_available, Vec::len)
        };
        let workers = s.workers.unwrap_or(default_workers);
        if !(1..=100_000).contains(&workers) {
            return Err(format!("--workers {workers}: must be from 1 to 100000"));
        }
        if s.max_conns == Some(0) {
            return Err("--max-conns 0 would refuse every connection".into());
        }
        let backlog = s.backlog.unwrap_or(DEFAULT_BACKLOG);
        if backlog < 1 {
            return Err(format!("--backlog {backlog}: must be at least 1"));
        }
        if s.nofile.is_some_and(|n| n < 16) {
            return Err("--nofile: below 16 descriptors the server cannot start".into());
        }
        if s.sigpending == Some(0) {
            return Err("--sigpending 0 would leave no room for a single signal".into());
        }
        let interval = std::time::Duration::from_nanos(s.interval_ns.unwrap_or(0));
        if !interval.is_zero() && !model.readiness() {
            return Err(format!(
                "--interval: {} does not wait for readiness in a loop; interval control is for {}",
                model.name(),
                server::MODELS
                    .iter()
                    .filter(|m| m.readiness())
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if s.global_queue_interval.is_some() && !model.has_global_queue() {
            return Err(format!(
                "--global-queue-interval: {} has no runtime with a global queue; it is tokio's",
                model.name()
            ));
        }
        if s.blocking_threads.is_some() && !model.offloads_blocking() {
            return Err(format!(
                "--blocking-threads: {} has no blocking pool; it is tokio's",
                model.name()
            ));
        }
        for (flag, given) in [
            ("--ring-entries", s.ring_entries.is_some()),
            ("--ring-buffers", s.ring_buffers.is_some()),
            ("--ring-recv", s.ring_recv.is_some()),
        ] {
            if given {
                uring_only(model, flag)?;
            }
        }
        if s.hand_back.is_some() {
            only_for(model, "--hand-back", "pool fed by a poll loop", "hybrid")?;
        }
        knob_ranges(model, s)?;
        for (flag, size) in [
            ("--ring-entries", s.ring_entries.map(u64::from)),
            ("--ring-buffers", s.ring_buffers.map(u64::from)),
        ] {
            if let Some(n) = size.filter(|n| !n.is_power_of_two()) {
                return Err(format!("{flag} {n}: must be a power of two"));
            }
        }
        let work = work_of(model, s, buffer)?;
        Ok(ServePlan {
            model,
            config: Config {
                bind: place.bind,
                buffer,
                max_conns: s.max_conns,
                workers,
                stack_size: s.stack_bytes,
                edge: s.edge,
                accept: s.accept.unwrap_or(server::AcceptMode::Reuseport),
                backlog,
                reuseport: place.reuseport,
                interval,
                shared_state: s.shared_state,
                work,
                global_queue_interval: s.global_queue_interval,
                blocking_threads: s.blocking_threads,
                ring_entries: s.ring_entries,
                ring_buffers: s.ring_buffers,
                ring_recv_once: s.ring_recv == Some(RingRecv::Once),
                hand_back_each: s.hand_back == Some(HandBack::Each),
            },
            setup: Setup {
                nofile: s.nofile,
                sigpending: s.sigpending,
                cpus: place.cpus,
            },
        })
    }
}

/// The c10k model called `name`, or a one-line refusal naming them all.
fn find_model(name: &str) -> Result<&'static dyn Model, String> {
    server::find(name).ok_or_else(|| {
        format!(
            "unknown model '{name}': expected one of {}",
            server::names().join(", ")
        )
    })
}

/// The settings `a` gives, each of the flags `given` names (its clap id)
/// parsed into its type: the one place serve's flags become
/// [`Settings`].
fn settings_from(a: &ServeArgs, given: &dyn Fn(&str) -> bool) -> Result<Settings, String> {
    let buffer_bytes = match given("buffer") {
        true => Some(parse_size(&a.buffer).map_err(|e| format!("--buffer: {e}"))?),
        false => None,
    };
    let stack_bytes = match a.stack_size.as_deref().filter(|_| given("stack_size")) {
        Some(text) => Some(parse_size(text).map_err(|e| format!("--stack-size: {e}"))?),
        None => None,
    };
    let interval_ns = match given("interval") {
        true => {
            let d = parse_duration(&a.interval).map_err(|e| format!("--interval: {e}"))?;
            if d > server::pace::MAX_INTERVAL {
                return Err(format!("--interval {}: must be at most 1s", a.interval));
            }
            Some(d.as_nanos() as u64)
        }
        false => None,
    };
    let work = match given("work") {
        true => Some(Profile::parse(&a.work).map_err(|e| format!("--work: {e}"))?),
        false => None,
    };
    Ok(Settings {
        buffer_bytes,
        max_conns: a.max_conns.filter(|_| given("max_conns")),
        workers: a.workers.filter(|_| given("workers")),
        stack_bytes,
        edge: a.edge && given("edge"),
        accept: given("accept").then_some(a.accept),
        backlog: given("backlog").then_some(a.backlog),
        interval_ns,
        shared_state: (a.shared_state && given("shared_state")).then_some(a.lock),
        work,
        message_size: given("message_size").then_some(a.message_size),
        protocol: given("protocol").then_some(a.protocol),
        response_bytes: match given("response_size") {
            true => {
                Some(parse_size(&a.response_size).map_err(|e| format!("--response-size: {e}"))?)
            }
            false => None,
        },
        block_inline: a.block_inline && given("block_inline"),
        global_queue_interval: a
            .global_queue_interval
            .filter(|_| given("global_queue_interval")),
        blocking_threads: a.blocking_threads.filter(|_| given("blocking_threads")),
        ring_entries: a.ring_entries.filter(|_| given("ring_entries")),
        ring_buffers: a.ring_buffers.filter(|_| given("ring_buffers")),
        ring_recv: a.ring_recv.filter(|_| given("ring_recv")),
        hand_back: a.hand_back.filter(|_| given("hand_back")),
        nofile: a.nofile.filter(|_| given("nofile")),
        sigpending: a.sigpending.filter(|_| given("sigpending")),
    })
}

/// A ring flag given to a model that does not declare it (only uring has
/// a ring) is refused in one line.
fn uring_only(model: &dyn Model, flag: &str) -> Result<(), String> {
    only_for(model, flag, "io_uring ring", "uring")
}

/// A flag that only the model declaring it as a knob takes; the others
/// are told what they lack and whose flag it is.
fn only_for(model: &dyn Model, flag: &str, lacks: &str, owner: &str) -> Result<(), String> {
    if model.knobs().iter().any(|k| k.flag() == flag) {
        Ok(())
    } else {
        Err(format!(
            "{flag}: {} has no {lacks}; it is {owner}'s",
            model.name()
        ))
    }
}

/// Each knob `model` declares ([`server::knobs`]), where `s` sets it,
/// within the knob's range: the one range `c10k models --knobs` lists,
/// serve takes and `--tune` searches within.
fn knob_ranges(model: &dyn Model, s: &Settings) -> Result<(), String> {
    use crate::present::units::{kib, seconds};
    use server::knobs::{self, Values};
    for k in knobs::of(model) {
        let Some(n) = s.number(k.field) else {
            continue;
        };
        let (inside, shown) = match k.values {
            Values::Count { least, most } => ((least..=most).contains(&n), n.to_string()),
            Values::Bytes { least, most } => ((least..=most).contains(&n), kib(n as f64 / 1024.0)),
            Values::Micros { least, most } => (
                (least * 1000..=most * 1000).contains(&n),
                seconds(n as f64 / 1e9),
            ),
            Values::Switch | Values::Choice(_) => (true, String::new()),
        };
        if !inside {
            return Err(format!(
                "{} {shown}: {} takes {} ({}; c10k models --knobs)",
                k.flag(),
                model.name(),
                knobs::values_text(&k.values),
                k.what
            ));
        }
    }
    Ok(())
}

/// `--work`, `--message-size` and `--block-inline`, checked together: a
/// request must fit in the echo buffer, and only tokio hands blocking
/// calls off.
fn work_of(model: &dyn Model, s: &Settings, buffer: usize) -> Result<Work, String> {
    let message = s.message_size.unwrap_or(DEFAULT_MESSAGE);
    let profile = s.work.clone().unwrap_or_default();
    let mut work = Work::of(profile, message);
    if !work.is_none() && (message == 0 || message > buffer) {
        return Err(format!(
            "--message-size {message}: a request must be from 1 B to the --buffer ({buffer} B)"
        ));
    }
    if s.block_inline && !model.offloads_blocking() {
        return Err(format!(
            "--block-inline: {} makes blocking calls where its handler runs already; the flag is for {}",
            model.name(),
            server::MODELS
                .iter()
                .filter(|m| m.offloads_blocking())
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    work.offload_block = model.offloads_blocking() && !s.block_inline;
    let response = s.response_bytes.unwrap_or(HELLO.len());
    match s.protocol.unwrap_or_default() {
        Protocol::Http if response > MAX_RESPONSE => {
            return Err(format!(
                "--response-size {response}: at most {MAX_RESPONSE} B (64 MiB)"
            ));
        }
        Protocol::Http => {
            work.http = Some(Http {
                response,
                header_limit: buffer,
            })
        }
        // serve's own default (13) is not a choice.
        Protocol::Echo if response != HELLO.len() => {
            return Err(format!(
                "--response-size {response}: an echo server sends back what it reads; the flag is for --protocol http"
            ));
        }
        Protocol::Echo => {}
    }
    Ok(work)
}

/// `c10k serve` flags each `c10k run` cell sets itself: a `--server-arg`
/// may not override them (one naming another model was measured and
/// recorded under the cell's model).
const CELL_OWNED: [&str; 5] = ["model", "port", "cpus", "bind", "reuseport"];

/// `args`, `c10k serve` flags given as `flag` (`--server-arg`, `--variant
/// NAME`, a plan's `server_args`), as the settings they give, parsed once
/// here: none may set what each cell sets itself, and with `model` they
/// must make a valid server of it.
pub fn serve_settings(
    flag: &str,
    model: Option<&str>,
    args: &[String],
) -> Result<Settings, String> {
    let (settings, owned) = parse_serve(args).map_err(|e| format!("{flag}: {e}"))?;
    if let Some(id) = owned {
        return Err(format!(
            "{flag}: --{id} is set by c10k for each server it starts (its model, port and CPUs), not by hand"
        ));
    }
    // Without a model, as serve would take them: its default model's.
    let model = find_model(model.unwrap_or("epoll")).map_err(|e| format!("{flag}: {e}"))?;
    ServePlan::of(model, Place::nowhere(), &settings).map_err(|e| format!("{flag}: {e}"))?;
    Ok(settings)
}

/// `args` as the settings they give, and the first flag among them that
/// a cell sets itself ([`CELL_OWNED`]), unchecked beyond their parsing.
fn parse_serve(args: &[String]) -> Result<(Settings, Option<&'static str>), String> {
    use clap::{parser::ValueSource, Args, FromArgMatches};
    let m = ServeArgs::augment_args(clap::Command::new("serve").no_binary_name(true))
        .try_get_matches_from(args)
        .map_err(|e| crate::cli::one_line(&e))?;
    let given = |id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
    let owned = CELL_OWNED.iter().copied().find(|id| given(id));
    let a = ServeArgs::from_arg_matches(&m).map_err(|e| e.to_string())?;
    Ok((settings_from(&a, &given)?, owned))
}

/// `args` as settings, parsed only (a test's round trip).
#[cfg(test)]
fn serve_settings_unchecked(args: &[String]) -> Result<Settings, String> {
    parse_serve(args).map(|(s, _)| s)
}

/// Whether `s` makes a valid server of `model` (a plan read back, whose
/// settings were checked as flags when it was made).
pub(crate) fn check_settings(what: &str, model: &str, s: &Settings) -> Result<(), String> {
    let model = find_model(model).map_err(|e| format!("{what}: {e}"))?;
    ServePlan::of(model, Place::nowhere(), s)
        .map(drop)
        .map_err(|e| format!("{what}: {e}"))
}

/// The bytes of one request a server of `model` with `s` works on
/// (`--work` with its `--message-size`); 1 for a plain echo, whose every
/// byte may come back on its own.
pub(crate) fn request_bytes(model: &str, s: &Settings) -> Result<usize, String> {
    let plan = ServePlan::of(find_model(model)?, Place::nowhere(), s)?;
    let work = &plan.config.work;
    Ok(if work.is_none() { 1 } else { work.request })
}

/// What a server of `model` with `s`, under `work`, on `server_cpus`
/// (empty: every CPU) can do at once: its handlers, cores, and whether a
/// block or a wait holds a handler (the capacity search's queueing
/// bound).
pub(crate) fn handlers_of(
    model: &str,
    s: &Settings,
    work: Option<&Profile>,
    server_cpus: &[usize],
) -> Result<crate::server::work::Capacity, String> {
    let with_work = s.over(&Settings {
        work: work.cloned(),
        ..Settings::default()
    });
    let place = Place {
        cpus: (!server_cpus.is_empty()).then(|| server_cpus.to_vec()),
        ..Place::nowhere()
    };
    let plan = ServePlan::of(find_model(model)?, place, &with_work)
        .map_err(|e| format!("{model}: {e}"))?;
    let cores = if server_cpus.is_empty() {
        cpus_available()
    } else {
        server_cpus.len()
    };
    Ok(crate::server::work::Capacity::of(
        plan.model,
        &plan.config,
        cores,
    ))
}

/// `--cpus LIST`: the CPUs named, each one this process may use.
fn cpus_flag(list: Option<&str>) -> Result<Option<Vec<usize>>, String> {
    list.map(crate::sys::affinity::usable_cpu_list)
        .transpose()
        .map_err(|e| format!("--cpus: {e}"))
}

pub(crate) use crate::present::units::parse_duration;

#[cfg(test)]
mod tests {
    use super::parse_size;
    use crate::server::settings::{Settings, Value};

    /// Every knob of every model (`server::knobs`) makes a valid plan of
    /// `c10k serve --model MODEL FLAG VALUE` at both ends of its range and
    /// at every choice: the registry names only what the server takes.
    #[test]
    fn every_knob_is_a_serve_flag_over_its_whole_range() {
        use crate::server::knobs::{of, Values};
        let mut seen = 0;
        for m in crate::server::MODELS {
            for k in of(*m) {
                let values: Vec<Vec<String>> = match k.values {
                    Values::Count { least, most } | Values::Bytes { least, most } => {
                        vec![vec![least.to_string()], vec![most.to_string()]]
                    }
                    Values::Micros { least, most } => {
                        vec![vec![format!("{least}us")], vec![format!("{most}us")]]
                    }
                    Values::Switch => vec![vec![]],
                    Values::Choice(words) => words.iter().map(|w| vec![w.to_string()]).collect(),
                };
                for v in values {
                    let mut args = vec!["--model", m.name(), k.flag()];
                    args.extend(v.iter().map(String::as_str));
                    // The plan refuses what the server would not take.
                    let flags = serve(&args);
                    // The same value set on the typed settings makes the
                    // same server.
                    let value = match (k.values, v.first()) {
                        (Values::Switch, _) => Value::Switch(true),
                        (Values::Micros { .. }, Some(t)) => {
                            Value::Micros(t.trim_end_matches("us").parse().unwrap())
                        }
                        (Values::Choice(words), Some(t)) => {
                            Value::Word(words.iter().find(|w| *w == t).unwrap())
                        }
                        (_, Some(t)) => Value::Count(t.parse().unwrap()),
                        (_, None) => unreachable!("a valued knob has a value"),
                    };
                    let mut typed = Settings::default();
                    typed.set(k.field, value).unwrap();
                    let of = super::ServePlan::of(*m, super::Place::nowhere(), &typed).unwrap();
                    assert_eq!(
                        format!("{:?}", of.config),
                        format!("{:?}", flags.config),
                        "{args:?}"
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen >= 20, "only {seen} knob values");
    }

    /// Just past either end of a knob's declared range, serve refuses it
    /// naming the flag: the range `models --knobs` lists is the one it
    /// takes (issue 58.3: hybrid's pool listed to 4,096, taken to 100,000).
    #[test]
    fn serve_refuses_a_knob_just_outside_its_declared_range() {
        use crate::server::knobs::{of, Values};
        let mut seen = 0;
        for m in crate::server::MODELS {
            for k in of(*m) {
                let past: Vec<String> = match k.values {
                    Values::Count { least, most } | Values::Bytes { least, most } => {
                        let mut v = vec![(most + 1).to_string()];
                        v.extend(least.checked_sub(1).map(|n| n.to_string()));
                        v
                    }
                    Values::Micros { most, .. } => vec![format!("{}us", most + 1)],
                    Values::Switch | Values::Choice(_) => continue,
                };
                for v in past {
                    let args = ["--model", m.name(), k.flag(), v.as_str()];
                    let e = try_serve(&args).err();
                    let e = e.unwrap_or_else(|| panic!("{args:?} was taken"));
                    assert!(e.starts_with(k.flag()), "{args:?}: {e}");
                    seen += 1;
                }
            }
        }
        assert!(seen >= 15, "only {seen} values past a range");
        let e = try_serve(&["--model", "hybrid", "--workers", "4097"])
            .err()
            .unwrap_or_default();
        assert_eq!(
            e,
            "--workers 4097: hybrid takes 1–4,096 (handler threads in the pool; c10k models --knobs)"
        );
    }

    /// serve's defaults are one: its flags given nothing make the server
    /// that settings giving nothing make.
    #[test]
    fn no_flag_and_no_setting_make_one_server() {
        let flags = serve(&["--model", "tokio"]);
        let tokio = crate::server::find("tokio").unwrap();
        let typed =
            super::ServePlan::of(tokio, super::Place::nowhere(), &Settings::default()).unwrap();
        assert_eq!(format!("{:?}", flags.config), format!("{:?}", typed.config));
    }

    /// Every setting written as flags ([`Settings::args`]) reads back as
    /// itself: the child parses what the parent meant.
    #[test]
    fn settings_written_as_flags_read_back_as_themselves() {
        use crate::server::settings::{HandBack, RingRecv};
        let all = Settings {
            buffer_bytes: Some(4096),
            max_conns: Some(900),
            workers: Some(3),
            stack_bytes: Some(65536),
            edge: true,
            accept: Some(crate::server::AcceptMode::Exclusive),
            backlog: Some(128),
            interval_ns: Some(250_000),
            shared_state: Some(crate::sys::lock::LockKind::Spin),
            work: Some(crate::server::work::Profile::parse("cpu:20us+block:exp:1ms").unwrap()),
            message_size: Some(512),
            protocol: Some(crate::protocol::Protocol::Http),
            response_bytes: Some(1000),
            block_inline: true,
            global_queue_interval: Some(7),
            blocking_threads: Some(9),
            ring_entries: Some(64),
            ring_buffers: Some(32),
            ring_recv: Some(RingRecv::Once),
            hand_back: Some(HandBack::Each),
            nofile: Some(5000),
            sigpending: Some(77),
        };
        // Checked as flags without a model: parsed, not made a server.
        let back = super::serve_settings_unchecked(&all.args()).unwrap();
        assert_eq!(back, all);
        let one = Settings {
            workers: Some(8),
            ..Settings::default()
        };
        assert_eq!(
            super::serve_settings("--server-arg", Some("hybrid"), &one.args()),
            Ok(one)
        );
        let e = super::serve_settings("--server-arg", None, &["--port".into(), "9".into()]);
        assert!(e.unwrap_err().contains("--port is set by c10k"));
    }

    /// The plan `c10k serve ARGS` makes.
    fn serve(args: &[&str]) -> super::ServePlan {
        try_serve(args).expect("a plan")
    }

    /// The plan `c10k serve ARGS` makes, or its one-line refusal.
    fn try_serve(args: &[&str]) -> Result<super::ServePlan, String> {
        use clap::{Args, FromArgMatches};
        let m =
            crate::cli::ServeArgs::augment_args(clap::Command::new("serve").no_binary_name(true))
                .try_get_matches_from(args)
                .expect("flags");
        let a = crate::cli::ServeArgs::from_arg_matches(&m).expect("flags");
        super::ServePlan::from_args(&a)
    }

    /// `--protocol http` makes every model an HTTP server, its response
    /// size checked; a response size without it is refused.
    #[test]
    fn http_is_served_by_every_model_and_its_size_checked() {
        for m in crate::server::MODELS {
            let plan = serve(&[
                "--model",
                m.name(),
                "--protocol",
                "http",
                "--buffer",
                "8KiB",
            ]);
            assert_eq!(
                plan.config.work.http,
                Some(crate::server::work::Http {
                    response: 13,
                    header_limit: 8192
                }),
                "{}",
                m.name()
            );
        }
        assert_eq!(serve(&["--model", "poll"]).config.work.http, None);
        let e = try_serve(&["--response-size", "20"])
            .err()
            .unwrap_or_default();
        assert!(e.contains("--response-size 20: an echo server"), "{e}");
        let e = try_serve(&["--protocol", "http", "--response-size", "65MiB"])
            .err()
            .unwrap_or_default();
        assert!(e.contains("at most"), "{e}");
    }

    #[test]
    fn pool_and_ring_sizes_go_only_to_the_models_that_have_them() {
        let refused = |args: &[&str], words: &str| {
            let e = try_serve(args).err().unwrap_or_default();
            assert!(e.contains(words), "{args:?}: {e:?}");
        };
        refused(
            &["--model", "epoll", "--ring-entries", "8"],
            "epoll has no io_uring ring",
        );
        refused(
            &["--model", "uring", "--ring-entries", "100"],
            "--ring-entries 100: must be a power of two",
        );
        refused(
            &["--model", "uring", "--ring-buffers", "8"],
            "--ring-buffers 8: uring takes 16–32,768",
        );
        refused(
            &["--model", "poll", "--ring-recv", "once"],
            "poll has no io_uring ring",
        );
        assert!(
            serve(&["--model", "uring", "--ring-recv", "once"])
                .config
                .ring_recv_once
        );
        assert!(
            !serve(&["--model", "uring", "--ring-recv", "multishot"])
                .config
                .ring_recv_once
        );
        refused(
            &["--model", "epoll-workers", "--hand-back", "each"],
            "epoll-workers has no pool fed by a poll loop; it is hybrid's",
        );
        assert!(
            serve(&["--model", "hybrid", "--hand-back", "each"])
                .config
                .hand_back_each
        );
        assert!(!serve(&["--model", "hybrid"]).config.hand_back_each);
        refused(
            &["--model", "threads", "--blocking-threads", "8"],
            "threads has no blocking pool",
        );
        refused(
            &["--model", "tokio", "--blocking-threads", "0"],
            "--blocking-threads 0: tokio takes 1–4,096",
        );
        let p = serve(&["--model", "tokio", "--blocking-threads", "1000"]);
        assert_eq!(p.config.blocking_threads, Some(1000));
        let p = serve(&[
            "--model",
            "uring",
            "--ring-entries",
            "64",
            "--ring-buffers",
            "1024",
        ]);
        assert_eq!(
            (p.config.ring_entries, p.config.ring_buffers),
            (Some(64), Some(1024))
        );
    }

    #[test]
    fn workers_default_to_the_cpus_the_server_may_use() {
        let first = crate::sys::affinity::current_cpus()[0].to_string();
        // Every model but the one with a worker per connection (prefork),
        // whose pool is sized for connections, not CPUs.
        let pools = crate::server::MODELS
            .iter()
            .filter(|m| !m.worker_per_connection())
            .map(|m| m.name());
        for model in pools {
            let pinned = serve(&["--model", model, "--cpus", &first]);
            assert_eq!(pinned.config.workers, 1, "{model} on one CPU");
            let free = serve(&["--model", model]);
            assert_eq!(
                free.config.workers,
                crate::sys::affinity::cpus_available(),
                "{model}"
            );
            let asked = serve(&["--model", model, "--cpus", &first, "--workers", "3"]);
            assert_eq!(asked.config.workers, 3, "{model}: --workers wins");
        }
        for m in crate::server::MODELS
            .iter()
            .filter(|m| m.worker_per_connection())
        {
            let plan = serve(&["--model", m.name(), "--cpus", &first]);
            assert_eq!(plan.config.workers, 64, "{}", m.name());
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("16KiB"), Ok(16384));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }

    /// The files under src/ that name `crate::cli` or clap: every one but
    /// main.rs, cli.rs, commands/ and the plan layer is a flag seen below the plan.
    fn flag_readers(dir: &std::path::Path, src: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                flag_readers(&path, src, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            if names_a_flag(&text) {
                let name = path.strip_prefix(src).expect("under src/");
                out.push(name.to_string_lossy().into_owned());
            }
        }
    }

    /// Whether `text` names the module `cli` (`crate::cli`, `c10k::cli`,
    /// not `crate::client`) or the crate `clap`.
    fn names_a_flag(text: &str) -> bool {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        ["crate::cli", "c10k::cli", "clap"].iter().any(|name| {
            text.match_indices(name).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + name.len()..].chars().next();
                let word = !before.is_some_and(ident) && !after.is_some_and(ident);
                // `clap` alone is a word in prose too: only as a path.
                word && (*name != "clap" || text[at..].starts_with("clap::"))
            })
        })
    }

    #[test]
    fn flag_names_are_told_from_their_neighbours() {
        assert!(names_a_flag("use crate::cli::LoadArgs;"));
        assert!(names_a_flag("use crate::cli;"));
        assert!(names_a_flag("#[derive(clap::ValueEnum)]"));
        assert!(names_a_flag("use clap::Parser;"));
        assert!(!names_a_flag("use crate::client::plan::LoadPlan;"));
        assert!(!names_a_flag("// a flag that clap parses"));
        assert!(!names_a_flag("myclap::X"));
    }

    /// Only main.rs, cli.rs, commands/ and the plan layer see a flag: the engine takes
    /// settings, never a clap type.
    #[test]
    fn nothing_below_the_plan_sees_a_flag() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        flag_readers(&src, &src, &mut found);
        found.retain(|f| {
            !(f == "main.rs"
                || f == "cli.rs"
                || f.starts_with("plan/")
                || f.starts_with("commands/"))
        });
        found.sort();
        assert!(
            found.is_empty(),
            "these files name crate::cli or clap; turn the flags into settings in src/plan/: {found:?}"
        );
    }
}
