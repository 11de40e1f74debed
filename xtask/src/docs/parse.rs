//! The examples of a markdown file and of a `--help` text, as the docs
//! harness runs them.
//!
//! Markdown: a fenced block tagged `sh` (or `bash`) is a script; a block
//! tagged `console` is a transcript whose `$ ` lines are commands (a line
//! ending in `\` continues on the next) and whose other lines are the
//! expected output of the command above them. Every other tag is prose
//! (`text`, `json`, `toml`, …) and is not run. An HTML comment on the line
//! directly before a fence directs how the block runs:
//!
//! - `<!-- doctest: skip: REASON -->`: not run; the reason is reported;
//! - `<!-- doctest: exit N -->`: the script, or a transcript's last command,
//!   must exit with status N (every other command must exit 0);
//! - `<!-- doctest: first N: REASON -->`: only the script's first N lines
//!   run; the reason says why the rest does not.
//!
//! `--help`: the lines under an `Example:` or `Examples:` heading, indented,
//! each a command (with `\` continuations); a line starting with `#` is a
//! comment, and a command whose trailing comment starts with `# needs ` is
//! not run, with that comment as its reason.

/// How a block runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// As written, expecting exit status 0.
    Run,
    /// Expecting this exit status.
    Exit(i32),
    /// Not run, for this reason.
    Skip(String),
    /// Only its first N lines, for this reason.
    First(usize, String),
}

/// What a block holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A script, run as one `bash -euo pipefail` program.
    Script(String),
    /// Commands, each with its expected output (empty when none is shown).
    Transcript(Vec<Step>),
}

/// One command of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The command line, continuations joined.
    pub command: String,
    /// The expected output, a snapbox pattern (`...`, `[..]`).
    pub expected: String,
}

/// One runnable block of a markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The 1-based line of its opening fence.
    pub line: usize,
    /// How it runs.
    pub directive: Directive,
    /// What it holds.
    pub body: Body,
}

/// Parses a directive comment; `None` for any other line. An unknown
/// `doctest:` word is an error, so a typo never silently runs a block.
pub fn directive(line: &str) -> Result<Option<Directive>, String> {
    let Some(inner) = line
        .trim()
        .strip_prefix("<!--")
        .and_then(|l| l.strip_suffix("-->"))
    else {
        return Ok(None);
    };
    let Some(rest) = inner.trim().strip_prefix("doctest:") else {
        return Ok(None);
    };
    let rest = rest.trim();
    if let Some(reason) = rest.strip_prefix("skip:") {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err("`doctest: skip:` needs a reason".into());
        }
        return Ok(Some(Directive::Skip(reason.to_string())));
    }
    if let Some(code) = rest.strip_prefix("exit ") {
        let code = code
            .trim()
            .parse::<i32>()
            .map_err(|_| format!("`doctest: exit N` needs a number, not `{}`", code.trim()))?;
        return Ok(Some(Directive::Exit(code)));
    }
    if let Some(first) = rest.strip_prefix("first ") {
        let (n, reason) = first
            .split_once(':')
            .ok_or("`doctest: first N: REASON` needs a reason")?;
        let n = n
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("`doctest: first N` needs a number, not `{}`", n.trim()))?;
        return Ok(Some(Directive::First(n, reason.trim().to_string())));
    }
    Err(format!(
        "unknown directive `doctest: {rest}` (known: `skip: REASON`, `exit N`, `first N: REASON`)"
    ))
}

/// The runnable blocks of a markdown text, in order.
pub fn markdown(text: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(tag) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let fence_indent = lines[i].len() - lines[i].trim_start().len();
        let tag = tag.trim().to_string();
        let open = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            body.push(strip_indent(lines[i], fence_indent));
            i += 1;
        }
        if i == lines.len() {
            return Err(format!("line {}: a fence that is never closed", open + 1));
        }
        i += 1;
        let previous = open.checked_sub(1).map(|p| lines[p]).unwrap_or("");
        let directive = directive(previous)
            .map_err(|e| format!("line {open}: {e}"))?
            .unwrap_or(Directive::Run);
        let body = match tag.as_str() {
            "sh" | "bash" => Body::Script(body.join("\n") + "\n"),
            "console" => Body::Transcript(transcript(&body)),
            _ => {
                if directive != Directive::Run {
                    return Err(format!(
                        "line {open}: a doctest directive before a `{tag}` block, which is never run"
                    ));
                }
                continue;
            }
        };
        blocks.push(Block {
            line: open + 1,
            directive,
            body,
        });
    }
    Ok(blocks)
}

fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

