//! The local history store against real git repositories in temporary
//! directories: paths and exact bytes, create-only rules, baseline policy,
//! receipts, crash convergence, racing writers, and a source scan that the
//! code never forces a ref.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};

use benchops::LaneName;
use benchops::manifest::BaselinePolicy;
use benchops::schema::Contract;
use benchops::seal::{SealedRecord, seal_json};
use benchops::{Sha256Digest, jcs};
use benchops_publish::history::{
    HISTORY_REF, HistoryError, LocalError, LocalHistory, MAX_ATTEMPTS, ReceiptBuilder,
    SkippedEntry, ValidatedEntry, record_path,
};
use benchops_publish::local::LocalPersist as _;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Fixtures

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn draft() -> Value {
    let bytes = fs::read(workspace_root().join("examples/result.draft.json"))
        .expect("example draft readable");
    serde_json::from_slice(&bytes).expect("example draft is JSON")
}

/// The example draft with another lane and slot. `clean` drops the drift
/// and error cases so the record may propose itself as the lane's baseline.
fn record(lane: &str, slot: &str, clean: bool) -> SealedRecord {
    let mut v = draft();
    v["lane"] = json!(lane);
    v["slot"] = json!(slot);
    if clean {
        let kept: Vec<Value> = v["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["id"] == "parse/small" || c["id"] == "render/gpu")
            .cloned()
            .collect();
        v["cases"] = Value::Array(kept);
        v["runs"] = json!({"total": 5, "succeeded": 5, "failed": 0, "incomplete": 0,
            "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
        v["case_counts"] = json!({"total": 2, "pass": 1, "drift": 0, "skipped": 1, "error": 0});
        v["publication"] = json!({
            "drift_reports": [],
            "cleared": ["parse/small"],
            "baseline_proposal": {"lane": lane, "reason": "clean run"}
        });
    }
    seal_json(&serde_json::to_vec(&v).expect("serializes")).expect("fixture seals")
}

fn lane(name: &str) -> LaneName {
    LaneName::new(name).expect("lane name")
}

fn builder() -> ReceiptBuilder {
    ReceiptBuilder::local("2026-11-30T02:00:00Z", "2026-11-30T02:00:05.250Z")
}

fn policies() -> BTreeMap<LaneName, BaselinePolicy> {
    BTreeMap::from([
        (lane("nightly"), BaselinePolicy::LastClean),
        (lane("sentinel"), BaselinePolicy::Pinned),
    ])
}

fn path_of(r: &SealedRecord) -> String {
    record_path(r).expect("record path")
}

/// A git command against the store's repository.
fn git(h: &LocalHistory, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .arg("--git-dir")
        .arg(h.git_dir())
        .args(args)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@localhost")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@localhost")
        .output()
        .expect("git runs")
}

fn git_ok(h: &LocalHistory, args: &[&str]) -> Vec<u8> {
    let out = git(h, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn git_line(h: &LocalHistory, args: &[&str]) -> String {
    String::from_utf8(git_ok(h, args))
        .expect("UTF-8")
        .trim()
        .to_owned()
}

/// `git show benchmark-history:<path>`, None when absent.
fn show(h: &LocalHistory, path: &str) -> Option<Vec<u8>> {
    let out = git(h, &["show", &format!("benchmark-history:{path}")]);
    out.status.success().then_some(out.stdout)
}

fn commit_count(h: &LocalHistory) -> usize {
    git_line(h, &["rev-list", "--count", "benchmark-history"])
        .parse()
        .expect("a count")
}

/// Commits `bytes` at `path` on the branch from outside the store (as a
/// hostile or buggy writer would), with a compare-and-swap ref update.
fn commit_foreign_file(h: &LocalHistory, path: &str, bytes: &[u8]) -> String {
    let blob = {
        let mut c = Command::new("git")
            .arg("--git-dir")
            .arg(h.git_dir())
            .args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git runs");
        std::io::Write::write_all(&mut c.stdin.take().expect("stdin"), bytes).expect("writes");
        let out = c.wait_with_output().expect("git ends");
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_owned()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let index = dir.path().join("index");
    let tip = h.tip().expect("tip");
    let with_index = |args: &[&str]| {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(h.git_dir())
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_owned()
    };
    match &tip {
        Some(t) => with_index(&["read-tree", t]),
        None => with_index(&["read-tree", "--empty"]),
    };
    with_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},{path}"),
    ]);
    let tree = with_index(&["write-tree"]);
    let mut args = vec!["commit-tree", "-m", "foreign"];
    if let Some(t) = &tip {
        args.extend(["-p", t.as_str()]);
    }
    args.push(&tree);
    let commit = git_line(h, &args);
    let zero = "0".repeat(commit.len());
    git_ok(
        h,
        &[
            "update-ref",
            HISTORY_REF,
            &commit,
            tip.as_deref().unwrap_or(&zero),
        ],
    );
    commit
}

fn fresh() -> (tempfile::TempDir, LocalHistory) {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = LocalHistory::open_or_init(dir.path().join("history.git")).expect("init");
    (dir, h)
}

// ---------------------------------------------------------------------------
// Opening

#[test]
fn open_or_init_creates_a_bare_repo_and_accepts_existing_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bare = dir.path().join("a/b/history.git");
    let h = LocalHistory::open_or_init(&bare).expect("init");
    assert_eq!(git_line(&h, &["rev-parse", "--is-bare-repository"]), "true");
    assert_eq!(git_line(&h, &["symbolic-ref", "HEAD"]), HISTORY_REF);
    assert_eq!(h.tip().expect("tip"), None);
    LocalHistory::open_or_init(&bare).expect("reopens");

    // An existing non-bare repository is used as it is.
    let work = dir.path().join("work");
    fs::create_dir(&work).expect("mkdir");
    let out = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .arg(&work)
        .output()
        .expect("git init");
    assert!(out.status.success());
    let h = LocalHistory::open_or_init(&work).expect("opens a work tree");
    assert!(h.git_dir().ends_with(".git"));
    h.persist(
        &[record("nightly", "2026-11-30T01:00:00Z", false)],
        &builder(),
        &policies(),
    )
    .expect("persists");
    assert_eq!(
        git_line(&h, &["symbolic-ref", "HEAD"]),
        "refs/heads/main",
        "HEAD of an existing repository is left alone"
    );

    // An empty directory becomes a repository; a populated non-repository
    // does not, even inside another repository.
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).expect("mkdir");
    LocalHistory::open_or_init(&empty).expect("empty dir is initialised");
    let inside = work.join("sub");
    fs::create_dir(&inside).expect("mkdir");
    fs::write(inside.join("file"), b"x").expect("write");
    assert!(matches!(
        LocalHistory::open_or_init(&inside),
        Err(HistoryError::NotARepository { .. })
    ));
    assert!(matches!(
        LocalHistory::open_or_init(inside.join("file")),
        Err(HistoryError::NotARepository { .. })
    ));
}

