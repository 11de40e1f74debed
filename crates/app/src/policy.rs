//! Who may have a token: the allow policy applied to verified Actions OIDC
//! claims. Pure functions; every refusal is a stable reason code.
//!
//! A token is granted only when all of these hold:
//! - `repository` is an allowed repository and `repository_id` is its id
//!   (a name can be re-used after a deletion; an id cannot);
//! - the job's own workflow is the publication workflow on the default
//!   branch: `job_workflow_ref` (or `workflow_ref` when a token has no
//!   `job_workflow_ref`) is
//!   `OWNER/NAME/<workflow_path>@refs/heads/<default_branch>`. The other
//!   ref never stands in for it: a job whose `job_workflow_ref` is another
//!   repository's reusable workflow is refused even when `workflow_ref`
//!   names the publication workflow;
//! - `ref` is `refs/heads/<default_branch>`: the publication workflow
//!   called from a workflow run on another branch is refused;
//! - `event_name` is an allowed event (`pull_request*` never is);
//! - `environment` equals the policy's, when the policy names one;
//! - `sub` names the same repository, in either format GitHub issues:
//!   `repo:OWNER/NAME:…` or the immutable `repo:OWNER@OWNER_ID/NAME@ID:…`,
//!   and its context agrees (`environment:<env>` with an environment,
//!   `ref:refs/heads/<default_branch>` without), never `pull_request`.

use benchops_github::oidc::ActionsClaims;

use crate::config::{AllowedRepo, Policy};

/// A refusal, by reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// A claim the policy needs is absent.
    MissingClaim,
    /// `repository` is not allowed.
    RepositoryNotAllowed,
    /// `repository_id` is not the allowed repository's id.
    RepositoryIdMismatch,
    /// The job's workflow is not the publication workflow at the default
    /// branch.
    WorkflowRefNotAllowed,
    /// `ref` is not the default branch.
    RefNotAllowed,
    /// `event_name` is not allowed.
    EventNotAllowed,
    /// `environment` differs from the policy's.
    EnvironmentMismatch,
    /// `sub` names another repository or context.
    SubjectMismatch,
}

impl Denial {
    /// The stable reason code.
    pub fn code(self) -> &'static str {
        match self {
            Denial::MissingClaim => "missing-claim",
            Denial::RepositoryNotAllowed => "repository-not-allowed",
            Denial::RepositoryIdMismatch => "repository-id-mismatch",
            Denial::WorkflowRefNotAllowed => "workflow-ref-not-allowed",
            Denial::RefNotAllowed => "ref-not-allowed",
            Denial::EventNotAllowed => "event-not-allowed",
            Denial::EnvironmentMismatch => "environment-mismatch",
            Denial::SubjectMismatch => "subject-mismatch",
        }
    }
}

/// Applies the policy; the allowed repository on success.
pub fn check<'p>(policy: &'p Policy, claims: &ActionsClaims) -> Result<&'p AllowedRepo, Denial> {
    let repo = policy
        .repository(&claims.repository)
        .ok_or(Denial::RepositoryNotAllowed)?;
    if claims.repository_id.trim() != repo.id.to_string() {
        return Err(Denial::RepositoryIdMismatch);
    }
    let expected = format!(
        "{}/{}@refs/heads/{}",
        repo.name, policy.workflow_path, policy.default_branch
    );
    // The job's own workflow: a reusable workflow's ref when the job calls
    // one. `workflow_ref` (the caller's) counts only when GitHub gave no
    // `job_workflow_ref`.
    let job_workflow = claims
        .job_workflow_ref
        .as_deref()
        .or(claims.workflow_ref.as_deref())
        .ok_or(Denial::MissingClaim)?;
    if !same_workflow_ref(job_workflow, &expected) {
        return Err(Denial::WorkflowRefNotAllowed);
    }
    let git_ref = claims.ref_.as_deref().ok_or(Denial::MissingClaim)?;
    if git_ref != format!("refs/heads/{}", policy.default_branch) {
        return Err(Denial::RefNotAllowed);
    }
    let event = claims.event_name.as_deref().ok_or(Denial::MissingClaim)?;
    if !policy.events.iter().any(|e| e == event) {
        return Err(Denial::EventNotAllowed);
    }
    if let Some(env) = &policy.environment {
        if claims.environment.as_deref() != Some(env.as_str()) {
            return Err(Denial::EnvironmentMismatch);
        }
    }
    check_subject(policy, repo, claims)?;
    Ok(repo)
}

