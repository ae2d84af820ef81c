//! The signed record formats of a vow's chain: `conduct.vow/v1` (the vow, seq 0) and
//! `conduct.entry/v1` (one report-in). A record's leaf bytes are the RFC 8785 bytes of the
//! signed object; `prev` of an entry is the hex SHA-256 of the previous record's leaf bytes.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::attestation::meter_block;
use crate::canonical::{jcs_map, CanonicalError};
use crate::meter::{Meter, Profile};
use crate::scope::scope_value;
use crate::signing::ServiceKey;
use crate::time::rfc3339;

/// Type of a vow record.
pub const VOW_TYPE: &str = "conduct.vow/v1";
/// Type of a report-in entry.
pub const ENTRY_TYPE: &str = "conduct.entry/v1";

/// What a vow record says, before the log assigns its index.
#[derive(Debug, Clone)]
pub struct VowFields<'a> {
    /// The log origin (`<host>/log`), which enters the vow id.
    pub origin: &'a str,
    /// Public agent name.
    pub agent: &'a str,
    /// The vow text (published only when not sealed).
    pub text: &'a str,
    /// Declared cadence, hours.
    pub cadence_hours: f64,
    /// The wallet that signed, when the signature verified.
    pub wallet: Option<[u8; 20]>,
    /// Its EIP-191 signature over the vow message (normalised lowercase hex).
    pub wallet_signature: Option<&'a str>,
    /// Publish only the text hash.
    pub sealed: bool,
    /// Why the vow is sandbox (no signature, or one that did not verify); `None` when signed.
    pub sandbox_reason: Option<&'a str>,
    /// Instant the vow was taken (the start of its first window), unix seconds.
    pub at: u64,
}

/// SHA-256 of a text, hex.
pub fn text_sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Hex SHA-256 of a record's leaf bytes: the `prev` of the record after it.
pub fn record_hash(leaf: &[u8]) -> String {
    hex::encode(Sha256::digest(leaf))
}

/// An EIP-55 checksummed address.
#[cfg(feature = "wallet")]
pub fn checksum_address(a: &[u8; 20]) -> String {
    alloy_primitives::Address::from(*a).to_checksum(None)
}

fn signed_leaf(key: &ServiceKey, mut obj: Map<String, Value>) -> Result<Vec<u8>, CanonicalError> {
    key.sign_object(&mut obj)?;
    jcs_map(&obj)
}

/// Build and sign the vow record that will sit at `log_index`; returns its vow id and leaf.
#[cfg(feature = "wallet")]
pub fn vow_record(
    key: &ServiceKey,
    f: &VowFields<'_>,
    log_index: u64,
) -> Result<(String, Vec<u8>), CanonicalError> {
    let hash = text_sha256(f.text);
    let id = super::vow_id(f.origin, log_index, &hash, f.agent);
    let mut m = Map::new();
    m.insert("type".into(), json!(VOW_TYPE));
    m.insert("vow_id".into(), json!(id));
    m.insert("agent".into(), json!(f.agent));
    if !f.sealed {
        m.insert("text".into(), json!(f.text));
    }
    m.insert("text_sha256".into(), json!(hash));
    m.insert("cadence_hours".into(), json!(f.cadence_hours));
    m.insert("sealed".into(), json!(f.sealed));
    m.insert("sandbox".into(), json!(f.wallet_signature.is_none()));
    if f.wallet_signature.is_none() {
        m.insert(
            "sandbox_reason".into(),
            json!(f
                .sandbox_reason
                .unwrap_or("no wallet signature was offered")),
        );
    }
    m.insert(
        "wallet".into(),
        f.wallet
            .as_ref()
            .map(checksum_address)
            .map_or(Value::Null, Value::String),
    );
    m.insert(
        "wallet_signature".into(),
        f.wallet_signature.map_or(Value::Null, |s| json!(s)),
    );
    m.insert("at".into(), json!(rfc3339(f.at)));
    m.insert("log_index".into(), json!(log_index));
    m.insert("scope".into(), scope_value());
    Ok((id, signed_leaf(key, m)?))
}

/// One distinct declared purpose of a report-in and how many turns declared it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredY {
    /// The declared-Y string.
    pub y: String,
    /// Turns that declared it.
    pub turns: u64,
}

