//! Signed seals through a local sweep: with the manifest's `[signing]`
//! table, a record signed by its lane's key is persisted with its
//! signature beside it on the history branch (where `ssh-keygen -Y verify`
//! accepts it); an unsigned record of a lane that must sign, a record
//! changed after signing, and a record signed by a key allowed only for
//! another lane are quarantined with their reasons and never persisted;
//! without `[signing]` signatures are ignored.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use benchops::SealedRecord;
use benchops::provenance::{private_key, sign};
use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Clock;
use benchops_testkit::records::{TWO_LANE_MANIFEST, clean};

fn keypair(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(name);
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen runs (openssh-client; scripts/test-deps.sh installs it)");
    assert!(o.status.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("public");
    (key, public.trim().to_owned())
}

/// The two-lane manifest with a `[signing]` table naming `allowed_signers`
/// and requiring `require` (a lane or `*`), written as
/// `root/schedule.toml`.
fn signing_manifest(root: &Path, allowed_signers: &str, require: Option<&str>) -> PathBuf {
    let mut table = format!("\n[signing]\nallowed_signers = \"{allowed_signers}\"\n");
    if let Some(r) = require {
        table.push_str(&format!("require = [\"{r}\"]\n"));
    }
    let schema = "schema = \"schedule-manifest/v1\"\n";
    let path = root.join("schedule.toml");
    std::fs::write(
        &path,
        TWO_LANE_MANIFEST.replacen(schema, &format!("{schema}{table}"), 1),
    )
    .expect("manifest");
    path
}

fn signed(key: &Path, record: &SealedRecord) -> String {
    let k = private_key(&std::fs::read_to_string(key).expect("key")).expect("ed25519");
    sign(record.bytes(), &k).expect("signs")
}

fn hand_off(dir: &Path, record: &SealedRecord, sig: Option<&str>) {
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join(record.file_name());
    std::fs::write(&path, record.bytes()).expect("record");
    if let Some(sig) = sig {
        std::fs::write(format!("{}.sig", path.display()), sig).expect("sig");
    }
}

fn git_show(repo: &Path, path: &str) -> Option<Vec<u8>> {
    let o = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", &format!("benchmark-history:{path}")])
        .output()
        .expect("git runs");
    o.status.success().then_some(o.stdout)
}

fn history_paths(repo: &Path) -> Vec<String> {
    let o = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["ls-tree", "-r", "--name-only", "benchmark-history"])
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn only_records_signed_by_their_lanes_key_reach_history() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let (nightly_key, nightly_pub) = keypair(root, "nightly");
    let (sentinel_key, sentinel_pub) = keypair(root, "sentinel");
    std::fs::create_dir_all(root.join(".github")).expect("dir");
    std::fs::write(
        root.join(".github/allowed_signers"),
        format!("nightly {nightly_pub}\nsentinel {sentinel_pub}\n"),
    )
    .expect("allowed_signers");
    let manifest = signing_manifest(root, ".github/allowed_signers", Some("nightly"));
    let dir = root.join(".benchops");
    let sealed = dir.join("sealed");

    // Good: nightly signed by nightly's key.
    let good = clean("nightly", "2026-11-28T01:00:00Z");
    hand_off(&sealed, &good, Some(&signed(&nightly_key, &good)));
    // Missing: nightly must sign.
    let unsigned = clean("nightly", "2026-11-29T01:00:00Z");
    hand_off(&sealed, &unsigned, None);
    // Wrong principal: nightly signed by the sentinel's key.
    let borrowed = clean("nightly", "2026-11-30T01:00:00Z");
    hand_off(&sealed, &borrowed, Some(&signed(&sentinel_key, &borrowed)));
    // Tampered: the signature of another record.
    let other = clean("nightly", "2026-11-27T01:00:00Z");
    hand_off(&sealed, &other, Some(&signed(&nightly_key, &good)));
    // The sentinel need not sign.
    let sentinel = clean("sentinel", "2026-11-30T02:00:00Z");
    hand_off(&sealed, &sentinel, None);

    let mut o = LocalSweepOptions::new(&dir, &manifest);
    o.clock = Clock::fixed("2026-11-30T03:00:00.000Z");
    let report = sweep_local(&o).expect("sweep");
    let quarantined: Vec<_> = report.handoffs.iter().filter(|h| !h.valid()).collect();
    assert_eq!(quarantined.len(), 3, "{:#?}", report.handoffs);
    let why = |r: &SealedRecord| {
        let h = report
            .handoffs
            .iter()
            .find(|h| h.digest == Some(r.digest()))
            .expect("reported");
        h.issues
            .iter()
            .map(|i| format!("{}: {}", i.kind, i.reason))
            .collect::<Vec<_>>()
            .join("; ")
    };
    assert!(
        why(&unsigned).contains("signature: unsigned"),
        "{}",
        why(&unsigned)
    );
    assert!(
        why(&borrowed).contains("not for principal \"nightly\""),
        "{}",
        why(&borrowed)
    );
    assert!(
        why(&other).contains("does not match the record's bytes"),
        "{}",
        why(&other)
    );
    for r in [&unsigned, &borrowed, &other] {
        let q = dir
            .join("quarantine")
            .join(format!("{}.why.txt", r.file_name()));
        let text = std::fs::read_to_string(&q).expect("why.txt");
        assert!(text.contains("signature"), "{text}");
        assert!(
            text.contains("the record is intact, but its signature was refused"),
            "{text}"
        );
        assert!(!text.contains("NOT a valid sealed record"), "{text}");
    }

    // History: the good record with its signature, the sentinel's alone.
    let repo = dir.join("history.git");
    let paths = history_paths(&repo);
    let good_path = paths
        .iter()
        .find(|p| p.ends_with(&format!("--{}.json", good.digest().hex())))
        .expect("the good record is in history")
        .clone();
    let sig_path = format!("{good_path}.sig");
    assert!(paths.contains(&sig_path), "{paths:#?}");
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with(&format!("--{}.json", sentinel.digest().hex())))
    );
    for r in [&unsigned, &borrowed, &other] {
        assert!(
            !paths.iter().any(|p| p.contains(&r.digest().hex())),
            "{} never persisted",
            r.file_name()
        );
    }
    // Anyone re-verifies history with stock OpenSSH.
    let record_bytes = git_show(&repo, &good_path).expect("record");
    let sig_bytes = git_show(&repo, &sig_path).expect("sig");
    std::fs::write(root.join("check.sig"), &sig_bytes).expect("sig");
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-f"])
        .arg(root.join(".github/allowed_signers"))
        .args(["-I", "nightly", "-n", "benchops-result", "-s"])
        .arg(root.join("check.sig"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ssh-keygen");
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(&record_bytes)
            .expect("write");
    }
    assert!(child.wait().expect("waits").success());
    // The consumed handoff moved with its signature.
    let persisted = sealed.join(".persisted");
    assert!(persisted.join(good.file_name()).is_file());
    assert!(
        persisted
            .join(format!("{}.sig", good.file_name()))
            .is_file()
    );
    assert!(!sealed.join(format!("{}.sig", good.file_name())).exists());
}

