//! The registry view (library/REGISTRY.md): the signed list `/registry` of the ERC-8257 tools the chain
//! follower read, each with what the chain says, what its manifest claims (never vouched for)
//! and what the manifest check found; one page per tool (`/registry/tool/<id>`); the public
//! record of a handle (`/who?handle=`); chain onboarding (`/rh`); and the recipe for
//! publishing a tool (`/opensea`).
//!
//! Listed alphabetically by the publisher's claimed name, never ranked: no conduct record,
//! payment or check result changes the order. A chain that was never read is `reachable:
//! false` with `counts` and `cached_seconds_ago` null, never zeros.

use std::collections::HashMap;

use askama::Template;
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use conduct_indexer::chain::registry::{register_tool_calldata, Tool, ToolState};
use conduct_indexer::chain::{ChainConfig, ChainStatus};
use conduct_indexer::state::chain::Check;
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};

use crate::discovery::{card_stem, normalize_key};
use crate::pages::PageHead;
use crate::snapshot::signed_bytes;
use crate::vows::Files;
use crate::RenderError;

/// Format name of `/registry`.
pub const REGISTRY_TYPE: &str = "conduct.registry/v1";
/// Format name of a tool's page.
pub const TOOL_TYPE: &str = "conduct.registry-tool/v1";
/// Format name of `/who`.
pub const WHO_TYPE: &str = "conduct.who/v1";
/// Most tools listed in `/registry` itself (every tool has its own page).
pub const LISTED_MAX: usize = 1000;
/// ERC-165 interface id of IToolRegistry.
pub const INTERFACE_ID: &str = "0xf1dc8075";
/// The ERC.
pub const SPEC_URL: &str = "https://eips.ethereum.org/EIPS/eip-8257";
/// Longest metadataURI shown (a registrant can store any string on chain).
const URI_SHOWN: usize = 2048;
const ZERO_ADDRESS: &str = "0x0000000000000000000000000000000000000000";
/// The metadataURI of `/opensea`'s example.
const EXAMPLE_URI: &str = "https://tools.example.com/.well-known/ai-tool/my-tool.json";

const WHAT: &str = "A read-only view of an ERC-8257 agent tool registry. Every manifest is \
fetched and re-verified here (RFC 8785, keccak256, the creator and the well-known binding): a \
statement about bytes, never about safety.";
const ORDER: &str = "Alphabetical by the publisher's claimed name (tools without a readable \
name last), then by tool id. Never ranked.";
const ORDERING_WALL: &str = "No conduct record, vow, payment or check result changes the order \
or the presence of an entry. A creator record is a pointer, never a score and never an \
endorsement.";
const HOW_TO_READ_AN_ENTRY: &str =
    "creator, metadataURI, manifestHash and accessPredicate are what \
the chain says. claims are what the manifest says, written by the registrant, bounded and \
stripped of control and bidi characters, never vouched for. verification.status says whether \
the served bytes hash to the on-chain commitment and bind to their creator and origin: \
verified, unreachable (detail says why), hash-mismatch, invalid-manifest, creator-mismatch, \
binding-mismatch, deregistered, or pending (not checked yet).";
const CLAIMS_NOTE: &str = "Written by the registrant, bounded and stripped; never vouched for.";
const SWORN_NOTE: &str = "This creator wallet signed a vow on this ledger. A pointer to public \
records, never a score and never an endorsement.";
const NOT_SWORN_NOTE: &str = "No signed vow by this creator wallet on this ledger. Absence of \
information, not a judgement.";
const NO_CHAIN_NOTE: &str = "No chain is configured on this instance: nobody looked, so nothing \
here says there are no tools. See /rh.";

