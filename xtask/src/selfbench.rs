//! `cargo xtask selfbench`: benchops benchmarks itself. The lane of
//! `benchmarks/schedule.toml` measures the hot paths of its own CLI
//! (`benchops-publish validate`, `benchops-exec bench plan`,
//! `benchops-exec bench analyze`, `benchops-publish sweep --local`) with the
//! release binaries of this checkout, through `benchops-exec lane run`, and
//! publishes each run with `benchops-publish sweep --local`:
//!
//! 1. the release binaries are built; the subject is this checkout at its
//!    `HEAD`, or, when the working tree differs from `HEAD`, a snapshot
//!    commit of the working tree over `HEAD` kept in `DIR/subject.git`;
//! 2. an interrupted earlier run is finished first (its lane execution
//!    advanced until sealed), and a sweep publishes what is waiting;
//! 3. with no baseline in `DIR`'s history, two lane runs: the first
//!    proposes itself as the baseline, the second compares with it; with a
//!    baseline (a later `cargo xtask selfbench`, after a code change), one
//!    lane run compares with it. Suspects are re-run before a drift is
//!    announced;
//! 4. health, then each case's verdict and figures.
//!
//! Everything lives in `DIR` (default `.benchops/selfbench/`, gitignored)
//! and is kept between runs; `--fresh` starts over. Each run's slot is the
//! current second, later than every slot the lane already has, so it never
//! resumes an earlier execution and the baseline pointer (which only moves
//! to a later slot) can follow it; the watchdog counts such runs as
//! unscheduled. `--quick` runs the tiny smoke-test lane of
//! `benchmarks/schedule-quick.toml` instead (what `cargo xtask ci` runs).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::target_dir;

mod figures;

use figures::{drift_reports, render_figures};

/// The usage line.
pub(crate) const USAGE: &str =
    "usage: cargo xtask selfbench [--quick] [--fresh] [--debug] [--dir DIR] [--fail-on-drift]";

const HELP: &str = "\
cargo xtask selfbench: benchops benchmarks its own hot paths (validate, plan,
analyze, sweep) through its CLI, with a lane run of benchmarks/schedule.toml,
and publishes each run into a local history with drift confirmation.

The first run in DIR has no baseline: it runs the lane twice (the first run
proposes the baseline, the second compares with it). Later runs compare with
the baseline already in DIR's history, so run it again after a change.

Options:
  --quick          the smoke-test lane (benchmarks/schedule-quick.toml, tiny sizes;
                   default DIR .benchops/selfbench-quick)
  --fresh          remove DIR first and start a new history
  --debug          measure the debug binaries instead of the release ones (a DIR
                   holds one build profile)
  --dir DIR        the state, history and issue ledger (default .benchops/selfbench)
  --fail-on-drift  exit 1 when the last run confirms a regression
  -h, --help       this text

Example:
  cargo xtask selfbench            # after a change: compare with the baseline
  cargo xtask selfbench --fresh    # a new history: baseline, then a comparison

See docs/selfbench.md; when it fails, runbooks/selfbench.md.";

/// Removed from the environment of every binary this task runs: what
/// `lane run` refuses in its environment, and the other credentials that
/// benchops-exec keeps from its children (a local self-benchmark publishes
/// nothing and signs nothing, so it needs none of them).
const CREDENTIALS: [&str; 8] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "BENCHOPS_APP_KEY_FILE",
    "BENCHOPS_APP_PRIVATE_KEY",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_RUNTIME_TOKEN",
    "BENCHOPS_SIGN_KEY",
];

/// The file that marks a directory as made by this task, with the lane and
/// build profile it holds.
const MARKER: &str = "selfbench.txt";

/// The history branch the publisher writes.
const BRANCH: &str = "benchmark-history";

/// The longest wait for an interrupted lane execution to be sealed.
const LEFTOVER_WAIT: Duration = Duration::from_secs(900);

