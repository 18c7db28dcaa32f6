//! The JSON Schema of `c10k load --json`: the checked-in file must be what
//! the code generates (`C10K_BLESS=1 cargo test` rewrites it), real reports
//! of every shape must validate against that file, and broken ones must not.

use std::path::PathBuf;
use std::process::Command;

use c10k::client::report::{self, SCHEMA_VERSION};
use jsonschema::Validator;
use libtest_mimic::Failed;
use serde_json::{json, Value};

use crate::misbehaving_echo::{Fault, Misbehave};
use crate::support::{bin, Server, Started};

tests![
    checked_in_schema_is_current,
    compare_schema_is_current,
    results_schema_is_current,
    closed_loop_report_validates,
    open_loop_report_validates,
    burst_report_validates,
    churn_report_validates,
    failed_run_report_validates,
    split_run_report_validates,
    broken_reports_are_rejected,
];

/// The checked-in schema `schema/NAME.vVERSION.schema.json`.
fn checked_in_path(name: &str, version: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(format!("{name}.v{version}.schema.json"))
}

/// The checked-in schema of this version of the report.
fn schema_path() -> PathBuf {
    checked_in_path("load-report", SCHEMA_VERSION)
}

fn checked_in() -> Result<Value, Failed> {
    let p = schema_path();
    let text = std::fs::read_to_string(&p).map_err(|e| {
        format!(
            "cannot read {}: {e}; run `C10K_BLESS=1 cargo test --test it schema::` to write it",
            p.display()
        )
    })?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?)
}

/// The validator of the checked-in file (not of the generated schema: the
/// file is what users get).
fn validator() -> Result<Validator, Failed> {
    let schema = checked_in()?;
    Ok(jsonschema::validator_for(&schema).map_err(|e| format!("the schema is invalid: {e}"))?)
}

/// Every way `doc` breaks the schema, one line each.
fn violations(v: &Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("at '{}': {e}", e.instance_path()))
        .collect()
}

/// The first place two JSON values differ, as a JSON pointer.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .keys()
            .chain(y.keys().filter(|k| !x.contains_key(*k)))
            .find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, format!("{at}/{k}")),
                _ => Some(format!("{at}/{k}")),
            }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}/{i}"))),
        _ if a == b => None,
        _ => Some(if at.is_empty() { "/".into() } else { at }),
    }
}

/// The schema generated from `Report` is the checked-in one, so the file
/// can neither drift from the code nor be edited by hand.
fn checked_in_schema_is_current() -> Result<(), Failed> {
    is_current(report::schema(), &schema_path(), "src/client/report.rs")
}

/// The same of `c10k compare --json`'s schema.
fn compare_schema_is_current() -> Result<(), Failed> {
    is_current(
        c10k::compare::report::schema(),
        &compare_schema_path(),
        "src/compare/report.rs",
    )
}

/// The checked-in schema of `c10k compare --json`.
fn compare_schema_path() -> PathBuf {
    checked_in_path("compare-report", c10k::compare::report::SCHEMA_VERSION)
}

/// The same of a run's results.json.
fn results_schema_is_current() -> Result<(), Failed> {
    is_current(
        c10k::output::json::schema(),
        &results_schema_path(),
        "src/output/json.rs",
    )
}

/// The checked-in schema of a run's results.json.
fn results_schema_path() -> PathBuf {
    checked_in_path("results", c10k::output::json::SCHEMA_VERSION)
}

