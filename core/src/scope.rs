//! The scope statement (library/ATTESTATION.md): four keys that travel inside every response body and
//! inside the signed body wherever the body is signed. It must never be stripped.

use std::sync::LazyLock;

use serde_json::{Map, Value};

/// The four scope keys and their fixed text, in canonical (sorted) order.
pub const SCOPE: [(&str, &str); 4] = [
    (
        "no_meter_is_immune",
        "An agent optimizing against this output can learn to write clean traces. A low coupling is not proof of good conduct.",
    ),
    (
        "not_trade_advice",
        "Not trade advice: no signal, no market model, no risk sizing.",
    ),
    (
        "off_meter_blind_spot",
        "Only channels present in the trace are read. What the agent did off the trace is outside the meter.",
    ),
    (
        "trace_provenance_is_the_callers",
        "The service attests that it scored this trace. It does not attest that the trace faithfully records what the agent did.",
    ),
];

static SCOPE_VALUE: LazyLock<Value> = LazyLock::new(|| {
    let mut m = Map::new();
    for (k, v) in SCOPE {
        m.insert(k.into(), Value::String(v.into()));
    }
    Value::Object(m)
});

/// The scope statement as a JSON object.
pub fn scope_value() -> Value {
    SCOPE_VALUE.clone()
}

/// One line for text and HTML footers.
pub fn scope_line() -> String {
    SCOPE.iter().map(|(_, v)| *v).collect::<Vec<_>>().join(" ")
}

/// True when a signed object of this `type` must carry the scope statement.
///
/// Every `conduct.*` object does; foreign formats (notes, manifests of others) do not.
pub fn required_for(obj: &Map<String, Value>) -> bool {
    obj.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.starts_with("conduct."))
}

/// True when `obj` carries the scope statement exactly.
pub fn is_intact(obj: &Map<String, Value>) -> bool {
    obj.get("scope") == Some(&*SCOPE_VALUE)
}