/// Workflow refs compare the `OWNER/NAME` part case-insensitively (as
/// GitHub treats names) and the rest exactly.
fn same_workflow_ref(actual: &str, expected: &str) -> bool {
    let split = |s: &str| -> Option<(String, String)> {
        let mut it = s.splitn(3, '/');
        let owner = it.next()?;
        let name = it.next()?;
        let rest = it.next()?;
        Some((
            format!("{owner}/{name}").to_ascii_lowercase(),
            rest.to_owned(),
        ))
    };
    matches!((split(actual), split(expected)), (Some(a), Some(e)) if a == e)
}

fn check_subject(
    policy: &Policy,
    repo: &AllowedRepo,
    claims: &ActionsClaims,
) -> Result<(), Denial> {
    let rest = claims
        .sub
        .strip_prefix("repo:")
        .ok_or(Denial::SubjectMismatch)?;
    let (who, context) = rest.split_once(':').ok_or(Denial::SubjectMismatch)?;
    let (owner_part, name_part) = who.split_once('/').ok_or(Denial::SubjectMismatch)?;
    let (owner, owner_id) = match owner_part.split_once('@') {
        Some((o, id)) => (o, Some(id)),
        None => (owner_part, None),
    };
    let (name, repo_id) = match name_part.split_once('@') {
        Some((n, id)) => (n, Some(id)),
        None => (name_part, None),
    };
    // The immutable format carries both ids or neither.
    if owner_id.is_some() != repo_id.is_some() {
        return Err(Denial::SubjectMismatch);
    }
    if !format!("{owner}/{name}").eq_ignore_ascii_case(&repo.name) {
        return Err(Denial::SubjectMismatch);
    }
    if let Some(id) = repo_id {
        if id != repo.id.to_string() {
            return Err(Denial::SubjectMismatch);
        }
    }
    if let (Some(id), Some(claimed)) = (owner_id, claims.repository_owner_id.as_deref()) {
        if id != claimed {
            return Err(Denial::SubjectMismatch);
        }
    }
    let ok = match &policy.environment {
        Some(env) => context == format!("environment:{env}"),
        None => context == format!("ref:refs/heads/{}", policy.default_branch),
    };
    if ok {
        Ok(())
    } else {
        Err(Denial::SubjectMismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(environment: Option<&str>) -> Policy {
        Policy {
            repositories: vec![AllowedRepo {
                name: "octo/bench".into(),
                id: 456789,
            }],
            workflow_path: ".github/workflows/publish.yml".into(),
            events: vec!["schedule".into(), "workflow_dispatch".into()],
            environment: environment.map(str::to_owned),
            default_branch: "main".into(),
        }
    }

    fn claims() -> ActionsClaims {
        serde_json::from_value(serde_json::json!({
            "iss": "https://token.actions.githubusercontent.com",
            "aud": "benchops",
            "sub": "repo:octo/bench:environment:publication",
            "exp": 2, "iat": 1, "nbf": 1,
            "repository": "octo/bench",
            "repository_id": "456789",
            "repository_owner": "octo",
            "repository_owner_id": "123456",
            "workflow_ref": "octo/bench/.github/workflows/publish.yml@refs/heads/main",
            "job_workflow_ref": "octo/bench/.github/workflows/publish.yml@refs/heads/main",
            "event_name": "schedule",
            "environment": "publication",
            "ref": "refs/heads/main"
        }))
        .expect("claims")
    }

    #[test]
    fn the_publication_job_is_allowed_with_either_subject_format() {
        let p = policy(Some("publication"));
        assert_eq!(check(&p, &claims()).map(|r| r.id), Ok(456789));
        let mut c = claims();
        c.sub = "repo:octo@123456/bench@456789:environment:publication".into();
        assert_eq!(check(&p, &c).map(|r| r.id), Ok(456789));
        let mut c = claims();
        c.sub = "repo:octo/bench:ref:refs/heads/main".into();
        c.environment = None;
        assert_eq!(check(&policy(None), &c).map(|r| r.id), Ok(456789));
    }

    #[test]
    fn each_rule_has_its_reason() {
        let p = policy(Some("publication"));
        let denied = |f: &dyn Fn(&mut ActionsClaims)| {
            let mut c = claims();
            f(&mut c);
            check(&p, &c).map(|r| r.id).expect_err("denied").code()
        };
        assert_eq!(
            denied(&|c| c.repository = "octo/other".into()),
            "repository-not-allowed"
        );
        assert_eq!(
            denied(&|c| c.repository_id = "1".into()),
            "repository-id-mismatch"
        );
        assert_eq!(
            denied(&|c| {
                c.job_workflow_ref =
                    Some("octo/bench/.github/workflows/publish.yml@refs/heads/feature".into());
                c.workflow_ref =
                    Some("octo/bench/.github/workflows/other.yml@refs/heads/main".into());
            }),
            "workflow-ref-not-allowed"
        );
        assert_eq!(
            denied(&|c| {
                c.job_workflow_ref = None;
                c.workflow_ref = None;
            }),
            "missing-claim"
        );
        assert_eq!(denied(&|c| c.ref_ = None), "missing-claim");
        assert_eq!(
            denied(&|c| c.ref_ = Some("refs/heads/feature".into())),
            "ref-not-allowed"
        );
        assert_eq!(
            denied(&|c| c.event_name = Some("pull_request".into())),
            "event-not-allowed"
        );
        assert_eq!(
            denied(&|c| c.environment = Some("staging".into())),
            "environment-mismatch"
        );
        assert_eq!(denied(&|c| c.environment = None), "environment-mismatch");
        assert_eq!(
            denied(&|c| c.sub = "repo:octo/bench:pull_request".into()),
            "subject-mismatch"
        );
        assert_eq!(
            denied(&|c| c.sub = "repo:octo/other:environment:publication".into()),
            "subject-mismatch"
        );
        assert_eq!(
            denied(&|c| c.sub = "repo:octo@123456/bench@999:environment:publication".into()),
            "subject-mismatch"
        );
        assert_eq!(
            denied(&|c| c.sub = "repo:octo@1/bench@456789:environment:publication".into()),
            "subject-mismatch"
        );
        assert_eq!(
            denied(&|c| c.sub = "repo:octo@123456/bench:environment:publication".into()),
            "subject-mismatch"
        );
    }

    #[test]
    fn the_jobs_own_workflow_decides_and_the_callers_never_stands_in() {
        let p = policy(Some("publication"));
        // Another repository's reusable workflow runs the job; the caller
        // is the publication workflow.
        let mut c = claims();
        c.job_workflow_ref = Some("evil/tools/.github/workflows/x.yml@refs/heads/main".into());
        assert_eq!(
            check(&p, &c).map(|r| r.id),
            Err(Denial::WorkflowRefNotAllowed)
        );
        // The publication workflow on main, called by a workflow run from a
        // feature branch.
        let mut c = claims();
        c.workflow_ref = Some("octo/bench/.github/workflows/caller.yml@refs/heads/feature".into());
        c.ref_ = Some("refs/heads/feature".into());
        c.event_name = Some("workflow_dispatch".into());
        assert_eq!(check(&p, &c).map(|r| r.id), Err(Denial::RefNotAllowed));
        // Without `job_workflow_ref`, `workflow_ref` is the job's workflow.
        let mut c = claims();
        c.job_workflow_ref = None;
        assert_eq!(check(&p, &c).map(|r| r.id), Ok(456789));
        c.workflow_ref = Some("octo/bench/.github/workflows/other.yml@refs/heads/main".into());
        assert_eq!(
            check(&p, &c).map(|r| r.id),
            Err(Denial::WorkflowRefNotAllowed)
        );
    }

    #[test]
    fn names_compare_without_case_and_refs_with_it() {
        let p = policy(Some("publication"));
        let mut c = claims();
        c.repository = "Octo/Bench".into();
        c.sub = "repo:Octo/Bench:environment:publication".into();
        c.job_workflow_ref =
            Some("Octo/Bench/.github/workflows/publish.yml@refs/heads/main".into());
        assert!(check(&p, &c).is_ok());
        c.job_workflow_ref =
            Some("octo/bench/.github/workflows/Publish.yml@refs/heads/main".into());
        c.workflow_ref = None;
        assert_eq!(
            check(&p, &c).map(|r| r.id),
            Err(Denial::WorkflowRefNotAllowed)
        );
    }
}
