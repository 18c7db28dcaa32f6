//! Each study's own table, with today's numbers from this run beside every
//! other model, and (where the study printed one) its published figures for
//! comparison, cited and labelled as theirs. A model without a measured
//! cell shows why instead of a number.
//!
//! Every table summarises a model's runs by their median, the statistic
//! the ranking and the verdict use, and says so; where the study's own
//! figure is a mean over messages (COMP 8005's average response time), that
//! is each run's figure, and the runs' median is shown. Each column of
//! times or memory is written in one unit ([`Scale`]). Memory per
//! connection from one count's cells is a figure only where a cell
//! resolves it ([`crate::analysis::memory`]), never a negative cost.

use super::cells::{cells, missing, summary};
use crate::analysis::memory::{self, CellsCost, Kind};
use crate::export::table::Table;
use crate::present::units::{format_count, Scale};
use crate::results::cell::{Metrics, Status};
use crate::results::dir::RunData;
use crate::stats::Summary;

/// The study's tables for this run (none for the tour).
pub fn tables(data: &RunData) -> Vec<Table> {
    match data.plan.experiment.as_str() {
        "thesis" => vec![thesis_times(data), peak_memory(data)],
        "thesis-lock" => vec![thesis_lock(data)],
        "interval" => vec![interval(data)],
        "interval-accept" => vec![accept(data)],
        "muller" => vec![muller(data)],
        "comp8005" => vec![comp8005_response(data), limits(data)],
        "accept" => vec![accept(data)],
        "c1m" => vec![super::c1m::table(data), limits(data)],
        _ => Vec::new(),
    }
}

/// The thesis's Table 2 (Linux): seconds to echo one message on every socket.
const THESIS_LINUX: &[(usize, f64, f64)] = &[
    (2, 0.0003, 0.0003),
    (4, 0.0004, 0.0005),
    (8, 0.0009, 0.0009),
    (16, 0.0018, 0.0018),
    (32, 0.0040, 0.0032),
    (64, 0.0064, 0.0061),
    (128, 0.0146, 0.0118),
    (200, 0.0202, 0.0181),
    (256, 0.0250, 0.0230),
    (300, 0.0279, 0.0264),
    (400, 0.0367, 0.0350),
    (512, 0.0470, 0.0435),
];

/// Muller (2006): clients, requests per client, poll ms, thread ms.
const MULLER: &[(usize, u64, f64, f64)] = &[
    (10, 1000, 213.0, 227.0),
    (50, 200, 229.0, 216.0),
    (100, 100, 212.0, 225.0),
    (150, 66, 220.0, 239.0),
    (200, 50, 223.0, 252.0),
    (300, 33, 232.0, 280.0),
    (380, 26, 250.0, 293.0),
];

/// Clients, then select, threads and epoll response times in ms.
type Comp8005Row = (usize, Option<f64>, Option<f64>, Option<f64>);

/// COMP 8005: average response time in ms (select, threads, epoll); `None`
/// where their server failed.
const COMP8005: &[Comp8005Row] = &[
    (1, Some(0.185), Some(0.202), Some(0.194)),
    (10, Some(0.232), Some(0.223), Some(0.213)),
    (100, Some(0.914), Some(0.893), Some(0.919)),
    (1000, Some(9.416), Some(9.008), Some(9.239)),
    (5000, None, Some(61.571), Some(60.871)),
    (10_000, None, Some(111.093), Some(109.907)),
    (20_000, None, Some(225.193), Some(219.196)),
    (30_000, None, Some(227.701), Some(235.034)),
    (35_000, None, None, Some(390.257)),
    (45_000, None, None, Some(403.595)),
    (100_000, None, None, Some(1461.299)),
];

/// A column's cells: a value, or what to print instead.
type Column = Vec<Result<f64, String>>;

