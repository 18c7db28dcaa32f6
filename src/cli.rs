//! Raw command-line flags (clap). Nothing here is validated beyond its type;
//! [`crate::plan`] turns flags into settings. The few enums a flag chooses
//! from are the plan's and the engine's own types, declared once where
//! they are used: only their spelling and help are here (`flag_values!`).

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::client::plan::Arrivals;
use crate::protocol::Protocol;
use crate::results::matrix::{Instances, Order, Pin, WorkloadKind};
use crate::server::settings::{HandBack, RingRecv};
use crate::server::AcceptMode;
use crate::sys::lock::LockKind;

/// A clap error as one line: its first paragraph, which names what is
/// wrong (a missing argument is on the lines after "were not provided:"),
/// without clap's "error: " prefix and usage, and then clap's suggestion
/// when it has one (`tip: a similar argument exists: '--models'`).
pub fn one_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let tips = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip: a similar") || l.starts_with("tip: some similar"));
    std::iter::once(first.trim_start_matches("error: "))
        .chain(tips)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The exit codes, for `--help` (the README says the same).
const EXIT_CODES: &str = "Exit codes: 0 done; 1 a failure (the cause on stderr); 2 bad flags \
or a request that cannot be done as given; 3 the kernel or a sandbox refuses the model (serve); \
4 `load --fail-on-error` saw errors; 5 no result (load: every connection failed or no echo \
came back; run: no cell was measured), the cause on stderr in one line, every output still \
written; 130 interrupted (load, run). compare: 0 compared, 1 `--fail-if-slower` found a cell \
slower (or an output could not be written), 2 an input that cannot be read or compared, 5 no \
cell measured on both sides.";

/// The command line, with every help text shown as written. Clap reads
/// `{n}` in a help text as a line break (a template variable kept from
/// clap 2, with no escape), and `{n}` is one of the `--agent` template's
/// placeholders: an ANSI reset after its `{` keeps clap from seeing it and
/// prints as nothing (it is stripped when the help is not in colour).
pub fn command() -> clap::Command {
    // The gate of `c10k run` judges a comparison with its baseline: without
    // `--baseline` there is none, and a gate that can never fail is refused.
    literal_braces(Cli::command()).mut_subcommand("run", |run| {
        run.mut_group("GateArgs", |g| g.requires("baseline"))
    })
}

/// The command line as the OS gave it, one string for the record (a run's
/// plan, a report): the words joined by spaces, each as it was; a word that
/// is not UTF-8 is written as bash's `$'…'` of its bytes (`$'res\xff'`), so
/// the line still runs as given and nothing panics on it.
pub fn command_line() -> String {
    std::env::args_os()
        .map(|a| word(&a))
        .collect::<Vec<_>>()
        .join(" ")
}

fn word(a: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    if let Some(s) = a.to_str() {
        return s.to_string();
    }
    let mut out = String::from("$'");
    for &b in a.as_bytes() {
        match b {
            b'\\' | b'\'' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Parses the process's arguments as [`command`] defines them.
pub fn try_parse() -> Result<Cli, clap::Error> {
    try_parse_from(std::env::args_os())
}

/// Parses `args` (the program's name first) as [`command`] defines them.
/// A mistyped subcommand gets clap's suggestion, and where clap has none,
/// one of ours: clap's measure (Jaro) finds nothing close to a swap of two
/// letters in a short word (`rnu`), which one edit of ours does (`run`).
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cmd = command();
    match cmd.clone().try_get_matches_from(&args) {
        Ok(m) => {
            let mut cli = Cli::from_arg_matches(&m)?;
            // Built, a group lists the flags that name it.
            let mut built = cmd;
            built.build();
            if let (Command::Run(run), Some(sub), Some(def)) = (
                &mut cli.command,
                m.subcommand_matches("run"),
                built.find_subcommand("run"),
            ) {
                run.given = Given::of(def, sub);
            }
            Ok(cli)
        }
        Err(mut e) => {
            suggest_subcommand(&mut e, &cmd, &args);
            Err(e)
        }
    }
}

/// Which of `c10k run`'s flags the command line gave, read from the groups
/// each flag is declared in (so no list of flags is kept by hand): clap
/// fills the flags, [`try_parse_from`] this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// Every flag given that a plan records (group `matrix`, and the
    /// agents' flags), as typed: `--slo`, `-c`, `EXPERIMENT`.
    pub shaping: Vec<String>,
    /// One changes what a preset measures (group `customises`, or an
    /// agent's flag): the plan's title says "(customised)".
    pub customises: bool,
    /// One makes a matrix of one's own (group `own_matrix`: other models,
    /// counts, work or servers): without an experiment named, the plan is
    /// `custom`, not the tour.
    pub own_matrix: bool,
}

impl Given {
    /// What `matches` of the `run` command `def` gave on the command line
    /// (a default is not given).
    fn of(def: &clap::Command, matches: &clap::ArgMatches) -> Given {
        let typed = |id: &clap::Id| {
            matches!(
                matches.value_source(id.as_str()),
                Some(clap::parser::ValueSource::CommandLine)
            )
        };
        let members = |group: &str| -> Vec<clap::Id> {
            def.get_groups()
                .filter(|g| g.get_id() == group)
                .flat_map(|g| g.get_args().cloned().collect::<Vec<_>>())
                .collect()
        };
        let any = |group: &str| members(group).iter().any(typed);
        let shaping_ids: Vec<clap::Id> = members("matrix")
            .into_iter()
            .chain(members("AgentArgs"))
            .filter(typed)
            .collect();
        let shaping = def
            .get_arguments()
            .filter(|a| shaping_ids.contains(a.get_id()))
            .map(|a| match (a.get_long(), a.get_short()) {
                (Some(l), _) => format!("--{l}"),
                (None, Some(s)) => format!("-{s}"),
                (None, None) => a.get_id().as_str().to_uppercase(),
            })
            .collect();
        Given {
            shaping,
            // The agents' flags are `load`'s too, whose groups differ:
            // on `run`, each changes where the client runs.
            customises: any("customises") || any("AgentArgs"),
            own_matrix: any("own_matrix"),
        }
    }
}

/// Adds the subcommands one edit away from the one `e` did not know,
/// among those of the command it was typed after, when clap suggested none.
fn suggest_subcommand(e: &mut clap::Error, root: &clap::Command, args: &[std::ffi::OsString]) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return;
    }
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidSubcommand) else {
        return;
    };
    let typed = typed.clone();
    let mut cmd = root;
    for a in args.iter().skip(1) {
        let a = a.to_string_lossy();
        if a == typed {
            break;
        }
        if let Some(sub) = cmd.find_subcommand(a.as_ref()) {
            cmd = sub;
        }
    }
    let near: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name())
        .filter(|n| edits(&typed, n) <= 1)
        .map(String::from)
        .collect();
    let value = match near.len() {
        0 => return,
        1 => ContextValue::String(near[0].clone()),
        _ => ContextValue::Strings(near),
    };
    e.insert(ContextKind::SuggestedSubcommand, value);
}

