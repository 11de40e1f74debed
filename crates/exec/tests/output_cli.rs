//! The global output options of `benchops-exec`: `--quiet` leaves only
//! errors and the result, `--color` and `NO_COLOR` decide whether the
//! error prefix and verdict words are coloured, and JSON never is.

use std::path::Path;
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "quiet"
command = ["sh", "-c", "echo '{\"metric\": \"work_s\", \"value\": 0.0046515670000000005, \"unit\": \"s\"}'"]
repetitions = 2

[metrics]
json_lines = true
"#;

/// `benchops-exec` in `dir` with no config file or colour variable of the
/// caller's.
fn exec(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(EXE);
    c.current_dir(dir)
        .args(args)
        .env_remove("BENCHOPS_STATE")
        .env_remove("BENCHOPS_CONFIG")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("benchops-exec runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const ESC: &str = "\u{1b}[";

#[test]
fn quiet_leaves_the_result_and_drops_the_notes() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("i.toml"), INTENT).expect("intent");
    let o = exec(dir.path(), &["--quiet", "bench", "run", "i.toml"], &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert_eq!(err, "", "no notes with --quiet");
    assert!(
        out.contains("4.652 ms"),
        "the analysis is the result: {out}"
    );
    // Without --quiet the same command says what it did.
    let o = exec(dir.path(), &["bench", "run", "i.toml"], &[]);
    let (_, err) = text(&o);
    assert!(err.contains("benchmark sha256:"), "{err}");
    // Standard error is not a terminal: no progress bar.
    assert!(!err.contains("elapsed") && !err.contains('█'), "{err}");
    // An error still prints with -q.
    let o = exec(dir.path(), &["-q", "bench", "status", "ffffffff"], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.starts_with("error: "), "{err}");
}

#[test]
fn color_follows_the_flag_then_no_color_then_the_terminal_and_never_touches_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err_of = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = args.to_vec();
        all.extend(["bench", "status", "ffffffff"]);
        text(&exec(dir.path(), &all, env)).1
    };
    // Standard error is a pipe here: no colour by default.
    assert!(!err_of(&[], &[]).contains(ESC));
    assert!(err_of(&["--color", "always"], &[]).starts_with(ESC));
    // The flag overrides NO_COLOR; auto honours it.
    assert!(err_of(&["--color", "always"], &[("NO_COLOR", "1")]).contains(ESC));
    assert!(!err_of(&["--color", "auto"], &[("NO_COLOR", "1")]).contains(ESC));
    assert!(!err_of(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]).contains(ESC));
    // Auto with a forced colour variable, as a terminal would get.
    assert!(err_of(&[], &[("CLICOLOR_FORCE", "1")]).contains(ESC));
    let e = text(&exec(
        dir.path(),
        &["--color", "sometimes", "bench", "list"],
        &[],
    ))
    .1;
    assert!(e.contains("--color") && e.contains("always"), "{e}");

    // JSON is the same bytes whatever --color says.
    std::fs::write(dir.path().join("i.toml"), INTENT).expect("intent");
    let o = exec(
        dir.path(),
        &["-q", "bench", "run", "i.toml", "--format", "json"],
        &[],
    );
    let (plain, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let digest = serde_json::from_str::<serde_json::Value>(&plain).expect("JSON")["benchmark"]
        .as_str()
        .expect("digest")
        .to_owned();
    for args in [
        vec!["bench", "analyze", digest.as_str(), "--format", "json"],
        vec!["bench", "list", "--json"],
    ] {
        let never = exec(
            dir.path(),
            &[&["--color", "never"], args.as_slice()].concat(),
            &[],
        );
        let always = exec(
            dir.path(),
            &[&["--color", "always"], args.as_slice()].concat(),
            &[],
        );
        assert_eq!(never.stdout, always.stdout, "{args:?}");
        assert!(
            !String::from_utf8_lossy(&always.stdout).contains(ESC),
            "{args:?}"
        );
    }
    assert!(
        plain.contains("0.0046515670000000005"),
        "full precision: {plain}"
    );
}