/// The command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Options {
    quick: bool,
    fresh: bool,
    debug: bool,
    fail_on_drift: bool,
    dir: Option<PathBuf>,
    help: bool,
}

fn parse_args(args: &[String]) -> Result<Options> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--fresh" => o.fresh = true,
            "--debug" => o.debug = true,
            "--fail-on-drift" => o.fail_on_drift = true,
            "-h" | "--help" => o.help = true,
            "--dir" => {
                let d = it
                    .next()
                    .with_context(|| format!("--dir needs a value\n{USAGE}"))?;
                o.dir = Some(PathBuf::from(d));
            }
            other => match other.strip_prefix("--dir=") {
                Some("") => bail!("--dir needs a value\n{USAGE}"),
                Some(d) => o.dir = Some(PathBuf::from(d)),
                None => bail!("unknown argument {other:?}\n{USAGE}"),
            },
        }
    }
    Ok(o)
}

/// Which lane, manifest and default directory.
#[derive(Debug, Clone, Copy)]
struct Flavor {
    lane: &'static str,
    manifest: &'static str,
    default_dir: &'static str,
}

const FULL: Flavor = Flavor {
    lane: "selfbench",
    manifest: "benchmarks/schedule.toml",
    default_dir: ".benchops/selfbench",
};

const QUICK: Flavor = Flavor {
    lane: "selfbench-quick",
    manifest: "benchmarks/schedule-quick.toml",
    default_dir: ".benchops/selfbench-quick",
};

/// The workspace root (the parent of `xtask/`).
fn workspace_root() -> Result<PathBuf> {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = xtask
        .parent()
        .context("the xtask crate has no parent directory")?;
    Ok(root.to_path_buf())
}

/// How the measured binaries are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    /// `cargo build -p benchops-exec -p benchops-publish --bins`.
    Bins,
    /// The test suite's build, `cargo test --no-run --workspace`: a no-op
    /// after the suite has run. Building the two binaries alone resolves
    /// the dependencies' features differently and compiles them again.
    TestSuite,
}

/// Runs `cargo xtask selfbench`; see the module docs.
pub fn main(args: &[String]) -> Result<()> {
    let opts = parse_args(args)?;
    if opts.help {
        println!("{HELP}");
        return Ok(());
    }
    run(&opts, Build::Bins)
}

/// The smoke run of `cargo xtask ci`, after the test suite: the quick lane
/// with the debug binaries the suite was tested with, in a fresh
/// `selfbench-ci/` under the target directory.
pub fn ci() -> Result<()> {
    let opts = Options {
        quick: true,
        fresh: true,
        debug: true,
        dir: Some(target_dir()?.join("selfbench-ci")),
        ..Options::default()
    };
    run(&opts, Build::TestSuite)
}

