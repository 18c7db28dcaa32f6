//! `report.html` from synthetic runs built in memory (a burst run, a timed
//! throughput run, a churn run at a single connection count; each with
//! models that fail or are skipped): the page must parse as strict XML, hold
//! one `<svg>` per `<figure>` and the figures the data calls for, reference
//! nothing outside itself, keep every skipped and failed reason, and show
//! the exponent of a series with a known power law. Then headless Chromium
//! opens it: the screenshot must be a real image and the console silent
//! (after a self-test that shows the console check does see an error); and
//! the thesis with every model, measured in the browser at 1280 px, must
//! put the study's tables before the verdict and show its Table 2 whole.
//! The page of `c10k compare` (two such runs, one model 20 % slower on
//! NEW) is held to the same: strict XML, nothing outside, its three charts
//! labelled, and a screenshot from Chromium.

use c10k::client::plan::LoadKind;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use c10k::client::report::{Burst, Client, Connect, Connections, Percentiles, Report, Throughput};
use c10k::metrics::kernel::KernelMemory;
use c10k::metrics::tree::TreeMemory;
use c10k::results::cell::{CellResult, ServerSide, Status};
use c10k::results::dir::RunData;
use c10k::results::matrix::{self, Order, Pin, Primary, RunPlan, Shape, Workload, WorkloadKind};
use libtest_mimic::Failed;

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::support::{installed, on_path, run_bounded, scratch_in};

tests![
    parses_as_strict_xml,
    a_run_kept_disturbed_is_said_at_the_top_and_marked_in_its_row,
    one_svg_per_figure,
    references_nothing_outside,
    keeps_skipped_and_failed_reasons,
    shows_the_fitted_exponent,
    single_connection_count_and_empty_charts,
    summary_table_covers_every_model,
    write_puts_report_in_the_results_dir,
    verdict_first_with_ties_and_costs,
    one_run_is_not_ranked,
    memory_below_resolution_is_listed_and_sloped,
    runs_auto_names_unsettled_cells,
    opens_in_chromium,
    compare_page_opens_in_chromium,
    study_tables_first_and_readable_in_chromium,
    forest_plots_answer_first_in_chromium,
];

// ---------------------------------------------------------------- data

/// What one synthetic cell measured.
#[derive(Clone, Copy, Default)]
struct Cell {
    time_s: Option<f64>,
    latency_us: f64,
    throughput: f64,
    connects_per_second: f64,
    user_kib: f64,
    virtual_kib: f64,
    kernel_kib: f64,
    server_cpu_s: f64,
    client_cpu_s: f64,
}

fn percentiles(mean: f64) -> Percentiles {
    if mean <= 0.0 {
        return Percentiles::default();
    }
    Percentiles {
        count: 1000,
        min: mean * 0.5,
        mean,
        stdev: mean * 0.2,
        p50: mean * 0.9,
        p90: mean * 1.5,
        p99: mean * 3.0,
        p99_9: mean * 4.0,
        max: mean * 5.0,
    }
}

fn load_report(kind: LoadKind, n: usize, c: &Cell) -> Report {
    let messages = match kind {
        LoadKind::Churn => 0,
        LoadKind::Burst => n as u64 * 3,
        _ => 10_000,
    };
    Report {
        schema_version: c10k::client::report::SCHEMA_VERSION,
        command: "c10k load (synthetic)".into(),
        target: "127.0.0.1:9".into(),
        protocol: c10k::protocol::Protocol::Echo,
        workload: kind,
        message_bytes: 64,
        depth: 1,
        warmup_seconds: 0.0,
        measured_seconds: 2.0,
        interrupted: false,
        connections: Connections {
            requested: n,
            idle: 0,
            established: n as u64,
            failed: 0,
        },
        connect: Connect {
            established_seconds: 0.01,
            per_second: c.connects_per_second,
            latency_us: percentiles(if kind == LoadKind::Churn { 40.0 } else { 20.0 }),
        },
        messages,
        bytes_sent: messages * 64,
        bytes_received: messages * 64,
        throughput: Throughput {
            messages_per_second: c.throughput,
            bytes_per_second: c.throughput * 64.0,
        },
        latency_us: percentiles(c.latency_us),
        open_loop: None,
        burst: (kind == LoadKind::Burst).then(|| Burst {
            makespan_us: vec![c.time_s.map(|t| t * 1e6); 3],
        }),
        errors: BTreeMap::new(),
        http: None,
        fairness: None,
        // The server's CPU over the window, recorded as a run records it
        // (most of the cell's, within 2 s on its one CPU); no verdict.
        limits: c10k::client::limit::Limits {
            window_seconds: Some(2.0),
            server_cpu_seconds: Some((c.server_cpu_s * 0.9).min(2.0)),
            server_span_seconds: Some(2.0),
            server_cpu_error_seconds: Some(0.0),
            server_capacity: Some(1.0),
            ..Default::default()
        },
        client: Client {
            threads: 1,
            cpus: Some(vec![1]),
            cpu_user_seconds: c.client_cpu_s,
            cpu_system_seconds: 0.0,
            cpu_per_message_us: 0.0,
            max_rss_kib: 4096,
            processes: 1,
            syscalls: Default::default(),
        },
        tcp: serde_json::Value::Null,
        sources: Vec::new(),
        warnings: Vec::new(),
        agents: None,
        environment: serde_json::Value::Null,
    }
}

fn tree(pss: u64, vm: u64) -> TreeMemory {
    TreeMemory {
        processes: 1,
        threads: 1,
        vm_size_kib: vm,
        vm_peak_kib: vm,
        rss_kib: pss,
        vm_hwm_kib: pss,
        pss_kib: pss,
        pss_anon_kib: pss,
        sockets: 1,
        fds: 0,
    }
}

/// A measured cell.
fn ok(spec: &matrix::CellSpec, kind: LoadKind, c: Cell, fixed: bool) -> CellResult {
    let n = spec.connections as u64;
    let (pss, vm) = (2000, 10_000);
    let loaded = tree(
        (pss as f64 + c.user_kib * n as f64) as u64,
        (vm as f64 + c.virtual_kib * n as f64) as u64,
    );
    CellResult {
        started_unix: 1.7e9 + spec.index as f64,
        wall_seconds: 3.0,
        server: Some(ServerSide {
            instances: 1,
            args: vec!["serve".into(), spec.model.clone()],
            cpu_user_seconds: c.server_cpu_s,
            cpu_system_seconds: 0.0,
            max_rss_kib: loaded.rss_kib,
            idle: tree(pss, vm),
            loaded,
            end: loaded,
            summaries: Vec::new(),
            idle_cpus: None,
            cpu_error_seconds: None,
        }),
        kernel_before: Some(KernelMemory {
            slab_kib: 100_000,
            tcp_buffers_kib: 0,
            tcp_sockets: 10,
        }),
        kernel_loaded: Some(KernelMemory {
            slab_kib: 100_000 + (c.kernel_kib * n as f64) as u64,
            tcp_buffers_kib: 0,
            tcp_sockets: 10 + 2 * n,
        }),
        load: Some(load_report(kind, spec.connections, &c)),
        messages_per_connection: fixed.then_some(1),
        ..CellResult::new(spec.clone(), Status::Ok)
    }
}

fn not_measured(spec: &matrix::CellSpec, status: Status, reason: &str) -> CellResult {
    CellResult {
        reason: Some(reason.into()),
        started_unix: 1.7e9,
        wall_seconds: 0.1,
        ..CellResult::new(spec.clone(), status)
    }
}

