//! Signed seals from the real binary: `keygen` writes an OpenSSH key pair
//! that never overwrites; `seal --sign-key` (or `BENCHOPS_SIGN_KEY`) writes
//! `<hex>.json.sig` beside the record, which stock `ssh-keygen -Y verify`
//! accepts; a key that others may read, or one that is not Ed25519, is
//! refused before anything is written.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn exec() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_benchops-exec"));
    c.env_remove("BENCHOPS_SIGN_KEY");
    c
}

fn example_draft() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/result.draft.json")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\n{}\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

fn ssh_verify(allowed: &Path, principal: &str, sig: &Path, record: &Path) -> bool {
    Command::new("ssh-keygen")
        .args(["-Y", "verify", "-f"])
        .arg(allowed)
        .args(["-I", principal, "-n", "benchops-result", "-s"])
        .arg(sig)
        .stdin(std::fs::File::open(record).expect("record"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("ssh-keygen runs (openssh-client; scripts/test-deps.sh installs it)")
        .success()
}

#[test]
fn keygen_then_seal_signed_and_openssh_verifies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let key = tmp.path().join("nightly.key");
    let out = ok(&exec()
        .args(["keygen", "--out"])
        .arg(&key)
        .args(["--comment", "lane nightly"])
        .output()
        .expect("runs"));
    let public_line = out.trim().to_owned();
    assert!(public_line.starts_with("ssh-ed25519 "), "{public_line}");
    assert_eq!(
        std::fs::read_to_string(key.with_extension("key.pub"))
            .expect("public")
            .trim(),
        public_line
    );
    // Never overwrites.
    let again = exec()
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .expect("runs");
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("never overwrites"),
        "{}",
        text(&again.stderr)
    );

    let sealed = tmp.path().join("sealed");
    let o = ok(&exec()
        .arg("seal")
        .arg(example_draft())
        .arg("--out")
        .arg(&sealed)
        .arg("--sign-key")
        .arg(&key)
        .output()
        .expect("runs"));
    assert!(o.contains("(signed: "), "{o}");
    let record = std::fs::read_dir(&sealed)
        .expect("lists")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("the record");
    let sig = PathBuf::from(format!("{}.sig", record.display()));
    assert!(sig.is_file());
    let lane = serde_json::from_slice::<Value>(&std::fs::read(&record).expect("record"))
        .expect("json")["lane"]
        .as_str()
        .expect("lane")
        .to_owned();
    let allowed = tmp.path().join("allowed_signers");
    std::fs::write(&allowed, format!("{lane} {public_line}\n")).expect("allowed");
    assert!(ssh_verify(&allowed, &lane, &sig, &record));
    assert!(!ssh_verify(&allowed, "someone-else", &sig, &record));

    // The environment variable names the key; sealing again is a no-op
    // with the same (deterministic) signature.
    let before = std::fs::read(&sig).expect("sig");
    let o = ok(&exec()
        .arg("seal")
        .arg(example_draft())
        .arg("--out")
        .arg(&sealed)
        .env("BENCHOPS_SIGN_KEY", &key)
        .output()
        .expect("runs"));
    assert!(o.starts_with("already sealed"), "{o}");
    assert_eq!(std::fs::read(&sig).expect("sig"), before);
}

#[test]
fn unusable_keys_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let key = tmp.path().join("k");
    ok(&exec()
        .args(["keygen", "--out"])
        .arg(&key)
        .output()
        .expect("runs"));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let sealed = tmp.path().join("sealed");
    let seal = |key: &Path| {
        exec()
            .arg("seal")
            .arg(example_draft())
            .arg("--out")
            .arg(&sealed)
            .arg("--sign-key")
            .arg(key)
            .output()
            .expect("runs")
    };
    let o = seal(&key);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("chmod 600"), "{}", text(&o.stderr));
    assert!(!sealed.exists(), "nothing written");

    let rsa = tmp.path().join("rsa");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f"])
        .arg(&rsa)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success());
    let o = seal(&rsa);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("Ed25519"), "{}", text(&o.stderr));
    let o = seal(&tmp.path().join("missing"));
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("missing"), "{}", text(&o.stderr));
    assert!(!sealed.exists(), "nothing written");
}
