//! The signed manifest as a trie of bins (library/MIRRORS.md, "The manifest"): its bytes, its
//! parsing (a restart reads back what it wrote) and a whole trie built at once.
//!
//! `manifest.json` (the root, `conduct.manifest/v2`) carries `as_of` and `expires` and lists
//! its non-empty children; each other bin, `manifest/<prefix>.json`
//! (`conduct.manifest-bin/v1`), lists either the files whose key
//! ([`conduct_core::manifest::key`]) starts with its prefix, or its own non-empty children. A
//! child is named with its file count, length and SHA-256, so a reader checks each bin against
//! its parent and the root's signature covers the whole tree. One write re-signs one leaf, its
//! ancestors and the root, whatever the size of the tree.
//!
//! [`Trie`] is the publisher's side (which bin holds a file, the listings of recently used
//! leaves), [`SignState`] the signer's (each interior bin's children, written bottom-up).

mod sign;
mod trie;

use std::collections::BTreeMap;

use conduct_core::canonical::{utf16_cmp, write_string, write_u64};
use conduct_core::manifest::{bin_path, key, BIN_TYPE, DIGITS, KEY_DIGITS, MANIFEST_TYPE, V2_TYPE};
use conduct_core::scope::scope_value;
use conduct_core::signing::{verify_snapshot, PinnedKey, ServiceKey};
use conduct_core::time::rfc3339;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::snapshot::signed_raw;
use crate::RenderError;

pub(crate) use sign::{Round, SignState, SignerThread};
pub(crate) use trie::Trie;

/// A SHA-256.
pub type Sha = [u8; 32];

/// A leaf bin's files: path -> (SHA-256, length).
pub type Listing = BTreeMap<String, (Sha, u64)>;

/// An interior bin's children: hex digit (as its ASCII byte) -> what the bin says of the child.
pub type Children = BTreeMap<u8, BinRef>;

/// What a parent says of a child bin: the files under it, its length and SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinRef {
    /// Files listed under the child (all its descendants').
    pub files: u64,
    /// The child file's length.
    pub len: u64,
    /// The child file's SHA-256.
    pub sha256: Sha,
}

impl BinRef {
    /// The reference to a bin written as `bytes`, listing `files` files.
    pub fn of(bytes: &[u8], files: u64) -> BinRef {
        BinRef {
            files,
            len: bytes.len() as u64,
            sha256: Sha256::digest(bytes).into(),
        }
    }
}

/// A leaf holding more files than this splits into 16 children (when its files have more than
/// one key). A leaf is then at most about 40 KB, so one write re-signs a few of them.
pub const SPLIT_AT: usize = 256;

/// The 0..16 value of a hex digit byte of a key.
fn digit_index(d: u8) -> usize {
    DIGITS.iter().position(|&x| x == d).unwrap_or(0)
}

/// Whether a leaf with `prefix` listing `files` splits: more than `split_at` files, not at the
/// bottom of the trie, and files of more than one key (one unit's files never part).
pub fn should_split(prefix: &str, files: &Listing, split_at: usize) -> bool {
    if files.len() <= split_at || prefix.len() >= KEY_DIGITS {
        return false;
    }
    let mut keys = files.keys().map(|p| key(p));
    let first = keys.next();
    keys.any(|k| Some(k) != first)
}

/// The files of a leaf with `prefix`, parted by the next digit of their keys.
pub fn split(prefix: &str, files: Listing) -> BTreeMap<u8, Listing> {
    let mut out: BTreeMap<u8, Listing> = BTreeMap::new();
    for (path, entry) in files {
        let d = key(&path).as_bytes()[prefix.len()];
        out.entry(d).or_default().insert(path, entry);
    }
    out
}

/// The `files` member of a leaf: RFC 8785 bytes written straight from the listing.
fn files_raw(files: &Listing) -> Result<Vec<u8>, RenderError> {
    let mut order: Vec<(&String, &(Sha, u64))> = files.iter().collect();
    if !files.keys().all(|p| p.is_ascii()) {
        // UTF-16 order differs from the map's byte order only beyond ASCII.
        order.sort_by(|a, b| utf16_cmp(a.0, b.0));
    }
    let mut raw = Vec::with_capacity(files.len() * 150 + 2);
    raw.push(b'{');
    for (i, (path, (sha, len))) in order.into_iter().enumerate() {
        if i > 0 {
            raw.push(b',');
        }
        write_string(&mut raw, path);
        raw.extend_from_slice(b":{\"len\":");
        write_u64(&mut raw, *len)?;
        raw.extend_from_slice(b",\"sha256\":\"");
        raw.extend_from_slice(hex::encode(sha).as_bytes());
        raw.extend_from_slice(b"\"}");
    }
    raw.push(b'}');
    Ok(raw)
}