/// Clap's tip for a name one edit away from one of `names` (`tip: a
/// similar experiment exists: 'tour'`), for the names clap does not check
/// (an experiment, a model); `None` when none is that close.
pub fn similar(what: &str, typed: &str, names: &[&str]) -> Option<String> {
    let near: Vec<String> = names
        .iter()
        .filter(|n| edits(typed, n) <= 1)
        .map(|n| format!("'{n}'"))
        .collect();
    match near.len() {
        0 => None,
        1 => Some(format!("tip: a similar {what} exists: {}", near[0])),
        _ => Some(format!(
            "tip: some similar {what}s exist: {}",
            near.join(", ")
        )),
    }
}

/// Edits from `a` to `b`: characters inserted, deleted, replaced, or two
/// neighbours swapped (the optimal string alignment distance).
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: edits from a[..i] to b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

fn literal_braces(mut cmd: clap::Command) -> clap::Command {
    fn keep(text: &clap::builder::StyledStr) -> clap::builder::StyledStr {
        text.ansi().to_string().replace("{n}", "{\x1b[0mn}").into()
    }
    if let Some(about) = cmd.get_about().map(keep) {
        cmd = cmd.about(about);
    }
    if let Some(about) = cmd.get_long_about().map(keep) {
        cmd = cmd.long_about(about);
    }
    cmd.mut_args(|mut a| {
        if let Some(help) = a.get_help().map(keep) {
            a = a.help(help);
        }
        if let Some(help) = a.get_long_help().map(keep) {
            a = a.long_help(help);
        }
        a
    })
    .mut_subcommands(literal_braces)
}

/// c10k: which concurrency model should a network server use? Measured.
#[derive(Debug, Parser)]
#[command(name = "c10k", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `c10k models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// List each model's knobs instead: the `serve` flags worth tuning,
    /// their ranges and defaults.
    #[arg(long)]
    pub knobs: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a TCP echo server (RFC 862) in one concurrency model.
    Serve(ServeArgs),
    /// List the concurrency models and how each waits.
    Models(ModelsArgs),
    /// Drive a TCP echo server with many connections and measure it.
    #[command(after_help = EXIT_CODES)]
    Load(Box<LoadArgs>),
    /// Run an experiment (a preset reproducing a classic study, or your own
    /// matrix) and write results and a report.
    #[command(after_help = EXIT_CODES)]
    Run(Box<RunArgs>),
    /// Write the exports and report.html of a results directory again.
    Report(ReportArgs),
    /// Did it get faster? Two results directories of `c10k run` (or two
    /// `c10k load --json` files, or directories of them, one per repeat)
    /// cell by cell, with a 95 % interval and a verdict per cell.
    #[command(after_help = EXIT_CODES)]
    Compare(Box<CompareArgs>),
    /// Micro-benchmarks of the mechanisms under the models.
    #[command(subcommand)]
    Micro(MicroCommand),
    /// Check that an echo server behaves: a c10k model, a server command, a
    /// peer, or an address; PASS, FAIL or SKIP per check, with evidence.
    Conform(ConformArgs),
    /// A load agent: speaks the agent protocol on stdin and stdout (started
    /// by `c10k load --agent` or a split run, not by hand).
    Agent,
    /// The thundering herd: W processes waiting on one listening socket.
    Herd(HerdArgs),
    /// Print a shell's completion script, e.g. `c10k completions bash >
    /// ~/.local/share/bash-completion/completions/c10k`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), every subcommand in it: `c10k man >
    /// c10k.1; man ./c10k.1`.
    Man,
}

/// `c10k completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `c10k micro BENCH`.
#[derive(Debug, Subcommand)]
pub enum MicroCommand {
    /// Thread and process creation, and memory per parked thread.
    Spawn(SpawnArgs),
    /// Return time of select, poll and epoll_wait over N descriptors, A active.
    Dispatch(DispatchArgs),
    /// Accepts per second under a stream of connects.
    Accept(MicroAcceptArgs),
}

/// Output flags every micro-benchmark and the herd share.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// `c10k micro spawn`.
#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// How many threads or processes to create per measurement.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000")]
    pub counts: Vec<usize>,
    /// Small thread stack, beside the platform's default.
    #[arg(long, default_value = "64KiB")]
    pub small_stack: String,
    /// Resident set of the parent for the large fork, e.g. 256MiB.
    #[arg(long, default_value = "256MiB")]
    pub large_rss: String,
    /// Repeats of every measurement.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Threads parked at once to measure memory per parked thread.
    #[arg(long, default_value_t = 1000)]
    pub parked: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `c10k micro dispatch`.
