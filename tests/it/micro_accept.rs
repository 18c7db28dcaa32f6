//! `c10k micro accept` end to end at a small size: every connection the
//! clients made was accepted, in every mode, and bad flags are one line.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::bin;

tests![
    every_connection_is_accepted_in_every_mode,
    bad_flags_are_one_line,
];

fn every_connection_is_accepted_in_every_mode() -> Result<(), Failed> {
    let json = std::env::temp_dir().join(format!("c10k-micro-accept-{}.json", std::process::id()));
    let out = Command::new(bin())
        .args([
            "micro",
            "accept",
            "--clients",
            "2",
            "--duration",
            "100ms",
            "--runs",
            "1",
            "--json",
        ])
        .arg(&json)
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    for mode in ["one", "drain", "one+interval", "drain+interval", "uring"] {
        if !stdout
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{mode} ")))
        {
            return Err(format!("no row for {mode}:\n{stdout}").into());
        }
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let _ = std::fs::remove_file(&json);
    let modes = v["modes"].as_array().ok_or("no modes")?;
    if modes.len() != 5 {
        return Err(format!("{} modes in the JSON", modes.len()).into());
    }
    for m in modes {
        if m.get("skipped").is_some() {
            // Only io_uring may be missing here, and it says why.
            if m["mode"] != "uring" || m["skipped"].as_str().unwrap_or("").is_empty() {
                return Err(format!("skipped without a reason: {m}").into());
            }
            continue;
        }
        for r in m["runs"].as_array().ok_or("no runs")? {
            let (made, taken) = (r["connected_total"].as_u64(), r["accepted_total"].as_u64());
            let in_window = r["accepts"].as_u64().unwrap_or(0);
            if made.is_none() || made != taken || made == Some(0) || in_window > taken.unwrap_or(0)
            {
                return Err(format!(
                    "{}: made {made:?}, accepted {taken:?}, measured {in_window}",
                    m["mode"]
                )
                .into());
            }
            if r["connect_errors"] != 0 || r["waits"].as_u64().unwrap_or(0) == 0 {
                return Err(format!("{}: {r}", m["mode"]).into());
            }
        }
    }
    Ok(())
}

fn bad_flags_are_one_line() -> Result<(), Failed> {
    for (args, want) in [
        (&["--clients", "0"][..], "--clients 0"),
        (&["--duration", "soon"], "--duration"),
        (&["--interval", "2s"], "--interval"),
    ] {
        let o = Command::new(bin())
            .args(["micro", "accept"])
            .args(args)
            .output()?;
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(2) || err.lines().count() != 1 || !err.contains(want) {
            return Err(format!("{args:?}: exit {:?}, stderr {err:?}", o.status.code()).into());
        }
    }
    Ok(())
}
