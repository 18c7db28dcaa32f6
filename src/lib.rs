//! c10k: which concurrency model should a network server use? Measured.
//!
//! The architecture in a page.
//!
//! ```text
//!  main.rs ── commands/ (each command's driver: flags in, Exit out)
//!     │
//!  cli.rs (raw flags, clap) ── plan/ (validated settings)
//!                                           │
//!        ┌──────────────┬─────────────┬─────┴──────┬───────────┬────────────┐
//!     server/        client/        runner/      micro/      herd/       conform/
//!   (c10k serve)   (c10k load)    (c10k run)   (c10k micro) (c10k herd) (c10k conform)
//!        │              │      cells, repeats, progress
//!        │              │             │
//!        │              │      child/ (a server child: start, READY, stop, reap)
//!        │              │             │
//!        └── metrics/ (a process tree's CPU, memory, sockets; kernel memory)
//!                                     │
//!        results/ (the plan, cell records, results.jsonl + plan.json, lock)
//!                                     │
//!        analysis/ (ranking, verdict, memory slopes, bounds, disturbed runs)
//!                                     │
//!                compare/ (c10k compare, run --baseline: two results, cell by cell)
//!                                     │
//!      output/ (every export of a run: JSON under its schema, CSV, Markdown) ── report/ (HTML, SVG)
//!
//!  Under the engines: export/ (writing a file safely, tables), present/
//!  (numbers and lists for people, a model's look in a chart), stats/
//!  (medians, intervals, fits), env/; sys/ under everything: the only home
//!  of `unsafe`. No two modules import each other, even through others,
//!  and no two files of one folder do (tests at the end of lib.rs).
//! ```
//!
//! Flags become settings once: [`cli`] holds the raw flags and [`plan`]
//! turns them into validated settings; nothing below sees a flag (a test in
//! [`plan`] holds every other file to that).
//!
//! **The path of one measurement** (`c10k run`, one cell): [`plan::run`]
//! expands the preset and the flags into a [`results::matrix::RunPlan`];
//! [`runner::execute`](mod@runner::execute) starts the server as a child through the one
//! launcher, [`child::server`] (`c10k serve`, which prints `READY ip:port`
//! once it accepts; [`server::run`]), waits until the server holds the
//! connections ([`metrics::tree`]), and drives it with the load generator
//! ([`client::run`], one event loop per thread in [`client::engine`], several
//! processes or agents elsewhere through [`client::agents`]; a loop's,
//! a process's and a run's figures are one type, merged one way, in
//! [`client::measured`]). Samples
//! of the server's process tree and the kernel's memory are taken at each
//! end of the window; the client says what limited the figure
//! ([`client::limit`], [`analysis::verdict`]). The cell becomes one line of
//! `results.jsonl` ([`results::dir`]); [`output`] and [`report`] read
//! only those lines, so a report can be made again from a directory.
//!
//! **The one file to open for each mechanism:**
//!
//! | mechanism | file |
//! |---|---|
//! | the echo state machine every model runs | `server/conn.rs` |
//! | accepting, `--max-conns`, the EMFILE pause | `server/accept.rs` |
//! | a pool's threads set up before READY, and the limits checked first | `server/start.rs` |
//! | the readiness loop of busy, select, poll, sigio, epoll, epoll-workers, hybrid | `server/reactor.rs` |
//! | how busy, select, poll, sigio, epoll wait (one waiter each) | `server/busy.rs`, `select.rs`, `poll.rs`, `sigio.rs`, `epoll.rs` |
//! | interval control (`--interval`) | `server/pace.rs` |
//! | the shared table and lock of `--shared-state` | `server/shared_state.rs`, `sys/lock.rs` |
//! | a model with more serve flags (`--variant`) | `results/matrix.rs` (`Variant`, `resolve`) |
//! | a model and its trade-offs | `server/<model>.rs`, registry in `server/mod.rs` |
//! | starting and stopping a server child (runner, tests, benches) | `child/server.rs` |
//! | a server of the user's (`--server`) or already running (`--target`) | `child/foreign.rs` |
//! | the peers: Go, Node.js, asyncio, uvloop, Erlang, socat servers | `experiments/peers.rs`, `peers/` |
//! | the conformance suite, for any echo server and every model's tests | `conform/` (checks in `traffic.rs`, `process.rs`) |
//! | a process tree's CPU, memory and sockets | `metrics/tree.rs`, `metrics/cpu.rs` |
//! | the kernel's task limits | `env/tasks.rs` |
//! | the client's event loop, pacing, coordinated omission | `client/engine.rs` |
//! | a load plan and its command line | `client/plan.rs` |
//! | spreading the client over processes and agents (launchers, protocol) | `client/agents.rs`, `agent.rs`, `launch.rs`, `protocol.rs` |
//! | merging loops' and worker processes' measurements (histograms added) | `client/measured.rs` |
//! | limits checked before a run | `client/preflight.rs` |
//! | what limited a figure | `client/limit.rs`, `analysis/verdict.rs` |
//! | results, resume, locking, which plan a record belongs to | `results/dir.rs`, `lock.rs`, `identity.rs` |
//! | the ranking, the verdict, memory per connection, the bound of the work | `analysis/summary.rs`, `verdict.rs`, `memory.rs`, `bound.rs` |
//! | repeating disturbed runs, `--runs auto`, the cells' order | `runner/mod.rs`, `auto.rs`, `analysis/settled.rs`, `results/matrix.rs` |
//! | resident slots: the servers of a count up together, the load moving between them in shuffled rounds | `runner/resident.rs` (the round order: `results/schedule.rs`) |
//! | looks of rounds over slots (`--runs auto`), each read at Pocock's level | `runner/mod.rs` (`next_look`), `stats/looks.rs` |
//! | capacity at a target (`--slo`): the room, and what lives outside it | `capacity/mod.rs` |
//! | the capacity search: each rate's call, the next rate and round, what it found, the knee | `capacity/search.rs` (target data: `results/slo.rs`) |
//! | the queueing bound beside a capacity | `capacity/queue.rs` |
//! | the capacity and cost tables and their answers as data | `capacity/tables.rs` (`answers`); the curves: `report/curves.rs` |
//! | tuning (`--tune`): the room, and what lives outside it | `tuning/mod.rs` |
//! | the search of a model's knobs (ladders, Little's law, the climb) | `tuning/climb.rs`; run in slots by `runner/tuner.rs` |
//! | what tuning kept, as data and as its table | `tuning/answers.rs` (recorded in `results/tuned.rs`) |
//! | one server's settings, from the plan to the child's flags | `server/settings.rs` (flags parsed in `plan/mod.rs`, `serve_settings`) |
//! | each model's knobs and their ranges (`c10k models --knobs`) | `server/knobs.rs` |
//! | the paired per-round ratio (ranking, tuning, `compare --reference`) | `stats/paired.rs` (`per_round`) |
//! | results.json and its schema (every answer as data) | `output/json.rs`, `schema/results.v3.schema.json` |
//! | comparing two runs (matching cells, the test, the verdict) | `compare/cells.rs` |
//! | a run's plan checked whole, made from flags or read back from plan.json | `plan/check.rs` |
//! | starting a thread or a process that may fail (one line, the rest stopped) | `client/spawn.rs` |
//! | a child's output, read without outliving its stop | `child/pipes.rs` |
//! | a signal that stops a command (one flag per process) | `sys/signals.rs` |
//! | writing an output file safely | `export/target.rs` |
//! | shell completions and the man page (`c10k completions`, `c10k man`), made from the flags | `commands/man.rs`, from `cli.rs` |
//! | each command from its flags to its outputs and exit code (`Exit`); `run --baseline`'s gate | `commands/` (`run.rs`, `compare.rs`) |
//! | `unsafe` (select past FD_SETSIZE, fork, wait4, shared memory, process-shared locks, O_ASYNC signals, pinning) | `sys/` |
//!
//! [`server`] is the echo server: a [`server::Model`] per concurrency model
//! (thread per connection, process per connection, pre-forked pool, busy
//! polling, select, poll, signal-driven I/O, epoll, epoll with worker
//! threads, io_uring, tokio, poll + thread pool), all running one connection state machine ([`server::conn`]) and
//! one accept policy ([`server::accept`]), and the readiness models one loop
//! ([`server::reactor`]), so a measurement sees only how each waits and who
//! runs the handler. `c10k serve` prints a one-line JSON summary when it
//! stops (SIGTERM or SIGINT).

