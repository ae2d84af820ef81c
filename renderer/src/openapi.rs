//! `/openapi.json`: the OpenAPI 3.1 document of the running service, generated from the route
//! table.
//!
//! Each [`RouteInfo`] carries the [`Contract`] of its operation: its parameters, request body,
//! success statuses and representations, and the problem statuses its handler can answer.
//! This module adds what the routes share: RFC 9457 `application/problem+json` refusals, the
//! x402 `402` of a paid route (an empty body and a `PAYMENT-REQUIRED` header), the `400`,
//! `413`, `415` and `422` of a route that reads a JSON body, and the `400` and `406` of a path
//! whose representation `Accept` or `?format=` chooses.
//!
//! The schemas of `components` are assembled here. Every request body a handler parses into a
//! type is [`Schema::of`] that type: its JSON Schema (2020-12, as OpenAPI 3.1 takes it) is
//! derived from the type by `schemars`, limits included (the parsers' own constants), so it
//! cannot drift from the parser. The published schemas (`/schemas/trace.json`,
//! `/schemas/attestation.json`) are placed with their `$defs` inlined. The rest are written
//! out here: answers the handlers build as JSON values rather than types (signed snapshots and
//! records, `/health`, problems), and bodies no type of ours parses (`/mcp`'s JSON-RPC, read by
//! rmcp; `/oracle/ask` and `/prepare/{action}`, read member by member).
//!
//! The document is signed like every JSON file of the tree, but under the `x-key-id` and
//! `x-signature` extension members: an OpenAPI document admits no other unknown members.

use conduct_core::attestation::BANDS;
use conduct_core::meter::QUANTITY_KEYS;
use conduct_core::schema::{inline, inline_defs, ATTESTATION_SCHEMA, TEXT_CHARS};
use conduct_core::scope::SCOPE;
use conduct_core::trace::TraceDoc;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

pub use crate::contract::{
    Contract, Derived, In, Param, ParamSchema, Schema, ATOM, CSS, HTML, JSON, MARKDOWN, OCTETS,
    SVG, TEXT, XML,
};
use crate::input::{RouteInfo, SiteInput};
use crate::RenderError;

/// What the serving layer may answer any request, before the route table sees it: a request
/// target or headers over its limits (414, 431), and a connection over the per-IP or global
/// cap (429, 503).
const EVERY_OPERATION: [u16; 4] = [414, 429, 431, 503];

/// The `?format=` names of a media type.
fn format_names(media: &str) -> &'static [&'static str] {
    match media {
        JSON => &["json"],
        HTML => &["html"],
        TEXT => &["txt", "text"],
        _ => &[],
    }
}

/// What a status means (`ok`: as a success of the route rather than a problem).
fn status_text(status: u16, ok: bool) -> &'static str {
    match status {
        200 => "OK.",
        202 => "Accepted: a notification or a response, which has no answer (no body).",
        201 => "Created: the signed record appended to the log (Location names its page).",
        503 if ok => {
            "Degraded (the ledger cannot commit, or the site is behind it), or unavailable."
        }
        400 => {
            "Bad request: a malformed JSON body, an unknown ?format=, a missing or bad \
            parameter or header."
        }
        402 => {
            "Payment required (x402): an empty body; the challenge is the base64 JSON of the \
            PAYMENT-REQUIRED header."
        }
        404 => "Not found.",
        406 => "None of this path's representations is acceptable (Accept or ?format=).",
        408 => "The body did not arrive within the body timeout.",
        409 => "Conflict: the same paid request is in flight, or the entry is already recorded.",
        413 => "The body is larger than 4 MiB.",
        414 => "The path and query are longer than the service answers (8 KiB).",
        415 => "The Content-Type is not JSON.",
        422 => {
            "The request does not satisfy the schema or the service's checks (errors[] \
            locates each)."
        }
        429 => {
            "Too many requests from this IP: its free daily cap is used up (it resets at UTC \
            midnight), or it holds too many open connections; Retry-After says when to retry."
        }
        431 => "The request headers are too large.",
        503 => {
            "The store, log or payment rail is unavailable now, or every connection is in \
            use; retry."
        }
        _ => "See the problem's detail.",
    }
}

fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    let mut gap = true;
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            if gap {
                id.push('_');
            }
            id.push(c.to_ascii_lowercase());
            gap = false;
        } else {
            gap = true;
        }
    }
    if path == "/" {
        id.push_str("_root");
    }
    id
}

fn schema_ref(s: Schema) -> Value {
    schema_ref_named(&s.name())
}

fn parse(what: &str, text: &str) -> Result<Value, RenderError> {
    serde_json::from_str(text).map_err(|e| RenderError::Input(format!("openapi {what}: {e}")))
}

