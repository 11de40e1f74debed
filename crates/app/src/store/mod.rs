//! The server's state in one SQLite file (`<data_dir>/app.db`), through
//! `rusqlite` with SQLite compiled in.
//!
//! - **Migrations** are numbered SQL scripts applied in order, each in its
//!   own transaction, with `PRAGMA user_version` recording the last one; a
//!   database newer than this binary is refused rather than guessed at.
//! - **Checkpoints** run every second on a thread of their own
//!   (`PASSIVE`), never inside a commit that deliveries wait on.
//! - **Durability**: WAL journal, `synchronous = NORMAL` (a committed
//!   transaction survives the process being killed; only a power cut can
//!   lose the last ones), foreign keys on, a busy timeout so that a second
//!   process (an operator's `sqlite3`) waits rather than fails.
//! - **Concurrency**: one writing connection behind a mutex; every change is
//!   one transaction, so concurrent requests never see or leave half a
//!   change. Readers (`/status`) open their own connection.
//! - **Deliveries** are accepted atomically: the delivery id (dedupe) and,
//!   for routed events, the extract the worker needs (the inbox) are written
//!   in one transaction before the 202. The worker deletes an inbox row in
//!   the same transaction as the facts it derived, so a kill at any instant
//!   either loses nothing or repeats an idempotent step.
//! - **Never a token**: the token tables hold a SHA-256 handle of each
//!   minted token (to recognise it at revocation), never the token.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};
use serde::Serialize;

mod decisions;
mod deliveries;
mod migrations;

pub use decisions::{DECISIONS_KEPT, Decision, Minted};
pub use deliveries::{Accepted, Delivery, InboxItem};
use migrations::MIGRATIONS;

/// Why a database operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file was written by a newer benchops-app.
    #[error(
        "database {path} is at schema version {found}; this build knows {known}: upgrade benchops-app"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest this build applies.
        known: usize,
    },
    /// The database file could not be created or opened.
    #[error("database {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The data directory could not be made.
    #[error("data directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// An installation as the registry holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstallationRow {
    /// The installation id.
    pub id: u64,
    /// The account it is installed on.
    pub account: String,
    /// Suspended by the account.
    pub suspended: bool,
    /// Repositories (`OWNER/NAME`, id), sorted by name.
    pub repositories: Vec<(String, u64)>,
}

/// The database, shared by the handlers and the worker.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    _checkpointer: Arc<Checkpointer>,
}

/// How often the checkpointer copies the WAL into the database. Under a
/// steady stream of commits a passive checkpoint rarely catches up with the
/// whole WAL, so it runs often enough that the WAL stays short: at one a
/// second the WAL grew long enough that commits slowed (p99 of deliveries
/// 40–70 ms in `cargo xtask bench-webhooks`; 9 ms at five a second).
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// The writer's own automatic checkpoint, in pages: only a safety net for a
/// checkpointer that cannot keep up (about 256 MiB of WAL).
const AUTOCHECKPOINT_PAGES: i64 = 65_536;

/// A thread with its own connection that checkpoints the WAL every second
/// (`PASSIVE`: it never blocks the writer). A checkpoint is the only step
/// that syncs to disk, so done inside a commit it would stall every
/// delivery waiting on that commit; here it stalls none. It stops, after a
/// last checkpoint, when the last [`Store`] clone is dropped.
#[derive(Debug)]
struct Checkpointer {
    stop: Mutex<Option<std::sync::mpsc::Sender<()>>>,
}

impl Checkpointer {
    fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open(path).map_err(sql(path))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql(path))?;
        let (stop, rx) = std::sync::mpsc::channel::<()>();
        let shown = path.display().to_string();
        std::thread::Builder::new()
            .name("benchops-app-checkpoint".into())
            .spawn(move || {
                loop {
                    let last = matches!(
                        rx.recv_timeout(CHECKPOINT_EVERY),
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) | Ok(())
                    );
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        tracing::warn!(database = %shown, error = %e, "WAL checkpoint failed");
                    }
                    if last {
                        break;
                    }
                }
            })
            .map_err(|source| StoreError::File {
                path: path.to_owned(),
                source,
            })?;
        Ok(Checkpointer {
            stop: Mutex::new(Some(stop)),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread for its last checkpoint.
        self.stop.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

pub(super) fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_owned(),
        source,
    }
}

