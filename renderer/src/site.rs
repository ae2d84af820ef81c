//! The static tree (ARCHITECTURE.md) for what exists today: the service card, catalog,
//! OpenAPI document, public key, predicates, schemas, well-known documents, library, and the
//! signed manifest.
//!
//! Deterministic: the same [`SiteInput`] gives byte-identical files.

use askama::Template;
use conduct_core::attestation::predicates_doc;
use conduct_core::schema::{ATTESTATION_SCHEMA, TRACE_SCHEMA};
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::docs;
use crate::pages::{
    CardPage, CatalogPage, DocPage, DocRow, EndpointRow, LibraryPage, PageHead, PubkeyPage,
};
use crate::snapshot::{signed_bytes, signed_extension_bytes};
use crate::tree::Tree;
use crate::RenderError;

pub use crate::input::{route_matches, PostedPrice, RouteInfo, SiteInput};

/// The site's stylesheet, `style.css`: one file every HTML page links, so a page carries only its
/// own content (a vow's pages are rewritten on every report-in; ARCHITECTURE.md).
const STYLESHEET: &str = include_str!("../../templates/style.css");

const WHAT: &str = "conduct measures how an agent's reasoning and actions couple to a context \
flag (being monitored, say) and signs the reading, so anyone can verify it offline.";
const FOR_WHOM: &str = "For agents who want a verifiable reading of their own conduct, the \
operators who run them, and the counterparties who must decide whether to trust them. No \
accounts, no API keys: payment authenticates paid calls, a wallet signature proves an owner. \
Payment never moves a number.";

/// Render the whole tree: one function per section, the manifest last (it covers the rest).
pub fn render(input: &SiteInput<'_>) -> Result<Tree, RenderError> {
    let mut tree = Tree::default();
    put_pubkey(&mut tree, input)?;
    tree.put("predicates.json", sign(input.key, predicates_doc())?);
    put_schemas(&mut tree, input)?;
    put_catalog(&mut tree, input)?;
    put_openapi(&mut tree, input)?;
    put_well_known(&mut tree, input)?;
    put_library(&mut tree, input)?;
    put_service_card(&mut tree, input)?;
    put_discovery(&mut tree, input)?;
    // The stylesheet every HTML page links (templates/layout.html).
    tree.put("style.css", STYLESHEET.as_bytes().to_vec());
    // Crawlers.
    tree.put("robots.txt", crate::vow_html::robots(input.public_url));
    put_manifest(&mut tree, input)?;
    Ok(tree)
}

/// `doc` signed with `key`, as file bytes.
fn sign(key: &ServiceKey, doc: Value) -> Result<Vec<u8>, RenderError> {
    signed_bytes(key, doc).map_err(RenderError::from)
}

/// The public key: `pubkey.json` and its HTML twin.
fn put_pubkey(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    let key = input.key;
    let key_id = key.key_id_hex();
    tree.put(
        "pubkey.json",
        sign(
            key,
            json!({
                "type": "conduct.pubkey/v1",
                "alg": "ed25519",
                "public_key": key.public_b64(),
                "key_id": key_id,
                "vkey": key.vkey(),
                "name": key.name(),
                "how_to_verify": "Remove 'signature' from a signed object, canonicalize the rest \
                    with RFC 8785 (JCS), and verify the base64 Ed25519 signature over those bytes \
                    with public_key. Pin this key out of band.",
                "scope": scope_value(),
            }),
        )?,
    );
    tree.put(
        "pubkey.html",
        PubkeyPage {
            head: PageHead::new(
                input.key,
                "Public key",
                "The Ed25519 key that signs every document of this service.",
            ),
            public_key: &key.public_b64(),
            vkey: &key.vkey(),
            name: key.name(),
        }
        .render()?
        .into_bytes(),
    );
    Ok(())
}