/// The derived schemas among `routes`' request bodies and answers.
fn derived_of(routes: &[RouteInfo]) -> Vec<Derived> {
    routes
        .iter()
        .flat_map(|r| [r.contract.body, r.contract.schema])
        .filter_map(|s| match s {
            Some(Schema::Derived(d)) => Some(d),
            _ => None,
        })
        .collect()
}

/// The components of `derived` (and of the bare trace, always published as `Trace`): each
/// type's schema under its name, and the types they hold that are not inlined. `$ref`s point
/// into `#/components/schemas/`. Two different schemas of one name are refused.
fn derived_schemas(derived: &[Derived]) -> Result<Map<String, Value>, RenderError> {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator();
    let trace = Derived {
        name: TraceDoc::schema_name,
        schema: TraceDoc::json_schema,
    };
    let mut named = Vec::new();
    for d in std::iter::once(&trace).chain(derived) {
        named.push((
            (d.name)().into_owned(),
            (d.schema)(&mut generator).to_value(),
        ));
    }
    named.extend(generator.take_definitions(true));
    let mut out = Map::new();
    for (name, schema) in named {
        match out.get(&name) {
            Some(seen) if *seen != schema => {
                return Err(RenderError::Input(format!(
                    "openapi: two schemas are named {name}"
                )))
            }
            _ => {
                out.insert(name, schema);
            }
        }
    }
    Ok(out)
}

/// The schema of an answer's type as it is serialized, every type it holds inlined.
fn answer_schema<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The `components.schemas` of the document: those derived from the types of `derived`, and
/// the published and written-out ones ([`written`]); a name given twice is refused.
fn schemas(derived: &[Derived]) -> Result<Map<String, Value>, RenderError> {
    let mut out = written()?;
    for (name, schema) in derived_schemas(derived)? {
        if out.contains_key(&name) {
            return Err(RenderError::Input(format!(
                "openapi: {name} is both derived and written out"
            )));
        }
        out.insert(name, schema);
    }
    Ok(out)
}