/// The commands of a transcript with the output under each.
fn transcript(lines: &[&str]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(first) = lines[i].strip_prefix("$ ") {
            let mut command = first.to_string();
            while command.ends_with('\\') && i + 1 < lines.len() {
                i += 1;
                command.push('\n');
                command.push_str(lines[i]);
            }
            steps.push(Step {
                command,
                expected: String::new(),
            });
        } else if let Some(step) = steps.last_mut() {
            step.expected.push_str(lines[i]);
            step.expected.push('\n');
        }
        i += 1;
    }
    steps
}

/// One example of a `--help` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpExample {
    /// The command line, continuations joined.
    pub command: String,
    /// Why it is not run, if it is not.
    pub skip: Option<String>,
    /// The exit status it must end with: 0, or N after a trailing
    /// `# exits N` comment.
    pub exit: i32,
}

/// The examples of one `--help` text.
pub fn help_examples(help: &str) -> Vec<HelpExample> {
    let mut out = Vec::new();
    let mut in_examples = false;
    let mut pending: Option<String> = None;
    for line in help.lines() {
        let trimmed = line.trim();
        if !line.starts_with(' ') {
            in_examples = matches!(trimmed, "Example:" | "Examples:")
                || (trimmed.starts_with("Example") && trimmed.ends_with("):"));
            continue;
        }
        if !in_examples {
            continue;
        }
        let mut command = match pending.take() {
            Some(mut p) => {
                p.push('\n');
                p.push_str(line);
                p
            }
            None if trimmed.starts_with('#') || trimmed.is_empty() => continue,
            None => trimmed.to_string(),
        };
        if command.ends_with('\\') {
            pending = Some(command);
            continue;
        }
        let skip = command
            .find("# needs ")
            .map(|at| command[at + 2..].trim().to_string());
        if let Some(reason) = &skip {
            let cut = command.len() - reason.len() - 2;
            command.truncate(cut);
            command = command.trim_end().to_string();
        }
        let mut exit = 0;
        if let Some(at) = command.find("# exits ") {
            exit = command[at + 8..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
        out.push(HelpExample {
            command,
            skip,
            exit,
        });
    }
    out
}

/// The subcommand names listed under `Commands:` in a `--help` text,
/// `help` excepted.
pub fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if !line.starts_with(' ') {
            in_commands = line.trim() == "Commands:";
            continue;
        }
        if in_commands
            && let Some(name) = line.split_whitespace().next()
            && name != "help"
            && line.starts_with("  ")
            && !line.starts_with("   ")
        {
            out.push(name.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_directives_and_transcripts() {
        let text = "intro\n\n```sh\necho a\n```\n\n<!-- doctest: skip: needs GitHub -->\n```sh\ngh api\n```\n\n```console\n$ echo one \\\n  two\none two\n$ true\n```\n\n<!-- doctest: exit 3 -->\n```sh\nexit 3\n```\n\n```json\n{}\n```\n";
        let blocks = markdown(text).expect("parses");
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[0].body, Body::Script("echo a\n".into()));
        assert_eq!(blocks[0].line, 3);
        assert_eq!(blocks[1].directive, Directive::Skip("needs GitHub".into()));
        let Body::Transcript(steps) = &blocks[2].body else {
            panic!("a transcript")
        };
        assert_eq!(steps[0].command, "echo one \\\n  two");
        assert_eq!(steps[0].expected, "one two\n");
        assert_eq!(steps[1].expected, "");
        assert_eq!(blocks[3].directive, Directive::Exit(3));
    }

    #[test]
    fn a_bad_directive_or_an_open_fence_is_an_error() {
        assert!(markdown("<!-- doctest: sikp: x -->\n```sh\ntrue\n```\n").is_err());
        assert!(markdown("<!-- doctest: skip: -->\n```sh\ntrue\n```\n").is_err());
        assert!(markdown("<!-- doctest: skip: x -->\n```text\nx\n```\n").is_err());
        assert!(markdown("```sh\ntrue\n").is_err());
        assert_eq!(
            directive("<!-- doctest: first 1: the rest is CI -->"),
            Ok(Some(Directive::First(1, "the rest is CI".into())))
        );
    }

    #[test]
    fn help_examples_and_subcommands() {
        let help = "Run things\n\nCommands:\n  bench  Benchmarks\n  help   Print help\n\nOptions:\n  -h  help\n\nExamples:\n  tool a \\\n    --b c\n  # a comment\n  tool gh --repo x   # needs GitHub\n  tool w   # exits 1 while a slot is missed\n";
        assert_eq!(subcommands(help), vec!["bench".to_string()]);
        let ex = help_examples(help);
        assert_eq!(ex.len(), 3);
        assert_eq!((ex[0].exit, ex[2].exit), (0, 1));
        assert_eq!(ex[0].command, "tool a \\\n    --b c");
        assert_eq!(ex[1].command, "tool gh --repo x");
        assert_eq!(ex[1].skip.as_deref(), Some("needs GitHub"));
    }
}
