//! Configuration: command-line flags, `CONDUCT_*` environment variables, an optional
//! `conduct.toml`, then built-in defaults, in that order of precedence.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;

/// Default listen address (README.md, "Configuration").
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8402";
/// Default data directory.
pub const DEFAULT_DATA: &str = "./data";
/// Default site directory.
pub const DEFAULT_SITE: &str = "./site";
/// Default free `/demo/profile` calls per IP per UTC day.
pub const DEFAULT_DEMO_CAP: u32 = 50;
/// Price of one paid read in USD. Flat, the same for every caller, never a function of a score.
pub const PRICE_USD: &str = "0.10";
/// Largest accepted request body, bytes (library/ERRORS.md, `too-large`).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// Default seconds a client has to send a request's line and headers.
pub const DEFAULT_HEADER_TIMEOUT: u64 = 10;
/// Default seconds a client has to send a whole request body.
pub const DEFAULT_BODY_TIMEOUT: u64 = 30;
/// Default seconds an idle keep-alive connection is kept open.
pub const DEFAULT_IDLE_TIMEOUT: u64 = 30;
/// Upper bound of the default global connection cap.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default cap of open connections per client IP (IPv6: per /64).
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 64;

/// Keys readable from `conduct.toml` (the scalar keys of the first block also have a flag and a
/// `CONDUCT_*` twin; the caps, rails and reading providers are file-only).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `listen`: socket address to bind.
    pub listen: Option<String>,
    /// `metrics_listen`: where `GET /metrics` is served (library/METRICS.md): an address,
    /// or `off`; default: loopback, the public port plus [`METRICS_PORT_OFFSET`].
    pub metrics_listen: Option<String>,
    /// `data`: state directory (SQLite, keys/).
    pub data: Option<PathBuf>,
    /// `site`: rendered static tree.
    pub site: Option<PathBuf>,
    /// `state`: where the durable tables live: a `postgres://` URL, or absent for SQLite in
    /// `data`.
    pub state: Option<String>,
    /// `public_url`: base URL the service is reached at.
    pub public_url: Option<String>,
    /// `demo_daily_cap`: free demo calls per IP per UTC day; 0 lifts the cap.
    pub demo_daily_cap: Option<u32>,
    /// `trust_forwarded_for`: take the client IP from `X-Forwarded-For` (behind a proxy only).
    pub trust_forwarded_for: Option<bool>,
    /// `trusted_proxies`: how many proxies of our own stand in front (default 1): the client
    /// address is the `X-Forwarded-For` entry that many places from the right.
    pub trusted_proxies: Option<u32>,
    /// `manifest_ttl_hours`: validity of the signed site manifest.
    pub manifest_ttl_hours: Option<u64>,
    /// `[[rails]]`: payment rails, all advertised at once at the one price.
    pub rails: Option<Vec<crate::payment::rails::RailConfig>>,
    /// `vow_daily_cap`: `POST /vow` calls per IP per UTC day; 0 lifts the cap.
    pub vow_daily_cap: Option<u32>,
    /// `report_demo_daily_cap`: `POST /vow/report/demo` calls per IP per UTC day; 0 lifts it.
    pub report_demo_daily_cap: Option<u32>,
    /// `oracle_daily_cap`: `POST /oracle/ask` calls per IP per UTC day; 0 lifts it.
    pub oracle_daily_cap: Option<u32>,
    /// `owner_daily_cap`: owner-signed writes (quest claims and deliveries, npub bindings,
    /// witness pledges) per IP per UTC day; 0 lifts it.
    pub owner_daily_cap: Option<u32>,
    /// `lookup_daily_cap`: live chain reads (prepared calldata, ticket prepares and
    /// entitlements, reputation lookups) per IP per UTC day; 0 lifts it.
    pub lookup_daily_cap: Option<u32>,
    /// `[reading]`: the language-model providers of `/vow/{id}/reading`.
    pub reading: Option<crate::interpretation::ModelConfig>,
    /// `header_timeout_seconds`: time a client has to send a request line and headers.
    pub header_timeout_seconds: Option<u64>,
    /// `body_timeout_seconds`: time a client has to send a whole request body.
    pub body_timeout_seconds: Option<u64>,
    /// `idle_timeout_seconds`: how long an idle keep-alive connection (or a stalled response
    /// write) is kept.
    pub idle_timeout_seconds: Option<u64>,
    /// `max_connections`: open connections at once, all clients together.
    pub max_connections: Option<usize>,
    /// `max_connections_per_ip`: open connections at once per client IP (IPv6: per /64); 0
    /// lifts the cap.
    pub max_connections_per_ip: Option<usize>,
    /// `[chain]`: the chain the indexer follows (absent: none; every chain-backed page says
    /// so).
    pub chain: Option<conduct_indexer::chain::ChainConfig>,
    /// `[manifests]`: how tool manifests are fetched for the registry view.
    pub manifests: Option<ManifestFetchConfig>,
    /// `[munus]`: the quest board.
    pub munus: Option<MunusConfig>,
    /// `[familiar]`: hosted familiars (library/FAMILIARS.md).
    pub familiar: Option<FamiliarConfig>,
}

