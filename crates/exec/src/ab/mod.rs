//! `benchops-exec compare`: any two commits of a subject measured side by
//! side, interleaved in one session, and the verdict on each case and
//! metric: "did my branch make it slower?".
//!
//! * **The commits.** Both revisions are resolved in the subject's
//!   repository (`git rev-parse --verify REV^{commit}`) and exported into
//!   the state directory's cache of trees ([`crate::subject::Subjects`]).
//!   When `--subject` is a subdirectory of its checkout, each side sees the
//!   same subdirectory of its own tree.
//! * **One interleaved benchmark per suite intent** (one for `--intent`):
//!   the cases asked for, `runs` rounds of side A (the first commit) and
//!   side B (the second) after a warm-up round when the intent has
//!   warm-ups, each round's order drawn from a seed
//!   ([`crate::lane::sides::Interleave`]). Each run sees its own side's tree
//!   as `BENCHOPS_SUBJECT_DIR`. The plan depends only on the inputs, so
//!   running the same command again finds the same benchmark: it is not
//!   submitted twice, and an interrupted comparison resumes.
//! * **The verdict** of each key is [`benchops::same_session::decide`] of B
//!   against A at `confirm_level`, in the role of the point estimate's
//!   sign (a suspect regression when B looks worse, a suspect improvement
//!   otherwise), with the session's band
//!   ([`benchops::same_session::session_band`]): `slower` (a confirmed
//!   regression), `faster` (a confirmed improvement), `same` (the interval
//!   lies inside the band), `inconclusive` (it crosses an edge), or
//!   `not_compared` (a side has no sample, or a relative effect is
//!   undefined).
//! * **Honest outcome** ([`Outcome`]): a run that did not succeed, or a key
//!   that could not be compared, means the comparison was not made, whatever
//!   the other keys say.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchops::Sha256Digest;
use benchops::compare::Settings;
use benchops::plan::Plan;
use benchops::record::{RunCounts, RunSide};
use serde::Serialize;

use crate::backend::{Backend, SchedulerOptions};
use crate::bench::{self, BenchError, Status};
use crate::lane::sides::{Interleave, SideSubject};
use crate::lane::{LaneError, StageBenchmark, confirm, select};
use crate::state::{StateDir, StateError};
use crate::subject::{self, Subjects};

mod verdict;

pub use self::verdict::{
    Effect, FailedSide, KeyResult, Outcome, Report, Run, SideStats, Tally, Verdict, decide_key,
    report,
};

/// The schema of `compare --json`.
pub const SCHEMA: &str = "benchops-compare/v1";

/// The stage name the children see as `BENCHOPS_LANE_STAGE`, and the name
/// of every interval's seed.
pub const STAGE: &str = "compare";

/// Where the cases and the comparison settings come from.
#[derive(Debug, Clone)]
pub enum Suite {
    /// One benchmark intent, compared with the default settings.
    Intent(PathBuf),
    /// A lane: its suite, the cases it covers and its comparison settings.
    Lane {
        /// The schedule manifest.
        manifest: PathBuf,
        /// The lane.
        lane: String,
    },
}

/// What `compare` is asked to do.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The cases and settings.
    pub suite: Suite,
    /// The subject checkout (or a directory inside one).
    pub subject: PathBuf,
    /// Side A's revision, as given.
    pub a: String,
    /// Side B's revision, as given.
    pub b: String,
    /// Rounds per side; the settings' `confirm_runs` when `None`.
    pub runs: Option<u32>,
    /// Globs over case ids; every case when empty.
    pub cases: Vec<String>,
    /// The seed of the interleaved order; derived from both commits when
    /// `None`.
    pub seed: Option<u64>,
}

