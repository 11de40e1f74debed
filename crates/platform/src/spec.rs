//! The two inputs of a platform run, both TOML and both named on the
//! command line (tests bring their own):
//!
//! - the **scenario spec**: `[defaults]` (`settle_interval_s`,
//!   `settle_timeout_s`, `command_timeout_s`) and `[[scenarios]]`, each a
//!   `name`, an ordered list of `operations`, and optionally
//!   `requires_remote`, `branch_count` and `poll_interval_s`. Rows always
//!   follow the declared operations, in order;
//! - the **semantics config**: `schema_version`, the declared
//!   `protection_variants`, the ones `implemented`, the known `classes`,
//!   and per platform (`[platforms.<name>]`) its `semantics_version` and
//!   `class`. A platform other than `github` is a CLI adapter: its
//!   `binary`, the commands of each operation (`[platforms.<name>.commands]`)
//!   and the operations with no equivalent (`[platforms.<name>.structural]`,
//!   a note each).
//!
//! Every error names the file and says what is wrong with which key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest spec or config file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Defaults of every scenario.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// The pause between settle polls, in seconds.
    #[serde(default = "default_interval")]
    pub settle_interval_s: f64,
    /// How long a settle waits before it gives up, in seconds.
    #[serde(default = "default_settle_timeout")]
    pub settle_timeout_s: f64,
    /// How long one command or request may take, in seconds.
    #[serde(default = "default_command_timeout")]
    pub command_timeout_s: f64,
}

fn default_interval() -> f64 {
    2.0
}
fn default_settle_timeout() -> f64 {
    300.0
}
fn default_command_timeout() -> f64 {
    120.0
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            settle_interval_s: default_interval(),
            settle_timeout_s: default_settle_timeout(),
            command_timeout_s: default_command_timeout(),
        }
    }
}

/// One scenario.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name; the family is read from it (`integration_race_n3`).
    pub name: String,
    /// The operations, in order.
    pub operations: Vec<String>,
    /// Whether it needs a repository.
    #[serde(default)]
    pub requires_remote: bool,
    /// Branches, for races, triage and fleets (else from the name).
    #[serde(default)]
    pub branch_count: Option<u32>,
    /// This scenario's settle interval, in seconds.
    #[serde(default)]
    pub poll_interval_s: Option<f64>,
}

/// The scenario spec.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Defaults.
    #[serde(default)]
    pub defaults: Defaults,
    /// The scenarios.
    pub scenarios: Vec<Scenario>,
}

/// The timing settings of one scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The pause between polls, in seconds.
    pub interval_s: f64,
    /// The settle timeout, in seconds.
    pub settle_timeout_s: f64,
    /// The command or request timeout, in seconds.
    pub command_timeout_s: f64,
}

impl Spec {
    /// The scenario named `name`.
    pub fn scenario(&self, name: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name)
    }

    /// The settings of `scenario`.
    pub fn settings(&self, scenario: &Scenario) -> Settings {
        Settings {
            interval_s: scenario
                .poll_interval_s
                .unwrap_or(self.defaults.settle_interval_s),
            settle_timeout_s: self.defaults.settle_timeout_s,
            command_timeout_s: self.defaults.command_timeout_s,
        }
    }
}

/// One platform's semantics, and its adapter when it is not `github`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformSemantics {
    /// The version of the platform's semantics; rows without one are
    /// never comparable.
    #[serde(default)]
    pub semantics_version: Option<String>,
    /// Its semantics class (one of `classes`).
    pub class: String,
    /// The adapter's binary (not for `github`).
    #[serde(default)]
    pub binary: Option<String>,
    /// The adapter's commands, by operation; `{repo}`, `{branch}`,
    /// `{run_id}` and `{workdir}` are replaced.
    #[serde(default)]
    pub commands: BTreeMap<String, Vec<Vec<String>>>,
    /// The operations with no equivalent on this platform, each with a
    /// note saying why.
    #[serde(default)]
    pub structural: BTreeMap<String, String>,
    /// Untimed commands that prepare a run (a mount, a first commit).
    #[serde(default)]
    pub setup: Vec<Vec<String>>,
    /// Untimed commands that clean up after a run.
    #[serde(default)]
    pub cleanup: Vec<Vec<String>>,
}

/// The semantics config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Semantics {
    /// The config's own format version.
    pub schema_version: u32,
    /// Every protection variant a run may name.
    pub protection_variants: Vec<String>,
    /// The ones implemented (a run under any other skips).
    pub implemented: Vec<String>,
    /// The known semantics classes.
    pub classes: Vec<String>,
    /// Per platform.
    pub platforms: BTreeMap<String, PlatformSemantics>,
}

/// Why an input was refused.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// It could not be read.
    #[error("{path}: cannot read it: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// It is not valid TOML of the expected shape.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (it names the key and line).
        reason: String,
    },
    /// It parsed, but a value is refused.
    #[error("{path}: `{key}`: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key path.
        key: String,
        /// Why.
        reason: String,
    },
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, SpecError> {
    let text = benchops::fsio::read_input_text(path, MAX_FILE_BYTES).map_err(|source| {
        SpecError::Read {
            path: path.to_owned(),
            source,
        }
    })?;
    toml::from_str(&text).map_err(|e| SpecError::Parse {
        path: path.to_owned(),
        reason: e.to_string().trim_end().replace('\n', " "),
    })
}

