//! The trace model (library/METER.md, library/ATTESTATION.md), its parser and its validator.
//!
//! Parsing borrows strings from the request body wherever JSON escapes allow it, so the hot
//! path allocates little. Every rejection names the JSON pointer of the offending value
//! (`/turns/17/context/monitored`). The rules here and `schemas/trace.json` agree; the one rule a
//! JSON Schema cannot express (the flag named by `context_key` is present in every turn) is
//! stated in the schema's description and tested separately.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

mod fast;

/// Most turns a trace may carry.
pub const MAX_TURNS: usize = 10_000;
/// Most characters (Unicode scalar values, as JSON Schema `maxLength` counts) in one string.
pub const MAX_STRING_CHARS: usize = 65_536;
/// Most flags in one turn's `context`.
pub const MAX_FLAGS: usize = 64;
/// Most characters in a flag name (and in `context_key`).
pub const MAX_FLAG_NAME: usize = 64;
/// Most distinct D symbols (trimmed, lower-cased actions) in one trace. The meter's cost
/// grows with the number of table columns (the joint table has up to four per D symbol), so
/// this bounds what any one request can cost (library/METER.md, BENCHMARKS.md).
pub const MAX_D_SYMBOLS: usize = 256;

/// One turn of a trace: declared purpose `Y`, reasoning `M`, action `D`, detector flags.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn<'a> {
    /// Declared bound or purpose the turn ran under.
    #[serde(rename = "Y", borrow)]
    pub y: Cow<'a, str>,
    /// Reasoning channel.
    #[serde(rename = "M", borrow)]
    pub m: Cow<'a, str>,
    /// Action channel or detector label.
    #[serde(rename = "D", borrow)]
    pub d: Cow<'a, str>,
    /// Named integer flags.
    #[serde(borrow)]
    pub context: Flags<'a>,
}

/// A turn's context flags, in the order they were posted. The first two are kept in the
/// turn itself (most turns carry one or two), so parsing a turn allocates nothing for them.
#[derive(Debug, Clone, Default)]
pub struct Flags<'a>(FlagStore<'a>);

/// One flag: its name and value.
pub type Flag<'a> = (Cow<'a, str>, i64);

/// Flags kept inline in a turn.
const INLINE_FLAGS: usize = 2;

#[derive(Debug, Clone)]
enum FlagStore<'a> {
    Inline {
        items: [Flag<'a>; INLINE_FLAGS],
        len: usize,
    },
    Heap(Vec<Flag<'a>>),
}

impl Default for FlagStore<'_> {
    fn default() -> Self {
        FlagStore::Inline {
            items: Default::default(),
            len: 0,
        }
    }
}

impl<'a> Flags<'a> {
    /// The flags, in posted order.
    pub fn as_slice(&self) -> &[Flag<'a>] {
        match &self.0 {
            FlagStore::Inline { items, len } => &items[..*len],
            FlagStore::Heap(v) => v,
        }
    }

    /// Add a flag after the others.
    pub fn push(&mut self, flag: Flag<'a>) {
        match &mut self.0 {
            FlagStore::Inline { items, len } if *len < INLINE_FLAGS => {
                items[*len] = flag;
                *len += 1;
            }
            FlagStore::Inline { items, len } => {
                let mut v: Vec<Flag<'a>> = Vec::with_capacity(2 * INLINE_FLAGS);
                v.extend(items.iter_mut().take(*len).map(std::mem::take));
                v.push(flag);
                self.0 = FlagStore::Heap(v);
            }
            FlagStore::Heap(v) => v.push(flag),
        }
    }

    /// The value of flag `name`, if present.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.as_slice()
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    }
}

impl PartialEq for Flags<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Flags<'_> {}

impl<'a> From<Vec<Flag<'a>>> for Flags<'a> {
    fn from(v: Vec<Flag<'a>>) -> Self {
        let mut flags = Flags::default();
        for f in v {
            flags.push(f);
        }
        flags
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Flags<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FlagsVisitor(std::marker::PhantomData))
    }
}

