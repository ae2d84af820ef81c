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
use crate::canonical::jcs;
use crate::signing::{verify_object, PinnedKey};
use crate::vow::chain::ChainError;
use crate::vow::record::VOW_TYPE;

/// Streams leaves and checks the pledge records in them.
#[derive(Debug)]
pub struct PledgeChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: HashMap<String, Option<String>>,
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
            vows: HashMap::new(),
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
        if ty == VOW_TYPE {
            if let Some(id) = v.get("vow_id").and_then(Value::as_str) {
                let signed = v.get("sandbox") == Some(&Value::Bool(false));
                let wallet = v.get("wallet").and_then(Value::as_str).map(str::to_owned);
                self.vows
                    .insert(id.to_owned(), if signed { wallet } else { None });
            }
            return Ok(());
        }
        if ty != PLEDGE_TYPE {
            return Ok(());
        }
        if jcs(v).map_err(|e| at(&e.0))? != bytes {
            return Err(at("the leaf is not the RFC 8785 form of its record"));
        }
        verify_object(v, &self.pinned).map_err(|e| at(&format!("signature: {e}")))?;
        let (log_index, rec) = Pledge::parse(v)
            .map_err(|e| at(&e))?
            .ok_or_else(|| at("not a pledge record"))?;
        if log_index != index {
            return Err(at("log_index does not name the leaf's position"));
        }
        match self.vows.get(&rec.vow_id) {
            None => return Err(at("the pledge names no vow recorded before it")),
            Some(None) => return Err(at("the pledge names a sandbox vow")),
            Some(Some(w)) if *w != rec.wallet => {
                return Err(at("the pledge's wallet is not its vow's wallet"))
            }
            Some(Some(_)) => {}
        }
        if !self.used.insert(rec.wallet_signature.to_ascii_lowercase()) {
            return Err(at("its wallet signature was used by an earlier pledge"));
        }
        self.latest.insert(rec.vow_id.clone(), index);
        self.count += 1;
        Ok(())
    }
}
