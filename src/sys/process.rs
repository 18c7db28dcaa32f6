//! Processes: fork, exit without unwinding, reap with resource usage, signal.
//!
//! `fork` here refuses to run in a process with more than one thread: after a
//! fork only the calling thread exists in the child, and any lock another
//! thread held stays locked forever. The fork and prefork models fork from a
//! single-threaded parent, and this check keeps it that way.

use std::io;

/// Who we are after [`fork`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// The parent, with the child's pid.
    Parent(i32),
    /// The new child.
    Child,
}

/// The fields of a `/proc/PID/stat` line after the command name, the
/// state (field 3 of proc(5)) first. The name is in parentheses and may
/// hold spaces or ')', so they start after the last ')'. The one parse of
/// that line: the CPU meters, the process tree, the herd's tally and the
/// server launcher read their fields through it.
pub fn stat_fields(stat: &str) -> Option<std::str::SplitAsciiWhitespace<'_>> {
    Some(stat[stat.rfind(')')? + 1..].split_ascii_whitespace())
}

/// Number of threads in this process: field 20 of /proc/self/stat, read
/// into a small stack buffer. [`fork`] asks before every fork, so the fork
/// models' parent must write as little memory as it can between two forks:
/// every page it writes then is a page each child keeps a copy of, and the
/// host's DAMON checks each such copy by visiting every child (see
/// `server::children`).
pub(crate) fn thread_count() -> io::Result<usize> {
    use std::io::Read as _;
    // The line is pid, (comm: at most 16 bytes, any characters), then
    // numbers: 50 fields of at most 20 digits fit in far less than this.
    let mut buf = [0u8; 512];
    let mut file = std::fs::File::open("/proc/self/stat")?;
    let mut len = 0;
    while len < buf.len() {
        match file.read(&mut buf[len..])? {
            0 => break,
            n => len += n,
        }
    }
    // State is field 3, so num_threads (field 20) is the 18th after the
    // command name.
    std::str::from_utf8(&buf[..len])
        .ok()
        .and_then(|line| stat_fields(line)?.nth(17))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| io::Error::other("no thread count in /proc/self/stat"))
}

/// The pids of this process's children, live or exited but not yet reaped,
/// as the kernel lists them in `/proc/self/task/TID/children` of the
/// calling thread, which must be the one that forked them (the file
/// `metrics::tree::descendants` reads too).
pub(crate) fn children() -> io::Result<Vec<i32>> {
    let tid = rustix::thread::gettid().as_raw_nonzero();
    let list = std::fs::read_to_string(format!("/proc/self/task/{tid}/children"))?;
    Ok(list
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect())
}

/// `fork()`, only from a single-threaded process.
pub fn fork() -> io::Result<Forked> {
    let threads = thread_count()?;
    if threads != 1 {
        return Err(io::Error::other(format!(
            "refusing to fork a process with {threads} threads"
        )));
    }
    // SAFETY: the process has exactly one thread (checked above), so no lock
    // can be held by a thread that does not exist in the child; the child
    // continues in ordinary single-threaded Rust.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Ends the process at once with `code`, without running destructors or
/// atexit handlers (which belong to the parent in a forked child).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` is always safe to call; it never returns.
    unsafe { libc::_exit(code) }
}

/// A reaped child.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    pub pid: i32,
    /// Raw wait status (see `waitpid(2)`).
    pub status: i32,
    /// User and system CPU time of the child and everything it reaped.
    pub user: std::time::Duration,
    pub system: std::time::Duration,
    /// Peak resident set size in KiB (`ru_maxrss`).
    pub max_rss_kib: u64,
}

impl Reaped {
    /// Exit code when the child exited normally.
    pub(crate) fn exit_code(&self) -> Option<i32> {
        libc::WIFEXITED(self.status).then(|| libc::WEXITSTATUS(self.status))
    }
    /// Signal number when the child was killed by a signal.
    pub fn signal(&self) -> Option<i32> {
        libc::WIFSIGNALED(self.status).then(|| libc::WTERMSIG(self.status))
    }
}

/// `wait4(pid, …)`: `pid` -1 reaps any child. With `block` false, returns
/// `Ok(None)` when no child has exited yet; `Ok(None)` also when there are no
/// children at all (ECHILD).
pub fn reap(pid: i32, block: bool) -> io::Result<Option<Reaped>> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        // SAFETY: `status` and `ru` are live, writable locals.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if r > 0 {
            let u = Usage::of(&ru);
            return Ok(Some(Reaped {
                pid: r,
                status,
                user: u.user,
                system: u.system,
                max_rss_kib: u.max_rss_kib,
            }));
        }

        if r == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Waits up to `timeout` for child `pid` to exit, without reaping it
/// (a pidfd polled for readability). `Ok(true)`: it has exited.
pub(crate) fn exits_within(pid: i32, timeout: std::time::Duration) -> io::Result<bool> {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let Some(pid) = Pid::from_raw(pid) else {
        return Ok(true);
    };
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        // Gone (and reaped) already.
        Err(rustix::io::Errno::SRCH) => return Ok(true),
        Err(e) => return Err(e.into()),
    };
    pidfd_exits_within(std::os::fd::AsFd::as_fd(&fd), timeout)
}

