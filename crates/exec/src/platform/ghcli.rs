//! The `cli` driver on GitHub: `gh` and `git`, as an agent would type
//! them, every command timed on the run's clock with its output accounted
//! ([`command`]).
//!
//! Untimed setup makes the lane's precondition true, "a task branch exists
//! locally": `gh repo clone`, a new branch, the run's payload file (its path
//! and content carry the run id) and a commit. Then each declared
//! operation:
//!
//! | operation | command |
//! |---|---|
//! | `branch.publish` | `git push -u origin <branch>` |
//! | `integration.open` | `gh pr create` (the number read from the URL it prints) |
//! | `integration.visible.settle` | `gh pr view <n> --json state` until it answers |
//! | `integration.mergeable.settle` | `gh pr view <n> --json mergeable` until it is not `UNKNOWN` |
//! | `integration.merge.request` | `gh pr merge <n> --merge` |
//! | `integration.merged.settle` | `gh pr view <n> --json state` until `MERGED` |
//! | `integration.main.settle` | `git ls-remote origin refs/heads/main` until main moved |
//! | `integration.sync.local` | `git pull --ff-only origin main` (after an untimed switch to main) |
//!
//! A settle's polls are tool calls (an agent makes each one), so its row
//! counts them and estimates their tokens. Untimed cleanup deletes the
//! remote branch and the payload the merge left on main. The commands get
//! the subject token as `GH_TOKEN` and nothing else of it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::anatomy::{branch_name, payload_path};
use super::command::{self, Capture, display};
use super::row::{Row, Tokens};
use super::runner::{Ctx, run_operations};
use super::settle::settle;

struct Gh<'a> {
    ctx: &'a Ctx<'a>,
    checkout: &'a Path,
    env: &'a BTreeMap<String, String>,
    admitted: usize,
    timeout: Duration,
}

impl Gh<'_> {
    fn run(&self, argv: &[&str], cwd: &Path) -> Capture {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        command::run(
            self.ctx.clock,
            &argv,
            cwd,
            self.env,
            self.admitted,
            self.timeout,
        )
    }

    /// A timed step of one or more commands.
    fn step(&self, op: &str, commands: Vec<Vec<String>>) -> (Row, Vec<Capture>) {
        let mut r = self.ctx.row(op);
        let caps = command::sequence_row(
            &mut r,
            self.ctx.clock,
            &commands,
            self.checkout,
            self.env,
            self.admitted,
            self.timeout,
        );
        (r, caps)
    }

    /// A settle whose every poll is a command (a tool call).
    fn settle(&self, op: &str, argv: &[String], done: impl Fn(&str) -> bool) -> Row {
        let mut typed = 0usize;
        let mut read = 0usize;
        let mut raw = 0u64;
        let mut truncated = false;
        let mut polls = 0u32;
        let s = settle(
            self.ctx.clock,
            self.ctx.settings.interval_s,
            self.ctx.settings.settle_timeout_s,
            || {
                let cap = command::run(
                    self.ctx.clock,
                    argv,
                    self.checkout,
                    self.env,
                    self.admitted,
                    self.timeout,
                );
                polls += 1;
                typed += display(argv).chars().count();
                read += cap.stdout.chars().count() + cap.stderr.chars().count();
                raw += cap.raw_bytes;
                truncated |= cap.truncated;
                cap.ok() && done(cap.stdout.trim())
            },
        );
        let mut r = self.ctx.row(op);
        r.elapsed_ms = s.observed_wait_ms;
        r.command = vec![format!("{} (poll)", display(argv)).into()];
        r.tool_call_count = Some(polls);
        r.tokens = Some(Tokens::measured(typed, read, raw, truncated));
        if s.settled != Some(true) {
            r.fail(&format!(
                "not settled within {} s ({} polls)",
                self.ctx.settings.settle_timeout_s, s.poll_iterations
            ));
        }
        r.settle = Some(s);
        r
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn remote_main(gh: &Gh<'_>) -> Option<String> {
    let cap = gh.run(
        &["git", "ls-remote", "origin", "refs/heads/main"],
        gh.checkout,
    );
    cap.ok()
        .then(|| cap.stdout.split_whitespace().next().map(str::to_owned))
        .flatten()
}

/// The number at the end of a pull request's URL in `gh pr create`'s output.
pub fn pr_number(out: &str) -> Option<u64> {
    let at = out.rfind("/pull/")?;
    let digits: String = out[at + 6..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// One run of a single-branch scenario with `gh` and `git`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    ctx: &Ctx<'_>,
    repo: &str,
    operations: &[String],
    workdir: &Path,
    token: &str,
    api_url: Option<&str>,
    admitted: usize,
) -> Vec<Row> {
    let mut env = BTreeMap::from([("GH_TOKEN".to_owned(), token.to_owned())]);
    if let Some(url) = api_url {
        env.insert("GITHUB_API_URL".to_owned(), url.to_owned());
    }
    let checkout = workdir.join("checkout");
    let gh = Gh {
        ctx,
        checkout: &checkout,
        env: &env,
        admitted,
        timeout: Duration::from_secs_f64(ctx.settings.command_timeout_s),
    };
    let branch = branch_name(&ctx.meta.run_id, ctx.run, None);
    let path = payload_path(&ctx.meta.run_id, ctx.run, None);
    let setup_fail = |what: &str, cap: &Capture| {
        let why = cap.error.clone().unwrap_or_else(|| cap.stderr.clone());
        format!(
            "setup_failed:{what}:{}",
            why.trim().chars().take(120).collect::<String>()
        )
    };
    if let Err(e) = std::fs::create_dir_all(workdir) {
        return ctx.skip_all(operations, &format!("setup_failed:workdir:{e}"));
    }
    let cap = gh.run(
        &["gh", "repo", "clone", repo, &checkout.display().to_string()],
        workdir,
    );
    if !cap.ok() {
        return ctx.skip_all(operations, &setup_fail("clone", &cap));
    }
    let file = checkout.join(&path);
    let content = format!(
        "benchops platform lane, run {} ({}), branch {branch}\n",
        ctx.meta.run_id, ctx.run
    );
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&file, content));
    if let Err(e) = written {
        return ctx.skip_all(operations, &format!("setup_failed:payload:{e}"));
    }
    let message = format!("benchops platform lane {} r{}", ctx.meta.run_id, ctx.run);
    for argv in [
        vec!["git", "switch", "-q", "-c", &branch],
        vec!["git", "add", &path],
        vec!["git", "commit", "-q", "-m", &message],
    ] {
        let cap = gh.run(&argv, &checkout);
        if !cap.ok() {
            return ctx.skip_all(operations, &setup_fail(argv[1], &cap));
        }
    }
    let Some(base) = remote_main(&gh) else {
        return ctx.skip_all(operations, "setup_failed:ls-remote:main has no sha");
    };
    let mut pr: Option<u64> = None;
    let title = format!("benchops platform lane {} r{}", ctx.meta.run_id, ctx.run);
    let mut handler = |op: &str| -> Option<Row> {
        let n = pr.map(|n| n.to_string()).unwrap_or_default();
        let view = |field: &str| {
            strings(&[
                "gh",
                "pr",
                "view",
                &n,
                "--repo",
                repo,
                "--json",
                field,
                "-q",
                &format!(".{field}"),
            ])
        };
        Some(match op {
            "branch.publish" => {
                gh.step(
                    op,
                    vec![strings(&["git", "push", "-q", "-u", "origin", &branch])],
                )
                .0
            }
            "integration.open" => {
                let (mut r, caps) = gh.step(
                    op,
                    vec![strings(&[
                        "gh",
                        "pr",
                        "create",
                        "--repo",
                        repo,
                        "--head",
                        &branch,
                        "--base",
                        "main",
                        "--title",
                        &title,
                        "--body",
                        "A disposable pull request of a benchops platform-lane run.",
                    ])],
                );
                if !r.failed() {
                    pr = caps.last().and_then(|c| pr_number(&c.stdout));
                    if pr.is_none() {
                        r.fail("no pull request number in gh pr create's output");
                    }
                }
                r
            }
            "integration.visible.settle" => gh.settle(op, &view("state"), |s| !s.is_empty()),
            "integration.mergeable.settle" => {
                gh.settle(op, &view("mergeable"), |s| !s.is_empty() && s != "UNKNOWN")
            }
            "integration.merge.request" => {
                gh.step(
                    op,
                    vec![strings(&[
                        "gh", "pr", "merge", &n, "--repo", repo, "--merge",
                    ])],
                )
                .0
            }
            "integration.merged.settle" => gh.settle(op, &view("state"), |s| s == "MERGED"),
            "integration.main.settle" => {
                let argv = strings(&["git", "ls-remote", "origin", "refs/heads/main"]);
                gh.settle(op, &argv, |out| {
                    out.split_whitespace().next().is_some_and(|sha| sha != base)
                })
            }
            "integration.sync.local" => {
                let _ = gh.run(&["git", "switch", "-q", "main"], gh.checkout);
                gh.step(
                    op,
                    vec![strings(&[
                        "git",
                        "pull",
                        "-q",
                        "--ff-only",
                        "origin",
                        "main",
                    ])],
                )
                .0
            }
            _ => return None,
        })
    };
    let rows = run_operations(ctx, operations, &mut handler);
    cleanup(&gh, &branch, &path);
    rows
}

