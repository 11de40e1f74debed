//! Reading history without jq: `benchops-publish show RECORD` (one record
//! for people, or its canonical JSON), and what `history` (in `series`)
//! and `baseline` share: where history is ([`open_history`]: the
//! repository `sweep --local DIR` writes, DIR/history.git, or `--history
//! REPO`; read, never written here), the errors of reading it
//! ([`ReadError`]), and the record lookup by digest or unique prefix
//! ([`find_record`]). Every text taken from a record goes through
//! [`benchops::terminal::escape`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchops::chart::with_unit;
use benchops::fsio::{DEFAULT_MAX_RECORD_BYTES, ReadRecordError, Symlinks, read_record_file};
use benchops::layout::RecordEntry;
use benchops::record::ResultRecord;
use benchops::seal::{SealedRecord, VerifyError, verify};
use benchops::terminal::escape;
use benchops::{LaneName, Sha256Digest};
use benchops_history::{HistoryError, LocalHistory};
use serde::Serialize;

use super::{CommandError, out};
use crate::cli::Place;
use crate::exit::OK;
use crate::text::error_line;

/// The fewest hex digits a digest prefix may have.
pub const MIN_PREFIX: usize = 4;

/// Candidates an ambiguous prefix lists at most.
const MAX_CANDIDATES: usize = 5;

/// Why a reading command (or the lookup of `baseline set`) cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No repository at the path.
    #[error(
        "{flag} {}: no history repository there ({reason}); `benchops-publish sweep --local DIR` creates DIR/history.git, or pass --history REPO",
        path.display()
    )]
    NoHistory {
        /// `--local` or `--history`.
        flag: &'static str,
        /// The repository path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The repository has no `benchmark-history` branch yet.
    #[error(
        "{flag} {}: the repository has no benchmark-history branch yet (no sweep has persisted a record)",
        path.display()
    )]
    NoBranch {
        /// `--local` or `--history`.
        flag: &'static str,
        /// The repository path.
        path: PathBuf,
    },
    /// git failed, or the branch holds what the layout does not allow.
    #[error("history repository {}: {}", path.display(), error_line(source))]
    History {
        /// The repository path.
        path: PathBuf,
        /// What failed.
        source: HistoryError,
    },
    /// RECORD is neither a file nor a digest.
    #[error(
        "RECORD {}: no such file, and not a digest (sha256:<hex>, or at least {MIN_PREFIX} hex digits)",
        escape(text)
    )]
    NotARecord {
        /// What was given.
        text: String,
    },
    /// A digest prefix too short to look up.
    #[error(
        "{flag} {}: give at least {MIN_PREFIX} hex digits of the digest",
        escape(text)
    )]
    ShortPrefix {
        /// `RECORD` or `--record`.
        flag: &'static str,
        /// What was given.
        text: String,
    },
    /// No record has the digest.
    #[error(
        "{flag} {}: no record in {} has this digest; `benchops-publish history --lane LANE` lists a lane's records",
        escape(text),
        repo.display()
    )]
    UnknownDigest {
        /// `RECORD` or `--record`.
        flag: &'static str,
        /// What was given.
        text: String,
        /// The repository.
        repo: PathBuf,
    },
    /// More than one record starts with the prefix.
    #[error(
        "{flag} {}: {count} records' digests start with it ({}{}); give more digits",
        escape(text),
        candidates.join(", "),
        if *count > candidates.len() { ", …" } else { "" }
    )]
    Ambiguous {
        /// `RECORD` or `--record`.
        flag: &'static str,
        /// What was given.
        text: String,
        /// How many records match.
        count: usize,
        /// The first of them (digest and path).
        candidates: Vec<String>,
    },
    /// A record file could not be read.
    #[error("RECORD {}", error_line(.0))]
    File(ReadRecordError),
    /// A record file is not a valid sealed record.
    #[error(
        "RECORD {}: not a valid sealed record: {}; `benchops-publish validate FILE` lists every problem",
        path.display(),
        error_line(source)
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        source: VerifyError,
    },
    /// `--lane` is not a lane name.
    #[error("--lane {}: not a lane name ({reason})", escape(text))]
    Lane {
        /// What was given.
        text: String,
        /// Why.
        reason: String,
    },
    /// The lane has no record in history.
    #[error(
        "--lane {lane}: no record of this lane in {}; lanes there: {}",
        repo.display(),
        if lanes.is_empty() { "none".to_owned() } else { lanes.join(", ") }
    )]
    NoRecords {
        /// The lane.
        lane: LaneName,
        /// The repository.
        repo: PathBuf,
        /// The lanes that have records.
        lanes: Vec<String>,
    },
    /// `--case` or `--metric` names nothing in the lane's records read.
    #[error(
        "{flag} {}: not measured in lane {lane}'s last {read} record(s); there: {}",
        escape(value),
        escape(&known.join(", "))
    )]
    NoSuchKey {
        /// `--case` or `--metric`.
        flag: &'static str,
        /// What was given.
        value: String,
        /// The lane.
        lane: LaneName,
        /// Records read.
        read: usize,
        /// What there is.
        known: Vec<String>,
    },
    /// `--svg` with more than one series.
    #[error(
        "--svg draws one series, and {count} match: pass --case and --metric (e.g. --case {} --metric {})",
        escape(case),
        escape(metric)
    )]
    SvgNeedsOne {
        /// How many series match.
        count: usize,
        /// The first one's case.
        case: String,
        /// The first one's metric.
        metric: String,
    },
    /// The SVG file could not be written.
    #[error("--svg {}: {}", path.display(), error_line(source))]
    WriteSvg {
        /// The file.
        path: PathBuf,
        /// Why.
        source: benchops::fsio::WriteError,
    },
}

