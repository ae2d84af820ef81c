//! `conduct serve`: load or create the key, open the store and the ledger, render the static
//! pages, start the live site and the service's tasks, bind, and serve through the HTTP room
//! ([`crate::http::server`]) until SIGTERM or Ctrl-C. `conduct render` is [`render_site`].

use std::sync::Arc;

use conduct_core::signing::ServiceKey;
use conduct_indexer::keystore;
use conduct_indexer::tree::{SharedTree, Tree};
use conduct_renderer::{PostedPrice, SiteInput};

use conduct_indexer::ledger::{Ledger, LedgerReader, Sequencer};
use conduct_indexer::state::State;
use conduct_indexer::vows::VowReader;
use conduct_renderer::publish::Publisher;

use crate::config::{Config, PRICE_USD};
use crate::error::Error;
use crate::http::conn::Limits;
use crate::payment::Rails;
use crate::routes;
use crate::sources::service_now;
use crate::state::{App, Parts};
use conduct_indexer::chain::rpc::Rpc;
use conduct_indexer::munus::keeper::{Keeper, PaymentChain};
use conduct_indexer::munus::PaymentFlags;
use conduct_renderer::live::familiar::FamiliarSource;
use conduct_renderer::live::munus::MunusSource;
use conduct_renderer::live::registry::RegistrySource;
use conduct_renderer::live::reputation::ReputationSource;
use conduct_renderer::live::vows::{AskInterpretation, VowSource};
use conduct_renderer::live::{self, LiveSite, Source};

/// Load the key for `cfg`, creating it on first start.
pub fn load_key(cfg: &Config) -> Result<ServiceKey, Error> {
    let (key, created) = keystore::load_or_create(&cfg.data, &cfg.origin())?;
    if created {
        tracing::info!(
            "generated a new signing key in {} (key id {})",
            keystore::key_path(&cfg.data).display(),
            key.key_id_hex()
        );
    }
    if key.name() != cfg.origin() {
        tracing::warn!(
            "the log origin was fixed at first start as {} (this address would give {})",
            key.name(),
            cfg.origin()
        );
    }
    Ok(key)
}

/// The hive files (`/hive/profile`, `/hive/mark.svg`): the Nostr key of `cfg.data` (created
/// on first start; never logged, only its npub) signs the kind-0 profile, whose picture is the
/// mark of `key`'s id.
pub fn hive(cfg: &Config, key: &ServiceKey) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let (nostr, created) = conduct_indexer::nostr::load_or_create(&cfg.data)?;
    if created {
        tracing::info!(
            "generated a new Nostr key in {} ({})",
            conduct_indexer::nostr::key_path(&cfg.data).display(),
            nostr.npub()
        );
    }
    let content = conduct_indexer::nostr::service_profile_content(&cfg.public_url);
    let event = conduct_indexer::nostr::profile_event(
        &cfg.data,
        &nostr,
        &content,
        conduct_indexer::clock::wall_now(),
    )?;
    Ok(conduct_renderer::hive::hive_files(
        &event,
        &key.key_id_hex(),
    ))
}

/// The site input (static pages) of `cfg` as of `as_of`.
fn site_input<'a>(
    cfg: &'a Config,
    key: &'a ServiceKey,
    routes: &'a [conduct_renderer::RouteInfo],
    accepts: &'a [serde_json::Value],
    posted: &'a [conduct_renderer::PostedPrice<'a>],
    as_of: u64,
) -> SiteInput<'a> {
    SiteInput {
        key,
        public_url: &cfg.public_url,
        routes,
        accepts,
        price_usd: PRICE_USD,
        posted,
        demo_daily_cap: cfg.demo_daily_cap,
        as_of,
        manifest_ttl: cfg.manifest_ttl,
    }
}

