//! `benchops-publish baseline show|set|reset --lane L`: a lane's baseline
//! pointer read, or moved by a person in place of a hand-written pointer
//! and commit. The move itself is the sweep engine's
//! ([`crate::sweep::baseline::move_baseline`]): one commit with a receipt
//! naming who and why, the branch moved by compare-and-swap, never forced.
//! This module checks what the person asked for first: the lane is declared
//! in the manifest (whose policy the pointer records), the record is one of
//! the lane's records in history, and its child runs all succeeded with no
//! case in error. With `--local DIR` it holds the sweep lock, so no sweep of
//! DIR runs meanwhile.
//!
//! In GitHub mode (`--github --repo`) the same steps run over the sweep's
//! GitHub store ([`crate::github::contents_store`]) with one contents-phase
//! installation token, minted from the App key or the token service as the
//! sweep's is and revoked at the end: the App is the branch's only writer,
//! so the move is the App's commit and the receipt names the person.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use benchops::LaneName;
use benchops::layout::{self, HISTORY_BRANCH, RecordEntry};
use benchops::manifest::BaselinePolicy;
use benchops::receipt::BaselineDecision;
use benchops::seal::SealedRecord;
use benchops::terminal::escape;
use benchops_history::LocalHistory;

use super::read::{ReadError, find_record, lane_arg, open_history};
use super::{CommandError, load_manifest, note, out, print_json};
use crate::cli::{BaselineArgs, BaselineCommand, Remote};
use crate::exit::OK;
use crate::github::GitHubStore;
use crate::history::LocalError;
use crate::history::ReceiptBuilder;
use crate::local::{DEFAULT_LOCK_WAIT, LOCK_FILE, take_sweep_lock};
use crate::sweep::baseline::{BaselineMove, BaselineMoved, move_baseline};
use crate::sweep::persist::pointers_at;
use crate::sweep::{Cause, HistoryStore, StepError, TipIndex};
use crate::text::error_line;

/// The longest `--reason` and `--actor` kept (the receipt's limits).
const MAX_REASON: usize = 2000;
const MAX_ACTOR: usize = 200;

/// Why `baseline set` or `reset` refused.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// No `--reason`.
    #[error(
        "--reason is required: say why the pointer moves (the receipt keeps it), e.g. --reason 'drift #12 accepted'"
    )]
    NoReason,
    /// `--reason` or `--actor` is empty or too long.
    #[error("{flag}: {why}")]
    BadText {
        /// The flag.
        flag: &'static str,
        /// Why.
        why: String,
    },
    /// Nobody to name.
    #[error(
        "say who moves the pointer: pass --actor NAME (or set GITHUB_ACTOR, or git's user.name)"
    )]
    NoActor,
    /// The lane is not in the manifest.
    #[error(
        "--lane {lane}: not a lane of --manifest {}; the sweep never reads a pointer of an undeclared lane",
        manifest.display()
    )]
    NotInManifest {
        /// The lane.
        lane: LaneName,
        /// The manifest.
        manifest: PathBuf,
    },
    /// The record belongs to another lane.
    #[error("--record {digest} is a record of lane {record_lane}, not of --lane {lane}")]
    LaneMismatch {
        /// The record.
        digest: String,
        /// Its lane.
        record_lane: LaneName,
        /// The lane asked for.
        lane: LaneName,
    },
    /// The record is not fit to compare with.
    #[error(
        "--record {digest}: {why}; a baseline's samples are the reference for every later comparison, so pick a record whose runs all succeeded with no case in error (`benchops-publish show DIGEST`)"
    )]
    Unfit {
        /// The record.
        digest: String,
        /// Why.
        why: String,
    },
    /// `reset` found no record to point at.
    #[error(
        "--lane {lane}: none of its records in history had every child run succeed with no case in error; pick one with `baseline set --record`"
    )]
    NoCandidate {
        /// The lane.
        lane: LaneName,
    },
    /// The sweep lock or the engine stopped it.
    #[error("{}", error_line(.0))]
    Local(LocalError),
    /// The move stopped: the step and why.
    #[error("{}: {}", .0.step, error_line(&*.0.cause))]
    Move(StepError),
}