fn run(opts: &Options, build: Build) -> Result<()> {
    let started = Instant::now();
    let root = workspace_root()?;
    let flavor = if opts.quick { QUICK } else { FULL };
    let profile = if opts.debug { "debug" } else { "release" };
    let dir = std::path::absolute(
        opts.dir
            .clone()
            .unwrap_or_else(|| root.join(flavor.default_dir)),
    )
    .context("failed to make the directory absolute")?;
    prepare_dir(&dir, opts.fresh, flavor.lane, profile)?;
    let subject = Subject::of(&root, &dir)?;

    let build_started = Instant::now();
    let mut cargo = match build {
        Build::Bins => vec![
            "build",
            "--locked",
            "-p",
            "benchops-exec",
            "-p",
            "benchops-publish",
            "--bins",
        ],
        Build::TestSuite => vec!["test", "--no-run", "--workspace", "--locked"],
    };
    if !opts.debug {
        cargo.push("--release");
    }
    crate::run("cargo", &cargo, &[])?;
    let build_time = build_started.elapsed();
    let bins = target_dir()?.join(profile);
    let ctx = Ctx {
        exec: bins.join("benchops-exec"),
        publish: bins.join("benchops-publish"),
        manifest: root.join(flavor.manifest),
        lane: flavor.lane,
        scratch: dir.join("scratch"),
        root,
        dir,
    };

    ctx.finish_leftovers()?;
    ctx.sweep(true)?;
    remove_if_exists(&ctx.scratch)?;
    let runs = if ctx.has_baseline()? { 1 } else { 2 };
    let mut last = None;
    for k in 1..=runs {
        let what = match (runs, k) {
            (2, 1) => "no baseline yet: this run proposes one",
            (2, _) => "compared with the baseline the first run proposed",
            _ => "compared with the baseline in history",
        };
        eprintln!("\nxtask: selfbench {k}/{runs}: {what}");
        let slot = next_slot(jiff::Timestamp::now(), &ctx.known_slots()?)?;
        let t = Instant::now();
        let record = ctx.lane_run(&slot, &subject)?;
        let lane_time = t.elapsed();
        remove_if_exists(&ctx.scratch)?;
        ctx.sweep(false)?;
        check_record(&record, &ctx)?;
        if k == 1 && runs == 2 && !ctx.has_baseline()? {
            bail!(
                "the first run did not become the lane's baseline (its record proposes none); see `benchops-exec --state {} lane list` and runbooks/selfbench.md",
                ctx.dir.display()
            );
        }
        if runs == 2 && k == 2 && record.get("baseline").is_none_or(Value::is_null) {
            bail!("the second run had no baseline to compare with");
        }
        eprintln!(
            "xtask: lane run {k}/{runs} took {:.1} s",
            lane_time.as_secs_f64()
        );
        last = Some(record);
    }
    ctx.health()?;
    let record = last.context("no lane run was made")?;
    let metric = compared_metric(&ctx.manifest, ctx.lane)?;
    println!();
    print!("{}", render_figures(&record, &metric));
    println!(
        "\nxtask: selfbench done in {:.1} s (build {:.1} s), {profile} binaries, subject {}",
        started.elapsed().as_secs_f64(),
        build_time.as_secs_f64(),
        subject.describe()
    );
    let d = ctx.dir.display();
    println!("xtask:   history       git --git-dir {d}/history.git log --stat {BRANCH}");
    println!("xtask:   issue ledger  {d}/issues.json");
    println!("xtask:   executions    benchops-exec --state {d} lane list");
    if opts.fail_on_drift && drift_reports(&record) > 0 {
        bail!("the last run confirmed a regression (--fail-on-drift)");
    }
    Ok(())
}

