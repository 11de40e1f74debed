//! How git names a blob: the id both history stores (a local repository,
//! or GitHub's) give the bytes they hold.

/// The git blob id of `bytes`: the SHA-1 (or, for a repository in the
/// SHA-256 object format, the SHA-256) of `blob <len>\0` followed by the
/// bytes, in lowercase hex.
pub fn git_blob_id(bytes: &[u8], sha256: bool) -> String {
    use sha2::Digest as _;
    let header = format!("blob {}\0", bytes.len());
    let digest: Vec<u8> = if sha256 {
        let mut h = sha2::Sha256::new();
        h.update(header.as_bytes());
        h.update(bytes);
        h.finalize().to_vec()
    } else {
        let mut h = sha1::Sha1::new();
        h.update(header.as_bytes());
        h.update(bytes);
        h.finalize().to_vec()
    };
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids `git hash-object` prints for an empty blob.
    #[test]
    fn ids_are_gits_own() {
        assert_eq!(
            git_blob_id(b"", false),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            git_blob_id(b"", true),
            "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
        );
    }
}
