//! Every owner message crossed (issue 16, "Done means"): on a `conduct dev` stack, each
//! message's eth-account signature is accepted for its own action and refused by every other
//! endpoint (tests/py/owner_cross.py; 8 x 8 checks), and GET /prepare/sign lists them all and
//! names the listing as no message (a transaction: GET /prepare/register_tool).

use std::time::{Duration, Instant};

use conduct_tests::{run_py, Server};

#[test]
fn each_owner_signature_is_accepted_for_its_own_action_and_refused_for_every_other() {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_cmd(
        "dev",
        &dir.path().join("data"),
        &dir.path().join("site"),
        &["--anvil", &anvil],
    );
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
    let base = s.at("");
    let (ok, out, err) = run_py(
        "owner_cross.py",
        &[std::ffi::OsStr::new(&base), std::ffi::OsStr::new(&token)],
    );
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("0 failed"), "{out}");
    // 2 setup checks, the listing named as no message, 8 texts, 8 x 7 refusals, 8
    // acceptances, a stranger's signature.
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        76,
        "{out}"
    );
}