/// The published schemas, and those written out here: answers built as JSON values rather
/// than types, and bodies no type of ours parses.
fn written() -> Result<Map<String, Value>, RenderError> {
    let mut out = Map::new();
    erc8004_schemas(&mut out);
    prepare_schemas(&mut out);
    witness_schemas(&mut out);
    out.insert(
        "Attestation".into(),
        inline_defs(ATTESTATION_SCHEMA)
            .map_err(|e| RenderError::Input(format!("openapi attestation schema: {e}")))?,
    );
    let vow_id = json!({"type": "string", "pattern": conduct_core::schema::vow_id()});
    let scope: Map<String, Value> = SCOPE
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!({"const": v})))
        .collect();
    out.insert(
        "Scope".into(),
        json!({"type": "object", "required": SCOPE.map(|(k, _)| k), "properties": scope}),
    );
    out.insert(
        "Snapshot".into(),
        json!({
            "description": "A signed JSON snapshot: base64 Ed25519 signature over the RFC 8785 bytes of the object without signature.",
            "type": "object",
            "required": ["key_id", "signature"],
            "properties": {
                "key_id": {"type": "string", "pattern": "^[0-9a-f]{8}$"},
                "signature": {"type": "string", "pattern": "^[A-Za-z0-9+/]{86}==$"},
            },
        }),
    );
    out.insert(
        "Record".into(),
        json!({
            "description": "A signed record of the log: a vow or a report-in.",
            "allOf": [schema_ref(Schema::Snapshot)],
            "required": ["type", "vow_id", "scope"],
            "properties": {"type": {"type": "string", "pattern": "^conduct\\."}, "vow_id": vow_id,
                           "scope": schema_ref_named("Scope")},
        }),
    );
    out.insert(
        "Health".into(),
        json!({
            "type": "object",
            "required": ["type", "status", "version", "uptime_seconds", "key_id", "rails", "scope"],
            "properties": {
                "type": {"const": "conduct.health/v1"},
                "status": {"enum": ["ok", "degraded"]},
                "ledger": {"type": "object"},
                "site": {"type": "object"},
                "chain": {"type": ["object", "null"]},
                "version": {"type": "string"},
                "uptime_seconds": {"type": "integer", "minimum": 0},
                "key_id": {"type": "string", "pattern": "^[0-9a-f]{8}$"},
                "rails": {"type": "array", "items": {"type": "object"}},
                "scope": schema_ref_named("Scope"),
            },
        }),
    );
    let passage = json!({
        "type": "object",
        "required": ["n", "doc", "section", "path", "score"],
        "properties": {
            "n": {"type": "integer", "minimum": 1},
            "doc": {"type": "string"},
            "section": {"type": "string"},
            "path": {"type": "string", "pattern": "^/library/"},
            "score": {"type": "number"},
            "text": {"type": "string"},
            "clipped": {"type": "boolean"},
        },
    });
    // Read member by member by the oracle's handler (each unknown member named), not by a type.
    out.insert(
        "OracleRequest".into(),
        json!({
            "title": "POST /oracle/ask body",
            "type": "object",
            "required": ["question"],
            "additionalProperties": false,
            "properties": {"question": {
                "type": "string",
                "minLength": 1,
                "maxLength": crate::passages::MAX_QUESTION_CHARS,
                "pattern": TEXT_CHARS,
                "description": "A question about the service: not blank; no control characters \
                    but newline and tab.",
            }},
        }),
    );
    out.insert(
        "OracleAnswer".into(),
        json!({
            "description": "An answer grounded in the library (library/ORACLE.md): written by \
                the primary or fallback model, or the best passages verbatim. Not signed.",
            "type": "object",
            "required": ["type", "question", "answer", "produced_by", "model", "label",
                         "citations", "passages", "failed_attempts", "signed", "scope"],
            "properties": {
                "type": {"const": "conduct.oracle-answer/v1"},
                "question": {"type": "string"},
                "answer": {"type": "string"},
                "produced_by": {"enum": ["primary", "fallback", "passages"]},
                "model": {"type": ["string", "null"]},
                "label": {"type": "string"},
                "citations": {"type": "array", "items": passage.clone()},
                "passages": {"type": "array", "items": passage},
                "failed_attempts": {"type": "array", "items": {"type": "string"}},
                "sees": {"type": "string"},
                "signed": {"const": false},
                "signature_note": {"type": "string"},
                "scope": schema_ref_named("Scope"),
            },
        }),
    );
    out.insert(
        "OpenApi".into(),
        json!({
            "description": "This document, signed under x-key-id and x-signature.",
            "type": "object",
            "required": ["openapi", "info", "paths", "x-key-id", "x-signature"],
            "properties": {
                "openapi": {"const": OPENAPI_VERSION},
                "x-key-id": {"type": "string", "pattern": "^[0-9a-f]{8}$"},
                "x-signature": {"type": "string", "pattern": "^[A-Za-z0-9+/]{86}==$"},
            },
        }),
    );
    let id = json!({"type": ["string", "integer"], "description": "Echoed in the answer."});
    // Read by rmcp, not by a type of ours.
    out.insert(
        "McpMessage".into(),
        json!({
            "title": "POST /mcp body: one JSON-RPC 2.0 message (MCP streamable HTTP)",
            "description": "A request (with id) is answered with one JSON-RPC response as \
                application/json; a notification (no id) or a response is accepted with 202 \
                and no body. Send Accept: application/json, text/event-stream, and after \
                initialize the MCP-Protocol-Version header. See /library/MCP.md.",
            "type": "object",
            "required": ["jsonrpc", "method"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": id,
                "method": {"type": "string", "minLength": 1},
                "params": {"type": "object"},
            },
        }),
    );
    out.insert(
        "McpAnswer".into(),
        json!({
            "description": "One JSON-RPC 2.0 response: a result, or an error with a JSON-RPC \
                code (-32700 parse error, -32600 invalid request, -32601 unknown method, \
                -32602 invalid params or unknown tool). A tool that ran and failed is a \
                result with isError: true.",
            "type": "object",
            "required": ["jsonrpc"],
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"type": ["string", "integer", "null"]},
                "result": {"type": "object"},
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
                },
            },
        }),
    );
    out.insert(
        "Problem".into(),
        json!({
            "description": "An RFC 9457 problem; type names a section of /library/ERRORS.md.",
            "type": "object",
            "required": ["type", "title", "status", "detail", "scope"],
            "properties": {
                "type": {"type": "string"},
                "title": {"type": "string"},
                "status": {"type": "integer", "minimum": 400, "maximum": 599},
                "detail": {"type": "string"},
                "instance": {"type": "string"},
                "errors": {"type": "array", "items": {
                    "type": "object",
                    "required": ["pointer", "detail"],
                    "properties": {"pointer": {"type": "string"}, "detail": {"type": "string"}},
                }},
                "scope": schema_ref_named("Scope"),
            },
        }),
    );
    Ok(out)
}

