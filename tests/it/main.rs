//! The one integration test binary: the conformance suite of every model
//! plus the command-line tests. Its own harness (libtest-mimic) reports a
//! model that cannot run here as ignored with the server's reason.
//!
//! A module is a group of tests, and `module::function` is a test's name:
//! each module lists its test functions once, with [`tests!`], and
//! [`GROUPS`] below gathers every module's list.
//!
//! How to write a test (the helpers are in `support.rs`):
//!
//! - write `fn what_it_shows() -> Result<(), Failed>` in the module it
//!   belongs to and add its name to the module's `tests![…]`; run it
//!   alone with `cargo test --test it -- module::what_it_shows`;
//! - take a directory with `let dir = scratch("module-what")?;` and never
//!   remove it: it goes when the test passes and is kept, named in the
//!   failure, when it fails;
//! - check with `expect_eq(what, expected, got)?`,
//!   `expect_contains(what, haystack, needle)?` or `ensure(ok, || …)?`,
//!   so a failure shows what came, not only what was wanted;
//! - never sleep: wait for what the program says (a READY line, a file, a
//!   process in /proc), each wait bounded by `support::PATIENCE`; and
//!   assert counts and words, never how long something took: other tests
//!   share the CPUs.

#![forbid(unsafe_code)]

/// The tests of a module, each named once, by its function:
/// `tests![a, b];` defines `trials()`, the trials `module::a` and
/// `module::b`, in that order. A test is a `fn() -> Result<(), Failed>`,
/// or a `fn() -> Result<Completion, Failed>` when it can find it cannot run
/// here and have itself ignored with the reason.
macro_rules! tests {
    ($($test:ident),+ $(,)?) => {
        /// This module's tests, named `module::function`.
        pub fn trials() -> Vec<libtest_mimic::Trial> {
            let group = crate::support::group(module_path!());
            vec![$(crate::support::trial(group, stringify!($test), $test)),+]
        }
    };
}

mod agents;
mod bad_input;
mod capacity;
mod cli;
mod compare;
mod conform;
mod conformance;
mod docs;
mod foreign;
mod herd;
mod http;
mod load;
mod micro;
mod micro_accept;
#[path = "../servers/misbehaving_echo.rs"]
mod misbehaving_echo;
mod models;
mod report;
mod resident;
mod runner;
mod scale;
mod schema;
mod sshd;
mod startup;
mod stopping_servers;
mod support;
mod tune;
mod twins;
mod work;

use libtest_mimic::{Arguments, Trial};

/// Every module's tests. A module left out of this list is dead code, and
/// the build says so (clippy refuses the warning). The modules are
/// declared above one by one rather than by a macro, as rustfmt does not
/// follow a `mod` inside a macro and would leave its file unformatted.
const GROUPS: &[fn() -> Vec<Trial>] = &[
    agents::trials,
    bad_input::trials,
    capacity::trials,
    cli::trials,
    compare::trials,
    conform::trials,
    conformance::trials,
    docs::trials,
    foreign::trials,
    herd::trials,
    http::trials,
    load::trials,
    micro::trials,
    micro_accept::trials,
    misbehaving_echo::trials,
    models::trials,
    report::trials,
    resident::trials,
    runner::trials,
    scale::trials,
    schema::trials,
    sshd::trials,
    startup::trials,
    stopping_servers::trials,
    tune::trials,
    twins::trials,
    work::trials,
];

fn main() {
    // 1,100 connections per check: ask for the hard open-files limit.
    if let Err(e) = c10k::sys::rlimit::raise_nofile() {
        eprintln!("warning: cannot raise the open-files limit: {e}");
    }
    // The tests read the terminal's tables whole: every `c10k` they start
    // lays its text out at a width past any row, so no cell is wrapped
    // (the wrapping has its own test, which sets a narrow one). Set
    // before any thread starts.
    std::env::set_var("COLUMNS", "10000");
    let args = Arguments::from_args();
    let trials = GROUPS.iter().flat_map(|trials| trials()).collect();
    let conclusion = libtest_mimic::run(&args, trials);
    support::settle_shared(conclusion.has_failed());
    conclusion.exit();
}
