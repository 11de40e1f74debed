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
//! Local repositories only: in GitHub mode the history ruleset lets only
//! the App write the branch (runbooks/baseline.md says what to do there).

use benchops::LaneName;
use benchops::layout::RecordEntry;
use benchops::receipt::BaselineDecision;
use benchops::seal::SealedRecord;
use benchops::terminal::escape;
use benchops_history::LocalHistory;

use super::read::{ReadError, find_record, lane_arg, open_history};
use super::{CommandError, load_manifest, out, print_json};
use crate::cli::{BaselineArgs, BaselineCommand};
use crate::exit::OK;
use crate::history::LocalError;
use crate::history::ReceiptBuilder;
use crate::local::{DEFAULT_LOCK_WAIT, LOCK_FILE, take_sweep_lock};
use crate::sweep::baseline::{BaselineMove, move_baseline};
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
        manifest: std::path::PathBuf,
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
    Move(crate::sweep::StepError),
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
        BaselineCommand::Show { place, lane, json } => {
            let lane = lane_arg(&lane)?;
            let h = open_history(&place)?;
            let pointer = h.baseline(&lane).map_err(|source| ReadError::History {
                path: h.path().to_path_buf(),
                source,
            })?;
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
        BaselineCommand::Set { args, record } => move_to(&args, Some(&record)),
        BaselineCommand::Reset { args } => move_to(&args, None),
    }
}

/// `set` (with a record) or `reset` (without).
fn move_to(a: &BaselineArgs, record: Option<&str>) -> Result<u8, CommandError> {
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
    let (entry, sealed) = pick(&h, &lane, record)?;
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let builder = ReceiptBuilder::new(now.clone(), now, "baseline");
    let m = BaselineMove {
        lane: lane.clone(),
        path: entry.path.clone(),
        record: sealed,
        policy,
        decision: BaselineDecision { by, reason },
    };
    let mut store = h.clone();
    let moved =
        pollster::block_on(move_baseline(&mut store, &m, &builder)).map_err(BaselineError::Move)?;
    let from = moved
        .before
        .as_ref()
        .map_or_else(|| "none".to_owned(), |p| p.record.to_string());
    match (&moved.commit, &moved.receipt_path) {
        (Some(commit), Some(receipt)) => out(format_args!(
            "lane {lane}: baseline moved from {from} to {} (slot {})\ncommit {commit} on benchmark-history (parent {}), receipt {receipt}\n",
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

/// The record `set` names (one of the lane's, fit to compare with), or for
/// `reset` the lane's newest fit record.
fn pick(
    h: &LocalHistory,
    lane: &LaneName,
    record: Option<&str>,
) -> Result<(RecordEntry, SealedRecord), CommandError> {
    let history_err = |source| ReadError::History {
        path: h.path().to_path_buf(),
        source,
    };
    match record {
        Some(text) => {
            let entries = h.list_records(None).map_err(history_err)?;
            let entry = find_record(&entries, text, "--record", h.path())?.clone();
            if entry.lane != *lane {
                return Err(BaselineError::LaneMismatch {
                    digest: entry.digest.to_string(),
                    record_lane: entry.lane,
                    lane: lane.clone(),
                }
                .into());
            }
            let sealed = h.read_record(&entry.path).map_err(history_err)?;
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
            let mut entries = h.list_records(Some(lane)).map_err(history_err)?;
            entries.sort_by(|a, b| (&a.slot, &a.path).cmp(&(&b.slot, &b.path)));
            // Newest first; a lane's records are read one at a time until a
            // fit one is found.
            for e in entries.into_iter().rev() {
                let sealed = h.read_record(&e.path).map_err(history_err)?;
                if unfit(&sealed).is_none() {
                    return Ok((e, sealed));
                }
            }
            Err(BaselineError::NoCandidate { lane: lane.clone() }.into())
        }
    }
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
