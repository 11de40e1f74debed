//! Scoring one policy's outcome over one labelled series: which true
//! regressions it detected and how late, which of its announcements were
//! right, and what its issue lifecycle did while a regression held.
//!
//! - **Detection.** A regression starting at run `r` is detected when an
//!   alarm falls in `[r, w]`, `w = min(r + K, next onset − 1)`. Online
//!   policies are scored on the run where the alarm is raised. Perfherder
//!   names a past run using 11 later ones: it is scored on the run it
//!   names (allowing it to name up to 2 runs early) and its delay is when
//!   it could be known. Otava is scored on when it raises the alarm (within
//!   K runs), and the change point it names must lie in `[r − 2, w]`.
//! - **Announcements.** An issue opening. It is right when its alarm
//!   detects a regression no earlier announcement detected; every other
//!   opening (A/A, before a change, after a fix, on an improvement, a
//!   second opening for the same regression) counts against precision.
//! - **Lifecycle**, over the regression episode (the runs where the level
//!   is above where the series started): issues opened in it, whether one
//!   was closed while it held (wrong close), and whether one was opened
//!   again after such a close (flap).

use super::corpus::{CVS, Family, Noise, STEPS, Series};
use super::policies::{Alarm, Outcome, Timing};

/// Runs after a regression's start within which an alarm detects it.
pub(crate) const K: usize = 5;
/// How early a retrospective change point may be placed and still count.
pub(crate) const POSITION_SLACK: usize = 2;

/// One true regression, as a policy fared on it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventScore {
    /// Which regression of its series (0 first).
    pub(crate) order: usize,
    pub(crate) detected: bool,
    /// Runs from the start to when the detecting alarm is known.
    pub(crate) delay: Option<usize>,
}

/// The lifecycle over a regression episode.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EpisodeScore {
    /// An issue was open at some run of the episode.
    pub(crate) had_issue: bool,
    pub(crate) issues_opened: usize,
    pub(crate) wrong_closed: bool,
    pub(crate) flapped: bool,
    /// For a regression that is fixed: the issue was still open at the end
    /// of the series.
    pub(crate) left_open_after_fix: bool,
}

/// A policy over one series, scored.
#[derive(Debug, Clone)]
pub(crate) struct SeriesScore {
    pub(crate) family: Family,
    pub(crate) noise: Noise,
    pub(crate) cv: usize,
    pub(crate) runs: usize,
    pub(crate) alarms: usize,
    pub(crate) opens: usize,
    pub(crate) true_opens: usize,
    pub(crate) duplicates: usize,
    pub(crate) confirmations: usize,
    pub(crate) extra_samples: usize,
    pub(crate) events: Vec<EventScore>,
    pub(crate) episode: Option<EpisodeScore>,
    pub(crate) first_alarm: Option<usize>,
    pub(crate) verdicts: [usize; 5],
    pub(crate) trace: String,
}

impl SeriesScore {
    /// The index of the step size (`None` for other families).
    pub(crate) fn step_index(&self) -> Option<usize> {
        match self.family {
            Family::Step(s) => STEPS.iter().position(|x| (x - s.abs()).abs() < 1e-12),
            _ => None,
        }
    }

    pub(crate) fn cv_value(&self) -> f64 {
        CVS[self.cv]
    }
}

fn detects(timing: Timing, a: &Alarm, r: usize, w: usize) -> bool {
    let near = |p: usize| p + POSITION_SLACK >= r && p <= w;
    match timing {
        Timing::Online => (r..=w).contains(&a.at),
        Timing::Retrospective => near(a.pos),
        Timing::OnlineWithPosition => near(a.pos) && (r..=r + K).contains(&a.at),
    }
}

/// Scores `out` over `series`.
pub(crate) fn score(series: &Series, timing: Timing, out: &Outcome) -> SeriesScore {
    let onsets = series.onsets();
    let last = series.runs - 1;
    let windows: Vec<(usize, usize)> = onsets
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let next = onsets.get(i + 1).map_or(last, |n| n.run - 1);
            (o.run, (o.run + K).min(next).min(last))
        })
        .collect();
    let events = windows
        .iter()
        .enumerate()
        .map(|(order, &(r, w))| {
            let first = out
                .alarms
                .iter()
                .filter(|a| detects(timing, a, r, w))
                .min_by_key(|a| a.at);
            EventScore {
                order,
                detected: first.is_some(),
                delay: first.map(|a| a.at.saturating_sub(r)),
            }
        })
        .collect();
    // Announcements: each opening takes the first alarm raised at its run.
    let mut matched = vec![false; windows.len()];
    let mut true_opens = 0;
    for &o in &out.opens {
        let Some(a) = out.alarms.iter().find(|a| a.at == o) else {
            continue;
        };
        if let Some(i) = (0..windows.len())
            .find(|&i| !matched[i] && detects(timing, a, windows[i].0, windows[i].1))
        {
            matched[i] = true;
            true_opens += 1;
        }
    }
    let episode = series
        .episode()
        .map(|(s, e)| lifecycle(out, series.runs, s, e));
    SeriesScore {
        family: series.family,
        noise: series.noise,
        cv: CVS
            .iter()
            .position(|c| (c - series.cv).abs() < 1e-12)
            .unwrap_or(0),
        runs: series.runs,
        alarms: out.alarms.len(),
        opens: out.opens.len(),
        true_opens,
        duplicates: out.duplicates,
        confirmations: out.confirmations,
        extra_samples: out.extra_samples,
        events,
        episode,
        first_alarm: out.alarms.iter().map(|a| a.at).min(),
        verdicts: out.verdicts,
        trace: out.trace.clone(),
    }
}

fn lifecycle(out: &Outcome, runs: usize, s: usize, e: usize) -> EpisodeScore {
    let mut open = false;
    let mut state = vec![false; runs];
    for (t, slot) in state.iter_mut().enumerate() {
        if out.opens.contains(&t) {
            open = true;
        }
        if out.closes.contains(&t) {
            open = false;
        }
        *slot = open;
    }
    let in_ep = |t: &&usize| (s..e).contains(*t);
    let first_wrong_close = out.closes.iter().filter(in_ep).min().copied();
    EpisodeScore {
        had_issue: state[s..e].iter().any(|&o| o),
        issues_opened: out.opens.iter().filter(in_ep).count(),
        wrong_closed: first_wrong_close.is_some(),
        flapped: first_wrong_close.is_some_and(|c| out.opens.iter().any(|&o| o > c && o < e)),
        left_open_after_fix: e < runs && state[runs - 1],
    }
}