struct FlagsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for FlagsVisitor<'a> {
    type Value = Flags<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of named integer flags")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Flags::default();
        while let Some(key) = map.next_key::<FlagName<'a>>()? {
            if out.as_slice().iter().any(|(k, _)| *k == key.0) {
                return Err(de::Error::custom(format_args!(
                    "duplicate flag `{}`",
                    key.0
                )));
            }
            let value: FlagValue = map.next_value()?;
            out.push((key.0, value.0));
        }
        Ok(out)
    }
}

struct FlagName<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for FlagName<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FlagName<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a flag name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(FlagName(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(FlagName(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(FlagName(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(V(std::marker::PhantomData))
    }
}

/// A flag value: a JSON integer (range-checked by the validator).
struct FlagValue(i64);

impl<'de> Deserialize<'de> for FlagValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = FlagValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("integer 0 or 1")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<FlagValue, E> {
                Ok(FlagValue(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<FlagValue, E> {
                Ok(FlagValue(v))
            }
        }
        deserializer.deserialize_i64(V)
    }
}

/// A posted predicate disclosure: only whether `metric` clears `band` leaves the service.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(inline, description = ""))]
#[serde(deny_unknown_fields)]
pub struct Disclosure {
    /// The predicate asked for.
    #[cfg_attr(feature = "schemars", schemars(description = ""))]
    pub predicate: PredicateRequest,
}

/// The metric and band of a predicate disclosure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(inline, description = ""))]
#[serde(deny_unknown_fields)]
pub struct PredicateRequest {
    /// A posted metric name (see `/predicates`).
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = crate::meter::QUANTITY_KEYS)))]
    pub metric: String,
    /// A posted band name.
    #[cfg_attr(feature = "schemars", schemars(extend("enum" = crate::limits::BANDS.map(|b| b.name))))]
    pub band: String,
}

/// Body of `POST /profile` and `POST /demo/profile`: a trace plus an optional disclosure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(
    title = "POST /profile body: a trace, and an optional disclosure",
    description = crate::schema::trace()["description"].as_str().unwrap_or_default()))]
#[serde(deny_unknown_fields)]
pub struct ProfileRequest<'a> {
    /// Names the context flag the read is conditioned on.
    #[serde(borrow)]
    #[cfg_attr(
        feature = "schemars",
        schemars(schema_with = "crate::schema::context_key", description = "")
    )]
    pub context_key: Cow<'a, str>,
    /// The ordered turns.
    #[serde(borrow)]
    #[cfg_attr(
        feature = "schemars",
        schemars(schema_with = "crate::schema::turns", description = "")
    )]
    pub turns: Vec<Turn<'a>>,
    /// Optional predicate disclosure mode.
    #[serde(default)]
    #[cfg_attr(
        feature = "schemars",
        schemars(description = "Predicate disclosure mode: only \
        whether metric clears band is signed (see /predicates).")
    )]
    pub disclosure: Option<Disclosure>,
    /// The meter to measure with, `meter/1` or `meter/2` (library/METER.md); absent: `meter/2`.
    #[serde(default, borrow)]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            schema_with = "crate::schema::meter_name",
            extend("default" = crate::meter::Meter::DEFAULT.as_str())
        )
    )]
    pub meter: Option<Cow<'a, str>>,
}