fn plan(
    experiment: &str,
    kind: WorkloadKind,
    primary: Primary,
    models: &[&str],
    connections: &[usize],
) -> RunPlan {
    let models: Vec<String> = models.iter().map(|m| m.to_string()).collect();
    RunPlan {
        capacity: None,
        tune: None,
        tuned: Vec::new(),
        version: matrix::RESULTS_VERSION,
        experiment: experiment.into(),
        title: format!("synthetic {experiment} run <for tests> & checks"),
        command: format!("c10k run {experiment} --runs 2 --out 'results/{experiment}'"),
        cells: c10k::results::schedule::expand(&models, connections, &[], 2, Order::Interleaved),
        models,
        connections: connections.to_vec(),
        work: Vec::new(),
        runs: 2,
        auto_runs: None,
        order: Order::Interleaved,
        slots: None,
        looks: None,
        margin: 0.05,
        repeat_disturbed: 2,
        pin: Pin::Split,
        server_cpus: vec![0],
        client_cpus: vec![1],
        workload: Workload {
            shape: match kind {
                WorkloadKind::Burst => Shape::Burst { rounds: 3 },
                k => Shape::of(k),
            },
            messages_per_connection: (kind == WorkloadKind::Burst).then_some(1),
            total_messages: None,
            duration_seconds: 2.0,
            warmup_seconds: 0.5,
            message_bytes: 64,
            payload: None,
            timeout_seconds: 10.0,
            rate: None,
            connect_rate: None,
            client_interval_seconds: None,
            arrivals: Default::default(),
            protocol: Default::default(),
        },
        primary,
        per_connection_csv: false,
        buffer: "16KiB".into(),
        server_settings: Default::default(),
        variants: Vec::new(),
        servers: Vec::new(),
        targets: Vec::new(),
        agents: None,
        bind: None,
        ready_timeout_seconds: 60.0,
        bench: None,
        bench_args: Vec::new(),
        size_label: "connections".into(),
        refused: Vec::new(),
    }
}

fn environment() -> serde_json::Value {
    serde_json::json!({
        "c10k_version": "0.1.0",
        "kernel": "Linux 6.1.0-test #1 SMP x86_64",
        "hostname": "testhost",
        "cpus_online": 2,
        "cpus_allowed": [0, 1],
        "pinned": false,
        "cpu_model": "Synthetic CPU @ 2.0GHz",
        "memory_total_kib": 8_000_000,
        "nofile_soft": 1_048_576,
        "nofile_hard": null,
        "ephemeral_ports": [32768, 60999],
        "sysctls": {"net.core.somaxconn": "4096", "net.ipv4.tcp_rmem": "4096 131072 6291456"}
    })
}

const SKIP_REASON: &str = "io_uring is disabled here (kernel.io_uring_disabled = 2)";
const FAIL_REASON: &str = "the server died: killed by SIGSEGV <deliberately>";

/// A burst run: select takes exactly 1e-5·N s (exponent 1), threads and
/// poll grow faster with a little spread between repeats, uring is skipped
/// everywhere, and poll's second repeat at 128 failed.
fn burst_run() -> RunData {
    let p = plan(
        "thesis",
        WorkloadKind::Burst,
        Primary::Time,
        &["threads", "select", "poll", "uring"],
        &[2, 8, 32, 128],
    );
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let n = s.connections as f64;
            let wobble = if s.run == 1 { 0.95 } else { 1.05 };
            let (a, b, wobble) = match s.model.as_str() {
                "select" => (1e-5, 1.0, 1.0),
                "threads" => (2e-5, 1.3, wobble),
                _ => (1.5e-5, 1.1, wobble),
            };
            let t = a * n.powf(b) * wobble;
            // One repeat's throughput is not a number: left out, not drawn.
            let nan = s.model == "threads" && s.connections == 2 && s.run == 1;
            let c = Cell {
                time_s: Some(t),
                latency_us: t * 1e6 / 2.0,
                throughput: if nan { f64::NAN } else { n / t },
                connects_per_second: 5000.0,
                user_kib: if s.model == "threads" { 40.0 } else { 0.5 },
                // select's virtual size does not grow: zero, left out on a
                // log axis.
                virtual_kib: if s.model == "threads" {
                    8200.0
                } else if s.model == "select" {
                    0.0
                } else {
                    4.0
                },
                kernel_kib: 9.0 * wobble,
                server_cpu_s: t * 0.8,
                client_cpu_s: t * 0.5,
            };
            match (s.model.as_str(), s.connections, s.run) {
                ("uring", _, _) => not_measured(s, Status::Skipped, SKIP_REASON),
                ("poll", 128, 2) => not_measured(s, Status::Failed, FAIL_REASON),
                _ => ok(s, LoadKind::Burst, c, true),
            }
        })
        .collect();
    RunData {
        dir: PathBuf::from("results/thesis"),
        plan: p,
        environment: environment(),
        cells,
        superseded: Vec::new(),
    }
}

/// The thesis as `c10k run thesis` runs it: every model of the registry,
/// the study's twelve socket counts, each cell measured (its Table 2 is as
/// wide as the study's tables get).
fn full_thesis_run() -> RunData {
    let models = c10k::server::names();
    let p = plan(
        "thesis",
        WorkloadKind::Burst,
        Primary::Time,
        &models,
        &[2, 4, 8, 16, 32, 64, 128, 200, 256, 300, 400, 512],
    );
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let n = s.connections as f64;
            let m = models.iter().position(|m| *m == s.model).unwrap_or(0) as f64;
            let wobble = if s.run == 1 { 0.97 } else { 1.03 };
            let t = (1.0 + 0.1 * m) * 9e-5 * n * wobble;
            let c = Cell {
                time_s: Some(t),
                latency_us: t * 1e6 / 2.0,
                throughput: n / t,
                connects_per_second: 5000.0,
                user_kib: 1.0 + m,
                virtual_kib: 4.0 + m,
                kernel_kib: 9.0,
                server_cpu_s: t * 0.8,
                client_cpu_s: t * 0.5,
            };
            ok(s, LoadKind::Burst, c, true)
        })
        .collect();
    RunData {
        dir: PathBuf::from("results/thesis"),
        plan: p,
        environment: environment(),
        cells,
        superseded: Vec::new(),
    }
}

/// A timed closed-loop run: epoll's mean latency is exactly 50·N^0.5 µs;
/// hybrid failed in every cell.
fn throughput_run() -> RunData {
    let p = plan(
        "tour",
        WorkloadKind::Closed,
        Primary::Throughput,
        &["epoll", "tokio", "hybrid"],
        &[10, 100, 1000],
    );
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let n = s.connections as f64;
            let wobble = if s.run == 1 { 0.97 } else { 1.03 };
            let lat = match s.model.as_str() {
                "epoll" => 50.0 * n.sqrt(),
                _ => 70.0 * n.powf(0.6) * wobble,
            };
            let c = Cell {
                time_s: None,
                latency_us: lat,
                throughput: n / lat * 1e6,
                connects_per_second: 20_000.0,
                user_kib: 0.3,
                virtual_kib: 2.0,
                kernel_kib: 9.0,
                server_cpu_s: 0.5 * wobble,
                client_cpu_s: 0.4,
            };
            if s.model == "hybrid" {
                not_measured(
                    s,
                    Status::Failed,
                    "hybrid: 3 connections reset by the server",
                )
            } else {
                ok(s, LoadKind::Closed, c, false)
            }
        })
        .collect();
    RunData {
        dir: PathBuf::from("results/tour"),
        plan: p,
        environment: environment(),
        cells,
        superseded: Vec::new(),
    }
}

