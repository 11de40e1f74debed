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
//!   again after such a close (flap). Over the whole series: issues opened
//!   again after an earlier one closed (re-opens), and for a fixed
//!   regression how many runs after the fix its issue closed.

use super::corpus::{CVS, Family, Noise, STEPS, Series};
use super::policies::{Alarm, Cost, LaneBisection, Outcome, Timing};

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
    /// For a regression that is fixed with its issue open at the fix: the
    /// lane runs from the fix to the close, the fixed run counting as 1
    /// (`None`: never closed).
    pub(crate) close_after_fix: Option<Option<usize>>,
}

/// A policy over one series, scored.
#[derive(Debug, Clone)]
pub(crate) struct SeriesScore {
    pub(crate) family: Family,
    pub(crate) noise: Noise,
    pub(crate) cv: usize,
    /// Index in [`super::corpus::Session::ALL`].
    pub(crate) session: usize,
    pub(crate) runs: usize,
    pub(crate) alarms: usize,
    pub(crate) opens: usize,
    pub(crate) true_opens: usize,
    pub(crate) duplicates: usize,
    pub(crate) confirmations: usize,
    pub(crate) cost: Cost,
    /// Issues opened after an earlier issue of the series closed.
    pub(crate) reopens: usize,
    pub(crate) bisections: Vec<LaneBisection>,
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
        .map(|(s, e)| lifecycle(out, series.runs, s, e, series.fix_run()));
    let reopens = out
        .opens
        .iter()
        .filter(|&&o| out.closes.iter().any(|&c| c <= o))
        .count();
    SeriesScore {
        family: series.family,
        noise: series.noise,
        session: series.session.index(),
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
        cost: out.cost,
        reopens,
        bisections: out.bisections.clone(),
        events,
        episode,
        first_alarm: out.alarms.iter().map(|a| a.at).min(),
        verdicts: out.verdicts,
        trace: out.trace.clone(),
    }
}

fn lifecycle(out: &Outcome, runs: usize, s: usize, e: usize, fix: Option<usize>) -> EpisodeScore {
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
        close_after_fix: fix.filter(|&f| f > 0 && state[f - 1]).map(|f| {
            out.closes
                .iter()
                .filter(|&&c| c >= f)
                .min()
                .map(|c| c - f + 1)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::corpus::{SHAPE, Session};
    use super::*;

    fn fix_series() -> Series {
        Series::new(
            Family::RegressFix,
            Noise::Normal,
            0.01,
            Session::Shift(0.02),
            SHAPE,
            3,
        )
    }

    fn outcome(opens: &[usize], closes: &[usize]) -> Outcome {
        Outcome {
            alarms: opens.iter().map(|&t| Alarm { at: t, pos: t }).collect(),
            opens: opens.to_vec(),
            closes: closes.to_vec(),
            ..Outcome::default()
        }
    }

    #[test]
    fn runs_to_close_count_the_fixed_run_as_one() {
        let s = fix_series();
        let (on, fix) = (SHAPE.onset, SHAPE.fix);
        let close = |closes: &[usize]| {
            score(&s, Timing::Online, &outcome(&[on], closes))
                .episode
                .and_then(|e| e.close_after_fix)
        };
        assert_eq!(close(&[fix]), Some(Some(1)));
        assert_eq!(close(&[fix + 1]), Some(Some(2)));
        assert_eq!(close(&[fix + 4]), Some(Some(5)));
        assert_eq!(close(&[]), Some(None), "never closed");
        // Closed before the fix: no issue was open at the fix.
        assert_eq!(close(&[on + 2]), None);
    }

    #[test]
    fn an_issue_opened_after_a_close_is_a_reopen() {
        let s = fix_series();
        let sc = score(&s, Timing::Online, &outcome(&[3, 9, 30], &[5, 12]));
        assert_eq!(sc.opens, 3);
        assert_eq!(sc.reopens, 2);
        let once = score(&s, Timing::Online, &outcome(&[3], &[5]));
        assert_eq!(once.reopens, 0);
    }
}