/// The repository `place` names, opened for reading, with a branch.
pub fn open_history(place: &Place) -> Result<LocalHistory, ReadError> {
    let path = place.history_repo();
    let h = LocalHistory::open(&path).map_err(|e| match e {
        HistoryError::NoRepository { reason, .. } => ReadError::NoHistory {
            flag: place.flag(),
            path: path.clone(),
            reason,
        },
        source => ReadError::History {
            path: path.clone(),
            source,
        },
    })?;
    let tip = h.tip().map_err(|source| ReadError::History {
        path: path.clone(),
        source,
    })?;
    if tip.is_none() {
        return Err(ReadError::NoBranch {
            flag: place.flag(),
            path,
        });
    }
    Ok(h)
}

/// The lane `text` names, or an error naming `--lane`.
pub fn lane_arg(text: &str) -> Result<LaneName, ReadError> {
    LaneName::new(text).map_err(|e| ReadError::Lane {
        text: text.to_owned(),
        reason: e.to_string(),
    })
}

/// The hex digits of a digest or prefix (`sha256:` optional), lower case,
/// or None when `text` is not one.
fn digest_hex(text: &str) -> Option<String> {
    let hex = text.strip_prefix("sha256:").unwrap_or(text);
    (!hex.is_empty() && hex.len() <= 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

/// The record whose digest is `text` or starts with it, among `entries`
/// (`flag` names where the user wrote it).
pub fn find_record<'a>(
    entries: &'a [RecordEntry],
    text: &str,
    flag: &'static str,
    repo: &Path,
) -> Result<&'a RecordEntry, ReadError> {
    let Some(hex) = digest_hex(text) else {
        return Err(ReadError::NotARecord {
            text: text.to_owned(),
        });
    };
    if hex.len() < MIN_PREFIX {
        return Err(ReadError::ShortPrefix {
            flag,
            text: text.to_owned(),
        });
    }
    let mut found: Vec<&RecordEntry> = entries
        .iter()
        .filter(|e| e.digest.hex().starts_with(&hex))
        .collect();
    // One record is at one path; the same digest twice is one record.
    found.dedup_by_key(|e| e.digest);
    match found.as_slice() {
        [] => Err(ReadError::UnknownDigest {
            flag,
            text: text.to_owned(),
            repo: repo.to_path_buf(),
        }),
        [one] => Ok(one),
        many => Err(ReadError::Ambiguous {
            flag,
            text: text.to_owned(),
            count: many.len(),
            candidates: many
                .iter()
                .take(MAX_CANDIDATES)
                .map(|e| e.path.clone())
                .collect(),
        }),
    }
}