/// Why `record` is no baseline, or None when it is fit.
fn unfit(record: &SealedRecord) -> Option<String> {
    let r = record.record();
    if r.runs.succeeded != r.runs.total || r.runs.total == 0 {
        return Some(format!(
            "{} of its {} child runs succeeded",
            r.runs.succeeded, r.runs.total
        ));
    }
    (r.case_counts.error > 0).then(|| format!("{} case(s) in error", r.case_counts.error))
}

/// Who moves the pointer: `--actor`, `$GITHUB_ACTOR`, or git's identity.
fn actor(given: Option<&str>) -> Result<String, BaselineError> {
    if let Some(a) = given {
        return bounded("--actor", a, MAX_ACTOR);
    }
    if let Ok(a) = std::env::var("GITHUB_ACTOR")
        && !a.trim().is_empty()
    {
        return bounded("--actor", &a, MAX_ACTOR);
    }
    let git = |key: &str| {
        std::process::Command::new("git")
            .args(["config", "--get", key])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    match (git("user.name"), git("user.email")) {
        (Some(n), Some(e)) => bounded("--actor", &format!("{n} <{e}>"), MAX_ACTOR),
        (Some(n), None) => bounded("--actor", &n, MAX_ACTOR),
        _ => Err(BaselineError::NoActor),
    }
}

/// `text` trimmed, when it is not empty and at most `max` characters.
fn bounded(flag: &'static str, text: &str, max: usize) -> Result<String, BaselineError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(BaselineError::BadText {
            flag,
            why: "is empty".into(),
        });
    }
    if t.chars().count() > max {
        return Err(BaselineError::BadText {
            flag,
            why: format!("longer than {max} characters"),
        });
    }
    Ok(t.to_owned())
}

/// `benchops-publish baseline …`.
pub(super) fn baseline(command: BaselineCommand) -> Result<u8, CommandError> {
    match command {
        BaselineCommand::Show {
            place,
            remote,
            lane,
            json,
        } => {
            let lane = lane_arg(&lane)?;
            let pointer = if remote.github {
                let lanes = BTreeSet::from([lane.clone()]);
                in_phase(
                    || github_store(remote),
                    async |s: &mut GitHubStore| {
                        let tip = s.tip().await.map_err(BaselineError::Move)?;
                        let mut at = pointers_at(s, &tip, &lanes)
                            .await
                            .map_err(BaselineError::Move)?;
                        Ok(at.remove(&lane).flatten())
                    },
                )?
            } else {
                let h = open_history(&place)?;
                h.baseline(&lane).map_err(|source| ReadError::History {
                    path: h.path().to_path_buf(),
                    source,
                })?
            };
            if json {
                print_json(&pointer)?;
            } else {
                out(match &pointer {
                    None => format!(
                        "lane {lane}: no baseline pointer (baselines/{lane}.json); its next record that proposes itself sets one on a last-clean lane, or use `baseline set`\n"
                    ),
                    Some(p) => format!(
                        "lane {lane}\nrecord    {}\nslot      {}\npath      {}\npolicy    {}\nprevious  {}\n",
                        p.record,
                        escape(&p.slot),
                        escape(&p.path),
                        serde_json::to_value(p.policy)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default(),
                        p.previous
                            .map_or_else(|| "none".to_owned(), |d| d.to_string())
                    ),
                });
            }
            Ok(OK)
        }
        BaselineCommand::Set { args, record } => move_to(args, Some(&record)),
        BaselineCommand::Reset { args } => move_to(args, None),
    }
}

/// The GitHub store `--github` names (contents phase; not begun).
fn github_store(remote: Remote) -> Result<GitHubStore, CommandError> {
    let access = super::github_access(remote.auth).ok_or(CommandError::GitHubCredentials)?;
    crate::github::contents_store(&access).map_err(|e| BaselineError::Move(e).into())
}

