//! What the State suites share: the state a test runs on, chosen by `CONDUCT_TEST_STATE`.

use std::path::Path;

use conduct_indexer::state::State;

/// The state of the test whose data directory is `data`: SQLite there, or its own database on
/// the shared PostgreSQL server, named after `data` (so a reopen, or a child process, finds
/// the same one).
pub fn state(data: &Path) -> State {
    let Ok("postgres") = std::env::var("CONDUCT_TEST_STATE").as_deref() else {
        return State::open(None, data).unwrap();
    };
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run tests/run.sh"))
    };
    let (url, bin) = (var("CONDUCT_TEST_POSTGRES"), var("CONDUCT_TEST_PG_BIN"));
    let name = {
        use std::hash::{Hash as _, Hasher as _};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        data.hash(&mut h);
        format!("state_{:016x}", h.finish())
    };
    let made = std::process::Command::new(format!("{bin}/psql"))
        .args([
            url.as_str(),
            "-qX",
            "-c",
            &format!("CREATE DATABASE {name}"),
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(
        made.status.success() || said.contains("already exists"),
        "{said}"
    );
    let (server, _) = url.rsplit_once('/').unwrap();
    State::open(Some(&format!("{server}/{name}")), data).unwrap()
}
