//! The x402 `bazaar` discovery extension of a paid route (library/PAYMENTS.md, "Discovery"):
//! `info` (how to call it: the HTTP method, for a body method the body type and an example
//! body; what it answers) and `schema`, the JSON Schema `info` validates against, whose input
//! body and output are the route's own request and answer schemas, the ones `/openapi.json`
//! publishes ([`crate::openapi::standalone`]) without their descriptions ([`compact`]: the
//! extension travels in a header, and the documented schemas are one link away). Derived
//! from the route table's contract, never written twice; the api puts it in each 402
//! challenge's `extensions` and the renderer in `/.well-known/x402.json`.

use serde_json::{json, Map, Value};

use crate::contract::JSON;
use crate::input::RouteInfo;
use crate::openapi::standalone;
use crate::RenderError;

/// The JSON Schema dialect of the extension's `schema`.
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The most bytes an extension may take, serialized: it travels base64-encoded in the
/// `PAYMENT-REQUIRED` header beside the rails, and clients echo it in their payment header,
/// which servers (ours included) cap at 16 KiB.
pub const MAX_EXTENSION_BYTES: usize = 8 * 1024;

/// A published schema as the extension carries it: the same constraints, without the
/// `description` annotations (which `/openapi.json` and `/schemas/` keep).
pub fn compact(schema: Value) -> Value {
    match schema {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| k != "description")
                .map(|(k, v)| (k, compact(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(compact).collect()),
        other => other,
    }
}

/// The smallest repeated subschema (serialized bytes) that [`share`] moves to `$defs`.
const SHARE_MIN: usize = 256;

/// Move each subschema of `schema` that occurs twice or more (and serializes to at least
/// [`SHARE_MIN`] bytes) to the root's `$defs`, largest first, each occurrence replaced by a
/// `$ref` to it (`#/$defs/shared-<k>`): the same constraints, once. The attestation's four
/// quantities are one schema four times.
fn share(schema: &mut Value) {
    fn count(v: &Value, top: bool, seen: &mut std::collections::BTreeMap<String, usize>) {
        match v {
            Value::Object(m) => {
                if !top {
                    let text = v.to_string();
                    if text.len() >= SHARE_MIN {
                        *seen.entry(text).or_default() += 1;
                    }
                }
                for (k, x) in m {
                    if !(top && k == "$defs") {
                        count(x, false, seen);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| count(x, false, seen)),
            _ => {}
        }
    }
    fn replace(v: &mut Value, def: &Value, with: &Value) {
        if v == def {
            *v = with.clone();
            return;
        }
        match v {
            Value::Object(m) => m.values_mut().for_each(|x| replace(x, def, with)),
            Value::Array(a) => a.iter_mut().for_each(|x| replace(x, def, with)),
            _ => {}
        }
    }
    let mut defs = Map::new();
    loop {
        let mut seen = std::collections::BTreeMap::new();
        count(schema, true, &mut seen);
        for d in defs.values() {
            count(d, false, &mut seen);
        }
        let Some(text) = seen
            .into_iter()
            .filter(|(_, n)| *n >= 2)
            .map(|(t, _)| t)
            .max_by(|a, b| a.len().cmp(&b.len()).then_with(|| b.cmp(a)))
        else {
            break;
        };
        let name = format!("shared-{}", defs.len());
        let with = json!({"$ref": format!("#/$defs/{name}")});
        let Ok(def) = serde_json::from_str::<Value>(&text) else {
            break;
        };
        replace(schema, &def, &with);
        for d in defs.values_mut() {
            replace(d, &def, &with);
        }
        defs.insert(name, def);
    }
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
}

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
            Some(s) => compact(standalone(s)?),
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
            "properties": {"type": {"type": "string"}, "example": compact(standalone(out)?)},
            "required": ["type"],
        });
    }
    let mut schema = json!({"$schema": DIALECT, "type": "object", "properties": schema_props,
                            "required": ["input"]});
    share(&mut schema);
    let ext = json!({"info": info, "schema": schema});
    let size = serde_json::to_vec(&ext).map_or(0, |b| b.len());
    if size > MAX_EXTENSION_BYTES {
        return Err(fail(&format!(
            "the extension is {size} bytes, over {MAX_EXTENSION_BYTES}"
        )));
    }
    Ok(ext)
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
        // The body and output schemas are the published ones, standing alone: with the
        // shared definitions put back, exactly them without their descriptions.
        let resolved = resolved(&ext["schema"]);
        let body = &resolved["properties"]["input"]["properties"]["body"];
        assert_eq!(
            *body,
            compact(
                standalone(Schema::of::<conduct_core::trace::ProfileRequest<'static>>()).unwrap()
            )
        );
        let out = &resolved["properties"]["output"]["properties"]["example"];
        assert_eq!(*out, compact(standalone(Schema::Attestation).unwrap()));
        assert!(!out.to_string().contains("description"));
        // The four quantities are one shared schema; every reference stays in the object.
        let defs = ext["schema"]["$defs"]
            .as_object()
            .expect("shared definitions");
        assert!(!defs.is_empty());
        let text = ext["schema"].to_string();
        assert_eq!(
            text.matches("\"$ref\":\"#/$defs/").count(),
            text.matches("\"$ref\"").count()
        );
        assert!(text.len() <= MAX_EXTENSION_BYTES);
        // A body the schema refuses is refused by the extension's schema too.
        let mut bad = ext["info"].clone();
        bad["input"]["body"] = json!({"turns": "no"});
        assert!(!check.is_valid(&bad));
        let mut bad = ext["info"].clone();
        bad["input"]["body"]["turns"][0]["context"] = json!({"monitored": 2});
        assert!(!check.is_valid(&bad));
    }

    /// The extension's schema with its shared definitions inlined again.
    fn resolved(schema: &Value) -> Value {
        let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
        conduct_core::schema::inline(schema, &defs, "#/$defs/").unwrap()
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
