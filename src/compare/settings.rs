//! What differs between the two sides besides the code under test: every
//! setting of the plan (`plan.json` less its cells, as each record carries
//! it: [`crate::results::identity::settings`]) and of the machine
//! (`environment.json`) that is not equal on both, by its dotted name; and
//! whether the machine itself differs, which a reader must see before any
//! ratio. What must be equal for cells to be compared at all (the figure
//! that ranks, the workload's kind, depth and rate) is the [`frame`].

use serde_json::Value;

use crate::results::identity;
use crate::results::matrix::RunPlan;

/// A setting with another value on each side.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Difference {
    /// Dotted name: `workload.duration_seconds`, `environment.kernel`.
    pub key: String,
    /// The value on each side as JSON text (`null`: absent).
    pub base: String,
    pub new: String,
}

/// Plan keys that say how a run was repeated or reported, not what a cell
/// measures: differences there are not named.
const NOT_SETTINGS: &[&str] = &[
    "runs",
    "auto_runs",
    "order",
    "margin",
    "repeat_disturbed",
    "refused",
    "models",
    "connections",
    "work",
    "version",
    "experiment",
];

/// Environment keys that describe the machine and its limits.
const MACHINE: &[&str] = &[
    "c10k_version",
    "c10k_build",
    "kernel",
    "hostname",
    "cpu_model",
    "cpus_online",
    "cpus_allowed",
    "memory_total_kib",
    "nofile_soft",
    "nofile_hard",
    "sysctls",
];

/// Every setting that differs, plan first, then the machine.
pub fn differences(
    base: &RunPlan,
    base_env: &Value,
    new: &RunPlan,
    new_env: &Value,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let (mut a, mut b) = (identity::settings(base), identity::settings(new));
    for v in [&mut a, &mut b] {
        if let Value::Object(m) = v {
            for k in NOT_SETTINGS {
                m.remove(*k);
            }
            // A search's handlers follow from its models, named already;
            // the host's stalls and round trip are measurements.
            if let Some(Value::Object(c)) = m.get_mut("capacity") {
                for k in ["handlers", "stalls", "round_trip"] {
                    c.remove(k);
                }
            }
        }
    }
    walk("", &a, &b, &mut out);
    let pick = |env: &Value| {
        let mut m = serde_json::Map::new();
        for k in MACHINE {
            if let Some(v) = env.get(*k) {
                m.insert((*k).to_string(), v.clone());
            }
        }
        Value::Object(m)
    };
    if !base_env.is_null() && !new_env.is_null() {
        walk("environment", &pick(base_env), &pick(new_env), &mut out);
    }
    out
}

/// Differences between `a` and `b` under `path`, leaf by leaf.
fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<Difference>) {
    let name = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                walk(&name(k), v, y.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, v) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                walk(&name(k), &Value::Null, v, out);
            }
        }
        _ if identity::same(a, b) => {}
        _ => out.push(Difference {
            key: path.to_string(),
            base: a.to_string(),
            new: b.to_string(),
        }),
    }
}

/// One line when the two sides ran on different machines (another CPU
/// model, count of CPUs or memory; a hostname alone differs between
/// containers of one host): every ratio then holds the machine too.
pub fn other_machine(base_env: &Value, new_env: &Value) -> Option<String> {
    let describe = |e: &Value| {
        format!(
            "{} ({} CPUs, {})",
            e.get("cpu_model").and_then(Value::as_str).unwrap_or("?"),
            e.get("cpus_online").map_or("?".into(), Value::to_string),
            e.get("memory_total_kib")
                .and_then(Value::as_f64)
                .map_or("?".into(), crate::present::units::kib)
        )
    };
    let differs = ["cpu_model", "cpus_online", "memory_total_kib"]
        .iter()
        .any(|k| {
            base_env.get(*k).is_some()
                && new_env.get(*k).is_some()
                && base_env.get(*k) != new_env.get(*k)
        });
    differs.then(|| {
        format!(
            "⚠ other machine: {} → {}: every ratio below holds the change of machine as well",
            describe(base_env),
            describe(new_env)
        )
    })
}