/// Distinct declared purposes of `ys`, in order of first appearance.
pub fn declared_ys<'a>(ys: impl IntoIterator<Item = &'a str>) -> Vec<DeclaredY> {
    let mut out: Vec<DeclaredY> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = Default::default();
    for y in ys {
        match at.get(y) {
            Some(&i) => out[i].turns += 1,
            None => {
                at.insert(y, out.len());
                out.push(DeclaredY {
                    y: y.to_owned(),
                    turns: 1,
                });
            }
        }
    }
    out
}

/// What a report-in entry says, before the log assigns its place.
#[derive(Debug, Clone)]
pub struct EntryFields<'a> {
    /// The vow reported on.
    pub vow_id: &'a str,
    /// `sha256(trace)` (RFC 8785 of the trace).
    pub trace_sha256: [u8; 32],
    /// The conditioning flag name.
    pub context_key: &'a str,
    /// Turns in the trace.
    pub n_turns: usize,
    /// The meter that measured the profile.
    pub meter: Meter,
    /// The four quantities.
    pub profile: &'a Profile,
    /// Distinct declared purposes; `None` for a sealed vow (never stored).
    pub declared_y: Option<Vec<DeclaredY>>,
    /// Match of declared purposes against the vow text.
    pub y_consistency: Option<f64>,
    /// The public note.
    pub note: Option<&'a str>,
    /// Paid (true) or free tier (false), permanent.
    pub attested: bool,
    /// The raw trace was donated (kept apart from the public tree).
    pub trace_donated: bool,
    /// Report-in instant, unix seconds.
    pub at: u64,
    /// How the report-in proved the right to write into this chain.
    pub proof: &'a Proof,
}

/// What proved a report-in's right to write into its vow's chain (recorded on the entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// A sandbox vow takes anyone's report-ins.
    SandboxOpen,
    /// The vow's wallet signed [`super::report_message`] (EIP-191; lowercase hex signature).
    WalletSignature(String),
    /// The x402 payer of this paid report-in is the vow's wallet (lowercase hex address).
    Payer(String),
}

impl Proof {
    /// The entry's `proof` member.
    pub fn to_value(&self) -> Value {
        match self {
            Proof::SandboxOpen => json!({
                "kind": "sandbox-open",
                "note": "a sandbox vow takes report-ins from anyone; nothing ties this entry to an identity",
            }),
            Proof::WalletSignature(sig) => json!({
                "kind": "wallet-signature",
                "signature": sig,
                "message": "EIP-191 over the report-in text (library/VOWS.md) naming origin, vow_id, trace_sha256, the note's SHA-256 and donate_trace",
            }),
            Proof::Payer(payer) => json!({
                "kind": "x402-payer",
                "payer": payer,
                "note": "the x402 payment of this report-in was signed by the vow's wallet",
            }),
        }
    }
}

/// Build and sign the entry with chain position `seq` (1 for the first report-in), `prev` (hex
/// hash of the previous record's leaf) at `log_index`.
pub fn entry_record(
    key: &ServiceKey,
    f: &EntryFields<'_>,
    seq: u64,
    prev: &str,
    log_index: u64,
) -> Result<Vec<u8>, CanonicalError> {
    signed_leaf(key, entry_object(f, seq, prev, log_index)?)
}

/// The length of [`entry_record`]'s bytes, without signing.
pub fn entry_record_len(
    key: &ServiceKey,
    f: &EntryFields<'_>,
    seq: u64,
    prev: &str,
    log_index: u64,
) -> Result<usize, CanonicalError> {
    key.signed_len(entry_object(f, seq, prev, log_index)?)
}

