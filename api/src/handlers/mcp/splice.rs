//! A tool's successful answer written once (library/MCP.md, "Results"): the route's JSON
//! object goes into the JSON-RPC answer as it was served, not through a `serde_json::Value`.
//!
//! The tool hands rmcp a [`placeholder`] result (an empty object as `structuredContent`, an
//! empty text block) and puts the route's bytes ([`Object`]) in the request's [`Slot`]. rmcp
//! writes its answer around the placeholder (its envelope, id, protocol-revision fields);
//! [`fill`] then finds the two placeholder values by parsing that small answer (by position in
//! the `result`, never by searching for text a client could echo in the id) and writes the
//! route's bytes into them: raw as `structuredContent`, escaped once as the text block.

use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A route's answer that is one JSON object: its bytes, and where the object lies in them
/// (without the surrounding whitespace).
pub struct Object {
    bytes: Bytes,
    object: Range<usize>,
}

impl Object {
    /// The route's answer `bytes` when they are one JSON object (UTF-8, the syntax checked
    /// without building a value); `None` otherwise.
    pub fn new(bytes: Bytes) -> Option<Object> {
        let text = std::str::from_utf8(&bytes).ok()?;
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        let object = span(text.as_bytes(), raw)?;
        if !raw.get().starts_with('{') {
            return None;
        }
        Some(Object { bytes, object })
    }

    /// The whole answer as the route served it: the text block.
    fn text(&self) -> &str {
        // Checked to be UTF-8 by `new`.
        std::str::from_utf8(&self.bytes).unwrap_or_default()
    }

    /// The object alone: `structuredContent`.
    fn raw(&self) -> &[u8] {
        &self.bytes[self.object.clone()]
    }
}

/// Where a tool leaves its [`Object`] for the endpoint, one per HTTP request (shared by the
/// clones of the request's caller).
#[derive(Clone, Default)]
pub struct Slot(Arc<Mutex<Option<Object>>>);

impl Slot {
    /// Leave the tool's answer.
    pub fn put(&self, object: Object) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(object);
    }

    /// Take the tool's answer, if it left one.
    pub fn take(&self) -> Option<Object> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The result a tool whose answer is in the [`Slot`] gives rmcp: an empty object as
/// `structuredContent` (an object, so that rmcp keeps it for every protocol revision) and one
/// empty text block, which [`fill`] replaces.
pub fn placeholder() -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(String::new())]);
    r.structured_content = Some(JsonObject::new().into());
    r
}

/// rmcp's JSON-RPC answer `out` to a call whose result is the [`placeholder`], with `object`
/// in its place: `None` when `out` is not such a result (an error, say), which is then served
/// as it is.
pub fn fill(out: &[u8], object: &Object) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        result: Placeholder<'a>,
    }
    #[derive(Deserialize)]
    struct Placeholder<'a> {
        #[serde(borrow, rename = "structuredContent")]
        structured: &'a RawValue,
        #[serde(borrow)]
        content: [Block<'a>; 1],
    }
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow)]
        text: &'a RawValue,
    }
    let answer: Answer = serde_json::from_slice(out).ok()?;
    let Placeholder {
        structured,
        content: [Block { text }],
    } = answer.result;
    if structured.get() != "{}" || text.get() != "\"\"" {
        return None;
    }
    let (structured, text) = (span(out, structured)?, span(out, text)?);
    // Escaping adds a byte per quote and line break: a quarter more covers pretty JSON.
    let escaped = object.text().len() * 5 / 4 + 2;
    let mut spliced = Vec::with_capacity(out.len() + object.raw().len() + escaped);
    let mut at = 0;
    let mut holes = [(structured, true), (text, false)];
    holes.sort_by_key(|(r, _)| r.start);
    for (hole, raw) in holes {
        spliced.extend_from_slice(out.get(at..hole.start)?);
        if raw {
            spliced.extend_from_slice(object.raw());
        } else {
            serde_json::to_writer(&mut spliced, object.text()).ok()?;
        }
        at = hole.end;
    }
    spliced.extend_from_slice(out.get(at..)?);
    Some(spliced)
}

/// Where the value `raw`, parsed from `out`, lies in `out`.
fn span(out: &[u8], raw: &RawValue) -> Option<Range<usize>> {
    let start = (raw.get().as_ptr() as usize).checked_sub(out.as_ptr() as usize)?;
    let range = start..start + raw.get().len();
    (range.end <= out.len()).then_some(range)
}
