//! The publication workflow's policy, as `provision verify` checks the file
//! on the default branch: triggers `schedule` and `workflow_dispatch` and
//! nothing else, top-level `permissions: contents: read` and nothing else,
//! `id-token: write` only on a job that deploys to the publication
//! environment, at least one job in that environment, and no concurrency
//! group that cancels a run in progress. Each problem says what to change.

use serde_norway::Value;

/// The most bytes of workflow YAML read; GitHub's own limit for a
/// workflow file is far below this.
pub const MAX_WORKFLOW_BYTES: usize = 512 * 1024;

/// What is wrong with a workflow file, each problem a sentence; empty when
/// it follows the policy.
pub fn problems(bytes: &[u8], environment: &str) -> Vec<String> {
    if bytes.len() > MAX_WORKFLOW_BYTES {
        return vec![format!(
            "the file is {} bytes, more than the {MAX_WORKFLOW_BYTES} read",
            bytes.len()
        )];
    }
    let doc: Value = match serde_norway::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return vec![format!("the file is not valid YAML: {e}")],
    };
    if !doc.is_mapping() {
        return vec!["the file is not a YAML mapping".to_owned()];
    }
    let mut out = Vec::new();
    triggers(&doc, &mut out);
    top_permissions(&doc, &mut out);
    jobs(&doc, environment, &mut out);
    concurrency(&doc["concurrency"], "the workflow", &mut out);
    out
}