/// The entry's members before it is signed.
fn entry_object(
    f: &EntryFields<'_>,
    seq: u64,
    prev: &str,
    log_index: u64,
) -> Result<Map<String, Value>, CanonicalError> {
    let mut m = Map::new();
    m.insert("type".into(), json!(ENTRY_TYPE));
    m.insert("vow_id".into(), json!(f.vow_id));
    m.insert("seq".into(), json!(seq));
    m.insert("prev".into(), json!(prev));
    m.insert("at".into(), json!(rfc3339(f.at)));
    m.insert("log_index".into(), json!(log_index));
    m.insert("trace_sha256".into(), json!(hex::encode(f.trace_sha256)));
    m.insert("context_key".into(), json!(f.context_key));
    m.insert("n_turns".into(), json!(f.n_turns));
    // Stored tables carry no caller text: D symbols other than `clean` become opaque labels
    // (`stored-labels/1`, library/METER.md); every number is unchanged.
    m.insert(
        "profile".into(),
        serde_json::to_value(f.profile.with_stored_labels())
            .map_err(|e| CanonicalError(e.to_string()))?,
    );
    let mut meter = meter_block(f.meter);
    meter["labels"] = json!(crate::meter::STORED_LABELS_VERSION);
    m.insert("meter".into(), meter);
    match &f.declared_y {
        Some(ys) => {
            let v: Vec<Value> = ys
                .iter()
                .map(|d| json!({"y": d.y, "turns": d.turns}))
                .collect();
            m.insert("declared_y".into(), Value::Array(v));
        }
        None => {
            m.insert("declared_y_withheld".into(), json!("sealed vow"));
        }
    }
    m.insert(
        "y_consistency".into(),
        f.y_consistency.map_or(Value::Null, |v| json!(v)),
    );
    m.insert("note".into(), f.note.map_or(Value::Null, |n| json!(n)));
    m.insert("attested".into(), json!(f.attested));
    m.insert("trace_donated".into(), json!(f.trace_donated));
    m.insert("proof".into(), f.proof.to_value());
    m.insert("scope".into(), scope_value());
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entrys_length_is_known_without_signing_it() {
        let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
        let profile = crate::meter::measure(Meter::V1, &[], &[0; 32]);
        let proofs = [
            Proof::SandboxOpen,
            Proof::WalletSignature(format!("0x{}", "ab".repeat(65))),
            Proof::Payer(format!("0x{}", "cd".repeat(20))),
        ];
        for (i, proof) in proofs.iter().enumerate() {
            let f = EntryFields {
                vow_id: "0123456789abcdef",
                trace_sha256: [i as u8; 32],
                context_key: "monitored",
                n_turns: 10,
                meter: Meter::V1,
                profile: &profile,
                declared_y: (i != 1).then(|| declared_ys(["a \"quoted\" purpose", "é"])),
                y_consistency: Some(0.5),
                note: (i == 2).then_some("a note\n"),
                attested: i == 2,
                trace_donated: i == 0,
                at: 1_800_000_000,
                proof,
            };
            for (seq, index) in [(1, 3), (u64::MAX, u64::MAX)] {
                let signed = entry_record(&key, &f, seq, &"f".repeat(64), index).unwrap();
                let len = entry_record_len(&key, &f, seq, &"f".repeat(64), index).unwrap();
                assert_eq!(len, signed.len());
            }
        }
    }

    #[test]
    fn declared_ys_are_distinct_in_first_order() {
        let d = declared_ys(["b", "a", "b", "b"]);
        assert_eq!(
            d[0],
            DeclaredY {
                y: "b".into(),
                turns: 3
            }
        );
        assert_eq!(
            d[1],
            DeclaredY {
                y: "a".into(),
                turns: 1
            }
        );
    }

    #[test]
    #[cfg(feature = "wallet")]
    fn sealed_vow_publishes_only_the_hash() {
        let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
        let f = VowFields {
            origin: "example.org/log",
            agent: "bot",
            text: "a secret purpose",
            cadence_hours: 24.0,
            wallet: Some([1; 20]),
            wallet_signature: Some("0xab"),
            sealed: true,
            sandbox_reason: None,
            at: 1_795_262_400,
        };
        let (id, leaf) = vow_record(&key, &f, 5).unwrap();
        let s = String::from_utf8(leaf.clone()).unwrap();
        assert!(!s.contains("secret"));
        assert!(s.contains(&text_sha256("a secret purpose")));
        let v: Value = serde_json::from_slice(&leaf).unwrap();
        assert_eq!(v["vow_id"], id.as_str());
        assert_eq!(v["sandbox"], false);
        assert_eq!(crate::canonical::jcs(&v).unwrap(), leaf);
    }
}
