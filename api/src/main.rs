//! The `conduct` command: serve the service, render its site, attest or verify offline, and
//! hash ERC-8257 tool manifests.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use conduct_api::config::{Config, FileConfig, Overrides};
use conduct_api::serve;
use conduct_verify::Error as VerifyError;

#[derive(Parser)]
#[command(name = "conduct", version, about = "Conduct Attestation Service")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone, Default)]
struct Common {
    /// Config file (TOML). Defaults to ./conduct.toml when present.
    #[arg(long, env = "CONDUCT_CONFIG")]
    config: Option<PathBuf>,
    /// State directory (SQLite, keys/).
    #[arg(long, env = "CONDUCT_DATA")]
    data: Option<PathBuf>,
    /// Public base URL; its host names the log and the signing key.
    #[arg(long, env = "CONDUCT_PUBLIC_URL")]
    public_url: Option<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the service: generate the key on first start, render the site, serve it.
    Serve {
        #[command(flatten)]
        common: Common,
        /// Address to listen on.
        #[arg(long, env = "CONDUCT_LISTEN")]
        listen: Option<String>,
        /// Directory of the rendered static tree.
        #[arg(long, env = "CONDUCT_SITE")]
        site: Option<PathBuf>,
        /// Free /demo/profile calls per IP per UTC day (0 lifts the cap).
        #[arg(long, env = "CONDUCT_DEMO_DAILY_CAP")]
        demo_daily_cap: Option<u32>,
        /// Take the client IP from X-Forwarded-For (only behind a trusted proxy).
        #[arg(long, env = "CONDUCT_TRUST_FORWARDED_FOR")]
        trust_forwarded_for: Option<bool>,
    },
    /// Run the whole stack locally: anvil, contracts, both payment rails, funded test wallets.
    Dev {
        #[command(flatten)]
        common: Common,
        /// Address to listen on.
        #[arg(long, env = "CONDUCT_LISTEN")]
        listen: Option<String>,
        /// Directory of the rendered static tree.
        #[arg(long, env = "CONDUCT_SITE", default_value = "./site-dev")]
        site: PathBuf,
        /// The anvil binary (default: $ANVIL_BIN, the pinned npm copy, then PATH).
        #[arg(long)]
        anvil: Option<PathBuf>,
    },
    /// Render the static tree (every vow included) and exit. The same state and `--as-of`
    /// give byte-identical files; only files whose bytes change are written.
    Render {
        #[command(flatten)]
        common: Common,
        /// Directory of the rendered static tree.
        #[arg(long, env = "CONDUCT_SITE")]
        site: Option<PathBuf>,
        /// The render instant (RFC 3339 UTC, e.g. 2026-11-21T12:00:00Z, or unix seconds);
        /// default: now.
        #[arg(long)]
        as_of: Option<String>,
    },
    /// Score a trace file and print its signed attestation.
    Attest {
        /// The trace (JSON, as posted to /profile).
        trace: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Verify a signed object offline; exit 0 only when it verifies.
    Verify {
        /// The signed JSON file ("-" for standard input).
        file: PathBuf,
        /// Pinned public key: base64 of 32 bytes, or a C2SP vkey.
        #[arg(long, env = "CONDUCT_PUBKEY")]
        pubkey: String,
    },
    /// Audit a copy of the transparency log offline (checkpoint signature, every entry, tile
    /// and root); exit 0 only when everything verifies.
    VerifyLog {
        /// The log: a directory holding `checkpoint` and `tile/` (e.g. `site/log`), or a URL
        /// (e.g. `http://localhost:8402/log`).
        location: String,
        /// Pinned log key as a C2SP vkey (`/pubkey` field `vkey`).
        #[arg(long, env = "CONDUCT_PUBKEY")]
        pubkey: String,
    },
    /// Check a mirror of the signed tree offline (manifest signature and expiry, every file's
    /// hash, every snapshot's signature, no unlisted files, the log); exit 0 only when
    /// everything verifies.
    VerifySite {
        /// The tree: a directory (e.g. an rsync copy of `site/`) or a base URL.
        location: String,
        /// Pinned key as a C2SP vkey (`/pubkey` field `vkey`) or base64.
        #[arg(long, env = "CONDUCT_PUBKEY")]
        pubkey: String,
        /// For a tree being written while it is checked (the service's own site directory,
        /// a live origin): after a failure, wait up to this many seconds for a newer
        /// manifest and check again against it. 0 (the default) checks a copy as it is.
        #[arg(long, default_value_t = 0)]
        settle: u64,
    },
    /// Print the ERC-8257 `manifestHash` of a tool manifest: keccak256 of its RFC 8785 form,
    /// 0x-prefixed lower-case hex. A byte-order mark, a string not in NFC or upper-case hex in
    /// a field the ERC names is refused (never repaired): the reason, naming the field, goes to
    /// stderr and the exit status is 1. The other manifest rules are not checked here.
    ManifestHash {
        /// The manifest file ("-" for standard input).
        file: PathBuf,
    },
    /// Print the shipped nginx config: the tree served from disk with the api's clean URLs and
    /// content negotiation, the dynamic routes proxied to the api.
    NginxConf {
        /// The site directory nginx serves.
        #[arg(long)]
        root: String,
        /// The api's base URL.
        #[arg(long, default_value = "http://127.0.0.1:8402")]
        upstream: String,
        /// nginx `listen` value.
        #[arg(long, default_value = "8080")]
        listen: String,
        /// nginx `server_name`.
        #[arg(long, default_value = "_")]
        server_name: String,
    },
    /// Print the /pubkey document of a data directory's key.
    Pubkey {
        #[command(flatten)]
        common: Common,
    },
    /// Edit the quest board's files in the data directory (`quests.json`, `paid.json`; see
    /// library/MUNUS.md). A running service picks the change up by itself.
    Quest {
        #[command(subcommand)]
        action: QuestCmd,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
enum QuestCmd {
    /// Add a quest.
    Add {
        /// Quest id: 1 to 64 of a-z, 0-9 and -.
        #[arg(long)]
        id: String,
        /// Short title.
        #[arg(long)]
        title: String,
        /// The design rung it belongs to.
        #[arg(long)]
        rung: String,
        /// What the work is.
        #[arg(long)]
        what: String,
        /// What must be delivered.
        #[arg(long)]
        deliverable: String,
        /// How a delivery is checked: review or machine.
        #[arg(long, default_value = "review")]
        check: String,
    },
    /// Retire a quest: it leaves the board and takes no claim (its records stay in the log).
    Retire {
        /// Quest id.
        id: String,
    },
    /// Record a payment made by an on-chain token transfer (re-read from the chain, never
    /// trusted from this row).
    Pay {
        /// The quest paid for.
        #[arg(long)]
        quest: String,
        /// The worker's wallet.
        #[arg(long)]
        to: String,
        /// Amount in the token's base units (a decimal integer).
        #[arg(long)]
        amount: String,
        /// The ERC-20 token transferred.
        #[arg(long)]
        token: String,
        /// The transaction hash.
        #[arg(long)]
        tx: String,
    },
}

/// Apply one `conduct quest` edit to its file in `data`.
fn edit_quests(data: &std::path::Path, action: QuestCmd) -> Result<String, String> {
    use conduct_core::munus::{edit, PAID_FILE, QUESTS_FILE};
    let (file, done) = match &action {
        QuestCmd::Pay { .. } => (PAID_FILE, "payment recorded"),
        QuestCmd::Add { .. } => (QUESTS_FILE, "quest added"),
        QuestCmd::Retire { .. } => (QUESTS_FILE, "quest retired"),
    };
    let path = data.join(file);
    let old = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let new = match action {
        QuestCmd::Add {
            id,
            title,
            rung,
            what,
            deliverable,
            check,
        } => edit::add_quest(
            old.as_deref(),
            serde_json::json!({"id": id, "title": title, "rung": rung, "what": what,
                "deliverable": deliverable, "check": check}),
        ),
        QuestCmd::Retire { id } => edit::retire_quest(old.as_deref(), &id),
        QuestCmd::Pay {
            quest,
            to,
            amount,
            token,
            tx,
        } => edit::add_paid(
            old.as_deref(),
            serde_json::json!({"quest": quest, "to": to, "amount_scry": amount,
                "token": token, "tx": tx}),
        ),
    }
    .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    conduct_indexer::durable::write_atomic(&path, &new, 0o600)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("{done}: {}", path.display()))
}

fn config(common: &Common, extra: Overrides) -> Result<Config, conduct_api::error::Error> {
    let file = match &common.config {
        Some(p) => FileConfig::load(p)?,
        None if std::path::Path::new("conduct.toml").exists() => {
            FileConfig::load(std::path::Path::new("conduct.toml"))?
        }
        None => FileConfig::default(),
    };
    Config::resolve(
        Overrides {
            data: common.data.clone(),
            public_url: common.public_url.clone(),
            ..extra
        },
        file,
    )
}

fn runtime() -> Result<tokio::runtime::Runtime, Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}").into())
}

