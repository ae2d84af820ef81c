//! The vow snapshots of the static tree: `/vow/<id>` (the vow, its chain in brief, trajectory
//! stats), `/vow/<id>/chain` (every record of the chain, raw), `/vow/<id>/reading` (the signed
//! trajectory plus an interpretation labelled as guidance) and `/vows` (the public index).
//!
//! Each is a signed JSON snapshot. Pages that depend on the clock carry `as_of`; the same
//! chain and `as_of` give the same bytes.

use conduct_core::scope::scope_value;
use conduct_core::signing::{PinnedKey, ServiceKey};
use conduct_core::time::rfc3339;
use conduct_core::vow::record::{record_hash, text_sha256};
use conduct_core::vow::trajectory::{trajectory, Trajectory};
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};

use crate::snapshot::signed_bytes;
use crate::RenderError;

/// Type of `/vow/<id>`.
pub const VOW_PAGE_TYPE: &str = "conduct.vow_page/v1";
/// Type of `/vow/<id>/chain`.
pub const CHAIN_TYPE: &str = "conduct.chain/v1";
/// Type of `/vow/<id>/reading`.
pub const READING_TYPE: &str = "conduct.reading/v1";
/// Type of `/vows`.
pub const VOWS_TYPE: &str = "conduct.vows/v1";

/// A vow's chain as read from the store, parsed once.
#[derive(Debug, Clone)]
pub struct Chain {
    /// The store's row.
    pub row: VowRow,
    /// (log index, leaf bytes): the vow record, then the entries in seq order.
    pub records: Vec<(u64, Vec<u8>)>,
}

impl Chain {
    /// Parse and verify the chain and compute its stats at `as_of`. The first `trusted`
    /// records were verified by this process before (see [`trajectory`]).
    pub fn trajectory(
        &self,
        key: &ServiceKey,
        as_of: u64,
        trusted: usize,
    ) -> Result<Trajectory, RenderError> {
        let pinned = PinnedKey::parse(&key.vkey()).map_err(RenderError::Input)?;
        let refs: Vec<(u64, &[u8])> = self
            .records
            .iter()
            .map(|(i, l)| (*i, l.as_slice()))
            .collect();
        trajectory(&refs, &pinned, key.name(), as_of, trusted).map_err(RenderError::Input)
    }
}

/// `/vow/<id>/chain` as RFC 8785 bytes, signed, built around the records' own leaf bytes
/// (which are canonical already) without parsing them again.
fn chain_doc(key: &ServiceKey, chain: &Chain, head_hash: &str) -> Result<Vec<u8>, RenderError> {
    const HOLE: &str = "@@records@@";
    let id = &chain.row.vow_id;
    let mut doc = serde_json::Map::new();
    doc.insert("type".into(), json!(CHAIN_TYPE));
    doc.insert("vow_id".into(), json!(id));
    doc.insert(
        "length".into(),
        json!(chain.records.len().saturating_sub(1)),
    );
    doc.insert("head_sha256".into(), json!(head_hash));
    doc.insert("records".into(), json!(HOLE));
    doc.insert(
        "how_to_verify".into(),
        json!(
            "Each record is signed by the service key (remove `signature`, RFC 8785, \
            Ed25519). Record n's RFC 8785 bytes are log leaf `log_index`; entry n's `prev` is \
            the hex SHA-256 of record n-1's RFC 8785 bytes; `seq` counts from 1. \
            `conduct verify-log` checks every chain against the log."
        ),
    );
    doc.insert("scope".into(), scope_value());
    doc.insert("key_id".into(), json!(key.key_id_hex()));
    let mut records = Vec::with_capacity(chain.records.iter().map(|(_, l)| l.len() + 1).sum());
    records.push(b'[');
    for (k, (_, leaf)) in chain.records.iter().enumerate() {
        if k > 0 {
            records.push(b',');
        }
        records.extend_from_slice(leaf);
    }
    records.push(b']');
    let fill = |map: &serde_json::Map<String, Value>| -> Result<Vec<u8>, RenderError> {
        let bytes = conduct_core::canonical::jcs_map(map)?;
        let hole = format!("\"{HOLE}\"");
        let at = bytes
            .windows(hole.len())
            .position(|w| w == hole.as_bytes())
            .ok_or_else(|| RenderError::Input("chain template lost its hole".into()))?;
        let mut out = Vec::with_capacity(bytes.len() + records.len());
        out.extend_from_slice(&bytes[..at]);
        out.extend_from_slice(&records);
        out.extend_from_slice(&bytes[at + hole.len()..]);
        Ok(out)
    };
    let unsigned = fill(&doc)?;
    use base64::Engine;
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign_bytes(&unsigned));
    doc.insert("signature".into(), json!(sig));
    let mut signed = fill(&doc)?;
    signed.push(b'\n');
    Ok(signed)
}

/// Rendered files as (relative path, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// Path of a vow's page.
pub fn vow_path(id: &str) -> String {
    format!("vow/{id}.json")
}

