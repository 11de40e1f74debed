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
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::anatomy::{branch_name, payload_path};
use super::command::{self, Capture, display};
use super::race::SetupError;
use super::row::{Row, Tokens};
use super::runner::{Ctx, run_operations};
use super::settle::settle;

struct Gh<'a> {
    ctx: &'a Ctx<'a>,
    checkout: PathBuf,
    env: BTreeMap<String, String>,
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
            &self.env,
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
            &self.checkout,
            &self.env,
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
                    &self.checkout,
                    &self.env,
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
        &gh.checkout,
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

/// One branch's clone, state and steps.
pub struct GhBranch<'a> {
    gh: Gh<'a>,
    repo: String,
    branch: String,
    path: String,
    base: String,
    pr: Option<u64>,
    title: String,
}

impl std::fmt::Debug for GhBranch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GhBranch")
            .field("branch", &self.branch)
            .finish()
    }
}

/// What every branch of a run shares.
#[derive(Debug, Clone)]
pub struct GhSettings<'a> {
    /// `OWNER/NAME`.
    pub repo: &'a str,
    /// The subject token (`GH_TOKEN`).
    pub token: &'a str,
    /// `GITHUB_API_URL` for the commands, if set.
    pub api_url: Option<&'a str>,
    /// Admitted output characters.
    pub admitted: usize,
}

