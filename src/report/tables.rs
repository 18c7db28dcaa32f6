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
        // A capacity search ranks no figure over its slots: its tables are
        // the answer, the curves the summary.
        if data.plan.capacity.is_some() {
            let mut t = crate::capacity::tables::tables(data);
            let summary = t.pop().unwrap_or_else(|| Table::new("", &[]));
            return RunTables {
                verdict: t,
                study: crate::tuning::answers::table(data).into_iter().collect(),
                ranking: Vec::new(),
                memory: None,
                summary,
            };
        }
        let mut study: Vec<Table> = crate::tuning::answers::table(data).into_iter().collect();
        study.extend(crate::experiments::tables(data));
        RunTables {
            verdict: crate::analysis::verdict::tables(data),
            study,
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

/// What the terminal prints of a run, in order: a line, or a table.
enum Piece {
    Line(String),
    Table(Table),
}

/// For the terminal: the ranking, the study's tables, memory per
/// connection, and last, where the eye lands, the verdict; with a work
/// axis, all of that per profile under its heading. Every table fits the
/// terminal ([`crate::export::table::width`]); a note said under more than
/// one table (the method, the rule) is said once, at the end, and the
/// rest under their own table.
pub fn outro(data: &RunData) -> String {
    use crate::export::table::{width, wrap};
    let width = width();
    let mut pieces = Vec::new();
    for part in axis::parts(data) {
        if let Some(h) = part.heading() {
            pieces.push(Piece::Line(format!("\n== {h} ==")));
        }
        outro_of(&part.data, &mut pieces);
    }
    let mut said: Vec<&String> = Vec::new();
    let notes = pieces.iter().flat_map(|p| match p {
        Piece::Table(t) => t.notes.as_slice(),
        Piece::Line(_) => &[],
    });
    for n in notes.clone() {
        if notes.clone().filter(|m| *m == n).count() > 1 && !said.contains(&n) {
            said.push(n);
        }
    }
    let mut s = String::new();
    for p in &pieces {
        match p {
            // A line fits the terminal as a note does (the disturbed
            // headline runs past 80 columns).
            Piece::Line(l) => {
                for line in l.split('\n') {
                    if line.is_empty() {
                        s += "\n";
                    } else {
                        s += &wrap(line, width, "", "  ");
                    }
                }
            }
            Piece::Table(t) => {
                s += "\n";
                s += &t.grid(width);
                for n in t.notes.iter().filter(|n| !said.contains(n)) {
                    s += &wrap(n, width, "  ", "  ");
                }
            }
        }
    }
    if !said.is_empty() {
        s += "\nHow to read the tables above (results.md has each note under its table):\n";
        for n in said {
            s += &wrap(n, width, "  ", "    ");
        }
    }
    s
}

/// [`outro`] of one work profile.
fn outro_of(data: &RunData, pieces: &mut Vec<Piece>) {
    let t = RunTables::of(data);
    if data.plan.capacity.is_some() {
        // The settings each ran with, the curves, then where the eye
        // lands: capacity and cost.
        for table in t.study.into_iter().chain([t.summary]).chain(t.verdict) {
            pieces.push(Piece::Table(table));
        }
        return;
    }
    if let Some(line) = crate::analysis::disturbed::headline(data) {
        pieces.push(Piece::Line(format!("\n{line}")));
    }
    for table in t.ranking.into_iter().chain(t.study).chain(t.memory) {
        pieces.push(Piece::Table(table));
    }
    if !t.verdict.is_empty() {
        pieces.push(Piece::Line("\nVerdict".into()));
        pieces.extend(t.verdict.into_iter().map(Piece::Table));
    }
}

/// The answer at a glance, the terminal's last lines: per count (and
/// work profile), the best, the equivalent, the worse and the undecided,
/// as the report's forest plots draw them. Empty when nothing was ranked.
pub fn glance(data: &RunData) -> String {
    let width = crate::export::table::width();
    let mut lines: Vec<String> = Vec::new();
    for part in axis::parts(data) {
        let under = part
            .heading()
            .map_or_else(String::new, |h| format!("{h}, "));
        let capacity = part.data.plan.capacity.is_some();
        let part_lines = if capacity {
            crate::capacity::tables::glance(&part.data)
        } else {
            crate::analysis::summary::glance(&part.data)
        };
        for l in part_lines {
            lines.push(crate::export::table::wrap(
                &format!("{under}{l}"),
                width,
                "  ",
                "    ",
            ));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let heading = if data.plan.capacity.is_some() {
        format!(
            "The answer (capacity at the target, decided rates; {} margin):",
            crate::analysis::summary::margin_text(data.plan.margin),
        )
    } else {
        let busy = crate::results::series::connections(data)
            .into_iter()
            .any(|n| {
                crate::analysis::summary::ranked_by(data, n)
                    == crate::analysis::summary::RankedBy::ServerCpu
            });
        format!(
            "The answer ({}{} against the best at each count; {} intervals, {} margin):",
            data.plan.figure_label(),
            if busy {
                ", or the server's CPU per message where the machine was busy outside the run,"
            } else {
                ""
            },
            crate::analysis::summary::level_text(data.plan.rule().level),
            crate::analysis::summary::margin_text(data.plan.margin),
        )
    };
    format!(
        "\n{}{}\n",
        crate::export::table::wrap(&heading, width, "", "  "),
        lines.concat().trim_end()
    )
}
