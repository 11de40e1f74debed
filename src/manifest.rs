//! `schedule-manifest/v1`: the repository-owned schedule (lanes, cron, time
//! zone, completion window, covered cases, baseline policy, labels); v2
//! adds the suite and each lane's comparison settings, v3 each lane's
//! confirmation mode and bisection budget. Every version stays readable.
//!
//! Loading follows the same path as intents: TOML → JSON data model →
//! canonical form → schema → typed value → semantic checks. The manifest
//! digest is the sha256 of the canonical form.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::gc_policy::{ByteSize, DEFAULT_GC_KEEP_DAYS, GcPolicy};
pub use crate::schedule::CatchUp;

use crate::digest::Sha256Digest;
use crate::jcs;
use crate::names::LaneName;
use crate::path::JsonPath;
use crate::schema::Contract;

/// A validated schedule manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `schedule-manifest/v1`, `/v2` or `/v3`.
    pub schema: String,
    /// `owner/name`, when the manifest names its repository.
    #[serde(default)]
    pub repository: Option<String>,
    /// Labels the publisher uses.
    #[serde(default)]
    pub labels: Labels,
    /// Signed seals: who may sign, and which lanes must be signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing: Option<Signing>,
    /// The lanes.
    pub lanes: Vec<Lane>,
    /// v2 and v3: the benchmark intent files of the suite a lane run measures,
    /// relative to the manifest file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<Vec<String>>,
    /// v3: how to build the subject's tree at a commit before it is
    /// measured beside another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<SubjectBuild>,
    /// v3: how much of the state directory `lane due --run` keeps
    /// (`benchops-exec gc` with this policy after the lanes had their turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcPolicy>,
}

/// The subject's build step (v3): run once per commit and machine in the
/// exported tree, before the tree is measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubjectBuild {
    /// Program and arguments.
    pub command: Vec<String>,
    /// Wall-clock limit in seconds; [`DEFAULT_BUILD_TIMEOUT_S`] when absent.
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

/// The build step's wall-clock limit when the manifest gives none.
pub const DEFAULT_BUILD_TIMEOUT_S: f64 = 1800.0;

/// Signed seals ([`crate::provenance`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signing {
    /// The OpenSSH `allowed_signers` file, relative to the manifest.
    pub allowed_signers: String,
    /// Lanes whose records must be signed; `*` is every lane.
    #[serde(default)]
    pub require: Vec<String>,
}

impl Signing {
    /// Whether records of `lane` must carry a signature.
    pub fn requires(&self, lane: &str) -> bool {
        self.require.iter().any(|r| r == "*" || r == lane)
    }
}

impl Manifest {
    /// Whether records of `lane` must be signed.
    pub fn requires_signature(&self, lane: &str) -> bool {
        self.signing.as_ref().is_some_and(|s| s.requires(lane))
    }
}

/// Issue labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labels {
    /// Put on every drift issue.
    #[serde(default = "default_drift_label")]
    pub drift: String,
    /// Set by a human to accept a drift: no more comments or reopening.
    #[serde(default = "default_accepted_label")]
    pub accepted: String,
    /// Prefix of the per-lane labels (`lane:comprehensive`).
    #[serde(default = "default_lane_prefix")]
    pub lane_prefix: String,
}

fn default_drift_label() -> String {
    "benchmark-drift".into()
}
fn default_accepted_label() -> String {
    "drift-accepted".into()
}
fn default_lane_prefix() -> String {
    "lane:".into()
}

impl Default for Labels {
    fn default() -> Self {
        Labels {
            drift: default_drift_label(),
            accepted: default_accepted_label(),
            lane_prefix: default_lane_prefix(),
        }
    }
}

/// Baseline policy of a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaselinePolicy {
    /// The pointer moves only by hand.
    Pinned,
    /// The pointer follows the last clean record the lane proposes.
    LastClean,
}

