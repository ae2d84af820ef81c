//! ERC-8004 validation credentials (library/ERC8004.md): a signed predicate about one trace,
//! bound to an agent subject id, and the hash an ERC-8004 validation request or response
//! carries.
//!
//! The request (`POST /erc8004/validation`) is a trace, a posted predicate and a subject.
//! [`predicate_only`] refuses a request that asks for raw numbers before anything else looks at
//! it; [`resolve`] checks the predicate against `/predicates`; [`parse_subject`] checks the
//! subject id of its form and gives its normal form. [`Credential::signed`] builds the
//! credential (`conduct.erc8004-validation/v1`), signs it like every signed object (Ed25519 over
//! RFC 8785 without `signature`, `key_id` inside) and hashes it:
//! `credential_hash = keccak256(JCS(credential))`, over the *signed* credential, `signature`
//! member included. Pure: no IO, no clock (the caller passes the instant).

mod subject;

pub use subject::{eip55, parse_subject, Form, Subject, MAX_SUBJECT_ID};

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::attestation::{attestation_object, resolve_predicate, Measured, Predicate};
use crate::canonical::{jcs, jcs_map, CanonicalError};
use crate::erc8257::keccak256;
use crate::signing::ServiceKey;
use crate::trace::{Disclosure, FieldError, PredicateRequest, TraceDoc};

/// The credential format name.
pub const CREDENTIAL_TYPE: &str = "conduct.erc8004-validation/v1";

/// What a credential is and is not; carried inside every credential (and so signed).
pub const CREDENTIAL_WHAT: &str = "A predicate about one trace: this service scored the trace \
whose RFC 8785 SHA-256 is trace_sha256 and signs only whether predicate.metric clears \
predicate.band (clears null: the quantity could not be computed, never false). It binds that \
result to subject as the caller named it: the service checked the id's syntax (and that a vow \
exists), not that the subject wrote, ran or controls the trace. Not a reputation and not a full \
numeric read. credential_hash = keccak256 of the RFC 8785 bytes of this whole object, signature \
included.";

/// Request members that ask for a full numeric read; each is refused as `predicate-only`.
pub const RAW_READ_MEMBERS: [&str; 8] = [
    "full",
    "numbers",
    "profile",
    "raw",
    "values",
    "quantities",
    "mode",
    "disclosure",
];

/// Body of `POST /erc8004/validation`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schemars",
    schemars(
        rename = "Erc8004Request",
        title = "POST /erc8004/validation body: a trace, a posted predicate, an agent subject",
        description = "Predicate-only: a request for raw numbers (no predicate, or a member such as \
        full, numbers, profile or disclosure) is refused with 422 predicate-only."
    )
)]
#[serde(deny_unknown_fields)]
pub struct ValidationRequest<'a> {
    /// The trace, exactly as `POST /profile` takes it (`context_key`, `turns`).
    #[serde(borrow)]
    #[cfg_attr(feature = "schemars", schemars(description = ""))]
    pub trace: TraceDoc<'a>,
    /// A posted metric and band (see `/predicates`).
    #[cfg_attr(
        feature = "schemars",
        schemars(description = "A posted metric and band (see \
        /predicates): only whether the metric clears the band is signed.")
    )]
    pub predicate: PredicateRequest,
    /// The agent the credential is about.
    pub subject: SubjectRequest,
    /// The meter to measure with, `meter/1` or `meter/2` (library/METER.md); absent: `meter/2`.
    #[serde(default)]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            schema_with = "crate::schema::meter_name",
            extend("default" = crate::meter::Meter::DEFAULT.as_str())
        )
    )]
    pub meter: Option<String>,
}

/// The subject of a request: a form name and an id of that form.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(inline, description = ""))]
#[serde(deny_unknown_fields)]
pub struct SubjectRequest {
    /// One of [`Form::name`].
    #[cfg_attr(feature = "schemars", schemars(description = "",
        extend("enum" = Form::ALL.map(Form::name))))]
    pub form: String,
    /// The id, in the form's grammar.
    #[cfg_attr(feature = "schemars", schemars(length(min = 1, max = MAX_SUBJECT_ID),
        description = subject_rules()))]
    pub id: String,
}

/// What a subject id of each form must be, for the schema of [`SubjectRequest::id`].
#[cfg(feature = "schemars")]
fn subject_rules() -> String {
    let rules: Vec<String> = Form::ALL
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.rule()))
        .collect();
    format!(
        "An id of the form; refused with 422 invalid-subject otherwise. {}",
        rules.join("; ")
    )
}

/// The top-level member names of a body and its `predicate` value, read without building the
/// trace.
struct Outline {
    keys: Vec<String>,
    predicate: Option<Value>,
}

