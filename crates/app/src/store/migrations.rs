//! The database's migrations: numbered SQL scripts, applied in order,
//! each in its own transaction; `PRAGMA user_version` records the last.

/// The migrations, in order; `user_version` is the number applied.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE installations (
        id INTEGER PRIMARY KEY,
        account TEXT NOT NULL,
        suspended INTEGER NOT NULL DEFAULT 0,
        deleted INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL
     );
     CREATE TABLE installation_repos (
        installation_id INTEGER NOT NULL REFERENCES installations(id) ON DELETE CASCADE,
        repo_id INTEGER NOT NULL,
        full_name TEXT NOT NULL,
        PRIMARY KEY (installation_id, repo_id)
     );
     CREATE TABLE deliveries (
        id TEXT PRIMARY KEY,
        event TEXT NOT NULL,
        received_at INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE INDEX deliveries_by_age ON deliveries(received_at);
     CREATE TABLE inbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        delivery TEXT NOT NULL,
        event TEXT NOT NULL,
        extract TEXT NOT NULL,
        received_at INTEGER NOT NULL
     );
     CREATE TABLE decisions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        granted INTEGER NOT NULL,
        reason TEXT NOT NULL,
        repository TEXT,
        phase TEXT,
        workflow_ref TEXT,
        event_name TEXT,
        run_id TEXT,
        subject TEXT,
        token_ref TEXT
     );
     CREATE TABLE minted (
        handle BLOB PRIMARY KEY,
        token_ref TEXT NOT NULL,
        repository TEXT NOT NULL,
        phase TEXT NOT NULL,
        installation_id INTEGER NOT NULL,
        minted_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        revoked_at TEXT
     ) WITHOUT ROWID;
     CREATE TABLE issue_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        delivery TEXT NOT NULL UNIQUE,
        repository TEXT NOT NULL,
        issue INTEGER NOT NULL,
        title TEXT NOT NULL,
        action TEXT NOT NULL,
        label TEXT,
        actor TEXT NOT NULL,
        actor_is_app INTEGER NOT NULL,
        at TEXT NOT NULL,
        drift_key TEXT,
        author TEXT
     );
     CREATE TABLE workflow_runs (
        repository TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        run_attempt INTEGER NOT NULL,
        workflow_path TEXT NOT NULL,
        event TEXT NOT NULL,
        status TEXT NOT NULL,
        conclusion TEXT,
        at TEXT NOT NULL,
        PRIMARY KEY (repository, run_id, run_attempt)
     ) WITHOUT ROWID;
     CREATE TABLE audits (
        repository TEXT NOT NULL,
        after_sha TEXT NOT NULL,
        pusher TEXT NOT NULL,
        delivery TEXT NOT NULL,
        issue INTEGER,
        at TEXT NOT NULL,
        PRIMARY KEY (repository, after_sha)
     ) WITHOUT ROWID;
     CREATE TABLE probe (id INTEGER PRIMARY KEY, at TEXT NOT NULL);",
    // 2: records taken by `POST /handoff` (with the signature they came
    // with), so a replay is answered without writing again.
    "CREATE TABLE handoffs (
        repository TEXT NOT NULL COLLATE NOCASE,
        digest TEXT NOT NULL,
        signature_sha TEXT NOT NULL,
        lane TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        ref TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (repository, digest, signature_sha)
     ) WITHOUT ROWID;",
];