/// One scheduled lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lane {
    /// The lane name.
    pub name: LaneName,
    /// Five-field cron expression.
    pub cron: String,
    /// IANA time zone the cron is evaluated in.
    pub timezone: String,
    /// Minutes after a slot by which its record must exist.
    pub completion_window_minutes: u32,
    /// Covered case ids; `*` covers every case.
    pub cases: Vec<String>,
    /// Baseline policy.
    pub baseline: BaselinePolicy,
    /// v2: how a lane run compares and confirms; every key has a default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<LaneComparison>,
    /// v3: how suspects and clears are confirmed; `same-session` when
    /// absent (a lane run falls back to `stored-baseline`, and records why,
    /// when the subject cannot be measured at the baseline commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<crate::record::ConfirmModeKind>,
    /// v3: the culprit bisection's budget; every key has a default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisect: Option<LaneBisect>,
    /// v3: what `lane due` does with a slot that was not run on time
    /// (default `latest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
}

/// A lane's culprit bisection (v3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LaneBisect {
    /// Whether a confirmed regression is bisected (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Most steps; default ⌈log2 N⌉ + 2 for a range of N candidate commits.
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Most wall time, in minutes; default half the completion window.
    #[serde(default)]
    pub max_minutes: Option<u32>,
}

/// Extra steps a bisection may take beyond ⌈log2 N⌉, for steps that do
/// not decide and are measured again.
pub const BISECT_SPARE_STEPS: usize = 2;

/// Band settings of one metric (v2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct BandOverrides {
    /// Relative threshold (0.03 is 3%).
    #[serde(default)]
    pub relative_threshold: Option<f64>,
    /// Smallest absolute effect, in the metric's unit.
    #[serde(default)]
    pub min_absolute: Option<f64>,
    /// Multiple of the baseline's scaled MAD.
    #[serde(default)]
    pub noise_fence_mads: Option<f64>,
}

/// A lane's comparison settings (v2); see [`crate::compare::Settings`] for
/// the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LaneComparison {
    /// Metrics compared.
    #[serde(default)]
    pub metrics: Option<Vec<String>>,
    /// Relative threshold.
    #[serde(default)]
    pub relative_threshold: Option<f64>,
    /// Smallest absolute effect.
    #[serde(default)]
    pub min_absolute: Option<f64>,
    /// Multiple of the baseline's scaled MAD.
    #[serde(default)]
    pub noise_fence_mads: Option<f64>,
    /// Measured re-runs of each suspect.
    #[serde(default)]
    pub confirm_runs: Option<u32>,
    /// Level of the first look.
    #[serde(default)]
    pub level: Option<f64>,
    /// Level that confirms a drift.
    #[serde(default)]
    pub confirm_level: Option<f64>,
    /// Bootstrap resamples.
    #[serde(default)]
    pub resamples: Option<u64>,
    /// Policy seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Per-metric band settings.
    #[serde(default)]
    pub per_metric: std::collections::BTreeMap<String, BandOverrides>,
}

impl Lane {
    /// What `lane due` does with a slot that was not run on time.
    pub fn catch_up(&self) -> CatchUp {
        self.catch_up.unwrap_or_default()
    }

    /// How this lane asks for suspects and clears to be confirmed.
    pub fn confirm_mode(&self) -> crate::record::ConfirmModeKind {
        self.confirm
            .unwrap_or(crate::record::ConfirmModeKind::SameSession)
    }

    /// Whether a confirmed regression is bisected.
    pub fn bisects(&self) -> bool {
        self.bisect.and_then(|b| b.enabled).unwrap_or(true)
    }

    /// The bisection's budget of steps for a range of `len` commits (the
    /// good bound, the candidates and the bad bound).
    pub fn bisect_steps(&self, len: usize) -> usize {
        self.bisect.and_then(|b| b.max_steps).map_or(
            crate::bisect::Bisection::steps_needed(len) + BISECT_SPARE_STEPS,
            |n| n as usize,
        )
    }

    /// The bisection's budget of wall time, in seconds.
    pub fn bisect_seconds(&self) -> u64 {
        self.bisect
            .and_then(|b| b.max_minutes)
            .map_or(u64::from(self.completion_window_minutes) * 30, |m| {
                u64::from(m) * 60
            })
    }