/// The results directory `dir` of a `c10k run`: its results.json follows
/// its checked-in schema, and results.md's capacity and cost tables say
/// what its answers say, cell for cell (each value of the JSON written
/// as the tables write it); its ranking tables name the models in the
/// summary's order. Returns results.json.
pub fn results_agree(dir: &std::path::Path) -> Result<Value, Failed> {
    use c10k::present::units::{format_count, kib, seconds};
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join("results.json"))?)?;
    validate(&results_schema_path(), &doc, "results.json")?;
    let md = std::fs::read_to_string(dir.join("results.md"))?;
    let tables = markdown_tables(&md);
    let table = |prefix: &str| -> Result<&(String, Vec<Vec<String>>), Failed> {
        tables
            .iter()
            .find(|(title, _)| title.starts_with(prefix))
            .ok_or_else(|| format!("results.md has no table \"{prefix}…\"").into())
    };
    let rate = |v: &Value| {
        v.as_f64()
            .map_or("–".into(), |v| format!("{}/s", format_count(v)))
    };
    let cell = |row: &[String], i: usize| row.get(i).cloned().unwrap_or_default();
    let agree = |what: String, md: String, json: String| -> Result<(), Failed> {
        if md == json {
            Ok(())
        } else {
            Err(format!("{what}: results.md says {md:?}, results.json {json:?}").into())
        }
    };
    for answer in doc["capacity"].as_array().into_iter().flatten() {
        let n = answer["connections"].as_f64().unwrap_or_default();
        let (_, rows) = table(&format!("Capacity at {} connections", format_count(n)))?;
        let models = answer["models"]
            .as_array()
            .ok_or("capacity answer without models")?;
        agree(
            format!("models of the capacity table at {n}"),
            rows.len().to_string(),
            models.len().to_string(),
        )?;
        for (row, m) in rows.iter().zip(models) {
            let at = |col: &str| format!("capacity at {n}, {}, {col}", m["shown"]);
            agree(
                at("model"),
                cell(row, 0),
                m["shown"].as_str().unwrap_or("").into(),
            )?;
            agree(at("held"), cell(row, 1), rate(&m["held"]))?;
            agree(at("missed"), cell(row, 2), rate(&m["missed"]))?;
            agree(at("estimate"), cell(row, 3), rate(&m["estimate"]))?;
            let call = match m["versus_best"].as_str() {
                Some("best") => "best".to_string(),
                Some("carries_less") => "carries less".into(),
                Some("equivalent") => "equivalent".into(),
                Some("inconclusive") => format!(
                    "inconclusive: {}",
                    m["versus_why"].as_str().unwrap_or_default()
                ),
                other => return Err(format!("{}: versus_best {other:?}", at("vs best")).into()),
            };
            agree(at("vs best"), cell(row, 4), call)?;
            let knee = match (m["knee"]["from"].as_f64(), m["knee"]["to"].as_f64()) {
                (Some(a), Some(b)) => format!("{} to {}/s", format_count(a), format_count(b)),
                _ => "none seen".into(),
            };
            agree(at("knee"), cell(row, 5), knee)?;
            let b = &m["bound"];
            let bound = b["capacity"]
                .as_f64()
                .map_or("– (handlers unknown)".into(), |c| {
                    format!(
                        "{}/s ({})",
                        format_count(c),
                        b["why"].as_str().unwrap_or("")
                    )
                });
            agree(at("bound"), cell(row, 6), bound)?;
            let within = if b.is_null() {
                "–".into()
            } else {
                rate(&b["within_target"])
            };
            agree(at("bound within target"), cell(row, 7), within)?;
            let share = m["share_of_bound"]
                .as_f64()
                .map_or("–".into(), |x| format!("{:.0} %", 100.0 * x));
            agree(at("of bound"), cell(row, 8), share)?;
            agree(at("slots"), cell(row, 9), m["slots"].to_string())?;
            agree(
                at("note"),
                cell(row, 10),
                c10k::export::table::escape_markdown(m["note"].as_str().unwrap_or("")),
            )?;
        }
        let Some(cost) = answer.get("cost").filter(|c| !c.is_null()) else {
            continue;
        };
        let (_, rows) = table(&format!(
            "Cost at {}/s",
            format_count(cost["rate"].as_f64().unwrap_or_default())
        ))?;
        let models = cost["models"].as_array().ok_or("cost without models")?;
        agree(
            format!("models of the cost table at {n}"),
            rows.len().to_string(),
            models.len().to_string(),
        )?;
        for (row, m) in rows.iter().zip(models) {
            let at = |col: &str| format!("cost at {n}, {}, {col}", m["shown"]);
            let secs = |v: &Value| v.as_f64().map_or("–".into(), seconds);
            agree(
                at("model"),
                cell(row, 0),
                m["shown"].as_str().unwrap_or("").into(),
            )?;
            agree(at("p99"), cell(row, 1), secs(&m["p99_seconds"]))?;
            let busy = m["server_cpus_busy"]
                .as_f64()
                .map_or("–".into(), |b| format!("{b:.3}"));
            agree(at("CPUs busy"), cell(row, 2), busy)?;
            agree(
                at("CPU/msg"),
                cell(row, 3),
                secs(&m["cpu_per_message_seconds"]),
            )?;
            let v = &m["versus_least"];
            let (least, ratio) = (
                v["least"].as_str().unwrap_or(""),
                v["ratio"].as_f64().unwrap_or(f64::NAN),
            );
            let vs = match v["call"].as_str() {
                None => "–".to_string(),
                Some("least") => "least".into(),
                Some("different") => format!("{ratio:.2}× {least}'s"),
                Some("equivalent") => format!("equivalent to {least}"),
                Some(_) => format!("{ratio:.2}× {least}'s, inconclusive"),
            };
            agree(at("vs least"), cell(row, 4), vs)?;
            let mem = &m["memory_per_connection"];
            let memory = match (mem["kib"].as_f64(), mem["at_most"].as_bool()) {
                (Some(k), Some(true)) => format!("≤ {}", kib(k)),
                (Some(k), _) => kib(k),
                _ => "–".into(),
            };
            agree(at("memory"), cell(row, 5), memory)?;
            agree(at("rounds"), cell(row, 6), m["rounds"].to_string())?;
        }
    }
    // A search is ranked by what each model held, never by pooling
    // slots of unlike offered rates; a ranking's tables list the models
    // of each count in the summary's order.
    tuning_agrees(&doc, &tables)?;
    let summary = doc["summary"]
        .as_array()
        .ok_or("results.json has no summary")?;
    if !doc["plan"]["capacity"].is_null() {
        if !summary.is_empty() || doc["capacity"].as_array().is_none_or(|a| a.is_empty()) {
            return Err(format!(
                "a capacity run's results.json ranks its slots ({} rows) or has no answers",
                summary.len()
            )
            .into());
        }
        return Ok(doc);
    }
    if doc.get("capacity").is_some() {
        return Err("results.json of a run that searched nothing has capacity answers".into());
    }
    // Every cell of each count's ranking, rendered from what results.json
    // holds alone (its plan and summary rows), is the cell results.md
    // prints; its repeats table names the same models, ranks and calls.
    let plan: c10k::results::matrix::RunPlan = serde_json::from_value(doc["plan"].clone())?;
    let standings: Vec<c10k::analysis::verdict::Standing> = summary
        .iter()
        .map(|r| serde_json::from_value(r.clone()))
        .collect::<Result<_, _>>()?;
    let mut parts: Vec<Option<String>> = standings.iter().map(|s| s.work.clone()).collect();
    parts.dedup();
    for work in parts {
        // A work profile's tables are under its own heading.
        let tables = match &work {
            None => tables.clone(),
            Some(w) => {
                let head = format!("## Work: {w}\n");
                let from = md
                    .find(&head)
                    .ok_or_else(|| format!("results.md has no section {head:?}"))?;
                let rest = &md[from + head.len()..];
                markdown_tables(&rest[..rest.find("\n## ").unwrap_or(rest.len())])
            }
        };
        let at = |n: usize| match &work {
            Some(w) => format!("{n} under {w}"),
            None => n.to_string(),
        };
        let mine: Vec<_> = standings.iter().filter(|s| s.work == work).collect();
        let mut counts: Vec<usize> = mine.iter().map(|s| s.connections).collect();
        counts.dedup();
        for n in counts {
            let here: Vec<_> = mine
                .iter()
                .filter(|s| s.connections == n)
                .map(|s| (*s).clone())
                .collect();
            let (_, json_rows) = c10k::analysis::verdict::ranking_rows(&plan, &here);
            let title = format!("{} connections:", format_count(n as f64));
            let mut titled = tables.iter().filter(|(t, _)| t.starts_with(&title));
            let (_, rows) = titled
                .next()
                .ok_or_else(|| format!("results.md has no ranking at {}", at(n)))?;
            agree(
                format!("rows of the ranking at {}", at(n)),
                rows.len().to_string(),
                json_rows.len().to_string(),
            )?;
            for (i, (md_row, json_row)) in rows.iter().zip(&json_rows).enumerate() {
                for (j, want) in json_row.iter().enumerate() {
                    agree(
                        format!("the ranking at {}, row {i}, column {j}", at(n)),
                        cell(md_row, j),
                        c10k::export::table::escape_markdown(want),
                    )?;
                }
            }
            // Its repeats: the same models, ranks and calls.
            let (_, repeats) = titled
                .next()
                .ok_or_else(|| format!("results.md has no repeats at {}", at(n)))?;
            for (i, (md_row, json_row)) in repeats.iter().zip(&json_rows).enumerate() {
                for (j, k) in [(0, 0), (1, 1), (6, 3)] {
                    agree(
                        format!("the repeats at {}, row {i}, column {j}", at(n)),
                        cell(md_row, j),
                        c10k::export::table::escape_markdown(&json_row[k]),
                    )?;
                }
            }
        }
    }
    Ok(doc)
}