// ---------------------------------------------------------------------------
// Persisting

#[test]
fn first_persist_creates_the_branch_with_exact_bytes_at_the_layout_paths() {
    let (_d, h) = fresh();
    let a = record("nightly", "2026-11-30T01:00:00Z", false);
    let b = record("sentinel", "2026-12-01T13:00:00.5Z", false);
    let out = h
        .persist(&[a.clone(), b.clone()], &builder(), &policies())
        .expect("persists");

    let tip = h.tip().expect("tip").expect("branch exists");
    assert_eq!(out.commit.as_deref(), Some(tip.as_str()));
    assert_eq!(out.parent, None);
    assert_eq!(out.attempts, 1);
    assert_eq!(commit_count(&h), 1);
    assert_eq!(
        path_of(&a),
        format!(
            "results/nightly/2026/11/20261130T010000Z--{}.json",
            a.digest().hex()
        )
    );
    assert_eq!(
        path_of(&b),
        format!(
            "results/sentinel/2026/12/20261201T130000Z--{}.json",
            b.digest().hex()
        )
    );
    for r in [&a, &b] {
        assert_eq!(
            show(&h, &path_of(r)).as_deref(),
            Some(r.bytes()),
            "exact sealed bytes"
        );
    }
    assert_eq!(
        out.persisted
            .iter()
            .map(|p| p.already_present)
            .collect::<Vec<_>>(),
        [false, false]
    );
    let receipt_path = out.receipt_path.expect("receipt written");
    assert_eq!(
        show(&h, &receipt_path).as_deref(),
        Some(out.receipt.as_slice())
    );

    // Reading back.
    let listed = h.list_records(None).expect("lists");
    assert_eq!(listed.len(), 2);
    let only_nightly = h.list_records(Some(&lane("nightly"))).expect("lists");
    assert_eq!(only_nightly.len(), 1);
    assert_eq!(only_nightly[0].digest, a.digest());
    assert_eq!(only_nightly[0].slot, "20261130T010000Z");
    assert_eq!(h.read_record(&path_of(&b)).expect("reads"), b);
    let latest = h.latest_per_lane().expect("latest");
    assert_eq!(latest[&lane("nightly")].digest, a.digest());
    assert_eq!(latest[&lane("sentinel")].digest, b.digest());

    // The commit is deterministic: fixed identity, date from finished_at.
    let meta = git_line(
        &h,
        &[
            "log",
            "-1",
            "--format=%an <%ae> %at %ct",
            "benchmark-history",
        ],
    );
    assert_eq!(
        meta,
        "benchops-publish <benchops-publish@localhost> 1796004005 1796004005"
    );
}

