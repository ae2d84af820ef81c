//! The client kits' own suites against a live `conduct dev` stack: `clients/python` (pytest,
//! in the venv the test command installs the kit into) and `clients/js` (node's test runner).
//! One stack serves both, run at once; each suite pays from its own funded wallet. A suite reads the stack
//! from its environment (see `clients/python/README.md`, `clients/js/README.md`):
//!
//! | variable | what |
//! |---|---|
//! | `CONDUCT_URL` | the service's base URL |
//! | `CONDUCT_VKEY` | its C2SP vkey, as `GET /pubkey` serves it (the pin) |
//! | `CONDUCT_SITE` | its rendered tree on disk (manifest, log, documents) |
//! | `CONDUCT_RPC` | the anvil RPC URL (chain id 31337) |
//! | `CONDUCT_TOKEN` | the TestUSD address both rails take |
//! | `CONDUCT_PAYER_KEY` | a funded payer's private key (Permit2 approved) |

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use conduct_tests::Server;

/// What a suite is told about the stack.
struct Stack {
    url: String,
    vkey: String,
    site: PathBuf,
    rpc: String,
    token: String,
    payer_keys: Vec<String>,
}

/// Start `conduct dev` in `dir` and read the stack from its banner.
fn start(dir: &Path) -> (Server, Stack) {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let server = Server::start_cmd(
        "dev",
        &dir.join("data"),
        &dir.join("site"),
        &["--anvil", &anvil],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let banner = loop {
        let out = server.output.lock().expect("output").clone();
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
        .unwrap_or_else(|| panic!("no TestUSD line in the banner:\n{banner}"))
        .to_owned();
    let rpc = banner
        .lines()
        .find_map(|l| l.trim().strip_prefix("chain"))
        .and_then(|r| r.split(" at ").nth(1))
        .map(|r| r.trim().to_owned())
        .unwrap_or_else(|| panic!("no chain line in the banner:\n{banner}"));
    let payer_keys: Vec<String> = banner
        .lines()
        .filter_map(|l| l.trim().strip_prefix("payer"))
        .filter_map(|r| r.split(" key ").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    assert!(payer_keys.len() >= 2, "two payers expected:\n{banner}");
    let stack = Stack {
        url: server.url.clone(),
        vkey: server.vkey(),
        site: server.site.clone(),
        rpc,
        token,
        payer_keys,
    };
    (server, stack)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf()
}

/// Run one kit's suite (`program args` in `dir`) against the stack with payer `payer`; its
/// failure, with everything it printed.
fn run_suite(
    stack: &Stack,
    program: &Path,
    args: &[&str],
    dir: &Path,
    payer: usize,
) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CONDUCT_URL", &stack.url)
        .env("CONDUCT_VKEY", &stack.vkey)
        .env("CONDUCT_SITE", &stack.site)
        .env("CONDUCT_RPC", &stack.rpc)
        .env("CONDUCT_TOKEN", &stack.token)
        .env("CONDUCT_PAYER_KEY", &stack.payer_keys[payer])
        .output()
        .map_err(|e| format!("run {}: {e}", program.display()))?;
    let text = format!(
        "{} {args:?} ({}):\n{}\n{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// Both suites at once against one stack, which is stopped (with its anvil) when they end.
#[test]
fn the_python_and_the_typescript_kit_suites_pass_against_the_dev_stack() {
    let python = std::env::var("CONDUCT_TEST_PYTHON_KIT").expect(
        "CONDUCT_TEST_PYTHON_KIT is not set: run the project's test command (tests/run.sh), \
         which installs clients/python into its own venv",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, stack) = start(dir.path());
    let (py, js) = std::thread::scope(|s| {
        let py = s.spawn(|| {
            run_suite(
                &stack,
                Path::new(&python),
                &["-m", "pytest", "-q", "tests"],
                &repo().join("clients/python"),
                0,
            )
        });
        let js = s.spawn(|| {
            run_suite(
                &stack,
                Path::new("node"),
                &["--test", "test/"],
                &repo().join("clients/js"),
                1,
            )
        });
        (
            py.join().expect("the Python suite's thread"),
            js.join().expect("the TypeScript suite's thread"),
        )
    });
    server.terminate();
    let mut failed = Vec::new();
    for r in [py, js] {
        match r {
            Ok(text) => eprintln!("{text}"),
            Err(text) => failed.push(text),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