/// Why a comparison could not be planned or observed.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The subject is not a git checkout.
    #[error(
        "--subject {dir}: {reason}; compare exports both commits from the subject's repository, so give --subject a git checkout (or a directory inside one)"
    )]
    NotGit {
        /// The directory, as shown.
        dir: String,
        /// Why.
        reason: String,
    },
    /// A revision does not name a commit.
    #[error(
        "--commits: {rev} does not name a commit in the repository at {dir}{detail}; give a commit id, a branch, a tag or any revision `git rev-parse --verify REV^{{commit}}` accepts"
    )]
    UnknownRev {
        /// The revision, escaped.
        rev: String,
        /// The repository, as shown.
        dir: String,
        /// What git said, if anything (with its separator).
        detail: String,
    },
    /// A `--cases` glob is invalid, or matches nothing.
    #[error("--cases {glob}: {reason}")]
    Cases {
        /// The glob, escaped.
        glob: String,
        /// Why.
        reason: String,
    },
    /// The comparison names metrics that no case reports.
    #[error(
        "lane `{lane}` compares {missing} that no measured case reports (they report {reported}); fix `metrics` or `per_metric` in the lane's `[lanes.comparison]`"
    )]
    UnreportedMetric {
        /// The lane.
        lane: String,
        /// The missing metrics, quoted.
        missing: String,
        /// The reported metrics, quoted.
        reported: String,
    },
    /// `--runs` (or the lane's `confirm_runs`) is zero.
    #[error("--runs must be at least 1 (the lane's confirm_runs is 0)")]
    NoRuns,
    /// A side did not build with the manifest's `[build]`.
    #[error("commit {commit} did not build, so it cannot be measured: {summary}")]
    Build {
        /// The commit.
        commit: String,
        /// The build's exit and last lines.
        summary: String,
    },
    /// The suite could not be read (the lane's own errors).
    #[error(transparent)]
    Suite(#[from] LaneError),
    /// An intent could not be planned.
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// A selection failed.
    #[error(transparent)]
    Select(#[from] select::SelectError),
    /// A commit could not be exported.
    #[error(transparent)]
    Subject(#[from] subject::SubjectError),
    /// State could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
}

/// One side's commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideCommit {
    /// The revision as given (escaped for terminals).
    pub rev: String,
    /// The full commit id.
    pub commit: String,
}

/// A planned comparison: the resolved commits and the interleaved
/// benchmarks, persisted in the state directory.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The comparison's id (`BENCHOPS_LANE_RUN` of its children).
    pub id: String,
    /// The subject, absolute.
    pub subject: PathBuf,
    /// Side A.
    pub a: SideCommit,
    /// Side B.
    pub b: SideCommit,
    /// Rounds per side.
    pub runs: u32,
    /// The seed of the interleaved order.
    pub seed: u64,
    /// The comparison settings.
    pub settings: Settings,
    /// The lane, when the settings are a lane's.
    pub lane: Option<String>,
    /// The benchmarks, one per suite intent with a case to compare.
    pub stages: Vec<StageBenchmark>,
}

fn io_path(p: &Path) -> String {
    benchops::terminal::shown_path(p)
}

/// The full commit id `rev` names in the repository at `dir`
/// ([`subject::resolve_rev`]), or the error that names `--commits`.
pub fn resolve_rev(dir: &Path, rev: &str) -> Result<String, CompareError> {
    subject::resolve_rev(dir, rev).map_err(|detail| CompareError::UnknownRev {
        rev: benchops::excerpt::quote(rev),
        dir: io_path(dir),
        detail,
    })
}

/// Refuses a subject that is not a git checkout; returns its path inside
/// the checkout (`""` at the top, `sub/dir/` below).
fn check_subject(dir: &Path) -> Result<String, CompareError> {
    let not_git = |reason: String| CompareError::NotGit {
        dir: io_path(dir),
        reason,
    };
    if !dir.is_dir() {
        return Err(not_git("no such directory".into()));
    }
    if !subject::is_git_checkout(dir) {
        return Err(not_git("it is not a git checkout".into()));
    }
    subject::checkout_prefix(dir)
        .map_err(|e| not_git(format!("git could not be run: {e}")))?
        .ok_or_else(|| not_git("it is inside a git directory but not a work tree".into()))
}

/// The suite's plans (name and plan), the settings, the case filter and
/// the lane's name.
type Loaded = (
    Vec<(String, Plan)>,
    Settings,
    Option<benchops::manifest::Lane>,
    Option<benchops::manifest::SubjectBuild>,
);

