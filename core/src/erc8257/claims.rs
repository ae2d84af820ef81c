//! What a manifest claims about itself, for display: written by the registrant, bounded and
//! stripped, never vouched for. Read from any JSON value, including a manifest that failed
//! verification.

use serde_json::Value;

/// Longest `name` claim shown, in code points.
pub const CLAIM_NAME_MAX: usize = 128;
/// Longest `description` claim shown, in code points.
pub const CLAIM_DESCRIPTION_MAX: usize = 500;
/// Longest `endpoint` claim shown, in code points.
pub const CLAIM_ENDPOINT_MAX: usize = 2048;

/// The display claims of a manifest: each `None` when absent or not a string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// `name`, at most 128 code points.
    pub name: Option<String>,
    /// `description`, at most 500 code points.
    pub description: Option<String>,
    /// `endpoint`, at most 2,048 code points.
    pub endpoint: Option<String>,
}

/// The claims of `manifest` (any JSON value: a non-object claims nothing), stripped by
/// [`strip_for_display`] and bounded.
pub fn claims(manifest: &Value) -> Claims {
    let field = |key: &str, max: usize| {
        manifest
            .get(key)
            .and_then(Value::as_str)
            .map(|s| strip_for_display(s, max))
    };
    Claims {
        name: field("name", CLAIM_NAME_MAX),
        description: field("description", CLAIM_DESCRIPTION_MAX),
        endpoint: field("endpoint", CLAIM_ENDPOINT_MAX),
    }
}

/// True for the characters display text never carries: C0 controls, DEL, C1 controls, and the
/// invisible format characters that reorder or hide text (zero-width and directional marks
/// U+200B..U+200F, embeddings and overrides U+202A..U+202E, word joiner and isolates
/// U+2060..U+2069, the byte-order mark U+FEFF, the Arabic letter mark U+061C), plus the line
/// and paragraph separators U+2028 and U+2029.
pub fn is_stripped(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}'
        | '\u{feff}')
}

/// `s` for display: tab, line feed, carriage return and U+2028/U+2029 become a space, every
/// other [`is_stripped`] character is removed, surrounding whitespace is trimmed, and the
/// result is cut to at most `max_chars` code points.
pub fn strip_for_display(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars * 4));
    let mut n = 0;
    for c in s.chars() {
        let c = match c {
            '\t' | '\n' | '\r' | '\u{2028}' | '\u{2029}' => ' ',
            c if is_stripped(c) => continue,
            c => c,
        };
        if n == 0 && c.is_whitespace() {
            continue;
        }
        if n == max_chars {
            break;
        }
        out.push(c);
        n += 1;
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_of_any_value() {
        let c = claims(&json!({
            "name": "a\u{202e}b\u{200b}c",
            "description": "line\none\u{7}",
            "endpoint": 5
        }));
        assert_eq!(c.name.as_deref(), Some("abc"));
        assert_eq!(c.description.as_deref(), Some("line one"));
        assert_eq!(c.endpoint, None);
        assert_eq!(claims(&json!([1, 2])), Claims::default());
        assert_eq!(claims(&json!("name")), Claims::default());
    }

    #[test]
    fn bounds_are_code_points() {
        let c = claims(&json!({"name": "\u{e9}".repeat(200)}));
        assert_eq!(c.name.unwrap().chars().count(), CLAIM_NAME_MAX);
        assert_eq!(strip_for_display("  \u{feff} x \n", 10), "x");
        assert_eq!(strip_for_display("abc", 0), "");
    }
}
