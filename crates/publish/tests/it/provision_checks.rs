//! The provisioning checks as pure functions: a correctly provisioned
//! repository passes every one, and each departure fails the right check
//! with the right remedy (steps `apply` can take, or a manual step).

use std::collections::BTreeMap;

use benchops_github::{
    BranchPolicy, BypassActor, DeploymentBranchPolicy, Environment, GitHubError, Installation,
    InstallationId, Label, RefNameCondition, Rule, Ruleset, RulesetConditions,
};
use benchops_publish::provision::checks::{
    self, Check, Expected, Observed, ReadError, Remedy, Step,
};
use benchops_publish::provision::{app_permissions, parse_actor};

const APP: u64 = 77;
const WORKFLOW: &str = include_str!("../../../../workflows/benchmark-publication.yml");

fn expected() -> Expected {
    Expected {
        app_id: Some(APP),
        app_permissions: app_permissions(),
        environment: "benchmark-publication".into(),
        workflow_path: ".github/workflows/benchmark-publication.yml".into(),
        handoff_refs: true,
        execution_actors: vec![parse_actor("DeployKey").expect("valid")],
        handoff_via_app: false,
        labels: vec![
            ("benchmark-drift".into(), "B60205".into(), "d".into()),
            ("lane:nightly".into(), "1D76DB".into(), "d".into()),
        ],
    }
}

fn actor(kind: &str, id: Option<u64>) -> BypassActor {
    BypassActor {
        actor_id: id,
        actor_type: kind.into(),
        bypass_mode: Some("always".into()),
    }
}

fn ruleset(id: u64, include: &str, rules: &[&str], actors: Vec<BypassActor>) -> Ruleset {
    Ruleset {
        id,
        name: format!("rs{id}"),
        target: Some("branch".into()),
        enforcement: "active".into(),
        bypass_actors: Some(actors),
        conditions: Some(RulesetConditions {
            ref_name: Some(RefNameCondition {
                include: vec![include.into()],
                exclude: Vec::new(),
            }),
        }),
        rules: rules.iter().map(|r| Rule::new(r)).collect(),
    }
}

fn good() -> Observed {
    Observed {
        installation: Ok(Installation {
            id: InstallationId::new(5),
            app_id: None,
            account: None,
            repository_selection: Some("selected".into()),
            permissions: app_permissions(),
        }),
        default_branch: Ok("main".into()),
        environment: Ok(Some((
            Environment {
                id: 1,
                name: "benchmark-publication".into(),
                deployment_branch_policy: Some(DeploymentBranchPolicy {
                    protected_branches: false,
                    custom_branch_policies: true,
                }),
            },
            vec![BranchPolicy {
                id: 2,
                name: "main".into(),
                kind: Some("branch".into()),
            }],
        ))),
        rulesets: Ok(vec![
            ruleset(
                10,
                "refs/heads/benchmark-history",
                &["deletion", "non_fast_forward", "update", "creation"],
                vec![actor("Integration", Some(APP))],
            ),
            ruleset(
                11,
                "refs/heads/benchmark-result/**/*",
                &["creation", "update"],
                vec![actor("Integration", Some(APP)), actor("DeployKey", None)],
            ),
        ]),
        labels: Ok(vec![
            Label {
                name: "benchmark-drift".into(),
                color: "b60205".into(),
                description: None,
            },
            Label {
                name: "lane:nightly".into(),
                color: "1D76DB".into(),
                description: None,
            },
        ]),
        workflow: Ok(Some(WORKFLOW.as_bytes().to_vec())),
    }
}

fn check<'a>(all: &'a [Check], id: &str) -> &'a Check {
    all.iter().find(|c| c.id == id).expect("check exists")
}

fn failing(o: &Observed, id: &str) -> Check {
    let all = checks::run(&expected(), o);
    let c = check(&all, id).clone();
    assert!(!c.passed, "{id} should fail: {c:?}");
    for other in all.iter().filter(|c| c.id != id) {
        assert!(other.passed, "only {id} should fail, {other:?} did too");
    }
    c
}

