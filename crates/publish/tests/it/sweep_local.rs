//! The local sweep end to end, on real git repositories in temporary
//! directories: the drift issue lifecycle in the ledger, idempotence,
//! quarantine (library and CLI exit status), crash convergence between any
//! two ledger writes, and human decisions.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use benchops::reconcile::{Note, drift_marker, evidence_marker};
use benchops::seal::SealedRecord;
use benchops_publish::history::{LocalHistory, record_path};
use benchops_publish::ledger::{BENCHOPS_AUTHOR, Ledger, LedgerState};
use benchops_publish::local::{AfterWrite, LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Applied;
use benchops_publish::sweep::{Clock, SweepReport, render_summary};
use benchops_testkit::records::{clean, drift, drift_both};
use serde_json::Value;

// ---------------------------------------------------------------------------
// Fixtures

const MANIFEST: &str = benchops_testkit::records::TWO_LANE_MANIFEST;

struct Env {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    manifest: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    fs::create_dir_all(dir.join("sealed")).expect("sealed dir");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, MANIFEST).expect("manifest written");
    Env {
        _tmp: tmp,
        dir,
        manifest,
    }
}

impl Env {
    /// Drops sealed records into `sealed/` as `bench seal` does.
    fn hand_off(&self, records: &[&SealedRecord]) {
        for r in records {
            fs::write(self.dir.join("sealed").join(r.file_name()), r.bytes()).expect("handoff");
        }
    }

    fn opts(&self) -> LocalSweepOptions {
        let mut o = LocalSweepOptions::new(&self.dir, &self.manifest);
        o.clock = Clock::fixed("2026-12-02T00:00:00.000Z");
        o
    }

    fn sweep(&self) -> SweepReport {
        sweep_local(&self.opts()).expect("sweep succeeds")
    }

    fn sweep_at_most(&self, k: usize) -> SweepReport {
        let mut o = self.opts();
        o.max_actions = Some(k);
        sweep_local(&o).expect("sweep succeeds")
    }

    fn ledger_bytes(&self) -> Vec<u8> {
        fs::read(self.dir.join("issues.json")).expect("ledger exists")
    }

    fn ledger(&self) -> Ledger {
        Ledger::from_bytes(&self.ledger_bytes(), Path::new("issues.json")).expect("valid ledger")
    }

    fn edit_ledger(&self, f: impl FnOnce(&mut Ledger)) {
        let mut l = self.ledger();
        f(&mut l);
        fs::write(self.dir.join("issues.json"), l.to_bytes()).expect("ledger edited");
    }

    fn history(&self) -> LocalHistory {
        LocalHistory::open_or_init(self.dir.join("history.git")).expect("history opens")
    }
}

fn benchops_comments(l: &Ledger, number: u64) -> Vec<String> {
    l.issue(number)
        .expect("issue exists")
        .comments
        .iter()
        .filter(|c| c.author == BENCHOPS_AUTHOR)
        .map(|c| c.body.clone())
        .collect()
}

// ---------------------------------------------------------------------------
// Lifecycle

