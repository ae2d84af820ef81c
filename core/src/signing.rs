//! Ed25519 signing and offline verification of signed JSON objects (library/ATTESTATION.md).
//!
//! A signed object carries `"key_id"` inside the signed body and `"signature"`: base64 of the
//! Ed25519 signature over the JCS bytes of the object without `"signature"`. The key id is the
//! C2SP signed-note key id `SHA-256(name ‖ 0x0A ‖ 0x01 ‖ pubkey)[:4]` as 8 hex characters.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::canonical::{jcs_map, CanonicalError};

/// The member holding the signature; the only unsigned member of a signed object.
pub const SIGNATURE_FIELD: &str = "signature";
/// The member holding the signer's key id.
pub const KEY_ID_FIELD: &str = "key_id";
/// The signature member of a document whose format admits no unknown members but `x-`
/// extensions (the OpenAPI document): it plays the part of [`SIGNATURE_FIELD`].
pub const EXTENSION_SIGNATURE_FIELD: &str = "x-signature";
/// The key id member of such a document: it plays the part of [`KEY_ID_FIELD`].
pub const EXTENSION_KEY_ID_FIELD: &str = "x-key-id";

/// C2SP signed-note key id of an Ed25519 key under `name`.
pub fn key_id(name: &str, public: &VerifyingKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0x0a, 0x01]);
    h.update(public.as_bytes());
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

/// The service's signing key and the name (log origin) it signs under.
#[derive(Clone)]
pub struct ServiceKey {
    signing: SigningKey,
    name: String,
    key_id: [u8; 4],
}

impl std::fmt::Debug for ServiceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("ServiceKey")
            .field("name", &self.name)
            .field("key_id", &hex::encode(self.key_id))
            .finish()
    }
}

impl ServiceKey {
    /// A key from its 32-byte seed, named `name` (the log origin, e.g. `localhost:8402/log`).
    pub fn from_seed(seed: &[u8; 32], name: &str) -> Self {
        let signing = SigningKey::from_bytes(seed);
        let key_id = key_id(name, &signing.verifying_key());
        ServiceKey {
            signing,
            name: name.to_owned(),
            key_id,
        }
    }

    /// The public half.
    pub fn public(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// The key name (log origin).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Key id as 8 lowercase hex characters.
    pub fn key_id_hex(&self) -> String {
        hex::encode(self.key_id)
    }

    /// Raw key id bytes.
    pub fn key_id(&self) -> [u8; 4] {
        self.key_id
    }

    /// Base64 of the 32-byte public key.
    pub fn public_b64(&self) -> String {
        B64.encode(self.public().as_bytes())
    }

    /// The C2SP verifier key: `name+hex(id)+base64(0x01 ‖ pubkey)`.
    pub fn vkey(&self) -> String {
        let mut typed = Vec::with_capacity(33);
        typed.push(0x01);
        typed.extend_from_slice(self.public().as_bytes());
        format!("{}+{}+{}", self.name, self.key_id_hex(), B64.encode(typed))
    }

    /// Sign raw bytes.
    pub fn sign_bytes(&self, msg: &[u8]) -> [u8; 64] {
        self.signing.sign(msg).to_bytes()
    }

    /// Sign a JSON object in place: sets `key_id`, then `signature` over the JCS bytes of the
    /// object without `signature`.
    pub fn sign_object(&self, obj: &mut Map<String, Value>) -> Result<(), CanonicalError> {
        self.sign_object_as(obj, SIGNATURE_FIELD, KEY_ID_FIELD)
    }

    /// [`ServiceKey::sign_object`] under the `x-` members ([`EXTENSION_SIGNATURE_FIELD`],
    /// [`EXTENSION_KEY_ID_FIELD`]), for a format that admits no other unknown members.
    pub fn sign_object_extension(
        &self,
        obj: &mut Map<String, Value>,
    ) -> Result<(), CanonicalError> {
        self.sign_object_as(obj, EXTENSION_SIGNATURE_FIELD, EXTENSION_KEY_ID_FIELD)
    }

    /// The length of `obj`'s JCS bytes once [`ServiceKey::sign_object`] has signed it,
    /// without signing (a signature's encoding has one length), so a caller can bound a
    /// record's size at the cost of a serialization.
    pub fn signed_len(&self, mut obj: Map<String, Value>) -> Result<usize, CanonicalError> {
        obj.insert(KEY_ID_FIELD.into(), Value::String(self.key_id_hex()));
        obj.insert(
            SIGNATURE_FIELD.into(),
            Value::String(B64.encode([0u8; ed25519_dalek::SIGNATURE_LENGTH])),
        );
        Ok(jcs_map(&obj)?.len())
    }

    fn sign_object_as(
        &self,
        obj: &mut Map<String, Value>,
        signature: &str,
        key_id: &str,
    ) -> Result<(), CanonicalError> {
        obj.remove(signature);
        obj.insert(key_id.into(), Value::String(self.key_id_hex()));
        let bytes = jcs_map(obj)?;
        let sig = self.sign_bytes(&bytes);
        obj.insert(signature.into(), Value::String(B64.encode(sig)));
        Ok(())
    }
}

/// Why a signed object did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The document is not a JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// No `signature` member, or not a string.
    #[error("no signature member")]
    NoSignature,
    /// The signature is not base64 of 64 bytes.
    #[error("signature is not base64 of 64 bytes")]
    BadSignatureEncoding,
    /// `key_id` is missing or names another key.
    #[error("key_id {found:?} does not match the pinned key ({expected})")]
    KeyIdMismatch {
        /// What the document says.
        found: Option<String>,
        /// The id of the pinned key.
        expected: String,
    },
    /// The scope statement is missing or altered where the type requires it.
    #[error("scope statement missing or altered")]
    Scope,
    /// The object could not be canonicalized.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    /// The Ed25519 signature does not verify.
    #[error("signature does not verify")]
    BadSignature,
}

