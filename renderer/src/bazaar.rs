//! The x402 `bazaar` discovery extension of a paid route (library/PAYMENTS.md, "Discovery"):
//! `info` (how to call it: the HTTP method, for a body method the body type and an example
//! body; what it answers) and `schema`, the JSON Schema `info` validates against, whose input
//! body and output are the route's own request and answer schemas, the ones `/openapi.json`
//! publishes ([`crate::openapi::standalone`]). Derived from the route table's contract, never
//! written twice; the api puts it in each 402 challenge's `extensions` and the renderer in
//! `/.well-known/x402.json`.

use serde_json::{json, Map, Value};

use crate::contract::JSON;
use crate::input::RouteInfo;
use crate::openapi::standalone;
use crate::RenderError;

/// The JSON Schema dialect of the extension's `schema`.
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Whether `method` carries a body (the bazaar's body methods).
fn body_method(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH")
}

/// The `bazaar` extension of route `r`: `{info, schema}`.
pub fn extension(r: &RouteInfo) -> Result<Value, RenderError> {
    let c = &r.contract;
    let fail = |why: &str| RenderError::Input(format!("bazaar {} {}: {why}", r.method, r.path));
    let mut info_in = Map::new();
    info_in.insert("type".into(), json!("http"));
    info_in.insert("method".into(), json!(r.method));
    let mut props = Map::new();
    props.insert("type".into(), json!({"type": "string", "const": "http"}));
    let mut required = vec!["type", "method"];
    if body_method(r.method) {
        props.insert(
            "method".into(),
            json!({"type": "string", "enum": ["POST", "PUT", "PATCH"]}),
        );
        props.insert(
            "bodyType".into(),
            json!({"type": "string", "enum": ["json"]}),
        );
        let body_schema = match c.body {
            Some(s) => standalone(s)?,
            None => json!({"type": "object"}),
        };
        props.insert("body".into(), body_schema);
        let example = match c.example {
            Some(text) => serde_json::from_str(text).map_err(|e| fail(&format!("example: {e}")))?,
            None => json!({}),
        };
        info_in.insert("bodyType".into(), json!("json"));
        info_in.insert("body".into(), example);
        required.extend(["bodyType", "body"]);
    } else {
        props.insert(
            "method".into(),
            json!({"type": "string", "enum": ["GET", "HEAD", "DELETE"]}),
        );
    }
    let mut info = json!({"input": Value::Object(info_in)});
    let mut schema_props = json!({
        "input": {"type": "object", "properties": Value::Object(props), "required": required,
                  "additionalProperties": false},
    });
    if let Some(out) = c.schema.filter(|_| c.media.contains(&JSON)) {
        info["output"] = json!({"type": "json"});
        schema_props["output"] = json!({
            "type": "object",
            "properties": {"type": {"type": "string"}, "example": standalone(out)?},
            "required": ["type"],
        });
    }
    Ok(json!({
        "info": info,
        "schema": {"$schema": DIALECT, "type": "object", "properties": schema_props,
                   "required": ["input"]},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Contract, Schema};

    fn paid(method: &'static str, contract: Contract) -> RouteInfo {
        RouteInfo {
            method,
            path: "/profile",
            paid: true,
            description: "a paid read",
            contract,
        }
    }

    #[test]
    fn the_info_validates_against_the_schema_and_names_the_contracts_schemas() {
        let example = r#"{"context_key":"monitored","turns":[{"Y":"y","M":"m","D":"clean","context":{"monitored":1}},{"Y":"y","M":"m","D":"write","context":{"monitored":0}}]}"#;
        let c = Contract::call(&[200], &[JSON], Some(Schema::Attestation), &[409])
            .body(Schema::of::<conduct_core::trace::ProfileRequest<'static>>())
            .example(example);
        let ext = extension(&paid("POST", c)).unwrap();
        let check = jsonschema::draft202012::new(&ext["schema"]).unwrap();
        let errors: Vec<String> = check
            .iter_errors(&ext["info"])
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(ext["info"]["input"]["method"], "POST");
        assert_eq!(ext["info"]["input"]["bodyType"], "json");
        assert_eq!(ext["info"]["output"]["type"], "json");
        // The body and output schemas are the published ones, standing alone.
        let body = &ext["schema"]["properties"]["input"]["properties"]["body"];
        assert_eq!(
            *body,
            standalone(Schema::of::<conduct_core::trace::ProfileRequest<'static>>()).unwrap()
        );
        let out = &ext["schema"]["properties"]["output"]["properties"]["example"];
        assert_eq!(*out, standalone(Schema::Attestation).unwrap());
        // A body the schema refuses is refused by the extension's schema too.
        let mut bad = ext["info"].clone();
        bad["input"]["body"] = json!({"turns": "no"});
        assert!(!check.is_valid(&bad));
        assert!(!ext.to_string().contains("\"$ref\""));
    }

    #[test]
    fn a_method_without_a_body_has_no_body() {
        let c = Contract::call(&[200], &[JSON], Some(Schema::Snapshot), &[]);
        let ext = extension(&paid("GET", c)).unwrap();
        assert!(ext["info"]["input"].get("body").is_none());
        let check = jsonschema::draft202012::new(&ext["schema"]).unwrap();
        assert!(check.is_valid(&ext["info"]));
    }
}
