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

/// True when any byte of the 8-byte word needs a JCS escape (`"`, `\\`, or below 0x20).
#[inline]
fn word_needs_escape(w: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    let q = w ^ (LO * b'"' as u64);
    let quote = q.wrapping_sub(LO) & !q & HI;
    let s = w ^ (LO * b'\\' as u64);
    let slash = s.wrapping_sub(LO) & !s & HI;
    (control | quote | slash) != 0
}

/// The escape for byte `b`, if it needs one.
#[inline]
fn escape_of(b: u8) -> Option<[u8; 6]> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = |c: u8| Some([b'\\', c, 0, 0, 0, 0]);
    match b {
        b'"' => short(b'"'),
        b'\\' => short(b'\\'),
        0x08 => short(b'b'),
        0x09 => short(b't'),
        0x0a => short(b'n'),
        0x0c => short(b'f'),
        0x0d => short(b'r'),
        0x00..=0x1f => Some([
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(b >> 4) as usize],
            HEX[(b & 0xf) as usize],
        ]),
        _ => None,
    }
}

/// Write `s` as a JCS string literal (RFC 8785 section 3.2.2.2): `"` and `\\` escaped, the
/// short forms for backspace, tab, newline, form feed and carriage return, `\\u00xx` (lower-case
/// hex) for other controls, every other character as its UTF-8 bytes.
///
/// The text is checked 32 bytes at a time (a loop the compiler turns into vector compares);
/// runs without a byte to escape are passed on whole.
pub fn write_string<S: Sink>(out: &mut S, s: &str) {
    out.put(b"\"");
    write_string_body(out, s);
    out.put(b"\"");
}

/// The inside of [`write_string`]'s literal, without the quotes (callers that write a
/// quote next to other fixed bytes write them in one piece).
fn write_string_body<S: Sink>(out: &mut S, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut chunks = bytes.chunks_exact(32);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        if chunk_needs_escape(chunk) {
            start = escape_run(out, bytes, start, at, at + 32);
        }
        at += 32;
    }
    let end = bytes.len();
    if at < end && word_run_needs_escape(chunks.remainder()) {
        start = escape_run(out, bytes, start, at, end);
    }
    out.put(&bytes[start..]);
}

/// True when any of the 32 bytes needs a JCS escape.
#[inline]
fn chunk_needs_escape(chunk: &[u8]) -> bool {
    let mut hit = 0u8;
    for &b in chunk {
        hit |= u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\');
    }
    hit != 0
}

/// True when any byte of a short run (under 32 bytes) needs a JCS escape, 8 at a time.
#[inline]
fn word_run_needs_escape(run: &[u8]) -> bool {
    let mut words = run.chunks_exact(8);
    for w in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        if word_needs_escape(u64::from_le_bytes(b)) {
            return true;
        }
    }
    words.remainder().iter().any(|&b| escape_of(b).is_some())
}

/// Write `bytes[start..to]` with its escapes, given that the bytes before `from` need none;
/// returns where the unwritten rest begins.
#[cold]
fn escape_run<S: Sink>(
    out: &mut S,
    bytes: &[u8],
    mut start: usize,
    from: usize,
    to: usize,
) -> usize {
    for (i, &b) in bytes.iter().enumerate().take(to).skip(from) {
        if let Some(esc) = escape_of(b) {
            out.put(&bytes[start..i]);
            let n = if esc[1] == b'u' { 6 } else { 2 };
            out.put(&esc[..n]);
            start = i + 1;
        }
    }
    start
}

/// Compare two strings by their UTF-16 code units, the JCS property order.
///
/// UTF-8 bytes order strings as their code points do, and so does UTF-16 but for one case:
/// at the first character where they differ, one in U+E000..=U+FFFF (lead byte 0xEE or 0xEF)
/// and the other above U+FFFF (lead byte 0xF0 or more, a surrogate pair in UTF-16, which
/// sorts first). So the first differing byte decides.
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(i) => match (x[i], y[i]) {
            (0xEE..=0xEF, 0xF0..) => std::cmp::Ordering::Greater,
            (0xF0.., 0xEE..=0xEF) => std::cmp::Ordering::Less,
            (p, q) => p.cmp(&q),
        },
    }
}

