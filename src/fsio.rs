//! The only file-system code in the core, shared by every binary:
//! crash-safe writes, so that no record is ever half-written, and bounded
//! reads of record files ([`read_record_file`]), so that no FIFO, device,
//! symbolic link or oversized file can hang a reader or exhaust its memory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
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
    if let Some(same) = holds(path, bytes)? {
        return if same {
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
            match holds(path, bytes)? {
                Some(true) => Ok(Created::AlreadyPresent),
                _ => Err(WriteError::Conflict {
                    path: path.to_path_buf(),
                }),
            }
        }
        Err(e) => Err(io_err("link into place", path)(e)),
    }
}

/// Whether `path` holds exactly `bytes` (None: it does not exist). What is
/// there is read only if it is a regular file of the same size, so a FIFO
/// or a huge file in its place is a conflict, not a hang.
fn holds(path: &Path, bytes: &[u8]) -> Result<Option<bool>, WriteError> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("look at", path)(e)),
    };
    if !meta.is_file() || meta.len() != bytes.len() as u64 {
        return Ok(Some(false));
    }
    match read_record_file(path, bytes.len() as u64, Symlinks::Resolve) {
        Ok(existing) => Ok(Some(existing == bytes)),
        Err(ReadRecordError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(ReadRecordError::Io { source, .. }) => Err(io_err("read", path)(source)),
        Err(ReadRecordError::NotRegular { .. } | ReadRecordError::TooLarge { .. }) => {
            Ok(Some(false))
        }
    }
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// At most this many bytes of the target's name start a temporary file's
/// name, so that the temporary name stays far below the file system's limit
/// on a name (255 bytes) however long the target's name is.
const TEMP_STEM_BYTES: usize = 32;

/// A new temporary file in `dir` for writing `target`:
/// `.<up to 32 bytes of the target's name>.<pid>.<n>.tmp`.
fn tempfile_in(dir: &Path, target: &Path) -> Result<(PathBuf, File), WriteError> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cut = name.len().min(TEMP_STEM_BYTES);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = &name[..cut];
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

// ---------------------------------------------------------------------------
// Bounded reads of record files

/// The default cap on the size of a record file: 8 MiB (8,388,608 bytes),
/// below the 10 MB at which a record is considered too big to keep.
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 8 * 1024 * 1024;

/// What a path is, when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A symbolic link (not followed).
    Symlink,
    /// A FIFO (named pipe).
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device (`/dev/zero`, a terminal, ...).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Something else the platform knows and this code does not.
    Other,
}

impl FileKind {
    fn of(t: fs::FileType) -> FileKind {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return FileKind::Fifo;
            }
            if t.is_socket() {
                return FileKind::Socket;
            }
            if t.is_char_device() {
                return FileKind::CharDevice;
            }
            if t.is_block_device() {
                return FileKind::BlockDevice;
            }
        }
        if t.is_dir() {
            FileKind::Directory
        } else if t.is_symlink() {
            FileKind::Symlink
        } else {
            FileKind::Other
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Symlink => "a symbolic link",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a file of an unknown kind",
        })
    }
}

/// What [`read_record_file`] does with a symbolic link at `path` itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symlinks {
    /// Refuse it: [`ReadRecordError::NotRegular`] with
    /// [`FileKind::Symlink`], without looking at its target.
    Refuse,
    /// Resolve it: the target must be a regular file.
    Resolve,
}

/// Why a record file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadRecordError {
    /// The path is not a regular file (or is a symbolic link that was not
    /// to be resolved). It was not opened for reading.
    #[error("refused to read {path}: {}", not_regular_reason(*kind))]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// The file is larger than the limit.
    #[error("refused to read {path}: {}", too_large_reason(*size, *limit, *grew))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size: from its metadata, or, when it grew while being read,
        /// the bytes read before the read stopped (`limit + 1`).
        size: u64,
        /// The limit, in bytes.
        limit: u64,
        /// Whether the file was within the limit when looked at, and grew
        /// past it while being read.
        grew: bool,
    },
    /// An I/O step failed.
    #[error("failed to {step} {path}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

fn not_regular_reason(kind: FileKind) -> String {
    match kind {
        FileKind::Symlink => {
            "it is a symbolic link, which is not followed here; only regular files are read"
                .to_owned()
        }
        kind => format!("it is {kind}, not a regular file; only regular files are read"),
    }
}

fn too_large_reason(size: u64, limit: u64, grew: bool) -> String {
    if grew {
        format!(
            "it grew past the record size limit of {limit} bytes while being read (more than {limit} bytes)"
        )
    } else {
        format!("it is {size} bytes, over the record size limit of {limit} bytes")
    }
}

