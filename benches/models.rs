//! Every model under a small closed-loop load, for the issue notes and for
//! anyone comparing models by hand:
//!
//! - round trips per second of 64-byte messages at 1 and 100 connections
//!   (one message in flight per connection), with the p50 round trip;
//! - the server's memory holding 1,000 idle connections: VmHWM and VmRSS
//!   summed over its process tree, and PSS (which splits pages shared by
//!   forked children fairly), from /proc.
//!
//! The server runs as `c10k serve` pinned to one CPU, this client on another
//! (`--pin split`, default) or the same one (`--pin same`); the pinning is
//! printed with the table. The client is one thread on raw epoll.
//!
//! `cargo bench --bench models [-- --seconds 3 --models epoll,select --pin same]`

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use c10k::child::server::{Launcher, ServerChild};
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};

const MESSAGE: usize = 64;

struct Opts {
    seconds: f64,
    models: Vec<(String, Vec<String>)>,
    pin_same: bool,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        seconds: 2.0,
        models: Vec::new(),
        pin_same: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => {
                o.seconds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|s: &f64| *s > 0.0 && *s <= 600.0)
                    .ok_or("--seconds takes a number from 0 to 600")?
            }
            "--models" => {
                let list = args.next().ok_or("--models takes a list")?;
                o.models = list
                    .split(',')
                    .map(|m| (m.to_string(), Vec::new()))
                    .collect();
            }
            "--pin" => match args.next().as_deref() {
                Some("same") => o.pin_same = true,
                Some("split") => o.pin_same = false,
                _ => return Err("--pin takes same or split".into()),
            },
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.models.is_empty() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        o.models = vec![
            ("threads".into(), vec![]),
            ("fork".into(), vec![]),
            ("prefork".into(), w(&["--workers", "1100"])),
            ("select".into(), vec![]),
            ("poll".into(), vec![]),
            ("epoll".into(), vec![]),
            ("epoll-workers".into(), w(&["--workers", "1"])),
            ("uring".into(), w(&["--workers", "1"])),
            ("tokio".into(), w(&["--workers", "1"])),
            ("hybrid".into(), w(&["--workers", "1"])),
        ];
    }
    Ok(o)
}

fn main() {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("models bench: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = c10k::sys::rlimit::raise_nofile() {
        eprintln!("warning: cannot raise the open-files limit: {e}");
    }
    let cpus = c10k::sys::affinity::current_cpus();
    let (server_cpu, client_cpu) = match (cpus.first(), cpus.get(1)) {
        (Some(&a), Some(&b)) if !o.pin_same => (a, b),
        (Some(&a), _) => (a, a),
        _ => (0, 0),
    };
    if let Err(e) = c10k::sys::affinity::pin_current(&[client_cpu]) {
        eprintln!("warning: cannot pin the client: {e}");
    }
    println!(
        "kernel {}, {} CPUs; server pinned to CPU {server_cpu}, client to CPU {client_cpu}; {MESSAGE} B messages, {} s per cell, closed loop (1 in flight per connection)",
        std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        cpus.len(),
        o.seconds
    );
    println!(
        "{:<14} {:>12} {:>9} {:>12} {:>9} {:>12} {:>12} {:>12}",
        "model",
        "1 conn rt/s",
        "p50 µs",
        "100 conn rt/s",
        "p50 µs",
        "1k idle HWM",
        "1k idle RSS",
        "1k idle PSS"
    );
    for (model, flags) in &o.models {
        match cell(model, flags, server_cpu, o.seconds) {
            Ok(r) => println!(
                "{:<14} {:>12.0} {:>9} {:>12.0} {:>9} {:>9} MiB {:>9} MiB {:>9} MiB",
                model,
                r.one.0,
                r.one.1,
                r.hundred.0,
                r.hundred.1,
                r.idle.0 / 1024,
                r.idle.1 / 1024,
                r.idle.2 / 1024
            ),
            Err(e) => println!("{model:<14} skipped: {e}"),
        }
    }
}

struct Row {
    one: (f64, u64),
    hundred: (f64, u64),
    /// VmHWM, VmRSS and PSS sums in KiB.
    idle: (u64, u64, u64),
}

