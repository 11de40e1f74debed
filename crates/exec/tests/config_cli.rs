//! The project config file as `benchops-exec` reads it: `benchops.toml`
//! at the top of the git work tree (or `BENCHOPS_CONFIG`) gives `--state`
//! and `--manifest` defaults; the flag, then `BENCHOPS_STATE`, win over it;
//! a bad file or variable is an error naming it. (Lookup and precedence
//! rules in detail: `benchops-cli`'s unit tests.)

use std::path::Path;
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "cfg"
command = ["true"]
repetitions = 1
"#;

fn exec(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(EXE);
    c.current_dir(cwd)
        .args(args)
        .env_remove("BENCHOPS_STATE")
        .env_remove("BENCHOPS_CONFIG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("benchops-exec runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A work tree `repo/` (with a `.git` directory) holding the intent and
/// `benchops.toml`, and its subdirectory `repo/sub/`.
fn repo(config: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().expect("temp dir");
    let repo = t.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect(".git");
    std::fs::create_dir_all(repo.join("sub")).expect("sub");
    std::fs::write(repo.join("i.toml"), INTENT).expect("intent");
    std::fs::write(repo.join("benchops.toml"), config).expect("config");
    t
}

#[test]
fn state_comes_from_the_flag_then_the_environment_then_the_file() {
    let t = repo("state = \"from-file\"\n");
    let repo = t.path().join("repo");
    let sub = repo.join("sub");
    let plan = |env: &[(&str, &str)], flag: Option<&str>| {
        let mut args = vec![];
        if let Some(f) = flag {
            args.extend(["--state", f]);
        }
        args.extend(["bench", "plan", "../i.toml"]);
        let o = exec(&sub, &args, env);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    // From a subdirectory, the file at the top of the work tree, its path
    // relative to the file.
    plan(&[], None);
    assert!(repo.join("from-file/benchmarks").is_dir());
    assert!(!sub.join(".benchops").exists() && !sub.join("from-file").exists());
    plan(&[("BENCHOPS_STATE", "from-env")], None);
    assert!(
        sub.join("from-env/benchmarks").is_dir(),
        "the variable wins"
    );
    plan(&[("BENCHOPS_STATE", "from-env")], Some("from-flag"));
    assert!(sub.join("from-flag/benchmarks").is_dir(), "the flag wins");
    // BENCHOPS_CONFIG names another file, and then the repository's is not read.
    std::fs::write(t.path().join("other.toml"), "state = \"other-state\"\n").expect("write");
    let other = t.path().join("other.toml");
    plan(&[("BENCHOPS_CONFIG", other.to_str().expect("utf-8"))], None);
    assert!(t.path().join("other-state/benchmarks").is_dir());
}

#[test]
fn a_required_manifest_comes_from_the_file() {
    let t = repo("manifest = \"no-such-schedule.toml\"\n");
    let repo = t.path().join("repo");
    // Without the file --manifest is required (clap's usage error).
    let bare = tempfile::tempdir().expect("temp dir");
    let o = exec(
        bare.path(),
        &["lane", "run", "--lane", "x", "--history", "h", "--out", "o"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--manifest <MANIFEST>"),
        "{}",
        stderr(&o)
    );
    // With it, the command reads the file's manifest (which is missing here).
    let o = exec(
        &repo.join("sub"),
        &["lane", "run", "--lane", "x", "--history", "h", "--out", "o"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("no-such-schedule.toml") && !err.contains("<MANIFEST>"),
        "{err}"
    );
}

#[test]
fn a_bad_file_or_variable_is_an_error_naming_it() {
    let t = repo("state = \".benchops\"\nmanifest = 3\n");
    let repo = t.path().join("repo");
    let o = exec(&repo, &["bench", "list"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "error: the config file {}: `manifest` must be a non-empty string (a path), not an integer\n",
            repo.join("benchops.toml").display()
        )
    );
    std::fs::write(repo.join("benchops.toml"), "sate = \"x\"\n").expect("write");
    let err = stderr(&exec(&repo, &["bench", "list"], &[]));
    assert!(
        err.contains("unknown key `sate`") && err.contains("benchops.toml"),
        "{err}"
    );
    let o = exec(
        &repo,
        &["bench", "list"],
        &[("BENCHOPS_CONFIG", "missing.toml")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("error: BENCHOPS_CONFIG=missing.toml cannot be read: "),
        "{}",
        stderr(&o)
    );
}
