//! conduct-verify stays small: its normal and build dependencies (every feature on) hold no
//! server, async runtime, database or wallet crate. Fails as soon as one creeps in, e.g. through
//! conduct-core's default `wallet` feature (alloy, k256).

use std::collections::BTreeSet;
use std::process::Command;

/// Crates a verifier must not pull in (a name matches itself and `name-*`).
const FORBIDDEN: [&str; 10] = [
    "warp",
    "tokio",
    "hyper",
    "reqwest",
    "rusqlite",
    "libsqlite3-sys",
    "alloy",
    "k256",
    "x402-types",
    "askama",
];

/// The packages `cargo tree` lists for `package` (normal and build edges, all features).
fn tree(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(cargo)
        .args(["tree", "--manifest-path", manifest, "-p", package])
        .args(["-e", "normal,build", "--all-features"])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn forbidden(packages: &BTreeSet<String>) -> Vec<&String> {
    packages
        .iter()
        .filter(|p| {
            FORBIDDEN
                .iter()
                .any(|f| *p == f || p.starts_with(&format!("{f}-")))
        })
        .collect()
}

#[test]
fn no_server_runtime_database_or_wallet_crate() {
    let packages = tree("conduct-verify");
    assert!(packages.contains("conduct-core"), "{packages:?}");
    let found = forbidden(&packages);
    assert!(
        found.is_empty(),
        "conduct-verify depends on {found:?}: verifiers must not"
    );
    // Every feature is on (the HTTP client is in the tree), and the match finds what it must.
    assert!(packages.contains("ureq"), "{packages:?}");
    let server: BTreeSet<String> = ["tokio", "hyper-util", "alloy-primitives", "tokio-rustls"]
        .map(String::from)
        .into();
    assert_eq!(forbidden(&server).len(), 4);
    assert!(forbidden(&["tokioish".to_owned()].into()).is_empty());
}
