//! The rendered tree is a pure function of the state and the render instant: two renders of
//! the same data directory with the same `--as-of` give byte-identical trees, a render over an
//! identical tree writes nothing, and every page kind of the site is in it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use conduct_tests::{client, conduct_bin, trace, Server};
use serde_json::{json, Value};
use sha2::Digest;

/// Every file of a tree: relative path -> bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn render(data: &Path, site: &Path, as_of: &str) -> String {
    let out = Command::new(conduct_bin())
        .args(["render", "--as-of", as_of])
        .arg("--data")
        .arg(data)
        .arg("--site")
        .arg(site)
        .env_remove("CONDUCT_CONFIG")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "render failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn two_renders_of_the_same_state_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = Server::start_in(&data, &dir.path().join("live"), &[]);
    let c = client();
    let mut ids = Vec::new();
    for (agent, text) in [
        ("billing-bot", "answer billing questions"),
        ("<b>bold</b> & co", "keep \"quotes\" & <tags> as text"),
        ("zeta", "summarise reports"),
    ] {
        let r = c
            .post(server.at("/vow"))
            .json(&json!({"text": text, "agent": agent, "cadence_hours": 24}))
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        ids.push(
            r.json::<Value>().unwrap()["vow_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    for i in 0..40 {
        let mut body = trace(8 + i % 3);
        body["vow_id"] = json!(ids[0]);
        body["note"] = json!(format!("report {i}"));
        let r = c
            .post(server.at("/vow/report/demo"))
            .header("prefer", "wait=30")
            .json(&body)
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
    }
    // Discovery over HTTP: cards, the lost-door, llms.txt.
    let get = |path: &str, accept: &str| {
        let r = c
            .get(server.at(path))
            .header("accept", accept)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        (status, ct, r.text().unwrap())
    };
    let (s, _, body) = get("/card?key=billing-bot", "application/json");
    let card: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(s, 200);
    assert_eq!(card["found"], true, "{body}");
    assert!(body.contains(&ids[0]));
    let (s, _, body) = get("/card?key=nobody-here", "application/json");
    assert_eq!(s, 200, "an unknown key is a negative result, never a 404");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["found"],
        false
    );
    let (s, ct, _) = get("/card?key=billing-bot&format=txt", "*/*");
    assert_eq!((s, ct.as_str()), (200, "text/plain; charset=utf-8"));
    // A card has an HTML twin, like every page, found or not; the path form answers the same
    // lookup, and an unknown key there is a negative result too, never a 404.
    for path in [
        "/card?key=billing-bot",
        "/card/billing-bot",
        "/card?key=nobody-here",
        "/card/nobody-here",
        "/card/nobody%20here",
    ] {
        let (s, ct, body) = get(path, "text/html,application/xhtml+xml,*/*;q=0.8");
        assert!(
            s == 200 && ct.starts_with("text/html") && body.contains("<main"),
            "{path} as HTML: {s} {ct} {body}"
        );
    }
    let (s, _, body) = get("/card/billing-bot", "application/json");
    assert_eq!(s, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["found"], true);
    let (s, ct, body) = get("/card/nobody-here", "application/json");
    assert_eq!((s, ct.as_str()), (200, "application/json"), "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["found"],
        false
    );
    let (_, _, body) = get("/catalog", "application/json");
    let catalog: Value = serde_json::from_str(&body).unwrap();
    assert!(
        catalog["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["method"] == "GET" && e["path"] == "/card/{key}"),
        "the catalog lists the path form of a card"
    );
    let (s, ct, body) = get("/card", "application/json");
    assert_eq!(s, 400);
    assert_eq!(ct, "application/problem+json");
    assert!(body.contains("?key"), "{body}");
    let (s, _, body) = get("/lost", "application/json");
    let lost: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(s, 200);
    assert_eq!(lost["type"], "conduct.lost/v1");
    for (accept, want) in [("text/plain", "text/plain"), ("text/html", "text/html")] {
        let (s, ct, _) = get("/lost", accept);
        assert!(
            s == 200 && ct.starts_with(want),
            "/lost for {accept}: {s} {ct}"
        );
    }
    let (s, _, text) = get("/llms.txt", "*/*");
    assert!(s == 200 && text.starts_with("# conduct"), "{text}");
    server.terminate();

    let as_of = "2026-11-21T12:00:00Z";
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let first = render(&data, &a, as_of);
    render(&data, &b, as_of);
    let (ta, tb) = (tree(&a), tree(&b));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "the same files"
    );
    // The manifest's root is signed at the wall clock (its freshness, MIRRORS.md), so two
    // renders a second apart differ in its instants; everything it lists must not.
    let listed = |bytes: &[u8]| {
        let mut root: Value = serde_json::from_slice(bytes).unwrap();
        for instant in ["as_of", "expires", "version", "signature"] {
            root.as_object_mut().unwrap().remove(instant);
        }
        root
    };
    let differ: Vec<&String> = ta
        .iter()
        .filter(|(p, b)| match p.as_str() {
            "manifest.json" => listed(&tb[*p]) != listed(b),
            _ => tb[*p] != **b,
        })
        .map(|(p, _)| p)
        .collect();
    assert!(
        differ.is_empty(),
        "these files differ between two renders: {differ:?}"
    );
    assert!(first.contains("3 vows"), "{first}");

    // Every page kind is there.
    let id = &ids[0];
    for path in [
        "index.html".to_owned(),
        "vows.json".into(),
        "vows.html".into(),
        "sitemap.xml".into(),
        "robots.txt".into(),
        "manifest.json".into(),
        format!("vow/{id}.json"),
        format!("vow/{id}.html"),
        format!("vow/{id}/chain.json"),
        format!("vow/{id}/chain.html"),
        format!("vow/{id}/chain/0.json"),
        format!("vow/{id}/reading.json"),
        format!("vow/{id}/reading.html"),
        format!("vow/{id}/feed.atom"),
    ] {
        assert!(ta.contains_key(&path), "{path} missing");
    }
    // User text is escaped in every HTML file.
    for (path, bytes) in ta.iter().filter(|(p, _)| p.ends_with(".html")) {
        let html = String::from_utf8_lossy(bytes);
        assert!(
            !html.contains("<b>bold</b>"),
            "{path} carries raw user HTML"
        );
        assert!(!html.contains("<tags>"), "{path} carries raw user HTML");
    }
    let feed = String::from_utf8_lossy(&ta[&format!("vow/{id}/feed.atom")]).into_owned();
    assert!(feed.contains("<entry>") && feed.contains("report 39"));

    // A render over the identical tree writes nothing; another instant rewrites only the pages
    // that carry it.
    let again = render(&data, &a, as_of);
    assert!(again.contains(" 0 written"), "{again}");
    // A render leaves the clean-stop mark for its tree (conduct_indexer::clean_stop), and the
    // next render over that tree takes it and does not walk the tree for temporaries.
    let root = std::fs::read(a.join("manifest.json")).unwrap();
    assert_eq!(
        std::fs::read_to_string(data.join("site-clean")).unwrap(),
        hex::encode(sha2::Sha256::digest(root))
    );
    let planted = a.join("vow/.conduct-tmp.planted.json.4242-00c0ffee.pub");
    std::fs::write(&planted, b"half a file").unwrap();
    let later = render(&data, &a, "2026-11-22T12:00:00Z");
    assert!(planted.exists(), "a render walked a tree left clean");
    std::fs::remove_file(&planted).unwrap();
    let written: usize = later
        .rsplit(", ")
        .next()
        .and_then(|w| w.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(written > 0 && written < ta.len() / 2, "{later}");
    let after = tree(&a);
    assert_eq!(
        after[&format!("vow/{id}/chain/0.json")],
        ta[&format!("vow/{id}/chain/0.json")],
        "a full chain page never changes"
    );
    // Cards and the lost-door carry no clock: another day, the same bytes.
    let clockless: Vec<&String> = ta
        .keys()
        .filter(|p| p.starts_with("card/") || p.starts_with("lost."))
        .collect();
    assert!(clockless.len() >= 6, "{clockless:?}");
    for p in clockless {
        assert!(after[p] == ta[p], "{p} changed with the clock");
    }
}