/// A churn run at one connection count, with no echo: only the churn
/// chart has anything to draw. The environment file is missing fields.
fn churn_run() -> RunData {
    let p = plan(
        "accept",
        WorkloadKind::Churn,
        Primary::AcceptRate,
        &["select", "epoll"],
        &[1],
    );
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let c = Cell {
                connects_per_second: if s.model == "epoll" {
                    30_000.0
                } else {
                    25_000.0
                },
                ..Cell::default()
            };
            ok(s, LoadKind::Churn, c, false)
        })
        .collect();
    RunData {
        dir: PathBuf::from("results/accept"),
        plan: p,
        environment: serde_json::json!({"kernel": "Linux"}),
        cells,
        superseded: Vec::new(),
    }
}

/// `plan`'s matrix with `runs` repeats of every cell.
fn with_runs(mut p: RunPlan, runs: usize) -> RunPlan {
    p.cells =
        c10k::results::schedule::expand(&p.models, &p.connections, &[], runs, Order::Interleaved);
    p.runs = runs;
    p
}

/// A timed run where poll and epoll are within 3 % of each other (a tie)
/// and threads does 60 % of their round trips (clearly worse). epoll adds
/// 0.1 KiB per connection: one page at 10 connections, below what a cell
/// resolves; threads adds 40 KiB. The kernel adds 9 KiB per connection,
/// resolved only at 1,000 (two CPUs' batches are about 3 MiB).
fn tie_run(runs: usize) -> RunData {
    let p = with_runs(
        plan(
            "tour",
            WorkloadKind::Closed,
            Primary::Throughput,
            &["epoll", "poll", "threads"],
            &[10, 100, 1000],
        ),
        runs,
    );
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let wobble = [1.0, 1.02, 0.99, 1.01, 0.98][(s.run - 1) % 5];
            let (throughput, user_kib) = match s.model.as_str() {
                "epoll" => (100_000.0 * wobble, 0.1),
                "poll" => (101_000.0 * [0.99, 1.01, 1.02][(s.run - 1) % 3], 0.1),
                _ => (60_000.0 * wobble, 40.0),
            };
            let c = Cell {
                time_s: None,
                latency_us: 1e6 / throughput * s.connections as f64,
                throughput,
                connects_per_second: 20_000.0,
                user_kib,
                virtual_kib: 0.0,
                kernel_kib: 9.0,
                server_cpu_s: 0.5,
                client_cpu_s: 0.4,
            };
            ok(s, LoadKind::Closed, c, false)
        })
        .collect();
    RunData {
        dir: PathBuf::from("results/tour"),
        plan: p,
        environment: environment(),
        cells,
        superseded: Vec::new(),
    }
}

/// The text of the section with `id`, tags removed and entities decoded.
fn section_text(html: &str, id: &str) -> Result<String, Failed> {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .ok_or_else(|| format!("no {id} section"))?;
    let end = html[start..]
        .find("</section>")
        .ok_or("section not closed")?;
    let mut text = String::new();
    let mut in_tag = false;
    for ch in html[start..start + end].chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&quot;", "\"");
    Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn render(data: &RunData) -> Result<String, Failed> {
    Ok(c10k::report::render(data).map_err(|e| format!("render failed: {e:#}"))?)
}

// ---------------------------------------------------------------- XML

/// What a strict XML pass over the page found.
#[derive(Default, Debug)]
struct Parsed {
    /// `<svg>` elements inside each `<figure>`, in order.
    svgs_per_figure: Vec<usize>,
    /// `<svg>` elements outside any figure.
    loose_svgs: usize,
    /// Every attribute, as (element, name, value).
    attributes: Vec<(String, String, String)>,
    /// Every element name.
    elements: Vec<String>,
    /// The text of each `<figcaption>`.
    captions: Vec<String>,
}

/// Parses `html` as XML from start to end: balanced and matching tags,
/// well-formed attributes, only XML's own entities, one root element.
fn parse_xml(html: &str) -> Result<Parsed, String> {
    let mut reader = Reader::from_str(html);
    let config = reader.config_mut();
    config.check_end_names = true;
    config.check_comments = true;
    config.allow_unmatched_ends = false;
    let mut out = Parsed::default();
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut caption: Option<String> = None;
    // One event per step; the page is far smaller than this bound.
    for _ in 0..10_000_000 {
        let at = reader.buffer_position();
        let ev = reader
            .read_event()
            .map_err(|e| format!("XML error at byte {at}: {e}"))?;
        match ev {
            Event::Start(e) => {
                open(&e, false, &mut stack, &mut out, &mut roots, at)?;
                if e.name().as_ref() == b"figcaption" {
                    caption = Some(String::new());
                }
            }
            Event::Empty(e) => open(&e, true, &mut stack, &mut out, &mut roots, at)?,
            Event::End(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> at byte {at} closes {other:?}")),
                }
                if name == "figcaption" {
                    out.captions.extend(caption.take());
                }
            }
            Event::Text(t) => {
                let text = t.decode().map_err(|e| format!("text at byte {at}: {e}"))?;
                if stack.is_empty() && !text.trim().is_empty() {
                    return Err(format!("text outside the root element at byte {at}"));
                }
                if let Some(c) = caption.as_mut() {
                    c.push_str(&text);
                }
            }
            Event::GeneralRef(r) => {
                let name = r
                    .decode()
                    .map_err(|e| format!("entity at byte {at}: {e}"))?;
                let known = ["amp", "lt", "gt", "quot", "apos"].contains(&name.as_ref());
                let resolved = if r.is_char_ref() {
                    r.resolve_char_ref()
                        .map_err(|e| format!("character reference at byte {at}: {e}"))?
                } else {
                    None
                };
                if !known && resolved.is_none() {
                    return Err(format!("&{name}; at byte {at} is not an XML entity"));
                }
                if let Some(c) = caption.as_mut() {
                    c.push(resolved.unwrap_or(match name.as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        _ => '\'',
                    }));
                }
            }
            Event::Eof => {
                if let Some(open) = stack.last() {
                    return Err(format!("<{open}> is never closed"));
                }
                if roots != 1 {
                    return Err(format!("{roots} root elements"));
                }
                return Ok(out);
            }
            Event::CData(_) => return Err(format!("CDATA at byte {at}: not HTML")),
            Event::Decl(_) | Event::PI(_) => {
                return Err(format!(
                    "XML declaration or processing instruction at byte {at}"
                ))
            }
            Event::DocType(_) | Event::Comment(_) => {}
        }
    }
    Err("the XML parser did not reach the end".into())
}

/// An opening (or empty) tag: its attributes checked and recorded, the
/// figures and their `<svg>` counted.
fn open(
    e: &quick_xml::events::BytesStart,
    empty: bool,
    stack: &mut Vec<String>,
    out: &mut Parsed,
    roots: &mut usize,
    at: u64,
) -> Result<(), String> {
    let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
    if stack.is_empty() {
        *roots += 1;
    }
    for a in e.attributes().with_checks(true) {
        let a = a.map_err(|err| format!("bad attribute in <{name}> at byte {at}: {err}"))?;
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|err| format!("bad attribute value in <{name}> at byte {at}: {err}"))?;
        out.attributes.push((
            name.clone(),
            String::from_utf8_lossy(a.key.as_ref()).into_owned(),
            value.into_owned(),
        ));
    }
    if name == "figure" {
        out.svgs_per_figure.push(0);
    }
    if name == "svg" {
        if stack.iter().any(|s| s == "figure") {
            if let Some(n) = out.svgs_per_figure.last_mut() {
                *n += 1;
            }
        } else {
            out.loose_svgs += 1;
        }
    }
    out.elements.push(name.clone());
    if !empty {
        stack.push(name);
    }
    Ok(())
}

