//! The environment section: the facts a reader needs before trusting the
//! numbers (kernel, CPUs and pinning, memory, limits, sysctls), read from
//! `environment.json` as recorded, and the plan's pinning. A field the file
//! lacks is shown as unknown, never guessed; fields this page does not know
//! are listed raw so nothing recorded is hidden.

use std::fmt::Write as _;

use serde_json::Value;

use crate::export::table::escape_html;
use crate::results::matrix::{Pin, RunPlan};

/// Fields shown with their own label.
const KNOWN: &[&str] = &[
    "c10k_version",
    "c10k_build",
    "kernel",
    "hostname",
    "network_namespace",
    "addresses",
    "cpus_online",
    "cpus_allowed",
    "pinned",
    "cpu_model",
    "memory_total_kib",
    "nofile_soft",
    "nofile_hard",
    "ephemeral_ports",
    "sysctls",
    "damon",
];

/// The section's HTML.
pub fn section(env: &Value, plan: &RunPlan) -> String {
    let mut facts: Vec<(&str, String)> = vec![
        ("kernel", text(env, "kernel")),
        ("CPU", text(env, "cpu_model")),
        ("CPUs online", text(env, "cpus_online")),
        (
            "CPUs allowed",
            match cpus(env.get("cpus_allowed")) {
                Some(list) => format!(
                    "{list}{}",
                    if env.get("pinned") == Some(&Value::Bool(true)) {
                        " (fewer than online: the run was pinned)"
                    } else {
                        ""
                    }
                ),
                None => "unknown".into(),
            },
        ),
        ("memory", memory(env.get("memory_total_kib"))),
        (
            "open files (soft / hard)",
            format!(
                "{} / {}",
                limit(env.get("nofile_soft")),
                limit(env.get("nofile_hard"))
            ),
        ),
        ("ephemeral ports", ports(env.get("ephemeral_ports"))),
        ("host", text(env, "hostname")),
        ("network namespace", text(env, "network_namespace")),
        (
            "addresses",
            env.get("addresses")
                .and_then(Value::as_array)
                .map(|a| {
                    let all: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
                    all.join(", ")
                })
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| "unknown".into()),
        ),
        (
            "c10k",
            match text(env, "c10k_build") {
                b if b.is_empty() || b == "unknown" => text(env, "c10k_version"),
                b => format!("{} ({b})", text(env, "c10k_version")),
            },
        ),
        (
            "DAMON",
            match env.get("damon").and_then(Value::as_array) {
                Some(a) if !a.is_empty() => {
                    let all: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
                    format!(
                        "{} (checks pages through every process that maps them: a cost \
                         that grows with fork's children)",
                        all.join(", ")
                    )
                }
                Some(_) => "none running".into(),
                None => "unknown".into(),
            },
        ),
        ("pinning", pinning(plan)),
        ("client", client(plan)),
    ];
    if let Some(obj) = env.as_object() {
        for (k, v) in obj {
            if !KNOWN.contains(&k.as_str()) {
                facts.push((k.as_str(), v.to_string()));
            }
        }
    }
    let mut out = String::from("<dl class=\"facts\">\n");
    for (k, v) in facts {
        let _ = writeln!(
            out,
            "<dt>{}</dt><dd>{}</dd>",
            escape_html(k),
            escape_html(&v)
        );
    }
    out.push_str("</dl>\n");
    match env.get("sysctls").and_then(Value::as_object) {
        Some(s) if !s.is_empty() => {
            out.push_str(
                "<table class=\"sysctls\">\n<caption>sysctls</caption>\n\
                 <thead><tr><th>name</th><th>value</th></tr></thead>\n<tbody>\n",
            );
            for (k, v) in s {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                let _ = writeln!(
                    out,
                    "<tr><td><code>{}</code></td><td><code>{}</code></td></tr>",
                    escape_html(k),
                    escape_html(&v)
                );
            }
            out.push_str("</tbody>\n</table>\n");
        }
        _ => out.push_str("<p>No sysctls were recorded.</p>\n"),
    }
    out
}

fn text(env: &Value, key: &str) -> String {
    match env.get(key) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "unknown".into(),
    }
}

fn limit(v: Option<&Value>) -> String {
    match v {
        Some(Value::Null) => "unlimited".into(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "unknown".into(),
    }
}

fn memory(v: Option<&Value>) -> String {
    match v.and_then(Value::as_u64) {
        Some(k) if k > 0 => format!("{:.1} GiB", k as f64 / 1024.0 / 1024.0),
        _ => "unknown".into(),
    }
}

fn ports(v: Option<&Value>) -> String {
    let pair = v
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect::<Vec<_>>());
    match pair.as_deref() {
        Some(&[lo, hi]) if hi >= lo && hi > 0 => {
            format!("{lo}–{hi} ({} ports)", hi - lo + 1)
        }
        _ => "unknown".into(),
    }
}

fn cpus(v: Option<&Value>) -> Option<String> {
    let list: Vec<usize> = v?
        .as_array()?
        .iter()
        .filter_map(|c| c.as_u64().map(|c| c as usize))
        .collect();
    Some(crate::sys::affinity::format_cpu_list(&list))
}

/// Where every cell's client ran; each agent's own environment is in its
/// cell's record (`load.agents.each[].environment`).
fn client(plan: &RunPlan) -> String {
    let bind = plan
        .bind
        .map_or_else(|| "loopback".to_string(), |ip| ip.to_string());
    match &plan.agents {
        None => format!("worker processes on this host; servers bound to {bind}"),
        Some(l) => {
            let templates: Vec<&str> = l.templates.iter().map(|t| t.text()).collect();
            format!(
                "{} agents started by {}; servers bound to {bind} (each agent's host, namespace, \
                 kernel and limits are in its cell's record)",
                l.agents,
                templates.join(" | ")
            )
        }
    }
}

fn pinning(plan: &RunPlan) -> String {
    let mode = match plan.pin {
        Pin::Split => "split (server and client on different CPUs)",
        Pin::Same => "same (server and client share CPUs)",
        Pin::All => "all (server and client each on every CPU, competing for them)",
        Pin::None => "none (the scheduler decides)",
    };
    let side = |c: &[usize]| {
        if c.is_empty() {
            "any CPU".to_string()
        } else {
            format!("CPUs {}", crate::sys::affinity::format_cpu_list(c))
        }
    };
    format!(
        "{mode}; server on {}, client on {}",
        side(&plan.server_cpus),
        side(&plan.client_cpus)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_fields_are_unknown() {
        assert_eq!(ports(None), "unknown");
        assert_eq!(
            ports(Some(&serde_json::json!([32768, 60999]))),
            "32768–60999 (28232 ports)"
        );
        assert_eq!(limit(Some(&Value::Null)), "unlimited");
        assert_eq!(memory(Some(&serde_json::json!(0))), "unknown");
    }
}
