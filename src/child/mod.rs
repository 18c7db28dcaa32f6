//! Server child processes: `c10k serve …` (or a user's server, or a peer)
//! started as a child tied to this process, its READY line awaited without
//! sleeping, its output read without outliving its stop, then stopped with
//! SIGTERM and reaped with `wait4` ([`server`], [`pipes`]); a server that is
//! not c10k's, started from a command line or already running
//! ([`foreign`]). The one launcher of the runner, the conformance suite,
//! tests and benches. It costs a process and two reader threads per child.

pub mod foreign;
pub(crate) mod pipes;
pub mod server;
