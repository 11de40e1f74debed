//! `benchops-exec lane schedule --emit`: the systemd units pass
//! `systemd-analyze verify`, and each timer's `OnCalendar=` expands, under
//! `systemd-analyze calendar`, to the instants benchops's own evaluator
//! (the one `lane due` and the watchdog use) gives for 30 days; the one
//! known difference (a slot inside a spring-forward gap) is pinned down.
//! The crontab lines carry each lane's zone and cron, and a cron parser
//! other than benchops's own (Python's croniter) reads them and fires at
//! the same instants for 30 days; the scrontab lines are read the same way,
//! and their `#SCRON` options are checked by `sbatch --test-only` on the
//! cluster when one runs here.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use benchops::schedule::Schedule;
use jiff::Timestamp;

mod common;
use common::slurm_ready;

const EXE: &str = env!("CARGO_BIN_EXE_benchops-exec");

const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "w"
command = ["true"]
repetitions = 1
"#;

/// Lanes whose crons use each kind of field: a zone with DST, a time that
/// falls in New York's spring-forward gap, weekdays, steps and ranges,
/// and day-of-month with day-of-week (cron fires on either).
const MANIFEST: &str = r#"
schema = "schedule-manifest/v3"
repository = "example/widgets"
suite = ["bench.toml"]

[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "Asia/Jerusalem"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"

[[lanes]]
name = "east"
cron = "30 2 * * *"
timezone = "America/New_York"
completion_window_minutes = 60
cases = ["*"]
baseline = "last-clean"

[[lanes]]
name = "office"
cron = "*/20 8-18/2 * * 1-5"
timezone = "Europe/Berlin"
completion_window_minutes = 15
cases = ["*"]
baseline = "last-clean"

[[lanes]]
name = "monthly"
cron = "15 3 1,15 * 0"
timezone = "UTC"
completion_window_minutes = 120
cases = ["*"]
baseline = "last-clean"
"#;

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().to_path_buf();
    std::fs::write(root.join("bench.toml"), INTENT).expect("intent");
    std::fs::write(root.join("schedule.toml"), MANIFEST).expect("manifest");
    (tmp, root)
}

fn emit(root: &Path, what: &str) -> Output {
    Command::new(EXE)
        .current_dir(root)
        .args(["--state", "state", "lane", "schedule", "--emit", what])
        .args(["--dir", "units", "--manifest", "schedule.toml"])
        .args([
            "--history",
            "history.git",
            "--out",
            "sealed",
            "--subject",
            ".",
        ])
        .output()
        .expect("runs")
}

fn analyze(args: &[&str]) -> Output {
    Command::new("systemd-analyze")
        .args(args)
        .output()
        .expect("systemd-analyze runs (Debian's systemd package)")
}

