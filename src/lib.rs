//! c10k: which concurrency model should a network server use? Measured.
//!
//! The architecture in a page:
//!
//! - [`cli`] holds the raw flags; [`plan`] validates them into settings.
//!   Nothing else sees a flag: the engine modules take settings structs
//!   (a test in [`plan`] holds every other file to that).
//! - [`server`] is the echo server: a [`server::Model`] per concurrency model
//!   (thread per connection, process per connection, pre-forked pool, select,
//!   poll, epoll, epoll with worker threads, io_uring, tokio, poll + thread
//!   pool), all running one connection state machine ([`server::conn`]) and
//!   one accept policy ([`server::accept`]), so a measurement sees only how
//!   each waits and who runs the handler.
//! - [`sys`] is the only home of `unsafe`: select past FD_SETSIZE, poll over
//!   a raw array, fork and wait4, shared memory, signals, rlimits, pinning.
//!
//! `c10k serve` runs a server as its own process: it prints `READY ip:port`
//! once it accepts, echoes until SIGTERM or SIGINT, then prints a one-line
//! JSON summary. Everything that measures a server starts it that way.

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
pub mod plan;
pub mod report;
pub mod runner;
pub mod server;
pub mod stats;
#[allow(unsafe_code)]
pub mod sys;
