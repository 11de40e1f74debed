//! Helpers shared by the tests that feed `benchops-publish` hostile files:
//! running the real binary with a deadline (so that a regression that hangs
//! fails instead of stalling the suite), and making FIFOs.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a command on a handful of small files may take before it is
/// called hung. Far above what it needs, so that only a hang trips it.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `benchops-publish` with `args`; kills it and fails the test if it
/// has not exited within [`DEADLINE`].
pub fn run_bounded(args: &[&OsStr]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchops-publish"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("benchops-publish starts");
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits for benchops-publish") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "benchops-publish {:?} did not finish within {} s: it hangs",
                args,
                DEADLINE.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// Makes a FIFO at `path` with the system's `mkfifo`.
pub fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(st.success(), "mkfifo {}", path.display());
}
