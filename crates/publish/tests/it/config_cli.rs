//! The project config file as `benchops-publish` reads it (one definition
//! with `benchops-exec`, in `benchops-cli`): `benchops.toml` gives the
//! `--manifest` a command requires; a flag wins; a bad file is an error
//! naming the file and the key.

use std::path::Path;
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-publish");

fn publish(dir: &Path, args: &[&str]) -> Output {
    Command::new(EXE)
        .current_dir(dir)
        .args(args)
        .env_remove("BENCHOPS_CONFIG")
        .output()
        .expect("benchops-publish runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_file_gives_a_required_manifest_and_a_flag_wins() {
    let dir = tempfile::tempdir().expect("temp dir");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    std::fs::copy(
        examples.join("schedule.toml"),
        dir.path().join("schedule.toml"),
    )
    .expect("copy");
    let watch = |extra: &[&str]| {
        let mut args = vec!["watchdog", "--local", "."];
        args.extend(extra);
        publish(dir.path(), &args)
    };
    // No file: --manifest is required.
    let o = watch(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--manifest <FILE>"), "{}", stderr(&o));
    // The file's manifest is read (the watchdog then finds no history).
    std::fs::write(
        dir.path().join("benchops.toml"),
        "manifest = \"schedule.toml\"\n",
    )
    .expect("write");
    let o = watch(&[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("no history repository") && !err.contains("<FILE>"),
        "{err}"
    );
    // A flag wins over the file.
    let o = watch(&["--manifest", "elsewhere.toml"]);
    assert!(stderr(&o).contains("elsewhere.toml"), "{}", stderr(&o));
    // A bad key names the file and the key.
    std::fs::write(
        dir.path().join("benchops.toml"),
        "manifest = \"s.toml\"\nlocal = \".\"\n",
    )
    .expect("write");
    let o = watch(&[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: the config file ")
            && err.contains("benchops.toml has an unknown key `local`"),
        "{err}"
    );
}