/// Runs `work` on `store` between its phase's `begin` (which mints the
/// contents-phase token in GitHub mode) and `end` (which revokes it, also
/// when `work` failed).
/// `open` builds the store inside the runtime (a GitHub client needs one).
fn in_phase<S: HistoryStore, T>(
    open: impl FnOnce() -> Result<S, CommandError>,
    work: impl AsyncFnOnce(&mut S) -> Result<T, CommandError>,
) -> Result<T, CommandError> {
    crate::sweep::block_on(async {
        let mut store = open()?;
        let store = &mut store;
        store.begin().await.map_err(BaselineError::Move)?;
        let done = work(store).await;
        let ended = store.end().await;
        match (done, ended) {
            (Err(e), _) => Err(e),
            (Ok(v), Ok(())) => Ok(v),
            (Ok(v), Err(e)) => {
                // What was asked is done; a token that outlives its phase
                // expires within the hour.
                note(format_args!(
                    "warning: {}: {}\n",
                    e.step,
                    error_line(&*e.cause)
                ));
                Ok(v)
            }
        }
    })
    .map_err(BaselineError::Move)?
}

/// `set` (with a record) or `reset` (without).
fn move_to(a: BaselineArgs, record: Option<&str>) -> Result<u8, CommandError> {
    let lane = lane_arg(&a.lane)?;
    let reason = bounded(
        "--reason",
        a.reason.as_deref().ok_or(BaselineError::NoReason)?,
        MAX_REASON,
    )?;
    let by = actor(a.actor.as_deref())?;
    let manifest = load_manifest(&a.manifest)?;
    let Some(policy) = manifest
        .lanes
        .iter()
        .find(|l| l.name == lane)
        .map(|l| l.baseline)
    else {
        return Err(BaselineError::NotInManifest {
            lane,
            manifest: a.manifest.clone(),
        }
        .into());
    };
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let mut builder = ReceiptBuilder::new(now.clone(), now, "baseline");
    let ask = Ask {
        lane: lane.clone(),
        record,
        policy,
        decision: BaselineDecision { by, reason },
    };
    let (moved, branch) = if a.remote.github {
        builder.sweep.workflow_run = crate::github::actions_context_from_env().1;
        in_phase(
            || github_store(a.remote),
            async |s: &mut GitHubStore| {
                let place = s.describe();
                Ok((ask.run(s, Path::new(&place), &builder).await?, place))
            },
        )?
    } else {
        let h = open_history(&a.place)?;
        // With --local, no sweep of DIR runs while the pointer moves.
        let _lock = match a.place.sweep_dir() {
            Some(dir) => Some(
                take_sweep_lock(&dir.join(LOCK_FILE), DEFAULT_LOCK_WAIT, &mut |m| {
                    eprintln!("baseline: {m}")
                })
                .map_err(BaselineError::Local)?,
            ),
            None => None,
        };
        let place = h.path().to_path_buf();
        let moved = in_phase(
            || Ok(h.clone()),
            async |s: &mut LocalHistory| ask.run(s, &place, &builder).await,
        )?;
        (moved, HISTORY_BRANCH.to_owned())
    };
    let from = moved
        .before
        .as_ref()
        .map_or_else(|| "none".to_owned(), |p| p.record.to_string());
    match (&moved.commit, &moved.receipt_path) {
        (Some(commit), Some(receipt)) => out(format_args!(
            "lane {lane}: baseline moved from {from} to {} (slot {})\ncommit {commit} on {branch} (parent {}), receipt {receipt}\n",
            moved.pointer.record,
            escape(&moved.pointer.slot),
            moved.parent.as_deref().unwrap_or("none"),
        )),
        _ => out(format_args!(
            "lane {lane}: baseline already points at {} (slot {}); nothing written\n",
            moved.pointer.record,
            escape(&moved.pointer.slot)
        )),
    }
    Ok(OK)
}

/// What `set` or `reset` asks for, checked against the store's tip.
struct Ask<'a> {
    lane: LaneName,
    /// `set`'s record; None: `reset`.
    record: Option<&'a str>,
    policy: BaselinePolicy,
    decision: BaselineDecision,
}