/// The tuning table of results.md, cell for cell, from results.json's
/// `tuned` answers (where the run tuned or sized a pool).
fn tuning_agrees(doc: &Value, tables: &[(String, Vec<Vec<String>>)]) -> Result<(), Failed> {
    use c10k::present::units::{format_count, sig3};
    let Some(tuned) = doc["tuned"].as_array().filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    let (title, rows) = tables
        .iter()
        .find(|(t, _)| t.starts_with("Each model at its best") || t.starts_with("Pools sized"))
        .ok_or("results.json has tuned answers and results.md no tuning table")?;
    let searched = title.starts_with("Each model at its best");
    if rows.len() != tuned.len() {
        return Err(format!(
            "the tuning table has {} rows, results.json {} answers",
            rows.len(),
            tuned.len()
        )
        .into());
    }
    let dash = || "–".to_string();
    for (row, t) in rows.iter().zip(tuned) {
        let figure: c10k::results::matrix::Primary = serde_json::from_value(t["figure"].clone())?;
        let f = |v: &Value| v.as_f64().map_or_else(dash, |v| figure.format(v));
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let defaults = match text(&t["defaults"]) {
            d if d.is_empty() => dash(),
            d => d,
        };
        let ratio = match (t["ratio"].as_f64(), t["interval"].as_array()) {
            (Some(x), Some(i)) => format!(
                "{}× [{}, {}]",
                sig3(x),
                sig3(i[0].as_f64().unwrap_or(f64::NAN)),
                sig3(i[1].as_f64().unwrap_or(f64::NAN))
            ),
            (Some(x), None) => format!("{}×", sig3(x)),
            _ => dash(),
        };
        let tasks = match (t["threads"].as_f64(), t["processes"].as_f64()) {
            (Some(a), Some(b)) => format!("{}, {}", format_count(a), format_count(b)),
            _ => dash(),
        };
        let why = match t["stopped"].as_str() {
            Some(s) => format!("{} (stopped by {s})", text(&t["why"])),
            None => text(&t["why"]),
        };
        let mut want = vec![
            text(&t["model"]),
            format_count(t["connections"].as_f64().unwrap_or_default()),
            text(&t["kept"]),
            defaults,
        ];
        if searched {
            want.extend([f(&t["default_figure"]), f(&t["best_figure"]), ratio]);
            if !doc["plan"]["capacity"].is_null() {
                let a = &t["at_target"];
                let rate = |v: &Value| {
                    v.as_f64()
                        .map_or_else(dash, |v| format!("{}/s", format_count(v)))
                };
                let defaults = match a["defaults"].as_str() {
                    Some("missed") => "missed it",
                    Some("held") => "held it",
                    Some("undecided") => "undecided",
                    _ => "not measured",
                };
                want.push(if a.is_null() {
                    dash()
                } else {
                    format!(
                        "{}, {} (defaults {defaults})",
                        rate(&a["held"]),
                        rate(&a["missed"])
                    )
                });
            }
            want.push(t["tried"].to_string());
        }
        want.extend([tasks, why]);
        let want: Vec<String> = want
            .iter()
            .map(|w| c10k::export::table::escape_markdown(w))
            .collect();
        if *row != want {
            return Err(format!(
                "the tuning table of {}: results.md {row:?}, results.json {want:?}",
                t["model"]
            )
            .into());
        }
    }
    Ok(())
}

