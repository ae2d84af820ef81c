//! The eight tools of `/mcp` (library/MCP.md) and the MCP server handler that lists and calls them.
//!
//! A tool is a thin door onto one HTTP route: its arguments are checked against its input
//! schema, turned into the route's request (method, path, JSON body), and dispatched through
//! the dispatcher (`http::dispatch`, handed in as a [`Dispatch`]) with the caller's address
//! and forwarding headers, so the route's own code answers it under the same free per-IP caps.
//! The answer becomes the tool result: a 2xx JSON object is the `structuredContent`, and the
//! same bytes are the text block (the signed JSON as the route served it), both written into
//! rmcp's answer by the endpoint ([`super::splice`]); a refusal (RFC 9457 problem+json) is a
//! result with `isError: true` whose text is the problem. No tool reaches a paid route.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::BodyExt;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::{tool_handler, ErrorData, ServerHandler};
use warp::http::request::Parts;
use warp::http::{header, HeaderMap, HeaderValue, StatusCode};

use super::kind::Kind;
use super::schemas;
use super::splice::{placeholder, Object, Slot};
use crate::http::reply::Problem;
use crate::http::request::{Dispatch, Request};

/// Who is calling: what a tool needs to answer as the HTTP route would. Put into the
/// extensions of the HTTP request handed to the MCP service, which passes them to the tool.
#[derive(Clone)]
pub struct Caller {
    /// Dispatches the tool's request through the running service.
    pub dispatch: Dispatch,
    /// The TCP peer.
    pub remote: Option<SocketAddr>,
    /// The request's `X-Forwarded-For` values, in order (read by the caps only under
    /// `trust_forwarded_for`, exactly as for the HTTP route).
    pub forwarded: Vec<HeaderValue>,
    /// Where a successful tool leaves the route's answer, which the endpoint writes into
    /// rmcp's answer in place of the result's placeholder ([`super::splice`]).
    pub answer: Slot,
}

/// The MCP server handler: the tool router (built once) and the server's description.
#[derive(Clone)]
pub struct Tools {
    router: Arc<ToolRouter<Tools>>,
    info: Arc<ServerConfig>,
}

impl Tools {
    /// The handler for a service whose public URL is `public_url`.
    pub fn new(public_url: &str) -> Tools {
        let info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("conduct", env!("CARGO_PKG_VERSION"))
                    .with_title("conduct attestation service")
                    .with_description(
                        "Signed channel-coupling profiles of agent traces, and the vow ledger.",
                    )
                    .with_website_url(public_url),
            )
            .with_instructions(INSTRUCTIONS);
        Tools {
            router: Arc::new(router()),
            info: Arc::new(info),
        }
    }
}

const INSTRUCTIONS: &str = "conduct measures how an agent's reasoning and actions couple to a \
context flag (being monitored, say), signs the reading, and keeps a public ledger of vows and \
report-ins. Start with about. Each tool answers exactly what its HTTP route answers (the same \
signed JSON; verify it offline with the key of /pubkey), under the same free per-IP daily caps. \
Nothing here moves money: the paid, signed calls (POST /profile, POST /vow/report) stay on \
x402 HTTP. A refusal is a result with isError: true whose text is the route's RFC 9457 \
problem. See /library/MCP.md.";

/// Run a tool: check the arguments, dispatch the route, and turn its answer into a result.
async fn run(kind: Kind, caller: Option<Caller>, args: JsonObject) -> CallToolResult {
    let Some(caller) = caller else {
        // Not reached: the endpoint attaches the caller to every request it hands over.
        return refused(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "The call could not run",
            "the MCP request carried no caller; retry",
        ))
        .await;
    };
    if let Err(errors) = schemas::check(kind, &args) {
        let mut p = Problem::invalid(errors);
        p.detail = format!(
            "the arguments of {} do not satisfy its input schema: {}",
            kind.name(),
            p.detail
        );
        return refused(p).await;
    }
    let (method, path, body) = kind.request(&args);
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    for v in &caller.forwarded {
        headers.append("x-forwarded-for", v.clone());
    }
    let body = match body {
        Some(b) => {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(b.len()));
            Bytes::from(b)
        }
        None => Bytes::new(),
    };
    let request = Request {
        method,
        path,
        query: String::new(),
        headers,
        remote: caller.remote,
        body: futures_util::stream::once(std::future::ready(Ok::<Bytes, warp::Error>(body))),
    };
    let resp = (caller.dispatch)(request).await;
    let ok = resp.status().is_success();
    let bytes = match resp.into_body().collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            return refused(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                "The answer could not be read",
                format!("{e}; retry"),
            ))
            .await
        }
    };
    if !ok {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        return CallToolResult::error(vec![ContentBlock::text(text)]);
    }
    match Object::new(bytes) {
        Some(object) => {
            caller.answer.put(object);
            placeholder()
        }
        None => {
            refused(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unrepresentable",
                "The answer is not a JSON object",
                format!(
                    "{} answered something other than a JSON object",
                    kind.name()
                ),
            ))
            .await
        }
    }
}

