//! One bin of the manifest (`manifest.json` or `manifest/<prefix>.json`; library/MIRRORS.md)
//! read as a stream: its file list is never held as a JSON tree, nor is its canonical form.
//! What is kept is one compact row per listed file (path, SHA-256, length) in RFC 8785 order,
//! and the other members as values; the signature is checked over the RFC 8785 bytes rebuilt from those
//! rows and fed to Ed25519 as they are written, with the checks of `verify_strict` (no weak
//! key, no small-order R, a canonical S).

use std::fmt;
use std::io::Read;

use base64::Engine;
use conduct_core::canonical::{utf16_cmp, write_string, write_u64, write_value, Sink};
use conduct_core::signing::{
    PinnedKey, VerifyError, EXTENSION_KEY_ID_FIELD, EXTENSION_SIGNATURE_FIELD, KEY_ID_FIELD,
    SIGNATURE_FIELD,
};
use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::StreamVerifier;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::progress::Progress;

/// One listed file as the manifest gives it: the compact form when its entry is exactly
/// `{"len": n, "sha256": "<64 lower-case hex>"}` (with `n` at most 2^53, so it is written back
/// as it was read), else the entry as a value (checked and reported after the signature).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// `{"len": len, "sha256": hex(sha256)}`.
    Compact {
        /// The listed SHA-256.
        sha256: [u8; 32],
        /// The listed length.
        len: u64,
    },
    /// Any other entry.
    Odd(Box<Value>),
}

/// Largest integer RFC 8785 writes as plain digits (2^53).
const MAX_EXACT_INT: u64 = 1 << 53;

impl Entry {
    fn of(v: Value) -> Entry {
        if let Value::Object(m) = &v {
            let len = m.get("len").and_then(Value::as_u64);
            let sha = m.get("sha256").and_then(Value::as_str).and_then(sha256_hex);
            if let (2, Some(len), Some(sha256)) = (m.len(), len, sha) {
                if len <= MAX_EXACT_INT {
                    return Entry::Compact { sha256, len };
                }
            }
        }
        Entry::Odd(Box::new(v))
    }
}

/// The 32 bytes of a SHA-256 written as 64 lower-case hex digits.
pub(crate) fn sha256_hex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// A manifest as read: every member but `files`, and `files`, when it is an object, as rows
/// sorted in RFC 8785 order (by UTF-16 code units), one a path (a path listed twice keeps its
/// last entry, as a JSON parser does).
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    /// The members but `files` (or with `files` when it is not an object).
    pub members: Map<String, Value>,
    /// The file list, when `files` is an object.
    pub files: Option<Vec<(Box<str>, Entry)>>,
}

/// Why a manifest could not be read.
pub(crate) enum ReadError {
    /// Not JSON (or the reader failed).
    Json(serde_json::Error),
    /// JSON, but not an object.
    NotAnObject,
}

/// Read the manifest from `reader`, counting the listed files on `progress`.
pub(crate) fn read(reader: impl Read, progress: &mut Progress) -> Result<Streamed, ReadError> {
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, reader));
    let top = Top { progress }
        .deserialize(&mut de)
        .map_err(ReadError::Json)?;
    de.end().map_err(ReadError::Json)?;
    top.ok_or(ReadError::NotAnObject)
}

/// The top-level value: an object becomes a [`Streamed`], anything else `None`.
struct Top<'p> {
    progress: &'p mut Progress,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Option<Streamed>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Option<Streamed>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a manifest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Streamed::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "files" {
                match map.next_value_seed(FilesSeed {
                    progress: &mut *self.progress,
                })? {
                    Ok(rows) => {
                        out.members.remove("files");
                        out.files = Some(rows);
                    }
                    Err(other) => {
                        out.files = None;
                        out.members.insert(key, other);
                    }
                }
            } else {
                let v: Value = map.next_value()?;
                out.members.insert(key, v);
            }
        }
        Ok(Some(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        ValueVisitor.visit_seq(seq).map(|_| None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// The `files` member: an object becomes sorted rows, anything else stays a value.
struct FilesSeed<'p> {
    progress: &'p mut Progress,
}

type Rows = Vec<(Box<str>, Entry)>;

impl<'de> DeserializeSeed<'de> for FilesSeed<'_> {
    type Value = Result<Rows, Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FilesSeed<'_> {
    type Value = Result<Rows, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a file list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rows: Rows = Vec::new();
        let mut sorted = true;
        while let Some(path) = map.next_key::<String>()? {
            let entry = Entry::of(map.next_value::<Value>()?);
            if let Some((last, _)) = rows.last() {
                sorted &= utf16_cmp(last, &path).is_lt();
            }
            rows.push((path.into_boxed_str(), entry));
            self.progress.add(1);
        }
        if !sorted {
            // Stable: of a path listed twice, the last entry ends last of its run.
            rows.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
            rows.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(later, kept);
                }
                same
            });
        }
        rows.shrink_to_fit();
        Ok(Ok(rows))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        ValueVisitor.visit_seq(seq).map(Err)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Err(Value::Bool(b)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(Err(Value::from(n)))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Err(Value::from(n)))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
        Ok(Err(Number::from_f64(n).map_or(Value::Null, Value::Number)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Err(Value::String(s.to_owned())))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Err(Value::Null))
    }
}

