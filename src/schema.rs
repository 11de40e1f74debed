//! The JSON Schemas (2020-12) of every contract, embedded in the binary.

use std::sync::OnceLock;

use serde_json::Value;

use crate::path::JsonPath;

/// A contract document kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Contract {
    /// `benchmark-result/v1`.
    BenchmarkResultV1,
    /// `receipt/v1`.
    ReceiptV1,
    /// `baseline-pointer/v1`.
    BaselinePointerV1,
    /// `schedule-manifest/v1`.
    ScheduleManifestV1,
    /// `benchmark-intent/v1`.
    BenchmarkIntentV1,
    /// `benchmark-result/v2`: v1 plus the lane comparison.
    BenchmarkResultV2,
    /// `schedule-manifest/v2`: v1 plus the suite and comparison settings.
    ScheduleManifestV2,
    /// `benchmark-result/v3`: v2 plus how each key was decided, the
    /// same-session A/B evidence and the culprit bisection (ADR 0008).
    BenchmarkResultV3,
    /// `schedule-manifest/v3`: v2 plus each lane's confirmation mode and
    /// bisection budget.
    ScheduleManifestV3,
}

impl Contract {
    /// Every contract.
    pub const ALL: [Contract; 9] = [
        Contract::BenchmarkResultV1,
        Contract::ReceiptV1,
        Contract::BaselinePointerV1,
        Contract::ScheduleManifestV1,
        Contract::BenchmarkIntentV1,
        Contract::BenchmarkResultV2,
        Contract::ScheduleManifestV2,
        Contract::BenchmarkResultV3,
        Contract::ScheduleManifestV3,
    ];

    /// The schema id the document carries in its `schema` member.
    pub fn id(self) -> &'static str {
        match self {
            Contract::BenchmarkResultV1 => "benchmark-result/v1",
            Contract::ReceiptV1 => "receipt/v1",
            Contract::BaselinePointerV1 => "baseline-pointer/v1",
            Contract::ScheduleManifestV1 => "schedule-manifest/v1",
            Contract::BenchmarkIntentV1 => "benchmark-intent/v1",
            Contract::BenchmarkResultV2 => "benchmark-result/v2",
            Contract::ScheduleManifestV2 => "schedule-manifest/v2",
            Contract::BenchmarkResultV3 => "benchmark-result/v3",
            Contract::ScheduleManifestV3 => "schedule-manifest/v3",
        }
    }

    /// The schema text, as shipped in `schemas/`.
    pub fn schema_text(self) -> &'static str {
        match self {
            Contract::BenchmarkResultV1 => {
                include_str!("../schemas/benchmark-result.v1.schema.json")
            }
            Contract::ReceiptV1 => include_str!("../schemas/receipt.v1.schema.json"),
            Contract::BaselinePointerV1 => {
                include_str!("../schemas/baseline-pointer.v1.schema.json")
            }
            Contract::ScheduleManifestV1 => {
                include_str!("../schemas/schedule-manifest.v1.schema.json")
            }
            Contract::BenchmarkIntentV1 => {
                include_str!("../schemas/benchmark-intent.v1.schema.json")
            }
            Contract::BenchmarkResultV2 => {
                include_str!("../schemas/benchmark-result.v2.schema.json")
            }
            Contract::ScheduleManifestV2 => {
                include_str!("../schemas/schedule-manifest.v2.schema.json")
            }
            Contract::BenchmarkResultV3 => {
                include_str!("../schemas/benchmark-result.v3.schema.json")
            }
            Contract::ScheduleManifestV3 => {
                include_str!("../schemas/schedule-manifest.v3.schema.json")
            }
        }
    }

    fn slot(self) -> &'static OnceLock<jsonschema::Validator> {
        static SLOTS: [OnceLock<jsonschema::Validator>; Contract::ALL.len()] =
            [const { OnceLock::new() }; Contract::ALL.len()];
        &SLOTS[self as usize]
    }

    fn validator(self) -> &'static jsonschema::Validator {
        self.slot().get_or_init(|| {
            // The schemas are part of the build and are tested to compile
            // (`every_schema_compiles`); failing here is a build defect.
            #[expect(
                clippy::expect_used,
                reason = "embedded schemas are tested to be valid"
            )]
            let schema: Value =
                serde_json::from_str(self.schema_text()).expect("embedded schema is JSON");
            #[expect(
                clippy::expect_used,
                reason = "embedded schemas are tested to be valid"
            )]
            jsonschema::draft202012::new(&schema).expect("embedded schema compiles")
        })
    }

    /// Validates `instance`, returning every violation.
    pub fn validate(self, instance: &Value) -> Result<(), Vec<SchemaViolation>> {
        let mut errors = violations(self.validator(), instance, &JsonPath::root());
        if errors.is_empty() {
            return Ok(());
        }
        sort_violations(&mut errors);
        Err(errors)
    }
}

/// The most violations one validation lists; a hostile document can hold
/// millions, and listing them all would take more memory than the document.
pub const MAX_VIOLATIONS: usize = 100;

