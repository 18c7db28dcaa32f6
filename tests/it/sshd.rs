//! The agents over a real OpenSSH server, as the README's recipe runs
//! them: `sshd -D -e -f CONFIG` on a free loopback port, with host and user
//! keys made in a temporary directory (nothing of the machine's own ssh
//! setup is read or touched: `-F /dev/null`, no known_hosts written), and
//! `c10k load --agent 'ssh -p PORT -i KEY … 127.0.0.1 -- {cmd_sh}'`. Exact
//! counts over three agents, an ssh client killed mid-run (the rest kept,
//! exit 1, no agent left under sshd), and remote commands that fail (one
//! line, exit 1). sshd is installed by `scripts/install-sshd.sh` when
//! missing; a test that cannot have it fails with the reason. One sshd at
//! a time; each is stopped, with every session it started, and its
//! directory removed once its test passed.

use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::Value;

use crate::agents::{ended, Watched};
use crate::support::{scratch, Scratch, Server, Started, PATIENCE};

tests![
    three_agents_over_ssh_give_exact_counts,
    an_ssh_client_killed_mid_run_keeps_the_rest_and_leaves_no_agent,
    a_remote_command_that_fails_is_one_line,
];

/// How long installing openssh-server may take (apt-get update and all).
const INSTALL_PATIENCE: Duration = Duration::from_secs(900);

/// One sshd at a time (they share /run/sshd).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// sshd, installed by `scripts/install-sshd.sh` when missing.
fn sshd_program() -> Result<PathBuf, Failed> {
    let found = || {
        [
            PathBuf::from("/usr/sbin/sshd"),
            PathBuf::from("/usr/bin/sshd"),
        ]
        .into_iter()
        .find(|p| p.exists())
    };
    if let Some(p) = found() {
        return Ok(p);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-sshd.sh");
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("install-sshd.log");
    let out = std::fs::File::create(&log)?;
    let mut child = Command::new("sh")
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()?;
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(INSTALL_PATIENCE) {
        Ok(s) => s?,
        Err(_) => {
            let _ = c10k::sys::process::kill(pid, libc::SIGKILL);
            let _ = waiter.join();
            return Err(
                format!("{} still ran after {INSTALL_PATIENCE:?}", script.display()).into(),
            );
        }
    };
    let _ = waiter.join();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let last = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    match (status.success(), found()) {
        (true, Some(p)) => Ok(p),
        _ => Err(format!(
            "sshd is not installed and {} could not install it: {last}",
            script.display()
        )
        .into()),
    }
}

/// A running sshd of the test's own and what a client needs to log in.
struct Sshd {
    /// Until it is up, none.
    child: Option<Child>,
    /// Its keys and config: kept, with the test's other files, when the
    /// test fails.
    dir: Scratch,
    port: u16,
    /// The user's private key.
    key: PathBuf,
    /// /run/sshd (privilege separation) was made here: removed after.
    made_run_dir: bool,
    _one: MutexGuard<'static, ()>,
}

/// Runs `program ARGS…` to its end (bounded); its stderr when it fails.
fn run(program: &str, args: &[&str]) -> Result<(), Failed> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let status = crate::support::wait_bounded(&mut child)?;
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut err)?;
    }
    Err(format!("{program} {}: {status}: {}", args.join(" "), err.trim()).into())
}

impl Sshd {
    fn start() -> Result<Sshd, Failed> {
        let program = sshd_program()?;
        let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = scratch("sshd")?;
        let (host, key) = (dir.join("host_key"), dir.join("user_key"));
        for k in [&host, &key] {
            run(
                "ssh-keygen",
                &["-q", "-t", "ed25519", "-N", "", "-f", &k.to_string_lossy()],
            )?;
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys"))?;
        let run_dir = Path::new("/run/sshd");
        let made_run_dir = !run_dir.exists() && std::fs::create_dir(run_dir).is_ok();
        let mut sshd = Sshd {
            child: None,
            dir,
            port: 0,
            key,
            made_run_dir,
            _one: one,
        };
        // A free port can be taken between looking and binding: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            let config = sshd.dir.join("sshd_config");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile none\n\
                     AuthorizedKeysFile {}\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                     PermitRootLogin prohibit-password\nLogLevel INFO\n",
                    host.display(),
                    sshd.dir.join("authorized_keys").display()
                ),
            )?;
            let mut child = Command::new(&program)
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&config)
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()?;
            let err = child.stderr.take().ok_or("no stderr")?;
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            let ready = format!("Server listening on 127.0.0.1 port {port}");
            let until = Instant::now() + PATIENCE;
            let mut said = Vec::new();
            let up = loop {
                match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(l) if l.contains(&ready) => break true,
                    Ok(l) => said.push(l),
                    Err(_) => break false,
                }
            };
            let pid = child.id() as i32;
            sshd.child = Some(child);
            if up {
                sshd.port = port;
                // Its log goes on being read (and dropped) so it never blocks.
                std::thread::spawn(move || while rx.recv().is_ok() {});
                return Ok(sshd);
            }
            let _ = c10k::sys::process::kill(-pid, libc::SIGKILL);
            if let Some(mut c) = sshd.child.take() {
                let _ = c.wait();
            }
            last = said.join("; ");
        }
        Err(format!("sshd did not start: {last}").into())
    }

    /// The launcher template of the README's recipe, for this sshd.
    fn template(&self) -> String {
        format!(
            "ssh -F /dev/null -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no \
             -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR 127.0.0.1 -- {{cmd_sh}}",
            self.port,
            self.key.display()
        )
    }

    /// The processes under sshd: its sessions and what they run.
    fn descendants(&self) -> Vec<i32> {
        self.child
            .as_ref()
            .map_or_else(Vec::new, |c| descendants(c.id() as i32))
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // Sessions first (each its own session and group), then sshd.
        for pid in self.descendants() {
            let _ = c10k::sys::process::kill(pid, libc::SIGKILL);
        }
        if let Some(mut c) = self.child.take() {
            let _ = c10k::sys::process::kill(-(c.id() as i32), libc::SIGKILL);
            let _ = c.wait();
        }
        if self.made_run_dir {
            let _ = std::fs::remove_dir(Path::new("/run/sshd"));
        }
    }
}

