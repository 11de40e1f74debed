//! The one rule for a sealed file and its name ([`verify_named`]): its
//! bytes verified against the digest its name claims. `validate`, directory
//! handoffs and handoff refs all use it, so they give the same verdicts with
//! the same messages ([`IssueOut`]). Also how a refused read is reported
//! ([`read_issue`]), and many records verified on every core
//! ([`verify_all`]). A leaf: it depends on no other module of the crate.

use std::path::Path;

use benchops::Sha256Digest;
use benchops::digest::DigestParseError;
use benchops::fsio::ReadRecordError;
use benchops::seal::{IssueKind, SealedRecord, VerifyError, VerifyIssue, verify};
use serde::Serialize;

/// One problem, as printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IssueOut {
    /// Its class (`not-canonical`, `schema`, ...).
    pub kind: String,
    /// JSON path.
    pub path: String,
    /// Why.
    pub reason: String,
}

impl From<&VerifyIssue> for IssueOut {
    fn from(i: &VerifyIssue) -> Self {
        IssueOut {
            kind: i.kind.to_string(),
            path: i.path.to_string(),
            reason: i.reason.clone(),
        }
    }
}

/// The most threads [`verify_all`] uses.
const VERIFY_THREADS: usize = 8;

/// Below this many records [`verify_all`] stays on the calling thread.
const VERIFY_PARALLEL_FROM: usize = 256;

/// [`verify`] over many records, in input order, on as many threads as the
/// machine offers (at most 8): reading history back verifies every record
/// in it, and each verification is independent. Each item is the bytes and
/// the digest they must have, if known.
pub fn verify_all(
    items: &[(&[u8], Option<&Sha256Digest>)],
) -> Vec<Result<SealedRecord, VerifyError>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(VERIFY_THREADS);
    if threads < 2 || items.len() < VERIFY_PARALLEL_FROM {
        return items.iter().map(|(b, d)| verify(b, *d)).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || part.iter().map(|(b, d)| verify(b, *d)).collect::<Vec<_>>())
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(v) => v,
                // verify answers bad bytes with an error; a panic in a
                // worker reaches the caller as it would on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// The digest a sealed file's name claims: `<hex>.json` or
/// `<anything>--<hex>.json`. Names of any other form claim nothing.
pub fn digest_from_file_name(path: &Path) -> Option<Result<Sha256Digest, DigestParseError>> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".json")?;
    let hex = stem.rsplit_once("--").map_or(stem, |(_, h)| h);
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Sha256Digest::from_hex(hex))
}

/// Whether a file name must claim the digest of its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `validate`: a name that claims a digest is checked against it; a
    /// name that claims none is fine.
    CheckIfClaimed,
    /// Handoffs: the name must claim the digest (`<hex>.json` as `bench
    /// seal` writes it, or `<anything>--<hex>.json`), else the content
    /// address cannot be checked and the handoff is invalid.
    Required,
}

/// The verdict on one sealed file's bytes and name.
#[derive(Debug, Clone)]
pub struct NamedVerdict {
    /// The digest of the bytes.
    pub digest: Sha256Digest,
    /// The digest the name claims, when it claims a valid one.
    pub named_digest: Option<Sha256Digest>,
    /// Every problem found (empty: valid).
    pub issues: Vec<IssueOut>,
    /// The verified record, when valid.
    pub sealed: Option<SealedRecord>,
}

/// The one rule for a sealed file and its name: the bytes are verified
/// (canonical form, schema, semantics) against the digest the name claims.
/// `validate`, directory handoffs and handoff refs all use it, so they give
/// the same verdicts with the same messages.
pub fn verify_named(bytes: &[u8], file_name: &str, rule: NameRule) -> NamedVerdict {
    let mut v = NamedVerdict {
        digest: Sha256Digest::of(bytes),
        named_digest: None,
        issues: Vec::new(),
        sealed: None,
    };
    let mismatch = |reason: String| IssueOut {
        kind: IssueKind::DigestMismatch.to_string(),
        path: "$".into(),
        reason,
    };
    let expected = match digest_from_file_name(Path::new(file_name)) {
        Some(Ok(d)) => {
            v.named_digest = Some(d);
            Some(d)
        }
        Some(Err(reason)) => {
            v.issues.push(mismatch(format!(
                "file name does not hold a valid digest: {reason}"
            )));
            None
        }
        None if rule == NameRule::Required => {
            v.issues.push(mismatch(
                "file name claims no digest: a handoff must be named <hex>.json (as `bench seal` writes it) or <anything>--<hex>.json".to_owned(),
            ));
            None
        }
        None => None,
    };
    match verify(bytes, expected.as_ref()) {
        Ok(s) if v.issues.is_empty() => v.sealed = Some(s),
        Ok(_) => {}
        Err(e) => v.issues.extend(e.issues.iter().map(IssueOut::from)),
    }
    v
}

/// One line for a problem: `kind: path: reason`. Raw: escape it with
/// [`escape_text`](crate::text::escape_text) before it reaches a terminal.
pub fn issue_line(i: &IssueOut) -> String {
    format!("{}: {}: {}", i.kind, i.path, i.reason)
}

/// The problem a refused or failed read is: `too-large` for a file over
/// the limit, `unreadable` for anything else (not a regular file, a
/// symbolic link not followed, an I/O error). The reason does not repeat
/// the path.
pub fn read_issue(e: &ReadRecordError) -> IssueOut {
    let (kind, reason) = match e {
        ReadRecordError::TooLarge { .. } => (
            "too-large",
            format!(
                "{}; a larger limit can be set with --max-record-bytes",
                e.reason()
            ),
        ),
        _ => ("unreadable", e.reason()),
    };
    IssueOut {
        kind: kind.to_owned(),
        path: "$".to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifying_many_on_threads_gives_each_item_its_own_verdict_in_order() {
        let records: Vec<SealedRecord> = (0..300)
            .map(|h| {
                let slot = jiff::Timestamp::from_second(1_700_000_000 / 3600 * 3600 + h * 3600)
                    .expect("instant")
                    .to_string();
                benchops_testkit::records::clean("nightly", &slot)
            })
            .collect();
        let other = records[1].digest();
        let mut tampered = records[2].bytes().to_vec();
        tampered[10] ^= 1;
        let mut items: Vec<(&[u8], Option<&Sha256Digest>)> =
            records.iter().map(|r| (r.bytes(), None)).collect();
        items[0].1 = Some(&other); // the bytes of record 0 under another name
        items[2].0 = &tampered;
        items[299] = (b"{not json", None);
        let out = verify_all(&items);
        assert_eq!(out.len(), items.len());
        for (i, (got, (bytes, digest))) in out.iter().zip(&items).enumerate() {
            let want = verify(bytes, *digest);
            match (got, &want) {
                (Ok(a), Ok(b)) => assert_eq!(a.digest(), b.digest(), "item {i}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "item {i}"),
                _ => panic!("item {i}: {} against {}", got.is_ok(), want.is_ok()),
            }
        }
        assert!(out[0].is_err() && out[2].is_err() && out[299].is_err());
        assert!(out[1].is_ok() && out[298].is_ok());
        assert_eq!(
            out[150].as_ref().map(SealedRecord::digest).ok(),
            Some(records[150].digest())
        );
    }
}