/// The forest plots' figures (`<figure class="forest">`), which head the
/// verdict, before every chart.
fn forests(p: &Parsed) -> usize {
    p.attributes
        .iter()
        .filter(|(e, k, v)| e == "figure" && k == "class" && v == "forest")
        .count()
}

/// The charts' captions: those after the forest plots'.
fn chart_captions(p: &Parsed) -> &[String] {
    &p.captions[forests(p).min(p.captions.len())..]
}

fn parsed(data: &RunData) -> Result<(String, Parsed), Failed> {
    let html = render(data)?;
    let p = parse_xml(&html).map_err(|e| format!("{}: {e}", data.plan.experiment))?;
    Ok((html, p))
}

// ---------------------------------------------------------------- tests

fn parses_as_strict_xml() -> Result<(), Failed> {
    for data in [burst_run(), throughput_run(), churn_run()] {
        let (html, p) = parsed(&data)?;
        if !html.starts_with("<!DOCTYPE html>\n<html") {
            return Err(format!("no HTML5 doctype: {}", &html[..40.min(html.len())]).into());
        }
        if !html.contains("<meta charset=\"utf-8\"/>") {
            return Err("no <meta charset=\"utf-8\"/>".into());
        }
        if p.elements.first().map(String::as_str) != Some("html") {
            return Err(format!("root is {:?}", p.elements.first()).into());
        }
        // Escaped, not interpreted: the plan title holds markup characters.
        if !html.contains("synthetic thesis run &lt;for tests&gt; &amp; checks")
            && data.plan.experiment == "thesis"
        {
            return Err("the title is not escaped".into());
        }
        if html.contains("<script") {
            return Err("the page has a script".into());
        }
        if html.contains("NaN") {
            return Err("a value that is not a number reached the page".into());
        }
    }
    // The checker itself rejects what it should.
    for bad in [
        "<html><body><p>open</body></html>",
        "<html><br></html>",
        "<html>&nbsp;</html>",
        "<html><p a=1></p></html>",
        "<html></html><html></html>",
    ] {
        if parse_xml(bad).is_ok() {
            return Err(format!("the XML check accepted {bad:?}").into());
        }
    }
    Ok(())
}

fn one_svg_per_figure() -> Result<(), Failed> {
    // burst: time, latency, throughput, memory, CPU; timed: the same with
    // mean latency in place of time; churn at one count: only churn.
    for (data, figures) in [(burst_run(), 5), (throughput_run(), 5), (churn_run(), 1)] {
        let (_, p) = parsed(&data)?;
        let name = &data.plan.experiment;
        // Besides the charts, a forest plot per count where models ranked.
        let figures = figures + forests(&p);
        if p.svgs_per_figure.len() != figures {
            return Err(format!(
                "{name}: {} figures, expected {figures}",
                p.svgs_per_figure.len()
            )
            .into());
        }
        if let Some(n) = p.svgs_per_figure.iter().find(|n| **n != 1) {
            return Err(format!("{name}: a figure has {n} <svg> elements").into());
        }
        if p.loose_svgs != 0 {
            return Err(format!("{name}: {} <svg> outside figures", p.loose_svgs).into());
        }
        if p.captions.len() != figures {
            return Err(format!(
                "{name}: {} captions for {figures} figures",
                p.captions.len()
            )
            .into());
        }
    }
    Ok(())
}

fn references_nothing_outside() -> Result<(), Failed> {
    for data in [burst_run(), throughput_run(), churn_run()] {
        let (html, p) = parsed(&data)?;
        nothing_outside(&data.plan.experiment, &html, &p)?;
    }
    Ok(())
}

/// The page holds no URL, no external resource and no namespace
/// attribute (the SVG namespace URI that plotters writes is removed from
/// inline SVG, so no URL of any kind is allowed).
fn nothing_outside(name: &str, html: &str, p: &Parsed) -> Result<(), Failed> {
    let lower = html.to_lowercase();
    for needle in [
        "http:", "https:", "url(", "@import", "<link", "<script", "<img", "<iframe", "<object",
        "<embed", "data:",
    ] {
        if let Some(at) = lower.find(needle) {
            let from = at.saturating_sub(60);
            return Err(format!(
                "{name}: {needle:?} in the page: …{}…",
                &html[from..(at + 60).min(html.len())]
            )
            .into());
        }
    }
    for (el, attr, value) in &p.attributes {
        let a = attr.to_lowercase();
        if a == "src"
            || a == "href"
            || a.ends_with(":href")
            || a == "srcset"
            || a == "action"
            || a == "xmlns"
            || a.starts_with("xmlns:")
        {
            return Err(format!("{name}: <{el} {attr}=\"{value}\">").into());
        }
        if value.to_lowercase().contains("url(") {
            return Err(format!("{name}: <{el} {attr}=\"{value}\"> uses url(").into());
        }
    }
    Ok(())
}

fn keeps_skipped_and_failed_reasons() -> Result<(), Failed> {
    let burst = burst_run();
    let (html, _) = parsed(&burst)?;
    let escaped = |s: &str| c10k::export::table::escape_html(s);
    for reason in [SKIP_REASON, FAIL_REASON] {
        if !html.contains(&escaped(reason)) {
            return Err(format!("reason missing: {reason}").into());
        }
    }
    // Every non-measured cell is listed in the problems section: 4 uring
    // cells × 2 runs, 1 poll (the ranking notes them too, once per count).
    let problems = html
        .split_once("id=\"problems\"")
        .and_then(|(_, rest)| rest.split_once("</section>"))
        .map(|(section, _)| section)
        .ok_or("no problems section")?;
    let rows = problems.matches(&escaped(SKIP_REASON)).count();
    if rows != 8 {
        return Err(format!("{rows} skipped rows, expected 8").into());
    }
    if !html.contains("poll/c128/r2") {
        return Err("the failed cell's id is missing".into());
    }
    if !html.contains("23 measured") || !html.contains("8 skipped") || !html.contains("1 failed") {
        return Err("the cell counts are wrong or missing".into());
    }
    let (timed, _) = parsed(&throughput_run())?;
    let timed_problems = timed
        .split_once("id=\"problems\"")
        .and_then(|(_, rest)| rest.split_once("</section>"))
        .map(|(section, _)| section)
        .ok_or("no problems section")?;
    if timed_problems
        .matches("hybrid: 3 connections reset by the server")
        .count()
        != 6
    {
        return Err("every failed hybrid cell must be listed".into());
    }
    if !timed.contains("hybrid: no measured cell") {
        return Err("a model with every cell failed must say so in the legend".into());
    }
    Ok(())
}

fn shows_the_fitted_exponent() -> Result<(), Failed> {
    let (html, p) = parsed(&burst_run())?;
    let fit = "select t ∝ N^1.00, R² 1.00";
    let time_caption = chart_captions(&p).first().ok_or("no figure caption")?;
    if !time_caption.contains(fit) {
        return Err(format!("the time caption lacks {fit:?}: {time_caption}").into());
    }
    // And in the chart's legend.
    if !html.contains("select  t ∝ N^1.00, R² 1.00") {
        return Err("the legend lacks select's fit".into());
    }
    // Noisy series are fitted too, with their R² below 1.
    if !time_caption.contains("threads t ∝ N^1.30") {
        return Err(format!("threads' exponent missing: {time_caption}").into());
    }
    let (_, p) = parsed(&throughput_run())?;
    let first = chart_captions(&p).first().ok_or("no figure caption")?;
    if !first.starts_with("Mean latency against connections.")
        || !first.contains("epoll latency ∝ N^0.50, R² 1.00")
    {
        return Err(format!("a timed run fits mean latency: {first}").into());
    }
    Ok(())
}

