//! The route table: the one list that both dispatches requests and generates `/catalog`.
//!
//! Dynamic routes name a handler; static routes are served from the rendered tree, and a test
//! checks that every static route resolves to a rendered file.

use conduct_renderer::RouteInfo;

/// A handler computed per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dynamic {
    /// `POST /profile`: the paid, signed attestation.
    Profile,
    /// `POST /demo/profile`: the free, unsigned attestation.
    DemoProfile,
    /// `GET /health`: liveness and rails.
    Health,
    /// `GET /log/proof/{index}`: a C2SP tlog-proof of one log entry.
    LogProof,
    /// `GET /vow/message`: the exact EIP-191 text of a vow.
    VowMessage,
    /// `POST /vow`: take a vow.
    TakeVow,
    /// `GET /vow/report/message`: the exact EIP-191 text of a wallet-signed report-in.
    ReportMessage,
    /// `POST /vow/report/demo`: a free report-in.
    ReportDemo,
    /// `POST /vow/report`: a paid report-in.
    Report,
    /// `GET /vow/{id}/verify_text`: does a candidate text match the vow's hash.
    VerifyText,
    /// `GET /card?key=`: the card of an agent name, npub, vow id or wallet.
    Card,
}

/// What answers a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// Computed per request.
    Dynamic(Dynamic),
    /// A file of the rendered tree.
    Static,
}

/// One route: its public description and its handler.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// What `/catalog` says about it.
    pub info: RouteInfo,
    /// What answers it.
    pub handler: Handler,
}

const fn route(
    method: &'static str,
    path: &'static str,
    paid: bool,
    handler: Handler,
    description: &'static str,
) -> Route {
    Route {
        info: RouteInfo {
            method,
            path,
            paid,
            description,
        },
        handler,
    }
}

