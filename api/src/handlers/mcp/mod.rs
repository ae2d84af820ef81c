//! `POST /mcp`: the Model Context Protocol over streamable HTTP, stateless (library/MCP.md).
//!
//! The transport is the official Rust SDK's ([`rmcp`]) `StreamableHttpService`, mounted on the
//! route table like any dynamic route: no sessions (any replica answers any request), one JSON
//! answer per request (`application/json`, never a stream), every protocol revision rmcp knows
//! (2024-11-05 to 2026-07-28, whose `server/discover` it answers itself), `Host` limited to the
//! public URL's host and loopback (DNS rebinding), a present `Origin` other than the public
//! URL's refused with 403, an unknown `MCP-Protocol-Version` with 400, GET and DELETE with 405
//! and `Allow` (by the route table, which serves `/mcp` for POST only). The body is read by the
//! service's own reader (JSON only, 4 MiB, the body deadline) before rmcp sees it.
//!
//! The tools ([`tools`]) dispatch the HTTP routes they mirror, so each answers exactly what its
//! route answers under the same per-IP caps. Their schemas are the published ones
//! ([`schemas`]).
//!
//! Written here rather than taken from rmcp, and why:
//! - rmcp's transport refusals are plain text without a content type; here they become RFC
//!   9457 problems like every other refusal of the service (their status and `Allow` kept).
//! - rmcp answers a body that is not a JSON-RPC message with 415 whatever the content type;
//!   JSON-RPC 2.0 says a parse error is -32700 and an invalid message -32600, so those are
//!   answered here (400, a JSON-RPC error with a null id).
//! - The tools' schemas come from `/openapi.json`'s components (derived from the request types
//!   the routes parse) rather than from argument types of the tools' own, so MCP and OpenAPI
//!   describe the same checks; arguments are checked against them here (rmcp checks only that
//!   they deserialize). Without argument types of their own, rmcp's `#[tool]` macros would
//!   only repeat one method per tool, so the tools are a table
//!   given to rmcp's `ToolRouter` (`#[tool_handler]` still answers `tools/list` and
//!   `tools/call` from it, unknown tools included).
//! - A failed tool's result carries the problem as text and no `structuredContent`: a result
//!   with `isError` is not held to the output schema by the protocol, but the TypeScript SDK
//!   validates any `structuredContent` it finds against it.