fn cell(model: &str, flags: &[String], cpu: usize, seconds: f64) -> Result<Row, String> {
    let d = Duration::from_secs_f64(seconds);
    let (one, hundred) = {
        let server = start(model, flags, cpu)?;
        let one = closed_loop(server.addr, 1, d)?;
        let hundred = closed_loop(server.addr, 100, d)?;
        server.stop();
        (one, hundred)
    };
    let server = start(model, flags, cpu)?;
    let mut conns = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let mut s = TcpStream::connect(server.addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        // One round trip: the server has accepted and set the connection up.
        s.write_all(&[7; MESSAGE]).map_err(|e| e.to_string())?;
        s.read_exact(&mut [0; MESSAGE]).map_err(|e| e.to_string())?;
        conns.push(s);
    }
    let idle = memory(&server);
    drop(conns);
    server.stop();
    Ok(Row { one, hundred, idle })
}

/// Round trips per second and p50 in µs, `n` connections, one in flight each.
fn closed_loop(addr: SocketAddr, n: usize, d: Duration) -> Result<(f64, u64), String> {
    let e = |e: std::io::Error| e.to_string();
    let ep = epoll::create(CreateFlags::CLOEXEC).map_err(|x| e(x.into()))?;
    let mut conns = Vec::with_capacity(n);
    for i in 0..n {
        let s = TcpStream::connect(addr).map_err(e)?;
        s.set_nodelay(true).map_err(e)?;
        s.set_nonblocking(true).map_err(e)?;
        epoll::add(&ep, s.as_fd(), EventData::new_u64(i as u64), EventFlags::IN)
            .map_err(|x| e(x.into()))?;
        conns.push((s, Instant::now(), 0usize));
    }
    let warmup = d / 4;
    let start = Instant::now();
    let mut measuring_from = None;
    let mut samples: Vec<u32> = Vec::new();
    let mut count = 0u64;
    for (s, sent, _) in &mut conns {
        // The clock starts before the write: on one core the echo can be
        // back before write() returns.
        *sent = Instant::now();
        s.write_all(&[1; MESSAGE]).map_err(e)?;
    }
    let mut events = vec![
        Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0)
        };
        256
    ];
    let mut buf = [0u8; MESSAGE];
    loop {
        let now = Instant::now();
        if measuring_from.is_none() && now - start >= warmup {
            measuring_from = Some(now);
        }
        if let Some(t) = measuring_from {
            if now - t >= d {
                let secs = (now - t).as_secs_f64();
                samples.sort_unstable();
                let p50 = samples.get(samples.len() / 2).copied().unwrap_or(0) as u64;
                return Ok((count as f64 / secs, p50));
            }
        }
        if now - start > d * 4 + Duration::from_secs(10) {
            return Err("the server stopped answering".into());
        }
        let timeout = rustix::event::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        let k = epoll::wait(&ep, &mut events[..], Some(&timeout)).map_err(|x| e(x.into()))?;
        for ev in &events[..k] {
            let (s, sent, got) = &mut conns[ev.data.u64() as usize];
            loop {
                match s.read(&mut buf[..MESSAGE - *got]) {
                    Ok(0) => return Err("the server closed a connection".into()),
                    Ok(r) => {
                        *got += r;
                        if *got == MESSAGE {
                            *got = 0;
                            if measuring_from.is_some() {
                                count += 1;
                                samples.push(sent.elapsed().as_micros() as u32);
                            }
                            *sent = Instant::now();
                            s.write_all(&[1; MESSAGE]).map_err(e)?;
                        }
                    }
                    Err(x) if x.kind() == ErrorKind::WouldBlock => break,
                    Err(x) => return Err(x.to_string()),
                }
            }
        }
    }
}

/// Starts `c10k serve --model MODEL --cpus CPU FLAGS…` through the
/// library's launcher (a process group of its own, killed whole if dropped).
fn start(model: &str, flags: &[String], cpu: usize) -> Result<ServerChild, String> {
    let mut args = vec![
        "--model".to_string(),
        model.to_string(),
        "--cpus".to_string(),
        cpu.to_string(),
    ];
    args.extend_from_slice(flags);
    let launcher = Launcher {
        program: Some(env!("CARGO_BIN_EXE_c10k").into()),
        ..Launcher::default()
    };
    launcher.start(&args).map_err(|e| e.to_string())
}

/// VmHWM, VmRSS and PSS summed over the server's process tree, in KiB.
fn memory(server: &ServerChild) -> (u64, u64, u64) {
    let m = c10k::metrics::tree::sample(&[server.pid()]);
    (m.vm_hwm_kib, m.rss_kib, m.pss_kib)
}
