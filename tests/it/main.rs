//! The one integration test binary: the conformance suite of every model
//! plus the command-line tests. Its own harness (libtest-mimic) reports a
//! model that cannot run here as ignored with the server's reason.

mod cli;
mod conformance;
mod herd;
mod load;
mod micro;
mod micro_accept;
mod misbehave;
mod report;
mod runner;
mod schema;
mod support;

use libtest_mimic::{Arguments, Trial};

fn main() {
    // 1,100 connections per check: ask for the hard open-files limit.
    if let Err(e) = c10k::sys::rlimit::raise_nofile() {
        eprintln!("warning: cannot raise the open-files limit: {e}");
    }
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for case in conformance::CASES {
        for &(name, check) in conformance::CHECKS {
            let case = case.clone();
            trials.push(Trial::ignorable_test(
                format!("conformance::{}::{name}", case.label),
                move || check(&case),
            ));
        }
    }
    for &(name, test) in cli::TESTS {
        trials.push(Trial::test(format!("cli::{name}"), test));
    }
    for &(name, test) in herd::TESTS {
        trials.push(Trial::test(format!("herd::{name}"), test));
    }
    for &(name, test) in load::TESTS {
        trials.push(Trial::test(format!("load::{name}"), test));
    }
    for &(name, test) in micro::TESTS {
        trials.push(Trial::test(format!("micro::{name}"), test));
    }
    for &(name, test) in micro_accept::TESTS {
        trials.push(Trial::test(format!("micro_accept::{name}"), test));
    }
    for &(name, test) in misbehave::TESTS {
        trials.push(Trial::test(format!("misbehave::{name}"), test));
    }
    for &(name, test) in report::TESTS {
        trials.push(Trial::test(format!("report::{name}"), test));
    }
    for &(name, test) in runner::TESTS {
        trials.push(Trial::test(format!("runner::{name}"), test));
    }
    for &(name, test) in schema::TESTS {
        trials.push(Trial::test(format!("schema::{name}"), test));
    }
    libtest_mimic::run(&args, trials).exit();
}
