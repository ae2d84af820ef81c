//! Tests of `/lost`, `/llms.txt` and the cards.

use super::cards::STEM_PREFIX;
use super::*;
use conduct_core::signing::{verify_object, PinnedKey, ServiceKey};
use conduct_core::time::rfc3339;
use conduct_core::vow::record::text_sha256;
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};

fn key() -> ServiceKey {
    ServiceKey::from_seed(&[7; 32], "conduct.test")
}

fn pinned(k: &ServiceKey) -> PinnedKey {
    PinnedKey::parse(&k.vkey()).unwrap()
}

const ROUTES: &[RouteInfo] = &[
    RouteInfo {
        method: "GET",
        path: "/",
        paid: false,
        description: "Service card.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "GET",
        path: "/catalog",
        paid: false,
        description: "Every endpoint.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "POST",
        path: "/profile",
        paid: true,
        description: "Signed profile.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "GET",
        path: "/card",
        paid: false,
        description: "?key= an agent name: its card.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "GET",
        path: "/vow/{id}",
        paid: false,
        description: "A vow.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "GET",
        path: "/library/{NAME}.md",
        paid: false,
        description: "A document.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
    RouteInfo {
        method: "GET",
        path: "/lost",
        paid: false,
        description: "Arrival door.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    },
];

fn input<'a>(k: &'a ServiceKey, routes: &'a [RouteInfo]) -> SiteInput<'a> {
    SiteInput {
        key: k,
        public_url: "https://conduct.example",
        routes,
        accepts: &[],
        price_usd: "0.10",
        posted: &[],
        demo_daily_cap: Some(50),
        as_of: 1_700_000_000,
        manifest_ttl: 86_400,
    }
}

fn file<'a>(files: &'a [(String, Vec<u8>)], path: &str) -> &'a [u8] {
    &files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("no {path}"))
        .1
}

fn row(id: &str, index: u64, agent: &str, sealed: bool, wallet: Option<&str>) -> VowRow {
    VowRow {
        vow_id: id.into(),
        log_index: index,
        agent: agent.into(),
        text: format!("secret text of {id}"),
        sealed,
        sandbox: wallet.is_none(),
        wallet: wallet.map(str::to_owned),
        cadence_seconds: 86_400,
        created_at: 1_700_000_000 + index,
        head_seq: 99,
        head_at: 1_800_000_000,
    }
}

#[test]
fn lost_is_signed_ordered_and_honest_about_absent_routes() {
    let k = key();
    let files = discovery_files(&input(&k, ROUTES)).unwrap();
    let v: Value = serde_json::from_slice(file(&files, "lost.json")).unwrap();
    verify_object(&v, &pinned(&k)).unwrap();
    assert_eq!(v["type"], LOST_TYPE);
    assert!(v.get("as_of").is_none());
    let ids: Vec<&str> = v["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "where-am-i",
            "do-i-exist",
            "why-believe",
            "who-else",
            "what-first",
            "can-i-earn"
        ]
    );
    let eps = |i: usize| v["questions"][i]["endpoints"].as_array().unwrap().clone();
    let catalog = eps(0)
        .into_iter()
        .find(|e| e["path"] == "/catalog")
        .unwrap();
    assert_eq!(catalog["on_this_instance"], true);
    let health = eps(0).into_iter().find(|e| e["path"] == "/health").unwrap();
    assert_eq!(health["on_this_instance"], false);
    assert_eq!(health["what"], NOT_YET);
    let vow = eps(1)
        .into_iter()
        .find(|e| e["path"] == "/vow/{id}")
        .unwrap();
    assert_eq!(vow["on_this_instance"], true);
    // No /munus route: the board is said not to be live.
    assert!(v["questions"][5]["answer"]
        .as_str()
        .unwrap()
        .starts_with("Not on this instance yet"));
    assert_eq!(v["does_not_know"].as_array().unwrap().len(), 6);

    let txt = String::from_utf8(file(&files, "lost.txt").to_vec()).unwrap();
    assert!(txt.lines().count() <= 60, "{txt}");
    assert!(
        txt.lines()
            .any(|l| l.starts_with("   Not on this instance yet: ") && l.contains("GET /health")),
        "{txt}"
    );
    assert!(txt
        .lines()
        .any(|l| l.starts_with("   Here: ") && l.contains("GET /catalog")));
    let html = String::from_utf8(file(&files, "lost.html").to_vec()).unwrap();
    assert!(html.contains("<a href=\"/catalog\">"), "{html}");
    assert!(!html.contains("<a href=\"/health\">"), "{html}");
    assert!(html.contains("What this service does not know"));
    // The three forms say the same answers in the same order.
    let mut at_txt = 0;
    let mut at_html = 0;
    for q in v["questions"].as_array().unwrap() {
        let qn = q["question"].as_str().unwrap();
        at_txt = at_txt + txt[at_txt..].find(qn).expect(qn);
        at_html = at_html + html[at_html..].find(qn).expect(qn);
        assert!(txt.contains(q["answer"].as_str().unwrap()));
    }
}

