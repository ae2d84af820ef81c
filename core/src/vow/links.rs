//! Chain verification: every vow is a hash chain inside the log. [`LinkChecker`] takes log
//! leaves in index order (the whole log, or one vow's records) and checks each vow record and
//! entry: canonical bytes, the service signature, its `log_index`, the vow id derivation,
//! `seq` continuity, the `prev` hash link, and non-decreasing `at`.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::record::{ENTRY_TYPE, VOW_TYPE};
use crate::canonical::jcs;
use crate::signing::{verify_object, PinnedKey};
use crate::time::parse_rfc3339;

/// What a leaf turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leaf {
    /// A vow record with this id.
    Vow(String),
    /// Entry `seq` of this vow.
    Entry(String, u64),
    /// Not a vow-chain record (another record type, or not JSON).
    Other,
}

/// The state of one vow's chain after the leaves seen so far (fixed size: a verifier keeps one
/// for every vow of the log).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Head {
    /// Last seq (0 = only the vow record).
    pub seq: u64,
    /// SHA-256 of the last record's leaf bytes (its hex is the next record's `prev`).
    pub hash: [u8; 32],
    /// Its `at`, unix seconds.
    pub at: u64,
}

/// Why a record breaks its chain (names the leaf, its type and what is wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LinkError(pub String);

/// Streams leaves and checks every vow chain in them.
#[derive(Debug)]
pub struct LinkChecker {
    pinned: PinnedKey,
    origin: Option<String>,
    heads: HashMap<Box<str>, Head>,
    /// Vow records seen.
    pub vows: u64,
    /// Entries seen.
    pub entries: u64,
    /// Leaves that are not vow-chain records.
    pub other: u64,
}

impl LinkChecker {
    /// A checker for records signed by `pinned`; vow ids are re-derived when `origin` is known.
    pub fn new(pinned: PinnedKey, origin: Option<String>) -> Self {
        LinkChecker {
            pinned,
            origin,
            heads: HashMap::new(),
            vows: 0,
            entries: 0,
            other: 0,
        }
    }

    /// A checker that continues from the heads `heads` of the vows seen so far, having seen
    /// `(vows, entries, other)` leaves (as [`Self::heads`] and the counters left them).
    pub fn resume(
        pinned: PinnedKey,
        origin: Option<String>,
        heads: impl IntoIterator<Item = (Box<str>, Head)>,
        (vows, entries, other): (u64, u64, u64),
    ) -> Self {
        LinkChecker {
            pinned,
            origin,
            heads: heads.into_iter().collect(),
            vows,
            entries,
            other,
        }
    }

    /// The head of each vow seen.
    pub fn heads(&self) -> &HashMap<Box<str>, Head> {
        &self.heads
    }

    /// Check the leaf at `index`.
    pub fn leaf(&mut self, index: u64, bytes: &[u8]) -> Result<Leaf, LinkError> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.record(index, bytes, &v, false),
            Err(_) => {
                self.other += 1;
                Ok(Leaf::Other)
            }
        }
    }

    /// Check the leaf at `index`, already parsed as `v`. With `trusted` (a record this
    /// process verified before), the canonical form and signature are not checked again; the
    /// chain links (`log_index`, `seq`, `prev`, `at`) always are.
    pub fn record(
        &mut self,
        index: u64,
        bytes: &[u8],
        v: &Value,
        trusted: bool,
    ) -> Result<Leaf, LinkError> {
        let fields = Fields::of(v);
        if !trusted && fields.is_linked_record() {
            self.authentic(index, bytes, v)?;
        }
        self.link(index, bytes, &fields)
    }

    /// Check that `bytes` are the RFC 8785 form of `v` and that the service signed it.
    pub fn authentic(&self, index: u64, bytes: &[u8], v: &Value) -> Result<(), LinkError> {
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let at = |m: &str| LinkError(format!("leaf {index} ({ty}): {m}"));
        if jcs(v).map_err(|e| at(&e.0))? != bytes {
            return Err(at("the leaf is not the RFC 8785 form of its record"));
        }
        verify_object(v, &self.pinned).map_err(|e| at(&format!("signature: {e}")))
    }

    /// Check the chain links of the record at `index` (leaf `bytes`, fields `f`): its
    /// `log_index`, the vow id derivation, `seq` continuity, the `prev` hash and `at` order.
    /// Signatures are [`Self::authentic`]'s business.
    pub fn link(&mut self, index: u64, bytes: &[u8], f: &Fields<'_>) -> Result<Leaf, LinkError> {
        if !f.is_linked_record() {
            self.other += 1;
            return Ok(Leaf::Other);
        }
        let ty = f.ty;
        let at = |m: &str| LinkError(format!("leaf {index} ({ty}): {m}"));
        if f.log_index != Some(index) {
            return Err(at("log_index does not name the leaf's position"));
        }
        let vow_id = f.vow_id.ok_or_else(|| at("no vow_id"))?.to_owned();
        let when =
            f.at.and_then(parse_rfc3339)
                .ok_or_else(|| at("`at` is not an RFC 3339 UTC instant"))?;
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        if ty == VOW_TYPE {
            if self.heads.contains_key(vow_id.as_str()) {
                return Err(at(&format!("vow {vow_id} is recorded twice")));
            }
            if let Some(origin) = &self.origin {
                let th = f.text_sha256.unwrap_or("");
                let agent = f.agent.unwrap_or("");
                if super::vow_id(origin, index, th, agent) != vow_id {
                    return Err(at(
                        "vow_id is not derived from origin, index, text hash, agent",
                    ));
                }
            }
            if let Some(text) = f.text {
                if Some(super::record::text_sha256(text).as_str()) != f.text_sha256 {
                    return Err(at("text_sha256 is not the hash of text"));
                }
            }
            self.heads.insert(
                vow_id.as_str().into(),
                Head {
                    seq: 0,
                    hash,
                    at: when,
                },
            );
            self.vows += 1;
            return Ok(Leaf::Vow(vow_id));
        }
        let head = self.heads.get_mut(vow_id.as_str()).ok_or_else(|| {
            at(&format!(
                "entry for vow {vow_id}, which is not earlier in the log"
            ))
        })?;
        let seq = f.seq.unwrap_or(0);
        if seq != head.seq + 1 {
            return Err(at(&format!("seq {seq} follows seq {}", head.seq)));
        }
        let mut prev = [0u8; 64];
        // 32 bytes always fit 64 hex digits.
        let _ = hex::encode_to_slice(head.hash, &mut prev);
        if f.prev.map(str::as_bytes) != Some(&prev[..]) {
            return Err(at("prev is not the hash of the vow's previous record"));
        }
        if when < head.at {
            return Err(at("`at` goes back in time"));
        }
        if f.attested.is_none() {
            return Err(at("attested is not a boolean"));
        }
        if f.trace_donated.is_none() {
            return Err(at("trace_donated is not a boolean"));
        }
        *head = Head {
            seq,
            hash,
            at: when,
        };
        self.entries += 1;
        Ok(Leaf::Entry(vow_id, seq))
    }
}