#[derive(Debug, Args)]
pub struct DispatchArgs {
    /// Descriptors watched [default: 10, 100, 1000, 10000, capped by the
    /// open-files limit].
    #[arg(long, value_delimiter = ',')]
    pub fds: Option<Vec<usize>>,
    /// Active descriptors (written to) per call.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub active: Vec<usize>,
    /// Calls timed per cell.
    #[arg(long, default_value_t = 1000)]
    pub calls: usize,
    /// Repeats of every cell.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `c10k micro accept`.
#[derive(Debug, Args)]
pub struct MicroAcceptArgs {
    /// Client threads connecting.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// How long each mode is measured, e.g. 2s.
    #[arg(short, long, default_value = "2s")]
    pub duration: String,
    /// Interval control: the least time between two waits, e.g. 1ms.
    #[arg(long, default_value = "1ms")]
    pub interval: String,
    /// Repeats of every mode.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `c10k herd`.
#[derive(Debug, Args)]
pub struct HerdArgs {
    /// Worker processes waiting on the listener.
    #[arg(short, long, value_delimiter = ',', default_value = "1,8,64")]
    pub workers: Vec<usize>,
    /// Copies of the listener in each worker's wait set: 1 is the listener
    /// alone, M is it and M-1 dup(2)s (the study's "dupes per fork"); a
    /// list gives a series per count, e.g. 1,1019.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub dups: Vec<usize>,
    /// Wait methods: select, poll, epoll, epoll-exclusive, accept,
    /// reuseport [default: all].
    #[arg(long, value_delimiter = ',')]
    pub methods: Option<Vec<String>>,
    /// New connections per second.
    #[arg(short, long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Connections per cell.
    #[arg(short = 'n', long, default_value_t = 2000)]
    pub connections: usize,
    /// Repeats of every cell.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Also draw connect latency and wakeups per connection against the
    /// worker count, one line per method and copy count, as an SVG chart to
    /// this file.
    #[arg(long)]
    pub svg: Option<std::path::PathBuf>,
    /// Leave out the cells this machine cannot hold (named in the notes and
    /// the JSON) instead of refusing the run.
    #[arg(long)]
    pub skip_unfit: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `c10k run [EXPERIMENT]`: a preset's matrix, changed by any flag given.
#[derive(Debug, Args)]
// What a plan records (`matrix`; `--resume` takes none of it), what
// changes what a preset measures (`customises`), and what makes a matrix
// of one's own (`own_matrix`): declared on each flag, read by
// [`Given`], never listed again.
#[command(group(clap::ArgGroup::new("matrix").multiple(true)))]
#[command(group(clap::ArgGroup::new("customises").multiple(true)))]
#[command(group(clap::ArgGroup::new("own_matrix").multiple(true)))]
pub struct RunArgs {
    /// tour (default), thesis, muller, comp8005, accept, c1m, peers,
    /// handlers or a micro-benchmark (dispatch, spawn, micro-accept,
    /// herd); `--list` says what each does.
    #[arg(group = "matrix")]
    pub experiment: Option<String>,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Models, e.g. select,threads [default: every model]; may be empty
    /// (`--models ''`) when --server names servers.
    #[arg(long, value_delimiter = ',', groups = ["matrix", "customises", "own_matrix"])]
    pub models: Option<Vec<String>>,
    /// A server of your own beside the models: NAME='COMMAND ARGS {port}'
    /// ({port}: a free port c10k picked; {addr}: the address to bind;
    /// {cpus}: the server side's CPU list). Ready when it prints a line
    /// starting READY or listens on the port. Repeatable.
    #[arg(long = "server", value_name = "NAME=COMMAND", groups = ["matrix", "customises", "own_matrix"])]
    pub servers: Vec<String>,
    /// A server already running, here or elsewhere, beside the models:
    /// NAME=HOST:PORT. Only the client's side is measured (its process is
    /// not c10k's to sample). Repeatable.
    #[arg(long = "target", value_name = "NAME=HOST:PORT", groups = ["matrix", "customises", "own_matrix"])]
    pub targets: Vec<String>,
    /// How long a --server may take to be ready [default: 60s].
    #[arg(long, value_name = "DURATION", group = "matrix")]
    pub ready_timeout: Option<String>,
    /// Connection counts, e.g. 2,4,8.
    #[arg(short, long, value_delimiter = ',', groups = ["matrix", "customises", "own_matrix"])]
    pub connections: Option<Vec<usize>>,
    /// Work profiles: every model at every count runs under each, with
    /// its rankings and verdict per profile and each figure beside the
    /// bound the work allows; none, or serve's --work SPEC, e.g.
    /// none,cpu:20us,block:1ms (a request is one message, -m bytes).
    #[arg(long, value_delimiter = ',', value_name = "SPECS", groups = ["matrix", "customises", "own_matrix"])]
    pub work: Option<Vec<String>>,
    /// Rounds of resident slots [default: 10], or repeats of every cell
    /// measured one at a time. `auto`: in slots, looks of 5 rounds until
    /// every model is told apart from the best, to 40 rounds or more as
    /// --budget holds (each interval at Pocock's level for the looks
    /// planned, 98.8 % for 8, so that together they keep 5 %); with
    /// --sequential, repeat each cell until its median is known to ±5 %
    /// (95 % interval), 3 to 10 runs.
    #[arg(long, value_name = "N|auto", groups = ["matrix", "customises"])]
    pub runs: Option<String>,
    /// The most the run may take, e.g. 5m, 90s: a plan that cannot fit is
    /// refused up front, and `--runs auto` adds no look that would pass it
    /// [default with --runs auto: 3m for the tour and a matrix of your own, 10m otherwise].
    #[arg(long, value_name = "DURATION", groups = ["matrix", "customises"])]
    pub budget: Option<String>,
    /// Two models are equivalent when the 95 % interval of their ratio
    /// lies within ± this margin, e.g. 5% (the default), 2%.
    #[arg(long, value_name = "PCT", group = "matrix")]
    pub margin: Option<String>,
    /// Capacity at a latency target: for each model, count and work
    /// profile, search the open loop's offered rate (Poisson arrivals) for
    /// the highest that holds every target, e.g. p99=1ms,
    /// p50=200us,p99=2ms; `+work` counts from the work's own time
    /// (p99=1ms+work is 2 ms under block:1ms) [the capacity preset:
    /// p99=5ms+work, within its budget].
    #[arg(long, value_name = "TARGETS", group = "matrix")]
    pub slo: Option<String>,
    /// Each model at its best: before the matrix, search every c10k
    /// model's knobs (`c10k models --knobs`) at each count and work
    /// profile for its highest throughput, pools starting from Little's
    /// law (threads ≥ rate × the time a request holds one), in paired
    /// rounds beside its defaults, within this budget; the matrix then runs
    /// each with what its search kept, named beside it ("hybrid (pool
    /// 128)"), and the report shows the defaults' figure beside the tuned
    /// one [default: auto, three times what the first step of every
    /// search takes, said before it starts].
    #[arg(
        long,
        value_name = "BUDGET",
        num_args = 0..=1,
        default_missing_value = "auto",
        groups = ["matrix", "customises"]
    )]
    pub tune: Option<String>,
    /// With --tune: search only this knob of MODEL (the others keep their
    /// defaults), within a range of your own for a count, e.g.
    /// hybrid:--workers=8..512 or epoll:--edge; repeat for more.
    #[arg(
        long,
        value_name = "MODEL:FLAG[=LEAST..MOST]",
        requires = "tune",
        group = "matrix"
    )]
    pub tune_knob: Vec<String>,
    /// Times a run disturbed from outside (CPU used by other processes, or
    /// steal) is run again before it is kept and marked [default: 2].
    #[arg(long, value_name = "N", group = "matrix")]
    pub repeat_disturbed: Option<usize>,
    /// What the client does: closed (loop), burst, churn.
    #[arg(long, value_enum, groups = ["matrix", "customises"])]
    pub workload: Option<WorkloadKind>,
    /// Messages per connection (a fixed amount of work instead of a timed
    /// window).
    #[arg(short = 'n', long, groups = ["matrix", "customises"])]
    pub messages: Option<u64>,
    /// Measured window of a timed cell, e.g. 1s, 500ms.
    #[arg(short, long, groups = ["matrix", "customises"])]
    pub duration: Option<String>,
    /// Traffic before each timed cell's measured window.
    #[arg(long, group = "matrix")]
    pub warmup: Option<String>,
    /// Message size, e.g. 64, 1KiB; over --protocol http, the body of a
    /// POST (0, the default there: a GET).
    #[arg(short = 'm', long, groups = ["matrix", "customises"])]
    pub message_size: Option<String>,
    /// What every server and client speaks: echo, or http (HTTP/1.1:
    /// every model runs `serve --protocol http`, the client sends
    /// requests, keep-alive, pipelined with --depth; --server and
    /// --target then name web servers) [default: echo; web: http].
    #[arg(long, value_enum, groups = ["matrix", "customises"])]
    pub protocol: Option<Protocol>,
    /// Open loop: messages per second in total over each cell's
    /// connections, on a schedule whatever the server's pace (latency
    /// corrected for coordinated omission, as wrk2's -R).
    #[arg(short = 'r', long, value_name = "RATE", groups = ["matrix", "customises"])]
    pub rate: Option<f64>,
    /// Open loop: messages per second on each connection (the load grows
    /// with the connections).
    #[arg(long, value_name = "RATE", conflicts_with = "rate", groups = ["matrix", "customises"])]
    pub rate_per_connection: Option<f64>,
    /// New connections per second while each cell's connections come up
    /// [default: as fast as the listen queue takes them].
    #[arg(long, value_name = "RATE", groups = ["matrix", "customises"])]
    pub connect_rate: Option<f64>,
    /// Open loop: the client works in passes at least this long apart
    /// (`c10k load --interval`), e.g. 2ms: fewer wake-ups, each latency
    /// late by up to one interval at each end [default: 0s; c1m: 10ms].
    #[arg(long, value_name = "DURATION", groups = ["matrix", "customises"])]
    pub client_interval: Option<String>,
    /// A connect or echo not answered within this fails its connection
    /// [default: 10s; comp8005: 120s].
    #[arg(long, group = "matrix")]
    pub timeout: Option<String>,
    /// Where server and client run: split (different CPUs), same, all
    /// (each on every CPU), none [default: split; c1m: none; handlers:
    /// all].
    #[arg(long, value_enum, group = "matrix")]
    pub pin: Option<Pin>,
    /// Repeat order: interleaved (run r of every cell, then r+1) or
    /// sequential.
    #[arg(long, value_enum, group = "matrix")]
    pub order: Option<Order>,
    /// Measure each cell on its own, one at a time (its server started,
    /// measured for --warmup and --duration, stopped), instead of in
    /// resident slots; implied by --duration, --warmup, --messages and
    /// --order sequential.
    #[arg(long, groups = ["matrix", "customises"], conflicts_with_all = ["slot", "slot_warmup"])]
    pub sequential: bool,
    /// Resident slots (the default for a timed closed or open loop): the
    /// servers of a count stay up together and the load moves between them
    /// in slots this long, warm-up included, one per server each round, in
    /// a shuffled order [default: 300ms].
    #[arg(long, value_name = "DURATION", groups = ["matrix", "customises"])]
    pub slot: Option<String>,
    /// The start of each slot that is not measured [default: 100ms].
    #[arg(long, value_name = "DURATION", groups = ["matrix", "customises"])]
    pub slot_warmup: Option<String>,
    /// How long a resident server's instance serves: `round` starts every
    /// model anew after each of its slots, so the interval covers how much
    /// two instances of one model differ; `run` keeps one for the whole
    /// run (no start per round) [default: run].
    #[arg(long, value_enum, groups = ["matrix", "customises"], conflicts_with = "sequential")]
    pub instances: Option<Instances>,
    /// Write each cell's per-connection CSV under cells/.
    #[arg(long, group = "matrix")]
    pub per_connection_csv: bool,
    /// Pass this to every `c10k serve`, e.g. --server-arg=--stack-size=2MiB
    /// (repeatable).
    #[arg(
        long = "server-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        groups = ["matrix", "customises"]
    )]
    pub server_args: Vec<String>,
    /// A c10k model with more serve flags under a name of its own, run
    /// beside the models: NAME='MODEL FLAGS', e.g. 'select+lock=select
    /// --shared-state' or 'epoll@1ms=epoll --interval 1ms' (repeatable).
    #[arg(long = "variant", value_name = "NAME=MODEL FLAGS", groups = ["matrix", "customises", "own_matrix"])]
    pub variants: Vec<String>,
    /// Every cell's client runs on agents (--agent, --agents-file,
    /// --agents, as for `c10k load`); the server stays here.
    #[command(flatten)]
    pub agents: AgentArgs,
    /// Address the servers bind, one the agents can reach (e.g. this
    /// host's address on their network) [default: 127.0.0.1].
    #[arg(long, value_name = "ADDR", group = "matrix")]
    pub bind: Option<std::net::IpAddr>,
    /// Directory under which results/EXPERIMENT-TIME/ is made.
    #[arg(long, default_value = "results")]
    pub out: std::path::PathBuf,
    /// Finish an interrupted run in DIR (its own plan is used): no flag of
    /// the matrix (group `matrix`) or of the agents goes with it.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["matrix", "AgentArgs"])]
    pub resume: Option<std::path::PathBuf>,
    /// Do not write report.html (the exports are still written).
    #[arg(long)]
    pub no_report: bool,
    /// Compare this run with a results directory at the end (compare.txt,
    /// .json, .md, .html beside the results); with no matrix flags, run
    /// DIR's plan again (with --resume, the resumed run's own plan).
    #[arg(long, value_name = "DIR")]
    pub baseline: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub gate: GateArgs,
    /// Which flags the command line gave ([`try_parse_from`] fills it).
    #[arg(skip)]
    pub given: Given,
}