/// Every route of the running service.
pub const ROUTES: &[Route] = &[
    route("POST", "/profile", true, Handler::Dynamic(Dynamic::Profile),
        "Signed channel-coupling profile of a trace (Ed25519 over RFC 8785). Paid via x402; optional disclosure {\"predicate\":{\"metric\",\"band\"}}."),
    route("POST", "/demo/profile", false, Handler::Dynamic(Dynamic::DemoProfile),
        "The same profile, unsigned. Free, capped per IP per UTC day."),
    route("GET", "/health", false, Handler::Dynamic(Dynamic::Health),
        "Liveness and which payment rails are up."),
    route("GET", "/", false, Handler::Static,
        "Service card (JSON; HTML for Accept: text/html)."),
    route("GET", "/catalog", false, Handler::Static,
        "This list, generated from the running route table."),
    route("GET", "/pubkey", false, Handler::Static,
        "The Ed25519 public key, its C2SP key id and vkey."),
    route("GET", "/predicates", false, Handler::Static,
        "Posted predicate metrics and bands for disclosure mode."),
    route("GET", "/schemas/trace.json", false, Handler::Static,
        "JSON Schema of a trace."),
    route("GET", "/schemas/attestation.json", false, Handler::Static,
        "JSON Schema of an attestation."),
    route("GET", "/.well-known/x402.json", false, Handler::Static,
        "Paid resources and the rails that pay them."),
    route("GET", "/.well-known/agent.json", false, Handler::Static,
        "Agent card."),
    route("GET", "/library", false, Handler::Static,
        "Published documents with sizes, and the withheld count."),
    route("GET", "/library/{NAME}.md", false, Handler::Static,
        "One published document as markdown (HTML at /library/{NAME})."),
    route("GET", "/manifest.json", false, Handler::Static,
        "Signed manifest of every file of the tree, for mirrors."),
    route("GET", "/log/checkpoint", false, Handler::Static,
        "The log's latest checkpoint: a C2SP signed note (origin, size, RFC 6962 root)."),
    route("GET", "/log/tile/{L}/{N}", false, Handler::Static,
        "A C2SP tlog-tiles hash tile (N in x-prefixed 3-digit groups; partial tiles end in .p/<W>)."),
    route("GET", "/log/tile/entries/{N}", false, Handler::Static,
        "A bundle of log entries (u16 big-endian length before each entry)."),
    route("GET", "/log/proof/{index}", false, Handler::Dynamic(Dynamic::LogProof),
        "A C2SP tlog-proof: the entry's inclusion proof and the signed checkpoint it belongs to."),
    route("GET", "/vow/message", false, Handler::Dynamic(Dynamic::VowMessage),
        "The exact EIP-191 text a wallet signs to take a vow: ?text=&agent=&cadence_hours=[&sealed=true]."),
    route("POST", "/vow", false, Handler::Dynamic(Dynamic::TakeVow),
        "Take a vow {text, agent, cadence_hours, wallet?, signature?, sealed?}; sandbox unless the wallet signature verifies. Free, capped per IP per UTC day."),
    route("GET", "/vow/report/message", false, Handler::Dynamic(Dynamic::ReportMessage),
        "The exact EIP-191 text a wallet-signed vow's wallet signs to report in: ?vow_id=&trace_sha256=[&note=][&donate_trace=true]. Binds the trace, the note and donate_trace; each signature is accepted once."),
    route("POST", "/vow/report", true, Handler::Dynamic(Dynamic::Report),
        "A report-in {vow_id, turns, context_key, note?, donate_trace?}: a signed chain entry with attested: true. Paid via x402."),
    route("POST", "/vow/report/demo", false, Handler::Dynamic(Dynamic::ReportDemo),
        "The same report-in on the free tier: attested: false forever. Capped per IP per UTC day."),
    route("GET", "/vows", false, Handler::Static,
        "Public index of every vow, by agent name (never by score)."),
    route("GET", "/vow/{id}", false, Handler::Static,
        "A vow, its chain in brief, and trajectory stats (coupling series, y_consistency, missed windows, overdue, chain verification)."),
    route("GET", "/vow/{id}/chain", false, Handler::Static,
        "The complete raw chain: every signed record of the vow, in order."),
    route("GET", "/vow/{id}/reading", false, Handler::Static,
        "The signed trajectory plus an interpretation labelled as guidance, never a verdict."),
    route("GET", "/vow/{id}/chain/{k}", false, Handler::Static,
        "Page k of a vow's chain: 32 records from position 32k, immutable once full, pinned by hash in /vow/{id}/chain."),
    route("GET", "/vow/{id}/feed.atom", false, Handler::Static,
        "An Atom feed of a vow's report-ins (the static answer to \"no push interface\")."),
    route("GET", "/vow/{id}/verify_text", false, Handler::Dynamic(Dynamic::VerifyText),
        "Whether ?text= is the vow's text (compares sha256 with the published text_sha256)."),
    route("GET", "/card", false, Handler::Dynamic(Dynamic::Card),
        "?key= an agent name, npub, vow id or wallet: its card (your own signed material plus fixed text; no score, no clock). An unknown key is a negative result, never a 404."),
    route("GET", "/lost", false, Handler::Static,
        "The arrival door: six questions in fixed order, each with the endpoints that answer it (JSON, text or HTML)."),
    route("GET", "/llms.txt", false, Handler::Static,
        "The whole surface compressed to one page."),
    route("GET", "/sitemap.xml", false, Handler::Static,
        "Every public page, for crawlers."),
    route("GET", "/robots.txt", false, Handler::Static,
        "Crawler rules."),
];

/// Match a concrete path against a route pattern (`{X}` matches a non-empty part of one
/// segment).
pub use conduct_renderer::site::route_matches as matches;

/// The dynamic route for `method` and `path`, if any.
pub fn find(method: &str, path: &str) -> Option<Dynamic> {
    ROUTES.iter().find_map(|r| match r.handler {
        Handler::Dynamic(d) if r.info.method == method && matches(r.info.path, path) => Some(d),
        _ => None,
    })
}

/// Methods the dynamic routes accept at `path` (for 405 `Allow`).
pub fn dynamic_methods(path: &str) -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|r| r.handler != Handler::Static && matches(r.info.path, path))
        .map(|r| r.info.method)
        .collect()
}

/// The public descriptions, in table order.
pub fn infos() -> Vec<RouteInfo> {
    ROUTES.iter().map(|r| r.info).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches("/library/{NAME}.md", "/library/METER.md"));
        assert!(!matches("/library/{NAME}.md", "/library/a/b.md"));
        assert!(!matches("/library/{NAME}.md", "/library/.md"));
        assert!(matches("/profile", "/profile"));
        assert!(matches("/vow/{id}/chain/{k}", "/vow/ab12/chain/3"));
        assert!(!matches("/vow/{id}/chain/{k}", "/vow/ab12/chain"));
        assert!(!matches("/vow/{id}", "/vow/a/b"));
    }
}
