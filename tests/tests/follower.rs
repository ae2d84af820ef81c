//! The chain follower against a real anvil behind a JSON-RPC gateway that refuses wide
//! `eth_getLogs` ranges, as hosted RPCs do ("query exceeds max block range"): the backfill
//! shrinks its span until the node accepts it, reads every registration, and falls over from
//! a dead RPC URL to the next.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use conduct_indexer::chain::follower::Follower;
use conduct_indexer::chain::registry::register_tool_calldata;
use conduct_indexer::chain::{ChainConfig, ChainStatus, ContractConfig};
use conduct_indexer::state::chain::ChainIndex;
use conduct_indexer::store::chain::SqliteChain;
use conduct_tests::{Anvil, ANVIL_ACCOUNT_0};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Widest `eth_getLogs` span the gateway serves.
const MAX_SPAN: u64 = 4;

/// What the gateway saw.
#[derive(Default)]
struct Seen {
    refused: AtomicU64,
    served_max_span: AtomicU64,
}

fn block_arg(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

/// Answer one JSON-RPC request body: refuse a wide eth_getLogs, forward the rest to anvil.
async fn answer(body: &[u8], upstream: &str, seen: &Seen) -> Vec<u8> {
    let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if req["method"] == "eth_getLogs" {
        let f = &req["params"][0];
        if let (Some(a), Some(b)) = (block_arg(&f["fromBlock"]), block_arg(&f["toBlock"])) {
            let span = b - a + 1;
            if span > MAX_SPAN {
                seen.refused.fetch_add(1, Ordering::SeqCst);
                return serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": req["id"],
                    "error": {"code": -32005, "message": format!("query exceeds max block range {MAX_SPAN}")}}))
                .unwrap();
            }
            seen.served_max_span.fetch_max(span, Ordering::SeqCst);
        }
    }
    let resp = reqwest::Client::new()
        .post(upstream)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    resp.bytes().await.unwrap().to_vec()
}

/// An HTTP/1.1 JSON-RPC gateway (keep-alive, Content-Length bodies) in front of `upstream`.
async fn gateway(upstream: String, seen: Arc<Seen>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let (upstream, seen) = (upstream.clone(), seen.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        let mut chunk = [0u8; 4096];
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body: Vec<u8> = buf.drain(..head_end + len).skip(head_end).collect();
                    let out = answer(&body, &upstream, &seen).await;
                    let mut resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        out.len()
                    )
                    .into_bytes();
                    resp.extend(out);
                    if conn.write_all(&resp).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn a_backfill_shrinks_its_range_until_the_node_accepts_it_and_reads_every_registration() {
    let anvil = Anvil::start();
    let (registry, deployed_at) = anvil.deploy_registry();
    for i in 0..20u8 {
        let data = register_tool_calldata(
            &format!("https://t.example/.well-known/ai-tool/t{i}.json"),
            [i + 1; 32],
            Default::default(),
        );
        anvil.send(ANVIL_ACCOUNT_0, Some(&registry), &data);
    }
    anvil.mine(3);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let seen = Arc::new(Seen::default());
    let gw = rt.block_on(gateway(anvil.url.clone(), seen.clone()));
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(SqliteChain::open(dir.path(), "test").unwrap());
    let status = Arc::new(Mutex::new(ChainStatus::default()));
    let cfg = ChainConfig {
        name: "anvil".into(),
        chain_id: 31337,
        // The first URL answers nothing: every call falls over to the gateway.
        rpc: vec!["http://127.0.0.1:1".into(), format!("http://{gw}")],
        confirmations: 2,
        poll_ms: 50,
        max_range: 1000,
        rpc_timeout_seconds: 5,
        public_rpc: None,
        registry: Some(ContractConfig {
            address: registry.clone(),
            start_block: deployed_at,
        }),
        reputation: None,
        tickets: None,
        validation: None,
    };
    let changed = Arc::new(AtomicU64::new(0));
    let counter = changed.clone();
    let mut follower = Follower::new(
        cfg,
        db.clone(),
        status.clone(),
        Box::new(move |c| {
            counter.fetch_add(c.tools.len() as u64, Ordering::SeqCst);
        }),
    )
    .unwrap();
    let reached = rt.block_on(follower.catch_up()).unwrap();
    assert_eq!(reached, Some(anvil.head() - 2));
    let tools = db.tools().unwrap();
    assert_eq!(tools.len(), 20, "every registration read");
    assert_eq!(
        changed.load(Ordering::SeqCst),
        20,
        "each tool reported once"
    );
    let refused = seen.refused.load(Ordering::SeqCst);
    assert!(refused > 0, "the wide range was never tried");
    // Halving from 1000 to 4 takes 8 refusals; after that the span never grows past what
    // the node accepted.
    assert!(
        refused <= 8,
        "{refused} refusals: the span kept growing back"
    );
    assert!(seen.served_max_span.load(Ordering::SeqCst) <= MAX_SPAN);
    // The rows keep where the chain put them.
    let first = db.events_of(tools[0].tool_id).unwrap();
    assert_eq!(first[0].block_number, tools[0].registered_block);
    assert!(first[0].block_hash.starts_with("0x") && first[0].block_hash.len() == 66);
}
