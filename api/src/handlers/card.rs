//! `GET /card?key=<fragment>[&format=json|txt|text]`: look up the card of an agent name, npub,
//! vow id or wallet.
//!
//! The key is trimmed (a wallet lowercased) and the card rendered at its
//! [`card_stem`](conduct_renderer::discovery::card_stem) is served with the usual content
//! negotiation. A key with no rendered card gets the negative card, rendered on the fly: an
//! unknown key is a successful lookup with a negative result, 200, never a 404.

use conduct_renderer::discovery::{card_files, card_stem, normalize_key};
use warp::http::{header, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::handlers::views::Signing;
use crate::http::reply::{bytes_response, Problem};
use crate::http::request::query_param;
use crate::http::static_objects::lookup;
use crate::http::static_site::{file_response, negotiate, Found, Variant};

/// What a card lookup reads of the running service: the rendered tree, and the key and
/// public URL a negative card is signed with.
#[derive(Clone, Copy)]
pub struct Cards<'a> {
    /// The rendered tree.
    pub tree: &'a conduct_indexer::tree::SharedTree,
    /// The signing key and public URL.
    pub sign: Signing<'a>,
}

/// The representations a card has.
const CARD_VARIANTS: [Variant; 3] = [Variant::Json, Variant::Text, Variant::Html];

fn missing_key() -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "bad-request",
        "The lookup key is missing",
        "GET /card needs ?key=<agent name, npub, vow id or wallet> (or the key in the path, /card/<key>)",
    )
    .at("?key", "missing or empty query parameter")
}

fn not_acceptable() -> Problem {
    Problem::new(
        StatusCode::NOT_ACCEPTABLE,
        "not-acceptable",
        "No acceptable representation",
        "a card is served as application/json, text/plain or text/html; use ?format=json|txt|html or Accept",
    )
}

/// The `?format=` of a card lookup, if any.
fn format(query: &str) -> Result<Option<Variant>, Problem> {
    match query_param(query, "format") {
        None => Ok(None),
        Some(f) => Variant::from_format(&f).map(Some).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-format",
                "Unknown format",
                format!("format={f:?} is not one of json, html, txt"),
            )
        }),
    }
}

/// The lookup key of a card query: trimmed, a wallet lowercased; `None` when missing or empty.
pub fn card_key(query: &str) -> Option<String> {
    let key = normalize_key(&query_param(query, "key")?);
    (!key.is_empty()).then_some(key)
}

/// Answer a card lookup.
pub async fn card(
    ctx: Cards<'_>,
    query: &str,
    accept: Option<&str>,
) -> Result<WarpResponse, Problem> {
    let key = card_key(query).ok_or_else(missing_key)?;
    serve_card(ctx, key, format(query)?, accept).await
}

/// Answer `GET /card/{key}`: the key is the path's last segment, percent-decoded.
pub async fn card_at(
    ctx: Cards<'_>,
    path: &str,
    query: &str,
    accept: Option<&str>,
) -> Result<WarpResponse, Problem> {
    // A file of the tree under card/ (a rendered card, or one of its twins by name) is
    // served as it is; anything else is a key.
    let asked = format(query)?;
    match lookup(ctx.tree, path, accept, asked).await {
        Found::File(file) => return Ok(file_response(file, false)),
        Found::Unavailable => return Err(crate::http::static_site::unavailable()),
        Found::NotAcceptable | Found::Missing => {}
    }
    let raw = path.strip_prefix("/card/").unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
    let key = normalize_key(&decoded);
    if key.is_empty() {
        return Err(missing_key());
    }
    serve_card(ctx, key, asked, accept).await
}

/// The card of `key` in the representation asked (`format`, else `accept`).
async fn serve_card(
    ctx: Cards<'_>,
    key: String,
    format: Option<Variant>,
    accept: Option<&str>,
) -> Result<WarpResponse, Problem> {
    let stem = card_stem(&key);
    serve_lookup(
        ctx.tree,
        &stem,
        (accept, format),
        &CARD_VARIANTS,
        not_acceptable,
        "The card could not be rendered",
        || card_files(ctx.sign.key, ctx.sign.public_url, &key, &[]),
    )
    .await
}