/// Errors are reported as text by `main` (the one place that may erase their types).
fn run(cli: Cli) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match cli.cmd {
        Cmd::Serve {
            common,
            listen,
            site,
            demo_daily_cap,
            trust_forwarded_for,
        } => {
            let cfg = config(
                &common,
                Overrides {
                    listen,
                    site,
                    demo_daily_cap,
                    trust_forwarded_for,
                    ..Overrides::default()
                },
            )?;
            let rt = runtime()?;
            rt.block_on(serve::serve(cfg))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Dev {
            mut common,
            listen,
            site,
            anvil,
        } => {
            if common.data.is_none() {
                common.data = Some(PathBuf::from("./data-dev"));
            }
            let mut cfg = config(
                &common,
                Overrides {
                    listen,
                    site: Some(site),
                    ..Overrides::default()
                },
            )?;
            let rt = runtime()?;
            rt.block_on(async move {
                let chain = conduct_api::dev::start(anvil).await?;
                conduct_api::dev::configure(&mut cfg, &chain);
                let chain = std::sync::Arc::new(chain);
                let c2 = chain.clone();
                let (site, data) = (cfg.site.clone(), cfg.data.clone());
                let banner: serve::Banner =
                    Box::new(move |url: &str| conduct_api::dev::banner(&c2, url, &site, &data));
                let served = serve::serve_with(cfg, Some(banner)).await;
                drop(chain);
                served
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Render {
            common,
            site,
            as_of,
        } => {
            let as_of = match as_of {
                None => conduct_api::app::service_now(),
                Some(t) => t
                    .parse::<u64>()
                    .ok()
                    .or_else(|| conduct_core::time::parse_rfc3339(&t))
                    .ok_or_else(|| {
                        format!("--as-of {t:?} is neither RFC 3339 UTC nor unix seconds")
                    })?,
            };
            let cfg = config(
                &common,
                Overrides {
                    site,
                    ..Overrides::default()
                },
            )?;
            let key = serve::load_key(&cfg)?;
            let accepts = conduct_api::payment::Rails::advertised(
                &cfg.rails,
                conduct_api::config::PRICE_USD,
            )?;
            let store = conduct_indexer::store::Store::open(&cfg.data)
                .map_err(|e| format!("store: {e}"))?;
            let started = std::time::Instant::now();
            let (publisher, rendered) = serve::render_site(&cfg, &key, &accepts, &store, as_of)?;
            println!(
                "rendered {} as of {} in {:.2} s: {} vows, {} files, {} written",
                cfg.site.display(),
                conduct_core::time::rfc3339(as_of),
                started.elapsed().as_secs_f64(),
                rendered,
                publisher.len(),
                publisher.writes()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Attest { trace, common } => {
            let cfg = config(&common, Overrides::default())?;
            let key = serve::load_key(&cfg)?;
            let body = std::fs::read(&trace).map_err(|e| format!("{}: {e}", trace.display()))?;
            let bytes =
                conduct_api::profile::score(&body, conduct_api::app::service_now(), Some(&key))
                    .map_err(|p| {
                        let mut msg = format!("{}: {}", trace.display(), p.detail);
                        for e in &p.errors {
                            msg.push_str(&format!("\n  {e}"));
                        }
                        msg
                    })?;
            println!("{}", String::from_utf8_lossy(&bytes));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Verify { file, pubkey } => {
            let bytes = if file.as_os_str() == "-" {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
                    .map_err(|e| format!("stdin: {e}"))?;
                v
            } else {
                std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?
            };
            let pinned = match conduct_verify::pinned_key(&pubkey) {
                Ok(k) => k,
                Err(VerifyError::PinnedKey(e)) => return Err(e.into()),
                Err(e) => return Err(e.to_string().into()),
            };
            match conduct_verify::verify_signed(&bytes, &pinned) {
                Ok(_) => {
                    println!("OK: signature verifies");
                    Ok(ExitCode::SUCCESS)
                }
                Err(VerifyError::NotJson { source, .. }) => {
                    Err(format!("{}: not JSON: {source}", file.display()).into())
                }
                Err(VerifyError::Signature { source, .. }) => {
                    println!("FAIL: {source}");
                    Ok(ExitCode::from(1))
                }
                Err(e) => {
                    println!("FAIL: {}", failure(&e));
                    Ok(ExitCode::from(1))
                }
            }
        }
        Cmd::VerifyLog { location, pubkey } => {
            match conduct_verify::verify_log_at(&location, &pubkey) {
                Ok(a) => {
                    println!("OK: {a}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    println!("FAIL: {}", failure(&e));
                    Ok(ExitCode::from(1))
                }
            }
        }
        Cmd::VerifySite {
            location,
            pubkey,
            settle,
        } => {
            let settle = std::time::Duration::from_secs(settle);
            match conduct_verify::verify_site_settled(&location, &pubkey, settle) {
                Ok(a) => {
                    println!("OK: {a}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    println!("FAIL: {}", failure(&e));
                    Ok(ExitCode::from(1))
                }
            }
        }
        Cmd::Quest { action, common } => {
            let cfg = config(&common, Overrides::default())?;
            match edit_quests(&cfg.data, action) {
                Ok(done) => {
                    println!("{done}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("conduct quest: {e}");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Cmd::ManifestHash { file } => {
            let bytes = read_input(&file)?;
            match conduct_core::erc8257::manifest_hash(&bytes) {
                Ok(hash) => {
                    println!("0x{}", hex::encode(hash));
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("conduct: {}: {e}", file.display());
                    Ok(ExitCode::from(1))
                }
            }
        }
        Cmd::NginxConf {
            root,
            upstream,
            listen,
            server_name,
        } => {
            // nginx resolves a relative root against its prefix, not this directory.
            let root = std::fs::canonicalize(&root)
                .map(|p| p.display().to_string())
                .unwrap_or(root);
            let o = conduct_api::nginx::NginxOptions {
                root,
                upstream,
                listen,
                server_name,
            };
            print!("{}", conduct_api::nginx::nginx_conf(&o));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Pubkey { common } => {
            let cfg = config(&common, Overrides::default())?;
            let key = serve::load_key(&cfg)?;
            let doc = serde_json::json!({
                "alg": "ed25519",
                "public_key": key.public_b64(),
                "key_id": key.key_id_hex(),
                "vkey": key.vkey(),
            });
            println!("{doc}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The bytes of `file`, or of standard input for "-".
fn read_input(file: &std::path::Path) -> Result<Vec<u8>, String> {
    if file.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
            .map_err(|e| format!("stdin: {e}"))?;
        Ok(v)
    } else {
        std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))
    }
}

/// A verification failure as the `verify*` commands print it: the pinned key is named by its
/// flag, `--pubkey`.
fn failure(e: &VerifyError) -> String {
    match e {
        VerifyError::PinnedKey(e) => format!("--pubkey: {e}"),
        VerifyError::Log(e) => format!("log: {}", failure(e)),
        e => e.to_string(),
    }
}

/// Logs go to stderr through `tracing`, at the levels `RUST_LOG` names (default `info`, but
/// `warn` for the MCP SDK, which logs the start and end of every stateless `/mcp` request at
/// `info`; one line per request at `debug`). Nothing logs a private key, a payment signature or
/// a trace.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conduct: {e}");
            ExitCode::from(2)
        }
    }
}