#[test]
fn first_sweep_persists_and_opens_one_drift_issue_with_labels_and_evidence() {
    let e = env();
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    let report = e.sweep();

    assert_eq!(report.handoffs.len(), 1);
    assert_eq!(report.quarantined(), 0);
    assert_eq!((report.new_records(), report.already_present()), (1, 0));
    let commit = report.commit.clone().expect("a commit");
    assert_eq!(report.tip.as_deref(), Some(commit.as_str()));
    assert!(report.receipt_path.is_some());
    let h = e.history();
    assert_eq!(h.tip().expect("tip").as_deref(), Some(commit.as_str()));
    assert_eq!(
        h.read_record(&record_path(&r1).expect("path"))
            .expect("in history")
            .bytes(),
        r1.bytes()
    );
    assert_eq!(report.opened(), 1);
    assert!(report.issues_created);

    let l = e.ledger();
    assert_eq!(l.issues.len(), 1);
    assert_eq!(l.next_number, 2);
    let issue = &l.issues[0];
    assert_eq!(issue.number, 1);
    assert_eq!(issue.state, LedgerState::Open);
    assert_eq!(issue.title, "Benchmark drift: parse/large wall_s");
    assert_eq!(issue.labels, ["benchmark-drift", "lane:nightly"]);
    let key = benchops::reconcile::DriftKey::new(
        benchops::CaseId::new("parse/large").expect("case"),
        "wall_s",
    );
    assert!(issue.body.contains(&drift_marker(&key)));
    assert!(issue.body.contains(&evidence_marker(&r1.digest())));
    assert!(
        issue.body.contains(&record_path(&r1).expect("path")),
        "the evidence links the history file"
    );
    assert!(issue.body.contains("xychart-beta"));
    assert!(issue.comments.is_empty());

    let summary = render_summary(&report);
    for want in [
        "1 new record(s), 0 already present",
        "opened 1, commented 0, closed 0, reopened 0",
        "#1 opened: Benchmark drift: parse/large wall_s",
        "health (latest record per lane)",
        "sentinel         no record yet",
        "watchdog",
    ] {
        assert!(summary.contains(want), "{want:?} not in:\n{summary}");
    }
    assert!(
        summary.contains("nightly          2026-12-01T01:00:00Z"),
        "{summary}"
    );
}

#[test]
fn a_second_identical_sweep_leaves_the_tip_unchanged_because_handoffs_are_consumed() {
    let e = env();
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    let first = e.sweep();
    let tip = first.commit.clone().expect("a commit");
    let ledger = e.ledger_bytes();
    let mtime = fs::metadata(e.dir.join("issues.json"))
        .and_then(|m| m.modified())
        .expect("mtime");

    // The handoff's record is in history: its file moved to .persisted/.
    let source = e.dir.join("sealed").join(r1.file_name());
    let moved = e.dir.join("sealed/.persisted").join(r1.file_name());
    assert!(!source.exists(), "consumed");
    assert_eq!(fs::read(&moved).expect("moved"), r1.bytes());
    assert_eq!(first.consumed.len(), 1);
    assert!(first.consumed[0].is_gone());
    let summary = render_summary(&first);
    assert!(summary.contains("moved to"), "{summary}");

    let mut o = e.opts();
    o.clock = Clock::fixed("2026-12-03T00:00:00.000Z"); // another time, same inputs
    let records = e.history().list_records(None).expect("lists");
    let second = sweep_local(&o).expect("sweep");
    assert!(second.handoffs.is_empty(), ".persisted/ is not read");
    assert_eq!(second.commit, None, "no receipt-only commit");
    assert_eq!(second.receipt_path, None);
    assert_eq!(second.tip.as_deref(), Some(tip.as_str()));
    assert_eq!(
        e.history().tip().expect("tip").as_deref(),
        Some(tip.as_str()),
        "the branch tip is unchanged"
    );
    assert_eq!(e.history().list_records(None).expect("lists"), records);
    assert!(second.applied.is_empty(), "{:?}", second.applied);
    assert!(!second.issues_created);
    assert_eq!(e.ledger_bytes(), ledger);
    assert_eq!(
        fs::metadata(e.dir.join("issues.json"))
            .and_then(|m| m.modified())
            .expect("mtime"),
        mtime,
        "the ledger was not rewritten"
    );
    assert!(
        render_summary(&second).contains("nothing new: no commit"),
        "{}",
        render_summary(&second)
    );

    // The handoff handed off again (or left by a crash before it was
    // moved): already present, nothing written, and it is consumed again
    // next to the identical copy.
    e.hand_off(&[&r1]);
    let third = sweep_local(&o).expect("sweep");
    assert_eq!((third.new_records(), third.already_present()), (0, 1));
    assert_eq!(third.commit, None);
    assert_eq!(
        e.history().tip().expect("tip").as_deref(),
        Some(tip.as_str())
    );
    assert!(!source.exists());
    assert_eq!(
        third.consumed[0].outcome,
        benchops_publish::sweep::ConsumeOutcome::AlreadyThere
    );
    assert_eq!(fs::read(&moved).expect("kept"), r1.bytes());
}