fn write_int<S: Sink>(out: &mut S, v: i64) {
    match v {
        0 => out.put(b"0"),
        1 => out.put(b"1"),
        _ => out.put(v.to_string().as_bytes()),
    }
}

fn write_flags<S: Sink>(out: &mut S, flags: &Flags<'_>) {
    let flags = flags.as_slice();
    let mut put = |n: usize, (k, v): &(std::borrow::Cow<'_, str>, i64)| {
        out.put(if n == 0 { b"{\"" } else { b",\"" });
        write_string_body(out, k);
        out.put(b"\":");
        write_int(out, *v);
    };
    match flags.len() {
        0 => out.put(b"{"),
        1 => put(0, &flags[0]),
        2 => {
            let (a, b) = if utf16_cmp(&flags[0].0, &flags[1].0).is_le() {
                (&flags[0], &flags[1])
            } else {
                (&flags[1], &flags[0])
            };
            put(0, a);
            put(1, b);
        }
        _ => {
            // Sort references by UTF-16 order without allocating for the common case.
            let mut idx: [usize; 8] = [0; 8];
            let mut heap;
            let order: &mut [usize] = if flags.len() <= idx.len() {
                for (i, slot) in idx.iter_mut().enumerate().take(flags.len()) {
                    *slot = i;
                }
                &mut idx[..flags.len()]
            } else {
                heap = (0..flags.len()).collect::<Vec<_>>();
                &mut heap[..]
            };
            order.sort_unstable_by(|&a, &b| utf16_cmp(&flags[a].0, &flags[b].0));
            for (n, &i) in order.iter().enumerate() {
                put(n, &flags[i]);
            }
        }
    }
    out.put(b"}");
}

fn write_turn<S: Sink>(out: &mut S, t: &Turn<'_>) {
    // Keys in UTF-16 order: "D" < "M" < "Y" < "context"; the caller wrote `{"D":"`.
    write_string_body(out, &t.d);
    out.put(b"\",\"M\":\"");
    write_string_body(out, &t.m);
    out.put(b"\",\"Y\":\"");
    write_string_body(out, &t.y);
    out.put(b"\",\"context\":");
    write_flags(out, &t.context);
    out.put(b"}");
}

/// Stream JCS(`{"context_key":…,"turns":[…]}`) into `out`.
pub fn write_trace<S: Sink>(out: &mut S, trace: TraceRef<'_, '_>) {
    out.put(b"{\"context_key\":");
    write_string(out, trace.context_key);
    out.put(b",\"turns\":[");
    for (i, t) in trace.turns.iter().enumerate() {
        out.put(if i == 0 { b"{\"D\":\"" } else { b",{\"D\":\"" });
        write_turn(out, t);
    }
    out.put(b"]}");
}

/// A sink that batches small writes into a fixed buffer before passing them on, so a hasher
/// sees a few large updates instead of one per token.
pub struct Buffered<'s, S: Sink> {
    inner: &'s mut S,
    buf: [u8; BUFFER],
    len: usize,
}

const BUFFER: usize = 4 * 1024;

impl<'s, S: Sink> Buffered<'s, S> {
    /// Wrap `inner`.
    pub fn new(inner: &'s mut S) -> Self {
        Buffered {
            inner,
            buf: [0u8; BUFFER],
            len: 0,
        }
    }

    /// Pass everything buffered on to the inner sink.
    pub fn flush(&mut self) {
        if self.len > 0 {
            self.inner.put(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl<S: Sink> Sink for Buffered<'_, S> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(room) => {
                room.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.put_full(bytes),
        }
    }
}

impl<S: Sink> Buffered<'_, S> {
    /// `put` when the bytes do not fit in what is left of the buffer.
    #[cold]
    fn put_full(&mut self, bytes: &[u8]) {
        self.flush();
        if bytes.len() >= BUFFER {
            self.inner.put(bytes);
        } else {
            self.buf[..bytes.len()].copy_from_slice(bytes);
            self.len = bytes.len();
        }
    }
}

