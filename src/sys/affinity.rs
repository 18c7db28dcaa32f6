//! CPU pinning. A cross-core loopback round trip costs several times a
//! same-core one, so every measurement records and controls where it runs.

use std::io;

use rustix::thread::{sched_setaffinity, CpuSet};

/// Default workers: the CPUs this process may use.
pub(crate) fn cpus_available() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Parses a CPU list such as `0`, `0,1` or `0-3,6`. Every CPU must exist
/// on this system (below `CpuSet::MAX_CPU`); that is checked per range
/// before it is expanded, so `0-99999999999` is an error, not 800 GB.
pub(crate) fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list '{text}': expected e.g. 0,2-3");
        let (a, b): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let c = part.parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if a > b {
            return Err(bad());
        }
        if b >= CpuSet::MAX_CPU {
            return Err(format!(
                "CPU {b} in '{text}' is beyond what this system supports (CPUs below {})",
                CpuSet::MAX_CPU
            ));
        }
        cpus.extend(a..=b);
    }
    if cpus.is_empty() {
        return Err(format!("bad CPU list '{text}': it names no CPU"));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parses a CPU list and checks that this process may run on every CPU in
/// it (sched_getaffinity): `0-7` on a two-CPU machine is an error naming
/// the CPUs there are, before anything starts.
pub(crate) fn usable_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let cpus = parse_cpu_list(text)?;
    let usable = current_cpus();
    if let Some(missing) = cpus.iter().find(|c| !usable.contains(c)) {
        return Err(format!(
            "CPU {missing} is not one this process may run on (it may use CPUs {})",
            format_cpu_list(&usable)
        ));
    }
    Ok(cpus)
}

/// CPUs as the kernel lists them: `0-3,6` (what [`parse_cpu_list`] reads).
pub(crate) fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if end > start {
            format!("{start}-{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(",")
    }
}

/// Pins the calling process (and the threads it creates from now on).
pub fn pin_current(cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    sched_setaffinity(None, &set).map_err(io::Error::from)
}

/// Pins the child `cmd` starts to `cpus`, before it runs anything: its
/// first instruction, and every thread and process it makes, stay there.
pub(crate) fn pin_child(cmd: &mut std::process::Command, cpus: &[usize]) {
    use std::os::unix::process::CommandExt;
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    // SAFETY: the closure runs in the child between fork and exec, so it
    // must only make async-signal-safe calls: sched_setaffinity is a raw
    // system call here (rustix) on a set built before the fork, and nothing
    // allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || sched_setaffinity(None, &set).map_err(io::Error::from));
    }
}

/// The CPUs the calling thread may run on.
pub fn current_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_compact() {
        assert_eq!(format_cpu_list(&[3, 0, 1, 2, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[]), "none");
        assert_eq!(
            parse_cpu_list(&format_cpu_list(&[3, 0, 1, 2, 6])),
            Ok(vec![0, 1, 2, 3, 6])
        );
    }

    #[test]
    fn huge_ranges_are_refused_before_they_are_built() {
        let e = parse_cpu_list("0-99999999999").unwrap_err();
        assert!(e.contains("99999999999") && e.contains("beyond"), "{e}");
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list(",").is_err());
        let e = usable_cpu_list(&(CpuSet::MAX_CPU - 1).to_string()).unwrap_err();
        assert!(e.contains("may use CPUs"), "{e}");
        assert_eq!(
            usable_cpu_list(&format_cpu_list(&current_cpus())),
            Ok(current_cpus())
        );
    }
}