/// Removes `dir` for `--fresh` (only when this task made it), checks that a
/// kept one holds the same lane and build profile, and writes the marker.
fn prepare_dir(dir: &Path, fresh: bool, lane: &str, profile: &str) -> Result<()> {
    let marker = dir.join(MARKER);
    let want = format!("lane={lane}\nprofile={profile}\n");
    if dir.exists() {
        match std::fs::read_to_string(&marker) {
            Ok(_) if fresh => {
                std::fs::remove_dir_all(dir)
                    .with_context(|| format!("failed to remove {}", dir.display()))?;
            }
            Ok(have) if have != want => bail!(
                "{} holds another selfbench ({}), not lane {lane} with {profile} binaries; figures of different builds or lanes are not compared: give --fresh to start over there, or another --dir",
                dir.display(),
                have.trim().replace('\n', ", ")
            ),
            Ok(_) => return Ok(()),
            Err(_) if is_empty_dir(dir) => {}
            Err(_) => bail!(
                "{} exists and was not made by cargo xtask selfbench (no {MARKER}); it is left alone: remove it yourself or give another --dir",
                dir.display()
            ),
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    write_atomic(&marker, want.as_bytes())
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}

fn remove_if_exists(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("failed to remove {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Temp file, fsync, rename, fsync of the directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let parent = path.parent().context("a file without a directory")?;
    let tmp = parent.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let mut f = std::fs::File::create(&tmp)
        .with_context(|| format!("failed to create {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("failed to write {}", path.display()))?;
    std::fs::File::open(parent)?.sync_all()?;
    Ok(())
}

/// Runs git with `args`, failing with its standard error.
fn git(args: &[&str], env: &[(&str, &Path)]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdin(Stdio::null())
        .output()
        .context("failed to run git")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The subject commit: `HEAD`, or a snapshot of the working tree over it.
#[derive(Debug, Clone)]
struct Subject {
    dir: PathBuf,
    head: String,
    commit: String,
}

impl Subject {
    /// `HEAD` of the checkout at `root` when its working tree matches it;
    /// otherwise a commit of the working tree (tracked and untracked files
    /// that are not ignored) whose parent is `HEAD`, written to
    /// `DIR/subject.git`, which borrows the checkout's objects. Its dates
    /// and author are fixed, so the same tree gives the same commit id.
    /// `DIR` itself is left out when it lies inside the checkout.
    fn of(root: &Path, dir: &Path) -> Result<Subject> {
        let r = root.display().to_string();
        let head = git(&["-C", &r, "rev-parse", "HEAD"], &[])
            .context("the selfbench subject is this checkout, which needs a commit")?;
        // A DIR inside the checkout that git does not ignore is excluded
        // (an ignored one is left out anyway, and git refuses to name it).
        let mut paths = vec![":/".to_owned()];
        let inside = dir.strip_prefix(root).ok().map(|p| p.display().to_string());
        if let Some(inside) = inside.filter(|p| !p.is_empty()) {
            let ignored = Command::new("git")
                .args(["-C", &r, "check-ignore", "--quiet", "--", &inside])
                .stdin(Stdio::null())
                .status()
                .context("failed to run git")?
                .success();
            if !ignored {
                paths.push(format!(":(top,exclude){inside}"));
            }
        }
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut status = vec![
            "-C",
            &r,
            "status",
            "--porcelain",
            "--untracked-files=normal",
            "--",
        ];
        status.extend(&paths);
        let dirty = !git(&status, &[])?.is_empty();
        if !dirty {
            return Ok(Subject {
                dir: root.to_path_buf(),
                commit: head.clone(),
                head,
            });
        }
        let repo = dir.join("subject.git");
        let objects = git(
            &[
                "-C",
                &r,
                "rev-parse",
                "--path-format=absolute",
                "--git-common-dir",
            ],
            &[],
        )?;
        if !repo.join("HEAD").exists() {
            git(
                &["init", "--quiet", "--bare", &repo.display().to_string()],
                &[],
            )?;
        }
        write_atomic(
            &repo.join("objects/info/alternates"),
            format!("{objects}/objects\n").as_bytes(),
        )?;
        let index = dir.join("subject.index");
        let env = [
            ("GIT_DIR", repo.as_path()),
            ("GIT_WORK_TREE", root),
            ("GIT_INDEX_FILE", index.as_path()),
        ];
        git(&["read-tree", &head], &env)?;
        let mut add = vec!["-C", &r, "add", "--all", "--"];
        add.extend(&paths);
        git(&add, &env)?;
        let tree = git(&["write-tree"], &env)?;
        if tree == git(&["-C", &r, "rev-parse", "HEAD^{tree}"], &[])? {
            return Ok(Subject {
                dir: root.to_path_buf(),
                commit: head.clone(),
                head,
            });
        }
        let date = git(
            &["-C", &r, "show", "-s", "--format=@%ct +0000", "HEAD"],
            &[],
        )?;
        let date = PathBuf::from(date);
        let who = PathBuf::from("benchops selfbench");
        let mail = PathBuf::from("selfbench@benchops.invalid");
        let mut env = env.to_vec();
        env.extend([
            ("GIT_AUTHOR_NAME", who.as_path()),
            ("GIT_AUTHOR_EMAIL", mail.as_path()),
            ("GIT_AUTHOR_DATE", date.as_path()),
            ("GIT_COMMITTER_NAME", who.as_path()),
            ("GIT_COMMITTER_EMAIL", mail.as_path()),
            ("GIT_COMMITTER_DATE", date.as_path()),
        ]);
        let message = format!("selfbench: the working tree over {head}");
        let commit = git(
            &[
                "commit-tree",
                "--no-gpg-sign",
                &tree,
                "-p",
                &head,
                "-m",
                &message,
            ],
            &env,
        )?;
        git(
            &["update-ref", &format!("refs/snapshots/{commit}"), &commit],
            &env,
        )?;
        Ok(Subject {
            dir: root.to_path_buf(),
            head,
            commit,
        })
    }

    fn describe(&self) -> String {
        if self.commit == self.head {
            format!("HEAD {}", short(&self.commit))
        } else {
            format!(
                "{} (the working tree over HEAD {}; git --git-dir DIR/subject.git show --stat {})",
                short(&self.commit),
                short(&self.head),
                short(&self.commit)
            )
        }
    }
}

fn short(s: &str) -> &str {
    s.get(..12).unwrap_or(s)
}

/// The paths one selfbench works with.
#[derive(Debug)]
struct Ctx {
    root: PathBuf,
    dir: PathBuf,
    exec: PathBuf,
    publish: PathBuf,
    manifest: PathBuf,
    lane: &'static str,
    scratch: PathBuf,
}

/// The result of one command.
struct Ran {
    code: Option<i32>,
    stdout: String,
}

impl Ctx {
    /// Runs a binary with the environment the case scripts read and without
    /// publication credentials; stderr passes through, stdout is echoed.
    fn call(&self, program: &Path, args: &[&str], echo: bool) -> Result<Ran> {
        eprintln!("xtask: $ {} {}", program.display(), args.join(" "));
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&self.root)
            .env("SELFBENCH_EXEC", &self.exec)
            .env("SELFBENCH_PUBLISH", &self.publish)
            .env("SELFBENCH_SCRATCH", &self.scratch)
            .env_remove("BENCHOPS_STATE")
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        for c in CREDENTIALS {
            cmd.env_remove(c);
        }
        let out = cmd
            .output()
            .with_context(|| format!("failed to start {}", program.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if echo {
            print!("{stdout}");
        }
        Ok(Ran {
            code: out.status.code(),
            stdout,
        })
    }

    /// Like `call`, failing unless the exit status is 0.
    fn call_ok(&self, program: &Path, args: &[&str], echo: bool) -> Result<String> {
        let ran = self.call(program, args, echo)?;
        if ran.code != Some(0) {
            bail!(
                "`{} {}` failed with exit status {}",
                program.display(),
                args.join(" "),
                ran.code
                    .map_or_else(|| "none (a signal)".to_owned(), |c| c.to_string())
            );
        }
        Ok(ran.stdout)
    }

    fn state(&self) -> String {
        self.dir.display().to_string()
    }

    fn history(&self) -> PathBuf {
        self.dir.join("history.git")
    }

    /// The publisher's local sweep of `DIR` (creates the history on first
    /// use). With `quiet`, its report is shown only when it published
    /// something.
    fn sweep(&self, quiet: bool) -> Result<()> {
        let m = self.manifest.display().to_string();
        let out = self.call_ok(
            &self.publish,
            &["sweep", "--local", &self.state(), "--manifest", &m],
            !quiet,
        )?;
        if quiet {
            if out.contains("persist: 0 new record(s), 0 already present") {
                eprintln!("xtask: nothing was waiting to be published");
            } else {
                print!("{out}");
            }
        }
        Ok(())
    }

    /// Health of the lane (exit 1, a missed slot, is reported, not fatal).
    fn health(&self) -> Result<()> {
        let m = self.manifest.display().to_string();
        let ran = self.call(
            &self.publish,
            &["health", "--local", &self.state(), "--manifest", &m],
            true,
        )?;
        if !matches!(ran.code, Some(0 | 1)) {
            bail!("benchops-publish health failed with {:?}", ran.code);
        }
        Ok(())
    }

    fn has_baseline(&self) -> Result<bool> {
        let h = self.history().display().to_string();
        let spec = format!("{BRANCH}:baselines/{}.json", self.lane);
        let st = Command::new("git")
            .args(["--git-dir", &h, "cat-file", "-e", &spec])
            .stderr(Stdio::null())
            .status()
            .context("failed to run git")?;
        Ok(st.success())
    }

    /// The lane's executions in the state directory: (id, phase, slot).
    fn executions(&self) -> Result<Vec<(String, String, String)>> {
        let out = self.call_ok(
            &self.exec,
            &["--state", &self.state(), "lane", "list"],
            false,
        )?;
        Ok(parse_lane_list(&out, self.lane))
    }

    /// Every slot the lane has: in history and in the state directory.
    fn known_slots(&self) -> Result<Vec<jiff::Timestamp>> {
        let h = self.history().display().to_string();
        let prefix = format!("results/{}/", self.lane);
        let listing = git(
            &[
                "--git-dir",
                &h,
                "ls-tree",
                "-r",
                "--name-only",
                BRANCH,
                "--",
                &prefix,
            ],
            &[],
        )
        .unwrap_or_default();
        let mut slots = history_slots(&listing);
        for (_, _, slot) in self.executions()? {
            slots.push(
                slot.parse().with_context(|| {
                    format!("lane list printed a slot that is not a time: {slot}")
                })?,
            );
        }
        Ok(slots)
    }

    /// Seals what an interrupted run left unfinished, so that its children
    /// do not run beside the new ones and its record is published.
    fn finish_leftovers(&self) -> Result<()> {
        for (id, phase, slot) in self.executions()? {
            if phase == "sealed" {
                continue;
            }
            eprintln!(
                "xtask: finishing the lane execution {id} ({phase}, slot {slot}) that an earlier run left"
            );
            let until = Instant::now() + LEFTOVER_WAIT;
            loop {
                let out = self.call_ok(
                    &self.exec,
                    &["--state", &self.state(), "lane", "advance", &id],
                    false,
                )?;
                if out.lines().any(|l| l.trim_end().ends_with(" sealed")) {
                    break;
                }
                if Instant::now() > until {
                    bail!(
                        "the lane execution {id} was not sealed within {} s; see runbooks/selfbench.md",
                        LEFTOVER_WAIT.as_secs()
                    );
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        Ok(())
    }

    /// One lane run to its sealed record, which is returned.
    fn lane_run(&self, slot: &str, subject: &Subject) -> Result<Value> {
        let m = self.manifest.display().to_string();
        let h = self.history().display().to_string();
        let sealed = self.dir.join("sealed").display().to_string();
        let subject_dir = subject.dir.display().to_string();
        let out = self.call_ok(
            &self.exec,
            &[
                "--state",
                &self.state(),
                "lane",
                "run",
                "--manifest",
                &m,
                "--lane",
                self.lane,
                "--history",
                &h,
                "--subject",
                &subject_dir,
                "--commit",
                &subject.commit,
                "--slot",
                slot,
                // Each run is its own second, not a firing of the lane's
                // cron: an ad-hoc run, recorded as such.
                "--unscheduled",
                "selfbench: a run of this checkout at the current second",
                "--slots",
                "1",
                "--out",
                &sealed,
                "--wait",
            ],
            true,
        )?;
        let id = out
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .context("lane run printed no execution id")?
            .to_owned();
        let status = self.call_ok(
            &self.exec,
            &["--state", &self.state(), "lane", "status", &id, "--json"],
            false,
        )?;
        let status: Value =
            serde_json::from_str(&status).context("lane status --json is not JSON")?;
        let path = status
            .pointer("/execution/sealed/path")
            .and_then(Value::as_str)
            .with_context(|| {
                format!("the lane execution {id} is not sealed after lane run --wait")
            })?;
        let bytes = std::fs::read(path).with_context(|| format!("failed to read {path}"))?;
        serde_json::from_slice(&bytes).with_context(|| format!("{path} is not JSON"))
    }
}

/// Fails when a case of the record is in error or skipped: the hot path or
/// its fixture failed, and the comparison would mean nothing.
fn check_record(record: &Value, ctx: &Ctx) -> Result<()> {
    let mut bad = Vec::new();
    for c in record
        .get("cases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = c.get("id").and_then(Value::as_str).unwrap_or("?");
        match c.get("outcome").and_then(Value::as_str) {
            Some("pass" | "drift") => {}
            Some("skipped") => bad.push(format!("{id}: skipped: {}", c["skip_reason"])),
            other => bad.push(format!("{id}: {}: {}", other.unwrap_or("?"), c["error"])),
        }
    }
    if !bad.is_empty() {
        bail!(
            "{} case(s) did not measure:\n  {}\nthe children's output is in their result.json: `benchops-exec --state {} bench status <benchmark>` (benchmarks from `lane status <id>`); see runbooks/selfbench.md",
            bad.len(),
            bad.join("\n  "),
            ctx.dir.display()
        );
    }
    Ok(())
}

/// The metric the lane compares (the first of `[lanes.comparison] metrics`).
fn compared_metric(manifest: &Path, lane: &str) -> Result<String> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("failed to read {}", manifest.display()))?;
    let m = benchops::manifest::from_toml(&text, &manifest.display().to_string())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let lane = m
        .manifest
        .lanes
        .iter()
        .find(|l| l.name.as_str() == lane)
        .with_context(|| format!("{} has no lane {lane}", manifest.display()))?;
    lane.comparison
        .as_ref()
        .and_then(|c| c.metrics.as_ref())
        .and_then(|m| m.first().cloned())
        .with_context(|| {
            format!(
                "lane {lane:?} names no compared metric",
                lane = lane.name.as_str()
            )
        })
}

/// The lane's executions in `lane list` output: (id prefix, phase, slot).
fn parse_lane_list(out: &str, lane: &str) -> Vec<(String, String, String)> {
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [id, phase, l, "slot", slot, ..] if *l == lane => {
                    Some(((*id).to_owned(), (*phase).to_owned(), (*slot).to_owned()))
                }
                _ => None,
            }
        })
        .collect()
}

/// The slots of history paths `results/<lane>/<yyyy>/<mm>/<compact>--<hex>.json`;
/// other paths are left out.
fn history_slots(listing: &str) -> Vec<jiff::Timestamp> {
    listing
        .lines()
        .filter_map(|p| {
            let name = p.rsplit('/').next()?.strip_suffix(".json")?;
            let (compact, hex) = name.split_once("--")?;
            if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let t = benchops::time::Utc::parse_compact(compact).ok()?;
            jiff::Timestamp::from_second(t.unix_seconds()).ok()
        })
        .collect()
}

/// The slot of the next run: the current second, or one second after the
/// latest known slot when that is not earlier (a clock set back, or slots
/// given by hand in the future), so that no two runs share a slot.
fn next_slot(now: jiff::Timestamp, known: &[jiff::Timestamp]) -> Result<String> {
    let now = jiff::Timestamp::from_second(now.as_second())?;
    let slot = match known.iter().max() {
        Some(&latest) if latest >= now => {
            let next = latest.checked_add(jiff::SignedDuration::from_secs(1))?;
            eprintln!(
                "xtask: the lane already has a slot at {latest}, not before now; this run takes {next}"
            );
            next
        }
        _ => now,
    };
    Ok(slot.to_string())
}

#[cfg(test)]
mod tests;
