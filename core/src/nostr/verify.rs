//! Offline checks of the binding records in a log (for `conduct-verify`'s verify-log, beside
//! `munus::verify::BoardChecker`): every `conduct.npub-binding/v1` leaf is the RFC 8785 form of
//! an object the service signed, in exactly the record format, at the position its `log_index`
//! names; it names a signed (not sandbox) vow recorded earlier, with that vow's wallet; its npub
//! encodes its `pubkey`; its `nostr_signature` is the npub key's BIP-340 signature over
//! `sha256` of the exact text (rebuilt from the record's origin, vow, npub and date; checked
//! with the plain [`super::bip340`] arithmetic, no wallet library needed); and each wallet and
//! nostr signature is used by one binding only.
//!
//! What it cannot check without the `wallet` feature: the EIP-191 `wallet_signature`
//! ([`super::record::Binding::check_wallet`] does, with it). The service checks both before it
//! appends.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::record::{Binding, BINDING_TYPE};
use crate::canonical::jcs;
use crate::signing::{verify_object, PinnedKey};
use crate::vow::chain::ChainError;
use crate::vow::record::VOW_TYPE;

/// Streams leaves and checks the binding records in them.
#[derive(Debug)]
pub struct BindingChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: HashMap<String, Option<String>>,
    /// Signatures used so far (wallet and nostr, lowercase).
    used: HashSet<String>,
    /// Each npub's current vow (the latest binding wins).
    pub bound: HashMap<String, String>,
    /// Binding records that verified.
    pub count: u64,
}

impl BindingChecker {
    /// A checker for records signed by `pinned`.
    pub fn new(pinned: PinnedKey) -> Self {
        BindingChecker {
            pinned,
            vows: HashMap::new(),
            used: HashSet::new(),
            bound: HashMap::new(),
            count: 0,
        }
    }

    /// Whether a leaf's bytes may be a vow or binding record (a cheap filter on the RFC 8785
    /// form before parsing).
    pub fn wants(bytes: &[u8]) -> bool {
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        has(b"\"type\":\"conduct.vow/v1\"") || has(b"\"type\":\"conduct.npub-binding/v1\"")
    }

    /// Check the leaf at `index` (`bytes`, parsed as `v`). Other leaves are ignored.
    pub fn record(&mut self, index: u64, bytes: &[u8], v: &Value) -> Result<(), ChainError> {
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let at = |m: &str| ChainError(format!("leaf {index} ({ty}): {m}"));
        if ty == VOW_TYPE {
            if let Some(id) = v.get("vow_id").and_then(Value::as_str) {
                let signed = v.get("sandbox") == Some(&Value::Bool(false));
                let wallet = v.get("wallet").and_then(Value::as_str).map(str::to_owned);
                self.vows
                    .insert(id.to_owned(), if signed { wallet } else { None });
            }
            return Ok(());
        }
        if ty != BINDING_TYPE {
            return Ok(());
        }
        if jcs(v).map_err(|e| at(&e.0))? != bytes {
            return Err(at("the leaf is not the RFC 8785 form of its record"));
        }
        verify_object(v, &self.pinned).map_err(|e| at(&format!("signature: {e}")))?;
        let (log_index, rec) = Binding::parse(v)
            .map_err(|e| at(&e))?
            .ok_or_else(|| at("not a binding record"))?;
        if log_index != index {
            return Err(at("log_index does not name the leaf's position"));
        }
        match self.vows.get(&rec.vow_id) {
            None => return Err(at("the binding names no vow recorded before it")),
            Some(None) => return Err(at("the binding names a sandbox vow")),
            Some(Some(w)) if *w != rec.wallet => {
                return Err(at("the binding's wallet is not its vow's wallet"))
            }
            Some(Some(_)) => {}
        }
        rec.check_nostr().map_err(|e| at(&e))?;
        for sig in [&rec.wallet_signature, &rec.nostr_signature] {
            if !self.used.insert(sig.to_ascii_lowercase()) {
                return Err(at("a signature of this binding was used by an earlier one"));
            }
        }
        self.bound.insert(rec.npub.clone(), rec.vow_id.clone());
        self.count += 1;
        Ok(())
    }
}