/// Render the whole tree for `cfg` into `cfg.site` as of `as_of` (`conduct render`): the
/// static pages and every vow's pages, with rule-based readings unless a model reading is
/// kept. Returns the publisher (it counts the files it wrote) and the number of vows.
pub fn render_site(
    cfg: &Config,
    key: &ServiceKey,
    accepts: &[serde_json::Value],
    state: &State,
    as_of: u64,
) -> Result<(Publisher, usize), Error> {
    let vows = Arc::new(state.vows()?);
    let infos = routes::infos();
    let labor = crate::payment::Rails::advertised(&cfg.rails, &cfg.familiar.labor_price_usd)?;
    let posted = labor_price(cfg, &labor);
    let input = site_input(cfg, key, &infos, accepts, &posted, as_of);
    let count = vows.all()?.len();
    // Every record below this is in what the render reads.
    let log_size = vows.log_size()?;
    let chain = crate::chain::open(cfg, state)?;
    let mut sources = live_sources(
        cfg,
        key,
        state,
        &chain,
        vows,
        Arc::new(PaymentFlags::default()),
        None,
    )?;
    let mark_error = |e: std::io::Error| {
        conduct_renderer::RenderError::Input(format!("the integration mark: {e}"))
    };
    // Opened before the files are written, so the barrier below reports any write-back error.
    let site = open_site(cfg, false)?;
    let clean = take_clean_stop(cfg, site.as_ref());
    let mut publisher = live::startup(&input, &site, Some(&round_mark(cfg)), clean, &mut sources)?;
    publisher
        .put_many(hive(cfg, key)?)
        .map_err(|e| conduct_renderer::RenderError::Input(format!("hive: {e}")))?;
    let signed_from = conduct_indexer::clock::wall_now();
    publisher.write_manifest(key, signed_from, cfg.manifest_ttl)?;
    // The whole tree shows the log below `log_size` and every window up to `as_of`, and the
    // manifest just signed lists it.
    // Rendered without a model (kept model readings are not shown): a `serve` with one
    // configured must not take this mark, and re-renders every vow (asking for readings).
    conduct_indexer::integrated::write(
        &mark_place_as(cfg, key, false),
        site.as_ref(),
        conduct_indexer::integrated::Integrated { log_size, as_of },
        signed_from.saturating_sub(1),
    )
    .map_err(mark_error)?;
    // Nothing else writes the tree (and the walk ran, or the tree was clean): the next start
    // need not walk it.
    write_clean_stop(cfg, site.as_ref());
    Ok((publisher, count))
}

/// Where the manifest's round mark is kept: beside the state, outside the tree a mirror copies
/// (`Publisher::mark_rounds_at`).
fn round_mark(cfg: &Config) -> std::path::PathBuf {
    cfg.data.join("manifest-closed")
}

/// The state `cfg.state` names (a PostgreSQL database), or SQLite in `cfg.data`: the schema
/// created or migrated.
pub fn open_state(cfg: &Config) -> Result<State, Error> {
    Ok(State::open(cfg.state.as_deref(), &cfg.data)?)
}

/// The tree `cfg.site` names (a directory, or `s3://bucket/prefix`), opened once for the
/// whole run; a running service's directory keeps its spare pool in `<data>/spares/`
/// (`serving`).
pub fn open_site(cfg: &Config, serving: bool) -> Result<SharedTree, Error> {
    let site = cfg.site.to_string_lossy();
    let spares = serving.then(|| cfg.data.join("spares"));
    conduct_indexer::tree::open(&site, spares.as_deref())
        .map_err(|e| Error::Config(format!("site {site}: {e}")))
}

/// What only the server gives the vows' source: it reads its signed pages back from the
/// tree, and asks for model readings through `ask`.
struct Serving {
    ask: Option<AskInterpretation>,
    site: SharedTree,
}

