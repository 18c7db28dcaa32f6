//! Interval control, from the select(2) study: a loop that waits at least
//! `interval` between two waits, so that each wait finds more events ready
//! and their fixed cost is shared by more of them, at the price of up to
//! `interval` more latency. `c10k serve --interval` paces the readiness
//! reactor with it and `c10k micro accept` its paced modes.
//!
//! Cost: one clock read per wait, and a sleep when the last wait was less
//! than `interval` ago (the kernel's timer slack, about 50 µs, is added to
//! each sleep, so the waits per second actually achieved are reported by
//! the server's summary, not assumed).

use std::time::{Duration, Instant};

/// The longest interval accepted: a longer one is no longer an echo server.
pub const MAX_INTERVAL: Duration = Duration::from_secs(1);

/// When the last wait began.
pub struct Pace {
    interval: Duration,
    last: Option<Instant>,
}

impl Pace {
    pub fn new(interval: Duration) -> Pace {
        Pace {
            interval,
            last: None,
        }
    }

    /// Sleeps until `interval` has passed since the last call, then marks
    /// the start of this wait. Free with an interval of zero.
    pub fn before_wait(&mut self) {
        if self.interval.is_zero() {
            return;
        }
        if let Some(last) = self.last {
            let next = last + self.interval;
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
        }
        self.last = Some(Instant::now());
    }
}