/// Sorts violations by path, then reason, and drops repeats.
pub(crate) fn sort_violations(errors: &mut Vec<SchemaViolation>) {
    errors.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.reason.cmp(&b.reason)));
    errors.dedup();
}

/// Every violation of `instance`, whose place in the whole document is
/// `at`. Values are quoted through [`crate::excerpt`], so a message never
/// echoes a large value whole.
fn violations(
    validator: &jsonschema::Validator,
    instance: &Value,
    at: &JsonPath,
) -> Vec<SchemaViolation> {
    if validator.is_valid(instance) {
        return Vec::new();
    }
    validator
        .iter_errors(instance)
        .take(MAX_VIOLATIONS)
        .map(|e| {
            let mut path = at.clone();
            for s in JsonPath::from_pointer(&e.instance_path().to_string()).segments() {
                path.push(s.clone());
            }
            SchemaViolation {
                path,
                reason: bounded_reason(&e),
            }
        })
        .collect()
}

fn bounded_reason(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind;
    if let ValidationErrorKind::AdditionalProperties { unexpected } = e.kind() {
        // The validator lists the names verbatim; a name can be huge.
        const SHOWN: usize = 8;
        let mut names: Vec<String> = unexpected
            .iter()
            .take(SHOWN)
            .map(|n| crate::excerpt::quote(n))
            .collect();
        if unexpected.len() > SHOWN {
            names.push(format!("and {} more", unexpected.len() - SHOWN));
        }
        let verb = if unexpected.len() == 1 { "was" } else { "were" };
        return format!(
            "Additional properties are not allowed ({} {verb} unexpected)",
            names.join(", ")
        );
    }
    e.masked_with(crate::excerpt::quote_json(e.instance()))
        .to_string()
}

/// The parts of `benchmark-result/v1` that [`crate::scan`] checks one
/// element at a time instead of as part of the whole document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultItem {
    /// An element of `cases`.
    Case,
    /// An element of a case's `metrics`.
    Metric,
    /// An element of a metric's `samples`.
    Sample,
    /// An element of a drift's `initial_samples`.
    InitialSample,
    /// An element of a drift's `confirmation_samples`.
    ConfirmationSample,
}

impl ResultItem {
    #[cfg(test)]
    const ALL: [ResultItem; 5] = [
        ResultItem::Case,
        ResultItem::Metric,
        ResultItem::Sample,
        ResultItem::InitialSample,
        ResultItem::ConfirmationSample,
    ];

    /// Where the item's schema sits in the record's schema.
    fn pointer(self) -> &'static str {
        match self {
            ResultItem::Case => "/$defs/case",
            ResultItem::Metric => "/$defs/metric",
            ResultItem::Sample => "/$defs/metric/properties/samples/items",
            ResultItem::InitialSample => "/$defs/drift/properties/initial_samples/items",
            ResultItem::ConfirmationSample => "/$defs/drift/properties/confirmation_samples/items",
        }
    }

    fn validator(self) -> &'static jsonschema::Validator {
        static SLOTS: [OnceLock<jsonschema::Validator>; 5] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        SLOTS[self as usize].get_or_init(|| {
            #[expect(
                clippy::expect_used,
                reason = "embedded schemas are tested to be valid"
            )]
            let root: Value = serde_json::from_str(Contract::BenchmarkResultV1.schema_text())
                .expect("embedded schema is JSON");
            let mut sub = match root.pointer(self.pointer()) {
                Some(Value::Object(m)) => m.clone(),
                _ => serde_json::Map::new(),
            };
            sub.insert("$schema".into(), root["$schema"].clone());
            sub.insert("$defs".into(), root["$defs"].clone());
            #[expect(
                clippy::expect_used,
                reason = "embedded schemas are tested to be valid"
            )]
            jsonschema::draft202012::new(&Value::Object(sub)).expect("embedded schema compiles")
        })
    }

    /// Whether `element` is certainly valid without asking the validator:
    /// the common case of a sample (a number, or null where that is
    /// allowed), which can occur millions of times in one record.
    fn plainly_valid(self, element: &Value) -> bool {
        match self {
            ResultItem::Sample => element.is_number() || element.is_null(),
            ResultItem::InitialSample | ResultItem::ConfirmationSample => element.is_number(),
            ResultItem::Case | ResultItem::Metric => false,
        }
    }

    /// Every violation of one element, which sits at `at`.
    pub(crate) fn violations(self, element: &Value, at: &JsonPath) -> Vec<SchemaViolation> {
        if self.plainly_valid(element) {
            return Vec::new();
        }
        violations(self.validator(), element, at)
    }
}

/// One schema violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where.
    pub path: JsonPath,
    /// Why, as the validator words it.
    pub reason: String,
}

/// Reads the `schema` member and splits it into name and major version, e.g.
/// `("benchmark-result", 1)`. A version too large for a u64 reads as
/// `u64::MAX`: still a version, and not one any build knows.
pub fn schema_tag(doc: &Value) -> Option<(&str, u64)> {
    let (name, version) = split_schema_tag(doc.get("schema")?.as_str()?)?;
    Some((name, version.parse().unwrap_or(u64::MAX)))
}

