//! The chain indexer and the ERC-8257 registry view, end to end: a real anvil running our
//! ToolRegistry, manifests served over real HTTPS on loopback (a throwaway CA the service is
//! configured to trust), the real `conduct` binary following the chain through a TCP relay the
//! test can cut. One chain and one server for every case:
//!
//! - a good manifest verifies; a changed byte, a BOM, NFD text, upper-case hex, a wrong
//!   creator, a broken binding, a redirect, a 404, a private address and a slow server each
//!   give their named status and reason;
//! - an update re-verifies, one that keeps its metadataURI at once (well inside the per-tool
//!   fetch cooldown); a deregistration shows as such;
//! - reorgs of depth 1 (inside the confirmation depth), 3 and 5 (deeper) remove registrations;
//! - the RPC stopping gives `reachable: false` with the last good tools, and the follower
//!   resumes from its cursor when it answers again;
//! - `/who` shows the tools a wallet created; `/rh` and `/opensea` name the chain.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy::primitives::{keccak256, Address, B256};
use alloy::signers::local::PrivateKeySigner;
use alloy::signers::SignerSync;
use alloy::sol_types::SolCall;
use conduct_api::cmd::dev_tls::{serve, Answer, Pki};
use conduct_tests::{client, Anvil, Relay, Server};
use serde_json::{json, Value};

alloy::sol! {
    function registerTool(string metadataURI, bytes32 manifestHash, address accessPredicate) returns (uint256);
    function updateToolMetadata(uint256 toolId, string newURI, bytes32 newHash);
    function deregisterTool(uint256 toolId);
}

/// anvil's first two development accounts (public test values).
const DEPLOYER: &str = conduct_tests::ANVIL_ACCOUNT_0;
const OTHER: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
/// The private key of `DEPLOYER` (anvil's first development key, a public test value).
const DEPLOYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// keccak256 of the RFC 8785 form, by an implementation independent of the service's.
fn jcs_keccak(v: &Value) -> B256 {
    keccak256(serde_json_canonicalizer::to_vec(v).unwrap())
}

fn manifest(origin: &str, slug: &str, name: &str, creator: &str) -> Value {
    json!({
        "type": "https://ercs.ethereum.org/ERCS/erc-8257#tool-manifest-v1",
        "name": name,
        "description": format!("{name}: a test tool"),
        "endpoint": format!("{origin}/{slug}"),
        "inputs": {"type": "object"},
        "outputs": {"type": "object"},
        "creatorAddress": creator,
    })
}

fn get_json(s: &Server, path: &str) -> Value {
    client()
        .get(s.at(path))
        .header("accept", "application/json")
        .send()
        .unwrap()
        .json()
        .unwrap()
}

/// Poll `/registry` until `done` holds (bounded); the last document.
fn await_registry(s: &Server, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    await_page(
        s,
        "/registry",
        Instant::now() + Duration::from_secs(60),
        what,
        done,
    )
}