/// The `bins` member of the bin with `prefix`: each child's path, file count, length and hash.
fn bins_raw(prefix: &str, children: &Children) -> Result<Vec<u8>, RenderError> {
    let mut raw = Vec::with_capacity(children.len() * 140 + 2);
    raw.push(b'{');
    for (i, (d, r)) in children.iter().enumerate() {
        if i > 0 {
            raw.push(b',');
        }
        write_string(&mut raw, &bin_path(&format!("{prefix}{}", *d as char)));
        raw.extend_from_slice(b":{\"files\":");
        write_u64(&mut raw, r.files)?;
        raw.extend_from_slice(b",\"len\":");
        write_u64(&mut raw, r.len)?;
        raw.extend_from_slice(b",\"sha256\":\"");
        raw.extend_from_slice(hex::encode(r.sha256).as_bytes());
        raw.extend_from_slice(b"\"}");
    }
    raw.push(b'}');
    Ok(raw)
}

fn bin_head(prefix: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("type".into(), json!(BIN_TYPE));
    m.insert("prefix".into(), json!(prefix));
    m.insert("scope".into(), scope_value());
    m
}

/// The signed leaf bin with `prefix` listing `files`, as file bytes.
pub fn leaf_bytes(key: &ServiceKey, prefix: &str, files: &Listing) -> Result<Vec<u8>, RenderError> {
    Ok(signed_raw(
        key,
        bin_head(prefix),
        &[("files", &files_raw(files)?)],
    )?)
}

/// The signed interior bin with `prefix` (not the root) over `children`, as file bytes.
pub fn interior_bytes(
    key: &ServiceKey,
    prefix: &str,
    children: &Children,
) -> Result<Vec<u8>, RenderError> {
    Ok(signed_raw(
        key,
        bin_head(prefix),
        &[("bins", &bins_raw(prefix, children)?)],
    )?)
}

/// The signed root, `manifest.json`, over `children`, valid from `as_of` for `ttl` seconds.
pub fn root_bytes(
    key: &ServiceKey,
    children: &Children,
    as_of: u64,
    ttl: u64,
) -> Result<Vec<u8>, RenderError> {
    let mut m = serde_json::Map::new();
    m.insert("type".into(), json!(MANIFEST_TYPE));
    m.insert("version".into(), json!(as_of));
    m.insert("as_of".into(), json!(rfc3339(as_of)));
    m.insert("expires".into(), json!(rfc3339(as_of.saturating_add(ttl))));
    m.insert("scope".into(), scope_value());
    Ok(signed_raw(key, m, &[("bins", &bins_raw("", children)?)])?)
}

/// What a bin lists.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A leaf: its files.
    Files(Listing),
    /// An interior bin (or the root): its children.
    Bins(Children),
}

impl Body {
    /// Files listed under the bin.
    pub fn files(&self) -> u64 {
        match self {
            Body::Files(l) => l.len() as u64,
            Body::Bins(c) => c.values().map(|r| r.files).sum(),
        }
    }
}

/// Read back a bin this service wrote: its signature under `pinned`, its type, its prefix (the
/// root's is `""`) and its listing, each file's key under the prefix and each child one digit
/// longer. Errors are short texts for the log.
pub fn parse_bin(bytes: &[u8], prefix: &str, pinned: &PinnedKey) -> Result<Body, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    verify_snapshot(&doc, pinned).map_err(|e| e.to_string())?;
    let (want, have_prefix) = if prefix.is_empty() {
        (MANIFEST_TYPE, None)
    } else {
        (BIN_TYPE, doc.get("prefix").and_then(Value::as_str))
    };
    let ty = doc.get("type").and_then(Value::as_str);
    // A v2 root (the chain pages listed) is read as the v3 it becomes at the next signing.
    if ty != Some(want) && !(prefix.is_empty() && ty == Some(V2_TYPE)) {
        return Err(format!("not a {want}"));
    }
    if !prefix.is_empty() && have_prefix != Some(prefix) {
        return Err(format!("prefix {have_prefix:?}, not {prefix:?}"));
    }
    let sha = |v: &Value| -> Option<Sha> {
        let s = v.get("sha256")?.as_str()?;
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(out)
    };
    match (doc.get("files"), doc.get("bins")) {
        (Some(Value::Object(files)), None) if !prefix.is_empty() => {
            let mut out = Listing::new();
            for (path, e) in files {
                let (Some(s), Some(len)) = (sha(e), e.get("len").and_then(Value::as_u64)) else {
                    return Err(format!("{path}: no sha256 or len"));
                };
                if !key(path).starts_with(prefix) {
                    return Err(format!("{path}: its key is outside the bin"));
                }
                out.insert(path.clone(), (s, len));
            }
            Ok(Body::Files(out))
        }
        (None, Some(Value::Object(bins))) => {
            let mut out = Children::new();
            for (path, e) in bins {
                let child = conduct_core::manifest::bin_prefix(path)
                    .filter(|c| c.len() == prefix.len() + 1 && c.starts_with(prefix))
                    .ok_or_else(|| format!("{path}: not a child of {prefix:?}"))?;
                let (Some(s), Some(len), Some(files)) = (
                    sha(e),
                    e.get("len").and_then(Value::as_u64),
                    e.get("files").and_then(Value::as_u64),
                ) else {
                    return Err(format!("{path}: no files, len or sha256"));
                };
                out.insert(
                    child.as_bytes()[prefix.len()],
                    BinRef {
                        files,
                        len,
                        sha256: s,
                    },
                );
            }
            Ok(Body::Bins(out))
        }
        _ => Err("neither files nor bins".into()),
    }
}

