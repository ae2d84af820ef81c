//! The public site in a real browser: `tests/py/browse.py` drives headless Chromium (Debian
//! `chromium` and `chromium-driver`, installed by `tests/run.sh`) through every page kind of a
//! running `conduct serve`, and keeps full-page screenshots under `tests/artifacts/screenshots`.
//! The service has a quest board (`<data>/quests.json`); a vow sworn with an eth-account
//! wallet claims a quest, so the board and a claimed quest's page are among the pages. At
//! 1280 px it checks what a person sees: the navigation and the home page link the registry,
//! the quest board and the reputation record; the vow page's report-in table fits its column
//! with every note whole; the trajectory chart keeps report-ins sent within one second apart.

use std::path::Path;

use conduct_tests::{run_py, Server};

#[test]
fn every_page_kind_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    std::fs::create_dir_all(&data).expect("data dir");
    let quest = |id: &str, title: &str| {
        serde_json::json!({"id": id, "title": title, "rung": "rung 2: the service improves itself",
            "what": format!("{title}: the work, described"),
            "deliverable": "a pull request against the service", "check": "review"})
    };
    std::fs::write(
        data.join("quests.json"),
        serde_json::to_vec_pretty(&serde_json::json!({"quests": [
            quest("alpha", "Render the board's feed"),
            quest("bravo", "Document the payment check"),
        ]}))
        .expect("quests"),
    )
    .expect("write quests.json");
    let s = Server::start_in(&data, &site, &[]);
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("tests/artifacts/screenshots");
    let (ok, stdout, stderr) = run_py(
        "browse.py",
        &[
            "--base".as_ref(),
            s.url.as_ref(),
            "--artifacts".as_ref(),
            artifacts.as_os_str(),
        ],
    );
    println!("{stdout}");
    assert!(
        ok && stdout.contains(" 0 failed"),
        "browser checks failed (screenshots in {}):\n{stdout}\n{stderr}",
        artifacts.display()
    );
    for must in [
        "40 free report-ins: all 201",
        "/: the browser got 200 text/html",
        "/vows: the HTML-ish agent name is shown as text",
        "/lost: the browser got 200 text/html",
        "/library/METER: exactly one <h1>",
        "/pubkey: the footer states the whole scope statement",
        "/reading: user text is escaped",
        "/chain (phone): full-page screenshot",
        "a sworn vow claimed quest alpha: 201",
        "/munus: the browser got 200 text/html",
        "/munus/alpha: the browser got 200 text/html",
        "/munus/alpha: exactly one <h1>",
        "/munus/alpha: the footer states the whole scope statement",
        "/munus/alpha: the claimed quest names its claimant vow",
        "/munus/alpha (phone): no horizontal scrolling",
        "/registry: the browser got 200 text/html",
        "/reputation: the browser got 200 text/html",
        "/vows: the navigation links the registry, the quest board, the reputation record",
        "/: the home page links the registry, the quest board, the reputation record",
        "the report-in table fits its column at 1280px",
        "every report-in note is shown in full at 1280px (40 notes)",
        "the trajectory chart keeps its 40 report-ins apart at 1280px",
        "no broken links: ",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok:   ") && l.contains(must)),
            "missing check: {must}\n{stdout}"
        );
    }
    for (slug, size) in [
        ("home", "desktop"),
        ("vows", "phone"),
        ("lost", "phone"),
        ("munus", "desktop"),
        ("munus-quest", "phone"),
        ("vow-marked", "desktop"),
        ("registry", "desktop"),
    ] {
        let png = artifacts.join(format!("{slug}-{size}.png"));
        let head = std::fs::read(&png).unwrap_or_default();
        assert!(
            head.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{} is not a PNG screenshot",
            png.display()
        );
    }
}

#[test]
fn browser_checks_fail_on_a_broken_page() {
    let (ok, stdout, stderr) = run_py("browse.py", &["--self-test".as_ref()]);
    println!("{stdout}");
    assert!(
        ok && stdout.contains(" 0 failed") && stdout.contains("self-test: 'no broken links' fails"),
        "a browser check passed on a deliberately broken page:\n{stdout}\n{stderr}"
    );
}
