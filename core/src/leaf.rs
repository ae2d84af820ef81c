//! What every verify-log checker of the service's own records shares (the quest board, npub
//! bindings, witness pledges, familiars): the vows seen so far in the log ([`SwornVows`]),
//! and the checks of one signed leaf ([`signed_record`]): its bytes are the RFC 8785 form of
//! the record, the service signed it, it parses in exactly its format, and its `log_index`
//! names its position.

use std::collections::HashMap;

use serde_json::Value;

use crate::canonical::jcs;
use crate::signing::{verify_object, PinnedKey};
use crate::vow::record::VOW_TYPE;

/// The vows recorded so far: for each id, the wallet of a signed vow, `None` for a sandbox
/// vow.
#[derive(Debug, Clone, Default)]
pub struct SwornVows(HashMap<String, Option<String>>);

impl SwornVows {
    /// Note `v` when it is a vow record; true when it was one (the caller is done with it).
    pub fn note(&mut self, v: &Value) -> bool {
        if v.get("type").and_then(Value::as_str) != Some(VOW_TYPE) {
            return false;
        }
        if let Some(id) = v.get("vow_id").and_then(Value::as_str) {
            let signed = v.get("sandbox") == Some(&Value::Bool(false));
            let wallet = v.get("wallet").and_then(Value::as_str).map(str::to_owned);
            self.0
                .insert(id.to_owned(), if signed { wallet } else { None });
        }
        true
    }

    /// `vow_id` names a signed (not sandbox) vow recorded earlier whose wallet is `wallet`;
    /// else why not, naming the record as `who` ("the claim", "the binding", ...).
    pub fn check(&self, vow_id: &str, wallet: &str, who: &str) -> Result<(), String> {
        match self.0.get(vow_id) {
            None => Err(format!("{who} names no vow recorded before it")),
            Some(None) => Err(format!("{who} names a sandbox vow")),
            Some(Some(w)) if w != wallet => Err(format!("{who}'s wallet is not its vow's wallet")),
            Some(Some(_)) => Ok(()),
        }
    }
}

/// Check the leaf at `index` (`bytes`, parsed as `v`) as a record the service signed with
/// `pinned`, read back by `parse` (which gives the record's `log_index`): the record, or why
/// not. `what` names the kind of record ("a board record").
pub fn signed_record<T>(
    index: u64,
    bytes: &[u8],
    v: &Value,
    pinned: &PinnedKey,
    what: &str,
    parse: impl FnOnce(&Value) -> Result<Option<(u64, T)>, String>,
) -> Result<T, String> {
    if jcs(v).map_err(|e| e.0)? != bytes {
        return Err("the leaf is not the RFC 8785 form of its record".into());
    }
    verify_object(v, pinned).map_err(|e| format!("signature: {e}"))?;
    let (log_index, rec) = parse(v)?.ok_or_else(|| format!("not {what}"))?;
    if log_index != index {
        return Err("log_index does not name the leaf's position".into());
    }
    Ok(rec)
}
