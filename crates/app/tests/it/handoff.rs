//! `POST /handoff` end to end against the stateful GitHub simulator: an
//! execution host with a signing key and no GitHub credential hands a
//! sealed record to a running benchops-app with the real `benchops-exec
//! handoff`; the App checks it against the `allowed_signers` on the
//! repository's default branch and writes the handoff ref with its own
//! contents-phase token; the GitHub sweep then persists the record and its
//! signature. Around it: a replay writes nothing, a bad signature is 403
//! and writes nothing, an oversize body is 413, a flood from one key is
//! rate-limited, and each trust failure has its own reason.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use benchops::provenance;
use benchops_publish::github::{ClientSettings, GitHubSweepOptions, sweep_github};
use benchops_publish::sweep::Clock;
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{TWO_LANE_MANIFEST, clean, drift};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use serde_json::{Value, json};

use common::{Options, setup};

const APP_BIN: &str = env!("CARGO_BIN_EXE_benchops-app");

fn exec_bin() -> PathBuf {
    let p = Path::new(APP_BIN).with_file_name("benchops-exec");
    assert!(
        p.is_file(),
        "{} is missing: build the workspace binaries (`cargo build --bins`) first",
        p.display()
    );
    p
}

/// A key pair made by `benchops-exec keygen`: (private key, public line).
fn keygen(dir: &Path, name: &str) -> (ssh_key_text::Private, String) {
    let key = dir.join(name);
    let out = Command::new(exec_bin())
        .args(["keygen", "--out"])
        .arg(&key)
        .args(["--comment", name])
        .output()
        .expect("keygen runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let public = std::fs::read_to_string(format!("{}.pub", key.display())).expect("public key");
    (ssh_key_text::Private(key), public.trim_end().to_owned())
}

mod ssh_key_text {
    /// A private key file.
    pub struct Private(pub std::path::PathBuf);

    impl Private {
        pub fn sign(&self, record: &[u8]) -> String {
            let text = std::fs::read_to_string(&self.0).expect("key");
            let key = benchops::provenance::private_key(&text).expect("an Ed25519 key");
            benchops::provenance::sign(record, &key).expect("signs")
        }
    }
}

fn manifest_with_signing() -> String {
    format!(
        "repository = \"octo/bench\"\n{TWO_LANE_MANIFEST}\n[signing]\nallowed_signers = \"allowed_signers\"\nrequire = [\"nightly\"]\n"
    )
}

/// Commits `allowed_signers` to the default branch beside the manifest.
fn set_signers(sim: &GitHubSim, text: impl AsRef<str>, message: &str) {
    sim.commit_files(
        "octo",
        "bench",
        "main",
        &[("benchmarks/allowed_signers", text.as_ref().as_bytes())],
        message,
    );
}

fn git_writes(sim: &GitHubSim) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.contains("/git/"))
        .count()
}

struct Running {
    url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
    state: Arc<benchops_app::AppState>,
    _setup: common::Setup,
}

