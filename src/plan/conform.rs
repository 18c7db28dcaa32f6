//! `c10k conform`'s flags into a [`ConformPlan`]: exactly one subject (an
//! address, `--model`, `--server` or `--peer`), the checks by name, the
//! patience. Every mistake is one line naming the flag.

use std::net::ToSocketAddrs;
use std::path::PathBuf;

use crate::child::foreign::Foreign;
use crate::cli::ConformArgs;
use crate::conform::{self, Check, Subject, Suite};
use crate::experiments::peers;

/// A validated `c10k conform`.
pub struct ConformPlan {
    pub suite: Suite,
    pub checks: Vec<&'static Check>,
    pub json: Option<PathBuf>,
}

pub fn plan(a: &ConformArgs) -> Result<ConformPlan, String> {
    let given = [
        a.address.is_some(),
        a.model.is_some(),
        a.server.is_some(),
        a.peer.is_some(),
    ];
    match given.iter().filter(|g| **g).count() {
        1 => {}
        0 => {
            return Err(
                "say what to check: HOST:PORT, --model M, --server 'COMMAND {port}' or --peer NAME"
                    .into(),
            )
        }
        _ => return Err(
            "check one server at a time: give only one of HOST:PORT, --model, --server and --peer"
                .into(),
        ),
    }
    if !a.server_args.is_empty() && a.model.is_none() {
        return Err("--server-arg goes to a c10k model's `c10k serve`: give --model".into());
    }
    let mut request = 1;
    let subject = if let Some(text) = &a.address {
        let addr = text
            .to_socket_addrs()
            .map_err(|e| format!("{text:?} is not HOST:PORT ({e})"))?
            .next()
            .ok_or_else(|| format!("{text:?} resolves to no address"))?;
        Subject::Address(addr)
    } else if let Some(model) = &a.model {
        let m = crate::server::find(model).ok_or_else(|| {
            unknown(
                "--model",
                model,
                crate::server::MODELS.iter().map(|m| m.name()),
            )
        })?;
        let settings = super::serve_settings("--server-arg", Some(m.name()), &a.server_args)?;
        if let Some(p) = settings.protocol.filter(|p| *p != a.protocol) {
            return Err(format!(
                "--server-arg=--protocol {p} disagrees with --protocol {}: give --protocol alone",
                a.protocol
            ));
        }
        if a.protocol.is_echo() {
            request = super::request_bytes(m.name(), &settings)?;
        }
        Subject::Model {
            model: m.name().to_string(),
            settings,
        }
    } else if let Some(spec) = &a.server {
        Subject::Command(Foreign::parse(&named(spec))?)
    } else {
        let name = a.peer.as_deref().unwrap_or_default();
        let peer = peers::find(name)
            .ok_or_else(|| unknown("--peer", name, peers::PEERS.iter().map(|p| p.name)))?;
        if peer.speaks != a.protocol {
            let same: Vec<&str> = peers::PEERS
                .iter()
                .filter(|p| p.speaks == a.protocol)
                .map(|p| p.name)
                .collect();
            return Err(format!(
                "--peer {name}: it speaks {} (give --protocol {}); the peers of --protocol {} are {}",
                peer.speaks,
                peer.speaks,
                a.protocol,
                same.join(", ")
            ));
        }
        Subject::Command(peer.resolve(&peers::cache_dir()))
    };
    let protocol = a.protocol;
    let of_protocol = conform::checks(protocol);
    let checks =
        if a.checks.is_empty() {
            of_protocol
        } else {
            a.checks
                .iter()
                .map(|name| match conform::find(name) {
                    Some(c) if c.speaks.contains(&protocol) => Ok(c),
                    Some(_) => {
                        Err(format!(
                    "--check {name}: not a check of --protocol {protocol}; its checks are {}",
                    of_protocol.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
                ))
                    }
                    None => Err(unknown("--check", name, of_protocol.iter().map(|c| c.name))),
                })
                .collect::<Result<_, _>>()?
        };
    // Refused before any check runs, as load, micro and herd do.
    crate::export::target::check_flag("--json", a.json.as_deref())?;
    let patience = super::parse_duration(&a.patience).map_err(|e| format!("--patience: {e}"))?;
    if patience.is_zero() {
        return Err("--patience: must be more than zero".into());
    }
    let mut suite = Suite::new(subject);
    suite.patience = patience;
    suite.request = request;
    suite.protocol = a.protocol;
    Ok(ConformPlan {
        suite,
        checks,
        json: a.json.clone(),
    })
}

/// `FLAG NAME: unknown; expected one of A, B, …`.
fn unknown<'a>(flag: &str, name: &str, known: impl Iterator<Item = &'a str>) -> String {
    format!(
        "{flag} {name}: unknown; expected one of {}",
        known.collect::<Vec<_>>().join(", ")
    )
}

/// `--server` takes `NAME=COMMAND` or a bare command, which is named
/// `server`: a leading word of name characters followed by '=' is a name.
fn named(spec: &str) -> String {
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    match spec.split_once('=') {
        Some((name, _)) if is_name(name.trim()) => spec.to_string(),
        _ => format!("server={spec}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_server_command_is_named_server() {
        assert_eq!(
            named("python3 s.py --port={port}"),
            "server=python3 s.py --port={port}"
        );
        assert_eq!(named("mine=./srv {port}"), "mine=./srv {port}");
    }
}
