//! The kernel's limits on tasks (processes and threads), and the one check
//! of a plan against them: before the runner starts a server with a thread
//! or a process per connection, before the herd forks its workers, before
//! `micro spawn` forks or spawns its bursts, [`Tasks::check`] says in one
//! line which limit cannot give the tasks asked for, and the fix; `c10k
//! load`'s pre-flight asks the same limits about its own threads and a
//! thread-per-connection server beside it.
//!
//! The limits: `kernel.pid_max` and `kernel.threads-max` against the tasks
//! running on the machine (/proc/loadavg), RLIMIT_NPROC (`ulimit -u`, not
//! for root; this user's tasks are not counted, so it is an upper bound)
//! and every `pids.max` against its `pids.current` of this process's
//! cgroups and their ancestors, in the v2 hierarchy and the v1 `pids` one
//! (hosts mount both). A limit that
//! cannot be read is not checked. Cost: [`Tasks::read`] is a handful of
//! small reads of /proc and /sys and one `getrlimit`; the check itself is
//! arithmetic.

use std::path::PathBuf;

/// What a limit is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A sysctl counted against every task on the machine
    /// (`kernel.pid_max`, `kernel.threads-max`).
    Sysctl(&'static str),
    /// RLIMIT_NPROC (`ulimit -u`).
    Nproc,
    /// A `pids.max` over this process (its cgroup's or an ancestor's, v1
    /// or v2), in that directory.
    Cgroup(PathBuf),
}

/// One limit on new tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limit {
    pub kind: Kind,
    /// The limit itself.
    pub max: u64,
    /// The tasks already counted against it (0 where unknown).
    pub used: u64,
}

impl Limit {
    /// New tasks it leaves room for, keeping `margin` free for everything
    /// else.
    pub fn room(&self, margin: u64) -> u64 {
        self.max.saturating_sub(self.used).saturating_sub(margin)
    }

    /// The limit and what counts against it, in words.
    pub(crate) fn describe(&self) -> String {
        let (max, used) = (self.max, self.used);
        match &self.kind {
            Kind::Sysctl(name) => format!("{name} = {max} with {used} tasks running"),
            Kind::Nproc => format!("the process limit (ulimit -u) of {max}"),
            Kind::Cgroup(_) => format!("this cgroup's pids.max = {max} with {used} in use"),
        }
    }

    /// How to raise it so that `want` more tasks fit with `margin` free.
    pub(crate) fn fix(&self, want: u64, margin: u64) -> String {
        let need = want.saturating_add(self.used).saturating_add(margin);
        match &self.kind {
            Kind::Sysctl(name) => format!(
                "sysctl -w {name}={}",
                need.next_power_of_two().max(self.max.saturating_mul(2))
            ),
            Kind::Nproc => format!("ulimit -u {need}"),
            Kind::Cgroup(dir) => format!("echo {need} > {}", dir.join("pids.max").display()),
        }
    }
}

/// The task limits of this machine (those that could be read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tasks {
    pub limits: Vec<Limit>,
}

impl Tasks {
    /// Reads the limits now.
    pub fn read() -> Tasks {
        let running = tasks_running().unwrap_or(0);
        let mut limits = Vec::new();
        for name in ["kernel.pid_max", "kernel.threads-max"] {
            if let Some(max) = super::sysctl_u64(name) {
                limits.push(Limit {
                    kind: Kind::Sysctl(name),
                    max,
                    used: running,
                });
            }
        }
        // Root is not held to RLIMIT_NPROC.
        if !rustix::process::geteuid().is_root() {
            let nproc = rustix::process::getrlimit(rustix::process::Resource::Nproc).current;
            if let Some(max) = nproc {
                limits.push(Limit {
                    kind: Kind::Nproc,
                    max,
                    used: 0,
                });
            }
        }
        for (dir, max, used) in cgroup_pids() {
            limits.push(Limit {
                kind: Kind::Cgroup(dir),
                max,
                used,
            });
        }
        Tasks { limits }
    }

    /// New tasks the tightest limit leaves room for, keeping `margin` free;
    /// `None` when no limit could be read.
    #[cfg(test)]
    pub fn room(&self, margin: u64) -> Option<u64> {
        self.limits.iter().map(|l| l.room(margin)).min()
    }

    /// The tightest limit, when `want` more tasks do not fit under it with
    /// `margin` left free.
    pub fn refusing(&self, want: u64, margin: u64) -> Option<&Limit> {
        self.limits
            .iter()
            .min_by_key(|l| l.room(margin))
            .filter(|l| want > l.room(margin))
    }

    /// `Ok` when `want` more tasks fit under every limit with `margin` left
    /// free; otherwise one line naming the tightest limit and its fix.
    pub fn check(&self, want: u64, margin: u64) -> Result<(), String> {
        let Some(tight) = self.refusing(want, margin) else {
            return Ok(());
        };
        let room = tight.room(margin);
        Err(format!(
            "{want} more tasks do not fit: {} leaves room for {room} (keeping {margin} free); \
             fix: {}",
            tight.describe(),
            tight.fix(want, margin)
        ))
    }
}

