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
}

impl Contract {
    /// Every contract.
    pub const ALL: [Contract; 5] = [
        Contract::BenchmarkResultV1,
        Contract::ReceiptV1,
        Contract::BaselinePointerV1,
        Contract::ScheduleManifestV1,
        Contract::BenchmarkIntentV1,
    ];

    /// The schema id the document carries in its `schema` member.
    pub fn id(self) -> &'static str {
        match self {
            Contract::BenchmarkResultV1 => "benchmark-result/v1",
            Contract::ReceiptV1 => "receipt/v1",
            Contract::BaselinePointerV1 => "baseline-pointer/v1",
            Contract::ScheduleManifestV1 => "schedule-manifest/v1",
            Contract::BenchmarkIntentV1 => "benchmark-intent/v1",
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
        }
    }

    fn slot(self) -> &'static OnceLock<jsonschema::Validator> {
        static SLOTS: [OnceLock<jsonschema::Validator>; 5] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
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
        let v = self.validator();
        if v.is_valid(instance) {
            return Ok(());
        }
        let mut errors: Vec<SchemaViolation> = v
            .iter_errors(instance)
            .map(|e| SchemaViolation {
                path: JsonPath::from_pointer(&e.instance_path().to_string()),
                reason: e.to_string(),
            })
            .collect();
        errors.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.reason.cmp(&b.reason)));
        errors.dedup();
        Err(errors)
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
/// `("benchmark-result", 1)`.
pub fn schema_tag(doc: &Value) -> Option<(&str, u64)> {
    let tag = doc.get("schema")?.as_str()?;
    let (name, version) = tag.rsplit_once("/v")?;
    if version.is_empty()
        || !version.bytes().all(|b| b.is_ascii_digit())
        || version.starts_with('0')
    {
        return None;
    }
    Some((name, version.parse().ok()?))
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
    }
}
