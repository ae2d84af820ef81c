//! The chain follower against its floor (issue 12), on a real anvil running our ToolRegistry:
//!
//! 1. **Backfill of 10,000 registrations** (~100 blocks of 100 `ToolRegistered` logs):
//!    - floor: a bare loop of `eth_getLogs` (alloy `RootProvider::get_logs`, same address, same
//!      topics, same chunk size as the follower's `max_range`) from the deploy block to
//!      head - confirmations, collecting the logs and nothing else;
//!    - ours: `Follower::catch_up` into a fresh `SqliteChain` (head, reorg check, block hash of the
//!      range's end, `eth_getLogs`, decoding, one SQLite transaction with the cursor per range).
//!
//!    Best of 5 rounds each (and the median of the per-round ratios), floor and ours
//!    alternating, at the default `max_range` (2,000: one range) and at 10 and 1 blocks per
//!    range (the per-range cost). Then each part of a step alone: decoding, the SQLite
//!    transaction of 10,000 rows, an empty commit, the extra round trips.
//! 2. **Block-to-signed-snapshot latency while following:** the release `conduct serve`
//!    following the chain (confirmations 0, `poll_ms` 100); 30 registrations, each timed from
//!    its receipt (the block exists) until `registry/tool/<id>.json` is on disk and until the
//!    signed `manifest.json` lists it.
//!
//! `. tests/.tools/env.sh && cargo build --release --bin conduct && cargo bench -p conduct-indexer --bench backfill`
//! (`ANVIL_BIN` is the pinned anvil; `CONDUCT_BIN` overrides `target/release/conduct`; without
//! the binary the latency part is skipped).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy::primitives::{keccak256, Address};
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::types::{Filter, Log};
use conduct_indexer::chain::follower::Follower;
use conduct_indexer::chain::registry::{self, register_tool_calldata, topics};
use conduct_indexer::chain::{ChainConfig, ChainStatus, ContractConfig};
use conduct_indexer::state::chain::ChainIndex;
use conduct_indexer::store::chain::SqliteChain;
use serde_json::{json, Value};

/// anvil's first development account (unlocked; a public test value).
const FROM: &str = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
const TOOLS: usize = 10_000;
const PER_BLOCK: usize = 100;
const ROUNDS: usize = 5;
const CONFIRMATIONS: u64 = 2;
const LATENCY_SAMPLES: usize = 30;
const POLL_MS: u64 = 100;

/// A running anvil, killed on drop.
struct Anvil {
    child: Child,
    url: String,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Anvil {
    fn start() -> Anvil {
        let bin = std::env::var("ANVIL_BIN")
            .expect("ANVIL_BIN is not set: `bash tests/tools.sh && . tests/.tools/env.sh`");
        let mut child = Command::new(bin)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--gas-limit",
                "3000000000",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn anvil");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let url = loop {
            let line = lines.next().expect("anvil exited").expect("anvil stdout");
            if let Some(a) = line.strip_prefix("Listening on ") {
                break format!("http://{}", a.trim());
            }
        };
        // anvil prints a line per transaction: keep draining.
        std::thread::spawn(move || for _ in lines {});
        Anvil { child, url }
    }
}

/// Plain JSON-RPC for the setup (raw calls, batches).
struct Rpc {
    http: reqwest::Client,
    url: String,
}

impl Rpc {
    async fn call(&self, method: &str, params: Value) -> Value {
        let v: Value = self
            .http
            .post(&self.url)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("rpc send")
            .json()
            .await
            .expect("rpc answer");
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }

