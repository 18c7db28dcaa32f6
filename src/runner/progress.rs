//! Progress of a run. On a terminal: a bar with the cell number, the ETA and
//! the cell running now. Otherwise one line per finished cell on stderr, so
//! a log (or a test) can follow the run.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::results::cell::{CellResult, Status};
use crate::results::matrix::{CellSpec, Primary};

pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    primary: Primary,
}

impl Progress {
    /// `done` of `total` cells are finished already (a resumed run).
    pub fn new(total: usize, done: usize, primary: Primary) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30.cyan/blue} cell {pos}/{len}  ETA {eta}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_position(done as u64);
            bar.reset_eta();
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            bar,
            total,
            done,
            primary,
        }
    }

    /// `runs`: how many runs each cell gets, as people read it (`3`,
    /// `3–10`).
    pub fn starting(&self, spec: &CellSpec, runs: &str) {
        if let Some(bar) = &self.bar {
            let work = spec
                .work
                .as_ref()
                .map_or_else(String::new, |w| format!(" under {w}"));
            bar.set_message(format!(
                "{}{work} at {} connections (run {} of {runs})",
                spec.model, spec.connections, spec.run
            ));
        }
    }

    /// The plan grew to `total` cells (`--runs auto`).
    pub(crate) fn set_total(&mut self, total: usize) {
        self.total = total;
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    pub fn finished(&mut self, result: &CellResult) {
        self.done += 1;
        let what = match result.status {
            Status::Ok => {
                let figure = result.metrics().primary(self.primary).map_or_else(
                    || "ok".into(),
                    |v| {
                        let http = result
                            .load
                            .as_ref()
                            .is_some_and(|l| l.protocol == crate::protocol::Protocol::Http);
                        format!("{} {}", self.primary.format(v), unit(self.primary, http))
                    },
                );
                match result.load.as_ref().map(|l| &l.limits) {
                    Some(l) if l.interference => {
                        format!("{figure} (limited by {}; interference)", l.verdict)
                    }
                    Some(l) => format!("{figure} (limited by {})", l.verdict),
                    None => figure,
                }
            }
            Status::Skipped => format!("skipped: {}", result.reason.as_deref().unwrap_or("")),
            Status::Failed => format!("failed: {}", result.reason.as_deref().unwrap_or("")),
        };
        let at = result.cell.offered.map_or_else(String::new, |o| {
            format!(
                " at {}/s",
                crate::present::units::format_count(o.rate as f64)
            )
        });
        let line = format!(
            "[{}/{}] {}{at} {}",
            self.done, self.total, result.cell.id, what
        );
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done as u64);
                if result.status != Status::Ok {
                    bar.println(line);
                }
            }
            // A reader that went away (`2>&1 | head`) must not end the
            // run: the cells keep being measured and recorded.
            None => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
    }

    /// The cell just finished was disturbed from outside and runs again:
    /// it is not done yet.
    pub(crate) fn repeating(&mut self, spec: &CellSpec) {
        self.done = self.done.saturating_sub(1);
        if let Some(bar) = &self.bar {
            bar.set_position(self.done as u64);
        }
        self.note(&format!(
            "  {} was disturbed from outside the run: running it again",
            spec.id
        ));
    }

    /// A line above the bar (or on stderr without one).
    pub(crate) fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => {
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
    }

    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn unit(p: Primary, http: bool) -> &'static str {
    match p {
        Primary::Time => "",
        Primary::Throughput if http => "req/s",
        Primary::Throughput => "rt/s",
        Primary::AcceptRate => "conn/s",
        Primary::Latency => "p99",
    }
}