    /// The comparison settings of this lane: defaults, then the manifest's.
    pub fn comparison_settings(&self) -> crate::compare::Settings {
        let mut s = crate::compare::Settings::default();
        let Some(c) = &self.comparison else {
            return s;
        };
        let merge =
            |base: crate::compare::BandSettings, o: &BandOverrides| crate::compare::BandSettings {
                threshold: o.relative_threshold.unwrap_or(base.threshold),
                min_absolute: o.min_absolute.unwrap_or(base.min_absolute),
                noise_fence_mads: o.noise_fence_mads.unwrap_or(base.noise_fence_mads),
            };
        s.band = merge(
            s.band,
            &BandOverrides {
                relative_threshold: c.relative_threshold,
                min_absolute: c.min_absolute,
                noise_fence_mads: c.noise_fence_mads,
            },
        );
        s.per_metric = c
            .per_metric
            .iter()
            .map(|(k, o)| (k.clone(), merge(s.band, o)))
            .collect();
        s.metrics = c.metrics.clone();
        s.confirm_runs = c.confirm_runs.unwrap_or(s.confirm_runs);
        s.level = c.level.unwrap_or(s.level);
        s.confirm_level = c.confirm_level.unwrap_or(s.confirm_level);
        s.resamples = c.resamples.map_or(s.resamples, |r| r as usize);
        s.seed = c.seed.unwrap_or(s.seed);
        s
    }
}

impl Lane {
    /// The metrics this lane compares by name that the suite's intents can
    /// never report, when that can be told from the intents alone: an
    /// intent without `[metrics] json_lines` reports the built-in metrics
    /// only ([`crate::analysis::BUILTIN_METRICS`]). `None` when some intent
    /// reads metrics from its output, whose names only a run shows (`lane
    /// run` checks them then).
    pub fn unreportable_metrics(&self, intents: &[&crate::intent::Intent]) -> Option<Vec<String>> {
        if intents.is_empty() || intents.iter().any(|i| i.metrics.json_lines) {
            return None;
        }
        let reported: BTreeSet<&str> = crate::analysis::BUILTIN_METRICS.into_iter().collect();
        let settings = self.comparison_settings();
        Some(
            settings
                .unreported_metrics(&reported)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        )
    }

    /// Whether the lane covers `case`.
    pub fn covers(&self, case: &str) -> bool {
        self.cases.iter().any(|c| c == "*" || c == case)
    }
}

/// A manifest with its canonical form and digest.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedManifest {
    /// The typed manifest.
    pub manifest: Manifest,
    /// `sha256` of the canonical form.
    pub digest: Sha256Digest,
}

/// One problem in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestIssue {
    /// Where.
    pub path: JsonPath,
    /// Why.
    pub reason: String,
}

/// Why a manifest could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not TOML.
    #[error("{source_name}: not valid TOML:\n{}", indent(reason))]
    Toml {
        /// Label of the source.
        source_name: String,
        /// The parser's message.
        reason: String,
    },
    /// Valid TOML that violates the contract.
    #[error("{source_name}: invalid schedule manifest:{}", .issues.iter().map(|i| format!("\n  - {}: {}", i.path, i.reason)).collect::<String>())]
    Invalid {
        /// Label of the source.
        source_name: String,
        /// Every problem found.
        issues: Vec<ManifestIssue>,
    },
}

/// `text` with every line indented, for a parser's diagram under a heading.
fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lanes whose cron expression or time zone cannot be evaluated, one
/// issue each (`$.lanes[i].cron`, `$.lanes[i].timezone`). A loaded
/// manifest may hold such a lane, so that publication goes on for the
/// others; `check-manifest`, `bench seal` and `lane run` refuse it, by this
/// one check.
pub fn schedule_issues(m: &Manifest) -> Vec<ManifestIssue> {
    let mut out = Vec::new();
    for (i, lane) in m.lanes.iter().enumerate() {
        if let Err(e) = crate::schedule::Schedule::parse(&lane.cron, &lane.timezone) {
            let field = match e {
                crate::schedule::ScheduleError::TimeZone { .. } => "timezone",
                _ => "cron",
            };
            out.push(ManifestIssue {
                path: JsonPath::root().key("lanes").index(i).key(field),
                reason: format!("lane `{}`: {e}", lane.name),
            });
        }
    }
    out
}