/// The answer of `POST /erc8004/validation` (library/ERC8004.md). Written out: the handler
/// builds the signed credential as a JSON value.
fn erc8004_schemas(out: &mut Map<String, Value>) {
    use conduct_core::erc8004::{Form, CREDENTIAL_TYPE};
    let forms = Form::ALL.map(Form::name);
    out.insert(
        "Erc8004Validation".into(),
        json!({
            "description": "The signed credential and credential_hash = keccak256 of the RFC \
                8785 bytes of the whole credential (signature included): an ERC-8004 \
                validationRequest's requestHash.",
            "type": "object",
            "required": ["credential", "credential_hash", "how_to_use", "scope"],
            "properties": {
                "credential": {
                    "allOf": [schema_ref(Schema::Snapshot)],
                    "type": "object",
                    "required": ["type", "what", "subject", "predicate", "trace_sha256",
                        "context_key", "n_turns", "meter", "issued_at", "issuer", "scope"],
                    "properties": {
                        "type": {"const": CREDENTIAL_TYPE},
                        "what": {"type": "string"},
                        "subject": {
                            "type": "object",
                            "required": ["form", "id"],
                            "properties": {"form": {"enum": forms}, "id": {"type": "string"}},
                        },
                        "predicate": {
                            "type": "object",
                            "required": ["metric", "band", "clears"],
                            "properties": {
                                "metric": {"enum": QUANTITY_KEYS},
                                "band": {"enum": BANDS.map(|b| b.name)},
                                "clears": {"type": ["boolean", "null"]},
                            },
                        },
                        "trace_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "context_key": {"type": "string"},
                        "n_turns": {"type": "integer", "minimum": 1},
                        "meter": {"type": "object"},
                        "issued_at": {"type": "string"},
                        "issuer": {"type": "object"},
                        "scope": schema_ref_named("Scope"),
                    },
                },
                "credential_hash": {"type": "string", "pattern": "^0x[0-9a-f]{64}$"},
                "how_to_use": {
                    "type": "object",
                    "required": ["request_hash", "validation_request", "validation_response",
                        "verify", "docs"],
                },
                "scope": schema_ref_named("Scope"),
            },
        }),
    );
}

/// The answers of the witness and of familiars (library/WITNESS.md, library/FAMILIARS.md).
/// Written out: the reading and the record are built as JSON values.
fn witness_schemas(out: &mut Map<String, Value>) {
    use conduct_core::familiar::record::FAUCET_CAP;
    use conduct_core::schema::ADDRESS;
    let vow_id = json!({"type": "string", "pattern": conduct_core::schema::vow_id()});
    let address = json!({"type": "string", "pattern": ADDRESS});
    out.insert(
        "WitnessReading".into(),
        json!({
            "description": "A signed witness reading: the pledge's limits checked against the \
                wallet's transfers and balances as read from the chain. held is true and \
                breaches empty when every limit held.",
            "allOf": [schema_ref(Schema::Snapshot)],
            "type": "object",
            "required": ["type", "what", "vow_id", "wallet", "chain", "pledge", "window", "held",
                "breaches", "assets", "source", "issued_at", "issuer", "scope"],
            "properties": {
                "type": {"const": conduct_core::witness::reading::READING_TYPE},
                "vow_id": vow_id.clone(),
                "wallet": address.clone(),
                "held": {"type": "boolean"},
                "breaches": {"type": "array", "items": {
                    "type": "object",
                    "required": ["asset", "limit", "limit_value", "observed", "excess", "transfers"],
                    "properties": {
                        "limit": {"enum": ["max_balance", "max_outflow_per_day"]},
                        "transfers": {"type": "array", "items": {"type": "object"}},
                    },
                }},
                "assets": {"type": "array", "items": {"type": "object"}},
                "window": {"type": "object", "required": ["days", "from", "to", "from_block",
                    "to_block", "to_block_hash"]},
                "pledge": {"type": "object", "required": ["log_index", "at", "limits"]},
                "scope": schema_ref_named("Scope"),
            },
        }),
    );
    out.insert(
        "Familiar".into(),
        json!({
            "description": "A hosted familiar's signed log record: a labor order with an owner. \
                It holds no wallet (null) and has a faucet cap of 0.",
            "allOf": [schema_ref(Schema::Snapshot)],
            "type": "object",
            "required": ["type", "familiar_id", "origin", "owner", "owner_signature", "order",
                "order_sha256", "wallet", "faucet_cap", "status", "labor_price_usd",
                "summoned_at", "log_index", "scope"],
            "properties": {
                "type": {"const": conduct_core::familiar::record::FAMILIAR_TYPE},
                "familiar_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
                "owner": {"type": "object", "required": ["form", "vow_id", "wallet"]},
                "order": {"type": "object"},
                "order_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "wallet": {"const": null},
                "faucet_cap": {"const": FAUCET_CAP},
                "status": {"const": conduct_core::familiar::record::STATUS},
                "log_index": {"type": "integer", "minimum": 0},
                "scope": schema_ref_named("Scope"),
            },
        }),
    );
}