/// The live site's sources (handlers name them by [`crate::sources`]'s names, in any order):
/// the one list both the full render (`serving` absent) and the server build.
fn live_sources(
    cfg: &Config,
    key: &ServiceKey,
    state: &State,
    chain: &crate::chain::ChainParts,
    vows: Arc<VowReader>,
    flags: Arc<PaymentFlags>,
    serving: Option<Serving>,
) -> Result<Vec<Box<dyn Source>>, Error> {
    let (ask, site) = serving.map_or((None, None), |s| (s.ask, Some(s.site)));
    let vow_source = VowSource::new(
        key.clone(),
        &cfg.public_url,
        vows.clone(),
        ask,
        routes::html_pages(),
    );
    let vow_source = match site {
        Some(site) => vow_source.with_tree(site),
        None => vow_source,
    };
    Ok(vec![
        Box::new(with_resume_points(vow_source, cfg, key, state)),
        Box::new(registry_source(cfg, key, chain, vows.clone())),
        Box::new(MunusSource::new(
            key.clone(),
            &cfg.public_url,
            &cfg.data,
            Arc::new(state.munus()?),
            flags,
        )),
        Box::new(reputation_source(cfg, key, chain)),
        Box::new(FamiliarSource::new(key.clone(), vows)),
    ])
}

/// `source` with the resume points of `cfg`'s tree (ARCHITECTURE.md, "The write path of a
/// report-in"), kept in `state`. They are derived: when they cannot be opened, the source
/// reads whole chains instead, and the service still starts.
fn with_resume_points(
    source: VowSource,
    cfg: &Config,
    key: &ServiceKey,
    state: &State,
) -> VowSource {
    match state.resume_points() {
        Ok(points) => source.with_resume_points(points, &resume_name(cfg, key)),
        Err(e) => {
            tracing::warn!(error = %e, "no resume points: a vow not in memory is read whole");
            source
        }
    }
}

/// What a vow's kept render state depends on besides the chain (the binary and the key, not
/// the model: a state holds no reading), and the tree its chain pages were written to (a
/// point says the pages before it are there), so `conduct render` and `conduct serve` of one
/// tree share them.
fn resume_name(cfg: &Config, key: &ServiceKey) -> String {
    let site = std::path::absolute(&cfg.site).unwrap_or_else(|_| cfg.site.clone());
    format!(
        "{}\n{}",
        mark_place_as(cfg, key, false).render,
        site.display()
    )
}

/// `POST /familiar/summon` posted at the labor price, with its `accepts` at that price.
fn labor_price<'a>(cfg: &'a Config, accepts: &'a [serde_json::Value]) -> [PostedPrice<'a>; 1] {
    [PostedPrice {
        path: "/familiar/summon",
        price_usd: &cfg.familiar.labor_price_usd,
        accepts,
    }]
}

/// The chain payments are re-read from (none without `[chain]`).
fn payment_chain(cfg: &Config) -> Result<Option<PaymentChain>, Error> {
    let Some(c) = &cfg.chain else {
        return Ok(None);
    };
    let timeout = std::time::Duration::from_secs(c.rpc_timeout_seconds);
    let rpc = Rpc::new(&c.rpc, timeout).map_err(|e| Error::Config(format!("[chain] rpc: {e}")))?;
    Ok(Some(PaymentChain {
        chain_id: c.chain_id,
        rpc,
    }))
}

/// The reputation source of `cfg` (the live site's [`crate::sources::REPUTATION`]).
fn reputation_source(
    cfg: &Config,
    key: &ServiceKey,
    chain: &crate::chain::ChainParts,
) -> ReputationSource {
    ReputationSource::new(
        key.clone(),
        cfg.chain.clone(),
        chain.db.clone(),
        chain.status.clone(),
        chain.probe.clone(),
    )
}

/// The registry source of `cfg` (the live site's [`crate::sources::REGISTRY`]).
fn registry_source(
    cfg: &Config,
    key: &ServiceKey,
    chain: &crate::chain::ChainParts,
    vows: Arc<VowReader>,
) -> RegistrySource {
    RegistrySource::new(
        key.clone(),
        &cfg.public_url,
        cfg.chain.clone(),
        chain.db.clone(),
        chain.status.clone(),
        vows,
    )
}