fn positive(path: &Path, key: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(())
    } else {
        Err(SpecError::Invalid {
            path: path.to_owned(),
            key: key.to_owned(),
            reason: format!("{v} is not a number of seconds in (0, 86400]"),
        })
    }
}

/// Reads and checks a scenario spec.
pub fn load_spec(path: &Path) -> Result<Spec, SpecError> {
    let spec: Spec = read(path)?;
    let d = &spec.defaults;
    positive(path, "defaults.settle_interval_s", d.settle_interval_s)?;
    positive(path, "defaults.settle_timeout_s", d.settle_timeout_s)?;
    positive(path, "defaults.command_timeout_s", d.command_timeout_s)?;
    let invalid = |key: String, reason: String| SpecError::Invalid {
        path: path.to_owned(),
        key,
        reason,
    };
    let mut names = std::collections::BTreeSet::new();
    for (i, s) in spec.scenarios.iter().enumerate() {
        if s.name.is_empty() || !names.insert(s.name.as_str()) {
            return Err(invalid(
                format!("scenarios[{i}].name"),
                format!("{:?} is empty or used twice", s.name),
            ));
        }
        if s.operations.is_empty() {
            return Err(invalid(
                format!("scenarios[{i}].operations"),
                "lists no operation".into(),
            ));
        }
        let mut ops = std::collections::BTreeSet::new();
        for (j, op) in s.operations.iter().enumerate() {
            if op.is_empty() || op.len() > 100 || op.chars().any(char::is_control) {
                return Err(invalid(
                    format!("scenarios[{i}].operations[{j}]"),
                    "an operation name is 1 to 100 characters, none of them control characters"
                        .into(),
                ));
            }
            if !ops.insert(op.as_str()) {
                return Err(invalid(
                    format!("scenarios[{i}].operations[{j}]"),
                    format!("{op:?} is declared twice"),
                ));
            }
        }
        if let Some(v) = s.poll_interval_s {
            positive(path, &format!("scenarios[{i}].poll_interval_s"), v)?;
        }
        if s.branch_count.is_some_and(|n| n == 0 || n > 10_000) {
            return Err(invalid(
                format!("scenarios[{i}].branch_count"),
                "must be in 1..=10000".into(),
            ));
        }
    }
    Ok(spec)
}

/// Reads and checks a semantics config.
pub fn load_semantics(path: &Path) -> Result<Semantics, SpecError> {
    let s: Semantics = read(path)?;
    let invalid = |key: String, reason: String| SpecError::Invalid {
        path: path.to_owned(),
        key,
        reason,
    };
    for (i, v) in s.implemented.iter().enumerate() {
        if !s.protection_variants.contains(v) {
            return Err(invalid(
                format!("implemented[{i}]"),
                format!("{v:?} is not one of protection_variants"),
            ));
        }
    }
    for (name, p) in &s.platforms {
        if !s.classes.contains(&p.class) {
            return Err(invalid(
                format!("platforms.{name}.class"),
                format!("{:?} is not one of classes", p.class),
            ));
        }
        if name != "github" && p.binary.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(
                format!("platforms.{name}.binary"),
                "a platform other than github is a CLI adapter and needs its binary".into(),
            ));
        }
        for (op, commands) in &p.commands {
            if commands.is_empty() || commands.iter().any(Vec::is_empty) {
                return Err(invalid(
                    format!("platforms.{name}.commands.{op}"),
                    "needs at least one non-empty command".into(),
                ));
            }
            if p.structural.contains_key(op) {
                return Err(invalid(
                    format!("platforms.{name}.structural.{op}"),
                    "an operation is either run or structural, not both".into(),
                ));
            }
        }
    }
    Ok(s)
}

/// The family of a scenario, read from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `platform_capability_probe`.
    Probe,
    /// `integration_race_nN`.
    Race(u32),
    /// `branch_triage_nN`.
    Triage(u32),
    /// `branch_fleet_nN`.
    Fleet(u32),
    /// Any other: a single-branch anatomy (`pr_single_anatomy`).
    Anatomy,
}

impl Family {
    /// The family of `scenario` (its `branch_count` wins over the name's).
    pub fn of(scenario: &Scenario) -> Family {
        let n = |prefix: &str| {
            scenario
                .name
                .strip_prefix(prefix)
                .and_then(|n| n.parse::<u32>().ok())
        };
        let count = |from_name: Option<u32>, default: u32| {
            scenario
                .branch_count
                .or(from_name)
                .unwrap_or(default)
                .max(1)
        };
        if scenario.name == "platform_capability_probe" {
            Family::Probe
        } else if let Some(k) = n("integration_race_n") {
            Family::Race(count(Some(k), 1))
        } else if let Some(k) = n("branch_triage_n") {
            Family::Triage(count(Some(k), 4))
        } else if let Some(k) = n("branch_fleet_n") {
            Family::Fleet(count(Some(k), 10))
        } else {
            Family::Anatomy
        }
    }

    /// Its short name, for skip reasons.
    pub fn name(self) -> &'static str {
        match self {
            Family::Probe => "capability_probe",
            Family::Race(_) => "integration_race",
            Family::Triage(_) => "branch_triage",
            Family::Fleet(_) => "branch_fleet",
            Family::Anatomy => "anatomy",
        }
    }
}
