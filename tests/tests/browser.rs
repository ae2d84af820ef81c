//! The public site in a real browser: `tests/py/browse.py` drives headless Chromium (Debian
//! `chromium` and `chromium-driver`, installed by `tests/run.sh`) through every page kind of a
//! running `conduct serve`, and keeps full-page screenshots under `tests/artifacts/screenshots`.

use std::path::Path;

use conduct_tests::{run_py, Server};

#[test]
fn every_page_kind_in_headless_chromium() {
    let s = Server::start(&[]);
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
        "no broken links: ",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok:   ") && l.contains(must)),
            "missing check: {must}\n{stdout}"
        );
    }
    for (slug, size) in [("home", "desktop"), ("vows", "phone"), ("lost", "phone")] {
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
