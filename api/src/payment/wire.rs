//! x402 wire formats the gate reads and writes (x402 v2, with v1 payloads recognised).
//!
//! Requirements are kept as JSON objects built once from configuration, so `accepts` is
//! byte-stable between requests (clients deep-compare it). Payloads are parsed by their own
//! `x402Version`. Settlement replies are our own camelCase structs: they must carry
//! `errorReason` and the transaction of a pending settlement, as the spec writes them.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A decoded payment header.
#[derive(Debug, Clone)]
pub struct Payment {
    /// The protocol version the payload declares.
    pub version: u64,
    /// The whole payload as sent (forwarded verbatim to a facilitator).
    pub raw: Value,
    /// The requirements the client says it accepted (v2 `accepted`).
    pub accepted: Value,
    /// Who pays, lower-case hex.
    pub payer: String,
    /// The authorization nonce (EIP-3009 bytes32 or Permit2 nonce), as sent.
    pub nonce: String,
    /// SHA-256 (hex) of the payload's RFC 8785 canonical JSON: the payload itself, whatever
    /// its spacing or member order on the wire.
    pub digest: String,
}

impl Payment {
    /// The store key of this authorization: (network, payer, nonce).
    pub fn key(&self) -> conduct_indexer::store::PaymentKey<'_> {
        conduct_indexer::store::PaymentKey {
            network: self.accepted["network"].as_str().unwrap_or(""),
            payer: &self.payer,
            nonce: &self.nonce,
        }
    }
}

/// Why a payment header could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentError(pub String);

/// Decode a `PAYMENT-SIGNATURE` / `X-PAYMENT` value.
pub fn decode_payment(header: &str) -> Result<Payment, PaymentError> {
    let bytes = B64
        .decode(header.trim())
        .map_err(|_| PaymentError("invalid_payload: the payment header is not base64".into()))?;
    let raw: Value = serde_json::from_slice(&bytes)
        .map_err(|_| PaymentError("invalid_payload: the payment header is not JSON".into()))?;
    payment_from_value(raw)
}

