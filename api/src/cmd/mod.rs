//! The command room: the `conduct` subcommands (serve the service, run it locally, render its
//! site, attest or verify offline, hash ERC-8257 tool manifests, edit the quest board, print the
//! nginx config). `main.rs` only calls [`main`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{Config, FileConfig, Overrides};
use quest::{edit_quests, QuestCmd};

pub mod dev;
pub mod dev_tls;
pub mod meter_eval;
pub mod nginx;
pub mod quest;
pub mod serve;
pub mod verify;

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
    /// Where the durable tables live: a postgres:// URL (default: SQLite in the data
    /// directory).
    #[arg(long, env = "CONDUCT_STATE")]
    state: Option<String>,
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
        /// Address of `GET /metrics` (default: loopback, the listen port plus 1000), or off.
        #[arg(long, env = "CONDUCT_METRICS_LISTEN")]
        metrics_listen: Option<String>,
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
    /// Verify a signed object offline; exit 0 only when it verifies. With --trace, it must be
    /// an attestation of that trace whose numbers are what its meter (meter/1 or meter/2)
    /// gives.
    Verify {
        /// The signed JSON file ("-" for standard input).
        file: PathBuf,
        /// Pinned public key: base64 of 32 bytes, or a C2SP vkey.
        #[arg(long, env = "CONDUCT_PUBKEY")]
        pubkey: String,
        /// The trace the attestation attests (JSON, as posted to /profile): recompute its
        /// numbers with the meter the attestation names.
        #[arg(long)]
        trace: Option<PathBuf>,
    },
    /// Audit a copy of the transparency log offline (checkpoint signature, every entry, tile
    /// and root); exit 0 only when everything verifies.
    VerifyLog {
        /// The log: a directory holding `checkpoint` and `tile/` (e.g. `site/log`), a URL
        /// (e.g. `http://localhost:8402/log`), or a bucket (`s3://bucket/prefix/log`, with the
        /// standard AWS environment).
        location: String,
        /// Pinned log key as a C2SP vkey (`/pubkey` field `vkey`).
        #[arg(long, env = "CONDUCT_PUBKEY")]
        pubkey: String,
    },
    /// Check a mirror of the signed tree offline (manifest signature and expiry, every file's
    /// hash, every snapshot's signature, no unlisted files, the log); exit 0 only when
    /// everything verifies.
    VerifySite {
        /// The tree: a directory (e.g. an rsync copy of `site/`), a base URL, or a bucket
        /// (`s3://bucket/prefix`, with the standard AWS environment).
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
    /// Print the shipped nginx config: the tree served from disk or a bucket with the api's
    /// clean URLs and content negotiation, the dynamic routes proxied to the api.
    NginxConf {
        /// The site directory nginx serves.
        #[arg(
            long,
            required_unless_present = "bucket_url",
            conflicts_with = "bucket_url"
        )]
        root: Option<String>,
        /// Or the bucket's base URL, the tree's prefix included (path style
        /// `http://host:port/bucket/prefix`, or virtual-hosted), read without credentials: a
        /// public-read bucket or its website endpoint.
        #[arg(long)]
        bucket_url: Option<String>,
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
    /// The meter on public transcripts (library/METER.md, "On real transcripts"): how
    /// lexicon/1 and lexicon/2 split labelled scratchpads (the held-out gold_106 among them),
    /// and the four quantities of monitored/unmonitored case studies under meter/1 and
    /// meter/2, with 20 controls whose C is shuffled.
    MeterEval {
        /// The labelled and paired transcripts (train.jsonl, dev.jsonl, gold_106.jsonl,
        /// sycophant_paired.jsonl).
        #[arg(long, default_value = "corpus/transcripts")]
        corpus: PathBuf,
        /// More paired transcripts (JSONL of {y, watched, m, d}).
        #[arg(long)]
        paired: Vec<PathBuf>,
        /// Print JSON instead of Markdown tables.
        #[arg(long)]
        json: bool,
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

fn config(common: &Common, extra: Overrides) -> Result<Config, crate::error::Error> {
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
            state: common.state.clone(),
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
            metrics_listen,
            site,
            demo_daily_cap,
            trust_forwarded_for,
        } => {
            let cfg = config(
                &common,
                Overrides {
                    listen,
                    metrics_listen,
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
                let chain = dev::start(anvil).await?;
                dev::configure(&mut cfg, &chain);
                let chain = std::sync::Arc::new(chain);
                let c2 = chain.clone();
                let (site, data) = (cfg.site.clone(), cfg.data.clone());
                let banner: serve::Banner =
                    Box::new(move |url: &str| dev::banner(&c2, url, &site, &data));
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
                None => crate::sources::service_now(),
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
            let accepts = crate::payment::Rails::advertised(&cfg.rails, crate::config::PRICE_USD)?;
            let state = serve::open_state(&cfg).map_err(|e| format!("state: {e}"))?;
            let started = std::time::Instant::now();
            let (publisher, rendered) = serve::render_site(&cfg, &key, &accepts, &state, as_of)?;
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
                crate::handlers::profile::score(&body, crate::sources::service_now(), Some(&key))
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
        Cmd::Verify {
            file,
            pubkey,
            trace,
        } => verify::verify(file, pubkey, trace),
        Cmd::VerifyLog { location, pubkey } => Ok(verify::verify_log(&location, &pubkey)),
        Cmd::VerifySite {
            location,
            pubkey,
            settle,
        } => Ok(verify::verify_site(&location, &pubkey, settle)),

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
        Cmd::ManifestHash { file } => verify::manifest_hash(&file),
        Cmd::MeterEval {
            corpus,
            paired,
            json,
        } => Ok(meter_eval::meter_eval(&corpus, &paired, json)?),
        Cmd::NginxConf {
            root,
            bucket_url,
            upstream,
            listen,
            server_name,
        } => {
            let origin = match (root, bucket_url) {
                (_, Some(url)) => nginx::Origin::Bucket(url),
                // nginx resolves a relative root against its prefix, not this directory.
                (Some(root), None) => nginx::Origin::Dir(
                    std::fs::canonicalize(&root)
                        .map(|p| p.display().to_string())
                        .unwrap_or(root),
                ),
                (None, None) => return Err("nginx-conf: --root or --bucket-url".into()),
            };
            let o = nginx::NginxOptions {
                origin,
                upstream,
                listen,
                server_name,
            };
            print!("{}", nginx::nginx_conf(&o));
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

/// The `conduct` binary: parse the command line, run the subcommand, report an error as text
/// (exit 2).
pub fn main() -> ExitCode {
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