#[test]
fn a_handoff_whose_persisted_copy_differs_is_left_in_place_and_reported() {
    let e = env();
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    fs::create_dir_all(e.dir.join("sealed/.persisted")).expect("dir");
    let taken = e.dir.join("sealed/.persisted").join(r1.file_name());
    fs::write(&taken, b"someone else's bytes").expect("written");
    e.hand_off(&[&r1]);
    let report = e.sweep();
    assert_eq!(report.new_records(), 1);
    assert!(!report.consumed[0].is_gone(), "{:?}", report.consumed);
    assert!(e.dir.join("sealed").join(r1.file_name()).exists());
    assert_eq!(fs::read(&taken).expect("kept"), b"someone else's bytes");
    let summary = render_summary(&report);
    assert!(summary.contains("LEFT in place"), "{summary}");
}

#[test]
fn a_fifo_or_a_huge_file_in_place_of_the_persisted_copy_is_never_read() {
    for kind in ["fifo", "huge", "link"] {
        let e = env();
        let r1 = drift("nightly", "2026-12-01T01:00:00Z");
        fs::create_dir_all(e.dir.join("sealed/.persisted")).expect("dir");
        let taken = e.dir.join("sealed/.persisted").join(r1.file_name());
        match kind {
            "fifo" => {
                let st = Command::new("mkfifo")
                    .arg(&taken)
                    .status()
                    .expect("mkfifo runs");
                assert!(st.success());
            }
            // Sparse: 64 GiB of nothing, which a whole read would not survive.
            "huge" => fs::File::create(&taken)
                .and_then(|f| f.set_len(64 << 30))
                .expect("sparse file"),
            _ => std::os::unix::fs::symlink("/dev/zero", &taken).expect("symlink"),
        }
        e.hand_off(&[&r1]);
        // Would block forever on the FIFO, or read without end, before.
        let report = e.sweep();
        assert_eq!(report.new_records(), 1, "{kind}");
        assert!(
            !report.consumed[0].is_gone(),
            "{kind}: {:?}",
            report.consumed
        );
        assert!(e.dir.join("sealed").join(r1.file_name()).exists(), "{kind}");
    }
}

#[test]
fn a_sweep_with_no_handoffs_makes_no_commit() {
    let e = env();
    // No branch yet, no handoff: nothing to record.
    let idle = e.sweep();
    assert!(idle.handoffs.is_empty());
    assert_eq!((idle.commit.clone(), idle.tip.clone()), (None, None));
    assert_eq!(idle.receipt_path, None);
    assert_eq!(e.history().tip().expect("tip"), None);

    // After a sweep that persisted, removing the handoff makes the next
    // (scheduled) sweeps idle: the branch does not move.
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    let first = e.sweep();
    let tip = first.commit.clone().expect("a commit");
    assert!(
        !e.dir.join("sealed").join(r1.file_name()).exists(),
        "the handoff was consumed"
    );
    for _ in 0..2 {
        let idle = e.sweep();
        assert_eq!(idle.commit, None);
        assert_eq!(idle.receipt_path, None);
        assert_eq!(idle.tip.as_deref(), Some(tip.as_str()));
        assert!(idle.applied.is_empty(), "{:?}", idle.applied);
    }
    assert_eq!(
        e.history().tip().expect("tip").as_deref(),
        Some(tip.as_str())
    );
    assert!(render_summary(&e.sweep()).contains("nothing new: no commit"));
}

