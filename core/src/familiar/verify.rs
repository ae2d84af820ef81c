//! Offline checks of the familiar records in a log (for `conduct-verify`'s verify-log): every
//! `conduct.familiar/v1` leaf is the RFC 8785 form of an object the service signed, in exactly
//! the record format (so `wallet` is `null`, `faucet_cap` is `"0"`, `status` is `summoned`,
//! and `familiar_id` and `order_sha256` recompute), at the position its `log_index` names; a
//! vow owner names a signed (not sandbox) vow recorded earlier, with that vow's wallet; and
//! each owner signature (so each familiar id) is used once.
//!
//! What it cannot check without the `wallet` feature: the EIP-191 `owner_signature`
//! ([`super::record::Familiar::check_wallet`] does, with it). The service checks it before it
//! appends.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::record::{Familiar, FAMILIAR_TYPE};
use super::Owner;
use crate::canonical::jcs;
use crate::signing::{verify_object, PinnedKey};
use crate::vow::chain::ChainError;
use crate::vow::record::VOW_TYPE;

/// Streams leaves and checks the familiar records in them.
#[derive(Debug)]
pub struct FamiliarChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: HashMap<String, Option<String>>,
    /// Owner signatures used so far (lowercase).
    used: HashSet<String>,
    /// Familiar records that verified.
    pub count: u64,
}

impl FamiliarChecker {
    /// A checker for records signed by `pinned`.
    pub fn new(pinned: PinnedKey) -> Self {
        FamiliarChecker {
            pinned,
            vows: HashMap::new(),
            used: HashSet::new(),
            count: 0,
        }
    }

    /// Whether a leaf's bytes may be a vow or familiar record (a cheap filter on the RFC 8785
    /// form before parsing).
    pub fn wants(bytes: &[u8]) -> bool {
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        has(b"\"type\":\"conduct.vow/v1\"") || has(b"\"type\":\"conduct.familiar/v1\"")
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
        if ty != FAMILIAR_TYPE {
            return Ok(());
        }
        if jcs(v).map_err(|e| at(&e.0))? != bytes {
            return Err(at("the leaf is not the RFC 8785 form of its record"));
        }
        verify_object(v, &self.pinned).map_err(|e| at(&format!("signature: {e}")))?;
        let (log_index, rec) = Familiar::parse(v)
            .map_err(|e| at(&e))?
            .ok_or_else(|| at("not a familiar record"))?;
        if log_index != index {
            return Err(at("log_index does not name the leaf's position"));
        }
        if let Owner::Vow { vow_id, wallet } = &rec.owner {
            match self.vows.get(vow_id) {
                None => return Err(at("the owner names no vow recorded before it")),
                Some(None) => return Err(at("the owner names a sandbox vow")),
                Some(Some(w)) if w != wallet => {
                    return Err(at("the owner's wallet is not its vow's wallet"))
                }
                Some(Some(_)) => {}
            }
        }
        if !self.used.insert(rec.owner_signature.to_ascii_lowercase()) {
            return Err(at("its owner signature was used by an earlier familiar"));
        }
        self.count += 1;
        Ok(())
    }
}