// `unsafe` is refused everywhere but in `sys`, and there every block must
// say why it is sound.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]
// These pages are for contributors, built with `cargo doc
// --document-private-items`, where a link to a crate-private item resolves.
#![allow(rustdoc::private_intra_doc_links)]

pub mod analysis;
pub mod capacity;
pub mod child;
pub mod cli;
pub mod client;
pub mod commands;
pub mod compare;
pub mod conform;
pub mod env;
pub mod experiments;
pub mod export;
pub mod herd;
pub mod metrics;
pub mod micro;
pub mod output;
pub mod plan;
pub mod present;
pub mod protocol;
pub mod report;
pub mod results;
pub mod runner;
pub mod server;
pub mod stats;
#[allow(unsafe_code)]
pub mod sys;
pub mod tuning;

/// The top-level modules form a DAG: flags ([`cli`]) over [`plan`] over the
/// engines ([`server`], [`client`], [`micro`], [`herd`], [`runner`] with
/// [`child`]) over their [`results`] and [`analysis`], with [`output`] and
/// [`report`] on top and [`sys`], [`env`], [`stats`], [`present`] and the
/// writers of [`export`] at the bottom. A test reads every file under src/ and fails on a cycle between
/// them, so a low module cannot reach up again; another fails on a cycle
/// between the files of any one folder.
#[cfg(test)]
mod layers {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Module -> (module it names -> a file that names it).
    type Graph = BTreeMap<String, BTreeMap<String, String>>;

