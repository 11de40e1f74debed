//! The commands that check files and write nothing: `validate` (sealed
//! records, by [`crate::validate`]) and `check-manifest` (schedule
//! manifests, loaded as the sweep loads them).

use std::path::{Path, PathBuf};

use benchops::manifest::Manifest;

use super::{CommandError, attention_if, load_manifest, note, out};
use crate::exit::{ATTENTION, FAILED, OK};
use crate::signatures::{SignaturePolicy, SignersError};
use crate::sweep::Cause;
use crate::text::{error_line, escape_text};
use crate::validate;

/// The signature policy of the manifest at `path`, checked at now.
fn signature_policy(
    manifest: &Manifest,
    path: &Path,
) -> Result<Option<SignaturePolicy>, SignersError> {
    SignaturePolicy::load(manifest, path, || {
        Ok::<_, SignersError>(jiff::Timestamp::now())
    })
}

/// `benchops-publish validate`.
pub(super) fn validate(
    paths: &[PathBuf],
    json: bool,
    verbose: bool,
    max_record_bytes: u64,
    manifest: Option<&Path>,
) -> Result<u8, CommandError> {
    let policy = match manifest {
        None => None,
        Some(path) => {
            let m = load_manifest(path)?;
            let policy = signature_policy(&m, path).map_err(CommandError::Signers)?;
            if policy.is_none() {
                note(format_args!(
                    "note: {} has no [signing] table: signatures are not checked\n",
                    path.display()
                ));
            }
            policy
        }
    };
    let opts = validate::ValidateOptions {
        max_record_bytes,
        signing: policy.as_ref(),
    };
    let verdicts = validate::validate_paths(paths, &opts).map_err(CommandError::Input)?;
    if json {
        let s = serde_json::to_string_pretty(&verdicts).map_err(CommandError::ValidateJson)?;
        out(format_args!("{s}\n"));
    } else {
        out(validate::render_table(&verdicts, verbose));
    }
    Ok(attention_if(!verdicts.iter().all(|v| v.valid)))
}

/// `benchops-publish check-manifest`: every manifest, each problem on its
/// own line with the file. An unreadable file is an error (exit 2) and the
/// others are still checked.
pub(super) fn check_manifests(paths: &[PathBuf]) -> u8 {
    let mut status = OK;
    for path in paths {
        let shown = escape_text(&path.display().to_string());
        let manifest = match crate::sweep::load_manifest(path) {
            Ok(m) => m,
            Err(e) => {
                if matches!(*e.cause, Cause::ReadFile { .. }) {
                    note(format_args!("error: {}\n", error_line(&*e.cause)));
                    status = FAILED;
                } else {
                    // One line per problem: the manifest's loader lists
                    // them one per line after a heading.
                    let text = error_line(&*e.cause);
                    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
                    let head = lines.next().unwrap_or_default();
                    if head.ends_with("not valid TOML:") {
                        // The parser's diagram, line by line, as it drew it.
                        out(format_args!("{shown}: invalid: not valid TOML:\n"));
                        for l in lines {
                            out(format_args!("{}\n", escape_text(l)));
                        }
                    } else {
                        let rest: Vec<&str> =
                            lines.map(|l| l.trim().trim_start_matches("- ")).collect();
                        if rest.is_empty() {
                            out(format_args!("{shown}: invalid: {}\n", escape_text(head)));
                        }
                        for problem in rest {
                            out(format_args!("{shown}: invalid: {}\n", escape_text(problem)));
                        }
                    }
                    if status == OK {
                        status = ATTENTION;
                    }
                }
                continue;
            }
        };
        let mut problems = 0;
        for issue in benchops::manifest::schedule_issues(&manifest) {
            out(format_args!(
                "{shown}: {}: {}\n",
                issue.path,
                escape_text(&issue.reason)
            ));
            problems += 1;
        }
        // The compared metrics against what the suite's intents can report.
        for line in compared_metric_problems(&manifest, path) {
            out(format_args!("{shown}: {}\n", escape_text(&line)));
            problems += 1;
        }
        // The allowed_signers file of [signing] must load as the sweep
        // loads it.
        if let Err(e) = signature_policy(&manifest, path) {
            out(format_args!(
                "{shown}: signing: {}\n",
                escape_text(&error_line(&e))
            ));
            problems += 1;
        }
        if problems > 0 {
            if status == OK {
                status = ATTENTION;
            }
        } else {
            out(format_args!(
                "{shown}: valid, {} lane(s)\n",
                manifest.lanes.len()
            ));
        }
    }
    status
}

/// One problem per lane that compares a metric its suite's intents can never
/// report. Intents are read relative to the manifest; when one cannot be
/// read, or reads metrics from its output, the names are left for `lane
/// run` to check against what the cases report.
fn compared_metric_problems(manifest: &Manifest, path: &Path) -> Vec<String> {
    let Some(suite) = &manifest.suite else {
        return Vec::new();
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let mut intents = Vec::new();
    for name in suite {
        let file = base.join(name);
        let Ok(text) =
            benchops::fsio::read_input_text(&file, benchops::fsio::DEFAULT_MAX_INPUT_BYTES)
        else {
            return Vec::new();
        };
        match benchops::intent::from_toml(&text, name) {
            Ok(loaded) => intents.push(loaded.intent),
            Err(_) => return Vec::new(),
        }
    }
    let intents: Vec<&benchops::intent::Intent> = intents.iter().collect();
    let builtins = benchops::analysis::BUILTIN_METRICS.join(", ");
    manifest
        .lanes
        .iter()
        .filter_map(|lane| {
            let missing = lane.unreportable_metrics(&intents)?;
            (!missing.is_empty()).then(|| {
                let quoted: Vec<String> =
                    missing.iter().map(|m| benchops::excerpt::quote(m)).collect();
                format!(
                    "lane {}: [lanes.comparison] names {} that no intent of the suite reports (without [metrics] json_lines an intent reports only {builtins}); the lane would compare nothing for it",
                    lane.name.as_str(),
                    quoted.join(", ")
                )
            })
        })
        .collect()
}