/// Untimed: the remote branch, and the payload the merge left on main.
fn cleanup(gh: &Gh<'_>, branch: &str, path: &str) {
    let c = gh.checkout;
    let _ = gh.run(&["git", "push", "-q", "origin", "--delete", branch], c);
    let _ = gh.run(&["git", "switch", "-q", "main"], c);
    let _ = gh.run(&["git", "pull", "-q", "--ff-only", "origin", "main"], c);
    if c.join(path).exists() {
        let msg = format!("benchops platform lane {}: clean up", gh.ctx.meta.run_id);
        for argv in [
            vec!["git", "rm", "-q", path],
            vec!["git", "commit", "-q", "-m", &msg],
            vec!["git", "push", "-q", "origin", "main"],
        ] {
            if !gh.run(&argv, c).ok() {
                break;
            }
        }
    }
}

/// `platform_capability_probe` with `gh`: `gh auth status`.
pub fn probe(ctx: &Ctx<'_>, operations: &[String], token: &str, admitted: usize) -> Vec<Row> {
    let env = BTreeMap::from([("GH_TOKEN".to_owned(), token.to_owned())]);
    let timeout = Duration::from_secs_f64(ctx.settings.command_timeout_s);
    let mut handler = |op: &str| -> Option<Row> {
        (op == "capability.probe").then(|| {
            let mut r = ctx.row(op);
            command::sequence_row(
                &mut r,
                ctx.clock,
                &[strings(&["gh", "auth", "status"])],
                Path::new("/"),
                &env,
                admitted,
                timeout,
            );
            r
        })
    };
    run_operations(ctx, operations, &mut handler)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pull_request_number_comes_from_its_url() {
        assert_eq!(pr_number("https://github.com/o/r/pull/42\n"), Some(42));
        assert_eq!(
            pr_number("Creating pull request...\nhttps://x/o/r/pull/7"),
            Some(7)
        );
        assert_eq!(pr_number("no url"), None);
    }
}