impl Ask<'_> {
    /// Picks the record on `store`'s tip and moves the pointer there
    /// (`place` names the store in messages).
    async fn run<S: HistoryStore>(
        &self,
        store: &mut S,
        place: &Path,
        builder: &ReceiptBuilder,
    ) -> Result<BaselineMoved, CommandError> {
        let (entry, sealed) = self.pick(store, place).await?;
        let m = BaselineMove {
            lane: self.lane.clone(),
            path: entry.path.clone(),
            record: sealed,
            policy: self.policy,
            decision: self.decision.clone(),
        };
        move_baseline(store, &m, builder)
            .await
            .map_err(|e| BaselineError::Move(e).into())
    }

    /// The record `set` names (one of the lane's, fit to compare with), or
    /// for `reset` the lane's newest fit record.
    async fn pick<S: HistoryStore>(
        &self,
        store: &mut S,
        place: &Path,
    ) -> Result<(RecordEntry, SealedRecord), CommandError> {
        let lane = &self.lane;
        let tip = store.tip().await.map_err(BaselineError::Move)?;
        let entries: Vec<RecordEntry> = tip
            .files
            .range(layout::RESULTS_DIR.to_owned()..)
            .take_while(|(p, _)| p.starts_with(layout::RESULTS_DIR))
            .filter_map(|(p, _)| RecordEntry::parse(p).ok())
            .collect();
        match self.record {
            Some(text) => {
                let entry = find_record(&entries, text, "--record", place)?.clone();
                if entry.lane != *lane {
                    return Err(BaselineError::LaneMismatch {
                        digest: entry.digest.to_string(),
                        record_lane: entry.lane,
                        lane: lane.clone(),
                    }
                    .into());
                }
                let sealed = read_one(store, &tip, &entry).await?;
                if let Some(why) = unfit(&sealed) {
                    return Err(BaselineError::Unfit {
                        digest: entry.digest.to_string(),
                        why,
                    }
                    .into());
                }
                Ok((entry, sealed))
            }
            None => {
                let mut entries: Vec<RecordEntry> =
                    entries.into_iter().filter(|e| e.lane == *lane).collect();
                entries.sort_by(|a, b| (&a.slot, &a.path).cmp(&(&b.slot, &b.path)));
                // Newest first; a lane's records are read one at a time
                // until a fit one is found.
                for e in entries.into_iter().rev() {
                    let sealed = read_one(store, &tip, &e).await?;
                    if unfit(&sealed).is_none() {
                        return Ok((e, sealed));
                    }
                }
                Err(BaselineError::NoCandidate { lane: lane.clone() }.into())
            }
        }
    }
}

/// The record at `entry` of `tip`, verified against the digest its name
/// carries and checked to belong at its path.
async fn read_one<S: HistoryStore>(
    store: &mut S,
    tip: &TipIndex,
    entry: &RecordEntry,
) -> Result<SealedRecord, CommandError> {
    let corrupt = |reason: String| {
        BaselineError::Move(StepError::new(
            format!("read {}", entry.path),
            Cause::CorruptHistory {
                path: entry.path.clone(),
                reason,
            },
        ))
    };
    let blob = tip
        .files
        .get(&entry.path)
        .ok_or_else(|| corrupt("not on the tip".to_owned()))?;
    let verdict = store
        .read_records(tip, &[(entry.path.as_str(), blob.as_str(), &entry.digest)])
        .await
        .map_err(BaselineError::Move)?
        .pop()
        .ok_or_else(|| corrupt("not read".to_owned()))?;
    let sealed = verdict.map_err(|e| corrupt(format!("does not hold a valid record: {e}")))?;
    let r = sealed.record();
    if let Some(why) = entry.misplaced(&r.lane, &r.slot) {
        return Err(corrupt(why).into());
    }
    Ok(sealed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_and_actors_are_trimmed_and_bounded() {
        assert_eq!(
            bounded("--reason", "  accepted  ", 20).expect("ok"),
            "accepted"
        );
        assert!(matches!(
            bounded("--reason", "   ", 20),
            Err(BaselineError::BadText {
                flag: "--reason",
                ..
            })
        ));
        assert!(bounded("--actor", &"x".repeat(21), 20).is_err());
        assert_eq!(actor(Some(" octocat ")).expect("given"), "octocat");
    }
}
