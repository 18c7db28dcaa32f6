//! How an agent is started: a launcher template (`--agent TEMPLATE`), split
//! into words once as a shell would (quotes, backslashes) but run with no
//! shell, its placeholders filled in per agent:
//!
//! - `{cmd}`: the agent's command (this program, `agent`), spliced in as
//!   its own words (`kubectl exec -i c10k-{i} -- {cmd}`);
//! - `{cmd_sh}`: the same command as one shell-quoted word, for launchers
//!   that hand their command to a shell (`ssh -T host{i} -- {cmd_sh}`);
//! - `{i}`, `{n}`: the agent's index (from 0) and the agent count;
//! - `{self}`: the path of this program.
//!
//! A template with neither `{cmd}` nor `{cmd_sh}` runs as written and must
//! start `c10k agent` itself (`ssh host{i} c10k agent`, where the remote
//! c10k is elsewhere). The local worker processes of a large run are the
//! built-in template [`LOCAL`]. Cost: nothing until an agent starts.

/// The template of local worker processes: this program, run directly.
pub const LOCAL: &str = "{cmd}";

/// A launcher template; kept in a run's plan as its text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Template {
    words: Vec<String>,
    /// As the user wrote it.
    source: String,
}

impl Template {
    /// Parses a template; `Err` is one line for the user.
    pub fn parse(text: &str) -> Result<Template, String> {
        let words =
            shlex::split(text).ok_or_else(|| format!("--agent {text:?}: unbalanced quotes"))?;
        if words.is_empty() {
            return Err("--agent: an empty template".into());
        }
        if let Some(w) = words.iter().find(|w| w.contains("{cmd}") && *w != "{cmd}") {
            return Err(format!(
                "--agent {text:?}: {{cmd}} must be a word of its own (in {w:?}); inside a word, use {{cmd_sh}}"
            ));
        }
        Ok(Template {
            words,
            source: text.to_string(),
        })
    }

    /// The argv that starts agent `i` of `n`, whose own command is `cmd`.
    pub fn argv(&self, cmd: &[String], i: usize, n: usize) -> Vec<String> {
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "c10k".into());
        let quoted =
            shlex::try_join(cmd.iter().map(String::as_str)).unwrap_or_else(|_| cmd.join(" "));
        let mut argv = Vec::new();
        for w in &self.words {
            if w == "{cmd}" {
                argv.extend(cmd.iter().cloned());
                continue;
            }
            argv.push(
                w.replace("{cmd_sh}", &quoted)
                    .replace("{i}", &i.to_string())
                    .replace("{n}", &n.to_string())
                    .replace("{self}", &exe),
            );
        }
        argv
    }

    /// The template as the user wrote it.
    pub fn text(&self) -> &str {
        &self.source
    }
}

impl From<Template> for String {
    /// As the user wrote it, which parses to the same words.
    fn from(t: Template) -> String {
        t.source
    }
}

impl TryFrom<String> for Template {
    type Error = String;
    fn try_from(text: String) -> Result<Template, String> {
        Template::parse(&text)
    }
}

/// Reads `--agents-file`: one template a line; blank lines and lines
/// starting `#` are skipped.
pub fn read_file(path: &std::path::Path) -> Result<Vec<Template>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--agents-file {}: {e}", path.display()))?;
    let templates: Vec<Template> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(Template::parse)
        .collect::<Result<_, _>>()?;
    if templates.is_empty() {
        return Err(format!(
            "--agents-file {}: no template in it",
            path.display()
        ));
    }
    Ok(templates)
}

/// How the agents of a run are started: a template each (the last one
/// repeated when there are more agents than templates).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Launch {
    pub templates: Vec<Template>,
    pub agents: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd() -> Vec<String> {
        vec!["/opt/c10k bin/c10k".into(), "agent".into()]
    }

    #[test]
    fn cmd_is_spliced_and_cmd_sh_is_one_quoted_word() {
        let t = Template::parse("kubectl exec -i c10k-{i} -- {cmd}").unwrap();
        assert_eq!(
            t.argv(&cmd(), 2, 4),
            [
                "kubectl",
                "exec",
                "-i",
                "c10k-2",
                "--",
                "/opt/c10k bin/c10k",
                "agent"
            ]
        );
        let t = Template::parse("ssh -T host{i} -- {cmd_sh}").unwrap();
        let argv = t.argv(&cmd(), 0, 1);
        assert_eq!(argv[..4], ["ssh", "-T", "host0", "--"]);
        // What ssh's remote shell would split it into: the command again.
        assert_eq!(shlex::split(&argv[4]).unwrap(), cmd());
        let t = Template::parse("sh -c 'exec {cmd_sh}' agent-{i}-of-{n}").unwrap();
        assert_eq!(t.argv(&cmd(), 1, 3)[3], "agent-1-of-3");
    }

    #[test]
    fn bad_templates_are_one_line() {
        for (text, says) in [
            ("", "empty template"),
            ("ssh 'host", "unbalanced quotes"),
            ("sh -c 'run {cmd}'", "a word of its own"),
        ] {
            let e = Template::parse(text).unwrap_err();
            assert!(e.contains(says) && e.lines().count() == 1, "{text:?}: {e}");
        }
    }
}