/// The UTC instants `systemd-analyze calendar` lists for `spec` from
/// `base`, up to `until`.
fn systemd_instants(spec: &str, base: Timestamp, until: Timestamp) -> BTreeSet<Timestamp> {
    let base_text = base.strftime("%Y-%m-%d %H:%M:%S UTC").to_string();
    let o = analyze(&[
        "calendar",
        "--iterations=400",
        &format!("--base-time={base_text}"),
        spec,
    ]);
    assert!(
        o.status.success(),
        "{spec}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = BTreeSet::new();
    for l in text.lines() {
        let l = l.trim();
        let Some(rest) = l.strip_prefix("Next elapse: ").or_else(|| {
            l.split_once(": ")
                .filter(|(k, _)| k.starts_with("Iter."))
                .map(|(_, v)| v)
        }) else {
            continue;
        };
        // `Mon 2026-12-07 23:00:00 UTC`
        let words: Vec<&str> = rest.split_whitespace().collect();
        let t: Timestamp = format!("{}T{}Z", words[1], words[2])
            .parse()
            .expect("instant");
        if t <= until {
            out.insert(t);
        }
    }
    out
}

fn benchops_instants(
    cron: &str,
    tz: &str,
    base: Timestamp,
    until: Timestamp,
) -> BTreeSet<Timestamp> {
    let s = Schedule::parse(cron, tz).expect("cron");
    // systemd lists elapses at or after the base; benchops's (from, to].
    s.slots_between(base - jiff::SignedDuration::from_secs(1), until)
        .expect("slots")
        .into_iter()
        .collect()
}

/// The lanes of the manifest with their timers' `OnCalendar=` values.
fn calendars(root: &Path) -> Vec<(String, String, String, Vec<String>)> {
    let lanes = [
        ("nightly", "0 1 * * *", "Asia/Jerusalem"),
        ("east", "30 2 * * *", "America/New_York"),
        ("office", "*/20 8-18/2 * * 1-5", "Europe/Berlin"),
        ("monthly", "15 3 1,15 * 0", "UTC"),
    ];
    lanes
        .iter()
        .map(|(name, cron, tz)| {
            let timer =
                std::fs::read_to_string(root.join(format!("units/benchops-lane-{name}.timer")))
                    .expect("timer");
            let specs = timer
                .lines()
                .filter_map(|l| l.strip_prefix("OnCalendar="))
                .map(str::to_owned)
                .collect();
            (
                (*name).to_owned(),
                (*cron).to_owned(),
                (*tz).to_owned(),
                specs,
            )
        })
        .collect()
}

#[test]
fn systemd_units_verify_and_their_timers_fire_at_benchops_slots_for_30_days() {
    let (_tmp, root) = setup();
    let o = emit(&root, "systemd");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut units: Vec<String> = std::fs::read_dir(root.join("units"))
        .expect("units")
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    units.sort();
    assert_eq!(units.len(), 8, "a service and a timer per lane: {units:?}");
    let mut args = vec!["verify"];
    args.extend(units.iter().map(String::as_str));
    let v = analyze(&args);
    assert!(
        v.status.success(),
        "systemd-analyze verify: {}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
    let service =
        std::fs::read_to_string(root.join("units/benchops-lane-nightly.service")).expect("service");
    assert!(service.contains("lane due --run --wait"), "{service}");
    assert!(service.contains("--lane nightly") && service.contains("SuccessExitStatus=4"));
    let timer =
        std::fs::read_to_string(root.join("units/benchops-lane-nightly.timer")).expect("timer");
    assert!(
        timer.contains("OnCalendar=*-*-* 01:00:00 Asia/Jerusalem"),
        "{timer}"
    );
    assert!(timer.contains("Persistent=true") && timer.contains("RandomizedDelaySec=0"));

    // 30 days without a change of daylight saving in any of the zones.
    let base: Timestamp = "2026-11-05T00:00:00Z".parse().expect("base");
    let until: Timestamp = "2026-12-05T00:00:00Z".parse().expect("until");
    for (name, cron, tz, specs) in calendars(&root) {
        let mut fired = BTreeSet::new();
        for spec in &specs {
            fired.extend(systemd_instants(spec, base, until));
        }
        let want = benchops_instants(&cron, &tz, base, until);
        assert!(!want.is_empty(), "{name}");
        assert_eq!(fired, want, "lane {name}: {specs:?}");
    }
}

#[test]
fn a_slot_in_a_spring_forward_gap_is_the_one_known_difference() {
    let (_tmp, root) = setup();
    assert!(emit(&root, "systemd").status.success());
    // New York, 8 March 2026: 02:30 does not exist. benchops (and so `lane
    // due` and the watchdog) puts that day's slot at 03:30 EDT; systemd
    // skips the day. Every other day agrees.
    let base: Timestamp = "2026-03-01T00:00:00Z".parse().expect("base");
    let until: Timestamp = "2026-03-31T00:00:00Z".parse().expect("until");
    let (_, cron, tz, specs) = calendars(&root)
        .into_iter()
        .find(|c| c.0 == "east")
        .expect("east");
    let fired = systemd_instants(&specs[0], base, until);
    let want = benchops_instants(&cron, &tz, base, until);
    let gap: Timestamp = "2026-03-08T07:30:00Z".parse().expect("gap slot");
    let only_benchops: Vec<_> = want.difference(&fired).copied().collect();
    assert_eq!(only_benchops, vec![gap]);
    assert!(fired.is_subset(&want));
}

#[test]
fn crontab_lines_carry_each_lanes_zone_and_the_minute_line_needs_none() {
    let (_tmp, root) = setup();
    let o = emit(&root, "cron");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("CRON_TZ=Asia/Jerusalem\n0 1 * * * cd "),
        "{text}"
    );
    assert!(
        text.contains("CRON_TZ=America/New_York\n30 2 * * * cd "),
        "{text}"
    );
    assert!(
        text.contains("--lane nightly") && text.contains("|| [ $? -eq 4 ]"),
        "{text}"
    );
    let minute = text
        .lines()
        .find(|l| l.starts_with("# * * * * * "))
        .expect("the every-minute line");
    assert!(
        !minute.contains("--lane") && !minute.contains("--wait"),
        "{minute}"
    );
}

#[test]
fn an_unknown_lane_or_a_cron_without_a_calendar_form_is_refused() {
    let (_tmp, root) = setup();
    let o = Command::new(EXE)
        .current_dir(&root)
        .args([
            "lane",
            "schedule",
            "--emit",
            "systemd",
            "--manifest",
            "schedule.toml",
        ])
        .args(["--history", "h", "--out", "o", "--lane", "weekly"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--lane weekly: the manifest declares no such lane"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(
        root.join("schedule.toml"),
        MANIFEST.replace("cron = \"0 1 * * *\"", "cron = \"0 1 L * *\""),
    )
    .expect("manifest");
    let o = emit(&root, "systemd");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !root.join("units").exists()
            || std::fs::read_dir(root.join("units"))
                .map(|d| d.count())
                .unwrap_or(0)
                == 0,
        "nothing written"
    );
    let _ = err;
}

/// A Python that has croniter (Debian's python3-croniter, installed by
/// scripts/test-deps.sh).
fn python_with_croniter() -> String {
    for py in ["python3", "/usr/bin/python3"] {
        if Command::new(py)
            .args(["-c", "import croniter"])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return py.to_owned();
        }
    }
    panic!("no python3 with croniter here: run scripts/test-deps.sh (python3-croniter)");
}

