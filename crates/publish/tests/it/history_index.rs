//! The history index against a full read of history: random histories,
//! indexed, written out and read back, and the subset of records the index
//! selects decides exactly as all of history does (every drift status and
//! reconcile plan, the watchdog, health, durations and the health issue).

use std::collections::{BTreeMap, HashMap};

use benchops::history_index::{EVIDENCE_PATH, HistoryIndex, Needs, POINTER_PATH, segment_path};
use benchops::manifest::{self, Manifest};
use benchops::reconcile::{
    Action, ActualIssue, HistoryRecord, IssueState, RenderOptions, drift_statuses, reconcile,
};
use benchops::{SealedRecord, Sha256Digest};
use benchops_publish::sweep::{health_issue, index, report};
use benchops_testkit::records;
use serde_json::json;

/// Two lanes: `sentinel` covers `parse/large`, `nightly` every case.
const MANIFEST: &str = records::TWO_LANE_MANIFEST;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One record: a drift of `parse/large` (0), of both cases (1), clean (2),
/// or only `parse/small`, passing (3: `parse/large` is not in it, so the
/// record clears nothing of it), at `hour` hours after the start,
/// finishing `late` minutes after its slot.
fn record(lane: &str, hour: u64, late: u64, kind: u64) -> SealedRecord {
    let t = jiff::Timestamp::from_second(1_767_225_600 + 3600 * hour as i64).expect("time");
    let slot = t.to_string();
    let finished = (t + jiff::SignedDuration::from_mins(late as i64)).to_string();
    let sealed = match kind {
        0 => records::drift(lane, &slot),
        1 => records::drift_both(lane, &slot),
        _ => records::clean(lane, &slot),
    };
    let mut v: serde_json::Value = serde_json::from_slice(sealed.bytes()).expect("json");
    v["finished_at"] = json!(finished);
    if kind == 3 {
        let small: Vec<serde_json::Value> = v["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["id"] == "parse/small")
            .cloned()
            .collect();
        v["cases"] = serde_json::Value::Array(small);
        v["case_counts"] = json!({"total": 1, "pass": 1, "drift": 0, "skipped": 0, "error": 0});
        v["runs"] = json!({"total": 5, "succeeded": 5, "failed": 0, "incomplete": 0,
            "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
        v["publication"]["cleared"] = json!(["parse/small"]);
    }
    records::seal(&v)
}

/// Records of a long episode's tail, and the hours between two.
const TAIL: u64 = 450;
const TAIL_STEP: u64 = 12;

/// A history: long clean stretches, drift episodes, retries of a slot,
/// gaps; both lanes, the sentinel hourly and the nightly one less
/// often. With `long_episode`, [`TAIL`] more sentinel records follow,
/// half a day apart: a drift, a clear (the nightly lane clears too),
/// then records without `parse/large`: the clearing record lies further
/// back than each lane's newest records, months older, so only the
/// episode's walk (records and older month parts) finds it.
fn history(rng: &mut Rng, hours: u64, long_episode: bool) -> Vec<SealedRecord> {
    let mut out = Vec::new();
    let mut drifting = false;
    for hour in 0..hours {
        if rng.below(40) == 0 {
            drifting = !drifting;
        }
        if rng.below(25) == 0 {
            continue; // a missed slot
        }
        let kind = if drifting {
            rng.below(2)
        } else {
            2 + rng.below(4) / 3
        };
        let kind = if drifting && rng.below(5) == 0 {
            2
        } else {
            kind
        };
        out.push(record("sentinel", hour, rng.below(30), kind));
        if rng.below(30) == 0 {
            out.push(record("sentinel", hour, 31 + rng.below(20), 2));
        }
        if hour % 3 == 0 {
            let kind = if drifting { rng.below(3) } else { 2 };
            out.push(record("nightly", hour, rng.below(40), kind));
        }
    }
    if long_episode {
        // The epoch, then both lanes clear it, then sentinel records half a
        // day apart that neither reproduce nor clear: the clearing record
        // lies months further back than each lane's newest records.
        for k in 0..TAIL {
            let hour = hours + TAIL_STEP * k;
            let kind = match k {
                0 => 0,
                1 => 2,
                _ => 3,
            };
            out.push(record("sentinel", hour, rng.below(30), kind));
            if k == 1 {
                out.push(record("nightly", hour, rng.below(30), 2));
            }
        }
    }
    out
}

/// The index of `all`, written out as the persist writes it, read back
/// from those files, and the subset it selects.
fn subset<'a>(
    manifest: &Manifest,
    all: &'a [SealedRecord],
    needs: &Needs,
) -> Vec<&'a SealedRecord> {
    let mut built = HistoryIndex::build(all.iter());
    let files: BTreeMap<String, Vec<u8>> = built.files(Some("parent")).into_iter().collect();
    let (mut index, evidence) =
        HistoryIndex::from_pointer(&files[POINTER_PATH]).expect("pointer reads back");
    assert_eq!(index.built_on(), Some("parent"));
    assert_eq!(index.records(), all.len() as u64);
    if evidence.records > 0 {
        index
            .load_evidence(&evidence, &files[EVIDENCE_PATH])
            .expect("evidence reads back");
    }
    let by_digest: HashMap<Sha256Digest, &SealedRecord> =
        all.iter().map(|s| (s.digest(), s)).collect();
    let mut loaded: HashMap<Sha256Digest, &SealedRecord> = HashMap::new();
    for round in 0.. {
        assert!(round < 1000, "the reads end");
        let reads = index.next_reads(manifest, &|d| loaded.get(d).map(|s| s.record()), needs);
        if reads.is_empty() {
            break;
        }
        for (lane, month) in &reads.segments {
            index
                .load_segment(lane, month, &files[&segment_path(lane, month)])
                .expect("segment reads back");
        }
        for (_, e) in &reads.records {
            let s = by_digest[&e.digest];
            assert_eq!(s.record().slot, e.slot);
            loaded.insert(e.digest, s);
        }
    }
    loaded.into_values().collect()
}

fn issues_from(plan: &[Action], rng: &mut Rng) -> Vec<ActualIssue> {
    let mut out = Vec::new();
    for (n, a) in plan.iter().enumerate() {
        if let Action::Open {
            title,
            body,
            labels,
            ..
        } = a
        {
            // Some open, some closed by a person.
            let state = if rng.below(4) == 0 {
                IssueState::Closed
            } else {
                IssueState::Open
            };
            out.push(ActualIssue::from_body(
                n as u64 + 1,
                title.clone(),
                body.clone(),
                state,
                None,
                labels.clone(),
            ));
        }
    }
    out
}

fn decisions(
    manifest: &Manifest,
    records: &[&SealedRecord],
    issues: &[ActualIssue],
    now: &str,
) -> String {
    let hist: Vec<HistoryRecord<'_>> = records.iter().map(|s| HistoryRecord::from(*s)).collect();
    let opts = RenderOptions::new("https://example.test/history");
    let statuses = drift_statuses(manifest, &hist);
    let plan = reconcile(manifest, &hist, issues, &opts);
    let (paths, sorted) = placed(records);
    let watch = report::watchdog(manifest, &paths, now);
    let body = health_issue::body(manifest, &watch, &sorted, issues);
    let rest = watch_and_health(manifest, records, now);
    format!("{statuses:#?}\n{plan:#?}\n{rest}\n{body}")
}

/// The records with their history paths, and sorted by slot (as the
/// health issue reads them).
fn placed<'a>(
    records: &[&'a SealedRecord],
) -> (Vec<(String, SealedRecord)>, Vec<&'a SealedRecord>) {
    let paths = records
        .iter()
        .map(|s| {
            let r = s.record();
            let p = benchops::layout::record_path(&r.lane, &r.slot, &s.digest()).expect("path");
            (p, (*s).clone())
        })
        .collect();
    let mut sorted: Vec<&SealedRecord> = records.to_vec();
    sorted.sort_by(|a, b| {
        (&a.record().slot, &a.record().finished_at)
            .cmp(&(&b.record().slot, &b.record().finished_at))
    });
    (paths, sorted)
}

/// The watchdog, health and every lane's durations, as text.
fn watch_and_health(manifest: &Manifest, records: &[&SealedRecord], now: &str) -> String {
    let (paths, sorted) = placed(records);
    let durations: Vec<_> = manifest
        .lanes
        .iter()
        .map(|l| report::durations_of(&sorted, l.name.as_str()))
        .collect();
    format!(
        "{:#?}\n{:#?}\n{durations:#?}",
        report::watchdog(manifest, &paths, now),
        report::health(manifest, &paths)
    )
}

#[test]
fn the_records_the_index_selects_decide_as_all_of_history() {
    let manifest = manifest::from_toml(MANIFEST, "schedule.toml")
        .expect("manifest")
        .manifest;
    let mut rng = Rng(0x5eed);
    let mut smaller = 0;
    for case in 0..8u64 {
        let hours = 150 + rng.below(500);
        let long_episode = case % 3 == 2;
        let all = history(&mut rng, hours, long_episode);
        let hours = if long_episode {
            hours + TAIL_STEP * TAIL
        } else {
            hours
        };
        // The watchdog's clock: shortly after the last slot, or much later.
        let end = 1_767_225_600 + 3600 * (hours as i64 + rng.below(100) as i64);
        let now = jiff::Timestamp::from_second(end).expect("now");
        let needs = index::needs(&now.to_string());
        let chosen = subset(&manifest, &all, &needs);
        if chosen.len() < all.len() {
            smaller += 1;
        }
        let full: Vec<&SealedRecord> = all.iter().collect();
        let now = now.to_string();
        let none = decisions(&manifest, &full, &[], &now);
        assert_eq!(
            none,
            decisions(&manifest, &chosen, &[], &now),
            "case {case}: {} records, {} chosen, no issues",
            all.len(),
            chosen.len()
        );
        // What health and the watchdog read (no drift evidence, no
        // episodes) decides their figures as all of history does.
        let lookback = Needs {
            drift: false,
            ..needs
        };
        let few = subset(&manifest, &all, &lookback);
        assert!(few.len() <= chosen.len());
        assert_eq!(
            watch_and_health(&manifest, &full, &now),
            watch_and_health(&manifest, &few, &now),
            "case {case}: health and the watchdog"
        );
        let hist: Vec<HistoryRecord<'_>> = full.iter().map(|s| HistoryRecord::from(*s)).collect();
        let opened = reconcile(
            &manifest,
            &hist,
            &[],
            &RenderOptions::new("https://example.test/history"),
        );
        let issues = issues_from(&opened.actions, &mut rng);
        assert_eq!(
            decisions(&manifest, &full, &issues, &now),
            decisions(&manifest, &chosen, &issues, &now),
            "case {case}: with issues"
        );
    }
    // Short histories need every record; the others must not.
    assert!(
        smaller >= 4,
        "the index chose fewer records than history holds in {smaller} of 8"
    );
}

// ---------------------------------------------------------------------------
// The index in local sweeps: kept, stale, missing, corrupt, wrong.

mod sweeps {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use benchops::history_index::{EVIDENCE_PATH, HistoryIndex, POINTER_PATH};
    use benchops::seal::SealedRecord;
    use benchops_publish::history::LocalHistory;
    use benchops_publish::local::{LocalSweepOptions, sweep_local};
    use benchops_publish::sweep::{Applied, Clock, SweepReport};
    use benchops_testkit::records::{TWO_LANE_MANIFEST, clean, drift};

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
        fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
        Env {
            _tmp: tmp,
            dir,
            manifest,
        }
    }

    impl Env {
        fn sweep(&self, records: &[&SealedRecord]) -> SweepReport {
            for r in records {
                fs::write(self.dir.join("sealed").join(r.file_name()), r.bytes()).expect("handoff");
            }
            let mut o = LocalSweepOptions::new(&self.dir, &self.manifest);
            o.clock = Clock::fixed("2026-12-02T00:00:00.000Z");
            sweep_local(&o).expect("sweep succeeds")
        }

        fn git_dir(&self) -> PathBuf {
            LocalHistory::open(self.dir.join("history.git"))
                .expect("history")
                .git_dir()
                .to_path_buf()
        }

        fn git(&self, args: &[&str], index_file: Option<&Path>) -> String {
            let mut c = Command::new("git");
            c.arg("--git-dir").arg(self.git_dir()).args(args);
            if let Some(f) = index_file {
                // An index file needs a work tree to name; an empty one.
                let wt = self._tmp.path().join("work-tree");
                fs::create_dir_all(&wt).expect("work tree");
                c.env("GIT_INDEX_FILE", f).env("GIT_WORK_TREE", wt);
            }
            let out = c.output().expect("git runs");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        }

        fn file(&self, path: &str) -> Vec<u8> {
            let spec = format!("benchmark-history:{path}");
            let mut c = Command::new("git");
            c.arg("--git-dir")
                .arg(self.git_dir())
                .args(["cat-file", "blob", &spec]);
            c.output().expect("git runs").stdout
        }

        /// Replaces the tip by a commit of its tree with `edits` (None:
        /// removed), on the tip (`on_tip`) or, as if the tip's own commit
        /// had carried them, on the tip's parent.
        fn rewrite(&self, edits: &[(&str, Option<&[u8]>)], on_tip: bool) {
            let idx = self._tmp.path().join("git-index");
            let _ = fs::remove_file(&idx);
            self.git(&["read-tree", "benchmark-history"], Some(&idx));
            for (path, bytes) in edits {
                match bytes {
                    Some(b) => {
                        let f = self._tmp.path().join("blob");
                        fs::write(&f, b).expect("blob file");
                        let blob =
                            self.git(&["hash-object", "-w", f.to_str().expect("utf-8")], None);
                        let info = format!("100644,{blob},{path}");
                        self.git(&["update-index", "--add", "--cacheinfo", &info], Some(&idx));
                    }
                    None => {
                        self.git(&["update-index", "--force-remove", path], Some(&idx));
                    }
                }
            }
            let tree = self.git(&["write-tree"], Some(&idx));
            let parent = if on_tip {
                "benchmark-history"
            } else {
                "benchmark-history^"
            };
            let parent = self.git(&["rev-parse", parent], None);
            let commit = self.git(&["commit-tree", &tree, "-p", &parent, "-m", "edit"], None);
            self.git(
                &["update-ref", "refs/heads/benchmark-history", &commit],
                None,
            );
        }
    }

    fn slot(day: u32) -> String {
        format!("2026-11-{day:02}T01:00:00Z")
    }

    #[test]
    fn each_sweep_keeps_the_index_in_its_commit_and_the_next_one_trusts_it() {
        let e = env();
        let first = e.sweep(&[&drift("nightly", &slot(1))]);
        assert_eq!(first.index_note, None, "an empty history needs no rebuild");
        let second = e.sweep(&[&clean("nightly", &slot(2))]);
        assert_eq!(second.index_note, None);
        assert_eq!(second.history_records, 2);
        let pointer: serde_json::Value =
            serde_json::from_slice(&e.file(POINTER_PATH)).expect("pointer");
        let parent = e.git(&["rev-parse", "benchmark-history^"], None);
        assert_eq!(
            pointer["built_on"],
            parent.as_str(),
            "built on the tip's parent"
        );
        assert_eq!(pointer["records"], 2);
        assert_eq!(
            e.file(EVIDENCE_PATH)
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            1
        );
    }

    #[test]
    fn the_index_a_sweep_writes_follows_its_schema() {
        let e = env();
        e.sweep(&[&drift("nightly", &slot(1)), &clean("sentinel", &slot(1))]);
        e.sweep(&[&clean("nightly", &slot(2))]);
        let schema: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../schemas/history-index.v1.schema.json"),
            )
            .expect("schema"),
        )
        .expect("json");
        let uri = "https://benchops.dev/schemas/history-index.v1.schema.json";
        let registry = jsonschema::Registry::new()
            .add(uri, schema.clone())
            .expect("uri")
            .prepare()
            .expect("registry");
        let check = |def: Option<&str>, value: &serde_json::Value| {
            let root = match def {
                None => schema.clone(),
                Some(d) => serde_json::json!({ "$ref": format!("{uri}#/$defs/{d}") }),
            };
            let v = jsonschema::options()
                .with_registry(&registry)
                .build(&root)
                .expect("schema compiles");
            let errors: Vec<String> = v.iter_errors(value).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{value}: {errors:#?}");
        };
        let pointer: serde_json::Value =
            serde_json::from_slice(&e.file(POINTER_PATH)).expect("pointer");
        check(None, &pointer);
        let lines = |path: &str| -> Vec<serde_json::Value> {
            String::from_utf8(e.file(path))
                .expect("utf-8")
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect()
        };
        let evidence = lines(EVIDENCE_PATH);
        assert_eq!(evidence.len(), 1);
        for d in &evidence {
            check(Some("drift"), d);
        }
        for seg in pointer["segments"].as_array().expect("segments") {
            let path = format!(
                "index/lanes/{}/{}.jsonl",
                seg["lane"].as_str().expect("lane"),
                seg["month"].as_str().expect("month")
            );
            for entry in lines(&path) {
                check(Some("entry"), &entry);
            }
        }
    }

    #[test]
    fn a_commit_the_sweep_did_not_make_leaves_a_stale_index_that_is_rebuilt() {
        let e = env();
        e.sweep(&[&drift("nightly", &slot(1))]);
        e.rewrite(&[("notes.txt", Some(b"a note".as_slice()))], true);
        let r = e.sweep(&[&clean("nightly", &slot(2))]);
        let note = r.index_note.clone().expect("a note");
        assert!(note.contains("rebuilt from 1 record(s): stale"), "{note}");
        assert!(
            render(&r).contains("history: history index rebuilt"),
            "the summary says so"
        );
        assert_eq!(r.history_records, 2);
        // The rebuilt index landed with the new record: the next sweep
        // trusts it.
        let next = e.sweep(&[&clean("nightly", &slot(3))]);
        assert_eq!(next.index_note, None);
        assert_eq!(next.history_records, 3);
    }

    #[test]
    fn a_missing_or_corrupt_index_is_rebuilt_and_never_trusted() {
        let e = env();
        e.sweep(&[&drift("nightly", &slot(1))]);
        e.sweep(&[&drift("nightly", &slot(2))]);
        // The tip's own commit without the pointer.
        e.rewrite(&[(POINTER_PATH, None)], false);
        let r = e.sweep(&[&drift("nightly", &slot(3))]);
        let note = r.index_note.expect("a note");
        assert!(note.contains("index/index.json is missing"), "{note}");

        // The tip's own commit with one byte of the evidence changed.
        let mut evidence = e.file(EVIDENCE_PATH);
        evidence[10] ^= 1;
        e.rewrite(&[(EVIDENCE_PATH, Some(evidence.as_slice()))], false);
        let r = e.sweep(&[&clean("nightly", &slot(4))]);
        let note = r.index_note.expect("a note");
        assert!(
            note.contains("corrupt") && note.contains("sha256"),
            "{note}"
        );
        // The issue the first drift opened is the one kept up to date: no
        // second issue from a rebuilt index.
        assert_eq!(r.history_records, 4);
        assert!(
            !r.applied
                .iter()
                .any(|a| matches!(a, Applied::Opened { .. })),
            "{:?}",
            r.applied
        );
    }

    #[test]
    fn an_index_that_names_a_record_the_tree_lacks_is_caught_when_read() {
        let e = env();
        let one = drift("nightly", &slot(1));
        e.sweep(&[&one]);
        let two = clean("nightly", &slot(2));
        e.sweep(&[&two]);
        // A sound-looking index on the right parent, naming a record that
        // is not in history.
        let ghost = drift("sentinel", &slot(3));
        let parent = e.git(&["rev-parse", "benchmark-history^"], None);
        let mut wrong = HistoryIndex::build([&one, &two, &ghost]);
        let files = wrong.files(Some(parent.as_str()));
        let edits: Vec<(&str, Option<&[u8]>)> = files
            .iter()
            .map(|(p, b)| (p.as_str(), Some(b.as_slice())))
            .collect();
        e.rewrite(&edits, false);
        let r = e.sweep(&[&clean("nightly", &slot(4))]);
        let note = r.index_note.clone().expect("a note");
        assert!(
            note.contains("disagreed") && note.contains("sentinel"),
            "{note}"
        );
        assert!(
            note.contains("the rebuilt index was committed as"),
            "{note}"
        );
        assert_eq!(r.history_records, 3, "the records, not the index, count");
        let tip = e.git(&["rev-parse", "benchmark-history"], None);
        assert_eq!(
            r.tip.as_deref(),
            Some(tip.as_str()),
            "the report names the new tip"
        );
        // That commit repaired it: the next sweep trusts the index again.
        let next = e.sweep(&[&clean("nightly", &slot(5))]);
        assert_eq!(next.index_note, None);
        assert_eq!(next.history_records, 4);
    }

    #[test]
    fn a_baseline_moved_by_hand_carries_the_index_over() {
        use benchops::receipt::BaselineDecision;
        use benchops_publish::history::ReceiptBuilder;
        use benchops_publish::sweep::baseline::{BaselineMove, move_baseline};

        let e = env();
        let one = clean("nightly", &slot(1));
        e.sweep(&[&one]);
        e.sweep(&[&clean("nightly", &slot(2))]);
        let mut store = LocalHistory::open(e.dir.join("history.git")).expect("history");
        let moved = pollster::block_on(move_baseline(
            &mut store,
            &BaselineMove {
                lane: benchops::LaneName::new("nightly").expect("lane"),
                path: benchops_publish::history::record_path(&one).expect("path"),
                record: one.clone(),
                policy: benchops::manifest::BaselinePolicy::LastClean,
                decision: BaselineDecision {
                    by: "maintainer".into(),
                    reason: "back to the first run".into(),
                },
            },
            &ReceiptBuilder::new("2026-12-01T12:00:00Z", "2026-12-01T12:00:00Z", "baseline"),
        ))
        .expect("moves");
        assert!(moved.commit.is_some());
        let r = e.sweep(&[&clean("nightly", &slot(3))]);
        assert_eq!(r.index_note, None, "the index is still fresh");
        assert_eq!(r.history_records, 3);
    }

    fn health(e: &Env, full: bool) -> benchops_publish::health::HealthReport {
        let m = benchops_publish::sweep::load_manifest(&e.manifest).expect("manifest");
        let now = "2026-12-02T00:00:00Z".parse().expect("now");
        let settings = benchops_publish::watchdog::settings(now, 72, 60);
        benchops_publish::health::health_local(
            &e.dir.join("history.git"),
            None,
            &m,
            &settings,
            full,
        )
        .expect("health")
    }

    #[test]
    fn health_reads_through_the_index_and_full_checks_the_index_against_the_records() {
        let e = env();
        // 20 days: the lookback holds 3 of them.
        for day in 1..=20 {
            e.sweep(&[&clean("nightly", &slot(day))]);
        }
        let quick = health(&e, false);
        assert_eq!(quick.history_index.state, "used");
        // The lookback's records, and the lane's oldest and newest 200
        // (here all 20): the rule, not a count of history.
        assert!(
            quick.history_index.detail.contains("read 20 record(s)"),
            "{:?}",
            quick.history_index
        );
        let full = health(&e, true);
        assert_eq!(
            full.history_index.state, "agrees",
            "{:?}",
            full.history_index
        );
        assert_eq!(quick.lanes, full.lanes, "the same figures either way");

        // An index that names a record history lacks: --full says so, and
        // needs a person.
        let ghost = drift("sentinel", &slot(21));
        let parent = e.git(&["rev-parse", "benchmark-history^"], None);
        let mut all: Vec<SealedRecord> = (1..=20).map(|d| clean("nightly", &slot(d))).collect();
        all.push(ghost);
        let mut wrong = HistoryIndex::build(all.iter());
        let files = wrong.files(Some(parent.as_str()));
        let edits: Vec<(&str, Option<&[u8]>)> = files
            .iter()
            .map(|(p, b)| (p.as_str(), Some(b.as_slice())))
            .collect();
        e.rewrite(&edits, false);
        let full = health(&e, true);
        assert_eq!(
            full.history_index.state, "disagrees",
            "{:?}",
            full.history_index
        );
        assert!(full.needs_attention());
    }

    fn render(r: &SweepReport) -> String {
        benchops_publish::sweep::render_summary(r)
    }
}
