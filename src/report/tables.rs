//! The run's tables, built in one place for every front end: the exports
//! (JSON, CSV and Markdown, [`sections`]), the terminal's closing lines
//! ([`outro`]) and the HTML page each take them from here, in their own
//! order. A run with a work axis has them once per work profile, under a
//! heading naming it ([`crate::results::axis`]); a run without it, once and
//! unheaded. Cost: each table is computed from the results once per call.

use crate::export::table::Table;
use crate::results::axis;
use crate::results::dir::RunData;

/// The tables of one work profile, under its heading (`Work: block:1ms`;
/// none without a work axis).
pub struct Section {
    pub heading: Option<String>,
    /// What was disturbed from outside the run among its cells
    /// ([`crate::analysis::disturbed::headline`]).
    pub disturbed: Option<String>,
    pub tables: Vec<Table>,
}

/// Every table of the run, per work profile, in the order the exports
/// list them.
pub fn sections(data: &RunData) -> Vec<Section> {
    axis::parts(data)
        .iter()
        .map(|p| Section {
            heading: p.heading(),
            disturbed: crate::analysis::disturbed::headline(&p.data),
            tables: RunTables::of(&p.data).all(),
        })
        .collect()
}

/// Every table of a run (of one work profile), by what it answers.
pub struct RunTables {
    /// What limited the leader at each size, and the answer.
    pub verdict: Vec<Table>,
    /// The study's own tables, measured here.
    pub study: Vec<Table>,
    /// The models ranked at each size.
    pub ranking: Vec<Table>,
    /// Memory per connection, when the run measured it.
    pub memory: Option<Table>,
    /// The primary figure per model and size.
    pub summary: Table,
}

impl RunTables {
    pub fn of(data: &RunData) -> RunTables {
        RunTables {
            verdict: crate::analysis::verdict::tables(data),
            study: crate::experiments::tables(data),
            ranking: crate::analysis::summary::ranking(data),
            memory: crate::analysis::memory::table(data),
            summary: super::summary::summary_table(data),
        }
    }

    /// Every table, in the order the exports list them.
    pub fn all(self) -> Vec<Table> {
        let mut t = self.verdict;
        t.extend(self.study);
        t.extend(self.ranking);
        t.extend(self.memory);
        t.push(self.summary);
        t
    }
}

/// For the terminal: the ranking, the study's tables, memory per
/// connection, and last, where the eye lands, the verdict; with a work
/// axis, all of that per profile under its heading.
pub fn outro(data: &RunData) -> String {
    let mut s = String::new();
    for part in axis::parts(data) {
        if let Some(h) = part.heading() {
            s += &format!("\n== {h} ==\n");
        }
        s += &outro_of(&part.data);
    }
    s
}

/// The answer at a glance, the terminal's last lines: per count (and
/// work profile), the best, the equivalent, the worse and the undecided,
/// as the report's forest plots draw them. Empty when nothing was ranked.
pub fn glance(data: &RunData) -> String {
    let mut lines = Vec::new();
    for part in axis::parts(data) {
        let under = part
            .heading()
            .map_or_else(String::new, |h| format!("{h}, "));
        for l in crate::analysis::summary::glance(&part.data) {
            lines.push(format!("  {under}{l}"));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nThe answer ({} against the best at each count; {} intervals, {} margin):\n{}\n",
        data.plan.primary.label(),
        crate::analysis::summary::level_text(data.plan.rule().level),
        crate::analysis::summary::margin_text(data.plan.margin),
        lines.join("\n")
    )
}

/// [`outro`] of one work profile.
fn outro_of(data: &RunData) -> String {
    let t = RunTables::of(data);
    let mut s = String::new();
    if let Some(line) = crate::analysis::disturbed::headline(data) {
        s += &format!("\n{line}\n");
    }
    for table in t.ranking.iter().chain(&t.study).chain(&t.memory) {
        s += "\n";
        s += &table.to_text();
    }
    let verdict = crate::analysis::verdict::text(data);
    if !verdict.is_empty() {
        s += "\n";
        s += &verdict;
    }
    s
}