/// The UTC instants croniter gives for `cron` in `tz`, in [base, until].
fn croniter_instants(
    cron: &str,
    tz: &str,
    base: Timestamp,
    until: Timestamp,
) -> BTreeSet<Timestamp> {
    const SCRIPT: &str = r#"
import sys, datetime, zoneinfo
from croniter import croniter
cron, tz, base, until = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
zone = zoneinfo.ZoneInfo(tz)
start = datetime.datetime.fromtimestamp(base - 1, zone)
it = croniter(cron, start)
while True:
    t = int(it.get_next(float))
    if t > until:
        break
    print(t)
"#;
    let o = Command::new(python_with_croniter())
        .args(["-c", SCRIPT, cron, tz])
        .arg(base.as_second().to_string())
        .arg(until.as_second().to_string())
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "croniter refused {cron:?} in {tz}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| Timestamp::from_second(l.trim().parse().expect("seconds")).expect("instant"))
        .collect()
}

#[test]
fn another_cron_parser_reads_the_crontab_lines_and_fires_at_benchops_slots() {
    let (_tmp, root) = setup();
    let o = emit(&root, "cron");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let base: Timestamp = "2026-11-05T00:00:00Z".parse().expect("base");
    let until: Timestamp = "2026-12-05T00:00:00Z".parse().expect("until");
    let lines: Vec<&str> = text.lines().collect();
    let mut lanes = 0;
    for pair in lines.windows(2) {
        let Some(tz) = pair[0].strip_prefix("CRON_TZ=") else {
            continue;
        };
        // The five cron fields, as a crontab line carries them.
        let cron = pair[1]
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" ");
        let want = benchops_instants(&cron, tz, base, until);
        assert!(!want.is_empty(), "{cron} in {tz}");
        assert_eq!(
            croniter_instants(&cron, tz, base, until),
            want,
            "{cron} in {tz}"
        );
        lanes += 1;
    }
    assert_eq!(lanes, 4, "{text}");
    // The every-minute line, uncommented, is a crontab line croniter reads.
    let minute = lines
        .iter()
        .find_map(|l| l.strip_prefix("# * * * * * "))
        .map(|_| "* * * * *")
        .expect("the every-minute line");
    let an_hour = croniter_instants(
        minute,
        "UTC",
        base,
        base + jiff::SignedDuration::from_hours(1),
    );
    assert_eq!(an_hour.len(), 61);
}

#[test]
fn scrontab_lines_call_lane_due_each_minute_with_options_sbatch_accepts() {
    let (_tmp, root) = setup();
    let o = emit(&root, "scrontab");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut options: Vec<Vec<String>> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(opt) = line.strip_prefix("#SCRON ") {
            pending.push(opt.trim().to_owned());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let cron = fields[..5].join(" ");
        assert_eq!(cron, "* * * * *", "{line}");
        assert!(
            croniter_instants(
                &cron,
                "UTC",
                Timestamp::UNIX_EPOCH,
                Timestamp::from_second(60).expect("t")
            )
            .len()
                == 2
        );
        assert!(
            line.contains("lane due --run --wait") && line.contains("|| [ $? -eq 4 ]"),
            "{line}"
        );
        options.push(std::mem::take(&mut pending));
    }
    assert_eq!(options.len(), 4, "an entry per lane: {text}");
    assert!(
        options[0]
            .iter()
            .any(|o| o == "--job-name=benchops-lane-nightly-due")
    );
    assert!(options[0].iter().any(|o| o == "--time=180"), "{options:?}");
    // The options are sbatch's: the cluster's own parser checks them.
    if !slurm_ready("THE #SCRON OPTIONS CHECK BY SBATCH") {
        return;
    }
    for opts in &options {
        let o = Command::new("sbatch")
            .arg("--test-only")
            .args(opts)
            .arg("--wrap=true")
            .output()
            .expect("sbatch runs");
        assert!(
            o.status.success(),
            "sbatch --test-only {opts:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
