//! The local history store with thousands of files in one git call:
//! reading every blob of a large tree back with one `cat-file --batch
//! --buffer`, and writing thousands of new files in one commit (one
//! `fast-import`). Both feed git far more than a pipe buffer holds while
//! git answers as it reads, so writing all input before reading any output
//! would block both processes forever. Each step runs under a deadline, so
//! a regression fails instead of stalling the suite.

use std::collections::BTreeMap;
use std::fs;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use benchops_publish::history::{HISTORY_REF, LocalHistory};
use benchops_publish::sweep::{HistoryStore, TipIndex};

/// How long one step may take before it is called hung. Far above what it
/// needs, so that only a hang trips it.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `f` on its own thread; fails the test if it has not finished
/// within [`DEADLINE`] (the thread is left behind, blocked).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(v) => {
            eprintln!("{what}: {:.2?}", started.elapsed());
            v
        }
        Err(RecvTimeoutError::Timeout) => panic!(
            "{what} did not finish within {} s: it hangs",
            DEADLINE.as_secs()
        ),
        Err(RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("{what} ended without a result"),
        },
    }
}

/// The bytes of file `i`: distinct, of varied sizes, some with newlines
/// and NUL bytes, and one of a MiB (more than a pipe buffer on its own).
fn content(i: usize) -> Vec<u8> {
    let mut b = format!("file {i}\n").into_bytes();
    b.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, i % 300));
    if i % 7 == 0 {
        b.extend_from_slice(b"\0\nline\n\0");
    }
    if i == 1234 {
        b.extend(std::iter::repeat_n(b'z', 1 << 20));
    }
    b
}

fn path(i: usize) -> String {
    format!("data/{:02}/{i:05}.bin", i % 50)
}

fn fresh() -> (tempfile::TempDir, LocalHistory) {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = LocalHistory::open_or_init(dir.path().join("history.git")).expect("init");
    (dir, h)
}

/// Commits files `0..n` on the history branch with one `git fast-import`.
fn import(dir: &tempfile::TempDir, h: &LocalHistory, n: usize) {
    let mut stream = Vec::new();
    for i in 0..n {
        let bytes = content(i);
        stream
            .extend_from_slice(format!("blob\nmark :{}\ndata {}\n", i + 1, bytes.len()).as_bytes());
        stream.extend_from_slice(&bytes);
        stream.push(b'\n');
    }
    stream.extend_from_slice(
        format!(
            "commit {HISTORY_REF}\ncommitter test <test@localhost> 1796004005 +0000\ndata 5\nmany\n"
        )
        .as_bytes(),
    );
    for i in 0..n {
        stream.extend_from_slice(format!("M 100644 :{} {}\n", i + 1, path(i)).as_bytes());
    }
    stream.extend_from_slice(b"done\n");
    let file = dir.path().join("import.stream");
    fs::write(&file, &stream).expect("writes the stream");
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(h.git_dir())
        .args(["fast-import", "--quiet", "--done"])
        .stdin(Stdio::from(
            fs::File::open(&file).expect("opens the stream"),
        ))
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "fast-import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_blob_of_a_tree_with_thousands_of_files_reads_back_in_one_call() {
    const FILES: usize = 3_000;
    let (dir, h) = fresh();
    import(&dir, &h, FILES);

    let (tip, blobs) = bounded("tip_index and read_blobs", {
        let h = h.clone();
        move || {
            let tip = h.tip_index().expect("tip");
            let oids: Vec<&str> = tip.files.values().map(String::as_str).collect();
            let blobs = h.read_blobs(&oids).expect("reads every blob");
            (tip, blobs)
        }
    });
    assert_eq!(tip.files.len(), FILES);
    let want: BTreeMap<String, Vec<u8>> = (0..FILES).map(|i| (path(i), content(i))).collect();
    let got: BTreeMap<String, Vec<u8>> = tip.files.keys().cloned().zip(blobs).collect();
    assert!(got == want, "every blob reads back exactly, in order");

    // The same through the store port the sweep reads history with, every
    // id asked for twice.
    let twice = bounded("HistoryStore::read_blobs", {
        let mut h = h.clone();
        let tip: TipIndex = tip.clone();
        move || {
            let wanted: Vec<(&str, &str)> = tip
                .files
                .iter()
                .chain(&tip.files)
                .map(|(p, b)| (p.as_str(), b.as_str()))
                .collect();
            pollster::block_on(HistoryStore::read_blobs(&mut h, &tip, &wanted)).expect("reads")
        }
    });
    assert_eq!(twice.len(), 2 * FILES);
    let (first, second) = twice.split_at(FILES);
    assert!(first == second, "the second round reads the same bytes");
    assert!(
        first.iter().eq(want.values()),
        "the port reads the same bytes"
    );
}

