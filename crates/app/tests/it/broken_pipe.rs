//! `benchops-app` prints one line on standard error; a closed standard
//! error (`2>&1 | head`) must not turn it into a panic.

use std::process::{ChildStdin, Command, Stdio};

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
fn a_closed_stderr_is_not_a_panic() {
    let o = Command::new(env!("CARGO_BIN_EXE_benchops-app"))
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
}