/// An array, as values.
struct ValueVisitor;

impl ValueVisitor {
    fn visit_seq<'de, A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
}

/// Feeds canonical bytes to the Ed25519 check in 64 KiB pieces.
struct Hashing<'v> {
    verifier: &'v mut StreamVerifier,
    buf: Vec<u8>,
}

impl Sink for Hashing<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= 1 << 16 {
            self.verifier.update(&self.buf);
            self.buf.clear();
        }
    }
}

/// Write the RFC 8785 form of the manifest without its member `skip` (the signature).
pub(crate) fn write_canonical<S: Sink>(
    out: &mut S,
    m: &Streamed,
    skip: &str,
) -> Result<(), conduct_core::canonical::CanonicalError> {
    let mut keys: Vec<&str> = m
        .members
        .keys()
        .map(String::as_str)
        .filter(|k| *k != skip)
        .collect();
    if m.files.is_some() && skip != "files" {
        keys.push("files");
    }
    keys.sort_by(|a, b| utf16_cmp(a, b));
    out.put(b"{");
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_string(out, k);
        out.put(b":");
        match (k, &m.files, m.members.get(k)) {
            ("files", Some(rows), _) => write_rows(out, rows)?,
            (_, _, Some(v)) => write_value(out, v)?,
            (_, _, None) => out.put(b"null"), // not reached: every key is a member
        }
    }
    out.put(b"}");
    Ok(())
}

fn write_rows<S: Sink>(
    out: &mut S,
    rows: &[(Box<str>, Entry)],
) -> Result<(), conduct_core::canonical::CanonicalError> {
    out.put(b"{");
    let mut hex = [0u8; 64];
    for (i, (path, entry)) in rows.iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_string(out, path);
        out.put(b":");
        match entry {
            Entry::Compact { sha256, len } => {
                out.put(b"{\"len\":");
                write_u64(out, *len)?;
                out.put(b",\"sha256\":\"");
                // 32 bytes always fit 64 hex digits.
                let _ = hex::encode_to_slice(sha256, &mut hex);
                out.put(&hex);
                out.put(b"\"}");
            }
            Entry::Odd(v) => write_value(out, v)?,
        }
    }
    out.put(b"}");
    Ok(())
}