/// The members of a record that its chain links depend on, however it was parsed.
#[derive(Debug, Clone, Default)]
pub struct Fields<'a> {
    /// `type`.
    pub ty: &'a str,
    /// `vow_id`.
    pub vow_id: Option<&'a str>,
    /// `log_index`.
    pub log_index: Option<u64>,
    /// `at` (RFC 3339).
    pub at: Option<&'a str>,
    /// `seq` (entries).
    pub seq: Option<u64>,
    /// `prev` (entries).
    pub prev: Option<&'a str>,
    /// `attested` (entries).
    pub attested: Option<bool>,
    /// `trace_donated` (entries).
    pub trace_donated: Option<bool>,
    /// `agent` (vows).
    pub agent: Option<&'a str>,
    /// `text` (open vows).
    pub text: Option<&'a str>,
    /// `text_sha256` (vows).
    pub text_sha256: Option<&'a str>,
}

impl<'a> Fields<'a> {
    /// The fields of a parsed record.
    pub fn of(v: &'a Value) -> Self {
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        let u = |k: &str| v.get(k).and_then(Value::as_u64);
        let b = |k: &str| v.get(k).and_then(Value::as_bool);
        Fields {
            ty: s("type").unwrap_or(""),
            vow_id: s("vow_id"),
            log_index: u("log_index"),
            at: s("at"),
            seq: u("seq"),
            prev: s("prev"),
            attested: b("attested"),
            trace_donated: b("trace_donated"),
            agent: s("agent"),
            text: s("text"),
            text_sha256: s("text_sha256"),
        }
    }

    /// A vow record or an entry.
    pub fn is_linked_record(&self) -> bool {
        self.ty == VOW_TYPE || self.ty == ENTRY_TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{example_chain, EXAMPLE_ORIGIN};
    use super::*;
    use crate::signing::ServiceKey;

    fn setup() -> (ServiceKey, Vec<Vec<u8>>) {
        let key = ServiceKey::from_seed(&[9; 32], EXAMPLE_ORIGIN);
        let leaves = example_chain(&key, 3, false).1;
        (key, leaves)
    }

    fn check(key: &ServiceKey, leaves: &[Vec<u8>]) -> Result<(), LinkError> {
        let mut c = LinkChecker::new(
            PinnedKey::parse(&key.vkey()).unwrap(),
            Some(EXAMPLE_ORIGIN.into()),
        );
        for (i, l) in leaves.iter().enumerate() {
            c.leaf(i as u64, l)?;
        }
        Ok(())
    }

    #[test]
    fn a_good_chain_verifies_and_breaks_are_caught() {
        let (key, leaves) = setup();
        check(&key, &leaves).unwrap();
        // Dropping an entry breaks seq and log_index.
        let mut dropped = leaves.clone();
        dropped.remove(2);
        assert!(check(&key, &dropped).is_err());
        // Swapping two entries breaks the chain.
        let mut swapped = leaves.clone();
        swapped.swap(1, 2);
        assert!(check(&key, &swapped).is_err());
        // Another key fails the signature.
        let other = ServiceKey::from_seed(&[8; 32], EXAMPLE_ORIGIN);
        assert!(check(&other, &leaves).is_err());
        // Any flipped byte is caught.
        for i in [10, 200, leaves[2].len() - 5] {
            let mut t = leaves.clone();
            t[2][i] ^= 1;
            assert!(check(&key, &t).is_err(), "byte {i}");
        }
    }
}