/// Loads a manifest from TOML text.
pub fn from_toml(text: &str, source_name: &str) -> Result<LoadedManifest, ManifestError> {
    let value: Value = toml::from_str(text).map_err(|e: toml::de::Error| ManifestError::Toml {
        source_name: source_name.to_owned(),
        reason: e.to_string().trim().to_owned(),
    })?;
    let invalid = |issues| ManifestError::Invalid {
        source_name: source_name.to_owned(),
        issues,
    };
    let bytes = jcs::canonical_bytes(&value);
    let canonical = jcs::parse(&bytes).map_err(|e| {
        invalid(vec![ManifestIssue {
            path: JsonPath::root(),
            reason: e.to_string(),
        }])
    })?;
    let contract = match crate::schema::schema_tag(&canonical) {
        Some(("schedule-manifest", 2)) => Contract::ScheduleManifestV2,
        Some(("schedule-manifest", 3)) => Contract::ScheduleManifestV3,
        Some(("schedule-manifest", v)) if v != 1 => {
            return Err(invalid(vec![ManifestIssue {
                path: JsonPath::root().key("schema"),
                reason: format!(
                    "schedule-manifest/v{v} is not known to this build (it reads v1, v2 and v3)"
                ),
            }]));
        }
        _ => Contract::ScheduleManifestV1,
    };
    if let Err(v) = contract.validate(&canonical) {
        return Err(invalid(
            v.into_iter()
                .map(|v| ManifestIssue {
                    path: v.path,
                    reason: v.reason,
                })
                .collect(),
        ));
    }
    let manifest: Manifest = serde_json::from_value(canonical).map_err(|e| {
        invalid(vec![ManifestIssue {
            path: JsonPath::root(),
            reason: e.to_string(),
        }])
    })?;
    let mut issues = Vec::new();
    let mut names = BTreeSet::new();
    for (i, lane) in manifest.lanes.iter().enumerate() {
        if !names.insert(&lane.name) {
            issues.push(ManifestIssue {
                path: JsonPath::root().key("lanes").index(i).key("name"),
                reason: format!("lane `{}` is declared more than once", lane.name),
            });
        }
        // The bisection runs inside the lane run, before its record is
        // sealed: its budget must leave the run time to finish in the window.
        if let Some(max) = lane.bisect.and_then(|b| b.max_minutes)
            && max >= lane.completion_window_minutes
        {
            issues.push(ManifestIssue {
                path: JsonPath::root()
                    .key("lanes")
                    .index(i)
                    .key("bisect")
                    .key("max_minutes"),
                reason: format!(
                    "lane `{}`: bisect.max_minutes ({max}) must be less than its completion_window_minutes ({}); the bisection runs inside the lane run, before the record is sealed, so lower max_minutes (default: half the window) or widen the window",
                    lane.name, lane.completion_window_minutes
                ),
            });
        }
    }
    if let Some(Err(reason)) = manifest
        .gc
        .iter()
        .flat_map(|g| &g.max_bytes)
        .map(ByteSize::bytes)
        .next()
    {
        let path = JsonPath::root().key("gc").key("max_bytes");
        issues.push(ManifestIssue { path, reason });
    }
    if let Some(signing) = &manifest.signing {
        let at = JsonPath::root().key("signing");
        let path = std::path::Path::new(&signing.allowed_signers);
        if path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            issues.push(ManifestIssue {
                path: at.clone().key("allowed_signers"),
                reason: format!(
                    "{:?} must be a path inside the repository, relative to the manifest, without `..`",
                    signing.allowed_signers
                ),
            });
        }
        for (i, r) in signing.require.iter().enumerate() {
            if r != "*" && !manifest.lanes.iter().any(|l| l.name.as_str() == r) {
                issues.push(ManifestIssue {
                    path: at.clone().key("require").index(i),
                    reason: format!(
                        "`{r}` is not a lane of this manifest (use a lane name or `*`)"
                    ),
                });
            }
        }
    }
    if !issues.is_empty() {
        return Err(invalid(issues));
    }
    Ok(LoadedManifest {
        manifest,
        digest: Sha256Digest::of(&bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = r#"
schema = "schedule-manifest/v1"
[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "Asia/Jerusalem"
completion_window_minutes = 50
cases = ["demo/size=10"]
baseline = "last-clean"
"#;

    #[test]
    fn loads_and_defaults_labels() {
        let m = from_toml(M, "m.toml").expect("valid");
        assert_eq!(m.manifest.labels.accepted, "drift-accepted");
        assert!(m.manifest.lanes[0].covers("demo/size=10"));
        assert!(!m.manifest.lanes[0].covers("demo/size=100"));
    }

    #[test]
    fn signing_names_the_file_and_the_lanes_that_must_sign() {
        let signed = format!(
            "[signing]\nallowed_signers = \".github/allowed_signers\"\nrequire = [\"sentinel\"]\n{M}"
        );
        // The table must come before [[lanes]] in TOML; put it first.
        let signed = signed.replacen("schema = \"schedule-manifest/v1\"\n", "", 1);
        let signed = format!("schema = \"schedule-manifest/v1\"\n{signed}");
        let m = from_toml(&signed, "m.toml").expect("valid").manifest;
        assert!(m.requires_signature("sentinel"));
        assert!(!m.requires_signature("nightly"));
        let all = signed.replace("[\"sentinel\"]", "[\"*\"]");
        assert!(
            from_toml(&all, "m.toml")
                .expect("valid")
                .manifest
                .requires_signature("x")
        );
        assert!(
            !from_toml(M, "m.toml")
                .expect("valid")
                .manifest
                .requires_signature("sentinel")
        );
        for (bad, at) in [
            (
                signed.replace("[\"sentinel\"]", "[\"nightly\"]"),
                "$.signing.require[0]",
            ),
            (
                signed.replace(".github/allowed_signers", "../keys"),
                "$.signing.allowed_signers",
            ),
            (
                signed.replace(".github/allowed_signers", "/etc/keys"),
                "$.signing.allowed_signers",
            ),
            (signed.replace("require", "requires"), "$.signing"),
        ] {
            match from_toml(&bad, "m.toml") {
                Err(ManifestError::Invalid { issues, .. }) => {
                    assert_eq!(issues[0].path.to_string(), at, "{bad}: {issues:?}");
                }
                other => panic!("{bad}: expected invalid, got {other:?}"),
            }
        }
    }

    const V3: &str = r#"
schema = "schedule-manifest/v3"
suite = ["bench.toml"]
[[lanes]]
name = "nightly"
cron = "0 1 * * *"
timezone = "UTC"
completion_window_minutes = 180
cases = ["*"]
baseline = "last-clean"
confirm = "stored-baseline"
bisect = { enabled = false, max_steps = 8, max_minutes = 60 }
[[lanes]]
name = "sentinel"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["*"]
baseline = "last-clean"
"#;

    /// The paths and reasons of a manifest's issues.
    fn issues(text: &str) -> Vec<(String, String)> {
        match from_toml(text, "m.toml") {
            Err(ManifestError::Invalid { issues, .. }) => issues
                .into_iter()
                .map(|i| (i.path.to_string(), i.reason))
                .collect(),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn v3_reads_each_lanes_confirmation_and_bisection_with_defaults() {
        use crate::record::ConfirmModeKind;
        let m = from_toml(V3, "m.toml").expect("valid").manifest;
        let (nightly, sentinel) = (&m.lanes[0], &m.lanes[1]);
        assert_eq!(nightly.confirm_mode(), ConfirmModeKind::StoredBaseline);
        assert!(!nightly.bisects());
        assert_eq!(nightly.bisect_steps(100), 8);
        assert_eq!(nightly.bisect_seconds(), 3600);
        // Absent: same-session, bisected, ⌈log2 N⌉ + 2 steps for N commits
        // after the baseline commit, half the completion window.
        assert_eq!(sentinel.confirm_mode(), ConfirmModeKind::SameSession);
        assert!(sentinel.bisects());
        assert_eq!(sentinel.bisect_steps(65), 6 + BISECT_SPARE_STEPS);
        assert_eq!(sentinel.bisect_seconds(), 25 * 60);
        // v3 needs the suite, as v2 does.
        let no_suite = V3.replace("suite = [\"bench.toml\"]\n", "");
        assert_eq!(issues(&no_suite)[0].0, "$");
        // v1 and v2 know neither member.
        for old in ["schedule-manifest/v1", "schedule-manifest/v2"] {
            let text = V3.replace("schedule-manifest/v3", old);
            let found = issues(&text);
            assert!(
                found.iter().any(|(p, r)| p == "$.lanes[0]"
                    && r.contains("confirm")
                    && r.contains("bisect")),
                "{old}: {found:?}"
            );
        }
        let v4 = V3.replace("schedule-manifest/v3", "schedule-manifest/v4");
        assert_eq!(
            issues(&v4),
            [(
                "$.schema".to_owned(),
                "schedule-manifest/v4 is not known to this build (it reads v1, v2 and v3)"
                    .to_owned()
            )]
        );
    }

    #[test]
    fn v3_reads_an_optional_gc_policy_and_names_a_bad_key() {
        let with = |table: &str| format!("{V3}\n[gc]\n{table}\n");
        let gc = |text: &str| from_toml(text, "m.toml").expect("valid").manifest.gc;
        assert_eq!(gc(V3), None, "no [gc]: no policy");
        let gc = |table: &str| gc(&with(table));
        let g = gc("keep_days = 14\nmax_bytes = \"2G\"").expect("a policy");
        assert_eq!((g.keep_days(), g.max_bytes()), (14, Some(2 << 30)));
        let g = gc("max_bytes = 1048576").expect("a policy");
        assert_eq!(
            (g.keep_days(), g.max_bytes()),
            (DEFAULT_GC_KEEP_DAYS, Some(1 << 20))
        );
        for (table, at, says) in [
            ("max_bytes = \"2X\"", "$.gc.max_bytes", "unknown unit"),
            ("max_bytes = \"lots\"", "$.gc.max_bytes", "not a size"),
            ("keep_days = -1", "$.gc.keep_days", ""),
            ("keep_days = 100000", "$.gc.keep_days", ""),
            ("keep = 3", "$.gc", ""),
        ] {
            let found = issues(&with(table));
            assert_eq!(found.len(), 1, "{table}: {found:?}");
            assert_eq!(found[0].0, at, "{table}: {found:?}");
            assert!(found[0].1.contains(says), "{table}: {found:?}");
        }
        // v2 has no [gc].
        let v2 = with("keep_days = 3").replace("schedule-manifest/v3", "schedule-manifest/v2");
        let v2 = v2.replace("confirm = \"stored-baseline\"\n", "").replace(
            "bisect = { enabled = false, max_steps = 8, max_minutes = 60 }\n",
            "",
        );
        assert_eq!(issues(&v2)[0].0, "$", "{:?}", issues(&v2));
    }

    #[test]
    fn v3_bounds_the_bisection_budget() {
        for (from, to, at) in [
            (
                "max_steps = 8",
                "max_steps = 0",
                "$.lanes[0].bisect.max_steps",
            ),
            (
                "max_steps = 8",
                "max_steps = 65",
                "$.lanes[0].bisect.max_steps",
            ),
            (
                "max_minutes = 60",
                "max_minutes = 0",
                "$.lanes[0].bisect.max_minutes",
            ),
            (
                "enabled = false",
                "enabled = 1",
                "$.lanes[0].bisect.enabled",
            ),
            ("enabled = false", "every = 1", "$.lanes[0].bisect"),
            (
                "confirm = \"stored-baseline\"",
                "confirm = \"sometimes\"",
                "$.lanes[0].confirm",
            ),
        ] {
            let text = V3.replace(from, to);
            let found = issues(&text);
            assert_eq!(found.len(), 1, "{to}: {found:?}");
            assert_eq!(found[0].0, at, "{to}: {found:?}");
        }
        let ok = V3.replace("max_steps = 8", "max_steps = 64");
        from_toml(&ok, "m.toml").expect("64 steps is the most");
    }

    #[test]
    fn the_bisection_must_end_inside_the_completion_window() {
        for minutes in [180, 500] {
            let text = V3.replace("max_minutes = 60", &format!("max_minutes = {minutes}"));
            assert_eq!(
                issues(&text),
                [(
                    "$.lanes[0].bisect.max_minutes".to_owned(),
                    format!(
                        "lane `nightly`: bisect.max_minutes ({minutes}) must be less than its completion_window_minutes (180); the bisection runs inside the lane run, before the record is sealed, so lower max_minutes (default: half the window) or widen the window"
                    )
                )]
            );
        }
        let text = V3.replace("max_minutes = 60", "max_minutes = 179");
        from_toml(&text, "m.toml").expect("a minute short of the window");
    }

    #[test]
    fn reports_paths() {
        let bad = M.replace("baseline = \"last-clean\"", "baseline = \"sometimes\"");
        match from_toml(&bad, "m.toml") {
            Err(ManifestError::Invalid { issues, .. }) => {
                assert_eq!(issues[0].path.to_string(), "$.lanes[0].baseline");
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }
}
