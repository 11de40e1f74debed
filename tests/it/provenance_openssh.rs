//! Signed seals interoperate with stock OpenSSH (`ssh-keygen` from Debian's
//! `openssh-client`): what benchops signs, `ssh-keygen -Y verify` accepts;
//! what `ssh-keygen -Y sign` signs, benchops accepts; and each way a
//! signature can be wrong is rejected with its own reason, the same way
//! `ssh-keygen` rejects it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use benchops::provenance::{AllowedSigners, NAMESPACE, Rejection, private_key, sign, verify};
use jiff::Timestamp;

const RECORD: &[u8] = br#"{"lane":"nightly","schema":"benchmark-result/v2"}"#;

fn ssh_keygen() -> Command {
    let c = Command::new("ssh-keygen");
    assert!(
        Command::new("ssh-keygen")
            .arg("-?")
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .is_ok(),
        "ssh-keygen is missing: install openssh-client (scripts/test-deps.sh does)"
    );
    c
}

/// An Ed25519 key pair made by ssh-keygen: (private key file, public key
/// line).
fn keypair(dir: &Path, name: &str) -> (PathBuf, String) {
    let key = dir.join(name);
    let o = ssh_keygen()
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("public key");
    (key, public.trim().to_owned())
}

fn key_line(public: &str) -> String {
    // "ssh-ed25519 AAAA… comment" → "ssh-ed25519 AAAA…"
    public
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ssh-keygen -Y verify` of `record` with `sig` for `principal`.
fn openssh_verifies(dir: &Path, allowed: &str, principal: &str, sig: &str, record: &[u8]) -> bool {
    let signers = dir.join("allowed_signers.check");
    std::fs::write(&signers, allowed).expect("allowed_signers");
    let sig_path = dir.join("record.json.sig.check");
    std::fs::write(&sig_path, sig).expect("sig");
    let mut child = ssh_keygen()
        .args(["-Y", "verify", "-f"])
        .arg(&signers)
        .args(["-I", principal, "-n", NAMESPACE, "-s"])
        .arg(&sig_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ssh-keygen runs");
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(record)
            .expect("write");
    }
    child.wait().expect("waits").success()
}

/// `ssh-keygen -Y sign` of `record` in `namespace`.
fn openssh_signs(dir: &Path, key: &Path, namespace: &str, record: &[u8]) -> String {
    let file = dir.join("to-sign.json");
    std::fs::write(&file, record).expect("record");
    let o = ssh_keygen()
        .args(["-Y", "sign", "-f"])
        .arg(key)
        .args(["-n", namespace])
        .arg(&file)
        .output()
        .expect("ssh-keygen runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sig = std::fs::read_to_string(dir.join("to-sign.json.sig")).expect("signature");
    std::fs::remove_file(dir.join("to-sign.json.sig")).expect("cleanup");
    sig
}

fn now() -> Timestamp {
    "2026-12-02T12:00:00Z".parse().expect("time")
}

#[test]
fn benchops_signs_and_openssh_verifies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (key, public) = keypair(tmp.path(), "exec");
    let private =
        private_key(&std::fs::read_to_string(&key).expect("key")).expect("an Ed25519 key");
    let sig = sign(RECORD, &private).expect("signs");
    assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"), "{sig}");
    // Deterministic: the same key and bytes give the same signature.
    assert_eq!(sign(RECORD, &private).expect("signs"), sig);
    let allowed = format!("nightly {}\n", key_line(&public));
    assert!(openssh_verifies(
        tmp.path(),
        &allowed,
        "nightly",
        &sig,
        RECORD
    ));
    // OpenSSH also refuses what benchops refuses.
    assert!(!openssh_verifies(
        tmp.path(),
        &allowed,
        "sentinel",
        &sig,
        RECORD
    ));
    let mut tampered = RECORD.to_vec();
    tampered[10] ^= 1;
    assert!(!openssh_verifies(
        tmp.path(),
        &allowed,
        "nightly",
        &sig,
        &tampered
    ));
    // And benchops accepts its own signature.
    let signers = AllowedSigners::parse(&allowed).expect("parses");
    let ok = verify(RECORD, sig.as_bytes(), &signers, "nightly", now()).expect("verifies");
    assert!(ok.fingerprint.starts_with("SHA256:"));
    assert_eq!(ok.line, 1);
}

#[test]
fn openssh_signs_and_benchops_verifies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (key, public) = keypair(tmp.path(), "exec");
    let sig = openssh_signs(tmp.path(), &key, NAMESPACE, RECORD);
    let allowed = format!(
        "# execution hosts\n\n\"nightly,sentinel\" namespaces=\"{NAMESPACE}\",valid-after=\"20260101Z\" {}\n",
        public
    );
    let signers = AllowedSigners::parse(&allowed).expect("parses");
    let ok = verify(RECORD, sig.as_bytes(), &signers, "sentinel", now()).expect("verifies");
    assert_eq!(ok.line, 3);
    assert!(openssh_verifies(
        tmp.path(),
        &allowed,
        "sentinel",
        &sig,
        RECORD
    ));
}

#[test]
fn each_bad_signature_has_its_own_reason() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (key, public) = keypair(tmp.path(), "exec");
    let (other_key, other_public) = keypair(tmp.path(), "other");
    let signed = openssh_signs(tmp.path(), &key, NAMESPACE, RECORD);
    let allowed = AllowedSigners::parse(&format!("nightly {public}\n")).expect("parses");
    let check = |record: &[u8], sig: &str, signers: &AllowedSigners, principal: &str| {
        verify(record, sig.as_bytes(), signers, principal, now()).expect_err("rejected")
    };

    // A tampered record with the old signature.
    let mut tampered = RECORD.to_vec();
    tampered[3] ^= 1;
    let r = check(&tampered, &signed, &allowed, "nightly");
    assert_eq!(r.kind(), "bad_signature", "{r}");
    assert!(r.to_string().contains("does not match the record's bytes"));

    // A tampered signature: one base64 character of the signature blob.
    let mut lines: Vec<String> = signed.lines().map(str::to_owned).collect();
    let last = lines.len() - 2;
    let mut chars: Vec<char> = lines[last].chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    lines[last] = chars.into_iter().collect();
    let bad = lines.join("\n") + "\n";
    let r = check(RECORD, &bad, &allowed, "nightly");
    assert!(
        matches!(r.kind(), "bad_signature" | "malformed"),
        "{r}: a changed byte is either caught by the signature or by the encoding"
    );
    assert!(!openssh_verifies(
        tmp.path(),
        &format!("nightly {public}\n"),
        "nightly",
        &bad,
        RECORD
    ));
    let r = check(RECORD, "not a signature\n", &allowed, "nightly");
    assert_eq!(r.kind(), "malformed");

    // Another namespace.
    let git = openssh_signs(tmp.path(), &key, "git", RECORD);
    let r = check(RECORD, &git, &allowed, "nightly");
    assert_eq!(
        r,
        Rejection::Namespace {
            found: "git".into()
        }
    );

    // A key not in allowed_signers.
    let stranger = openssh_signs(tmp.path(), &other_key, NAMESPACE, RECORD);
    let r = check(RECORD, &stranger, &allowed, "nightly");
    assert_eq!(r.kind(), "unknown_key", "{r}");

    // A signer allowed for another lane.
    let both = AllowedSigners::parse(&format!("sentinel {public}\nnightly {other_public}\n"))
        .expect("parses");
    let r = check(RECORD, &signed, &both, "nightly");
    assert_eq!(r.kind(), "wrong_principal", "{r}");
    // Negation: every lane but nightly.
    let negated = AllowedSigners::parse(&format!("\"*,!nightly\" {public}\n")).expect("parses");
    assert_eq!(
        check(RECORD, &signed, &negated, "nightly").kind(),
        "wrong_principal"
    );
    assert!(verify(RECORD, signed.as_bytes(), &negated, "sentinel", now()).is_ok());
    // A key limited to other namespaces.
    let ns = AllowedSigners::parse(&format!("nightly namespaces=\"git,file\" {public}\n"))
        .expect("parses");
    assert_eq!(
        check(RECORD, &signed, &ns, "nightly").kind(),
        "wrong_principal"
    );

    // A key outside its validity window, both ways.
    for window in [
        "valid-before=\"20261201Z\"",
        "valid-after=\"20270101000000Z\"",
    ] {
        let allowed_text = format!("nightly {window} {public}\n");
        let w = AllowedSigners::parse(&allowed_text).expect("parses");
        let r = check(RECORD, &signed, &w, "nightly");
        assert_eq!(r.kind(), "outside_validity", "{r}");
        assert!(
            r.to_string().contains("not valid at 2026-12-02T12:00:00Z"),
            "{r}"
        );
    }
    // The ends of a window are inside it, as for ssh-keygen.
    let edge = AllowedSigners::parse(&format!(
        "nightly valid-after=\"20261202120000Z\",valid-before=\"20261202120000Z\" {public}\n"
    ))
    .expect("parses");
    assert!(verify(RECORD, signed.as_bytes(), &edge, "nightly", now()).is_ok());
    // The wildcard principal.
    let any = AllowedSigners::parse(&format!("* {public}\n")).expect("parses");
    assert!(verify(RECORD, signed.as_bytes(), &any, "nightly", now()).is_ok());
}

#[test]
fn allowed_signers_errors_name_the_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_, public) = keypair(tmp.path(), "exec");
    for (text, line, says) in [
        (
            "# c\nnightly ssh-ed25519 AAAAnotbase64\n".to_owned(),
            2,
            "does not parse",
        ),
        ("nightly\n".to_owned(), 1, "no key"),
        (
            format!("\n\nnightly frobnicate {public}\n"),
            3,
            "unknown option",
        ),
        (
            format!("nightly valid-after=\"2026\" {public}\n"),
            1,
            "YYYYMMDD",
        ),
        (
            format!("nightly valid-before=\"20261340Z\" {public}\n"),
            1,
            "not a valid time",
        ),
        (
            format!("nightly cert-authority {public}\n"),
            1,
            "cert-authority",
        ),
        (format!("nightly, {public}\n"), 1, "empty principal"),
    ] {
        let e = AllowedSigners::parse(&text).expect_err(&text);
        assert_eq!(e.line, line, "{text}: {e}");
        assert!(e.reason.contains(says), "{text}: {e}");
    }
}

#[test]
fn only_unencrypted_ed25519_keys_sign() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let key = tmp.path().join("locked");
    let o = ssh_keygen()
        .args(["-q", "-t", "ed25519", "-N", "a passphrase", "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen runs");
    assert!(o.status.success());
    let e = private_key(&std::fs::read_to_string(&key).expect("key")).expect_err("encrypted");
    assert!(e.to_string().contains("passphrase"), "{e}");
    let ecdsa = tmp.path().join("ecdsa");
    let o = ssh_keygen()
        .args(["-q", "-t", "ecdsa", "-N", "", "-f"])
        .arg(&ecdsa)
        .output()
        .expect("ssh-keygen runs");
    assert!(o.status.success());
    let e = private_key(&std::fs::read_to_string(&ecdsa).expect("key")).expect_err("not ed25519");
    assert!(e.to_string().contains("Ed25519"), "{e}");
    assert!(private_key("junk").is_err());
}

#[test]
fn signer_names_the_key_that_verifies_without_any_trust() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (key, public) = keypair(tmp.path(), "exec");
    let signed = openssh_signs(tmp.path(), &key, NAMESPACE, RECORD);
    let fp = benchops::provenance::signer(RECORD, signed.as_bytes()).expect("self-consistent");
    let parsed = ssh_key::PublicKey::from_openssh(&public).expect("public key");
    assert_eq!(fp, benchops::provenance::fingerprint(&parsed));
    assert!(fp.starts_with("SHA256:"), "{fp}");

    let mut tampered = RECORD.to_vec();
    tampered[0] ^= 1;
    let r = benchops::provenance::signer(&tampered, signed.as_bytes()).expect_err("tampered");
    assert_eq!(r.kind(), "bad_signature", "{r}");
    let other_ns = openssh_signs(tmp.path(), &key, "file", RECORD);
    let r = benchops::provenance::signer(RECORD, other_ns.as_bytes()).expect_err("namespace");
    assert_eq!(r.kind(), "namespace", "{r}");
    let r = benchops::provenance::signer(RECORD, b"not a signature").expect_err("malformed");
    assert_eq!(r.kind(), "malformed", "{r}");
}