/// Everything the registry documents read.
pub struct RegistryInput<'a> {
    /// Signs every JSON file.
    pub key: &'a ServiceKey,
    /// Public base URL.
    pub public_url: &'a str,
    /// The chain followed, if any.
    pub chain: Option<&'a ChainConfig>,
    /// What the follower knows now.
    pub status: &'a ChainStatus,
    /// Every tool, as folded from the chain.
    pub tools: &'a [Tool],
    /// Manifest checks by tool id.
    pub checks: &'a HashMap<u64, Check>,
    /// Signed vows whose wallet is the given (lower-case) address, oldest first.
    pub sworn: &'a dyn Fn(&str) -> Vec<VowRow>,
    /// Render instant, unix seconds.
    pub now: u64,
}

impl RegistryInput<'_> {
    fn registry_address(&self) -> Option<String> {
        self.chain
            .and_then(|c| c.registry.as_ref())
            .map(|r| r.address.to_ascii_lowercase())
    }

    /// Seconds since the last good read of the chain; `None` when never read.
    fn cached_seconds_ago(&self) -> Option<u64> {
        self.status.synced_at.map(|t| self.now.saturating_sub(t))
    }

    /// The chain was read at least once (so the tools are a last good state).
    fn ever_read(&self) -> bool {
        self.chain.is_some() && self.status.synced_at.is_some()
    }
}

/// The verification block of a tool.
fn verification(t: &Tool, check: Option<&Check>) -> Value {
    if t.state == ToolState::Deregistered {
        return json!({"status": "deregistered", "reason": null, "computed": null,
            "detail": "deregistered on chain; its manifest is no longer checked", "checked_at": null});
    }
    match check {
        Some(c) if c.uri == t.metadata_uri && c.hash == t.manifest_hash => json!({
            "status": c.status,
            "reason": c.reason,
            "computed": c.computed,
            "detail": c.detail,
            "checked_at": rfc3339(c.checked_at),
        }),
        Some(c) => json!({
            "status": "pending",
            "reason": "metadata-changed",
            "computed": null,
            "detail": format!("the metadata changed on chain since the last check ({})", c.status),
            "checked_at": null,
        }),
        None => json!({"status": "pending", "reason": "not-checked", "computed": null,
            "detail": "not checked yet",
            "checked_at": null}),
    }
}

/// The claims of a tool (from its last check), each field nullable.
fn claims(check: Option<&Check>) -> Value {
    let stored: Value = check
        .and_then(|c| serde_json::from_str(&c.claims).ok())
        .unwrap_or(Value::Null);
    let field = |k: &str| {
        stored
            .get(k)
            .filter(|v| v.is_string())
            .cloned()
            .unwrap_or(Value::Null)
    };
    json!({
        "name": field("name"),
        "description": field("description"),
        "endpoint": field("endpoint"),
        "note": CLAIMS_NOTE,
    })
}

fn creator_record(creator: &str, vows: &[VowRow]) -> Value {
    let signed: Vec<&VowRow> = vows.iter().filter(|v| !v.sandbox).collect();
    let Some(latest) = signed.last() else {
        return json!({"sworn_here": false, "note": NOT_SWORN_NOTE});
    };
    let mut records = Vec::new();
    for v in &signed {
        records.push(format!("/vow/{}", v.vow_id));
        records.push(format!("/vow/{}/chain", v.vow_id));
    }
    json!({
        "sworn_here": true,
        "wallet": creator,
        "agent": latest.agent,
        "records": records,
        "who": format!("/who?handle={creator}"),
        "note": SWORN_NOTE,
    })
}

/// Clip `s` to `n` characters; whether it was clipped.
fn clip(s: &str, n: usize) -> (String, bool) {
    match s.char_indices().nth(n) {
        Some((i, _)) => (s[..i].to_owned(), true),
        None => (s.to_owned(), false),
    }
}

