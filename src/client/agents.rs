//! Spreading a load run over agents: local worker processes when one
//! process cannot hold every socket (the open-files hard limit is per
//! process), or programs on other hosts started through a launcher
//! (`--agent 'ssh -T host{i} -- {cmd_sh}'`, [`super::launch`]). Either way
//! this is the one path: each agent is started from its template, speaks
//! the protocol of [`super::protocol`] on its stdin and stdout, runs its
//! share of the connections (ids interleaved over agents and their
//! threads, so the shares sum to the total and every connection's bytes
//! stay unique), and its [`Measured`] is merged as a process merges its
//! event loops' (histograms added, never percentiles averaged), once it is
//! checked to be its share and no more ([`not_its_share`]).
//!
//! Phases are kept in step: every agent reports `connected`; each one's
//! round trip is measured; `go` tells each to start after a delay that
//! makes them start together on their own clocks; the start skew is
//! measured from their `started`. An agent that fails before `go` aborts
//! the run. However a run ends (done, failed, interrupted, a launcher
//! that could not start), every launcher is stopped and reaped with its
//! process group when [`Agents`] drops, so no agent outlives it; one that
//! exits on its own after its agent reported has [`LAUNCHER_GRACE`]. A
//! SIGINT or SIGTERM to this process ends the run within a second: before
//! `go` with nothing measured, after it with what the agents report when
//! told to `stop` within [`STOP_WITHIN`]; either way marked interrupted.
//! Cost: a reader thread per agent (a small stack), a few lines each.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::drive::Ask;
use super::launch::Launch;
use super::live::{Live, Tick};
use super::measured::Measured;
use super::plan::{LoadPlan, Workload};
use super::preflight;
use super::protocol::{Finished, Hello, Msg, Plan};
use super::spawn;
use crate::env::TcpCounters;
use crate::sys;

/// How long an agent may take to say hello (a launcher that logs in
/// somewhere may be slow), and to answer a ping.
pub const HELLO_WITHIN: Duration = Duration::from_secs(60);

/// An agent silent this long after `go` is lost (it says `progress`
/// every second).
pub const SILENCE: Duration = Duration::from_secs(3);

/// A worker process on this machine (no launcher) is lost when it exits,
/// or silent this long: a machine saturated by the run itself can keep a
/// process from a CPU for seconds (at a million connections and 102
/// processes on 2 CPUs, two workers went 3 s unheard while closing their
/// connections), which is a starved worker, not a lost one.
pub const LOCAL_SILENCE: Duration = Duration::from_secs(30);

/// Pings per agent; the fastest round trip counts.
const PINGS: u32 = 3;

/// After SIGINT or SIGTERM, how long the agents told to `stop` have to
/// report what they measured before they are killed with the rest.
pub const STOP_WITHIN: Duration = Duration::from_millis(700);

/// How long a launcher whose agent has reported (or whose stdin closed)
/// may take to exit by itself (ssh closing its session) before it is
/// killed.
pub const LAUNCHER_GRACE: Duration = Duration::from_secs(5);

/// How often the controller looks at the interrupt flag while it waits.
const TICK: Duration = Duration::from_millis(100);

/// The run was interrupted (SIGINT, SIGTERM) before `go`: nothing was
/// measured.
#[derive(Debug, thiserror::Error)]
#[error("interrupted before the agents started measuring")]
struct Interrupted;

/// What the agents gave: the merged measurement, the agents lost, and
/// each agent's own figures with their start skew.
#[derive(Debug)]
pub(crate) struct Merged {
    pub measured: Measured,
    /// Agents lost after `go`: the figures are the others'.
    pub lost: Vec<Lost>,
    /// Each agent's own figures, for the report.
    pub report: super::report::Agents,
    /// CPUs the agents could keep busy: on each host, its agents' event
    /// loops or its CPUs, whichever is fewer.
    pub capacity: f64,
    /// Every agent ran on this host (its CPU is in this machine's).
    pub local: bool,
    /// What a reader must know about where the agents ran (said before
    /// the run too).
    pub warnings: Vec<String>,
}

impl Merged {
    /// A run of `n` agents interrupted before `go`: nothing measured.
    fn interrupted(n: usize) -> Merged {
        let mut measured = Measured::empty();
        measured.interrupted = true;
        Merged {
            measured,
            lost: Vec::new(),
            report: super::report::Agents {
                start_skew_us: 0.0,
                each: Vec::new(),
                namespaces: Vec::new(),
            },
            capacity: n as f64,
            local: true,
            warnings: vec![Interrupted.to_string()],
        }
    }
}

/// An agent lost mid-run, and the share of the run that went with it.
#[derive(Debug, Clone)]
pub(crate) struct Lost {
    pub agent: usize,
    pub launched: String,
    pub connections: usize,
    pub why: String,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "agent {} ({}) was lost after it started: {}; its {} connections are missing from these figures",
            self.agent, self.launched, self.why, self.connections
        )
    }
}

/// The event-loop threads each of `agents` runs: the run's threads
/// shared out, at least one each.
pub(crate) fn threads_each(threads: usize, agents: usize) -> usize {
    (threads / agents.max(1)).max(1)
}

