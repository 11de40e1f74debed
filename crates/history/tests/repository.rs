//! The history crate over real git repositories in temporary directories:
//! opening never creates, the one reader's three uses (every blob, the
//! blobs present, records verified), a tree listed from a local object
//! store, and a history behind a URL fetched into a cache.

use std::path::Path;
use std::process::Command;

use benchops::layout::{HISTORY_REF, RecordEntry};
use benchops::seal::{SealedRecord, seal_json};
use benchops_history::{HistoryError, LocalHistory, ObjectStore, fetch, record_path};

fn record(slot: &str) -> SealedRecord {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/result.draft.json"
    ))
    .expect("example draft");
    let mut v: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    v["slot"] = serde_json::json!(slot);
    seal_json(&serde_json::to_vec(&v).expect("serializes")).expect("seals")
}

/// Commits `files` on the branch's tip with the crate's writer and moves
/// the branch; returns the commit.
fn commit(h: &LocalHistory, files: &[(String, Vec<u8>)]) -> String {
    let tip = h.tip_index().expect("tip");
    let (commit, _tree) = h
        .write_commit(&tip, files, "test commit", 1_764_460_800)
        .expect("commit written");
    h.advance(tip.commit.as_deref(), &commit).expect("advanced");
    commit
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

#[test]
fn open_never_creates_a_repository_and_says_why() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("absent.git");
    assert!(matches!(
        LocalHistory::open(&missing),
        Err(HistoryError::NoRepository { .. })
    ));
    assert!(!missing.exists(), "nothing was created");

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    let err = LocalHistory::open(&empty).expect_err("not a repository");
    assert!(
        matches!(&err, HistoryError::NoRepository { reason, .. } if !reason.is_empty()),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read_dir(&empty).expect("list").count(),
        0,
        "an empty directory stays empty"
    );

    // open_or_init creates it; open then finds it, and so does a work
    // tree's `.git`.
    let created = LocalHistory::open_or_init(&empty).expect("initialised");
    assert_eq!(created.tip().expect("tip"), None);
    let opened = LocalHistory::open(&empty).expect("opens");
    assert_eq!(opened.git_dir(), created.git_dir());
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).expect("dir");
    git(&work, &["init", "--quiet"]);
    assert!(LocalHistory::open(&work).is_ok());
}

#[test]
fn the_reader_reads_lists_and_verifies_what_the_branch_holds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = LocalHistory::open_or_init(tmp.path().join("history.git")).expect("history");
    let a = record("2026-11-29T01:00:00Z");
    let b = record("2026-11-30T01:00:00Z");
    let (pa, pb) = (
        record_path(&a).expect("path"),
        record_path(&b).expect("path"),
    );
    // `b`'s path holds `a`'s bytes: named for another digest.
    let tip = commit(
        &h,
        &[
            (pa.clone(), a.bytes().to_vec()),
            (pb.clone(), a.bytes().to_vec()),
            ("receipts/x.json".to_owned(), b"{}".to_vec()),
        ],
    );
    assert_eq!(h.tip().expect("tip").as_deref(), Some(tip.as_str()));

    let results = h.files(&tip, &["results/"]).expect("listed");
    assert_eq!(
        results.keys().collect::<Vec<_>>(),
        [&pa, &pb],
        "only under results/"
    );
    let ids: Vec<&str> = results.values().map(String::as_str).collect();
    assert_eq!(
        h.read_blobs(&ids).expect("read"),
        [a.bytes().to_vec(), a.bytes().to_vec()]
    );

    let digests: Vec<_> = [&pa, &pb]
        .iter()
        .map(|p| RecordEntry::parse(p).expect("record path").digest)
        .collect();
    let items: Vec<_> = ids.iter().copied().zip(digests.iter().map(Some)).collect();
    let verdicts = h.read_verified(&items).expect("read");
    assert_eq!(
        verdicts[0].as_ref().expect("a verifies").digest(),
        a.digest()
    );
    assert!(verdicts[1].is_err(), "the bytes do not match the name");

    // An object the repository lacks: an error for every-blob reads, None
    // for the reads of what is present.
    let absent = h.blob_id_of(b"never written");
    let err = h.read_blobs(&[ids[0], &absent]).expect_err("missing");
    assert!(
        matches!(&err, HistoryError::UnexpectedOutput { output, .. } if output.ends_with("missing")),
        "{err:?}"
    );
    let store = ObjectStore::new(h.git_dir(), false);
    assert_eq!(
        store.read_present(&[&absent, ids[0]]).expect("read"),
        [None, Some(a.bytes().to_vec())]
    );
    let tree = h.tree_of(&tip).expect("tree");
    let listed = store.list_tree(&tree).expect("listed").expect("held");
    assert_eq!(listed.len(), 3);
    assert_eq!(store.list_tree(&absent).expect("probed"), None);
}

#[test]
fn a_history_behind_a_url_is_fetched_into_a_cache_without_a_ref() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let origin = tmp.path().join("origin.git");
    let h = LocalHistory::open_or_init(&origin).expect("history");
    let url = format!("file://{}", origin.display());
    let cache = tmp.path().join("cache");

    let (_, tip) = fetch(&url, &cache).expect("no branch yet");
    assert_eq!(tip, None);

    let a = record("2026-11-29T01:00:00Z");
    let pa = record_path(&a).expect("path");
    let pushed = commit(&h, &[(pa.clone(), a.bytes().to_vec())]);
    let (cached, tip) = fetch(&url, &cache).expect("fetched");
    assert_eq!(tip.as_deref(), Some(pushed.as_str()));
    assert_eq!(cached.tip().expect("no ref in the cache"), None);
    let files = cached.files(&pushed, &[pa.as_str()]).expect("listed");
    let blob = files.get(&pa).expect("the record is there");
    assert_eq!(
        cached.read_blobs(&[blob.as_str()]).expect("read"),
        [a.bytes().to_vec()]
    );
    assert!(git(cached.git_dir(), &["for-each-ref", HISTORY_REF]).is_empty());

    let err = fetch("file:///nonexistent/benchops.git", &cache).expect_err("no remote");
    assert!(matches!(err, HistoryError::Git { .. }), "{err:?}");
}
