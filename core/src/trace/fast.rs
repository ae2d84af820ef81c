//! One pass over a profile request body in the shape clients send (library/ATTESTATION.md):
//! the members the schema names, strings borrowed from the body (owned when they hold an
//! escape), flags as integers. It takes only JSON that `serde_json` reads the same way and
//! gives up (`None`) on anything else, for [`super::parse_json`] to read or refuse with its
//! usual error: unknown or repeated members, a missing one, a negative or non-integer flag,
//! a lone surrogate, a control character, a BOM, trailing bytes, invalid UTF-8. A property
//! test holds the two to the same answer.

use std::borrow::Cow;

use super::{Disclosure, Flags, PredicateRequest, ProfileRequest, Turn};

/// The request in `body`, or `None` when it is not in the shape this reader takes.
pub(super) fn profile_request(body: &[u8]) -> Option<ProfileRequest<'_>> {
    // Invalid UTF-8 anywhere is an error for serde_json too; checking it once lets every
    // string be borrowed as a slice of `text`.
    let text = std::str::from_utf8(body).ok()?;
    let mut r = Reader { text, at: 0 };
    let req = r.request()?;
    r.ws();
    (r.at == text.len()).then_some(req)
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

/// A byte that ends a run of plain string content: `"`, `\`, or a control character.
#[inline]
fn special(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// JSON white space.
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after white space, consumed when it is `want`.
    #[inline]
    fn eat(&mut self, want: u8) -> Option<()> {
        self.ws();
        (self.bytes().get(self.at) == Some(&want)).then(|| self.at += 1)
    }

    /// After white space: the next byte, not consumed.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes().get(self.at).copied()
    }

    /// `,` (true) or `close` (false) after a member or element.
    #[inline]
    fn more(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            b if b == close => {
                self.at += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string: borrowed when it holds no escape, as serde_json gives it.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.at;
        let end = self.plain_run(start);
        match *self.bytes().get(end)? {
            b'"' => {
                self.at = end + 1;
                Some(Cow::Borrowed(self.text.get(start..end)?))
            }
            b'\\' => self.escaped(start, end).map(Cow::Owned),
            _ => None,
        }
    }

    /// Where the run of plain string content from `from` ends, 32 bytes at a time.
    #[inline]
    fn plain_run(&self, from: usize) -> usize {
        let bytes = self.bytes();
        let mut at = from;
        while let Some(chunk) = bytes.get(at..at + 32) {
            let Ok(chunk) = <&[u8; 32]>::try_from(chunk) else {
                break;
            };
            // The compiler makes this loop vector compares.
            let mut hit = 0u8;
            for &b in chunk {
                hit |= u8::from(special(b));
            }
            if hit != 0 {
                break;
            }
            at += 32;
        }
        // The first special byte, 8 at a time.
        while let Some(word) = bytes.get(at..at + 8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let m = special_mask(u64::from_le_bytes(w));
            if m != 0 {
                return at + (m.trailing_zeros() / 8) as usize;
            }
            at += 8;
        }
        bytes[at..]
            .iter()
            .position(|&b| special(b))
            .map_or(bytes.len(), |i| at + i)
    }

    /// The rest of a string with escapes, from its content's `start`; `at` is the first
    /// backslash. serde_json's escapes: `\" \\ \/ \b \f \n \r \t \uXXXX` (a surrogate pair
    /// as two); anything else gives up.
    #[cold]
    fn escaped(&mut self, start: usize, mut at: usize) -> Option<String> {
        let bytes = self.bytes();
        let mut out = String::with_capacity(at - start + 16);
        out.push_str(self.text.get(start..at)?);
        loop {
            match *bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(out);
                }
                b'\\' => {
                    let c = match *bytes.get(at + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = hex4(bytes.get(at + 2..at + 6)?)?;
                            if (0xDC00..0xE000).contains(&hi) {
                                return None;
                            }
                            if (0xD800..0xDC00).contains(&hi) {
                                if bytes.get(at + 6..at + 8)? != b"\\u" {
                                    return None;
                                }
                                let lo = hex4(bytes.get(at + 8..at + 12)?)?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return None;
                                }
                                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                out.push(char::from_u32(c)?);
                                at += 12;
                                continue;
                            }
                            out.push(char::from_u32(hi)?);
                            at += 6;
                            continue;
                        }
                        _ => return None,
                    };
                    out.push(c);
                    at += 2;
                }
                _ => {
                    let end = self.plain_run(at);
                    if end == at {
                        // A control character.
                        return None;
                    }
                    out.push_str(self.text.get(at..end)?);
                    at = end;
                }
            }
        }
    }

    /// A member name without escapes (a name with one gives up), and its `:`.
    fn key(&mut self) -> Option<&'a [u8]> {
        let Cow::Borrowed(k) = self.string()? else {
            return None;
        };
        self.eat(b':')?;
        Some(k.as_bytes())
    }

    fn request(&mut self) -> Option<ProfileRequest<'a>> {
        self.eat(b'{')?;
        let (mut context_key, mut turns, mut disclosure, mut meter) = (None, None, None, None);
        if self.peek()? != b'}' {
            loop {
                match self.key()? {
                    b"context_key" if context_key.is_none() => context_key = Some(self.string()?),
                    b"turns" if turns.is_none() => turns = Some(self.turns()?),
                    b"disclosure" if disclosure.is_none() => disclosure = Some(self.disclosure()?),
                    b"meter" if meter.is_none() => meter = Some(self.string()?),
                    _ => return None,
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        } else {
            self.at += 1;
        }
        Some(ProfileRequest {
            context_key: context_key?,
            turns: turns?,
            disclosure: disclosure.flatten(),
            meter,
        })
    }

    fn turns(&mut self) -> Option<Vec<Turn<'a>>> {
        self.eat(b'[')?;
        let mut turns = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(turns);
        }
        loop {
            turns.push(self.turn()?);
            if !self.more(b']')? {
                return Some(turns);
            }
        }
    }

    fn turn(&mut self) -> Option<Turn<'a>> {
        self.eat(b'{')?;
        let (mut y, mut m, mut d, mut context) = (None, None, None, None);
        if self.peek()? == b'}' {
            return None;
        }
        loop {
            match self.key()? {
                b"Y" if y.is_none() => y = Some(self.string()?),
                b"M" if m.is_none() => m = Some(self.string()?),
                b"D" if d.is_none() => d = Some(self.string()?),
                b"context" if context.is_none() => context = Some(self.flags()?),
                _ => return None,
            }
            if !self.more(b'}')? {
                break;
            }
        }
        Some(Turn {
            y: y?,
            m: m?,
            d: d?,
            context: context?,
        })
    }

    fn flags(&mut self) -> Option<Flags<'a>> {
        self.eat(b'{')?;
        let mut out = Flags::default();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(out);
        }
        loop {
            let name = self.string()?;
            self.eat(b':')?;
            if out.as_slice().iter().any(|(k, _)| *k == name) {
                return None;
            }
            let value = self.flag_value()?;
            out.push((name, value));
            if !self.more(b'}')? {
                return Some(out);
            }
        }
    }

    /// A non-negative JSON integer that fits u64, as serde_json hands it to the flag's
    /// visitor (saturated to `i64::MAX`); a sign, a fraction, an exponent, a leading zero
    /// or a larger number gives up.
    fn flag_value(&mut self) -> Option<i64> {
        self.ws();
        let bytes = self.bytes();
        let start = self.at;
        let mut v: u64 = 0;
        while let Some(&c @ b'0'..=b'9') = bytes.get(self.at) {
            v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        if digits == 0 || (digits > 1 && bytes[start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = bytes.get(self.at) {
            return None;
        }
        Some(i64::try_from(v).unwrap_or(i64::MAX))
    }

    /// `null` (none) or `{"predicate":{"metric":…,"band":…}}`.
    fn disclosure(&mut self) -> Option<Option<Disclosure>> {
        if self.peek()? == b'n' {
            let rest = self.bytes().get(self.at..self.at + 4)?;
            self.at += 4;
            return (rest == b"null").then_some(None);
        }
        self.eat(b'{')?;
        if self.key()? != b"predicate" {
            return None;
        }
        self.eat(b'{')?;
        let (mut metric, mut band) = (None, None);
        loop {
            match self.key()? {
                b"metric" if metric.is_none() => metric = Some(self.string()?.into_owned()),
                b"band" if band.is_none() => band = Some(self.string()?.into_owned()),
                _ => return None,
            }
            if !self.more(b'}')? {
                break;
            }
        }
        self.eat(b'}')?;
        Some(Some(Disclosure {
            predicate: PredicateRequest {
                metric: metric?,
                band: band?,
            },
        }))
    }
}

/// The high bit of each byte of `w` (little-endian) that is `"`, `\` or below 0x20, exact
/// up to the lowest one (a borrow can only mark bytes above a marked one).
#[inline]
fn special_mask(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    let q = w ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q & HI;
    let s = w ^ (LO * u64::from(b'\\'));
    let slash = s.wrapping_sub(LO) & !s & HI;
    control | quote | slash
}

/// Four hex digits (either case).
fn hex4(h: &[u8]) -> Option<u32> {
    h.iter().try_fold(0u32, |v, &c| {
        let d = (c as char).to_digit(16)?;
        Some(v * 16 + d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// serde_json's answer, the reference.
    fn reference(body: &[u8]) -> Option<ProfileRequest<'_>> {
        serde_json::from_slice(body).ok()
    }

    /// JSON white space, usually none.
    fn ws() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => Just(String::new()),
            1 => prop::sample::select(vec![" ", "\n", "\t ", "\r\n  ", "\u{b}", "\u{a0}"])
                .prop_map(String::from),
        ]
    }

    /// String literals: plain, escaped (valid and not), non-ASCII, controls, surrogates.
    fn literal() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-zA-Z0-9 _.-]{0,40}".prop_map(|s| format!("\"{s}\"")),
            1 => prop::sample::select(vec![
                r#""a\"b""#, r#""a\\b""#, r#""\/""#, r#""\b\f\n\r\t""#, r#""\u00e9t\u00C9""#,
                r#""\ud83d\ude00""#, r#""\ud83d""#, r#""\ude00x""#, r#""\ud83dx""#,
                r#""\ud83d\u0041""#, r#""\u12""#, r#""\x41""#, "\"tab\there\"", "\"nul\u{0}\"",
                "\"caf\u{e9} \u{2019} \u{1F600}\"", r#""\u0000""#, r#""""#, r#""unterminated"#,
                r#""monitored""#, r#""\u006donitored""#, r#""Y""#, r#""D""#,
            ])
            .prop_map(String::from),
        ]
    }

    /// Flag values: integers serde takes and forms it refuses.
    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => prop::sample::select(vec!["0", "1"]).prop_map(String::from),
            1 => prop::sample::select(vec![
                "2", "01", "-1", "-0", "1.0", "1e0", "1E2", "18446744073709551615",
                "18446744073709551616", "9223372036854775808", "00", "true", "\"1\"", "null",
                "-", "1.", "+1",
            ])
            .prop_map(String::from),
        ]
    }

    fn flags() -> impl Strategy<Value = String> {
        prop::collection::vec(
            (
                prop_oneof![
                    4 => prop::sample::select(vec!["\"monitored\"", "\"flagged\"", "\"x\""])
                        .prop_map(String::from),
                    1 => literal(),
                ],
                number(),
                ws(),
            ),
            0..4,
        )
        .prop_map(|fs| {
            let inner: Vec<String> = fs
                .iter()
                .map(|(k, v, w)| format!("{k}{w}:{w}{v}"))
                .collect();
            format!("{{{}}}", inner.join(","))
        })
    }

    fn turn() -> impl Strategy<Value = String> {
        (
            literal(),
            literal(),
            literal(),
            flags(),
            prop::collection::vec(0usize..4, 0..6),
            ws(),
            prop_oneof![8 => Just(None), 1 => literal().prop_map(Some)],
        )
            .prop_map(|(y, m, d, ctx, order, w, extra)| {
                let members = [
                    format!("\"Y\":{w}{y}"),
                    format!("\"M\":{m}"),
                    format!("{w}\"D\"{w}:{d}"),
                    format!("\"context\":{ctx}"),
                ];
                // Usually all four once, in some order; sometimes one missing or repeated.
                let mut picked: Vec<String> = if order.len() == 4 {
                    order.iter().map(|&i| members[i].clone()).collect()
                } else {
                    let mut all = members.to_vec();
                    all.rotate_left(order.len() % 4);
                    all
                };
                if let Some(x) = extra {
                    picked.push(format!("{x}:1"));
                }
                format!("{{{}}}", picked.join(","))
            })
    }

    fn body() -> impl Strategy<Value = String> {
        (
            literal(),
            prop::collection::vec(turn(), 0..5),
            prop_oneof![
                4 => Just(String::new()),
                1 => prop::sample::select(vec![
                    r#","disclosure":null"#,
                    r#","disclosure":{"predicate":{"metric":"i_c_m","band":"under_0.05"}}"#,
                    r#","disclosure":{"predicate":{"band":"x","metric":"y"}}"#,
                    r#","disclosure":{"predicate":{"metric":"i_c_m"}}"#,
                    r#","disclosure":{"predicate":{"metric":"a","band":"b","c":1}}"#,
                    r#","disclosure":{}"#,
                    r#","disclosure":nul"#,
                    r#","meter":"meter/1""#,
                    r#","meter":"meter/\u0032""#,
                    r#","meter":"meter/9""#,
                    r#","meter":null"#,
                    r#","meter":2"#,
                    r#","extra":1"#,
                    r#","turns":[]"#,
                    r#","context_key":"b""#,
                ])
                .prop_map(String::from),
            ],
            ws(),
            prop_oneof![
                8 => Just(String::new()),
                1 => prop::sample::select(vec!["x", ",", "\u{feff}", "}", " \n"])
                    .prop_map(String::from),
            ],
            any::<bool>(),
        )
            .prop_map(|(key, turns, more, w, tail, key_first)| {
                let key = format!("\"context_key\"{w}:{key}");
                let turns = format!("\"turns\":{w}[{w}{}]", turns.join(&format!(",{w}")));
                let (a, b) = if key_first {
                    (key, turns)
                } else {
                    (turns, key)
                };
                format!("{w}{{{a},{b}{more}}}{tail}")
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]

        /// Whatever the reader takes, serde_json takes and reads the same; and it takes
        /// every well-formed body of the usual shape.
        #[test]
        fn the_reader_agrees_with_serde_json(text in body()) {
            let fast = profile_request(text.as_bytes());
            let slow = reference(text.as_bytes());
            if let Some(f) = &fast {
                prop_assert_eq!(Some(f), slow.as_ref(), "{}", text);
            }
        }

        /// Cut anywhere, a body the reader takes is still never read differently.
        #[test]
        fn cut_bodies_agree(text in body(), cut in any::<prop::sample::Index>()) {
            let bytes = text.as_bytes();
            let cut = &bytes[..cut.index(bytes.len() + 1)];
            if let Some(f) = profile_request(cut) {
                prop_assert_eq!(Some(f), reference(cut));
            }
        }
    }

    #[test]
    fn the_usual_bodies_take_the_fast_path() {
        let bodies = [
            r#"{"context_key":"monitored","turns":[{"D":"clean","M":"think","Y":"help","context":{"flagged":0,"monitored":1}}]}"#,
            "{ \"turns\" : [ { \"Y\" : \"a\\nb\" , \"M\" : \"caf\u{e9}\" , \"D\" : \"x\" , \"context\" : { \"m\" : 1 } } ] , \"context_key\" : \"m\" }\n",
            r#"{"context_key":"m","turns":[],"disclosure":{"predicate":{"metric":"i_c_m","band":"under_0.05"}}}"#,
            r#"{"context_key":"m","turns":[{"Y":"","M":"\ud83d\ude00","D":"","context":{}}],"disclosure":null}"#,
        ];
        for b in bodies {
            let fast = profile_request(b.as_bytes());
            assert!(fast.is_some(), "{b}");
            assert_eq!(fast, reference(b.as_bytes()), "{b}");
        }
        // Escaped strings are owned, plain ones borrowed, as serde_json gives them.
        let req = profile_request(bodies[1].as_bytes()).unwrap_or_else(|| panic!("fast"));
        assert!(matches!(req.turns[0].y, Cow::Owned(_)));
        assert!(matches!(req.turns[0].m, Cow::Borrowed(_)));
    }

    #[test]
    fn what_serde_json_refuses_is_left_to_it() {
        for b in [
            r#"{"context_key":"m","turns":[{"Y":"a","M":"b","D":"c","context":{"m":-0}}]}"#,
            r#"{"context_key":"m","turns":[{"Y":"a","M":"b","D":"c","context":{"m":1.0}}]}"#,
            r#"{"context_key":"m","turns":[{"Y":"a","M":"b","D":"c","context":{"m":0,"m":1}}]}"#,
            r#"{"context_key":"m","turns":[{"Y":"a","M":"\ud800","D":"c","context":{"m":0}}]}"#,
            r#"{"context_key":"m","turns":[{"Y":"a","Y":"a","M":"b","D":"c","context":{}}]}"#,
            r#"{"context_key":"m","turns":[],"extra":1}"#,
            r#"{"context_key":"m","turns":[]} x"#,
            "\u{feff}{\"context_key\":\"m\",\"turns\":[]}",
            r#"{"context_key":"m"}"#,
        ] {
            assert_eq!(profile_request(b.as_bytes()), None, "{b}");
        }
    }
}
