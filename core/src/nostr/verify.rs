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
use crate::leaf::{signed_record, SwornVows};
use crate::signing::PinnedKey;
use crate::vow::chain::ChainError;

/// Streams leaves and checks the binding records in them.
#[derive(Debug)]
pub struct BindingChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: SwornVows,
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
            vows: SwornVows::default(),
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
        if self.vows.note(v) {
            return Ok(());
        }
        if ty != BINDING_TYPE {
            return Ok(());
        }
        let rec = signed_record(
            index,
            bytes,
            v,
            &self.pinned,
            "a binding record",
            Binding::parse,
        )
        .map_err(|e| at(&e))?;
        self.vows
            .check(&rec.vow_id, &rec.wallet, "the binding")
            .map_err(|e| at(&e))?;
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
