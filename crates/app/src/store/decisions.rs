//! The decision log (who was granted or refused a token, never the token)
//! and the handles of the tokens minted here.

use rusqlite::{OptionalExtension as _, params};
use serde::Serialize;

use super::{Store, StoreError, sql};

/// The decision log keeps this many decisions, the newest.
pub const DECISIONS_KEPT: u64 = 100_000;

/// A token-exchange or revocation decision; never holds a token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// RFC 3339.
    pub at: String,
    /// `exchange` or `revoke`.
    pub kind: String,
    /// Whether it was granted.
    pub granted: bool,
    /// The reason code.
    pub reason: String,
    /// The repository claimed.
    pub repository: Option<String>,
    /// The phase asked for.
    pub phase: Option<String>,
    /// The workflow ref claimed.
    pub workflow_ref: Option<String>,
    /// The event claimed.
    pub event_name: Option<String>,
    /// The workflow run claimed.
    pub run_id: Option<String>,
    /// The `sub` claimed.
    pub subject: Option<String>,
    /// A short public reference to the token minted or revoked (12 hex
    /// digits of a SHA-256 of it), to match the two lines of one token.
    pub token_ref: Option<String>,
}

/// A token minted here, by its handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    /// The short public reference.
    pub token_ref: String,
    /// `OWNER/NAME`.
    pub repository: String,
    /// `contents` or `issues`.
    pub phase: String,
    /// The installation.
    pub installation_id: u64,
    /// RFC 3339.
    pub expires_at: String,
    /// When it was revoked, if it was.
    pub revoked_at: Option<String>,
}

impl Store {
    /// Appends a decision to the log, which keeps the newest
    /// [`DECISIONS_KEPT`] (an older one goes in the same transaction).
    pub fn log_decision(&self, d: &Decision) -> Result<(), StoreError> {
        self.append_decision(d, DECISIONS_KEPT)
    }

    fn append_decision(&self, d: &Decision, keep: u64) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO decisions (at, kind, granted, reason, repository, phase, workflow_ref,
                   event_name, run_id, subject, token_ref)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    d.at,
                    d.kind,
                    d.granted,
                    d.reason,
                    d.repository,
                    d.phase,
                    d.workflow_ref,
                    d.event_name,
                    d.run_id,
                    d.subject,
                    d.token_ref
                ],
            )?;
            // `seq` only grows (AUTOINCREMENT): what is `keep` behind the
            // new row goes, by the primary key.
            let seq = tx.last_insert_rowid();
            tx.execute(
                "DELETE FROM decisions WHERE seq <= ?1",
                params![seq - keep as i64],
            )?;
            Ok(())
        })
    }

    /// How many decisions the log holds.
    pub fn decision_count(&self) -> Result<u64, StoreError> {
        self.lock()
            .query_row("SELECT count(*) FROM decisions", [], |r| r.get(0))
            .map_err(sql(&self.path))
    }

    /// Forgets decisions made before `before` (RFC 3339, UTC). Returns how
    /// many were removed.
    pub fn prune_decisions(&self, before: &str) -> Result<usize, StoreError> {
        self.lock()
            .execute("DELETE FROM decisions WHERE at < ?1", params![before])
            .map_err(sql(&self.path))
    }

    /// The newest `limit` decisions, newest first.
    pub fn decisions(&self, limit: usize) -> Result<Vec<Decision>, StoreError> {
        self.read(|c| {
            let mut s = c.prepare(
                "SELECT at, kind, granted, reason, repository, phase, workflow_ref, event_name,
                        run_id, subject, token_ref
                 FROM decisions ORDER BY seq DESC LIMIT ?1",
            )?;
            let rows = s.query_map(params![limit as i64], |r| {
                Ok(Decision {
                    at: r.get(0)?,
                    kind: r.get(1)?,
                    granted: r.get(2)?,
                    reason: r.get(3)?,
                    repository: r.get(4)?,
                    phase: r.get(5)?,
                    workflow_ref: r.get(6)?,
                    event_name: r.get(7)?,
                    run_id: r.get(8)?,
                    subject: r.get(9)?,
                    token_ref: r.get(10)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Remembers a minted token by its handle.
    pub fn record_minted(&self, handle: &[u8; 32], m: &Minted, at: &str) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "INSERT INTO minted (handle, token_ref, repository, phase, installation_id,
                   minted_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    handle.as_slice(),
                    m.token_ref,
                    m.repository,
                    m.phase,
                    m.installation_id as i64,
                    at,
                    m.expires_at
                ],
            )
            .map(|_| ())
            .map_err(sql(&self.path))
    }

    /// The minted token with this handle.
    pub fn minted(&self, handle: &[u8; 32]) -> Result<Option<Minted>, StoreError> {
        self.lock()
            .query_row(
                "SELECT token_ref, repository, phase, installation_id, expires_at, revoked_at
                 FROM minted WHERE handle = ?1",
                params![handle.as_slice()],
                |r| {
                    Ok(Minted {
                        token_ref: r.get(0)?,
                        repository: r.get(1)?,
                        phase: r.get(2)?,
                        installation_id: r.get::<_, i64>(3)? as u64,
                        expires_at: r.get(4)?,
                        revoked_at: r.get(5)?,
                    })
                },
            )
            .optional()
            .map_err(sql(&self.path))
    }

    /// Marks a minted token revoked.
    pub fn mark_revoked(&self, handle: &[u8; 32], at: &str) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "UPDATE minted SET revoked_at = ?2 WHERE handle = ?1 AND revoked_at IS NULL",
                params![handle.as_slice(), at],
            )
            .map(|_| ())
            .map_err(sql(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_log_keeps_the_newest_and_forgets_the_old() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let d = |at: &str, reason: &str| Decision {
            at: at.to_owned(),
            kind: "exchange".to_owned(),
            reason: reason.to_owned(),
            ..Decision::default()
        };
        for i in 0..10 {
            store
                .append_decision(
                    &d(&format!("2026-01-{:02}T00:00:00Z", i + 1), &i.to_string()),
                    4,
                )
                .expect("append");
            assert!(store.decision_count().expect("count") <= 4);
        }
        let kept: Vec<String> = store
            .decisions(100)
            .expect("read")
            .into_iter()
            .map(|d| d.reason)
            .collect();
        assert_eq!(kept, ["9", "8", "7", "6"]);
        assert_eq!(
            store
                .prune_decisions("2026-01-09T00:00:00Z")
                .expect("prune"),
            2
        );
        assert_eq!(store.decision_count().expect("count"), 2);
    }
}