#[test]
fn the_issue_closes_only_when_every_covering_lane_has_a_clearing_record() {
    let e = env();
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&[&r1]);
    e.sweep();

    // The sentinel covers parse/large and clears it: not enough, the nightly
    // (which covers everything) has not cleared it yet.
    let s2 = clean("sentinel", "2026-12-01T02:00:00Z");
    e.hand_off(&[&s2]);
    let report = e.sweep();
    assert_eq!(report.closed(), 0);
    assert_eq!(e.ledger().issues[0].state, LedgerState::Open);
    assert!(e.ledger().issues[0].body.contains("Held open by `nightly`"));

    let n3 = clean("nightly", "2026-12-02T01:00:00Z");
    e.hand_off(&[&n3]);
    let report = e.sweep();
    assert_eq!(report.closed(), 1, "{:?}", report.applied);
    let l = e.ledger();
    let issue = &l.issues[0];
    assert_eq!(issue.state, LedgerState::Closed);
    assert_eq!(issue.state_reason.as_deref(), Some("completed"));
    let comments = benchops_comments(&l, 1);
    assert_eq!(comments.len(), 1, "one closing comment");
    assert!(comments[0].contains("<!-- benchops:closed epoch="));
    for r in [&s2, &n3] {
        assert!(
            comments[0].contains(&r.digest().to_string()),
            "the closing comment lists each lane's clearing record"
        );
    }
    // Baseline pointers moved for the clean records (last-clean lanes).
    assert_eq!(
        e.history()
            .baseline(&benchops::LaneName::new("nightly").expect("lane"))
            .expect("reads")
            .map(|p| p.record),
        Some(n3.digest())
    );
    // And it stays closed.
    assert!(e.sweep().applied.is_empty());
}

#[test]
fn a_tampered_handoff_is_quarantined_with_a_reason_and_never_persisted() {
    let e = env();
    let good = drift("nightly", "2026-12-01T01:00:00Z");
    let other = clean("nightly", "2026-12-02T01:00:00Z");
    e.hand_off(&[&good]);
    let tampered_path = e.dir.join("sealed").join(other.file_name());
    let tampered = String::from_utf8(other.bytes().to_vec())
        .expect("UTF-8")
        .replacen("bench-01", "bench-02", 1);
    fs::write(&tampered_path, &tampered).expect("tampered handoff");

    let report = e.sweep();
    assert_eq!(report.quarantined(), 1);
    assert_eq!(report.new_records(), 1);
    let bad = report
        .handoffs
        .iter()
        .find(|h| !h.valid())
        .expect("an invalid handoff");
    assert_eq!(bad.source, tampered_path);
    assert!(bad.issues.iter().any(|i| i.kind == "digest-mismatch"));
    let q = bad.quarantined.clone().expect("quarantined");
    let copy = q.copy.expect("copied");
    assert_eq!(copy, e.dir.join("quarantine").join(other.file_name()));
    assert_eq!(fs::read(&copy).expect("copy"), tampered.as_bytes());
    assert_eq!(
        q.why,
        e.dir
            .join("quarantine")
            .join(format!("{}.why.txt", other.file_name()))
    );
    let why = fs::read_to_string(&q.why).expect("why");
    assert!(
        why.contains("digest-mismatch") && why.contains("NOT persisted"),
        "{why}"
    );
    assert!(tampered_path.exists(), "the source is left in place");
    let listed: Vec<_> = e
        .history()
        .list_records(None)
        .expect("lists")
        .into_iter()
        .map(|r| r.digest)
        .collect();
    assert_eq!(
        listed,
        vec![good.digest()],
        "only the valid record persisted"
    );
    let summary = render_summary(&report);
    assert!(summary.contains("QUARANTINED"), "{summary}");
    assert!(summary.contains("source left in place"), "{summary}");

    // The first sweep's receipt records the quarantine.
    let receipt_path = report.receipt_path.clone().expect("a receipt");
    let receipt: Value = serde_json::from_slice(
        &Command::new("git")
            .arg("--git-dir")
            .arg(e.dir.join("history.git"))
            .args(["show", &format!("benchmark-history:{receipt_path}")])
            .output()
            .expect("git runs")
            .stdout,
    )
    .expect("receipt JSON");
    assert_eq!(receipt["skipped"].as_array().map(Vec::len), Some(1));
    assert!(
        tampered_path.exists(),
        "an invalid handoff is never consumed"
    );
    assert!(!e.dir.join("sealed").join(good.file_name()).exists());

    // A rerun quarantines it again (no-op copy) and still reports it, but
    // has nothing new to record: the branch does not move.
    let tip = e.history().tip().expect("tip");
    let again = e.sweep();
    assert_eq!(again.quarantined(), 1);
    assert_eq!(again.new_records(), 0);
    assert_eq!(again.commit, None, "no receipt-only commit");
    assert_eq!(e.history().tip().expect("tip"), tip);
    let listed_again: Vec<_> = e
        .history()
        .list_records(None)
        .expect("lists")
        .into_iter()
        .map(|r| r.digest)
        .collect();
    assert_eq!(
        listed_again,
        vec![good.digest()],
        "still only the valid record"
    );
}