mod kind;
mod schemas;
mod splice;
mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use warp::http::{header, HeaderMap, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::config::{Config, MAX_BODY};
use crate::http::reply::{bytes_response, Problem};
use crate::http::request::Dispatch;

use splice::Slot;
use tools::{Caller, Tools};

/// The MCP endpoint of one service: rmcp's stateless streamable-HTTP service and its tools.
pub struct Endpoint {
    service: StreamableHttpService<Tools, NeverSessionManager>,
}

impl Endpoint {
    /// The endpoint for `cfg`: `Host` may be the public URL's host or a loopback name (on any
    /// port); a present `Origin` must be the public URL's origin.
    pub fn new(cfg: &Config) -> Endpoint {
        if let Err(e) = schemas::ready() {
            tracing::error!(error = %e, "the /mcp tool schemas did not build");
        }
        let (hosts, origins) = allowed(&cfg.public_url);
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_sse_retry(None)
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(MAX_BODY);
        let tools = Tools::new(&cfg.public_url);
        let service = StreamableHttpService::new(
            move || Ok(tools.clone()),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        Endpoint { service }
    }
}

/// The loopback names: `Host` may be any of them; when the public URL's host is one of them,
/// an `Origin` may spell this machine with any of them (MCP.md, "Refusals of the protocol").
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `Host` names and `Origin`s `/mcp` accepts for a public URL: its origin (scheme, host,
/// port) and, for a loopback host, the same scheme and port under each loopback name.
fn allowed(public_url: &str) -> (Vec<String>, Vec<String>) {
    let mut hosts: Vec<String> = LOOPBACK.map(String::from).to_vec();
    let mut origins = Vec::new();
    if let Ok(u) = url::Url::parse(public_url) {
        if let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default()) {
            let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
            let origin = |name: &str| {
                let name = if name.contains(':') {
                    format!("[{name}]")
                } else {
                    name.to_owned()
                };
                format!("{}://{name}:{port}", u.scheme())
            };
            if LOOPBACK.contains(&host.as_str()) {
                origins.extend(LOOPBACK.map(origin));
            } else {
                origins.push(origin(&host));
                hosts.push(host);
            }
        }
    }
    (hosts, origins)
}

/// Answer one `POST /mcp` whose body was read: hand it to rmcp with the caller attached (its
/// tools' requests go through `dispatch`), and shape rmcp's answer like the service's.
pub async fn serve(
    endpoint: &Endpoint,
    dispatch: Dispatch,
    path: &str,
    headers: HeaderMap,
    remote: Option<SocketAddr>,
    body: Bytes,
) -> Result<WarpResponse, Problem> {
    let answer = Slot::default();
    let caller = Caller {
        dispatch,
        remote,
        forwarded: headers.get_all("x-forwarded-for").iter().cloned().collect(),
        answer: answer.clone(),
    };
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    let mut request = warp::http::Request::new(Full::new(body.clone()));
    *request.method_mut() = warp::http::Method::POST;
    *request.uri_mut() = path.parse().unwrap_or_default();
    *request.headers_mut() = headers;
    request.extensions_mut().insert(caller);
    let (mut parts, body_out) = endpoint.service.handle(request).await.into_parts();
    let mut bytes = match body_out.collect().await {
        Ok(c) => c.to_bytes(),
        Err(never) => match never {},
    };
    // A tool that succeeded left the route's answer: write it into rmcp's.
    if let Some(object) = answer.take() {
        match splice::fill(&bytes, &object) {
            Some(spliced) => {
                bytes = spliced.into();
                parts.headers.remove(header::CONTENT_LENGTH);
            }
            None if parts.status.is_success() => {
                tracing::error!("rmcp's answer to a tool call had no placeholder result to fill");
            }
            None => {}
        }
    }
    let status = parts.status;
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.starts_with("application/json") || ct.starts_with("text/event-stream")
        });
    if status.is_success() || is_json {
        let mut resp = WarpResponse::new(bytes.into());
        *resp.status_mut() = status;
        *resp.headers_mut() = parts.headers;
        return Ok(resp);
    }
    let detail = String::from_utf8_lossy(&bytes).into_owned();
    // A JSON body rmcp could not read as a JSON-RPC message: answer in JSON-RPC.
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && json_body {
        let parsed = serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_ok();
        let (code, message) = if parsed {
            (
                -32600,
                "Invalid Request: not a JSON-RPC 2.0 message this server reads",
            )
        } else {
            (-32700, "Parse error: the body is not JSON")
        };
        let err = json!({"jsonrpc": "2.0", "id": null,
                         "error": {"code": code, "message": message, "data": {"detail": detail}}});
        return Ok(bytes_response(
            StatusCode::BAD_REQUEST,
            "application/json",
            serde_json::to_vec(&err).unwrap_or_default(),
        ));
    }
    Err(refusal(status, &parts.headers, detail))
}