/// Waits up to `timeout` (zero: only looks) for the process a pidfd refers
/// to to exit, without reaping it. `Ok(true)`: it has exited.
pub(crate) fn pidfd_exits_within(
    fd: std::os::fd::BorrowedFd<'_>,
    timeout: std::time::Duration,
) -> io::Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let ts = Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&ts)) {
            Ok(n) => return Ok(n > 0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Sends `signal` to process `pid` (to process group `-pid` when negative);
/// a process already gone is not an error.
pub fn kill(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, signal) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(e)
    }
}

/// In a freshly forked child: ask for SIGKILL when the parent dies, so a
/// worker never outlives a server that was killed outright (it would keep
/// the port and accept connections nobody counts). If `parent` is already
/// gone, exits at once.
pub(crate) fn die_with_parent(parent: i32) {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};
    if set_parent_process_death_signal(Some(Signal::KILL)).is_err()
        || getppid().map(|p| p.as_raw_nonzero().get()) != Some(parent)
    {
        exit_now(1);
    }
}

/// CPU time and peak memory of a process (`getrusage`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user: std::time::Duration,
    pub system: std::time::Duration,
    /// Peak resident set size in KiB.
    pub max_rss_kib: u64,
}

impl Usage {
    /// CPU seconds (user plus system) used between `from` and this one.
    pub(crate) fn cpu_since(&self, from: &Usage) -> f64 {
        (self.user + self.system)
            .saturating_sub(from.user + from.system)
            .as_secs_f64()
    }

    fn of(ru: &libc::rusage) -> Usage {
        let tv = |t: libc::timeval| {
            std::time::Duration::from_micros(t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64)
        };
        Usage {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
            max_rss_kib: ru.ru_maxrss as u64,
        }
    }

    /// This process, all its threads included. The peak is this program
    /// image's own (`VmHWM`): `ru_maxrss` survives exec, so a child of a
    /// 300 MiB parent reported that parent's peak as its own.
    pub(crate) fn of_self() -> Usage {
        // SAFETY: rusage is plain old data; all-zero is a valid value, and
        // getrusage writes into the live local it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; RUSAGE_SELF is always valid.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return Usage::default();
        }
        let mut u = Usage::of(&ru);
        if let Some(kib) = own_peak_rss_kib() {
            u.max_rss_kib = kib;
        }
        u
    }
}

/// The peak resident set of this process's current image, in KiB
/// (`VmHWM` in /proc/self/status; reset at exec, unlike `ru_maxrss`).
fn own_peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Sets `cmd` up so the child is killed when the thread that starts it
/// ends (PR_SET_PDEATHSIG, checked against a parent that already died), and
/// runs in a process group of its own, so its whole tree can be signalled
/// at once and a terminal's Ctrl-C does not reach it. Start such children
/// from a thread that outlives them (the runner's main thread).
pub(crate) fn tie_to_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as i32;
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec, so it
    // must only make async-signal-safe calls: prctl and getppid are raw
    // system calls here (rustix), and nothing allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            use rustix::process::{getppid, set_parent_process_death_signal, Signal};
            set_parent_process_death_signal(Some(Signal::KILL))?;
            if getppid().map(|p| p.as_raw_nonzero().get()) != Some(parent) {
                return Err(io::Error::other("the parent is gone"));
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn stat_fields_start_after_a_name_with_spaces_and_parentheses() {
        let f = |line| super::stat_fields(line).map(|f| f.take(3).collect::<Vec<_>>());
        assert_eq!(f("7 (a b) c)) S 1 42 9"), Some(vec!["S", "1", "42"]));
        assert_eq!(f("7 no name"), None);
    }

    #[test]
    fn the_thread_count_is_the_kernels() {
        // The harness's threads come and go: count ours while it holds
        // still, with a thread of our own parked on a channel.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let parked = std::thread::spawn(move || rx.recv().ok());
        let tasks = std::fs::read_dir("/proc/self/task").unwrap().count();
        let counted = super::thread_count().unwrap();
        drop(tx);
        parked.join().unwrap();
        // Another test's thread may start or end between the two reads.
        assert!(counted >= 2, "{counted} threads, with ours parked");
        assert!(
            counted.abs_diff(tasks) <= 8,
            "{counted} against {tasks} in /proc/self/task"
        );
    }
    use std::process::Command;

    use super::*;

    #[test]
    fn the_kernel_lists_the_children_until_they_are_reaped() {
        let mut kids: Vec<_> = (0..2)
            .map(|_| Command::new("sleep").arg("30").spawn().unwrap())
            .collect();
        let pids: Vec<i32> = kids.iter().map(|c| c.id() as i32).collect();
        let listed = children().unwrap();
        for k in &mut kids {
            k.kill().unwrap();
            k.wait().unwrap();
        }
        for p in &pids {
            assert!(listed.contains(p), "{p} not in {listed:?}");
        }
        let after = children().unwrap();
        assert!(pids.iter().all(|p| !after.contains(p)), "{after:?}");
    }
}
