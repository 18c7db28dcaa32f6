//! The conformance suite of every model: the library's checks
//! ([`c10k::conform`], the same code `c10k conform` runs), each on every
//! variant of every model as a real `c10k serve` child. A model that
//! cannot run here is reported as ignored with the server's reason.
//!
//! Every model is checked again with work per request (`--work block:` and
//! `--work wait:`, and tokio's `--block-inline`): requests of 16 KiB, so
//! the checks' bulk traffic stays a few thousand requests, each padded to
//! whole requests by the suite.
//!
//! And every variant of every model over HTTP/1.1 (`--protocol http`,
//! the HTTP checks), once more with `--work block:` per request.

use c10k::conform::{Check, Subject, Suite, Verdict};
use c10k::protocol::Protocol;
use libtest_mimic::{Completion, Failed, Trial};

use crate::support::{bin, group, trial, PATIENCE};

/// Every check on every case, named `conformance::CASE::CHECK`: made from
/// the registry of models and the list of checks, not written one by one.
pub fn trials() -> Vec<Trial> {
    let group = group(module_path!());
    let mut trials = Vec::new();
    for case in cases() {
        for check in c10k::conform::checks(case.protocol) {
            let case = case.clone();
            trials.push(trial(
                group,
                &format!("{}::{}", case.label, check.name),
                move || run(&case, check),
            ));
        }
    }
    trials
}

/// A model under test: its name and extra `serve` flags.
#[derive(Clone, Debug)]
struct Case {
    label: String,
    model: &'static str,
    flags: Vec<String>,
    /// Bytes per request under `--work` (1: a plain echo, and HTTP).
    request: usize,
    protocol: Protocol,
}

/// Bytes of a request in the cases with work.
const REQUEST: usize = 16 << 10;

/// The work of the cases with work: a label and the flags added.
const WORK: &[(&str, &[&str])] = &[
    ("block", &["--work", "block:50us"]),
    ("wait", &["--work", "wait:50us"]),
];

/// Every variant of every model in the registry, so a new model cannot
/// skip the suite.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for m in c10k::server::MODELS {
        let name = m.name().replace('-', "_");
        for v in m.variants() {
            cases.push(Case {
                label: if v.label.is_empty() {
                    name.clone()
                } else {
                    format!("{name}_{}", v.label)
                },
                model: m.name(),
                flags: v.flags.iter().map(|f| f.to_string()).collect(),
                request: 1,
                protocol: Protocol::Echo,
            });
        }
        for v in m.variants() {
            cases.push(Case {
                label: if v.label.is_empty() {
                    format!("{name}_http")
                } else {
                    format!("{name}_{}_http", v.label)
                },
                model: m.name(),
                flags: v.flags.iter().map(|f| f.to_string()).collect(),
                request: 1,
                protocol: Protocol::Http,
            });
        }
        // With work, on the model's first variant.
        let base = m.variants().first().map_or(&[][..], |v| v.flags);
        let mut work: Vec<(String, Vec<&str>)> = WORK
            .iter()
            .map(|(label, flags)| (label.to_string(), flags.to_vec()))
            .collect();
        if m.offloads_blocking() {
            work.push((
                "block_inline".into(),
                vec!["--work", "block:50us", "--block-inline"],
            ));
        }
        for (label, flags) in work {
            let size = REQUEST.to_string();
            let mut all: Vec<String> = base.iter().map(|f| f.to_string()).collect();
            all.extend(flags.iter().map(|f| f.to_string()));
            all.extend(["--message-size".to_string(), size]);
            cases.push(Case {
                label: format!("{name}_{label}"),
                model: m.name(),
                flags: all,
                request: REQUEST,
                protocol: Protocol::Echo,
            });
        }
        let mut flags: Vec<String> = base.iter().map(|f| f.to_string()).collect();
        flags.extend(["--work".to_string(), "block:50us".to_string()]);
        cases.push(Case {
            label: format!("{name}_http_block"),
            model: m.name(),
            flags,
            request: 1,
            protocol: Protocol::Http,
        });
    }
    cases
}

/// Runs `check` on `case`: a pass completes, a skip is ignored with its
/// reason, a failure fails with the check's evidence.
fn run(case: &Case, check: &Check) -> Result<Completion, Failed> {
    // The case's flags, parsed as `c10k conform --server-arg` parses them.
    let settings = c10k::plan::serve_settings("--server-arg", Some(case.model), &case.flags)?;
    let suite = Suite {
        subject: Subject::Model {
            model: case.model.to_string(),
            settings,
        },
        program: Some(bin().into()),
        patience: PATIENCE,
        request: case.request,
        protocol: case.protocol,
    };
    let row = suite.run(check);
    match row.verdict {
        Verdict::Pass => Ok(Completion::Completed),
        Verdict::Skip => Ok(Completion::ignored_with(row.evidence)),
        Verdict::Fail => Err(row.evidence.into()),
    }
}
