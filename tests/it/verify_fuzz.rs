//! Property tests: `verify` never panics, mutations of sealed bytes are never
//! accepted under the original address, and canonicalization is idempotent.

use std::path::Path;
use std::sync::OnceLock;

use benchops::jcs::{canonical_bytes, canonicalize, check_canonical, parse};
use benchops::seal::{SealedRecord, seal_json};
use benchops::verify;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn sealed() -> &'static SealedRecord {
    static SEALED: OnceLock<SealedRecord> = OnceLock::new();
    SEALED.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/result.draft.json");
        let draft = std::fs::read(&p).expect("example draft readable");
        seal_json(&draft).expect("the example seals")
    })
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bytes that look like JSON often enough to reach the later stages.
fn jsonish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(&b"{"[..]),
        Just(&b"}"[..]),
        Just(&b"["[..]),
        Just(&b"]"[..]),
        Just(&b","[..]),
        Just(&b":"[..]),
        Just(&b"\"schema\""[..]),
        Just(&b"\"benchmark-result/v1\""[..]),
        Just(&b"\"benchmark-result/v9\""[..]),
        Just(&b"\"cases\""[..]),
        Just(&b"null"[..]),
        Just(&b"true"[..]),
        Just(&b"1"[..]),
        Just(&b"-0"[..]),
        Just(&b"1.0"[..]),
        Just(&b"1e400"[..]),
        Just(&b"\"\\ud800\""[..]),
        Just(&b" "[..]),
    ];
    prop::collection::vec(token, 0..40).prop_map(|ts| ts.concat())
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1e6f64..1e6f64),
        prop::sample::select(vec![
            0.0,
            -0.0,
            5e-324,
            -5e-324,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            1e21,
            1e-7,
            9_007_199_254_740_992.0,
            9_007_199_254_740_993.0,
            0.1,
            333_333_333.333_333_3,
        ]),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => finite_f64().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
    ]
}

/// Strings over every char (controls, escapes, astral), plus a few
/// hand-picked ones that stress UTF-16 ordering.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter),
        1 => prop::sample::select(vec![
            "", "\u{1F600}", "\u{FB01}", "\u{E000}", "\u{FFFF}", "\u{10FFFF}", "a\u{30A}",
            "\u{7F}", "\u{0}", "\"\\/", "\u{2028}\u{2029}",
        ])
        .prop_map(str::to_owned),
    ]
}

fn value_tree() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The tree with every number replaced by its double.
fn as_doubles(v: &Value) -> Value {
    match v {
        Value::Number(n) => {
            let f = n.as_f64().expect("every JSON number has a double");
            Value::Number(Number::from_f64(f + 0.0).expect("finite"))
        }
        Value::Array(items) => Value::Array(items.iter().map(as_doubles).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), as_doubles(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn verify_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let digest = benchops::Sha256Digest::of(&bytes);
        let _ = verify(&bytes, None);
        let r = verify(&bytes, Some(&digest));
        // Random bytes are essentially never a valid record, but if they
        // were, the digest would be theirs.
        if let Ok(s) = r {
            prop_assert_eq!(s.digest(), digest);
        }
    }

    #[test]
    fn verify_never_panics_on_json_like_bytes(bytes in jsonish_bytes()) {
        let _ = verify(&bytes, None);
        let _ = seal_json(&bytes);
        if let Ok(v) = parse(&bytes) {
            let c = canonical_bytes(&v);
            prop_assert!(check_canonical(&c, &v).is_ok());
        }
    }

    #[test]
    fn mutated_sealed_bytes_are_never_accepted_under_the_original_digest(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..=4)
    ) {
        let s = sealed();
        let mut bytes = s.bytes().to_vec();
        for (at, b) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        let with_digest = verify(&bytes, Some(&s.digest()));
        let without = verify(&bytes, None);
        if bytes == s.bytes() {
            prop_assert_eq!(with_digest.expect("unchanged bytes verify").digest(), s.digest());
        } else {
            prop_assert!(with_digest.is_err(), "changed bytes accepted under the original digest");
            if let Ok(other) = without {
                prop_assert_ne!(other.digest(), s.digest());
                prop_assert_eq!(other.bytes(), bytes.as_slice());
            }
        }
    }

    #[test]
    fn canonicalization_is_idempotent_and_round_trips(v in value_tree()) {
        let c = canonical_bytes(&v);
        let again = canonicalize(&c).expect("canonical bytes parse");
        prop_assert_eq!(&again, &c, "not a fixed point");
        let back = parse(&c).expect("canonical bytes parse");
        prop_assert!(check_canonical(&c, &back).is_ok(), "check_canonical rejects canonical bytes");
        // Numbers pass through doubles (as RFC 8785 says), so compare the
        // trees with every number taken as a double.
        prop_assert_eq!(as_doubles(&back), as_doubles(&v));
        // Canonical bytes of the re-parsed tree are the same bytes.
        prop_assert_eq!(canonical_bytes(&back), c);
    }

    #[test]
    fn f64_only_trees_parse_back_equal(v in value_tree()) {
        let v = as_doubles(&v);
        let c = canonical_bytes(&v);
        let back = parse(&c).expect("canonical bytes parse");
        prop_assert_eq!(as_doubles(&back), v);
    }

    #[test]
    fn number_spellings_are_judged_like_the_formatter(
        neg in proptest::bool::ANY,
        int in "(0|[1-9][0-9]{0,21})",
        frac in proptest::option::of("[0-9]{1,20}"),
        exp in proptest::option::of("[eE][+-]?[0-9]{1,3}"),
    ) {
        let mut t = String::new();
        if neg { t.push('-'); }
        t.push_str(&int);
        if let Some(f) = &frac { t.push('.'); t.push_str(f); }
        if let Some(e) = &exp { t.push_str(e); }
        if let Ok(v) = parse(t.as_bytes()) {
            // Whatever shortcut the checker takes, it must agree with
            // formatting the parsed number.
            let canonical = canonical_bytes(&v) == t.as_bytes();
            prop_assert_eq!(check_canonical(t.as_bytes(), &v).is_ok(), canonical, "{}", t);
        }
    }
}