fn single_connection_count_and_empty_charts() -> Result<(), Failed> {
    let (html, p) = parsed(&churn_run())?;
    let caption = chart_captions(&p).first().ok_or("no figure")?;
    if !caption.starts_with("Connection churn.") {
        return Err(format!("the only chart should be churn: {caption}").into());
    }
    // Each chart without data says so in one line.
    let skipped = html.matches("<p class=\"skipped-chart\">").count();
    if skipped != 5 {
        return Err(format!("{skipped} skipped-chart lines, expected 5").into());
    }
    if !html.contains("unknown") {
        return Err("missing environment fields must show as unknown".into());
    }
    Ok(())
}

fn summary_table_covers_every_model() -> Result<(), Failed> {
    let data = burst_run();
    let t = c10k::report::summary_table(&data);
    let models: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    if models != ["threads", "select", "poll", "uring"] {
        return Err(format!("rows {models:?}").into());
    }
    if t.header.len() != 5 {
        return Err(format!("header {:?}", t.header).into());
    }
    let uring = &t.rows[3];
    if uring[1..].iter().any(|c| c != "skipped") {
        return Err(format!("uring row {uring:?}").into());
    }
    let poll128 = &t.rows[2][4];
    if !poll128.ends_with(", 1 failed") {
        return Err(format!("poll at 128: {poll128}").into());
    }
    // select at 8: exactly 80 µs both runs.
    if t.rows[1][2] != "80 µs (80 µs–80 µs)" {
        return Err(format!("select at 8: {}", t.rows[1][2]).into());
    }
    Ok(())
}

fn write_puts_report_in_the_results_dir() -> Result<(), Failed> {
    let dir = scratch_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "report-write")?;
    let mut data = burst_run();
    data.dir = dir.path().to_path_buf();
    let path = c10k::report::write(&data).map_err(|e| format!("{e:#}"))?;
    if path != dir.join("report.html") {
        return Err(format!("wrote {}", path.display()).into());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    if text != render(&data)? {
        return Err("the file differs from render()".into());
    }
    let names: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    if names.len() != 1 {
        return Err(format!("left behind: {names:?}").into());
    }
    Ok(())
}

fn verdict_first_with_ties_and_costs() -> Result<(), Failed> {
    let data = tie_run(3);
    let (html, _) = parsed(&data)?;
    let verdict_at = html.find("<section id=\"verdict\">").ok_or("no verdict")?;
    if html.find("<section id=\"about\">") < Some(verdict_at) {
        return Err("the verdict is not the first section".into());
    }
    let verdict = section_text(&html, "verdict")?;
    for n in ["10", "100", "1,000"] {
        let want = format!(
            "{n} connections: poll is best; epoll not told apart from it (inconclusive) (round \
             trips/s, higher is better)"
        );
        if !verdict.contains(&want) {
            return Err(format!("the verdict lacks {want:?}: {verdict}").into());
        }
    }
    // Each model's cost: ratio with its interval, p99, memory, CPU; and
    // the verdict on every figure.
    for want in [
        "1? epoll 100,000 inconclusive (0.96–1.07×; ~5 runs)",
        "3 threads 60,000 1.69× slower (1.6",
        "40 KiB",
        "server CPU/msg",
        "p99 latency",
        "Best by round trips/s: poll · by p99: poll (epoll not told apart)",
        "Not dominated: poll and epoll. Out: threads (1.69× slower than poll, p99 1.69× poll's, \
         40 KiB/connection against poll's 102 B)",
        "Rows by median. Rank: a model's group",
    ] {
        if !verdict.contains(want) {
            return Err(format!("the verdict lacks {want:?}: {verdict}").into());
        }
    }
    if verdict.contains("tied") {
        return Err(format!("a tie read into noise: {verdict}").into());
    }
    // No limit is known yet: no column for it.
    if verdict.contains("limited by") {
        return Err(format!("an empty 'limited by' column: {verdict}").into());
    }
    // The ranking puts epoll in poll's group, not told apart, and
    // threads third.
    let ranking = section_text(&html, "ranking")?;
    for want in ["1 poll 102,010", "1? epoll 100,000", "3 threads 60,000"] {
        if !ranking.contains(want) {
            return Err(format!("the ranking lacks {want:?}: {ranking}").into());
        }
    }
    Ok(())
}

fn one_run_is_not_ranked() -> Result<(), Failed> {
    let data = tie_run(1);
    let tables = c10k::analysis::summary::ranking(&data);
    for t in &tables {
        if !t.title.contains("; 1 run: order not tested (") {
            return Err(format!("title {:?}", t.title).into());
        }
        if t.rows.iter().any(|r| r[0] != "–") {
            return Err(format!("a rank from one run: {:?}", t.rows).into());
        }
        if !t.rows[1][6].contains("(untested: 1 run)") {
            return Err(format!("vs best {:?}", t.rows[1]).into());
        }
    }
    let verdict = c10k::analysis::verdict::tables(&data);
    if !verdict[0]
        .title
        .starts_with("10 connections: epoll has the best median; 1 run: order not tested")
    {
        return Err(format!("verdict title {:?}", verdict[0].title).into());
    }
    Ok(())
}

fn memory_below_resolution_is_listed_and_sloped() -> Result<(), Failed> {
    let data = tie_run(3);
    let (html, p) = parsed(&data)?;
    let caption = p
        .captions
        .iter()
        .find(|c| c.starts_with("Memory per connection."))
        .ok_or("no memory chart")?;
    // epoll's page at 10 connections is listed, not silently dropped; so
    // is the kernel's 90 KiB below two CPUs' batches.
    for want in [
        "Below resolution, not drawn",
        "user (PSS): epoll at 10 (3 runs, ≤ 410 B); poll at 10 (3 runs, ≤ 410 B)",
        "kernel: epoll at 10 (3 runs, ≤ 306 KiB), 100 (3 runs, ≤ 30.6 KiB)",
    ] {
        if !caption.contains(want) {
            return Err(format!("the memory caption lacks {want:?}: {caption}").into());
        }
    }
    // The slopes, with intervals, in a table under the chart: epoll's
    // 0.1 KiB per connection recovered from cells that one by one do not
    // all resolve it.
    let t = c10k::analysis::memory::table(&data).ok_or("no memory table")?;
    let row = |m: &str| t.rows.iter().find(|r| r[0] == m).cloned();
    let epoll = row("epoll").ok_or("no epoll row")?;
    let threads = row("threads").ok_or("no threads row")?;
    // One unit down the column: epoll's 102 B beside threads' 40 KiB.
    if !epoll[1].starts_with("0.1 KiB [") || !threads[1].starts_with("40 KiB [") {
        return Err(format!("slopes: {epoll:?} {threads:?}").into());
    }
    if !epoll[3].starts_with("9 KiB [") || epoll[4] != "9" {
        return Err(format!("kernel slope: {epoll:?}").into());
    }
    let figure = html
        .split_once("<figure id=\"fig-memory\">")
        .map(|(_, rest)| rest)
        .ok_or("no memory figure")?;
    if !figure.contains("Memory per connection: slope over 10…1,000 connections") {
        return Err("the slope table is not under the memory chart".into());
    }
    Ok(())
}

