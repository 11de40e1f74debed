//! Golden tests of the Slurm parsers over output captured from a real
//! Slurm 22.05 cluster (`tests/fixtures/slurm/`, see its README).

use std::path::PathBuf;

use benchops_exec::slurm::Snapshot;
use benchops_exec::slurm::parse::{
    SlurmState, Tasks, parse_sacct, parse_squeue, scontrol_rows, split_job_id,
};

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/slurm")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn fixtures(prefix: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/slurm");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("fixtures")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".txt") && !n.contains("stderr"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_captured_squeue_output_parses() {
    let files: Vec<String> = fixtures("squeue.")
        .into_iter()
        .filter(|f| !f.starts_with("squeue.default"))
        .collect();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let rows = parse_squeue(&fixture(&f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        for r in rows {
            assert!(
                !matches!(r.state, SlurmState::Other(_)),
                "{f}: unknown state {:?}",
                r.state
            );
        }
    }
}

#[test]
fn every_captured_sacct_output_parses() {
    // Captures taken with another --format (memory columns, extra fields,
    // the field list itself) are described in the README, not parsed here.
    let other_format = ["oom_", "extra_fields", "helpformat"];
    let files: Vec<String> = fixtures("sacct.")
        .into_iter()
        .filter(|f| !other_format.iter().any(|o| f.contains(o)))
        .collect();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let rows = parse_sacct(&fixture(&f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        for r in rows {
            assert!(
                !matches!(r.state, SlurmState::Other(_)),
                "{f}: unknown state {:?}",
                r.state
            );
        }
    }
}

#[test]
fn terminal_states_and_exit_codes() {
    let rows = parse_sacct(&fixture("sacct.X.ok_exit3_segv_finished.txt")).expect("parses");
    let got: Vec<(SlurmState, Option<i32>, Option<i32>)> = rows
        .iter()
        .map(|r| (r.state.clone(), r.exit_code, r.signal))
        .collect();
    assert_eq!(
        got,
        [
            (SlurmState::Completed, Some(0), Some(0)),
            (SlurmState::Failed, Some(3), Some(0)),
            (SlurmState::Failed, Some(0), Some(11)),
        ]
    );
    let t = parse_sacct(&fixture("sacct.X.timeout_finished.txt")).expect("parses");
    assert_eq!(t[0].state, SlurmState::Timeout);
    let c = parse_sacct(&fixture("sacct.X.cancelled_pending.txt")).expect("parses");
    assert_eq!(
        c[0].state,
        SlurmState::Cancelled {
            by: Some("0".into())
        }
    );
    assert_eq!(c[0].start, "None");
    // Without -X the batch step shows how the time limit ended the script.
    let steps = parse_sacct(&fixture("sacct.timeout_finished.txt")).expect("parses");
    let batch = steps
        .iter()
        .find(|r| r.step.as_deref() == Some("batch"))
        .expect("batch step");
    assert_eq!(
        (batch.state.clone(), batch.signal),
        (SlurmState::Cancelled { by: None }, Some(15))
    );
}

#[test]
fn pending_range_rows_cover_their_tasks() {
    let rows = parse_sacct(&fixture("sacct.X.array1000_running.txt")).expect("parses");
    let range = rows
        .iter()
        .find(|r| matches!(r.tasks, Tasks::Many(_)))
        .expect("range row");
    assert_eq!(range.state, SlurmState::Pending);
    assert!(range.tasks.contains(2) && range.tasks.contains(999) && !range.tasks.contains(1));
    assert_eq!(
        split_job_id("16_[2-4%2]").map(|t| t.1),
        Some(Tasks::Many(vec![2, 3, 4]))
    );
}

#[test]
fn squeue_reasons_are_kept() {
    let held = parse_squeue(&fixture("squeue.held_pending.txt")).expect("parses");
    assert_eq!(
        (held[0].state.clone(), held[0].reason.as_str()),
        (SlurmState::Pending, "JobHeldUser")
    );
    let arr = parse_squeue(&fixture("squeue.array5_running.txt")).expect("parses");
    let throttled = arr
        .iter()
        .filter(|r| r.reason == "JobArrayTaskLimit")
        .count();
    let running: Vec<u64> = arr
        .iter()
        .filter(|r| r.state == SlurmState::Running)
        .filter_map(|r| r.task)
        .collect();
    assert_eq!(throttled, 3);
    assert_eq!(running.len(), 2);
    // A running task has its own job id; pending tasks share the array's.
    assert!(
        arr.iter()
            .any(|r| r.state == SlurmState::Running && r.job_id != r.array_job_id)
    );
}

#[test]
fn scontrol_one_line_output_maps_to_rows() {
    let rows = scontrol_rows(&fixture("scontrol.o.finished.txt"));
    assert!(rows.len() >= 3, "{rows:?}");
    let states: Vec<SlurmState> = rows.iter().map(|r| r.state.clone()).collect();
    assert!(states.contains(&SlurmState::Completed) && states.contains(&SlurmState::Failed));
    let arr = scontrol_rows(&fixture("scontrol.o.array5_running.txt"));
    assert!(
        arr.iter()
            .any(|r| matches!(r.tasks, Tasks::Many(_)) && r.state == SlurmState::Pending),
        "{arr:?}"
    );
}

#[test]
fn snapshot_from_captures_classifies_without_guessing() {
    use benchops::classify::BackendEvidence;
    use benchops_exec::state::{BackendHandles, IndexSet, SlurmChunk, Submission};
    // The array of 1000 after 2 tasks finished: squeue lists the pending
    // ones, sacct has the two finished tasks and a pending range row.
    let snap = Snapshot::from_text(
        &fixture("squeue.array1000_running.txt"),
        &fixture("sacct.X.array1000_running.txt"),
    )
    .expect("parses");
    let chunks = vec![SlurmChunk {
        job_id: "1".into(),
        first_index: 0,
        tasks: 1000,
    }];
    let sub = Submission {
        schema: "benchops-submission/v1".into(),
        benchmark: benchops::Sha256Digest::of(b"x"),
        attempt: 1,
        submitted_at: "2026-11-30T12:06:50Z".into(),
        indices: IndexSet::Range { count: 1000 },
        backend: BackendHandles::Slurm {
            cluster: "benchops".into(),
            chunks: chunks.clone(),
        },
    };
    let now: jiff::Timestamp = "2026-11-30T12:30:00Z".parse().expect("time");
    assert!(matches!(
        snap.evidence(&chunks, 0, now, &sub),
        BackendEvidence::FinishedOk { .. }
    ));
    assert!(
        matches!(snap.evidence(&chunks, 6, now, &sub), BackendEvidence::Pending(ref r) if r.contains("Resources"))
    );
}

#[test]
fn requeue_deadline_and_node_failure_states() {
    let one = |f: &str| parse_sacct(&fixture(f)).expect("parses")[0].state.clone();
    assert_eq!(one("sacct.X.requeued.txt"), SlurmState::Requeued);
    assert_eq!(one("sacct.X.deadline_begin.txt"), SlurmState::Deadline);
    assert_eq!(one("sacct.X.node_fail.txt"), SlurmState::NodeFail);
    // While requeued, squeue shows the task pending again: a result left by
    // the first run is then stale, and the benchmark is not finished.
    let q = parse_squeue(&fixture("squeue.requeued.txt")).expect("parses");
    assert_eq!(
        (q[0].state.clone(), q[0].reason.as_str()),
        (SlurmState::Pending, "BeginTime")
    );
    // A requeue-hold shows up as pending with its reason, never as a failure.
    let held = parse_squeue(&fixture("squeue.requeue_hold.txt")).expect("parses");
    assert!(held.iter().all(|r| !r.state.is_terminal()), "{held:?}");
    // Steps lost with their node record no exit code: not 0, absent.
    let steps = parse_sacct(&fixture("sacct.node_fail.txt")).expect("parses");
    let batch = steps
        .iter()
        .find(|r| r.step.as_deref() == Some("batch"))
        .expect("batch step");
    assert_eq!((batch.exit_code, batch.signal), (None, None));
}

#[test]
fn a_folded_id_stands_for_a_bounded_number_of_tasks() {
    let many = vec!["0-1000000"; 300].join(",");
    assert_eq!(split_job_id(&format!("4242_[{many}]")), None);
    let singles = (0..1_000_002)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(split_job_id(&format!("4242_[{singles}]")), None);
    let Some((_, Tasks::Many(t), _)) = split_job_id("4242_[0-999999,1000000]") else {
        panic!("a folded id at the bound parses");
    };
    assert_eq!(t.len(), 1_000_001);
}

/// The captures of array job 9 (`benchops-0123456789ab`), whose completed
/// task 0 was requeued and then ran again: (squeue, sacct -D) at each stage.
fn requeue_stage(stage: &str) -> Snapshot {
    let squeue = match stage {
        "completed" => String::new(),
        s => fixture(&format!("squeue.array_{s}.txt")),
    };
    let sacct = fixture(&format!("sacct.X.D.array_{stage}.txt"));
    Snapshot::from_text(&squeue, &sacct).expect("parses")
}

#[test]
fn a_requeued_task_is_seen_again_in_squeue_and_counted_in_accounting() {
    use benchops::classify::BackendEvidence;
    use benchops_exec::state::{BackendHandles, IndexSet, SlurmChunk, Submission};
    let chunks = vec![SlurmChunk {
        job_id: "9".into(),
        first_index: 0,
        tasks: 2,
    }];
    let sub = Submission {
        schema: "benchops-submission/v1".into(),
        benchmark: benchops::Sha256Digest::from_hex(&format!("0123456789ab{}", "0".repeat(52)))
            .expect("digest"),
        attempt: 1,
        submitted_at: "2026-12-07T08:07:46Z".into(),
        indices: IndexSet::Range { count: 2 },
        backend: BackendHandles::Slurm {
            cluster: "benchops".into(),
            chunks: chunks.clone(),
        },
    };
    let now: jiff::Timestamp = "2026-12-07T09:00:00Z".parse().expect("time");
    let stages = [
        ("completed", Some(0)),
        // Accounting has turned the first run's record into REQUEUED and
        // has none of the next run yet, even while it runs: that run
        // counts all the same.
        ("requeued", Some(1)),
        ("requeued_running_again", Some(1)),
        ("requeued_finished", Some(1)),
    ];
    for (stage, restarts) in stages {
        let snap = requeue_stage(stage);
        assert_eq!(snap.restarts(&chunks, 0, &sub), restarts, "{stage}");
        assert_eq!(snap.restarts(&chunks, 1, &sub), Some(0), "{stage}");
    }
    assert!(matches!(
        requeue_stage("requeued").evidence(&chunks, 0, now, &sub),
        BackendEvidence::Pending(ref r) if r.contains("BeginTime")
    ));
    assert_eq!(
        requeue_stage("requeued_running_again").evidence(&chunks, 0, now, &sub),
        BackendEvidence::Running
    );
    // Once it ended, the rerun's record decides, not the first run's.
    let ended = requeue_stage("requeued_finished").evidence(&chunks, 0, now, &sub);
    assert!(
        matches!(ended, BackendEvidence::FinishedFailed(ref r) if r.contains("(exit 3) FAILED")),
        "{ended:?}"
    );
    // scontrol says the same with its own count.
    let rows = scontrol_rows(&fixture("scontrol.o.array_requeued_finished.txt"));
    let restarts: Vec<(String, Option<u32>)> =
        rows.iter().map(|r| (r.id.clone(), r.restarts)).collect();
    assert_eq!(
        restarts,
        [("9_1".to_owned(), Some(0)), ("9_0".to_owned(), Some(1))]
    );
    let node_fail =
        parse_sacct(&fixture("sacct.X.D.node_fail_requeue_running_again.txt")).expect("parses");
    assert_eq!(
        node_fail.len(),
        2,
        "a node failure's requeue is a record too"
    );
}