#[test]
fn re_persist_is_a_no_op_and_makes_no_commit() {
    let (_d, h) = fresh();
    let a = record("nightly", "2026-11-30T01:00:00Z", false);
    let c = record("nightly", "2026-12-01T01:00:00Z", false);
    let first = h
        .persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("persists");
    let tip = h.tip().expect("tip");

    let again = h
        .persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("no-op");
    assert_eq!(again.commit, None);
    assert_eq!(
        again.receipt_path, None,
        "an all-no-op persist writes no receipt"
    );
    assert!(again.persisted.iter().all(|p| p.already_present));
    assert_eq!(h.tip().expect("tip"), tip);
    assert_eq!(again.tree, first.tree);
    assert_eq!(commit_count(&h), 1);

    // Duplicates in one call count once; only the new record is written.
    let more = h
        .persist(&[a.clone(), c.clone(), a.clone()], &builder(), &policies())
        .expect("persists");
    assert_eq!(more.parent, tip);
    assert_eq!(
        more.persisted
            .iter()
            .map(|p| (p.digest, p.already_present))
            .collect::<Vec<_>>(),
        [(a.digest(), true), (c.digest(), false)]
    );
    assert_eq!(commit_count(&h), 2);
    assert_eq!(show(&h, &path_of(&c)).as_deref(), Some(c.bytes()));
}