/// What turns a comparison into a pass or a fail (`compare`, `run
/// --baseline`).
#[derive(Debug, Args, Clone, Default)]
pub struct GateArgs {
    /// Exit 1 when a cell is slower than the baseline by more than PCT
    /// with 95 % confidence (the whole interval beyond it), e.g. 5%.
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<String>,
    /// A model you did not change, run on both sides: every figure is
    /// taken as a ratio to it within its own round, so drift of the
    /// machine between the two sessions cancels.
    #[arg(long, value_name = "MODEL")]
    pub reference: Option<String>,
}

/// `c10k compare BASE NEW`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a results directory of `c10k run`, a `c10k load
    /// --json` file, or a directory of such files (one per repeat).
    pub base: std::path::PathBuf,
    /// What changed, of the same kind as BASE.
    pub new: std::path::PathBuf,
    /// Equivalent when the 95 % interval of NEW/BASE lies within ± this
    /// margin; slower or faster only when it lies wholly beyond it
    /// [default: 5%].
    #[arg(long, value_name = "PCT")]
    pub margin: Option<String>,
    #[command(flatten)]
    pub gate: GateArgs,
    /// Also write the comparison as JSON (schema/compare-report.v1).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
    /// Also write it as Markdown, for a pull-request comment.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<std::path::PathBuf>,
    /// Also write a self-contained HTML page with before/after charts.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