fn load(suite: &Suite) -> Result<Loaded, CompareError> {
    match suite {
        Suite::Intent(path) => {
            let (plan, _, _) = bench::plan_file(path)?;
            Ok((
                vec![(path.display().to_string(), plan)],
                Settings::default(),
                None,
                None,
            ))
        }
        Suite::Lane { manifest, lane } => {
            let (m, _) = crate::lane::load_manifest(manifest)?;
            let found = crate::lane::find_lane(&m, manifest, lane)?;
            let plans = crate::lane::load_suite(&m, manifest)?;
            if !plans
                .iter()
                .any(|(_, p)| p.cases().any(|c| found.covers(c.as_str())))
            {
                return Err(LaneError::NothingCovered(lane.clone()).into());
            }
            Ok((
                plans,
                found.comparison_settings(),
                Some(found.clone()),
                m.manifest.build.clone(),
            ))
        }
    }
}

/// The cases to compare: those the lane covers (every case of an intent)
/// that some glob matches (every one without globs). A glob that is
/// invalid or matches none of them is refused.
fn chosen_cases(
    plans: &[(String, Plan)],
    lane: Option<&benchops::manifest::Lane>,
    globs: &[String],
) -> Result<BTreeSet<String>, CompareError> {
    let covered: Vec<String> = plans
        .iter()
        .flat_map(|(_, p)| p.cases().map(|c| c.to_string()))
        .filter(|c| lane.is_none_or(|l| l.covers(c)))
        .collect();
    if globs.is_empty() {
        return Ok(covered.into_iter().collect());
    }
    let mut keep = BTreeSet::new();
    for g in globs {
        let err = |reason: String| CompareError::Cases {
            glob: benchops::excerpt::quote(g),
            reason,
        };
        let m = globset::Glob::new(g)
            .map_err(|e| err(format!("not a glob ({})", e.kind())))?
            .compile_matcher();
        let hits: Vec<&String> = covered.iter().filter(|c| m.is_match(c.as_str())).collect();
        if hits.is_empty() {
            let shown: Vec<String> = covered
                .iter()
                .take(10)
                .map(|c| benchops::terminal::escape(c))
                .collect();
            return Err(err(format!(
                "matches none of the cases ({}{}); `*` matches any run of characters, `/` included",
                shown.join(", "),
                if covered.len() > 10 { ", …" } else { "" }
            )));
        }
        keep.extend(hits.into_iter().cloned());
    }
    Ok(keep)
}

/// The default seed of the interleaved order: from both commits, so the
/// same two commits run in the same order.
pub fn default_seed(a: &str, b: &str) -> u64 {
    confirm::seed_of(&format!("{a}..{b}"), STAGE)
}

/// Resolves both commits, exports them, and plans and persists the
/// interleaved benchmarks (nothing is submitted).
pub fn plan(state: &StateDir, opts: &CompareOptions) -> Result<Planned, CompareError> {
    let prefix = check_subject(&opts.subject)?;
    let a = resolve_rev(&opts.subject, &opts.a)?;
    let b = resolve_rev(&opts.subject, &opts.b)?;
    let (plans, settings, lane, build) = load(&opts.suite)?;
    let keep = chosen_cases(&plans, lane.as_ref(), &opts.cases)?;
    let runs = opts.runs.unwrap_or(settings.confirm_runs);
    if runs == 0 {
        return Err(CompareError::NoRuns);
    }
    let seed = opts.seed.unwrap_or_else(|| default_seed(&a, &b));
    let subjects = Subjects::new(state);
    let tree = |commit: &str| -> Result<PathBuf, CompareError> {
        let dir = subjects.materialise(&opts.subject, commit)?;
        if let Some(build) = &build {
            let built = subjects.build(&dir, commit, build)?;
            if !built.ok {
                return Err(CompareError::Build {
                    commit: commit.to_owned(),
                    summary: built.summary,
                });
            }
        }
        Ok(dir.join(&prefix))
    };
    let a_dir = tree(&a)?;
    let b_dir = tree(&b)?;
    let _ = subjects.prune(subject::DEFAULT_KEEP, &[a.as_str(), b.as_str()]);
    let id = Sha256Digest::of(&benchops::jcs::canonical_bytes(&serde_json::json!({
        "schema": "benchops-compare-id/v1",
        "a": a,
        "b": b,
        "prefix": prefix,
        "runs": runs,
        "seed": seed,
        "cases": keep,
        "suite": plans.iter().map(|(n, p)| serde_json::json!([n, p.intent().digest.to_string()])).collect::<Vec<_>>(),
    })))
    .hex();
    let side = |side, dir: &Path, commit: &str| SideSubject {
        side,
        dir: dir.display().to_string(),
        commit: commit.to_owned(),
    };
    let mut stages = Vec::new();
    for (name, plan) in &plans {
        let interleave = Interleave::new(
            vec![side(RunSide::A, &a_dir, &a), side(RunSide::B, &b_dir, &b)],
            runs,
            plan.intent().intent.warmup.min(1),
            seed,
        );
        let spec = select::StageSpec {
            lane_run: &id,
            stage: STAGE,
            repetitions: None,
            subject: None,
            interleave: Some(&interleave),
        };
        let Some(sel) = select::select(plan, |c| keep.contains(c.as_str()), spec, name)? else {
            continue;
        };
        stages.push(crate::lane::stages::persist(state, name, &sel)?);
    }
    let subject_abs = std::path::absolute(&opts.subject).unwrap_or_else(|_| opts.subject.clone());
    Ok(Planned {
        id,
        subject: subject_abs,
        a: SideCommit {
            rev: benchops::terminal::escape_bounded(&opts.a, 200),
            commit: a,
        },
        b: SideCommit {
            rev: benchops::terminal::escape_bounded(&opts.b, 200),
            commit: b,
        },
        runs,
        seed,
        settings,
        lane: lane.map(|l| l.name.to_string()),
        stages,
    })
}