/// Serve the lookup record rendered at `stem` (`/card`, `/who`) of the `tree` in the
/// representation asked (`format`, else `accept`) among `variants`; when none is rendered, the
/// negative result that `negative` renders on the fly (a successful lookup, never a 404);
/// `what` titles the problem if it cannot be rendered.
pub async fn serve_lookup(
    tree: &conduct_indexer::tree::SharedTree,
    stem: &str,
    (accept, format): (Option<&str>, Option<Variant>),
    variants: &[Variant],
    not_acceptable: fn() -> Problem,
    what: &'static str,
    negative: impl FnOnce() -> Result<Vec<(String, Vec<u8>)>, conduct_renderer::RenderError>,
) -> Result<WarpResponse, Problem> {
    // The stem is a literal file name; `lookup` percent-decodes its path, so escape `%`.
    let path = format!("/{}", stem.replace('%', "%25"));
    match lookup(tree, &path, accept, format).await {
        Found::File(file) => return Ok(file_response(file, false)),
        Found::NotAcceptable => return Err(not_acceptable()),
        Found::Unavailable => return Err(crate::http::static_site::unavailable()),
        Found::Missing => {}
    }
    let chosen = match format {
        Some(f) => variants.contains(&f).then_some(f),
        None => negotiate(accept, variants),
    }
    .ok_or_else(not_acceptable)?;
    let files = negative().map_err(|e| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unrepresentable",
            what,
            e.to_string(),
        )
    })?;
    Ok(negative_response(files, stem, chosen, format.is_some()))
}

/// The negative result of a lookup (a card or a `/who` record nobody rendered): the file of
/// `stem` in the `chosen` representation from the freshly rendered `files`, 200, cached
/// briefly (it turns positive when a vow is taken or a tool registered).
pub fn negative_response(
    files: Vec<(String, Vec<u8>)>,
    stem: &str,
    chosen: Variant,
    format_given: bool,
) -> WarpResponse {
    let (ext, content_type) = match chosen {
        Variant::Text => ("txt", "text/plain; charset=utf-8"),
        Variant::Html => ("html", "text/html; charset=utf-8"),
        Variant::Json => ("json", "application/json"),
    };
    let want = format!("{stem}.{ext}");
    let body = files
        .into_iter()
        .find(|(p, _)| *p == want)
        .map(|(_, b)| b)
        .unwrap_or_default();
    let mut resp = bytes_response(StatusCode::OK, content_type, body);
    let h = resp.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    if !format_given {
        h.insert(header::VARY, HeaderValue::from_static("Accept"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_trimmed_and_wallets_lowercased() {
        assert_eq!(card_key("key=%20alice%20"), Some("alice".into()));
        assert_eq!(card_key("key=bob+smith"), Some("bob smith".into()));
        assert_eq!(
            card_key("key=0xABCDEF0123456789ABCDEF0123456789ABCDEF01"),
            Some("0xabcdef0123456789abcdef0123456789abcdef01".into())
        );
        assert_eq!(card_key("key="), None);
        assert_eq!(card_key("key=%20%20"), None);
        assert_eq!(card_key("format=json"), None);
    }

    #[test]
    fn formats() {
        assert_eq!(format("key=a").unwrap(), None);
        assert_eq!(format("format=text").unwrap(), Some(Variant::Text));
        assert_eq!(format("format=json").unwrap(), Some(Variant::Json));
        assert_eq!(format("format=xml").unwrap_err().status, 400);
        assert_eq!(missing_key().status, 400);
        assert_eq!(missing_key().errors[0].pointer, "?key");
    }

    #[test]
    fn lost_follows_the_real_route_table() {
        use conduct_renderer::discovery::lost_questions;
        let key = conduct_core::signing::ServiceKey::from_seed(&[1; 32], "conduct.test");
        let routes = crate::routes::infos();
        let input = conduct_renderer::SiteInput {
            key: &key,
            public_url: "https://conduct.example",
            routes: &routes,
            accepts: &[],
            price_usd: "0.10",
            posted: &[],
            demo_daily_cap: Some(50),
            as_of: 0,
            manifest_ttl: 0,
        };
        let qs = lost_questions(&input);
        assert!(qs[1]
            .endpoints
            .iter()
            .any(|e| e.path.starts_with("/card?key=") && e.present));
        let munus = routes.iter().any(|r| r.path == "/munus");
        assert_eq!(qs[5].answer.starts_with("Not on this instance yet"), !munus);
        let guide = qs[5]
            .endpoints
            .iter()
            .find(|e| e.path == "/library/MUNUS.md")
            .map(|e| e.present);
        assert_eq!(guide, Some(true));
    }
}