/// Splits a schema tag into its name and the digits of its major version:
/// `"benchmark-result/v12"` gives `("benchmark-result", "12")`. The digits
/// are kept as text, so no version is too large to name.
pub fn split_schema_tag(tag: &str) -> Option<(&str, &str)> {
    let (name, version) = tag.rsplit_once("/v")?;
    if version.is_empty()
        || !version.bytes().all(|b| b.is_ascii_digit())
        || version.starts_with('0')
    {
        return None;
    }
    Some((name, version))
}

/// A contract document as canonical bytes, checked against its schema
/// first: every violation (with its JSON path) or the RFC 8785 bytes.
pub fn canonical_contract_bytes<T: serde::Serialize>(
    doc: &T,
    contract: Contract,
) -> Result<Vec<u8>, Vec<String>> {
    let value = serde_json::to_value(doc).map_err(|e| vec![e.to_string()])?;
    contract.validate(&value).map_err(|v| {
        v.iter()
            .map(|v| format!("{}: {}", v.path, v.reason))
            .collect::<Vec<_>>()
    })?;
    Ok(crate::jcs::canonical_bytes(&value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_compiles_and_names_its_contract() {
        for c in Contract::ALL {
            let schema: Value = serde_json::from_str(c.schema_text()).expect("schema is JSON");
            assert_eq!(schema["title"], c.id());
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert_eq!(schema["properties"]["schema"]["const"], c.id());
            let _ = c.validator();
        }
    }

    #[test]
    fn reports_every_violation_with_its_path() {
        let doc =
            serde_json::json!({"schema": "baseline-pointer/v1", "lane": "bad lane", "record": "x"});
        let errs = Contract::BaselinePointerV1
            .validate(&doc)
            .expect_err("invalid");
        let paths: Vec<String> = errs.iter().map(|e| e.path.to_string()).collect();
        assert!(paths.contains(&"$.lane".to_owned()), "{paths:?}");
        assert!(paths.contains(&"$.record".to_owned()), "{paths:?}");
        assert!(
            paths.contains(&"$".to_owned()),
            "missing members reported at the root: {paths:?}"
        );
    }

    #[test]
    fn parses_schema_tags() {
        let tag = |s: &str| serde_json::json!({ "schema": s });
        assert_eq!(
            schema_tag(&tag("benchmark-result/v1")),
            Some(("benchmark-result", 1))
        );
        assert_eq!(
            schema_tag(&tag("benchmark-result/v12")),
            Some(("benchmark-result", 12))
        );
        assert_eq!(schema_tag(&tag("benchmark-result/v01")), None);
        assert_eq!(schema_tag(&tag("benchmark-result")), None);
        assert_eq!(
            schema_tag(&tag("benchmark-result/v99999999999999999999")),
            Some(("benchmark-result", u64::MAX))
        );
        assert_eq!(
            split_schema_tag("benchmark-result/v99999999999999999999"),
            Some(("benchmark-result", "99999999999999999999"))
        );
    }

    #[test]
    fn messages_quote_large_values_briefly() {
        let doc = serde_json::json!({
            "schema": "baseline-pointer/v1",
            "lane": "x".repeat(100_000),
            "record": "y",
            "zzz": 1,
        });
        let errs = Contract::BaselinePointerV1
            .validate(&doc)
            .expect_err("invalid");
        for e in &errs {
            assert!(e.reason.len() < 300, "{}", e.reason);
        }
        let lane = errs
            .iter()
            .find(|e| e.path.to_string() == "$.lane")
            .expect("lane reported");
        assert!(lane.reason.contains("(100000 bytes)"), "{}", lane.reason);
        let big_name = serde_json::json!({
            "schema": "baseline-pointer/v1",
            "k".repeat(100_000): 1,
        });
        let errs = Contract::BaselinePointerV1
            .validate(&big_name)
            .expect_err("invalid");
        for e in &errs {
            assert!(e.reason.len() < 300, "{}", e.reason);
        }
    }

    #[test]
    fn the_sample_shortcut_agrees_with_the_schema() {
        let values = [
            serde_json::json!(0),
            serde_json::json!(-1.5),
            serde_json::json!(null),
            serde_json::json!("1"),
            serde_json::json!(true),
            serde_json::json!([1]),
            serde_json::json!({}),
        ];
        for item in [
            ResultItem::Sample,
            ResultItem::InitialSample,
            ResultItem::ConfirmationSample,
        ] {
            for v in &values {
                if item.plainly_valid(v) {
                    assert!(item.validator().is_valid(v), "{item:?} {v}");
                }
                assert_eq!(
                    item.violations(v, &JsonPath::root()).is_empty(),
                    item.validator().is_valid(v),
                    "{item:?} {v}"
                );
            }
        }
    }

    #[test]
    fn item_schemas_compile() {
        for item in ResultItem::ALL {
            let _ = item.validator();
        }
        let at = JsonPath::root().key("cases").index(3);
        let errs = ResultItem::Case.violations(&serde_json::json!({"id": "a"}), &at);
        assert!(
            errs.iter().all(|e| e.path.to_string() == "$.cases[3]"),
            "{errs:?}"
        );
        assert!(!errs.is_empty());
    }
}