/// The JSON Schema documents with the scope statement (`scope`, `key_id` and `signature` are
/// unknown keywords, which JSON Schema keeps as annotations: they constrain nothing).
fn put_schemas(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    for (name, text) in [
        ("trace.json", TRACE_SCHEMA),
        ("attestation.json", ATTESTATION_SCHEMA),
    ] {
        let mut v: Value = serde_json::from_str(text)
            .map_err(|e| RenderError::Input(format!("schema {name}: {e}")))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("scope".into(), scope_value());
        }
        tree.put(format!("schemas/{name}"), sign(input.key, v)?);
    }
    Ok(())
}

/// The catalog of the running route table: `catalog.json` and its HTML twin.
fn put_catalog(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    let endpoints: Vec<Value> = input
        .routes
        .iter()
        .map(|r| {
            json!({"method": r.method, "path": r.path, "paid": r.paid,
                   "description": r.description})
        })
        .collect();
    tree.put(
        "catalog.json",
        sign(
            input.key,
            json!({
                "type": "conduct.catalog/v1",
                "what": "Every HTTP endpoint of this instance, generated from the running route \
                    table. Authoritative when it disagrees with prose.",
                "base_url": input.public_url,
                "endpoints": endpoints,
                "scope": scope_value(),
            }),
        )?,
    );
    let rows = input
        .routes
        .iter()
        .map(|r| EndpointRow {
            method: r.method.to_owned(),
            path: r.path.to_owned(),
            paid: r.paid,
            description: r.description.to_owned(),
        })
        .collect();
    tree.put(
        "catalog.html",
        CatalogPage {
            head: PageHead::new(
                input.key,
                "Catalog",
                "Every endpoint of the conduct attestation service.",
            ),
            endpoints: rows,
        }
        .render()?
        .into_bytes(),
    );
    Ok(())
}

/// The OpenAPI document of the same route table.
fn put_openapi(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    tree.put(
        "openapi.json",
        signed_extension_bytes(input.key, crate::openapi::document(input)?)?,
    );
    Ok(())
}

/// The well-known documents: the x402 paid-resources manifest and the agent card.
fn put_well_known(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    let key = input.key;
    let mut paid: Vec<Value> = Vec::new();
    for r in input.routes.iter().filter(|r| r.paid) {
        let (price, accepts) = match input.posted.iter().find(|p| p.path == r.path) {
            Some(p) => (p.price_usd, p.accepts),
            None => (input.price_usd, input.accepts),
        };
        // The same bazaar extension as the route's 402 (library/PAYMENTS.md, "Discovery"),
        // and its contract lifted: how to call it, what it answers.
        let bazaar = crate::bazaar::extension(r)?;
        let schema = &bazaar["schema"]["properties"];
        let mut call = json!({"method": r.method});
        if let Some(body) = schema["input"]["properties"].get("body") {
            call["bodyType"] = json!("json");
            call["body"] = body.clone();
        }
        let mut item = json!({"resource": format!("{}{}", input.public_url, r.path),
               "type": "http", "method": r.method, "description": r.description,
               "mimeType": "application/json", "price_usd": price, "accepts": accepts,
               "input": call});
        if let Some(out) = schema.get("output") {
            item["output"] = json!({"mimeType": "application/json",
                                    "schema": out["properties"]["example"].clone()});
        }
        item["extensions"] = json!({"bazaar": bazaar});
        paid.push(item);
    }
    tree.put(
        ".well-known/x402.json",
        sign(
            key,
            json!({
                "type": "conduct.x402/v1",
                "x402Version": 2,
                "what": "Paid resources of this instance and the rails that pay them. One flat \
                    price per rail for every caller; the price never depends on a score. A \
                    read is at price_usd; a resource posted at a price of its own (a \
                    familiar's labor price) says so in its price_usd and accepts.",
                "price_usd": input.price_usd,
                "resources": paid,
                "rails": input.accepts,
                "headers": {"challenge": "PAYMENT-REQUIRED", "payment": ["PAYMENT-SIGNATURE", "X-PAYMENT"],
                            "receipt": ["PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"]},
                "scope": scope_value(),
            }),
        )?,
    );

    // Agent card (A2A-style fields plus conduct's own).
    let mcp = crate::discovery::mcp_summary(input.routes, input.public_url);
    let mut skills = vec![
        json!({"id": "profile", "name": "Signed channel-coupling profile",
               "description": "POST /profile: a trace in, an Ed25519-signed attestation of I(C;D), I(C;M), I(C;M|D-clean), I(C;D,M) out. Paid via x402.",
               "tags": ["attestation", "mutual-information", "x402"]}),
        json!({"id": "demo_profile", "name": "Unsigned demo profile",
               "description": "POST /demo/profile: the same numbers, unsigned, free and rate-limited.",
               "tags": ["demo"]}),
    ];
    if mcp.is_some() {
        skills.push(json!({"id": "mcp", "name": "MCP tools",
            "description": "POST /mcp (streamable HTTP, stateless): about, take_vow, report_in, read_ledger, list_vows, get_reading, demo_profile and ask, each answering exactly what its HTTP route answers. Free; nothing over MCP moves money.",
            "tags": ["mcp", "vows", "demo"]}));
    }
    let mut card = json!({
        "type": "conduct.agent-card/v1",
        "name": "conduct",
        "description": WHAT,
        "url": input.public_url,
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "authentication": {"schemes": ["x402"], "note": "No accounts and no API keys. Paid calls are authenticated by payment."},
        "skills": skills,
        "pubkey": key.public_b64(),
        "catalog": format!("{}/catalog", input.public_url),
        "scope": scope_value(),
    });
    // Absent rather than null when this instance has no MCP endpoint (a null means "could not
    // look").
    if let Some(m) = mcp {
        card["mcp"] = m;
    }
    tree.put(".well-known/agent.json", sign(key, card)?);
    Ok(())
}