/// `col` written in the one unit `scale` picks for its values.
fn written(col: &Column, scale: impl Fn(Vec<f64>) -> Scale) -> Vec<String> {
    let s = scale(
        col.iter()
            .filter_map(|v| v.as_ref().ok().copied())
            .collect(),
    );
    col.iter()
        .map(|v| match v {
            Ok(v) => s.format(*v),
            Err(text) => text.clone(),
        })
        .collect()
}

/// Columns of times in seconds, all in one unit (a row compares them).
fn seconds_columns(cols: &[&Column]) -> Vec<Vec<String>> {
    let all: Vec<f64> = cols
        .iter()
        .flat_map(|c| c.iter().filter_map(|v| v.as_ref().ok().copied()))
        .collect();
    let scale = Scale::seconds(all);
    cols.iter().map(|c| written(c, |_| scale)).collect()
}

/// A column of times in µs, in one unit.
fn micros_column(col: &Column) -> Vec<String> {
    written(col, Scale::micros)
}

/// The median of `f` over the measured runs of `model` at `n`, or why
/// there is none.
fn median(
    data: &RunData,
    model: &str,
    n: usize,
    f: impl Fn(&Metrics) -> Option<f64>,
) -> Result<f64, String> {
    summary(data, model, n, f)
        .map(|s| s.median)
        .ok_or_else(|| missing(data, model, n))
}

fn ratio_text(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

/// Models other than `named`, in plan order.
fn others<'a>(data: &'a RunData, named: &[&str]) -> Vec<&'a String> {
    data.plan
        .models
        .iter()
        .filter(|m| !named.contains(&m.as_str()))
        .collect()
}

