//! Deliveries: the dedupe of delivery ids, and the inbox of work the
//! worker has still to do, each change one transaction.

use rusqlite::{OptionalExtension as _, params};

use super::{Store, StoreError, sql};

/// A verified delivery to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `X-GitHub-Delivery`.
    pub id: String,
    /// `X-GitHub-Event`.
    pub event: String,
    /// When it arrived, Unix seconds.
    pub received_at: i64,
    /// The work it asks for (JSON of [`crate::events::Work`]), if any.
    pub extract: Option<String>,
}

/// Whether an accepted delivery is new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// First time seen; `Some(seq)` when it was put in the inbox.
    New(Option<i64>),
    /// Seen before: a redelivery, acknowledged and ignored.
    Duplicate,
}

/// One inbox row: what the worker has still to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxItem {
    /// Its sequence number.
    pub seq: i64,
    /// The delivery id.
    pub delivery: String,
    /// The event name.
    pub event: String,
    /// The extract (JSON) taken from the payload at intake.
    pub extract: String,
}

impl Store {
    /// Records a delivery id and, when `extract` is given, puts the work in
    /// the inbox, in one transaction. A delivery id seen before changes
    /// nothing.
    pub fn accept(
        &self,
        delivery: &str,
        event: &str,
        received_at: i64,
        extract: Option<&str>,
    ) -> Result<Accepted, StoreError> {
        let one = [Delivery {
            id: delivery.to_owned(),
            event: event.to_owned(),
            received_at,
            extract: extract.map(str::to_owned),
        }];
        Ok(self.accept_batch(&one)?[0])
    }

    /// [`Store::accept`] for several deliveries in ONE transaction (a group
    /// commit): either every one is recorded or, on an error, none is. The
    /// answers are in the order of `batch`; a delivery id met twice in the
    /// batch is new the first time and a duplicate the second.
    pub fn accept_batch(&self, batch: &[Delivery]) -> Result<Vec<Accepted>, StoreError> {
        let mut conn = self.lock();
        let e = sql(&self.path);
        let tx = conn.transaction().map_err(&e)?;
        let mut out = Vec::with_capacity(batch.len());
        {
            let mut seen = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO deliveries (id, event, received_at) VALUES (?1, ?2, ?3)",
                )
                .map_err(&e)?;
            let mut inbox = tx
                .prepare_cached(
                    "INSERT INTO inbox (delivery, event, extract, received_at) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(&e)?;
            for d in batch {
                let inserted = seen
                    .execute(params![d.id, d.event, d.received_at])
                    .map_err(&e)?;
                if inserted == 0 {
                    out.push(Accepted::Duplicate);
                    continue;
                }
                let seq = match &d.extract {
                    Some(x) => {
                        inbox
                            .execute(params![d.id, d.event, x, d.received_at])
                            .map_err(&e)?;
                        Some(tx.last_insert_rowid())
                    }
                    None => None,
                };
                out.push(Accepted::New(seq));
            }
        }
        tx.commit().map_err(&e)?;
        Ok(out)
    }

    /// Whether a delivery id is known.
    pub fn has_delivery(&self, delivery: &str) -> Result<bool, StoreError> {
        self.lock()
            .query_row(
                "SELECT 1 FROM deliveries WHERE id = ?1",
                params![delivery],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(sql(&self.path))
    }

    /// How many delivery ids are kept.
    pub fn delivery_count(&self) -> Result<u64, StoreError> {
        self.lock()
            .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
            .map_err(sql(&self.path))
    }

    /// Forgets delivery ids older than `before` (Unix seconds) and all but
    /// the newest `keep`. Returns how many were removed.
    pub fn prune_deliveries(&self, before: i64, keep: u64) -> Result<usize, StoreError> {
        let conn = self.lock();
        let e = sql(&self.path);
        let old = conn
            .execute(
                "DELETE FROM deliveries WHERE received_at < ?1",
                params![before],
            )
            .map_err(&e)?;
        let over = conn
            .execute(
                "DELETE FROM deliveries WHERE id IN (
                   SELECT id FROM deliveries ORDER BY received_at DESC, id DESC LIMIT -1 OFFSET ?1)",
                params![keep as i64],
            )
            .map_err(&e)?;
        Ok(old + over)
    }

    /// The inbox in order (what is left to do, after a restart too).
    pub fn inbox(&self, limit: usize) -> Result<Vec<InboxItem>, StoreError> {
        let conn = self.lock();
        let e = sql(&self.path);
        let mut s = conn
            .prepare_cached("SELECT seq, delivery, event, extract FROM inbox ORDER BY seq LIMIT ?1")
            .map_err(&e)?;
        let rows = s
            .query_map(params![limit as i64], |r| {
                Ok(InboxItem {
                    seq: r.get(0)?,
                    delivery: r.get(1)?,
                    event: r.get(2)?,
                    extract: r.get(3)?,
                })
            })
            .map_err(&e)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(&e)
    }

    /// The inbox rows of `seqs` that are still there, in order of `seqs`.
    pub fn inbox_items(&self, seqs: &[i64]) -> Result<Vec<InboxItem>, StoreError> {
        let conn = self.lock();
        let e = sql(&self.path);
        let mut s = conn
            .prepare_cached("SELECT seq, delivery, event, extract FROM inbox WHERE seq = ?1")
            .map_err(&e)?;
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let row = s
                .query_row(params![seq], |r| {
                    Ok(InboxItem {
                        seq: r.get(0)?,
                        delivery: r.get(1)?,
                        event: r.get(2)?,
                        extract: r.get(3)?,
                    })
                })
                .optional()
                .map_err(&e)?;
            out.extend(row);
        }
        Ok(out)
    }

    /// Applies `f` and deletes the inbox rows `seqs` in one transaction.
    pub fn finish_all<T>(
        &self,
        seqs: &[i64],
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let e = sql(&self.path);
        let tx = conn.transaction().map_err(&e)?;
        let out = f(&tx).map_err(&e)?;
        {
            let mut delete = tx
                .prepare_cached("DELETE FROM inbox WHERE seq = ?1")
                .map_err(&e)?;
            for seq in seqs {
                delete.execute(params![seq]).map_err(&e)?;
            }
        }
        tx.commit().map_err(&e)?;
        Ok(out)
    }

    /// Applies `f` and deletes inbox row `seq` in one transaction.
    pub fn finish<T>(
        &self,
        seq: i64,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.finish_all(&[seq], f)
    }
}
