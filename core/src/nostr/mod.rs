//! Nostr identity (library/NOSTR.md: `/hive/profile`, `/card?key=npub1…`): the
//! pure parts.
//!
//! - **Events** (NIP-01): the id is the SHA-256 of the UTF-8 compact JSON
//!   `[0, <pubkey hex>, <created_at>, <kind>, <tags>, <content>]` (`serde_json::to_string`
//!   writes exactly NIP-01's escaping); the signature is BIP-340 Schnorr over the 32-byte id
//!   itself (never hashed again). [`Event::verify`] checks both.
//! - **BIP-340**: the service signs with k256's `schnorr` ([`sign_prehash`], `wallet` feature:
//!   `sign_prehash_with_aux_rand` over the 32 bytes, never `Signer::sign`, which would hash
//!   them again); [`verify_prehash`] verifies with k256 under `wallet` and with the plain
//!   [`bip340`] arithmetic without it (what `conduct-verify` builds).
//! - **NIP-19 `npub`**: Bech32 (BIP-173) of the 32-byte x-only public key under `npub`
//!   ([`npub_encode`], [`npub_decode`]).
//! - **The binding text** ([`bind_message`]): what a vow's wallet (EIP-191 `personal_sign`)
//!   and the npub's key (BIP-340 over `sha256(UTF-8 text)`, [`text_digest`]) both sign to bind
//!   the npub to the vow; [`record`] is the log record, [`verify`] its offline checks.

pub mod bech32;
pub mod bip340;
pub mod record;
pub mod verify;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Kind 0: user metadata (NIP-01).
pub const KIND_METADATA: u64 = 0;
/// The human-readable part of an npub (NIP-19).
pub const NPUB_HRP: &str = "npub";
/// The `Action:` line of the binding text.
pub const BIND_ACTION: &str = "bind_npub";
pub use crate::limits::NPUB_LEN;

/// Why an npub, a key, a signature or an event is refused (the text says what, as the
/// answers and verify-site show it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NostrError {
    /// Not Bech32 at all.
    #[error("not Bech32: {0}")]
    NotBech32(#[from] bech32::Bech32Error),
    /// Bech32 with another prefix (an nsec, say).
    #[error("its prefix is {0:?}, not \"npub\"")]
    NotNpub(String),
    /// The 5-bit data does not regroup into bytes.
    #[error("its data is not whole bytes")]
    NotWholeBytes,
    /// The npub does not hold 32 bytes.
    #[error("it holds {0} bytes, not 32")]
    NpubLength(usize),
    /// A signature that is not 128 hex digits.
    #[error("a BIP-340 signature is 128 hex digits (64 bytes), not {0} characters")]
    SignatureLength(usize),
    /// Not hexadecimal.
    #[error("not hexadecimal")]
    NotHex,
    /// Not 64 bytes.
    #[error("not 64 bytes")]
    Not64Bytes,
    /// Not 32 bytes.
    #[error("not 32 bytes")]
    Not32Bytes,
    /// A text's signature does not verify.
    #[error("the BIP-340 signature does not verify under this npub over sha256 of the text")]
    TextSignature,
    /// Not a secp256k1 secret key.
    #[error("not a secp256k1 secret key")]
    SecretKey,
    /// Signing failed.
    #[error("BIP-340 signing failed")]
    Signing,
    /// An event's hex members are not lowercase hex.
    #[error("id, pubkey and sig must be lowercase hex")]
    EventHex,
    /// An event's pubkey is not a key.
    #[error("pubkey: {0}")]
    EventPubkey(Box<NostrError>),
    /// An event's id is not its hash.
    #[error("id is not the NIP-01 hash of the event")]
    EventId,
    /// An event's sig is not a signature.
    #[error("sig: {0}")]
    EventSig(Box<NostrError>),
    /// An event's signature does not verify.
    #[error("sig is not a BIP-340 signature of the id by pubkey")]
    EventSignature,
}

/// Encode a 32-byte x-only public key as an npub (lowercase).
pub fn npub_encode(pubkey: &[u8; 32]) -> String {
    // 8-bit to 5-bit with padding never fails.
    let data = bech32::convert_bits(pubkey, 8, 5, true).unwrap_or_default();
    bech32::encode(NPUB_HRP, &data)
}

