//! Echo servers, one file per concurrency model, behind one trait.
//!
//! Every model shares the connection state machine in [`conn`], the accept
//! policy in [`accept`] (max-conns refusals, EMFILE back-off) and the counters
//! in [`Stats`]; models differ only in how they wait for readiness and who
//! runs the handler. The readiness models (select, poll, epoll,
//! epoll-workers, hybrid, busy, sigio) share one loop as well, [`reactor`]: each of them
//! is a waiter and a handler. Adding a model is a file, an `impl Model` and a
//! line in [`MODELS`]; the conformance suite runs every model's
//! [`Model::variants`] from that registry.

pub mod accept;
pub mod conn;
pub mod http;
pub mod knobs;
pub mod pace;
pub mod reactor;
pub mod run;
pub mod settings;
pub mod shared_state;
pub mod stats;
pub mod table;
pub mod work;

mod busy;
mod children;
mod epoll;
mod epoll_workers;
mod fork;
mod hybrid;
mod poll;
mod prefork;
mod select;
mod sigio;
mod start;
mod threads;
mod tokio_tasks;
mod uring;

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use crate::sys::lock::LockKind;

pub use stats::{Stats, Summary};

use crate::sys::signals::Shutdown;

/// How `epoll-workers` shares the listening socket among its threads.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum AcceptMode {
    /// One thread accepts and hands sockets out round-robin.
    Acceptor,
    /// Every worker's epoll watches the listener (the thundering herd).
    Shared,
    /// Every worker watches the listener with EPOLLEXCLUSIVE.
    Exclusive,
    /// A listener per worker on one port with SO_REUSEPORT.
    Reuseport,
}

/// Validated settings of one server.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    /// Bytes of echo buffer per connection.
    pub buffer: usize,
    /// Connections past this many open at once are closed at once.
    pub max_conns: Option<u64>,
    /// Threads or processes, for the models that use several.
    pub workers: usize,
    /// Stack size of connection threads (`threads`), `None` for the default.
    pub stack_size: Option<usize>,
    /// Edge-triggered epoll.
    pub edge: bool,
    pub accept: AcceptMode,
    /// listen(2) backlog.
    pub backlog: i32,
    /// Set SO_REUSEPORT on the listener so several servers share a port.
    pub reuseport: bool,
    /// Interval control: the least time between two waits of a readiness
    /// loop (zero: none).
    pub interval: Duration,
    /// `--shared-state`: update a table shared by the whole server after
    /// every read, under a lock of this kind.
    pub shared_state: Option<LockKind>,
    /// `--work`: what the handler does per request (none by default).
    pub work: work::Work,
    /// `--global-queue-interval` (tokio): tasks a worker runs between two
    /// looks at the global queue; `None`: tokio's own tuning.
    pub global_queue_interval: Option<u32>,
    /// `--blocking-threads` (tokio): the most threads of the blocking pool;
    /// `None`: tokio's [`TOKIO_BLOCKING_THREADS`].
    pub blocking_threads: Option<usize>,
    /// `--ring-entries` (uring): submission queue entries per ring.
    pub ring_entries: Option<u32>,
    /// `--ring-buffers` (uring): provided buffers per ring.
    pub ring_buffers: Option<u16>,
    /// `--ring-recv once` (uring): a one-shot recv after every chunk
    /// instead of one multishot recv per connection.
    pub ring_recv_once: bool,
    /// `--hand-back each` (hybrid): a pool thread wakes the loop after
    /// every job instead of when it finds none waiting.
    pub hand_back_each: bool,
}

/// tokio's own cap on its blocking pool (`Builder::max_blocking_threads`).
pub const TOKIO_BLOCKING_THREADS: usize = 512;

/// What a model gets to run with.
pub struct Context<'a> {
    pub config: &'a Config,
    pub stats: &'static Stats,
    pub shutdown: &'a Shutdown,
    /// Prints the READY line (once, however often it is called).
    pub ready: &'a (dyn Fn() + Sync),
}

impl Context<'_> {
    /// Tells whoever started us that connections are being served: called
    /// by the model once its setup is done, never before.
    pub fn ready(&self) {
        (self.ready)()
    }
}

