//! `c10k compare BASE NEW` and the comparison of `c10k run --baseline DIR`
//! into a [`ComparePlan`]: the margin and the gate as shares, the output
//! paths checked before anything is read. Which kind each input is (a
//! results directory, a load report, a directory of load reports) is the
//! engine's to find ([`crate::compare::input`]), where the files are read.

use std::path::PathBuf;

use crate::cli::{CompareArgs, GateArgs};
use crate::compare::Settings;
use crate::export::target::check_flag;

/// A validated `c10k compare`.
#[derive(Debug, Clone)]
pub struct ComparePlan {
    pub base: PathBuf,
    pub new: PathBuf,
    pub settings: Settings,
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

/// `c10k compare ARGS`.
pub fn plan(args: &CompareArgs, command: String) -> Result<ComparePlan, String> {
    let margin = match &args.margin {
        Some(m) => super::run::parse_percent("--margin", m)?,
        None => crate::stats::paired::DEFAULT_MARGIN,
    };
    check_flag("--json", args.json.as_deref())?;
    check_flag("--markdown", args.markdown.as_deref())?;
    check_flag("--html", args.html.as_deref())?;
    Ok(ComparePlan {
        base: args.base.clone(),
        new: args.new.clone(),
        settings: settings(&args.gate, margin, command)?,
        json: args.json.clone(),
        markdown: args.markdown.clone(),
        html: args.html.clone(),
    })
}

/// The comparison's settings from the gate's flags (shared by `compare`
/// and `run --baseline`, whose margin is the run's own).
pub fn settings(gate: &GateArgs, margin: f64, command: String) -> Result<Settings, String> {
    let fail_if_slower = gate
        .fail_if_slower
        .as_deref()
        .map(|p| super::run::parse_percent("--fail-if-slower", p))
        .transpose()?;
    if let Some(r) = &gate.reference {
        if r.trim().is_empty() {
            return Err("--reference: name a model that both runs measured".into());
        }
    }
    Ok(Settings {
        margin,
        fail_if_slower,
        reference: gate.reference.clone(),
        command,
    })
}