/// Decode an npub to its 32-byte x-only public key, or say why it is not one. Upper-case
/// input is accepted (BIP-173); [`npub_encode`] of the result is the canonical lowercase form.
/// The key is not checked to be on the curve here ([`is_curve_point`] does).
pub fn npub_decode(s: &str) -> Result<[u8; 32], NostrError> {
    let (hrp, data) = bech32::decode(s)?;
    if hrp != NPUB_HRP {
        return Err(NostrError::NotNpub(hrp));
    }
    let bytes = bech32::convert_bits(&data, 5, 8, false).ok_or(NostrError::NotWholeBytes)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| NostrError::NpubLength(bytes.len()))
}

/// Whether `pubkey` is the x coordinate of a point of secp256k1 (an npub that can sign).
pub fn is_curve_point(pubkey: &[u8; 32]) -> bool {
    bip340::lifts(pubkey)
}

/// SHA-256 of a text's UTF-8 bytes: what the npub's key signs (BIP-340) for a signed text.
pub fn text_digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Parse 64 bytes of lowercase or uppercase hex (a BIP-340 signature, no `0x`).
pub fn parse_sig(hex_sig: &str) -> Result<[u8; 64], NostrError> {
    if hex_sig.len() != 128 {
        return Err(NostrError::SignatureLength(hex_sig.chars().count()));
    }
    let bytes = hex::decode(hex_sig).map_err(|_| NostrError::NotHex)?;
    <[u8; 64]>::try_from(bytes.as_slice()).map_err(|_| NostrError::Not64Bytes)
}

/// Parse a 32-byte hex public key (no `0x`).
pub fn parse_pubkey(hex_pk: &str) -> Result<[u8; 32], NostrError> {
    let bytes = hex::decode(hex_pk).map_err(|_| NostrError::NotHex)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| NostrError::Not32Bytes)
}

/// Verify a BIP-340 signature of the 32-byte `msg` (an event id, or [`text_digest`]) under the
/// x-only `pubkey`: k256 with the `wallet` feature, the plain [`bip340`] arithmetic without.
pub fn verify_prehash(pubkey: &[u8; 32], msg: &[u8; 32], sig: &[u8; 64]) -> bool {
    #[cfg(feature = "wallet")]
    {
        let Ok(vk) = k256::schnorr::VerifyingKey::from_bytes(pubkey) else {
            return false;
        };
        let Ok(sig) = k256::schnorr::Signature::try_from(&sig[..]) else {
            return false;
        };
        vk.verify_raw(msg, &sig).is_ok()
    }
    #[cfg(not(feature = "wallet"))]
    {
        bip340::verify(pubkey, msg, sig)
    }
}

/// Verify `sig_hex` (128 hex digits) as the BIP-340 signature by `pubkey` over
/// `sha256(UTF-8 text)`: how an npub signs a text here (the binding).
pub fn verify_text(pubkey: &[u8; 32], text: &str, sig_hex: &str) -> Result<(), NostrError> {
    let sig = parse_sig(sig_hex)?;
    if verify_prehash(pubkey, &text_digest(text), &sig) {
        Ok(())
    } else {
        Err(NostrError::TextSignature)
    }
}

/// The x-only public key of a secret key (32 bytes), or why it is not one.
#[cfg(feature = "wallet")]
pub fn public_key(secret: &[u8; 32]) -> Result<[u8; 32], NostrError> {
    let sk = k256::schnorr::SigningKey::from_bytes(secret).map_err(|_| NostrError::SecretKey)?;
    Ok(sk.verifying_key().to_bytes().into())
}

/// BIP-340 signature of the 32 bytes `msg` as they are (no hashing: an event id, or a
/// [`text_digest`]) by `secret`, with the auxiliary randomness `aux`.
#[cfg(feature = "wallet")]
pub fn sign_prehash(
    secret: &[u8; 32],
    msg: &[u8; 32],
    aux: &[u8; 32],
) -> Result<[u8; 64], NostrError> {
    let sk = k256::schnorr::SigningKey::from_bytes(secret).map_err(|_| NostrError::SecretKey)?;
    let sig = sk
        .sign_prehash_with_aux_rand(msg, aux)
        .map_err(|_| NostrError::Signing)?;
    Ok(sig.to_bytes())
}

/// A Nostr event (NIP-01), members in NIP-01's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Lowercase hex of the event id ([`event_id`]).
    pub id: String,
    /// Lowercase hex of the 32-byte x-only public key.
    pub pubkey: String,
    /// Unix seconds.
    pub created_at: u64,
    /// Event kind (0: metadata).
    pub kind: u64,
    /// Tags.
    pub tags: Vec<Vec<String>>,
    /// Content (for kind 0, stringified JSON metadata).
    pub content: String,
    /// Lowercase hex of the 64-byte BIP-340 signature over the id.
    pub sig: String,
}

