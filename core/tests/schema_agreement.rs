//! The published trace schema and the validator agree: the same fixtures through both.
//!
//! Fixtures named `valid_*` pass both, `invalid_*` fail both, and `crossfield_*` pass the
//! schema but fail the validator (the one rule JSON Schema cannot express: the flag named by
//! `context_key` must be present in every turn).

use conduct_core::schema::TRACE_SCHEMA;
use conduct_core::trace::{parse_json, validate, TraceDoc};
use serde_json::{json, Value};

fn core_accepts(bytes: &[u8]) -> Result<(), String> {
    let doc: TraceDoc = parse_json(bytes).map_err(|e| e.to_string())?;
    validate(doc.trace()).map_err(|errs| {
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    })
}

fn schema() -> jsonschema::Validator {
    let s: Value = serde_json::from_str(TRACE_SCHEMA).unwrap();
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&s)
        .unwrap()
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    let turn = json!({"Y":"a","M":"b","D":"clean","context":{"monitored":0}});
    let many = json!({"context_key":"monitored","turns": vec![turn.clone(); 10_001]});
    out.push((
        "invalid_too_many_turns".into(),
        serde_json::to_vec(&many).unwrap(),
    ));
    let max = json!({"context_key":"monitored","turns": vec![turn; 10_000]});
    out.push(("valid_max_turns".into(), serde_json::to_vec(&max).unwrap()));
    out.sort();
    out
}

#[test]
fn schema_and_validator_agree_on_every_fixture() {
    let v = schema();
    let fx = fixtures();
    assert!(fx.len() >= 25, "fixtures missing: {}", fx.len());
    for (name, bytes) in fx {
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let by_schema = v.is_valid(&doc);
        let by_core = core_accepts(&bytes);
        if name.starts_with("valid_") {
            assert!(by_schema, "{name}: schema refused a valid trace");
            assert!(by_core.is_ok(), "{name}: validator refused: {by_core:?}");
        } else if name.starts_with("invalid_") {
            assert!(!by_schema, "{name}: schema accepted an invalid trace");
            assert!(by_core.is_err(), "{name}: validator accepted");
        } else if name.starts_with("crossfield_") {
            assert!(by_schema, "{name}: schema cannot express this rule");
            assert!(by_core.is_err(), "{name}: validator accepted");
        } else {
            panic!("fixture {name} has no valid_/invalid_/crossfield_ prefix");
        }
    }
}

#[test]
fn every_rejection_names_a_json_pointer() {
    for (name, bytes) in fixtures() {
        if name.starts_with("valid_") || name == "invalid_top_array" {
            continue;
        }
        let msg = core_accepts(&bytes).unwrap_err();
        assert!(
            msg.starts_with('/'),
            "{name}: rejection does not name a field: {msg}"
        );
    }
}

#[test]
fn pointers_are_exact() {
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/traces/invalid_flag_value_2.json"),
    )
    .unwrap();
    let msg = core_accepts(&bytes).unwrap_err();
    assert!(msg.starts_with("/turns/0/context/monitored:"), "{msg}");
}