impl<'de> Deserialize<'de> for Outline {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Outline;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Outline, A::Error> {
                let mut out = Outline {
                    keys: Vec::new(),
                    predicate: None,
                };
                while let Some(k) = map.next_key::<String>()? {
                    if k == "predicate" {
                        out.predicate = Some(map.next_value::<Value>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                    out.keys.push(k);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(V)
    }
}

fn raw_read(pointer: String, what: &str) -> FieldError {
    FieldError::at(
        pointer,
        format!(
            "{what}: a validation credential signs a predicate only (whether a posted metric \
             clears a posted band, see /predicates), never the numbers; a full read is POST \
             /profile"
        ),
    )
}

/// The member of `body` that asks for raw numbers, if any: a member of [`RAW_READ_MEMBERS`] at
/// the top or inside `predicate`, a `predicate` that is missing or null, or a `predicate` that
/// is one of those words. `None` also for a body that is not a JSON object (the full parse
/// names that).
pub fn predicate_only(body: &[u8]) -> Option<FieldError> {
    let outline: Outline = serde_json::from_slice(body).ok()?;
    if let Some(k) = outline
        .keys
        .iter()
        .find(|k| RAW_READ_MEMBERS.contains(&k.as_str()))
    {
        return Some(raw_read(
            format!("/{k}"),
            &format!("{k:?} asks for a full read"),
        ));
    }
    match &outline.predicate {
        None | Some(Value::Null) => Some(raw_read(
            "/predicate".into(),
            "missing: give {\"metric\", \"band\"}",
        )),
        Some(Value::Object(m)) => m
            .keys()
            .find(|k| RAW_READ_MEMBERS.contains(&k.as_str()))
            .map(|k| {
                raw_read(
                    format!("/predicate/{k}"),
                    &format!("{k:?} asks for a full read"),
                )
            }),
        Some(Value::String(s)) if RAW_READ_MEMBERS.contains(&s.as_str()) || s == "all" => Some(
            raw_read("/predicate".into(), &format!("{s:?} asks for a full read")),
        ),
        Some(_) => None,
    }
}

/// Check a predicate against the posted metrics and bands (the errors name `/predicate/...`).
pub fn resolve(p: &PredicateRequest) -> Result<Predicate, FieldError> {
    resolve_predicate(&Disclosure {
        predicate: p.clone(),
    })
    .map_err(|mut e| {
        if let Some(rest) = e.pointer.strip_prefix("/disclosure") {
            e.pointer = rest.to_owned();
        }
        e
    })
}

/// A credential to sign.
#[derive(Debug, Clone)]
pub struct Credential<'a> {
    /// The checked subject.
    pub subject: &'a Subject,
    /// The predicate asked for.
    pub predicate: Predicate,
    /// The measured trace.
    pub measured: &'a Measured,
    /// The trace's conditioning flag.
    pub context_key: &'a str,
    /// Turns in the trace.
    pub n_turns: usize,
    /// Issue instant, unix seconds.
    pub issued_at_unix: u64,
    /// The service's public URL (where `/pubkey` is).
    pub issuer: &'a str,
}

/// A signed credential, its RFC 8785 bytes and its hash.
#[derive(Debug, Clone)]
pub struct SignedCredential {
    /// The credential, `key_id` and `signature` included.
    pub object: Map<String, Value>,
    /// RFC 8785 bytes of [`SignedCredential::object`].
    pub bytes: Vec<u8>,
    /// `keccak256(bytes)`: the `credential_hash`.
    pub hash: [u8; 32],
}

impl Credential<'_> {
    /// The unsigned credential object. Its `predicate` member is the one `POST /profile`'s
    /// disclosure mode signs (`metric`, `band`, `clears`), computed by the same code.
    pub fn object(&self) -> Map<String, Value> {
        let att = attestation_object(
            self.measured,
            self.context_key,
            self.n_turns,
            Some(self.predicate),
            self.issued_at_unix,
        );
        let mut m = Map::new();
        m.insert("type".into(), json!(CREDENTIAL_TYPE));
        m.insert("what".into(), json!(CREDENTIAL_WHAT));
        m.insert(
            "subject".into(),
            json!({"form": self.subject.form.name(), "id": self.subject.id}),
        );
        for k in [
            "predicate",
            "trace_sha256",
            "context_key",
            "n_turns",
            "meter",
            "issued_at",
            "scope",
        ] {
            if let Some(v) = att.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        m.insert(
            "issuer".into(),
            json!({"url": self.issuer, "pubkey": format!("{}/pubkey", self.issuer)}),
        );
        m
    }

    /// Sign with `key` (sets `key_id` and `signature`) and hash the signed bytes.
    pub fn signed(&self, key: &ServiceKey) -> Result<SignedCredential, CanonicalError> {
        let mut object = self.object();
        key.sign_object(&mut object)?;
        let bytes = jcs_map(&object)?;
        let hash = keccak256(&bytes);
        Ok(SignedCredential {
            object,
            bytes,
            hash,
        })
    }
}

/// `keccak256(JCS(credential))` of a credential as received (for a verifier: parse the JSON,
/// hash it; the `signature` member stays in).
pub fn credential_hash(credential: &Value) -> Result<[u8; 32], CanonicalError> {
    Ok(keccak256(&jcs(credential)?))
}

/// A hash as `0x` and 64 lowercase hex digits (the `bytes32` form).
pub fn hash_hex(hash: &[u8; 32]) -> String {
    format!("0x{}", hex::encode(hash))
}

/// How an agent uses a credential with an ERC-8004 validation registry (the `how_to_use`
/// member of the answer): fixed text, the hash to pass, and, for an `erc8004-agentId`
/// subject, the `agentId` and registry it names.
pub fn how_to_use(public_url: &str, subject: &Subject, hash: &[u8; 32]) -> Value {
    let mut v = json!({
        "request_hash": hash_hex(hash),
        "validation_request": "validationRequest(address validatorAddress, uint256 agentId, \
            string requestURI, bytes32 requestHash): requestHash = credential_hash; requestURI = \
            where you publish this credential's JSON (any bytes that parse to the same object \
            hash the same, since the hash is over its RFC 8785 form); send it from the agent's \
            owner or operator.",
        "validation_response": "The validator fetches requestURI, checks the credential (below) \
            and answers validationResponse(bytes32 requestHash, uint8 response, string \
            responseURI, bytes32 responseHash, string tag); this service is not the validator \
            and sends nothing on chain.",
        "verify": format!("Remove signature, RFC 8785 the rest, verify the Ed25519 signature \
            with the key pinned from {public_url}/pubkey (key_id must match); then keccak256 of \
            the RFC 8785 bytes of the whole credential (signature included) must equal \
            credential_hash and requestHash."),
        "docs": format!("{public_url}/library/ERC8004.md"),
    });
    if let Some((chain, registry, agent)) = subject.agent() {
        v["agent"] = json!({"chain_id": chain, "identity_registry": registry, "agent_id": agent});
    }
    v
}

/// The answer of `POST /erc8004/validation` as RFC 8785 bytes: `{credential, credential_hash,
/// how_to_use, scope}`.
pub fn answer_bytes(
    public_url: &str,
    subject: &Subject,
    signed: &SignedCredential,
) -> Result<Vec<u8>, CanonicalError> {
    jcs(&json!({
        "credential": Value::Object(signed.object.clone()),
        "credential_hash": hash_hex(&signed.hash),
        "how_to_use": how_to_use(public_url, subject, &signed.hash),
        "scope": crate::scope::scope_value(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attestation::measure;
    use crate::signing::{verify_object, PinnedKey};
    use crate::trace::parse_json;

    fn key() -> ServiceKey {
        ServiceKey::from_seed(&[9; 32], "conduct.test/log")
    }

    fn body(extra: &str) -> String {
        let turns: Vec<String> = (0..12)
            .map(|i| {
                format!(
                    r#"{{"Y":"y","M":"m{}","D":"clean","context":{{"monitored":{}}}}}"#,
                    i % 3,
                    i % 2
                )
            })
            .collect();
        format!(
            r#"{{"trace":{{"context_key":"monitored","turns":[{}]}}{extra}}}"#,
            turns.join(",")
        )
    }

    const GOOD: &str = r#","predicate":{"metric":"i_c_m","band":"under_0.05"},"subject":{"form":"wallet","id":"0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"}"#;

    #[test]
    fn raw_number_requests_are_named() {
        assert_eq!(predicate_only(body(GOOD).as_bytes()), None);
        let cases = [
            (format!("{GOOD},\"full\":true"), "/full"),
            (format!("{GOOD},\"numbers\":1"), "/numbers"),
            (
                format!("{GOOD},\"disclosure\":{{\"mode\":\"full\"}}"),
                "/disclosure",
            ),
            (
                r#","subject":{"form":"vow","id":"0123456789abcdef"}"#.to_owned(),
                "/predicate",
            ),
            (
                r#","predicate":null,"subject":{"form":"vow","id":"0123456789abcdef"}"#.to_owned(),
                "/predicate",
            ),
            (
                r#","predicate":"full","subject":{"form":"vow","id":"0123456789abcdef"}"#
                    .to_owned(),
                "/predicate",
            ),
            (
                r#","predicate":{"metric":"i_c_m","band":"under_0.05","full":true}"#.to_owned(),
                "/predicate/full",
            ),
        ];
        for (extra, pointer) in cases {
            let e = predicate_only(body(&extra).as_bytes()).expect(pointer);
            assert_eq!(e.pointer, pointer);
            assert!(e.detail.contains("predicate only"), "{}", e.detail);
        }
        // Not an object, or not JSON: left to the full parse.
        assert_eq!(predicate_only(b"[1]"), None);
        assert_eq!(predicate_only(b"{"), None);
    }

    #[test]
    fn predicate_errors_name_the_request_members() {
        let e = resolve(&PredicateRequest {
            metric: "everything".into(),
            band: "under_0.05".into(),
        })
        .unwrap_err();
        assert_eq!(e.pointer, "/predicate/metric");
        let e = resolve(&PredicateRequest {
            metric: "i_c_d".into(),
            band: "under_1".into(),
        })
        .unwrap_err();
        assert_eq!(e.pointer, "/predicate/band");
    }

    #[test]
    fn a_credential_signs_verifies_and_hashes_its_signed_bytes() {
        let text = body(GOOD);
        let req: ValidationRequest = parse_json(text.as_bytes()).unwrap();
        let predicate = resolve(&req.predicate).unwrap();
        let subject = parse_subject(&req.subject.form, &req.subject.id).unwrap();
        let measured = measure(req.trace.trace(), crate::meter::Meter::V1).unwrap();
        let cred = Credential {
            subject: &subject,
            predicate,
            measured: &measured,
            context_key: &req.trace.context_key,
            n_turns: req.trace.turns.len(),
            issued_at_unix: 1_800_000_000,
            issuer: "https://conduct.example",
        };
        let k = key();
        let signed = cred.signed(&k).unwrap();
        let doc = Value::Object(signed.object.clone());
        verify_object(&doc, &PinnedKey::parse(&k.vkey()).unwrap()).unwrap();
        assert_eq!(credential_hash(&doc).unwrap(), signed.hash);
        assert_eq!(jcs(&doc).unwrap(), signed.bytes);
        // The same predicate object /profile's disclosure mode signs; no number of the profile.
        let att = attestation_object(&measured, "monitored", 12, Some(predicate), 1_800_000_000);
        assert_eq!(doc["predicate"], att["predicate"]);
        for absent in [
            "\"profile\"",
            "\"adjusted\"",
            "\"bits\"",
            "\"table\"",
            "\"p\"",
        ] {
            assert!(
                !String::from_utf8_lossy(&signed.bytes).contains(absent),
                "{absent} in the credential"
            );
        }
        assert_eq!(doc["type"], CREDENTIAL_TYPE);
        assert_eq!(
            doc["subject"],
            json!({"form": "wallet", "id": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"})
        );
        assert_eq!(doc["issued_at"], "2027-01-15T08:00:00Z");
        assert!(crate::scope::is_intact(&signed.object));
        // The hash covers the signature: a changed signature changes it.
        let mut other = doc.clone();
        other["signature"] = json!("x");
        assert_ne!(credential_hash(&other).unwrap(), signed.hash);
        // The answer is canonical and names the hash.
        let ans: Value =
            serde_json::from_slice(&answer_bytes("https://c.example", &subject, &signed).unwrap())
                .unwrap();
        assert_eq!(ans["credential"], doc);
        assert_eq!(ans["credential_hash"], hash_hex(&signed.hash));
        assert_eq!(ans["how_to_use"]["request_hash"], hash_hex(&signed.hash));
        assert!(ans["how_to_use"].get("agent").is_none());
        // Deterministic: the same inputs, the same bytes.
        assert_eq!(cred.signed(&k).unwrap().bytes, signed.bytes);
    }

    #[test]
    fn an_agent_subject_puts_its_agent_id_in_how_to_use() {
        let s = parse_subject(
            "erc8004-agentId",
            "eip155:31337:0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed#7",
        )
        .unwrap();
        let h = how_to_use("https://c.example", &s, &[1; 32]);
        assert_eq!(h["agent"]["agent_id"], "7");
        assert_eq!(h["agent"]["chain_id"], "31337");
        assert_eq!(h["docs"], "https://c.example/library/ERC8004.md");
    }

    #[test]
    fn unknown_members_are_refused_by_the_typed_parse() {
        let text = body(&format!("{GOOD},\"extra\":1"));
        let e = parse_json::<ValidationRequest>(text.as_bytes()).unwrap_err();
        assert!(e.detail.contains("unknown field"), "{}", e.detail);
    }
}
