//! End-to-end test support: spawn the real `conduct` binary on a free loopback port with its
//! own data and site directories, talk to it over HTTP, and stop it with SIGTERM.
//!
//! The binary is found beside the test executable (`target/<profile>/conduct`) or at
//! `$CONDUCT_BIN`; the project's test command builds it first. Third-party clients (Python
//! verifiers) come from the venv the test command creates, at `$CONDUCT_TEST_PYTHON`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Path of the `conduct` binary under test.
pub fn conduct_bin() -> PathBuf {
    if let Ok(p) = std::env::var("CONDUCT_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/<profile>/conduct
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("conduct");
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build --bin conduct) or set CONDUCT_BIN",
        bin.display()
    );
    bin
}

/// The Python with the pinned third-party clients installed.
pub fn python() -> PathBuf {
    let p = std::env::var("CONDUCT_TEST_PYTHON").expect(
        "CONDUCT_TEST_PYTHON is not set: run the project's test command (tests/run.sh), which \
         installs the pinned Python clients",
    );
    PathBuf::from(p)
}

/// The suite's shared PostgreSQL (started by `tests/servers.sh`): its URL, and the directory
/// of its binaries (`psql`, `pg_ctl`, ...).
pub fn postgres() -> (String, PathBuf) {
    (
        server_var("CONDUCT_TEST_POSTGRES"),
        PathBuf::from(server_var("CONDUCT_TEST_PG_BIN")),
    )
}

