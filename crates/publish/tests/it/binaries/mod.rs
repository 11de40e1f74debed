//! The real binaries the end-to-end tests run: `benchops-publish`, and
//! `benchops-exec` built beside it by any workspace build.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

/// `benchops-publish`.
pub const PUBLISH: &str = env!("CARGO_BIN_EXE_benchops-publish");

/// `benchops-exec`, built beside `benchops-publish` by any workspace build.
pub fn exec_bin() -> PathBuf {
    let p = Path::new(PUBLISH).with_file_name("benchops-exec");
    assert!(
        p.is_file(),
        "{} is missing: build the workspace binaries (`cargo build --bins`) first",
        p.display()
    );
    p
}

/// What a command that must succeed printed; both outputs in the failure.
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}