/// What an agent said on its standard output.
enum Said {
    Msg(Msg),
    /// A tagged line that is not a message of this protocol.
    Bad(String),
    Gone,
}

/// The running agents: their processes, stdins and one channel of what
/// they say (each line stamped as it arrived). Dropping it stops and
/// reaps every launcher still running, with its process group.
struct Agents {
    children: Vec<Child>,
    /// Set by SIGINT or SIGTERM to this process.
    interrupt: Arc<AtomicBool>,
    inputs: Vec<ChildStdin>,
    said: Receiver<(usize, Said, Instant)>,
    launched: Vec<String>,
    /// Which agents have given their result (and may close their output).
    reported: Vec<bool>,
    /// When each agent last said anything.
    heard_at: Vec<Instant>,
    /// Silent this long after `go`, an agent is lost.
    silence: Duration,
    /// Each agent's running totals, from its last `progress`.
    ticks: Vec<Tick>,
    /// Agents lost mid-run: their ticks no longer count.
    gone: Vec<bool>,
    live: Live,
    last_drawn: Instant,
}

/// Runs `plan` over the agents `launch` starts and merges their
/// measurements. `connected` is called once every agent has its
/// connections up, before any is told to go: the moment to look at a
/// server holding every connection. Interrupted (SIGINT or SIGTERM to this
/// process), it returns within about a second, every launcher stopped and
/// reaped, with what the agents had reported and `measured.interrupted`
/// set.
pub(crate) fn run(
    plan: &LoadPlan,
    launch: &Launch,
    connected: &mut dyn FnMut(),
) -> anyhow::Result<Merged> {
    let n = launch.agents.max(1);
    if n > 1
        && matches!(
            plan.workload,
            Workload::Burst { .. } | Workload::Churn { .. }
        )
    {
        // The plan refuses agents of the user's for these (naming
        // --agents); only a local split of too many connections is left.
        anyhow::bail!(
            "--burst and --churn keep their connections in one process, which holds at most {} here; use fewer connections",
            sys::rlimit::nofile().hard.unwrap_or(0).saturating_sub(preflight::HEADROOM)
        );
    }
    let interrupt =
        sys::signals::interrupt_flag().context("installing the Ctrl-C and SIGTERM handlers")?;
    let show = !plan.quiet && std::io::stderr().is_terminal();
    let live = Live::new(show, plan.connections + plan.idle);
    let mut agents = start(launch, n, live, interrupt)?;
    if plan.agents.is_none() {
        agents.silence = LOCAL_SILENCE;
    }
    let result = converse(&mut agents, plan, n, connected);
    std::mem::replace(&mut agents.live, Live::new(false, 0)).finish();
    let mut result = match result {
        Err(e) if e.is::<Interrupted>() => Ok(Merged::interrupted(n)),
        r => r,
    };
    // After a failure or an interruption every agent is killed, a lost
    // one too; closing their stdin then tells any still running to close
    // its connections and exit.
    let stopped: Vec<usize> = match &result {
        Ok(m) if !m.measured.interrupted => m.lost.iter().map(|l| l.agent).collect(),
        _ => (0..agents.children.len()).collect(),
    };
    for &k in &stopped {
        agents.kill(k);
    }
    agents.inputs.clear();
    let statuses = agents.reap(Instant::now() + LAUNCHER_GRACE);
    // A launcher that fails after its agent reported (ssh does on a
    // dropped session) leaves whole figures: said, not thrown away.
    if let Ok(m) = &mut result {
        for (k, status) in statuses.iter().enumerate() {
            let failed = status.is_some_and(|s| !s.success());
            if failed && agents.reported[k] && !stopped.contains(&k) {
                m.warnings.push(format!(
                    "agent {k} ({}) reported its results, then its launcher failed ({}); its figures are here",
                    agents.launched[k],
                    status.map_or_else(String::new, |s| s.to_string())
                ));
            }
        }
    }
    result
}

/// A resident run over agents: connected once, then measured window after
/// window on demand (`c10k run`'s slots), the connections up between
/// them. Any trouble during a window (an agent that errs, ends or falls
/// silent) fails that window and leaves the session broken: a cell is
/// whole or failed. Dropping it kills and reaps every launcher.
pub(crate) struct Resident {
    agents: Agents,
    rtt: Vec<Duration>,
    /// CPUs the agents could keep busy, and whether all ran here.
    pub capacity: (f64, bool),
    pub warnings: Vec<String>,
}

impl Resident {
    /// Starts the agents of `plan` (marked resident) and returns once
    /// every connection is up, `connected` called then.
    pub(crate) fn open(
        plan: &LoadPlan,
        launch: &Launch,
        connected: &mut dyn FnMut(),
    ) -> anyhow::Result<Resident> {
        let n = launch.agents.max(1);
        let interrupt =
            sys::signals::interrupt_flag().context("installing the Ctrl-C and SIGTERM handlers")?;
        let mut agents = start(launch, n, Live::new(false, 0), interrupt)?;
        if plan.agents.is_none() {
            agents.silence = LOCAL_SILENCE;
        }
        let plan = LoadPlan {
            resident: true,
            ..plan.clone()
        };
        let ready = prepare(&mut agents, &plan, n, connected)?;
        let capacity = capacity(
            &ready.hellos,
            threads_each(plan.threads, n),
            plan.cpus.as_ref(),
        );
        Ok(Resident {
            agents,
            rtt: ready.rtt,
            capacity,
            warnings: ready.warnings,
        })
    }