    async fn batch(&self, calls: Vec<(&str, Value)>) -> Vec<Value> {
        let body: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (m, p))| json!({"jsonrpc": "2.0", "id": i, "method": m, "params": p}))
            .collect();
        let v: Vec<Value> = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .expect("rpc send")
            .json()
            .await
            .expect("rpc answer");
        for r in &v {
            assert!(r.get("error").is_none(), "batch: {r}");
        }
        v.into_iter().map(|r| r["result"].clone()).collect()
    }

    async fn number(&self, method: &str) -> u64 {
        hex_u64(&self.call(method, json!([])).await)
    }

    /// A transaction's receipt, waiting for it.
    async fn receipt(&self, hash: &Value) -> Value {
        loop {
            let r = self.call("eth_getTransactionReceipt", json!([hash])).await;
            if !r.is_null() {
                assert_eq!(r["status"], "0x1", "reverted: {r}");
                return r;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

fn hex_u64(v: &Value) -> u64 {
    let s = v.as_str().expect("hex quantity");
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex quantity")
}

fn register_tx(registry: &str, i: usize, nonce: Option<u64>) -> Value {
    let uri = format!("https://tools.example.com/.well-known/ai-tool/t{i}.json");
    let hash = keccak256(format!("manifest {i}").as_bytes());
    let data = register_tool_calldata(&uri, hash.0, Address::ZERO);
    let mut tx = json!({
        "from": FROM,
        "to": registry,
        "data": format!("0x{}", hex::encode(data)),
        "gas": "0x7a120",
    });
    if let Some(n) = nonce {
        tx["nonce"] = json!(format!("0x{n:x}"));
    }
    tx
}

/// The chain of the backfill: the registry and the blocks its 10,000 registrations span.
struct Chain {
    registry: String,
    deployed_at: u64,
}

async fn setup(rpc: &Rpc) -> Chain {
    let artifact: Value = serde_json::from_slice(
        &std::fs::read(workspace().join("contracts/out/ToolRegistry.json")).expect("artifact"),
    )
    .expect("artifact JSON");
    let bytecode = artifact["bytecode"].as_str().expect("bytecode");
    let hash = rpc
        .call(
            "eth_sendTransaction",
            json!([{"from": FROM, "data": bytecode, "gas": "0x1000000"}]),
        )
        .await;
    let r = rpc.receipt(&hash).await;
    let registry = r["contractAddress"].as_str().expect("address").to_owned();
    let deployed_at = hex_u64(&r["blockNumber"]);
    rpc.call("evm_setAutomine", json!([false])).await;
    let mut nonce = hex_u64(
        &rpc.call("eth_getTransactionCount", json!([FROM, "pending"]))
            .await,
    );
    for block in 0..TOOLS / PER_BLOCK {
        let calls = (0..PER_BLOCK)
            .map(|k| {
                let tx = register_tx(&registry, block * PER_BLOCK + k, Some(nonce + k as u64));
                ("eth_sendTransaction", json!([tx]))
            })
            .collect();
        rpc.batch(calls).await;
        nonce += PER_BLOCK as u64;
        rpc.call("evm_mine", json!([])).await;
    }
    for _ in 0..CONFIRMATIONS + 3 {
        rpc.call("evm_mine", json!([])).await;
    }
    let pending = rpc
        .call("eth_getBlockByNumber", json!(["pending", false]))
        .await;
    assert!(
        pending["transactions"]
            .as_array()
            .is_none_or(|t| t.is_empty()),
        "transactions left unmined"
    );
    Chain {
        registry,
        deployed_at,
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn chain_config(url: &str, chain: &Chain, max_range: u64) -> ChainConfig {
    ChainConfig {
        name: "anvil".into(),
        chain_id: 31337,
        rpc: vec![url.to_owned()],
        confirmations: CONFIRMATIONS,
        poll_ms: POLL_MS,
        max_range,
        rpc_timeout_seconds: 30,
        public_rpc: None,
        registry: Some(ContractConfig {
            address: chain.registry.clone(),
            start_block: chain.deployed_at,
        }),
        reputation: None,
        tickets: None,
        validation: None,
    }
}

/// The floor: `eth_getLogs` over the range in chunks of `max_range`, collecting the logs.
async fn floor(url: &str, chain: &Chain, target: u64, max_range: u64) -> (Duration, usize) {
    let provider: RootProvider = RootProvider::new_http(url.parse().expect("url"));
    let address: Address = chain.registry.parse().expect("address");
    let t = Instant::now();
    let mut logs: Vec<Log> = Vec::new();
    let mut from = chain.deployed_at;
    while from <= target {
        let to = target.min(from + max_range - 1);
        let filter = Filter::new()
            .address(address)
            .event_signature(topics())
            .from_block(from)
            .to_block(to);
        logs.extend(provider.get_logs(&filter).await.expect("eth_getLogs"));
        from = to + 1;
    }
    (t.elapsed(), std::hint::black_box(logs).len())
}

/// Ours: a fresh database, then `catch_up` (timed); the tools it holds.
async fn ours(cfg: &ChainConfig) -> (Duration, usize, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let t_open = Instant::now();
    let db = Arc::new(SqliteChain::open(dir.path(), "bench").expect("open"));
    let open = t_open.elapsed();
    let status = Arc::new(Mutex::new(ChainStatus::default()));
    let mut follower =
        Follower::new(cfg.clone(), db.clone(), status, Box::new(|_| {})).expect("follower");
    let t = Instant::now();
    follower.catch_up().await.expect("catch_up");
    let took = t.elapsed();
    let tools = db.tools().expect("tools").len();
    (took, tools, open)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let anvil = Anvil::start();
    let rpc = Rpc {
        http: reqwest::Client::new(),
        url: anvil.url.clone(),
    };
    let t = Instant::now();
    let chain = setup(&rpc).await;
    let head = rpc.number("eth_blockNumber").await;
    let target = head - CONFIRMATIONS;
    println!(
        "setup: {TOOLS} registrations, {} per block from block {}; head {head}; {:.1} s",
        PER_BLOCK,
        chain.deployed_at + 1,
        t.elapsed().as_secs_f64()
    );

    // Warm anvil's log path once.
    let (_, n) = floor(&anvil.url, &chain, target, 2000).await;
    assert_eq!(n, TOOLS, "the floor read {n} logs");

    println!();
    println!("backfill of {TOOLS} registrations, best of {ROUNDS} (floor and ours alternating)");
    println!(
        "| max_range | ranges | floor (eth_getLogs loop) | ours (catch_up) | floor logs/s | ours logs/s | ours / floor (best) | median of round ratios |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut opens = Vec::new();
    for max_range in [2000u64, 10, 1] {
        let cfg = chain_config(&anvil.url, &chain, max_range);
        let mut best_floor = Duration::MAX;
        let mut best_ours = Duration::MAX;
        let mut ratios = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let (f, n) = floor(&anvil.url, &chain, target, max_range).await;
            assert_eq!(n, TOOLS);
            best_floor = best_floor.min(f);
            let (o, tools, open) = ours(&cfg).await;
            assert_eq!(tools, TOOLS, "the follower indexed {tools} tools");
            best_ours = best_ours.min(o);
            opens.push(open);
            ratios.push(o.as_secs_f64() / f.as_secs_f64());
        }
        ratios.sort_by(f64::total_cmp);
        let ranges = (target - chain.deployed_at) / max_range + 1;
        println!(
            "| {max_range} | {ranges} | {:.1} ms | {:.1} ms | {:.0} | {:.0} | {:.2}x | {:.2}x |",
            ms(best_floor),
            ms(best_ours),
            TOOLS as f64 / best_floor.as_secs_f64(),
            TOOLS as f64 / best_ours.as_secs_f64(),
            best_ours.as_secs_f64() / best_floor.as_secs_f64(),
            ratios[ROUNDS / 2]
        );
    }
    opens.sort();
    println!(
        "(SqliteChain::open of a fresh database, not in the times above: median {:.1} ms)",
        ms(opens[opens.len() / 2])
    );

    breakdown(&anvil.url, &chain, target).await;
    latency(&rpc, &chain).await;
}

/// Where ours spends what the floor does not: the parts of a step, each timed alone.
async fn breakdown(url: &str, chain: &Chain, target: u64) {
    let provider: RootProvider = RootProvider::new_http(url.parse().expect("url"));
    let address: Address = chain.registry.parse().expect("address");
    let filter = Filter::new()
        .address(address)
        .event_signature(topics())
        .from_block(chain.deployed_at)
        .to_block(target);
    let logs = provider.get_logs(&filter).await.expect("eth_getLogs");
    assert_eq!(logs.len(), TOOLS);

    let mut decode = Duration::MAX;
    let mut events = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        events = logs
            .iter()
            .map(|l| registry::decode(l).expect("decode"))
            .collect::<Vec<_>>();
        decode = decode.min(t.elapsed());
    }
    let mut apply = Duration::MAX;
    let hash = format!("0x{}", "ab".repeat(32));
    for _ in 0..ROUNDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteChain::open(dir.path(), "bench").expect("open");
        let t = Instant::now();
        db.apply(&events, target, &hash, 0).expect("apply");
        apply = apply.min(t.elapsed());
    }

    // The fixed cost of a range: an empty commit (cursor, anchor), and the round trips the
    // floor does not make (eth_blockNumber, the cursor's block, the range's last block).
    const N: usize = 100;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = SqliteChain::open(dir.path(), "bench").expect("open");
    let mut commits = Vec::with_capacity(N);
    for k in 0..N {
        let t = Instant::now();
        db.apply(&[], k as u64, &hash, 0).expect("apply");
        commits.push(t.elapsed());
    }
    let mut trips = Vec::with_capacity(N);
    for _ in 0..N {
        let t = Instant::now();
        provider.get_block_number().await.expect("head");
        for n in [target - 1, target] {
            provider.get_block_by_number(n.into()).await.expect("block");
        }
        trips.push(t.elapsed());
    }
    commits.sort();
    trips.sort();
    println!();
    println!("where ours spends the difference (each part alone)");
    println!("| part | time |");
    println!("|---|---:|");
    println!(
        "| decode {TOOLS} logs (registry::decode) | {:.1} ms |",
        ms(decode)
    );
    println!(
        "| SqliteChain::apply of {TOOLS} events, one transaction | {:.1} ms |",
        ms(apply)
    );
    println!(
        "| per range: empty SqliteChain::apply (commit, synchronous=FULL), median | {:.2} ms |",
        ms(commits[N / 2])
    );
    println!(
        "| per range: eth_blockNumber + 2 eth_getBlockByNumber, median | {:.2} ms |",
        ms(trips[N / 2])
    );
}

/// The `conduct` binary of this profile (target/<profile>/conduct), or `CONDUCT_BIN`.
fn conduct_bin() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CONDUCT_BIN") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    let exe = std::env::current_exe().ok()?;
    // target/<profile>/deps/<bench> -> target/<profile>/conduct
    let bin = exe.parent()?.parent()?.join("conduct");
    bin.exists().then_some(bin)
}

/// A running `conduct serve`, killed on drop.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn listed(manifest: &Path, rel: &str) -> bool {
    let Ok(bytes) = std::fs::read(manifest) else {
        return false;
    };
    let Ok(doc) = serde_json::from_slice::<Value>(&bytes) else {
        return false;
    };
    doc["files"].get(rel).is_some()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

async fn latency(rpc: &Rpc, chain: &Chain) {
    println!();
    let Some(bin) = conduct_bin() else {
        println!(
            "block-to-snapshot latency: skipped (no conduct binary: `cargo build --release --bin conduct` or set CONDUCT_BIN)"
        );
        return;
    };
    println!(
        "block-to-snapshot latency: {} following anvil (confirmations 0, poll_ms {POLL_MS})",
        bin.display()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, site) = (dir.path().join("data"), dir.path().join("site"));
    let start_block = rpc.number("eth_blockNumber").await + 1;
    let cfg = dir.path().join("conduct.toml");
    std::fs::write(
        &cfg,
        format!(
            "[chain]\nname = \"anvil\"\nchain_id = 31337\nrpc = [\"{}\"]\n\
             confirmations = 0\npoll_ms = {POLL_MS}\n\
             [chain.registry]\naddress = \"{}\"\nstart_block = {start_block}\n",
            rpc.url, chain.registry
        ),
    )
    .expect("config");
    let log = std::fs::File::create(dir.path().join("serve.log")).expect("log");
    let mut child = Command::new(&bin)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(&data)
        .arg("--site")
        .arg(&site)
        .arg("--config")
        .arg(&cfg)
        .env_remove("CONDUCT_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn conduct");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let serve = Serve(child);
    loop {
        let line = lines
            .next()
            .expect("conduct exited before listening")
            .expect("conduct stdout");
        if line.contains("conduct listening on ") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    rpc.call("evm_setAutomine", json!([true])).await;

    let manifest = site.join("manifest.json");
    let mut written = Vec::new();
    let mut signed = Vec::new();
    // One warm-up registration (the follower's first poll, the first render), then the samples.
    for i in 0..=LATENCY_SAMPLES {
        // Spread the registrations over the follower's poll phase.
        let jitter = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64 % POLL_MS);
        tokio::time::sleep(Duration::from_millis(jitter)).await;
        let tx = register_tx(&chain.registry, TOOLS + i, None);
        let hash = rpc.call("eth_sendTransaction", json!([tx])).await;
        let receipt = rpc.receipt(&hash).await;
        let t0 = Instant::now();
        let id = hex_u64(&receipt["logs"][0]["topics"][1]);
        let rel = format!("registry/tool/{id}.json");
        let deadline = t0 + Duration::from_secs(60);
        while !site.join(&rel).exists() {
            assert!(
                Instant::now() < deadline,
                "{rel} not written within 60 s (see {})",
                dir.path().join("serve.log").display()
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let t1 = t0.elapsed();
        while !listed(&manifest, &rel) {
            assert!(
                Instant::now() < deadline,
                "{rel} not in the manifest within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let t2 = t0.elapsed();
        if i > 0 {
            written.push(t1);
            signed.push(t2);
        }
    }
    drop(serve);
    written.sort();
    signed.sort();
    println!("| {LATENCY_SAMPLES} registrations, from the receipt | p50 | p90 | max |");
    println!("|---|---:|---:|---:|");
    for (what, v) in [
        ("snapshot written (registry/tool/<id>.json)", &written),
        ("in the signed manifest.json", &signed),
    ] {
        println!(
            "| {what} | {:.0} ms | {:.0} ms | {:.0} ms |",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.9)),
            ms(v[v.len() - 1])
        );
    }
}