impl<S: Sink> Drop for Buffered<'_, S> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The raw 32 bytes of `sha256(trace)`.
pub fn trace_sha256(trace: TraceRef<'_, '_>) -> [u8; 32] {
    let mut h = Sha256::new();
    {
        let mut b = Buffered::new(&mut h);
        write_trace(&mut b, trace);
    }
    h.finalize().into()
}

/// Canonical bytes of a JSON value (RFC 8785).
///
/// Fails only for values JSON cannot carry (non-finite numbers).
pub fn jcs(value: &serde_json::Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(1024);
    write_value(&mut out, value)?;
    Ok(out)
}

/// Canonical bytes of a JSON object given as a map.
pub fn jcs_map(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(1024);
    write_object(&mut out, map)?;
    Ok(out)
}

/// Canonical bytes of a JSON object given as `map` plus `raw` members whose values are
/// already canonical bytes (spliced in as they are, never parsed). Members are ordered as
/// RFC 8785 orders them; a name in both `map` and `raw` is an error.
///
/// This is how a large document is assembled from pre-rendered parts: the caller guarantees
/// each raw value is itself RFC 8785 output.
pub fn jcs_map_with_raw(
    map: &serde_json::Map<String, serde_json::Value>,
    raw: &[(&str, &[u8])],
) -> Result<Vec<u8>, CanonicalError> {
    enum Member<'a> {
        Value(&'a serde_json::Value),
        Raw(&'a [u8]),
    }
    let mut members: Vec<(&str, Member<'_>)> = map
        .iter()
        .map(|(k, v)| (k.as_str(), Member::Value(v)))
        .collect();
    for (k, bytes) in raw {
        if map.contains_key(*k) {
            return Err(CanonicalError(format!("member {k} given twice")));
        }
        members.push((k, Member::Raw(bytes)));
    }
    members.sort_by(|a, b| utf16_cmp(a.0, b.0));
    let cap = 256 + raw.iter().map(|(_, b)| b.len()).sum::<usize>();
    let mut out = Vec::with_capacity(cap);
    out.put(b"{");
    for (i, (k, m)) in members.into_iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_string(&mut out, k);
        out.put(b":");
        match m {
            Member::Value(v) => write_value(&mut out, v)?,
            Member::Raw(bytes) => out.put(bytes),
        }
    }
    out.put(b"}");
    Ok(out)
}

/// Largest integer magnitude an IEEE double holds exactly (2^53).
const MAX_EXACT_INT: u64 = 1 << 53;

/// Write a finite double in RFC 8785 form (ECMAScript `Number.prototype.toString`).
pub fn write_f64<S: Sink>(out: &mut S, f: f64) -> Result<(), CanonicalError> {
    if !f.is_finite() {
        return Err(CanonicalError("NaN and infinities are not JSON".into()));
    }
    let mut buf = ryu_js::Buffer::new();
    out.put(buf.format_finite(f).as_bytes());
    Ok(())
}

/// Write an unsigned integer (exact up to 2^53, as every JSON number is a double).
pub fn write_u64<S: Sink>(out: &mut S, u: u64) -> Result<(), CanonicalError> {
    if u <= MAX_EXACT_INT {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        let mut n = u;
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        out.put(&buf[i..]);
        Ok(())
    } else {
        write_f64(out, u as f64)
    }
}

fn write_number<S: Sink>(out: &mut S, n: &serde_json::Number) -> Result<(), CanonicalError> {
    // JSON numbers are IEEE doubles under RFC 8785: integers print as integers while exact,
    // and every other number in ECMAScript Number.prototype.toString form (ryu-js).
    if let Some(u) = n.as_u64().filter(|u| *u <= MAX_EXACT_INT) {
        return write_u64(out, u);
    }
    if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= MAX_EXACT_INT) {
        out.put(i.to_string().as_bytes());
        return Ok(());
    }
    let f = n
        .as_f64()
        .ok_or_else(|| CanonicalError(format!("number {n} is not representable")))?;
    write_f64(out, f)
}

