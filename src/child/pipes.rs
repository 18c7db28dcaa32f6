//! The output of a server child, read so that it neither blocks the child
//! nor outlives its stop: one thread polls the child's stdout, its stderr
//! and a wake-up pipe. Stdout becomes lines (READY, the summary), stderr is
//! kept for the error message. [`Output::finish`] ends the reading by a
//! deadline, whoever still holds the pipes: a helper the server started in a
//! session of its own (`setsid`) inherits them, and reading to EOF would wait
//! for that helper, not for the server.
//!
//! Cost: one thread and one pipe per child; at most [`KEPT_LINES`] lines of
//! stdout waiting to be taken (the oldest go first) and the last
//! [`KEPT_STDERR`] bytes of stderr, so a chatty server cannot grow this
//! process.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{ChildStderr, ChildStdout};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;

/// Stdout lines kept until they are taken.
pub const KEPT_LINES: usize = 1000;

/// Bytes of stderr kept (the last ones), and the longest stdout line.
pub const KEPT_STDERR: usize = 64 << 10;

/// A child's output, being read.
pub(crate) struct Output {
    lines: Arc<Lines>,
    /// Dropped (or written) to end the reader; the deadline comes first on
    /// `by`.
    wake: Option<OwnedFd>,
    by: mpsc::Sender<Instant>,
    reader: Option<JoinHandle<Tail>>,
}

/// What was left when the reading ended.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// Stdout lines not taken before.
    pub lines: Vec<String>,
    /// The last [`KEPT_STDERR`] bytes of stderr.
    pub stderr: String,
    /// A pipe was still open when the deadline came: some process other
    /// than the ones stopped holds it.
    pub held_open: bool,
}

/// Stdout lines between the reader and whoever waits for them.
#[derive(Default)]
struct Lines {
    queue: Mutex<(VecDeque<String>, bool)>,
    arrived: Condvar,
}

/// What the reader thread hands back.
struct Tail {
    stderr: Vec<u8>,
    held_open: bool,
}

impl Output {
    /// Starts reading `stdout` and `stderr` on a thread of their own.
    pub fn start(stdout: ChildStdout, stderr: ChildStderr) -> io::Result<Output> {
        let (out, err) = (OwnedFd::from(stdout), OwnedFd::from(stderr));
        for fd in [&out, &err] {
            // Our read ends only: the child's write ends stay as they are.
            rustix::io::ioctl_fionbio(fd, true)?;
        }
        let (wake_read, wake) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let (by, deadline) = mpsc::channel();
        let lines = Arc::new(Lines::default());
        let queue = Arc::clone(&lines);
        let reader = std::thread::Builder::new()
            .name("child-output".into())
            .spawn(move || read(out, err, wake_read, deadline, &queue))?;
        Ok(Output {
            lines,
            wake: Some(wake),
            by,
            reader: Some(reader),
        })
    }