/// Every Markdown table of `md`: its `### ` title and its rows' cells.
fn markdown_tables(md: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = md.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let Some(title) = l.strip_prefix("### ") else {
            continue;
        };
        let rows: Vec<Vec<String>> = lines[i + 1..]
            .iter()
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| {
                let inner = l.trim().trim_start_matches("| ").trim_end_matches(" |");
                inner
                    .split(" | ")
                    .map(|c| c.trim_end_matches(" |").to_string())
                    .collect()
            })
            .collect();
        out.push((title.to_string(), rows));
    }
    out
}

/// `doc` follows the checked-in schema at `p`.
fn validate(p: &std::path::Path, doc: &Value, what: &str) -> Result<(), Failed> {
    let schema: Value = serde_json::from_slice(&std::fs::read(p).map_err(|e| {
        format!(
            "cannot read {}: {e}; run `C10K_BLESS=1 cargo test --test it schema::` to write it",
            p.display()
        )
    })?)?;
    let v =
        jsonschema::validator_for(&schema).map_err(|e| format!("the schema is invalid: {e}"))?;
    let bad = violations(&v, doc);
    if !bad.is_empty() {
        return Err(format!("{what} breaks its schema: {bad:?}").into());
    }
    Ok(())
}

/// Checks a `c10k compare --json` document against its checked-in schema.
pub fn validate_compare(doc: &Value) -> Result<(), Failed> {
    validate(&compare_schema_path(), doc, "the comparison")
}