/// Poll the JSON document at `path` until `done` holds, failing at `deadline`; the last
/// document.
fn await_page(
    s: &Server,
    path: &str,
    deadline: Instant,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    loop {
        let doc = get_json(s, path);
        if done(&doc) {
            return doc;
        }
        assert!(Instant::now() < deadline, "{what} ({path}): {doc:#}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tool(doc: &Value, id: u64) -> Option<&Value> {
    doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["toolId"] == id)
}

fn status_of(doc: &Value, id: u64) -> Option<String> {
    tool(doc, id).map(|t| t["verification"]["status"].as_str().unwrap().to_owned())
}

#[test]
fn the_registry_view_follows_the_chain_and_reverifies_every_manifest() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let anvil = Anvil::start();
    let anvil_addr: std::net::SocketAddr = anvil.url.trim_start_matches("http://").parse().unwrap();
    let relay = rt.block_on(Relay::start(anvil_addr));

    // Deploy our registry.
    let (registry, deployed_at) = anvil.deploy_registry();

    // The manifests, served over HTTPS on loopback.
    let pki = Pki::new().unwrap();
    let routes: conduct_api::cmd::dev_tls::Routes = Arc::new(Mutex::new(HashMap::new()));
    let tls = rt.block_on(serve(&pki, 0, routes.clone())).unwrap();
    let origin = format!("https://localhost:{}", tls.port());
    let well_known = |slug: &str| format!("{origin}/.well-known/ai-tool/{slug}.json");
    let put = |slug: &str, a: Answer| {
        routes
            .lock()
            .unwrap()
            .insert(format!("/.well-known/ai-tool/{slug}.json"), a);
    };
    let register = |from: &str, uri: &str, hash: B256| -> u64 {
        let data = registerToolCall {
            metadataURI: uri.to_owned(),
            manifestHash: hash,
            accessPredicate: Address::ZERO,
        }
        .abi_encode();
        let r = anvil.send(from, Some(&registry), &data);
        let log = &r["logs"][0];
        u64::from_str_radix(
            log["topics"][1].as_str().unwrap().trim_start_matches("0x"),
            16,
        )
        .unwrap()
    };

    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(
        &cfg,
        format!(
            "vow_daily_cap = 0\n\
             [chain]\nname = \"anvil\"\nchain_id = 31337\n\
             rpc = [\"http://127.0.0.1:1\", \"http://{}\"]\n\
             confirmations = 2\npoll_ms = 50\nrpc_timeout_seconds = 2\n\
             [chain.registry]\naddress = \"{registry}\"\nstart_block = {deployed_at}\n\
             [manifests]\nallow_loopback = true\nextra_roots = [{:?}]\n",
            relay.addr,
            ca.display().to_string()
        ),
    )
    .unwrap();
    let s = Server::start_in(
        &dir.path().join("data"),
        &dir.path().join("site"),
        &["--config", cfg.to_str().unwrap()],
    );

    // One of each: (slug, what is served, what is committed, by whom).
    let good = manifest(&origin, "alpha", "Alpha", DEPLOYER);
    put(
        "alpha",
        Answer::json(serde_json::to_vec_pretty(&good).unwrap()),
    );
    let alpha = register(DEPLOYER, &well_known("alpha"), jcs_keccak(&good));

    let bravo_m = manifest(&origin, "bravo", "Bravo", DEPLOYER);
    let mut changed = bravo_m.clone();
    // Registrant text (claims are shown even when the check fails) is escaped, never markup.
    changed["description"] = json!("Bravo <script>alert(1)</script>");
    put("bravo", Answer::json(serde_json::to_vec(&changed).unwrap()));
    let bravo = register(DEPLOYER, &well_known("bravo"), jcs_keccak(&bravo_m));

    let charlie_m = manifest(&origin, "charlie", "Charlie", DEPLOYER);
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(serde_json::to_vec(&charlie_m).unwrap());
    put("charlie", Answer::json(bom));
    let charlie = register(DEPLOYER, &well_known("charlie"), jcs_keccak(&charlie_m));

    let delta_m = manifest(&origin, "delta", "Cafe\u{301} Delta", DEPLOYER);
    put("delta", Answer::json(serde_json::to_vec(&delta_m).unwrap()));
    let delta = register(DEPLOYER, &well_known("delta"), jcs_keccak(&delta_m));

    let echo_m = manifest(
        &origin,
        "echo",
        "Echo",
        "0xF39FD6E51AAD88F6F4CE6AB8827279CFFFB92266",
    );
    put("echo", Answer::json(serde_json::to_vec(&echo_m).unwrap()));
    let echo = register(DEPLOYER, &well_known("echo"), jcs_keccak(&echo_m));

    // A bidi override in a claim is stripped from what is shown.
    let foxtrot_m = manifest(&origin, "foxtrot", "Fox\u{202E}trot", OTHER);
    put(
        "foxtrot",
        Answer::json(serde_json::to_vec(&foxtrot_m).unwrap()),
    );
    let foxtrot = register(DEPLOYER, &well_known("foxtrot"), jcs_keccak(&foxtrot_m));

    put(
        "golf",
        Answer::Reply {
            status: "302 Found".into(),
            headers: vec![format!("Location: {}", well_known("alpha"))],
            body: Vec::new(),
        },
    );
    let golf = register(DEPLOYER, &well_known("golf"), jcs_keccak(&good));

    let hotel = register(DEPLOYER, &well_known("hotel"), jcs_keccak(&good));

    let india = register(
        DEPLOYER,
        "https://10.11.12.13/.well-known/ai-tool/india.json",
        jcs_keccak(&good),
    );

    put("juliet", Answer::Stall);
    let juliet = register(DEPLOYER, &well_known("juliet"), jcs_keccak(&good));

    // Served on our origin, but claiming an endpoint elsewhere.
    let kilo_m = manifest("https://tools.example.com", "kilo", "Kilo", DEPLOYER);
    put("kilo", Answer::json(serde_json::to_vec(&kilo_m).unwrap()));
    let kilo = register(DEPLOYER, &well_known("kilo"), jcs_keccak(&kilo_m));
    anvil.mine(2);

    let expect = [
        (alpha, "verified", None),
        (bravo, "hash-mismatch", Some("hash-mismatch")),
        (charlie, "invalid-manifest", Some("bom")),
        (delta, "invalid-manifest", Some("not-nfc")),
        (echo, "invalid-manifest", Some("uppercase-hex")),
        (foxtrot, "creator-mismatch", Some("creator-mismatch")),
        (golf, "unreachable", Some("redirect")),
        (hotel, "unreachable", Some("http-status")),
        (india, "unreachable", Some("refused")),
        (juliet, "unreachable", Some("timeout")),
        (kilo, "binding-mismatch", Some("binding")),
    ];
    let doc = await_registry(&s, "every tool checked", |d| {
        expect
            .iter()
            .all(|(id, _, _)| status_of(d, *id).is_some_and(|st| st != "pending"))
    });
    for (id, status, reason) in expect {
        let t = tool(&doc, id).unwrap();
        assert_eq!(t["verification"]["status"], status, "tool {id}: {t:#}");
        assert_eq!(
            t["verification"]["reason"],
            json!(reason),
            "tool {id}: {t:#}"
        );
    }
    assert!(
        tool(&doc, hotel).unwrap()["verification"]["detail"]
            .as_str()
            .unwrap()
            .contains("404"),
        "{doc:#}"
    );
    assert_eq!(
        tool(&doc, alpha).unwrap()["verification"]["computed"],
        json!(format!("{}", jcs_keccak(&good)))
    );
    assert_eq!(tool(&doc, alpha).unwrap()["claims"]["name"], "Alpha");
    assert_eq!(tool(&doc, foxtrot).unwrap()["claims"]["name"], "Foxtrot");
    assert_eq!(
        tool(&doc, alpha).unwrap()["creator_record"]["sworn_here"],
        false
    );
    assert_eq!(doc["counts"]["registered"], 11);
    assert_eq!(doc["counts"]["verified"], 1);
    assert_eq!(doc["counts"]["unverified_or_failing"], 10);
    assert_eq!(doc["reachable"], true);
    // Alphabetical by claimed name, never ranked.
    let names: Vec<String> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["claims"]["name"].as_str().unwrap_or("~").to_lowercase())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for key in [
        "what",
        "chain",
        "registry",
        "counts",
        "order",
        "reading_an_entry",
        "ordering_wall",
        "publish_here",
        "reachable",
        "truncated",
        "partial",
        "note",
        "tools",
        "cached_seconds_ago",
    ] {
        assert!(doc.get(key).is_some(), "missing {key}");
    }

    // An update re-verifies against the new commitment; a deregistration shows as such.
    let alpha2 = manifest(&origin, "alpha2", "Alpha", DEPLOYER);
    put("alpha2", Answer::json(serde_json::to_vec(&alpha2).unwrap()));
    let data = updateToolMetadataCall {
        toolId: alpha.try_into().unwrap(),
        newURI: well_known("alpha2"),
        newHash: jcs_keccak(&alpha2),
    }
    .abi_encode();
    anvil.send(DEPLOYER, Some(&registry), &data);
    let data = deregisterToolCall {
        toolId: bravo.try_into().unwrap(),
    }
    .abi_encode();
    anvil.send(DEPLOYER, Some(&registry), &data);
    anvil.mine(2);
    let doc = await_registry(&s, "update and deregistration", |d| {
        tool(d, alpha).is_some_and(|t| {
            t["metadataURI"] == json!(well_known("alpha2"))
                && t["verification"]["status"] == "verified"
        }) && tool(d, bravo).is_some_and(|t| t["state"] == "deregistered")
    });
    assert_eq!(
        tool(&doc, bravo).unwrap()["verification"]["status"],
        "deregistered"
    );
    assert_eq!(doc["counts"]["registered"], 10);

    // An update that keeps its metadataURI (new bytes at the same location, a new
    // commitment) is checked at once: the 15-second cooldown between two fetches of one tool
    // is for fetches no chain change caused. Alpha was fetched a moment ago.
    let mut alpha3 = alpha2.clone();
    alpha3["description"] = json!("Alpha: a test tool, second edition");
    put("alpha2", Answer::json(serde_json::to_vec(&alpha3).unwrap()));
    let data = updateToolMetadataCall {
        toolId: alpha.try_into().unwrap(),
        newURI: well_known("alpha2"),
        newHash: jcs_keccak(&alpha3),
    }
    .abi_encode();
    let updated_at = Instant::now();
    anvil.send(DEPLOYER, Some(&registry), &data);
    anvil.mine(2);
    let committed = json!(format!("{}", jcs_keccak(&alpha3)));
    await_page(
        &s,
        "/registry",
        updated_at + Duration::from_secs(8),
        "an update keeping its metadataURI re-verified well within the cooldown",
        |d| {
            tool(d, alpha).is_some_and(|t| {
                t["manifestHash"] == committed
                    && t["verification"]["status"] == "verified"
                    && t["verification"]["computed"] == committed
            })
        },
    );

    // The tool's own page and the creator's public record.
    let page = get_json(&s, &format!("/registry/tool/{alpha}"));
    assert_eq!(page["tool"]["toolId"], alpha);
    let who = get_json(&s, &format!("/who?handle={DEPLOYER}"));
    assert_eq!(who["found"], true, "{who:#}");
    assert_eq!(who["tools"].as_array().unwrap().len(), 11, "{who:#}");
    let nobody = get_json(&s, "/who?handle=0x000000000000000000000000000000000000dead");
    assert_eq!(nobody["found"], false);
    let rh = get_json(&s, "/rh");
    assert_eq!(rh["chain"]["chain_id"], 31337);
    let opensea = get_json(&s, "/opensea");
    assert_eq!(opensea["registry"], json!(registry.to_ascii_lowercase()));
    let html = client()
        .get(s.at("/registry"))
        .header("accept", "text/html")
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(html.contains("Alpha") && html.contains("hash-mismatch"));
    assert!(
        !html.contains("<script>alert"),
        "registrant text reached the page as markup"
    );
    assert!(html.contains("&#60;script&#62;alert(1)"), "{html}");

    // The creator swears a vow with its wallet: its tools point at the public records.
    let ids = |d: &Value| -> Vec<Value> {
        d["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["toolId"].clone())
            .collect()
    };
    let order_before = ids(&get_json(&s, "/registry"));
    let signer: PrivateKeySigner = DEPLOYER_KEY.parse().unwrap();
    let text = "Publish honest tools";
    let msg = client()
        .get(s.at("/vow/message"))
        .query(&[
            ("text", text),
            ("agent", "alpha-publisher"),
            ("cadence_hours", "24"),
        ])
        .send()
        .unwrap()
        .text()
        .unwrap();
    let sig = signer.sign_message_sync(msg.as_bytes()).unwrap();
    let vow: Value = client()
        .post(s.at("/vow"))
        .json(
            &json!({"text": text, "agent": "alpha-publisher", "cadence_hours": 24,
            "wallet": DEPLOYER, "signature": format!("0x{}", hex::encode(sig.as_bytes()))}),
        )
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(vow["sandbox"], false, "{vow:#}");
    let vow_id = vow["vow_id"].as_str().unwrap().to_owned();
    let doc = await_registry(&s, "the creator record", |d| {
        tool(d, alpha).is_some_and(|t| t["creator_record"]["sworn_here"] == true)
    });
    let record = &tool(&doc, alpha).unwrap()["creator_record"];
    assert_eq!(record["agent"], "alpha-publisher");
    assert_eq!(record["who"], json!(format!("/who?handle={DEPLOYER}")));
    assert!(record["records"]
        .as_array()
        .unwrap()
        .contains(&json!(format!("/vow/{vow_id}"))));
    // The creator's record is published with that index (its files are written side by
    // side, so it is awaited too, never read at once).
    let who_path = format!("/who?handle={DEPLOYER}");
    let page_deadline = || Instant::now() + Duration::from_secs(60);
    await_page(&s, &who_path, page_deadline(), "the vow on /who", |who| {
        who["vows"][0]["vow_id"] == json!(vow_id)
    });
    // The order is the same: a vow moves nothing.
    assert_eq!(ids(&doc), order_before);

    // Reorgs. Depth 1, inside the confirmation depth: the registration is never shown.
    let slug_tool = |slug: &str, name: &str| {
        let m = manifest(&origin, slug, name, DEPLOYER);
        put(slug, Answer::json(serde_json::to_vec(&m).unwrap()));
        register(DEPLOYER, &well_known(slug), jcs_keccak(&m))
    };
    let mike = slug_tool("mike", "Mike");
    anvil.rpc("anvil_reorg", json!([1, []]));
    anvil.mine(4);
    let target = anvil.head() - 2;
    let deadline = Instant::now() + Duration::from_secs(60);
    while get_json(&s, "/health")["chain"]["indexed_to"]
        .as_u64()
        .is_none_or(|b| b < target)
    {
        assert!(
            Instant::now() < deadline,
            "never indexed past the shallow reorg"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let doc = get_json(&s, "/registry");
    assert!(
        tool(&doc, mike).is_none(),
        "a reorged-out registration is listed"
    );
    // Depths 3 and 5, deeper than the confirmations: listed, then removed.
    for depth in [3u64, 5] {
        let id = slug_tool(&format!("reorg{depth}"), &format!("Reorg {depth}"));
        anvil.mine(depth - 1);
        await_registry(&s, "the registration indexed", |d| tool(d, id).is_some());
        anvil.rpc("anvil_reorg", json!([depth, []]));
        anvil.mine(1);
        await_registry(&s, &format!("a reorg of depth {depth} removes it"), |d| {
            tool(d, id).is_none()
        });
        // Its page says so, and its creator's record no longer lists it. Each page is
        // awaited: the render that changes the index renders them too, but its files are
        // written side by side, not in order.
        await_page(
            &s,
            &format!("/registry/tool/{id}"),
            page_deadline(),
            "the tool page says absent",
            |page| page["tool"]["state"] == "absent",
        );
        await_page(
            &s,
            &who_path,
            page_deadline(),
            "the creator's record drops the tool",
            |who| {
                who["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|t| t["toolId"] != id)
            },
        );
    }

    // The RPC stops answering: the last good state, reachable false, nothing zeroed.
    relay.set(false);
    let doc = await_registry(&s, "reachable: false", |d| d["reachable"] == false);
    assert!(tool(&doc, alpha).is_some(), "the last good tools are kept");
    assert_eq!(doc["counts"]["registered"], 10);
    assert!(doc["cached_seconds_ago"].is_u64(), "{doc:#}");
    // It answers again: the follower resumes from its cursor.
    relay.set(true);
    let november = slug_tool("november", "November");
    anvil.mine(2);
    await_registry(&s, "resumed", |d| {
        d["reachable"] == true && status_of(d, november).as_deref() == Some("verified")
    });
    drop(s);
}