/// One tool as the view lists it.
fn tool_entry(input: &RegistryInput<'_>, t: &Tool) -> Value {
    let check = input.checks.get(&t.tool_id);
    let chain_id = input.chain.map_or(0, |c| c.chain_id);
    let registry = input.registry_address().unwrap_or_default();
    let (uri, clipped) = clip(&t.metadata_uri, URI_SHOWN);
    let mut e = json!({
        "toolId": t.tool_id,
        "ref": format!("eip155:{chain_id}/erc8257:{registry}/{}", t.tool_id),
        "state": t.state.as_str(),
        "creator": t.creator,
        "metadataURI": uri,
        "manifestHash": t.manifest_hash,
        "accessPredicate": t.access_predicate,
        "access": if t.access_predicate == ZERO_ADDRESS { "open" } else { "predicate" },
        "creator_record": creator_record(&t.creator, &(input.sworn)(&t.creator)),
        "claims": claims(check),
        "verification": verification(t, check),
        "registered_block": t.registered_block,
        "registered_tx": t.registered_tx,
        "updated_block": t.updated_block,
        "page": format!("/registry/tool/{}", t.tool_id),
    });
    if clipped {
        e["metadataURI_clipped"] = json!(true);
    }
    e
}

/// The sort key of a tool: its claimed name (case-folded; none last), then its id.
fn order_key(t: &Tool, checks: &HashMap<u64, Check>) -> (bool, String, u64) {
    let name = claims(checks.get(&t.tool_id))["name"]
        .as_str()
        .map(|n| n.to_lowercase());
    (name.is_none(), name.unwrap_or_default(), t.tool_id)
}

fn chain_block(input: &RegistryInput<'_>) -> Value {
    match input.chain {
        Some(c) => json!({
            "name": c.name,
            "chain_id": c.chain_id,
            "rpc": c.shown_rpc(),
            "onboarding": "/rh",
        }),
        None => json!({"name": null, "chain_id": null, "rpc": null, "onboarding": "/rh"}),
    }
}

fn publish_here() -> Value {
    json!({
        "how": "Serve your manifest at https://<your origin>/.well-known/ai-tool/<slug>.json, \
            compute its hash with `conduct manifest-hash FILE`, and call registerTool(metadataURI, \
            manifestHash, 0x0000000000000000000000000000000000000000) from your own wallet. This \
            service holds no key and cannot register for you.",
        "recipe": "/opensea",
        "cost": "the gas of one registerTool transaction on this chain, paid by you; this \
            service charges nothing to list or check a tool",
    })
}

/// The sorted tools and the `/registry` document.
pub fn registry_doc(input: &RegistryInput<'_>) -> Value {
    let mut sorted: Vec<&Tool> = input.tools.iter().collect();
    sorted.sort_by_cached_key(|t| order_key(t, input.checks));
    // Each tool's status once: (registered, verified, pending) counted in one pass.
    let (mut registered, mut verified, mut pending) = (0usize, 0usize, 0usize);
    for t in &sorted {
        let status = verification(t, input.checks.get(&t.tool_id))["status"].clone();
        let live = t.state == ToolState::Registered;
        registered += usize::from(live);
        verified += usize::from(live && status == "verified");
        pending += usize::from(status == "pending");
    }
    let truncated = sorted.len() > LISTED_MAX;
    let tools: Vec<Value> = sorted
        .iter()
        .take(LISTED_MAX)
        .map(|t| tool_entry(input, t))
        .collect();
    let ever = input.ever_read();
    let counts = if ever {
        json!({"registered": registered, "verified": verified,
            "unverified_or_failing": registered - verified})
    } else {
        Value::Null
    };
    let partial = input.chain.is_some() && (!input.status.caught_up || pending > 0);
    let note = match (input.chain, ever, input.status.reachable) {
        (None, _, _) => NO_CHAIN_NOTE.to_owned(),
        (Some(_), false, _) => "The chain has not answered yet: nothing here says there are no \
            tools. cached_seconds_ago is null until it does."
            .to_owned(),
        (Some(_), true, false) => format!(
            "The chain does not answer right now: this is the last good state, read {} seconds \
             before as_of.",
            input.cached_seconds_ago().unwrap_or_default()
        ),
        (Some(_), true, true) if input.status.error.is_some() => format!(
            "The chain answers, but reading it failed ({}): this is the last good state, read \
             {} seconds before as_of.",
            input.status.error.as_deref().unwrap_or_default(),
            input.cached_seconds_ago().unwrap_or_default()
        ),
        (Some(_), true, true) if partial => format!(
            "Still reading: {} of the checks are pending or the follower is catching up.",
            pending
        ),
        (Some(_), true, true) => {
            "Current as of as_of, up to head minus the confirmation depth.".to_owned()
        }
    };
    let mut note = note;
    if truncated {
        note.push_str(&format!(
            " Only the first {LISTED_MAX} of {} tools in order are listed here; every tool has \
             its page at /registry/tool/<toolId>.",
            sorted.len()
        ));
    }
    json!({
        "type": REGISTRY_TYPE,
        "what": WHAT,
        "as_of": rfc3339(input.now),
        "chain": chain_block(input),
        "registry": {
            "address": input.registry_address(),
            "interface": format!("IToolRegistry (ERC-165 {INTERFACE_ID})"),
            "note": "Read from the chain's events (ToolRegistered, ToolMetadataUpdated, \
                AccessPredicateUpdated, ToolDeregistered), indexed up to head minus the \
                confirmation depth, rewound on reorgs.",
            "spec": SPEC_URL,
            "indexed_to_block": input.status.indexed_to,
        },
        "counts": counts,
        "order": ORDER,
        "reading_an_entry": HOW_TO_READ_AN_ENTRY,
        "ordering_wall": ORDERING_WALL,
        "publish_here": publish_here(),
        "reachable": input.chain.is_some() && input.status.reachable,
        "truncated": truncated,
        "partial": partial,
        "note": note,
        "tools": tools,
        "cached_seconds_ago": input.cached_seconds_ago().filter(|_| ever),
        "scope": scope_value(),
    })
}