#[test]
fn thousands_of_new_files_are_written_in_one_commit() {
    const FILES: usize = 5_000;
    let (_d, h) = fresh();
    let files: Vec<(String, Vec<u8>)> = (0..FILES).map(|i| (path(i), content(i))).collect();
    let (commit, tree) = bounded("write_commit", {
        let h = h.clone();
        let files = files.clone();
        move || {
            h.write_commit(&TipIndex::default(), &files, "many\n", 1_796_004_005)
                .expect("writes the commit")
        }
    });
    let listing = Command::new("git")
        .arg("--git-dir")
        .arg(h.git_dir())
        .args(["ls-tree", "-r", "-z", &tree])
        .output()
        .expect("git runs");
    assert!(listing.status.success());
    let got: BTreeMap<String, String> = listing
        .stdout
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let text = std::str::from_utf8(e).expect("UTF-8");
            let (meta, p) = text.split_once('\t').expect("an entry");
            let oid = meta.rsplit(' ').next().expect("an id");
            (p.to_owned(), oid.to_owned())
        })
        .collect();
    let want: BTreeMap<String, String> = files
        .iter()
        .map(|(p, b)| (p.clone(), h.blob_id_of(b)))
        .collect();
    assert!(got == want, "every file is in the tree with its blob id");
    let commit_tree = Command::new("git")
        .arg("--git-dir")
        .arg(h.git_dir())
        .args(["rev-parse", &format!("{commit}^{{tree}}")])
        .output()
        .expect("git runs");
    assert_eq!(String::from_utf8_lossy(&commit_tree.stdout).trim(), tree);
    assert_eq!(h.tip().expect("tip"), None, "the branch did not move");
    // Every object holds the bytes given, and so many went into one pack.
    let oids: Vec<&str> = want.values().map(String::as_str).collect();
    let back = h.read_blobs(&oids).expect("reads back");
    let by_id: BTreeMap<String, &Vec<u8>> =
        files.iter().map(|(_, b)| (h.blob_id_of(b), b)).collect();
    for (oid, bytes) in oids.iter().zip(&back) {
        assert!(by_id[*oid] == bytes, "the bytes of {oid}");
    }
    assert_eq!(packs(&h), 1, "thousands of blobs are one pack");
}

