//! The publication credentials: the one list of environment variables that
//! could publish results or mint a token that can. `lane run` (and every
//! command that starts lanes) refuses to run while one is set, and no child
//! ever sees one: the local workers, the Slurm tool calls and the child
//! wrapper remove them, with the name of the signing key.

/// Variables whose value can publish: GitHub tokens, the App's private key,
/// and what a GitHub Actions job uses to ask for an OIDC token or to talk
/// to the runner.
pub const PUBLICATION_CREDENTIALS: [&str; 7] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "BENCHOPS_APP_KEY_FILE",
    "BENCHOPS_APP_PRIVATE_KEY",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_RUNTIME_TOKEN",
];

/// The variable naming the key that signs sealed records: `lane run` may
/// hold it, but a benchmark never sees it.
pub const SIGNING_KEY: &str = "BENCHOPS_SIGN_KEY";

/// Every variable removed from a child's environment: the publication
/// credentials and the signing key's name.
pub fn removed_from_children() -> impl Iterator<Item = &'static str> {
    PUBLICATION_CREDENTIALS
        .into_iter()
        .chain(std::iter::once(SIGNING_KEY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_lose_every_credential_and_the_signing_key() {
        let removed: Vec<&str> = removed_from_children().collect();
        for v in PUBLICATION_CREDENTIALS {
            assert!(removed.contains(&v), "{v}");
        }
        assert!(removed.contains(&SIGNING_KEY));
        assert!(!PUBLICATION_CREDENTIALS.contains(&SIGNING_KEY));
    }
}