/// `c10k report DIR`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results directory made by `c10k run`.
    pub dir: std::path::PathBuf,
}

/// `c10k load HOST:PORT`: closed loop by default; `--rate` for open loop,
/// `--burst` for the burst workload, `--churn` for connection churn.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The server, e.g. 127.0.0.1:7: any echo server (RFC 862), or any
    /// HTTP/1.1 server with --protocol http.
    pub target: String,
    /// Active connections.
    #[arg(short, long, default_value_t = 1)]
    pub connections: usize,
    /// More connections that stay open and silent (hot and cold).
    #[arg(long, default_value_t = 0)]
    pub idle: usize,
    /// Event-loop threads [default: CPUs available, at most connections].
    #[arg(short, long)]
    pub threads: Option<usize>,
    /// Messages in flight per connection (closed loop).
    #[arg(long, default_value_t = 1)]
    pub depth: usize,
    /// Message size, e.g. 64, 1KiB; over --protocol http, the body of a
    /// POST (0: a GET) [default: 64; over http, 0].
    #[arg(short, long)]
    pub message_size: Option<String>,
    /// Send this text as every message instead of generated bytes.
    #[arg(long, conflicts_with = "message_size")]
    pub payload: Option<String>,
    /// What to speak: echo (every byte back, checked), or http (HTTP/1.1
    /// requests, keep-alive, --depth pipelined; a response framed by its
    /// Content-Length or chunks, anything but 2xx counted as an error).
    #[arg(long, value_enum, default_value = "echo")]
    pub protocol: Protocol,
    /// Messages per connection, then stop.
    #[arg(short = 'n', long, conflicts_with = "duration")]
    pub messages: Option<u64>,
    /// How long to measure, e.g. 10s, 500ms, 2m [default: 10s unless -n].
    #[arg(short, long)]
    pub duration: Option<String>,
    /// Run this long before measuring; echoes in it are not counted.
    #[arg(long, default_value = "0s")]
    pub warmup: String,
    /// Open loop: messages per second in total, spread over the connections.
    #[arg(short, long)]
    pub rate: Option<f64>,
    /// Open loop: work in passes at least this long apart, e.g. 2ms:
    /// sends that fall due and echoes that arrive in between are handled
    /// together, one wake-up per pass instead of one per message. A send
    /// goes out up to one interval late (counted in the send lag and the
    /// latency) and an echo is read up to one interval late (counted in the
    /// latency); the report states it [default: 0s, every send at its due
    /// time and every echo read as it arrives; max 1s].
    #[arg(long, default_value = "0s", requires = "rate")]
    pub interval: String,
    /// Open loop: when each connection's messages fall due. uniform: every
    /// 1/rate, the connections' phases staggered (wrk2's schedule);
    /// poisson: at random, exponential gaps of the same mean, so the
    /// arrivals over all connections are a Poisson stream (the queueing
    /// model's, and the capacity search's).
    #[arg(long, value_enum, default_value_t = Arrivals::Uniform, requires = "rate")]
    pub arrivals: Arrivals,
    /// Burst: connect all, send one message on every connection at once,
    /// time until every echo is back.
    #[arg(long, conflicts_with_all = ["rate", "churn"])]
    pub burst: bool,
    /// Burst rounds.
    #[arg(long, default_value_t = 1, requires = "burst")]
    pub rounds: usize,
    /// Churn: open connections, optionally echo one message, close.
    #[arg(long, conflicts_with = "rate")]
    pub churn: bool,
    /// With --churn: echo one message on each connection before closing.
    #[arg(long, requires = "churn")]
    pub churn_echo: bool,
    /// Close with SO_LINGER 0 (a reset, no TIME_WAIT).
    #[arg(long)]
    pub linger0: bool,
    /// New connections per second (ramp-up, or the churn rate)
    /// [default: as fast as the backlog allows].
    #[arg(long)]
    pub connect_rate: Option<f64>,
    /// A connect or an echo not answered within this is a timeout.
    #[arg(long, default_value = "10s")]
    pub timeout: String,
    /// Source addresses, e.g. 127.0.0.2-127.0.0.40 [default: automatic on
    /// loopback when the connections pass the ephemeral port range].
    #[arg(long)]
    pub source: Option<String>,
    /// Pin the client to these CPUs, e.g. 1 or 0-1.
    #[arg(long)]
    pub cpus: Option<String>,
    /// Write the results as JSON (versioned schema, with the environment).
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Write one CSV row per connection.
    #[arg(long)]
    pub per_connection_csv: Option<std::path::PathBuf>,
    /// Write the latency histogram in HdrHistogram's log format.
    #[arg(long)]
    pub hdr: Option<std::path::PathBuf>,
    /// Exit non-zero when any connection failed or any echo mismatched
    /// (over HTTP: or any response was not 2xx, or was cut short).
    #[arg(long)]
    pub fail_on_error: bool,
    /// No progress line, even on a terminal.
    #[arg(short, long)]
    pub quiet: bool,
    /// The server's process ids (comma-separated; its children are
    /// followed): its CPU over the measured window is read from /proc, so
    /// the results can say whether the client or the server was the limit.
    #[arg(long, value_name = "PID[,PID...]", value_delimiter = ',')]
    pub server_pid: Vec<u32>,
    #[command(flatten)]
    pub agents: AgentArgs,
    /// Exit 0 even when an agent was lost mid-run (the figures are the
    /// other agents', the missing share named).
    #[arg(long)]
    pub allow_partial: bool,
}

