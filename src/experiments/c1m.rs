//! The C1M table: what holding 10,000 to 1,000,000 mostly idle connections
//! costs each model, one row per model and count: connections held and the
//! share that echoed, latency at the offered rate (corrected for
//! coordinated omission, and the uncorrected p99 beside it), how fast the
//! connections came up, memory per connection (kernel, server, client),
//! the server's CPU per message and per held connection-second, and the
//! runner's own CPU over the cell and while the client sent, so a reader
//! sees whether measuring crowded what it measured. Cost: one pass over the results per row.

use super::cells::{missing, summary};
use crate::export::table::Table;
use crate::present::units::{format_count, seconds};
use crate::results::cell::Metrics;
use crate::results::dir::RunData;

/// One row per model and connection count, medians over the measured runs.
pub(super) fn table(data: &RunData) -> Table {
    let mut t = Table::new(
        "Holding connections: per model and count, at the open loop's offered rate",
        &[
            "model",
            "connections",
            "held",
            "echoed",
            "p50",
            "p99",
            "p99.9",
            "p99 uncorrected",
            "send lag p99",
            "achieved/s",
            "all up in",
            "connects/s",
            "kernel/conn",
            "server/conn",
            "client RSS/conn",
            "server CPU/msg",
            "client CPU/msg",
            "server wake-ups/msg",
            "client wake-ups/msg",
            "server CPU/conn·s",
            "runner CPU",
            "of it in traffic",
            "SYN retrans.",
        ],
    );
    type Column = (fn(&Metrics) -> Option<f64>, fn(f64) -> String);
    let us = |v: f64| seconds(v / 1e6);
    let kib = crate::present::units::kib;
    let per = |v: f64| format!("{v:.3}");
    let columns: [Column; 21] = [
        (|m| m.held, format_count),
        (|m| m.echoed_share, |v| format!("{v:.4}")),
        (|m| m.latency_p50_us, us),
        (|m| m.latency_p99_us, us),
        (|m| m.latency_p99_9_us, us),
        (|m| m.uncorrected_p99_us, us),
        (|m| m.send_lag_p99_us, us),
        (|m| m.achieved_rate, format_count),
        (|m| m.connect_seconds, seconds),
        (|m| m.connects_per_second, format_count),
        (|m| m.kernel_kib_per_connection, kib),
        (|m| m.user_kib_per_connection, kib),
        (|m| m.client_kib_per_connection, kib),
        (|m| m.server_cpu_per_message_us, us),
        (|m| m.client_cpu_per_message_us, us),
        (|m| m.server_runs_per_message, per),
        (|m| m.client_runs_per_message, per),
        (|m| m.server_cpu_per_connection_second_us, us),
        (|m| m.runner_cpu_seconds, seconds),
        (|m| m.runner_traffic_cpu_seconds, seconds),
        (|m| m.syn_retrans, format_count),
    ];
    for model in &data.plan.models {
        for &n in &data.plan.connections {
            let mut row = vec![model.clone(), format_count(n as f64)];
            let measured = summary(data, model, n, |m| m.held).is_some();
            for (pick, show) in columns {
                row.push(match summary(data, model, n, pick) {
                    Some(s) => show(s.median),
                    None if measured => "-".into(),
                    None => missing(data, model, n),
                });
            }
            t.rows.push(row);
        }
    }
    t.notes.push(format!(
        "Medians of {} run(s). Held: sockets the server gained between idle and every connection up. \
         Echoed: the share of connections with at least one measured round trip. Latency from when \
         each message was due (uncorrected: from its write; send lag: how late the client wrote \
         it, its own share). Kernel: slab and TCP buffers, \
         system-wide, both ends of each loopback connection. Server: its processes' anonymous \
         memory (PSS) with every connection up, before any message. Client: the peak resident \
         memory of its processes, summed, each one's program pages included, over the \
         connections. Server and client CPU over the measured \
         window, per message (the server's also per connection per second of it). Wake-ups: times \
         each side's threads were put on a CPU in the window (schedstat), per message: every \
         wake-up from a sleep, and every return after being preempted. Runner CPU: c10k run's own \
         process over the whole cell (starting the servers, reading /proc, hearing the client), \
         and of it, from the client's go to its results (warm-up, window, drain): what the \
         measuring took from the CPUs it measured on. The causes of skipped and failed cells are in the next table.",
        data.plan.runs_text()
    ));
    if let Some(iv) = data.plan.workload.client_interval_seconds {
        let iv = seconds(iv);
        t.notes.push(format!(
            "Precision: the client worked in passes {iv} apart (--client-interval): each send went \
             out up to {iv} after it was due and each echo was read up to {iv} after it arrived, \
             both in the latency; a send lag past {iv} is the client's lateness. A server model \
             runs unpaced unless its name says so (epoll@1ms: `c10k serve --interval 1ms`)."
        ));
    }
    t
}