/// Read a payment payload already decoded from its header (or from a facilitator request).
pub fn payment_from_value(raw: Value) -> Result<Payment, PaymentError> {
    let version = raw
        .get("x402Version")
        .and_then(Value::as_u64)
        .ok_or_else(|| PaymentError("invalid_payload: x402Version is missing".into()))?;
    let accepted = match version {
        2 => raw
            .get("accepted")
            .filter(|a| a.is_object())
            .cloned()
            .ok_or_else(|| PaymentError("invalid_payload: accepted is missing".into()))?,
        1 => {
            return Err(PaymentError(
                "invalid_x402_version: this server speaks x402 v2 (PAYMENT-REQUIRED header); \
                 a v1 payload cannot name the v2 requirements it accepted"
                    .into(),
            ))
        }
        v => {
            return Err(PaymentError(format!(
                "invalid_x402_version: x402Version {v} is not supported"
            )))
        }
    };
    let payload = raw
        .get("payload")
        .filter(|p| p.is_object())
        .ok_or_else(|| PaymentError("invalid_payload: payload is missing".into()))?;
    let (payer, nonce) = if let Some(auth) = payload.get("authorization") {
        (auth.get("from"), auth.get("nonce"))
    } else if let Some(auth) = payload.get("permit2Authorization") {
        (auth.get("from"), auth.get("nonce"))
    } else {
        return Err(PaymentError(
            "invalid_payload: neither an EIP-3009 authorization nor a Permit2 authorization".into(),
        ));
    };
    let payer = payer
        .and_then(Value::as_str)
        .filter(|s| is_address(s))
        .ok_or_else(|| PaymentError("invalid_payload: the payer address is malformed".into()))?
        .to_ascii_lowercase();
    let nonce = nonce
        .and_then(|n| match n {
            Value::String(s) => Some(s.to_ascii_lowercase()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .filter(|n| !n.is_empty() && n.len() <= 80)
        .ok_or_else(|| PaymentError("invalid_payload: the nonce is malformed".into()))?;
    let digest = conduct_core::canonical::jcs(&raw)
        .map(|b| conduct_core::canonical::sha256_hex(&b))
        .map_err(|e| PaymentError(format!("invalid_payload: {e}")))?;
    Ok(Payment {
        version,
        raw,
        accepted,
        payer,
        nonce,
        digest,
    })
}

/// The name of the x402 `payment-identifier` extension.
pub const PAYMENT_IDENTIFIER: &str = "payment-identifier";
/// The shortest payment identifier.
pub const PAYMENT_ID_MIN: usize = 16;
/// The longest payment identifier.
pub const PAYMENT_ID_MAX: usize = 128;

/// The `payment-identifier` declaration of a 402 challenge's `extensions`: optional, with the
/// JSON Schema of its `info` (library/PAYMENTS.md, "Payment identifiers").
pub fn declare_payment_identifier() -> Value {
    serde_json::json!({
        "info": {"required": false},
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "required": {"type": "boolean"},
                "id": {"type": "string", "minLength": PAYMENT_ID_MIN, "maxLength": PAYMENT_ID_MAX,
                       "pattern": "^[a-zA-Z0-9_-]+$"},
            },
            "required": ["required"],
        },
    })
}

/// Where a payment identifier travels in the payment header, for refusals that name it.
pub const PAYMENT_ID_POINTER: &str = "PAYMENT-SIGNATURE/extensions/payment-identifier/info/id";

/// The `payment-identifier` id a payload carries (`extensions["payment-identifier"].info.id`):
/// `None` when it carries none, an error saying what is wrong with one that is malformed (16
/// to 128 of `A-Z a-z 0-9 _ -`).
pub fn payment_identifier(raw: &Value) -> Result<Option<String>, String> {
    let Some(ext) = raw
        .get("extensions")
        .and_then(|e| e.get(PAYMENT_IDENTIFIER))
    else {
        return Ok(None);
    };
    let Some(id) = ext.get("info").and_then(|i| i.get("id")) else {
        return Ok(None);
    };
    let id = id
        .as_str()
        .ok_or_else(|| "the payment identifier must be a string".to_owned())?;
    let ok_chars = id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !(PAYMENT_ID_MIN..=PAYMENT_ID_MAX).contains(&id.len()) || !ok_chars {
        return Err(format!(
            "a payment identifier is {PAYMENT_ID_MIN} to {PAYMENT_ID_MAX} characters of \
             A-Z, a-z, 0-9, '_' and '-' (got {} characters)",
            id.chars().count()
        ));
    }
    Ok(Some(id.to_owned()))
}

/// True for `0x` followed by 40 hex digits.
pub fn is_address(s: &str) -> bool {
    s.len() == 42 && s.starts_with("0x") && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The EIP-55 mixed-case checksum form of an address (`0x` + 40 hex digits).
pub fn to_checksum(addr: &str) -> Option<String> {
    if !is_address(addr) {
        return None;
    }
    addr.parse::<alloy_primitives::Address>()
        .ok()
        .map(|a| a.to_checksum(None))
}

/// Members of a requirements object whose values are addresses (compared case-insensitively).
const ADDRESS_FIELDS: [&str; 2] = ["asset", "payTo"];

fn normalized(req: &Value) -> Value {
    let mut v = req.clone();
    if let Some(obj) = v.as_object_mut() {
        for f in ADDRESS_FIELDS {
            if let Some(Value::String(s)) = obj.get_mut(f) {
                *s = s.to_ascii_lowercase();
            }
        }
    }
    v
}

/// True when a client's `accepted` is one of our offered requirements: equal member by member,
/// addresses compared without regard to case (clients may checksum them).
pub fn accepted_matches(accepted: &Value, offered: &Value) -> bool {
    normalized(accepted) == normalized(offered)
}

/// A facilitator's (or our own) settlement reply; the `PAYMENT-RESPONSE` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettleResponse {
    /// Whether the transfer settled.
    pub success: bool,
    /// Why not, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Human detail, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Transaction hash (also present for a pending settlement).
    #[serde(default)]
    pub transaction: String,
    /// CAIP-2 network.
    #[serde(default)]
    pub network: String,
    /// Payer address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payer: Option<String>,
}

/// A facilitator's verification reply.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResponse {
    /// Whether the payment would settle.
    pub is_valid: bool,
    /// Why not.
    #[serde(default)]
    pub invalid_reason: Option<String>,
    /// Human detail.
    #[serde(default)]
    pub invalid_message: Option<String>,
    /// Payer address.
    #[serde(default)]
    pub payer: Option<String>,
}

/// Base64 of the JSON of a settlement reply, for `PAYMENT-RESPONSE`.
pub fn encode_settle(s: &SettleResponse) -> String {
    B64.encode(serde_json::to_vec(s).unwrap_or_default())
}