/// `generated` is the schema at `p` (`C10K_BLESS=1` writes it there);
/// `home` is the file that holds its SCHEMA_VERSION.
fn is_current(generated: schemars::Schema, p: &std::path::Path, home: &str) -> Result<(), Failed> {
    let generated = serde_json::to_value(generated)?;
    if std::env::var_os("C10K_BLESS").is_some_and(|v| v == "1") {
        let mut text = serde_json::to_string_pretty(&generated)?;
        text.push('\n');
        std::fs::create_dir_all(p.parent().ok_or("no parent")?)?;
        std::fs::write(p, text)?;
        eprintln!("C10K_BLESS=1: wrote {}", p.display());
        return Ok(());
    }
    let text = std::fs::read_to_string(p).map_err(|e| {
        format!(
            "cannot read {}: {e}; run `C10K_BLESS=1 cargo test --test it schema::` to write it",
            p.display()
        )
    })?;
    let file: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
    if let Some(at) = first_difference(&generated, &file, String::new()) {
        return Err(format!(
            "{} is not the schema the code generates (first difference at {at}).\n\
             If the format changed on purpose, run `C10K_BLESS=1 cargo test --test it schema::` \
             to rewrite it, review the diff, and bump SCHEMA_VERSION in {home} \
             if a field changed meaning or disappeared.",
            p.display()
        )
        .into());
    }
    Ok(())
}

/// Runs `c10k load TARGET ARGS… -q --json FILE` and returns the report,
/// after checking it against the checked-in schema.
fn validated_report(target: &str, name: &str, args: &[&str]) -> Result<Value, Failed> {
    validated_report_in(Command::new(bin()), target, name, args)
}

/// [`validated_report_in`] of a run that exits 0.
fn validated_report_in(
    cmd: Command,
    target: &str,
    name: &str,
    args: &[&str],
) -> Result<Value, Failed> {
    validated_report_exiting(cmd, target, name, args, 0)
}