/// Every process whose ancestors include `root` (from /proc).
fn descendants(root: i32) -> Vec<i32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, then the parent.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

fn epoll() -> Result<Server, Failed> {
    match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(r) => Err(r.into()),
    }
}

fn json_of(path: &Path) -> Result<Value, Failed> {
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

fn three_agents_over_ssh_give_exact_counts() -> Result<(), Failed> {
    let sshd = Sshd::start()?;
    let server = epoll()?;
    let dir = scratch("sshd-exact")?;
    let json = dir.join("r.json");
    let csv = dir.join("c.csv");
    let template = sshd.template();
    let addr = server.addr.to_string();
    let (json_text, csv_text) = (
        json.to_string_lossy().to_string(),
        csv.to_string_lossy().to_string(),
    );
    let c = Watched::start(&[
        "load",
        &addr,
        "-c",
        "30",
        "-n",
        "10",
        "--agent",
        &template,
        "--agents",
        "3",
        "--json",
        &json_text,
        "--per-connection-csv",
        &csv_text,
    ])?;
    let (code, err) = c.finish()?;
    if code != Some(0) {
        return Err(format!("exit {code:?}: {err}").into());
    }
    let j = json_of(&json)?;
    let each = j["agents"]["each"].as_array().cloned().unwrap_or_default();
    if j["connections"]["established"] != 30
        || j["messages"] != 300
        || each.len() != 3
        || each.iter().any(|a| {
            a["connections"] != 10
                || a["messages"] != 100
                || !a["lost"].is_null()
                || a["launched"]
                    .as_str()
                    .is_none_or(|l| !l.starts_with("ssh "))
        })
    {
        return Err(format!("{} {}: {each:?}", j["connections"], j["messages"]).into());
    }
    let mut ids: Vec<u32> = csv::Reader::from_path(&csv)?
        .records()
        .map(|r| r.map(|r| r[0].parse().unwrap_or(u32::MAX)))
        .collect::<Result<_, _>>()?;
    ids.sort_unstable();
    if ids != (0..30).collect::<Vec<_>>() {
        return Err(format!("connection ids {ids:?}").into());
    }
    let (_, summary) = server.stop()?;
    if summary.connections != 30 || summary.bytes_echoed != 300 * 64 {
        return Err(format!("the server saw {summary:?}").into());
    }
    Ok(())
}

fn an_ssh_client_killed_mid_run_keeps_the_rest_and_leaves_no_agent() -> Result<(), Failed> {
    let sshd = Sshd::start()?;
    let server = epoll()?;
    let dir = scratch("sshd-killed")?;
    let json = dir.join("r.json");
    let json_text = json.to_string_lossy().to_string();
    // Agent 1's ssh client is killed the moment its agent says `started`;
    // the others run through `exec ssh`.
    let ssh = sshd.template();
    let template = format!(
        "sh -c 'if [ {{i}} = 1 ]; then {ssh} | while IFS= read -r l; do printf \"%s\\n\" \"$l\"; case \"$l\" in *started*) kill -9 $(pgrep -P $$ ssh);; esac; done; else exec {ssh}; fi'"
    );
    let addr = server.addr.to_string();
    let c = Watched::start(&[
        "load", &addr, "-c", "30", "-d", "2s", "--agent", &template, "--agents", "3", "--json",
        &json_text,
    ])?;
    let (code, err) = c.finish()?;
    let j = json_of(&json)?;
    let lost = j["agents"]["each"][1]["lost"].as_str().unwrap_or("");
    if code != Some(1)
        || j["connections"]["established"] != 20
        || j["messages"].as_u64().is_none_or(|m| m == 0)
        || !lost.contains("its output closed")
        || !err.contains("1 of the agents were lost")
    {
        return Err(format!("exit {code:?}, {} lost {lost:?}: {err}", j["connections"]).into());
    }
    // No agent left behind: every session under sshd ends (the killed
    // client's agent sees its stdin close).
    for pid in sshd.descendants() {
        ended(pid)?;
    }
    drop(server);
    drop(sshd);
    Ok(())
}

fn a_remote_command_that_fails_is_one_line() -> Result<(), Failed> {
    let sshd = Sshd::start()?;
    let good = sshd.template();
    let cases = [
        // The remote shell cannot find the program: ssh exits 127.
        (
            good.replace("{cmd_sh}", "/nonexistent/c10k agent"),
            "its launcher exited 127",
        ),
        // The login is refused (a key sshd does not know): ssh exits 255.
        (
            good.replace(
                &sshd.key.display().to_string(),
                &sshd.dir.join("host_key").display().to_string(),
            ),
            "its launcher exited 255",
        ),
    ];
    for (template, says) in cases {
        let c = Watched::start(&[
            "load",
            "127.0.0.1:9",
            "-c",
            "6",
            "--agent",
            &template,
            "--agents",
            "3",
        ])?;
        let (code, err) = c.finish()?;
        // ssh's own complaint comes first (its stderr is the user's), then
        // c10k's one line.
        let last = err.lines().last().unwrap_or("");
        if code != Some(1) || !last.contains("ended before it reported") || !last.contains(says) {
            return Err(format!("{template}: exit {code:?}: {err}").into());
        }
    }
    for pid in sshd.descendants() {
        ended(pid)?;
    }
    Ok(())
}
