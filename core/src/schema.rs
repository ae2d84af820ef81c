//! The published JSON Schemas (`/schemas/trace.json`, `/schemas/attestation.json`), and what
//! the schemas derived from the request types share (`/openapi.json`, ARCHITECTURE.md
//! "renderer"): the trace's members as published, and the patterns of the strings the parsers
//! check.
//!
//! With the `schemars` feature, every request body type derives its JSON Schema (2020-12)
//! from its own definition: its members, `additionalProperties: false` from
//! `deny_unknown_fields`, and the limits the parsers check, named by the same constants. The
//! trace inside a body is described by the published trace schema ([`trace`]), which the
//! parser's tests keep in step with `trace.rs`.

use serde_json::{Map, Value};

/// JSON Schema of a trace (library/METER.md).
pub const TRACE_SCHEMA: &str = include_str!("../schemas/trace.json");
/// JSON Schema of an attestation (library/ATTESTATION.md).
pub const ATTESTATION_SCHEMA: &str = include_str!("../schemas/attestation.json");

/// An EIP-191 signature as every owner-signed write takes it (`vow::eip191::canonical`): 65
/// bytes in hex, `0x` optional (any spelling of one signature is the same signature;
/// PREPARE.md).
pub const EIP191: &str = "^(0[xX])?[0-9a-fA-F]{130}$";
/// Text without control characters (newline and tab aside), carriage return, U+FFFE or U+FFFF
/// (`vow::has_control(s, true)` and no `\r`).
pub const TEXT_CHARS: &str = "^[^\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F\\uFFFE\\uFFFF]*$";
/// One line of text: no control characters, U+FFFE or U+FFFF, bidirectional controls or
/// zero-width characters (agent names, an order's one-line members).
pub const AGENT_CHARS: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F\\uFFFE\\uFFFF\\u061C\\u180E\\u200B-\\u200F\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u2069\\uFEFF]*$";
/// A wallet address: `0x` and 40 hex digits of any case (`witness::address`).
pub const ADDRESS: &str = "^0x[0-9a-fA-F]{40}$";
/// A vow's wallet as `POST /vow` takes it: `0x` or `0X`, then 40 hex digits of any case.
pub const VOW_WALLET: &str = "^0[xX][0-9a-fA-F]{40}$";
/// A BIP-340 signature in hex (64 bytes).
pub const BIP340: &str = "^[0-9a-fA-F]{128}$";
/// An address as the service writes it: `0x` and 40 lowercase hex digits.
pub const ADDRESS_LOWER: &str = "^0x[0-9a-f]{40}$";
/// Calldata as the service writes it: `0x` and whole bytes in lowercase hex.
pub const HEX_DATA: &str = "^0x([0-9a-f]{2})*$";
/// A quest delivery link: `https://` and printable ASCII.
pub const HTTPS_LINK: &str = "^https://[\\x21-\\x7e]+$";

/// A vow id: [`crate::limits::VOW_ID_LEN`] lowercase hex digits.
pub fn vow_id() -> String {
    format!("^[0-9a-f]{{{}}}$", crate::limits::VOW_ID_LEN)
}

/// A token amount in base units (`witness::amount`): a decimal string without leading zeros
/// of at most [`crate::limits::MAX_AMOUNT_DIGITS`] digits (the parser also checks 2^256 - 1).
pub fn amount() -> String {
    format!(
        "^(0|[1-9][0-9]{{0,{}}})$",
        crate::limits::MAX_AMOUNT_DIGITS - 1
    )
}

/// A NIP-19 npub: `npub1` and bech32 characters, [`crate::limits::NPUB_LEN`] in all (written in
/// capitals, it is read the same).
pub fn npub() -> String {
    format!(
        "^npub1[02-9ac-hj-np-z]{{{}}}$",
        crate::limits::NPUB_LEN - "npub1".len()
    )
}

