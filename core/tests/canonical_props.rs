//! Property tests: the streamed canonical trace equals RFC 8785 of the same JSON through an
//! independent canonicalizer, whatever the strings and key order.

use conduct_core::canonical::{jcs, trace_sha256, write_trace};
use conduct_core::trace::{parse_json, TraceDoc};
use proptest::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn flag_name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.-]{0,10}"
}

fn turn() -> impl Strategy<Value = Value> {
    (
        any::<String>(),
        any::<String>(),
        any::<String>(),
        proptest::collection::btree_map(flag_name(), 0i64..=1, 0..4),
        0i64..=1,
    )
        .prop_map(|(y, m, d, mut flags, c)| {
            flags.insert("monitored".into(), c);
            json!({"context": flags, "M": m, "D": d, "Y": y})
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streamed_canonical_equals_generic_jcs(turns in proptest::collection::vec(turn(), 1..8)) {
        let doc = json!({"turns": turns, "context_key": "monitored"});
        let body = serde_json::to_vec(&doc).unwrap();
        let parsed: TraceDoc = parse_json(&body).unwrap();
        let mut streamed = Vec::new();
        write_trace(&mut streamed, parsed.trace());
        let generic = serde_json_canonicalizer::to_vec(&doc).unwrap();
        prop_assert_eq!(&streamed, &generic);
        let h: [u8; 32] = Sha256::digest(&generic).into();
        prop_assert_eq!(trace_sha256(parsed.trace()), h);
    }

    #[test]
    fn pretty_and_escaped_inputs_hash_alike(turns in proptest::collection::vec(turn(), 1..4)) {
        // The hash is of the trace, not of the posted bytes: whitespace and escapes don't matter.
        let doc = json!({"context_key": "monitored", "turns": turns});
        let compact = serde_json::to_vec(&doc).unwrap();
        let pretty = serde_json::to_vec_pretty(&doc).unwrap();
        let a: TraceDoc = parse_json(&compact).unwrap();
        let b: TraceDoc = parse_json(&pretty).unwrap();
        prop_assert_eq!(trace_sha256(a.trace()), trace_sha256(b.trace()));
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (-1e-3f64..1e-3).prop_map(|f| Value::from((f * 1e12).round() / 1e12)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Our RFC 8785 writer agrees with serde_json_canonicalizer (the oracle) on any value.
    #[test]
    fn jcs_agrees_with_an_independent_canonicalizer(v in json_value()) {
        prop_assert_eq!(jcs(&v).unwrap(), serde_json_canonicalizer::to_vec(&v).unwrap());
    }
}

#[test]
fn jcs_number_edge_cases_match_the_oracle() {
    for v in [
        json!(u64::MAX),
        json!(i64::MIN),
        json!(9007199254740993u64),
        json!(-0.0),
        json!(1e-7),
        json!(0.000001234567),
        json!(1e21),
        json!(123456789012345680000.0),
        json!(5e-324),
        json!(1.7976931348623157e308),
    ] {
        assert_eq!(
            jcs(&v).unwrap(),
            serde_json_canonicalizer::to_vec(&v).unwrap(),
            "{v}"
        );
    }
}