fn steps(c: &Check) -> Vec<Step> {
    match &c.remedy {
        Remedy::Steps { steps } => steps.clone(),
        r => panic!("{} should have steps, has {r:?}", c.id),
    }
}

fn manual(c: &Check) -> String {
    match &c.remedy {
        Remedy::Manual { instructions } => instructions.clone(),
        r => panic!("{} should be manual, has {r:?}", c.id),
    }
}

#[test]
fn a_provisioned_repository_passes_every_check() {
    let all = checks::run(&expected(), &good());
    let ids: Vec<&str> = all.iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "app-installation",
            "app-repository-access",
            "environment",
            "history-ruleset",
            "handoff-ruleset",
            "labels",
            "workflow"
        ]
    );
    for c in &all {
        assert!(c.passed, "{c:?}");
        assert_eq!(c.remedy, Remedy::None);
    }
}

#[test]
fn app_permissions_match_the_app_manifest() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../app-manifest/benchops-app.json"
    ))
    .expect("the App manifest");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let want: BTreeMap<String, String> =
        serde_json::from_value(v["default_permissions"].clone()).expect("a map");
    assert_eq!(app_permissions(), want);
}

#[test]
fn installation_departures_are_named() {
    let mut o = good();
    if let Ok(i) = &mut o.installation {
        i.permissions
            .insert("administration".into(), "write".into());
        i.permissions.insert("issues".into(), "read".into());
    }
    let c = failing(&o, "app-installation");
    assert!(
        c.detail
            .contains("administration: write is granted and must not be")
    );
    assert!(c.detail.contains("issues is read, must be write"));
    assert!(manual(&c).contains("actions: read, contents: write"));

    let mut o = good();
    if let Ok(i) = &mut o.installation {
        i.repository_selection = Some("all".into());
    }
    let c = failing(&o, "app-repository-access");
    assert!(c.detail.contains("covers all repositories"));

    let mut o = good();
    o.installation = Err(GitHubError::NotFound {
        operation: "get the installation",
        request_id: None,
    }
    .into());
    let all = checks::run(&expected(), &o);
    assert!(!check(&all, "app-installation").passed);
    assert!(!check(&all, "app-repository-access").passed);
    assert!(
        check(&all, "app-installation")
            .detail
            .contains("get the installation: not found (404)")
    );
}

#[test]
fn environment_departures_have_their_remedy() {
    let mut o = good();
    o.environment = Ok(None);
    let c = failing(&o, "environment");
    assert!(c.detail.contains("does not exist"));
    assert_eq!(
        steps(&c),
        [
            Step::PutEnvironment {
                name: "benchmark-publication".into()
            },
            Step::CreateBranchPolicy {
                environment: "benchmark-publication".into(),
                branch: "main".into()
            }
        ]
    );

    let mut o = good();
    if let Ok(Some((e, p))) = &mut o.environment {
        e.deployment_branch_policy = None;
        p.clear();
    }
    let c = failing(&o, "environment");
    assert!(c.detail.contains("allows every branch"), "{}", c.detail);
    assert!(
        manual(&c).contains("Selected branches"),
        "apply never changes an existing environment"
    );

    let mut o = good();
    if let Ok(Some((e, _))) = &mut o.environment {
        e.deployment_branch_policy = Some(DeploymentBranchPolicy {
            protected_branches: true,
            custom_branch_policies: false,
        });
    }
    let c = failing(&o, "environment");
    assert!(c.detail.contains("every protected branch"));
    assert!(manual(&c).contains("only main"));

    let mut o = good();
    if let Ok(Some((_, p))) = &mut o.environment {
        p.push(BranchPolicy {
            id: 3,
            name: "release/*".into(),
            kind: Some("branch".into()),
        });
    }
    let c = failing(&o, "environment");
    assert!(c.detail.contains("also allows \"release/*\""));
    assert!(manual(&c).contains("remove every deployment branch rule"));

    let mut o = good();
    if let Ok(Some((_, p))) = &mut o.environment {
        p.clear();
    }
    let c = failing(&o, "environment");
    assert!(c.detail.contains("does not allow the default branch main"));
}

