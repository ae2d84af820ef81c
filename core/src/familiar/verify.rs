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

use std::collections::HashSet;

use serde_json::Value;

use super::record::{Familiar, FAMILIAR_TYPE};
use super::Owner;
use crate::leaf::{signed_record, SwornVows};
use crate::signing::PinnedKey;
use crate::vow::chain::ChainError;

/// Streams leaves and checks the familiar records in them.
#[derive(Debug)]
pub struct FamiliarChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: SwornVows,
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
            vows: SwornVows::default(),
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
        if self.vows.note(v) {
            return Ok(());
        }
        if ty != FAMILIAR_TYPE {
            return Ok(());
        }
        let rec = signed_record(
            index,
            bytes,
            v,
            &self.pinned,
            "a familiar record",
            Familiar::parse,
        )
        .map_err(|e| at(&e))?;
        if let Owner::Vow { vow_id, wallet } = &rec.owner {
            self.vows
                .check(vow_id, wallet, "the owner")
                .map_err(|e| at(&e))?;
        }
        if !self.used.insert(rec.owner_signature.to_ascii_lowercase()) {
            return Err(at("its owner signature was used by an earlier familiar"));
        }
        self.count += 1;
        Ok(())
    }
}