/// `[familiar]` of `conduct.toml`: hosted familiars (library/FAMILIARS.md).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FamiliarConfig {
    /// `labor_price_usd`: the posted labor price of `POST /familiar/summon` in USD (default
    /// [`DEFAULT_LABOR_PRICE_USD`]); a price of its own, not the read price [`PRICE_USD`], and
    /// the amount of its 402 challenge on every rail.
    #[serde(default = "default_labor_price")]
    pub labor_price_usd: String,
}

/// The default posted labor price of a familiar, USD.
pub const DEFAULT_LABOR_PRICE_USD: &str = "1.00";

fn default_labor_price() -> String {
    DEFAULT_LABOR_PRICE_USD.into()
}

impl Default for FamiliarConfig {
    fn default() -> Self {
        FamiliarConfig {
            labor_price_usd: default_labor_price(),
        }
    }
}

/// True for a positive decimal price in USD (`1`, `1.00`, `0.5`): digits, an optional point
/// and at most 6 decimals, not zero.
fn positive_price(p: &str) -> bool {
    let (whole, frac) = p.split_once('.').unwrap_or((p, ""));
    !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
        && frac.len() <= 6
        && !(p.contains('.') && frac.is_empty())
        && p.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// `[munus]` of `conduct.toml`: the quest board (library/MUNUS.md).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MunusConfig {
    /// `recheck_seconds`: every recorded payment is re-read from the chain this often
    /// (default 60; at least 1).
    #[serde(default = "default_recheck")]
    pub recheck_seconds: u64,
    /// `token`: the ERC-20 the operator pays quests in (0x and 40 hex digits), the default
    /// token of `/prepare/quest_payment`. Absent: the caller names it (`token=`), or the
    /// prepared transfer's `to` is null.
    #[serde(default)]
    pub token: Option<String>,
}

fn default_recheck() -> u64 {
    60
}

impl Default for MunusConfig {
    fn default() -> Self {
        MunusConfig {
            recheck_seconds: default_recheck(),
            token: None,
        }
    }
}

/// `[manifests]` of `conduct.toml`: fetching ERC-8257 tool manifests.
#[derive(Debug, Default, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestFetchConfig {
    /// `allow_loopback`: fetch manifests from loopback addresses (127/8, ::1). For tests and
    /// `conduct dev` only: never on by default, and `conduct serve` warns loudly when it is.
    /// Private, link-local and every other internal range stay refused.
    #[serde(default)]
    pub allow_loopback: bool,
    /// `extra_roots`: PEM files of certificate authorities trusted besides the public roots
    /// (a local test CA).
    #[serde(default)]
    pub extra_roots: Vec<PathBuf>,
    /// `reverify_hours`: a verified manifest is fetched and checked again this often
    /// (default 24, the ERC's longest cache).
    pub reverify_hours: Option<u64>,
}

impl FileConfig {
    /// Read a TOML config file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
    }
}

