//! The route table: the one list that dispatches requests (`http::dispatch`) and generates
//! `/catalog`, `/openapi.json`, the nginx config and the sitemap's pages.
//!
//! A row is a route's public description and contract (its [`RouteInfo`]) and what answers it:
//! a file of the rendered tree, or a [`Dynamic`] answer, whose row also states the route's free
//! daily cap ([`FreeCap`]), its payment terms when it is paid ([`Pay`]), and paths its pattern
//! matches that are not its own; its JSON body is read before the handler when its contract
//! names one. The dispatcher reads the row: it takes the cap, reads
//! the body, calls the handler (the row's function, given the [`Call`]) and counts the call
//! when it was served. A test checks that every static route resolves to a rendered file.

use std::future::ready;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use warp::reply::Response as WarpResponse;

use conduct_renderer::openapi::{
    Contract, In, Param, ParamSchema, Schema, ATOM, CSS, HTML, JSON, MARKDOWN, OCTETS, SVG, TEXT,
    XML,
};
use conduct_renderer::RouteInfo;

use crate::handlers::{
    card, erc8004, familiar, health, log_proof, mcp, munus, nostr, oracle, prepare, profile,
    reputation, sign_index, ticket, vows, who, witness,
};
use crate::http::call::Call;
use crate::http::caps::{Counter, FreeCap};
use crate::http::reply::Problem;
use crate::payment::gate::{Charge, Pay, Price, SettleWhen};
use crate::state::App;

/// What a handler answers: the response, or the problem.
pub type Answered<'a> = BoxFuture<'a, Result<WarpResponse, Problem>>;

/// A free route's handler.
pub type Handle = for<'a> fn(&'a Call) -> Answered<'a>;

/// A paid route's handler, given its row's terms for this request.
pub type PaidHandle = for<'a> fn(&'a Call, Charge<'a>) -> Answered<'a>;

/// How a dynamic route is answered.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// By its handler, free.
    Free(Handle),
    /// By its handler, paid on these terms (through `payment::gate`).
    Paid(Pay, PaidHandle),
}

/// A route answered per request, and its policy.
#[derive(Debug, Clone, Copy)]
pub struct Dynamic {
    /// Its handler (and payment).
    pub answer: Answer,
    /// The free daily cap it takes before anything else (a 429 when used up).
    pub cap: Option<FreeCap>,
    /// Whether its JSON body is read before the handler is called: when its contract names
    /// one.
    pub body: bool,
    /// Paths its pattern matches that are not this route's (they fall to the next row, or to
    /// the tree).
    pub except: fn(&str) -> bool,
}

/// What answers a route.
#[derive(Debug, Clone, Copy)]
pub enum Handler {
    /// Computed per request.
    Dynamic(Dynamic),
    /// A file of the rendered tree.
    Static,
}

/// One route: its public description and its handler.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// What `/catalog` and `/openapi.json` say about it.
    pub info: RouteInfo,
    /// What answers it.
    pub handler: Handler,
}

/// A path no route excepts.
const fn none(_: &str) -> bool {
    false
}

/// A file of the tree at `path`, described by `description`.
const fn route(method: &'static str, path: &'static str, description: &'static str) -> Route {
    Route {
        info: RouteInfo {
            method,
            path,
            paid: false,
            description,
            contract: Contract::UNDESCRIBED,
        },
        handler: Handler::Static,
    }
}

impl Route {
    /// With the contract `/openapi.json` describes the route by: a dynamic route whose
    /// contract names a request body has it read before its handler.
    const fn with(self, contract: Contract) -> Route {
        let handler = match self.handler {
            Handler::Dynamic(d) => Handler::Dynamic(Dynamic {
                body: contract.body.is_some(),
                ..d
            }),
            Handler::Static => Handler::Static,
        };
        Route {
            info: RouteInfo {
                contract,
                ..self.info
            },
            handler,
        }
    }

    /// Answered by `answer`, with no cap (yet), reading the body its contract names.
    const fn answered(self, answer: Answer) -> Route {
        Route {
            handler: Handler::Dynamic(Dynamic {
                answer,
                cap: None,
                body: self.info.contract.body.is_some(),
                except: none,
            }),
            ..self
        }
    }

    /// Answered, free, by `handle`.
    const fn answer(self, handle: Handle) -> Route {
        self.answered(Answer::Free(handle))
    }

    /// Answered by `handle`, paid on `pay`'s terms.
    const fn paid(self, pay: &Pay, handle: PaidHandle) -> Route {
        let r = self.answered(Answer::Paid(*pay, handle));
        Route {
            info: RouteInfo {
                paid: true,
                ..r.info
            },
            ..r
        }
    }

    /// The dynamic part of the row (a static route has none: a table that gives one a cap or
    /// an exception does not compile).
    const fn dynamic(self) -> Dynamic {
        match self.handler {
            Handler::Dynamic(d) => d,
            Handler::Static => panic!("a static route takes no cap or exception"),
        }
    }

    /// Taking the free daily cap `cap`.
    const fn cap(self, cap: FreeCap) -> Route {
        let d = self.dynamic();
        Route {
            handler: Handler::Dynamic(Dynamic {
                cap: Some(cap),
                ..d
            }),
            ..self
        }
    }

    /// Not taking the paths `except` says are not its own.
    const fn except(self, except: fn(&str) -> bool) -> Route {
        let d = self.dynamic();
        Route {
            handler: Handler::Dynamic(Dynamic { except, ..d }),
            ..self
        }
    }
}

/// `/reputation/{address}` does not take the holders snapshot's own files
/// (`/reputation/holders.json`, `.html`): they are static files beside it (any other segment
/// is an address, or a 400 naming `/address`).
fn holders_files(path: &str) -> bool {
    path.trim_start_matches("/reputation/")
        .starts_with("holders.")
}

/// `/prepare/sign` (the owner messages) is a route of its own, wherever it sits in the table:
/// `/prepare/{action}` never takes it.
fn owner_messages(path: &str) -> bool {
    path == "/prepare/sign"
}

// The terms of the paid routes (library/PAYMENTS.md).
const PROFILE: Pay = Pay {
    route: "profile",
    description: "Signed channel-coupling profile of a trace",
    settle: SettleWhen::AfterHandler,
    price: Price::Read,
};
const ERC8004: Pay = Pay {
    route: "erc8004-validation",
    description: "Signed ERC-8004 validation credential: a predicate about one trace \
                  bound to an agent subject, and its keccak256(JCS) hash",
    settle: SettleWhen::AfterHandler,
    price: Price::Read,
};
const VOW_REPORT: Pay = Pay {
    route: "vow-report",
    description: "A signed, attested report-in appended to a vow's chain",
    settle: SettleWhen::BeforeHandler,
    price: Price::Read,
};
const WITNESS_READING: Pay = Pay {
    route: "witness-reading",
    description: "Signed witness reading: a vow's pledged portfolio limits checked \
                  against its wallet's token transfers on the chain",
    settle: SettleWhen::AfterHandler,
    price: Price::Read,
};
const FAMILIAR_SUMMON: Pay = Pay {
    route: "familiar-summon",
    description: "A hosted familiar recorded: a labor order with an owner, wallet null \
                  and faucet cap 0, at the posted labor price",
    settle: SettleWhen::BeforeHandler,
    price: Price::Labor,
};

