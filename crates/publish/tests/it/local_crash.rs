//! The local sweep under SIGKILL and concurrency, through the real
//! `benchops-publish sweep --local` binary: kills at random instants
//! (including inside the creation of `history.git` and inside the ref
//! update), a ref lock left by a killed git, the sweep lock between racing
//! sweeps, and the exit status of a sweep that could not get the lock.
//!
//! Each sweep runs in its own process group, and a kill goes to the whole
//! group, so the git processes it started die with it, as on a machine
//! that loses power. The test hook `BENCHOPS_TEST_PAUSE` widens the two
//! windows that matter (see `benchops_publish::history::setup`).

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use benchops::seal::SealedRecord;
use benchops_publish::history::{LocalHistory, setup::PAUSE_ENV};
use benchops_publish::ledger::Ledger;
use benchops_publish::local::take_sweep_lock;
use benchops_testkit::records::{clean, drift, drift_both};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

const MANIFEST: &str = benchops_testkit::records::TWO_LANE_MANIFEST;

const REF_LOCK: &str = "refs/heads/benchmark-history.lock";

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

/// Three handoffs: two drift issues opened, a sentinel pass that moves a
/// baseline pointer.
fn handoffs() -> Vec<SealedRecord> {
    vec![
        drift_both("nightly", "2026-12-01T01:00:00Z"),
        clean("sentinel", "2026-12-01T02:00:00Z"),
        drift("sentinel", "2026-12-01T03:00:00Z"),
    ]
}

impl Env {
    fn hand_off(&self, records: &[SealedRecord]) {
        for r in records {
            fs::write(self.dir.join("sealed").join(r.file_name()), r.bytes()).expect("handoff");
        }
    }

    fn command(&self, pause: Option<&str>) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_benchops-publish"));
        c.arg("sweep")
            .arg("--local")
            .arg(&self.dir)
            .arg("--manifest")
            .arg(&self.manifest)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        match pause {
            Some(p) => c.env(PAUSE_ENV, p),
            None => c.env_remove(PAUSE_ENV),
        };
        c
    }

    fn spawn(&self, pause: Option<&str>) -> Child {
        self.command(pause)
            .spawn()
            .expect("benchops-publish starts")
    }

    fn run(&self, extra: &[&str]) -> Output {
        self.command(None)
            .args(extra)
            .output()
            .expect("benchops-publish runs")
    }

    fn history_git(&self) -> PathBuf {
        self.dir.join("history.git")
    }

    /// Whether a half-built repository sits beside `history.git`.
    fn init_aside(&self) -> bool {
        fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten().any(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(".history.git.init-")
                })
            })
            .unwrap_or(false)
    }

    fn ref_locked(&self) -> bool {
        self.history_git().join(REF_LOCK).exists()
    }

    /// What must converge: the records and baseline pointers on the
    /// branch (path and blob id; receipts left out), the issues with their
    /// comments, and the handoff files left in `sealed/`.
    fn outcome(&self) -> (Vec<String>, String, Vec<String>) {
        let h = LocalHistory::open_or_init(self.history_git()).expect("history opens");
        let tip = h.tip().expect("tip").expect("a branch");
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(self.history_git())
            .args(["ls-tree", "-r", &tip])
            .output()
            .expect("git runs");
        let tree: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.contains("\treceipts/"))
            .map(str::to_owned)
            .collect();
        let bytes = fs::read(self.dir.join("issues.json")).expect("ledger");
        let ledger = Ledger::from_bytes(&bytes, Path::new("issues.json")).expect("ledger valid");
        let issues = format!("{:?}", ledger.issues);
        let mut left: Vec<String> = fs::read_dir(self.dir.join("sealed"))
            .expect("sealed")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        left.sort();
        (tree, issues, left)
    }
}