#[test]
fn cli_exits_1_when_anything_was_quarantined_and_0_otherwise() {
    let e = env();
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
            .arg("sweep")
            .arg("--local")
            .arg(&e.dir)
            .arg("--manifest")
            .arg(&e.manifest)
            .output()
            .expect("benchops-publish runs")
    };
    let ok = run();
    let out = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(out.contains("opened 1"), "{out}");

    let bad = e
        .dir
        .join("sealed")
        .join(format!("{}.json", "ab".repeat(32)));
    fs::write(&bad, b"{\"not\": \"a record\"}").expect("bad handoff");
    let red = run();
    let out = String::from_utf8_lossy(&red.stdout);
    assert_eq!(red.status.code(), Some(1), "{out}");
    assert!(out.contains("QUARANTINED"), "{out}");
    assert!(String::from_utf8_lossy(&red.stderr).contains("quarantined"));
    assert!(
        e.dir
            .join("quarantine")
            .join(format!("{}.json.why.txt", "ab".repeat(32)))
            .exists()
    );

    // Usage and I/O errors: 2.
    let missing = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(["sweep", "--local"])
        .arg(e.dir.join("nope"))
        .arg("--manifest")
        .arg(&e.manifest)
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nope"));
    let no_manifest = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(["sweep", "--local"])
        .arg(&e.dir)
        .output()
        .expect("runs");
    assert_eq!(no_manifest.status.code(), Some(2));
    let help = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(["sweep", "--help"])
        .output()
        .expect("runs");
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("benchops-publish sweep --local .benchops/")
    );
}

