//! The App manifest asks for exactly what the router handles and what the
//! token phases mint, plus the one read permission GitHub requires for the
//! `workflow_run` event.

use std::collections::BTreeMap;
use std::path::PathBuf;

use benchops_app::events::{HANDLED_EVENTS, SUBSCRIBED_EVENTS};
use benchops_github::{PermissionLevel, Phase};

fn manifest() -> serde_json::Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../app-manifest/benchops-app.json");
    let text = std::fs::read_to_string(&path).expect("read the manifest");
    serde_json::from_str(&text).expect("the manifest is JSON")
}

#[test]
fn default_events_are_the_subscribed_events() {
    let m = manifest();
    let events: Vec<&str> = m["default_events"]
        .as_array()
        .expect("default_events is an array")
        .iter()
        .map(|e| e.as_str().expect("event names are strings"))
        .collect();
    assert_eq!(events, SUBSCRIBED_EVENTS);
    for e in &events {
        assert!(
            HANDLED_EVENTS.contains(e),
            "{e} is subscribed but not handled"
        );
    }
}

#[test]
fn permissions_are_the_union_of_the_phases_plus_actions_read_for_workflow_run() {
    let mut want: BTreeMap<String, PermissionLevel> = BTreeMap::new();
    for phase in [Phase::Contents, Phase::Issues] {
        for (name, level) in phase.permissions() {
            let slot = want.entry(name.to_string()).or_insert(level);
            *slot = (*slot).max(level);
        }
    }
    // GitHub only delivers `workflow_run` to Apps that can read Actions;
    // no token phase ever asks for it.
    want.insert("actions".into(), PermissionLevel::Read);
    let got: BTreeMap<String, PermissionLevel> =
        serde_json::from_value(manifest()["default_permissions"].clone())
            .expect("default_permissions maps names to read/write");
    assert_eq!(got, want);
    for phase in [Phase::Contents, Phase::Issues] {
        assert!(
            !phase.permissions().contains_key("actions"),
            "a minted token must not carry the manifest-only actions permission"
        );
    }
}