    /// The `crate::X` a file's code names: its `#[cfg(test)]` modules (at
    /// the end of a file) and its comments, doc comments included, left out.
    fn mentions(text: &str) -> BTreeSet<String> {
        names_after(&code(text), "crate::")
            .into_iter()
            .filter(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect()
    }

    fn walk(src: &Path, dir: &Path, graph: &mut Graph) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(src, &path, graph);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
            if top == "main" || top == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let edges = graph.entry(top.to_string()).or_default();
            for m in mentions(&text) {
                if m != top {
                    edges.entry(m).or_insert_with(|| rel.clone());
                }
            }
        }
    }

    /// The first cycle found, as the modules along it (first one repeated
    /// at the end).
    fn cycle(graph: &Graph) -> Option<Vec<String>> {
        fn visit(
            n: &str,
            graph: &Graph,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = path.iter().position(|p| p == n) {
                let mut c = path[i..].to_vec();
                c.push(n.to_string());
                return Some(c);
            }
            if done.contains(n) {
                return None;
            }
            path.push(n.to_string());
            for next in graph.get(n).into_iter().flat_map(|e| e.keys()) {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            done.insert(n.to_string());
            None
        }
        let mut done = BTreeSet::new();
        graph
            .keys()
            .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
    }

    #[test]
    fn the_top_level_modules_import_each_other_without_a_cycle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut graph = Graph::new();
        walk(&src, &src, &mut graph);
        assert!(graph.contains_key("runner") && graph["runner"].contains_key("sys"));
        if let Some(c) = cycle(&graph) {
            let edges: Vec<String> = c
                .windows(2)
                .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
                .collect();
            panic!(
                "the modules import each other in a cycle: {}; move what the lower \
                 one needs down (see lib.rs for the layers): {edges:?}",
                c.join(" -> ")
            );
        }
    }

    /// The code of a file as the graphs read it: its `#[cfg(test)]`
    /// modules (at the end of a file) and its comment lines left out.
    fn code(text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let end = lines
            .iter()
            .enumerate()
            .position(|(i, l)| {
                l.trim() == "#[cfg(test)]"
                    && lines[i + 1..]
                        .iter()
                        .find(|n| !n.trim().is_empty())
                        .is_some_and(|n| n.trim_start().starts_with("mod "))
            })
            .unwrap_or(lines.len());
        lines[..end]
            .iter()
            .filter(|l| !l.trim_start().starts_with("//"))
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first name of each path that follows `prefix` in `text`
    /// (`super::a::X` gives `a`; `super::{a, b::Y}` gives `a` and `b`).
    fn names_after(text: &str, prefix: &str) -> Vec<String> {
        let ident = |s: &str| -> String {
            s.trim_start_matches(|c: char| c.is_whitespace() || c == '{')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(i) = text[from..].find(prefix) {
            let at = from + i;
            from = at + prefix.len();
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &text[from..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 1;
                let mut item = String::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 || (depth == 1 && c == ',') {
                        out.push(ident(&item));
                        item.clear();
                        if depth == 0 {
                            break;
                        }
                    } else {
                        item.push(c);
                    }
                }
            } else {
                out.push(ident(rest));
            }
        }
        out.retain(|n| !n.is_empty());
        out
    }

    /// The files of one folder and the files of it each one names (through
    /// `super::x` or the folder's full path), by module name. The folder's
    /// own `mod.rs` is the folder itself (it declares and re-exports its
    /// files) and is left out; a subfolder counts as one module.
    fn folder_graph(src: &Path, dir: &Path) -> Graph {
        let rel = dir.strip_prefix(src).unwrap();
        let path = format!(
            "crate::{}::",
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("::")
        );
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                let door = if p.join("mod.rs").exists() {
                    p.join("mod.rs")
                } else {
                    dir.join(format!("{name}.rs"))
                };
                files.insert(name, door);
            } else if p.extension().is_some_and(|e| e == "rs") && name != "mod" {
                files.insert(name, p);
            }
        }
        let mut graph = Graph::new();
        for (name, file) in &files {
            let text = code(&std::fs::read_to_string(file).unwrap_or_default());
            let edges = graph.entry(name.clone()).or_default();
            let named = names_after(&text, "super::")
                .into_iter()
                .chain(names_after(&text, &path));
            for other in named {
                if other != *name && files.contains_key(&other) {
                    edges.entry(other).or_insert_with(|| {
                        file.strip_prefix(src)
                            .unwrap()
                            .to_string_lossy()
                            .into_owned()
                    });
                }
            }
        }
        graph
    }

    fn folders(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                out.push(p.clone());
                folders(&p, out);
            }
        }
    }

    #[test]
    fn the_files_of_each_folder_import_each_other_without_a_cycle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut dirs = Vec::new();
        folders(&src, &mut dirs);
        dirs.sort();
        let client = folder_graph(&src, &src.join("client"));
        assert!(
            client["engine"].contains_key("plan"),
            "the reader sees imports"
        );
        let mut found = Vec::new();
        for dir in &dirs {
            let graph = folder_graph(&src, dir);
            if let Some(c) = cycle(&graph) {
                let edges: Vec<String> = c
                    .windows(2)
                    .map(|w| format!("{} -> {} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
                    .collect();
                found.push(format!(
                    "{}: {} ({})",
                    dir.strip_prefix(&src).unwrap().display(),
                    c.join(" -> "),
                    edges.join(", ")
                ));
            }
        }
        assert!(
            found.is_empty(),
            "files of one folder import each other in a cycle; move what both \
             need into a file of its own that neither imports back: {found:#?}"
        );
    }

    #[test]
    fn names_after_a_prefix_read_paths_and_groups() {
        let text = "use super::a::X;\nuse super::{b, c::{D, E}};\nfoo::super::z;\n\
                    let x = crate::client::plan::P;";
        assert_eq!(names_after(text, "super::"), ["a", "b", "c"]);
        assert_eq!(names_after(text, "crate::client::"), ["plan"]);
        assert_eq!(
            code("use a;\n// super::x\n#[cfg(test)]\nmod tests {}\n"),
            "use a;"
        );
    }

    #[test]
    fn mentions_skip_comments_and_test_modules() {
        let text = "//! crate::report\nuse crate::stats::x;\n/// crate::runner\n\
                    fn f() { crate::sys::g(); }\n#[cfg(test)]\nmod tests {\n    use crate::plan;\n}\n";
        let want: BTreeSet<String> = ["stats", "sys"].map(String::from).into();
        assert_eq!(mentions(text), want);
    }
}