/// [`validated_report`] with `cmd` standing for the c10k binary, which
/// must exit with `code`.
fn validated_report_exiting(
    mut cmd: Command,
    target: &str,
    name: &str,
    args: &[&str],
    code: i32,
) -> Result<Value, Failed> {
    let path = std::env::temp_dir().join(format!("c10k-schema-{name}-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let o = cmd
        .arg("load")
        .arg(target)
        .args(args)
        .arg("-q")
        .arg("--json")
        .arg(&path)
        .output()?;
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    if o.status.code() != Some(code) {
        return Err(format!(
            "c10k load {args:?}: exit {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )
        .into());
    }
    let doc: Value = serde_json::from_str(&text.map_err(|e| format!("no JSON: {e}"))?)?;
    let errors = violations(&validator()?, &doc);
    if !errors.is_empty() {
        return Err(format!(
            "the {name} report breaks {}:\n  {}",
            schema_path().display(),
            errors.join("\n  ")
        )
        .into());
    }
    Ok(doc)
}

fn epoll() -> Result<Server, Failed> {
    match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(r) => Err(r.into()),
    }
}

/// `doc[key]` must hold an object (the part of the schema this run fills
/// was exercised) or be null.
fn expect_filled(doc: &Value, key: &str, filled: bool) -> Result<(), Failed> {
    if doc[key].is_object() == filled && (filled || doc[key].is_null()) {
        Ok(())
    } else {
        Err(format!(
            "{key}: {} (expected it {})",
            doc[key],
            if filled { "filled" } else { "null" }
        )
        .into())
    }
}

fn closed_loop_report_validates() -> Result<(), Failed> {
    let server = epoll()?;
    let doc = validated_report(
        &server.addr.to_string(),
        "closed",
        &["-c", "4", "-n", "50", "--depth", "2", "--idle", "2"],
    )?;
    expect_filled(&doc, "open_loop", false)?;
    expect_filled(&doc, "burst", false)?;
    expect_filled(&doc, "tcp", true)
}

fn open_loop_report_validates() -> Result<(), Failed> {
    let server = epoll()?;
    let doc = validated_report(
        &server.addr.to_string(),
        "open",
        &["-c", "4", "-r", "1000", "-d", "0.3s"],
    )?;
    expect_filled(&doc, "open_loop", true)?;
    expect_filled(&doc, "burst", false)
}

fn burst_report_validates() -> Result<(), Failed> {
    let server = epoll()?;
    let doc = validated_report(
        &server.addr.to_string(),
        "burst",
        &["--burst", "--rounds", "2", "-c", "20"],
    )?;
    expect_filled(&doc, "burst", true)?;
    expect_filled(&doc, "open_loop", false)
}

fn churn_report_validates() -> Result<(), Failed> {
    let server = epoll()?;
    validated_report(
        &server.addr.to_string(),
        "churn",
        &["--churn", "--churn-echo", "-c", "2", "-n", "10"],
    )?;
    Ok(())
}

/// Every connection refused: empty percentiles, errors counted, warnings
/// (the run has no result: exit 5, its report written all the same).
fn failed_run_report_validates() -> Result<(), Failed> {
    let bad = Misbehave::start(Fault::Refuse);
    let doc = validated_report_exiting(
        Command::new(bin()),
        &bad.addr.to_string(),
        "refused",
        &["-c", "3", "-n", "1"],
        5,
    )?;
    if doc["errors"]["refused"] != 3 {
        return Err(format!("errors {}", doc["errors"]).into());
    }
    Ok(())
}

/// Under a hard open-files limit of 200, 300 connections are spread over
/// worker processes: the merged report validates too.
fn split_run_report_validates() -> Result<(), Failed> {
    let server = epoll()?;
    let mut sh = Command::new("sh");
    sh.args([
        "-c",
        r#"ulimit -Sn 200 && ulimit -Hn 200 && exec "$@""#,
        "sh",
        bin(),
    ]);
    let doc = validated_report_in(
        sh,
        &server.addr.to_string(),
        "split",
        &["-c", "300", "-n", "5"],
    )?;
    if doc["client"]["processes"].as_u64().unwrap_or(0) < 2 {
        return Err(format!("not split: {}", doc["client"]).into());
    }
    Ok(())
}

/// A report the schema must reject: what was done to a valid one.
type Breakage = (&'static str, fn(&mut Value));

const BREAKAGES: &[Breakage] = &[
    ("a required top-level field removed", |d| {
        remove(d, "messages")
    }),
    ("a nested required field removed", |d| {
        remove(&mut d["latency_us"], "p99")
    }),
    ("an environment field removed", |d| {
        remove(&mut d["environment"], "kernel")
    }),
    ("a number as a string", |d| d["messages"] = json!("1000")),
    ("a negative count", |d| d["bytes_sent"] = json!(-1)),
    ("a fraction where an integer belongs", |d| {
        d["connections"]["established"] = json!(2.5)
    }),
    ("null where a number belongs", |d| {
        d["measured_seconds"] = Value::Null
    }),
    ("an object where a list belongs", |d| {
        d["warnings"] = json!({})
    }),
    ("a TCP counter as a string", |d| {
        d["tcp"]["syn_retrans"] = json!("0")
    }),
    ("environment null", |d| d["environment"] = Value::Null),
    ("an unknown top-level field", |d| d["latency"] = json!({})),
    ("an unknown workload", |d| d["workload"] = json!("bogus")),
    ("another schema version", |d| {
        d["schema_version"] = json!(SCHEMA_VERSION + 1)
    }),
    ("an error count as a string", |d| {
        d["errors"]["reset"] = json!("0")
    }),
];

fn remove(v: &mut Value, key: &str) {
    if let Some(o) = v.as_object_mut() {
        o.remove(key);
    }
}

/// Each breakage of a real, valid report is caught, so the validation tests
/// above can fail.
fn broken_reports_are_rejected() -> Result<(), Failed> {
    let server = epoll()?;
    let good = validated_report(&server.addr.to_string(), "good", &["-c", "2", "-n", "10"])?;
    let v = validator()?;
    let missed: Vec<&str> = BREAKAGES
        .iter()
        .filter(|(_, brk)| {
            let mut doc = good.clone();
            brk(&mut doc);
            v.is_valid(&doc)
        })
        .map(|(what, _)| *what)
        .collect();
    if !missed.is_empty() {
        return Err(format!("the schema accepts {}", missed.join("; ")).into());
    }
    Ok(())
}
