//! The binding's log record, `conduct.npub-binding/v1`: a signed vow's wallet and an npub's
//! key both signed [`super::bind_message`] for the vow and the npub on the record's UTC date,
//! so from then on the npub names the vow (`/card?key=npub1…`, `/who?handle=npub1…`). The
//! latest binding of an npub wins: binding it again (to the same vow or another) moves it.
//!
//! Like every record of the log it is an object signed by the service (Ed25519 over RFC 8785,
//! `key_id` inside), its leaf bytes the RFC 8785 bytes of the signed object. Members:
//!
//! `type`, `origin` (the service's public URL, named by the text), `vow_id`, `wallet` (EIP-55),
//! `npub`, `pubkey` (the npub's 32 bytes, lowercase hex), `wallet_signature` (EIP-191, `0x`
//! and 130 lowercase hex digits), `nostr_signature` (BIP-340, 128 lowercase hex digits, over
//! `sha256(UTF-8 text)`), `signed` (how the text is rebuilt and signed, fixed words), `date`
//! (`YYYY-MM-DD`, the text's), `at` (RFC 3339 UTC), `log_index`, `scope`, `key_id`,
//! `signature`.

use serde_json::{json, Map, Value};

use crate::canonical::{jcs_map, CanonicalError};
use crate::scope::scope_value;
use crate::signing::ServiceKey;
use crate::time::{parse_rfc3339, rfc3339};

/// Type of a binding record.
pub const BINDING_TYPE: &str = "conduct.npub-binding/v1";

/// What `signed` says in every binding record.
pub const SIGNED: &str = "The text is conduct_core::nostr::bind_message(origin, vow_id, npub, \
date) (library/NOSTR.md). wallet_signature: EIP-191 personal_sign of the text by wallet. \
nostr_signature: BIP-340 by pubkey over the 32 bytes sha256(UTF-8 text).";

/// A binding of an npub to a signed vow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The service's public URL the text names.
    pub origin: String,
    /// The signed (not sandbox) vow.
    pub vow_id: String,
    /// The vow's wallet, EIP-55.
    pub wallet: String,
    /// The npub (lowercase, canonical).
    pub npub: String,
    /// Its 32-byte x-only key, lowercase hex.
    pub pubkey: String,
    /// EIP-191 signature of the text by `wallet` (`0x`, lowercase hex).
    pub wallet_signature: String,
    /// BIP-340 signature by `pubkey` over `sha256(text)` (lowercase hex).
    pub nostr_signature: String,
    /// Instant recorded, unix seconds (its UTC date is the text's).
    pub at: u64,
}

impl Binding {
    /// The UTC date of the binding (`YYYY-MM-DD`), the one its text names.
    pub fn date(&self) -> String {
        crate::munus::utc_date(self.at)
    }

    /// The exact text both keys signed.
    pub fn message(&self) -> String {
        super::bind_message(&self.origin, &self.vow_id, &self.npub, &self.date())
    }

    /// Check what needs no wallet library: the npub is canonical and encodes `pubkey`, and
    /// `nostr_signature` is the npub key's BIP-340 signature over `sha256` of the text. (The
    /// EIP-191 `wallet_signature` needs the `wallet` feature: [`Self::check_wallet`].)
    pub fn check_nostr(&self) -> Result<(), String> {
        let pk = super::npub_decode(&self.npub).map_err(|e| format!("npub: {e}"))?;
        if super::npub_encode(&pk) != self.npub {
            return Err("npub is not in its canonical lowercase form".into());
        }
        if hex::encode(pk) != self.pubkey {
            return Err("pubkey is not the key the npub encodes".into());
        }
        super::verify_text(&pk, &self.message(), &self.nostr_signature)
            .map_err(|e| format!("nostr_signature: {e}"))
    }

    /// Check that `wallet_signature` recovers to `wallet` over the text (EIP-191).
    #[cfg(feature = "wallet")]
    pub fn check_wallet(&self) -> Result<(), String> {
        let addr = crate::vow::eip191::recover(&self.message(), &self.wallet_signature)
            .map_err(|e| format!("wallet_signature: {e}"))?;
        if crate::vow::record::checksum_address(&addr) != self.wallet {
            return Err("wallet_signature does not recover to wallet".into());
        }
        Ok(())
    }

    /// The unsigned object (without `key_id` and `signature`) at `log_index`.
    pub fn to_object(&self, log_index: u64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), json!(BINDING_TYPE));
        m.insert("origin".into(), json!(self.origin));
        m.insert("vow_id".into(), json!(self.vow_id));
        m.insert("wallet".into(), json!(self.wallet));
        m.insert("npub".into(), json!(self.npub));
        m.insert("pubkey".into(), json!(self.pubkey));
        m.insert("wallet_signature".into(), json!(self.wallet_signature));
        m.insert("nostr_signature".into(), json!(self.nostr_signature));
        m.insert("signed".into(), json!(SIGNED));
        m.insert("date".into(), json!(self.date()));
        m.insert("at".into(), json!(rfc3339(self.at)));
        m.insert("log_index".into(), json!(log_index));
        m.insert("scope".into(), scope_value());
        m
    }

    /// Sign the record that will sit at `log_index`; its leaf bytes (RFC 8785).
    pub fn leaf(&self, key: &ServiceKey, log_index: u64) -> Result<Vec<u8>, CanonicalError> {
        let mut m = self.to_object(log_index);
        key.sign_object(&mut m)?;
        jcs_map(&m)
    }

    /// Read a logged object back: `Ok(None)` when it is not a binding record, else the record
    /// and its `log_index`. Checks the shape and that the object is exactly what
    /// [`Self::to_object`] writes (plus `key_id`, `signature`, and `scope` as written); the
    /// service's signature is checked by the caller (`signing::verify_object`).
    pub fn parse(v: &Value) -> Result<Option<(u64, Binding)>, String> {
        if v.get("type").and_then(Value::as_str) != Some(BINDING_TYPE) {
            return Ok(None);
        }
        let obj = v.as_object().ok_or("not an object")?;
        let s = |k: &str| -> Result<String, String> {
            obj.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{BINDING_TYPE}: `{k}` is missing or not a string"))
        };
        let log_index = obj
            .get("log_index")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{BINDING_TYPE}: `log_index` is missing or not an integer"))?;
        let at = parse_rfc3339(&s("at")?)
            .ok_or_else(|| format!("{BINDING_TYPE}: `at` is not an RFC 3339 UTC instant"))?;
        let rec = Binding {
            origin: s("origin")?,
            vow_id: s("vow_id")?,
            wallet: s("wallet")?,
            npub: s("npub")?,
            pubkey: s("pubkey")?,
            wallet_signature: s("wallet_signature")?,
            nostr_signature: s("nostr_signature")?,
            at,
        };
        let mut rebuilt = rec.to_object(log_index);
        for k in [
            crate::signing::KEY_ID_FIELD,
            crate::signing::SIGNATURE_FIELD,
            "scope",
        ] {
            if let Some(x) = obj.get(k) {
                rebuilt.insert(k.into(), x.clone());
            }
        }
        if &rebuilt != obj {
            return Err(format!(
                "{BINDING_TYPE} at log index {log_index}: members differ from the record format"
            ));
        }
        Ok(Some((log_index, rec)))
    }
}
