//! `benchops-exec handoff` from the real binary against a scripted HTTP
//! server on loopback: what it sends, which answers it retries (connection
//! errors, 429 with `Retry-After`, 502/503/504) and which are final, that
//! success is never inferred from a status code alone, that records
//! failing a local check are never sent, that a server's text is printed
//! inert, and where each record ends up. The App's side of the exchange is
//! tested against the GitHub simulator in `crates/app/tests/it/handoff.rs`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

fn exec() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchops-exec"));
    c.env_remove("BENCHOPS_SIGN_KEY")
        .env_remove("BENCHOPS_HANDOFF_URL");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A signed sealed record in `dir/out`: (record path, hex).
fn signed_record(dir: &Path) -> (PathBuf, String) {
    let key = dir.join("k");
    let o = exec()
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .expect("keygen");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = dir.join("out");
    let draft = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json");
    let o = exec()
        .arg("seal")
        .arg(&draft)
        .arg("--out")
        .arg(&out)
        .arg("--sign-key")
        .arg(&key)
        .output()
        .expect("seal");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let record = std::fs::read_dir(&out)
        .expect("out")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a sealed record");
    let hex = record
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("name")
        .to_owned();
    (record, hex)
}

/// One scripted answer: status, extra headers, body.
type Answer = (u16, Vec<(&'static str, String)>, String);

/// A loopback server that answers requests from a script, one connection
/// each, and keeps every request body.
struct Scripted {
    url: String,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Scripted {
    fn start(script: Vec<Answer>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = bodies.clone();
        std::thread::spawn(move || {
            for (answer, stream) in script.into_iter().zip(listener.incoming()) {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut length = 0usize;
                let mut request_line = String::new();
                reader.read_line(&mut request_line).expect("request line");
                assert!(request_line.starts_with("POST /handoff "), "{request_line}");
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).expect("header");
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().expect("length");
                        }
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).expect("body");
                seen.lock().expect("lock").push(body);
                let (status, headers, body) = answer;
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            }
        });
        Scripted { url, bodies }
    }

    fn requests(&self) -> Vec<Value> {
        self.bodies
            .lock()
            .expect("lock")
            .iter()
            .map(|b| serde_json::from_slice(b).expect("a JSON body"))
            .collect()
    }
}

fn accepted(hex: &str) -> Answer {
    (
        201,
        vec![],
        format!(
            r#"{{"status":"accepted","ref":"refs/heads/benchmark-result/nightly/{hex}","digest":"{hex}"}}"#
        ),
    )
}

fn handoff(url: &str, args: &[&str], dir: &Path) -> Output {
    exec()
        .args(["handoff", "--to", url, "--backoff-ms", "10"])
        .args(args)
        .arg(dir)
        .output()
        .expect("handoff runs")
}