/// rmcp's plain-text refusal as a problem, its status and `Allow` kept.
fn refusal(status: StatusCode, headers: &HeaderMap, detail: String) -> Problem {
    let (kind, title) = match status {
        StatusCode::FORBIDDEN => ("mcp-forbidden", "Host or Origin not allowed"),
        StatusCode::METHOD_NOT_ALLOWED => ("method-not-allowed", "Method not allowed"),
        StatusCode::NOT_ACCEPTABLE => ("not-acceptable", "Accept both JSON and event streams"),
        StatusCode::PAYLOAD_TOO_LARGE => ("too-large", "Body too large"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported-media-type", "Send JSON"),
        s if s.is_server_error() => ("busy", "The MCP request could not be answered now"),
        _ => ("mcp-bad-request", "The MCP request was refused"),
    };
    let mut p = Problem::new(status, kind, title, detail);
    if let Some(allow) = headers.get(header::ALLOW).and_then(|v| v.to_str().ok()) {
        p = p.with_header(header::ALLOW, allow);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FileConfig, Overrides};
    use rmcp::model::{
        CallToolResult, ContentBlock, NumberOrString, ServerJsonRpcMessage, ServerResult,
    };

    /// A tool's answer is the route's bytes written into rmcp's answer: the same JSON-RPC answer
    /// (as parsed JSON) that rmcp writes for the result built from a `serde_json::Value`, with
    /// the route's object as served (its whitespace and key order) as `structuredContent`.
    #[tokio::test]
    async fn a_tool_answer_is_the_routes_bytes_in_rmcps_answer() {
        // Pretty, keys unsorted, escapes, non-ASCII text, numbers of every kind.
        let route =
            "{\n  \"zeta\": \"a \\\"quoted\\\" line\\nand \u{e9} \u{2713} \\u0001 </\",\n  \
            \"alpha\": [1, 2.5, -3e-7, 18446744073709551615, null, true],\n  \
            \"nested\": {\"b\": {}, \"a\": [], \"text\": \"\", \"structuredContent\": {}}\n}\n";
        let dispatch: Dispatch = Arc::new(move |_| {
            Box::pin(async move {
                bytes_response(
                    StatusCode::OK,
                    "application/json",
                    route.as_bytes().to_vec(),
                )
            })
        });
        let cfg = Config::resolve(Overrides::default(), FileConfig::default()).unwrap();
        let endpoint = Endpoint::new(&cfg);
        // An id that spells the placeholders: they are found by position, not by text.
        let id = r#"{"structuredContent":{},"content":[{"type":"text","text":""}]}"#;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "list_vows", "arguments": {}}});
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("host", "127.0.0.1"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-11-25"),
        ] {
            headers.insert(name, value.parse().unwrap());
        }
        let body = Bytes::from(serde_json::to_vec(&call).unwrap());
        let resp = serve(&endpoint, dispatch, "/mcp", headers, None, body)
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let served = resp.into_body().collect().await.unwrap().to_bytes();
        let served = std::str::from_utf8(&served).unwrap();

        // The answer as it was built before: the route's answer parsed into a value.
        let mut result = CallToolResult::success(vec![ContentBlock::text(route)]);
        result.structured_content = Some(serde_json::from_str(route).unwrap());
        let mut result = ServerResult::CallToolResult(result);
        // What rmcp does to a result for a peer before protocol revision 2026-07-28.
        result.strip_result_type_for_legacy_peer();
        let before = ServerJsonRpcMessage::response(result, NumberOrString::String(id.into()));
        let parsed: serde_json::Value = serde_json::from_str(served).unwrap();
        assert_eq!(parsed, serde_json::to_value(&before).unwrap());
        // `structuredContent` is the route's object byte for byte, the text its whole answer.
        assert!(served.contains(&format!(r#""structuredContent":{}"#, route.trim())));
        assert_eq!(parsed["result"]["content"][0]["text"], route);
    }

    #[test]
    fn allowed_hosts_and_origins_follow_the_public_url() {
        let (h, o) = allowed("https://conduct.example");
        assert!(h.contains(&"conduct.example".to_owned()) && h.contains(&"127.0.0.1".to_owned()));
        assert_eq!(o, vec!["https://conduct.example:443"]);
        // A loopback public URL: this machine under each loopback name, at its scheme and port.
        let (h, o) = allowed("http://localhost:8402");
        assert_eq!(h.iter().filter(|x| *x == "localhost").count(), 1);
        assert_eq!(
            o,
            vec![
                "http://localhost:8402",
                "http://127.0.0.1:8402",
                "http://[::1]:8402"
            ]
        );
        let (h, o) = allowed("http://[::1]:9000/");
        assert_eq!(h.iter().filter(|x| *x == "::1").count(), 1);
        assert_eq!(o, allowed("http://127.0.0.1:9000").1);
        assert!(o.contains(&"http://[::1]:9000".to_owned()));
    }
}
