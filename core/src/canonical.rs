//! Canonical JSON (RFC 8785, JCS) and the trace hash.
//!
//! `sha256(trace)` is the SHA-256 of the JCS bytes of `{"context_key":…,"turns":[…]}`. Those
//! bytes are streamed straight from the typed trace into the hasher: no intermediate `Value`, no
//! intermediate buffer beyond small chunks. Signed objects are small and go through
//! `serde_json_canonicalizer` instead.

use sha2::{Digest, Sha256};

use crate::trace::{Flags, TraceRef, Turn};

/// A sink for canonical bytes.
pub trait Sink {
    /// Append bytes.
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// Write `s` as a JCS string literal (RFC 8785 section 3.2.2.2).
pub fn write_string<S: Sink>(out: &mut S, s: &str) {
    out.put(b"\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.put(&bytes[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.put(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ]);
        } else {
            out.put(esc);
        }
        start = i + 1;
    }
    out.put(&bytes[start..]);
    out.put(b"\"");
}

/// Compare two strings by their UTF-16 code units, the JCS property order.
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_int<S: Sink>(out: &mut S, v: i64) {
    match v {
        0 => out.put(b"0"),
        1 => out.put(b"1"),
        _ => out.put(v.to_string().as_bytes()),
    }
}

fn write_flags<S: Sink>(out: &mut S, flags: &Flags<'_>) {
    out.put(b"{");
    // Flags are few; sort references by UTF-16 order without allocating for the common case.
    let mut idx: [usize; 8] = [0; 8];
    let mut heap;
    let order: &mut [usize] = if flags.0.len() <= idx.len() {
        for (i, slot) in idx.iter_mut().enumerate().take(flags.0.len()) {
            *slot = i;
        }
        &mut idx[..flags.0.len()]
    } else {
        heap = (0..flags.0.len()).collect::<Vec<_>>();
        &mut heap[..]
    };
    order.sort_unstable_by(|&a, &b| utf16_cmp(&flags.0[a].0, &flags.0[b].0));
    for (n, &i) in order.iter().enumerate() {
        if n > 0 {
            out.put(b",");
        }
        let (k, v) = &flags.0[i];
        write_string(out, k);
        out.put(b":");
        write_int(out, *v);
    }
    out.put(b"}");
}

fn write_turn<S: Sink>(out: &mut S, t: &Turn<'_>) {
    // Keys in UTF-16 order: "D" < "M" < "Y" < "context".
    out.put(b"{\"D\":");
    write_string(out, &t.d);
    out.put(b",\"M\":");
    write_string(out, &t.m);
    out.put(b",\"Y\":");
    write_string(out, &t.y);
    out.put(b",\"context\":");
    write_flags(out, &t.context);
    out.put(b"}");
}

/// Stream JCS(`{"context_key":…,"turns":[…]}`) into `out`.
pub fn write_trace<S: Sink>(out: &mut S, trace: TraceRef<'_, '_>) {
    out.put(b"{\"context_key\":");
    write_string(out, trace.context_key);
    out.put(b",\"turns\":[");
    for (i, t) in trace.turns.iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_turn(out, t);
    }
    out.put(b"]}");
}

/// The raw 32 bytes of `sha256(trace)`.
pub fn trace_sha256(trace: TraceRef<'_, '_>) -> [u8; 32] {
    let mut h = Sha256::new();
    write_trace(&mut h, trace);
    h.finalize().into()
}

/// Canonical bytes of a JSON value (RFC 8785).
///
/// Fails only for values JSON cannot carry (non-finite numbers).
pub fn jcs(value: &serde_json::Value) -> Result<Vec<u8>, CanonicalError> {
    serde_json_canonicalizer::to_vec(value).map_err(|e| CanonicalError(e.to_string()))
}

/// A value could not be canonicalized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot canonicalize: {0}")]
pub struct CanonicalError(pub String);

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{parse_json, TraceDoc};

    fn canon_via_value(body: &str) -> Vec<u8> {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        jcs(&v).unwrap()
    }

    #[test]
    fn streamed_equals_generic_jcs() {
        let body = "{\"turns\":[{\"context\":{\"z\":1,\"monitored\":0,\"A\":1},\"D\":\"cl\\u0001ean\\n\",\"Y\":\"\u{e9}\u{1F600}\\\"\",\"M\":\"\\\\ \\u2028 \u{7f}\"}],\"context_key\":\"monitored\"}";
        let doc: TraceDoc = parse_json(body.as_bytes()).unwrap();
        let mut streamed = Vec::new();
        write_trace(&mut streamed, doc.trace());
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            String::from_utf8(canon_via_value(body)).unwrap()
        );
    }

    #[test]
    fn utf16_order_differs_from_bytes_above_bmp() {
        // U+FF61 (one UTF-16 unit 0xFF61) sorts after U+1F600 (surrogates 0xD83D..) in UTF-16.
        assert_eq!(
            utf16_cmp("\u{ff61}", "\u{1F600}"),
            std::cmp::Ordering::Greater
        );
        assert_eq!("\u{ff61}".cmp("\u{1F600}"), std::cmp::Ordering::Less);
    }
}