impl<'a> ProfileRequest<'a> {
    /// Parse a request body: [`parse_json`]'s answer, with a one-pass reader for bodies in
    /// the usual shape (about twice as fast; it gives up on anything else, which then goes
    /// through [`parse_json`] for its value or its error).
    pub fn from_json(body: &'a [u8]) -> Result<ProfileRequest<'a>, FieldError> {
        match fast::profile_request(body) {
            Some(req) => Ok(req),
            None => parse_json(body),
        }
    }

    /// The trace part of the request.
    pub fn trace(&self) -> TraceRef<'_, 'a> {
        TraceRef {
            context_key: &self.context_key,
            turns: &self.turns,
        }
    }

    /// The meter the request names, if this route offers it (`/meter` otherwise).
    pub fn meter(
        &self,
        offered: &[crate::meter::Meter],
    ) -> Result<crate::meter::Meter, FieldError> {
        requested_meter(self.meter.as_deref(), offered)
    }
}

/// The meter a request's member `meter` names, if it is one of `offered`; the refusal is
/// located at `/meter`.
pub fn requested_meter(
    name: Option<&str>,
    offered: &[crate::meter::Meter],
) -> Result<crate::meter::Meter, FieldError> {
    crate::meter::version::requested(name, offered).map_err(|d| FieldError::at("/meter", d))
}

/// A bare trace document (`schemas/trace.json`): exactly `context_key` and `turns`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceDoc<'a> {
    /// Names the context flag the read is conditioned on.
    #[serde(borrow)]
    pub context_key: Cow<'a, str>,
    /// The ordered turns.
    #[serde(borrow)]
    pub turns: Vec<Turn<'a>>,
}

impl<'a> TraceDoc<'a> {
    /// The trace as a borrowed view.
    pub fn trace(&self) -> TraceRef<'_, 'a> {
        TraceRef {
            context_key: &self.context_key,
            turns: &self.turns,
        }
    }
}

/// A borrowed view of a trace, whatever request carried it.
#[derive(Debug, Clone, Copy)]
pub struct TraceRef<'r, 'a> {
    /// The conditioning flag name.
    pub context_key: &'r str,
    /// The turns.
    pub turns: &'r [Turn<'a>],
}

/// One reason a request was refused, located by a JSON pointer (RFC 6901).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// JSON pointer to the offending value, `""` for the whole document.
    pub pointer: String,
    /// What is wrong, in plain words.
    pub detail: String,
    /// True when the body is not well-formed JSON (as opposed to JSON that breaks a rule).
    pub syntax: bool,
}

impl FieldError {
    /// A rule violation at `pointer`.
    pub fn at(pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            pointer: pointer.into(),
            detail: detail.into(),
            syntax: false,
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.detail)
    }
}

/// Most field errors reported for one request; the rest are summarised.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// Parse a JSON body into `T`, naming the failing field on error.
///
/// The fast path is a plain `serde_json` parse; only when it fails is the body parsed again
/// with path tracking to locate the error.
pub fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, FieldError> {
    match serde_json::from_slice::<T>(body) {
        Ok(v) => Ok(v),
        Err(_) => {
            let mut de = serde_json::Deserializer::from_slice(body);
            let err = match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Ok(_) => return Err(FieldError::at("", "the body is not a single JSON document")),
                Err(e) => e,
            };
            let pointer = pointer_of(err.path());
            let inner = err.into_inner();
            let (detail, syntax) = describe_serde_error(&inner);
            Err(FieldError {
                pointer,
                detail,
                syntax,
            })
        }
    }
}

/// The detail of a serde error, and whether it is a syntax error.
fn describe_serde_error(e: &serde_json::Error) -> (String, bool) {
    use serde_json::error::Category;
    let base = e.to_string();
    // serde_json appends " at line L column C"; keep it, it helps find the byte.
    match e.classify() {
        Category::Syntax | Category::Eof => (format!("malformed JSON: {base}"), true),
        Category::Io => (format!("unreadable body: {base}"), false),
        Category::Data => (base, false),
    }
}