/// The resolved configuration of a running service.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bind address.
    pub listen: SocketAddr,
    /// Where `GET /metrics` is served; `None` when off.
    pub metrics_listen: Option<SocketAddr>,
    /// State directory.
    pub data: PathBuf,
    /// Static tree directory.
    pub site: PathBuf,
    /// The durable tables' database: a `postgres://` URL, or `None` for SQLite in `data`.
    pub state: Option<String>,
    /// Public base URL without trailing slash.
    pub public_url: String,
    /// Whether `public_url` was configured (else it follows the bound address).
    pub public_url_explicit: bool,
    /// Free demo calls per IP per UTC day; `None` when lifted.
    pub demo_daily_cap: Option<u32>,
    /// Trust `X-Forwarded-For`.
    pub trust_forwarded_for: bool,
    /// Proxies of our own in front (the client is that many `X-Forwarded-For` entries from
    /// the right).
    pub trusted_proxies: u32,
    /// Manifest validity, seconds.
    pub manifest_ttl: u64,
    /// Configured payment rails.
    pub rails: Vec<crate::payment::rails::RailConfig>,
    /// `POST /vow` calls per IP per UTC day; `None` when lifted.
    pub vow_daily_cap: Option<u32>,
    /// `POST /vow/report/demo` calls per IP per UTC day; `None` when lifted.
    pub report_demo_daily_cap: Option<u32>,
    /// `POST /oracle/ask` calls per IP per UTC day; `None` when lifted.
    pub oracle_daily_cap: Option<u32>,
    /// Owner-signed writes per IP per UTC day; `None` when lifted.
    pub owner_daily_cap: Option<u32>,
    /// Live chain reads per IP per UTC day; `None` when lifted.
    pub lookup_daily_cap: Option<u32>,
    /// The language-model providers of the `[reading]` section (none: rule-based
    /// interpretations; the oracle uses them too).
    pub models: crate::interpretation::ModelConfig,
    /// Time a client has to send a request line and headers.
    pub header_timeout: Duration,
    /// Time a client has to send a whole request body.
    pub body_timeout: Duration,
    /// Lifetime of an idle keep-alive connection, and of a stalled response write.
    pub idle_timeout: Duration,
    /// Open connections at once, all clients together.
    pub max_connections: usize,
    /// Open connections at once per client IP (IPv6: per /64); `None` when lifted.
    pub max_connections_per_ip: Option<usize>,
    /// The chain followed, if any.
    pub chain: Option<conduct_indexer::chain::ChainConfig>,
    /// How manifests are fetched.
    pub manifests: ManifestFetchConfig,
    /// The quest board.
    pub munus: MunusConfig,
    /// Hosted familiars.
    pub familiar: FamiliarConfig,
}

/// Default `POST /vow` calls per IP per UTC day (README.md, "Configuration").
pub const DEFAULT_VOW_CAP: u32 = 20;
/// Default `POST /vow/report/demo` calls per IP per UTC day.
pub const DEFAULT_REPORT_DEMO_CAP: u32 = 50;
/// Default `POST /oracle/ask` calls per IP per UTC day.
pub const DEFAULT_ORACLE_CAP: u32 = 20;
/// Default owner-signed writes per IP per UTC day.
pub const DEFAULT_OWNER_CAP: u32 = 50;
/// Default live chain reads per IP per UTC day.
pub const DEFAULT_LOOKUP_CAP: u32 = 1000;

/// Values given on the command line or in the environment (clap merges the two).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--listen` / `CONDUCT_LISTEN`.
    pub listen: Option<String>,
    /// `--metrics-listen` / `CONDUCT_METRICS_LISTEN`.
    pub metrics_listen: Option<String>,
    /// `--data` / `CONDUCT_DATA`.
    pub data: Option<PathBuf>,
    /// `--site` / `CONDUCT_SITE`.
    pub site: Option<PathBuf>,
    /// `--state` / `CONDUCT_STATE`.
    pub state: Option<String>,
    /// `--public-url` / `CONDUCT_PUBLIC_URL`.
    pub public_url: Option<String>,
    /// `--demo-daily-cap` / `CONDUCT_DEMO_DAILY_CAP`.
    pub demo_daily_cap: Option<u32>,
    /// `--trust-forwarded-for` / `CONDUCT_TRUST_FORWARDED_FOR`.
    pub trust_forwarded_for: Option<bool>,
}

impl Config {
    /// Resolve overrides over the file over defaults.
    pub fn resolve(o: Overrides, file: FileConfig) -> Result<Self, Error> {
        Config::resolve_checked(o, file).map_err(Error::Config)
    }