fn kill_group(child: &mut Child) {
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    // The group may be gone already (the sweep finished): fine.
    let _ = killpg(pid, Signal::SIGKILL);
    let _ = child.wait();
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Waits until `cond` holds or the child exits; true when `cond` held.
fn wait_for(child: &mut Child, cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        if child.try_wait().ok().flatten().is_some() {
            return cond();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// A small seeded generator (splitmix64), so a failing run can be
/// repeated with its seed.
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
        self.next() % n.max(1)
    }
}

// ---------------------------------------------------------------------------

#[test]
fn kills_at_random_instants_converge_to_the_uninterrupted_result() {
    let seed = std::env::var("BENCHOPS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_0010_u64);
    eprintln!("kill-at-random seed: {seed} (set BENCHOPS_CRASH_SEED to repeat)");
    let mut rng = Rng(seed);

    let reference = env();
    reference.hand_off(&handoffs());
    let started = Instant::now();
    let out = reference.run(&[]);
    let full_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let want = reference.outcome();
    assert!(want.2.is_empty(), "every handoff consumed: {want:?}");

    // The pauses keep each window open long enough for a kill to land in
    // it; the random delays start at 0 ms and reach past the whole sweep.
    let pause = "init=40,ref-lock=40";
    let span = full_ms + 120;
    let mut seen_init = 0;
    let mut seen_ref_lock = 0;
    let mut kills = 0;
    let rounds = 8;
    for round in 0..rounds {
        let e = env();
        e.hand_off(&handoffs());
        for k in 0..3 {
            let mut child = e.spawn(Some(pause));
            // One kill per round waits for a window; the others are purely
            // random instants.
            let delay = match (k, round % 2) {
                (0, 0) => {
                    wait_for(&mut child, || e.init_aside());
                    rng.below(30)
                }
                (0, _) => {
                    wait_for(&mut child, || e.ref_locked());
                    rng.below(30)
                }
                _ => rng.below(span),
            };
            std::thread::sleep(Duration::from_millis(delay));
            kill_group(&mut child);
            kills += 1;
            seen_init += usize::from(e.init_aside());
            seen_ref_lock += usize::from(e.ref_locked());
        }
        let out = e.run(&[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "seed {seed}, round {round}: {}",
            text(&out)
        );
        assert!(
            !e.init_aside(),
            "seed {seed}, round {round}: leftover removed"
        );
        assert!(!e.ref_locked(), "seed {seed}, round {round}: lock removed");
        assert_eq!(e.outcome(), want, "seed {seed}, round {round}");
        // And converged: a further sweep has nothing to do.
        let again = e.run(&[]);
        let summary = String::from_utf8_lossy(&again.stdout);
        assert!(summary.contains("nothing new: no commit"), "{summary}");
        assert!(
            summary.contains("issues: opened 0, commented 0"),
            "{summary}"
        );
    }
    eprintln!(
        "{kills} kills over {rounds} rounds (sweep {full_ms} ms): {seen_init} inside init, {seen_ref_lock} holding the ref lock"
    );
    assert!(seen_init > 0, "seed {seed}: no kill landed inside init");
    assert!(
        seen_ref_lock > 0,
        "seed {seed}: no kill landed inside the ref update"
    );
}

#[test]
fn a_sweep_killed_while_creating_history_leaves_nothing_half_built() {
    let e = env();
    e.hand_off(&handoffs());
    let mut child = e.spawn(Some("init=3000"));
    // Killed as soon as anything of the new repository appears.
    assert!(
        wait_for(&mut child, || e.init_aside() || e.history_git().exists()),
        "init started"
    );
    kill_group(&mut child);
    // The repository is built aside: nothing at history.git yet.
    assert!(!e.history_git().exists(), "a half-built history.git");
    assert!(e.init_aside());

    let out = e.run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("setup: removed") && stdout.contains("a killed sweep was building"),
        "{stdout}"
    );
    assert!(!e.init_aside());
    assert!(stdout.contains("3 new record(s)"), "{stdout}");
}

#[test]
fn a_ref_lock_left_by_a_killed_git_is_removed_and_noted() {
    let e = env();
    let records = handoffs();
    e.hand_off(&records[..1]);
    assert_eq!(e.run(&[]).status.code(), Some(0));

    // Killed while git holds the ref lock: git leaves the lock file.
    e.hand_off(&records[1..]);
    let mut child = e.spawn(Some("ref-lock=3000"));
    assert!(wait_for(&mut child, || e.ref_locked()), "ref update began");
    kill_group(&mut child);
    assert!(e.ref_locked(), "the killed git left its lock");

    let started = Instant::now();
    let out = e.run(&[]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("setup: removed the stale ref lock") && stdout.contains(REF_LOCK),
        "{stdout}"
    );
    assert!(stdout.contains("2 new record(s)"), "{stdout}");
    assert!(!e.ref_locked());
    eprintln!("the sweep after the kill took {took:?}");
}

#[test]
fn twenty_races_of_two_first_sweeps_both_succeed_one_after_the_other() {
    let mut want = None;
    for race in 0..20 {
        let e = env();
        e.hand_off(&handoffs());
        let a = e.spawn(None);
        let b = e.spawn(None);
        let (a, b) = (
            a.wait_with_output().expect("a"),
            b.wait_with_output().expect("b"),
        );
        for o in [&a, &b] {
            assert_eq!(o.status.code(), Some(0), "race {race}: {}", text(o));
        }
        let summaries = [&a, &b].map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        assert_eq!(
            summaries
                .iter()
                .filter(|s| s.contains("3 new record(s)"))
                .count(),
            1,
            "race {race}: exactly one persisted: {summaries:?}"
        );
        let got = e.outcome();
        assert!(got.2.is_empty(), "race {race}: {got:?}");
        match &want {
            None => want = Some(got),
            Some(w) => assert_eq!(&got, w, "race {race}"),
        }
    }
}

#[test]
fn a_sweep_that_cannot_get_the_lock_exits_3_having_touched_nothing() {
    let e = env();
    e.hand_off(&handoffs());
    let lock =
        take_sweep_lock(&e.dir.join(".sweep.lock"), Duration::ZERO, &mut |_| {}).expect("locked");

    let out = e.run(&["--lock-wait", "0"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("another sweep holds the lock")
            && stderr.contains(&format!("pid {}", std::process::id())),
        "{stderr}"
    );
    assert!(!e.history_git().exists(), "nothing was written");
    assert!(!e.dir.join("issues.json").exists());
    assert_eq!(
        fs::read_dir(e.dir.join("sealed")).expect("sealed").count(),
        3
    );

    // A sweep that waits says what it waits for, and gets the lock once
    // the holder lets go: the lock is released only after the notice.
    let mut waiting = e.command(None);
    waiting.args(["--lock-wait", "120"]);
    let mut child = waiting.spawn().expect("starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut notice = String::new();
    while !notice.contains("waiting up to") {
        notice.clear();
        let n = std::io::BufRead::read_line(&mut stderr, &mut notice).expect("reads stderr");
        assert!(n > 0, "the sweep ended without saying it waits");
    }
    assert!(
        notice.contains("waiting up to 120 s for the sweep lock")
            && notice.contains(&format!("held by pid {}", std::process::id()))
            && notice.contains("another sweep of this directory is running"),
        "{notice}"
    );
    drop(lock);
    let out = child.wait_with_output().expect("waits");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 new record(s)"));
}

#[test]
fn a_new_repository_is_renamed_into_place_and_only_init_leftovers_are_removed() {
    use benchops_publish::history::setup::remove_init_leftovers;
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("history.git");
    let h = LocalHistory::open_or_init(&path).expect("created");
    assert!(path.join("HEAD").is_file());
    assert_eq!(h.tip().expect("tip"), None);
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .expect("lists")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(tmp.path()),
        ["history.git"],
        "nothing built aside is left"
    );

    // What a killed initialisation leaves, and look-alikes that are not.
    fs::create_dir_all(tmp.path().join(".history.git.init-41-0/objects")).expect("leftover");
    fs::create_dir_all(tmp.path().join(".other.git.init-41-0")).expect("another repo's");
    fs::write(tmp.path().join("history.git.init-41-0"), b"not hidden").expect("a file");
    let removed = remove_init_leftovers(&path).expect("removes");
    assert_eq!(removed, [tmp.path().join(".history.git.init-41-0")]);
    assert_eq!(
        names(tmp.path()),
        [
            ".other.git.init-41-0",
            "history.git",
            "history.git.init-41-0"
        ]
    );
    // The repository itself is untouched.
    assert!(LocalHistory::open_or_init(&path).is_ok());
}

#[test]
fn deleting_the_lock_file_under_a_running_sweep_does_not_let_a_second_one_in() {
    let e = env();
    let records = handoffs();
    e.hand_off(&records[..1]);
    assert_eq!(e.run(&[]).status.code(), Some(0));

    // Sweep A holds the ref lock (and the sweep lock) for a while.
    e.hand_off(&records[1..]);
    let mut a = e.spawn(Some("ref-lock=3000"));
    assert!(wait_for(&mut a, || e.ref_locked()), "ref update began");
    fs::remove_file(e.dir.join(".sweep.lock")).expect("lock file deleted");

    let b = e.run(&["--lock-wait", "1"]);
    let a_out = a.wait_with_output().expect("a finishes");
    assert_eq!(a_out.status.code(), Some(0), "A: {}", text(&a_out));
    assert!(
        String::from_utf8_lossy(&a_out.stdout).contains("2 new record(s)"),
        "A: {}",
        text(&a_out)
    );
    let b_text = text(&b);
    assert_eq!(b.status.code(), Some(3), "B ran beside A: {b_text}");
    assert!(!b_text.contains("stale ref lock"), "B: {b_text}");
    assert!(
        String::from_utf8_lossy(&b.stderr).contains("another sweep holds the lock"),
        "B: {b_text}"
    );
}
