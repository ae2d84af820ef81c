//! `conduct dev`: one command starts anvil, deploys the contracts, configures both rails, funds
//! test wallets and prints a ready-to-run paid request; the printed request, run with the stock
//! npm x402 client, pays on each rail.

use std::process::Command;
use std::time::{Duration, Instant};

use conduct_tests::{client, trace, Server};
use serde_json::{json, Value};

#[test]
fn dev_stack_is_payable_on_both_rails_with_the_printed_request() {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_cmd(
        "dev",
        &dir.path().join("data"),
        &dir.path().join("site"),
        &["--anvil", &anvil],
    );
    // The banner follows the listening line.
    let deadline = Instant::now() + Duration::from_secs(30);
    let banner = loop {
        let out = s.output.lock().unwrap().clone();
        if out.contains("RAIL=permit2") {
            break out;
        }
        assert!(Instant::now() < deadline, "no dev banner:\n{out}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let token = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("TestUSD"))
        .and_then(|r| r.split_whitespace().next())
        .expect("TestUSD line")
        .to_owned();
    let payer_key = banner
        .lines()
        .find_map(|l| l.split("PAYER_KEY=").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .expect("PAYER_KEY in the printed request")
        .to_owned();
    assert!(
        banner.contains("node contracts/clients/pay-fetch.mjs"),
        "{banner}"
    );

    let health: Value = client()
        .get(s.at("/health"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let rails = health["rails"].as_array().unwrap();
    assert_eq!(rails.len(), 2, "{health}");
    assert!(rails.iter().all(|r| r["up"] == true), "{health}");

    // The dev chain's registry lists the sample tool, its manifest served by the dev stack
    // over HTTPS and verified.
    assert!(banner.contains("registry"), "{banner}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reg: Value = client()
            .get(s.at("/registry"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        let status = reg["tools"][0]["verification"]["status"].clone();
        if status == "verified" {
            assert_eq!(reg["tools"][0]["claims"]["name"], "conduct sample tool");
            assert_eq!(reg["reachable"], true);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the sample tool never verified: {reg:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The reputation record: deployed, our code, the threshold set, the sample credit mirrored
    // and agreeing with a live read.
    assert!(banner.contains("/reputation"), "{banner}");
    let payer = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("payer        "))
        .and_then(|r| r.split_whitespace().next())
        .expect("a payer line")
        .to_ascii_lowercase();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rep: Value = client()
            .get(s.at("/reputation"))
            .header("accept", "application/json")
            .send()
            .unwrap()
            .json()
            .unwrap();
        let score: Value = client()
            .get(s.at(&format!("/reputation/{payer}")))
            .send()
            .unwrap()
            .json()
            .unwrap();
        if rep["status"] == "live" && score["verified"] == true {
            assert_eq!(
                (&rep["deployed"], &rep["verified"], &rep["threshold"]),
                (&json!(true), &json!(true), &json!("10")),
                "{rep:#}"
            );
            assert_eq!(
                (&score["score"], &score["meets"]),
                (&json!("12"), &json!(true)),
                "{score:#}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reputation record never went live: {rep:#} {score:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The quest board carries conduct dev's sample quest.
    assert!(banner.contains("/munus"), "{banner}");
    let board: Value = client()
        .get(s.at("/munus"))
        .header("accept", "application/json")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(board["quests"][0]["id"], "sample-quest", "{board:#}");
    assert_eq!(board["claims_file_error"], Value::Null, "{board:#}");

    // The ticket contract and the validation registry: /prepare names every contract, and
    // game 1 is open at its TestUSD price, read live; the approve is on TestUSD.
    assert!(banner.contains("/ticket/1/prepare"), "{banner}");
    let index: Value = client()
        .get(s.at("/prepare"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    for a in index["actions"].as_array().unwrap() {
        assert!(a["contract"]["address"].is_string(), "{a:#}");
    }
    let buy: Value = client()
        .get(s.at(&format!("/ticket/1/prepare?from={payer}")))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let pre = |what: &str| {
        buy["preconditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["what"] == what)
            .cloned()
            .unwrap_or_else(|| panic!("no {what}: {buy:#}"))
    };
    assert_eq!(pre("game open")["status"], "ok", "{buy:#}");
    assert_eq!(pre("price per copy")["value"], "2000000", "{buy:#}");
    assert_eq!(
        buy["txs"][0]["to"].as_str().map(str::to_ascii_lowercase),
        Some(token.to_ascii_lowercase()),
        "{buy:#}"
    );

    let pay =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts/clients/pay-fetch.mjs");
    for (i, rail) in ["eip3009", "permit2"].into_iter().enumerate() {
        let out = Command::new("node")
            .arg(&pay)
            .env("URL", s.at("/profile"))
            .env("PAYER_KEY", &payer_key)
            .env("TOKEN", &token)
            .env("RAIL", rail)
            .env("BODY", serde_json::to_string(&trace(30 + i)).unwrap())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value =
            serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap_or_else(|e| {
                panic!(
                    "{rail}: {e}: {stdout} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        assert_eq!(v["status"], 200, "{rail}: {v}");
        assert_eq!(v["paymentResponse"]["success"], true, "{rail}: {v}");
        let att: Value = serde_json::from_str(v["body"].as_str().unwrap()).unwrap();
        assert!(att["signature"].is_string(), "{rail}: unsigned body");
    }

    // The banner's audit commands name this stack's own tree, and pass as printed.
    let vkey = s.vkey();
    for cmd in ["verify-log", "verify-site"] {
        let line = banner
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(&format!("conduct {cmd} ")))
            .unwrap_or_else(|| panic!("no `conduct {cmd}` in the banner:\n{banner}"));
        let args: Vec<&str> = line
            .split_whitespace()
            .skip(1)
            .take_while(|a| *a != "--pubkey")
            .collect();
        assert!(
            args[1].starts_with(&*s.site.to_string_lossy()),
            "{cmd} names another tree: {line}"
        );
        let out = Command::new(conduct_tests::conduct_bin())
            .args(&args)
            .args(["--pubkey", &vkey])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{line}: {stdout}");
    }
}