/// The schemas of prepared transactions and ticket entitlements (library/PREPARE.md). A
/// prepared answer's typed part is derived from its type; the rest is written out: the answers
/// are built as JSON values, and `POST /prepare/{action}` reads its body member by member
/// (each argument by the action's own rules).
fn prepare_schemas(out: &mut Map<String, Value>) {
    let address = json!({"type": "string", "pattern": "^0x[0-9a-f]{40}$"});
    let maybe_address = json!({"type": ["string", "null"], "pattern": "^0x[0-9a-f]{40}$"});
    let decimal = json!({"type": "string", "pattern": "^(0|[1-9][0-9]*)$"});
    let hex_data = json!({"type": "string", "pattern": "^0x([0-9a-f]{2})*$"});
    let signed = |title: &str, required: Value, properties: Value| {
        json!({
            "title": title,
            "allOf": [schema_ref(Schema::Snapshot)],
            "type": "object",
            "required": required,
            "properties": properties,
        })
    };
    let chain = json!({"type": ["object", "null"], "required": ["name", "chain_id"]});
    // The typed part (action, arguments, txs, preconditions, read_at) is the schema of
    // `Prepared`, as serialized; the api's envelope around it is written out.
    let typed = answer_schema::<conduct_indexer::chain::prepare::Prepared>();
    let mut properties = typed
        .get("properties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut required = typed.get("required").cloned().unwrap_or_else(|| json!([]));
    properties["read_at"]["properties"]["at"] = json!({"type": "string"});
    if let Some(r) = properties["read_at"]["required"].as_array_mut() {
        r.push(json!("at"));
    }
    for (k, v) in [
        ("type", json!({"const": "conduct.prepared/v1"})),
        ("chain", chain.clone()),
        ("quoted", json!({"const": false})),
        (
            "rules",
            json!({"type": "array", "items": {"type": "string"}}),
        ),
        ("scope", schema_ref_named("Scope")),
    ] {
        properties[k] = v;
    }
    if let Some(r) = required.as_array_mut() {
        r.extend(["type", "chain", "rules", "scope"].map(Value::from));
    }
    out.insert(
        "Prepared".into(),
        signed(
            "Unsigned transactions to sign in order, and the preconditions to check first",
            required,
            properties,
        ),
    );
    let param = json!({
        "type": "object",
        "required": ["name", "type", "required", "default", "rule", "description"],
        "properties": {
            "name": {"type": "string"},
            "type": {"enum": ["address", "uint256", "uint8", "bytes32", "string"]},
            "required": {"type": "boolean"},
            "default": {"type": ["string", "null"]},
        },
    });
    out.insert(
        "PrepareIndex".into(),
        signed(
            "Every on-chain action the service prepares",
            json!(["type", "chain", "rules", "actions", "scope"]),
            json!({
                "type": {"const": "conduct.prepare-index/v1"},
                "chain": chain,
                "rules": {"type": "array", "items": {"type": "string"}},
                "actions": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name", "path", "contract", "function", "selector",
                                 "pulls_erc20", "params"],
                    "properties": {
                        "name": {"type": "string"},
                        "path": {"type": "string", "pattern": "^/prepare/"},
                        "contract": {"type": "object", "required": ["name", "address", "configured_by"],
                            "properties": {"address": maybe_address.clone()}},
                        "function": {"type": "string"},
                        "selector": {"type": "string", "pattern": "^0x[0-9a-f]{8}$"},
                        "pulls_erc20": {"type": "boolean"},
                        "params": {"type": "array", "items": param},
                    },
                }},
                "scope": schema_ref_named("Scope"),
            }),
        ),
    );
    out.insert(
        "PrepareRequest".into(),
        json!({
            "title": "POST /prepare/{action} body: the action's arguments",
            "description": "Each argument is a string (integers in decimal, addresses and \
                hashes in 0x hex); only the action's own names (GET /prepare). A member named \
                like a key (private_key, mnemonic, seed, ...) is refused: never send one.",
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 2048},
        }),
    );
    out.insert(
        "Entitlement".into(),
        signed(
            "A ticket entitlement: a balance read at a named block",
            json!([
                "type",
                "entitled",
                "game",
                "wallet",
                "balance",
                "contract",
                "chain_id",
                "block",
                "block_hash",
                "at",
                "proof",
                "what",
                "scope"
            ]),
            json!({
                "type": {"const": "conduct.ticket-entitlement/v1"},
                "entitled": {"type": "boolean"},
                "game": decimal.clone(),
                "wallet": address.clone(),
                "balance": decimal,
                "contract": address,
                "chain_id": {"type": "integer"},
                "block": {"type": "integer", "minimum": 0},
                "block_hash": {"type": ["string", "null"]},
                "at": {"type": "string"},
                "proof": {"type": "object", "required": ["scheme", "message", "signature"],
                    "properties": {"signature": hex_data}},
                "what": {"type": "string"},
                "scope": schema_ref_named("Scope"),
            }),
        ),
    );
}