// The parameters of the contracts (the limits are core's; a test checks them).
const VOW_ID: Param = Param::path(
    "id",
    r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
    "A vow id: 16 lowercase hex digits.",
);
const DECIMAL: &str = r#"{"type":"string","pattern":"^(0|[1-9][0-9]{0,18})$"}"#;
const PAGE_NUMBER: Param = Param::path("k", DECIMAL, "The page number, from 0.");
const LOG_INDEX: Param = Param::path("index", DECIMAL, "A log index, in decimal.");
const TILE_LEVEL: Param = Param::path(
    "L",
    r#"{"type":"string","pattern":"^(0|[1-9][0-9]?)$"}"#,
    "The tile level.",
);
const TILE_INDEX: Param = Param::path(
    "N",
    r#"{"type":"string","pattern":"^[0-9]{3}$"}"#,
    "The tile index below 1000, as three digits (a larger index is more path segments, \
     x-prefixed 3-digit groups, and a partial tile ends in .p/<W>).",
);
const DOC_NAME: Param = Param {
    name: "NAME",
    location: In::Path,
    required: true,
    schema: ParamSchema::DocumentName,
    description: "A published document's name (see /library).",
};
const IDEMPOTENCY_KEY: Param = Param::header(
    "Idempotency-Key",
    r#"{"type":"string","minLength":1,"maxLength":255,"pattern":"^[\\x21-\\x7e]+$"}"#,
    "The same key (default: the request's hash) within 24 hours returns what was paid for \
     without a second charge.",
);
const PAYMENT: Param = Param::header(
    "PAYMENT-SIGNATURE",
    r#"{"type":"string"}"#,
    "base64 of an x402 v2 PaymentPayload answering the PAYMENT-REQUIRED challenge \
     (X-PAYMENT is read too).",
);
const PAID: &[Param] = &[PAYMENT, IDEMPOTENCY_KEY];
const VOW_MESSAGE: &[Param] = &[
    Param::query(
        "text",
        true,
        r#"{"type":"string","minLength":1,"maxLength":4000}"#,
        "The declared purpose.",
    ),
    Param::query(
        "agent",
        true,
        r#"{"type":"string","minLength":1,"maxLength":64}"#,
        "The public agent name.",
    ),
    Param::query(
        "cadence_hours",
        true,
        r#"{"type":"number","minimum":0.01,"maximum":8760}"#,
        "The report-in cadence, a whole number of seconds in hours.",
    ),
    Param::query(
        "sealed",
        false,
        r#"{"type":"string","enum":["true","false","1","0"]}"#,
        "Publish only sha256(text).",
    ),
];
const REPORT_MESSAGE: &[Param] = &[
    Param::query(
        "vow_id",
        true,
        r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
        "The vow reported on.",
    ),
    Param::query(
        "trace_sha256",
        true,
        r#"{"type":"string","pattern":"^[0-9a-f]{64}$"}"#,
        "sha256 of the RFC 8785 bytes of {context_key, turns}.",
    ),
    Param::query(
        "note",
        false,
        r#"{"type":"string"}"#,
        "The report-in's note.",
    ),
    Param::query(
        "donate_trace",
        false,
        r#"{"type":"string","enum":["true","false","1","0"]}"#,
        "Whether the trace is donated.",
    ),
];
const VERIFY_TEXT: &[Param] = &[
    VOW_ID,
    Param::query("text", true, r#"{"type":"string"}"#, "The candidate text."),
];
const CARD_KEY: &[Param] = &[Param::query(
    "key",
    true,
    r#"{"type":"string","minLength":1}"#,
    "An agent name, npub, vow id or wallet.",
)];
const CARD_PATH_KEY: &[Param] = &[Param::path(
    "key",
    r#"{"type":"string","minLength":1}"#,
    "An agent name, npub, vow id or wallet (percent-encoded).",
)];
const WHO_HANDLE: &[Param] = &[Param::query(
    "handle",
    true,
    r#"{"type":"string","minLength":1}"#,
    "A wallet (0x and 40 hex digits) or an agent name.",
)];
const QUEST_ID: Param = Param::path(
    "id",
    r#"{"type":"string","pattern":"^[a-z0-9][a-z0-9-]{0,63}$"}"#,
    "A quest id (see /munus).",
);
const PLAY_MESSAGE: &[Param] = &[
    Param::query(
        "action",
        true,
        r#"{"type":"string","enum":["claim","submit","claim_quest","submit_delivery"]}"#,
        "The game action.",
    ),
    Param::query(
        "quest",
        true,
        r#"{"type":"string","pattern":"^[a-z0-9][a-z0-9-]{0,63}$"}"#,
        "The quest.",
    ),
    Param::query(
        "vow_id",
        true,
        r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
        "The sworn vow acting.",
    ),
    Param::query(
        "link",
        false,
        r#"{"type":"string","pattern":"^https://","maxLength":512}"#,
        "A submit's delivery link (an https URL).",
    ),
];
const WALLET: Param = Param::path(
    "address",
    r#"{"type":"string","pattern":"^0x[0-9a-fA-F]{40}$"}"#,
    "A wallet: 0x and 40 hex digits.",
);
const HOLDERS_QUERY: &[Param] = &[
    Param::query(
        "q",
        false,
        r#"{"type":"string","pattern":"^(0x)?[0-9a-fA-F]{0,40}$"}"#,
        "Part of a wallet address (hex, case-insensitive).",
    ),
    Param::query(
        "limit",
        false,
        r#"{"type":"string","pattern":"^[1-9][0-9]{0,3}$"}"#,
        "At most this many rows (1 to 1000; default 1000).",
    ),
    Param::query(
        "sort",
        false,
        r#"{"type":"string","enum":["wallet","score"]}"#,
        "wallet (default) or score (highest first).",
    ),
];
const TOOL_ID: Param = Param::path("id", DECIMAL, "An ERC-8257 tool id, in decimal.");
const BIND_MESSAGE: &[Param] = &[
    Param::query(
        "vow_id",
        true,
        r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
        "The signed vow the npub is bound to.",
    ),
    Param::query(
        "npub",
        true,
        r#"{"type":"string","pattern":"^npub1[02-9ac-hj-np-z]{58}$"}"#,
        "The NIP-19 npub to bind.",
    ),
];

const PLEDGE_MESSAGE: &[Param] = &[
    Param::query(
        "vow_id",
        true,
        r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
        "The signed vow that pledges.",
    ),
    Param::query(
        "limits",
        true,
        r#"{"type":"string","minLength":1,"maxLength":4096}"#,
        "The limits: <asset>:<max_balance>:<max_outflow_per_day> (an unset maximum empty, \
         base units), comma-separated; or the JSON array of the pledge body.",
    ),
];
const FAMILIAR_MESSAGE: &[Param] = &[
    Param::query(
        "vow_id",
        false,
        r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
        "The owner, a signed vow (or give wallet).",
    ),
    Param::query(
        "wallet",
        false,
        r#"{"type":"string","pattern":"^0x[0-9a-fA-F]{40}$"}"#,
        "The owner, a wallet (or give vow_id).",
    ),
    Param::query(
        "order",
        true,
        r#"{"type":"string","pattern":"^[0-9a-f]{64}$"}"#,
        "sha256 of the RFC 8785 bytes of the labor order.",
    ),
];
const FAMILIAR_ID: Param = Param::path(
    "id",
    r#"{"type":"string","pattern":"^[0-9a-f]{16}$"}"#,
    "A familiar id: 16 lowercase hex digits.",
);

// The arguments of prepared actions (library/PREPARE.md; conduct_indexer's catalogue checks
// each, and a test checks that the action enum is the catalogue).
const ADDRESS: &str = r#"{"type":"string","pattern":"^0x[0-9a-fA-F]{40}$"}"#;
const UINT256: &str = r#"{"type":"string","pattern":"^(0|[1-9][0-9]{0,77})$"}"#;
const BYTES32: &str = r#"{"type":"string","pattern":"^0x[0-9a-fA-F]{64}$"}"#;
const URI_ARG: &str = r#"{"type":"string","minLength":1,"maxLength":2048}"#;
/// The path parameter naming a prepared action.
pub const ACTION: Param = Param::path(
    "action",
    r#"{"type":"string","enum":["register_tool","update_tool_metadata","set_access_predicate","deregister_tool","buy_ticket","transfer_ticket","validation_request","validation_response","quest_payment"]}"#,
    "The action (see GET /prepare).",
);
const FROM_ARG: Param = Param::query(
    "from",
    true,
    ADDRESS,
    "The wallet that signs every transaction (your own).",
);
const AMOUNT_ARG: Param = Param::query(
    "amount",
    false,
    UINT256,
    "Copies (default 1), or the base units a quest payment transfers.",
);
const PRICE_ARG: Param = Param::query(
    "price",
    false,
    UINT256,
    "buy_ticket: the price of one copy you accept (default: the contract's, read now).",
);
const TOKEN_ARG: Param = Param::query(
    "token",
    false,
    ADDRESS,
    "buy_ticket: the ERC-20 it is paid in (default: the contract's token()); quest_payment: the token (default: [munus] token).",
);
const PREPARE_QUERY: &[Param] = &[
    ACTION,
    FROM_ARG,
    Param::query(
        "metadata_uri",
        false,
        URI_ARG,
        "A tool's manifest location.",
    ),
    Param::query(
        "manifest_hash",
        false,
        BYTES32,
        "keccak256 of a tool manifest's RFC 8785 bytes.",
    ),
    Param::query(
        "access_predicate",
        false,
        ADDRESS,
        "A tool's access predicate (zero: open).",
    ),
    Param::query("tool_id", false, UINT256, "An ERC-8257 tool id."),
    Param::query("game", false, UINT256, "A game: its ERC-1155 token id."),
    AMOUNT_ARG,
    PRICE_ARG,
    TOKEN_ARG,
    Param::query("to", false, ADDRESS, "The receiving wallet."),
    Param::query("validator", false, ADDRESS, "An ERC-8004 validator."),
    Param::query("agent_id", false, UINT256, "An ERC-8004 agent id."),
    Param::query(
        "request_uri",
        false,
        URI_ARG,
        "Where a validator fetches the evidence.",
    ),
    Param::query(
        "request_hash",
        false,
        BYTES32,
        "keccak256 of the evidence (a credential_hash).",
    ),
    Param::query(
        "response",
        false,
        r#"{"type":"string","pattern":"^(0|[1-9][0-9]?|100)$"}"#,
        "A validation response, 0 to 100.",
    ),
    Param::query(
        "response_uri",
        false,
        r#"{"type":"string","maxLength":2048}"#,
        "Where the validator's report is.",
    ),
    Param::query("response_hash", false, BYTES32, "keccak256 of the report."),
    Param::query(
        "tag",
        false,
        r#"{"type":"string","maxLength":256}"#,
        "A validation tag.",
    ),
];
const GAME_PATH: Param = Param::path(
    "game",
    UINT256,
    "A game: its ERC-1155 token id, in decimal.",
);
const TICKET_PREPARE: &[Param] = &[GAME_PATH, FROM_ARG, AMOUNT_ARG, PRICE_ARG, TOKEN_ARG];
const TICKET_MESSAGE: &[Param] = &[
    GAME_PATH,
    Param::query("wallet", true, ADDRESS, "The holder's wallet."),
];

// The request bodies a handler parses into a type: their schemas are derived from the type
// (those the MCP tools share are in `crate::handlers::bodies`).
pub use crate::handlers::bodies::{PROFILE_BODY, REPORT_BODY, VOW_BODY};
/// `POST /erc8004/validation`.
const ERC8004_BODY: Schema = Schema::of::<conduct_core::erc8004::ValidationRequest<'static>>();
const CLAIM_BODY: Schema = Schema::of::<crate::handlers::munus::ClaimBody>();
const SUBMIT_BODY: Schema = Schema::of::<crate::handlers::munus::SubmitBody>();
const BIND_BODY: Schema = Schema::of::<crate::handlers::nostr::BindBody>();
const PLEDGE_BODY: Schema = Schema::of::<crate::handlers::witness::PledgeBody>();
const READING_BODY: Schema = Schema::of::<crate::handlers::witness::ReadingBody>();
const SUMMON_BODY: Schema = Schema::of::<crate::handlers::familiar::SummonBody>();
const ENTITLE_BODY: Schema = Schema::of::<crate::handlers::ticket::EntitleBody>();

// A body each paid route takes: the example of its `bazaar` discovery extension (a test holds
// each to the route's parser and schema).
const PROFILE_EXAMPLE: &str = r#"{"context_key":"monitored","turns":[{"Y":"stay in scope","M":"reading the file","D":"clean","context":{"monitored":1}},{"Y":"stay in scope","M":"editing","D":"write_file","context":{"monitored":0}}]}"#;
const ERC8004_EXAMPLE: &str = r#"{"trace":{"context_key":"monitored","turns":[{"Y":"stay in scope","M":"reading the file","D":"clean","context":{"monitored":1}},{"Y":"stay in scope","M":"editing","D":"write_file","context":{"monitored":0}}]},"predicate":{"metric":"i_c_d","band":"under_0.05"},"subject":{"form":"wallet","id":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}}"#;
const REPORT_EXAMPLE: &str = r#"{"vow_id":"0123456789abcdef","context_key":"monitored","turns":[{"Y":"stay in scope","M":"reading the file","D":"clean","context":{"monitored":1}},{"Y":"stay in scope","M":"editing","D":"write_file","context":{"monitored":0}}],"note":"steady"}"#;
const READING_EXAMPLE: &str = r#"{"vow_id":"0123456789abcdef","window_days":7}"#;
const SUMMON_EXAMPLE: &str = r#"{"owner":{"vow_id":"0123456789abcdef"},"signature":"0x1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b","order":{"title":"Tidy the docs","what":"Fix the links."}}"#;

// The contracts of the kinds of route.
const PAGE: Contract = Contract::page(&[JSON, HTML]);
const JSON_FILE: Contract = Contract::file(&[JSON], Some(Schema::Snapshot));
const TEXT_FILE: Contract = Contract::file(&[TEXT], None);

/// Every route of the running service.
pub const ROUTES: &[Route] = &[
    route("POST", "/profile",
        "Signed channel-coupling profile of a trace (Ed25519 over RFC 8785). Paid via x402; optional disclosure {\"predicate\":{\"metric\",\"band\"}}.")
        .paid(&PROFILE, |c, charge| Box::pin(profile::paid(c.ctx(), c.body.clone(), charge)))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Attestation), &[409, 503])
            .body(PROFILE_BODY)
            .example(PROFILE_EXAMPLE)
            .params(PAID)),
    route("POST", "/erc8004/validation",
        "An ERC-8004 validation credential {trace, predicate: {metric, band}, subject: {form, id}}: a signed predicate about one trace (never the numbers) bound to an agent subject (erc8004-agentId, wallet, caip10, vow, npub or did), and credential_hash = keccak256(JCS(credential)) for an ERC-8004 validationRequest. Paid via x402. See /library/ERC8004.md.")
        .paid(&ERC8004, |c, charge| Box::pin(erc8004::paid(c.ctx(), c.body.clone(), charge)))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Erc8004Validation), &[409, 503])
            .body(ERC8004_BODY)
            .example(ERC8004_EXAMPLE)
            .params(PAID)),
    route("POST", "/demo/profile",
        "The same profile, unsigned. Free, capped per IP per UTC day.")
        .answer(|c| Box::pin(profile::demo(c.body.clone(), &c.headers)))
        .cap(FreeCap::new(Counter::Demo, "/demo/profile").or_pay(", or pay for POST /profile"))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Attestation), &[429, 503])
            .body(PROFILE_BODY)),
    route("GET", "/health",
        "Liveness and which payment rails are up.")
        .answer(|c| Box::pin(async { Ok(health::health(c.ctx()).await) }))
        .with(Contract::call(&[200, 503], &[JSON], Some(Schema::Health), &[])),
    route("GET", "/",
        "Service card (JSON; HTML for Accept: text/html).")
        .with(PAGE),
    route("GET", "/catalog",
        "This list, generated from the running route table.")
        .with(PAGE),
    route("GET", "/openapi.json",
        "OpenAPI 3.1 description of every endpoint, generated from the running route table (signed as x-signature).")
        .with(Contract::file(&[JSON], Some(Schema::OpenApi))),
    route("GET", "/pubkey",
        "The Ed25519 public key, its C2SP key id and vkey.")
        .with(PAGE),
    route("GET", "/predicates",
        "Posted predicate metrics and bands for disclosure mode.")
        .with(Contract::page(&[JSON])),
    route("GET", "/schemas/trace.json",
        "JSON Schema of a trace.")
        .with(JSON_FILE),
    route("GET", "/schemas/attestation.json",
        "JSON Schema of an attestation.")
        .with(JSON_FILE),
    route("GET", "/.well-known/x402.json",
        "Paid resources and the rails that pay them.")
        .with(JSON_FILE),
    route("GET", "/.well-known/agent.json",
        "Agent card.")
        .with(JSON_FILE),
    route("GET", "/library",
        "Published documents with sizes, and the withheld count.")
        .with(PAGE),
    route("GET", "/library/{NAME}.md",
        "One published document as markdown (HTML at /library/{NAME}).")
        .with(Contract::file(&[MARKDOWN], None).params(&[DOC_NAME])),
    route("GET", "/manifest.json",
        "The signed root of the manifest, for mirrors: with its bins (/manifest/<prefix>.json, a trie by SHA-256 key) it lists every file of the tree.")
        .with(JSON_FILE),
    route("GET", "/log/checkpoint",
        "The log's latest checkpoint: a C2SP signed note (origin, size, RFC 6962 root).")
        .with(TEXT_FILE),
    route("GET", "/log/tile/{L}/{N}",
        "A C2SP tlog-tiles hash tile (N in x-prefixed 3-digit groups; partial tiles end in .p/<W>).")
        .with(Contract::file(&[OCTETS], None).params(&[TILE_LEVEL, TILE_INDEX])),
    route("GET", "/log/tile/entries/{N}",
        "A bundle of log entries (u16 big-endian length before each entry).")
        .with(Contract::file(&[OCTETS], None).params(&[TILE_INDEX])),
    route("GET", "/log/proof/{index}",
        "A C2SP tlog-proof: the entry's inclusion proof and the signed checkpoint it belongs to.")
        .answer(|c| Box::pin(log_proof::log_proof(&c.app.log, &c.path)))
        .with(Contract::call(&[200], &[TEXT], None, &[400, 404, 503]).params(&[LOG_INDEX])),
    route("GET", "/vow/message",
        "The exact EIP-191 text a wallet signs to take a vow: ?text=&agent=&cadence_hours=[&sealed=true].")
        .answer(|c| Box::pin(ready(vows::message(c.ctx(), &c.query))))
        .with(Contract::call(&[200], &[TEXT], None, &[422]).params(VOW_MESSAGE)),
    route("POST", "/vow",
        "Take a vow {text, agent, cadence_hours, wallet?, signature?, sealed?}; sandbox unless the wallet signature verifies. Free, capped per IP per UTC day.")
        .answer(|c| Box::pin(vows::take(c.ctx(), c.body.clone())))
        .cap(FreeCap::new(Counter::Vow, "POST /vow"))
        .with(Contract::call(&[201], &[JSON], Some(Schema::Record), &[404, 409, 429, 503])
            .body(VOW_BODY)),
    route("GET", "/vow/report/message",
        "The exact EIP-191 text a wallet-signed vow's wallet signs to report in: ?vow_id=&trace_sha256=[&note=][&donate_trace=true]. Binds the trace, the note and donate_trace; each signature is accepted once.")
        .answer(|c| Box::pin(vows::report_message(c.ctx(), &c.query)))
        .with(Contract::call(&[200], &[TEXT], None, &[404, 422, 503]).params(REPORT_MESSAGE)),
    route("POST", "/vow/report",
        "A report-in {vow_id, turns, context_key, note?, donate_trace?}: a signed chain entry with attested: true. Paid via x402.")
        .paid(&VOW_REPORT, |c, charge| Box::pin(vows::report_paid(c.ctx(), c.body.clone(), charge)))
        .with(Contract::call(&[200, 201], &[JSON], Some(Schema::Record), &[403, 404, 409, 503])
            .body(REPORT_BODY)
            .example(REPORT_EXAMPLE)
            .params(PAID)),
    route("POST", "/vow/report/demo",
        "The same report-in on the free tier: attested: false forever. Capped per IP per UTC day.")
        .answer(|c| Box::pin(vows::report_demo(c.ctx(), c.body.clone(), &c.headers)))
        .cap(FreeCap::new(Counter::ReportDemo, "/vow/report/demo").or_pay(", or pay for POST /vow/report"))
        .with(Contract::call(&[201], &[JSON], Some(Schema::Record), &[403, 404, 409, 429, 503])
            .body(REPORT_BODY)),
    route("POST", "/oracle/ask",
        "Ask {question} (at most 2000 characters): an answer grounded in the published library, citing its documents and sections; written by a language model (primary or fallback) and labelled so, or the best passages verbatim when none answers. Unsigned. Free, capped per IP per UTC day.")
        .answer(|c| Box::pin(oracle::ask(&c.app.cfg.models, c.body.clone())))
        .cap(FreeCap::new(Counter::Oracle, "/oracle/ask"))
        .with(Contract::call(&[200], &[JSON], Some(Schema::OracleAnswer), &[429])
            .body(Schema::OracleRequest)),
    route("POST", "/mcp",
        "MCP over streamable HTTP, stateless (JSON-RPC 2.0, one JSON answer per POST; MCP 2024-11-05 to 2026-07-28): the tools about, take_vow (sandbox), report_in (free tier), read_ledger, list_vows, get_reading, demo_profile and ask, each answering exactly what its HTTP route answers, under the same per-IP caps. Nothing over MCP moves money. See /library/MCP.md.")
        .answer(|c| Box::pin(mcp::serve(&c.app.mcp, c.tools(), &c.path, c.headers.clone(), c.remote, c.body.clone())))
        .with(Contract::call(&[200, 202, 400, 404], &[JSON], Some(Schema::McpAnswer), &[403, 406])
            .body(Schema::McpMessage)),
    route("GET", "/vows",
        "Public index of every vow, in the order taken (never by score): the count, the newest vows, and the last full page pinned by hash (library/VOWS.md).")
        .with(PAGE),
    route("GET", "/vows/{k}",
        "Page k of the index of vows: the 256 vows taken from the 256k-th, immutable once full, pinning page k-1 by hash.")
        .with(Contract::page(&[JSON, HTML]).params(&[PAGE_NUMBER])),
    route("GET", "/vow/{id}",
        "A vow, its chain in brief, and trajectory stats (coupling series, y_consistency, missed windows, overdue, chain verification).")
        .with(PAGE.params(&[VOW_ID])),
    route("GET", "/vow/{id}/chain",
        "The complete raw chain: a signed head (conduct.chain/v2) pinning the last full page, each page pinning the one before it, and the records after the last full page.")
        .with(PAGE.params(&[VOW_ID])),
    route("GET", "/vow/{id}/reading",
        "The signed trajectory plus an interpretation labelled as guidance, never a verdict.")
        .with(PAGE.params(&[VOW_ID])),
    route("GET", "/vow/{id}/chain/{k}",
        "Page k of a vow's chain: 32 records from position 32k, immutable once full, pinned by hash by page k+1 (prev_page_sha256), the last full page by /vow/{id}/chain.")
        .with(Contract::page(&[JSON]).params(&[VOW_ID, PAGE_NUMBER])),
    route("GET", "/vow/{id}/feed.atom",
        "An Atom feed of a vow's report-ins (the static answer to \"no push interface\").")
        .with(Contract::file(&[ATOM], None).params(&[VOW_ID])),
    route("GET", "/vow/{id}/verify_text",
        "Whether ?text= is the vow's text (compares sha256 with the published text_sha256).")
        .answer(|c| Box::pin(vows::verify_text(c.ctx(), &c.path, &c.query)))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Snapshot), &[404, 422, 503]).params(VERIFY_TEXT)),
    route("GET", "/card",
        "?key= an agent name, npub, vow id or wallet: its card (your own signed material plus fixed text; no score, no clock). An unknown key is a negative result, never a 404.")
        .answer(|c| Box::pin(card::card(c.ctx(), &c.query, c.accept())))
        .with(Contract::call(&[200], &[JSON, TEXT, HTML], Some(Schema::Snapshot), &[])
            .negotiated()
            .params(CARD_KEY)),
    route("GET", "/card/{key}",
        "The card of {key} (an agent name, npub, vow id or wallet, percent-encoded): the same lookup as /card?key=, JSON, text or HTML. An unknown key is a negative result, never a 404.")
        .answer(|c| Box::pin(card::card_at(c.ctx(), &c.path, &c.query, c.accept())))
        .with(Contract::call(&[200], &[JSON, TEXT, HTML], Some(Schema::Snapshot), &[])
            .negotiated()
            .params(CARD_PATH_KEY)),
    route("GET", "/registry",
        "The ERC-8257 tool registry as followed on chain, every manifest re-verified (a statement about bytes, never about safety); alphabetical by claimed publisher name, never ranked. reachable: false with the last good state when the chain does not answer.")
        .with(PAGE),
    route("GET", "/registry/tool/{id}",
        "One registry tool: what the chain says, what its manifest claims (never vouched for), and the check.")
        .with(PAGE.params(&[TOOL_ID])),
    route("GET", "/who",
        "?handle= a wallet or agent name: its vows, their ledger paths and the registry tools it created. A handle with nothing is a negative result, never a 404.")
        .answer(|c| Box::pin(who::who(c.ctx(), &c.query, c.accept())))
        .with(Contract::call(&[200], &[JSON, HTML], Some(Schema::Snapshot), &[])
            .negotiated()
            .params(WHO_HANDLE)),
    route("GET", "/rh",
        "Chain onboarding: the chain followed, its id, an RPC, how to fund a wallet, how to read the registry yourself.")
        .with(PAGE),
    route("GET", "/opensea",
        "The recipe for publishing a tool: manifest template, the well-known path, conduct manifest-hash, and the registerTool call to sign from your own wallet (the service holds no key).")
        .with(PAGE),
    route("GET", "/munus",
        "The quest board: quests that improve this service, their claims and deliveries from the log, the counts (done and settled apart), and the paid ledger with each row re-read from the chain (true, false, or null when the chain did not answer).")
        .with(PAGE),
    route("GET", "/munus/{id}",
        "One quest: what it asks, its status, its claim and delivery, its payments.")
        .with(PAGE.params(&[QUEST_ID])),
    route("GET", "/play/message",
        "The exact EIP-191 text a sworn vow's wallet signs for a quest action: ?action=claim|submit&quest=&vow_id=[&link=]. It names the origin, the action, the quest, the vow and the UTC date; a signature is good that day, once.")
        .answer(|c| Box::pin(munus::message(c.ctx(), &c.query)))
        .with(Contract::call(&[200], &[TEXT], None, &[404, 422, 503]).params(PLAY_MESSAGE)),
    route("POST", "/munus/{id}/claim",
        "Claim a quest {vow_id, signature}: a signed (not sandbox) vow's wallet; first come; one claim per vow per UTC day; lapses after 14 idle days. The claim is a record of the log.")
        .answer(|c| Box::pin(munus::claim(c.ctx(), &c.path, c.body.clone())))
        .cap(FreeCap::new(Counter::Owner, "POST /munus/{id}/claim"))
        .with(Contract::call(&[201], &[JSON], Some(Schema::Record), &[403, 404, 409, 410, 429, 503])
            .body(CLAIM_BODY)
            .params(&[QUEST_ID])),
    route("POST", "/munus/{id}/submit",
        "Put a delivery on the record {vow_id, link, signature}: the claimant's https link (a pull request), never fetched or run.")
        .answer(|c| Box::pin(munus::submit(c.ctx(), &c.path, c.body.clone())))
        .cap(FreeCap::new(Counter::Owner, "POST /munus/{id}/submit"))
        .with(Contract::call(&[201], &[JSON], Some(Schema::Record), &[403, 404, 409, 429, 503])
            .body(SUBMIT_BODY)
            .params(&[QUEST_ID])),
    route("GET", "/reputation",
        "The soulbound reputation record: earned by market outcomes, slashed by rulings, never moved by money; contract, deployed, verified (our code), threshold, recent events, the mirror. Not configured or not deployed is said so (contract null, threshold null), never zeros. A different object from the meter's reading.")
        .with(PAGE),
    route("GET", "/reputation/holders",
        "The holders board (wallet, score, meets), searchable (?q= part of a wallet) and sortable (?sort=wallet|score), ?limit=; the thin query route over the signed snapshot the site publishes.")
        .answer(|c| Box::pin(reputation::holders(c.ctx(), &c.query, c.accept())))
        .with(Contract::call(&[200], &[JSON, HTML], Some(Schema::Snapshot), &[400, 503])
            .negotiated()
            .params(HOLDERS_QUERY)),
    route("GET", "/reputation/{address}",
        "A wallet's score and meets(threshold) from the mirror, with verified: whether a live eth_call agreed (null when the chain does not answer; never 0).")
        .answer(|c| Box::pin(reputation::score(c.ctx(), &c.path)))
        .cap(FreeCap::new(Counter::Lookup, "/reputation/{address}"))
        .except(holders_files)
        .with(Contract::call(&[200], &[JSON], Some(Schema::Snapshot), &[400, 429, 503])
            .params(&[WALLET])),
    route("GET", "/hive/profile",
        "The service's Nostr profile: its canonical kind-0 event (NIP-01 id, BIP-340 signature by the service's Nostr key), exactly as NIP-01 has it; its picture is /hive/mark.svg.")
        .with(Contract::file(&[JSON], None).negotiated()),
    route("GET", "/hive/mark.svg",
        "The service's mark: a small deterministic SVG drawn from its key id.")
        .with(Contract::file(&[SVG], None)),
    route("GET", "/vow/{id}/mark.svg",
        "A vow's mark: a small deterministic SVG drawn from its vow id (no user text).")
        .with(Contract::file(&[SVG], None).params(&[VOW_ID])),
    route("GET", "/nostr/bind/message",
        "The exact text that binds an npub to a signed vow: ?vow_id=&npub=. The vow's wallet signs it (EIP-191) and so does the npub's key (BIP-340 over sha256 of its UTF-8 bytes). It names the origin, the vow, the npub and the UTC date.")
        .answer(|c| Box::pin(nostr::message(c.ctx(), &c.query)))
        .with(Contract::call(&[200], &[TEXT], None, &[404, 422, 503]).params(BIND_MESSAGE)),
    route("POST", "/nostr/bind",
        "Bind an npub to a signed vow {vow_id, npub, wallet_signature, nostr_signature}: both signatures over the text of GET /nostr/bind/message, each used once. A signed record of the log; the latest binding of an npub wins; then /card?key=npub1... and /who?handle=npub1... find the vow. See /library/NOSTR.md.")
        .answer(|c| Box::pin(nostr::bind(c.ctx(), c.body.clone())))
        .cap(FreeCap::new(Counter::Owner, "POST /nostr/bind"))
        .with(Contract::call(&[201], &[JSON], Some(Schema::Record), &[403, 404, 409, 429, 503])
            .body(BIND_BODY)),
    route("GET", "/witness/pledge/message",
        "The exact EIP-191 text a signed vow's wallet signs to pledge portfolio limits: ?vow_id=&limits=<asset>:<max_balance>:<max_outflow_per_day>,... It names the origin, pledge_limits, the vow, every limit and the UTC date; a signature is good that day, once.")
        .answer(|c| Box::pin(witness::message(c.ctx(), &c.query)))
        .with(Contract::call(&[200], &[TEXT], None, &[404, 422, 503]).params(PLEDGE_MESSAGE)),
    route("POST", "/witness/pledge",
        "Pledge portfolio limits {vow_id, limits: [{asset, max_balance?, max_outflow_per_day?}], signature}: per ERC-20 asset a maximum balance and/or a maximum outflow per UTC day, in base units. A signed (not sandbox) vow's wallet signs GET /witness/pledge/message. Free; a signed record of the log; the latest pledge of a vow wins. See /library/WITNESS.md.")
        .answer(|c| Box::pin(witness::pledge(c.ctx(), c.body.clone())))
        .cap(FreeCap::new(Counter::Owner, "POST /witness/pledge"))
        .with(Contract::call(&[201], &[JSON], Some(Schema::Record), &[403, 404, 409, 429, 503])
            .body(PLEDGE_BODY)),
    route("POST", "/witness/reading",
        "A witness reading {vow_id, window_days?}: the wallet's ERC-20 transfers of each pledged asset over the window (whole UTC days, default 7, at most 30) and its balances, read from the chain; every pledged limit checked arithmetically; breaches flagged with the transfers that caused them (breaches: [] when every limit held); signed. Paid via x402 at the read price. A chain that does not answer is 503 chain-unreachable, never no breach, and is not charged.")
        .paid(&WITNESS_READING, |c, charge| Box::pin(witness::reading(c.ctx(), c.body.clone(), charge)))
        .with(Contract::call(&[200], &[JSON], Some(Schema::WitnessReading), &[404, 409, 503])
            .body(READING_BODY)
            .example(READING_EXAMPLE)
            .params(PAID)),
    route("GET", "/familiar/message",
        "The exact EIP-191 text an owner's wallet signs to summon a familiar: ?vow_id=|wallet=&order=<sha256 of the labor order's RFC 8785 bytes>. It names the origin, summon_familiar, the owner, the order's hash and the UTC date; a signature is good that day, once.")
        .answer(|c| Box::pin(familiar::message(c.ctx(), &c.query)))
        .with(Contract::call(&[200], &[TEXT], None, &[403, 404, 422, 503]).params(FAMILIAR_MESSAGE)),
    route("POST", "/familiar/summon",
        "Summon a hosted familiar {owner: {vow_id} or {wallet}, order: {title, what, budget?, deliverable?}, signature}: the owner's wallet signs GET /familiar/message. Paid via x402 at the posted labor price (its own price, in its 402 challenge; see /.well-known/x402.json). Records a labor order with its owner, wallet: null and faucet_cap: \"0\", on a public page (201 with Location). The same summon sent again within 24 h answers 200 with the same record and Location, uncharged. The familiar holds no wallet, moves no funds and signs nothing. See /library/FAMILIARS.md.")
        .paid(&FAMILIAR_SUMMON, |c, charge| Box::pin(familiar::summon(c.ctx(), c.body.clone(), charge)))
        .with(Contract::call(&[200, 201], &[JSON], Some(Schema::Familiar), &[403, 404, 409, 503])
            .body(SUMMON_BODY)
            .example(SUMMON_EXAMPLE)
            .params(PAID)),
    route("GET", "/familiars",
        "Every hosted familiar summoned here, in log order: its order's title, owner, wallet (null) and faucet cap (0).")
        .with(PAGE),
    route("GET", "/familiar/{id}",
        "One hosted familiar: its labor order, owner and log record (wallet null, faucet cap 0, status summoned).")
        .with(PAGE.params(&[FAMILIAR_ID])),
    route("GET", "/prepare",
        "The index of every on-chain action the service prepares (ERC-8257 registerTool, updateToolMetadata, setAccessPredicate, deregisterTool; buying and giving ticket copies; ERC-8004 validationRequest and validationResponse; the operator's quest payment): its contract (null while not deployed here), function, selector and arguments with their types. Signed. See /library/PREPARE.md.")
        .answer(|c| Box::pin(ready(prepare::index(c.ctx()))))
        .with(Contract::call(&[200], &[JSON], Some(Schema::PrepareIndex), &[])),
    route("GET", "/prepare/sign",
        "The index of every owner message (take a vow, report in, claim a quest, submit a delivery, bind an npub, prove a ticket, pledge limits, summon a familiar): the action, where its exact EIP-191 text is served and where the signature goes. One shape for all: origin, action, parameters, UTC date; a signature for one is refused by every other. not_messages says which owner acts have no text here and why (a listing is an on-chain transaction: /prepare/register_tool). Signed.")
        .answer(|c| Box::pin(ready(sign_index::serve(&c.app.key))))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Snapshot), &[])),
    route("GET", "/prepare/{action}",
        "One action, its arguments as query parameters: txs, the unsigned transactions to sign in order (an action that pulls an ERC-20 gets its approve first, with skip_if; the action last; to: null while a contract is not deployed here, the calldata still exact), and preconditions read live at one block (ok, fails, unset, or assumed when the chain could not be read: never zero). The service never quotes a price or asks for a key.")
        .answer(|c| Box::pin(prepare::action(c.ctx(), &c.path, &c.query, None)))
        .cap(FreeCap::new(Counter::Lookup, "/prepare/{action}"))
        .except(owner_messages)
        .with(Contract::call(&[200], &[JSON], Some(Schema::Prepared), &[404, 422, 429, 503])
            .params(PREPARE_QUERY)),
    route("POST", "/prepare/{action}",
        "The same, the arguments as a JSON object of strings.")
        .answer(|c| Box::pin(prepare::action(c.ctx(), &c.path, &c.query, Some(c.body.clone()))))
        .cap(FreeCap::new(Counter::Lookup, "/prepare/{action}"))
        .except(owner_messages)
        .with(Contract::call(&[200], &[JSON], Some(Schema::Prepared), &[404, 422, 429, 503])
            .body(Schema::PrepareRequest)
            .params(&[ACTION])),
    route("GET", "/ticket/{game}/prepare",
        "Buy copies of a game's ticket (ERC-1155, paid in an ERC-20): the approve of the token for price x amount (skip_if: the allowance already covers it), then buy(game, amount); ?from=[&amount=][&price=][&token=]. As /prepare/buy_ticket.")
        .answer(|c| Box::pin(ticket::prepare(c.ctx(), &c.path, &c.query)))
        .cap(FreeCap::new(Counter::Lookup, "/ticket/{game}/prepare"))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Prepared), &[422, 429, 503])
            .params(TICKET_PREPARE)),
    route("GET", "/ticket/{game}/message",
        "The exact EIP-191 text a holder signs to prove its wallet: ?wallet=. It names the origin, the action prove_holder, the game, the wallet and the UTC date; a signature is good that day.")
        .answer(|c| Box::pin(ticket::message(c.ctx(), &c.path, &c.query)))
        .with(Contract::call(&[200], &[TEXT], None, &[422]).params(TICKET_MESSAGE)),
    route("POST", "/ticket/{game}/entitle",
        "Prove holding a copy {wallet, signature}: the signature over GET /ticket/{game}/message proves the wallet (403 otherwise); the entitlement is balanceOf(wallet, game) read live at a named block: a signed conduct.ticket-entitlement/v1 with entitled true or false. A chain that does not answer is 503, never a no.")
        .answer(|c| Box::pin(ticket::entitle(c.ctx(), &c.path, c.body.clone())))
        .cap(FreeCap::new(Counter::Lookup, "/ticket/{game}/entitle"))
        .with(Contract::call(&[200], &[JSON], Some(Schema::Entitlement), &[403, 404, 422, 429, 503])
            .body(ENTITLE_BODY)
            .params(&[GAME_PATH])),
    route("GET", "/lost",
        "The arrival door: six questions in fixed order, each with the endpoints that answer it (JSON, text or HTML).")
        .with(Contract::page(&[JSON, TEXT, HTML])),
    route("GET", "/llms.txt",
        "The whole surface compressed to one page.")
        .with(TEXT_FILE),
    route("GET", "/sitemap.xml",
        "Every public page, for crawlers.")
        .with(Contract::file(&[XML], None)),
    route("GET", "/robots.txt",
        "Crawler rules.")
        .with(TEXT_FILE),
    route("GET", "/style.css",
        "The stylesheet every HTML page links.")
        .with(Contract::file(&[CSS], None)),
];