impl ReadRecordError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadRecordError::NotRegular { path, .. }
            | ReadRecordError::TooLarge { path, .. }
            | ReadRecordError::Io { path, .. } => path,
        }
    }

    /// Why, without the path: for reports that already name the file.
    pub fn reason(&self) -> String {
        match self {
            ReadRecordError::NotRegular { kind, .. } => not_regular_reason(*kind),
            ReadRecordError::TooLarge {
                size, limit, grew, ..
            } => too_large_reason(*size, *limit, *grew),
            ReadRecordError::Io { step, source, .. } => format!("failed to {step} it: {source}"),
        }
    }
}

/// Reads a record file of at most `limit` bytes: the one way every binary
/// reads a record that a person or a handoff directory supplies.
///
/// - Only a regular file is read. Anything else (a directory, FIFO,
///   socket or device) is [`ReadRecordError::NotRegular`], decided from its
///   metadata before it is opened, so a FIFO cannot block the read.
/// - A symbolic link at `path` is refused or resolved, as `symlinks` says.
/// - A file larger than `limit` is [`ReadRecordError::TooLarge`], decided
///   from its metadata before reading.
/// - As defence in depth against the path changing between the look and the
///   open, the file is opened non-blocking (and, when symlinks are refused,
///   without following one), its kind and size are checked again on the
///   open handle, and the read stops after `limit + 1` bytes: a file that
///   grows while it is read is refused too, and memory stays bounded.
pub fn read_record_file(
    path: &Path,
    limit: u64,
    symlinks: Symlinks,
) -> Result<Vec<u8>, ReadRecordError> {
    let io = |step: &'static str| {
        move |source| ReadRecordError::Io {
            step,
            path: path.to_path_buf(),
            source,
        }
    };
    let not_regular = |kind| ReadRecordError::NotRegular {
        path: path.to_path_buf(),
        kind,
    };
    let too_large = |size, grew| ReadRecordError::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
        grew,
    };
    let mut meta = fs::symlink_metadata(path).map_err(io("look at"))?;
    if meta.file_type().is_symlink() {
        if symlinks == Symlinks::Refuse {
            return Err(not_regular(FileKind::Symlink));
        }
        meta = fs::metadata(path).map_err(io("resolve the symbolic link"))?;
    }
    if !meta.is_file() {
        return Err(not_regular(FileKind::of(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), false));
    }
    let mut file = open_nonblocking(path, symlinks).map_err(|e| {
        if symlinks == Symlinks::Refuse && is_symlink_refusal(&e) {
            not_regular(FileKind::Symlink)
        } else {
            io("open")(e)
        }
    })?;
    let meta = file.metadata().map_err(io("look at"))?;
    if !meta.is_file() {
        return Err(not_regular(FileKind::of(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), false));
    }
    // The size is at most `limit`, itself a sane allocation: no hint from
    // the file can make this reserve more.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&mut file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io("read"))?;
    let read = bytes.len() as u64;
    if read > limit {
        return Err(too_large(read, true));
    }
    Ok(bytes)
}

/// The default cap on an input file that is not a record (an intent, a
/// schedule manifest): 8 MiB, far above any real one.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;

/// Reads an input file a person supplies (an intent, a manifest, a draft,
/// the issue ledger, a key) the way [`read_record_file`] reads records,
/// symbolic links resolved: a FIFO, socket or device is refused without
/// being opened for reading, and at most `limit` bytes are read.
///
/// For callers whose errors already name the file and carry an
/// [`io::Error`]: a refusal is an error of kind `InvalidInput` (not a
/// regular file) or `FileTooLarge`, whose message is the reason alone; an
/// I/O failure is the OS error itself, so `NotFound` stays `NotFound`.
pub fn read_input_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_record_file(path, limit, Symlinks::Resolve).map_err(|e| match e {
        ReadRecordError::Io { source, .. } => source,
        ReadRecordError::NotRegular { kind, .. } => {
            io::Error::new(io::ErrorKind::InvalidInput, not_regular_reason(kind))
        }
        ReadRecordError::TooLarge { size, grew, .. } => {
            let reason = if grew {
                format!("it grew past the size limit of {limit} bytes while being read")
            } else {
                format!("it is {size} bytes, over the size limit of {limit} bytes")
            };
            io::Error::new(io::ErrorKind::FileTooLarge, reason)
        }
    })
}

/// [`read_input_file`] for text: the bytes must be UTF-8 (an error of kind
/// `InvalidData` naming the byte offset otherwise).
pub fn read_input_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_input_file(path, limit)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

#[cfg(unix)]
fn open_nonblocking(path: &Path, symlinks: Symlinks) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK;
    if symlinks == Symlinks::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    OpenOptions::new().read(true).custom_flags(flags).open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path, _symlinks: Symlinks) -> io::Result<File> {
    File::open(path)
}

