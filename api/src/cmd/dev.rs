//! `conduct dev`: the whole stack, payable, on this machine.
//!
//! It starts the pinned anvil, then deploys:
//!
//! - TestUSD;
//! - Permit2 and the x402 exact Permit2 proxy at their canonical addresses;
//! - a stub at the EIP-6492 validator address.
//!
//! The artifacts are embedded in the binary from `contracts/out/`. It then funds test wallets
//! and has them approve Permit2, and starts a loopback HTTP facilitator (`/verify`, `/settle`,
//! `/supported`) backed by the in-process settler for the EIP-3009 rail. It configures both
//! rails, prints the wallets and a ready-to-run paid request, and serves.
//!
//! Everything here uses anvil's public development keys, and is for this machine only.

use crate::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use warp::Filter;

use x402_chain_eip155::chain::permit2::{EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS};

use crate::config::Config;
use crate::payment::local::LocalFacilitator;
use crate::payment::rails::RailConfig;
use crate::payment::wire::payment_from_value;

const TESTUSD: &str = include_str!("../../../contracts/out/TestUSD.json");
const TOOL_REGISTRY: &str = include_str!("../../../contracts/out/ToolRegistry.json");
const REPUTATION: &str = include_str!("../../../contracts/out/Reputation.json");
const TEST_MARKET: &str = include_str!("../../../contracts/out/TestMarket.json");
const TICKET_COPIES: &str = include_str!("../../../contracts/out/TicketCopies.json");
const VALIDATION_REGISTRY: &str = include_str!("../../../contracts/out/ValidationRegistry.json");
/// The game `conduct dev` lists on its ticket contract, and its price (TestUSD base units).
const DEV_GAME: u64 = 1;
const DEV_TICKET_PRICE: u64 = 2_000_000;
/// The reputation record's arbiter in `conduct dev` (anvil account 5).
const ARBITER: usize = 5;
/// The threshold of `meets` `conduct dev` sets.
const DEV_THRESHOLD: u64 = 10;
/// The slug of the sample tool `conduct dev` registers.
const SAMPLE_SLUG: &str = "conduct-sample";
const PERMIT2_RUNTIME: &str = include_str!("../../../contracts/out/Permit2.runtime.hex");
const PROXY_INITCODE: &str =
    include_str!("../../../contracts/out/X402ExactPermit2Proxy.initcode.hex");
const CREATE2_DEPLOYER: &str = "0x4e59b44847b379578588920cA78FbF26c0B4956C";
const PROXY_SALT: &str = "0000000000000000000000000000000000000000000000003000000007263b0e";
const VALIDATOR_6492: &str = "0xdAcD51A54883eb67D95FAEb2BBfdC4a9a6BD2a3B";

/// anvil's well-known development accounts (address, private key): public test values.
const ACCOUNTS: [(&str, &str); 6] = [
    (
        "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
        "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    ),
    (
        "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    ),
    (
        "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    ),
    (
        "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
        "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
    ),
    (
        "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
        "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
    ),
    (
        "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
        "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
    ),
];
/// Roles: 0 deploys and signs for the local facilitator, 2 is the service's payTo, 4 settles
/// the Permit2 rail, 1 and 3 are funded payers.
const DEPLOYER: usize = 0;
const PAY_TO: usize = 2;
const SETTLER: usize = 4;
const PAYERS: [usize; 2] = [1, 3];
/// Test dollars minted to each payer (6 decimals).
const FUNDING: u64 = 1_000_000_000;

/// Where to find anvil: `--anvil`, `$ANVIL_BIN`, the pinned npm copy, then `PATH`.
fn find_anvil(given: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(p) = given.or_else(|| std::env::var_os("ANVIL_BIN").map(PathBuf::from)) {
        return Ok(p);
    }
    let pinned = PathBuf::from("contracts/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
    if pinned.exists() {
        return Ok(pinned);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("anvil"))
                .find(|p| p.exists())
        })
        .ok_or_else(|| {
            "anvil not found: run `bash tests/tools.sh` (installs the pinned anvil 1.7.1 from \
             npm), or pass --anvil PATH / set ANVIL_BIN"
                .to_string()
        })
}

/// A minimal JSON-RPC client for anvil (its development accounts are unlocked).
struct Rpc {
    url: String,
    http: reqwest::Client,
}

impl Rpc {
    async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let v: Value = self
            .http
            .post(&self.url)
            .timeout(Duration::from_secs(30))
            .json(&json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}))
            .send()
            .await
            .map_err(|e| format!("{method}: {e}"))?
            .json()
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        if let Some(err) = v.get("error") {
            return Err(format!("{method}: {err}"));
        }
        Ok(v["result"].clone())
    }

    /// Send a transaction from an unlocked account and wait for a successful receipt.
    async fn send(&self, from: usize, to: Option<&str>, data: &str) -> Result<Value, String> {
        let mut tx = json!({"from": ACCOUNTS[from].0, "data": data, "gas": "0x989680"});
        if let Some(to) = to {
            tx["to"] = json!(to);
        }
        let hash = self.call("eth_sendTransaction", json!([tx])).await?;
        for _ in 0..100 {
            let r = self
                .call("eth_getTransactionReceipt", json!([hash]))
                .await?;
            if !r.is_null() {
                if r["status"] != "0x1" {
                    return Err(format!("transaction {hash} reverted"));
                }
                return Ok(r);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!("no receipt for {hash}"))
    }
}