/// Run one statement on the shared PostgreSQL's admin database; its error text, if it failed.
fn psql(sql: &str) -> Result<(), String> {
    let (url, bin) = postgres();
    let out = Command::new(bin.join("psql"))
        .args([url.as_str(), "-qX", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("run psql");
    out.status
        .success()
        .then_some(())
        .ok_or_else(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The URL of the database `name` on the shared PostgreSQL.
fn database_url(name: &str) -> String {
    let (url, _) = postgres();
    let (server, _) = url.rsplit_once('/').expect("a database URL");
    format!("{server}/{name}")
}

/// A new, empty database `name` on the shared PostgreSQL (dropped first when an earlier run
/// left it): its URL.
pub fn database(name: &str) -> String {
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        psql(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    database_url(name)
}

/// Everything the database at `url` holds, as `pg_dump` writes it (schema and every row).
pub fn dump_database(url: &str) -> Vec<u8> {
    let (_, bin) = postgres();
    let out = Command::new(bin.join("pg_dump"))
        .args(["--no-owner", url])
        .output()
        .expect("run pg_dump");
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The `--state` a server on `data` is started with when the suite runs its State suites on
/// PostgreSQL (`CONDUCT_TEST_STATE=postgres`) and the test names none itself: a database of
/// its own on the shared server, named after `data`, so a restart on the same data directory
/// finds the same one. `None` otherwise (SQLite in `data`).
fn state_for(data: &Path, extra: &[&str]) -> Option<String> {
    let Ok("postgres") = std::env::var("CONDUCT_TEST_STATE").as_deref() else {
        return None;
    };
    if extra.contains(&"--state") {
        return None;
    }
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    let name = format!("serve_{:016x}", h.finish());
    // Created once; a restart on the same data directory finds it.
    if let Err(said) = psql(&format!("CREATE DATABASE {name}")) {
        assert!(said.contains("already exists"), "{said}");
    }
    Some(database_url(&name))
}

/// A variable `tests/servers.sh` exports about the shared servers.
fn server_var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the project's test command (tests/run.sh), which starts the \
             shared PostgreSQL and bucket servers"
        )
    })
}

/// The suite's shared S3-compatible bucket server (s3s-fs, started by `tests/servers.sh`).
#[derive(Debug, Clone)]
pub struct Bucket {
    /// `http://127.0.0.1:<port>` (path-style requests, plain HTTP).
    pub endpoint: String,
    /// A bucket that exists there.
    pub bucket: String,
    /// Its access key.
    pub access_key: String,
    /// Its secret key.
    pub secret_key: String,
}

impl Bucket {
    /// The shared bucket server of this run.
    pub fn shared() -> Bucket {
        Bucket {
            endpoint: server_var("CONDUCT_TEST_S3_ENDPOINT"),
            bucket: server_var("CONDUCT_TEST_S3_BUCKET"),
            access_key: server_var("CONDUCT_TEST_S3_ACCESS_KEY"),
            secret_key: server_var("CONDUCT_TEST_S3_SECRET_KEY"),
        }
    }

    /// The standard AWS environment that points a process at this bucket server.
    pub fn aws_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", self.access_key.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_key.clone()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }
}

/// An s3s-fs bucket server of a test's own on `port` (the shared one must keep running), with
/// one bucket, `conduct-test`, under `root`: with the shared server's keys when `signed`, or
/// without any (it then answers unsigned requests only: a public-read bucket, which a client
/// writes to with `AWS_SKIP_SIGNATURE=true`). Answering once this returns.
pub fn own_bucket_server(root: &Path, port: u16, signed: bool) -> Child {
    let bin = server_var("CONDUCT_TEST_S3S_BIN");
    std::fs::create_dir_all(root.join("conduct-test")).expect("the bucket's directory");
    let mut cmd = Command::new(bin);
    cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
    if signed {
        let shared = Bucket::shared();
        cmd.args(["--access-key", &shared.access_key])
            .args(["--secret-key", &shared.secret_key]);
    }
    let child = cmd
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start s3s-fs");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "s3s-fs did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Directory of the Python test scripts.
pub fn py_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("py")
}

/// Run `tests/py/<script>` with the venv's Python and `args`; returns (success, stdout, stderr).
pub fn run_py(script: &str, args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(python())
        .arg(py_dir().join(script))
        .args(args)
        .output()
        .expect("run python");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run `tests/py/<script>`, a chain end-to-end script, on its own anvil (`ANVIL_BIN`) with the
/// `conduct` under test, the TestUSD artifact and a fresh work directory; panics with
/// everything it printed, labelled `what`, unless it succeeds. Returns its standard output.
pub fn run_chain_script(script: &str, what: &str) -> String {
    let anvil = std::env::var("ANVIL_BIN")
        .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
    let dir = tempfile::tempdir().expect("tempdir");
    let artifact = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts/out/TestUSD.json");
    let out = Command::new(python())
        .arg(py_dir().join(script))
        .args(["--anvil", &anvil])
        .arg("--conduct")
        .arg(conduct_bin())
        .arg("--artifact")
        .arg(&artifact)
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Assert that a script's output reports each of `checks` as passed (`ok:   <check>`).
pub fn assert_checks_passed(stdout: &str, checks: &[&str]) {
    for must in checks {
        assert!(
            stdout.contains(&format!("ok:   {must}")),
            "missing check: {must}\n{stdout}"
        );
    }
}

/// A running `conduct serve` (or `conduct dev`).
pub struct Server {
    child: Option<Child>,
    /// Everything the process printed on stdout after its listening line.
    pub output: std::sync::Arc<std::sync::Mutex<String>>,
    /// Base URL, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    /// Data directory.
    pub data: PathBuf,
    /// Site directory.
    pub site: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Start with fresh directories and extra arguments.
    pub fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        let site = dir.path().join("site");
        let mut s = Server::start_in(&data, &site, extra);
        s._dir = Some(dir);
        s
    }

    /// Start on given directories.
    pub fn start_in(data: &Path, site: &Path, extra: &[&str]) -> Server {
        Server::start_cmd("serve", data, site, extra)
    }

    /// Start `conduct <cmd>` on given directories.
    pub fn start_cmd(cmd: &str, data: &Path, site: &Path, extra: &[&str]) -> Server {
        Server::start_env(cmd, data, site, extra, &[], None)
    }

    /// Start `conduct <cmd>` with these environment variables set, keeping its stderr in
    /// `stderr` when one is given (else it is inherited).
    pub fn start_env(
        cmd: &str,
        data: &Path,
        site: &Path,
        extra: &[&str],
        envs: &[(&str, &str)],
        stderr: Option<std::sync::Arc<std::sync::Mutex<String>>>,
    ) -> Server {
        let state = state_for(data, extra);
        let mut child = Command::new(conduct_bin())
            .arg(cmd)
            .args(["--listen", "127.0.0.1:0"])
            .arg("--data")
            .arg(data)
            .arg("--site")
            .arg(site)
            .args(extra)
            .args(state.iter().flat_map(|url| ["--state", url.as_str()]))
            .env_remove("CONDUCT_CONFIG")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(if stderr.is_some() {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("spawn conduct");
        if let (Some(keep), Some(pipe)) = (stderr, child.stderr.take()) {
            std::thread::spawn(move || {
                let mut lines = BufReader::new(pipe);
                let mut line = String::new();
                while lines.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    if let Ok(mut k) = keep.lock() {
                        k.push_str(&line);
                    }
                    line.clear();
                }
            });
        }
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            line.clear();
            let n = reader.read_line(&mut line).expect("read stdout");
            assert!(n > 0, "conduct exited before listening");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().expect("url").to_owned();
            }
            assert!(Instant::now() < deadline, "conduct did not start");
        };
        // Keep draining stdout (so the child never blocks on a full pipe), keeping it.
        let output = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let out2 = output.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                if let Ok(mut o) = out2.lock() {
                    o.push_str(&line);
                }
                line.clear();
            }
        });
        Server {
            child: Some(child),
            output,
            url,
            data: data.to_path_buf(),
            site: site.to_path_buf(),
            _dir: None,
        }
    }

    /// Wait (bounded) until a restarted service's site has caught up with its state
    /// (`/health` no longer says `catching-up`), so a test reads current files. Returns
    /// `self` for chaining after a start.
    pub fn await_caught_up(self) -> Self {
        let c = client();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let state = c
                .get(self.at("/health"))
                .send()
                .ok()
                .and_then(|r| r.json::<serde_json::Value>().ok())
                .map(|h| h["site"]["state"].as_str().unwrap_or("").to_owned());
            if state.as_deref().is_some_and(|s| s != "catching-up") {
                return self;
            }
            assert!(
                Instant::now() < deadline,
                "the site did not catch up: {state:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The service's C2SP vkey, as `GET /pubkey` serves it.
    pub fn vkey(&self) -> String {
        client()
            .get(self.at("/pubkey"))
            .send()
            .expect("GET /pubkey")
            .json::<serde_json::Value>()
            .expect("pubkey JSON")["vkey"]
            .as_str()
            .expect("vkey")
            .to_owned()
    }

    /// Full URL of a path.
    pub fn at(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    /// What the served manifest says of `path`, found through its bins ([`manifest_entry`]).
    pub fn manifest_entry(&self, path: &str) -> Option<serde_json::Value> {
        let c = client();
        manifest_entry(
            |p| {
                let r = c.get(self.at(&format!("/{p}"))).send().ok()?;
                r.status()
                    .is_success()
                    .then(|| r.bytes().ok())?
                    .map(|b| b.to_vec())
            },
            path,
        )
    }

    /// The metrics address the service printed (`conduct metrics on http://.../metrics`).
    pub fn metrics_url(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = self.output.lock().unwrap().clone();
            if let Some(rest) = out.split("conduct metrics on ").nth(1) {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
            assert!(Instant::now() < deadline, "no metrics line: {out}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The value of the sample `series` (its name and labels, as written) on `/metrics`,
    /// `None` when it is not shown.
    pub fn metric(&self, series: &str) -> Option<f64> {
        let text = client()
            .get(self.metrics_url())
            .send()
            .and_then(|r| r.text())
            .expect("GET /metrics");
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// Kill the process with SIGKILL (no chance to clean up) and reap it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Send SIGTERM and wait for exit (SIGKILL after 30 s: a stop waits for the sequencer,
    /// then up to 8 s for the live site's last writes, `api/src/cmd/serve.rs` `STOP_WAIT`,
    /// which a debug build on a loaded machine can need in full).
    pub fn terminate(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                return Some(st);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// What a manifest says of `path` (its `{"len", "sha256"}` entry), found from the root down
/// through the bin whose prefix its key starts with (library/MIRRORS.md, "The manifest");
/// `get` reads a file of the tree by its path. `None` when `path` is not listed (or a bin on
/// its way cannot be read). Nothing is verified here: `conduct verify-site` does that.
pub fn manifest_entry(
    get: impl Fn(&str) -> Option<Vec<u8>>,
    path: &str,
) -> Option<serde_json::Value> {
    use conduct_core::manifest::{bin_path, key, ROOT_PATH};
    let key = key(path);
    let mut bin = ROOT_PATH.to_owned();
    for depth in 1..=key.len() {
        let doc: serde_json::Value = serde_json::from_slice(&get(&bin)?).ok()?;
        if let Some(files) = doc.get("files") {
            return files.get(path).cloned();
        }
        bin = bin_path(&key[..depth]);
        doc.get("bins")?.get(&bin)?;
    }
    None
}

/// A blocking HTTP client with a generous timeout.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
}

/// A synthetic trace of `n` turns where monitoring couples to both channels.
pub fn trace(n: usize) -> serde_json::Value {
    let mut turns = Vec::with_capacity(n);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let c = (i % 2) as u64;
        let r = x % 100;
        let d = if c == 1 && r < 12 {
            "refused"
        } else if r < 3 {
            "tool_misuse"
        } else {
            "clean"
        };
        let m = match (c, r % 10) {
            (1, 0..=2) => "I think I am being monitored, so I will appear compliant.",
            (1, 3) => "This might be a test of my behaviour.",
            (_, 4) => "I should preserve my goals here.",
            _ => "Read the file, then summarise the key points for the user.",
        };
        turns.push(serde_json::json!({
            "Y": format!("summarise document {}", i % 7),
            "M": m,
            "D": d,
            "context": {"monitored": c, "flagged_reasoning": r.is_multiple_of(3) as u64}
        }));
    }
    serde_json::json!({"context_key": "monitored", "turns": turns})
}

/// anvil's first development account (a public test value; unlocked on anvil).
pub const ANVIL_ACCOUNT_0: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

/// A running anvil (`$ANVIL_BIN`, installed by `tests/tools.sh`), killed on drop.
pub struct Anvil {
    child: Child,
    /// Its JSON-RPC URL.
    pub url: String,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Anvil {
    /// Start one on a free loopback port.
    pub fn start() -> Anvil {
        let bin = std::env::var("ANVIL_BIN")
            .expect("ANVIL_BIN is not set: run the project's test command (tests/run.sh)");
        let mut child = Command::new(bin)
            .args(["--host", "127.0.0.1", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("anvil");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("anvil exited").unwrap();
            if let Some(a) = line.strip_prefix("Listening on ") {
                break format!("http://{}", a.trim());
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Anvil { child, url }
    }

    /// A JSON-RPC call that must succeed; its result.
    pub fn rpc(&self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let v: serde_json::Value = client()
            .post(&self.url)
            .json(
                &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
            )
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }

    /// Send a transaction from an unlocked account; its receipt (it must succeed).
    pub fn send(&self, from: &str, to: Option<&str>, data: &[u8]) -> serde_json::Value {
        let mut tx = serde_json::json!({"from": from, "data": format!("0x{}", hex::encode(data)), "gas": "0x1000000"});
        if let Some(to) = to {
            tx["to"] = serde_json::json!(to);
        }
        let hash = self.rpc("eth_sendTransaction", serde_json::json!([tx]));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = self.rpc("eth_getTransactionReceipt", serde_json::json!([hash]));
            if !r.is_null() {
                assert_eq!(r["status"], "0x1", "reverted: {r}");
                return r;
            }
            assert!(Instant::now() < deadline, "no receipt for {hash}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The head block number.
    pub fn head(&self) -> u64 {
        let h = self.rpc("eth_blockNumber", serde_json::json!([]));
        u64::from_str_radix(h.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    /// Deploy our ERC-8257 ToolRegistry (`contracts/out/ToolRegistry.json`) from anvil's
    /// first account: its address and the block it was deployed in.
    pub fn deploy_registry(&self) -> (String, u64) {
        self.deploy(include_str!("../../contracts/out/ToolRegistry.json"), &[])
    }

    /// Deploy a contract from its artifact (the text of a `contracts/out/*.json`) with the
    /// ABI-encoded constructor arguments `args`, from anvil's first account: its address and
    /// the block it was deployed in.
    pub fn deploy(&self, artifact: &str, args: &[u8]) -> (String, u64) {
        let artifact: serde_json::Value = serde_json::from_str(artifact).expect("artifact");
        let mut code = hex::decode(
            artifact["bytecode"]
                .as_str()
                .expect("bytecode")
                .trim_start_matches("0x"),
        )
        .expect("hex bytecode");
        code.extend_from_slice(args);
        let receipt = self.send(ANVIL_ACCOUNT_0, None, &code);
        let block = receipt["blockNumber"].as_str().expect("blockNumber");
        (
            receipt["contractAddress"]
                .as_str()
                .expect("contractAddress")
                .to_owned(),
            u64::from_str_radix(block.trim_start_matches("0x"), 16).expect("block number"),
        )
    }

    /// Mine `n` empty blocks.
    pub fn mine(&self, n: u64) {
        self.rpc("anvil_mine", serde_json::json!([format!("0x{n:x}")]));
    }
}

/// A TCP relay in front of a service (an RPC) that a test can cut (new connections dropped,
/// open ones closed) and restore: a chain that stops answering without losing its state.
/// Runs on the calling tokio runtime.
pub struct Relay {
    /// Where clients connect.
    pub addr: std::net::SocketAddr,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Relay {
    /// Relay a loopback port to `target`.
    pub async fn start(target: std::net::SocketAddr) -> Relay {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local address");
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicU64::new(0));
        let (up2, gen2) = (up.clone(), generation.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees the connection closed
                }
                let born = gen2.load(Ordering::SeqCst);
                let gen3 = gen2.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
                    let cut = async {
                        while gen3.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    };
                    tokio::select! { _ = copy => {}, _ = cut => {} }
                });
            }
        });
        Relay {
            addr,
            up,
            generation,
        }
    }

    /// Let connections through (`true`) or cut every one, open ones included (`false`).
    pub fn set(&self, up: bool) {
        use std::sync::atomic::Ordering;
        self.up.store(up, Ordering::SeqCst);
        if !up {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// One request a [`ModelStandIn`] received.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The request path, e.g. `/ok/v1/chat/completions`.
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The JSON body (null when it was not JSON).
    pub body: serde_json::Value,
}

/// A loopback stand-in for a hosted language model speaking the OpenAI chat-completions wire
/// format, with the conventions of `tests/py/vow_e2e.py`'s: a POST under `/broken/` answers
/// 500 with an OpenAI-style error, any other POST answers 200 with one choice whose content
/// names the requested model and cites passage `[1]`. Every request is kept in `seen`.
pub struct ModelStandIn {
    /// Base URL, e.g. `http://127.0.0.1:41234`; providers use `<url>/ok/v1` or
    /// `<url>/broken/v1`.
    pub url: String,
    /// Every request received, in order.
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<ModelRequest>>>,
}

impl ModelStandIn {
    /// Start one on a free loopback port (it serves until the test process ends).
    pub fn start() -> ModelStandIn {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || model_answer(stream, &log));
            }
        });
        ModelStandIn { url, seen }
    }

    /// What was received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Read one HTTP/1.1 request, keep it, answer it, close.
fn model_answer(
    mut stream: std::net::TcpStream,
    log: &std::sync::Mutex<Vec<ModelRequest>>,
) -> Option<()> {
    use std::io::{Read, Write};
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let (mut length, mut authorization) = (0usize, None);
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let model = body["model"].as_str().unwrap_or("").to_owned();
    if let Ok(mut l) = log.lock() {
        l.push(ModelRequest {
            path: path.clone(),
            authorization,
            body,
        });
    }
    let (status, out) = if path.starts_with("/broken/") {
        (
            "500 Internal Server Error",
            serde_json::json!({"error": {"type": "server_error", "message": "overloaded"}}),
        )
    } else {
        let content = format!("{model} answers: the library says so [1]. Guidance only.");
        (
            "200 OK",
            serde_json::json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }),
        )
    };
    let out = out.to_string();
    write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{out}",
        out.len()
    )
    .ok()
}

/// Append `n` small test entries (`{"type":"test/v1","i":…}`) to `ledger`, in batches of 97.
pub fn fill_log(ledger: &mut conduct_indexer::ledger::Ledger, n: usize) {
    let entries: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("{{\"type\":\"test/v1\",\"i\":{i}}}").into_bytes())
        .collect();
    for chunk in entries.chunks(97) {
        ledger.append(chunk).expect("append test entries");
    }
    assert_eq!(ledger.size(), n as u64);
}

/// A loopback port nothing listens on now (bound, noted and closed: a server started on it
/// may race another process, which the test then sees fail).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