/// Escape one RFC 6901 reference token.
pub fn escape_pointer_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => {
                out.push('/');
                out.push_str(&index.to_string());
            }
            Segment::Map { key } => {
                out.push('/');
                out.push_str(&escape_pointer_token(key));
            }
            Segment::Enum { variant } => {
                out.push('/');
                out.push_str(&escape_pointer_token(variant));
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// True when `name` is a valid flag name (also used for `context_key`).
pub fn is_flag_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_FLAG_NAME
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// The flag-name rule as a JSON Schema (ECMA-262) pattern.
pub const FLAG_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$";

fn too_long(s: &str) -> Option<usize> {
    // A string of at most MAX_STRING_CHARS bytes cannot exceed the character limit.
    if s.len() <= MAX_STRING_CHARS {
        return None;
    }
    let n = s.chars().count();
    (n > MAX_STRING_CHARS).then_some(n)
}

/// Check every rule of a trace and every trace limit (README.md, METER.md section 8) on a
/// parsed trace.
///
/// Returns all violations found (at most [`MAX_REPORTED_ERRORS`] plus a summary line).
pub fn validate(trace: TraceRef<'_, '_>) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    let mut extra = 0usize;
    let mut push = |pointer: String, detail: String| {
        if errs.len() < MAX_REPORTED_ERRORS {
            errs.push(FieldError::at(pointer, detail));
        } else {
            extra += 1;
        }
    };
    let key = trace.context_key;
    if !is_flag_name(key) {
        push(
            "/context_key".into(),
            format!("must match {FLAG_NAME_PATTERN} (1 to {MAX_FLAG_NAME} characters)"),
        );
    }
    let n = trace.turns.len();
    if n == 0 {
        push("/turns".into(), "must hold at least 1 turn".into());
    }
    if n > MAX_TURNS {
        push(
            "/turns".into(),
            format!("must hold at most {MAX_TURNS} turns (got {n})"),
        );
    }
    let mut d_symbols = DistinctSymbols::default();
    let mut d_over = false;
    for (i, turn) in trace.turns.iter().enumerate() {
        if !d_over {
            d_symbols.insert(crate::meter::d_symbol(&turn.d));
            if d_symbols.len() > MAX_D_SYMBOLS {
                d_over = true;
                push(
                    format!("/turns/{i}/D"),
                    format!(
                        "a trace may hold at most {MAX_D_SYMBOLS} distinct D symbols (trimmed, \
                         lower-cased); this turn's is number {}",
                        MAX_D_SYMBOLS + 1
                    ),
                );
            }
        }
        for (field, value) in [("Y", &turn.y), ("M", &turn.m), ("D", &turn.d)] {
            if let Some(len) = too_long(value) {
                push(
                    format!("/turns/{i}/{field}"),
                    format!("must be at most {MAX_STRING_CHARS} characters (got {len})"),
                );
            }
        }
        let flags = turn.context.as_slice();
        if flags.len() > MAX_FLAGS {
            push(
                format!("/turns/{i}/context"),
                format!("must hold at most {MAX_FLAGS} flags (got {})", flags.len()),
            );
        }
        let mut has_key = false;
        for (name, value) in flags {
            let at = || format!("/turns/{i}/context/{}", escape_pointer_token(name));
            if !is_flag_name(name) {
                push(at(), format!("flag name must match {FLAG_NAME_PATTERN}"));
            }
            if *value != 0 && *value != 1 {
                push(at(), format!("flag value must be 0 or 1 (got {value})"));
            }
            has_key |= name.as_ref() == key;
        }
        if !has_key && is_flag_name(key) {
            push(
                format!("/turns/{i}/context"),
                format!("must carry the flag named by context_key (`{key}`)"),
            );
        }
    }
    if extra > 0 {
        errs.push(FieldError::at(
            "",
            format!("{extra} more errors not listed"),
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// The distinct D symbols seen so far: a list while they are few (traces usually carry a
/// handful, and a comparison is cheaper than hashing), a set beyond.
#[derive(Default)]
struct DistinctSymbols<'a> {
    few: Vec<Cow<'a, str>>,
    many: std::collections::HashSet<Cow<'a, str>>,
}

impl<'a> DistinctSymbols<'a> {
    const FEW: usize = 16;

    fn insert(&mut self, symbol: Cow<'a, str>) {
        if self.few.len() < Self::FEW {
            if !self.few.contains(&symbol) {
                self.few.push(symbol);
            }
        } else if !self.few.contains(&symbol) {
            self.many.insert(symbol);
        }
    }

    fn len(&self) -> usize {
        self.few.len() + self.many.len()
    }
}

/// A bare trace is the published trace schema (component `Trace`; [`crate::schema::trace`]).
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for TraceDoc<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Trace".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::Schema::try_from(crate::schema::trace()).unwrap_or_else(|_| false.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<ProfileRequest<'_>, FieldError> {
        parse_json(body.as_bytes())
    }

    #[test]
    fn distinct_d_symbols_are_bounded() {
        let turn =
            |d: String| format!(r#"{{"Y":"y","M":"m","D":"{d}","context":{{"monitored":1}}}}"#);
        let body = |k: usize| {
            let turns: Vec<String> = (0..k).map(|i| turn(format!(" Act {i} "))).collect();
            format!(
                r#"{{"context_key":"monitored","turns":[{}]}}"#,
                turns.join(",")
            )
        };
        let ok = body(MAX_D_SYMBOLS);
        assert!(validate(parse(&ok).unwrap().trace()).is_ok());
        let over = body(MAX_D_SYMBOLS + 1);
        let errs = validate(parse(&over).unwrap().trace()).unwrap_err();
        assert_eq!(errs[0].pointer, format!("/turns/{MAX_D_SYMBOLS}/D"));
        assert!(errs[0].detail.contains("256 distinct D symbols"));
    }

    #[test]
    fn parses_and_borrows() {
        let body = r#"{"context_key":"monitored","turns":[{"Y":"help","M":"think","D":"clean","context":{"monitored":1}}]}"#;
        let req = parse(body).unwrap();
        assert!(matches!(req.turns[0].m, Cow::Borrowed(_)));
        assert_eq!(req.turns[0].context.get("monitored"), Some(1));
        assert!(validate(req.trace()).is_ok());
    }

    #[test]
    fn wrong_flag_type_names_the_path() {
        let body = r#"{"context_key":"monitored","turns":[{"Y":"a","M":"b","D":"c","context":{"monitored":0}},{"Y":"a","M":"b","D":"c","context":{"monitored":"1"}}]}"#;
        let e = parse(body).unwrap_err();
        assert_eq!(e.pointer, "/turns/1/context/monitored");
    }

    #[test]
    fn missing_field_names_the_turn() {
        let body = r#"{"context_key":"m","turns":[{"Y":"a","M":"b","context":{"m":0}}]}"#;
        let e = parse(body).unwrap_err();
        assert_eq!(e.pointer, "/turns/0");
        assert!(e.detail.contains("`D`"), "{}", e.detail);
    }

    #[test]
    fn bad_flag_value_and_missing_key_are_listed() {
        let body = r#"{"context_key":"monitored","turns":[{"Y":"a","M":"b","D":"c","context":{"monitored":2}},{"Y":"a","M":"b","D":"c","context":{"other":1}}]}"#;
        let req = parse(body).unwrap();
        let errs = validate(req.trace()).unwrap_err();
        assert_eq!(errs[0].pointer, "/turns/0/context/monitored");
        assert_eq!(errs[1].pointer, "/turns/1/context");
    }

    #[test]
    fn duplicate_flags_and_unknown_fields_are_refused() {
        let dup =
            r#"{"context_key":"m","turns":[{"Y":"a","M":"b","D":"c","context":{"m":0,"m":1}}]}"#;
        assert!(parse(dup).unwrap_err().detail.contains("duplicate"));
        let unk = r#"{"context_key":"m","turns":[],"extra":1}"#;
        assert!(parse(unk).unwrap_err().detail.contains("extra"));
    }

    #[test]
    fn lone_surrogate_is_refused_with_a_path() {
        let body =
            r#"{"context_key":"m","turns":[{"Y":"a","M":"\ud800","D":"c","context":{"m":0}}]}"#;
        let e = parse(body).unwrap_err();
        assert_eq!(e.pointer, "/turns/0/M");
    }

    #[test]
    fn float_flag_is_refused() {
        let body = r#"{"context_key":"m","turns":[{"Y":"a","M":"b","D":"c","context":{"m":1.0}}]}"#;
        assert_eq!(parse(body).unwrap_err().pointer, "/turns/0/context/m");
    }
}
