//! The live view of a load run: once a second, a process's event loops are
//! tallied into a [`Tick`] (connections up, round trips completed,
//! connections failed), and a terminal shows one line of it ([`Live`]). A
//! run in one process shows its own ticks; an agent sends its ticks to its
//! controller as `progress` messages, and the controller shows their sum,
//! so the line reads the same however many agents carry the run.
//!
//! Cost: a few atomic loads a second, and one line redrawn.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// A process's running totals, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tick {
    /// Connections up now.
    pub up: u64,
    /// Round trips completed (warm-up included).
    pub completed: u64,
    /// Connections that failed.
    pub failed: u64,
}

impl Tick {
    /// The sum of several processes' ticks.
    pub fn sum<'a>(ticks: impl IntoIterator<Item = &'a Tick>) -> Tick {
        ticks.into_iter().fold(Tick::default(), |a, t| Tick {
            up: a.up + t.up,
            completed: a.completed + t.completed,
            failed: a.failed + t.failed,
        })
    }
}

/// The line a terminal shows; nothing when no terminal watches.
pub struct Live {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    last: (Instant, u64),
}

impl Live {
    /// A live view of a run of `total` connections, drawn only when
    /// `show`.
    pub fn new(show: bool, total: usize) -> Live {
        let bar = show.then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        });
        Live {
            bar,
            total,
            last: (Instant::now(), 0),
        }
    }

    /// Whether anything is drawn.
    pub fn shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Redraws the line with `tick`, the rate since the last redraw,
    /// `latency` (p50 and p99 in µs) when known, and `extra` after it.
    pub fn show(&mut self, tick: Tick, latency: Option<(f64, f64)>, extra: &str) {
        let Some(b) = &self.bar else { return };
        let now = Instant::now();
        let secs = (now - self.last.0).as_secs_f64().max(1e-3);
        let rate = tick.completed.saturating_sub(self.last.1) as f64 / secs;
        self.last = (now, tick.completed);
        let latency = latency.map_or_else(String::new, |(p50, p99)| {
            format!(" · p50 {p50:.1} µs · p99 {p99:.1} µs")
        });
        b.set_message(format!(
            "{}/{} up · {rate:.0} msg/s{latency} · {} failed{extra}",
            tick.up, self.total, tick.failed,
        ));
        b.tick();
    }

    /// Clears the line.
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_add_up() {
        let a = Tick {
            up: 3,
            completed: 10,
            failed: 1,
        };
        let b = Tick {
            up: 4,
            completed: 5,
            failed: 0,
        };
        assert_eq!(
            Tick::sum([&a, &b]),
            Tick {
                up: 7,
                completed: 15,
                failed: 1
            }
        );
    }
}
