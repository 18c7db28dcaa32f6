//! c10k: which concurrency model should a network server use? Measured.
//!
//! The architecture in a page.
//!
//! ```text
//!  main.rs ── cli.rs (raw flags, clap) ── plan/ (validated settings)
//!                                           │
//!        ┌──────────────┬─────────────┬─────┴──────┬───────────┐
//!     server/        client/        runner/      micro/      herd/
//!   (c10k serve)   (c10k load)    (c10k run)   (c10k micro) (c10k herd)
//!        │              │      cells: server child + load, interleaved
//!        │              │             │
//!        └── metrics/ (a process tree's CPU, memory, sockets; kernel memory)
//!                                     │
//!             results (runner/results.rs: results.jsonl + plan.json)
//!                                     │
//!                 export/ (JSON, CSV, Markdown)   report/ (HTML, SVG)
//!
//!  stats/ (medians, intervals, fits) beside them; sys/ under everything:
//!  the only home of `unsafe`.
//! ```
//!
//! Flags become settings once: [`cli`] holds the raw flags and [`plan`]
//! turns them into validated settings; nothing below sees a flag (a test in
//! [`plan`] holds every other file to that).
//!
//! **The path of one measurement** (`c10k run`, one cell): [`plan::run`]
//! expands the preset and the flags into a [`runner::matrix::RunPlan`];
//! [`runner::execute`](mod@runner::execute) starts the server as a child through the one
//! launcher, [`runner::server`] (`c10k serve`, which prints `READY ip:port`
//! once it accepts; [`server::run`]), waits until the server holds the
//! connections ([`metrics::tree`]), and drives it with the load generator
//! ([`client::run`], one event loop per thread in [`client::engine`], several
//! processes through [`client::split`] past the open-files limit). Samples
//! of the server's process tree and the kernel's memory are taken at each
//! end of the window; the client says what limited the figure
//! ([`client::limit`], [`runner::verdict`]). The cell becomes one line of
//! `results.jsonl` ([`runner::results`]); [`export`] and [`report`] read
//! only those lines, so a report can be made again from a directory.
//!
//! **The one file to open for each mechanism:**
//!
//! | mechanism | file |
//! |---|---|
//! | the echo state machine every model runs | `server/conn.rs` |
//! | accepting, `--max-conns`, the EMFILE pause | `server/accept.rs` |
//! | the readiness loop of select, poll, epoll, epoll-workers, hybrid | `server/reactor.rs` |
//! | how select, poll, epoll wait (one waiter each) | `server/select.rs`, `poll.rs`, `epoll.rs` |
//! | a model and its trade-offs | `server/<model>.rs`, registry in `server/mod.rs` |
//! | starting and stopping a server child (runner, tests, benches) | `runner/server.rs` |
//! | a process tree's CPU, memory and sockets | `metrics/tree.rs`, `metrics/cpu.rs` |
//! | the kernel's task limits | `env/tasks.rs` |
//! | the client's event loop, pacing, coordinated omission | `client/engine.rs` |
//! | a load plan and its command line | `client/plan.rs` |
//! | spreading the client over processes | `client/split.rs` |
//! | limits checked before a run | `client/preflight.rs` |
//! | what limited a figure | `client/limit.rs`, `runner/verdict.rs` |
//! | results, resume, locking, which plan a record belongs to | `runner/results.rs`, `lock.rs`, `identity.rs` |
//! | writing an output file safely | `export/target.rs` |
//! | `unsafe` (select past FD_SETSIZE, fork, wait4, shared memory, pinning) | `sys/` |
//!
//! [`server`] is the echo server: a [`server::Model`] per concurrency model
//! (thread per connection, process per connection, pre-forked pool, select,
//! poll, epoll, epoll with worker threads, io_uring, tokio, poll + thread
//! pool), all running one connection state machine ([`server::conn`]) and
//! one accept policy ([`server::accept`]), and the readiness models one loop
//! ([`server::reactor`]), so a measurement sees only how each waits and who
//! runs the handler. `c10k serve` prints a one-line JSON summary when it
//! stops (SIGTERM or SIGINT).

// `unsafe` is refused everywhere but in `sys`, and there every block must
// say why it is sound.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod cli;
pub mod client;
pub mod env;
pub mod experiments;
pub mod export;
pub mod herd;
pub mod metrics;
pub mod micro;
pub mod output;
pub mod plan;
pub mod present;
pub mod report;
pub mod runner;
pub mod server;
pub mod stats;
#[allow(unsafe_code)]
pub mod sys;