/// Match a concrete path against a route pattern (`{X}` matches a non-empty part of one
/// segment).
pub use conduct_renderer::site::route_matches as matches;

/// The dynamic route for `method` and `path`, if any.
pub fn find(method: &str, path: &str) -> Option<&'static Dynamic> {
    ROUTES.iter().find_map(|r| match &r.handler {
        Handler::Dynamic(d)
            if r.info.method == method && matches(r.info.path, path) && !(d.except)(path) =>
        {
            Some(d)
        }
        _ => None,
    })
}

/// The pattern of the row answering `method` and `path` (`HEAD` as `GET`), the label of the
/// request's metrics (library/METRICS.md): never the raw path; `other` when no row's pattern
/// takes it (a file of the tree the table does not name, or nothing).
pub fn pattern(method: &str, path: &str) -> &'static str {
    let method = if method == "HEAD" { "GET" } else { method };
    ROUTES
        .iter()
        .find(|r| {
            r.info.method == method
                && matches(r.info.path, path)
                && match &r.handler {
                    Handler::Dynamic(d) => !(d.except)(path),
                    Handler::Static => true,
                }
        })
        .map_or("other", |r| r.info.path)
}

/// Methods the dynamic routes accept at `path` (for 405 `Allow`).
pub fn dynamic_methods(path: &str) -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|r| matches!(r.handler, Handler::Dynamic(_)) && matches(r.info.path, path))
        .map(|r| r.info.method)
        .collect()
}