impl<'a> GhBranch<'a> {
    /// The untimed setup of branch `b` (`None`: the single branch) in
    /// `workdir`: clone, branch, payload, commit, main's sha.
    pub fn setup(
        ctx: &'a Ctx<'a>,
        settings: &GhSettings<'_>,
        workdir: &Path,
        b: Option<u32>,
    ) -> Result<GhBranch<'a>, SetupError> {
        let mut env = BTreeMap::from([("GH_TOKEN".to_owned(), settings.token.to_owned())]);
        if let Some(url) = settings.api_url {
            env.insert("GITHUB_API_URL".to_owned(), url.to_owned());
        }
        let gh = Gh {
            ctx,
            checkout: workdir.join("checkout"),
            env,
            admitted: settings.admitted,
            timeout: Duration::from_secs_f64(ctx.settings.command_timeout_s),
        };
        let branch = branch_name(&ctx.meta.run_id, ctx.run, b);
        let path = payload_path(&ctx.meta.run_id, ctx.run, b);
        let fail = |step: &str, cap: &Capture| SetupError::Command {
            step: step.to_owned(),
            output: cap.error.clone().unwrap_or_else(|| cap.stderr.clone()),
        };
        std::fs::create_dir_all(workdir).map_err(|source| SetupError::Workdir {
            path: workdir.to_path_buf(),
            source,
        })?;
        let dest = gh.checkout.display().to_string();
        let cap = gh.run(&["gh", "repo", "clone", settings.repo, &dest], workdir);
        if !cap.ok() {
            return Err(fail("clone", &cap));
        }
        let file = gh.checkout.join(&path);
        let content = format!(
            "benchops platform lane, run {} ({}), branch {branch}\n",
            ctx.meta.run_id, ctx.run
        );
        file.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&file, content))
            .map_err(|source| SetupError::Payload {
                path: file.clone(),
                source,
            })?;
        let message = format!("benchops platform lane {} r{}", ctx.meta.run_id, ctx.run);
        for argv in [
            vec!["git", "switch", "-q", "-c", &branch],
            vec!["git", "add", &path],
            vec!["git", "commit", "-q", "-m", &message],
        ] {
            let cap = gh.run(&argv, &gh.checkout);
            if !cap.ok() {
                return Err(fail(argv[1], &cap));
            }
        }
        let base = remote_main(&gh).ok_or(SetupError::NoMainSha)?;
        Ok(GhBranch {
            title: format!("benchops platform lane {} {branch}", ctx.meta.run_id),
            gh,
            repo: settings.repo.to_owned(),
            branch,
            path,
            base,
            pr: None,
        })
    }

    /// One operation; `pace` runs before each content operation, inside
    /// its timed region.
    pub fn op(&mut self, op: &str, pace: &mut dyn FnMut()) -> Option<Row> {
        let gh = &self.gh;
        let ctx = gh.ctx;
        let repo = self.repo.as_str();
        let n = self.pr.map(|n| n.to_string()).unwrap_or_default();
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
            "branch.publish" => super::race::paced(ctx, pace, || {
                gh.step(
                    op,
                    vec![strings(&[
                        "git",
                        "push",
                        "-q",
                        "-u",
                        "origin",
                        &self.branch,
                    ])],
                )
                .0
            }),
            "integration.open" => {
                let mut pr = None;
                let r = super::race::paced(ctx, pace, || {
                    let (mut r, caps) = gh.step(
                        op,
                        vec![strings(&[
                            "gh",
                            "pr",
                            "create",
                            "--repo",
                            repo,
                            "--head",
                            &self.branch,
                            "--base",
                            "main",
                            "--title",
                            &self.title,
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
                });
                self.pr = pr;
                r
            }
            "integration.visible.settle" => gh.settle(op, &view("state"), |s| !s.is_empty()),
            "integration.mergeable.settle" => {
                gh.settle(op, &view("mergeable"), |s| !s.is_empty() && s != "UNKNOWN")
            }
            "integration.checks.green.settle" => Row::structural(
                ctx.meta,
                ctx.scenario,
                ctx.run,
                op,
                "protection-none: no required status check, nothing to wait for",
            ),
            "integration.merge.request" => super::race::paced(ctx, pace, || {
                gh.step(
                    op,
                    vec![strings(&[
                        "gh", "pr", "merge", &n, "--repo", repo, "--merge",
                    ])],
                )
                .0
            }),
            "integration.merged.settle" => gh.settle(op, &view("state"), |s| s == "MERGED"),
            "integration.main.settle" => {
                let argv = strings(&["git", "ls-remote", "origin", "refs/heads/main"]);
                let base = self.base.clone();
                gh.settle(op, &argv, move |out| {
                    out.split_whitespace().next().is_some_and(|sha| sha != base)
                })
            }
            "integration.sync.local" => {
                let _ = gh.run(&["git", "switch", "-q", "main"], &gh.checkout);
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
    }

    /// Untimed: the remote branch, and the payload the merge left on main.
    pub fn cleanup(&mut self) {
        let gh = &self.gh;
        let c = gh.checkout.clone();
        let path = self.path.as_str();
        let _ = gh.run(
            &["git", "push", "-q", "origin", "--delete", &self.branch],
            &c,
        );
        let _ = gh.run(&["git", "switch", "-q", "main"], &c);
        let _ = gh.run(&["git", "pull", "-q", "--ff-only", "origin", "main"], &c);
        if c.join(path).exists() {
            let msg = format!("benchops platform lane {}: clean up", gh.ctx.meta.run_id);
            for argv in [
                vec!["git", "rm", "-q", path],
                vec!["git", "commit", "-q", "-m", &msg],
                vec!["git", "push", "-q", "origin", "main"],
            ] {
                if !gh.run(&argv, &c).ok() {
                    break;
                }
            }
        }
    }
}

impl super::race::RaceBranch for GhBranch<'_> {
    fn op(&mut self, op: &str, pace: &mut dyn FnMut()) -> Option<Row> {
        let mut r = GhBranch::op(self, op, pace)?;
        r.set("race_branch_name", &self.branch);
        Some(r)
    }

    fn cleanup(&mut self) {
        GhBranch::cleanup(self);
    }
}

/// One run of a single-branch scenario with `gh` and `git`.
pub fn run<'a>(
    ctx: &'a Ctx<'a>,
    settings: &GhSettings<'_>,
    operations: &[String],
    workdir: &Path,
) -> Vec<Row> {
    let mut branch = match GhBranch::setup(ctx, settings, workdir, None) {
        Ok(b) => b,
        Err(e) => return ctx.skip_all(operations, &e.skip_reason()),
    };
    let mut no_pace = || {};
    let mut handler = |op: &str| branch.op(op, &mut no_pace);
    let rows = run_operations(ctx, operations, &mut handler);
    branch.cleanup();
    rows
}

/// A race with `gh` and `git`: each branch its own clone under `workdir`.
pub fn race<'a>(
    ctx: &'a Ctx<'a>,
    settings: &'a GhSettings<'a>,
    operations: &[String],
    workdir: &'a Path,
    branches: u32,
    ops_per_hour: f64,
) -> Vec<Row> {
    let mut make = move |b: u32| -> Result<Box<dyn super::race::RaceBranch + 'a>, SetupError> {
        let dir = workdir.join(format!("b{b}"));
        GhBranch::setup(ctx, settings, &dir, Some(b))
            .map(|g| Box::new(g) as Box<dyn super::race::RaceBranch + 'a>)
    };
    super::race::run_race(ctx, operations, branches, ops_per_hour, &mut make)
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