/// Why a model cannot run here (io_uring blocked, say).
#[derive(Debug, thiserror::Error)]
#[error("model {model} is not supported here: {reason}")]
pub struct Unsupported {
    pub model: &'static str,
    pub reason: String,
}

/// A configuration of a model worth checking on its own: the conformance
/// suite runs every variant of every model.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// Appended to the model's name in test names; empty for the plain one.
    pub label: &'static str,
    /// `c10k serve` flags beside `--model`.
    pub flags: &'static [&'static str],
}

/// A concurrency model of an echo server.
pub trait Model: Sync {
    /// The name used on the command line.
    fn name(&self) -> &'static str;
    /// One line: how it waits and who runs the handler.
    fn about(&self) -> &'static str;
    /// Checks that the kernel allows this model; the reason when not.
    fn probe(&self, _config: &Config) -> Result<(), String> {
        Ok(())
    }
    /// Why the model uses CPU while idle, for a model that never sleeps by
    /// design (`busy`); the checks that it does not spin are skipped for it
    /// with this reason.
    fn spins(&self) -> Option<&'static str> {
        None
    }
    /// Whether the model waits in the readiness [`reactor`] (and so takes
    /// `--interval`).
    fn readiness(&self) -> bool {
        false
    }
    /// Whether the model forks (it must then stay single-threaded and be
    /// woken by SIGCHLD).
    fn forks(&self) -> bool {
        false
    }
    /// Whether the model starts a task (thread or process) per connection,
    /// so that a connection is fully served only once its task exists.
    fn task_per_connection(&self) -> bool {
        false
    }
    /// Whether each worker of the model's pool serves one connection at a
    /// time (prefork), so holding N connections at once takes N workers.
    fn worker_per_connection(&self) -> bool {
        false
    }
    /// The configurations the conformance suite checks.
    fn variants(&self) -> &'static [Variant] {
        &[Variant {
            label: "",
            flags: &[],
        }]
    }
    /// The threads or processes that run handlers at once (`None`: one per
    /// connection): what bounds its throughput under `--work`. The
    /// single-threaded loops have one.
    fn handlers(&self, _config: &Config) -> Option<usize> {
        Some(1)
    }
    /// Whether a handler sleeps through a `wait` (the blocking models have
    /// nothing else to do) rather than serving others meanwhile.
    fn sleeps_through_waits(&self) -> bool {
        false
    }
    /// Whether the model's idiom hands blocking calls to a pool of their
    /// own (tokio's `spawn_blocking`), unless told to block in place.
    fn offloads_blocking(&self) -> bool {
        false
    }
    /// Whether the model runs on a scheduler with a global run queue
    /// (`--global-queue-interval`).
    fn has_global_queue(&self) -> bool {
        false
    }
    /// The settings worth tuning in this model, with their ranges
    /// ([`knobs`]; `--interval` is added for every readiness loop).
    fn knobs(&self) -> &'static [knobs::Knob] {
        &[]
    }
    /// Whether the model opens more listeners on the same port.
    fn needs_reuseport(&self, _config: &Config) -> bool {
        false
    }
    /// Serves on `listener` (non-blocking) until `ctx.shutdown` is requested.
    /// Calls `ctx.ready()` once every worker, ring, pool or runtime it was
    /// asked for exists, and only then: a setup that fails returns its error
    /// before READY, with whatever it started stopped ([`start`]).
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()>;
}

/// The registry: every model, in the order the README presents them.
pub static MODELS: &[&dyn Model] = &[
    &threads::Threads,
    &fork::Fork,
    &prefork::Prefork,
    &busy::Busy,
    &select::Select,
    &poll::Poll,
    &sigio::Sigio,
    &epoll::Epoll,
    &epoll_workers::EpollWorkers,
    &uring::Uring,
    &tokio_tasks::Tokio,
    &hybrid::Hybrid,
];

/// Looks a model up by name.
pub fn find(name: &str) -> Option<&'static dyn Model> {
    MODELS.iter().copied().find(|m| m.name() == name)
}

/// The model names, for help texts and errors.
pub fn names() -> Vec<&'static str> {
    MODELS.iter().map(|m| m.name()).collect()
}