/// Tasks (threads) on the whole machine, from /proc/loadavg's
/// `running/total` field.
fn tasks_running() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()
}

/// Every finite `pids.max` this process is held to, with its directory and
/// `pids.current`: its cgroup's and each ancestor's up to the hierarchy's
/// mount, in the v2 hierarchy and in the v1 `pids` one (a host may mount
/// both, and a limit anywhere up the tree holds every task below it).
fn cgroup_pids() -> Vec<(PathBuf, u64, u64)> {
    let (Ok(cgroups), Ok(mounts)) = (
        std::fs::read_to_string("/proc/self/cgroup"),
        std::fs::read_to_string("/proc/self/mountinfo"),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let v2 = id == "0" && controllers.is_empty();
        let v1 = controllers.split(',').any(|c| c == "pids");
        if !(v2 || v1) {
            continue;
        }
        let Some(root) = mount_of(&mounts, v2) else {
            continue;
        };
        let mut dir = root.join(path.trim_start_matches('/'));
        // From the cgroup up to the mount, a bounded walk (the path's depth).
        for _ in 0..=path.matches('/').count() {
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
            let max = read("pids.max").and_then(|m| m.trim().parse::<u64>().ok());
            let used = read("pids.current").and_then(|u| u.trim().parse::<u64>().ok());
            if let (Some(max), Some(used)) = (max, used) {
                out.push((dir.clone(), max, used));
            }
            if dir == root || !dir.pop() {
                break;
            }
        }
    }
    out
}

/// Where the cgroup v2 hierarchy (`v2`) or the v1 hierarchy holding the
/// `pids` controller is mounted, from /proc/self/mountinfo.
fn mount_of(mountinfo: &str, v2: bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        let (mount, after) = l.split_once(" - ")?;
        let point = mount.split_whitespace().nth(4)?;
        let mut a = after.split_whitespace();
        let (fstype, _source, options) = (a.next()?, a.next()?, a.next().unwrap_or(""));
        let fits = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && options.split(',').any(|o| o == "pids")
        };
        fits.then(|| PathBuf::from(point))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_mounts_of_either_version_are_found() {
        let info = "25 30 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n\
                    33 25 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                    34 25 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                    35 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_of(info, false),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            mount_of(info, true),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(mount_of("", true), None);
    }

    fn limit(kind: Kind, max: u64, used: u64) -> Limit {
        Limit { kind, max, used }
    }

    fn machine() -> Tasks {
        Tasks {
            limits: vec![
                limit(Kind::Sysctl("kernel.pid_max"), 32_768, 200),
                limit(Kind::Sysctl("kernel.threads-max"), 192_729, 200),
                limit(Kind::Nproc, 96_364, 0),
            ],
        }
    }

    #[test]
    fn room_is_the_tightest_limit_less_what_is_used_and_the_margin() {
        assert_eq!(machine().room(64), Some(32_768 - 200 - 64));
        assert_eq!(Tasks::default().room(64), None);
        assert_eq!(limit(Kind::Nproc, 100, 90).room(64), 0);
    }

    #[test]
    fn what_fits_passes_and_one_more_is_refused() {
        let t = machine();
        let room = 32_768 - 200 - 512;
        assert_eq!(t.check(room, 512), Ok(()));
        let e = t.check(room + 1, 512).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with("32057 more tasks do not fit: kernel.pid_max = 32768 with 200 tasks running leaves room for 32056 (keeping 512 free)"),
            "{e}"
        );
        // The fix covers the need and at least doubles the limit.
        assert!(e.ends_with("fix: sysctl -w kernel.pid_max=65536"), "{e}");
        let e = t.check(100_000, 512).unwrap_err();
        assert!(e.ends_with("fix: sysctl -w kernel.pid_max=131072"), "{e}");
    }

    #[test]
    fn the_tightest_limit_is_named_with_its_fix() {
        let mut t = machine();
        let cgroup = Kind::Cgroup(PathBuf::from("/sys/fs/cgroup/box"));
        t.limits.push(limit(cgroup, 1000, 300));
        assert_eq!(t.check(636, 64), Ok(()));
        let e = t.check(637, 64).unwrap_err();
        assert!(
            e.contains("this cgroup's pids.max = 1000 with 300 in use"),
            "{e}"
        );
        assert!(
            e.ends_with("fix: echo 1001 > /sys/fs/cgroup/box/pids.max"),
            "{e}"
        );
        let nproc = Tasks {
            limits: vec![limit(Kind::Nproc, 10, 0)],
        };
        let e = nproc.check(20, 4).unwrap_err();
        assert!(
            e.contains("the process limit (ulimit -u) of 10 leaves room for 6"),
            "{e}"
        );
        assert!(e.ends_with("fix: ulimit -u 24"), "{e}");
    }

    #[test]
    fn no_limit_read_refuses_nothing() {
        assert_eq!(Tasks::default().check(u64::MAX, 64), Ok(()));
    }

    #[test]
    fn this_machine_has_room_for_one_task() {
        assert_eq!(Tasks::read().check(1, 64), Ok(()));
    }
}