/// One row of the registry page.
pub struct ToolRow {
    /// Tool id.
    pub id: u64,
    /// Claimed name, if any.
    pub name: Option<String>,
    /// Claimed description, if any.
    pub description: Option<String>,
    /// registered / deregistered.
    pub state: String,
    /// Check status.
    pub status: String,
    /// Check detail.
    pub detail: Option<String>,
    /// Creator address.
    pub creator: String,
    /// Whether the creator swore a vow here.
    pub sworn: bool,
    /// metadataURI (clipped).
    pub uri: String,
    /// manifestHash.
    pub hash: String,
}

fn row(e: &Value) -> ToolRow {
    let s = |v: &Value| v.as_str().map(str::to_owned);
    ToolRow {
        id: e["toolId"].as_u64().unwrap_or_default(),
        name: s(&e["claims"]["name"]),
        description: s(&e["claims"]["description"]),
        state: s(&e["state"]).unwrap_or_default(),
        status: s(&e["verification"]["status"]).unwrap_or_default(),
        detail: s(&e["verification"]["detail"]),
        creator: s(&e["creator"]).unwrap_or_default(),
        sworn: e["creator_record"]["sworn_here"] == true,
        // The page shows it stripped of control and bidi characters; the JSON keeps it exact.
        uri: conduct_core::erc8257::strip_for_display(
            e["metadataURI"].as_str().unwrap_or_default(),
            URI_SHOWN,
        ),
        hash: s(&e["manifestHash"]).unwrap_or_default(),
    }
}

/// The registry page (`/registry`).
#[derive(Template)]
#[template(path = "registry.html")]
pub struct RegistryPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// The document's fixed texts and state.
    pub what: &'a str,
    /// Chain name, if any.
    pub chain: Option<String>,
    /// Registry address.
    pub address: Option<String>,
    /// Reachable now.
    pub reachable: bool,
    /// The note.
    pub note: String,
    /// Counts line, if the chain was ever read.
    pub counts: Option<String>,
    /// The order.
    pub order: &'a str,
    /// The wall.
    pub wall: &'a str,
    /// How to read an entry.
    pub reading: &'a str,
    /// The rows.
    pub rows: Vec<ToolRow>,
}

