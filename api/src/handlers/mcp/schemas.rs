//! The input and output JSON Schemas of the `/mcp` tools, and the check of a call's arguments.
//!
//! They are the schemas `/openapi.json` publishes for the HTTP routes the tools mirror
//! ([`conduct_renderer::openapi::standalone`]), narrowed where MCP takes less: `take_vow`
//! has no wallet, signature or seal (a vow taken over MCP is sandbox), and the path
//! parameters of the read tools become arguments. A call's arguments are checked against the
//! input schema before anything is dispatched, so an argument outside it (a wallet, a path
//! segment that is not a vow id) never reaches a route; the route then checks everything else
//! exactly as over HTTP.

use std::sync::{Arc, LazyLock};

use conduct_core::trace::FieldError;
use conduct_core::vow::VOW_ID_LEN;
use conduct_renderer::openapi::{standalone, Schema};
use conduct_renderer::vows::{INTERPRETATION_TYPE, LINKS_PAGE_TYPE, LINKS_TYPE};
use conduct_renderer::vows_index::{VOWS_PAGE_TYPE, VOWS_TYPE};
use rmcp::model::JsonObject;
use serde_json::{json, Value};

use super::kind::Kind;
use crate::handlers::bodies::{PROFILE_BODY, REPORT_BODY, VOW_BODY};

/// The schemas of one tool, and the compiled check of its arguments.
struct ToolSchemas {
    input: Arc<JsonObject>,
    output: Arc<JsonObject>,
    check: jsonschema::Validator,
}

/// Why the tools' schemas did not build ([`ready`]): which tool and schema, and what failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SchemasError(String);

/// Every tool's schemas, built once from the published components.
static SCHEMAS: LazyLock<Result<Vec<(Kind, ToolSchemas)>, SchemasError>> =
    LazyLock::new(|| build().map_err(SchemasError));

fn object(v: Value) -> Result<Arc<JsonObject>, String> {
    match v {
        Value::Object(m) => Ok(Arc::new(m)),
        other => Err(format!("not a schema object: {other}")),
    }
}

fn component(s: Schema) -> Result<Value, String> {
    standalone(s).map_err(|e| e.to_string())
}

/// A vow id, as the route table's path parameter says.
fn vow_id() -> Value {
    json!({
        "type": "string",
        "pattern": format!("^[0-9a-f]{{{VOW_ID_LEN}}}$"),
        "description": "A vow id: 16 lowercase hex digits (take_vow and list_vows give them).",
    })
}

/// A tool without arguments.
fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// A signed JSON snapshot of `types`, with these further required members.
fn snapshot(types: &[&str], required: &[&str], description: &str) -> Value {
    let mut req = vec!["type", "key_id", "signature"];
    req.extend_from_slice(required);
    json!({
        "type": "object",
        "description": description,
        "required": req,
        "properties": {
            "type": {"enum": types},
            "key_id": {"type": "string", "pattern": "^[0-9a-f]{8}$"},
            "signature": {"type": "string", "pattern": "^[A-Za-z0-9+/]{86}==$"},
        },
    })
}

/// `component` with `drop` removed from its properties (and from `required`), as an object
/// schema.
fn narrowed(s: Schema, drop: &[&str], note: &str) -> Result<Value, String> {
    let mut v = component(s)?;
    if let Some(props) = v.get_mut("properties").and_then(Value::as_object_mut) {
        for d in drop {
            props.remove(*d);
        }
    }
    if let Some(req) = v.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| !drop.iter().any(|d| r == d));
    }
    v["type"] = json!("object");
    v["additionalProperties"] = json!(false);
    v["description"] = json!(note);
    if let Some(m) = v.as_object_mut() {
        m.remove("title");
    }
    Ok(v)
}

/// A component as an object schema (MCP requires `"type": "object"` at the root).
fn object_component(s: Schema) -> Result<Value, String> {
    let mut v = component(s)?;
    v["type"] = json!("object");
    Ok(v)
}

