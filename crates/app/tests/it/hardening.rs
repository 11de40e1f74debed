//! The server's defences against a peer that is not GitHub: the issuer it
//! trusts, what an unauthenticated request may cost (time, memory, rows),
//! what reaches the log, and the headers of its pages. The timeouts and
//! the body budget are checked against the real binary over real sockets,
//! with short timeouts set in the configuration; every wait is bounded by
//! [`PATIENCE`], a hang guard far above any timeout configured, not a
//! speed bound.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Options, setup};

/// The longest wait for anything.
const PATIENCE: Duration = Duration::from_secs(60);

/// The binary serving a configuration, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
    _setup: common::Setup,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(o: &Options) -> Served {
    let s = setup(o);
    let log = s.dir.path().join("stderr.log");
    let err = std::fs::File::create(&log).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_benchops-app"))
        .args(["serve", "--config"])
        .arg(&s.config)
        .env_remove("BENCHOPS_APP_CONFIG")
        .env_remove("BENCHOPS_APP_LISTEN")
        .env_remove("BENCHOPS_APP_DATA_DIR")
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("spawn benchops-app");
    // Killed on drop, whatever happens next.
    let mut served = Served {
        child,
        addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        log,
        _setup: s,
    };
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = served.log();
        if let Some(addr) = text.lines().find_map(|l| l.strip_prefix("listening on ")) {
            served.addr = addr.trim().parse().expect("address");
            return served;
        }
        assert!(Instant::now() < deadline, "never listened: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Served {
    fn connect(&self) -> TcpStream {
        let c = TcpStream::connect(self.addr).expect("connect");
        c.set_read_timeout(Some(PATIENCE)).expect("timeout");
        c
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET path` on a connection of its own: the whole answer.
    fn get(&self, path: &str) -> String {
        let mut c = self.connect();
        write!(
            c,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let (text, closed) = read_to_close(&mut c);
        assert!(closed, "GET {path}: {text}");
        text
    }

    /// The value of a metric line, `None` when absent.
    fn metric(&self, name: &str) -> Option<i64> {
        self.get("/metrics")
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
    }
}

/// Reads until the server closes the connection: what it sent, and whether
/// it closed within [`PATIENCE`] (a reset counts as closed).
fn read_to_close(c: &mut TcpStream) -> (String, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (String::from_utf8_lossy(&out).into_owned(), false);
            }
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), true),
        }
    }
}

/// Reads one answer's head (up to the blank line).
fn read_head(c: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while !out.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(1) => out.push(byte[0]),
            other => panic!(
                "no answer: {other:?} after {:?}",
                String::from_utf8_lossy(&out)
            ),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn idle_slow_and_stalled_connections_are_closed_by_the_timeouts() {
    let app = serve(&Options {
        top: "header_timeout_seconds = 1\nbody_timeout_seconds = 1\n".into(),
        ..Options::default()
    });
    // A connection that sends nothing.
    let mut idle = app.connect();
    // One that sends half its headers.
    let mut half = app.connect();
    half.write_all(b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: pi")
        .expect("send");
    // One that sends its headers and a tenth of its body.
    let mut partial = app.connect();
    partial
        .write_all(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"zen\":1,",
        )
        .expect("send");
    // One kept alive after a complete request.
    let mut kept = app.connect();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    let head = read_head(&mut kept);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    for (what, c) in [
        ("idle", &mut idle),
        ("half-sent headers", &mut half),
        ("kept alive", &mut kept),
    ] {
        let (text, closed) = read_to_close(c);
        assert!(closed, "{what}: still open after {PATIENCE:?}: {text}");
    }
    let (text, closed) = read_to_close(&mut partial);
    assert!(
        closed,
        "partial body: still open after {PATIENCE:?}: {text}"
    );
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("body-timeout"), "{text}");
}

#[test]
fn a_huge_content_length_is_refused_from_the_header_without_reading() {
    // Long timeouts: an answer can only come from the header.
    let app = serve(&Options {
        top: "header_timeout_seconds = 300\nbody_timeout_seconds = 600\n".into(),
        extra: "\n[handoff]\n".into(),
        ..Options::default()
    });
    for path in ["/webhook", "/token", "/token/revoke", "/handoff"] {
        let mut c = app.connect();
        write!(
            c,
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: 1099511627776\r\n\r\n"
        )
        .expect("send");
        let (text, closed) = read_to_close(&mut c);
        assert!(closed, "{path}: no answer within {PATIENCE:?}: {text}");
        assert!(text.starts_with("HTTP/1.1 413"), "{path}: {text}");
        assert!(text.contains("too-large"), "{path}: {text}");
    }
}

#[test]
fn bodies_beyond_the_byte_budget_are_refused_unread_and_the_budget_comes_back() {
    // Room for two webhook bodies of 40,000 bytes, not three; the token
    // endpoint's 64 KiB limit sets the smallest budget allowed.
    let app = serve(&Options {
        max_body_bytes: 40_000,
        top: "body_timeout_seconds = 600\nmax_buffered_body_bytes = 100000\n".into(),
        ..Options::default()
    });
    let stalled = |n: usize| {
        let mut c = app.connect();
        write!(
            c,
            "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {n}\r\n\r\n{{"
        )
        .expect("send");
        c
    };
    let first = stalled(40_000);
    let _second = stalled(40_000);
    let deadline = Instant::now() + PATIENCE;
    while app.metric("benchops_app_buffered_body_bytes") != Some(80_000) {
        assert!(
            Instant::now() < deadline,
            "the stalled bodies never reserved"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A third does not fit: 503 at once, with Retry-After, unread.
    let mut third = stalled(40_000);
    let (text, closed) = read_to_close(&mut third);
    assert!(closed, "{text}");
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 600"),
        "{text}"
    );
    assert!(text.contains("\"busy\""), "{text}");
    // What fits still passes: the bound is on bytes, not connections.
    let mut small = app.connect();
    let body = br#"{"phase":"contents"}"#;
    write!(
        small,
        "POST /token HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("send");
    small.write_all(body).expect("send");
    let (text, _) = read_to_close(&mut small);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    // A peer that goes away gives its bytes back.
    drop(first);
    while app.metric("benchops_app_buffered_body_bytes") != Some(40_000) {
        assert!(Instant::now() < deadline, "the budget never came back");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut fourth = stalled(40_000);
    fourth.write_all(&[b' '; 39_999]).expect("send");
    let head = read_head(&mut fourth);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
}

/// A webhook of `body` as `event`, signed with `sig`, on a kept-alive
/// connection.
fn post_webhook(c: &mut TcpStream, event: &str, delivery: &str, sig: &str, body: &[u8]) {
    write!(
        c,
        "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: {event}\r\nX-GitHub-Delivery: {delivery}\r\n\
         X-Hub-Signature-256: {sig}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("send");
    c.write_all(body).expect("send");
}

#[test]
fn a_wrong_signature_is_answered_after_the_delay_without_holding_the_budget() {
    // Room for two 40,000-byte bodies. The delay is the longest allowed:
    // far above what answering a delivery takes, so the valid deliveries
    // below are answered while the refusals still wait.
    let app = serve(&Options {
        max_body_bytes: 40_000,
        top: "max_buffered_body_bytes = 100000\n".into(),
        refusal_delay_ms: Some(5_000),
        ..Options::default()
    });
    let mut body = br#"{"zen":""#.to_vec();
    body.resize(40_000 - 2, b'z');
    body.extend_from_slice(br#""}"#);
    let good = common::sign(&body);
    let wrong = benchops_app::webhook::sign(b"not the secret", &body);
    let started = Instant::now();
    // Three refusals waiting at once, more bodies than the budget holds,
    // each sent once the one before was decided.
    let deadline = Instant::now() + PATIENCE;
    let mut refused = Vec::new();
    for i in 0..3 {
        let mut c = app.connect();
        post_webhook(&mut c, "ping", &format!("bad-{i}"), &wrong, &body);
        refused.push(c);
        while app.metric("benchops_app_signature_failures_total") != Some(i + 1) {
            assert!(Instant::now() < deadline, "refusal {i} was never decided");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // Their bodies are released while they wait: two valid bodies of the
    // same size fit, one after the other on one connection.
    assert_eq!(app.metric("benchops_app_buffered_body_bytes"), Some(0));
    let mut valid = app.connect();
    for i in 0..2 {
        post_webhook(&mut valid, "ping", &format!("good-{i}"), &good, &body);
        let head = read_head(&mut valid);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let mut pong = [0u8; 5];
        valid.read_exact(&mut pong).expect("pong");
        assert_eq!(&pong, b"pong\n");
    }
    // The refusals are still waiting, then come: 401, no sooner than the
    // delay, and the connection stays open for the next request.
    for c in &mut refused {
        c.set_nonblocking(true).expect("nonblocking");
        let mut byte = [0u8; 1];
        let early = c.read(&mut byte);
        assert!(
            matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "answered before the delay: {early:?}"
        );
        c.set_nonblocking(false).expect("blocking");
    }
    for c in &mut refused {
        let head = read_head(c);
        assert!(head.starts_with("HTTP/1.1 401"), "{head}");
        assert!(
            !head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
    }
    assert!(started.elapsed() >= Duration::from_secs(5));
}

#[test]
fn a_refusal_delay_above_the_limit_is_refused_by_name() {
    let s = setup(&Options {
        refusal_delay_ms: Some(5_001),
        ..Options::default()
    });
    let out = Command::new(env!("CARGO_BIN_EXE_benchops-app"))
        .args(["check-config", "--config"])
        .arg(&s.config)
        .env_remove("BENCHOPS_APP_CONFIG")
        .output()
        .expect("run check-config");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refusal_delay_ms"), "{err}");
    assert!(err.contains("5001 is outside 0..=5000"), "{err}");
}

#[test]
fn payload_text_never_reaches_the_log_and_pages_refuse_sniffing_and_framing() {
    let app = serve(&Options::default());
    let body = br#"{"action":"created","installation":{"id":"ghp_LEAKED_FROM_PAYLOAD"}}"#;
    let mut c = app.connect();
    write!(
        c,
        "POST /webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Type: application/json\r\nX-GitHub-Event: installation\r\n\
         X-GitHub-Delivery: leak-1\r\nX-Hub-Signature-256: {}\r\nContent-Length: {}\r\n\r\n",
        common::sign(body),
        body.len()
    )
    .expect("send");
    c.write_all(body).expect("send");
    let (text, _) = read_to_close(&mut c);
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    let deadline = Instant::now() + PATIENCE;
    while !app.log().contains("leak-1") {
        assert!(Instant::now() < deadline, "no log line: {}", app.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = app.log();
    assert!(!log.contains("LEAKED"), "{log}");
    assert!(log.contains("installation.id"), "{log}");

    for path in ["/status", "/status.json", "/healthz", "/metrics"] {
        let text = app.get(path).to_ascii_lowercase();
        assert!(
            text.contains("x-content-type-options: nosniff"),
            "{path}: {text}"
        );
    }
    let status = app.get("/status").to_ascii_lowercase();
    assert!(status.starts_with("http/1.1 200"), "{status}");
    assert!(status.contains("frame-ancestors 'none'"), "{status}");
}

#[test]
fn an_issuer_that_only_starts_like_loopback_is_refused() {
    for issuer in [
        "http://127.0.0.1.attacker.example",
        "http://127.0.0.1@attacker.example",
    ] {
        let s = setup(&Options {
            issuer: issuer.into(),
            ..Options::default()
        });
        let e = benchops_app::config::load(&s.config).expect_err(issuer);
        let text = e.to_string();
        assert!(text.contains("`oidc.issuer`"), "{text}");
        assert!(text.contains(issuer), "{text}");
    }
    for issuer in [
        "http://127.0.0.1:9",
        "http://localhost:9",
        "https://issuer.example",
    ] {
        let s = setup(&Options {
            issuer: issuer.into(),
            ..Options::default()
        });
        benchops_app::config::load(&s.config).expect(issuer);
    }
}

/// Answers `req` through the router, with its status and body text.
async fn call(
    app: &std::sync::Arc<benchops_app::AppState>,
    req: axum::http::Request<axum::body::Body>,
) -> (axum::http::StatusCode, String) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let resp = benchops_app::router(app.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn delivery(
    event: &str,
    id: &str,
    content_type: &str,
    body: Vec<u8>,
) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::post("/webhook")
        .header("content-type", content_type)
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", common::sign(&body))
        .body(axum::body::Body::from(body))
        .expect("request")
}

fn form(payload: &str) -> Vec<u8> {
    form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", payload)
        .finish()
        .into_bytes()
}

#[tokio::test]
async fn a_form_encoded_delivery_is_read_and_a_form_without_payload_is_refused_even_on_ping() {
    const FORM: &str = "application/x-www-form-urlencoded";
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    // A push to the history branch, form-encoded as GitHub sends it: the
    // signature is over the form; the work is what the JSON says.
    let push = serde_json::json!({
        "ref": "refs/heads/benchmark-history", "after": "abc", "forced": false,
        "repository": {"full_name": "octo/bench", "id": 456789},
        "sender": {"login": "mallory", "type": "User"}, "installation": {"id": 9}
    })
    .to_string();
    let (status, text) = call(&app, delivery("push", "f-1", FORM, form(&push))).await;
    assert_eq!(status, 202, "{text}");
    let inbox = app.store.inbox(10).expect("inbox");
    assert_eq!(inbox.len(), 1);
    assert!(inbox[0].extract.contains("mallory"), "{inbox:?}");
    // Nothing else in the form counts, wherever `payload` is.
    let mut other = b"zen=keep+it+logically+awesome&".to_vec();
    other.extend(form(r#"{"zen":"z","hook_id":1}"#));
    let (status, text) = call(&app, delivery("ping", "f-2", FORM, other)).await;
    assert_eq!(status, 200, "{text}");
    // A form without `payload`: 400 naming the content type, ping too.
    for (event, id) in [("ping", "f-3"), ("push", "f-4")] {
        let (status, text) = call(
            &app,
            delivery(event, id, FORM, b"zen=keep+it+logically+awesome".to_vec()),
        )
        .await;
        assert_eq!(status, 400, "{event}: {text}");
        assert!(text.contains("application/x-www-form-urlencoded"), "{text}");
    }
    // A type GitHub never sends: 415, named.
    let (status, text) = call(&app, delivery("ping", "f-5", "text/plain", b"{}".to_vec())).await;
    assert_eq!(status, 415, "{text}");
    assert!(text.contains("text/plain"), "{text}");
    // Refusals record nothing: a redelivery in JSON is new.
    assert!(!app.store.has_delivery("f-3").expect("lookup"));
    let (status, text) = call(
        &app,
        delivery("ping", "f-3", "application/json", b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn requests_that_prove_nothing_are_counted_not_stored() {
    let s = setup(&Options {
        extra: "\n[handoff]\n".into(),
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    let empty = |path: &str| {
        axum::http::Request::post(path)
            .body(axum::body::Body::empty())
            .expect("request")
    };
    for _ in 0..1000 {
        for path in ["/token", "/token/revoke", "/handoff"] {
            let (status, _) = call(&app, empty(path)).await;
            assert!(status.is_client_error(), "{path}: {status}");
        }
    }
    // A bearer token that is not a JWT, and one not minted here.
    let bearer = |path: &str| {
        axum::http::Request::post(path)
            .header("authorization", "Bearer not-a-jwt")
            .body(axum::body::Body::from(r#"{"phase":"contents"}"#))
            .expect("request")
    };
    for path in ["/token", "/token/revoke"] {
        let (status, _) = call(&app, bearer(path)).await;
        assert_eq!(status, 403, "{path}");
    }
    assert_eq!(app.store.decision_count().expect("count"), 0);
    let metrics = app.metrics.encode();
    for line in [
        r#"benchops_app_token_exchanges_total{kind="exchange",reason="missing-token"} 1000"#,
        r#"benchops_app_token_exchanges_total{kind="revoke",reason="missing-token"} 1000"#,
        r#"benchops_app_token_exchanges_total{kind="exchange",reason="malformed-token"} 1"#,
        r#"benchops_app_token_exchanges_total{kind="revoke",reason="not-minted-here"} 1"#,
        r#"benchops_app_handoffs_total{reason="bad-request"} 1000"#,
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
}

/// Every file under `dir`, with its size and modification time.
fn tree(dir: &std::path::Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let e = e.expect("entry");
            let m = e.metadata().expect("metadata");
            if m.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), m.len(), m.modified().expect("mtime")));
        }
    }
    out.sort();
    out
}

#[test]
fn check_config_looks_without_writing() {
    let s = setup(&Options::default());
    let check = || {
        Command::new(env!("CARGO_BIN_EXE_benchops-app"))
            .args(["check-config", "--config"])
            .arg(&s.config)
            .env_remove("BENCHOPS_APP_CONFIG")
            .env_remove("BENCHOPS_APP_DATA_DIR")
            .output()
            .expect("run check-config")
    };
    let data = s.dir.path().join("data");
    // Before the first start: no data directory, and none made.
    let before = tree(s.dir.path());
    let out = check();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("not created yet"), "{text}");
    assert_eq!(tree(s.dir.path()), before, "check-config wrote");
    assert!(!data.exists());
    // A database the server wrote and closed: read, not touched.
    std::fs::create_dir(&data).expect("mkdir");
    let db = rusqlite::Connection::open(data.join("app.db")).expect("create");
    db.execute_batch(&format!(
        "CREATE TABLE t (x); PRAGMA user_version = {};",
        benchops_app::store::schema_known()
    ))
    .expect("write");
    drop(db);
    let before = tree(s.dir.path());
    let out = check();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("(schema {})", benchops_app::store::schema_known())),
        "{text}"
    );
    assert_eq!(tree(s.dir.path()), before, "check-config wrote");
}

/// `examples/app/<rel>` in this repository.
fn example(rel: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/app")
        .join(rel)
}

#[test]
fn the_local_example_runs_from_a_clone_as_it_is() {
    let config = example("local/config.toml");
    let data = tempfile::tempdir().expect("tempdir");
    // From another directory: its paths are relative to the file.
    let out = Command::new(env!("CARGO_BIN_EXE_benchops-app"))
        .args(["check-config", "--config"])
        .arg(&config)
        .current_dir(data.path())
        .env_remove("BENCHOPS_APP_CONFIG")
        .env("BENCHOPS_APP_DATA_DIR", data.path().join("data"))
        .output()
        .expect("run check-config");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("handoff: off"), "{text}");
    assert!(text.contains("local trial: on"), "{text}");

    let log = data.path().join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchops-app"))
        .args(["serve", "--config"])
        .arg(&config)
        .current_dir(data.path())
        .env_remove("BENCHOPS_APP_CONFIG")
        .env("BENCHOPS_APP_DATA_DIR", data.path().join("data"))
        .env("BENCHOPS_APP_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn serve");
    let deadline = Instant::now() + PATIENCE;
    let addr: SocketAddr = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(a) = text.lines().find_map(|l| l.strip_prefix("listening on ")) {
            break a.trim().parse().expect("address");
        }
        if Instant::now() > deadline || child.try_wait().expect("wait").is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve did not start: {text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(PATIENCE)).expect("timeout");
    c.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("send");
    let (text, _) = read_to_close(&mut c);
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");

    // The deployment example leaves POST /handoff off, as the docs say.
    let deploy: toml::Value =
        toml::from_str(&std::fs::read_to_string(example("config.toml")).expect("read"))
            .expect("parses");
    assert!(deploy.get("handoff").is_none(), "{deploy:?}");
}

#[test]
fn a_local_trial_takes_readable_files_only_with_everything_on_this_machine() {
    use std::os::unix::fs::PermissionsExt as _;
    let readable = |o: &Options| {
        let s = setup(o);
        std::fs::set_permissions(
            s.dir.path().join("app.pem"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
        let r = benchops_app::config::load(&s.config).map(|c| c.local_trial);
        (s, r)
    };
    let trial = "local_trial = true\n";
    let (_s, r) = readable(&Options::default());
    let e = r.expect_err("a readable key is refused");
    assert!(e.to_string().contains("chmod 600"), "{e}");
    let (_s, r) = readable(&Options {
        top: trial.into(),
        ..Options::default()
    });
    assert!(r.expect("taken in a trial"));
    for (o, key) in [
        (
            Options {
                top: trial.into(),
                api_url: Some("https://api.github.com".into()),
                ..Options::default()
            },
            "`github_api_url`",
        ),
        (
            Options {
                top: trial.into(),
                api_url: None,
                ..Options::default()
            },
            "`github_api_url`",
        ),
        (
            Options {
                top: trial.into(),
                issuer: "https://token.actions.githubusercontent.com".into(),
                ..Options::default()
            },
            "`oidc.issuer`",
        ),
        (
            Options {
                top: trial.into(),
                listen: "0.0.0.0:0".into(),
                ..Options::default()
            },
            "`listen`",
        ),
    ] {
        let (_s, r) = readable(&o);
        let e = r.expect_err(key);
        assert!(e.to_string().contains(key), "{key}: {e}");
    }
}