#[test]
fn a_corrupt_ledger_stops_the_sweep_naming_the_file() {
    let e = env();
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    fs::write(
        e.dir.join("issues.json"),
        b"{\"schema\": \"benchops-issue-ledger/v1\"",
    )
    .expect("w");
    let err = sweep_local(&e.opts()).expect_err("refused");
    let line = benchops_publish::text::error_line(&err);
    assert!(line.contains("issues.json"), "{line}");
    // The record was persisted before the reconcile stopped; the receipt
    // that goes with the error says where.
    assert_eq!(e.history().list_records(None).expect("lists").len(), 1);
    let receipt: Value =
        serde_json::from_slice(err.receipt.as_deref().expect("a receipt")).expect("JSON");
    benchops::schema::Contract::ReceiptV1
        .validate(&receipt)
        .expect("a valid receipt/v1");
    assert_eq!(receipt["stopped"]["phase"], "reconcile");
    assert_eq!(receipt["stopped"]["step"], "read the issue ledger");
    assert_eq!(receipt["stopped"]["retryable"], false);
    assert!(
        receipt["stopped"]["error"]
            .as_str()
            .is_some_and(|m| m.contains("issues.json")),
        "{receipt}"
    );
    assert_eq!(receipt["persisted"][0]["already_present"], false);

    // The CLI: the receipt goes to --receipt-out, or to stderr as one JSON
    // line after the error.
    let out_file = e.dir.join("stopped.receipt.json");
    let cli = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
            .args(["sweep", "--local"])
            .arg(&e.dir)
            .arg("--manifest")
            .arg(&e.manifest)
            .args(extra)
            .output()
            .expect("runs")
    };
    let out = cli(&["--receipt-out", out_file.to_str().expect("UTF-8")]);
    assert_eq!(out.status.code(), Some(2));
    let written: Value =
        serde_json::from_slice(&fs::read(&out_file).expect("receipt file")).expect("receipt JSON");
    assert_eq!(written["stopped"]["phase"], "reconcile");
    assert_eq!(written["stopped"]["retryable"], false);
    let out = cli(&[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().expect("a line");
    let printed: Value = serde_json::from_str(last).expect("one JSON line");
    assert_eq!(printed["stopped"]["phase"], "reconcile");
    assert!(
        stderr
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("error: ")),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------
// Crash convergence

/// History after the first sweep: issue #1 (parse/large) and #2
/// (parse/small) open. The next handoffs make the plan: labels and a comment
/// for the sentinel evidence, a comment for the new nightly evidence, the
/// body of #1, then close #2 and its closing comment.
fn crash_scenario(e: &Env) {
    e.hand_off(&[&drift_both("nightly", "2026-12-01T01:00:00Z")]);
    let first = e.sweep();
    assert_eq!(first.opened(), 2);
    e.hand_off(&[
        &drift("sentinel", "2026-12-01T02:00:00Z"),
        &drift("nightly", "2026-12-02T01:00:00Z"),
    ]);
}

#[test]
fn a_crash_after_any_ledger_write_converges_to_the_uninterrupted_result() {
    let reference = env();
    crash_scenario(&reference);
    let full = reference.sweep();
    let n = full.applied.len();
    assert!(n >= 5, "a plan worth crashing in: {:?}", full.applied);
    assert_eq!(full.closed(), 1);
    let want_ledger = reference.ledger_bytes();
    let want_records = reference.history().list_records(None).expect("lists");
    assert!(reference.sweep().applied.is_empty(), "converged");

    for k in 0..=n {
        let e = env();
        crash_scenario(&e);
        let partial = e.sweep_at_most(k);
        assert_eq!(partial.applied.len(), k);
        assert_eq!(partial.pending_actions, n - k, "k={k}");
        assert_eq!(partial.applied[..], full.applied[..k], "k={k}");
        let rest = e.sweep();
        assert_eq!(rest.pending_actions, 0);
        assert_eq!(rest.applied.len(), n - k, "k={k}: only the rest is applied");
        assert_eq!(
            String::from_utf8(e.ledger_bytes()).expect("UTF-8"),
            String::from_utf8(want_ledger.clone()).expect("UTF-8"),
            "k={k}"
        );
        // The records are the same.
        assert_eq!(
            e.history().list_records(None).expect("lists"),
            want_records,
            "k={k}"
        );
        assert!(e.sweep().applied.is_empty(), "k={k}: converged");
    }
}

#[test]
fn a_ledger_edited_during_the_sweep_is_replanned_not_overwritten() {
    // After the sweep's first write, a person accepts issue #1 in the file.
    // The sweep notices before its next write, recomputes the plan from the
    // edited file, and makes no further write to #1.
    let e = env();
    crash_scenario(&e);
    let mut o = e.opts();
    o.after_ledger_write = Some(AfterWrite(Arc::new(|path: &Path, n: usize| {
        if n == 1 {
            let mut l = Ledger::from_bytes(&fs::read(path).expect("reads"), path).expect("valid");
            l.issues[0].labels.push("drift-accepted".into());
            fs::write(path, l.to_bytes()).expect("edited");
        }
    })));
    let report = sweep_local(&o).expect("sweep");
    assert_eq!(report.replans, 1);
    assert!(
        report.applied[0].to_string().starts_with("#1 "),
        "{:?}",
        report.applied
    );
    assert!(
        report.applied[1..]
            .iter()
            .all(|a| !a.to_string().starts_with("#1 ")),
        "{:?}",
        report.applied
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| matches!(n, Note::Accepted { issue: 1, .. }))
    );
    let l = e.ledger();
    assert!(
        l.issues[0].labels.iter().any(|x| x == "drift-accepted"),
        "the edit survived"
    );
    assert_eq!(l.issues[1].state, LedgerState::Closed, "#2 still closed");
    assert!(e.sweep().applied.is_empty());
}

// ---------------------------------------------------------------------------
// Human decisions

#[test]
fn a_human_closed_issue_is_not_reopened() {
    let e = env();
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep();
    e.edit_ledger(|l| {
        l.issues[0].state = LedgerState::Closed;
        l.issues[0].state_reason = Some("not_planned".into());
        l.issues[0]
            .comments
            .push(benchops_publish::ledger::LedgerComment {
                id: 0,
                author: "maintainer".into(),
                body: "expected: we switched parsers".into(),
            });
    });

    let r2 = drift("nightly", "2026-12-02T01:00:00Z");
    e.hand_off(&[&r2]);
    let report = e.sweep();
    assert_eq!(report.reopened(), 0);
    assert_eq!(report.commented(), 1);
    assert!(
        report
            .notes
            .iter()
            .any(|n| matches!(n, Note::ClosedByHuman { issue: 1, .. }))
    );
    let l = e.ledger();
    assert_eq!(l.issues[0].state, LedgerState::Closed);
    assert_eq!(l.issues[0].state_reason.as_deref(), Some("not_planned"));
    let comments = benchops_comments(&l, 1);
    assert_eq!(comments.len(), 1);
    assert!(comments[0].contains(&evidence_marker(&r2.digest())));
    assert!(comments[0].contains("closed by a person"));
    assert_eq!(
        l.issues[0].comments.len(),
        2,
        "the person's comment is kept"
    );
    assert!(render_summary(&report).contains("closed by a person: #1"));

    // Nothing more on the next sweep.
    assert!(e.sweep().applied.is_empty());
}

#[test]
fn a_duplicated_benchops_comment_is_deleted_keeping_the_earliest() {
    let e = env();
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep();
    let r2 = drift("nightly", "2026-12-02T01:00:00Z");
    e.hand_off(&[&r2]);
    assert_eq!(e.sweep().commented(), 1);
    // Two racing sweeps both posted the comment: the copy was appended
    // later (without an id, as by hand: it is numbered on load), and a
    // person quoted it.
    e.edit_ledger(|l| {
        let mut copy = l.issues[0].comments[0].clone();
        copy.id = 0;
        let mut quote = copy.clone();
        quote.author = "maintainer".into();
        l.issues[0].comments.push(copy);
        l.issues[0].comments.push(quote);
    });
    let before = e.ledger();
    let ids: Vec<u64> = before.issues[0].comments.iter().map(|c| c.id).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");

    let report = e.sweep();
    assert_eq!(
        report.applied,
        [Applied::DeletedDuplicateComment {
            issue: 1,
            comment_id: ids[1]
        }]
    );
    assert!(render_summary(&report).contains(&format!("#1 duplicate comment {} deleted", ids[1])));
    let l = e.ledger();
    let kept: Vec<u64> = l.issues[0].comments.iter().map(|c| c.id).collect();
    assert_eq!(
        kept,
        [ids[0], ids[2]],
        "the earliest and the person's quote"
    );
    let comments = benchops_comments(&l, 1);
    assert_eq!(comments.len(), 1);
    assert!(comments[0].contains(&evidence_marker(&r2.digest())));
    assert!(e.sweep().applied.is_empty());
}

#[test]
fn an_accepted_issue_gets_no_more_comments() {
    let e = env();
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep();
    e.edit_ledger(|l| l.issues[0].labels.push("drift-accepted".into()));
    e.hand_off(&[&drift("nightly", "2026-12-02T01:00:00Z")]);
    let report = e.sweep();
    assert!(report.applied.is_empty(), "{:?}", report.applied);
    assert!(report.notes.iter().any(
        |n| matches!(n, Note::Accepted { issue: 1, suppressed, .. } if suppressed.len() == 1)
    ));
}

#[test]
fn drift_clear_drift_again_reopens() {
    let e = env();
    e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
    e.sweep();
    e.hand_off(&[
        &clean("sentinel", "2026-12-01T02:00:00Z"),
        &clean("nightly", "2026-12-02T01:00:00Z"),
    ]);
    assert_eq!(e.sweep().closed(), 1);
    e.hand_off(&[&drift("nightly", "2026-12-03T01:00:00Z")]);
    let report = e.sweep();
    assert_eq!(report.reopened(), 1);
    assert_eq!(report.opened(), 0, "the same issue, not a new one");
    let l = e.ledger();
    assert_eq!(l.issues.len(), 1);
    assert_eq!(l.issues[0].state, LedgerState::Open);
    assert_eq!(l.issues[0].state_reason.as_deref(), Some("reopened"));
}

#[test]
fn coverage_comes_from_the_current_manifest_whatever_manifest_digest_a_record_carries() {
    let e = env();
    let current = benchops::manifest::from_toml(MANIFEST, "schedule.toml")
        .expect("manifest")
        .digest;
    let r1 = drift("nightly", "2026-12-01T01:00:00Z");
    let s2 = clean("sentinel", "2026-12-01T02:00:00Z");
    for r in [&r1, &s2] {
        assert_ne!(
            r.record().manifest_digest,
            current,
            "the records ran under another manifest"
        );
    }
    e.hand_off(&[&r1]);
    e.sweep();
    e.hand_off(&[&s2]);
    // Under the current manifest the nightly lane still covers parse/large
    // and has not cleared it: the issue stays open.
    assert_eq!(e.sweep().closed(), 0);
    assert_eq!(e.ledger().issues[0].state, LedgerState::Open);

    // The manifest changes: the nightly lane stops covering parse/large.
    // The same history now closes the issue on the sentinel's clearing
    // record: coverage is read from the manifest of the sweep, never from
    // the records' `manifest_digest`, which is provenance only.
    let narrowed = MANIFEST.replacen("cases = [\"*\"]", "cases = [\"parse/small\"]", 1);
    assert_ne!(narrowed, MANIFEST);
    fs::write(&e.manifest, narrowed).expect("manifest rewritten");
    let report = e.sweep();
    assert_eq!(report.closed(), 1, "{:?}", report.applied);
    assert_eq!(e.ledger().issues[0].state, LedgerState::Closed);
}

/// Every whitespace variant an editor or the platform leaves on the lines of
/// a body, applied to a body benchops wrote.
fn rewhitespace(body: &str, variant: usize) -> String {
    let (eol, tail, last) = [
        ("\r\n", "", true),
        ("\n", "  ", true),
        ("\n", "\t", false),
        ("\r\n", " \t", false),
        ("\n", " ", false),
    ][variant];
    let mut out = body
        .lines()
        .map(|l| format!("{l}{tail}"))
        .collect::<Vec<_>>()
        .join(eol);
    if last {
        out.push_str(eol);
    }
    out
}

#[test]
fn an_issue_body_saved_with_other_whitespace_keeps_its_key() {
    for variant in 0..5 {
        let e = env();
        e.hand_off(&[&drift("nightly", "2026-12-01T01:00:00Z")]);
        assert_eq!(e.sweep().opened(), 1);
        e.edit_ledger(|l| l.issues[0].body = rewhitespace(&l.issues[0].body, variant));

        // The drift reproduces: the same issue gets the evidence, no second
        // issue opens for the key.
        e.hand_off(&[&drift("nightly", "2026-12-02T01:00:00Z")]);
        let report = e.sweep();
        assert_eq!(
            report.opened(),
            0,
            "variant {variant}: {:?}",
            report.applied
        );
        assert_eq!(e.ledger().issues.len(), 1, "variant {variant}");

        // And it clears: the edited issue is the one that closes.
        e.edit_ledger(|l| l.issues[0].body = rewhitespace(&l.issues[0].body, variant));
        e.hand_off(&[
            &clean("sentinel", "2026-12-02T02:00:00Z"),
            &clean("nightly", "2026-12-03T01:00:00Z"),
        ]);
        assert_eq!(e.sweep().closed(), 1, "variant {variant}");
        let l = e.ledger();
        assert_eq!(l.issues.len(), 1, "variant {variant}");
        assert_eq!(l.issues[0].state, LedgerState::Closed, "variant {variant}");
    }
}