/// Why the two runs cannot be compared cell by cell, when they measured
/// different things: another figure ranks them, another workload, depth
/// or rate, a fixed amount of work against a timed window.
pub fn frame(base: &RunPlan, new: &RunPlan) -> Option<String> {
    let b = &base.workload;
    let n = &new.workload;
    let describe = |p: &RunPlan| {
        format!(
            "{} ({} loop, depth {}{}{})",
            p.figure_label(),
            p.workload.load_kind(),
            p.workload.depth(),
            p.workload
                .rate
                .map_or_else(String::new, |r| format!(", {}", r.text())),
            if p.workload.messages_for(1).is_some() {
                ", a fixed number of messages"
            } else {
                ""
            }
        )
    };
    if let Some(why) = searches(base, new) {
        return Some(why);
    }
    if b.protocol != n.protocol {
        return Some(format!(
            "BASE spoke {}, NEW {}: an echo and an HTTP request are different work, so one protocol is never compared with the other",
            b.protocol, n.protocol
        ));
    }
    let same = base.primary == new.primary
        && b.load_kind() == n.load_kind()
        && b.depth() == n.depth()
        && b.rate == n.rate
        && b.messages_for(1).is_some() == n.messages_for(1).is_some();
    (!same).then(|| {
        format!(
            "BASE measured {}, NEW {}: their cells measure different things",
            describe(base),
            describe(new)
        )
    })
}

/// Why two runs' capacity searches cannot be compared: one searched and
/// the other did not, or they searched against other targets.
fn searches(base: &RunPlan, new: &RunPlan) -> Option<String> {
    match (&base.capacity, &new.capacity) {
        (Some(a), Some(b)) if a.slo != b.slo => Some(format!(
            "BASE searched the capacity at {}, NEW at {}: compare searches against the same targets",
            a.slo.describe(),
            b.slo.describe()
        )),
        (Some(a), None) => Some(format!(
            "BASE is a capacity search (--slo, at {}), NEW is not: compare a search with a search",
            a.slo.describe()
        )),
        (None, Some(b)) => Some(format!(
            "NEW is a capacity search (--slo, at {}), BASE is not: compare a search with a search",
            b.slo.describe()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_differing_setting_is_named_and_bookkeeping_is_not() {
        let a = RunPlan::example(&["epoll"], &[10], 3);
        let mut b = RunPlan::example(&["epoll", "poll"], &[10, 100], 5);
        b.workload.message_bytes = 512;
        b.server_settings.interval_ns = Some(1_000_000);
        let env_a = json!({"kernel": "6.1", "cpu_model": "X", "cpus_online": 2, "hostname": "h"});
        let env_b = json!({"kernel": "6.8", "cpu_model": "X", "cpus_online": 2, "hostname": "h"});
        let keys: Vec<String> = differences(&a, &env_a, &b, &env_b)
            .into_iter()
            .map(|d| d.key)
            .collect();
        assert_eq!(
            keys,
            [
                "server_settings.interval_ns",
                "workload.message_bytes",
                "environment.kernel"
            ]
        );
        assert_eq!(other_machine(&env_a, &env_b), None);
        let env_c = json!({"cpu_model": "Y", "cpus_online": 4});
        let loud = other_machine(&env_a, &env_c).expect("another machine");
        assert!(loud.starts_with("⚠ other machine: X (2 CPUs"), "{loud}");
    }

    #[test]
    fn echo_is_never_compared_with_http() {
        let a = RunPlan::example(&["epoll"], &[10], 3);
        let mut b = a.clone();
        b.workload.protocol = crate::protocol::Protocol::Http;
        let why = frame(&a, &b).expect("refused");
        assert!(why.starts_with("BASE spoke echo, NEW http:"), "{why}");
    }

    #[test]
    fn another_loop_is_another_frame() {
        let a = RunPlan::example(&["epoll"], &[10], 3);
        let mut b = a.clone();
        assert_eq!(frame(&a, &b), None);
        b.workload.rate = Some(crate::results::matrix::Rate::Total(1000.0));
        b.primary = crate::results::matrix::Primary::Latency;
        let why = frame(&a, &b).expect("refused");
        assert!(
            why.contains("round trips") || why.contains("closed loop"),
            "{why}"
        );
    }
}