/// Path of a vow's chain.
pub fn chain_path(id: &str) -> String {
    format!("vow/{id}/chain.json")
}

/// Path of a vow's reading.
pub fn reading_path(id: &str) -> String {
    format!("vow/{id}/reading.json")
}

fn links(id: &str) -> Value {
    json!({
        "self": format!("/vow/{id}"),
        "chain": format!("/vow/{id}/chain"),
        "reading": format!("/vow/{id}/reading"),
        "verify_text": format!("/vow/{id}/verify_text?text="),
        "report_in": "/vow/report",
        "report_in_free": "/vow/report/demo",
        "log_proof": "/log/proof/{log_index}",
        "index": "/vows",
    })
}

/// `/vow/<id>` and `/vow/<id>/chain` at `as_of`, with the parsed trajectory (for the
/// reading and the next window boundary). `trusted`: see [`Chain::trajectory`].
pub fn vow_files(
    key: &ServiceKey,
    chain: &Chain,
    as_of: u64,
    trusted: usize,
) -> Result<(Files, Trajectory), RenderError> {
    let id = &chain.row.vow_id;
    let t = chain.trajectory(key, as_of, trusted)?;
    let brief: Vec<Value> = t
        .entries
        .iter()
        .zip(chain.records.get(1..).unwrap_or_default())
        .map(|(e, (_, leaf))| {
            json!({
                "seq": e["seq"], "at": e["at"], "log_index": e["log_index"],
                "record_sha256": record_hash(leaf), "prev": e["prev"],
                "attested": e["attested"], "trace_donated": e["trace_donated"],
                "trace_sha256": e["trace_sha256"], "note": e["note"],
            })
        })
        .collect();
    let head_hash = chain
        .records
        .last()
        .map(|(_, l)| record_hash(l))
        .unwrap_or_default();
    let page = json!({
        "type": VOW_PAGE_TYPE,
        "vow_id": id,
        "as_of": rfc3339(as_of),
        "vow": t.vow,
        "chain": {
            "length": t.entries.len(),
            "head_sha256": head_hash,
            "entries": brief,
            "records_at": format!("/vow/{id}/chain"),
        },
        "trajectory": t.stats,
        "links": links(id),
        "scope": scope_value(),
    });
    let files = vec![
        (vow_path(id), signed_bytes(key, page)?),
        (chain_path(id), chain_doc(key, chain, &head_hash)?),
    ];
    Ok((files, t))
}

/// `/vow/<id>/reading`: the trajectory and an interpretation (already labelled).
pub fn reading_file(
    key: &ServiceKey,
    chain: &Chain,
    stats: &Value,
    interpretation: Value,
    as_of: u64,
) -> Result<(String, Vec<u8>), RenderError> {
    let id = &chain.row.vow_id;
    let mut caveats = vec![
        "A reading is guidance, never a verdict.",
        "The interpretation sees the numbers, the vow text (withheld when sealed), the declared \
         purposes and public notes; never reasoning or actions.",
    ];
    if chain.row.sealed {
        caveats.push(
            "This vow is sealed: only the hash of its text is public, so no one else can check \
             the declared purposes against it. A sealed vow is a weaker public commitment.",
        );
    }
    if chain.row.sandbox {
        caveats.push("This vow is sandbox: no wallet signed it, so it ties to no identity.");
    }
    let doc = json!({
        "type": READING_TYPE,
        "vow_id": id,
        "as_of": rfc3339(as_of),
        "covers_seq": chain.row.head_seq,
        "trajectory": stats,
        "interpretation": interpretation,
        "caveats": caveats,
        "links": links(id),
        "scope": scope_value(),
    });
    Ok((reading_path(id), signed_bytes(key, doc)?))
}

/// `/vows`: every vow, by agent name then id, with the fields fixed when it was taken (so it
/// changes only when a vow is taken; counts and windows live on each vow's page).
pub fn vows_index(key: &ServiceKey, rows: &[VowRow]) -> Result<(String, Vec<u8>), RenderError> {
    let list: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut v = json!({
                "vow_id": r.vow_id,
                "agent": r.agent,
                "sealed": r.sealed,
                "sandbox": r.sandbox,
                "wallet": r.wallet,
                "cadence_hours": r.cadence_seconds as f64 / 3600.0,
                "taken_at": rfc3339(r.created_at),
                "log_index": r.log_index,
                "text_sha256": text_sha256(&r.text),
                "href": format!("/vow/{}", r.vow_id),
            });
            if !r.sealed {
                v["text"] = json!(r.text);
            }
            v
        })
        .collect();
    let doc = json!({
        "type": VOWS_TYPE,
        "count": list.len(),
        "order": "by agent name, then vow id; never by score",
        "vows": list,
        "scope": scope_value(),
    });
    Ok(("vows.json".into(), signed_bytes(key, doc)?))
}
