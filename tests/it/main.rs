//! The one integration test binary: the conformance suite of every model
//! plus the command-line tests. Its own harness (libtest-mimic) reports a
//! model that cannot run here as ignored with the server's reason.

#![forbid(unsafe_code)]

mod agents;
mod bad_input;
mod cli;
mod compare;
mod conform;
mod conformance;
mod foreign;
mod herd;
mod load;
mod micro;
mod micro_accept;
#[path = "../servers/misbehaving_echo.rs"]
mod misbehaving_echo;
mod models;
mod report;
mod runner;
mod scale;
mod schema;
mod sshd;
mod stopping_servers;
mod support;
mod work;

use libtest_mimic::{Arguments, Trial};

fn main() {
    // 1,100 connections per check: ask for the hard open-files limit.
    if let Err(e) = c10k::sys::rlimit::raise_nofile() {
        eprintln!("warning: cannot raise the open-files limit: {e}");
    }
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for case in conformance::cases() {
        for check in c10k::conform::CHECKS {
            let case = case.clone();
            trials.push(Trial::ignorable_test(
                format!("conformance::{}::{}", case.label, check.name),
                move || conformance::run(&case, check),
            ));
        }
    }
    trials.push(Trial::ignorable_test(
        "agents::four_client_namespaces_drive_a_server_namespace",
        agents::netns_agents,
    ));
    trials.push(Trial::ignorable_test(
        "agents::a_task_limit_met_while_starting_agents_stops_them_all",
        agents::task_limit_while_starting_agents,
    ));
    let groups: [(&str, &[(&str, support::Test)]); 19] = [
        ("agents", agents::TESTS),
        ("bad_input", bad_input::TESTS),
        ("cli", cli::TESTS),
        ("compare", compare::TESTS),
        ("conform", conform::TESTS),
        ("foreign", foreign::TESTS),
        ("herd", herd::TESTS),
        ("load", load::TESTS),
        ("micro", micro::TESTS),
        ("micro_accept", micro_accept::TESTS),
        ("misbehaving_echo", misbehaving_echo::TESTS),
        ("models", models::TESTS),
        ("report", report::TESTS),
        ("runner", runner::TESTS),
        ("scale", scale::TESTS),
        ("schema", schema::TESTS),
        ("sshd", sshd::TESTS),
        ("stopping_servers", stopping_servers::TESTS),
        ("work", work::TESTS),
    ];
    for (group, tests) in groups {
        for &(name, test) in tests {
            trials.push(Trial::test(format!("{group}::{name}"), test));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
