//! `cargo xtask docs [--no-build] [FILE…]`: the documentation's examples,
//! run (`--no-build` uses the binaries already built).
//!
//! Every `sh` and `console` block of README.md, docs/ and runbooks/ (the
//! rules are in [`parse`]) runs against the inputs the repository ships:
//! each markdown file gets a fresh copy of the repository's tracked files,
//! and its blocks run there in order, sharing that directory (not shell
//! variables), with this workspace's debug binaries first on `PATH`, a
//! `HOME` of their own, and no `BENCHOPS_*`, `GITHUB_*` or `GH_*` variable
//! from the caller. A transcript's output is checked against the block
//! with snapbox's patterns. After README.md's blocks, in the same
//! directory (whenever README.md runs), every example of every `--help` of `benchops-exec`,
//! `benchops-publish` and `benchops-app` runs. The report counts what ran,
//! what had its output checked, and what was skipped with which reason;
//! any failure fails the task, after every example has run.

mod parse;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use snapbox::IntoData as _;

use parse::{Block, Body, Directive};

/// How long one block or command may run before it is killed and failed.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(600);
/// How many lines of a failing example's output the report shows.
const TAIL_LINES: usize = 40;
/// The binaries whose `--help` examples run.
const BINARIES: [&str; 3] = ["benchops-exec", "benchops-publish", "benchops-app"];

/// The README's Quick start, which CI runs as its own steps (the
/// pipeline, and CI itself, which runs this harness).
const QUICK_START: &str = "cargo xtask pipeline\ncargo xtask ci\n";

/// Set for every example: `cargo xtask ci` refuses to run inside one.
pub const IN_DOCS: &str = "XTASK_IN_DOCS_EXAMPLE";

/// What the run counted.
#[derive(Default)]
struct Tally {
    run: usize,
    checked: usize,
    skipped: Vec<(String, String)>,
    failures: Vec<String>,
}

pub fn main(args: &[String]) -> Result<()> {
    let root = std::env::current_dir().context("no current directory")?;
    let target = crate::target_dir()?;
    // `--no-build`: run with the binaries already in the target directory.
    let no_build = args.iter().any(|a| a == "--no-build");
    let args: Vec<String> = args
        .iter()
        .filter(|a| *a != "--no-build")
        .cloned()
        .collect();
    let args = args.as_slice();
    // `cargo xtask` runs this task with the variables cargo sets for a
    // binary it runs (`CARGO_PKG_*`, `CARGO_MANIFEST_DIR`, …); build
    // scripts that watch them would rebuild their crates, so the build
    // gets the caller's environment without them.
    let mut build = Command::new("cargo");
    build.args([
        "build",
        "--locked",
        "-p",
        "benchops-exec",
        "-p",
        "benchops-publish",
        "-p",
        "benchops-app",
        "--bins",
    ]);
    for (k, _) in std::env::vars() {
        if k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_CRATE_")
            || k.starts_with("CARGO_BIN_")
            || k == "CARGO_MANIFEST_DIR"
            || k == "CARGO_MANIFEST_PATH"
            || k == "CARGO_PRIMARY_PACKAGE"
        {
            build.env_remove(k);
        }
    }
    if !no_build {
        eprintln!(
            "xtask: $ cargo build --locked -p benchops-exec -p benchops-publish -p benchops-app --bins"
        );
        if !build.status().context("starting cargo build")?.success() {
            bail!("building the binaries the examples run failed");
        }
    }
    let bin = target.join("debug");
    let work = target.join("docs-test");
    let files = markdown_files(&root, args)?;
    let tracked = tracked_files(&root)?;
    let started = Instant::now();
    let mut tally = Tally::default();
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {rel}"))?;
        let blocks = parse::markdown(&text).map_err(|e| anyhow::anyhow!("{rel}: {e}"))?;
        let with_help = rel == "README.md";
        if blocks.is_empty() && !with_help {
            continue;
        }
        let env = Sandbox::new(&root, &work, &rel, &bin, &target, &tracked)?;
        eprintln!("docs: {rel}: {} block(s)", blocks.len());
        for block in &blocks {
            if rel == "README.md" && block.body == Body::Script(QUICK_START.to_string()) {
                tally.skipped.push((
                    format!("{rel}:{}", block.line),
                    "the Quick start's two lines are steps of CI itself: `pipeline`, then `cargo xtask ci`, which runs this harness".into(),
                ));
                continue;
            }
            run_block(&env, &rel, block, &mut tally);
        }
        if with_help {
            for binary in BINARIES {
                help_examples(&env, binary, &mut tally)?;
            }
        }
    }
    eprintln!(
        "docs: {} example(s) run, {} with output checked, {} skipped, in {:.0} s",
        tally.run,
        tally.checked,
        tally.skipped.len(),
        started.elapsed().as_secs_f64()
    );
    for (at, why) in &tally.skipped {
        eprintln!("docs:   skipped {at}: {why}");
    }
    if !tally.failures.is_empty() {
        for f in &tally.failures {
            eprintln!("docs: failed: {}", f.lines().next().unwrap_or(""));
        }
        bail!("{} documentation example(s) failed", tally.failures.len());
    }
    println!(
        "docs: {} passed, 0 failed, {} skipped",
        tally.run,
        tally.skipped.len()
    );
    Ok(())
}