/// The whole manifest of `files` (path -> (hex SHA-256, length)) built at once, as (path,
/// bytes) of the root and every bin: the trie the [`crate::publish::Publisher`] grows when the
/// same files are put one by one (a leaf splits exactly when it ends up over `split_at`).
pub fn build(
    key: &ServiceKey,
    files: &BTreeMap<String, (String, u64)>,
    as_of: u64,
    ttl: u64,
    split_at: usize,
) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let mut listing = Listing::new();
    for (path, (sha, len)) in files {
        if !conduct_core::manifest::listed(path) {
            continue;
        }
        let mut s = [0u8; 32];
        hex::decode_to_slice(sha, &mut s)
            .map_err(|e| RenderError::Input(format!("{path}: sha256: {e}")))?;
        listing.insert(path.clone(), (s, *len));
    }
    let mut out = Vec::new();
    let children = build_children(key, "", listing, split_at, &mut out)?;
    out.push((bin_path(""), root_bytes(key, &children, as_of, ttl)?));
    Ok(out)
}

/// Write the children of an interior bin with `prefix` holding `files` into `out`; returns
/// what the bin says of them.
fn build_children(
    key: &ServiceKey,
    prefix: &str,
    files: Listing,
    split_at: usize,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<Children, RenderError> {
    let mut children = Children::new();
    for (d, part) in split(prefix, files) {
        let child = format!("{prefix}{}", d as char);
        let n = part.len() as u64;
        let bytes = if should_split(&child, &part, split_at) {
            let grand = build_children(key, &child, part, split_at, out)?;
            interior_bytes(key, &child, &grand)?
        } else {
            leaf_bytes(key, &child, &part)?
        };
        children.insert(d, BinRef::of(&bytes, n));
        out.push((bin_path(&child), bytes));
    }
    Ok(children)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k() -> ServiceKey {
        ServiceKey::from_seed(&[5; 32], "example.org/log")
    }

    fn files(n: usize) -> BTreeMap<String, (String, u64)> {
        (0..n)
            .map(|i| {
                (
                    format!("vow/v{i}.json"),
                    (hex::encode([i as u8; 32]), i as u64),
                )
            })
            .collect()
    }

    #[test]
    fn a_built_trie_reads_back_and_covers_every_file() {
        let key = k();
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let all = files(300);
        let bins = build(&key, &all, 1_800_000_000, 60, 16).unwrap();
        let by_path: BTreeMap<_, _> = bins.into_iter().collect();
        // Walk from the root: every file once, each bin as its parent names it.
        let mut seen = BTreeMap::new();
        let mut stack = vec![(String::new(), None::<BinRef>)];
        while let Some((prefix, want)) = stack.pop() {
            let bytes = &by_path[&bin_path(&prefix)];
            let body = parse_bin(bytes, &prefix, &pinned).unwrap();
            if let Some(want) = want {
                assert_eq!(BinRef::of(bytes, body.files()), want, "{prefix}");
            }
            match body {
                Body::Files(l) => {
                    assert!(l.len() <= 16 || !should_split(&prefix, &l, 16));
                    for (p, e) in l {
                        assert!(seen.insert(p, e).is_none());
                    }
                }
                Body::Bins(c) => {
                    for (d, r) in c {
                        stack.push((format!("{prefix}{}", d as char), Some(r)));
                    }
                }
            }
        }
        assert_eq!(seen.len(), 300);
        assert!(by_path.len() > 17, "the trie is deeper than one level");
        // The wrong prefix or key is refused.
        let (path, bytes) = by_path.iter().find(|(p, _)| p.len() > 14).unwrap();
        let prefix = conduct_core::manifest::bin_prefix(path).unwrap();
        assert!(parse_bin(bytes, &format!("{prefix}0"), &pinned).is_err());
        let other = PinnedKey::parse(&ServiceKey::from_seed(&[6; 32], "x").vkey()).unwrap();
        assert!(parse_bin(bytes, prefix, &other).is_err());
    }

    #[test]
    fn one_units_files_never_part() {
        let mut l = Listing::new();
        for i in 0..40 {
            l.insert(format!("registry/tool/{i}.json"), ([0; 32], 1));
        }
        assert!(!should_split("", &l, 16));
        l.insert("index.html".into(), ([0; 32], 1));
        assert!(should_split("", &l, 16));
    }
}