/// The library: `library.json`, its HTML twin, and each document raw and rendered.
fn put_library(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    let published = docs::published();
    let doc_entries: Vec<Value> = published
        .iter()
        .map(|d| {
            json!({"name": d.name, "title": d.title(), "path": format!("/library/{}", d.name),
                   "html": format!("/library/{}", d.stem()), "bytes": d.markdown.len(),
                   "sha256": hex::encode(Sha256::digest(d.markdown.as_bytes()))})
        })
        .collect();
    let withheld_why = "Nothing is held back on this instance: every document of record is \
        published. When a document is withheld (a draft lexicon under evaluation, say), it is \
        counted here with the reason.";
    tree.put(
        "library.json",
        sign(
            input.key,
            json!({
                "type": "conduct.library/v1",
                "documents": doc_entries,
                "withheld": {"count": 0, "why": withheld_why},
                "scope": scope_value(),
            }),
        )?,
    );
    let rows: Vec<DocRow> = published
        .iter()
        .map(|d| DocRow {
            name: d.name.to_owned(),
            stem: d.stem().to_owned(),
            title: d.title(),
            bytes: d.markdown.len(),
        })
        .collect();
    tree.put(
        "library.html",
        LibraryPage {
            head: PageHead::new(
                input.key,
                "Library",
                "Published documents of the conduct attestation service.",
            ),
            docs: rows,
            withheld_count: 0,
            withheld_why,
        }
        .render()?
        .into_bytes(),
    );
    for d in &published {
        tree.put(
            format!("library/{}", d.name),
            d.markdown.as_bytes().to_vec(),
        );
        let title = d.title();
        let body = d.html();
        tree.put(
            format!("library/{}.html", d.stem()),
            DocPage {
                head: PageHead::new(input.key, &title, &title),
                name: d.name,
                body: &body,
            }
            .render()?
            .into_bytes(),
        );
    }
    Ok(())
}