fn runs_auto_names_unsettled_cells() -> Result<(), Failed> {
    // epoll at 10 ran its 10 runs with ±20 % noise; poll settled at 3.
    let mut p = plan(
        "tour",
        WorkloadKind::Closed,
        Primary::Throughput,
        &["epoll", "poll"],
        &[10],
    );
    p.auto_runs = Some(matrix::AutoRuns::default());
    p.runs = 3;
    p.cells =
        c10k::results::schedule::expand(&p.models, &p.connections, &[], 3, Order::Interleaved);
    for run in 4..=10 {
        let index = p.cells.len();
        p.cells.push(matrix::CellSpec {
            offered: None,
            id: format!("epoll/c10/r{run}"),
            index,
            model: "epoll".into(),
            work: None,
            connections: 10,
            run,
        });
    }
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let throughput = if s.model == "epoll" {
                [
                    80.0, 120.0, 100.0, 85.0, 115.0, 90.0, 110.0, 95.0, 105.0, 82.0,
                ][s.run - 1]
                    * 1000.0
            } else {
                100_000.0 + s.run as f64
            };
            let c = Cell {
                latency_us: 100.0,
                throughput,
                ..Cell::default()
            };
            ok(s, LoadKind::Closed, c, false)
        })
        .collect();
    let data = RunData {
        dir: PathBuf::from("results/tour"),
        plan: p,
        environment: environment(),
        cells,
        superseded: Vec::new(),
    };
    let (html, _) = parsed(&data)?;
    let verdict = section_text(&html, "verdict")?;
    let want = "--runs auto: epoll at 10 connections (±";
    if !verdict.contains(want) || !verdict.contains("stopped at 10 runs") {
        return Err(format!("the verdict does not name epoll at 10: {verdict}").into());
    }
    if !verdict.contains("1 of 2 settled") {
        return Err(format!("poll settled: {verdict}").into());
    }
    let about = section_text(&html, "about")?;
    if !about.contains("3 to 10 times each, until the 95 % interval of the median") {
        return Err(format!("about: {about}").into());
    }
    Ok(())
}

// ---------------------------------------------------------------- Chromium

/// The longest Chromium (or its installation) may take before it is
/// killed: a guard against a hang, not a timing assertion.
const BROWSER_PATIENCE: Duration = Duration::from_secs(60);
fn find_chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|n| on_path(n))
}

/// Chromium, installed by `scripts/install-chromium.sh` when missing.
fn chromium() -> Result<PathBuf, Failed> {
    installed(find_chromium, "install-chromium.sh", "chromium")
}

/// Opens `page` headless, screenshots it into `png`, and returns what
/// Chromium logged.
fn screenshot(
    browser: &Path,
    page: &Path,
    png: &Path,
    size: (u32, u32),
    work: &Path,
) -> Result<String, Failed> {
    let log = png.with_extension("log");
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!(
        "--user-data-dir={}",
        work.join("profile").display()
    ))
    .arg(format!("--window-size={},{}", size.0, size.1))
    .arg(format!("--screenshot={}", png.display()))
    .arg(format!("file://{}", page.display()));
    let code = run_bounded(cmd, &log, BROWSER_PATIENCE)?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if code != Some(0) {
        return Err(format!("chromium exited with {code:?}; its log:\n{text}").into());
    }
    Ok(text)
}

/// The console messages in Chromium's log (`...:CONSOLE:1] "text", source:
/// ...`, or `CONSOLE(1)` in older versions).
fn console_messages(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Checks a PNG's signature and that it holds more than a blank page.
fn check_png(png: &Path, at_least: usize) -> Result<Vec<u8>, Failed> {
    let mut bytes = Vec::new();
    std::fs::File::open(png)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("no screenshot at {}: {e}", png.display()))?;
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(format!("{} is not a PNG", png.display()).into());
    }
    if bytes.len() < at_least {
        return Err(format!("{} is only {} bytes", png.display(), bytes.len()).into());
    }
    Ok(bytes)
}

/// Opens a run's `page` in headless Chromium with a script that counts
/// its capacity charts and the lines drawn in them: the console must hold
/// that count and nothing else, every such chart must have lines, and the
/// screenshot must be more than a blank page, with at least `least` such
/// charts. `name` keeps its files apart.
pub(crate) fn opens_silently(page: &Path, name: &str, least: i64) -> Result<(), Failed> {
    let browser = chromium()?;
    let work = scratch_in(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &format!("report-{name}"),
    )?;
    let html = std::fs::read_to_string(page)?;
    let probe = "<script>(function(){var f=document.querySelectorAll('figure[id^=\"fig-capacity\"]');\
        var drawn=0;f.forEach(function(x){if(x.querySelectorAll('svg polyline, svg path').length>3){drawn++;}});\
        console.log('C10K-CURVES figures='+f.length+' drawn='+drawn);})();</script>";
    let copy = work.join("page.html");
    std::fs::write(
        &copy,
        html.replacen("</body>", &format!("{probe}</body>"), 1),
    )?;
    let png = work.join("page.png");
    let log = screenshot(&browser, &copy, &png, (1280, 3000), &work)?;
    let messages = console_messages(&log);
    let line = messages
        .iter()
        .find_map(|m| m.split("C10K-CURVES ").nth(1))
        .ok_or_else(|| format!("the page did not count its charts; chromium's log:\n{log}"))?;
    if messages.len() != 1 {
        return Err(format!(
            "console messages beside the count:\n{}",
            messages.join("\n")
        )
        .into());
    }
    let number = |key: &str| -> i64 {
        line.split([' ', '"'])
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    };
    if number("figures") < least || number("drawn") != number("figures") {
        return Err(format!("capacity charts not all drawn: {line}").into());
    }
    check_png(&png, 20_000)?;
    Ok(())
}

fn opens_in_chromium() -> Result<(), Failed> {
    let browser = chromium()?;
    let work = scratch_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "report-chromium")?;
    // Self-test: a page that logs an error must be caught, or a silent
    // console proves nothing.
    let bad = work.join("deliberate.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"/><title>x</title></head>\
         <body><p>console self-test</p><script>console.error(\"deliberate\")</script></body></html>",
    )
    .map_err(|e| e.to_string())?;
    let log = screenshot(
        &browser,
        &bad,
        &work.join("deliberate.png"),
        (400, 300),
        &work,
    )?;
    if !console_messages(&log)
        .iter()
        .any(|m| m.contains("deliberate"))
    {
        return Err(format!(
            "the console check did not see the deliberate console.error, so it cannot \
             vouch for the report; chromium's log:\n{log}"
        )
        .into());
    }

    // Kept for a person to look at: each page and its screenshot, the
    // burst run's as target/report-screenshot.png.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .ok_or("no target directory")?;
    for (data, suffix) in [
        (burst_run(), ""),
        (throughput_run(), "-tour"),
        (churn_run(), "-accept"),
    ] {
        let page = work.join(format!("report{suffix}.html"));
        std::fs::write(&page, render(&data)?).map_err(|e| e.to_string())?;
        let png = work.join(format!("report{suffix}.png"));
        let log = screenshot(&browser, &page, &png, (1280, 4000), &work)?;
        let messages = console_messages(&log);
        if !messages.is_empty() {
            return Err(format!(
                "console messages from the {} report:\n{}",
                data.plan.experiment,
                messages.join("\n")
            )
            .into());
        }
        check_png(&png, 20_000)?;
        for (from, to) in [
            (&png, format!("report-screenshot{suffix}.png")),
            (&page, format!("report-sample{suffix}.html")),
        ] {
            let keep = target.join(to);
            std::fs::copy(from, &keep).map_err(|e| format!("{}: {e}", keep.display()))?;
        }
    }
    eprintln!(
        "report screenshots: {}",
        target.join("report-screenshot*.png").display()
    );
    Ok(())
}

// ---------------------------------------------------------------- compare

