//! `conduct serve --state postgres://...` when its database stops answering: the suite's
//! shared PostgreSQL refuses the test's own database (`ALLOW_CONNECTIONS false`, every session
//! of it cut), as a restarting server does, while every other test's database keeps working.
//! A write then gets 503 with `Retry-After` and a problem naming the state, never a 201 or a
//! 500; when the database answers again the service recovers by itself, every write it
//! acknowledged is there, and the log verifies.

use std::process::Command;
use std::time::{Duration, Instant};

use conduct_tests::{client, database, postgres, Server};
use serde_json::{json, Value};

/// Run `sql` on the shared server's own database (never the test's).
fn admin(sql: &str) {
    let (url, bin) = postgres();
    let out = Command::new(bin.join("psql"))
        .args([url.as_str(), "-qX", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn take_vow(c: &reqwest::blocking::Client, s: &Server, n: usize) -> reqwest::blocking::Response {
    c.post(s.at("/vow"))
        .json(&json!({"text": format!("vow {n} kept in a database"), "agent": format!("pg{n}"), "cadence_hours": 24}))
        .send()
        .unwrap()
}

#[test]
fn a_database_that_stops_answering_gets_503_and_the_service_recovers() {
    let name = format!("serve_down_{}", std::process::id());
    let url = database(&name);
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start_in(
        &dir.path().join("data"),
        &dir.path().join("site"),
        &["--state", &url],
    );
    let c = client();
    let mut kept = Vec::new();
    let first = take_vow(&c, &s, 0);
    assert_eq!(first.status(), 201);
    kept.push(
        first.json::<Value>().unwrap()["vow_id"]
            .as_str()
            .unwrap()
            .to_owned(),
    );

    admin(&format!(
        "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false"
    ));
    admin(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
    ));
    for n in 1..4 {
        let r = take_vow(&c, &s, n);
        assert_eq!(r.status(), 503, "vow {n} while the database is down");
        assert!(r.headers().contains_key("retry-after"));
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        let problem: Value = r.json().unwrap();
        assert_eq!(problem["status"], 503, "{problem}");
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .ends_with("store-unavailable"),
            "{problem}"
        );
        assert!(
            !problem.to_string().contains(&url),
            "the database URL is not served"
        );
    }
    // The pages already published are still served from the tree.
    let page = c.get(s.at(&format!("/vow/{}", kept[0]))).send().unwrap();
    assert_eq!(page.status(), 200);

    admin(&format!(
        "ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true"
    ));
    // It recovers by itself: the first write after the database is back is acknowledged.
    let back = Instant::now();
    let deadline = back + Duration::from_secs(30);
    loop {
        let r = take_vow(&c, &s, 10 + kept.len());
        if r.status() == 201 {
            kept.push(
                r.json::<Value>().unwrap()["vow_id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
            break;
        }
        assert_eq!(r.status(), 503, "only 503 until it is back");
        assert!(Instant::now() < deadline, "not recovered in 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "first acknowledged write {} ms after the database was back",
        back.elapsed().as_millis()
    );
    for n in 0..3 {
        let r = take_vow(&c, &s, 100 + n);
        assert_eq!(r.status(), 201);
        kept.push(
            r.json::<Value>().unwrap()["vow_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    // Every acknowledged write is there, and only those: one record a vow.
    for id in &kept {
        let r = c
            .get(s.at(&format!("/vow/{id}")))
            .header("Prefer", "wait=10")
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{id}");
    }
    let cp = c
        .get(s.at("/log/checkpoint"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert_eq!(
        cp.lines().nth(1),
        Some(kept.len().to_string().as_str()),
        "{cp}"
    );
    let vkey = s.vkey();
    s.terminate();
    let out = Command::new(conduct_tests::conduct_bin())
        .arg("verify-log")
        .arg(dir.path().join("site/log"))
        .args(["--pubkey", &vkey])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