#[test]
fn munus_route_turns_the_earn_answer() {
    let k = key();
    let mut routes = ROUTES.to_vec();
    routes.push(RouteInfo {
        method: "GET",
        path: "/munus",
        paid: false,
        description: "Quest board.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    });
    let qs = lost_questions(&input(&k, &routes));
    assert!(qs[5].answer.starts_with("Yes"));
    assert!(qs[5].endpoints[0].present && qs[5].endpoints[0].linked);
}

#[test]
fn library_endpoint_needs_the_document_published() {
    let k = key();
    let qs = lost_questions(&input(&k, ROUTES));
    let att = qs[2]
        .endpoints
        .iter()
        .find(|e| e.path == "/library/ATTESTATION.md")
        .unwrap();
    assert!(att.present);
    let gone = find_route(ROUTES, &want("GET", "/library/NO_SUCH_DOCUMENT.md"));
    assert!(gone.is_none());
}

#[test]
fn munus_document_is_published() {
    let d = docs::published()
        .into_iter()
        .find(|d| d.name == "MUNUS.md")
        .expect("library/MUNUS.md is embedded");
    assert_eq!(d.title(), "Munus: the quest board");
    // Live: it names its paths and says the catalog is authoritative.
    assert!(!d.markdown.contains("Not live on this instance yet"));
    assert!(d.markdown.contains("`/play/message"));
    assert!(d.markdown.contains("/catalog"));
}

#[test]
fn llms_txt_lists_routes_docs_and_prices() {
    let k = key();
    let files = discovery_files(&input(&k, ROUTES)).unwrap();
    let t = String::from_utf8(file(&files, "llms.txt").to_vec()).unwrap();
    assert!(t.starts_with("# conduct\n\n> "), "{t}");
    assert!(
        t.contains("- `POST /profile` (paid, x402): Signed profile."),
        "{t}"
    );
    assert!(t.contains("- [GET /catalog](https://conduct.example/catalog): Every endpoint."));
    assert!(t.contains("`GET /vow/{id}`"));
    assert!(t.contains("- `GET /card`: ?key= an agent name"), "{t}");
    assert!(!t.contains("/health"), "absent route listed: {t}");
    for d in docs::published() {
        assert!(t.contains(&format!("/library/{})", d.name)), "{}", d.name);
    }
    assert!(t.contains("$0.10"));
    assert!(t.contains("50 per UTC day per IP"));
}

#[test]
fn discovery_is_deterministic_and_clockless() {
    let k = key();
    let a = discovery_files(&input(&k, ROUTES)).unwrap();
    let mut later = input(&k, ROUTES);
    later.as_of += 1_000_000;
    let b = discovery_files(&later).unwrap();
    assert_eq!(a, b);
}

#[test]
fn stems_are_safe_and_bounded() {
    assert_eq!(card_stem("alice"), "card/alice");
    assert_eq!(card_stem("  alice \n"), "card/alice");
    assert_eq!(card_stem("a.b/c%d"), "card/a%2Eb%2Fc%25d");
    assert_eq!(card_stem("../x"), "card/%2E%2E%2Fx");
    let w = "0xAbCdEf0123456789abcdef0123456789ABCDEF01";
    assert_eq!(card_stem(w), format!("card/{}", w.to_ascii_lowercase()));
    assert_eq!(card_stem("é"), "card/%C3%A9");
    for s in [
        "x".repeat(500),
        "é".repeat(200),
        format!("{}{}", "a".repeat(63), "/".repeat(100)),
    ] {
        let stem = card_stem(&s);
        let tail = stem.strip_prefix("card/").unwrap();
        assert!(tail.len() <= STEM_PREFIX + 1 + 64, "{stem}");
        assert!(tail.contains('~'));
        assert!(!tail.contains(['.', '/']));
        // Every % starts a whole escape.
        for (i, _) in tail.match_indices('%') {
            assert!(tail[i + 1..]
                .get(..2)
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())));
        }
    }
    assert_ne!(card_stem(&"x".repeat(500)), card_stem(&"x".repeat(501)));
}

