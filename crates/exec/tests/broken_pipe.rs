//! Every printing command of `benchops-exec` stops quietly when its reader
//! has gone away (`benchops-exec bench status --json | head`): exit 0, no
//! panic, no "Broken pipe" message.

use std::path::Path;
use std::process::{ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "pipe"
command = ["sh", "-c", "echo '{\"metric\": \"answer\", \"value\": 1, \"unit\": \"count\"}'"]
repetitions = 3

[metrics]
json_lines = true
"#;

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

fn exec(state: &Path, args: &[&str]) -> Output {
    Command::new(EXE)
        .arg("--state")
        .arg(state)
        .args(args)
        .output()
        .expect("benchops-exec runs")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_printing_command_exits_quietly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state");
    let intent = dir.path().join("pipe.toml");
    std::fs::write(&intent, INTENT).expect("intent");
    let intent = intent.to_str().expect("utf-8").to_owned();
    let digest = ok(&exec(&state, &["bench", "submit", &intent]))
        .trim()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ok(&exec(&state, &["bench", "status", &digest, "--json"])).contains("\"terminal\": true")
    {
        assert!(Instant::now() < deadline, "not terminal in time");
        std::thread::sleep(Duration::from_millis(100));
    }
    let draft = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json");
    let draft = draft.to_str().expect("utf-8").to_owned();
    let sealed = dir.path().join("sealed");
    let sealed = sealed.to_str().expect("utf-8").to_owned();
    // A sealed lane execution, for the lane commands.
    let history = dir.path().join("history.git");
    let st = Command::new("git")
        .args(["init", "--bare", "--quiet"])
        .arg(&history)
        .status()
        .expect("git");
    assert!(st.success());
    let manifest = dir.path().join("lanes.toml");
    std::fs::write(
        &manifest,
        "schema = \"schedule-manifest/v2\"\nrepository = \"example/pipe\"\nsuite = [\"pipe.toml\"]\n\
         [[lanes]]\nname = \"all\"\ncron = \"0 * * * *\"\ntimezone = \"UTC\"\n\
         completion_window_minutes = 50\ncases = [\"*\"]\nbaseline = \"last-clean\"\n",
    )
    .expect("manifest");
    let (manifest, history) = (
        manifest.to_str().expect("utf-8").to_owned(),
        history.to_str().expect("utf-8").to_owned(),
    );
    let lane_out = dir.path().join("lane-sealed");
    let lane_out = lane_out.to_str().expect("utf-8").to_owned();
    let lane_id = ok(&exec(
        &state,
        &[
            "lane",
            "run",
            "--manifest",
            &manifest,
            "--lane",
            "all",
            "--history",
            &history,
            "--commit",
            &"a".repeat(40),
            "--out",
            &lane_out,
            "--wait",
        ],
    ))
    .lines()
    .last()
    .expect("the id")
    .to_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["lane", "list"],
        vec!["lane", "status", &lane_id],
        vec!["lane", "status", &lane_id, "--json"],
        vec!["lane", "advance", &lane_id],
        vec!["bench", "plan", &intent, "--children"],
        vec!["bench", "submit", &intent, "--slots", "2"],
        vec!["bench", "status", &digest],
        vec!["bench", "status", &digest, "--json"],
        vec!["bench", "status", &digest, "--watch"],
        vec!["bench", "refresh", &digest],
        vec!["bench", "analyze", &digest],
        vec!["bench", "analyze", &digest, "--format", "json"],
        vec!["bench", "analyze", &digest, "--format", "markdown"],
        vec!["bench", "list"],
        vec!["seal", &draft, "--out", &sealed],
        vec!["bench", "cancel", &digest],
        vec!["--help"],
        vec!["--version"],
    ];
    for args in &commands {
        // Standard output alone closed: nothing on standard error.
        let o = Command::new(EXE)
            .arg("--state")
            .arg(&state)
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe") && !err.contains("error"),
            "{args:?}: {err}"
        );
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        // Both closed, as with `2>&1 | head`.
        let o = Command::new(EXE)
            .arg("--state")
            .arg(&state)
            .args(args)
            .stdout(closed_pipe())
            .stderr(closed_pipe())
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(0), "{args:?} with stderr closed too");
    }
}
