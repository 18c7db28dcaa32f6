//! The conformance suite of every model: the library's checks
//! ([`c10k::conform`], the same code `c10k conform` runs), each on every
//! variant of every model as a real `c10k serve` child. A model that
//! cannot run here is reported as ignored with the server's reason.

use c10k::conform::{Check, Subject, Suite, Verdict};
use libtest_mimic::{Completion, Failed};

use crate::support::{bin, PATIENCE};

/// A model under test: its name and extra `serve` flags.
#[derive(Clone, Debug)]
pub struct Case {
    pub label: String,
    pub model: &'static str,
    pub flags: &'static [&'static str],
}

/// Every variant of every model in the registry, so a new model cannot
/// skip the suite.
pub fn cases() -> Vec<Case> {
    c10k::server::MODELS
        .iter()
        .flat_map(|m| {
            m.variants().iter().map(|v| {
                let name = m.name().replace('-', "_");
                Case {
                    label: if v.label.is_empty() {
                        name
                    } else {
                        format!("{name}_{}", v.label)
                    },
                    model: m.name(),
                    flags: v.flags,
                }
            })
        })
        .collect()
}

/// Runs `check` on `case`: a pass completes, a skip is ignored with its
/// reason, a failure fails with the check's evidence.
pub fn run(case: &Case, check: &Check) -> Result<Completion, Failed> {
    let suite = Suite {
        subject: Subject::Model {
            model: case.model.to_string(),
            flags: case.flags.iter().map(|f| f.to_string()).collect(),
        },
        program: Some(bin().into()),
        patience: PATIENCE,
    };
    let row = suite.run(check);
    match row.verdict {
        Verdict::Pass => Ok(Completion::Completed),
        Verdict::Skip => Ok(Completion::ignored_with(row.evidence)),
        Verdict::Fail => Err(row.evidence.into()),
    }
}