#[test]
fn history_ruleset_departures() {
    // None at all: apply creates one.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r.retain(|r| r.id != 10);
    }
    let c = failing(&o, "history-ruleset");
    assert!(c.detail.contains("deletion, non_fast_forward, update"));
    match &steps(&c)[0] {
        Step::CreateRuleset { ruleset, .. } => {
            assert_eq!(ruleset.bypass_actors, [actor("Integration", Some(APP))]);
            assert_eq!(
                ruleset
                    .conditions
                    .ref_name
                    .as_ref()
                    .map(|r| r.include.clone()),
                Some(vec!["refs/heads/benchmark-history".to_owned()])
            );
        }
        s => panic!("{s:?}"),
    }

    // Disabled or aimed elsewhere does not count.
    for change in [
        |r: &mut Ruleset| r.enforcement = "disabled".into(),
        |r: &mut Ruleset| r.enforcement = "evaluate".into(),
        |r: &mut Ruleset| {
            r.conditions = Some(RulesetConditions {
                ref_name: Some(RefNameCondition {
                    include: vec!["refs/heads/benchmark-*".into()],
                    exclude: vec!["refs/heads/benchmark-history".into()],
                }),
            })
        },
    ] {
        let mut o = good();
        if let Ok(r) = &mut o.rulesets {
            change(&mut r[0]);
        }
        failing(&o, "history-ruleset");
    }

    // Someone else may bypass: manual, naming the ruleset and actor.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[0].bypass_actors
            .as_mut()
            .expect("shown")
            .push(actor("RepositoryRole", Some(5)));
    }
    let c = failing(&o, "history-ruleset");
    assert!(
        c.detail
            .contains("\"rs10\" (id 10) also lets RepositoryRole 5")
    );
    assert!(manual(&c).contains("Integration 77"));

    // Updates restricted without the App: publication would be refused.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[0].bypass_actors = Some(Vec::new());
    }
    let c = failing(&o, "history-ruleset");
    assert!(c.detail.contains("does not let the App 77 bypass it"));

    // A missing rule.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[0].rules.retain(|r| r.kind != "non_fast_forward");
    }
    let c = failing(&o, "history-ruleset");
    assert!(c.detail.contains("non_fast_forward"));

    // ~ALL covers the branch.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[0].conditions = Some(RulesetConditions {
            ref_name: Some(RefNameCondition {
                include: vec!["~ALL".into()],
                exclude: Vec::new(),
            }),
        });
    }
    let all = checks::run(&expected(), &o);
    assert!(check(&all, "history-ruleset").passed);
}

#[test]
fn handoff_ruleset_departures() {
    let mut e = expected();
    e.handoff_refs = false;
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r.retain(|r| r.id != 11);
    }
    assert!(check(&checks::run(&e, &o), "handoff-ruleset").passed);

    let c = failing(&o, "handoff-ruleset");
    assert!(matches!(&steps(&c)[0], Step::CreateRuleset { .. }));

    // A single `*` does not reach nested handoff refs.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[1] = ruleset(
            11,
            "refs/heads/benchmark-result/*",
            &["creation", "update"],
            vec![actor("DeployKey", None)],
        );
    }
    let c = failing(&o, "handoff-ruleset");
    assert!(
        c.detail
            .contains("restricts creation of refs/heads/benchmark-result/nightly/record"),
        "{}",
        c.detail
    );

    // Nobody may push, or the wrong identity may.
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[1].bypass_actors = Some(vec![actor("Integration", Some(APP))]);
    }
    let c = failing(&o, "handoff-ruleset");
    assert!(c.detail.contains("lets no execution identity push"));
    // Unless the App writes the handoff refs itself (POST /handoff).
    let mut via_app = expected();
    via_app.handoff_via_app = true;
    via_app.execution_actors.clear();
    let all = checks::run(&via_app, &o);
    let c = check(&all, "handoff-ruleset");
    assert!(c.passed, "{}", c.detail);
    assert!(
        c.detail.contains("only the App (POST /handoff)"),
        "{}",
        c.detail
    );
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        r[1].bypass_actors
            .as_mut()
            .expect("shown")
            .push(actor("Team", Some(9)));
    }
    let c = failing(&o, "handoff-ruleset");
    assert!(c.detail.contains("lets Team 9 push handoff refs"));
}