    /// The next stdout line, waiting at most `timeout`; `Disconnected`
    /// once stdout is closed (or the reading ended) and every line taken.
    pub fn line(&self, timeout: Duration) -> Result<String, RecvTimeoutError> {
        let deadline = Instant::now() + timeout;
        let mut q = self.lines.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(line) = q.0.pop_front() {
                return Ok(line);
            }
            if q.1 {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            q = self
                .lines
                .arrived
                .wait_timeout(q, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Reads on until both pipes are at EOF or `by` comes, whichever is
    /// first, then ends the reading and returns what is left.
    pub fn finish(mut self, by: Instant) -> Drained {
        let _ = self.by.send(by);
        drop(self.wake.take());
        let tail = self.reader.take().and_then(|h| h.join().ok());
        let mut q = self.lines.queue.lock().unwrap_or_else(|e| e.into_inner());
        let (stderr, held_open) = tail.map_or((Vec::new(), false), |t| (t.stderr, t.held_open));
        Drained {
            lines: q.0.drain(..).collect(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            held_open,
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // Not finished (an early return): the reader ends at once, on its
        // own; nobody waits for it.
        let _ = self.by.send(Instant::now());
        drop(self.wake.take());
    }
}

/// The reader thread: both pipes until EOF, or, once the wake-up pipe
/// says so, until the deadline sent on `by`.
fn read(
    out: OwnedFd,
    err: OwnedFd,
    wake: OwnedFd,
    by: mpsc::Receiver<Instant>,
    lines: &Lines,
) -> Tail {
    let mut open = [Some(out), Some(err)];
    let mut partial = Vec::new();
    let mut stderr = Vec::new();
    let mut deadline: Option<Instant> = None;
    let mut buf = vec![0u8; 64 << 10];
    // One pass over the pipes still open: stdout into lines, stderr into
    // its tail; a pipe at EOF (or broken) is closed.
    let mut pass = |open: &mut [Option<OwnedFd>; 2]| {
        for (i, slot) in open.iter_mut().enumerate() {
            let Some(fd) = slot else { continue };
            if drain(fd.as_fd(), &mut buf, |bytes| {
                if i == 0 {
                    split_lines(&mut partial, bytes, lines);
                } else {
                    keep_tail(&mut stderr, bytes);
                }
            }) {
                *slot = None;
            }
        }
    };
    loop {
        if open.iter().all(Option::is_none) {
            break;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        let mut fds: Vec<PollFd> = open
            .iter()
            .flatten()
            .map(|fd| PollFd::new(fd, PollFlags::IN))
            .collect();
        let watching_wake = deadline.is_none();
        if watching_wake {
            fds.push(PollFd::new(&wake, PollFlags::IN));
        }
        let timeout = deadline.map(|d| timespec(d.saturating_duration_since(now)));
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(Errno::INTR) => {}
            // Cannot wait: stop reading rather than spin.
            Err(_) => break,
        }
        let woke = watching_wake && fds.last().is_some_and(|p| !p.revents().is_empty());
        drop(fds);
        if woke {
            deadline = Some(by.try_recv().unwrap_or_else(|_| Instant::now()));
        }
        pass(&mut open);
    }
    // What was written before the end is read: a last pass, without waiting.
    pass(&mut open);
    if !partial.is_empty() {
        push(lines, String::from_utf8_lossy(&partial).into_owned());
    }
    let mut q = lines.queue.lock().unwrap_or_else(|e| e.into_inner());
    q.1 = true;
    lines.arrived.notify_all();
    Tail {
        stderr,
        held_open: open.iter().any(Option::is_some),
    }
}

/// Reads what `fd` has now (at most 16 reads, so one pipe cannot starve
/// the other or the deadline), handing each piece to `got`; `true` at EOF
/// or on an error.
fn drain(fd: std::os::fd::BorrowedFd, buf: &mut [u8], mut got: impl FnMut(&[u8])) -> bool {
    for _ in 0..16 {
        match rustix::io::read(fd, &mut *buf) {
            Ok(0) => return true,
            Ok(n) => got(&buf[..n]),
            Err(Errno::AGAIN) => return false,
            Err(Errno::INTR) => {}
            Err(_) => return true,
        }
    }
    false
}

/// Adds `bytes` to the stdout line in progress, queueing every line it
/// completes (a line longer than [`KEPT_STDERR`] is cut there).
fn split_lines(partial: &mut Vec<u8>, bytes: &[u8], lines: &Lines) {
    for piece in bytes.split_inclusive(|&b| b == b'\n') {
        if let Some(line) = piece.strip_suffix(b"\n") {
            partial.extend_from_slice(line);
            let line = std::mem::take(partial);
            push(lines, String::from_utf8_lossy(&line).into_owned());
        } else {
            partial.extend_from_slice(piece);
            if partial.len() >= KEPT_STDERR {
                let line = std::mem::take(partial);
                push(lines, String::from_utf8_lossy(&line).into_owned());
            }
        }
    }
}

/// Queues a line, dropping the oldest past [`KEPT_LINES`].
fn push(lines: &Lines, line: String) {
    let mut q = lines.queue.lock().unwrap_or_else(|e| e.into_inner());
    if q.0.len() >= KEPT_LINES {
        q.0.pop_front();
    }
    q.0.push_back(line);
    lines.arrived.notify_all();
}

/// Appends `bytes` to `kept`, keeping its last [`KEPT_STDERR`] bytes.
fn keep_tail(kept: &mut Vec<u8>, bytes: &[u8]) {
    kept.extend_from_slice(bytes);
    if kept.len() > KEPT_STDERR {
        let cut = kept.len() - KEPT_STDERR;
        kept.drain(..cut);
    }
}

fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as _,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn spawn(script: &str) -> (std::process::Child, Output) {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = Output::start(child.stdout.take().unwrap(), child.stderr.take().unwrap());
        (child, out.unwrap())
    }

    #[test]
    fn lines_and_stderr_arrive_and_eof_ends_the_reading() {
        let (mut child, out) = spawn("echo READY 1; echo oops >&2; printf 'no newline'");
        assert_eq!(out.line(Duration::from_secs(30)).unwrap(), "READY 1");
        child.wait().unwrap();
        let d = out.finish(Instant::now() + Duration::from_secs(30));
        assert_eq!(d.lines, ["no newline"]);
        assert_eq!(d.stderr, "oops\n");
        assert!(!d.held_open);
    }

    #[test]
    fn a_pipe_held_by_another_process_ends_at_the_deadline() {
        // The shell exits at once; its `sleep` keeps both pipes open.
        let (mut child, out) = spawn("echo last; sleep 30 & echo $! >&2");
        child.wait().unwrap();
        let d = out.finish(Instant::now());
        let sleeper: i32 = d.stderr.trim().parse().unwrap();
        let _ = crate::sys::process::kill(sleeper, libc::SIGKILL);
        assert_eq!(d.lines, ["last"]);
        assert!(d.held_open);
    }

    #[test]
    fn lines_are_kept_within_bounds() {
        let (mut child, out) = spawn("seq 1 5000");
        child.wait().unwrap();
        let d = out.finish(Instant::now() + Duration::from_secs(30));
        assert_eq!(d.lines.len(), KEPT_LINES);
        assert_eq!(d.lines.last().map(String::as_str), Some("5000"));
    }
}