async fn start_app(sim: &GitHubSim, repo_id: u64, handoff: &str) -> Running {
    let s = setup(&Options {
        api_url: Some(sim.base_url()),
        app_id: sim.app_id(),
        key_pem: TEST_APP_PRIVATE_KEY_PEM.as_bytes().to_vec(),
        repo_id,
        extra: handoff.to_owned(),
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (state, worker) = benchops_app::build(cfg).expect("build");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(benchops_app::serve_on(
        listener,
        state.clone(),
        worker,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));
    Running {
        url,
        _stop: stop,
        state,
        _setup: s,
    }
}

async fn post(url: &str, body: Vec<u8>) -> (u16, Option<String>, Value) {
    let r = reqwest::Client::new()
        .post(format!("{url}/handoff"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("the App answers");
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ascii").to_owned());
    let v: Value = r.json().await.expect("a JSON answer");
    (status, retry, v)
}

fn body(record: &[u8], sig: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "record": std::str::from_utf8(record).expect("utf-8"),
        "signature": sig,
    }))
    .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_record_is_handed_off_without_a_github_credential_and_swept_into_history() {
    let sim = GitHubSim::start().await;
    let repo_id = sim.create_repo("octo", "bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (exec_key, exec_public) = keygen(tmp.path(), "nightly.key");
    let (stranger, _) = keygen(tmp.path(), "stranger.key");
    let (sentinel_key, sentinel_public) = keygen(tmp.path(), "sentinel.key");
    let (flood_key, flood_public) = keygen(tmp.path(), "flood.key");
    let allowed =
        format!("nightly {exec_public}\nsentinel {sentinel_public}\nnightly {flood_public}\n");
    let manifest = manifest_with_signing();
    sim.commit_files(
        "octo",
        "bench",
        "main",
        &[
            ("benchmarks/schedule.toml", manifest.as_bytes()),
            ("benchmarks/allowed_signers", allowed.as_bytes()),
        ],
        "benchmarks: trust the nightly lane's key",
    );
    let app = start_app(
        &sim,
        repo_id,
        "\n[handoff]\nmax_body_bytes = 65536\nper_key_per_minute = 60\nburst = 4\ntrust_ttl_seconds = 60\n",
    )
    .await;

    // The execution host: a sealed, signed record, and no GitHub credential.
    let record = drift("nightly", "2026-12-01T01:00:00Z");
    let hex = record.digest().hex();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).expect("out");
    let sig = exec_key.sign(record.bytes());
    std::fs::write(out.join(record.file_name()), record.bytes()).expect("record");
    std::fs::write(out.join(format!("{}.sig", record.file_name())), &sig).expect("sig");
    let url = app.url.clone();
    let out_dir = out.clone();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(exec_bin())
            .args(["handoff", "--to", &url, "--backoff-ms", "10"])
            .arg(&out_dir)
            .env_clear()
            .output()
            .expect("handoff runs")
    })
    .await
    .expect("joined");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let sig_sha = {
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(sig.as_bytes());
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let ref_name = format!(
        "refs/heads/benchmark-result/nightly/{hex}-{}",
        &sig_sha[..12]
    );
    assert!(
        stdout.starts_with(&format!("accepted {hex} {ref_name}")),
        "{stdout}"
    );
    assert!(
        out.join(".handed-off").join(record.file_name()).is_file(),
        "a delivered record moves to .handed-off/"
    );
    assert!(!out.join(record.file_name()).exists());
    let refs = sim.refs("octo", "bench", "refs/heads/benchmark-result/");
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].0, ref_name);
    // The App wrote it with a contents-phase installation token.
    let writes: Vec<_> = sim
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.contains("/git/"))
        .collect();
    assert_eq!(writes.len(), 3, "tree, commit, ref: {writes:?}");
    for w in &writes {
        assert!(
            matches!(
                w.auth,
                benchops_testkit::sim::AuthKind::InstallationToken { .. }
            ),
            "{w:?}"
        );
    }
    let token = sim
        .tokens()
        .into_iter()
        .last()
        .expect("the App minted a token");
    assert_eq!(
        token.permissions.get("contents").map(String::as_str),
        Some("write")
    );
    assert!(!token.permissions.contains_key("issues"), "{token:?}");

    // A replay is answered from the store and writes nothing.
    let before = git_writes(&sim);
    let (status, _, v) = post(&app.url, body(record.bytes(), &sig)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "already-present");
    assert_eq!(v["ref"], ref_name);
    assert_eq!(git_writes(&sim), before, "a replay writes nothing");

    // A tampered record with the old signature: 403, nothing written.
    let other = drift("nightly", "2026-12-02T01:00:00Z");
    let (status, _, v) = post(&app.url, body(other.bytes(), &sig)).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(v["reason"], "bad-signature");
    // A key that is not in allowed_signers.
    let (status, _, v) = post(&app.url, body(other.bytes(), &stranger.sign(other.bytes()))).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (403, Some("unknown-key")),
        "{v}"
    );
    // A key allowed for another lane.
    let (status, _, v) = post(
        &app.url,
        body(other.bytes(), &sentinel_key.sign(other.bytes())),
    )
    .await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (403, Some("wrong-principal")),
        "{v}"
    );
    assert!(
        v["detail"]
            .as_str()
            .is_some_and(|d| d.contains("main:benchmarks/allowed_signers")),
        "{v}"
    );
    // No signature at all.
    let unsigned = serde_json::to_vec(&json!({
        "record": std::str::from_utf8(other.bytes()).expect("utf-8")
    }))
    .expect("json");
    let (status, _, v) = post(&app.url, unsigned).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (400, Some("bad-request")),
        "{v}"
    );
    assert!(
        v["detail"]
            .as_str()
            .is_some_and(|d| d.contains("signature")),
        "{v}"
    );
    // An oversize body.
    let huge = vec![b' '; 70_000];
    let (status, _, v) = post(&app.url, huge).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (413, Some("too-large")),
        "{v}"
    );
    assert_eq!(git_writes(&sim), before, "no refusal writes anything");
    assert_eq!(
        sim.refs("octo", "bench", "refs/heads/benchmark-result/")
            .len(),
        1
    );

    // A flood from one key: the burst passes, then 429 with Retry-After.
    let flood = clean("nightly", "2026-12-03T01:00:00Z");
    let flood_sig = flood_key.sign(flood.bytes());
    let mut answers = Vec::new();
    for _ in 0..7 {
        answers.push(post(&app.url, body(flood.bytes(), &flood_sig)).await);
    }
    let codes: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(codes, [201, 200, 200, 200, 429, 429, 429], "{answers:?}");
    let (_, retry, v) = &answers[4];
    assert_eq!(v["reason"], "rate-limited");
    assert_eq!(
        retry.as_deref(),
        Some("1"),
        "one request a second comes back"
    );
    // The other keys are not held back by it.
    let (status, _, v) = post(&app.url, body(record.bytes(), &sig)).await;
    assert_eq!(status, 200, "{v}");

    // The answers to listed keys are in the log, with the key's
    // fingerprint; the refusals of requests anyone could make (an unknown
    // key, a bad signature, a bad body) are counted, not stored.
    let decisions = app.state.store.decisions(50).expect("decisions");
    let handoffs: Vec<_> = decisions.iter().filter(|d| d.kind == "handoff").collect();
    assert!(
        handoffs
            .iter()
            .any(|d| !d.granted && d.reason == "wrong-principal" && d.subject.is_some()),
        "{handoffs:?}"
    );
    assert!(
        handoffs.iter().any(|d| d.granted && d.reason == "accepted"),
        "{handoffs:?}"
    );
    for unproven in [
        "unknown-key",
        "bad-signature",
        "bad-request",
        "too-large",
        "rate-limited",
    ] {
        assert!(
            !handoffs.iter().any(|d| d.reason == unproven),
            "{unproven}: {handoffs:?}"
        );
    }
    let metrics = app.state.metrics.encode();
    assert!(
        metrics.contains("benchops_app_handoffs_total{reason=\"rate-limited\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("benchops_app_handoffs_total{reason=\"unknown-key\"} 1"),
        "{metrics}"
    );

    // The sweep consumes the refs the App wrote and checks the signatures
    // again: the records and their signatures reach history.
    std::fs::write(tmp.path().join("schedule.toml"), &manifest).expect("manifest");
    std::fs::write(tmp.path().join("allowed_signers"), &allowed).expect("signers");
    std::fs::write(tmp.path().join("app.pem"), TEST_APP_PRIVATE_KEY_PEM).expect("key");
    let mut opts = GitHubSweepOptions::new(
        "octo/bench",
        sim.app_id(),
        tmp.path().join("app.pem"),
        None,
        tmp.path().join("schedule.toml"),
    );
    opts.handoff_refs = true;
    opts.clock = Clock::fixed("2026-12-04T00:00:00.000Z");
    opts.client = ClientSettings {
        api_url: Some(sim.base_url()),
        timeout: Some(Duration::from_secs(10)),
        ..ClientSettings::default()
    };
    let report = match sweep_github(&opts).await {
        Ok(r) => r,
        Err(e) => panic!("sweep failed: {e}: {}", e.cause),
    };
    assert_eq!(report.persisted.len(), 2, "{report:?}");
    let paths = sim.file_paths("octo", "bench", "heads/benchmark-history");
    for r in [&record, &flood] {
        let name = r.file_name();
        assert!(paths.iter().any(|p| p.ends_with(&name)), "{paths:?}");
        assert!(
            paths.iter().any(|p| p.ends_with(&format!("{name}.sig"))),
            "the signature is kept beside the record: {paths:?}"
        );
    }
    assert!(
        sim.refs("octo", "bench", "refs/heads/benchmark-result/")
            .is_empty(),
        "the consumed refs are gone"
    );
    // What history holds verifies with the trust the App used.
    let signers = provenance::AllowedSigners::parse(&allowed).expect("signers");
    let hist_sig = paths
        .iter()
        .find(|p| p.ends_with(&format!("{}.sig", record.file_name())))
        .expect("sig path");
    let sig_bytes = sim
        .file("octo", "bench", "heads/benchmark-history", hist_sig)
        .expect("sig file");
    provenance::verify(
        record.bytes(),
        &sig_bytes,
        &signers,
        "nightly",
        jiff::Timestamp::now(),
    )
    .expect("history's signature verifies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_comes_from_the_default_branch_and_a_missing_table_refuses_everything() {
    let sim = GitHubSim::start().await;
    let repo_id = sim.create_repo("octo", "bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (key, public) = keygen(tmp.path(), "k");
    let record = drift("nightly", "2026-12-01T01:00:00Z");
    let sig = key.sign(record.bytes());

    // Without [handoff] the endpoint is off.
    let off = start_app(&sim, repo_id, "").await;
    let (status, _, v) = post(&off.url, body(record.bytes(), &sig)).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (404, Some("handoff-disabled")),
        "{v}"
    );

    let app = start_app(&sim, repo_id, "\n[handoff]\ntrust_ttl_seconds = 0\n").await;
    // No manifest on the default branch: the operator must fix it.
    let (status, _, v) = post(&app.url, body(record.bytes(), &sig)).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (500, Some("trust-config")),
        "{v}"
    );
    assert!(
        v["detail"]
            .as_str()
            .is_some_and(|d| d.contains("main:benchmarks/schedule.toml does not exist")),
        "{v}"
    );
    // A manifest without [signing]: nothing can be trusted.
    sim.commit_files(
        "octo",
        "bench",
        "main",
        &[("benchmarks/schedule.toml", TWO_LANE_MANIFEST.as_bytes())],
        "manifest",
    );
    let (status, _, v) = post(&app.url, body(record.bytes(), &sig)).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (403, Some("signing-not-configured")),
        "{v}"
    );
    // The key's line with a validity window that has passed.
    let allowed = format!("nightly valid-before=\"20200101Z\" {public}\n");
    sim.commit_files(
        "octo",
        "bench",
        "main",
        &[
            (
                "benchmarks/schedule.toml",
                manifest_with_signing().as_bytes(),
            ),
            ("benchmarks/allowed_signers", allowed.as_bytes()),
        ],
        "trust",
    );
    let (status, _, v) = post(&app.url, body(record.bytes(), &sig)).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (403, Some("outside-validity")),
        "{v}"
    );
    // A record that is not sealed (its signature is good).
    let mut garbled = record.bytes().to_vec();
    garbled.insert(0, b' ');
    let (status, _, v) = post(&app.url, body(&garbled, &key.sign(&garbled))).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (422, Some("invalid-record")),
        "{v}"
    );
    // A lane the manifest does not have, signed by a key allowed for every
    // lane: the sweep would only quarantine it.
    set_signers(&sim, format!("* {public}\n"), "a wildcard key");
    let stray = drift("weekly", "2026-12-01T01:00:00Z");
    let (status, _, v) = post(&app.url, body(stray.bytes(), &key.sign(stray.bytes()))).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (422, Some("unknown-lane")),
        "{v}"
    );
    // A repository this App does not serve.
    let other_repo = serde_json::to_vec(&json!({
        "repository": "someone/else",
        "record": std::str::from_utf8(record.bytes()).expect("utf-8"),
        "signature": sig,
    }))
    .expect("json");
    let (status, _, v) = post(&app.url, other_repo).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (403, Some("repository-not-served")),
        "{v}"
    );
    // Fixed on the default branch: accepted, with the digest it claims.
    set_signers(&sim, format!("nightly {public}\n"), "renew the key");
    let wrong_digest = serde_json::to_vec(&json!({
        "record": std::str::from_utf8(record.bytes()).expect("utf-8"),
        "signature": sig,
        "digest": "0".repeat(64),
    }))
    .expect("json");
    let (status, _, v) = post(&app.url, wrong_digest).await;
    assert_eq!(
        (status, v["reason"].as_str()),
        (422, Some("digest-mismatch")),
        "{v}"
    );
    let (status, _, v) = post(&app.url, body(record.bytes(), &sig)).await;
    assert_eq!(
        (status, v["status"].as_str()),
        (201, Some("accepted")),
        "{v}"
    );
    assert_eq!(
        sim.refs("octo", "bench", "refs/heads/benchmark-result/")
            .len(),
        1
    );

    // The same record signed again by a new key (a rotation) is a new
    // handoff beside the first, not "already present".
    let (new_key, new_public) = keygen(tmp.path(), "k2");
    set_signers(
        &sim,
        format!("nightly {public}\nnightly {new_public}\n"),
        "rotate",
    );
    let resigned = new_key.sign(record.bytes());
    let (status, _, v) = post(&app.url, body(record.bytes(), &resigned)).await;
    assert_eq!(
        (status, v["status"].as_str()),
        (201, Some("accepted")),
        "{v}"
    );
    assert_eq!(
        sim.refs("octo", "bench", "refs/heads/benchmark-result/")
            .len(),
        2
    );
}