impl Store {
    /// Opens (creating if needed) `<data_dir>/app.db` and migrates it. A
    /// data directory it creates is readable by its owner only (0700).
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(data_dir)
                .map_err(|source| StoreError::Dir {
                    path: data_dir.to_owned(),
                    source,
                })?;
        }
        let path = data_dir.join("app.db");
        // The database holds the decision log and the registry: readable by
        // the service user alone. SQLite gives its -wal and -shm files the
        // database file's mode.
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(|source| StoreError::File {
                    path: path.clone(),
                    source,
                })?;
        }
        let conn = Connection::open(&path).map_err(sql(&path))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql(&path))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
        )
        .map_err(sql(&path))?;
        conn.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES)
            .map_err(sql(&path))?;
        let checkpointer = Checkpointer::start(&path)?;
        let store = Store {
            path,
            conn: Arc::new(Mutex::new(conn)),
            _checkpointer: Arc::new(checkpointer),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a transaction half
        // applied (it rolls back on drop), so a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let e = sql(&self.path);
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(&e)?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        for (i, script) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            let tx = conn.transaction().map_err(&e)?;
            tx.execute_batch(script).map_err(&e)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)
                .map_err(&e)?;
            tx.commit().map_err(&e)?;
        }
        Ok(())
    }

    /// The schema version applied.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.lock()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql(&self.path))
    }

    /// Proves the database writable (for `/readyz`).
    pub fn probe(&self, at: &str) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "INSERT INTO probe (id, at) VALUES (1, ?1) ON CONFLICT(id) DO UPDATE SET at = ?1",
                params![at],
            )
            .map(|_| ())
            .map_err(sql(&self.path))
    }

    /// Runs `f` in one transaction.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.lock();
        let e = sql(&self.path);
        let tx = conn.transaction().map_err(&e)?;
        let out = f(&tx).map_err(&e)?;
        tx.commit().map_err(&e)?;
        Ok(out)
    }

    /// Runs a read query.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.lock();
        f(&conn).map_err(sql(&self.path))
    }

    /// The installations not deleted, with their repositories.
    pub fn installations(&self) -> Result<Vec<InstallationRow>, StoreError> {
        self.read(|c| {
            let mut s = c.prepare(
                "SELECT id, account, suspended FROM installations WHERE deleted = 0 ORDER BY id",
            )?;
            let mut out: Vec<InstallationRow> = s
                .query_map([], |r| {
                    Ok(InstallationRow {
                        id: r.get::<_, i64>(0)? as u64,
                        account: r.get(1)?,
                        suspended: r.get(2)?,
                        repositories: Vec::new(),
                    })
                })?
                .collect::<Result<_, _>>()?;
            let mut repos = c.prepare(
                "SELECT full_name, repo_id FROM installation_repos WHERE installation_id = ?1
                 ORDER BY full_name",
            )?;
            for i in &mut out {
                i.repositories = repos
                    .query_map(params![i.id as i64], |r| {
                        Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
                    })?
                    .collect::<Result<_, _>>()?;
            }
            Ok(out)
        })
    }

    /// The installation (not deleted, not suspended) holding a repository.
    pub fn installation_of(&self, full_name: &str) -> Result<Option<u64>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT i.id FROM installations i JOIN installation_repos r
                   ON r.installation_id = i.id
                 WHERE i.deleted = 0 AND i.suspended = 0 AND r.full_name = ?1 COLLATE NOCASE
                 ORDER BY i.id LIMIT 1",
                params![full_name],
                |r| r.get::<_, i64>(0).map(|v| v as u64),
            )
            .optional()
        })
    }
}

/// A record `POST /handoff` wrote (or found) as a handoff ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandedOff {
    /// `OWNER/NAME`.
    pub repository: String,
    /// The record's sha256, 64 hex digits.
    pub digest: String,
    /// The sha256 of the signature it came with: the same record signed
    /// again (a new key) is a new handoff.
    pub signature_sha: String,
    /// Its lane.
    pub lane: String,
    /// The signing key's `SHA256:` fingerprint.
    pub fingerprint: String,
    /// The handoff ref, `refs/heads/benchmark-result/…`.
    #[serde(rename = "ref")]
    pub ref_name: String,
    /// When it was taken, RFC 3339.
    pub at: String,
}

