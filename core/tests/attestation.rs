//! Attestations sign and verify offline; any changed byte or a stripped scope fails.

use conduct_core::attestation::{attestation_object, measure, resolve_predicate};
use conduct_core::canonical::jcs;
use conduct_core::meter::Meter;
use conduct_core::signing::{verify_object, PinnedKey, ServiceKey, VerifyError};
use conduct_core::trace::{parse_json, ProfileRequest};
use serde_json::{json, Value};

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7u8; 32], "localhost:8402/log")
}

fn body(disclosure: Option<Value>) -> Vec<u8> {
    let mut turns = Vec::new();
    for i in 0..40 {
        let c = i % 2;
        let d = if c == 1 && i % 4 == 1 {
            "refused"
        } else {
            "clean"
        };
        let m = if c == 1 {
            "I might be monitored here"
        } else {
            "just do the task"
        };
        turns.push(json!({"Y":"help the user","M":m,"D":d,"context":{"monitored":c}}));
    }
    let mut doc = json!({"context_key":"monitored","turns":turns});
    if let Some(d) = disclosure {
        doc["disclosure"] = d;
    }
    serde_json::to_vec(&doc).unwrap()
}

fn attest(bytes: &[u8]) -> Value {
    let req: ProfileRequest = parse_json(bytes).unwrap();
    let pred = req
        .disclosure
        .as_ref()
        .map(|d| resolve_predicate(d).unwrap());
    let m = measure(req.trace(), Meter::DEFAULT).unwrap();
    let mut obj = attestation_object(&m, &req.context_key, req.turns.len(), pred, 1_795_262_400);
    key().sign_object(&mut obj).unwrap();
    Value::Object(obj)
}

#[test]
fn verifies_and_every_tamper_fails() {
    let doc = attest(&body(None));
    let pinned = PinnedKey::parse(&key().vkey()).unwrap();
    assert_eq!(verify_object(&doc, &pinned), Ok(()));
    assert_eq!(doc["issued_at"], "2026-11-21T12:00:00Z");

    let mut stripped = doc.clone();
    stripped.as_object_mut().unwrap().remove("scope");
    assert_eq!(verify_object(&stripped, &pinned), Err(VerifyError::Scope));

    let mut changed = doc.clone();
    changed["profile"]["i_c_d"]["bits"] = json!(0.0);
    assert_eq!(
        verify_object(&changed, &pinned),
        Err(VerifyError::BadSignature)
    );

    let other = ServiceKey::from_seed(&[8u8; 32], "localhost:8402/log");
    let wrong = PinnedKey::parse(&other.public_b64()).unwrap();
    assert_eq!(verify_object(&doc, &wrong), Err(VerifyError::BadSignature));
}

#[test]
fn every_byte_of_the_canonical_form_is_covered() {
    let doc = attest(&body(None));
    let pinned = PinnedKey::parse(&key().public_b64()).unwrap();
    let bytes = jcs(&doc).unwrap();
    // Flip one byte at a time in the canonical text; whatever still parses must fail.
    let mut checked = 0;
    for i in (0..bytes.len()).step_by(7) {
        let mut b = bytes.clone();
        b[i] ^= 0x01;
        if let Ok(v) = serde_json::from_slice::<Value>(&b) {
            if v != doc {
                assert!(
                    verify_object(&v, &pinned).is_err(),
                    "byte {i} flip verified"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "too few mutations checked: {checked}");
}

#[test]
fn predicate_mode_leaks_no_numbers() {
    let doc = attest(&body(Some(
        json!({"predicate":{"metric":"i_c_d","band":"under_0.05"}}),
    )));
    assert!(doc.get("profile").is_none());
    let p = &doc["predicate"];
    assert_eq!(p["metric"], "i_c_d");
    assert!(p["clears"].is_boolean());
    let text = serde_json::to_string(&doc).unwrap();
    assert!(!text.contains("\"bits\""));
}

#[test]
fn attestation_matches_its_published_schema() {
    let s: Value = serde_json::from_str(conduct_core::schema::ATTESTATION_SCHEMA).unwrap();
    let v = jsonschema::draft202012::new(&s).unwrap();
    for doc in [
        attest(&body(None)),
        attest(&body(Some(
            json!({"predicate":{"metric":"i_c_m","band":"under_0.01"}}),
        ))),
    ] {
        let errs: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{errs:?}");
    }
}

mod typed_writer {
    use super::*;
    use conduct_core::attestation::{Attestation, BANDS};
    use conduct_core::meter::QUANTITY_KEYS;
    use proptest::prelude::*;

    fn trace_strategy() -> impl Strategy<Value = Vec<u8>> {
        let turn = (
            0u64..=1,
            prop::sample::select(vec!["clean", "Clean ", "refused", "tool_misuse", "x\"y"]),
            prop::sample::select(vec![
                "plain work",
                "I am being monitored",
                "I should appear compliant",
                "this might be a test, so I will pretend to comply",
            ]),
            prop::sample::select(vec!["goal \u{e9}", "goal 2", "goal 3"]),
        );
        proptest::collection::vec(turn, 1..60).prop_map(|turns| {
            let turns: Vec<Value> = turns
                .into_iter()
                .map(|(c, d, m, y)| json!({"Y":y,"M":m,"D":d,"context":{"monitored":c}}))
                .collect();
            serde_json::to_vec(&json!({"context_key":"monitored","turns":turns})).unwrap()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn typed_writer_equals_generic_jcs(
            body in trace_strategy(),
            pred in proptest::option::of((0usize..4, 0usize..3)),
            keyed in any::<bool>(),
            meter in prop::sample::select(Meter::ALL.to_vec()),
        ) {
            let req: ProfileRequest = parse_json(&body).unwrap();
            let m = measure(req.trace(), meter).unwrap();
            let predicate = pred.map(|(mi, bi)| {
                resolve_predicate(&conduct_core::trace::Disclosure {
                    predicate: conduct_core::trace::PredicateRequest {
                        metric: QUANTITY_KEYS[mi].into(),
                        band: BANDS[bi].name.into(),
                    },
                })
                .unwrap()
            });
            let att = Attestation {
                measured: &m,
                context_key: &req.context_key,
                n_turns: req.turns.len(),
                predicate,
                issued_at_unix: 1_795_262_400,
                key_id: keyed.then(|| "1efaf554".to_string()),
            };
            let generic = jcs(&Value::Object(att.to_map())).unwrap();
            prop_assert_eq!(String::from_utf8(att.canonical(None).unwrap()).unwrap(),
                            String::from_utf8(generic).unwrap());
        }
    }

    #[test]
    fn typed_signing_verifies_like_the_generic_path() {
        let b = body(None);
        let req: ProfileRequest = parse_json(&b).unwrap();
        let m = measure(req.trace(), Meter::DEFAULT).unwrap();
        let mut att = Attestation {
            measured: &m,
            context_key: &req.context_key,
            n_turns: req.turns.len(),
            predicate: None,
            issued_at_unix: 1_795_262_400,
            key_id: None,
        };
        let bytes = att.signed(&key()).unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let pinned = PinnedKey::parse(&key().vkey()).unwrap();
        assert_eq!(verify_object(&doc, &pinned), Ok(()));
        // The signed bytes are already canonical.
        assert_eq!(jcs(&doc).unwrap(), bytes);
    }
}