fn schema_ref_named(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// The OpenAPI version the document declares.
pub const OPENAPI_VERSION: &str = "3.1.0";

fn problem_response(status: u16) -> Value {
    let mut r = json!({
        "description": status_text(status, false),
        "content": {"application/problem+json": {"schema": schema_ref_named("Problem")}},
    });
    if status == 429 {
        r["headers"] = json!({"Retry-After": {
            "description": "Seconds to wait.",
            "required": true,
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }});
    }
    r
}

fn param_value(p: &Param, docs: &[String]) -> Result<Value, RenderError> {
    let schema = match p.schema {
        ParamSchema::Json(text) => parse(p.name, text)?,
        ParamSchema::DocumentName => json!({"type": "string", "enum": docs}),
    };
    let location = match p.location {
        In::Path => "path",
        In::Query => "query",
        In::Header => "header",
    };
    Ok(json!({
        "name": p.name,
        "in": location,
        "required": p.required,
        "description": p.description,
        "schema": schema,
    }))
}

/// The placeholders of a route pattern (`/vow/{id}/chain/{k}` -> `id`, `k`).
fn placeholders(path: &str) -> Vec<&str> {
    path.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(name, _)| name))
        .collect()
}

/// Links from a signed record to the GET operations of `routes` its members address: a
/// vow's pages by `vow_id`, the log proof by `log_index`.
fn record_links(routes: &[RouteInfo]) -> Map<String, Value> {
    let mut links = Map::new();
    for t in routes {
        if t.method != "GET" || t.contract == Contract::UNDESCRIBED {
            continue;
        }
        let source = |name: &str| match name {
            "id" if t.path.starts_with("/vow/") => Some("$response.body#/vow_id"),
            "index" if t.path.starts_with("/log/proof/") => Some("$response.body#/log_index"),
            _ => None,
        };
        let params: Option<Map<String, Value>> = placeholders(t.path)
            .into_iter()
            .map(|n| source(n).map(|s| (n.to_owned(), json!(s))))
            .collect();
        if let Some(params) = params.filter(|p| !p.is_empty()) {
            let id = operation_id(t.method, t.path);
            links.insert(id.clone(), json!({"operationId": id, "parameters": params}));
        }
    }
    links
}

fn operation(r: &RouteInfo, docs: &[String], routes: &[RouteInfo]) -> Result<Value, RenderError> {
    let c = &r.contract;
    if *c == Contract::UNDESCRIBED {
        return Ok(undescribed(r));
    }
    let mut params = Vec::with_capacity(c.params.len() + 1);
    let mut names = placeholders(r.path);
    for p in c.params {
        if p.location == In::Path {
            let at = names.iter().position(|n| *n == p.name).ok_or_else(|| {
                RenderError::Input(format!("openapi: {} has no {{{}}}", r.path, p.name))
            })?;
            names.remove(at);
        }
        params.push(param_value(p, docs)?);
    }
    if let Some(missing) = names.first() {
        return Err(RenderError::Input(format!(
            "openapi: {{{missing}}} of {} is not described",
            r.path
        )));
    }
    let mut problems: Vec<u16> = c.problems.to_vec();
    if c.negotiated {
        let formats: Vec<&str> = c
            .media
            .iter()
            .flat_map(|m| format_names(m))
            .copied()
            .collect();
        params.push(json!({
            "name": "format",
            "in": "query",
            "required": false,
            "description": "Choose the representation (overrides Accept); a known format this path lacks is 406.",
            "schema": {"type": "string", "enum": formats},
        }));
        problems.extend([400, 406]);
    }
    if c.body.is_some() {
        problems.extend([400, 408, 413, 415, 422]);
    }
    problems.extend(EVERY_OPERATION);
    problems.sort_unstable();
    problems.dedup();

    let mut responses = Map::new();
    for &status in c.ok {
        // A 202 accepts without answering: it has no body.
        let media: &[&str] = if status == 202 { &[] } else { c.media };
        let content: Map<String, Value> = media
            .iter()
            .map(|m| {
                let body = match c.schema {
                    Some(s) if *m == JSON => json!({"schema": schema_ref(s)}),
                    _ => json!({}),
                };
                ((*m).to_owned(), body)
            })
            .collect();
        let mut resp = json!({"description": status_text(status, true), "content": content});
        if status == 201 {
            resp["headers"] = json!({"Location": {
                "description": "The page the record appears on.",
                "required": true,
                "schema": {"type": "string"},
            }});
        }
        if c.schema == Some(Schema::Record) {
            resp["links"] = Value::Object(record_links(routes));
        }
        responses.insert(status.to_string(), resp);
    }
    if r.paid {
        // The payment's settlement was broadcast and is not confirmed yet (library/PAYMENTS.md,
        // "Settlement pending"): nothing is served yet; the same payment sent again is.
        responses.insert(
            "202".into(),
            json!({
                "description": "Paid; settlement pending: send the same PAYMENT-SIGNATURE again after Retry-After.",
                "headers": {
                    "Retry-After": {"description": "Seconds to wait.", "required": true,
                                    "schema": {"type": "string", "pattern": "^[0-9]+$"}},
                    "PAYMENT-RESPONSE": {"description": "base64 of the x402 SettleResponse: success false, errorReason settlement_pending, the transaction.",
                                         "required": true, "schema": {"type": "string"}},
                },
                "content": {JSON: {"schema": {
                    "type": "object",
                    "required": ["status", "transaction", "network", "payment_identifier",
                                 "retry_after_seconds", "detail"],
                    "properties": {
                        "status": {"const": "settlement_pending"},
                        "transaction": {"type": "string"},
                        "network": {"type": "string"},
                        "payer": {"type": ["string", "null"]},
                        "payment_identifier": {"type": ["string", "null"]},
                        "retry_after_seconds": {"type": "integer", "minimum": 0},
                        "detail": {"type": "string"},
                    },
                }}},
            }),
        );
        responses.insert(
            "402".into(),
            json!({
                "description": status_text(402, false),
                "headers": {"PAYMENT-REQUIRED": {
                    "description": "base64 of the x402 v2 PaymentRequired JSON (resource, accepts).",
                    "required": true,
                    "schema": {"type": "string"},
                }},
            }),
        );
    }
    for status in problems {
        let problem = problem_response(status);
        match responses.get_mut(&status.to_string()) {
            // A status that is also a success of the route (a degraded /health is 503 with
            // its JSON): either body may come.
            Some(resp) => {
                resp["content"]["application/problem+json"] =
                    problem["content"]["application/problem+json"].clone();
            }
            None => {
                responses.insert(status.to_string(), problem);
            }
        }
    }

    let mut op = json!({
        "operationId": operation_id(r.method, r.path),
        "summary": r.description,
        "x-paid": r.paid,
        "responses": responses,
    });
    if !params.is_empty() {
        op["parameters"] = Value::Array(params);
    }
    if let Some(b) = c.body {
        op["requestBody"] = json!({
            "required": true,
            "content": {JSON: {"schema": schema_ref(b)}},
        });
    }
    Ok(op)
}