    fn resolve_checked(o: Overrides, file: FileConfig) -> Result<Self, String> {
        let listen_s = o
            .listen
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.into());
        let listen: SocketAddr = listen_s
            .parse()
            .map_err(|e| format!("listen {listen_s:?}: {e}"))?;
        let metrics_listen = metrics_address(o.metrics_listen.or(file.metrics_listen), listen)?;
        let explicit = o.public_url.or(file.public_url);
        let public_url_explicit = explicit.is_some();
        let public_url = explicit.unwrap_or_else(|| default_public_url(listen));
        let public_url = public_url.trim_end_matches('/').to_owned();
        if !(public_url.starts_with("http://") || public_url.starts_with("https://")) {
            return Err(format!(
                "public_url {public_url:?} must start with http:// or https://"
            ));
        }
        let cap = o
            .demo_daily_cap
            .or(file.demo_daily_cap)
            .unwrap_or(DEFAULT_DEMO_CAP);
        let trust_forwarded_for = o
            .trust_forwarded_for
            .or(file.trust_forwarded_for)
            .unwrap_or(false);
        let seconds = |key: &str, v: Option<u64>, default: u64| match v.unwrap_or(default) {
            0 => Err(format!("{key} must be at least 1")),
            s => Ok(Duration::from_secs(s)),
        };
        let max_connections = file.max_connections.unwrap_or_else(default_max_connections);
        if max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        // Behind a proxy every connection comes from the proxy, so by default only the global
        // cap applies there.
        let per_ip = file
            .max_connections_per_ip
            .unwrap_or(if trust_forwarded_for {
                0
            } else {
                DEFAULT_MAX_CONNECTIONS_PER_IP
            });
        Ok(Config {
            listen,
            metrics_listen,
            data: o.data.or(file.data).unwrap_or_else(|| DEFAULT_DATA.into()),
            site: o.site.or(file.site).unwrap_or_else(|| DEFAULT_SITE.into()),
            state: o.state.or(file.state).filter(|s| !s.is_empty()),
            public_url,
            public_url_explicit,
            demo_daily_cap: (cap > 0).then_some(cap),
            trust_forwarded_for,
            trusted_proxies: file.trusted_proxies.unwrap_or(1).max(1),
            manifest_ttl: file.manifest_ttl_hours.unwrap_or(24 * 7) * 3600,
            rails: file.rails.unwrap_or_default(),
            vow_daily_cap: Some(file.vow_daily_cap.unwrap_or(DEFAULT_VOW_CAP)).filter(|c| *c > 0),
            report_demo_daily_cap: Some(
                file.report_demo_daily_cap
                    .unwrap_or(DEFAULT_REPORT_DEMO_CAP),
            )
            .filter(|c| *c > 0),
            oracle_daily_cap: Some(file.oracle_daily_cap.unwrap_or(DEFAULT_ORACLE_CAP))
                .filter(|c| *c > 0),
            owner_daily_cap: Some(file.owner_daily_cap.unwrap_or(DEFAULT_OWNER_CAP))
                .filter(|c| *c > 0),
            lookup_daily_cap: Some(file.lookup_daily_cap.unwrap_or(DEFAULT_LOOKUP_CAP))
                .filter(|c| *c > 0),
            models: file.reading.unwrap_or_default(),
            header_timeout: seconds(
                "header_timeout_seconds",
                file.header_timeout_seconds,
                DEFAULT_HEADER_TIMEOUT,
            )?,
            body_timeout: seconds(
                "body_timeout_seconds",
                file.body_timeout_seconds,
                DEFAULT_BODY_TIMEOUT,
            )?,
            idle_timeout: seconds(
                "idle_timeout_seconds",
                file.idle_timeout_seconds,
                DEFAULT_IDLE_TIMEOUT,
            )?,
            max_connections,
            max_connections_per_ip: (per_ip > 0).then_some(per_ip),
            chain: match file.chain {
                Some(c) => {
                    c.validate().map_err(|e| e.to_string())?;
                    Some(c)
                }
                None => None,
            },
            manifests: file.manifests.unwrap_or_default(),
            munus: match file.munus {
                Some(m) if m.recheck_seconds == 0 => {
                    return Err("[munus] recheck_seconds must be at least 1".into())
                }
                Some(m)
                    if m.token.as_deref().is_some_and(|t| {
                        conduct_indexer::chain::registry::parse_address(t).is_err()
                    }) =>
                {
                    return Err("[munus] token must be 0x and 40 hex digits".into())
                }
                m => m.unwrap_or_default(),
            },
            familiar: match file.familiar {
                Some(f) if !positive_price(&f.labor_price_usd) => {
                    return Err(format!(
                        "[familiar] labor_price_usd {:?} must be a positive decimal price in USD \
                         (for example \"1.00\")",
                        f.labor_price_usd
                    ))
                }
                f => f.unwrap_or_default(),
            },
        })
    }

    /// Follow the address actually bound (port 0 picks one) unless `public_url` was set.
    pub fn bound_to(&mut self, local: SocketAddr) {
        self.listen = local;
        if !self.public_url_explicit {
            self.public_url = default_public_url(local);
        }
    }

    /// The log origin, which is also the signing key's name: `<host[:port]>/log`.
    pub fn origin(&self) -> String {
        let rest = self
            .public_url
            .split_once("://")
            .map(|(_, r)| r)
            .unwrap_or(&self.public_url);
        let host = rest.split('/').next().unwrap_or(rest);
        format!("{host}/log")
    }
}

