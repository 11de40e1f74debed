//! Hostile files in a sweep's handoff directory, through the real binary:
//! FIFOs, sockets, symlinks (to records, to devices, to directories, in
//! loops), records over the size limit and names that try to forge summary
//! lines. Every run has a deadline, so that a hang fails the test.

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;
use std::process::Output;

use benchops::seal::SealedRecord;
use benchops_testkit::records::clean;

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
"#;

struct Env {
    tmp: tempfile::TempDir,
    dir: PathBuf,
    manifest: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join(".benchops");
        fs::create_dir_all(dir.join("sealed")).expect("sealed dir");
        let manifest = tmp.path().join("schedule.toml");
        fs::write(&manifest, MANIFEST).expect("manifest written");
        Env { tmp, dir, manifest }
    }

    fn sealed(&self) -> PathBuf {
        self.dir.join("sealed")
    }

    fn hand_off(&self, r: &SealedRecord) {
        fs::write(self.sealed().join(r.file_name()), r.bytes()).expect("handoff");
    }

    fn sweep(&self, extra: &[&str]) -> Output {
        let mut args: Vec<&OsStr> = vec![
            "sweep".as_ref(),
            "--local".as_ref(),
            self.dir.as_os_str(),
            "--manifest".as_ref(),
            self.manifest.as_os_str(),
        ];
        args.extend(extra.iter().map(|a| OsStr::new(*a)));
        crate::support::run_bounded(&args)
    }

    fn quarantine(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.join("quarantine"))
            .expect("quarantine exists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The summary line that quarantines `name`, and the problem lines under it.
fn quarantined_block<'t>(summary: &'t str, name: &str) -> Vec<&'t str> {
    let mut lines = summary.lines().skip_while(|l| {
        !(l.starts_with("  QUARANTINED ") && l.contains(&format!("sealed/{name} ->")))
    });
    let Some(head) = lines.next() else {
        panic!("{name} is not quarantined:\n{summary}");
    };
    let mut block = vec![head];
    block.extend(lines.take_while(|l| l.starts_with("    ")));
    block
}

fn why(e: &Env, name: &str) -> String {
    fs::read_to_string(e.dir.join("quarantine").join(format!("{name}.why.txt")))
        .unwrap_or_else(|err| panic!("no why file for {name}: {err}"))
}