/// Check the manifest's signature under `pinned` exactly as `verify_snapshot` checks a parsed
/// object (the same members, the same errors), without building its canonical form in memory.
pub(crate) fn verify(m: &Streamed, pinned: &PinnedKey) -> Result<(), VerifyError> {
    let has = |k: &str| m.members.contains_key(k) || (k == "files" && m.files.is_some());
    let (sig_field, key_id) = if !has(SIGNATURE_FIELD) && has(EXTENSION_SIGNATURE_FIELD) {
        (EXTENSION_SIGNATURE_FIELD, EXTENSION_KEY_ID_FIELD)
    } else {
        (SIGNATURE_FIELD, KEY_ID_FIELD)
    };
    let sig_b64 = m
        .members
        .get(sig_field)
        .and_then(Value::as_str)
        .ok_or(VerifyError::NoSignature)?;
    let sig_raw = base64::engine::general_purpose::STANDARD
        .decode(sig_b64)
        .map_err(|_| VerifyError::BadSignatureEncoding)?;
    let sig: [u8; 64] = sig_raw
        .as_slice()
        .try_into()
        .map_err(|_| VerifyError::BadSignatureEncoding)?;
    if let Some(expected) = &pinned.key_id {
        let found = m.members.get(key_id).and_then(Value::as_str);
        if found != Some(expected.as_str()) {
            return Err(VerifyError::KeyIdMismatch {
                found: found.map(str::to_owned),
                expected: expected.clone(),
            });
        }
    }
    if conduct_core::scope::required_for(&m.members) && !conduct_core::scope::is_intact(&m.members)
    {
        return Err(VerifyError::Scope);
    }
    let signature = ed25519_dalek::Signature::from_bytes(&sig);
    // verify_strict's checks: no weak key, R decodes and is not of small order.
    let r = CompressedEdwardsY(*signature.r_bytes()).decompress();
    if pinned.key.is_weak() || r.is_none_or(|r| r.is_small_order()) {
        return Err(VerifyError::BadSignature);
    }
    let mut verifier = pinned
        .key
        .verify_stream(&signature)
        .map_err(|_| VerifyError::BadSignature)?;
    let mut sink = Hashing {
        verifier: &mut verifier,
        buf: Vec::with_capacity(1 << 16),
    };
    write_canonical(&mut sink, m, sig_field)?;
    let rest = std::mem::take(&mut sink.buf);
    verifier.update(&rest);
    verifier
        .finalize_and_verify()
        .map_err(|_| VerifyError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::canonical::jcs;
    use conduct_core::signing::{verify_snapshot, ServiceKey};
    use serde_json::json;

    fn key() -> ServiceKey {
        ServiceKey::from_seed(&[7u8; 32], "example.org/log")
    }

    fn quiet() -> Progress {
        Progress::to(None, "manifest", "files", None)
    }

    fn streamed(bytes: &[u8]) -> Streamed {
        match read(bytes, &mut quiet()) {
            Ok(m) => m,
            Err(ReadError::Json(e)) => panic!("not JSON: {e}"),
            Err(ReadError::NotAnObject) => panic!("not an object"),
        }
    }

    /// Files of every shape: plain rows, odd entries (an extra member, upper-case hex, a
    /// fractional length, a length past 2^53, not an object), and paths whose RFC 8785 order
    /// is not their byte order (U+E000 sorts after a surrogate pair in UTF-16).
    fn files() -> Value {
        let sha = "ab".repeat(32);
        json!({
            "index.html": {"sha256": sha, "len": 9},
            "b/\u{e000}.json": {"len": 1, "sha256": sha},
            "b/\u{1f600}.json": {"len": 2, "sha256": sha},
            "extra.txt": {"len": 3, "sha256": sha, "note": "x"},
            "upper.txt": {"len": 4, "sha256": sha.to_uppercase()},
            "fraction.txt": {"len": 4.5, "sha256": sha},
            "huge.txt": {"len": 1u64 << 60, "sha256": sha},
            "odd.txt": [1, "two", null, true, 2.5],
        })
    }

    fn signed(k: &ServiceKey, files: Value) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), json!("conduct.manifest/v1"));
        m.insert("as_of".into(), json!("2026-11-21T12:00:00Z"));
        m.insert("version".into(), json!(1_800_000_000u64));
        m.insert("scope".into(), conduct_core::scope::scope_value());
        m.insert("files".into(), files);
        k.sign_object(&mut m).expect("sign");
        Value::Object(m)
    }

    /// The result of [`verify`] on the bytes, and of `verify_snapshot` on their parse.
    fn both(
        bytes: &[u8],
        pinned: &PinnedKey,
    ) -> (Result<(), VerifyError>, Result<(), VerifyError>) {
        let doc: Value = serde_json::from_slice(bytes).expect("JSON");
        (
            verify(&streamed(bytes), pinned),
            verify_snapshot(&doc, pinned),
        )
    }

    #[test]
    fn the_canonical_form_is_rebuilt_byte_for_byte() {
        let doc = signed(&key(), files());
        // Pretty-printed, members in another order: the same canonical bytes.
        for bytes in [
            serde_json::to_vec_pretty(&doc).expect("bytes"),
            jcs(&doc).expect("jcs"),
        ] {
            let m = streamed(&bytes);
            let mut out = Vec::new();
            write_canonical(&mut out, &m, "").expect("canonical");
            assert_eq!(out, jcs(&doc).expect("jcs"));
            let rows = m.files.as_ref().expect("rows");
            assert_eq!(rows.len(), 8);
            let compact = rows
                .iter()
                .filter(|(_, e)| matches!(e, Entry::Compact { .. }))
                .count();
            assert_eq!(compact, 3, "{rows:?}");
            assert!(!m.members.contains_key("files"));
        }
    }

    #[test]
    fn a_path_listed_twice_keeps_its_last_entry_as_a_parser_does() {
        let sha = "cd".repeat(32);
        let text = format!(
            r#"{{"files":{{"b":{{"len":1,"sha256":"{sha}"}},"a":{{"len":2,"sha256":"{sha}"}},"b":{{"len":3,"sha256":"{sha}"}}}},"type":"x","files2":1}}"#
        );
        let m = streamed(text.as_bytes());
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        let mut out = Vec::new();
        write_canonical(&mut out, &m, "").expect("canonical");
        assert_eq!(out, jcs(&doc).expect("jcs"));
        let rows = m.files.expect("rows");
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[1].1,
            Entry::Compact {
                sha256: [0xcd; 32],
                len: 3
            }
        );
        // `files` given twice: the last one counts, whatever it is.
        let m = streamed(br#"{"files":{"a":1},"files":7}"#);
        assert!(m.files.is_none());
        assert_eq!(m.members["files"], json!(7));
        let m = streamed(br#"{"files":7,"files":{"a":1}}"#);
        assert!(m.files.is_some() && !m.members.contains_key("files"));
    }

    #[test]
    fn the_signature_is_checked_as_verify_snapshot_checks_it() {
        let k = key();
        let pinned = PinnedKey::parse(&k.vkey()).expect("vkey");
        let doc = signed(&k, files());
        let good = serde_json::to_vec_pretty(&doc).expect("bytes");
        assert_eq!(both(&good, &pinned), (Ok(()), Ok(())));

        let changed = |f: &dyn Fn(&mut Map<String, Value>)| {
            let mut d = doc.clone();
            f(d.as_object_mut().expect("object"));
            serde_json::to_vec(&d).expect("bytes")
        };
        let cases: Vec<(Vec<u8>, VerifyError)> = vec![
            (
                changed(&|m| m["files"]["index.html"]["len"] = json!(10)),
                VerifyError::BadSignature,
            ),
            (
                changed(&|m| m["files"]["odd.txt"][0] = json!(2)),
                VerifyError::BadSignature,
            ),
            (
                changed(&|m| {
                    m["files"]
                        .as_object_mut()
                        .expect("files")
                        .remove("huge.txt");
                }),
                VerifyError::BadSignature,
            ),
            (
                changed(&|m| {
                    m.remove("signature");
                }),
                VerifyError::NoSignature,
            ),
            (
                changed(&|m| m["signature"] = json!("AAAA")),
                VerifyError::BadSignatureEncoding,
            ),
            (
                changed(&|m| m["key_id"] = json!("00000000")),
                VerifyError::KeyIdMismatch {
                    found: Some("00000000".into()),
                    expected: k.key_id_hex(),
                },
            ),
            (
                changed(&|m| m["scope"] = json!("anything")),
                VerifyError::Scope,
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(both(&bytes, &pinned), (Err(want.clone()), Err(want)));
        }
        // Another key, and a manifest signed under the `x-` members.
        let other = PinnedKey::parse(&key_b().public_b64()).expect("b64");
        assert_eq!(
            both(&good, &other),
            (
                Err(VerifyError::BadSignature),
                Err(VerifyError::BadSignature)
            )
        );
        let mut m = doc.as_object().expect("object").clone();
        m.remove("signature");
        m.remove("key_id");
        k.sign_object_extension(&mut m).expect("sign");
        let ext = serde_json::to_vec(&Value::Object(m)).expect("bytes");
        assert_eq!(both(&ext, &pinned), (Ok(()), Ok(())));
    }

    fn key_b() -> ServiceKey {
        ServiceKey::from_seed(&[8u8; 32], "example.org/log")
    }

    /// A weak key (the identity point) with R the identity and S zero passes Ed25519's plain
    /// equation for every message; `verify_strict` refuses it, and so must the stream.
    #[test]
    fn a_weak_key_or_small_order_r_is_refused_as_verify_strict_refuses_it() {
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = PinnedKey {
            key: ed25519_dalek::VerifyingKey::from_bytes(&identity).expect("a point"),
            key_id: None,
        };
        let mut sig = [0u8; 64];
        sig[0] = 1;
        let forged = ed25519_dalek::Signature::from_bytes(&sig);
        // Without the strict checks, the stream would accept it.
        let mut plain = weak.key.verify_stream(&forged).expect("stream");
        plain.update(b"any message at all");
        assert!(plain.finalize_and_verify().is_ok());
        let text = format!(
            r#"{{"type":"x","files":{{}},"signature":"{}"}}"#,
            base64::engine::general_purpose::STANDARD.encode(sig)
        );
        assert_eq!(
            both(text.as_bytes(), &weak),
            (
                Err(VerifyError::BadSignature),
                Err(VerifyError::BadSignature)
            )
        );
    }

    #[test]
    fn what_is_not_an_object_or_not_json_is_said_so() {
        for text in ["[1, {\"files\": 2}]", "\"x\"", "3", "null", "true"] {
            assert!(matches!(
                read(text.as_bytes(), &mut quiet()),
                Err(ReadError::NotAnObject)
            ));
        }
        for text in ["{\"files\": {", "{} x", ""] {
            assert!(matches!(
                read(text.as_bytes(), &mut quiet()),
                Err(ReadError::Json(_))
            ));
        }
    }
}
