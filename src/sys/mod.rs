//! The only home of `libc` calls and `unsafe` in c10k.
//!
//! Each submodule wraps one kernel facility that the safe crates (rustix,
//! socket2, std) do not cover the way we need it, and exposes a safe API.
//! Every `unsafe` block carries a `// SAFETY:` comment saying why it holds.

pub mod affinity;
pub mod async_fd;
pub mod fdset;
pub mod forks;
pub mod lock;
pub mod mapping;
pub mod net;

pub mod pollset;
pub mod process;
pub mod rlimit;
pub mod shared;
pub mod sigio;
pub mod signals;
pub mod uring;
