//! The host's own stalls: a thread on each of the run's CPUs sleeps
//! 200 µs at a time, idle, and notes how late each sleep woke. A wake-up
//! milliseconds late is the host taking the CPU (its kernel threads, a
//! hypervisor, another tenant), and it delays whatever echo is due then,
//! on any server: the floor under a latency target. `c10k run --slo`
//! measures it before it searches and says when a target's allowed share
//! lies near it (rates there stay undecided, at the target within noise).
//! Cost: [`SECONDS`] of two sleeping threads.

use std::time::{Duration, Instant};

/// How long each CPU is watched, seconds.
pub const SECONDS: f64 = 2.0;

/// The sleep asked for each time.
const NAP: Duration = Duration::from_micros(200);

/// Wake-ups later than this are kept (shorter ones are the timer's and
/// the scheduler's ordinary slack, far below any target).
const KEPT: f64 = 250e-6;

/// What one CPU's watch saw.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Watch {
    /// The CPU watched (`None`: unpinned).
    pub cpu: Option<usize>,
    /// Whose CPU it is: the server's, the client's, or both's (not
    /// written for both, read as both when absent).
    #[serde(default, skip_serializing_if = "Role::is_both")]
    pub role: Role,
    pub seconds: f64,
    /// How late each wake-up later than 250 µs was, seconds.
    pub late: Vec<f64>,
}

/// Whose CPU a watch watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Server,
    Client,
    #[default]
    Both,
}

impl Role {
    fn is_both(&self) -> bool {
        *self == Role::Both
    }
}

/// Watches each of the server's and the client's CPUs (a side with none:
/// one unpinned thread for it) for `seconds`, at once.
pub fn measure(
    server_cpus: &[usize],
    client_cpus: &[usize],
    seconds: f64,
) -> std::io::Result<Vec<Watch>> {
    let mut each: Vec<(Option<usize>, Role)> = Vec::new();
    if server_cpus.is_empty() || client_cpus.is_empty() {
        each.push((None, Role::Both));
    }
    for &c in server_cpus {
        let role = if client_cpus.contains(&c) {
            Role::Both
        } else {
            Role::Server
        };
        each.push((Some(c), role));
    }
    for &c in client_cpus.iter().filter(|c| !server_cpus.contains(c)) {
        each.push((Some(c), Role::Client));
    }
    std::thread::scope(|scope| {
        let threads: Vec<_> = each
            .iter()
            .map(|&(cpu, role)| {
                scope.spawn(move || -> std::io::Result<Watch> {
                    if let Some(c) = cpu {
                        crate::sys::affinity::pin_current(&[c])?;
                    }
                    let start = Instant::now();
                    let mut late = Vec::new();
                    while start.elapsed().as_secs_f64() < seconds {
                        let t = Instant::now();
                        std::thread::sleep(NAP);
                        let over = t.elapsed().saturating_sub(NAP).as_secs_f64();
                        if over > KEPT {
                            late.push(over);
                        }
                    }
                    Ok(Watch {
                        cpu,
                        role,
                        seconds: start.elapsed().as_secs_f64(),
                        late,
                    })
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .map_err(|_| std::io::Error::other("a stall watch panicked"))?
            })
            .collect()
    })
}

/// The share of time an echo due at a random moment would be held past
/// `slack` by a stall: each stall longer than the slack holds echoes due
/// in its first (stall − slack); over the time watched, averaged over the
/// server's CPUs and over the client's, the two added (an echo crosses
/// one of each; a CPU both share counts once). An estimate: from idle
/// CPUs, and stalls on two CPUs at once counted twice.
pub fn share_past(watches: &[Watch], slack: f64) -> f64 {
    let share = |w: &Watch| {
        let held: f64 = w.late.iter().map(|s| (s - slack).max(0.0)).sum();
        held / w.seconds.max(1e-9)
    };
    let mean = |roles: &[Role]| {
        let v: Vec<f64> = watches
            .iter()
            .filter(|w| roles.contains(&w.role))
            .map(share)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    mean(&[Role::Server, Role::Both]) + mean(&[Role::Client])
}

/// How many wake-ups were later than `slack`, and the latest, over every
/// CPU.
pub fn past(watches: &[Watch], slack: f64) -> (usize, f64) {
    let all = watches.iter().flat_map(|w| w.late.iter().copied());
    all.filter(|&s| s > slack)
        .fold((0, 0.0), |(n, most), s| (n + 1, f64::max(most, s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(role: Role, late: &[f64]) -> Watch {
        Watch {
            cpu: Some(0),
            role,
            seconds: 2.0,
            late: late.to_vec(),
        }
    }

    #[test]
    fn only_what_passes_the_slack_counts() {
        // The server's CPU and the client's; 2 ms of slack: a 6 ms stall
        // holds 4 ms, a 3 ms one 1 ms, a 1 ms one nothing; over 2 s each.
        let w = [
            watch(Role::Server, &[6e-3, 1e-3]),
            watch(Role::Client, &[3e-3]),
        ];
        assert!((share_past(&w, 2e-3) - (4e-3 / 2.0 + 1e-3 / 2.0)).abs() < 1e-12);
        // Two client CPUs: their mean, not their sum.
        let two = [
            watch(Role::Server, &[6e-3]),
            watch(Role::Client, &[3e-3]),
            watch(Role::Client, &[]),
        ];
        assert!((share_past(&two, 2e-3) - (4e-3 / 2.0 + 1e-3 / 4.0)).abs() < 1e-12);
        assert_eq!(past(&w, 2e-3), (2, 6e-3));
        assert_eq!(share_past(&w, 10e-3), 0.0);
        assert_eq!(past(&w, 10e-3), (0, 0.0));
    }

    #[test]
    fn a_watch_sleeps_its_time_and_keeps_only_late_wake_ups() {
        let w = measure(&[], &[], 0.05).expect("a watch");
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].role, Role::Both);
        assert!(w[0].seconds >= 0.05, "{}", w[0].seconds);
        assert!(w[0].late.iter().all(|&s| s > KEPT));
    }
}