fn schemas_of(kind: Kind) -> Result<(Value, Value), String> {
    Ok(match kind {
        Kind::About => (
            no_arguments(),
            snapshot(
                &["conduct.service/v1"],
                &["name", "base_url", "pubkey"],
                "The signed service card of GET /.",
            ),
        ),
        Kind::TakeVow => (
            narrowed(
                VOW_BODY,
                &["wallet", "signature", "sealed"],
                "A vow over MCP is sandbox: no wallet, signature or seal (POST /vow over HTTP \
                 takes those).",
            )?,
            object_component(Schema::Record)?,
        ),
        Kind::ReportIn => (
            narrowed(
                REPORT_BODY,
                &[],
                "A report-in on the free tier (attested: false), as POST /vow/report/demo.",
            )?,
            object_component(Schema::Record)?,
        ),
        Kind::ReadLedger => (
            json!({
                "type": "object",
                "required": ["vow_id"],
                "additionalProperties": false,
                "properties": {
                    "vow_id": vow_id(),
                    "page": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 999_999_999_999_999_999u64,
                        "description": "A full page of 32 records (GET /vow/{id}/chain/{page}); \
                            without it, the chain's head with its tail and the list of pages.",
                    },
                },
            }),
            snapshot(
                &[LINKS_TYPE, LINKS_PAGE_TYPE],
                &["vow_id"],
                "The vow's chain (GET /vow/{id}/chain) or one of its pages.",
            ),
        ),
        Kind::ListVows => (
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "page": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 999_999_999_999_999_999u64,
                        "description": "A full page of 256 vows (GET /vows/{page}); without it, \
                            the head: the count, the newest vows and the last full page.",
                    },
                },
            }),
            snapshot(
                &[VOWS_TYPE, VOWS_PAGE_TYPE],
                &["order"],
                "The index of vows (GET /vows) or one of its pages.",
            ),
        ),
        Kind::GetReading => (
            json!({
                "type": "object",
                "required": ["vow_id"],
                "additionalProperties": false,
                "properties": {"vow_id": vow_id()},
            }),
            snapshot(
                &[INTERPRETATION_TYPE],
                &["vow_id"],
                "The signed reading of GET /vow/{id}/reading.",
            ),
        ),
        Kind::DemoProfile => (
            narrowed(
                PROFILE_BODY,
                &[],
                "A trace (and an optional predicate disclosure), as POST /demo/profile.",
            )?,
            object_component(Schema::Attestation)?,
        ),
        Kind::Ask => (
            narrowed(
                Schema::OracleRequest,
                &[],
                "A question about this service, as POST /oracle/ask.",
            )?,
            object_component(Schema::OracleAnswer)?,
        ),
    })
}

fn build() -> Result<Vec<(Kind, ToolSchemas)>, String> {
    Kind::ALL
        .iter()
        .map(|&kind| {
            let (input, output) = schemas_of(kind)?;
            let check = jsonschema::draft202012::new(&input)
                .map_err(|e| format!("{}: input schema: {e}", kind.name()))?;
            Ok((
                kind,
                ToolSchemas {
                    input: object(input)?,
                    output: object(output)?,
                    check,
                },
            ))
        })
        .collect()
}

fn of(kind: Kind) -> Option<&'static ToolSchemas> {
    SCHEMAS
        .as_ref()
        .ok()?
        .iter()
        .find_map(|(k, s)| (*k == kind).then_some(s))
}

/// Whether every schema built (checked at startup; a failure is a bug of this module).
pub fn ready() -> Result<(), SchemasError> {
    SCHEMAS.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// The input schema of `kind` (an empty object schema if the schemas failed to build).
pub fn input(kind: Kind) -> Arc<JsonObject> {
    of(kind)
        .map(|s| s.input.clone())
        .unwrap_or_else(|| Arc::new(JsonObject::new()))
}

/// The output schema of `kind`.
pub fn output(kind: Kind) -> Arc<JsonObject> {
    of(kind)
        .map(|s| s.output.clone())
        .unwrap_or_else(|| Arc::new(JsonObject::new()))
}

/// Check a call's arguments against the input schema of `kind`: every violation, located by
/// a JSON pointer into the arguments.
pub fn check(kind: Kind, args: &JsonObject) -> Result<(), Vec<FieldError>> {
    let Some(validator) = of(kind).map(|s| &s.check) else {
        return Err(vec![FieldError::at(
            "",
            "the tool's input schema is unavailable",
        )]);
    };
    let instance = Value::Object(args.clone());
    let errors: Vec<FieldError> = validator
        .iter_errors(&instance)
        .take(16)
        .map(|e| FieldError::at(e.instance_path.to_string(), e.masked().to_string()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_object_schemas() {
        ready().expect("schemas build");
        for &k in Kind::ALL {
            for schema in [input(k), output(k)] {
                assert_eq!(schema["type"], "object", "{}", k.name());
                let text = Value::Object((*schema).clone()).to_string();
                assert!(!text.contains("$ref"), "{}: {text}", k.name());
            }
        }
    }

    #[test]
    fn arguments_outside_the_schema_are_refused() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(check(Kind::ListVows, &args(json!({}))).is_ok());
        assert!(check(Kind::ListVows, &args(json!({"x": 1}))).is_err());
        let vow = json!({"text": "ship it", "agent": "a", "cadence_hours": 24});
        assert!(check(Kind::TakeVow, &args(vow.clone())).is_ok());
        let mut signed = vow;
        signed["wallet"] = json!("0x0000000000000000000000000000000000000001");
        let errs = check(Kind::TakeVow, &args(signed)).unwrap_err();
        assert!(errs[0].detail.contains("wallet"), "{errs:?}");
        let errs = check(Kind::ReadLedger, &args(json!({"vow_id": "../../x"}))).unwrap_err();
        assert_eq!(errs[0].pointer, "/vow_id");
        assert!(check(
            Kind::ReadLedger,
            &args(json!({"vow_id": "0123456789abcdef", "page": 2}))
        )
        .is_ok());
        assert!(check(
            Kind::ReadLedger,
            &args(json!({"vow_id": "0123456789abcdef", "page": -1}))
        )
        .is_err());
    }
}