/// The problem for a path that neither a route nor the tree answers, when it is more than
/// `not-found`: `unknown-vow` under `/vow/<id>` when the store has no such vow.
pub fn missing<'a>(app: &'a Arc<App>, path: &'a str) -> BoxFuture<'a, Option<Problem>> {
    Box::pin(vows::missing(&app.vows, path))
}

/// The fixed HTML pages of the site (static GET routes with no parameter that answer HTML),
/// in table order: what the sitemap lists besides the vows and the library.
pub fn html_pages() -> Vec<String> {
    ROUTES
        .iter()
        .filter(|r| {
            matches!(r.handler, Handler::Static)
                && r.info.method == "GET"
                && !r.info.path.contains('{')
                && r.info.contract.media.contains(&HTML)
        })
        .map(|r| r.info.path.to_owned())
        .collect()
}

/// The x402 `bazaar` discovery extension of the paid route whose pattern is `pattern`
/// (library/PAYMENTS.md, "Discovery"), derived once from its row's contract.
pub fn bazaar(pattern: &str) -> Option<&'static serde_json::Value> {
    static EXTENSIONS: std::sync::OnceLock<Vec<(&'static str, serde_json::Value)>> =
        std::sync::OnceLock::new();
    EXTENSIONS
        .get_or_init(|| {
            ROUTES
                .iter()
                .filter(|r| r.info.paid)
                .filter_map(|r| {
                    let ext = conduct_renderer::bazaar::extension(&r.info);
                    ext.ok().map(|v| (r.info.path, v))
                })
                .collect()
        })
        .iter()
        .find(|(p, _)| *p == pattern)
        .map(|(_, v)| v)
}