/// The NIP-01 id of an event: SHA-256 of the compact JSON
/// `[0, pubkey, created_at, kind, tags, content]`.
pub fn event_id(
    pubkey_hex: &str,
    created_at: u64,
    kind: u64,
    tags: &[Vec<String>],
    content: &str,
) -> [u8; 32] {
    let ser = json!([0, pubkey_hex, created_at, kind, tags, content]).to_string();
    Sha256::digest(ser.as_bytes()).into()
}

impl Event {
    /// The id its fields hash to.
    pub fn computed_id(&self) -> [u8; 32] {
        event_id(
            &self.pubkey,
            self.created_at,
            self.kind,
            &self.tags,
            &self.content,
        )
    }

    /// Check the event: lowercase hex fields, `id` is the hash of the fields, and `sig` is the
    /// BIP-340 signature of the id by `pubkey`.
    pub fn verify(&self) -> Result<(), NostrError> {
        let lower = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !(lower(&self.id) && lower(&self.pubkey) && lower(&self.sig)) {
            return Err(NostrError::EventHex);
        }
        let pk = parse_pubkey(&self.pubkey).map_err(|e| NostrError::EventPubkey(Box::new(e)))?;
        let id = self.computed_id();
        if hex::encode(id) != self.id {
            return Err(NostrError::EventId);
        }
        let sig = parse_sig(&self.sig).map_err(|e| NostrError::EventSig(Box::new(e)))?;
        if !verify_prehash(&pk, &id, &sig) {
            return Err(NostrError::EventSignature);
        }
        Ok(())
    }

    /// The event as a JSON value (`serde_json::to_string` of the event itself keeps NIP-01's
    /// member order; a `Value` sorts them).
    pub fn to_value(&self) -> Value {
        // Serializing a struct of strings, integers and arrays of strings cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Build and sign an event by `secret` (aux randomness `aux`).
    #[cfg(feature = "wallet")]
    pub fn sign(
        secret: &[u8; 32],
        created_at: u64,
        kind: u64,
        tags: Vec<Vec<String>>,
        content: String,
        aux: &[u8; 32],
    ) -> Result<Event, NostrError> {
        let pubkey = hex::encode(public_key(secret)?);
        let id = event_id(&pubkey, created_at, kind, &tags, &content);
        let sig = sign_prehash(secret, &id, aux)?;
        Ok(Event {
            id: hex::encode(id),
            pubkey,
            created_at,
            kind,
            tags,
            content,
            sig: hex::encode(sig),
        })
    }
}

/// The content of a kind-0 event: the stringified `{about, name, picture, scope}` (members
/// in sorted order, so the same profile always gives the same bytes). The scope statement
/// travels inside the content, the one member of the event a NIP-01 client keeps and its
/// signature covers (kind-0 metadata takes extra members; library/NOSTR.md).
pub fn profile_content(name: &str, about: &str, picture: &str) -> String {
    json!({"name": name, "about": about, "picture": picture, "scope": crate::scope::scope_value()})
        .to_string()
}

/// The exact text that binds `npub` to a vow (`GET /nostr/bind/message`). Both keys sign
/// this same text: the vow's wallet with EIP-191 `personal_sign` (over the text), the npub's
/// key with BIP-340 over `sha256(UTF-8 text)` ([`text_digest`]; the 32-byte digest is the
/// BIP-340 message, not hashed again). It names the origin (the service's public URL), the
/// action `bind_npub`, the vow, the npub and the UTC date `YYYY-MM-DD` of the binding (a
/// signature pair is good on that day only, and accepted once).
pub fn bind_message(origin: &str, vow_id: &str, npub: &str, date: &str) -> String {
    crate::owner::OwnerText {
        kind: crate::owner::Kind::BindNpub,
        effect: "Signing puts this Nostr key (npub) on the public record as the vow's. It moves \
                 no funds and no measured number. The vow's wallet signs this text (EIP-191) and \
                 so does the npub's key (BIP-340 over the SHA-256 of this text).",
        origin,
        params: vec![("Vow", vow_id.to_owned()), ("Npub", npub.to_owned())],
        date,
        after: Vec::new(),
        block: None,
    }
    .render()
}