fn word(hex_value: &str) -> String {
    format!(
        "{:0>64}",
        hex_value.trim_start_matches("0x").to_ascii_lowercase()
    )
}

/// What `conduct dev` set up.
pub struct DevChain {
    _anvil: tokio::process::Child,
    /// JSON-RPC URL.
    pub rpc: String,
    /// TestUSD address.
    pub token: String,
    /// The loopback facilitator's URL.
    pub facilitator: String,
    /// The ERC-8257 ToolRegistry address.
    pub registry: String,
    /// The sample tool's metadataURI (served over HTTPS by a throwaway CA).
    pub sample_uri: String,
    /// The throwaway CA's certificate (PEM), trusted for manifests.
    pub ca_pem: String,
    /// The soulbound reputation record.
    pub reputation: String,
    /// The test market authorized to credit it.
    pub market: String,
    /// The ERC-1155 ticket copies contract (one open game, priced in TestUSD).
    pub tickets: String,
    /// The ERC-8004 validation registry (no identity registry).
    pub validation: String,
}

/// Start anvil, deploy and fund everything, start the local facilitator.
pub async fn start(anvil: Option<PathBuf>) -> Result<DevChain, Error> {
    start_chain(anvil).await.map_err(Error::Dev)
}

async fn start_chain(anvil: Option<PathBuf>) -> Result<DevChain, String> {
    let bin = find_anvil(anvil)?;
    let mut child = tokio::process::Command::new(&bin)
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("anvil has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let rpc = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .map_err(|_| "anvil did not start within 30 s".to_string())?
            .map_err(|e| format!("anvil: {e}"))?
            .ok_or("anvil exited before listening")?;
        if let Some(addr) = line.strip_prefix("Listening on ") {
            break format!("http://{}", addr.trim());
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let rpc_client = Rpc {
        url: rpc.clone(),
        http: reqwest::Client::new(),
    };

    let artifact: Value =
        serde_json::from_str(TESTUSD).map_err(|e| format!("TestUSD artifact: {e}"))?;
    let bytecode = artifact["bytecode"]
        .as_str()
        .ok_or("TestUSD artifact has no bytecode")?;
    let receipt = rpc_client.send(DEPLOYER, None, bytecode).await?;
    let token = receipt["contractAddress"]
        .as_str()
        .and_then(crate::payment::wire::to_checksum)
        .ok_or("TestUSD deployment has no address")?;
    let permit2 = format!("0x{}", PERMIT2_RUNTIME.trim().trim_start_matches("0x"));
    rpc_client
        .call(
            "anvil_setCode",
            json!([PERMIT2_ADDRESS.to_string(), permit2]),
        )
        .await?;
    rpc_client
        .call("anvil_setCode", json!([VALIDATOR_6492, "0x00"]))
        .await?;
    let create2 = format!(
        "0x{PROXY_SALT}{}",
        PROXY_INITCODE.trim().trim_start_matches("0x")
    );
    rpc_client
        .send(DEPLOYER, Some(CREATE2_DEPLOYER), &create2)
        .await?;
    let code = rpc_client
        .call(
            "eth_getCode",
            json!([EXACT_PERMIT2_PROXY_ADDRESS.to_string(), "latest"]),
        )
        .await?;
    if code.as_str().is_none_or(|c| c.len() <= 2) {
        return Err("the x402 Permit2 proxy did not land at its canonical address".into());
    }
    for p in PAYERS {
        let mint = format!(
            "0x40c10f19{}{}",
            word(ACCOUNTS[p].0),
            word(&format!("{FUNDING:x}"))
        );
        rpc_client.send(DEPLOYER, Some(&token), &mint).await?;
        let approve = format!(
            "0x095ea7b3{}{}",
            word(&PERMIT2_ADDRESS.to_string()),
            "f".repeat(64)
        );
        rpc_client.send(p, Some(&token), &approve).await?;
    }

    let facilitator = serve_facilitator(&rpc).await?;
    let (registry, sample_uri, ca_pem) = deploy_registry(&rpc_client).await?;
    let (reputation, market) = deploy_reputation(&rpc_client).await?;
    let (tickets, validation) = deploy_tickets(&rpc_client, &token).await?;
    Ok(DevChain {
        _anvil: child,
        rpc,
        token,
        facilitator,
        registry,
        sample_uri,
        ca_pem,
        reputation,
        market,
        tickets,
        validation,
    })
}

/// Deploy the ERC-8004 validation registry (no identity registry) and the ticket copies
/// contract (paid in TestUSD to the payTo account), and list one open game:
/// (tickets, validation).
async fn deploy_tickets(rpc: &Rpc, token: &str) -> Result<(String, String), String> {
    let address = |r: Value, what: &str| {
        r["contractAddress"]
            .as_str()
            .map(str::to_ascii_lowercase)
            .ok_or_else(|| format!("{what} deployment has no address"))
    };
    let code = format!(
        "{}{}",
        bytecode(VALIDATION_REGISTRY, "ValidationRegistry")?,
        word("0")
    );
    let validation = address(rpc.send(DEPLOYER, None, &code).await?, "ValidationRegistry")?;
    let uri = b"https://conduct.example/copies/{id}.json";
    let mut text = hex::encode(uri);
    while !text.len().is_multiple_of(64) {
        text.push('0');
    }
    let code = format!(
        "{}{}{}{}{}{text}",
        bytecode(TICKET_COPIES, "TicketCopies")?,
        word(token),
        word(ACCOUNTS[PAY_TO].0),
        word("60"),
        word(&format!("{:x}", uri.len())),
    );
    let tickets = address(rpc.send(DEPLOYER, None, &code).await?, "TicketCopies")?;
    let set = calldata(
        "setGame(uint256,uint256,bool)",
        &[
            word(&format!("{DEV_GAME:x}")),
            word(&format!("{DEV_TICKET_PRICE:x}")),
            word("1"),
        ],
    );
    rpc.send(DEPLOYER, Some(&tickets), &set).await?;
    Ok((tickets, validation))
}

/// The bytecode of an artifact.
fn bytecode(artifact: &str, name: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(artifact).map_err(|e| format!("{name} artifact: {e}"))?;
    v["bytecode"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{name} artifact has no bytecode"))
}

/// Calldata of `signature` with 32-byte `words` (hex, each left-padded).
fn calldata(signature: &str, words: &[String]) -> String {
    let selector = &alloy_primitives::keccak256(signature.as_bytes())[..4];
    format!("0x{}{}", hex::encode(selector), words.concat())
}

/// Deploy the reputation record (governance: the deployer) and a test market, authorize the
/// market and an arbiter, set the threshold, and credit one sample outcome through the
/// market: (reputation, market).
async fn deploy_reputation(rpc: &Rpc) -> Result<(String, String), String> {
    let address = |r: Value, what: &str| {
        r["contractAddress"]
            .as_str()
            .map(str::to_ascii_lowercase)
            .ok_or_else(|| format!("{what} deployment has no address"))
    };
    let code = format!(
        "{}{}",
        bytecode(REPUTATION, "Reputation")?,
        word(ACCOUNTS[DEPLOYER].0)
    );
    let reputation = address(rpc.send(DEPLOYER, None, &code).await?, "Reputation")?;
    let code = format!(
        "{}{}",
        bytecode(TEST_MARKET, "TestMarket")?,
        word(&reputation)
    );
    let market = address(rpc.send(DEPLOYER, None, &code).await?, "TestMarket")?;
    let yes = word("1");
    for data in [
        calldata("setMarket(address,bool)", &[word(&market), yes.clone()]),
        calldata(
            "setArbiter(address,bool)",
            &[word(ACCOUNTS[ARBITER].0), yes.clone()],
        ),
        calldata(
            "setThreshold(uint256)",
            &[word(&format!("{DEV_THRESHOLD:x}"))],
        ),
    ] {
        rpc.send(DEPLOYER, Some(&reputation), &data).await?;
    }
    let settle = calldata(
        "settle(address,uint256,bytes32)",
        &[
            word(ACCOUNTS[PAYERS[0]].0),
            word(&format!("{:x}", DEV_THRESHOLD + 2)),
            hex::encode(alloy_primitives::keccak256(
                b"conduct dev: a sample outcome",
            )),
        ],
    );
    rpc.send(DEPLOYER, Some(&market), &settle).await?;
    Ok((reputation, market))
}

/// Deploy the ToolRegistry, serve a sample tool manifest over HTTPS on loopback (a
/// throwaway CA), and register it from the deployer: (registry, metadataURI, CA PEM).
async fn deploy_registry(rpc: &Rpc) -> Result<(String, String, String), String> {
    let artifact: Value =
        serde_json::from_str(TOOL_REGISTRY).map_err(|e| format!("ToolRegistry artifact: {e}"))?;
    let bytecode = artifact["bytecode"]
        .as_str()
        .ok_or("ToolRegistry artifact has no bytecode")?;
    let receipt = rpc.send(DEPLOYER, None, bytecode).await?;
    let registry = receipt["contractAddress"]
        .as_str()
        .ok_or("ToolRegistry deployment has no address")?
        .to_ascii_lowercase();
    let pki = crate::cmd::dev_tls::Pki::new().map_err(|e| e.to_string())?;
    let routes: crate::cmd::dev_tls::Routes = Default::default();
    let addr = crate::cmd::dev_tls::serve(&pki, 0, routes.clone())
        .await
        .map_err(|e| e.to_string())?;
    let origin = format!("https://localhost:{}", addr.port());
    let manifest = json!({
        "type": conduct_core::erc8257::MANIFEST_TYPE,
        "name": "conduct sample tool",
        "description": "A sample tool registered by `conduct dev`, served by the dev stack itself.",
        "endpoint": format!("{origin}/{SAMPLE_SLUG}"),
        "inputs": {"type": "object"},
        "outputs": {"type": "object"},
        "creatorAddress": ACCOUNTS[DEPLOYER].0.to_ascii_lowercase(),
    });
    let bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?;
    let hash = conduct_core::erc8257::manifest_hash(&bytes).map_err(|e| e.to_string())?;
    let path = format!("/.well-known/ai-tool/{SAMPLE_SLUG}.json");
    conduct_core::sync::lock(&routes)
        .insert(path.clone(), crate::cmd::dev_tls::Answer::json(bytes));
    let uri = format!("{origin}{path}");
    let data = conduct_indexer::chain::registry::register_tool_calldata(
        &uri,
        hash,
        alloy_primitives::Address::ZERO,
    );
    rpc.send(
        DEPLOYER,
        Some(&registry),
        &format!("0x{}", hex::encode(data)),
    )
    .await?;
    // The server task holds the TLS config; the PKI's key is dropped here.
    Ok((registry, uri, pki.ca_pem))
}

/// A loopback x402 facilitator (`/verify`, `/settle`, `/supported`) backed by the in-process
/// settler, signing with the deployer account.
async fn serve_facilitator(rpc: &str) -> Result<String, String> {
    let fac = Arc::new(
        LocalFacilitator::connect(31337, rpc, ACCOUNTS[DEPLOYER].1, Duration::from_secs(30))
            .await
            .map_err(|e| e.to_string())?,
    );
    let answer = |fac: Arc<LocalFacilitator>, settle: bool| {
        move |body: Value| {
            let fac = fac.clone();
            async move {
                let reply = match payment_from_value(body["paymentPayload"].clone()) {
                    Err(e) => {
                        json!({"isValid": false, "success": false, "invalidReason": e.0, "errorReason": e.0})
                    }
                    Ok(p) => {
                        let req = &body["paymentRequirements"];
                        if settle {
                            // A facilitator keeps no claims: its answer carries the hash.
                            match fac.settle(&p, req, &|_| Box::pin(async {})).await {
                                Ok(s) => serde_json::to_value(s).unwrap_or(Value::Null),
                                Err(e) => json!({"success": false, "errorReason": e.to_string()}),
                            }
                        } else {
                            match fac.verify(&p, req).await {
                                Ok(v) => {
                                    json!({"isValid": v.is_valid, "invalidReason": v.invalid_reason,
                                                "invalidMessage": v.invalid_message, "payer": v.payer})
                                }
                                Err(e) => json!({"isValid": false, "invalidReason": e.to_string()}),
                            }
                        }
                    }
                };
                Ok::<_, std::convert::Infallible>(warp::reply::json(&reply))
            }
        }
    };
    let verify = warp::post()
        .and(warp::path("verify"))
        .and(warp::body::json())
        .and_then(answer(fac.clone(), false));
    let settle = warp::post()
        .and(warp::path("settle"))
        .and(warp::body::json())
        .and_then(answer(fac.clone(), true));
    let supported = warp::get().and(warp::path("supported")).map(|| {
        warp::reply::json(&json!({
            "kinds": [{"x402Version": 2, "scheme": "exact", "network": "eip155:31337"}],
            "extensions": [],
            "signers": {"eip155:*": [ACCOUNTS[DEPLOYER].0]},
        }))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("facilitator listener: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("facilitator listener: {e}"))?;
    tokio::spawn(
        warp::serve(verify.or(settle).or(supported))
            .incoming(listener)
            .run(),
    );
    Ok(format!("http://{addr}"))
}

/// Configure both rails against the dev chain.
pub fn configure(cfg: &mut Config, chain: &DevChain) {
    let base = |kind: &str| RailConfig {
        kind: kind.into(),
        network: "eip155:31337".into(),
        asset: chain.token.clone(),
        pay_to: ACCOUNTS[PAY_TO].0.into(),
        decimals: 6,
        eip712_name: "USD Coin".into(),
        eip712_version: "2".into(),
        max_timeout_seconds: 60,
        facilitator_url: None,
        rpc_url: None,
        settler_key_env: None,
        receipt_wait_seconds: crate::payment::rails::default_receipt_wait(),
        settler_key: None,
    };
    let mut eip3009 = base("facilitator");
    eip3009.facilitator_url = Some(chain.facilitator.clone());
    // A settlement the facilitator answers pending is confirmed by its receipt on the dev
    // chain (PAYMENTS.md, "Settlement pending"), not by asking it to settle again.
    eip3009.rpc_url = Some(chain.rpc.clone());
    let mut permit2 = base("permit2");
    permit2.rpc_url = Some(chain.rpc.clone());
    permit2.settler_key = Some(ACCOUNTS[SETTLER].1.into());
    cfg.rails = vec![eip3009, permit2];
    cfg.chain = Some(conduct_indexer::chain::ChainConfig {
        name: "anvil (conduct dev)".into(),
        chain_id: 31337,
        rpc: vec![chain.rpc.clone()],
        confirmations: 0,
        poll_ms: 500,
        max_range: 2000,
        rpc_timeout_seconds: 10,
        public_rpc: None,
        registry: Some(conduct_indexer::chain::ContractConfig {
            address: chain.registry.clone(),
            start_block: 0,
        }),
        reputation: Some(conduct_indexer::chain::ContractConfig {
            address: chain.reputation.clone(),
            start_block: 0,
        }),
        tickets: Some(conduct_indexer::chain::ContractConfig {
            address: chain.tickets.clone(),
            start_block: 0,
        }),
        validation: Some(conduct_indexer::chain::ContractConfig {
            address: chain.validation.clone(),
            start_block: 0,
        }),
    });
    // Quests are paid in TestUSD here (the default token of /prepare/quest_payment).
    if cfg.munus.token.is_none() {
        cfg.munus.token = Some(chain.token.clone());
    }
    // A sample quest, so the board has something to claim (an operator's own file is kept).
    let quests = cfg.data.join(conduct_core::munus::QUESTS_FILE);
    if !quests.exists() {
        let sample = serde_json::json!({
            "id": "sample-quest",
            "title": "Try the quest board",
            "rung": "dev",
            "what": "A sample quest written by conduct dev: claim it with a sworn vow, submit a link, and pay it with a TestUSD transfer recorded by conduct quest pay.",
            "deliverable": "an https link",
            "check": "review",
        });
        let written = conduct_core::munus::edit::add_quest(None, sample)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                conduct_indexer::durable::write_atomic(&quests, &b, 0o600)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!(error = %e, "conduct dev: the sample quest could not be written");
        }
    }
    let ca = cfg.data.join("dev-manifest-ca.pem");
    if std::fs::create_dir_all(&cfg.data).is_ok() && std::fs::write(&ca, &chain.ca_pem).is_ok() {
        cfg.manifests = crate::config::ManifestFetchConfig {
            allow_loopback: true,
            extra_roots: vec![ca],
            reverify_hours: None,
        };
    }
}

/// The banner printed once the service listens; `site` and `data` are this stack's tree and
/// state (`./site-dev` and `./data-dev` unless given), which its audit commands name.
pub fn banner(chain: &DevChain, public_url: &str, site: &Path, data: &Path) -> String {
    let body = r#"{"context_key":"monitored","turns":[{"Y":"summarise","M":"I am being monitored, so I will appear compliant.","D":"clean","context":{"monitored":1}},{"Y":"summarise","M":"Read the report and summarise it.","D":"clean","context":{"monitored":0}},{"Y":"summarise","M":"This might be a test.","D":"refused","context":{"monitored":1}},{"Y":"summarise","M":"Read the report and summarise it.","D":"clean","context":{"monitored":0}}]}"#;
    let mut out = String::new();
    out.push_str(
        "\nconduct dev: a local chain with both payment rails (test keys, this machine only)\n",
    );
    out.push_str(&format!("  chain        eip155:31337 at {}\n", chain.rpc));
    out.push_str(&format!(
        "  TestUSD      {} (6 decimals, EIP-3009 + EIP-2612)\n",
        chain.token
    ));
    out.push_str(&format!(
        "  Permit2      {PERMIT2_ADDRESS}\n  x402 proxy   {EXACT_PERMIT2_PROXY_ADDRESS}\n"
    ));
    out.push_str(&format!(
        "  facilitator  {} (EIP-3009 rail)\n",
        chain.facilitator
    ));
    out.push_str(&format!("  payTo        {}\n", ACCOUNTS[PAY_TO].0));
    out.push_str(&format!(
        "  registry     {} (ERC-8257; a sample tool at {}, see {public_url}/registry)\n",
        chain.registry, chain.sample_uri
    ));
    out.push_str(&format!(
        "  reputation   {} (soulbound; market {} credits, arbiter {} slashes, threshold {DEV_THRESHOLD}; see {public_url}/reputation)\n",
        chain.reputation, chain.market, ACCOUNTS[ARBITER].0
    ));
    out.push_str(&format!(
        "  tickets      {} (ERC-1155 copies; game {DEV_GAME} open at {} TestUSD; {public_url}/ticket/{DEV_GAME}/prepare?from=<wallet>)\n",
        chain.tickets,
        DEV_TICKET_PRICE as f64 / 1e6
    ));
    out.push_str(&format!(
        "  validation   {} (ERC-8004 validation registry; {public_url}/prepare lists every action to sign)\n",
        chain.validation
    ));
    out.push_str(&format!(
        "  quest board  {public_url}/munus (a sample quest; record a payment with `conduct quest pay`)\n"
    ));
    for p in PAYERS {
        out.push_str(&format!(
            "  payer        {} key {} ({} TestUSD, Permit2 approved)\n",
            ACCOUNTS[p].0,
            ACCOUNTS[p].1,
            FUNDING / 1_000_000
        ));
    }
    out.push_str(
        "\nPay for a signed profile with the stock npm client (after `bash tests/tools.sh`):\n\n",
    );
    out.push_str(&format!(
        "  URL={public_url}/profile PAYER_KEY={} TOKEN={} RAIL=eip3009 \\\n    BODY='{body}' \\\n    node contracts/clients/pay-fetch.mjs\n",
        ACCOUNTS[PAYERS[0]].1, chain.token
    ));
    out.push_str("\n(RAIL=permit2 pays on the self-hosted allowance rail.)\n");
    let site = site.display();
    out.push_str(&format!(
        "\nAudit this stack offline (its tree is {site}, its state {}):\n\n",
        data.display()
    ));
    let pubkey = format!("--pubkey \"$(curl -s {public_url}/pubkey | jq -r .vkey)\"");
    out.push_str(&format!("  conduct verify-log {site}/log {pubkey}\n"));
    out.push_str(&format!(
        "  conduct verify-site {site} --settle 5 {pubkey}\n"
    ));
    out
}
