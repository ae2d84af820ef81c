//! Nostr identity end to end (issue 15 part 3, library/NOSTR.md), judged by independent
//! libraries: `conduct serve` runs; `contracts/clients/nostr-client.mjs` (npm nostr-tools,
//! @noble/curves and viem, pinned in contracts/package-lock.json) verifies `/hive/profile`
//! (NIP-01 id, BIP-340 signature, kind 0, its picture an SVG), takes a signed vow with a viem
//! wallet, generates an npub with nostr-tools, tries every refusal, binds, and reads the npub's
//! card and `/who`. This test checks what the client saw, then: verify-log over the site
//! passes and counts the binding, verify-site passes (the profile checked as a Nostr event),
//! the key file is 0600 and its secret is in no byte of the site nor of the service's output,
//! and a restart serves the same profile bytes and still resolves the npub.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conduct_tests::{client, Server};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn contracts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts")
}

/// Run the node client against `url`: its one-line JSON report.
fn node_report(url: &str) -> Value {
    let out = Command::new("node")
        .arg(contracts().join("clients/nostr-client.mjs"))
        .arg(url)
        .output()
        .expect("run node (tests/run.sh installs the pinned npm tools)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "nostr-client.mjs failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().last().expect("a report line");
    serde_json::from_str(line).expect("the report is JSON")
}

/// Wait (bounded) until the served manifest lists each of `paths` with its bytes on disk.
fn wait_for_manifest(s: &Server, paths: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // Each path's entry, found through the manifest's bins.
        let settled = paths.iter().all(|p| {
            std::fs::read(s.site.join(p)).is_ok_and(|b| {
                s.manifest_entry(p)
                    .is_some_and(|e| e["sha256"].as_str() == Some(&hex::encode(Sha256::digest(&b))))
            })
        });
        if settled {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the manifest did not come to cover {paths:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p, b));
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn refusal(r: &Value, name: &str, status: u64, ty: &str, pointer: Option<&str>) {
    let got = &r["refusals"][name];
    assert_eq!(got["status"], status, "{name}: {got}");
    assert_eq!(got["type"], ty, "{name}: {got}");
    if let Some(p) = pointer {
        assert_eq!(got["pointer"], p, "{name}: {got}");
    }
}

#[test]
fn the_profile_and_a_binding_verify_with_nostr_tools_and_each_refusal_has_its_type() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let stderr = Arc::new(Mutex::new(String::new()));
    // A fixed public URL: the profile names it, so a restart on another port keeps its bytes.
    let url = ["--public-url", "https://conduct.test"];
    let mut s = Server::start_env("serve", &data, &site, &url, &[], Some(stderr.clone()));
    let r = node_report(&s.url);

    // /hive/profile: exactly a NIP-01 kind-0 event that nostr-tools verifies (and a tampered
    // copy does not), signed by the key in the data directory; its picture is an SVG.
    let p = &r["profile"];
    assert_eq!(p["status"], 200, "{p}");
    assert_eq!(p["content_type"], "application/json");
    assert_eq!(p["verified"], true, "{p}");
    assert_eq!(p["tampered_verified"], false);
    assert_eq!(p["kind"], 0);
    let members: Vec<&str> = [
        "content",
        "created_at",
        "id",
        "kind",
        "pubkey",
        "sig",
        "tags",
    ]
    .into();
    assert_eq!(p["members"], serde_json::json!(members));
    assert_eq!(p["name"], "conduct");
    // The scope travels inside the signed content (NOSTR.md).
    let raw: Value = serde_json::from_str(p["raw"].as_str().expect("raw")).expect("the event");
    let content: Value =
        serde_json::from_str(raw["content"].as_str().expect("content")).expect("its content");
    assert_eq!(
        content["scope"],
        conduct_core::scope::scope_value(),
        "{content}"
    );
    let picture = p["picture"].as_str().expect("picture");
    assert!(picture.ends_with("/hive/mark.svg"), "{picture}");
    assert_eq!(r["picture"]["status"], 200);
    assert_eq!(r["picture"]["type"], "image/svg+xml");
    assert_eq!(r["picture"]["svg"], true);
    let key_file = data.join("keys/nostr.secp256k1");
    let secret_hex = std::fs::read_to_string(&key_file).expect("the Nostr key file");
    let secret_hex = secret_hex.trim().to_owned();
    let secret: [u8; 32] = hex::decode(&secret_hex)
        .expect("hex")
        .try_into()
        .expect("32");
    let public = conduct_core::nostr::public_key(&secret).expect("a key");
    assert_eq!(p["pubkey"], hex::encode(public));
    assert_eq!(p["npub"], conduct_core::nostr::npub_encode(&public));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A signed vow (viem) and a sandbox vow.
    assert_eq!(r["vow"]["status"], 201, "{}", r["vow"]);
    assert_eq!(r["vow"]["sandbox"], false);
    assert_eq!(r["sandbox_vow"]["sandbox"], true);
    let vow_id = r["vow"]["vow_id"].as_str().expect("vow id").to_owned();
    let npub = r["npub"].as_str().expect("npub").to_owned();
    let text = r["message"]["text"].as_str().expect("text");
    assert_eq!(r["message"]["status"], 200);
    assert!(text.starts_with("conduct: bind a Nostr key\n"), "{text}");
    assert!(text.contains(&format!(
        "\nAction: bind_npub\nVow: {vow_id}\nNpub: {npub}\nDate (UTC): "
    )));

    // Every refusal, with its type, before and after the binding.
    refusal(
        &r,
        "nostr_missing",
        403,
        "nostr-bind-nostr-signature",
        Some("/nostr_signature"),
    );
    refusal(
        &r,
        "nostr_wrong",
        403,
        "nostr-bind-nostr-signature",
        Some("/nostr_signature"),
    );
    refusal(
        &r,
        "wallet_missing",
        403,
        "nostr-bind-wallet-signature",
        Some("/wallet_signature"),
    );
    refusal(
        &r,
        "wallet_wrong",
        403,
        "nostr-bind-wallet-signature",
        Some("/wallet_signature"),
    );
    refusal(
        &r,
        "sandbox",
        403,
        "nostr-bind-sandbox-vow",
        Some("/vow_id"),
    );
    refusal(&r, "replay", 409, "nostr-bind-replayed", None);
    refusal(&r, "unknown_member", 422, "invalid", Some("/extra"));
    refusal(&r, "bad_npub", 422, "invalid", Some("/npub"));
    refusal(&r, "not_json", 400, "malformed", None);
    assert_eq!(r["refusals"]["message_bad_npub"]["status"], 422);
    assert_eq!(r["refusals"]["message_unknown_vow"]["status"], 404);

    // The binding: 201, the signed record, whose two signatures the independent libraries check.
    let b = &r["bind"];
    assert_eq!(b["status"], 201, "{b}");
    assert_eq!(b["location"], format!("/card?key={npub}"));
    assert_eq!(b["nostr_ok"], true);
    assert_eq!(b["wallet_ok"], true);
    let rec = &b["record"];
    assert_eq!(rec["type"], "conduct.npub-binding/v1");
    assert_eq!(rec["vow_id"], vow_id.as_str());
    assert_eq!(rec["npub"], npub.as_str());
    assert_eq!(rec["wallet"], r["vow"]["wallet"]);
    let origin = rec["origin"].as_str().expect("origin");
    assert!(text.contains(&format!("\nOrigin: {origin}\n")), "{text}");
    let pinned = conduct_core::signing::PinnedKey::parse(&s.vkey()).expect("vkey");
    conduct_core::signing::verify_object(rec, &pinned).expect("the service signed the record");

    // From then on the npub names the vow: /card and /who (an npub in capitals is the same).
    let card = &r["card"]["doc"];
    assert_eq!(card["found"], true, "{card}");
    assert_eq!(card["vows"][0]["vow_id"], vow_id.as_str());
    assert_eq!(card["vows"][0]["matched_as"], serde_json::json!(["npub"]));
    assert_eq!(card["binding"]["log_index"], rec["log_index"]);
    assert_eq!(r["card_upper_found"], true);
    let who = &r["who"]["doc"];
    assert_eq!(who["found"], true, "{who}");
    assert_eq!(who["vows"][0]["vow_id"], vow_id.as_str());
    let unbound = &r["unbound_card"];
    assert_eq!(unbound["found"], false);
    assert!(
        unbound["npub"]
            .as_str()
            .expect("note")
            .contains("not bound"),
        "{unbound}"
    );
    assert_eq!(r["mark"]["status"], 200);
    assert_eq!(r["mark"]["type"], "image/svg+xml");
    assert_eq!(r["vow_page_mark"], format!("/vow/{vow_id}/mark.svg"));

    // verify-log passes over the site's log and counts the binding; verify-site passes.
    let vkey = s.vkey();
    let audit = conduct_verify::verify_log_at(s.site.join("log").to_str().expect("utf-8"), &vkey)
        .expect("verify-log");
    assert_eq!(audit.bindings, 1, "{audit}");
    assert!(
        audit.to_string().contains("1 npub bindings verified"),
        "{audit}"
    );
    let out = Command::new(conduct_tests::conduct_bin())
        .args(["verify-log", "--pubkey", &vkey])
        .arg(s.site.join("log"))
        .output()
        .expect("conduct verify-log");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("1 npub bindings verified"),
        "{said}"
    );
    let card_path = format!("card/{npub}.json");
    let settle = vec![
        card_path.clone(),
        format!("who/{npub}.json"),
        format!("vow/{vow_id}.json"),
        "hive/profile.json".to_owned(),
        "hive/mark.svg".to_owned(),
        format!("vow/{vow_id}/mark.svg"),
    ];
    wait_for_manifest(&s, &settle);
    let profile_bytes = std::fs::read(s.site.join("hive/profile.json")).expect("profile");
    assert_eq!(
        String::from_utf8_lossy(&profile_bytes),
        p["raw"].as_str().expect("raw"),
        "the file is what was served"
    );
    s.terminate();
    // A manifest write cut by the shutdown can leave its temporary, which the next start
    // sweeps; sweep it as that start would, then check the copy as a mirror would.
    conduct_indexer::durable::sweep_temporaries(&site).expect("sweep");
    conduct_verify::verify_site_at(s.site.to_str().expect("utf-8"), &vkey).expect("verify-site");

    // The secret is in no byte of the site, nor of what the service printed.
    let lower = secret_hex.to_ascii_lowercase();
    let upper = secret_hex.to_ascii_uppercase();
    for (path, bytes) in files_under(&site) {
        assert!(
            !contains(&bytes, lower.as_bytes()) && !contains(&bytes, upper.as_bytes()),
            "the Nostr secret is in {}",
            path.display()
        );
    }
    let read = |m: &Mutex<String>| m.lock().map(|g| g.clone()).unwrap_or_default();
    let printed = format!("{}{}", read(&s.output), read(&stderr));
    assert!(printed.contains("generated a new Nostr key"), "{printed}");
    assert!(!printed.contains(&lower) && !printed.contains(&upper));

    // A restart serves the same profile, byte for byte, and still resolves the npub.
    let mut s2 = Server::start_in(&data, &site, &url).await_caught_up();
    let again = client()
        .get(s2.at("/hive/profile"))
        .send()
        .expect("GET /hive/profile")
        .bytes()
        .expect("bytes");
    assert!(
        again.as_ref() == profile_bytes.as_slice(),
        "a restart changed the profile"
    );
    let card: Value = client()
        .get(s2.at(&format!("/card?key={npub}&format=json")))
        .send()
        .expect("GET /card")
        .json()
        .expect("JSON");
    assert_eq!(card["vows"][0]["vow_id"], vow_id.as_str());
    // The mark is shown on the vow's page and on the npub's /who page.
    let img = format!("<img class=\"mark\" src=\"/vow/{vow_id}/mark.svg\"");
    for path in [
        format!("/vow/{vow_id}?format=html"),
        format!("/who?handle={npub}&format=html"),
    ] {
        let html = client()
            .get(s2.at(&path))
            .send()
            .expect("GET the page")
            .text()
            .expect("HTML");
        assert!(html.contains(&img), "{path}: {html}");
    }

    // Another public URL is another content: a new, later created_at, signed by the same key.
    s2.terminate();
    let s3 = Server::start_in(&data, &site, &["--public-url", "https://elsewhere.test"]);
    let moved: Value = client()
        .get(s3.at("/hive/profile"))
        .send()
        .expect("GET /hive/profile")
        .json()
        .expect("JSON");
    let ev: conduct_core::nostr::Event = serde_json::from_value(moved).expect("an event");
    ev.verify().expect("verifies");
    assert_eq!(ev.pubkey, hex::encode(public));
    assert!(ev.created_at > p["created_at"].as_u64().expect("created_at"));
    assert!(ev.content.contains("https://elsewhere.test/hive/mark.svg"));
}