/// One tool's page (`/registry/tool/<id>`).
#[derive(Template)]
#[template(path = "tool.html")]
pub struct ToolPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// The row.
    pub row: ToolRow,
    /// Its `ref`.
    pub reference: String,
    /// Access.
    pub access: String,
    /// Predicate address.
    pub predicate: String,
    /// Computed hash, if fetched.
    pub computed: Option<String>,
    /// Claimed endpoint.
    pub endpoint: Option<String>,
    /// Ledger paths of the creator's vows.
    pub records: Vec<String>,
    /// The claims note.
    pub claims_note: &'a str,
    /// How to read it.
    pub reading: &'a str,
}

/// `/registry` (JSON and HTML).
pub fn registry_files(input: &RegistryInput<'_>) -> Result<Files, RenderError> {
    let doc = registry_doc(input);
    let rows = doc["tools"]
        .as_array()
        .map_or(Vec::new(), |a| a.iter().map(row).collect());
    let counts = doc["counts"].as_object().map(|c| {
        format!(
            "{} registered, {} verified, {} unverified or failing",
            c["registered"], c["verified"], c["unverified_or_failing"]
        )
    });
    let page = RegistryPage {
        head: PageHead::new(
            input.key,
            "Tool registry",
            "The ERC-8257 agent tool registry, every manifest re-verified; alphabetical, never ranked.",
        ),
        what: WHAT,
        chain: input.chain.map(|c| format!("{} (chain id {})", c.name, c.chain_id)),
        address: input.registry_address(),
        reachable: doc["reachable"] == true,
        note: doc["note"].as_str().unwrap_or_default().to_owned(),
        counts,
        order: ORDER,
        wall: ORDERING_WALL,
        reading: HOW_TO_READ_AN_ENTRY,
        rows,
    }
    .render()?;
    Ok(vec![
        ("registry.json".into(), signed_bytes(input.key, doc)?),
        ("registry.html".into(), page.into_bytes()),
    ])
}

/// The page of tool `t` (JSON and HTML).
pub fn tool_files(input: &RegistryInput<'_>, t: &Tool) -> Result<Files, RenderError> {
    let entry = tool_entry(input, t);
    // Rendered when the tool changes: whether the chain answers now is /registry's to say.
    let mut doc = json!({
        "type": TOOL_TYPE,
        "as_of": rfc3339(input.now),
        "chain": chain_block(input),
        "registry": {"address": input.registry_address(), "interface": format!("IToolRegistry (ERC-165 {INTERFACE_ID})")},
        "reading_an_entry": HOW_TO_READ_AN_ENTRY,
        "current_state": "/registry (reachable, cached_seconds_ago)",
        "tool": entry.clone(),
        "scope": scope_value(),
    });
    if let Some(o) = doc.as_object_mut() {
        o.insert("ordering_wall".into(), json!(ORDERING_WALL));
    }
    let title = format!("Tool {}", t.tool_id);
    let description = format!(
        "ERC-8257 tool {} as the chain says and its manifest check",
        t.tool_id
    );
    let records = entry["creator_record"]["records"]
        .as_array()
        .map_or(Vec::new(), |a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        });
    let page = ToolPage {
        head: PageHead::new(input.key, &title, &description),
        reference: entry["ref"].as_str().unwrap_or_default().to_owned(),
        access: entry["access"].as_str().unwrap_or_default().to_owned(),
        predicate: t.access_predicate.clone(),
        computed: entry["verification"]["computed"]
            .as_str()
            .map(str::to_owned),
        endpoint: entry["claims"]["endpoint"].as_str().map(str::to_owned),
        records,
        claims_note: CLAIMS_NOTE,
        reading: HOW_TO_READ_AN_ENTRY,
        row: row(&entry),
    }
    .render()?;
    let stem = format!("registry/tool/{}", t.tool_id);
    Ok(vec![
        (format!("{stem}.json"), signed_bytes(input.key, doc)?),
        (format!("{stem}.html"), page.into_bytes()),
    ])
}

