//! `Prefer: wait=<seconds>` (RFC 7240, section 4.3): how long a client asks a write to wait
//! for its derived pages before answering (VOWS.md, "Durability and verification").

use std::time::Duration;

use warp::http::HeaderMap;

/// The longest wait honoured, in seconds (a larger one is cut to it).
pub const MAX_WAIT: u64 = 60;

/// The `wait` preference of `headers`, at most [`MAX_WAIT`] seconds: the first `wait=` of
/// any `Prefer` field (a list of preferences, names case-insensitive, the value a
/// non-negative integer, optionally quoted). A malformed one is ignored, as RFC 7240 asks.
pub fn wait(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|pref| {
            // A preference's own parameters follow `;`; the token and value come first.
            let head = pref.split(';').next()?.trim();
            let (name, value) = head.split_once('=')?;
            if !name.trim().eq_ignore_ascii_case("wait") {
                return None;
            }
            let value = value.trim().trim_matches('"');
            let secs: u64 = value.parse().ok()?;
            Some(Duration::from_secs(secs.min(MAX_WAIT)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use warp::http::HeaderValue;

    fn of(values: &[&str]) -> Option<Duration> {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("prefer", HeaderValue::from_str(v).unwrap());
        }
        wait(&h)
    }

    #[test]
    fn reads_the_wait_preference() {
        assert_eq!(of(&[]), None);
        assert_eq!(of(&["wait=30"]), Some(Duration::from_secs(30)));
        assert_eq!(
            of(&["respond-async, Wait = \"5\""]),
            Some(Duration::from_secs(5))
        );
        assert_eq!(of(&["handling=lenient", "wait=0"]), Some(Duration::ZERO));
        assert_eq!(of(&["wait=3600"]), Some(Duration::from_secs(MAX_WAIT)));
        assert_eq!(of(&["wait=soon"]), None);
        assert_eq!(of(&["wait=-1"]), None);
        assert_eq!(of(&["return=minimal"]), None);
    }
}