/// The service card: `index.json` and `index.html`.
fn put_service_card(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    let key = input.key;
    let key_id = key.key_id_hex();
    let demo_cap = match input.demo_daily_cap {
        Some(n) => format!("{n} per UTC day per IP"),
        None => "uncapped on this instance".to_owned(),
    };
    let price = format!("${} (USD)", input.price_usd);
    let rails: Vec<String> = input
        .accepts
        .iter()
        .map(|a| {
            format!(
                "{} on {}: {} atomic units of {} to {}",
                a["scheme"].as_str().unwrap_or("?"),
                a["network"].as_str().unwrap_or("?"),
                a["amount"].as_str().unwrap_or("?"),
                a["asset"].as_str().unwrap_or("?"),
                a["payTo"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let mut card = json!({
        "type": "conduct.service/v1",
        "name": "conduct",
        "what": WHAT,
        "for_whom": FOR_WHOM,
        "base_url": input.public_url,
        "pubkey": {"alg": "ed25519", "public_key": key.public_b64(), "key_id": key_id,
                   "vkey": key.vkey(), "at": "/pubkey"},
        "price_usd": input.price_usd,
        "rails": input.accepts,
        "free_demo": {"path": "/demo/profile", "cap": demo_cap},
        "meters": meters_value(),
        "invariants": [
            "Payment never moves a measured number. The price is flat and the read is score-blind.",
            "No accounts and no API keys. Payment is the authentication for paid calls.",
            "Raw traces are scored, hashed and discarded.",
        ],
        "start_here": {"catalog": "/catalog", "openapi": "/openapi.json",
                       "library": "/library", "pubkey": "/pubkey",
                       "predicates": "/predicates", "trace_schema": "/schemas/trace.json",
                       "attestation_schema": "/schemas/attestation.json",
                       "x402": "/.well-known/x402.json", "agent_card": "/.well-known/agent.json"},
        "scope": scope_value(),
    });
    if crate::discovery::mcp_summary(input.routes, input.public_url).is_some() {
        card["start_here"]["mcp"] = json!("/library/MCP.md");
    }
    tree.put("index.json", sign(key, card)?);
    tree.put(
        "index.html",
        CardPage {
            head: PageHead::new(input.key, "conduct", WHAT),
            what: WHAT,
            for_whom: FOR_WHOM,
            demo_cap: &demo_cap,
            price: &price,
            public_url: input.public_url,
            public_key: &key.public_b64(),
            vkey: &key.vkey(),
            rails,
            meters: conduct_core::meter::Meter::names(),
            default_meter: conduct_core::meter::Meter::DEFAULT.as_str(),
            meters_choose: METERS_CHOOSE,
        }
        .render()?
        .into_bytes(),
    );
    Ok(())
}

/// The card's `meters`: the versions served, the default, and how a request names one.
fn meters_value() -> Value {
    use conduct_core::meter::Meter;
    let served: Vec<&str> = Meter::ALL.iter().map(|m| m.as_str()).collect();
    json!({
        "served": served,
        "default": Meter::DEFAULT.as_str(),
        "choose": METERS_CHOOSE,
        "doc": "/library/METER.md",
    })
}

/// How a request names its meter, and what every number carries (card JSON and HTML).
const METERS_CHOOSE: &str = "Name one with \"meter\" in the body of a measuring request; \
without it the request gets the default. Every attestation, entry and reading names the meter \
of its numbers, and an old meter stays served and verifiable.";

/// Discovery for agents: /lost and /llms.txt.
fn put_discovery(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    for (path, bytes) in crate::discovery::discovery_files(input)? {
        tree.put(path, bytes);
    }
    Ok(())
}

/// The signed manifest of every file put so far: its root and bins (built at once, as the
/// publisher grows them).
fn put_manifest(tree: &mut Tree, input: &SiteInput<'_>) -> Result<(), RenderError> {
    let bins = crate::manifest::build(
        input.key,
        &manifest_files(tree),
        input.as_of,
        input.manifest_ttl,
        crate::manifest::SPLIT_AT,
    )?;
    for (path, bytes) in bins {
        tree.put(path, bytes);
    }
    Ok(())
}

/// What the manifest says of a tree's files: path -> (hex SHA-256, length), for every file
/// but the manifest itself and the log (whose checkpoint covers it).
pub fn manifest_files(tree: &Tree) -> std::collections::BTreeMap<String, (String, u64)> {
    tree.files
        .iter()
        .filter(|(p, _)| !conduct_core::manifest::is_manifest_path(p) && !p.starts_with("log/"))
        .map(|(p, b)| (p.clone(), (hex::encode(Sha256::digest(b)), b.len() as u64)))
        .collect()
}