/// The page of tool `id` when the chain (as indexed) has no such tool: a reorganisation
/// removed its registration, or it was never registered on the followed chain.
pub fn absent_tool_files(input: &RegistryInput<'_>, id: u64) -> Result<Files, RenderError> {
    let note = "No such tool on the followed chain as indexed: a reorganisation removed its \
        registration, or it was never registered here. Nothing is listed for it.";
    let doc = json!({
        "type": TOOL_TYPE,
        "as_of": rfc3339(input.now),
        "chain": chain_block(input),
        "registry": {"address": input.registry_address(), "interface": format!("IToolRegistry (ERC-165 {INTERFACE_ID})")},
        "tool": {"toolId": id, "state": "absent", "note": note},
        "current_state": "/registry (reachable, cached_seconds_ago)",
        "scope": scope_value(),
    });
    let title = format!("Tool {id}: absent");
    let page = GuidePage {
        head: PageHead::new(
            input.key,
            &title,
            "A tool the followed chain does not have.",
        ),
        title: &title,
        sections: vec![("Not on the chain".into(), note.into(), None)],
    }
    .render()?;
    let stem = format!("registry/tool/{id}");
    Ok(vec![
        (format!("{stem}.json"), signed_bytes(input.key, doc)?),
        (format!("{stem}.html"), page.into_bytes()),
    ])
}

/// Relative path stem of the `/who` record of `handle` ("who/<escaped>").
pub fn who_stem(handle: &str) -> String {
    let card = card_stem(handle);
    match card.strip_prefix("card/") {
        Some(rest) => format!("who/{rest}"),
        None => format!("who/{card}"),
    }
}

/// The `/who` page.
#[derive(Template)]
#[template(path = "who.html")]
pub struct WhoPage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// The handle.
    pub handle: String,
    /// Vows: (id, agent, signed or sandbox).
    pub vows: Vec<(String, String, &'static str)>,
    /// Tools: (id, state, status).
    pub tools: Vec<(u64, String, String)>,
    /// The note.
    pub note: &'a str,
}

const WHO_NOTE: &str = "The public records this ledger and the followed registry hold for a \
handle (a wallet, an agent name, or an npub, which names the vow its latest binding names): \
pointers, never a score. A handle with nothing here is a negative result: absence of \
information.";