#[test]
fn label_and_workflow_departures() {
    let mut o = good();
    if let Ok(l) = &mut o.labels {
        l.remove(1);
    }
    let c = failing(&o, "labels");
    assert!(c.detail.contains("\"lane:nightly\" is missing"));
    assert!(
        matches!(&steps(&c)[0], Step::CreateLabel { name, color, .. } if name == "lane:nightly" && color == "1D76DB")
    );

    let mut o = good();
    if let Ok(l) = &mut o.labels {
        l[0].color = "ffffff".into();
    }
    let c = failing(&o, "labels");
    assert!(manual(&c).contains("\"benchmark-drift\" is #ffffff, not #B60205"));

    let mut o = good();
    o.workflow = Ok(None);
    let c = failing(&o, "workflow");
    assert!(c.detail.contains("does not exist on main"));

    let mut o = good();
    o.workflow = Ok(Some(
        WORKFLOW
            .replacen(
                "  workflow_dispatch:\n",
                "  pull_request_target:\n  workflow_dispatch:\n",
                1,
            )
            .into_bytes(),
    ));
    let c = failing(&o, "workflow");
    assert!(c.detail.contains("pull_request_target"), "{}", c.detail);
}

#[test]
fn hidden_bypass_actors_are_unknown_not_empty() {
    let mut o = good();
    if let Ok(r) = &mut o.rulesets {
        for r in r.iter_mut() {
            r.bypass_actors = None;
        }
    }
    let all = checks::run(&expected(), &o);
    for id in ["history-ruleset", "handoff-ruleset"] {
        let c = check(&all, id);
        assert!(!c.passed, "{c:?}");
        assert!(
            c.detail.contains("does not show who may bypass it"),
            "{c:?}"
        );
        assert!(manual(c).contains("--token-env"), "{c:?}");
    }
}

#[test]
fn unreadable_parts_fail_their_checks_with_the_reason() {
    let mut o = good();
    o.rulesets = Err(ReadError::Ruleset {
        id: 9,
        source: std::sync::Arc::new(GitHubError::Forbidden {
            operation: "get a ruleset",
            message: "Resource not accessible by integration".into(),
            request_id: None,
        }),
    });
    let all = checks::run(&expected(), &o);
    for id in ["history-ruleset", "handoff-ruleset"] {
        let c = check(&all, id);
        // The reason, with its cause.
        assert!(
            !c.passed
                && c.detail.ends_with(
                    "could not read the rulesets: ruleset 9: get a ruleset: forbidden (403): \
                     Resource not accessible by integration"
                ),
            "{c:?}"
        );
    }
    let mut o = good();
    o.default_branch = Err(ReadError::NotAsApp);
    o.workflow = Err(ReadError::NoDefaultBranch(Box::new(ReadError::NotAsApp)));
    let all = checks::run(&expected(), &o);
    assert!(!check(&all, "environment").passed);
    assert!(!check(&all, "history-ruleset").passed);
    let c = check(&all, "workflow");
    assert!(
        !c.passed
            && c.detail.ends_with(
                ": the default branch is unknown: it is readable only as the App: pass \
                 --app-id and --app-key-file"
            ),
        "{c:?}"
    );
}

#[test]
fn execution_actors_parse_strictly() {
    assert_eq!(
        parse_actor("Integration:12").expect("ok"),
        actor("Integration", Some(12))
    );
    assert_eq!(
        parse_actor("DeployKey").expect("ok"),
        actor("DeployKey", None)
    );
    for (bad, says) in [
        ("Integration", "needs an id"),
        ("DeployKey:3", "takes no id"),
        ("Robot:1", "must be one of"),
        ("Team:x", "must be a number"),
    ] {
        let e = parse_actor(bad).expect_err(bad).to_string();
        assert!(e.starts_with(&format!("{bad:?}: ")), "{bad}: {e}");
        assert!(e.contains(says), "{bad}: {e}");
    }
}