/// One rail's requirements object, built from configuration.
#[allow(clippy::too_many_arguments)]
pub fn requirements(
    network: &str,
    amount: &str,
    asset: &str,
    pay_to: &str,
    max_timeout_seconds: u64,
    extra: Map<String, Value>,
) -> Value {
    let mut m = Map::new();
    m.insert("scheme".into(), Value::String("exact".into()));
    m.insert("network".into(), Value::String(network.into()));
    m.insert("amount".into(), Value::String(amount.into()));
    m.insert("asset".into(), Value::String(asset.into()));
    m.insert("payTo".into(), Value::String(pay_to.into()));
    m.insert("maxTimeoutSeconds".into(), Value::from(max_timeout_seconds));
    m.insert("extra".into(), Value::Object(extra));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header(v: Value) -> String {
        B64.encode(serde_json::to_vec(&v).unwrap())
    }

    fn offered() -> Value {
        let mut extra = Map::new();
        extra.insert("name".into(), json!("USD Coin"));
        extra.insert("version".into(), json!("2"));
        requirements(
            "eip155:31337",
            "100000",
            "0x5fbdb2315678afecb367f032d93f642f64180aa3",
            "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
            60,
            extra,
        )
    }

    #[test]
    fn decodes_an_eip3009_payload_and_matches_checksummed_addresses() {
        let mut accepted = offered();
        accepted["asset"] = json!("0x5FbDB2315678afecb367f032d93F642f64180aa3");
        let h = header(json!({"x402Version":2,"accepted":accepted,"payload":{
            "signature":"0x00","authorization":{"from":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
            "to":"0x3c44","value":"100000","validAfter":"0","validBefore":"9","nonce":"0xAB"}}}));
        let p = decode_payment(&h).unwrap();
        assert_eq!(p.payer, "0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
        assert_eq!(p.nonce, "0xab");
        assert!(accepted_matches(&p.accepted, &offered()));
        let mut other = offered();
        other["amount"] = json!("1");
        assert!(!accepted_matches(&p.accepted, &other));
    }

    #[test]
    fn eip55_checksums() {
        // Vectors from EIP-55.
        for a in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            assert_eq!(to_checksum(&a.to_ascii_lowercase()).as_deref(), Some(a));
        }
        assert_eq!(to_checksum("0x12"), None);
    }

    #[test]
    fn garbage_and_v1_are_refused_with_reasons() {
        assert!(decode_payment("%%%").unwrap_err().0.contains("base64"));
        assert!(decode_payment(&B64.encode("nope"))
            .unwrap_err()
            .0
            .contains("JSON"));
        let v1 = header(json!({"x402Version":1,"scheme":"exact","network":"base","payload":{}}));
        assert!(decode_payment(&v1).unwrap_err().0.contains("v2"));
        let no_auth = header(json!({"x402Version":2,"accepted":offered(),"payload":{}}));
        assert!(decode_payment(&no_auth).is_err());
    }

    #[test]
    fn payment_identifiers_are_read_from_the_payload_extensions() {
        let with = |id: Value| {
            json!({"x402Version": 2, "extensions": {"payment-identifier": {
                "info": {"required": false, "id": id}, "schema": {}}}})
        };
        assert_eq!(
            payment_identifier(&with(json!("pay_7d5d747be160e280504c099d984bcfe0"))),
            Ok(Some("pay_7d5d747be160e280504c099d984bcfe0".into()))
        );
        assert_eq!(payment_identifier(&json!({"x402Version": 2})), Ok(None));
        let declared_only =
            json!({"extensions": {"payment-identifier": {"info": {"required": false}}}});
        assert_eq!(payment_identifier(&declared_only), Ok(None));
        for bad in [
            json!("short"),
            json!("a".repeat(129)),
            json!("pay_with spaces_0123"),
            json!("pay_ünïcödé_0123456"),
            json!(7),
        ] {
            assert!(payment_identifier(&with(bad.clone())).is_err(), "{bad}");
        }
        assert!(payment_identifier(&with(json!("a".repeat(16)))).is_ok());
        assert!(payment_identifier(&with(json!("a".repeat(128)))).is_ok());
        // The declaration's schema accepts what the parser accepts.
        let schema = declare_payment_identifier()["schema"].clone();
        let check = jsonschema::draft202012::new(&schema).unwrap();
        assert!(check.is_valid(&json!({"required": false, "id": "pay_7d5d747be160e280"})));
        assert!(!check.is_valid(&json!({"required": false, "id": "short"})));
    }

    #[test]
    fn the_payload_digest_ignores_spacing_and_member_order() {
        let a = r#"{"x402Version":2,"accepted":{"scheme":"exact"},"payload":{"authorization":{"from":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8","nonce":"0x01"}}}"#;
        let b = r#"{ "payload": {"authorization": {"nonce":"0x01", "from":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}}, "accepted": {"scheme":"exact"}, "x402Version": 2 }"#;
        let pa = decode_payment(&B64.encode(a)).unwrap();
        let pb = decode_payment(&B64.encode(b)).unwrap();
        assert_eq!(pa.digest, pb.digest);
        let c = a.replace("0x01", "0x02");
        assert_ne!(decode_payment(&B64.encode(c)).unwrap().digest, pa.digest);
    }

    #[test]
    fn settle_failures_keep_reason_and_pending_transaction() {
        let s: SettleResponse = serde_json::from_str(
            r#"{"success":false,"errorReason":"settlement_pending","transaction":"0xabc","network":"eip155:1"}"#,
        )
        .unwrap();
        assert_eq!(s.error_reason.as_deref(), Some("settlement_pending"));
        assert_eq!(s.transaction, "0xabc");
        let round: Value = serde_json::from_slice(&B64.decode(encode_settle(&s)).unwrap()).unwrap();
        assert_eq!(round["errorReason"], "settlement_pending");
    }
}