/// One side of a comparison: a timed run of epoll, poll and threads (as
/// in `tie_run`, three runs) at `connections`, threads doing `threads`
/// of its round trips, every figure of run r times `drift[r]`.
fn compare_side(
    name: &str,
    connections: &[usize],
    threads: f64,
    drift: [f64; 3],
) -> c10k::compare::input::Side {
    let p = with_runs(
        plan(
            "tour",
            WorkloadKind::Closed,
            Primary::Throughput,
            &["epoll", "poll", "threads"],
            connections,
        ),
        3,
    );
    let cells = p
        .cells
        .iter()
        .map(|s| {
            let d = drift[(s.run - 1) % 3];
            let throughput = d * match s.model.as_str() {
                "epoll" => 100_000.0,
                "poll" => 101_000.0,
                _ => 60_000.0 * threads,
            };
            let c = Cell {
                time_s: None,
                latency_us: 1e6 / throughput * s.connections as f64,
                throughput,
                connects_per_second: 20_000.0,
                user_kib: 0.1,
                virtual_kib: 0.0,
                kernel_kib: 9.0,
                server_cpu_s: 0.5,
                client_cpu_s: 0.4,
            };
            ok(s, LoadKind::Closed, c, false)
        })
        .collect();
    c10k::compare::input::Side {
        path: PathBuf::from(format!("results/{name}")),
        kind: c10k::compare::input::Kind::Run,
        data: RunData {
            dir: PathBuf::from(format!("results/{name}")),
            plan: p,
            environment: environment(),
            cells,
            superseded: Vec::new(),
        },
        histograms: BTreeMap::new(),
        warnings: Vec::new(),
    }
}

/// The page of `c10k compare` for BASE and NEW at `connections`, NEW's
/// threads 20 % slower; with the figures over `reference`'s when given.
fn compare_page(
    connections: &[usize],
    reference: Option<&str>,
) -> Result<(c10k::compare::report::Comparison, String, Parsed), Failed> {
    let base = compare_side("base", connections, 1.0, [1.0, 1.02, 0.99]);
    let new = compare_side("new", connections, 0.8, [1.01, 0.99, 1.0]);
    let settings = c10k::compare::Settings {
        margin: 0.05,
        fail_if_slower: None,
        reference: reference.map(str::to_string),
        command: "c10k compare a b".into(),
    };
    let c = c10k::compare::compare(&settings, &base, &new)
        .map_err(|e| format!("compare refused: {e}"))?;
    let html = c10k::report::compare::render(&c).map_err(|e| format!("render failed: {e:#}"))?;
    let p = parse_xml(&html).map_err(|e| format!("compare page: {e}"))?;
    Ok((c, html, p))
}

/// The text of every SVG `<text>` in `html`, trimmed.
fn svg_texts(html: &str) -> Vec<&str> {
    html.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
        .collect()
}

/// The charts of the compare page: an `<svg>` in each of its figures,
/// labelled, with its caption, none loose.
fn compare_charts(p: &Parsed, labels: &[&str]) -> Result<(), Failed> {
    if p.svgs_per_figure != vec![1; labels.len()] || p.loose_svgs != 0 {
        return Err(format!(
            "<svg> per figure {:?} ({} loose), expected one in each of {}",
            p.svgs_per_figure,
            p.loose_svgs,
            labels.len()
        )
        .into());
    }
    let aria: Vec<&str> = p
        .attributes
        .iter()
        .filter(|(el, a, _)| el == "svg" && a == "aria-label")
        .map(|(_, _, v)| v.as_str())
        .collect();
    if aria != labels {
        return Err(format!("the charts are {aria:?}, expected {labels:?}").into());
    }
    if p.captions.len() != labels.len() {
        return Err(format!("{} captions for {} figures", p.captions.len(), labels.len()).into());
    }
    Ok(())
}

fn compare_page_opens_in_chromium() -> Result<(), Failed> {
    let counts = [10, 100, 1000, 10_000, 100_000];
    let (c, html, p) = compare_page(&counts, None)?;
    // The verdict the page draws: threads slower at every count, no other
    // model.
    let slower: Vec<(&str, usize)> = c
        .cells
        .iter()
        .filter(|k| k.primary.verdict == c10k::compare::report::Verdict::Slower)
        .map(|k| (k.model.as_str(), k.connections))
        .collect();
    let expected: Vec<(&str, usize)> = counts.iter().map(|&n| ("threads", n)).collect();
    if slower != expected {
        return Err(format!("slower cells {slower:?}, expected {expected:?}").into());
    }
    compare_charts(
        &p,
        &[
            "Before and after: round trips/s against connections",
            "NEW/BASE of round trips/s against connections",
            "Latency spectra, BASE and NEW",
        ],
    )?;
    nothing_outside("compare", &html, &p)?;
    if html.contains("NaN") || html.contains("<script") {
        return Err("a NaN or a script in the compare page".into());
    }
    // Each model's two lines are told apart in the legends.
    let texts = svg_texts(&html);
    for model in ["epoll", "poll", "threads"] {
        for side in ["BASE", "NEW"] {
            let entry = format!("{model} ({side})");
            let n = texts.iter().filter(|t| **t == entry).count();
            if n != 2 {
                return Err(format!("{entry} is in {n} legends, not in both charts'").into());
            }
        }
    }
    // 15 cells, 12 spectra: the five that moved (threads) kept, three of
    // those equivalent at every quantile tested left out and said so.
    let spectra = &p.captions[2];
    // Quantiles from the runs' records: p99.9 needs 10,000 latencies a
    // run, so it is untested, and nothing is said "throughout".
    let shift = "longer at p50, p90 and p99 (p99.9 untested) for threads at 10, threads at \
                 100, threads at 1,000, threads at 10,000, threads at 100,000";
    if !spectra.contains(shift) {
        return Err(format!("the spectra do not show {shift:?}: {spectra}").into());
    }
    if !spectra.contains("Left out to keep the page readable: 3 cells (3 of 3 equivalent")
        || !spectra.contains("quantiles each run recorded")
    {
        return Err(format!("the spectra's caption: {spectra}").into());
    }
    if !p.captions[1].contains("the margin (±5 %)") {
        return Err(format!("the ratio chart's caption: {}", p.captions[1]).into());
    }

    // One connection count still gets its charts; a reference turns the
    // figure into ratios and leaves the reference out of that chart.
    let (_, _, one) = compare_page(&[100], None)?;
    compare_charts(
        &one,
        &[
            "Before and after: round trips/s against connections",
            "NEW/BASE of round trips/s against connections",
            "Latency spectra, BASE and NEW",
        ],
    )?;
    let (_, reference_html, referenced) = compare_page(&[10, 100], Some("epoll"))?;
    // epoll's lines: in the spectra, not among the ratios to itself.
    let texts = svg_texts(&reference_html);
    let has = |t: &str| texts.iter().filter(|x| **x == t).count();
    if !referenced.captions[0].contains("ratio to epoll")
        || has("epoll (NEW)") != 1
        || has("epoll (the reference)") != 1
    {
        return Err(format!("with --reference epoll: {}", referenced.captions[0]).into());
    }

    let browser = chromium()?;
    let work = scratch_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "compare-chromium")?;
    let page = work.join("compare.html");
    std::fs::write(&page, &html).map_err(|e| e.to_string())?;
    let png = work.join("compare.png");
    let log = screenshot(&browser, &page, &png, (1280, 5000), &work)?;
    let messages = console_messages(&log);
    if !messages.is_empty() {
        return Err(format!(
            "console messages from the compare page:\n{}",
            messages.join("\n")
        )
        .into());
    }
    check_png(&png, 20_000)?;
    // Kept for a person to look at.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .ok_or("no target directory")?;
    for (from, to) in [
        (&png, "compare-screenshot.png"),
        (&page, "compare-sample.html"),
    ] {
        let keep = target.join(to);
        std::fs::copy(from, &keep).map_err(|e| format!("{}: {e}", keep.display()))?;
    }
    eprintln!(
        "compare screenshot: {}",
        target.join("compare-screenshot.png").display()
    );
    Ok(())
}