/// README.md, then docs/ and runbooks/ recursively, sorted; or the files
/// named on the command line.
fn markdown_files(root: &Path, args: &[String]) -> Result<Vec<PathBuf>> {
    if !args.is_empty() {
        return Ok(args.iter().map(|a| root.join(a)).collect());
    }
    let mut out = vec![root.join("README.md")];
    for dir in ["docs", "runbooks"] {
        let mut found = Vec::new();
        walk(&root.join(dir), &mut found)?;
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// The repository's files as a clone would have them: tracked, plus new
/// files not ignored, so an example is tried before it is committed.
fn tracked_files(root: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .context("running git ls-files")?;
    if !out.status.success() {
        bail!("git ls-files failed: the docs harness runs in a git checkout");
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect())
}

/// One markdown file's directory and environment.
struct Sandbox {
    dir: PathBuf,
    bin: PathBuf,
    scripts: PathBuf,
    env: Vec<(String, String)>,
}

impl Sandbox {
    fn new(
        root: &Path,
        work: &Path,
        rel: &str,
        bin: &Path,
        target: &Path,
        tracked: &[PathBuf],
    ) -> Result<Sandbox> {
        let base = work.join(slug(rel));
        if base.exists() {
            std::fs::remove_dir_all(&base)
                .with_context(|| format!("clearing {}", base.display()))?;
        }
        let dir = base.join("repo");
        let scripts = base.join("scripts");
        let home = base.join("home");
        for d in [&dir, &scripts, &home] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        for file in tracked {
            let from = root.join(file);
            if !from.is_file() {
                continue;
            }
            let to = dir.join(file);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(&from, &to).with_context(|| format!("copying {}", file.display()))?;
        }
        // A clone is a git checkout: examples that read the history of the
        // repository they run in see one commit of what is shipped.
        let git = |args: &[&str]| -> Result<()> {
            let ok = Command::new("git")
                .args(args)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?
                .success();
            if !ok {
                bail!("git {} failed in {}", args.join(" "), dir.display());
            }
            Ok(())
        };
        git(&["init", "-q", "-b", "main"])?;
        git(&["add", "-A"])?;
        git(&[
            "-c",
            "user.name=docs",
            "-c",
            "user.email=docs@example.org",
            "commit",
            "-q",
            "-m",
            "shipped inputs",
        ])?;
        let real_home = std::env::var("HOME").unwrap_or_default();
        let keep = |name: &str, default: String| {
            (name.to_string(), std::env::var(name).unwrap_or(default))
        };
        // Examples write `sudo` where a user needs it; CI runs them as
        // root, where a missing `sudo` is a pass-through (last on PATH).
        let shims = base.join("shims");
        std::fs::create_dir_all(&shims)?;
        let sudo = shims.join("sudo");
        std::fs::write(
            &sudo,
            "#!/bin/sh\n[ \"$(id -u)\" = 0 ] || { echo 'docs: sudo needed and not installed' >&2; exit 1; }\nexec \"$@\"\n",
        )?;
        std::fs::set_permissions(&sudo, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let path = format!(
            "{}:{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default(),
            shims.display()
        );
        let env = vec![
            ("PATH".to_string(), path),
            ("HOME".to_string(), home.display().to_string()),
            keep("CARGO_HOME", format!("{real_home}/.cargo")),
            keep("RUSTUP_HOME", format!("{real_home}/.rustup")),
            ("CARGO_TARGET_DIR".to_string(), target.display().to_string()),
            ("GIT_AUTHOR_NAME".to_string(), "Docs Example".to_string()),
            (
                "GIT_AUTHOR_EMAIL".to_string(),
                "docs@example.org".to_string(),
            ),
            ("GIT_COMMITTER_NAME".to_string(), "Docs Example".to_string()),
            (
                "GIT_COMMITTER_EMAIL".to_string(),
                "docs@example.org".to_string(),
            ),
            ("NO_COLOR".to_string(), "1".to_string()),
            (IN_DOCS.to_string(), "1".to_string()),
        ];
        Ok(Sandbox {
            dir,
            bin: bin.to_path_buf(),
            scripts,
            env,
        })
    }

    /// A `bash` process in the sandbox, its output (both streams) into
    /// `log`.
    fn bash(&self, args: &[&str], log: &Path) -> Result<Command> {
        let out = std::fs::File::create(log)?;
        let err = out.try_clone()?;
        let mut cmd = Command::new("bash");
        cmd.args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for (k, _) in std::env::vars() {
            if k.starts_with("BENCHOPS_") || k.starts_with("GITHUB_") || k.starts_with("GH_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        Ok(cmd)
    }
}

/// Runs `cmd` to its end, or kills its process group after
/// [`BLOCK_TIMEOUT`]; its exit code, or `None` when it was killed or
/// died of a signal.
fn run_bounded(mut cmd: Command) -> Result<Option<i32>> {
    let mut child = cmd.spawn().context("starting bash")?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code());
        }
        if started.elapsed() > BLOCK_TIMEOUT {
            let _ = Command::new("kill")
                .args(["-KILL", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A name for files of `text`'s example: letters and digits, `-` else.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn tail(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    lines[from..].join("\n")
}

fn exit_text(code: Option<i32>) -> String {
    code.map_or_else(
        || {
            format!(
                "was killed (signal, or no end within {} s)",
                BLOCK_TIMEOUT.as_secs()
            )
        },
        |c| format!("exited {c}"),
    )
}

fn run_block(env: &Sandbox, rel: &str, block: &Block, tally: &mut Tally) {
    let at = format!("{rel}:{}", block.line);
    let (expect, first) = match &block.directive {
        Directive::Skip(reason) => {
            tally.skipped.push((at, reason.clone()));
            return;
        }
        Directive::Run => (0, None),
        Directive::Exit(code) => (*code, None),
        Directive::First(n, reason) => {
            tally
                .skipped
                .push((format!("{at} (after line {n})"), reason.clone()));
            (0, Some(*n))
        }
    };
    let result = match &block.body {
        Body::Script(script) => run_script(env, &at, script, expect, first),
        Body::Transcript(steps) => {
            let mut result = Ok(false);
            for (i, step) in steps.iter().enumerate() {
                let want = if i + 1 == steps.len() { expect } else { 0 };
                result = run_step(env, &at, i, &step.command, &step.expected, want);
                if result.is_err() {
                    break;
                }
            }
            result
        }
    };
    tally.run += 1;
    match result {
        Ok(true) => tally.checked += 1,
        Ok(false) => {}
        Err(failure) => {
            eprintln!("{failure}");
            tally.failures.push(failure);
        }
    }
}

fn run_script(
    env: &Sandbox,
    at: &str,
    script: &str,
    expect: i32,
    first: Option<usize>,
) -> Result<bool, String> {
    let script = match first {
        Some(n) => script.lines().take(n).collect::<Vec<_>>().join("\n") + "\n",
        None => script.to_string(),
    };
    let name = slug(at);
    let file = env.scripts.join(format!("{name}.sh"));
    let log = env.scripts.join(format!("{name}.log"));
    let go = || -> Result<Option<i32>> {
        std::fs::write(&file, &script)?;
        let path = file.display().to_string();
        run_bounded(env.bash(&["-euo", "pipefail", &path], &log)?)
    };
    eprintln!("docs:   {at}");
    match go() {
        Ok(code) if code == Some(expect) => Ok(false),
        Ok(code) => Err(format!(
            "docs: FAILED {at}: the block {} (expected {expect})\n--- block ---\n{script}--- output (last {TAIL_LINES} lines) ---\n{}",
            exit_text(code),
            tail(&log)
        )),
        Err(e) => Err(format!("docs: FAILED {at}: {e:#}")),
    }
}

fn run_step(
    env: &Sandbox,
    at: &str,
    index: usize,
    command: &str,
    expected: &str,
    expect: i32,
) -> Result<bool, String> {
    let name = format!("{}-{index}", slug(at));
    let log = env.scripts.join(format!("{name}.log"));
    eprintln!("docs:   {at}: $ {}", command.lines().next().unwrap_or(""));
    let code = env
        .bash(&["-o", "pipefail", "-c", command], &log)
        .and_then(run_bounded)
        .map_err(|e| format!("docs: FAILED {at}: {e:#}"))?;
    let output = std::fs::read(&log).unwrap_or_default();
    let output = String::from_utf8_lossy(&output).into_owned();
    let mut failure = String::new();
    if code != Some(expect) {
        let _ = write!(
            failure,
            "docs: FAILED {at}: `{command}` {} (expected {expect})\n--- output (last {TAIL_LINES} lines) ---\n{}",
            exit_text(code),
            tail(&log)
        );
        return Err(failure);
    }
    if expected.trim().is_empty() {
        return Ok(false);
    }
    let assert = snapbox::Assert::new().normalize_paths(false);
    match assert.try_eq(None, output.into_data(), expected.to_string().into_data()) {
        Ok(()) => Ok(true),
        Err(e) => Err(format!(
            "docs: FAILED {at}: the output of `{command}` differs from the block\n{e}"
        )),
    }
}

/// Every example of every `--help` of `binary`, in the README's sandbox.
fn help_examples(env: &Sandbox, binary: &str, tally: &mut Tally) -> Result<()> {
    let mut queue = vec![vec![binary.to_string()]];
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path[1..].iter().map(String::as_str).collect();
        args.push("--help");
        let out = Command::new(env.bin.join(binary))
            .args(&args)
            .env("NO_COLOR", "1")
            .output()
            .with_context(|| format!("running {binary} --help"))?;
        if !out.status.success() {
            bail!("`{} --help` exited {}", path.join(" "), out.status);
        }
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let name = path.join(" ");
        for (i, ex) in parse::help_examples(&help).iter().enumerate() {
            let at = format!("`{name} --help` example {}", i + 1);
            if let Some(reason) = &ex.skip {
                tally.skipped.push((at, reason.clone()));
                continue;
            }
            tally.run += 1;
            if let Err(f) = run_step(env, &at, 0, &ex.command, "", ex.exit) {
                eprintln!("{f}");
                tally.failures.push(f);
            }
        }
        for sub in parse::subcommands(&help).into_iter().rev() {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
    }
    Ok(())
}