/// One benchmark of a comparison, submitted now or before.
#[derive(Debug)]
pub struct Launched {
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Its intent, as the suite names it.
    pub intent: String,
    /// Its children.
    pub children: u64,
    /// What the submission said; `None` when it had been submitted before
    /// (the comparison resumes).
    pub note: Option<String>,
    /// Local workers started now, to reap.
    pub processes: Vec<std::process::Child>,
    /// How often to look.
    pub poll: Duration,
}

/// Submits every benchmark of `planned` that has no submission yet.
pub fn submit(
    state: &StateDir,
    planned: &Planned,
    backend: &Backend,
) -> Result<Vec<Launched>, CompareError> {
    let resumed_poll = match backend {
        Backend::Local(_) => Duration::from_millis(200),
        Backend::Slurm(_) => Duration::from_secs(2),
    };
    let mut out = Vec::new();
    for s in &planned.stages {
        if !state.submissions(&s.benchmark)?.is_empty() {
            out.push(Launched {
                benchmark: s.benchmark,
                intent: s.intent.clone(),
                children: s.children,
                note: None,
                processes: Vec::new(),
                poll: resumed_poll,
            });
            continue;
        }
        let (_, plan) = state.load_plan(&s.benchmark)?;
        let sub = bench::submit_planned(state, s.benchmark, &plan, backend)?;
        out.push(Launched {
            benchmark: s.benchmark,
            intent: s.intent.clone(),
            children: s.children,
            note: Some(sub.note),
            processes: sub.processes,
            poll: sub.poll,
        });
    }
    Ok(out)
}

fn add(total: &mut RunCounts, c: &RunCounts) {
    total.total += c.total;
    total.succeeded += c.succeeded;
    total.failed += c.failed;
    total.incomplete += c.incomplete;
    total.missing += c.missing;
    total.stale += c.stale;
    total.scheduler_inconsistent += c.scheduler_inconsistent;
}

/// Waits until every child of every launched benchmark is terminal (and
/// every local worker started now has exited), as `bench run` does;
/// `on_look` sees the counts over all of them at every look. Returns the
/// last look of each.
pub fn wait(
    state: &StateDir,
    launched: Vec<Launched>,
    scheduler: &SchedulerOptions,
    mut on_look: impl FnMut(&RunCounts),
) -> Result<Vec<Status>, CompareError> {
    let mut counts: Vec<RunCounts> = launched
        .iter()
        .map(|l| RunCounts {
            total: l.children,
            incomplete: l.children,
            ..RunCounts::default()
        })
        .collect();
    let mut out = Vec::new();
    for (k, l) in launched.into_iter().enumerate() {
        let status =
            crate::watch::wait(state, &l.benchmark, l.processes, l.poll, scheduler, |s| {
                counts[k] = s.counts;
                let mut sum = RunCounts::default();
                for c in &counts {
                    add(&mut sum, c);
                }
                on_look(&sum);
            })?;
        out.push(status);
    }
    Ok(out)
}
