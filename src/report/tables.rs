//! The run's tables, built in one place for every front end: the exports
//! (JSON, CSV and Markdown, [`RunTables::all`]), the terminal's closing
//! lines ([`outro`]) and the HTML page each take them from here, in their
//! own order. Cost: each table is computed from the results once per call.

use crate::export::table::Table;
use crate::runner::results::RunData;

/// Every table of a run, by what it answers.
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
            verdict: crate::runner::verdict::tables(data),
            study: crate::experiments::tables(data),
            ranking: crate::runner::summary::ranking(data),
            memory: crate::runner::memory::table(data),
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
/// connection, and last, where the eye lands, the verdict.
pub fn outro(data: &RunData) -> String {
    let t = RunTables::of(data);
    let mut s = String::new();
    if let Some(line) = crate::runner::disturbed::headline(data) {
        s += &format!("\n{line}\n");
    }
    for table in t.ranking.iter().chain(&t.study).chain(&t.memory) {
        s += "\n";
        s += &table.to_text();
    }
    let verdict = crate::runner::verdict::text(data);
    if !verdict.is_empty() {
        s += "\n";
        s += &verdict;
    }
    s
}