/// The public descriptions, in table order.
pub fn infos() -> Vec<RouteInfo> {
    ROUTES.iter().map(|r| r.info).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sitemaps_pages_come_from_the_route_table() {
        assert_eq!(
            html_pages(),
            vec![
                "/",
                "/catalog",
                "/pubkey",
                "/library",
                "/vows",
                "/registry",
                "/rh",
                "/opensea",
                "/munus",
                "/reputation",
                "/familiars",
                "/lost"
            ]
        );
    }

    type Policy = (
        &'static str,
        &'static str,
        Option<(Counter, &'static str, &'static str)>,
        bool,
        Option<&'static str>,
    );

    /// Each dynamic row's policy, as dispatch applies it: (method, path, the cap's counter and
    /// how its refusal names the route and what it suggests, whether the body is read, the
    /// payment's idempotency namespace).
    fn policies() -> Vec<Policy> {
        ROUTES
            .iter()
            .filter_map(|r| match &r.handler {
                Handler::Dynamic(d) => Some((
                    r.info.method,
                    r.info.path,
                    d.cap.map(|c| (c.counter, c.what, c.instead)),
                    d.body,
                    match d.answer {
                        Answer::Paid(pay, _) => Some(pay.route),
                        Answer::Free(_) => None,
                    },
                )),
                Handler::Static => None,
            })
            .collect()
    }

    #[test]
    fn the_rows_carry_each_routes_cap_body_and_payment() {
        use Counter::*;
        let capped: Vec<_> = policies()
            .into_iter()
            .filter_map(|(m, p, cap, ..)| cap.map(|c| (m, p, c)))
            .collect();
        assert_eq!(
            capped,
            vec![
                (
                    "POST",
                    "/demo/profile",
                    (Demo, "/demo/profile", ", or pay for POST /profile")
                ),
                ("POST", "/vow", (Vow, "POST /vow", "")),
                (
                    "POST",
                    "/vow/report/demo",
                    (
                        ReportDemo,
                        "/vow/report/demo",
                        ", or pay for POST /vow/report"
                    )
                ),
                ("POST", "/oracle/ask", (Oracle, "/oracle/ask", "")),
                (
                    "POST",
                    "/munus/{id}/claim",
                    (Owner, "POST /munus/{id}/claim", "")
                ),
                (
                    "POST",
                    "/munus/{id}/submit",
                    (Owner, "POST /munus/{id}/submit", "")
                ),
                (
                    "GET",
                    "/reputation/{address}",
                    (Lookup, "/reputation/{address}", "")
                ),
                ("POST", "/nostr/bind", (Owner, "POST /nostr/bind", "")),
                (
                    "POST",
                    "/witness/pledge",
                    (Owner, "POST /witness/pledge", "")
                ),
                (
                    "GET",
                    "/prepare/{action}",
                    (Lookup, "/prepare/{action}", "")
                ),
                (
                    "POST",
                    "/prepare/{action}",
                    (Lookup, "/prepare/{action}", "")
                ),
                (
                    "GET",
                    "/ticket/{game}/prepare",
                    (Lookup, "/ticket/{game}/prepare", "")
                ),
                (
                    "POST",
                    "/ticket/{game}/entitle",
                    (Lookup, "/ticket/{game}/entitle", "")
                ),
            ]
        );
        let paid: Vec<_> = policies()
            .into_iter()
            .filter_map(|(_, p, _, _, pay)| pay.map(|r| (p, r)))
            .collect();
        assert_eq!(
            paid,
            vec![
                ("/profile", "profile"),
                ("/erc8004/validation", "erc8004-validation"),
                ("/vow/report", "vow-report"),
                ("/witness/reading", "witness-reading"),
                ("/familiar/summon", "familiar-summon"),
            ]
        );
        // Every POST reads its body (GET reads none), and nothing else does.
        for (m, p, _, body, _) in policies() {
            assert_eq!(body, m == "POST", "{m} {p}");
        }
    }

    #[test]
    fn the_contracts_say_what_the_rows_do() {
        for r in ROUTES {
            let c = &r.info.contract;
            let (cap, paid) = match &r.handler {
                Handler::Dynamic(d) => (d.cap.is_some(), matches!(d.answer, Answer::Paid(..))),
                Handler::Static => (false, false),
            };
            let what = format!("{} {}", r.info.method, r.info.path);
            // A capped route documents its 429, and only a capped one does.
            assert_eq!(cap, c.problems.contains(&429), "{what}");
            // A paid route is marked paid and takes the payment headers.
            assert_eq!(paid, r.info.paid, "{what}");
            assert_eq!(paid, c.params.contains(&PAYMENT), "{what}");
        }
    }

    #[test]
    fn a_pattern_does_not_take_what_its_row_excepts() {
        let dynamic = |m, p| find(m, p).is_some();
        assert!(dynamic(
            "GET",
            "/reputation/0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
        ));
        assert!(!dynamic("GET", "/reputation/holders.json"));
        assert!(!dynamic("GET", "/reputation/holders.html"));
        assert!(dynamic("GET", "/reputation/holders"));
        // `/prepare/sign` is its own route (uncapped), never an action.
        assert!(find("GET", "/prepare/sign").is_some_and(|d| d.cap.is_none()));
        assert!(!dynamic("POST", "/prepare/sign"));
        assert!(find("POST", "/prepare/register_tool").is_some_and(|d| d.cap.is_some()));
        assert_eq!(dynamic_methods("/prepare/sign"), ["GET", "GET", "POST"]);
    }

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

    #[test]
    fn every_route_has_a_contract_and_the_openapi_document_renders() {
        use conduct_core::vow::{MAX_AGENT, MAX_CADENCE_HOURS, MAX_VOW_TEXT, MIN_CADENCE_HOURS};
        for r in ROUTES {
            assert_ne!(r.info.contract, Contract::UNDESCRIBED, "{}", r.info.path);
        }
        let key = conduct_core::signing::ServiceKey::from_seed(&[1; 32], "conduct.test");
        let routes = infos();
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
        let doc = conduct_renderer::openapi::document(&input).expect("renders");
        let op = &doc["paths"]["/vow/message"]["get"];
        let param = |name: &str| {
            op["parameters"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == name))
                .map(|p| p["schema"].clone())
                .expect("declared")
        };
        assert_eq!(param("text")["maxLength"], MAX_VOW_TEXT);
        assert_eq!(param("agent")["maxLength"], MAX_AGENT);
        assert_eq!(param("cadence_hours")["minimum"], MIN_CADENCE_HOURS);
        assert_eq!(param("cadence_hours")["maximum"], MAX_CADENCE_HOURS);
        let id = conduct_core::vow::VOW_ID_LEN;
        let want = format!(r#"{{"type":"string","pattern":"^[0-9a-f]{{{id}}}$"}}"#);
        assert!(matches!(VOW_ID.schema, ParamSchema::Json(s) if s == want));
        // Paid routes answer 402; free capped ones 429.
        assert!(doc["paths"]["/profile"]["post"]["responses"]["402"].is_object());
        assert!(doc["paths"]["/vow"]["post"]["responses"]["429"].is_object());
        // A derived body is a component, and the operation refers to it.
        let body = &doc["paths"]["/witness/pledge"]["post"]["requestBody"];
        assert_eq!(
            body["content"][JSON]["schema"]["$ref"],
            "#/components/schemas/PledgeRequest"
        );
        let pledge = &doc["components"]["schemas"]["PledgeRequest"];
        assert_eq!(pledge["additionalProperties"], false);
        assert_eq!(
            pledge["properties"]["limits"]["maxItems"],
            conduct_core::witness::MAX_LIMITS
        );
    }

    /// Each request body whose schema is derived from its type: a body the handler takes, the
    /// same body with an unknown member at `unknown` (the top or a nested object), and whether
    /// the handler's parser takes a body.
    struct Example {
        schema: Schema,
        body: serde_json::Value,
        unknown: &'static [&'static str],
        parses: fn(&[u8]) -> bool,
    }

    /// Whether the handler's parser takes `body` as a `T`.
    macro_rules! parses {
        ($t:ty) => {
            (|body: &[u8]| conduct_core::trace::parse_json::<$t>(body).is_ok())
        };
    }

    fn examples() -> Vec<Example> {
        use serde_json::json;
        let vow_id = "0123456789abcdef";
        let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
        let sig = format!("0x{}", "1b".repeat(65));
        let turns = json!([
            {"Y": "stay in scope", "M": "reading the file", "D": "clean", "context": {"monitored": 1}},
            {"Y": "stay in scope", "M": "editing", "D": "write_file", "context": {"monitored": 0}},
        ]);
        let predicate = json!({"metric": "i_c_d", "band": "under_0.05"});
        vec![
            Example {
                schema: PROFILE_BODY,
                body: json!({"context_key": "monitored", "turns": turns,
                    "disclosure": {"predicate": predicate}}),
                unknown: &["", "/disclosure", "/disclosure/predicate", "/turns/0"],
                parses: parses!(conduct_core::trace::ProfileRequest),
            },
            Example {
                schema: ERC8004_BODY,
                body: json!({"trace": {"context_key": "monitored", "turns": turns},
                    "predicate": predicate, "subject": {"form": "wallet", "id": wallet}}),
                unknown: &["", "/trace", "/predicate", "/subject"],
                parses: parses!(conduct_core::erc8004::ValidationRequest),
            },
            Example {
                schema: VOW_BODY,
                body: json!({"text": "Report each build.\nNo secrets.", "agent": "builder",
                    "cadence_hours": 24, "wallet": wallet, "signature": sig, "sealed": false}),
                unknown: &[""],
                parses: parses!(conduct_core::vow::VowRequest),
            },
            Example {
                schema: REPORT_BODY,
                body: json!({"vow_id": vow_id, "context_key": "monitored", "turns": turns,
                    "note": "steady", "donate_trace": false, "signature": sig}),
                unknown: &["", "/turns/1"],
                parses: parses!(conduct_core::vow::ReportRequest),
            },
            Example {
                schema: CLAIM_BODY,
                body: json!({"vow_id": vow_id, "signature": sig}),
                unknown: &[""],
                parses: parses!(crate::handlers::munus::ClaimBody),
            },
            Example {
                schema: SUBMIT_BODY,
                body: json!({"vow_id": vow_id, "link": "https://github.com/o/r/pull/7",
                    "signature": sig}),
                unknown: &[""],
                parses: parses!(crate::handlers::munus::SubmitBody),
            },
            Example {
                schema: BIND_BODY,
                body: json!({"vow_id": vow_id,
                    "npub": conduct_core::nostr::npub_encode(&[7; 32]),
                    "wallet_signature": sig, "nostr_signature": "ab".repeat(64)}),
                unknown: &[""],
                parses: parses!(crate::handlers::nostr::BindBody),
            },
            Example {
                schema: PLEDGE_BODY,
                body: json!({"vow_id": vow_id, "signature": sig, "limits": [
                    {"asset": wallet, "max_balance": "1000000", "max_outflow_per_day": "5000"},
                    {"asset": wallet, "max_balance": null, "max_outflow_per_day": "0"},
                ]}),
                unknown: &["", "/limits/0"],
                parses: parses!(crate::handlers::witness::PledgeBody),
            },
            Example {
                schema: READING_BODY,
                body: json!({"vow_id": vow_id, "window_days": 7}),
                unknown: &[""],
                parses: parses!(crate::handlers::witness::ReadingBody),
            },
            Example {
                schema: SUMMON_BODY,
                body: json!({"owner": {"vow_id": vow_id}, "signature": sig, "order": {
                    "title": "Tidy the docs", "what": "Fix the links.\nKeep the tone.",
                    "budget": "10 USDC", "deliverable": "A pull request"}}),
                unknown: &["", "/owner", "/order"],
                // The handler parses the body, then the order by its table.
                parses: |b| {
                    parses!(crate::handlers::familiar::SummonBody)(b)
                        && serde_json::from_slice::<serde_json::Value>(b).is_ok_and(|v| {
                            conduct_core::familiar::parse_order(&v["order"], "/order").is_ok()
                        })
                },
            },
            Example {
                schema: ENTITLE_BODY,
                body: json!({"wallet": wallet, "signature": sig}),
                unknown: &[""],
                parses: parses!(crate::handlers::ticket::EntitleBody),
            },
        ]
    }

    #[test]
    fn every_paid_route_is_described_for_discovery_by_its_contract() {
        let examples = examples();
        for r in ROUTES.iter().filter(|r| r.info.paid) {
            let what = format!("{} {}", r.info.method, r.info.path);
            let ext = bazaar(r.info.path).unwrap_or_else(|| panic!("{what}: no bazaar"));
            // Its example is a body the route's parser and its schema take.
            let text = r
                .info
                .contract
                .example
                .unwrap_or_else(|| panic!("{what}: no example"));
            let body = r.info.contract.body.expect("a paid route reads a body");
            let e = examples
                .iter()
                .find(|e| e.schema == body)
                .expect("an example");
            assert!(
                (e.parses)(text.as_bytes()),
                "{what}: the parser refuses {text}"
            );
            let check = jsonschema::draft202012::new(&ext["schema"]).expect("compiles");
            let errors: Vec<String> = check
                .iter_errors(&ext["info"])
                .map(|x| x.to_string())
                .collect();
            assert!(errors.is_empty(), "{what}: {errors:?}");
            assert_eq!(ext["info"]["input"]["method"], r.info.method, "{what}");
            assert_eq!(
                ext["schema"]["properties"]["input"]["properties"]["body"],
                conduct_renderer::bazaar::compact(
                    conduct_renderer::openapi::standalone(body).unwrap()
                ),
                "{what}"
            );
        }
        assert!(bazaar("/demo/profile").is_none());
    }

    #[test]
    fn derived_body_schemas_take_what_the_parsers_take_and_no_unknown_member() {
        let examples = examples();
        // Every derived body of the route table has its example.
        for r in ROUTES {
            if let Some(b @ Schema::Derived(_)) = r.info.contract.body {
                assert!(
                    examples.iter().any(|e| e.schema == b),
                    "{} {}: {b:?} has no example",
                    r.info.method,
                    r.info.path
                );
            }
        }
        for e in examples {
            let schema = conduct_renderer::openapi::standalone(e.schema).expect("schema");
            let check = jsonschema::draft202012::new(&schema).expect("compiles");
            let what = format!("{:?}", e.schema);
            let bytes = e.body.to_string();
            assert!(
                (e.parses)(bytes.as_bytes()),
                "{what}: the parser refuses {bytes}"
            );
            let errors: Vec<String> = check.iter_errors(&e.body).map(|x| x.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{what}: the schema refuses {bytes}: {errors:?}"
            );
            for at in e.unknown {
                let mut body = e.body.clone();
                let Some(serde_json::Value::Object(m)) = body.pointer_mut(at) else {
                    panic!("{what}: no object at {at:?}");
                };
                m.insert("unexpected".into(), serde_json::json!(1));
                let bytes = body.to_string();
                assert!(!check.is_valid(&body), "{what}: the schema takes {bytes}");
                assert!(
                    !(e.parses)(bytes.as_bytes()),
                    "{what}: the parser takes {bytes}"
                );
            }
        }
    }
}