    /// Measures one window, as `ask` says: every agent told to go, their
    /// windows merged.
    pub(crate) fn window(&mut self, ask: Ask) -> anyhow::Result<Measured> {
        let own_at_go = crate::sys::process::Usage::of_self();
        let t0 = go(&mut self.agents, &self.rtt, ask)?;
        let n = self.rtt.len();
        let mut got: Vec<Option<Box<Measured>>> = (0..n).map(|_| None).collect();
        while got.iter().any(Option::is_none) {
            match self.agents.next(None, true)? {
                (_, Msg::Started) => {}
                (k, Msg::Window(m)) => got[k] = Some(m),
                (k, m) => anyhow::bail!("agent {k} said {m:?} instead of its window"),
            }
        }
        let mut measured = Measured::empty();
        for m in got.into_iter().flatten() {
            measured.merge(*m);
        }
        if self.capacity.1 {
            count_own_share(&mut measured, t0, &own_at_go);
        }
        Ok(measured)
    }

    /// Tells every agent to end, and gives them `within` to close their
    /// connections and report before they are stopped (on drop).
    pub(crate) fn close(mut self, within: Duration) {
        let n = self.rtt.len();
        for k in 0..n {
            let _ = self.agents.tell(k, &Msg::End);
        }
        let mut left = n;
        while left > 0 {
            match self.agents.next(Some(within), false) {
                Ok((k, Msg::Result(_))) => {
                    self.agents.reported[k] = true;
                    left -= 1;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
}

/// Starts `n` agents, each from its template, with a reader thread on its
/// stdout. A launcher or a thread that cannot start ends it with one line,
/// every agent started before it stopped (the [`Agents`] dropped).
fn start(
    launch: &Launch,
    n: usize,
    live: Live,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<Agents> {
    let exe = std::env::current_exe().context("finding this program to start agents")?;
    let cmd = vec![exe.display().to_string(), "agent".to_string()];
    let (tx, said) = mpsc::channel();
    let mut agents = Agents {
        children: Vec::with_capacity(n),
        interrupt,
        inputs: Vec::with_capacity(n),
        said,
        launched: Vec::with_capacity(n),
        reported: vec![false; n],
        heard_at: vec![Instant::now(); n],
        silence: SILENCE,
        ticks: vec![Tick::default(); n],
        gone: vec![false; n],
        live,
        last_drawn: Instant::now(),
    };
    for k in 0..n {
        if agents.interrupted() {
            return Err(Interrupted.into());
        }
        let template = launch
            .templates
            .get(k)
            .or(launch.templates.last())
            .context("no launcher template")?;
        let argv = template.argv(&cmd, k, n);
        let (program, args) = argv.split_first().context("an empty launcher command")?;
        let started = agents.started(k);
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // Its own process group (what the launcher starts, a shell, the
        // agent under it, is stopped with it), killed if this thread ends.
        sys::process::tie_to_parent(&mut command);
        let mut child = spawn::process(
            &mut command,
            &format!("agent {k} of {n} with {:?}", argv.join(" ")),
        )
        .map_err(|e| anyhow::anyhow!("{e}{started}"))?;
        let input = child.stdin.take().context("no stdin to the agent")?;
        let output = child.stdout.take().context("no stdout from the agent")?;
        agents.children.push(child);
        agents.inputs.push(input);
        agents.launched.push(argv.join(" "));
        let tx = tx.clone();
        spawn::thread(&format!("agent-{k}"), Some(spawn::SMALL_STACK), move || {
            read_lines(k, output, &tx)
        })
        .map_err(|e| anyhow::anyhow!("agent {k} of {n}: {e}{started}"))?;
    }
    Ok(agents)
}

/// Agent `k`'s stdout, line by line as bytes, to `tx`: tagged lines as
/// messages (parsed by the controller, whose stack is the larger), every
/// other line skipped whatever its encoding; [`Said::Gone`] at its end.
fn read_lines(
    k: usize,
    output: std::process::ChildStdout,
    tx: &mpsc::Sender<(usize, Said, Instant)>,
) {
    let mut output = BufReader::new(output);
    let mut line = Vec::new();
    while matches!(output.read_until(b'\n', &mut line), Ok(n) if n > 0) {
        let said = match Msg::parse_bytes(&line) {
            None => None,
            Some(Ok(m)) => Some(Said::Msg(m)),
            Some(Err(e)) => Some(Said::Bad(e)),
        };
        line.clear();
        if let Some(said) = said {
            if tx.send((k, said, Instant::now())).is_err() {
                return;
            }
        }
    }
    let _ = tx.send((k, Said::Gone, Instant::now()));
}

impl Drop for Agents {
    /// However the run ends (an error, a panic, a launcher that could not
    /// start), no launcher outlives it.
    fn drop(&mut self) {
        self.inputs.clear();
        for k in 0..self.children.len() {
            self.kill(k);
        }
        self.reap(Instant::now());
    }
}

impl Agents {
    /// Kills agent `k`'s launcher and everything in its process group,
    /// unless it was reaped already (its group id may be another's now).
    fn kill(&mut self, k: usize) {
        if let Some(c) = self.children.get_mut(k) {
            if matches!(c.try_wait(), Ok(Some(_))) {
                return;
            }
            let _ = sys::process::kill(-(c.id() as i32), libc::SIGKILL);
            let _ = c.kill();
        }
    }

    /// Reaps every launcher, giving those still running until `until`
    /// (cut short by an interruption) before they are killed; each one's
    /// group is killed as it is reaped, so nothing it left behind goes on.
    /// Each launcher's exit status, when it could be had.
    fn reap(&mut self, until: Instant) -> Vec<Option<ExitStatus>> {
        let mut statuses = Vec::with_capacity(self.children.len());
        for k in 0..self.children.len() {
            let pid = self.children[k].id() as i32;
            if !matches!(self.children[k].try_wait(), Ok(Some(_))) {
                // Exited or not, it is not reaped yet: its group is its own.
                // Waited for a tick at a time, so a signal cuts it short.
                loop {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() || self.interrupted() {
                        break;
                    }
                    if sys::process::exits_within(pid, left.min(TICK)).unwrap_or(true) {
                        break;
                    }
                }
                let _ = sys::process::kill(-pid, libc::SIGKILL);
                let _ = self.children[k].kill();
            }
            statuses.push(self.children[k].wait().ok());
        }
        statuses
    }

    /// How agent `k`'s launcher ended (" (its launcher: exit status: 127)"),
    /// when it does within a moment of its output closing; it is not
    /// reaped, so its group can still be stopped.
    fn ending(&self, k: usize) -> String {
        use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
        let Some(pid) = Pid::from_raw(self.children[k].id() as i32) else {
            return String::new();
        };
        let _ = sys::process::exits_within(pid.as_raw_nonzero().get(), 5 * TICK);
        let seen = waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        );
        match seen.ok().flatten() {
            Some(s) => match (s.exit_status(), s.terminating_signal()) {
                (Some(code), _) => format!(" (its launcher exited {code})"),
                (_, Some(signal)) => format!(" (its launcher was killed by signal {signal})"),
                _ => String::new(),
            },
            None => String::new(),
        }
    }

    /// Whether SIGINT or SIGTERM has come.
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// ", the N started before it stopped": for the line of a start that
    /// failed (they are, when the agents drop).
    fn started(&self, k: usize) -> String {
        match k {
            0 => String::new(),
            1 => "; the agent started before it was stopped".into(),
            k => format!("; the {k} agents started before it were stopped"),
        }
    }

    /// Sends `msg` to agent `k`.
    fn tell(&mut self, k: usize, msg: &Msg) -> anyhow::Result<()> {
        writeln!(self.inputs[k], "{}", msg.line())
            .and_then(|()| self.inputs[k].flush())
            .with_context(|| format!("agent {k} ({}) stopped listening", self.launched[k]))
    }

    /// The next message from any agent but `progress`, waiting at most
    /// `within`. With `watch`, an agent silent for [`SILENCE`] fails the
    /// wait (before `go`, a silent agent aborts the run).
    fn next(&mut self, within: Option<Duration>, watch: bool) -> anyhow::Result<(usize, Msg)> {
        let since = Instant::now();
        loop {
            if self.interrupted() {
                return Err(Interrupted.into());
            }
            match self.hear()? {
                // An agent that has reported closes its output: normal.
                Some((k, Said::Gone)) if self.reported[k] => {}
                Some(got) => return self.read(got),
                None => {
                    if let Some(k) = watch.then(|| self.silent()).flatten() {
                        anyhow::bail!(
                            "agent {k} ({}) said nothing for {} s (it says progress every second)",
                            self.launched[k],
                            self.silence.as_secs()
                        );
                    }
                    if let Some(t) = within.filter(|t| since.elapsed() > *t) {
                        anyhow::bail!("no agent answered within {} s", t.as_secs());
                    }
                }
            }
        }
    }

    /// What an agent said next but `progress` (which updates its totals
    /// and the live view), or `None` after [`TICK`] of nothing else: every
    /// line queued has been read then, so the times each agent was last
    /// heard are current.
    fn hear(&mut self) -> anyhow::Result<Option<(usize, Said)>> {
        let until = Instant::now() + TICK;
        loop {
            let wait = until.saturating_duration_since(Instant::now());
            let got = match self.said.recv_timeout(wait) {
                Ok(got) => Some(got),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("every agent went away"),
            };
            if self.last_drawn.elapsed() >= Duration::from_secs(1) {
                self.draw();
            }
            match got {
                Some((k, said, at)) => {
                    self.heard_at[k] = at;
                    match said {
                        Said::Msg(Msg::Progress { tick, .. }) => self.ticks[k] = tick,
                        said => return Ok(Some((k, said))),
                    }
                }
                None => return Ok(None),
            }
        }
    }

    /// The first agent still running that has been silent for
    /// [`SILENCE`].
    fn silent(&self) -> Option<usize> {
        (0..self.heard_at.len()).find(|&k| {
            !self.reported[k] && !self.gone[k] && self.heard_at[k].elapsed() > self.silence
        })
    }

    /// Redraws the live line with every running agent's totals.
    fn draw(&mut self) {
        self.last_drawn = Instant::now();
        let running = (0..self.ticks.len()).filter(|&k| !self.gone[k]);
        let tick = Tick::sum(running.clone().map(|k| &self.ticks[k]));
        let n = self.ticks.len();
        let lost = n - running.count();
        let extra = match lost {
            0 => format!(" · {n} agents"),
            l => format!(" · {n} agents, {l} lost"),
        };
        self.live.show(tick, None, &extra);
    }

    /// A message, or the error an agent's words or silence mean.
    fn read(&self, got: (usize, Said)) -> anyhow::Result<(usize, Msg)> {
        match got {
            (k, Said::Msg(Msg::Error { message })) => {
                anyhow::bail!("agent {k} ({}): {message}", self.launched[k])
            }
            (k, Said::Msg(m)) => Ok((k, m)),
            (k, Said::Bad(e)) => anyhow::bail!("agent {k} ({}): {e}", self.launched[k]),
            (k, Said::Gone) => anyhow::bail!(
                "agent {k} ({}) ended before it reported its results{}",
                self.launched[k],
                self.ending(k)
            ),
        }
    }
}

/// What the controller knows of its agents once each is connected.
struct Ready {
    hellos: Vec<Option<Hello>>,
    /// Each agent's round trip: the fastest of its pings.
    rtt: Vec<Duration>,
    warnings: Vec<String>,
}

/// Steps 1 to 4 of the protocol: hellos checked, shares handed out,
/// every agent connected (then `on_connected`), round trips measured.
fn prepare(
    agents: &mut Agents,
    plan: &LoadPlan,
    n: usize,
    on_connected: &mut dyn FnMut(),
) -> anyhow::Result<Ready> {
    // 1. Every agent's hello: its protocol, and room for its share.
    let mut hellos: Vec<Option<Hello>> = (0..n).map(|_| None).collect();
    let total = plan.connections + plan.idle;
    while hellos.iter().any(Option::is_none) {
        match agents.next(Some(HELLO_WITHIN), false)? {
            (k, Msg::Hello(h)) => {
                h.check()
                    .map_err(|e| anyhow::anyhow!("agent {k} ({}): {e}", agents.launched[k]))?;
                let share = super::agent::share_of(total, k, n) as u64;
                // One port per connection from each source address to the
                // one target.
                let (lo, hi) = h.environment.ephemeral_ports;
                let ports = (u64::from(hi) + 1).saturating_sub(u64::from(lo));
                let ports = ports * plan.sources.len().max(1) as u64;
                if lo > 0 && share > ports {
                    anyhow::bail!(
                        "agent {k} ({}) has {ports} ports to reach {} (its port range {lo}-{hi}, {} source address(es)); its share is {share} connections: use more agents, --source, or widen net.ipv4.ip_local_port_range there",
                        agents.launched[k],
                        plan.target,
                        plan.sources.len().max(1)
                    );
                }
                if let Some(hard) = h.environment.nofile_hard {
                    let room = hard.saturating_sub(preflight::HEADROOM);
                    if share > room {
                        anyhow::bail!(
                            "agent {k} ({}) can open {hard} files (its hard limit), {room} of them for connections; its share is {share}: use more agents or raise its limit",
                            agents.launched[k]
                        );
                    }
                }
                hellos[k] = Some(*h);
            }
            (k, m) => anyhow::bail!("agent {k} said {m:?} before hello"),
        }
    }
    let warnings = crowded(&hellos, plan, n);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    // 2. Each agent's share, as `c10k load` arguments.
    let share = LoadPlan {
        threads: threads_each(plan.threads, n),
        quiet: true,
        json: None,
        csv: None,
        hdr: None,
        ..plan.clone()
    };
    for k in 0..n {
        let msg = Msg::Plan(Plan {
            args: share.to_args(),
            agent: k,
            agents: n,
            resident: plan.resident,
        });
        agents.tell(k, &msg)?;
    }
    // From its plan on, an agent says progress every second.
    agents.heard_at.fill(Instant::now());
    // 3. Every agent connected.
    let mut connected = vec![false; n];
    while connected.iter().any(|c| !c) {
        match agents.next(None, true)? {
            (k, Msg::Connected { .. }) => connected[k] = true,
            (k, m) => anyhow::bail!("agent {k} said {m:?} instead of connected"),
        }
    }
    on_connected();
    // 4. Each agent's round trip: the fastest of a few pings.
    let mut rtt = Vec::with_capacity(n);
    for k in 0..n {
        let mut fastest = Duration::MAX;
        for p in 0..PINGS {
            let sent = Instant::now();
            agents.tell(k, &Msg::Ping { n: p })?;
            match agents.next(Some(HELLO_WITHIN), true)? {
                (j, Msg::Pong { n: q }) if j == k && q == p => {
                    fastest = fastest.min(sent.elapsed());
                }
                (j, m) => anyhow::bail!("agent {j} said {m:?} instead of pong"),
            }
        }
        rtt.push(fastest);
    }
    Ok(Ready {
        hellos,
        rtt,
        warnings,
    })
}

/// Step 5, GO: every agent starts at the same moment, a lead from now,
/// each counting its delay on its own clock from when GO reaches it.
/// When it was sent.
fn go(agents: &mut Agents, rtt: &[Duration], window: Ask) -> anyhow::Result<Instant> {
    let slowest = rtt.iter().max().copied().unwrap_or_default();
    let lead = slowest / 2 + Duration::from_millis(5);
    let t0 = Instant::now();
    for (k, r) in rtt.iter().enumerate() {
        let at = t0.elapsed() + *r / 2;
        let delay = lead.saturating_sub(at);
        agents.tell(
            k,
            &Msg::Go {
                delay_seconds: delay.as_secs_f64(),
                window,
            },
        )?;
    }
    Ok(t0)
}

/// The controller's share of the measured window, when every agent ran
/// on this host: it heard them from `go` (at `t0`, its CPU then
/// `own_at_go`) to their results, and in `c10k run` it is the runner,
/// which also samples the server: the instrument's work on this machine,
/// not interference.
fn count_own_share(measured: &mut Measured, t0: Instant, own_at_go: &crate::sys::process::Usage) {
    let own = crate::sys::process::Usage::of_self().cpu_since(own_at_go);
    let span = t0.elapsed().as_secs_f64().max(1e-9);
    measured.window.instrument += own * (measured.window.seconds / span).min(1.0);
}

/// The controller's side of the protocol.
fn converse(
    agents: &mut Agents,
    plan: &LoadPlan,
    n: usize,
    on_connected: &mut dyn FnMut(),
) -> anyhow::Result<Merged> {
    let total = plan.connections + plan.idle;
    let Ready {
        hellos,
        rtt,
        warnings,
    } = prepare(agents, plan, n, on_connected)?;
    let own_at_go = crate::sys::process::Usage::of_self();
    let t0 = go(agents, &rtt, Ask::default())?;
    // 6. Their starts, then their results. From here an agent that ends,
    // errs or falls silent is lost, and the others go on.
    let mut starts: Vec<Option<f64>> = vec![None; n];
    let mut results: Vec<Option<Finished>> = (0..n).map(|_| None).collect();
    let mut lost: Vec<Lost> = Vec::new();
    // Set once interrupted: until when the agents told to stop may report.
    let mut stopping: Option<Instant> = None;
    let churn = matches!(plan.workload, Workload::Churn { .. });
    while (0..n).any(|k| results[k].is_none() && !agents.gone[k]) {
        // Who is lost by what was heard, and why.
        let mut losing: Vec<(usize, String)> = Vec::new();
        if stopping.is_none() && agents.interrupted() {
            let running: Vec<usize> = (0..n)
                .filter(|&k| results[k].is_none() && !agents.gone[k])
                .collect();
            for k in running {
                // One that cannot hear it is killed at the deadline.
                let _ = agents.tell(k, &Msg::Stop);
            }
            stopping = Some(Instant::now() + STOP_WITHIN);
        }
        if stopping.is_some_and(|t| Instant::now() >= t) {
            losing.extend(
                (0..n)
                    .filter(|&k| results[k].is_none())
                    .map(|k| (k, "the run was interrupted before it reported".to_string())),
            );
        }
        // Past the deadline, nothing more is waited for.
        let heard = if losing.is_empty() {
            agents.hear()?
        } else {
            None
        };
        match heard {
            Some((k, Said::Msg(m))) => match m {
                Msg::Started => {
                    let heard = t0.elapsed().saturating_sub(rtt[k] / 2);
                    starts[k] = Some(heard.as_secs_f64());
                }
                Msg::Result(m) => {
                    agents.reported[k] = true;
                    match not_its_share(&m.measured, k, n, total, churn) {
                        Some(why) => losing.push((k, why)),
                        None => results[k] = Some(*m),
                    }
                }
                Msg::Error { message } => losing.push((k, message)),
                m => losing.push((k, format!("it said {m:?} instead of its results"))),
            },
            Some((k, Said::Bad(e))) => losing.push((k, e)),
            Some((k, Said::Gone)) => losing.push((
                k,
                "its output closed (it ended, or its launcher did)".into(),
            )),
            None => {
                if let Some(k) = agents.silent() {
                    losing.push((k, format!("no progress for {} s", agents.silence.as_secs())));
                }
            }
        }
        for (k, why) in losing {
            if results[k].is_none() && !agents.gone[k] {
                agents.gone[k] = true;
                lost.push(Lost {
                    agent: k,
                    launched: agents.launched[k].clone(),
                    connections: super::agent::share_of(total, k, n),
                    why,
                });
            }
        }
    }
    if lost.len() == n && stopping.is_none() {
        let first = lost.first().map(ToString::to_string).unwrap_or_default();
        anyhow::bail!("every agent was lost: {first}");
    }
    let known: Vec<f64> = starts.iter().flatten().copied().collect();
    let start_skew_seconds = match (
        known.iter().copied().reduce(f64::min),
        known.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    };
    let each = (0..n)
        .map(|k| {
            figures(
                k,
                &agents.launched[k],
                hellos[k].as_ref(),
                rtt[k],
                results[k].as_ref(),
                &lost,
            )
        })
        .collect();
    let report = super::report::Agents {
        start_skew_us: start_skew_seconds * 1e6,
        each,
        namespaces: namespaces(&hellos, &results),
    };
    // The client's memory is its agents' (added by the merge): this
    // coordinating process is not the load generator, and in `c10k run` it
    // is the runner, whose memory is not the client's.
    let mut measured = Measured::empty();
    measured.interrupted = stopping.is_some();
    for f in results.into_iter().flatten() {
        measured.merge(f.measured);
    }
    let (capacity, local) = capacity(&hellos, threads_each(plan.threads, n), plan.cpus.as_ref());
    if local {
        count_own_share(&mut measured, t0, &own_at_go);
    }
    Ok(Merged {
        measured,
        lost,
        report,
        capacity,
        local,
        warnings,
    })
}

/// Why agent `k`'s result cannot be its share of `total` connections
/// over `n` agents, if it cannot: a record for each of its connections
/// (fewer only when it was interrupted while connecting), each an id of
/// its own (`id % n == k`) once. A result that fails this is not merged:
/// the agent is lost, as one that fell silent. Churn opens connections
/// without end and runs on one agent: not checked.
fn not_its_share(m: &Measured, k: usize, n: usize, total: usize, churn: bool) -> Option<String> {
    if churn {
        return None;
    }
    let share = super::agent::share_of(total, k, n);
    let count = m.records.total();
    let kept = m.records.kept.len() as u64;
    if count > share as u64 || kept != count || (count < share as u64 && !m.interrupted) {
        return Some(format!(
            "it reported {count} connections for its share of {share}"
        ));
    }
    let mut seen = vec![false; share];
    for r in &m.records.kept {
        let id = r.id as usize;
        let mine = id < total && id % n == k;
        if !mine || std::mem::replace(&mut seen[id / n], true) {
            return Some(format!(
                "it reported connection {id}{}, which is not one of its share",
                if mine { " twice" } else { "" }
            ));
        }
    }
    None
}

/// Network namespaces whose agents together fill more than a third of the
/// ports their addresses have to the target: the kernel's search for a
/// free port at each connect slows as a range fills (at 250,000
/// connections from four namespaces of one address each, connects fell to
/// a few hundred a second with every CPU in that search), so each is named
/// with its fill and the fix.
fn crowded(hellos: &[Option<Hello>], plan: &LoadPlan, n: usize) -> Vec<String> {
    if plan.target.ip().is_loopback() {
        return Vec::new();
    }
    let total = plan.connections + plan.idle;
    // (host, namespace) -> (connections, ports, addresses).
    let mut spaces: Vec<((&str, &str), usize, u64, usize)> = Vec::new();
    for (k, h) in hellos.iter().enumerate() {
        let Some(h) = h else { continue };
        let e = &h.environment;
        let key = (e.hostname.as_str(), e.network_namespace.as_str());
        let share = super::agent::share_of(total, k, n);
        if let Some(s) = spaces.iter_mut().find(|s| s.0 == key) {
            s.1 += share;
            continue;
        }
        let (lo, hi) = e.ephemeral_ports;
        let ports = (u64::from(hi) + 1).saturating_sub(u64::from(lo));
        let family = plan.target.is_ipv4();
        let addresses = match plan.sources.len() {
            0 => e
                .addresses
                .iter()
                .filter_map(|a| {
                    a.split_whitespace()
                        .nth(1)?
                        .parse::<std::net::IpAddr>()
                        .ok()
                })
                .filter(|ip| !ip.is_loopback() && ip.is_ipv4() == family)
                .count()
                .max(1),
            s => s,
        };
        spaces.push((key, share, ports, addresses));
    }
    spaces
        .into_iter()
        .filter(|&(_, conns, ports, addrs)| ports > 0 && conns as u64 * 3 > ports * addrs as u64)
        .map(|((host, ns), conns, ports, addrs)| {
            format!(
                "{host} {ns} opens {conns} connections to {} from {addrs} address(es) of {ports} ports each: {:.0} % full, and connect() slows as a range fills (the kernel searches it for a free port each time); add addresses there (its agents spread over them) or spread over more hosts or namespaces",
                plan.target,
                conns as f64 * 100.0 / (ports * addrs as u64) as f64
            )
        })
        .collect()
}

/// CPUs the agents could keep busy (per host, their `threads` each or the
/// host's CPUs, `cpus` when they pin to them, whichever is fewer), and
/// whether they all ran on this host.
fn capacity(hellos: &[Option<Hello>], threads: usize, cpus: Option<&Vec<usize>>) -> (f64, bool) {
    let here = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    // Host -> (loops, CPUs).
    let mut hosts: Vec<(&str, usize, usize)> = Vec::new();
    for h in hellos.iter().flatten() {
        let e = &h.environment;
        let its = cpus.map_or(e.cpus_allowed.len(), Vec::len).max(1);
        match hosts.iter_mut().find(|(name, ..)| *name == e.hostname) {
            Some(host) => host.1 += threads,
            None => hosts.push((&e.hostname, threads, its)),
        }
    }
    let capacity = hosts
        .iter()
        .map(|&(_, loops, cpus)| loops.min(cpus))
        .sum::<usize>();
    let local = hosts.iter().all(|&(name, ..)| name == here);
    (capacity as f64, local)
}

/// The network namespaces the agents ran in (host and namespace, from
/// their hellos), each with its TCP counters over the span of every agent
/// in it: counters are per namespace and only grow, so the earliest
/// reading before and the latest after count each event once.
fn namespaces(
    hellos: &[Option<Hello>],
    results: &[Option<Finished>],
) -> Vec<super::report::Namespace> {
    let mut out: Vec<(super::report::Namespace, Option<(TcpCounters, TcpCounters)>)> = Vec::new();
    for (k, hello) in hellos.iter().enumerate() {
        let Some(h) = hello else { continue };
        let (host, ns) = (&h.environment.hostname, &h.environment.network_namespace);
        // An unreadable namespace is one of its own.
        let at = out
            .iter()
            .position(|(o, _)| !ns.is_empty() && o.hostname == *host && o.network_namespace == *ns);
        let at = at.unwrap_or_else(|| {
            out.push((
                super::report::Namespace {
                    hostname: host.clone(),
                    network_namespace: ns.clone(),
                    agents: Vec::new(),
                    tcp: serde_json::Value::Null,
                },
                None,
            ));
            out.len() - 1
        });
        out[at].0.agents.push(k);
        let tcp = results[k].as_ref().and_then(|f| f.tcp);
        out[at].1 = match (out[at].1, tcp) {
            (None, t) if out[at].0.agents.len() == 1 => t,
            (Some((b0, a0)), Some((b1, a1))) => Some((b0.min_each(&b1), a0.max_each(&a1))),
            // An agent without counters leaves its namespace's unknown.
            _ => None,
        };
    }
    out.into_iter()
        .map(|(mut n, span)| {
            n.tcp = span
                .map(|(before, after)| {
                    serde_json::to_value(after.since(&before)).unwrap_or_default()
                })
                .unwrap_or_default();
            n
        })
        .collect()
}

/// Agent `k`'s own figures: what it measured, or why it was lost.
fn figures(
    k: usize,
    launched: &str,
    hello: Option<&Hello>,
    rtt: Duration,
    finished: Option<&Finished>,
    lost: &[Lost],
) -> super::report::Agent {
    let measured = finished.map(|f| &f.measured);
    let latency = measured.map(|m| super::report::Percentiles::of(&m.latency));
    super::report::Agent {
        agent: k,
        launched: launched.to_string(),
        hostname: hello.map_or_else(String::new, |h| h.environment.hostname.clone()),
        network_namespace: hello
            .map_or_else(String::new, |h| h.environment.network_namespace.clone()),
        addresses: hello.map_or_else(Vec::new, |h| {
            h.environment
                .addresses
                .iter()
                .filter(|a| !a.starts_with("lo "))
                .cloned()
                .collect()
        }),
        round_trip_us: rtt.as_secs_f64() * 1e6,
        connections: measured.map_or(0, |m| m.records.established()),
        messages: latency.as_ref().map_or(0, |l| l.count),
        p99_us: latency.filter(|l| l.count > 0).map(|l| l.p99),
        cpu_seconds: measured.map_or(0.0, |m| m.cpu_user + m.cpu_system),
        errors: measured.map_or(0, |m| m.records.errors().values().sum()),
        lost: lost.iter().find(|l| l.agent == k).map(|l| l.why.clone()),
        sources: finished.map_or_else(Vec::new, |f| f.sources.clone()),
        environment: hello
            .and_then(|h| serde_json::to_value(&h.environment).ok())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hello from `host`/`ns` with one port range and these addresses.
    fn hello(ns: &str, addresses: &[&str]) -> Option<Hello> {
        let mut h = Hello::here();
        h.environment.hostname = "h".into();
        h.environment.network_namespace = ns.into();
        h.environment.ephemeral_ports = (1000, 1999);
        h.environment.addresses = addresses.iter().map(|a| a.to_string()).collect();
        Some(h)
    }

    #[test]
    fn a_namespace_past_a_third_of_its_ports_is_named_with_its_fill() {
        let target = "10.0.0.1:7".parse().unwrap();
        let plan = |c| LoadPlan::new(target, c, Workload::Closed { depth: 1 });
        // Two agents in one namespace of one address: 800 of 1,000 ports;
        // a third agent alone elsewhere with two: 400 of 2,000.
        let hellos = [
            hello("net:[1]", &["lo 127.0.0.1", "eth0 10.0.0.2"]),
            hello("net:[1]", &["lo 127.0.0.1", "eth0 10.0.0.2"]),
            hello(
                "net:[2]",
                &["eth0 10.0.0.3", "eth0 10.0.0.4", "eth0 fe80::1"],
            ),
        ];
        let w = crowded(&hellos, &plan(1200), 3);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("net:[1] opens 800 connections") && w[0].contains("80 % full"),
            "{}",
            w[0]
        );
        // Under a third everywhere: nothing to say.
        assert!(crowded(&hellos, &plan(450), 3).is_empty());
        // A loopback target spreads over 127.0.0.x by itself.
        let local = LoadPlan::new(
            "127.0.0.1:7".parse().unwrap(),
            1200,
            Workload::Closed { depth: 1 },
        );
        assert!(crowded(&hellos, &local, 3).is_empty());
    }
}
