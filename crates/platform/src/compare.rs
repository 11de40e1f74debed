//! What may be compared across platforms.
//!
//! A row's `platform_comparison_key` is `<semantics version>:<class>:<protection
//! variant>`: the variant is part of the key because a `protection-none` run
//! and a `check-instant` run of the same class are different hosted
//! workflows. `semantic_contract_match` says the run executed a declared
//! class under an implemented variant that its driver can actually execute
//! (the CLI driver cannot post a commit status, so it never executes
//! `check-instant`; the fake provider executes no hosted workflow at all).
//! [`comparable`] is the one rule consumers apply.

use super::row::Row;
use super::spec::Semantics;

/// The comparison key, or `None` without a semantics version.
pub fn comparison_key(version: Option<&str>, class: &str, variant: &str) -> Option<String> {
    version
        .filter(|v| !v.is_empty())
        .map(|v| format!("{v}:{class}:{variant}"))
}

/// Whether `driver` on `platform` can execute `variant`.
pub fn variant_executable(platform: &str, driver: &str, variant: &str) -> bool {
    match driver {
        "fake-provider" => false,
        "cli" if platform == "github" && variant == "check-instant" => false,
        _ => true,
    }
}

/// Whether a run of `platform` by `driver` under `variant` executes the
/// semantics contract: the class is declared, the variant implemented and
/// executable by the driver, and the platform has a semantics version.
pub fn contract_match(semantics: &Semantics, platform: &str, driver: &str, variant: &str) -> bool {
    let Some(p) = semantics.platforms.get(platform) else {
        return false;
    };
    p.semantics_version
        .as_deref()
        .is_some_and(|v| !v.is_empty())
        && semantics.classes.contains(&p.class)
        && semantics.implemented.iter().any(|v| v == variant)
        && variant_executable(platform, driver, variant)
}

/// Whether two rows may be compared: both ran (not skipped), both match
/// the contract, both have a semantics version, and they share the
/// comparison key, the scenario and the operation.
pub fn comparable(a: &Row, b: &Row) -> bool {
    let ok = |r: &Row| {
        !r.skipped
            && r.semantic_contract_match
            && r.meta
                .platform_semantics_version
                .as_deref()
                .is_some_and(|v| !v.is_empty())
            && r.meta.platform_comparison_key.is_some()
    };
    ok(a)
        && ok(b)
        && a.meta.platform_comparison_key == b.meta.platform_comparison_key
        && a.scenario == b.scenario
        && a.operation == b.operation
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Meta;

    fn meta(platform: &str, version: Option<&str>, variant: &str) -> Meta {
        Meta {
            run_id: "r".into(),
            profile: crate::row::PROFILE.into(),
            benchmark_track: crate::row::BENCHMARK_TRACK.into(),
            platform: platform.into(),
            driver: "harness-api".into(),
            platform_semantics_class: Some("integration-default".into()),
            platform_semantics_version: version.map(str::to_owned),
            protection_variant: variant.into(),
            platform_comparison_key: comparison_key(version, "integration-default", variant),
            repo: None,
            token_env: "T".into(),
            clock: "c".into(),
            measurement_lock_wait_ms: None,
        }
    }

    fn row(m: &Meta, op: &str) -> Row {
        let mut r = Row::new(m, "pr_single_anatomy", 0, op);
        r.semantic_contract_match = true;
        r
    }

    #[test]
    fn only_matching_measured_rows_with_a_version_compare() {
        let gh = meta("github", Some("3"), "protection-none");
        let oak = meta("oak", Some("3"), "protection-none");
        let a = row(&gh, "integration.open");
        let b = row(&oak, "integration.open");
        assert!(comparable(&a, &b));
        assert!(
            !comparable(&a, &row(&oak, "branch.publish")),
            "another operation"
        );
        let ci = meta("oak", Some("3"), "check-instant");
        assert!(
            !comparable(&a, &row(&ci, "integration.open")),
            "another variant"
        );
        let unversioned = meta("oak", None, "protection-none");
        assert!(!comparable(&a, &row(&unversioned, "integration.open")));
        let mut skipped = b.clone();
        skipped.skipped = true;
        assert!(!comparable(&a, &skipped), "a skip never compares");
        let mut unmatched = b.clone();
        unmatched.semantic_contract_match = false;
        assert!(!comparable(&a, &unmatched));
    }

    #[test]
    fn the_cli_driver_does_not_execute_check_instant_and_fakes_execute_nothing() {
        assert!(!variant_executable("github", "cli", "check-instant"));
        assert!(variant_executable("github", "harness-api", "check-instant"));
        assert!(variant_executable("github", "cli", "protection-none"));
        assert!(!variant_executable(
            "github",
            "fake-provider",
            "protection-none"
        ));
        assert_eq!(comparison_key(Some(""), "c", "v"), None);
        assert_eq!(
            comparison_key(Some("2"), "c", "v").as_deref(),
            Some("2:c:v")
        );
    }
}
