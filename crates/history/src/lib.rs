//! `benchops-history`: the `benchmark-history` branch, read and written
//! with plain `git` (the CLI, plumbing commands only) over the layout the
//! core defines ([`benchops::layout`]: record, receipt and baseline paths,
//! [`RecordEntry`](benchops::layout::RecordEntry)). It holds no GitHub
//! client and no publication rule.
//!
//! Three crates use it: `benchops-exec` reads a lane's baseline and the
//! drift state ([`LocalHistory::open`], or [`fetch`] for a URL),
//! `benchops-publish` drives [`LocalHistory`] as its local store (the
//! rules of a persist are the publisher's) and reads a checkout's objects
//! through [`ObjectStore`] in GitHub mode, and `benchops-app` reads the
//! branch for its status page.
//!
//! The modules, each importing only from those listed before it:
//!
//! 1. [`error`], with [`HistoryError`];
//! 2. `command`: running git (no inherited repository overrides, input
//!    written from its own thread, git's stderr bounded in errors);
//!    `object`: [`git_blob_id`];
//! 3. `batch`: the one `git cat-file --batch --buffer` reader, and its
//!    three uses (every blob, the blobs present, records verified while
//!    git reads); `tree`: the one `ls-tree` parser and [`TipIndex`];
//! 4. [`setup`]: creating a repository atomically, clearing what a killed
//!    writer left, the test-only pause hook;
//! 5. `repo`: [`LocalHistory`]; `objects`: [`ObjectStore`];
//! 6. `remote`: [`fetch`]; `indexed`: reading a local history through its
//!    index ([`LocalHistory::read_indexed`]).

mod batch;
mod command;
pub mod error;
mod indexed;
mod object;
mod objects;
mod remote;
mod repo;
pub mod setup;
mod tree;

pub use batch::Verdicts;
pub use command::MAX_STDERR_BYTES;
pub use error::HistoryError;
pub use indexed::IndexedRead;
pub use object::git_blob_id;
pub use objects::ObjectStore;
pub use remote::fetch;
pub use repo::LocalHistory;
pub use tree::TipIndex;

/// The history path of a sealed record (see [`benchops::layout`]).
pub fn record_path(sealed: &benchops::SealedRecord) -> Result<String, HistoryError> {
    let r = sealed.record();
    Ok(benchops::layout::record_path(
        &r.lane,
        &r.slot,
        &sealed.digest(),
    )?)
}