/// Write the free-tier counters to the store every second (they survive a restart).
async fn flush_caps(app: Arc<App>) {
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let (a, now) = (app.clone(), service_now());
        if let Ok(Err(e)) =
            tokio::task::spawn_blocking(move || a.caps.flush(a.store.as_ref(), now)).await
        {
            tracing::warn!(error = %e, "writing the free-tier counters failed; retried");
        }
    }
}

/// Run the service until SIGTERM or Ctrl-C.
pub async fn serve(cfg: Config) -> Result<(), Error> {
    serve_with(cfg, None).await
}

/// Text printed after the listening line, given the public URL.
pub type Banner = Box<dyn FnOnce(&str) -> String + Send>;

/// Run the service, printing `banner` once it listens.
pub async fn serve_with(mut cfg: Config, banner: Option<Banner>) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| Error::Listen {
            addr: cfg.listen,
            source,
        })?;
    let local = listener.local_addr().map_err(|source| Error::Listen {
        addr: cfg.listen,
        source,
    })?;
    cfg.bound_to(local);
    // The operators' metrics, on their own listener (never the public port).
    let metrics = match cfg.metrics_listen {
        Some(addr) => Some(crate::http::metrics::bind(addr).await?),
        None => None,
    };
    let key = load_key(&cfg)?;
    let rails = Rails::from_config(&cfg.rails, PRICE_USD).await?;
    // The same rails at the posted labor price (the familiar's 402 challenge).
    let labor_rails = rails.at_price(&cfg.rails, &cfg.familiar.labor_price_usd)?;
    let t0 = std::time::Instant::now();
    let phase = |what: &str| tracing::info!(ms = t0.elapsed().as_millis() as u64, "{what}");
    let state = open_state(&cfg)?;
    let store = state.tables();
    // Before anything of this run writes into the tree.
    let site_tree = open_site(&cfg, true)?;
    let clean = take_clean_stop(&cfg, site_tree.as_ref());
    // Open the ledger: it publishes (or repairs) the log under site/log.
    let ledger = Ledger::open_log(state.log()?, key.clone(), site_tree.clone())?;
    phase("store open, log verified and repaired");
    let seq = Arc::new(Sequencer::spawn(
        ledger,
        conduct_indexer::ledger::DEFAULT_MAX_BATCH,
    )?);
    let log = Arc::new(LedgerReader::over(state.log()?));
    let vows = Arc::new(state.vows()?);
    let donated = state.donated()?;
    // The live site: the whole tree rendered now, then kept current by the engine. Model
    // readings are asked for through a channel whose consumer needs the engine's handle.
    let (ask_tx, ask_rx) = tokio::sync::mpsc::unbounded_channel();
    // Each round's asks are kept before they are sent (a restart asks again for those left).
    let asks_kept = store.clone();
    let ask: Option<AskInterpretation> =
        crate::interpretation::uses_model(&cfg.models).then(|| {
            Box::new(move |asks: Vec<(String, u64, _)>| {
                let which: Vec<(String, u64)> =
                    asks.iter().map(|(v, s, _)| (v.clone(), *s)).collect();
                asks_kept
                    .put_readings_asked(&which, service_now())
                    .map_err(|e| format!("keeping the model readings asked for: {e}"))?;
                for ask in asks {
                    let _ = ask_tx.send(ask);
                }
                Ok(())
            }) as AskInterpretation
        });
    let chain = crate::chain::open(&cfg, &state)?;
    let flags = Arc::new(PaymentFlags::default());
    let sources = live_sources(
        &cfg,
        &key,
        &state,
        &chain,
        vows.clone(),
        flags.clone(),
        Some(Serving {
            ask,
            site: site_tree.clone(),
        }),
    )?;
    let infos = routes::infos();
    let posted = labor_price(&cfg, &labor_rails.accepts);
    let input = site_input(&cfg, &key, &infos, &rails.accepts, &posted, service_now());
    // Restart fast: serve the tree already on disk (its previous manifest, checked against
    // the key, lists it) and bring every vow's files up to date in the background.
    let mut publisher = live::static_tree(&input, &site_tree, Some(&round_mark(&cfg)))?;
    publisher
        .put_many(hive(&cfg, &key)?)
        .map_err(|e| conduct_renderer::RenderError::Input(format!("hive: {e}")))?;
    phase("static pages written");
    let listed = publisher.seed_from_manifest(&key) > 0;
    phase("previous manifest read");
    // What the previous run had durably integrated: only what changed since is re-rendered.
    let place = mark_place(&cfg, &key);
    let marks = conduct_renderer::live::Marks {
        hooked: Some(seq.hooked()),
        since: manifest_signed_at(site_tree.as_ref())
            .and_then(|at| conduct_indexer::integrated::read(&place, site_tree.as_ref(), at)),
        place,
    };
    tracing::info!(mark = ?marks.since, "integration mark read");
    let site = LiveSite::start_catching_up(
        publisher,
        key.clone(),
        cfg.manifest_ttl,
        sources,
        listed,
        Some(marks),
        clean,
    )?;
    crate::interpretation::spawn_interpretations(
        cfg.models.clone(),
        store.clone(),
        site.clone(),
        ask_rx,
    );
    crate::chain::spawn(&cfg, &chain, site.clone())?;
    let keeper = Arc::new(Keeper::new(
        key.clone(),
        &cfg.data,
        seq.clone(),
        Arc::new(state.munus()?),
        flags,
        payment_chain(&cfg)?,
    ));
    tokio::spawn(crate::board::run(
        keeper.clone(),
        site.clone(),
        cfg.munus.recheck_seconds,
    ));
    phase("live site started (index pages and backlog on its thread)");
    conduct_core::meter::warm_up();
    crate::handlers::oracle::warm_up();
    println!(
        "conduct listening on http://{local} (public URL {}, key id {}, site {})",
        cfg.public_url,
        key.key_id_hex(),
        cfg.site.display()
    );
    tracing::info!(
        address = %local,
        public_url = %cfg.public_url,
        data = %cfg.data.display(),
        site = %cfg.site.display(),
        key_id = %key.key_id_hex(),
        rails = %rails.rails.iter().map(|r| r.name.clone()).collect::<Vec<_>>().join(","),
        "conduct serving"
    );
    let offset = conduct_indexer::clock::offset();
    if offset != 0 {
        tracing::warn!(
            offset_seconds = offset,
            "the service clock is shifted by {} (tests only): records, windows and lapses are dated on it",
            conduct_indexer::clock::OFFSET_VAR
        );
    }
    if let Some((listener, addr)) = metrics {
        println!("conduct metrics on http://{addr}/metrics");
        tokio::spawn(crate::http::metrics::serve(listener));
    }
    if let Some(b) = banner {
        println!("{}", b(&cfg.public_url));
    }
    let parts = Parts {
        rails,
        labor_rails,
        store,
        log,
        seq,
        vows,
        donated,
        site,
        tree: site_tree.clone(),
        chain: chain.status.clone(),
        munus: keeper,
        chain_parts: Arc::new(chain),
    };
    let limits = Limits::from_config(&cfg);
    let app = Arc::new(App::new(cfg, key, parts));
    app.caps.restore(app.store.as_ref(), service_now())?;
    tokio::spawn(flush_caps(app.clone()));
    crate::http::server::run(listener, app.clone(), limits).await;
    let (caps_app, now) = (app.clone(), service_now());
    let _ = tokio::task::spawn_blocking(move || caps_app.caps.flush(caps_app.store.as_ref(), now))
        .await;
    // No more records (what is pending is committed, and the log's files written), then the
    // last pages, manifest and integration mark, so a restart re-renders nothing.
    let seq = app.seq.clone();
    let sequenced = tokio::task::spawn_blocking(move || seq.stop()).await;
    if let Ok(Err(e)) = &sequenced {
        tracing::warn!(error = %e, "the sequencer did not stop cleanly");
    }
    let site = app.site.clone();
    let stopped = tokio::task::spawn_blocking(move || site.stop(STOP_WAIT)).await;
    if !matches!(stopped, Ok(true)) {
        tracing::warn!(
            "the live site did not stop in time; the next start re-renders from the last mark"
        );
    }
    // Every writer of the tree is joined, and no other run's temporary is left in it: the
    // next start need not walk it.
    if matches!(sequenced, Ok(Ok(()))) && matches!(stopped, Ok(true)) && app.site.swept() {
        let (cfg, tree) = (app.cfg.clone(), site_tree.clone());
        let _ = tokio::task::spawn_blocking(move || write_clean_stop(&cfg, tree.as_ref())).await;
    }
    Ok(())
}