fn write_object<S: Sink>(
    out: &mut S,
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), CanonicalError> {
    let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
    entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
    out.put(b"{");
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        write_string(out, k);
        out.put(b":");
        write_value(out, v)?;
    }
    out.put(b"}");
    Ok(())
}

/// Write a JSON array, each item by `item`.
pub fn write_array<S: Sink, T>(
    out: &mut S,
    items: impl IntoIterator<Item = T>,
    mut item: impl FnMut(&mut S, T) -> Result<(), CanonicalError>,
) -> Result<(), CanonicalError> {
    out.put(b"[");
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            out.put(b",");
        }
        item(out, x)?;
    }
    out.put(b"]");
    Ok(())
}

/// Stream the canonical form of any JSON value.
pub fn write_value<S: Sink>(out: &mut S, v: &serde_json::Value) -> Result<(), CanonicalError> {
    use serde_json::Value;
    match v {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(n) => write_number(out, n)?,
        Value::String(s) => write_string(out, s),
        Value::Array(items) => write_array(out, items, |o, v| write_value(o, v))?,
        Value::Object(map) => write_object(out, map)?,
    }
    Ok(())
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

    proptest::proptest! {
        /// The byte-wise comparison orders strings as their UTF-16 code units do, whatever
        /// mix of ASCII, two- and three-byte, U+E000..U+FFFF and supplementary characters
        /// they hold.
        #[test]
        fn utf16_cmp_is_the_order_of_utf16_code_units(
            a in "[a-c\u{e9}\u{7ff}\u{800}\u{d7ff}\u{e000}\u{ff61}\u{ffff}\u{10000}\u{1F600}\u{10ffff}]{0,5}",
            b in "[a-c\u{e9}\u{7ff}\u{800}\u{d7ff}\u{e000}\u{ff61}\u{ffff}\u{10000}\u{1F600}\u{10ffff}]{0,5}",
        ) {
            proptest::prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
            proptest::prop_assert_eq!(utf16_cmp(&a, &a), std::cmp::Ordering::Equal);
            let longer = format!("{a}{b}");
            proptest::prop_assert_eq!(
                utf16_cmp(&a, &longer),
                a.encode_utf16().cmp(longer.encode_utf16())
            );
        }

        /// Splicing pre-rendered members gives the bytes of canonicalizing the whole object.
        #[test]
        fn raw_members_splice_to_the_whole_objects_bytes(
            plain in proptest::collection::btree_map("[a-z\u{e9}\u{1F600}]{1,6}", -1e6f64..1e6, 0..6),
            spliced in proptest::collection::btree_map("[A-Z_]{1,6}", proptest::collection::vec(0u32..1000, 0..5), 0..4),
        ) {
            let mut map = serde_json::Map::new();
            for (k, v) in &plain {
                map.insert(k.clone(), serde_json::json!(v));
            }
            let raws: Vec<(String, Vec<u8>)> = spliced
                .iter()
                .map(|(k, v)| (k.clone(), jcs(&serde_json::json!(v)).unwrap()))
                .collect();
            let refs: Vec<(&str, &[u8])> =
                raws.iter().map(|(k, b)| (k.as_str(), b.as_slice())).collect();
            let got = jcs_map_with_raw(&map, &refs).unwrap();
            let mut whole = map.clone();
            for (k, v) in &spliced {
                whole.insert(k.clone(), serde_json::json!(v));
            }
            proptest::prop_assert_eq!(got, jcs_map(&whole).unwrap());
        }
    }

    #[test]
    fn a_member_given_twice_is_refused() {
        let mut map = serde_json::Map::new();
        map.insert("a".into(), serde_json::json!(1));
        assert!(jcs_map_with_raw(&map, &[("a", b"2")]).is_err());
    }
}