impl Store {
    /// The handoff of `digest` with the signature `signature_sha` to
    /// `repository`, if one was taken.
    pub fn handed_off(
        &self,
        repository: &str,
        digest: &str,
        signature_sha: &str,
    ) -> Result<Option<HandedOff>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT repository, digest, signature_sha, lane, fingerprint, ref, at
                 FROM handoffs WHERE repository = ?1 AND digest = ?2 AND signature_sha = ?3",
                params![repository, digest, signature_sha],
                |r| {
                    Ok(HandedOff {
                        repository: r.get(0)?,
                        digest: r.get(1)?,
                        signature_sha: r.get(2)?,
                        lane: r.get(3)?,
                        fingerprint: r.get(4)?,
                        ref_name: r.get(5)?,
                        at: r.get(6)?,
                    })
                },
            )
            .optional()
        })
    }

    /// Remembers a handoff; a second one of the same record is ignored.
    pub fn record_handoff(&self, h: &HandedOff) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "INSERT OR IGNORE INTO handoffs
                   (repository, digest, signature_sha, lane, fingerprint, ref, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    h.repository,
                    h.digest,
                    h.signature_sha,
                    h.lane,
                    h.fingerprint,
                    h.ref_name,
                    h.at
                ],
            )
            .map(|_| ())
            .map_err(sql(&self.path))
    }
}

/// What [`inspect`] found in a data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The directory does not exist yet (`serve` creates it).
    NoDirectory,
    /// The directory exists, without `app.db` (`serve` creates it).
    NoDatabase,
    /// `app.db`, at this schema version.
    Database {
        /// Its `user_version`, from the file's header.
        schema: i64,
    },
}

/// The schema version this build migrates to.
pub fn schema_known() -> i64 {
    MIGRATIONS.len() as i64
}

/// Looks at `<data_dir>/app.db` without writing anything: no directory,
/// no file, not even SQLite's `-wal` and `-shm` (a read-only connection
/// to a WAL database creates them). The schema version is read from the
/// file's header (`user_version`, 4 bytes big-endian at offset 60), so a
/// migration still only in the WAL is not seen; [`Store::open`] sees it.
/// A file that is not an SQLite database, or a schema newer than this
/// build, is an error.
pub fn inspect(data_dir: &Path) -> Result<Found, StoreError> {
    use std::io::Read as _;
    match std::fs::metadata(data_dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::NoDirectory),
        Err(source) => {
            return Err(StoreError::Dir {
                path: data_dir.to_owned(),
                source,
            });
        }
        Ok(m) if !m.is_dir() => {
            return Err(StoreError::Dir {
                path: data_dir.to_owned(),
                source: std::io::Error::other("not a directory"),
            });
        }
        Ok(_) => {}
    }
    let path = data_dir.join("app.db");
    let file_err = |source| StoreError::File {
        path: path.clone(),
        source,
    };
    let mut file = match std::fs::File::open(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::NoDatabase),
        Err(e) => return Err(file_err(e)),
        Ok(f) => f,
    };
    let mut header = Vec::with_capacity(100);
    file.by_ref()
        .take(100)
        .read_to_end(&mut header)
        .map_err(file_err)?;
    // An empty file is an empty database (SQLite writes the header with
    // the first table).
    if header.is_empty() {
        return Ok(Found::Database { schema: 0 });
    }
    if header.len() < 100 || !header.starts_with(b"SQLite format 3\0") {
        return Err(file_err(std::io::Error::other(
            "not an SQLite database (its header is not SQLite's)",
        )));
    }
    let schema = i64::from(i32::from_be_bytes([
        header[60], header[61], header[62], header[63],
    ]));
    if schema > schema_known() {
        return Err(StoreError::TooNew {
            path,
            found: schema,
            known: MIGRATIONS.len(),
        });
    }
    Ok(Found::Database { schema })
}