#[test]
fn other_bytes_at_a_record_path_stop_the_persist_and_write_nothing() {
    let (_d, h) = fresh();
    let a = record("nightly", "2026-11-30T01:00:00Z", false);
    let b = record("nightly", "2026-12-01T01:00:00Z", false);
    let foreign = commit_foreign_file(&h, &path_of(&a), b"{\"not\":\"the record\"}");
    let objects_before = git_line(&h, &["count-objects"]);

    let err = h
        .persist(&[b.clone(), a.clone()], &builder(), &policies())
        .expect_err("conflict");
    match &err {
        LocalError::Conflict { path, .. } => assert_eq!(path, &path_of(&a)),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(
        err.to_string().contains(&path_of(&a)),
        "the error names the path: {err}"
    );
    assert!(!err.is_retryable());
    assert_eq!(h.tip().expect("tip").as_deref(), Some(foreign.as_str()));
    assert_eq!(
        show(&h, &path_of(&b)),
        None,
        "the other record was not written either"
    );
    assert_eq!(
        git_line(&h, &["count-objects"]),
        objects_before,
        "no object was written before the conflict was found"
    );

    // Reading the foreign file back is refused as well.
    assert!(matches!(
        h.read_record(&path_of(&a)),
        Err(HistoryError::CorruptRecord { .. })
    ));
}

#[test]
fn baseline_pointer_follows_last_clean_lanes_and_never_pinned_ones() {
    let (_d, h) = fresh();
    let n1 = record("nightly", "2026-11-29T01:00:00Z", true);
    let n2 = record("nightly", "2026-11-30T01:00:00Z", true);
    let n0 = record("nightly", "2026-11-28T01:00:00Z", true);
    let s1 = record("sentinel", "2026-11-30T05:00:00Z", true);
    let o1 = record("other", "2026-11-30T05:00:00Z", true);
    let dirty = record("nightly", "2026-12-05T01:00:00Z", false);
    assert!(n1.record().publication.baseline_proposal.is_some());
    assert!(dirty.record().publication.baseline_proposal.is_none());

    let out = h
        .persist(
            &[n1.clone(), s1.clone(), o1.clone()],
            &builder(),
            &policies(),
        )
        .expect("persists");
    assert_eq!(out.baseline_changes.len(), 1);
    assert_eq!(out.baseline_changes[0].lane, lane("nightly"));
    assert_eq!(out.baseline_changes[0].from, None);
    assert_eq!(out.baseline_changes[0].to, n1.digest());
    let p = h
        .baseline(&lane("nightly"))
        .expect("reads")
        .expect("pointer");
    assert_eq!(
        (p.record, p.previous, p.slot.as_str()),
        (n1.digest(), None, "2026-11-29T01:00:00Z")
    );
    assert_eq!(p.path, path_of(&n1));
    assert_eq!(p.policy, BaselinePolicy::LastClean);
    assert_eq!(
        h.baseline(&lane("sentinel")).expect("reads"),
        None,
        "pinned never moves"
    );
    assert_eq!(
        h.baseline(&lane("other")).expect("reads"),
        None,
        "unknown lane never moves"
    );

    // The pointer file is canonical baseline-pointer/v1.
    let bytes = show(&h, "baselines/nightly.json").expect("pointer file");
    let v = jcs::parse(&bytes).expect("JSON");
    assert_eq!(jcs::canonical_bytes(&v), bytes);
    Contract::BaselinePointerV1
        .validate(&v)
        .expect("valid pointer");

    // A newer clean record moves it and remembers the old one; a dirty one
    // does not propose; an older clean one never moves it back.
    let out = h
        .persist(&[n2.clone(), dirty], &builder(), &policies())
        .expect("persists");
    assert_eq!(out.baseline_changes[0].from, Some(n1.digest()));
    let p = h
        .baseline(&lane("nightly"))
        .expect("reads")
        .expect("pointer");
    assert_eq!((p.record, p.previous), (n2.digest(), Some(n1.digest())));
    let out = h
        .persist(std::slice::from_ref(&n0), &builder(), &policies())
        .expect("persists");
    assert!(out.commit.is_some(), "the record itself is new");
    assert!(out.baseline_changes.is_empty());
    assert_eq!(
        h.baseline(&lane("nightly"))
            .expect("reads")
            .map(|p| p.record),
        Some(n2.digest())
    );

    // In one batch, the newest wins and `previous` is what the branch held.
    let (_d2, h2) = fresh();
    let out = h2
        .persist(
            &[n1.clone(), n2.clone(), n0.clone()],
            &builder(),
            &policies(),
        )
        .expect("persists");
    assert_eq!(out.baseline_changes.len(), 1);
    let p = h2
        .baseline(&lane("nightly"))
        .expect("reads")
        .expect("pointer");
    assert_eq!((p.record, p.previous), (n2.digest(), None));
}

#[test]
fn receipt_is_canonical_valid_and_records_the_persist() {
    let (_d, h) = fresh();
    let a = record("nightly", "2026-11-30T01:00:00Z", true);
    let b = record("sentinel", "2026-11-30T05:00:00Z", false);
    let mut rb = builder();
    rb.validated.push(ValidatedEntry {
        source: "handoff/a.json".into(),
        digest: Some(a.digest()),
        valid: true,
        errors: vec![],
    });
    rb.validated.push(ValidatedEntry {
        source: "handoff/bad.json".into(),
        digest: None,
        valid: false,
        errors: vec!["malformed-json at $: EOF".into()],
    });
    rb.skipped.push(SkippedEntry {
        source: "handoff/bad.json".into(),
        skip_reason: "invalid: quarantined".into(),
    });
    let first = h
        .persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("persists");
    let out = h
        .persist(&[a.clone(), b.clone()], &rb, &policies())
        .expect("persists");

    let path = out.receipt_path.expect("written");
    let bytes = show(&h, &path).expect("receipt on the branch");
    assert_eq!(bytes, out.receipt);
    let hex = Sha256Digest::of(&bytes).hex();
    assert_eq!(
        path,
        format!("receipts/2026/11/{hex}.json"),
        "named by its own sha256"
    );
    let v = jcs::parse(&bytes).expect("JSON");
    assert_eq!(jcs::canonical_bytes(&v), bytes, "canonical");
    Contract::ReceiptV1.validate(&v).expect("valid receipt/v1");

    assert_eq!(v["schema"], "receipt/v1");
    assert_eq!(v["sweep"]["trigger"], "local");
    assert_eq!(v["sweep"]["workflow_run"], Value::Null);
    assert_eq!(
        v["validated"],
        json!([
            {"source": "handoff/a.json", "digest": a.digest().to_string(), "valid": true, "errors": []},
            {"source": "handoff/bad.json", "digest": null, "valid": false, "errors": ["malformed-json at $: EOF"]},
            {"source": b.file_name(), "digest": b.digest().to_string(), "valid": true, "errors": []}
        ])
    );
    assert_eq!(
        v["persisted"],
        json!([
            {"digest": a.digest().to_string(), "path": path_of(&a), "already_present": true},
            {"digest": b.digest().to_string(), "path": path_of(&b), "already_present": false}
        ])
    );
    assert_eq!(
        v["skipped"],
        json!([{"source": "handoff/bad.json", "skip_reason": "invalid: quarantined"}])
    );
    assert_eq!(
        v["baseline_changes"],
        json!([]),
        "already at a; sentinel is pinned"
    );
    assert_eq!(
        v["history"],
        json!({"branch": "benchmark-history", "parent": first.commit, "attempts": 1})
    );
    assert_eq!(
        v["requests"],
        json!({"requests": 0, "bytes_sent": 0, "bytes_received": 0,
               "rate_limit_remaining": null, "request_ids": [], "pacing_wait_ms": 0})
    );

    // The first receipt recorded the baseline change.
    let first_receipt = jcs::parse(&first.receipt).expect("JSON");
    assert_eq!(
        first_receipt["baseline_changes"],
        json!([{"lane": "nightly", "from": null, "to": a.digest().to_string()}])
    );

    // A builder with a bad timestamp is refused before anything is written.
    let bad = ReceiptBuilder::local("yesterday", "2026-11-30T02:00:00Z");
    let c = record("nightly", "2026-12-02T01:00:00Z", false);
    let tip = h.tip().expect("tip");
    assert!(matches!(
        h.persist(&[c], &bad, &policies()),
        Err(LocalError::InvalidReceipt { .. })
    ));
    assert_eq!(h.tip().expect("tip"), tip);
}

// ---------------------------------------------------------------------------
// Crash safety and races

#[test]
fn a_crash_before_the_ref_update_converges_to_the_same_tree() {
    let a = record("nightly", "2026-11-29T01:00:00Z", true);
    let batch = [
        record("nightly", "2026-11-30T01:00:00Z", true),
        record("sentinel", "2026-11-30T05:00:00Z", false),
    ];

    // Uninterrupted.
    let (_d1, clean) = fresh();
    clean
        .persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("persists");
    let want = clean
        .persist(&batch, &builder(), &policies())
        .expect("persists");

    // Crash after building everything but before moving the ref.
    let (_d2, h) = fresh();
    h.persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("persists");
    let tip = h.tip().expect("tip");
    let crashed = h
        .prepare(&batch, &builder(), &policies())
        .expect("prepares");
    assert!(crashed.commit.is_some());
    assert_eq!(
        h.tip().expect("tip"),
        tip,
        "nothing is visible before the ref moves"
    );
    assert_eq!(
        h.baseline(&lane("nightly"))
            .expect("reads")
            .map(|p| p.record),
        Some(a.digest())
    );

    let rerun = h.persist(&batch, &builder(), &policies()).expect("reruns");
    assert_eq!(rerun.tree, crashed.tree, "same final tree");
    assert_eq!(rerun.commit, crashed.commit, "even the same commit");
    assert_eq!(rerun.tree, want.tree, "same as the uninterrupted run");
    assert_eq!(h.tip_tree().expect("tree"), want.tree);

    // A crash after the ref update: the rerun is a no-op.
    let again = h.persist(&batch, &builder(), &policies()).expect("reruns");
    assert_eq!(again.commit, None);
    assert_eq!(h.tip_tree().expect("tree"), want.tree);
}

#[test]
fn a_moved_ref_is_refused_never_overwritten() {
    let (_d, h) = fresh();
    let a = record("nightly", "2026-11-29T01:00:00Z", false);
    let b = record("nightly", "2026-11-30T01:00:00Z", false);

    // The branch appears after the commit was built on "no branch".
    let stale = h
        .prepare(std::slice::from_ref(&a), &builder(), &policies())
        .expect("prepares");
    let other = h
        .persist(std::slice::from_ref(&b), &builder(), &policies())
        .expect("persists");
    let err = h.publish(&stale).expect_err("refused");
    assert!(
        matches!(
            err,
            LocalError::History(HistoryError::RefMoved { expected: None, .. })
        ),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(h.tip().expect("tip"), other.commit);

    // The branch moves after the commit was built on its tip.
    let stale = h
        .prepare(std::slice::from_ref(&a), &builder(), &policies())
        .expect("prepares");
    let moved = commit_foreign_file(&h, "notes.txt", b"someone else");
    assert!(matches!(
        h.publish(&stale),
        Err(LocalError::History(HistoryError::RefMoved { .. }))
    ));
    assert_eq!(h.tip().expect("tip").as_deref(), Some(moved.as_str()));

    // persist itself rebuilds on the new tip.
    let out = h
        .persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("persists");
    assert_eq!(out.parent.as_deref(), Some(moved.as_str()));
    assert_eq!(show(&h, "notes.txt").as_deref(), Some(&b"someone else"[..]));
    assert_eq!(show(&h, &path_of(&a)).as_deref(), Some(a.bytes()));
}

#[test]
fn racing_persists_converge_without_losing_a_record() {
    const WRITERS: usize = 4;
    for round in 0..3 {
        let (_d, h) = fresh();
        let shared = record("nightly", "2026-11-01T01:00:00Z", true);
        let own: Vec<SealedRecord> = (0..WRITERS)
            .map(|i| record("nightly", &format!("2026-11-{:02}T01:00:00Z", 10 + i), true))
            .collect();
        let barrier = Arc::new(Barrier::new(WRITERS));
        let handles: Vec<_> = own
            .iter()
            .cloned()
            .map(|mine| {
                let path = h.path().to_path_buf();
                let barrier = Arc::clone(&barrier);
                let shared = shared.clone();
                std::thread::spawn(move || {
                    let h = LocalHistory::open_or_init(&path).expect("opens");
                    barrier.wait();
                    h.persist(&[shared, mine], &builder(), &policies())
                })
            })
            .collect();
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|t| t.join().expect("thread").expect("every writer converges"))
            .collect();

        assert!(
            outcomes.iter().all(|o| o.commit.is_some()),
            "each had a new record"
        );
        let attempts: Vec<u32> = outcomes.iter().map(|o| o.attempts).collect();
        eprintln!("round {round}: attempts per writer {attempts:?}");
        assert!(
            outcomes
                .iter()
                .all(|o| (1..=MAX_ATTEMPTS).contains(&o.attempts)),
            "round {round}: attempts are bounded"
        );
        assert_eq!(
            commit_count(&h),
            WRITERS,
            "one commit per writer, linear, none lost"
        );
        let listed = h.list_records(None).expect("lists");
        assert_eq!(listed.len(), WRITERS + 1);
        for r in own.iter().chain([&shared]) {
            assert_eq!(show(&h, &path_of(r)).as_deref(), Some(r.bytes()));
        }
        // Every writer's commit is on the branch (nothing was overwritten).
        for o in &outcomes {
            let c = o.commit.as_deref().expect("commit");
            let out = git(&h, &["merge-base", "--is-ancestor", c, "benchmark-history"]);
            assert!(out.status.success(), "commit {c} is on the branch");
        }
        // Exactly one writer wrote the shared record.
        let wrote_shared = outcomes
            .iter()
            .filter(|o| {
                o.persisted
                    .iter()
                    .any(|p| p.digest == shared.digest() && !p.already_present)
            })
            .count();
        assert_eq!(wrote_shared, 1);
        // The pointer ends at the newest clean record, whatever the order.
        let newest = own.last().expect("records").digest();
        assert_eq!(
            h.baseline(&lane("nightly"))
                .expect("reads")
                .map(|p| p.record),
            Some(newest)
        );
    }
}

// ---------------------------------------------------------------------------
// No force: source scan

/// Removes `//` comments and block comments, keeping string literals.
fn strip_comments(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1).copied()) {
            ('/', Some('/')) => {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
            }
            ('/', Some('*')) => {
                i += 2;
                while i < b.len() && !(b[i] == '*' && b.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
            }
            ('"', _) => {
                out.push('"');
                i += 1;
                while i < b.len() && b[i] != '"' {
                    if b[i] == '\\' {
                        out.push(b[i]);
                        i += 1;
                    }
                    if i < b.len() {
                        out.push(b[i]);
                    }
                    i += 1;
                }
                out.push('"');
                i += 1;
            }
            ('\'', _) if b.get(i + 2) == Some(&'\'') => {
                out.extend(&b[i..i + 3]);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Every plain string literal in comment-free source.
fn string_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        let mut end = 0;
        let bytes = after.as_bytes();
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        out.push(after[..end.min(after.len())].to_owned());
        rest = after.get(end + 1..).unwrap_or("");
    }
    out
}

/// The rules; returns every violation found in `code` (comments removed).
fn force_violations(code: &str) -> Vec<String> {
    let mut v = Vec::new();
    for lit in string_literals(code) {
        let forbidden = matches!(lit.as_str(), "-f" | "-d" | "--delete" | "push")
            || lit.starts_with('+')
            || lit.contains("--force");
        if forbidden {
            v.push(format!("forbidden git argument {lit:?}"));
        }
    }
    // Every `update-ref` is exactly `["update-ref", "-m", MSG, REF, new, old]`,
    // or the transaction `["update-ref", "-m", MSG, "--stdin"]` whose one
    // update line carries the old value.
    let mut rest = code;
    while let Some(at) = rest.find("\"update-ref\"") {
        let tail = &rest[at..];
        let end = tail.find(']').unwrap_or(tail.len());
        let items: Vec<&str> = tail[..end]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let plain = items.len() == 6
            && items[1] == "\"-m\""
            && items[3] == "HISTORY_REF"
            && items[4] == "new"
            && items[5] == "old";
        let transaction = items.len() == 4
            && items[1] == "\"-m\""
            && items[3] == "\"--stdin\""
            && code.contains(r#""start\nupdate {HISTORY_REF} {new} {old}\nprepare\n""#)
            && !code.contains(r"\nupdate {HISTORY_REF} {new}\n");
        let ok = plain || transaction;
        if !ok {
            v.push(format!("update-ref without an old value: {}", &tail[..end]));
        }
        rest = &tail[1..];
    }
    v
}

#[test]
fn the_scanner_catches_forcing_snippets() {
    let bad = [
        r#"c.args(["update-ref", HISTORY_REF, new]);"#,
        r#"c.args(["update-ref", "-m", M, HISTORY_REF, new]);"#,
        r#"c.args(["push", "origin", "+refs/heads/x"]);"#,
        r#"c.args(["branch", "-f", "benchmark-history", new]);"#,
        r#"c.args(["update-ref", "-d", HISTORY_REF]);"#,
        r#"c.args(["fetch", "--force"]);"#,
        r#"c.args(["update-ref", "-m", M, "--stdin"]); let t = "start\nupdate {HISTORY_REF} {new}\nprepare\n";"#,
    ];
    for snippet in bad {
        assert!(
            !force_violations(&strip_comments(snippet)).is_empty(),
            "{snippet}"
        );
    }
    let good = r#"let args = ["update-ref", "-m", REFLOG_MESSAGE, HISTORY_REF, new, old]; // "-f""#;
    assert_eq!(
        force_violations(&strip_comments(good)),
        Vec::<String>::new()
    );
}

/// The publisher's source and the history crate's (which holds the local
/// repository's git plumbing).
#[test]
fn the_source_never_forces_and_always_updates_the_ref_with_an_old_value() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut update_refs = 0;
    let mut stack = vec![crate_dir.join("src"), crate_dir.join("../history/src")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("source dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let code = strip_comments(&fs::read_to_string(&p).expect("source"));
            let violations = force_violations(&code);
            assert!(violations.is_empty(), "{}: {violations:?}", p.display());
            update_refs += code.matches("\"update-ref\"").count();
        }
    }
    assert_eq!(update_refs, 1, "the branch moves in exactly one place");
}

#[test]
fn receipt_type_reads_the_contract_fixture() {
    let p = workspace_root().join("tests/fixtures/contracts/receipt.valid.json");
    let text = fs::read(&p).expect("fixture readable");
    let r: benchops_publish::history::Receipt =
        serde_json::from_slice(&text).expect("the receipt type reads receipt/v1");
    let back = serde_json::to_value(&r).expect("serializes");
    Contract::ReceiptV1
        .validate(&back)
        .expect("and writes it back valid");
    assert_eq!(back, serde_json::from_slice::<Value>(&text).expect("JSON"));
}

#[test]
fn issue_links_point_at_the_paths_the_store_writes() {
    let draft = fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/result.draft.json"
    ))
    .expect("example");
    let sealed = seal_json(&draft).expect("valid");
    let r = sealed.record();
    let reference = benchops::reconcile::RecordRef {
        lane: r.lane.clone(),
        slot: r.slot.clone(),
        finished_at: r.finished_at.clone(),
        digest: sealed.digest(),
    };
    assert_eq!(
        benchops::reconcile::default_history_path(&reference),
        record_path(&sealed).expect("path")
    );
}

