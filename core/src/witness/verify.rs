//! Offline checks of the pledge records in a log (for `conduct-verify`'s verify-log, beside
//! `nostr::verify::BindingChecker`): every `conduct.witness-pledge/v1` leaf is the RFC 8785
//! form of an object the service signed, in exactly the record format with normalized limits,
//! at the position its `log_index` names; it names a signed (not sandbox) vow recorded
//! earlier, with that vow's wallet; and each wallet signature is used by one pledge only.
//!
//! What it cannot check without the `wallet` feature: the EIP-191 `wallet_signature`
//! ([`super::record::Pledge::check_wallet`] does, with it). The service checks it before it
//! appends.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::record::{Pledge, PLEDGE_TYPE};
use crate::leaf::{signed_record, SwornVows};
use crate::signing::PinnedKey;
use crate::vow::chain::ChainError;

/// Streams leaves and checks the pledge records in them.
#[derive(Debug)]
pub struct PledgeChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: SwornVows,
    /// Wallet signatures used so far (lowercase).
    used: HashSet<String>,
    /// Each vow's current pledge: the log index of its latest pledge.
    pub latest: HashMap<String, u64>,
    /// Pledge records that verified.
    pub count: u64,
}

impl PledgeChecker {
    /// A checker for records signed by `pinned`.
    pub fn new(pinned: PinnedKey) -> Self {
        PledgeChecker {
            pinned,
            vows: SwornVows::default(),
            used: HashSet::new(),
            latest: HashMap::new(),
            count: 0,
        }
    }

    /// Whether a leaf's bytes may be a vow or pledge record (a cheap filter on the RFC 8785
    /// form before parsing).
    pub fn wants(bytes: &[u8]) -> bool {
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        has(b"\"type\":\"conduct.vow/v1\"") || has(b"\"type\":\"conduct.witness-pledge/v1\"")
    }

    /// Check the leaf at `index` (`bytes`, parsed as `v`). Other leaves are ignored.
    pub fn record(&mut self, index: u64, bytes: &[u8], v: &Value) -> Result<(), ChainError> {
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let at = |m: &str| ChainError(format!("leaf {index} ({ty}): {m}"));
        if self.vows.note(v) {
            return Ok(());
        }
        if ty != PLEDGE_TYPE {
            return Ok(());
        }
        let rec = signed_record(
            index,
            bytes,
            v,
            &self.pinned,
            "a pledge record",
            Pledge::parse,
        )
        .map_err(|e| at(&e))?;
        self.vows
            .check(&rec.vow_id, &rec.wallet, "the pledge")
            .map_err(|e| at(&e))?;
        if !self.used.insert(rec.wallet_signature.to_ascii_lowercase()) {
            return Err(at("its wallet signature was used by an earlier pledge"));
        }
        self.latest.insert(rec.vow_id.clone(), index);
        self.count += 1;
        Ok(())
    }
}
