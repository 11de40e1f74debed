//! Crash-safe file writes: the only file-system code in the core, shared by
//! every binary so that no record is ever half-written.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why an atomic write failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The target exists with other bytes (create-only writes only).
    #[error("failed to create {path}: it already exists with different content")]
    Conflict {
        /// The file.
        path: PathBuf,
    },
    /// An I/O step failed.
    #[error("failed to {step} {path}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

fn io_err<'p>(step: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> WriteError + 'p {
    move |source| WriteError::Io {
        step,
        path: path.to_path_buf(),
        source,
    }
}

/// What [`write_create_only`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The file was written.
    New,
    /// The file already held exactly these bytes; nothing was written.
    AlreadyPresent,
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, fsync, rename, then fsync of the directory. Readers see either
/// the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let dir = parent_of(path);
    let mut tmp = tempfile_in(&dir, path)?;
    tmp.1.write_all(bytes).map_err(io_err("write", &tmp.0))?;
    tmp.1.sync_all().map_err(io_err("fsync", &tmp.0))?;
    drop(tmp.1);
    if let Err(e) = fs::rename(&tmp.0, path) {
        let _ = fs::remove_file(&tmp.0);
        return Err(io_err("rename into place", path)(e));
    }
    sync_dir(&dir)
}

/// Creates `path` with `bytes` unless it exists. Existing identical bytes are
/// a no-op; existing different bytes are [`WriteError::Conflict`]. The file
/// appears atomically (temporary file, fsync, hard link), so a racing writer
/// never sees a partial file and never overwrites.
pub fn write_create_only(path: &Path, bytes: &[u8]) -> Result<Created, WriteError> {
    if let Some(existing) = read_if_exists(path)? {
        return if existing == bytes {
            Ok(Created::AlreadyPresent)
        } else {
            Err(WriteError::Conflict {
                path: path.to_path_buf(),
            })
        };
    }
    let dir = parent_of(path);
    let mut tmp = tempfile_in(&dir, path)?;
    tmp.1.write_all(bytes).map_err(io_err("write", &tmp.0))?;
    tmp.1.sync_all().map_err(io_err("fsync", &tmp.0))?;
    drop(tmp.1);
    let linked = fs::hard_link(&tmp.0, path);
    let _ = fs::remove_file(&tmp.0);
    match linked {
        Ok(()) => {
            sync_dir(&dir)?;
            Ok(Created::New)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Lost a race: the winner's bytes decide.
            match read_if_exists(path)? {
                Some(existing) if existing == bytes => Ok(Created::AlreadyPresent),
                _ => Err(WriteError::Conflict {
                    path: path.to_path_buf(),
                }),
            }
        }
        Err(e) => Err(io_err("link into place", path)(e)),
    }
}

fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, WriteError> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", path)(e)),
    }
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn tempfile_in(dir: &Path, target: &Path) -> Result<(PathBuf, File), WriteError> {
    let stem = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pid = std::process::id();
    for attempt in 0u32..1000 {
        let p = dir.join(format!(".{stem}.{pid}.{attempt}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(f) => return Ok((p, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err("create a temporary file in", dir)(e)),
        }
    }
    Err(WriteError::Io {
        step: "create a temporary file in",
        path: dir.to_path_buf(),
        source: io::Error::new(io::ErrorKind::AlreadyExists, "too many temporary files"),
    })
}

fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("benchops-fsio-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("scratch dir");
        d
    }

    #[test]
    fn create_only_is_idempotent_and_refuses_other_bytes() {
        let d = scratch("create");
        let p = d.join("a.json");
        assert_eq!(write_create_only(&p, b"one").expect("writes"), Created::New);
        assert_eq!(
            write_create_only(&p, b"one").expect("no-op"),
            Created::AlreadyPresent
        );
        assert!(matches!(
            write_create_only(&p, b"two"),
            Err(WriteError::Conflict { .. })
        ));
        assert_eq!(fs::read(&p).expect("reads"), b"one");
        let leftovers: Vec<_> = fs::read_dir(&d).expect("lists").collect();
        assert_eq!(leftovers.len(), 1, "no temporary files left behind");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let d = scratch("atomic");
        let p = d.join("b");
        write_atomic(&p, b"first").expect("writes");
        write_atomic(&p, b"second").expect("writes");
        assert_eq!(fs::read(&p).expect("reads"), b"second");
        let _ = fs::remove_dir_all(&d);
    }
}