/// A public key pinned by a verifier, with the name its key id was derived under.
#[derive(Debug, Clone)]
pub struct PinnedKey {
    /// The Ed25519 public key.
    pub key: VerifyingKey,
    /// Expected key id (8 hex chars), when known.
    pub key_id: Option<String>,
}

impl PinnedKey {
    /// Parse a pinned key: base64 of 32 bytes, or a C2SP vkey `name+id+base64(0x01‖pub)`.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let s = s.trim();
        // A bare base64 key may itself contain `+`: it is recognised first, by decoding to 32
        // bytes, so it is never mistaken for a vkey's `name+id+key`.
        if let Ok(raw) = B64.decode(s) {
            if raw.len() == 32 {
                return Ok(PinnedKey {
                    key: vk_from(&raw)?,
                    key_id: None,
                });
            }
        }
        let parts: Vec<&str> = s.splitn(3, '+').collect();
        if parts.len() == 3
            && parts[1].len() == 8
            && parts[1].bytes().all(|b| b.is_ascii_hexdigit())
        {
            let raw = B64
                .decode(parts[2])
                .map_err(|e| KeyError(format!("vkey key is not base64: {e}")))?;
            if raw.len() != 33 || raw[0] != 0x01 {
                return Err(KeyError("vkey is not an Ed25519 (type 0x01) key".into()));
            }
            let key = vk_from(&raw[1..])?;
            let id = hex::encode(key_id(parts[0], &key));
            if id != parts[1] {
                return Err(KeyError(format!(
                    "vkey id {} does not match its key ({id})",
                    parts[1]
                )));
            }
            return Ok(PinnedKey {
                key,
                key_id: Some(id),
            });
        }
        let raw = B64
            .decode(s)
            .map_err(|e| KeyError(format!("public key is not base64: {e}")))?;
        Ok(PinnedKey {
            key: vk_from(&raw)?,
            key_id: None,
        })
    }
}

fn vk_from(raw: &[u8]) -> Result<VerifyingKey, KeyError> {
    let arr: [u8; 32] = raw
        .try_into()
        .map_err(|_| KeyError(format!("public key must be 32 bytes (got {})", raw.len())))?;
    VerifyingKey::from_bytes(&arr).map_err(|e| KeyError(format!("invalid Ed25519 public key: {e}")))
}

/// Why a pinned key could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

/// Verify a signed JSON object against a pinned key.
///
/// Checks the signature over the JCS bytes of everything but `signature`. When the pinned key
/// carries a key id, the object's `key_id` must equal it. Objects whose `type` requires a scope
/// statement must carry the exact statement (see [`crate::scope`]).
pub fn verify_object(doc: &Value, pinned: &PinnedKey) -> Result<(), VerifyError> {
    verify_object_as(doc, pinned, SIGNATURE_FIELD, KEY_ID_FIELD)
}

/// Verify a signed JSON file of the rendered tree: [`verify_object`], or, for a document
/// with no `signature` member, the same check on its [`EXTENSION_SIGNATURE_FIELD`] and
/// [`EXTENSION_KEY_ID_FIELD`] (the OpenAPI document, whose format forbids other members).
pub fn verify_snapshot(doc: &Value, pinned: &PinnedKey) -> Result<(), VerifyError> {
    let extension =
        doc.get(SIGNATURE_FIELD).is_none() && doc.get(EXTENSION_SIGNATURE_FIELD).is_some();
    if extension {
        verify_object_as(
            doc,
            pinned,
            EXTENSION_SIGNATURE_FIELD,
            EXTENSION_KEY_ID_FIELD,
        )
    } else {
        verify_object(doc, pinned)
    }
}

