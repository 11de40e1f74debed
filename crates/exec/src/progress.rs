//! The progress bars of long waits (`bench run`, `compare`, `lane run
//! --wait`, `lane bisect --wait`) on standard error: the children in a
//! terminal class out of all, the time elapsed, the time left where it can
//! be estimated, then the counts (or the lane's phase):
//! `████░░░░ 4/6 00:00:03 elapsed  ~00:00:02 left  ok 4 failed 0 other 0`.
//!
//! The estimate comes from the children that finished while this process
//! watched: the time since it started watching the stage, over the
//! children that became terminal since, times the children still left. No
//! child finished yet (or a new stage just began) means no estimate, never
//! a guess. A bar never shows with `--quiet`, and indicatif draws nothing
//! when standard error is not a terminal.

use std::cell::{Cell, OnceCell};
use std::time::{Duration, Instant};

use crate::bench::Status;

/// The time left for `left` children when `done` children became terminal
/// in `elapsed`: `None` until one did, or when none is left.
pub fn remaining(elapsed: Duration, done: u64, left: u64) -> Option<Duration> {
    if done == 0 || left == 0 {
        return None;
    }
    let secs = elapsed.as_secs_f64() * left as f64 / done as f64;
    Duration::try_from_secs_f64(secs).ok()
}

/// A duration as `HH:MM:SS`, as the bar's elapsed time reads.
pub fn hms(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// What the bar says after the elapsed time: `  ~HH:MM:SS left` (whole
/// seconds, rounded up), or nothing.
pub fn left_text(left: Option<Duration>) -> String {
    left.map_or_else(String::new, |d| {
        let up = Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0));
        format!("  ~{} left", hms(up))
    })
}

/// Where the estimate of one stage starts: its length, the children that
/// were terminal then, and when.
#[derive(Debug, Clone, Copy)]
struct Since {
    total: u64,
    done: u64,
    at: Instant,
}

/// One bar with its estimate.
#[derive(Debug, Default)]
struct Bar {
    bar: OnceCell<indicatif::ProgressBar>,
    since: Cell<Option<Since>>,
}

impl Bar {
    /// Creates the bar (not with `--quiet`).
    fn start(&self, total: u64) {
        if benchops_cli::output::quiet() {
            return;
        }
        self.bar.get_or_init(|| {
            let pb = indicatif::ProgressBar::new(total.max(1));
            pb.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:20} {pos}/{len} {elapsed_precise} elapsed{msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            // The elapsed time moves between looks.
            pb.enable_steady_tick(Duration::from_secs(1));
            pb
        });
    }

    /// Shows `done` of `total` and `what`, with the estimate.
    fn set(&self, done: u64, total: u64, what: &str) {
        let Some(pb) = self.bar.get() else {
            return;
        };
        pb.set_length(total.max(1));
        pb.set_position(done);
        let now = Instant::now();
        let since = match self.since.get() {
            Some(s) if s.total == total && s.done <= done => s,
            _ => {
                let s = Since {
                    total,
                    done,
                    at: now,
                };
                self.since.set(Some(s));
                s
            }
        };
        let left = remaining(
            now.duration_since(since.at),
            done - since.done,
            total.saturating_sub(done),
        );
        pb.set_message(format!("{}  {what}", left_text(left)));
    }

    fn finish(&self) {
        if let Some(pb) = self.bar.get() {
            pb.finish_and_clear();
        }
    }
}

/// The progress bar of `bench run` and `compare`: children in a terminal
/// class out of all, and the successes and failures so far. It appears
/// when the submission is known and disappears when finished.
#[derive(Debug, Default)]
pub struct Progress {
    bar: Bar,
}

impl Progress {
    /// A progress bar that is not shown yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shows the bar for `children` children (not with `--quiet`).
    pub fn start(&self, children: u64) {
        self.bar.start(children);
    }

    /// Shows one look.
    pub fn update(&self, status: &Status) {
        self.counts(&status.counts);
    }

    /// Shows the counts of one look (over one benchmark, or several).
    pub fn counts(&self, c: &benchops::record::RunCounts) {
        let done = c.total - c.incomplete;
        self.bar.set(
            done,
            c.total,
            &format!(
                "ok {} failed {} other {}",
                c.succeeded,
                c.failed,
                done - c.succeeded - c.failed
            ),
        );
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish();
    }
}

/// The progress bar of `lane run --wait` and `lane bisect --wait`: the
/// current stage's children in a terminal class out of all, and the phase.
#[derive(Debug, Default)]
pub struct LaneProgress {
    bar: Bar,
}

impl LaneProgress {
    /// A bar that is not shown yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shows one look (nothing with `--quiet`).
    pub fn update(&self, s: &crate::lane::LaneStatus) {
        let (mut done, mut total) = (0u64, 0u64);
        for b in &s.stage {
            if let Some(c) = &b.counts {
                total += c.total;
                done += c.total - c.incomplete;
            }
        }
        self.bar.start(total);
        self.bar.set(done, total, &s.execution.phase.to_string());
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_comes_from_finished_children_only() {
        let s = Duration::from_secs;
        assert_eq!(remaining(s(30), 3, 9), Some(s(90)));
        assert_eq!(remaining(s(30), 0, 9), None, "nothing finished yet");
        assert_eq!(remaining(s(30), 3, 0), None, "nothing left");
        assert_eq!(left_text(remaining(s(10), 4, 2)), "  ~00:00:05 left");
        assert_eq!(
            left_text(Some(Duration::from_millis(200))),
            "  ~00:00:01 left",
            "never 0 while a child is left"
        );
        assert_eq!(left_text(None), "");
        assert_eq!(hms(s(3_725)), "01:02:05");
    }

    #[test]
    fn a_new_stage_starts_a_new_estimate() {
        let b = Bar::default();
        // No bar without start: set does nothing.
        b.set(1, 4, "x");
        assert!(b.since.get().is_none());
        b.start(4);
        if b.bar.get().is_none() {
            return; // --quiet in this process
        }
        b.set(1, 4, "measuring");
        let first = b.since.get().expect("since");
        assert_eq!((first.total, first.done), (4, 1));
        b.set(3, 4, "measuring");
        assert_eq!(b.since.get().map(|s| s.done), Some(1), "same stage");
        b.set(0, 6, "confirming");
        let next = b.since.get().expect("since");
        assert_eq!((next.total, next.done), (6, 0), "a new stage resets it");
        b.finish();
    }
}