/// The pack files of `h`'s object store.
fn packs(h: &LocalHistory) -> usize {
    fs::read_dir(h.git_dir().join("objects/pack"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".pack"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_few_new_files_are_stored_loose_so_small_sweeps_do_not_pile_up_packs() {
    let (_d, h) = fresh();
    let files: Vec<(String, Vec<u8>)> = (0..3).map(|i| (path(i), content(i))).collect();
    let (_, tree) = h
        .write_commit(&TipIndex::default(), &files, "few\n", 1_796_004_005)
        .expect("writes the commit");
    assert_eq!(packs(&h), 0);
    for (_, bytes) in &files {
        let oid = h.blob_id_of(bytes);
        let loose = h.git_dir().join("objects").join(&oid[..2]).join(&oid[2..]);
        assert!(loose.is_file(), "{oid} is a loose object");
    }
    assert!(!tree.is_empty());
}

/// Records read back while they are verified: thousands of them in one
/// call, each with its own verdict in order (a record under another
/// record's digest fails, bytes that are no record fail), and an id git
/// does not have stops the read with an error naming it instead of
/// hanging or dropping it.
#[test]
fn records_are_verified_while_they_are_read_and_a_missing_object_is_an_error() {
    const RECORDS: usize = 3_000;
    let (_d, h) = fresh();
    let start = 1_704_070_800; // 2024-01-01T01:00:00Z
    let records: Vec<benchops::seal::SealedRecord> = (0..RECORDS as i64)
        .map(|d| {
            let t = jiff::Timestamp::from_second(start + d * 86_400).expect("instant");
            benchops_testkit::records::clean("nightly", &t.to_string())
        })
        .collect();
    let mut files: Vec<(String, Vec<u8>)> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("r/{i}.json"), r.bytes().to_vec()))
        .collect();
    files.push(("junk".to_owned(), b"not a record".to_vec()));
    h.write_commit(&TipIndex::default(), &files, "records\n", 1_796_004_005)
        .expect("writes the commit");
    let ids: Vec<String> = files.iter().map(|(_, b)| h.blob_id_of(b)).collect();
    let digests: Vec<_> = records.iter().map(|r| r.digest()).collect();
    let mut items: Vec<(&str, Option<&benchops::Sha256Digest>)> = ids[..RECORDS]
        .iter()
        .zip(&digests)
        .map(|(id, d)| (id.as_str(), Some(d)))
        .collect();
    items[7].1 = Some(&digests[8]);
    items.push((ids[RECORDS].as_str(), None));
    let verdicts = bounded("read_verified", {
        let h = h.clone();
        let items: Vec<(String, Option<benchops::Sha256Digest>)> = items
            .iter()
            .map(|(i, d)| ((*i).to_owned(), d.copied()))
            .collect();
        move || {
            let borrowed: Vec<(&str, Option<&benchops::Sha256Digest>)> = items
                .iter()
                .map(|(i, d)| (i.as_str(), d.as_ref()))
                .collect();
            h.read_verified(&borrowed).expect("reads")
        }
    });
    assert_eq!(verdicts.len(), RECORDS + 1);
    for (i, v) in verdicts.iter().enumerate() {
        match i {
            7 | RECORDS => assert!(v.is_err(), "item {i} fails"),
            _ => assert_eq!(
                v.as_ref().map(|s| s.digest()).ok(),
                Some(digests[i]),
                "item {i}"
            ),
        }
    }

    let missing = "0".repeat(ids[0].len());
    let with_missing: Vec<(&str, Option<&benchops::Sha256Digest>)> = vec![
        (ids[0].as_str(), None),
        (missing.as_str(), None),
        (ids[1].as_str(), None),
    ];
    let err = h
        .read_verified(&with_missing)
        .expect_err("a missing object");
    assert!(err.to_string().contains(&missing), "{err}");
}

fn git_out(h: &LocalHistory, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(h.git_dir())
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// A commit over an existing tip keeps every file of the parent's tree,
/// replaces the ones given again, names the tip as its only parent, and
/// leaves no ref behind (not even fast-import's scratch branch); a path
/// fast-import would have to quote is refused before git runs.
#[test]
fn a_commit_over_a_tip_keeps_the_parent_tree_and_writes_no_ref() {
    let (dir, h) = fresh();
    import(&dir, &h, 40);
    let tip = h.tip_index().expect("tip");
    let parent = tip.commit.clone().expect("a tip");
    let files = vec![
        (path(3), b"replaced\n".to_vec()),
        ("data/new/one.bin".to_owned(), b"one".to_vec()),
    ];
    let (commit, tree) = h
        .write_commit(&tip, &files, "over the tip", 1_796_004_005)
        .expect("writes the commit");
    let refs = git_out(&h, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(refs.trim(), HISTORY_REF, "no other ref exists");
    assert_eq!(
        h.tip().expect("tip"),
        Some(parent.clone()),
        "the branch did not move"
    );
    let body = git_out(&h, &["cat-file", "commit", &commit]);
    assert!(
        body.starts_with(&format!("tree {tree}\nparent {parent}\n")),
        "{body}"
    );
    assert!(body.contains(" 1796004005 +0000\ncommitter "), "{body}");
    assert!(
        body.ends_with("\n\nover the tip\n"),
        "the message's last line is completed: {body}"
    );
    let listing = git_out(&h, &["ls-tree", "-r", "--name-only", &tree]);
    let got: Vec<&str> = listing.lines().collect();
    assert_eq!(got.len(), 41, "the parent's 40 files and one new one");
    assert_eq!(
        git_out(&h, &["cat-file", "blob", &format!("{tree}:{}", path(3))]),
        "replaced\n"
    );
    assert_eq!(
        git_out(&h, &["cat-file", "blob", &format!("{tree}:{}", path(4))]).into_bytes(),
        content(4),
        "an untouched file keeps its bytes"
    );

    for bad in ["data/a\nb", "\"quoted", "/abs", "back\\slash"] {
        let err = h
            .write_commit(
                &tip,
                &[(bad.to_owned(), b"x".to_vec())],
                "bad\n",
                1_796_004_005,
            )
            .expect_err("refused");
        assert!(
            err.to_string().contains("refusing to write the path"),
            "{bad:?}: {err}"
        );
    }
}