#[test]
fn a_persist_with_nothing_new_writes_nothing_even_with_validated_handoffs() {
    let (_d, h) = fresh();
    let a = record("nightly", "2026-11-30T01:00:00Z", false);
    h.persist(std::slice::from_ref(&a), &builder(), &policies())
        .expect("persists");
    let tip = h.tip().expect("tip");
    let records = h.list_records(None).expect("lists");

    // A later sweep that validated the same handoff (and a bad one) again.
    let mut later = ReceiptBuilder::local("2026-12-01T02:00:00Z", "2026-12-01T02:00:05Z");
    later.validated.push(ValidatedEntry {
        source: "sealed/bad.json".to_owned(),
        digest: None,
        valid: false,
        errors: vec!["unreadable: gone".to_owned()],
    });
    later.skipped.push(SkippedEntry {
        source: "sealed/bad.json".to_owned(),
        skip_reason: "invalid handoff, quarantined to quarantine/bad.json".to_owned(),
    });
    let out = h
        .persist(std::slice::from_ref(&a), &later, &policies())
        .expect("persists");
    assert_eq!(out.commit, None, "no receipt-only commit");
    assert_eq!(out.receipt_path, None);
    assert!(out.persisted.iter().all(|p| p.already_present));
    assert_eq!(h.tip().expect("tip"), tip, "the branch did not move");
    assert_eq!(h.list_records(None).expect("lists"), records);
    assert_eq!(commit_count(&h), 1);

    // The computed receipt still says what the sweep saw.
    let v: Value = serde_json::from_slice(&out.receipt).expect("JSON");
    assert_eq!(v["persisted"][0]["already_present"], true);
    assert!(v.get("stopped").is_none(), "no stop: the member is omitted");
}