/// Where the client runs: agents started through launchers (`c10k load`,
/// `c10k run`).
#[derive(Debug, Args, Default)]
pub struct AgentArgs {
    /// Run the connections on agents this launcher starts (repeatable: one
    /// template an agent, the last repeated for --agents past them), e.g.
    /// 'ssh -T host{i} -- {cmd_sh}' or 'ip netns exec cli{i} {cmd}'. No
    /// shell runs it; {cmd}: the agent command as words, {cmd_sh}: as one
    /// shell-quoted word, {i}: the agent's index, {n}: the agent count.
    #[arg(long = "agent", value_name = "TEMPLATE")]
    pub agent: Vec<String>,
    /// Read launcher templates from this file, one a line (# comments).
    #[arg(long, value_name = "FILE")]
    pub agents_file: Option<std::path::PathBuf>,
    /// How many agents [default: one per template].
    #[arg(long, value_name = "N")]
    pub agents: Option<usize>,
}

#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub struct ServeArgs {
    /// Concurrency model (see `c10k models`).
    #[arg(short, long, default_value = "epoll")]
    pub model: String,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Port to bind; 0 picks a free one (printed on the READY line).
    #[arg(short, long, default_value_t = 0)]
    pub port: u16,
    /// Echo buffer per connection, e.g. 16KiB, 4096, 1MiB.
    #[arg(long, default_value = "16KiB")]
    pub buffer: String,
    /// Close connections past this many open at once (counted as refused).
    #[arg(long)]
    pub max_conns: Option<u64>,
    /// Threads or processes for prefork, epoll-workers, uring, tokio and
    /// hybrid [default: one per CPU it may use, those of --cpus when given;
    /// prefork: 64].
    #[arg(short, long)]
    pub workers: Option<usize>,
    /// Stack size of each connection thread (threads), e.g. 64KiB
    /// [default: the platform's, as glibc threads get it from RLIMIT_STACK].

    #[arg(long)]
    pub stack_size: Option<String>,
    /// Edge-triggered epoll (epoll, epoll-workers).
    #[arg(long)]
    pub edge: bool,
    /// How epoll-workers shares the listener.
    #[arg(long, value_enum, default_value = "reuseport")]
    pub accept: AcceptMode,
    /// listen(2) backlog (the kernel caps it at net.core.somaxconn).
    #[arg(long, default_value_t = 4096)]
    pub backlog: i32,
    /// Set SO_REUSEPORT so several servers can share one port.
    #[arg(long)]
    pub reuseport: bool,
    /// Interval control (the readiness models): wait at least this long
    /// between two waits, so each returns more events, e.g. 1ms [max 1s].
    #[arg(long, default_value = "0s")]
    pub interval: String,
    /// After every read, add the bytes to the connection's counter in a
    /// table shared by the whole server and to a global total, under one
    /// lock (the thesis's "locking after each read").
    #[arg(long)]
    pub shared_state: bool,
    /// The lock of --shared-state (process-shared for every model).
    #[arg(long, value_enum, default_value = "mutex", requires = "shared_state")]
    pub lock: LockKind,
    /// What the handler does for each request before echoing it: none, or
    /// parts joined by +, each cpu:D (on-CPU work), block:D (a blocking
    /// call in the handling thread), wait:D (an asynchronous wait); D fixed
    /// or exp:D (exponential with that mean), e.g. block:1ms,
    /// cpu:20us+wait:exp:1ms.
    #[arg(long, default_value = "none", value_name = "SPEC")]
    pub work: String,
    /// Bytes of one request under --work (c10k run passes its -m).
    #[arg(long, default_value_t = 64, value_name = "BYTES")]
    pub message_size: usize,
    /// What the server speaks: echo (every byte back), or http
    /// (HTTP/1.1: keep-alive, pipelining, a `--response-size` body).
    #[arg(long, value_enum, default_value = "echo")]
    pub protocol: Protocol,
    /// --protocol http: bytes of every response's body, `Hello, World!`
    /// repeated (13: TechEmpower's plaintext), e.g. 13, 1KiB [max 64MiB].
    #[arg(long, default_value = "13", value_name = "BYTES")]
    pub response_size: String,
    /// tokio: make block calls inside the connection's task (the common
    /// mistake) instead of through spawn_blocking (the documented answer).
    #[arg(long)]
    pub block_inline: bool,
    /// tokio: tasks a worker runs between two looks at the runtime's
    /// global queue, where ready tasks past its 256-slot local queue wait
    /// [default: tokio's, tuned from the mean poll time: rare for short
    /// polls]. 1 is fair to every connection, and costs throughput.
    #[arg(long, value_name = "N")]
    pub global_queue_interval: Option<u32>,
    /// tokio: most threads in the blocking pool that runs spawn_blocking
    /// calls (block work) [default: tokio's 512]; a block call past them
    /// waits for one to free.
    #[arg(long, value_name = "N")]
    pub blocking_threads: Option<usize>,
    /// uring: submission queue entries of each ring, a power of two from 8
    /// to 4,096 (its completion queue 16 times as many, at least 8,192)
    /// [default: 512].
    #[arg(long, value_name = "N")]
    pub ring_entries: Option<u32>,
    /// uring: provided buffers in each ring's buffer ring, a power of two
    /// from 16 to 32,768, each of --buffer bytes [default: 256].
    #[arg(long, value_name = "N")]
    pub ring_buffers: Option<u16>,
    /// uring: how a connection receives: multishot (one armed recv posts a
    /// completion per chunk) or once (a one-shot recv submitted after
    /// every chunk, as the plainest liburing echo server does; to measure
    /// what multishot gives) [default: multishot].
    #[arg(long, value_enum, value_name = "HOW")]
    pub ring_recv: Option<RingRecv>,
    /// hybrid: when a pool thread wakes the loop to take back the
    /// connections it has served: idle (once, when it finds no job
    /// waiting, or after 64; under the plain echo only) or each (after
    /// every job, as the plainest C pool does; to measure what waking on
    /// idle gives) [default: idle].
    #[arg(long, value_enum, value_name = "WHEN")]
    pub hand_back: Option<HandBack>,
    /// Set the soft open-files limit before serving (to study EMFILE).
    #[arg(long)]
    pub nofile: Option<u64>,
    /// Set RLIMIT_SIGPENDING, the real-time signals the user may have
    /// queued, before serving (to study sigio's queue overflow).
    #[arg(long, value_name = "N")]
    pub sigpending: Option<u64>,
    /// Pin the server to these CPUs, e.g. 0 or 0-1.
    #[arg(long)]
    pub cpus: Option<String>,
}