/// The default global connection cap: [`DEFAULT_MAX_CONNECTIONS`], or half the process's
/// open-file limit when that is lower (the other half is left for the store, the site and the
/// render threads).
pub fn default_max_connections() -> usize {
    match open_file_limit() {
        Some(n) => DEFAULT_MAX_CONNECTIONS.min((n / 2).max(1)),
        None => DEFAULT_MAX_CONNECTIONS,
    }
}

/// The soft `RLIMIT_NOFILE` of this process, if it is known and finite.
#[cfg(unix)]
fn open_file_limit() -> Option<usize> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given, which lives for the call.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if rc != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    usize::try_from(lim.rlim_cur).ok()
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<usize> {
    None
}

/// What the default metrics port adds to the public one: 8402 gives 9402, in the range
/// Prometheus exporters use (9100 to 9999), and two instances on one machine get two
/// ports. A public port of 0 (any) gives 0 too, as does one above 64535.
pub const METRICS_PORT_OFFSET: u16 = 1000;

/// The metrics address: `configured` (an address, or `off`), else loopback at the public
/// port plus [`METRICS_PORT_OFFSET`] (library/METRICS.md).
fn metrics_address(
    configured: Option<String>,
    listen: SocketAddr,
) -> Result<Option<SocketAddr>, String> {
    match configured.as_deref().map(str::trim) {
        Some("off") => Ok(None),
        Some(a) => a.parse().map(Some).map_err(|e| {
            format!("metrics_listen {a:?}: {e} (an address such as 127.0.0.1:9402, or off)")
        }),
        None => {
            let port = match listen.port() {
                0 => 0,
                p => p.checked_add(METRICS_PORT_OFFSET).unwrap_or(0),
            };
            Ok(Some(SocketAddr::from((
                std::net::Ipv4Addr::LOCALHOST,
                port,
            ))))
        }
    }
}