/// The operation of a route whose contract is not written yet: any status may answer.
fn undescribed(r: &RouteInfo) -> Value {
    let params: Vec<Value> = placeholders(r.path)
        .into_iter()
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    let mut op = json!({
        "operationId": operation_id(r.method, r.path),
        "summary": r.description,
        "x-paid": r.paid,
        "responses": {"default": {"description": "Not described in this document yet; see /catalog."}},
    });
    if !params.is_empty() {
        op["parameters"] = Value::Array(params);
    }
    op
}

/// One schema of the document's `components`, standing alone: every `$ref` to another
/// component is replaced by its definition (for documents outside this one, such as the tools
/// of `/mcp`, which describe their arguments and results by the same schemas).
pub fn standalone(s: Schema) -> Result<Value, RenderError> {
    let derived: Vec<Derived> = match s {
        Schema::Derived(d) => vec![d],
        _ => Vec::new(),
    };
    inline(&schema_ref(s), &schemas(&derived)?, "#/components/schemas/")
        .map_err(|e| RenderError::Input(format!("openapi: {e}")))
}

/// The OpenAPI document of `input`'s routes (unsigned).
pub fn document(input: &SiteInput<'_>) -> Result<Value, RenderError> {
    let docs: Vec<String> = crate::docs::published()
        .iter()
        .map(|d| d.stem().to_owned())
        .collect();
    let mut paths = Map::new();
    for r in input.routes {
        let item = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
        let method = r.method.to_ascii_lowercase();
        if item.get(&method).is_some() {
            return Err(RenderError::Input(format!(
                "openapi: {} {} is in the route table twice",
                r.method, r.path
            )));
        }
        item[method] = operation(r, &docs, input.routes)?;
    }
    let mut scope = Map::new();
    for (k, v) in SCOPE {
        scope.insert(k.into(), json!(v));
    }
    Ok(json!({
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "conduct",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Signed channel-coupling profiles of agent traces, and the vow ledger.",
            "description": "Generated from the running route table, like /catalog. Every \
                refusal is an RFC 9457 application/problem+json document (see \
                /library/ERRORS.md). Paid routes answer 402 with an empty body and a \
                PAYMENT-REQUIRED header until paid through x402 (see /.well-known/x402.json). \
                Every path also answers OPTIONS (a CORS preflight) and 405 with Allow for a \
                method it does not serve. This document is signed: x-signature is the base64 \
                Ed25519 signature of the RFC 8785 bytes of the document without x-signature, \
                under the key named by x-key-id (see /pubkey).",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": input.public_url}],
        "paths": paths,
        "components": {"schemas": schemas(&derived_of(input.routes))?},
        "x-scope": scope,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_readable() {
        assert_eq!(operation_id("GET", "/"), "get_root");
        assert_eq!(
            operation_id("GET", "/vow/{id}/chain/{k}"),
            "get_vow_id_chain_k"
        );
        assert_eq!(
            operation_id("GET", "/.well-known/x402.json"),
            "get_well_known_x402_json"
        );
    }

    /// The typed part of a prepared answer, serialized as the api serializes it and put in its
    /// envelope, meets the schema derived from its type (`Prepared`), and a value outside the
    /// type's attributes does not.
    #[test]
    fn a_prepared_answer_meets_its_derived_schema() {
        use conduct_indexer::chain::prepare::{
            Check, Precondition, Prepared, ReadAt, SkipIf, Status, Tx,
        };
        let from = format!("0x{}", "ab".repeat(20));
        let approve = Tx {
            step: 1,
            from: from.clone(),
            to: None,
            data: Some(format!("0x095ea7b3{}", "00".repeat(64))),
            value: "0",
            chain_id: None,
            function: "approve(address,uint256)",
            description: "Approve the ticket contract to take the price.".into(),
            skip_if: Some(SkipIf {
                condition: "allowance(owner, spender) >= amount",
                token: None,
                owner: from.clone(),
                spender: None,
                amount: None,
                check: Check {
                    to: None,
                    data: None,
                    returns: "uint256",
                },
                allowance: None,
                holds: None,
            }),
        };
        let buy = Tx {
            step: 2,
            to: Some(format!("0x{}", "cd".repeat(20))),
            chain_id: Some(31337),
            function: "buy(uint256,uint256)",
            skip_if: None,
            ..approve.clone()
        };
        let prepared = Prepared {
            action: "buy_ticket",
            arguments: [("from", from.clone()), ("game", "1".to_owned())].into(),
            txs: vec![approve, buy],
            preconditions: vec![Precondition {
                what: "the ticket contract is configured".into(),
                status: Status::Unset,
                value: None,
                detail: "[chain.tickets] address is not set here".into(),
            }],
            read_at: ReadAt {
                block: None,
                reachable: None,
                error: None,
            },
        };
        let mut answer = serde_json::to_value(&prepared).unwrap();
        answer["read_at"]["at"] = json!("2026-01-01T00:00:00Z");
        answer["type"] = json!("conduct.prepared/v1");
        answer["chain"] = Value::Null;
        answer["quoted"] = json!(false);
        answer["rules"] = json!(["the action is last"]);
        answer["scope"] =
            Value::Object(SCOPE.iter().map(|(k, v)| ((*k).into(), json!(v))).collect());
        answer["key_id"] = json!("0123abcd");
        answer["signature"] = json!(format!("{}==", "A".repeat(86)));
        let schema = standalone(Schema::Prepared).unwrap();
        let check = jsonschema::draft202012::new(&schema).unwrap();
        let errors: Vec<String> = check.iter_errors(&answer).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        for (pointer, bad) in [
            ("/txs/0/step", json!(0)),
            ("/txs/1/value", json!("1")),
            ("/txs/0/data", json!("0xABC")),
            ("/preconditions/0/status", json!("maybe")),
            ("/txs", json!([])),
        ] {
            let mut wrong = answer.clone();
            *wrong.pointer_mut(pointer).unwrap() = bad;
            assert!(!check.is_valid(&wrong), "{pointer}");
        }
    }

    #[test]
    fn placeholders_must_be_described() {
        assert_eq!(placeholders("/vow/{id}/chain/{k}"), vec!["id", "k"]);
        assert_eq!(placeholders("/library/{NAME}.md"), vec!["NAME"]);
        let r = RouteInfo {
            method: "GET",
            path: "/vow/{id}",
            paid: false,
            description: "A vow.",
            contract: Contract::page(&[JSON]),
        };
        assert!(operation(&r, &[], &[]).is_err());
        const ID: Param = Param::path("id", r#"{"type":"string"}"#, "Vow id.");
        let r = RouteInfo {
            contract: Contract::page(&[JSON, HTML]).params(&[ID]),
            ..r
        };
        let op = operation(&r, &[], &[]).unwrap();
        assert_eq!(op["parameters"][1]["name"], "format");
        assert_eq!(
            op["parameters"][1]["schema"]["enum"],
            json!(["json", "html"])
        );
        assert!(op["responses"]["406"].is_object() && op["responses"]["404"].is_object());
        assert!(op["responses"].get("402").is_none());
    }
}