#[test]
fn a_missing_or_broken_allowed_signers_file_stops_the_sweep_before_anything() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let manifest = signing_manifest(root, "keys/allowed_signers", Some("*"));
    let dir = root.join(".benchops");
    hand_off(
        &dir.join("sealed"),
        &clean("nightly", "2026-11-28T01:00:00Z"),
        None,
    );
    let run = || {
        let mut o = LocalSweepOptions::new(&dir, &manifest);
        o.clock = Clock::fixed("2026-11-30T03:00:00.000Z");
        sweep_local(&o).expect_err("refused")
    };
    let e = run();
    assert!(
        benchops_publish::text::error_line(&e).contains("allowed_signers"),
        "{}",
        benchops_publish::text::error_line(&e)
    );
    std::fs::create_dir_all(root.join("keys")).expect("dir");
    std::fs::write(
        root.join("keys/allowed_signers"),
        "nightly ssh-ed25519 !!!\n",
    )
    .expect("bad");
    let e = run();
    let line = benchops_publish::text::error_line(&e);
    assert!(line.contains("line 1"), "{line}");
    assert!(
        !dir.join("history.git")
            .join("refs/heads/benchmark-history")
            .exists()
    );
}

#[test]
fn without_a_signing_table_signatures_are_ignored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let manifest = root.join("schedule.toml");
    std::fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    let dir = root.join(".benchops");
    let r = clean("nightly", "2026-11-28T01:00:00Z");
    hand_off(&dir.join("sealed"), &r, Some("not even a signature\n"));
    let mut o = LocalSweepOptions::new(&dir, &manifest);
    o.clock = Clock::fixed("2026-11-30T03:00:00.000Z");
    let report = sweep_local(&o).expect("sweep");
    assert!(report.handoffs.iter().all(|h| h.valid()));
    let paths = history_paths(&dir.join("history.git"));
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with(&r.file_name()[..]) || p.contains(&r.digest().hex()))
    );
    assert!(!paths.iter().any(|p| p.ends_with(".sig")), "{paths:#?}");
}