/// The public URL implied by a bound address.
pub fn default_public_url(listen: SocketAddr) -> String {
    if listen.ip().is_loopback() || listen.ip().is_unspecified() {
        format!("http://localhost:{}", listen.port())
    } else {
        format!("http://{listen}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_listen_defaults_to_loopback_beside_the_public_port() {
        let listen: SocketAddr = "0.0.0.0:8402".parse().unwrap();
        assert_eq!(
            metrics_address(None, listen).unwrap(),
            Some("127.0.0.1:9402".parse().unwrap())
        );
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert_eq!(
            metrics_address(None, any).unwrap(),
            Some("127.0.0.1:0".parse().unwrap())
        );
        let high: SocketAddr = "127.0.0.1:65000".parse().unwrap();
        assert_eq!(metrics_address(None, high).unwrap().unwrap().port(), 0);
        assert_eq!(metrics_address(Some("off".into()), listen).unwrap(), None);
        assert_eq!(
            metrics_address(Some("10.0.0.5:9100".into()), listen).unwrap(),
            Some("10.0.0.5:9100".parse().unwrap())
        );
        let bad = metrics_address(Some("loopback".into()), listen).unwrap_err();
        assert!(bad.contains("metrics_listen"), "{bad}");
    }

    #[test]
    fn defaults_and_origin() {
        let c = Config::resolve(Overrides::default(), FileConfig::default()).unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.public_url, "http://localhost:8402");
        assert_eq!(c.origin(), "localhost:8402/log");
        assert_eq!(c.demo_daily_cap, Some(50));
        assert_eq!(c.familiar.labor_price_usd, DEFAULT_LABOR_PRICE_USD);
        assert_ne!(c.familiar.labor_price_usd, PRICE_USD);
        let file: FileConfig = toml::from_str("[familiar]\nlabor_price_usd = \"2.50\"\n").unwrap();
        let c = Config::resolve(Overrides::default(), file).unwrap();
        assert_eq!(c.familiar.labor_price_usd, "2.50");
    }

    #[test]
    fn precedence_flag_over_file() {
        let file = FileConfig {
            listen: Some("127.0.0.1:9000".into()),
            demo_daily_cap: Some(0),
            ..FileConfig::default()
        };
        let o = Overrides {
            listen: Some("127.0.0.1:9100".into()),
            ..Overrides::default()
        };
        let c = Config::resolve(o, file).unwrap();
        assert_eq!(c.listen.port(), 9100);
        assert_eq!(c.demo_daily_cap, None);
    }

    #[test]
    fn state_is_sqlite_unless_a_database_is_named() {
        let c = Config::resolve(Overrides::default(), FileConfig::default()).unwrap();
        assert_eq!(c.state, None);
        let file: FileConfig = toml::from_str("state = \"postgres://a@db:5432/conduct\"").unwrap();
        let c = Config::resolve(Overrides::default(), file.clone()).unwrap();
        assert_eq!(c.state.as_deref(), Some("postgres://a@db:5432/conduct"));
        let flag = Overrides {
            state: Some("postgres://b@other/conduct".into()),
            ..Overrides::default()
        };
        let c = Config::resolve(flag, file).unwrap();
        assert_eq!(c.state.as_deref(), Some("postgres://b@other/conduct"));
    }

    #[test]
    fn connection_limits() {
        let c = Config::resolve(Overrides::default(), FileConfig::default()).unwrap();
        assert_eq!(
            c.header_timeout,
            Duration::from_secs(DEFAULT_HEADER_TIMEOUT)
        );
        assert_eq!(c.body_timeout, Duration::from_secs(DEFAULT_BODY_TIMEOUT));
        assert_eq!(c.idle_timeout, Duration::from_secs(DEFAULT_IDLE_TIMEOUT));
        assert!(c.max_connections >= 1 && c.max_connections <= DEFAULT_MAX_CONNECTIONS);
        assert_eq!(
            c.max_connections_per_ip,
            Some(DEFAULT_MAX_CONNECTIONS_PER_IP)
        );
        let file: FileConfig = toml::from_str(
            "header_timeout_seconds = 2\nbody_timeout_seconds = 3\nidle_timeout_seconds = 4\n\
             max_connections = 10\nmax_connections_per_ip = 0\n",
        )
        .unwrap();
        let c = Config::resolve(Overrides::default(), file).unwrap();
        assert_eq!(c.header_timeout, Duration::from_secs(2));
        assert_eq!(c.body_timeout, Duration::from_secs(3));
        assert_eq!(c.idle_timeout, Duration::from_secs(4));
        assert_eq!(c.max_connections, 10);
        assert_eq!(c.max_connections_per_ip, None);
        let behind_proxy = Overrides {
            trust_forwarded_for: Some(true),
            ..Overrides::default()
        };
        let c = Config::resolve(behind_proxy, FileConfig::default()).unwrap();
        assert_eq!(c.max_connections_per_ip, None);
        for bad in [
            "header_timeout_seconds = 0",
            "max_connections = 0",
            "[familiar]\nlabor_price_usd = \"0\"",
            "[familiar]\nlabor_price_usd = \"1.\"",
            "[familiar]\nlabor_price_usd = \"-1\"",
        ] {
            let file: FileConfig = toml::from_str(bad).unwrap();
            assert!(
                Config::resolve(Overrides::default(), file).is_err(),
                "{bad}"
            );
        }
    }
}