/// `c10k conform`.
#[derive(Debug, Args)]
pub struct ConformArgs {
    /// A server already listening, HOST:PORT: only the checks of the wire
    /// run (the others need the server's process).
    pub address: Option<String>,
    /// A c10k model, started as `c10k serve --model M` for each check.
    #[arg(long)]
    pub model: Option<String>,
    /// A server command c10k starts for each check: '[NAME=]COMMAND ARGS
    /// {port}' ({port}: a free port; {addr}: 127.0.0.1).
    #[arg(long)]
    pub server: Option<String>,
    /// A peer of `c10k run peers` (go, node, asyncio, uvloop, erlang,
    /// socat).
    #[arg(long)]
    pub peer: Option<String>,
    /// With --model: pass this to its `c10k serve`, e.g.
    /// --server-arg=--edge (repeatable).
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub server_args: Vec<String>,
    /// What the server speaks: echo, or http (HTTP/1.1; its own checks
    /// of the wire, and the process checks asked over HTTP). A --model is
    /// started with it.
    #[arg(long, value_enum, default_value = "echo")]
    pub protocol: Protocol,
    /// Run only this check (repeatable) [default: all of --protocol's;
    /// see --list].
    #[arg(long = "check")]
    pub checks: Vec<String>,
    /// List the checks and exit.
    #[arg(long)]
    pub list: bool,
    /// How long any one wait of a check may take before the check fails.
    #[arg(long, default_value = "30s")]
    pub patience: String,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// The names and help of a flag's values, for an enum the plan and the
/// engine own: each type is declared once, where it is used, and only
/// its spelling on the command line is here. A variant left out is a
/// compile error (the match is exhaustive).
macro_rules! flag_values {
    ($ty:ident { $($variant:ident = $name:literal: $help:literal),+ $(,)? }) => {
        impl clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($ty::$variant),+]
            }
            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(match self {
                    $($ty::$variant => clap::builder::PossibleValue::new($name).help($help)),+
                })
            }
        }
    };
}

flag_values!(Protocol {
    Echo = "echo": "Echo (RFC 862): every byte sent comes back",
    Http = "http": "HTTP/1.1: a request, a response; keep-alive and pipelining",
});

flag_values!(Pin {
    Split = "split": "Server and client on different CPUs (each wake-up crosses cores)",
    Same = "same": "Server and client on the same CPUs",
    All = "all": "Server and client each on every CPU this process may use",
    None = "none": "No pinning: the scheduler decides",
});

flag_values!(Order {
    Interleaved = "interleaved": "Run r of every cell before run r+1 of any (drift spreads evenly)",
    Sequential = "sequential": "Every run of one model and connection count, then the next",
});

flag_values!(Instances {
    Round = "round": "Every round serves each model from a new instance: the intervals cover how instances differ",
    Run = "run": "One instance of each model for the whole run: no start per round",
});

flag_values!(WorkloadKind {
    Closed = "closed": "Closed loop: `depth` messages in flight per connection",
    Burst = "burst": "Connect every socket, then send one message on each and time until every echo is back",
    Churn = "churn": "Open, echo nothing (or one message), close; repeat",
});