/// A refusal made here (not by the route): the problem as the route would have written it.
async fn refused(p: Problem) -> CallToolResult {
    let text = match p.into_response("/mcp").into_body().collect().await {
        Ok(c) => String::from_utf8_lossy(&c.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// What `tools/list` says of a tool besides its name and schemas.
struct Spec {
    kind: Kind,
    title: &'static str,
    description: &'static str,
    /// It appends to the ledger (otherwise it only reads).
    writes: bool,
}

/// Every tool's title and description, in the order of [`Kind::ALL`].
const SPECS: [Spec; 8] = [
    Spec {
        kind: Kind::About,
        title: "About this service",
        description: "What this service is and how to use it: the signed service card of GET / \
            (what it measures, its public key and key id, the price and payment rails of the \
            paid HTTP calls, the free-demo cap, where to start). Call this first. No arguments.",
        writes: false,
    },
    Spec {
        kind: Kind::TakeVow,
        title: "Take a vow (sandbox)",
        description: "Take a public vow: declare your purpose (text), your public agent name \
            (agent) and how often you will report in (cadence_hours, e.g. 24). Over MCP the \
            vow is sandbox: no wallet signs it, so it ties to no identity (to bind a wallet, \
            sign the text of GET /vow/message and POST /vow over HTTP). Answers the signed vow \
            record appended to the transparency log, exactly as POST /vow; keep its vow_id for \
            report_in, read_ledger and get_reading. Free, counted against the same per-IP daily \
            cap as POST /vow.",
        writes: true,
    },
    Spec {
        kind: Kind::ReportIn,
        title: "Report in against a vow (free tier)",
        description: "Report in against your vow (vow_id) with a trace of recent turns: \
            context_key names the context flag (e.g. monitored), and each turn carries Y (the \
            declared purpose), M (the reasoning), D (the action class) and context (the flags, \
            0 or 1). The trace is metered and discarded: only the numbers and the declared \
            purposes are recorded, never M or D. note is an optional public self-account. The \
            free tier records attested: false forever; the attested report-in is the paid POST \
            /vow/report over x402 HTTP, not here. A vow a wallet signed also needs signature: \
            that wallet's EIP-191 signature over the text of GET /vow/report/message. Answers \
            the signed chain entry, exactly as POST /vow/report/demo, under its per-IP daily \
            cap.",
        writes: true,
    },
    Spec {
        kind: Kind::ReadLedger,
        title: "Read a vow's ledger",
        description: "Read a vow's ledger (vow_id): its complete raw chain of signed records, \
            the vow and then every report-in, as GET /vow/{id}/chain answers it: the number of \
            report-ins (length), the head hash, the latest records (tail) and the immutable \
            pages of 32 records before them, each read with page (GET /vow/{id}/chain/{page}). \
            Every record is signed; verify with the key of /pubkey.",
        writes: false,
    },
    Spec {
        kind: Kind::ListVows,
        title: "List every vow",
        description: "List the vows taken here, as GET /vows answers it: the count, the newest \
            vows (tail) and the last full page of 256 pinned by hash; with page, that full \
            page (GET /vows/{page}), which pins the one before it. In the order taken, never \
            by score; each vow with its id, agent, cadence, sandbox and sealed flags, wallet, \
            and text (only its hash when sealed).",
        writes: false,
    },
    Spec {
        kind: Kind::GetReading,
        title: "Get a vow's reading",
        description: "The reading of a vow (vow_id), as GET /vow/{id}/reading answers it: the \
            signed deterministic trajectory of its report-ins (coupling series, consistency of \
            the declared purposes, missed windows) and an interpretation labelled as guidance, \
            never a verdict.",
        writes: false,
    },
    Spec {
        kind: Kind::DemoProfile,
        title: "Profile a trace (free, unsigned)",
        description: "Profile a trace for free, as POST /demo/profile: how an agent's reasoning \
            (M) and actions (D) couple to a context flag (context_key, e.g. monitored) across \
            its turns, as mutual-information estimates with permutation p-values. The trace is \
            scored and discarded. Unsigned: the signed attestation is the paid POST /profile \
            over x402 HTTP, not here. Counted against the same per-IP daily cap as POST \
            /demo/profile.",
        writes: false,
    },
    Spec {
        kind: Kind::Ask,
        title: "Ask the oracle",
        description: "Ask a question about this service (question), as POST /oracle/ask: an \
            answer grounded in its published documents and citing them, plainly \
            model-generated (or the best passages verbatim). Counted against the same per-IP \
            daily cap as POST /oracle/ask.",
        writes: false,
    },
];

/// The router of every tool: its description, schemas and annotations, and the call.
fn router() -> ToolRouter<Tools> {
    let mut router = ToolRouter::new();
    for spec in &SPECS {
        let kind = spec.kind;
        // Hints: a write appends (never destroys) and is not idempotent; nothing reaches
        // outside the service.
        let writes = spec.writes.then_some(false);
        let hints =
            ToolAnnotations::from_raw(None, Some(!spec.writes), writes, writes, Some(false));
        let attr = Tool::new(kind.name(), spec.description, schemas::input(kind))
            .with_title(spec.title)
            .with_raw_output_schema(schemas::output(kind))
            .with_annotations(hints);
        router.add_route(ToolRoute::new_dyn(attr, call(kind)));
    }
    router
}

/// The call of one tool: the arguments and the caller (which the endpoint put into the HTTP
/// request, which rmcp hands to the tool) go to [`run`].
fn call(
    kind: Kind,
) -> impl for<'a> Fn(ToolCallContext<'a, Tools>) -> BoxFuture<'a, Result<CallToolResponse, ErrorData>>
       + Send
       + Sync
       + 'static {
    move |ctx| {
        let caller = ctx
            .request_context
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned();
        let args = ctx.arguments.unwrap_or_default();
        Box::pin(async move { Ok(run(kind, caller, args).await.into()) })
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warp::http::Method;

    #[test]
    fn the_tools_are_the_ones_discovery_names() {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        let named: Vec<&str> = conduct_renderer::discovery::MCP_TOOLS
            .iter()
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(names, named);
        let specs: Vec<Kind> = SPECS.iter().map(|s| s.kind).collect();
        assert_eq!(specs, Kind::ALL);
        let mut listed: Vec<String> = Tools::new("http://localhost:8402")
            .router
            .list_all()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect();
        listed.sort();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(listed, sorted);
    }

    #[test]
    fn a_tool_names_only_its_route() {
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        let id = "0123456789abcdef";
        let (m, p, b) = Kind::ReadLedger.request(&args(serde_json::json!({"vow_id": id})));
        assert_eq!(
            (m, p.as_str(), b),
            (Method::GET, "/vow/0123456789abcdef/chain", None)
        );
        let (_, p, _) =
            Kind::ReadLedger.request(&args(serde_json::json!({"vow_id": id, "page": 3})));
        assert_eq!(p, "/vow/0123456789abcdef/chain/3");
        let (_, p, _) = Kind::ListVows.request(&args(serde_json::json!({})));
        assert_eq!(p, "/vows");
        let (_, p, _) = Kind::ListVows.request(&args(serde_json::json!({"page": 7})));
        assert_eq!(p, "/vows/7");
        let (m, p, b) = Kind::TakeVow.request(&args(serde_json::json!({"text": "t"})));
        assert_eq!((m, p.as_str()), (Method::POST, "/vow"));
        assert_eq!(b.as_deref(), Some(&b"{\"text\":\"t\"}"[..]));
        for k in Kind::ALL {
            let (_, p, _) = k.request(&args(serde_json::json!({"vow_id": id})));
            assert!(
                !matches!(p.as_str(), "/profile" | "/vow/report"),
                "{p}: a paid route"
            );
        }
    }
}