/// Take the clean-stop mark the previous run left (`conduct_indexer::clean_stop`): whether
/// the tree holds no temporary of its writes. A mark that cannot be removed is not taken.
fn take_clean_stop(cfg: &Config, site: &dyn Tree) -> bool {
    match conduct_indexer::clean_stop::take(&cfg.data, site) {
        Ok(clean) => {
            tracing::info!(clean, "clean-stop mark read");
            clean
        }
        Err(e) => {
            tracing::warn!(error = %e, "the clean-stop mark could not be taken; the tree is walked for temporaries");
            false
        }
    }
}

/// Write the clean-stop mark once every writer of the tree is joined (a failure only costs
/// the next start its walk for temporaries).
fn write_clean_stop(cfg: &Config, site: &dyn Tree) {
    match conduct_indexer::clean_stop::write(&cfg.data, site) {
        Ok(()) => tracing::info!("clean-stop mark written"),
        Err(e) => tracing::warn!(error = %e, "the clean-stop mark was not written"),
    }
}

/// Longest a graceful shutdown waits for the live site's last writes.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(8);

/// When the manifest on disk (`manifest.json`, the trie's root) was signed: its `as_of`, unix
/// seconds. An integration mark counts only when this manifest lists its files.
fn manifest_signed_at(site: &dyn Tree) -> Option<u64> {
    let bytes = site.get(conduct_core::manifest::ROOT_PATH).ok()??;
    let root: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    conduct_core::time::parse_rfc3339(root["as_of"].as_str()?)
}

/// Where the integration marks are kept, and what the rendered bytes depend on besides the
/// state: this binary (its version, size and modification time), the public URL, the key, and
/// whether a model writes readings. A mark written under anything else is not taken, so an
/// upgrade or a new public URL re-renders every page once.
fn mark_place(cfg: &Config, key: &ServiceKey) -> conduct_indexer::integrated::Place {
    mark_place_as(cfg, key, crate::interpretation::uses_model(&cfg.models))
}

/// [`mark_place`] of pages rendered with a model writing readings or not (`model`).
fn mark_place_as(
    cfg: &Config,
    key: &ServiceKey,
    model: bool,
) -> conduct_indexer::integrated::Place {
    use sha2::Digest;
    let binary = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let at = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} {at}", m.len())
        })
        .unwrap_or_default();
    let render = format!(
        "{}\n{binary}\n{}\n{}\n{}",
        env!("CARGO_PKG_VERSION"),
        cfg.public_url,
        key.key_id_hex(),
        model
    );
    conduct_indexer::integrated::Place {
        data: cfg.data.clone(),
        render: hex::encode(sha2::Sha256::digest(render.as_bytes())),
    }
}