#[test]
fn a_bad_handoff_table_is_refused_naming_the_key() {
    for (table, key) in [
        ("manifest = \"../schedule.toml\"", "handoff.manifest"),
        ("manifest = \"/etc/schedule.toml\"", "handoff.manifest"),
        ("manifest = \"benchmarks/schedule.yml\"", "handoff.manifest"),
        ("max_body_bytes = 10", "handoff.max_body_bytes"),
        ("per_key_per_minute = 0", "handoff.per_key_per_minute"),
        ("burst = 0", "handoff.burst"),
        ("trust_ttl_seconds = 86400", "handoff.trust_ttl_seconds"),
    ] {
        let s = setup(&Options {
            extra: format!("\n[handoff]\n{table}\n"),
            ..Options::default()
        });
        let e = benchops_app::config::load(&s.config).expect_err(table);
        let msg = e.to_string();
        assert!(msg.contains(&format!("`{key}`")), "{table}: {msg}");
        assert!(msg.contains("config.toml"), "the file is named: {msg}");
    }
    let s = setup(&Options {
        extra: "\n[handoff]\nunknown = 1\n".into(),
        ..Options::default()
    });
    let e = benchops_app::config::load(&s.config).expect_err("unknown key");
    assert!(e.to_string().contains("unknown"), "{e}");
    let s = setup(&Options {
        extra: "\n[handoff]\n".into(),
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("defaults");
    let h = cfg.handoff.expect("on");
    assert_eq!(h.manifest, benchops_app::config::DEFAULT_HANDOFF_MANIFEST);
    assert_eq!(
        h.max_body_bytes,
        benchops_app::config::DEFAULT_HANDOFF_BODY_BYTES
    );
}