/// What the page measures of itself in Chromium: the order of the study's
/// tables and the verdict, and the widest study table (the thesis's Table
/// 2, every model beside the published figures) against its box. Logged
/// to the console, which the test reads.
const MEASURE: &str = r#"<script>
const study = document.getElementById("study");
const verdict = document.getElementById("verdict");
const order = !study || !verdict ? "missing"
  : (study.compareDocumentPosition(verdict) & Node.DOCUMENT_POSITION_FOLLOWING) ? "study-first" : "verdict-first";
const tables = study ? [...study.querySelectorAll("table")] : [];
const t2 = tables.find(t => t.caption && t.caption.textContent.includes("Table 2"));
const box = t2 ? t2.parentElement : null;
const r = t2 ? t2.getBoundingClientRect() : null;
console.log("C10K-MEASURE order=" + order + " tables=" + tables.length
  + " table=" + (t2 ? t2.scrollWidth : -1) + " box=" + (box ? box.clientWidth : -1)
  + " boxscroll=" + (box ? box.scrollWidth : -1)
  + " left=" + (r ? Math.floor(r.left) : -1) + " right=" + (r ? Math.ceil(r.right) : -1)
  + " page=" + document.documentElement.clientWidth
  + " pagescroll=" + document.documentElement.scrollWidth);
</script>
"#;

/// The thesis report, with every model, opened in Chromium at 1280 px:
/// the study's own tables come before the verdict, and its Table 2, with
/// the published figures in its last columns, fits its box (no sideways
/// scrolling) and the window.
fn study_tables_first_and_readable_in_chromium() -> Result<(), Failed> {
    let browser = chromium()?;
    let work = scratch_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "report-study")?;
    let html = render(&full_thesis_run())?;
    let page = work.join("thesis.html");
    let measured = html.replacen("</body>", &format!("{MEASURE}</body>"), 1);
    std::fs::write(&page, measured).map_err(|e| e.to_string())?;
    let log = screenshot(
        &browser,
        &page,
        &work.join("thesis.png"),
        (1280, 2000),
        &work,
    )?;
    let line = console_messages(&log)
        .into_iter()
        .find_map(|m| m.split("C10K-MEASURE ").nth(1))
        .ok_or_else(|| format!("the page did not measure itself; chromium's log:\n{log}"))?;
    let value = |key: &str| -> Option<&str> {
        line.split([' ', '"'])
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    let number = |key: &str| value(key).and_then(|v| v.parse::<i64>().ok()).unwrap_or(-1);
    if value("order") != Some("study-first") {
        return Err(format!("the study's tables do not come before the verdict: {line}").into());
    }
    let (table, boxed, boxscroll) = (number("table"), number("box"), number("boxscroll"));
    if table <= 0 || boxed <= 0 {
        return Err(format!("no Table 2 in the study's tables: {line}").into());
    }
    if table > boxed || boxscroll > boxed {
        return Err(format!("Table 2 is wider than its box, behind a scrollbar: {line}").into());
    }
    let (left, right, page) = (number("left"), number("right"), number("page"));
    if left < 0 || right > page || number("pagescroll") > page {
        return Err(format!("Table 2 runs off the window: {line}").into());
    }
    Ok(())
}

/// A run whose repeats ran out while disturbed: the verdict opens with a
/// line saying so, and the ranking marks the row.
fn a_run_kept_disturbed_is_said_at_the_top_and_marked_in_its_row() -> Result<(), Failed> {
    let mut data = tie_run(3);
    let c = data
        .cells
        .iter_mut()
        .find(|c| c.cell.model == "epoll" && c.cell.connections == 10)
        .ok_or("no epoll cell")?;
    c.load.as_mut().ok_or("no load")?.limits.interference = true;
    let (html, _) = parsed(&data)?;
    let verdict = section_text(&html, "verdict")?;
    let want = "Disturbed from outside the run: 0 runs repeated; 1 still disturbed after 2 \
                repeats and counted, marked ⚠: epoll at 10.";
    if !verdict.starts_with(&format!("Verdict {want}")) {
        return Err(format!("the verdict does not open with {want:?}: {verdict}").into());
    }
    let ranking = section_text(&html, "ranking")?;
    if !ranking.contains("3 (1 disturbed ⚠)") {
        return Err(format!("the row is not marked: {ranking}").into());
    }
    Ok(())
}

/// What the page measures of its forest plots in Chromium, logged to the
/// console: how many there are, how many were drawn (a box of width and
/// more than one model's dot), the rightmost edge of any, the window and
/// the page's own width (wider: it scrolls sideways), and what the verdict
/// section shows first.
const FOREST: &str = r#"<script>
const figs = [...document.querySelectorAll("figure.forest svg")];
const drawn = figs.filter(s => s.getBoundingClientRect().width > 100
  && s.querySelectorAll("circle").length > 1).length;
const right = Math.max(0, ...figs.map(s => Math.ceil(s.getBoundingClientRect().right)));
const verdict = document.getElementById("verdict");
const first = verdict ? verdict.querySelector("figure.forest, table") : null;
const boxes = verdict ? [...verdict.querySelectorAll("div.scroll")] : [];
const tablescroll = boxes.filter(b => b.scrollWidth > b.clientWidth + 1).length;
console.log("C10K-FOREST figures=" + figs.length + " drawn=" + drawn + " right=" + right
  + " page=" + document.documentElement.clientWidth
  + " pagescroll=" + document.documentElement.scrollWidth
  + " first=" + (first ? first.tagName : "none")
  + " tables=" + boxes.length + " tablescroll=" + tablescroll);
</script>
"#;

/// The thesis run with every model, opened in Chromium at 1280 px: one
/// forest plot per connection count heads the verdict, each drawn (every
/// model's dot), within the window, and neither the page nor any verdict
/// table scrolls sideways.
fn forest_plots_answer_first_in_chromium() -> Result<(), Failed> {
    let browser = chromium()?;
    let work = scratch_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "report-forest")?;
    let data = full_thesis_run();
    let html = render(&data)?;
    let page = work.join("forest.html");
    let measured = html.replacen("</body>", &format!("{FOREST}</body>"), 1);
    std::fs::write(&page, measured).map_err(|e| e.to_string())?;
    let log = screenshot(
        &browser,
        &page,
        &work.join("forest.png"),
        (1280, 2000),
        &work,
    )?;
    let line = console_messages(&log)
        .into_iter()
        .find_map(|m| m.split("C10K-FOREST ").nth(1))
        .ok_or_else(|| format!("the page did not measure itself; chromium's log:\n{log}"))?;
    let value = |key: &str| -> Option<&str> {
        line.split([' ', '"'])
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    let number = |key: &str| value(key).and_then(|v| v.parse::<i64>().ok()).unwrap_or(-1);
    let counts = data.plan.connections.len() as i64;
    if number("figures") != counts || number("drawn") != counts {
        return Err(format!("not one drawn forest plot per count ({counts}): {line}").into());
    }
    if value("first") != Some("FIGURE") {
        return Err(format!("the verdict does not open on its plots: {line}").into());
    }
    let page_w = number("page");
    if number("right") > page_w || number("pagescroll") > page_w {
        return Err(format!("the plots or the page are wider than 1280 px: {line}").into());
    }
    // The verdict's tables fit too: none scrolls sideways in its box.
    if number("tables") < counts || number("tablescroll") != 0 {
        return Err(format!("a verdict table scrolls sideways at 1280 px: {line}").into());
    }
    Ok(())
}