pub(super) fn history_err(h: &LocalHistory) -> impl Fn(HistoryError) -> ReadError + '_ {
    move |source| ReadError::History {
        path: h.path().to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------
// show

/// `benchops-publish show`.
pub(super) fn show(record: &str, place: &Place, json: bool) -> Result<u8, CommandError> {
    let path = Path::new(record);
    let sealed = if path.exists() || digest_hex(record).is_none() {
        read_file(path)?
    } else {
        let h = open_history(place)?;
        let entries = h.list_records(None).map_err(history_err(&h))?;
        let entry = find_record(&entries, record, "RECORD", h.path())?;
        h.read_record(&entry.path).map_err(history_err(&h))?
    };
    if json {
        out(format_args!(
            "{}\n",
            String::from_utf8_lossy(sealed.bytes())
        ));
    } else {
        out(render_record(&sealed));
    }
    Ok(OK)
}

/// A record file, read bounded and verified against the digest in its
/// name when it has one.
fn read_file(path: &Path) -> Result<SealedRecord, ReadError> {
    if !path.exists() {
        return Err(ReadError::NotARecord {
            text: path.display().to_string(),
        });
    }
    let bytes = read_record_file(path, DEFAULT_MAX_RECORD_BYTES, Symlinks::Resolve)
        .map_err(ReadError::File)?;
    let named = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| Sha256Digest::from_hex(s).ok());
    verify(&bytes, named.as_ref()).map_err(|source| ReadError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

/// A serde enum's name (`within_band`), for text.
fn name_of(v: &impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s.replace('_', " "),
        _ => String::new(),
    }
}

/// Left-aligned columns, two spaces apart, the last one unpadded.
pub(super) fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                let _ = write!(line, "{c:<w$}  ", w = widths[i]);
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// One record for people; see the module documentation.
pub fn render_record(sealed: &SealedRecord) -> String {
    let r = sealed.record();
    let mut s = String::new();
    let c = &r.case_counts;
    let mut head = vec![
        vec!["record".into(), sealed.digest().to_string()],
        vec!["schema".into(), escape(&r.schema)],
        vec!["lane".into(), r.lane.to_string()],
        vec!["slot".into(), escape(&r.slot)],
        vec![
            "subject".into(),
            format!(
                "{} @ {}",
                escape(&r.subject.repository),
                escape(&r.subject.commit)
            ),
        ],
        vec![
            "ran".into(),
            format!("{} to {}", escape(&r.started_at), escape(&r.finished_at)),
        ],
        vec![
            "runs".into(),
            format!("{} of {} succeeded", r.runs.succeeded, r.runs.total),
        ],
        vec![
            "cases".into(),
            format!(
                "{}: {} pass, {} drift, {} skipped, {} error",
                c.total, c.pass, c.drift, c.skipped, c.error
            ),
        ],
    ];
    if let Some(u) = &r.unscheduled {
        head.push(vec!["unscheduled".into(), escape(u)]);
    }
    head.push(vec![
        "baseline".into(),
        r.baseline.as_ref().map_or_else(
            || "none".to_owned(),
            |b| format!("{} (lane {}, slot {})", b.record, b.lane, escape(&b.slot)),
        ),
    ]);
    let cmp = r.comparison.as_ref();
    if let Some(why) = cmp.and_then(|c| c.no_baseline_reason.as_deref()) {
        head.push(vec!["not compared".into(), escape(why)]);
    }
    if let Some(m) = cmp.and_then(|c| c.confirm.as_ref()) {
        let mut t = m.mode.as_str().to_owned();
        if m.requested != m.mode {
            let _ = write!(t, " (asked for {})", m.requested.as_str());
        }
        if let Some(why) = &m.fallback_reason {
            let _ = write!(t, ": {}", escape(why));
        }
        head.push(vec!["confirmation".into(), t]);
    }
    if let Some(b) = cmp.and_then(|c| c.bisection.as_ref()) {
        let culprit = b.culprit.as_deref().map_or_else(
            || {
                format!(
                    "not found{}",
                    b.reason
                        .as_deref()
                        .map(|r| format!(" ({})", escape(r)))
                        .unwrap_or_default()
                )
            },
            escape,
        );
        head.push(vec![
            "culprit".into(),
            format!(
                "{culprit} (bisection of {} {}, {} step(s))",
                escape(b.case.as_str()),
                escape(&b.metric),
                b.steps.len()
            ),
        ]);
    }
    if let Some(p) = &r.publication.baseline_proposal {
        head.push(vec![
            "proposes".into(),
            format!(
                "itself as lane {}'s baseline ({})",
                p.lane,
                escape(&p.reason)
            ),
        ]);
    }
    s.push_str(&columns(&head));
    s.push('\n');
    s.push_str(&key_table(r));
    for d in &r.publication.drift_reports {
        let _ = writeln!(
            s,
            "drift {} {}: {}",
            escape(d.case.as_str()),
            escape(&d.metric),
            escape(&d.summary)
        );
    }
    s
}

/// Each case's metrics: the median with its unit, the baseline median and
/// the verdict with its effect (v2, v3), or the case's outcome (v1).
fn key_table(r: &ResultRecord) -> String {
    let keys: BTreeMap<(&str, &str), _> = r
        .comparison
        .iter()
        .flat_map(|c| &c.keys)
        .map(|k| ((k.case.as_str(), k.metric.as_str()), k))
        .collect();
    let mut rows = vec![vec![
        "case".to_owned(),
        "metric".to_owned(),
        "median".to_owned(),
        "baseline".to_owned(),
        "verdict".to_owned(),
    ]];
    let mut notes = String::new();
    for c in &r.cases {
        for m in &c.metrics {
            let median = m
                .summary
                .as_ref()
                .map_or_else(|| "-".to_owned(), |s| with_unit(s.median.get(), &m.unit));
            let (baseline, verdict) = match keys.get(&(c.id.as_str(), m.name.as_str())) {
                Some(k) => (
                    with_unit(k.baseline_median.get(), &m.unit),
                    format!(
                        "{} ({:+.1}%)",
                        name_of(&k.verdict),
                        k.initial.estimate.get() * 100.0
                    ),
                ),
                None => {
                    let drift = c.drift.as_ref().filter(|d| d.metric == m.name);
                    (
                        drift.map_or_else(
                            || "-".to_owned(),
                            |d| with_unit(d.baseline.median.get(), &m.unit),
                        ),
                        name_of(&c.outcome),
                    )
                }
            };
            rows.push(vec![
                escape(c.id.as_str()),
                escape(&m.name),
                escape(&median),
                escape(&baseline),
                verdict,
            ]);
        }
        if c.metrics.is_empty() {
            rows.push(vec![
                escape(c.id.as_str()),
                "-".into(),
                "-".into(),
                "-".into(),
                name_of(&c.outcome),
            ]);
        }
        if let Some(why) = &c.skip_reason {
            let _ = writeln!(notes, "{} skipped: {}", escape(c.id.as_str()), escape(why));
        }
        if let Some(e) = &c.error {
            let _ = writeln!(
                notes,
                "{} error ({}): {}",
                escape(c.id.as_str()),
                escape(&e.kind),
                escape(&e.message)
            );
        }
    }
    let mut s = columns(&rows);
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(&notes);
    }
    s
}