#[test]
fn negative_card() {
    let k = key();
    let files = card_files(&k, "https://conduct.example", "nobody", &[]).unwrap();
    assert_eq!(files.len(), 3, "JSON, text and the HTML twin");
    let html = String::from_utf8(file(&files, "card/nobody.html").to_vec()).unwrap();
    assert!(
        html.contains("No vow, agent or wallet by this key"),
        "{html}"
    );
    // The key is the caller's text: escaped in the HTML twin.
    let odd = card_files(&k, "https://conduct.example", "<b>\"x\"</b>", &[]).unwrap();
    let stem = card_stem("<b>\"x\"</b>");
    let html = String::from_utf8(file(&odd, &format!("{stem}.html")).to_vec()).unwrap();
    assert!(
        !html.contains("<b>") && html.contains("&#60;b&#62;"),
        "{html}"
    );
    let v: Value = serde_json::from_slice(file(&files, "card/nobody.json")).unwrap();
    verify_object(&v, &pinned(&k)).unwrap();
    assert_eq!(v["type"], CARD_TYPE);
    assert_eq!(v["found"], false);
    assert!(v["negative"]
        .as_str()
        .unwrap()
        .contains("No vow, agent or wallet"));
    assert!(v.get("npub").is_none());
    let t = String::from_utf8(file(&files, "card/nobody.txt").to_vec()).unwrap();
    assert!(t.contains("No vow, agent or wallet by this key"), "{t}");

    let files = card_files(&k, "https://conduct.example", "npub1xyz", &[]).unwrap();
    let v: Value = serde_json::from_slice(file(&files, "card/npub1xyz.json")).unwrap();
    assert!(v["npub"].as_str().unwrap().contains("not bound"));
    assert!(v.get("binding").is_none());
}

#[test]
fn positive_card_hides_sealed_text_and_trajectory() {
    let k = key();
    let w = "0x00000000000000000000000000000000000000aa";
    let vows: Vec<VowRow> = (0..8)
        .map(|i| row(&format!("v{i}"), 10 + i, "bob", i % 2 == 1, Some(w)))
        .collect();
    let upper = w.to_ascii_uppercase().replacen("0X", "0x", 1);
    let files = card_files(&k, "https://conduct.example", &upper, &vows).unwrap();
    let stem = card_stem(w);
    let v: Value = serde_json::from_slice(file(&files, &format!("{stem}.json"))).unwrap();
    verify_object(&v, &pinned(&k)).unwrap();
    assert_eq!(v["key"], w);
    assert_eq!(v["found"], true);
    assert_eq!(v["vows_total"], 8);
    assert_eq!(v["more"]["count"], 3);
    let listed = v["vows"].as_array().unwrap();
    assert_eq!(listed.len(), CARD_VOW_LIMIT);
    assert_eq!(listed[0]["vow_id"], "v7");
    assert_eq!(listed[0]["matched_as"], json!(["wallet"]));
    assert_eq!(listed[0]["links"]["proof"], "/log/proof/17");
    let raw = String::from_utf8(file(&files, &format!("{stem}.json")).to_vec()).unwrap();
    let txt = String::from_utf8(file(&files, &format!("{stem}.txt")).to_vec()).unwrap();
    for e in listed {
        let id = e["vow_id"].as_str().unwrap();
        let secret = format!("secret text of {id}");
        if e["sealed"] == true {
            assert!(e.get("text").is_none());
            assert!(!raw.contains(&secret) && !txt.contains(&secret), "{id}");
            assert_eq!(e["text_sha256"], text_sha256(&secret));
        } else {
            assert_eq!(e["text"], secret);
            assert!(txt.contains(&secret));
        }
    }
    // Nothing that moves with report-ins.
    let allowed = [
        "vow_id",
        "matched_as",
        "agent",
        "sealed",
        "sandbox",
        "wallet",
        "text_sha256",
        "text",
        "cadence_seconds",
        "taken_at",
        "log_index",
        "links",
        "mark",
    ];
    for e in listed {
        for k in e.as_object().unwrap().keys() {
            assert!(allowed.contains(&k.as_str()), "{k}");
        }
    }
    assert!(!raw.contains("head") && !raw.contains(&rfc3339(1_800_000_000)));
    assert!(txt.contains("...and 3 more at /vows"));
    // Rough size: the text card stays near 200 tokens per listed vow group.
    assert!(txt.len() < 1800, "{}", txt.len());

    // Report-ins (head_seq, head_at) do not change the card.
    let mut moved = vows.clone();
    for r in &mut moved {
        r.head_seq += 5;
        r.head_at += 5_000;
    }
    assert_eq!(
        files,
        card_files(&k, "https://conduct.example", w, &moved).unwrap()
    );
}