fn names(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Sequence(seq) => seq
            .iter()
            .map(|x| x.as_str().map_or_else(|| format!("{x:?}"), str::to_owned))
            .collect(),
        Value::Mapping(m) => m
            .keys()
            .map(|k| k.as_str().map_or_else(|| format!("{k:?}"), str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn triggers(doc: &Value, out: &mut Vec<String>) {
    let on = &doc["on"];
    if on.is_null() {
        out.push(
            "it has no `on:` triggers; it needs `schedule` and `workflow_dispatch`".to_owned(),
        );
        return;
    }
    let found = names(on);
    let extra: Vec<&String> = found
        .iter()
        .filter(|t| *t != "schedule" && *t != "workflow_dispatch")
        .collect();
    if !extra.is_empty() {
        let list: Vec<&str> = extra.iter().map(|s| s.as_str()).collect();
        out.push(format!(
            "it is triggered by {}: remove them, only `schedule` and `workflow_dispatch` may start a publication",
            list.join(", ")
        ));
    }
    for needed in ["schedule", "workflow_dispatch"] {
        if !found.iter().any(|t| t == needed) {
            out.push(format!("it lacks the `{needed}` trigger"));
        }
    }
}

fn permission_pairs(v: &Value) -> Option<Vec<(String, String)>> {
    let m = v.as_mapping()?;
    Some(
        m.iter()
            .map(|(k, v)| {
                (
                    k.as_str().unwrap_or("?").to_owned(),
                    v.as_str().unwrap_or("?").to_owned(),
                )
            })
            .collect(),
    )
}

fn top_permissions(doc: &Value, out: &mut Vec<String>) {
    let p = &doc["permissions"];
    match permission_pairs(p) {
        None if p.is_null() => out.push(
            "it sets no top-level `permissions:`, so its token gets the repository's default permissions: set `permissions: contents: read`"
                .to_owned(),
        ),
        None => out.push(format!(
            "its top-level `permissions:` is {}, not a mapping: set `permissions: contents: read`",
            p.as_str().unwrap_or("not a mapping")
        )),
        Some(pairs) => {
            if pairs != [("contents".to_owned(), "read".to_owned())] {
                let shown: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                out.push(format!(
                    "its top-level permissions are {{{}}}: set exactly `contents: read` (grant `id-token: write` in the sweep job only)",
                    shown.join(", ")
                ));
            }
        }
    }
}

fn job_environment(job: &Value) -> Option<String> {
    match &job["environment"] {
        Value::String(s) => Some(s.clone()),
        Value::Mapping(_) => job["environment"]["name"].as_str().map(str::to_owned),
        _ => None,
    }
}

fn jobs(doc: &Value, environment: &str, out: &mut Vec<String>) {
    let Some(jobs) = doc["jobs"].as_mapping() else {
        out.push("it has no `jobs:`".to_owned());
        return;
    };
    let mut deploying = 0;
    for (name, job) in jobs {
        let name = name.as_str().unwrap_or("?");
        let env = job_environment(job);
        if env.as_deref() == Some(environment) {
            deploying += 1;
        }
        let id_token = permission_pairs(&job["permissions"])
            .is_some_and(|p| p.iter().any(|(k, v)| k == "id-token" && v == "write"))
            || job["permissions"].as_str() == Some("write-all");
        if id_token && env.as_deref() != Some(environment) {
            out.push(format!(
                "job `{name}` may request an OIDC token (`id-token: write`) but does not run in the `{environment}` environment: add `environment: {environment}` to it"
            ));
        }
        concurrency(&job["concurrency"], &format!("job `{name}`"), out);
    }
    if deploying == 0 {
        out.push(format!(
            "no job runs in the `{environment}` environment, so its branch policy protects nothing: add `environment: {environment}` to the sweep job"
        ));
    }
}

fn concurrency(c: &Value, whose: &str, out: &mut Vec<String>) {
    match &c["cancel-in-progress"] {
        Value::Bool(true) => out.push(format!(
            "{whose} cancels a run in progress (`cancel-in-progress: true`): a sweep stopped halfway must not be the norm; set it to false"
        )),
        Value::String(s) => out.push(format!(
            "{whose} decides `cancel-in-progress` by the expression {s:?}: set it to false"
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = include_str!("../../../../workflows/benchmark-publication.yml");
    const ENV: &str = "benchmark-publication";

    #[test]
    fn the_shipped_template_follows_the_policy() {
        assert_eq!(problems(TEMPLATE.as_bytes(), ENV), Vec::<String>::new());
    }

    #[test]
    fn each_departure_is_named() {
        let cases: [(&str, &str, &str); 6] = [
            (
                "  workflow_dispatch:\n",
                "  workflow_dispatch:\n  push:\n    branches: [main]\n",
                "triggered by push",
            ),
            (
                "permissions:\n  contents: read\n",
                "permissions:\n  contents: write\n",
                "top-level permissions are {contents: write}",
            ),
            (
                "permissions:\n  contents: read\n",
                "",
                "no top-level `permissions:`",
            ),
            (
                "cancel-in-progress: false",
                "cancel-in-progress: true",
                "cancels a run in progress",
            ),
            (
                "    environment: benchmark-publication\n",
                "",
                "does not run in the `benchmark-publication` environment",
            ),
            (
                "  schedule:\n",
                "  schedule_typo:\n",
                "lacks the `schedule`",
            ),
        ];
        for (from, to, says) in cases {
            assert!(TEMPLATE.contains(from), "{from:?} is in the template");
            let broken = TEMPLATE.replacen(from, to, 1);
            let found = problems(broken.as_bytes(), ENV);
            assert!(
                found.iter().any(|p| p.contains(says)),
                "{says:?} not in {found:?}"
            );
        }
    }

    #[test]
    fn unreadable_files_say_why() {
        assert!(problems(b"on: [\n", ENV)[0].contains("not valid YAML"));
        assert!(problems(b"- a\n", ENV)[0].contains("not a YAML mapping"));
        let big = vec![b'#'; MAX_WORKFLOW_BYTES + 1];
        assert!(problems(&big, ENV)[0].contains("more than"));
        let bare = problems(b"name: x\n", ENV);
        assert!(bare.iter().any(|p| p.contains("no `on:`")), "{bare:?}");
        assert!(bare.iter().any(|p| p.contains("no `jobs:`")), "{bare:?}");
    }
}