/// The `/who` record of `handle` (JSON and HTML): its vows (by agent name or wallet) and the
/// tools its wallet created. Works for a handle with nothing (a negative result).
pub fn who_files(
    key: &ServiceKey,
    handle: &str,
    vows: &[VowRow],
    tools: &[&Tool],
    checks: &HashMap<u64, Check>,
) -> Result<Files, RenderError> {
    let h = normalize_key(handle);
    let vow_entries: Vec<Value> = vows
        .iter()
        .map(|v| {
            json!({
                "vow_id": v.vow_id,
                "agent": v.agent,
                "wallet": v.wallet,
                "signed": !v.sandbox,
                "sealed": v.sealed,
                "records": [format!("/vow/{}", v.vow_id), format!("/vow/{}/chain", v.vow_id)],
                "proof": format!("/log/proof/{}", v.log_index),
                "mark": crate::mark::vow_mark_url(&v.vow_id),
            })
        })
        .collect();
    let tool_entries: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "toolId": t.tool_id,
                "state": t.state.as_str(),
                "verification": verification(t, checks.get(&t.tool_id))["status"],
                "page": format!("/registry/tool/{}", t.tool_id),
            })
        })
        .collect();
    let found = !vow_entries.is_empty() || !tool_entries.is_empty();
    let doc = json!({
        "type": WHO_TYPE,
        "handle": h,
        "found": found,
        "vows": vow_entries,
        "tools": tool_entries,
        "note": WHO_NOTE,
        "scope": scope_value(),
    });
    let page = WhoPage {
        head: PageHead::new(key, "Who", "The public conduct record of a handle."),
        handle: h.clone(),
        vows: vows
            .iter()
            .map(|v| {
                (
                    v.vow_id.clone(),
                    v.agent.clone(),
                    if v.sandbox { "sandbox" } else { "signed" },
                )
            })
            .collect(),
        tools: tools
            .iter()
            .map(|t| {
                (
                    t.tool_id,
                    t.state.as_str().to_owned(),
                    verification(t, checks.get(&t.tool_id))["status"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect(),
        note: WHO_NOTE,
    }
    .render()?;
    let stem = who_stem(&h);
    Ok(vec![
        (format!("{stem}.json"), signed_bytes(key, doc)?),
        (format!("{stem}.html"), page.into_bytes()),
    ])
}

/// A page of sections of text and code (`/rh`, `/opensea`).
#[derive(Template)]
#[template(path = "guide.html")]
pub struct GuidePage<'a> {
    /// Head.
    pub head: PageHead<'a>,
    /// Heading.
    pub title: &'a str,
    /// (heading, paragraph, code) sections.
    pub sections: Vec<(String, String, Option<String>)>,
}

fn guide_files(
    key: &ServiceKey,
    stem: &str,
    kind: &str,
    title: &str,
    description: &str,
    sections: Vec<(String, String, Option<String>)>,
    extra: Value,
) -> Result<Files, RenderError> {
    let mut doc = json!({
        "type": kind,
        "title": title,
        "sections": sections.iter().map(|(h, p, c)| json!({"heading": h, "text": p, "code": c})).collect::<Vec<_>>(),
        "scope": scope_value(),
    });
    if let (Some(o), Value::Object(e)) = (doc.as_object_mut(), extra) {
        o.extend(e);
    }
    let page = GuidePage {
        head: PageHead::new(key, title, description),
        title,
        sections,
    }
    .render()?;
    Ok(vec![
        (format!("{stem}.json"), signed_bytes(key, doc)?),
        (format!("{stem}.html"), page.into_bytes()),
    ])
}

/// `/rh`: chain onboarding.
pub fn rh_files(
    key: &ServiceKey,
    public_url: &str,
    chain: Option<&ChainConfig>,
) -> Result<Files, RenderError> {
    let Some(c) = chain else {
        return guide_files(
            key,
            "rh",
            "conduct.rh/v1",
            "Chain onboarding",
            "Which chain this instance follows, and how to read it yourself.",
            vec![(
                "No chain here".into(),
                "This instance follows no chain (the embedded default). The registry view, \
                 quest payments and reputation say reachable: false until an operator \
                 configures [chain] in conduct.toml."
                    .into(),
                None,
            )],
            json!({"chain": null}),
        );
    };
    let rpc = c.shown_rpc().unwrap_or("<your RPC URL>").to_owned();
    let registry = c.registry.as_ref().map(|r| r.address.to_ascii_lowercase());
    let mut sections = vec![
        (
            "The chain".to_owned(),
            format!(
                "{} (EIP-155 chain id {}). Public RPC: {rpc}. Blocks are indexed {} below the \
                 head and rewound on reorgs.",
                c.name, c.chain_id, c.confirmations
            ),
            Some(format!(
                "curl -s {rpc} -H 'content-type: application/json' \\\n  -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}}'"
            )),
        ),
        (
            "Fund a wallet".to_owned(),
            "Any EVM wallet works: create one in your own wallet software (the service never \
             holds or sees a key), then move the chain's native token to it from an exchange, \
             a bridge or, on a test chain, a faucet. Only gas is needed to publish a tool."
                .to_owned(),
            None,
        ),
    ];
    if let Some(addr) = &registry {
        sections.push((
            "Read the registry yourself".to_owned(),
            format!(
                "The ERC-8257 registry at {addr}. toolCount() gives the ids 1..=toolCount; \
                 getToolConfig(id) returns (creator, metadataURI, manifestHash, \
                 accessPredicate). Compare with {public_url}/registry."
            ),
            Some(format!(
                "cast call {addr} 'toolCount()(uint256)' --rpc-url {rpc}\ncast call {addr} \
                 'getToolConfig(uint256)((address,string,bytes32,address))' 1 --rpc-url {rpc}"
            )),
        ));
    }
    guide_files(
        key,
        "rh",
        "conduct.rh/v1",
        "Chain onboarding",
        "Which chain this instance follows, and how to read it yourself.",
        sections,
        json!({"chain": {"name": c.name, "chain_id": c.chain_id, "rpc": rpc,
            "registry": registry, "confirmations": c.confirmations}}),
    )
}

/// `/opensea`: the recipe for publishing a tool.
pub fn opensea_files(key: &ServiceKey, chain: Option<&ChainConfig>) -> Result<Files, RenderError> {
    let registry = chain
        .and_then(|c| c.registry.as_ref())
        .map(|r| r.address.to_ascii_lowercase());
    let template = json!({
        "type": "https://ercs.ethereum.org/ERCS/erc-8257#tool-manifest-v1",
        "name": "My tool",
        "description": "What it does, in one sentence.",
        "endpoint": "https://tools.example.com/my-tool",
        "inputs": {"type": "object"},
        "outputs": {"type": "object"},
        "creatorAddress": "0x<your wallet, 40 lower-case hex digits>",
    });
    let pretty =
        serde_json::to_string_pretty(&template).map_err(|e| RenderError::Input(e.to_string()))?;
    let to = registry
        .clone()
        .unwrap_or_else(|| "<the registry address>".into());
    let sections = vec![
        (
            "1. Write the manifest".to_owned(),
            "A JSON object with these required members (ERC-8257 section 2). Strings must be \
             NFC, hex lower-case, no byte-order mark; creatorAddress must be the wallet that \
             will send registerTool."
                .to_owned(),
            Some(pretty),
        ),
        (
            "2. Serve it at the well-known path".to_owned(),
            "Over https on the same origin as endpoint, at /.well-known/ai-tool/<slug>.json \
             (slug: lower-case letters, digits and inner hyphens, 1 to 64 characters), with no \
             redirect."
                .to_owned(),
            Some(EXAMPLE_URI.into()),
        ),
        (
            "3. Hash it".to_owned(),
            "keccak256 of its RFC 8785 canonical bytes, with every rejection the ERC names."
                .to_owned(),
            Some("conduct manifest-hash my-tool.json".into()),
        ),
        (
            "4. Register from your own wallet".to_owned(),
            format!(
                "Call registerTool(metadataURI, manifestHash, accessPredicate) on {to}; the \
                 zero address as predicate means open access. The service holds no key and \
                 cannot register for you; it lists your tool once the transaction is \
                 {} blocks deep and checks the manifest.",
                chain.map_or(0, |c| c.confirmations)
            ),
            Some(format!(
                "cast send {to} 'registerTool(string,bytes32,address)' \\\n  \
                 https://tools.example.com/.well-known/ai-tool/my-tool.json <hash> \
                 0x0000000000000000000000000000000000000000 --rpc-url <rpc> --interactive"
            )),
        ),
    ];
    guide_files(
        key,
        "opensea",
        "conduct.opensea/v1",
        "Publish a tool",
        "How to publish a tool to the ERC-8257 registry from your own wallet.",
        sections,
        json!({"registry": registry, "manifest_template": template,
            "function": "registerTool(string metadataURI, bytes32 manifestHash, address accessPredicate)",
            "example_calldata": {
                "metadataURI": EXAMPLE_URI,
                "manifestHash": format!("0x{}", "11".repeat(32)),
                "accessPredicate": ZERO_ADDRESS,
                "data": format!("0x{}", hex::encode(register_tool_calldata(
                    EXAMPLE_URI, [0x11; 32], Default::default()))),
            },
            "calldata_note": "The ABI encoding of registerTool for the example values; put your own \
                metadataURI and manifestHash, and send it to the registry from your own wallet \
                (value 0). The service holds no key and signs nothing."}),
    )
}
