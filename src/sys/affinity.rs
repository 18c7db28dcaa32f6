//! CPU pinning. A cross-core loopback round trip costs several times a
//! same-core one, so every measurement records and controls where it runs.

use std::io;

use rustix::thread::{sched_setaffinity, CpuSet};

/// Parses a CPU list such as `0`, `0,1` or `0-3,6`.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list '{text}': expected e.g. 0,2-3");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(format!("bad CPU list '{text}': it names no CPU"));
    }
    if let Some(&c) = cpus.iter().find(|&&c| c >= CpuSet::MAX_CPU) {
        return Err(format!("CPU {c} is beyond what this system supports"));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Pins the calling process (and the threads it creates from now on).
pub fn pin_current(cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set).map_err(io::Error::from)
}

/// The CPUs the calling thread may run on.
pub fn current_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}
