//! The global output options of `benchops-publish`, shared with
//! `benchops-exec` (`benchops-cli`): `--color` paints the error prefix and
//! never JSON, `NO_COLOR` is honoured, and `--quiet` keeps errors and the
//! result.

use std::path::Path;
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-publish");
const ESC: &str = "\u{1b}[";

fn publish(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(EXE);
    c.current_dir(dir)
        .args(args)
        .env_remove("BENCHOPS_CONFIG")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("benchops-publish runs")
}

#[test]
fn color_paints_errors_only_where_asked_and_never_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let draft = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json");
    let sealed = benchops::seal::seal_json(&std::fs::read(draft).expect("draft")).expect("seals");
    std::fs::write(dir.path().join(sealed.file_name()), sealed.bytes()).expect("write");
    let err = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = args.to_vec();
        all.extend(["validate", "no-such-dir"]);
        let o = publish(dir.path(), &all, env);
        assert_eq!(o.status.code(), Some(2));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    assert!(err(&[], &[]).starts_with("error: "));
    assert!(err(&["--color", "always"], &[]).starts_with(ESC));
    assert!(err(&["--color", "always"], &[("NO_COLOR", "1")]).starts_with(ESC));
    assert!(!err(&[], &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]).contains(ESC));
    assert!(
        err(&["-q"], &[]).starts_with("error: "),
        "errors print with --quiet"
    );

    let json = |color: &str| {
        let o = publish(
            dir.path(),
            &["--color", color, "validate", "--json", "."],
            &[],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let always = json("always");
    assert_eq!(always, json("never"));
    assert!(!String::from_utf8_lossy(&always).contains(ESC));
    let quiet = publish(dir.path(), &["--quiet", "validate", "."], &[]);
    assert_eq!(
        quiet.stdout,
        publish(dir.path(), &["validate", "."], &[]).stdout
    );
}