#[test]
fn validate_checks_signatures_with_the_manifest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let (key, public) = keypair(root, "nightly");
    std::fs::write(root.join("allowed_signers"), format!("nightly {public}\n"))
        .expect("allowed_signers");
    let manifest = signing_manifest(root, "allowed_signers", Some("nightly"));
    let dir = root.join("sealed");
    let good = clean("nightly", "2026-11-28T01:00:00Z");
    hand_off(&dir, &good, Some(&signed(&key, &good)));
    let unsigned = clean("nightly", "2026-11-29T01:00:00Z");
    hand_off(&dir, &unsigned, None);
    let validate = |with_manifest: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_benchops-publish"));
        c.args(["validate", "--json"]).arg(&dir);
        if with_manifest {
            c.arg("--manifest").arg(&manifest);
        }
        c.output().expect("runs")
    };
    let o = validate(true);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let verdict = |r: &SealedRecord| {
        v.as_array()
            .expect("verdicts")
            .iter()
            .find(|x| {
                x["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with(&r.file_name()))
            })
            .expect("verdict")
            .clone()
    };
    assert_eq!(verdict(&good)["valid"], true);
    let bad = verdict(&unsigned);
    assert_eq!(bad["valid"], false);
    assert!(
        bad["issues"][0]["reason"]
            .as_str()
            .expect("reason")
            .contains("unsigned"),
        "{bad}"
    );
    // Without the manifest there is nothing to check signatures against.
    assert_eq!(validate(false).status.code(), Some(0));
}

#[test]
fn check_manifest_loads_the_allowed_signers_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let manifest = signing_manifest(root, "allowed_signers", None);
    let check = || {
        Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
            .arg("check-manifest")
            .arg(&manifest)
            .output()
            .expect("runs")
    };
    let o = check();
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("signing: ") && out.contains("allowed_signers"),
        "{out}"
    );
    assert!(out.contains("No such file"), "the OS error is kept: {out}");
    std::fs::write(
        root.join("allowed_signers"),
        "nightly valid-after=\"soon\" ssh-ed25519 AAAA\n",
    )
    .expect("bad");
    let out = String::from_utf8_lossy(&check().stdout).into_owned();
    assert!(out.contains("line 1"), "{out}");
    let (_, public) = keypair(root, "k");
    std::fs::write(root.join("allowed_signers"), format!("nightly {public}\n")).expect("good");
    let o = check();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