#[test]
fn non_regular_handoffs_are_quarantined_by_kind_and_never_read() {
    let e = Env::new();
    let good = clean("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&good);
    let sealed = e.sealed();
    crate::support::mkfifo(&sealed.join("pipe.json"));
    let _listener =
        std::os::unix::net::UnixListener::bind(sealed.join("sock.json")).expect("binds a socket");
    std::os::unix::fs::symlink("/dev/zero", sealed.join("zero.json")).expect("symlink");
    // A symlink to a valid record outside the directory is refused too.
    let other = clean("nightly", "2026-12-02T01:00:00Z");
    let outside = e.tmp.path().join(other.file_name());
    fs::write(&outside, other.bytes()).expect("writes");
    std::os::unix::fs::symlink(&outside, sealed.join(other.file_name())).expect("symlink");
    // Directory symlinks, one named like a handoff, are never followed.
    std::os::unix::fs::symlink(".", sealed.join("loop.json")).expect("symlink");
    std::os::unix::fs::symlink(".", sealed.join("loop")).expect("symlink");

    let out = e.sweep(&[]);
    let summary = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{summary}{}", text(&out.stderr));
    assert!(
        summary.contains("6 handoff(s) in") && summary.contains("1 valid, 5 quarantined"),
        "{summary}"
    );
    assert!(summary.contains("persist: 1 new record(s)"), "{summary}");
    for (name, kind) in [
        ("pipe.json", "a FIFO"),
        ("sock.json", "a socket"),
        ("zero.json", "a symbolic link"),
        (other.file_name().as_str(), "a symbolic link"),
        ("loop.json", "a symbolic link"),
    ] {
        let block = quarantined_block(&summary, name).join("\n");
        assert!(block.contains("(unreadable, not copied)"), "{block}");
        assert!(block.contains("unreadable: $:"), "{block}");
        assert!(block.contains(kind), "{name}: {block}");
        assert!(why(&e, name).contains(kind), "{}", why(&e, name));
    }
    // Only the .why.txt files: nothing was read, so nothing was copied.
    assert!(
        e.quarantine().iter().all(|n| n.ends_with(".why.txt")),
        "{:?}",
        e.quarantine()
    );
}

#[test]
fn a_handoff_over_the_size_limit_is_quarantined_naming_size_and_limit() {
    let e = Env::new();
    let good = clean("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&good);
    let size = good.bytes().len();
    let limit = (size - 1).to_string();

    let out = e.sweep(&["--max-record-bytes", &limit]);
    let summary = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{summary}{}", text(&out.stderr));
    let block = quarantined_block(&summary, &good.file_name()).join("\n");
    assert!(block.contains("too-large: $:"), "{block}");
    assert!(block.contains(&format!("{size} bytes")), "{block}");
    assert!(
        block.contains(&format!("limit of {limit} bytes")),
        "{block}"
    );
    assert!(summary.contains("persist: 0 new record(s)"), "{summary}");

    // Under the default limit the same handoff is persisted.
    let out = e.sweep(&[]);
    let summary = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{summary}{}", text(&out.stderr));
    assert!(summary.contains("persist: 1 new record(s)"), "{summary}");
}

#[test]
fn handoff_names_with_control_characters_cannot_forge_summary_lines() {
    let e = Env::new();
    let name = "bad\n  QUARANTINED nothing\npersist: 9 new record(s)\u{1b}[2K.json";
    fs::write(e.sealed().join(name), b"not json").expect("writes");
    let out = e.sweep(&[]);
    let summary = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{summary}{}", text(&out.stderr));
    assert!(!summary.contains('\u{1b}'), "raw escape:\n{summary}");
    assert!(
        !summary.lines().any(|l| l.starts_with("persist: 9")),
        "a forged line:\n{summary}"
    );
    assert!(
        !summary
            .lines()
            .any(|l| l.starts_with("  QUARANTINED nothing")),
        "a forged line:\n{summary}"
    );
    assert!(
        summary.contains(
            "sealed/bad\\n  QUARANTINED nothing\\npersist: 9 new record(s)\\u{1b}[2K.json ->"
        ),
        "{summary}"
    );
}

#[test]
fn a_valid_handoff_with_a_newline_in_its_name_prints_escaped() {
    let e = Env::new();
    let good = clean("nightly", "2026-12-01T01:00:00Z");
    let name = format!("x\nforged--{}", good.file_name());
    fs::write(e.sealed().join(&name), good.bytes()).expect("writes");
    let out = e.sweep(&[]);
    let summary = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{summary}{}", text(&out.stderr));
    assert!(summary.contains("persist: 1 new record(s)"), "{summary}");
    assert!(
        !summary.lines().any(|l| l.starts_with("forged")),
        "a raw name:\n{summary}"
    );
    assert!(
        summary.contains(&format!("x\\nforged--{}", good.file_name())),
        "{summary}"
    );
}

#[test]
fn a_fifo_in_place_of_the_manifest_or_the_ledger_stops_the_sweep_without_hanging() {
    // The manifest.
    let e = Env::new();
    e.hand_off(&clean("nightly", "2026-12-01T01:00:00Z"));
    fs::remove_file(&e.manifest).expect("manifest removed");
    crate::support::mkfifo(&e.manifest);
    let out = e.sweep(&[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("FIFO"), "{err}");
    assert!(err.contains("schedule.toml"), "{err}");

    // The issue ledger: the sweep persists, then refuses to read it.
    let e = Env::new();
    e.hand_off(&clean("nightly", "2026-12-01T01:00:00Z"));
    crate::support::mkfifo(&e.dir.join("issues.json"));
    let out = e.sweep(&[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("FIFO"), "{err}");
    assert!(err.contains("issues.json"), "{err}");
}

/// Whether `r`'s handoff was persisted and moved out of `sealed/`.
fn persisted(e: &Env, r: &SealedRecord) -> bool {
    e.sealed().join(".persisted").join(r.file_name()).is_file()
}

#[test]
fn invalid_handoffs_with_names_near_the_limit_are_quarantined_and_the_valid_one_persisted() {
    let e = Env::new();
    let good = clean("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&good);
    // 245 bytes: the copy fits, a temporary name that repeats it does not.
    let long = format!("{}.json", "x".repeat(240));
    fs::write(e.sealed().join(&long), b"{}").expect("writes");
    // The quarantine already holds other bytes under this name, so the
    // copy gets a name with its digest, which must be bounded too.
    let taken = format!("{}.json", "z".repeat(240));
    fs::write(e.sealed().join(&taken), b"[]").expect("writes");
    fs::create_dir_all(e.dir.join("quarantine")).expect("quarantine");
    fs::write(e.dir.join("quarantine").join(&taken), b"other").expect("writes");
    // 250 bytes, not copied: only its `.why.txt` is too long.
    let dangling = format!("{}.json", "y".repeat(245));
    std::os::unix::fs::symlink("no-such-target", e.sealed().join(&dangling)).expect("symlink");

    let out = e.sweep(&[]);
    let summary = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{summary}{}", text(&out.stderr));
    assert!(summary.contains("1 valid, 3 quarantined"), "{summary}");
    assert!(summary.contains("persist: 1 new record(s)"), "{summary}");
    assert!(persisted(&e, &good), "{summary}");

    let names = e.quarantine();
    assert!(names.iter().all(|n| n.len() <= 255), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    assert!(names.contains(&long) && names.contains(&format!("{long}.why.txt")));
    let z_copies: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("zzz") && n.ends_with(".json") && **n != taken)
        .collect();
    assert_eq!(z_copies.len(), 1, "{names:?}");
    let whys: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("yyy") && n.ends_with(".why.txt"))
        .collect();
    assert_eq!(whys.len(), 1, "{names:?}");
    let why_text = fs::read_to_string(e.dir.join("quarantine").join(whys[0])).expect("why");
    assert!(
        why_text.contains(&format!("full name: {dangling}\n")) && why_text.contains("shortened"),
        "{why_text}"
    );
    assert!(why_text.contains("a symbolic link"), "{why_text}");
}

#[test]
fn a_quarantine_that_fails_for_one_handoff_is_reported_and_the_sweep_goes_on_but_fails() {
    let e = Env::new();
    let good = clean("nightly", "2026-12-01T01:00:00Z");
    e.hand_off(&good);
    let bad = "\u{1b}[31mbad\u{7}.json";
    fs::write(e.sealed().join(bad), b"{}").expect("writes");
    // Nothing can be created under a regular file.
    fs::write(e.dir.join("quarantine"), b"not a directory").expect("writes");

    let out = e.sweep(&[]);
    let (summary, stderr) = (text(&out.stdout), text(&out.stderr));
    // The handoff is neither quarantined nor explained: the sweep is not
    // finished, and exits 2 (FAILED), not 1 (done, look at the quarantine).
    assert_eq!(out.status.code(), Some(2), "{summary}{stderr}");
    assert!(summary.contains("persist: 1 new record(s)"), "{summary}");
    assert!(persisted(&e, &good), "{summary}");
    assert!(
        summary.contains("quarantine-failed") && summary.contains("\\u{1b}[31mbad\\u{7}.json"),
        "{summary}"
    );
    for t in [&summary, &stderr] {
        assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t:?}");
    }
    assert!(e.sealed().join(bad).is_file(), "the source stays in place");
    // It is counted as left in place, not as quarantined.
    assert!(
        summary.contains("1 valid, 0 quarantined, 1 invalid left in place (quarantine failed)"),
        "{summary}"
    );
    assert!(
        stderr.contains("1 invalid handoff(s) could not be quarantined")
            && !stderr.contains("quarantined ("),
        "{stderr}"
    );
}

#[test]
fn a_symlinked_sweep_lock_is_refused_and_its_target_untouched() {
    let e = Env::new();
    e.hand_off(&clean("nightly", "2026-12-01T01:00:00Z"));
    let victim = e.tmp.path().join("victim");
    fs::write(&victim, b"precious").expect("writes");
    std::os::unix::fs::symlink(&victim, e.dir.join(".sweep.lock")).expect("symlink");
    let out = e.sweep(&["--lock-wait", "0"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}{stderr}", text(&out.stdout));
    assert!(
        stderr.contains(".sweep.lock") && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert_eq!(fs::read(&victim).expect("victim"), b"precious");
    assert!(!e.dir.join("history.git").exists(), "nothing was written");

    // A dangling link does not create its target.
    fs::remove_file(e.dir.join(".sweep.lock")).expect("removes");
    let absent = e.tmp.path().join("absent");
    std::os::unix::fs::symlink(&absent, e.dir.join(".sweep.lock")).expect("symlink");
    let out = e.sweep(&["--lock-wait", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!absent.exists(), "the link's target was created");
}

#[test]
fn a_symlinked_quarantine_or_persisted_directory_is_refused_before_anything_is_written() {
    for (link, record_valid) in [("quarantine", false), ("sealed/.persisted", true)] {
        let e = Env::new();
        let target = e.tmp.path().join("elsewhere");
        fs::create_dir_all(&target).expect("target dir");
        if record_valid {
            e.hand_off(&clean("nightly", "2026-12-01T01:00:00Z"));
        } else {
            fs::write(e.sealed().join("bad.json"), b"{}").expect("writes");
        }
        std::os::unix::fs::symlink(&target, e.dir.join(link)).expect("symlink");
        let out = e.sweep(&[]);
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{link}: {}{stderr}",
            text(&out.stdout)
        );
        assert!(
            stderr.contains(&format!(".benchops/{link}")) && stderr.contains("symbolic link"),
            "{link}: {stderr}"
        );
        assert_eq!(
            fs::read_dir(&target).expect("target").count(),
            0,
            "{link}: written through the link"
        );
    }
}