#[test]
fn card_text_escapes_control_characters() {
    let k = key();
    let mut r = row("v1", 1, "evil\nname", false, None);
    r.text = "line\r\nbreak".into();
    let files = card_files(&k, "https://x", "evil\nname", &[r]).unwrap();
    let t = String::from_utf8(files[1].1.clone()).unwrap();
    assert!(t.contains(r#"agent "evil\nname""#), "{t}");
    assert!(!t.contains("evil\nname"));
    assert!(!t.contains("line\r\n"));
    assert!(t.contains("sandbox (unsigned)"));
}

#[test]
fn the_mcp_endpoint_is_named_where_the_route_table_has_it() {
    let k = key();
    let mut routes = ROUTES.to_vec();
    let tree = crate::site::render(&input(&k, &routes)).unwrap();
    let card: Value = serde_json::from_slice(&tree.files[".well-known/agent.json"]).unwrap();
    assert!(card.get("mcp").is_none(), "no null for an absent endpoint");
    let lost = String::from_utf8(tree.files["lost.txt"].clone()).unwrap();
    assert!(
        lost.lines()
            .any(|l| l.contains("Not on this instance yet") && l.contains("POST /mcp")),
        "{lost}"
    );
    let llms = String::from_utf8(tree.files["llms.txt"].clone()).unwrap();
    assert!(!llms.contains("## MCP"));

    routes.push(RouteInfo {
        method: "POST",
        path: MCP_PATH,
        paid: false,
        description: "MCP.",
        contract: crate::openapi::Contract::UNDESCRIBED,
    });
    let tree = crate::site::render(&input(&k, &routes)).unwrap();
    let card: Value = serde_json::from_slice(&tree.files[".well-known/agent.json"]).unwrap();
    verify_object(&card, &pinned(&k)).unwrap();
    assert_eq!(card["mcp"]["url"], "https://conduct.example/mcp");
    assert_eq!(card["mcp"]["moves_money"], false);
    let tools: Vec<&str> = MCP_TOOLS.iter().map(|(n, _)| *n).collect();
    assert_eq!(card["mcp"]["tools"], json!(tools));
    assert!(card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["id"] == "mcp"));
    let service: Value = serde_json::from_slice(&tree.files["index.json"]).unwrap();
    assert_eq!(service["start_here"]["mcp"], "/library/MCP.md");
    let lost: Value = serde_json::from_slice(&tree.files["lost.json"]).unwrap();
    let first = lost["questions"][4]["endpoints"].as_array().unwrap();
    assert!(first
        .iter()
        .any(|e| e["path"] == "/mcp" && e["on_this_instance"] == true));
    assert!(lost["questions"][4]["answer"]
        .as_str()
        .unwrap()
        .contains("POST /mcp"));
    let llms = String::from_utf8(tree.files["llms.txt"].clone()).unwrap();
    assert!(
        llms.contains("## MCP\n\n- Endpoint: https://conduct.example/mcp"),
        "{llms}"
    );
    for (name, route) in MCP_TOOLS {
        assert!(
            llms.contains(&format!("- `{name}`: answers as {route}")),
            "{llms}"
        );
    }
    assert!(llms.contains("/library/MCP.md"));
}

#[test]
fn a_bound_npub_card_names_its_vow_and_binding() {
    let k = key();
    let w = "0x00000000000000000000000000000000000000aa";
    let vow = row("00000000000000a1", 12, "carol", false, Some(w));
    let npub = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";
    let b = CardBinding {
        npub,
        pubkey: "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e",
        vow_id: "00000000000000a1",
        log_index: 40,
    };
    // Written in capitals, it is the same npub and the same card.
    assert_eq!(card_stem(&npub.to_ascii_uppercase()), card_stem(npub));
    let files = card_files_bound(&k, "https://conduct.example", npub, &[vow], Some(b)).unwrap();
    let stem = card_stem(npub);
    let v: Value = serde_json::from_slice(file(&files, &format!("{stem}.json"))).unwrap();
    verify_object(&v, &pinned(&k)).unwrap();
    assert_eq!(v["found"], true);
    assert_eq!(v["vows"][0]["matched_as"], json!(["npub"]));
    assert_eq!(v["vows"][0]["mark"], "/vow/00000000000000a1/mark.svg");
    assert_eq!(v["binding"]["log_index"], 40);
    assert_eq!(v["binding"]["proof"], "/log/proof/40");
    assert!(v["npub"].as_str().unwrap().contains("latest binding"));
    let t = String::from_utf8(file(&files, &format!("{stem}.txt")).to_vec()).unwrap();
    assert!(t.contains("log index 40") && t.contains("mark /vow/00000000000000a1/mark.svg"));
}