flag_values!(Arrivals {
    Uniform = "uniform": "Every 1/rate, the connections' phases staggered evenly (wrk2's schedule)",
    Poisson = "poisson": "Exponential gaps of the same mean, drawn per connection: a Poisson stream",
});

flag_values!(AcceptMode {
    Acceptor = "acceptor": "One thread accepts and hands sockets out round-robin",
    Shared = "shared": "Every worker's epoll watches the listener (the thundering herd)",
    Exclusive = "exclusive": "Every worker watches the listener with EPOLLEXCLUSIVE",
    Reuseport = "reuseport": "A listener per worker on one port with SO_REUSEPORT",
});

flag_values!(RingRecv {
    Multishot = "multishot": "One armed recv per connection posts a completion per chunk",
    Once = "once": "A one-shot recv submitted after every chunk",
});

flag_values!(HandBack {
    Idle = "idle": "Once the thread finds no job waiting (or has 64 to give back)",
    Each = "each": "After every job",
});

flag_values!(LockKind {
    Mutex = "mutex": "A pthread mutex (sleeps in a futex when contended)",
    Spin = "spin": "A spin lock that yields the CPU every 100 tries",
    RwLock = "rwlock": "A pthread rwlock, taken for writing",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_goes_with_no_flag_of_the_matrix_or_the_agents() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(["c10k", "run", "--resume", "results/x"].iter().chain(args))
        };
        assert!(parse(&["--no-report", "--out", "o"]).is_ok());
        for flags in [
            &["tour"][..],
            &["--models", "epoll"],
            &["-c", "10"],
            &["--server-arg=--edge"],
            &["--bind", "127.0.0.1"],
            &["--agent", "ssh h c10k agent"],
            &["--agents", "2"],
        ] {
            let e = parse(flags).expect_err(&flags.join(" "));
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn a_gate_of_run_needs_its_baseline() {
        for gate in [&["--fail-if-slower", "5%"][..], &["--reference", "epoll"]] {
            let alone = try_parse_from(["c10k", "run"].iter().chain(gate));
            let e = alone.expect_err("a gate without --baseline");
            assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
            assert!(e.to_string().contains("--baseline"), "{e}");
            let with = ["c10k", "run", "--baseline", "results/x"];
            assert!(try_parse_from(with.iter().chain(gate)).is_ok());
            // compare has its baseline as BASE.
            let compare = ["c10k", "compare", "results/a", "results/b"];
            assert!(try_parse_from(compare.iter().chain(gate)).is_ok());
        }
    }

    #[test]
    fn a_word_that_is_not_utf8_is_written_as_its_bytes() {
        use std::os::unix::ffi::OsStrExt as _;
        let w = |b: &[u8]| word(std::ffi::OsStr::from_bytes(b));
        assert_eq!(w(b"results"), "results");
        assert_eq!(w(b"res\xffx"), "$'res\\xffx'");
        assert_eq!(w(b"it's\xc3"), "$'it\\'s\\xc3'");
    }

    #[test]
    fn edits_count_a_swap_as_one() {
        assert_eq!(edits("rnu", "run"), 1);
        assert_eq!(edits("lod", "load"), 1);
        assert_eq!(edits("run", "run"), 0);
        assert_eq!(edits("serve", "load"), 5);
        assert_eq!(edits("", "herd"), 4);
    }

    #[test]
    fn mistyped_subcommands_and_flags_get_a_tip() {
        let line = |args: &[&str]| {
            try_parse_from(args)
                .err()
                .map(|e| one_line(&e))
                .unwrap_or_default()
        };
        let e = line(&["c10k", "rnu"]);
        assert!(e.contains("tip: a similar subcommand exists: 'run'"), "{e}");
        let e = line(&["c10k", "micro", "spwan"]);
        assert!(
            e.contains("tip: a similar subcommand exists: 'spawn'"),
            "{e}"
        );
        let e = line(&["c10k", "run", "--model", "epoll"]);
        assert!(
            e.contains("tip: a similar argument exists: '--models'"),
            "{e}"
        );
        // Nothing near: no tip.
        let e = line(&["c10k", "xyzzy"]);
        assert!(
            e.starts_with("unrecognized subcommand 'xyzzy'") && !e.contains("tip"),
            "{e}"
        );
    }

    /// What shapes a plan is read from the flags' groups: every flag of
    /// group `matrix` (and the agents'), as typed; `customises` and
    /// `own_matrix` by theirs; a flag left at its default is not given.
    #[test]
    fn the_flags_given_are_read_from_their_groups() {
        let given = |args: &[&str]| match try_parse_from(["c10k", "run"].iter().chain(args)) {
            Ok(Cli {
                command: Command::Run(r),
            }) => r.given,
            other => panic!("{args:?}: {other:?}"),
        };
        assert_eq!(given(&[]), Given::default());
        assert_eq!(given(&["--out", "x", "--no-report"]), Given::default());
        let g = given(&["--pin", "none", "--slo", "p99=5ms", "--tune"]);
        assert_eq!(g.shaping, ["--slo", "--tune", "--pin"]);
        assert!(g.customises, "--tune customises");
        assert!(!g.own_matrix, "{g:?}");
        let g = given(&["thesis", "-c", "3", "--agent", "{cmd}"]);
        assert_eq!(g.shaping, ["EXPERIMENT", "--connections", "--agent"]);
        assert!(g.customises && g.own_matrix, "{g:?}");
        assert!(given(&["--agent", "{cmd}"]).customises);
        let g = given(&["--margin", "2%"]);
        assert_eq!(g.shaping, ["--margin"]);
        assert!(!g.customises && !g.own_matrix, "{g:?}");
    }

    #[test]
    fn help_shows_placeholders_as_written() {
        let mut cmd = command();
        for sub in ["load", "run"] {
            let help = cmd
                .find_subcommand_mut(sub)
                .map(|c| c.render_long_help().to_string())
                .unwrap_or_default();
            assert!(
                help.contains("{i}: the agent's index, {n}: the agent count"),
                "{help}"
            );
        }
    }
}