/// Opens a read-only connection to the database (for pages that must not
/// wait behind the writer).
pub fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(path))?;
    c.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(sql(path))?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn the_database_is_readable_by_its_owner_only_and_reopens_at_its_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let store = Store::open(&data).expect("open");
        let version = store.schema_version().expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
        assert_eq!(
            store.accept("d", "push", 1, Some("{}")).expect("accept"),
            Accepted::New(Some(1))
        );
        for name in [".", "app.db", "app.db-wal"] {
            let mode = std::fs::metadata(data.join(name))
                .expect("exists")
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{name} is {mode:o}");
        }
        drop(store);
        let again = Store::open(&data).expect("reopen");
        assert_eq!(again.schema_version().expect("version"), version);
        assert_eq!(
            again.accept("d", "push", 2, None).expect("accept"),
            Accepted::Duplicate
        );
    }

    #[test]
    fn a_batch_is_all_or_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let d = |id: &str, extract: Option<&str>| Delivery {
            id: id.to_owned(),
            event: "push".to_owned(),
            received_at: 1,
            extract: extract.map(str::to_owned),
        };
        let answers = store
            .accept_batch(&[d("a", None), d("b", Some("{}")), d("a", Some("{}"))])
            .expect("batch");
        assert_eq!(
            answers,
            vec![
                Accepted::New(None),
                Accepted::New(Some(1)),
                Accepted::Duplicate
            ]
        );
        store
            .write(|tx| tx.execute_batch("DROP TABLE inbox"))
            .expect("break the inbox");
        assert!(
            store
                .accept_batch(&[d("c", None), d("e", Some("{}"))])
                .is_err()
        );
        assert!(!store.has_delivery("c").expect("lookup"), "rolled back");
    }

    #[test]
    fn delivery_ids_are_pruned_by_age_and_by_count() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        for i in 0..10 {
            store
                .accept(&format!("d{i}"), "push", 100 + i, None)
                .expect("accept");
        }
        // Older than 103: d0..d2 go. Then only the newest 5 stay.
        assert_eq!(store.prune_deliveries(103, 5).expect("prune"), 5);
        assert_eq!(store.delivery_count().expect("count"), 5);
        assert!(!store.has_delivery("d4").expect("lookup"));
        assert!(store.has_delivery("d5").expect("lookup"));
        assert!(store.has_delivery("d9").expect("lookup"));
        // A pruned id is new again; a kept one is still a duplicate.
        assert_eq!(
            store.accept("d9", "push", 200, None).expect("accept"),
            Accepted::Duplicate
        );
        assert_eq!(
            store.accept("d0", "push", 200, None).expect("accept"),
            Accepted::New(None)
        );
    }

    #[test]
    fn inspecting_reads_the_schema_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        assert_eq!(inspect(&data).expect("inspect"), Found::NoDirectory);
        assert!(!data.exists());
        std::fs::create_dir(&data).expect("mkdir");
        assert_eq!(inspect(&data).expect("inspect"), Found::NoDatabase);
        assert!(!data.join("app.db").exists());
        // A database written and closed (no WAL left, no thread behind).
        let db = Connection::open(data.join("app.db")).expect("create");
        db.execute_batch(&format!(
            "CREATE TABLE t (x); PRAGMA user_version = {};",
            schema_known()
        ))
        .expect("write");
        drop(db);
        let listing = || {
            let mut v: Vec<_> = std::fs::read_dir(&data)
                .expect("list")
                .map(|e| {
                    let e = e.expect("entry");
                    let m = e.metadata().expect("metadata");
                    (e.file_name(), m.len(), m.modified().expect("mtime"))
                })
                .collect();
            v.sort();
            v
        };
        let before = listing();
        assert_eq!(
            inspect(&data).expect("inspect"),
            Found::Database {
                schema: schema_known()
            }
        );
        assert_eq!(listing(), before, "inspecting changed the directory");
        // A newer database is refused, and so is a file that is not one.
        Connection::open(data.join("app.db"))
            .expect("open")
            .execute_batch("PRAGMA user_version = 99")
            .expect("newer");
        let e = inspect(&data).expect_err("too new");
        assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e}");
        std::fs::write(data.join("app.db"), b"not a database at all").expect("write");
        assert!(inspect(&data).is_err());
    }

    #[test]
    fn the_wal_is_checkpointed_off_the_writers_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let db = dir.path().join("app.db");
        let before = std::fs::metadata(&db).expect("db").len();
        let batch: Vec<Delivery> = (0..5000)
            .map(|i| Delivery {
                id: format!("delivery-{i:08}"),
                event: "push".to_owned(),
                received_at: i,
                extract: None,
            })
            .collect();
        store.accept_batch(&batch).expect("batch");
        // The writer's own auto-checkpoint is far away: only the
        // checkpointer thread can move these pages into the database file.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::fs::metadata(&db).expect("db").len() <= before {
            assert!(
                std::time::Instant::now() < deadline,
                "the WAL was never checkpointed"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