fn thesis_times(data: &RunData) -> Table {
    let rest = others(data, &["threads", "select"]);
    let mut header: Vec<String> = [
        "sockets",
        "threads",
        "select",
        "difference",
        "thread/select",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(rest.iter().map(|m| m.to_string()));
    header.extend(["thesis threads", "thesis select", "thesis ratio"].map(String::from));
    let mut t = Table {
        title: "Burst time: connect every socket, send one message on each, stop when every echo is back (the thesis's Table 2 shape)".into(),
        header,
        ..Table::default()
    };
    let ns = &data.plan.connections;
    let time = |model: &str| -> Column {
        ns.iter()
            .map(|&n| median(data, model, n, |m| m.time_seconds))
            .collect()
    };
    let (th, se) = (time("threads"), time("select"));
    let difference: Column = th
        .iter()
        .zip(&se)
        .map(|(a, b)| match (a, b) {
            (Ok(a), Ok(b)) => Ok((a - b).abs()),
            _ => Err("-".into()),
        })
        .collect();
    let published = |pick: fn(&(usize, f64, f64)) -> f64| -> Column {
        ns.iter()
            .map(|&n| {
                THESIS_LINUX
                    .iter()
                    .find(|r| r.0 == n)
                    .map(pick)
                    .ok_or_else(|| "-".into())
            })
            .collect()
    };
    let (pub_th, pub_se) = (published(|r| r.1), published(|r| r.2));
    let rest_times: Vec<Column> = rest.iter().map(|m| time(m)).collect();
    // Every time in the table in one unit, so a row compares at a glance.
    let mut all: Vec<&Column> = vec![&th, &se, &difference, &pub_th, &pub_se];
    all.extend(&rest_times);
    let text = seconds_columns(&all);
    let (columns, pub_th_text, pub_se_text) = (&text[..3], &text[3], &text[4]);
    let rest_columns = &text[5..];
    for (i, &n) in ns.iter().enumerate() {
        let ok = |c: &Column| c[i].as_ref().ok().copied();
        let mut row = vec![
            n.to_string(),
            columns[0][i].clone(),
            columns[1][i].clone(),
            columns[2][i].clone(),
            ratio_text(ok(&th), ok(&se)),
        ];
        row.extend(rest_columns.iter().map(|c| c[i].clone()));
        row.extend([
            pub_th_text[i].clone(),
            pub_se_text[i].clone(),
            ratio_text(ok(&pub_th), ok(&pub_se)),
        ]);
        t.rows.push(row);
    }
    t.notes.push(format!(
        "Medians of {} runs per cell, each against a fresh server (the ranking's statistic; the difference and thread/select are of the medians). The last three columns are the thesis's published Linux figures (Table 2; Core 2 Duo 1.86 GHz, Linux 2.6), for comparison only.",
        data.plan.runs_text()
    ));
    t
}

/// VmPeak and friends at the largest socket count (the thesis's Table 3).
fn peak_memory(data: &RunData) -> Table {
    let n = data.plan.connections.iter().copied().max().unwrap_or(0);
    let mut t = Table::new(
        format!("Server memory with {n} sockets connected (the thesis's Table 3 shape, VmPeak, with every model)"),
        &["model", "VmPeak", "VmHWM", "anon PSS/conn", "virtual/conn", "processes"],
    );
    // Per connection from this count's cells: a figure only where a cell
    // resolves one (a page per process), in one unit per column.
    let per_conn = |kind: Kind| -> Vec<Option<CellsCost>> {
        let deltas = memory::deltas(data, kind);
        data.plan
            .models
            .iter()
            .map(|m| {
                let here: Vec<&memory::CellDelta> = deltas
                    .iter()
                    .filter(|d| d.model == *m && d.connections == n)
                    .collect();
                CellsCost::of(&here)
            })
            .collect()
    };
    let per_conn_text = |costs: Vec<Option<CellsCost>>| -> Vec<String> {
        let scale = Scale::kib(costs.iter().flatten().map(CellsCost::magnitude));
        costs
            .iter()
            .map(|c| c.map_or_else(|| "-".to_string(), |c| c.text(&scale, false)))
            .collect()
    };
    let user = per_conn_text(per_conn(Kind::User));
    let virt = per_conn_text(per_conn(Kind::Virtual));
    for (i, m) in data.plan.models.iter().enumerate() {
        let kib = |f: fn(&Metrics) -> Option<f64>| summary(data, m, n, f).map(|s| s.median);
        let procs = cells(data, m, n)
            .filter(|c| c.status == Status::Ok)
            .filter_map(|c| c.server.as_ref())
            .map(|s| s.loaded.processes)
            .max();
        let Some(peak) = kib(|x| x.vm_peak_kib) else {
            t.rows.push(vec![
                m.clone(),
                missing(data, m, n),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        };
        t.rows.push(vec![
            m.clone(),
            format!("{} kB", format_count(peak)),
            kib(|x| x.vm_hwm_kib).map_or("-".into(), |v| format!("{} kB", format_count(v))),
            user[i].clone(),
            virt[i].clone(),
            procs.map_or("-".into(), |p| p.to_string()),
        ]);
    }
    t.notes.push(format!(
        "Medians of {} runs, summed over the server's processes, with every socket connected. Per connection: what the connections added (connected minus idle) over them, the median of the cells that resolve it (a page per process); a cell below that reads \"below resolution\", one that resolves only a fall, \"no cost seen\". The thesis measured threads at 1,140,232 kB and select at 68,936 kB (512 threads, 2 MiB stacks); our threads use the platform's stack size (RLIMIT_STACK) unless --stack-size is given.",
        data.plan.runs_text()
    ));
    t
}

fn muller(data: &RunData) -> Table {
    let rest = others(data, &["poll", "threads"]);
    let mut header: Vec<String> = ["clients", "requests", "poll", "threads", "thread/poll"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(rest.iter().map(|m| m.to_string()));
    header.extend(["Muller poll", "Muller threads"].map(String::from));
    let mut t = Table {
        title: "Time for about 10,000 request/response pairs split over the connections (Muller's table shape)".into(),
        header,
        ..Table::default()
    };
    for &n in &data.plan.connections {
        let median = |model: &str| summary(data, model, n, |m| m.time_seconds).map(|s| s.median);
        let show = |model: &str, v: Option<f64>| {
            v.map_or_else(|| missing(data, model, n), |s| format!("{:.1} ms", s * 1e3))
        };
        let (po, th) = (median("poll"), median("threads"));
        let per = data.plan.workload.messages_for(n).unwrap_or(0);
        let mut row = vec![
            n.to_string(),
            per.to_string(),
            show("poll", po),
            show("threads", th),
            ratio_text(th, po),
        ];
        row.extend(rest.iter().map(|m| show(m, median(m))));
        match MULLER.iter().find(|r| r.0 == n) {
            Some(&(_, _, p, th)) => row.extend([format!("{p:.0} ms"), format!("{th:.0} ms")]),
            None => row.extend(["-".to_string(), "-".into()]),
        }
        t.rows.push(row);
    }
    t.notes.push(format!(
        "Medians of {} runs (the ranking's statistic), in ms; requests per connection are 10,000 divided by the connections, rounded down, as Muller sent them. Time runs from the first request to the last response (connection setup excluded). The last two columns are Muller's published figures (2006, one processor), for comparison only.",
        data.plan.runs_text()
    ));
    t
}

fn comp8005_response(data: &RunData) -> Table {
    let mut header = vec!["clients".to_string()];
    header.extend(data.plan.models.iter().cloned());
    header.extend(["COMP 8005 select", "COMP 8005 threads", "COMP 8005 epoll"].map(String::from));
    let mut t = Table {
        title: "Average response time per message, ms (the COMP 8005 table shape)".into(),
        header,
        ..Table::default()
    };
    let ms = |v: Option<f64>| v.map_or_else(|| "server error".to_string(), |v| format!("{v:.3}"));
    for &n in &data.plan.connections {
        let mut row = vec![format_count(n as f64)];
        for m in &data.plan.models {
            row.push(
                summary(data, m, n, |x| x.latency_mean_us)
                    .map_or_else(|| missing(data, m, n), |s| format!("{:.3}", s.median / 1e3)),
            );
        }
        match COMP8005.iter().find(|r| r.0 == n) {
            Some(&(_, a, b, c)) => row.extend([ms(a), ms(b), ms(c)]),
            None => row.extend(["-".to_string(), "-".into(), "-".into()]),
        }
        t.rows.push(row);
    }
    t.notes.push(
        "Each connection sends \"Gary's spamming\" 100 times, one message in flight; a run's figure is the mean round trip over all its messages (the study's average response time), and the median of the runs' figures is shown (the ranking's statistic). The last three columns are the study's published figures, for comparison only; the per-connection CSV of every cell is under cells/.".into(),
    );
    t
}

/// How far each model got, and why it stopped: the largest count each
/// held and its first failure with the cause (comp8005's test cases, c1m's
/// counts).
fn limits(data: &RunData) -> Table {
    let mut t = Table::new(
        "How many clients each model held, and what stopped it",
        &["model", "largest held", "first failure", "cause"],
    );
    for m in &data.plan.models {
        let held = data
            .cells
            .iter()
            .filter(|c| c.cell.model == *m && c.status == Status::Ok)
            .map(|c| c.cell.connections)
            .max();
        let first_fail = data
            .cells
            .iter()
            .filter(|c| c.cell.model == *m && c.status != Status::Ok)
            .min_by_key(|c| c.cell.connections);
        t.rows.push(vec![
            m.clone(),
            held.map_or("-".into(), |n| format_count(n as f64)),
            first_fail.map_or("-".into(), |c| format_count(c.cell.connections as f64)),
            first_fail
                .and_then(|c| c.reason.clone())
                .unwrap_or_else(|| "none in this run".into()),
        ]);
    }
    t
}

fn accept(data: &RunData) -> Table {
    let mut header = vec!["model".to_string()];
    for &n in &data.plan.connections {
        header.push(format!("{n} at once: conn/s"));
    }
    let last = data.plan.connections.iter().copied().max().unwrap_or(0);
    header.extend([
        format!("connect p50 ({last})"),
        format!("connect p99 ({last})"),
        format!("server CPU/conn ({last})"),
        format!("events/wait ({last})"),
    ]);
    let mut t = Table {
        title: "Accept rate: clients connect and close as fast as the server accepts (connection churn)".into(),
        header,
        ..Table::default()
    };
    let us = |v: Option<Summary>| v.map_or("-".to_string(), |s| format!("{:.0} µs", s.median));
    for m in &data.plan.models {
        let mut row = vec![m.clone()];
        for &n in &data.plan.connections {
            row.push(
                summary(data, m, n, |x| x.connects_per_second)
                    .map_or_else(|| missing(data, m, n), |s| format_count(s.median)),
            );
        }
        row.push(us(summary(data, m, last, |x| x.connect_p50_us)));
        row.push(us(summary(data, m, last, |x| x.connect_p99_us)));
        row.push(us(summary(data, m, last, |x| {
            x.server_cpu_per_connection_us
        })));
        row.push(per_wait(summary(data, m, last, |x| x.events_per_wait)));
        t.rows.push(row);
    }
    t.notes.push(format!(
        "Medians of {} runs. \"At once\" is how many connections the client keeps opening in parallel; each connection is closed as soon as it is up. Events/wait: descriptors a readiness loop's wait returned, on average over the server's life. The select(2) study reported about 40,000 accepts/s on one CPU.",
        data.plan.runs_text()
    ));
    t
}

fn per_wait(v: Option<Summary>) -> String {
    v.map_or("-".to_string(), |s| format!("{:.1}", s.median))
}

/// `thesis-lock`: the burst time of each model without and with a lock
/// taken after every read, and threads against select when both lock.
fn thesis_lock(data: &RunData) -> Table {
    let bases: Vec<&str> = ["threads", "select", "epoll", "fork"]
        .into_iter()
        .filter(|b| data.plan.models.iter().any(|m| m == b))
        .collect();
    let mut header = vec!["sockets".to_string()];
    for b in &bases {
        header.extend([b.to_string(), format!("{b}+lock"), "lock cost".into()]);
    }
    header.extend(["thread/select".to_string(), "thread/select, locked".into()]);
    let mut t = Table {
        title: "Burst time without and with a lock after every read (--shared-state): \"if we use locking after each read will threading be equal to select?\"".into(),
        header,
        ..Table::default()
    };
    let ns = &data.plan.connections;
    let time = |model: &str| -> Column {
        ns.iter()
            .map(|&n| median(data, model, n, |m| m.time_seconds))
            .collect()
    };
    let ok = |c: &Column, i: usize| c[i].as_ref().ok().copied();
    let per_base: Vec<(Column, Column)> = bases
        .iter()
        .map(|b| (time(b), time(&format!("{b}+lock"))))
        .collect();
    let all: Vec<&Column> = per_base.iter().flat_map(|(p, w)| [p, w]).collect();
    let text = seconds_columns(&all);
    let written_base: Vec<(&Vec<String>, &Vec<String>)> =
        text.chunks(2).map(|c| (&c[0], &c[1])).collect();
    let (th, se) = (time("threads"), time("select"));
    let (thl, sel) = (time("threads+lock"), time("select+lock"));
    for (i, &n) in ns.iter().enumerate() {
        let mut row = vec![n.to_string()];
        for ((plain, with), (plain_text, with_text)) in per_base.iter().zip(&written_base) {
            row.extend([
                plain_text[i].clone(),
                with_text[i].clone(),
                ratio_text(ok(with, i), ok(plain, i)),
            ]);
        }
        row.push(ratio_text(ok(&th, i), ok(&se, i)));
        row.push(ratio_text(ok(&thl, i), ok(&sel, i)));
        t.rows.push(row);
    }
    t.notes.push(format!(
        "Medians of {} runs per cell, each against a fresh server (the ranking's statistic; the ratios are of the medians). +lock: after every read the handler adds the bytes to the connection's counter in a table shared by the whole server and to a total, under one process-shared mutex (the forked children share it through shared memory). Lock cost: the locked time over the plain one; the last two columns are threads over select without and with the lock (1.00: equal).",
        data.plan.runs_text()
    ));
    t
}

/// `interval`: each loop's echo at every count, unpaced and paced.
fn interval(data: &RunData) -> Table {
    let mut header = vec!["model".to_string(), "interval".into()];
    for &n in &data.plan.connections {
        header.extend([
            format!("{n}: round trips/s"),
            format!("{n}: p50"),
            format!("{n}: p99"),
            format!("{n}: events/wait"),
        ]);
    }
    let mut t = Table {
        title: "Interval control: the loop waits at least the interval between two waits (closed-loop echo)".into(),
        header,
        ..Table::default()
    };
    // Each count's p50 and p99 columns, in one unit each.
    let latency = |n: usize, f: fn(&Metrics) -> Option<f64>| -> Vec<String> {
        let col: Column = data
            .plan
            .models
            .iter()
            .map(|m| median(data, m, n, f).map_err(|_| "-".to_string()))
            .collect();
        micros_column(&col)
    };
    let columns: Vec<(Vec<String>, Vec<String>)> = data
        .plan
        .connections
        .iter()
        .map(|&n| {
            (
                latency(n, |x| x.latency_p50_us),
                latency(n, |x| x.latency_p99_us),
            )
        })
        .collect();
    for (i, m) in data.plan.models.iter().enumerate() {
        let interval = data
            .plan
            .variants
            .iter()
            .find(|v| v.name == *m)
            .and_then(|v| v.settings.interval_ns)
            .filter(|ns| *ns > 0)
            .map_or_else(
                || "0".into(),
                |ns| crate::present::units::seconds(ns as f64 / 1e9),
            );
        let mut row = vec![m.clone(), interval];
        for (&n, (p50, p99)) in data.plan.connections.iter().zip(&columns) {
            let Some(tp) = summary(data, m, n, |x| x.throughput) else {
                row.extend([missing(data, m, n), "-".into(), "-".into(), "-".into()]);
                continue;
            };
            row.extend([
                format_count(tp.median),
                p50[i].clone(),
                p99[i].clone(),
                per_wait(summary(data, m, n, |x| x.events_per_wait)),
            ]);
        }
        t.rows.push(row);
    }
    t.notes.push(format!(
        "Medians of {} runs. Events/wait: descriptors a wait returned, on average over the server's life (connection set-up included). The select(2) study's interval control trades latency (up to one interval per round trip) for fewer, fuller waits.",
        data.plan.runs_text()
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::cell::{CellResult, ServerSide};
    use crate::results::matrix::RunPlan;

    /// A measured thesis cell of `model` at `n` whose burst took `seconds`,
    /// its server's anonymous memory `idle` then `loaded` KiB.
    fn cell(model: &str, n: usize, run: usize, seconds: f64, loaded_kib: u64) -> CellResult {
        let mut c: CellResult = serde_json::from_value(serde_json::json!({
            "version": 1, "id": format!("{model}/c{n}/r{run}"), "index": 0, "model": model,
            "connections": n, "run": run, "status": "ok", "reason": null,
            "started_unix": 0.0, "wall_seconds": 0.1, "server": null,
            "kernel_before": null, "kernel_loaded": null, "load": null,
            "per_connection_csv": null, "messages_per_connection": null
        }))
        .expect("a cell");
        let mut load = crate::client::report::example(n, n as u64, 64 * n as u64);
        load.workload = crate::client::plan::LoadKind::Burst;
        load.burst = Some(crate::client::report::Burst {
            makespan_us: vec![Some(seconds * 1e6)],
        });
        c.load = Some(load);
        let memory = |pss_anon_kib: u64| crate::metrics::tree::TreeMemory {
            processes: 1,
            pss_anon_kib,
            vm_peak_kib: 8516,
            ..Default::default()
        };
        c.server = Some(ServerSide {
            instances: 1,
            args: Vec::new(),
            cpu_user_seconds: 0.0,
            cpu_system_seconds: 0.0,
            max_rss_kib: 0,
            idle: memory(400),
            loaded: memory(loaded_kib),
            end: memory(loaded_kib),
            summaries: Vec::new(),
            idle_cpus: None,
            cpu_error_seconds: None,
        });
        c
    }

    fn thesis(cells: Vec<CellResult>) -> RunData {
        let mut plan = RunPlan::example(&["threads", "select"], &[2, 512], 3);
        plan.experiment = "thesis".into();
        RunData {
            dir: std::path::PathBuf::new(),
            plan,
            environment: serde_json::Value::Null,
            cells,
            superseded: Vec::new(),
        }
    }

    #[test]
    fn the_thesis_table_shows_medians_in_one_unit_a_column() {
        // select's runs at 2 sockets: 146 µs twice and one 700 µs outlier
        // (mean 331 µs, median 146 µs, as the ranking says).
        let data = thesis(vec![
            cell("threads", 2, 1, 47e-6, 400),
            cell("threads", 2, 2, 47e-6, 400),
            cell("threads", 2, 3, 47e-6, 400),
            cell("select", 2, 1, 146e-6, 400),
            cell("select", 2, 2, 146e-6, 400),
            cell("select", 2, 3, 700e-6, 400),
            cell("threads", 512, 1, 41.5e-3, 10_624),
            cell("select", 512, 1, 9.69e-3, 440),
        ]);
        let t = thesis_times(&data);
        let at = |row: usize, col: &str| {
            let i = t.header.iter().position(|h| h == col).expect("column");
            t.rows[row][i].clone()
        };
        assert_eq!(at(0, "select"), "0.146 ms");
        assert_eq!(at(0, "thread/select"), "0.32");
        // One unit down each column, however far apart its values.
        for col in ["threads", "select", "thesis threads"] {
            let unit = |r: usize| at(r, col).split(' ').nth(1).map(str::to_string);
            assert_eq!(unit(0), unit(1), "{col}: {} / {}", at(0, col), at(1, col));
        }
        assert_eq!(at(1, "threads"), "41.5 ms");
        assert!(
            t.notes[0].starts_with("Medians of 3 runs"),
            "{}",
            t.notes[0]
        );
    }

    #[test]
    fn table_3_shows_a_cost_only_where_a_cell_resolves_one() {
        // At 512 sockets: threads added 10,224 KiB (a cost), select 40 KiB
        // (resolved: 78 B each), and one whose memory fell shows no cost.
        let mut data = thesis(vec![
            cell("threads", 512, 1, 0.04, 10_624),
            cell("select", 512, 1, 0.01, 440),
            cell("poll", 512, 1, 0.01, 300),
            cell("epoll", 512, 1, 0.01, 402),
        ]);
        data.plan
            .models
            .extend(["poll".to_string(), "epoll".into()]);
        let t = peak_memory(&data);
        let row = |m: &str| t.rows.iter().find(|r| r[0] == m).expect("row").clone();
        assert_eq!(row("threads")[3], "20 KiB");
        assert_eq!(row("select")[3], "0.0781 KiB");
        assert!(
            row("poll")[3].starts_with("no cost seen"),
            "{:?}",
            row("poll")
        );
        assert!(
            row("epoll")[3].starts_with("below resolution"),
            "{:?}",
            row("epoll")
        );
        assert!(t.rows.iter().all(|r| !r[3].contains('-') || r[3] == "-"));
    }
}