/// Whether an open failed because `O_NOFOLLOW` met a symbolic link.
fn is_symlink_refusal(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
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
    fn a_target_name_at_the_limit_still_gets_a_temporary_file() {
        let d = scratch("longname");
        let p = d.join(format!("{}.json", "é".repeat(125)));
        assert_eq!(p.file_name().map(|n| n.len()), Some(255));
        assert_eq!(write_create_only(&p, b"one").expect("writes"), Created::New);
        write_atomic(&p, b"two").expect("replaces");
        assert_eq!(fs::read(&p).expect("reads"), b"two");
        assert_eq!(
            fs::read_dir(&d).expect("lists").count(),
            1,
            "no temporary left"
        );
        let _ = fs::remove_dir_all(&d);
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

    fn mkfifo(path: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(st.success());
    }

    #[test]
    fn create_only_over_a_fifo_is_a_conflict_not_a_hang() {
        let d = scratch("create-fifo");
        let p = d.join("a.json");
        mkfifo(&p);
        let (tx, rx) = std::sync::mpsc::channel();
        let target = p.clone();
        std::thread::spawn(move || {
            let _ = tx.send(write_create_only(&target, b"one"));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("write_create_only returns instead of blocking on the FIFO");
        assert!(matches!(got, Err(WriteError::Conflict { .. })), "{got:?}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_record_file_within_the_limit_is_read_whole() {
        let d = scratch("read-ok");
        let p = d.join("r.json");
        fs::write(&p, b"0123456789").expect("writes");
        let got = read_record_file(&p, 10, Symlinks::Refuse).expect("reads");
        assert_eq!(got, b"0123456789");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_record_file_over_the_limit_is_refused_from_its_size() {
        let d = scratch("read-big");
        let p = d.join("r.json");
        fs::write(&p, b"0123456789").expect("writes");
        let e = read_record_file(&p, 9, Symlinks::Refuse).expect_err("too large");
        assert!(
            matches!(
                e,
                ReadRecordError::TooLarge {
                    size: 10,
                    limit: 9,
                    grew: false,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "refused to read {}: it is 10 bytes, over the record size limit of 9 bytes",
                p.display()
            )
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = scratch("read-fifo");
        let p = d.join("pipe.json");
        mkfifo(&p);
        for symlinks in [Symlinks::Refuse, Symlinks::Resolve] {
            let e = read_record_file(&p, 100, symlinks).expect_err("not regular");
            assert!(
                matches!(
                    e,
                    ReadRecordError::NotRegular {
                        kind: FileKind::Fifo,
                        ..
                    }
                ),
                "{e:?}"
            );
            assert!(e.reason().contains("FIFO"), "{}", e.reason());
        }
        let _ = fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn input_files_are_read_bounded_and_errors_keep_their_kind() {
        let d = scratch("read-input");
        let pipe = d.join("intent.toml");
        mkfifo(&pipe);
        let e = read_input_file(&pipe, 100).expect_err("a FIFO is not read");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("FIFO"), "{e}");
        let big = d.join("manifest.toml");
        fs::write(&big, vec![b'#'; 101]).expect("writes");
        let e = read_input_file(&big, 100).expect_err("over the limit");
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(
            e.to_string(),
            "it is 101 bytes, over the size limit of 100 bytes"
        );
        let e = read_input_file(&d.join("absent"), 100).expect_err("absent");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let link = d.join("link.toml");
        std::os::unix::fs::symlink(&big, &link).expect("links");
        assert_eq!(read_input_file(&link, 200).expect("resolved").len(), 101);
        let latin1 = d.join("latin1.toml");
        fs::write(&latin1, b"name = \"caf\xe9\"").expect("writes");
        let e = read_input_text(&latin1, 100).expect_err("not UTF-8");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "it is not UTF-8 text (byte 11)");
        let _ = fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_or_resolved_as_asked() {
        let d = scratch("read-link");
        let target = d.join("target.json");
        fs::write(&target, b"{}").expect("writes");
        let link = d.join("link.json");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let e = read_record_file(&link, 100, Symlinks::Refuse).expect_err("refused");
        assert!(
            matches!(
                e,
                ReadRecordError::NotRegular {
                    kind: FileKind::Symlink,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            read_record_file(&link, 100, Symlinks::Resolve).expect("resolved"),
            b"{}"
        );

        let zero = d.join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let e = read_record_file(&zero, 100, Symlinks::Resolve).expect_err("a device");
        assert!(
            matches!(
                e,
                ReadRecordError::NotRegular {
                    kind: FileKind::CharDevice,
                    ..
                }
            ),
            "{e:?}"
        );
        let _ = fs::remove_dir_all(&d);
    }

    /// Files under /proc are regular files whose metadata says 0 bytes:
    /// exactly a file that holds more than its size when read. The bound on
    /// the read, not the metadata, refuses it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_that_holds_more_than_its_size_is_cut_at_the_limit() {
        let p = Path::new("/proc/self/status");
        let meta = fs::metadata(p).expect("procfs");
        assert!(meta.is_file() && meta.len() == 0, "{meta:?}");
        let e = read_record_file(p, 16, Symlinks::Refuse).expect_err("grew");
        assert!(
            matches!(
                e,
                ReadRecordError::TooLarge {
                    size: 17,
                    limit: 16,
                    grew: true,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.reason().contains("grew past"), "{}", e.reason());
    }
}