/// Why a schema could not be inlined ([`inline`], [`inline_defs`]).
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The published schema is not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A reference names no definition: `no <prefix><name>`.
    #[error("no {0}")]
    NoDefinition(String),
    /// References nest deeper than 16 (`prefix` names the definitions).
    #[error("{0} nests too deep")]
    TooDeep(String),
}

/// Replace every `{"$ref": "<prefix>X", ...}` of `v` by the definition `X` of `defs` (its
/// sibling keywords kept, the definition's own references replaced too), and drop `$schema`,
/// `$id` and `$defs`. Refuses a reference to a missing definition and nesting deeper than 16.
pub fn inline(v: &Value, defs: &Map<String, Value>, prefix: &str) -> Result<Value, SchemaError> {
    inline_at(v, defs, prefix, 0)
}

fn inline_at(
    v: &Value,
    defs: &Map<String, Value>,
    prefix: &str,
    depth: u8,
) -> Result<Value, SchemaError> {
    if depth > 16 {
        return Err(SchemaError::TooDeep(prefix.into()));
    }
    Ok(match v {
        Value::Object(m) => {
            let target = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(prefix));
            let mut out = match target {
                Some(name) => {
                    let def = defs
                        .get(name)
                        .ok_or_else(|| SchemaError::NoDefinition(format!("{prefix}{name}")))?;
                    match inline_at(def, defs, prefix, depth + 1)? {
                        Value::Object(d) => d,
                        _ => Map::new(),
                    }
                }
                None => Map::new(),
            };
            for (k, x) in m {
                if target.is_some() && k == "$ref" {
                    continue;
                }
                if matches!(k.as_str(), "$schema" | "$id" | "$defs") {
                    continue;
                }
                out.insert(k.clone(), inline_at(x, defs, prefix, depth)?);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| inline_at(x, defs, prefix, depth))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// A published schema with its `$defs` inlined and `$schema`, `$id` and `$defs` dropped, so
/// it can stand inside another document.
pub fn inline_defs(schema: &str) -> Result<Value, SchemaError> {
    let v: Value = serde_json::from_str(schema)?;
    let defs = v
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    inline(&v, &defs, "#/$defs/")
}

#[cfg(feature = "schemars")]
pub use derived::*;

#[cfg(feature = "schemars")]
mod derived {
    use std::sync::LazyLock;

    use schemars::{Schema, SchemaGenerator};
    use serde_json::{json, Value};

    use super::{inline_defs, TRACE_SCHEMA};

    /// The published trace schema, inlined (`false`, which accepts nothing, if it did not
    /// parse; a unit test parses it).
    static TRACE: LazyLock<Value> =
        LazyLock::new(|| inline_defs(TRACE_SCHEMA).unwrap_or(Value::Bool(false)));

    /// The published trace schema (`/schemas/trace.json`), its `$defs` inlined.
    pub fn trace() -> Value {
        TRACE.clone()
    }

    fn trace_member(name: &str) -> Schema {
        Schema::try_from(TRACE["properties"][name].clone()).unwrap_or_else(|_| false.into())
    }

    /// The schema of a body's `context_key`: the trace's, as published.
    pub fn context_key(_: &mut SchemaGenerator) -> Schema {
        trace_member("context_key")
    }

    /// The schema of a body's `turns`: the trace's, as published.
    pub fn turns(_: &mut SchemaGenerator) -> Schema {
        trace_member("turns")
    }

    /// The schema of a body's `meter`: the name of a served meter version.
    pub fn meter_name(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = crate::meter::Meter::ALL
            .iter()
            .map(|m| m.as_str())
            .collect();
        Schema::try_from(json!({
            "type": "string",
            "enum": names,
            "default": crate::meter::Meter::DEFAULT.as_str(),
            "description": "The meter to measure with (library/METER.md); every version stays \
                            served and verifiable."
        }))
        .unwrap_or_else(|_| false.into())
    }

    /// An object whose members are alternatives: exactly one of them, each required in its
    /// branch (`oneOf`), the object's other keywords (description) kept. For a body whose
    /// parser takes one member of several (a familiar's owner).
    pub fn exactly_one(schema: &mut Schema) {
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        let props = obj.remove("properties");
        obj.remove("required");
        obj.remove("additionalProperties");
        let branches: Vec<Value> = props
            .and_then(|p| p.as_object().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|(name, s)| {
                json!({"type": "object", "required": [name], "additionalProperties": false,
                       "properties": {name: s}})
            })
            .collect();
        obj.insert("oneOf".into(), Value::Array(branches));
    }
}

#[cfg(all(test, feature = "schemars"))]
mod tests {
    use super::*;

    #[test]
    fn the_trace_schema_parses_and_inlines() {
        let t = trace();
        let text = t.to_string();
        assert!(!text.contains("$defs") && !text.contains("$ref") && !text.contains("$id"));
        assert_eq!(
            t["properties"]["turns"]["items"]["properties"]["Y"]["maxLength"],
            crate::trace::MAX_STRING_CHARS
        );
        assert_eq!(
            t["properties"]["turns"]["maxItems"],
            crate::trace::MAX_TURNS
        );
        let a = inline_defs(ATTESTATION_SCHEMA).unwrap();
        assert!(!a.to_string().contains("$defs"));
        let missing = inline(
            &serde_json::json!({"$ref": "#/$defs/x"}),
            &Map::new(),
            "#/$defs/",
        );
        assert_eq!(missing.unwrap_err().to_string(), "no #/$defs/x");
    }

    /// The schema of a bare trace is the published one, and a body's trace members are its.
    #[test]
    fn trace_members_are_the_published_ones() {
        let mut g = schemars::SchemaGenerator::default();
        let doc = <crate::trace::TraceDoc as schemars::JsonSchema>::json_schema(&mut g);
        assert_eq!(doc.as_value(), &trace());
        assert_eq!(turns(&mut g).as_value(), &trace()["properties"]["turns"]);
        assert_eq!(
            context_key(&mut g).as_value(),
            &trace()["properties"]["context_key"]
        );
    }

    #[test]
    fn exactly_one_member() {
        let mut s = schemars::json_schema!({
            "type": "object", "description": "d", "additionalProperties": false,
            "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        });
        exactly_one(&mut s);
        let v = jsonschema::draft202012::new(s.as_value()).unwrap();
        assert!(v.is_valid(&serde_json::json!({"a": "x"})));
        assert!(v.is_valid(&serde_json::json!({"b": 1})));
        assert!(!v.is_valid(&serde_json::json!({"a": "x", "b": 1})));
        assert!(!v.is_valid(&serde_json::json!({})));
        assert!(!v.is_valid(&serde_json::json!({"a": "x", "c": 1})));
        assert_eq!(s.get("description"), Some(&serde_json::json!("d")));
    }

    #[test]
    fn patterns_follow_their_constants() {
        let vow = regex::Regex::new(&vow_id()).unwrap();
        assert!(vow.is_match(&"a".repeat(crate::vow::VOW_ID_LEN)));
        assert!(!vow.is_match(&"a".repeat(crate::vow::VOW_ID_LEN + 1)));
        let amount = regex::Regex::new(&amount()).unwrap();
        assert!(amount.is_match(&"9".repeat(crate::witness::MAX_AMOUNT_DIGITS)));
        assert!(!amount.is_match(&"9".repeat(crate::witness::MAX_AMOUNT_DIGITS + 1)));
        assert!(!amount.is_match("01"));
        let npub = regex::Regex::new(&npub()).unwrap();
        let key = crate::nostr::npub_encode(&[7; 32]);
        assert!(npub.is_match(&key), "{key}");
        assert!(!npub.is_match(&key[1..]));
    }
}