#[test]
fn transient_failures_are_retried_then_the_record_is_delivered_and_moved() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (record, hex) = signed_record(tmp.path());
    let server = Scripted::start(vec![
        (503, vec![], r#"{"reason":"store-error"}"#.into()),
        (502, vec![], r#"{"reason":"github-error"}"#.into()),
        accepted(&hex),
    ]);
    let o = handoff(&server.url, &[], record.parent().expect("dir"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).starts_with(&format!(
            "accepted {hex} refs/heads/benchmark-result/nightly/{hex} (moved to "
        )),
        "{}",
        text(&o.stdout)
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 3, "two retries, then delivered");
    let bytes = std::fs::read(
        record
            .parent()
            .expect("dir")
            .join(".handed-off")
            .join(format!("{hex}.json")),
    )
    .expect("moved record");
    let sig = std::fs::read_to_string(
        record
            .parent()
            .expect("dir")
            .join(".handed-off")
            .join(format!("{hex}.json.sig")),
    )
    .expect("moved signature");
    for body in &sent {
        assert_eq!(body["record"].as_str().map(str::as_bytes), Some(&bytes[..]));
        assert_eq!(body["signature"].as_str(), Some(sig.as_str()));
        assert_eq!(body["digest"].as_str(), Some(hex.as_str()));
        assert!(body.get("repository").is_none(), "{body}");
    }
    assert!(!record.exists(), "a delivered record leaves the directory");

    // Run again: nothing left to send.
    let o = handoff(&server.url, &[], record.parent().expect("dir"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("no sealed record"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_refusal_is_final_and_its_text_is_printed_inert() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (record, hex) = signed_record(tmp.path());
    let server = Scripted::start(vec![(
        403,
        vec![],
        r#"{"reason":"unknown-key","detail":"signed by SHA256:x\u001b[31m red\nsecond line"}"#
            .into(),
    )]);
    let o = handoff(
        &server.url,
        &["--repository", "octo/bench", "--json"],
        record.parent().expect("dir"),
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert_eq!(server.requests().len(), 1, "a refusal is not retried");
    assert_eq!(server.requests()[0]["repository"], "octo/bench");
    let line: Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(line["outcome"], "refused");
    assert_eq!(line["status"], 403);
    assert_eq!(line["reason"], "unknown-key");
    assert_eq!(line["digest"], hex.as_str());
    let detail = line["detail"].as_str().expect("detail");
    assert!(
        !detail.chars().any(char::is_control),
        "control characters from the server are not printed: {detail:?}"
    );
    assert!(record.exists(), "a refused record stays");
}

#[test]
fn retry_after_is_honoured_and_success_needs_a_readable_answer() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (record, hex) = signed_record(tmp.path());
    let server = Scripted::start(vec![
        (
            429,
            vec![("retry-after", "1".into())],
            r#"{"reason":"rate-limited"}"#.into(),
        ),
        // A 200 that does not say what happened is not a success.
        (200, vec![], "<html>maintenance</html>".into()),
        accepted(&hex),
    ]);
    let t0 = Instant::now();
    let o = handoff(&server.url, &["--keep"], record.parent().expect("dir"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 waits a second, not --backoff-ms"
    );
    assert_eq!(server.requests().len(), 3);
    assert!(record.exists(), "--keep leaves it in place");
}

#[test]
fn an_unreachable_app_leaves_the_record_and_exits_3() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (record, hex) = signed_record(tmp.path());
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let o = handoff(
        &format!("http://127.0.0.1:{port}"),
        &["--attempts", "3"],
        record.parent().expect("dir"),
    );
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).starts_with(&format!("undelivered {hex} after 3 tries: ")),
        "{}",
        text(&o.stdout)
    );
    // Each pause says what it waits for; the last try has no pause.
    let err = text(&o.stderr);
    for n in [1, 2] {
        assert!(
            err.contains(&format!("not delivered on try {n} of 3 (")),
            "{err}"
        );
    }
    assert!(!err.contains("on try 3 of 3"), "{err}");
    assert!(err.contains("trying again in "), "{err}");
    assert!(record.exists());

    // The server keeps failing: undelivered after every try.
    let server = Scripted::start(vec![(503, vec![], "{}".into()), (504, vec![], "{}".into())]);
    let o = handoff(
        &server.url,
        &["--attempts", "2"],
        record.parent().expect("dir"),
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stdout));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn records_that_fail_a_local_check_are_never_sent() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (record, hex) = signed_record(tmp.path());
    let dir = record.parent().expect("dir").to_owned();
    let server = Scripted::start(vec![accepted(&hex)]);

    // Unsigned.
    let sig = dir.join(format!("{hex}.json.sig"));
    let saved = std::fs::read(&sig).expect("sig");
    std::fs::remove_file(&sig).expect("rm sig");
    let o = handoff(&server.url, &[], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("unsigned"), "{}", text(&o.stdout));

    // A signature over other bytes.
    std::fs::write(&sig, &saved).expect("sig back");
    let bytes = std::fs::read(&record).expect("record");
    let other = dir.join(format!("{}.json", "0".repeat(64)));
    std::fs::write(&other, &bytes).expect("copy");
    std::fs::write(dir.join(format!("{}.json.sig", "0".repeat(64))), &saved).expect("sig");
    let mut tampered = saved.clone();
    let n = tampered.len();
    tampered[n / 2] = if tampered[n / 2] == b'A' { b'B' } else { b'A' };
    std::fs::write(&sig, &tampered).expect("tampered sig");
    let o = handoff(&server.url, &[], &dir);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        out.lines().all(|l| l.starts_with("invalid ")),
        "the copy's bytes do not hash to its name, and the original's signature was changed: {out}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    assert!(record.exists() && other.exists());
}