fn verify_object_as(
    doc: &Value,
    pinned: &PinnedKey,
    signature: &str,
    key_id: &str,
) -> Result<(), VerifyError> {
    let obj = doc.as_object().ok_or(VerifyError::NotAnObject)?;
    let sig_b64 = obj
        .get(signature)
        .and_then(Value::as_str)
        .ok_or(VerifyError::NoSignature)?;
    let sig_raw = B64
        .decode(sig_b64)
        .map_err(|_| VerifyError::BadSignatureEncoding)?;
    let sig_arr: [u8; 64] = sig_raw
        .as_slice()
        .try_into()
        .map_err(|_| VerifyError::BadSignatureEncoding)?;
    if let Some(expected) = &pinned.key_id {
        let found = obj.get(key_id).and_then(Value::as_str);
        if found != Some(expected.as_str()) {
            return Err(VerifyError::KeyIdMismatch {
                found: found.map(str::to_owned),
                expected: expected.clone(),
            });
        }
    }
    if crate::scope::required_for(obj) && !crate::scope::is_intact(obj) {
        return Err(VerifyError::Scope);
    }
    let mut body = obj.clone();
    body.remove(signature);
    let bytes = jcs_map(&body)?;
    pinned
        .key
        .verify_strict(&bytes, &Signature::from_bytes(&sig_arr))
        .map_err(|_| VerifyError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base64_key_with_plus_signs_is_not_taken_for_a_vkey() {
        // 32 bytes whose base64 holds `+` signs eight characters apart.
        let mut found = None;
        for seed in 0u8..=255 {
            let k = ServiceKey::from_seed(&[seed; 32], "example.org/log");
            let b64 = k.public_b64();
            let parts: Vec<&str> = b64.splitn(3, '+').collect();
            if parts.len() == 3 && parts[1].len() == 8 {
                found = Some(k);
                break;
            }
        }
        let k = found.expect("a key whose base64 looks like name+8+rest");
        let pinned = PinnedKey::parse(&k.public_b64()).expect("parses as base64");
        assert_eq!(pinned.key, k.public());
        assert!(PinnedKey::parse(&k.vkey()).is_ok());
    }

    fn test_key() -> ServiceKey {
        let seed: [u8; 32] = Sha256::digest(b"test seed - do not use").into();
        ServiceKey::from_seed(&seed, "example.org/ledger")
    }

    proptest::proptest! {
        /// The length `signed_len` says is the length of the signed bytes, whatever the
        /// members and the key.
        #[test]
        fn signed_len_is_the_signed_objects_length(
            seed in proptest::array::uniform32(proptest::num::u8::ANY),
            members in proptest::collection::btree_map("[a-z_]{1,12}", "\\PC{0,40}", 0..8),
            n in proptest::num::u64::ANY,
        ) {
            let key = ServiceKey::from_seed(&seed, "example.org/log");
            let mut obj: Map<String, Value> =
                members.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            obj.insert("n".into(), Value::from(n));
            let said = key.signed_len(obj.clone()).unwrap();
            key.sign_object(&mut obj).unwrap();
            proptest::prop_assert_eq!(said, jcs_map(&obj).unwrap().len());
        }
    }

    #[test]
    fn c2sp_worked_example_vkey() {
        // shared/reference/tlog.md: test key from sha256("test seed - do not use").
        assert_eq!(
            test_key().vkey(),
            "example.org/ledger+1efaf554+AcQVHg5Dncbnuu8a9U4chqnDnmBOKhIA5t85zxNudWbN"
        );
    }

    #[test]
    fn sign_then_verify_and_tamper() {
        let k = test_key();
        let mut obj = Map::new();
        obj.insert("type".into(), Value::String("test/v1".into()));
        obj.insert("x".into(), serde_json::json!(0.5));
        k.sign_object(&mut obj).unwrap();
        let pinned = PinnedKey::parse(&k.vkey()).unwrap();
        let doc = Value::Object(obj.clone());
        assert!(verify_object(&doc, &pinned).is_ok());
        let by_b64 = PinnedKey::parse(&k.public_b64()).unwrap();
        assert!(verify_object(&doc, &by_b64).is_ok());
        let mut bad = obj.clone();
        bad.insert("x".into(), serde_json::json!(0.25));
        assert_eq!(
            verify_object(&Value::Object(bad), &pinned),
            Err(VerifyError::BadSignature)
        );
    }

    #[test]
    fn extension_members_sign_and_verify_as_snapshots_only() {
        let k = test_key();
        let mut obj = Map::new();
        obj.insert("openapi".into(), Value::String("3.1.0".into()));
        k.sign_object_extension(&mut obj).unwrap();
        assert_eq!(obj[EXTENSION_KEY_ID_FIELD], k.key_id_hex());
        assert!(obj.get(SIGNATURE_FIELD).is_none() && obj.get(KEY_ID_FIELD).is_none());
        let pinned = PinnedKey::parse(&k.vkey()).unwrap();
        let doc = Value::Object(obj.clone());
        assert!(verify_snapshot(&doc, &pinned).is_ok());
        // verify_object still asks for `signature`.
        assert_eq!(verify_object(&doc, &pinned), Err(VerifyError::NoSignature));
        let mut bad = obj.clone();
        bad.insert("openapi".into(), Value::String("3.0.0".into()));
        assert_eq!(
            verify_snapshot(&Value::Object(bad), &pinned),
            Err(VerifyError::BadSignature)
        );
        // A plain snapshot still verifies through verify_snapshot.
        let mut plain = Map::new();
        plain.insert("x".into(), Value::from(1));
        k.sign_object(&mut plain).unwrap();
        assert!(verify_snapshot(&Value::Object(plain), &pinned).is_ok());
    }
}
