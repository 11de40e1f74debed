//! `benchops-publish` stops quietly when its reader has gone away
//! (`benchops-publish validate --json … | head`): no panic, no "Broken pipe"
//! message, and the exit code the command would have had anyway.

use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-publish");

/// The write end of a pipe whose reader has already exited.
fn closed_pipe() -> ChildStdin {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("reader starts");
    let w = reader.stdin.take().expect("pipe");
    reader.wait().expect("reader exits");
    w
}

#[test]
fn validate_exits_quietly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().expect("temp dir");
    let draft = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json");
    let sealed = benchops::seal::seal_json(&std::fs::read(draft).expect("draft")).expect("seals");
    std::fs::write(dir.path().join(sealed.file_name()), sealed.bytes()).expect("write");
    std::fs::write(dir.path().join("broken.json"), b"{").expect("write");
    for json in [false, true] {
        let mut args = vec!["validate"];
        if json {
            args.push("--json");
        }
        let want = Command::new(EXE)
            .args(&args)
            .arg(dir.path())
            .output()
            .expect("runs")
            .status
            .code();
        assert_eq!(want, Some(1), "one record is invalid");
        let o = Command::new(EXE)
            .args(&args)
            .arg(dir.path())
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert_eq!(o.status.code(), want, "{args:?}: {err}");
        let o = Command::new(EXE)
            .args(&args)
            .arg(dir.path())
            .stdout(closed_pipe())
            .stderr(closed_pipe())
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), want, "{args:?} with stderr closed too");
    }
}
