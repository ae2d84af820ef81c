//! The manifest verifier: fetches each registered tool's manifest and checks it in the order
//! ERC-8257 section 7 gives, then stores the result ([`Check`]) for the registry view.
//!
//! 1. fetch `metadataURI` ([`crate::fetch`]: https only, no redirects, SSRF-safe, 1 MiB, 5 s);
//!    any failure is `unreachable` with a `reason` and a `detail`;
//! 2. the origin and well-known binding of `metadataURI` to the manifest's `endpoint`
//!    (`binding-mismatch`);
//! 3. reject a BOM, non-NFC strings and upper-case hex, then keccak256 of the RFC 8785 bytes
//!    against `manifestHash` (`invalid-manifest`, `hash-mismatch`; on a mismatch
//!    `getToolConfig` is read again once, in case the chain moved on);
//! 4. the manifest's rules (`invalid-manifest`) and `creatorAddress` against the on-chain
//!    creator (`creator-mismatch`).
//!
//! Steps 2 to 4 are `conduct_core::erc8257::verify`; fetching and the re-read are here.
//!
//! A verified manifest is checked again every `reverify_every` (24 h by default), a failed one
//! sooner, and any tool whose metadata changed on chain at once (the follower wakes the
//! verifier), even when the update kept its `metadataURI`. A fetch that no chain change caused
//! (the check already holds a newer commitment the re-read found, and the index has not caught
//! up) waits `MIN_GAP` (15 s) after the last fetch of that tool, so the fetched host is never
//! asked in a loop (library/REGISTRY.md, "Checking a manifest"). Deregistered tools are not
//! fetched. A statement about bytes, never about safety.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::U256;
use conduct_core::erc8257;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::registry::{b256_text, parse_address, IToolRegistry, Tool, ToolState};
use super::rpc::Rpc;
use super::{ChainConfig, ChainError};
use crate::fetch::{FailKind, FetchOutcome, FetchPolicy, Fetcher};
use crate::state::chain::{ChainIndex, Check};

/// How often manifests are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyPolicy {
    /// Seconds after which a verified manifest is checked again.
    pub reverify_every: u64,
    /// Seconds after which a failed check is tried again.
    pub retry_failed_after: u64,
    /// Manifests fetched at once.
    pub concurrency: usize,
}

impl Default for VerifyPolicy {
    fn default() -> Self {
        VerifyPolicy {
            reverify_every: 24 * 3600,
            retry_failed_after: 600,
            concurrency: 4,
        }
    }
}

/// Least seconds between two fetches of one tool's manifest that no chain change caused.
const MIN_GAP: u64 = 15;
/// Longest `detail` stored (a rejection may quote the registrant's keys and hosts).
const DETAIL_MAX: usize = 300;

/// Told of each tool whose check was stored.
pub type OnChecked = Box<dyn Fn(u64) + Send + Sync>;

/// The verifier task.
pub struct Verifier {
    db: Arc<dyn ChainIndex>,
    fetcher: Fetcher,
    rpc: Rpc,
    registry: Option<alloy::primitives::Address>,
    policy: VerifyPolicy,
    on_checked: OnChecked,
    wake: Arc<Notify>,
}

/// The stable reason of a fetch failure.
fn fail_reason(kind: FailKind) -> &'static str {
    match kind {
        FailKind::Refused => "refused",
        FailKind::Redirect => "redirect",
        FailKind::Http(_) => "http-status",
        FailKind::TooLarge => "too-large",
        FailKind::Timeout => "timeout",
        FailKind::Network => "network",
    }
}

/// A 0x-prefixed 32-byte hex value as bytes (zero when malformed: it then matches nothing).
fn parse_b256(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    if let Some(h) = s.strip_prefix("0x") {
        let _ = hex::decode_to_slice(h, &mut out);
    }
    out
}

/// The claims of a manifest (even one that failed), as stored.
fn claims_json(manifest: Option<&Value>) -> String {
    let c = manifest.map(erc8257::claims).unwrap_or_default();
    json!({"name": c.name, "description": c.description, "endpoint": c.endpoint}).to_string()
}

impl Verifier {
    /// A verifier over `db` for the chain `chain`, fetching under `fetch`; `on_checked` is
    /// told of every stored check.
    pub fn new(
        db: Arc<dyn ChainIndex>,
        chain: ChainConfig,
        fetch: FetchPolicy,
        policy: VerifyPolicy,
        on_checked: OnChecked,
    ) -> Result<Verifier, ChainError> {
        let fetcher = Fetcher::new(fetch)?;
        let rpc = Rpc::new(
            &chain.rpc,
            Duration::from_secs(chain.rpc_timeout_seconds.max(1)),
        )?;
        let registry = match &chain.registry {
            Some(r) => Some(parse_address(&r.address)?),
            None => None,
        };
        Ok(Verifier {
            db,
            fetcher,
            rpc,
            registry,
            policy,
            on_checked,
            wake: Arc::new(Notify::new()),
        })
    }

    /// Look for work when `wake` is notified (new tools, changed metadata), besides when
    /// checks fall due.
    pub fn woken_by(mut self, wake: Arc<Notify>) -> Verifier {
        self.wake = wake;
        self
    }

    /// Tools whose check is missing, stale for their current metadata, or due again, and
    /// when the next one falls due. `fetched_for` holds, per tool, the commitment
    /// (`metadataURI`, `manifestHash`) the index held when this task last fetched it.
    fn due(
        &self,
        now: u64,
        fetched_for: &HashMap<u64, (String, String)>,
    ) -> (Vec<Tool>, Option<u64>) {
        let (tools, checks) = match (self.db.tools(), self.db.checks()) {
            (Ok(t), Ok(c)) => (t, c),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e, "verifier: reading the chain database failed");
                return (Vec::new(), Some(now + 5));
            }
        };
        let mut due = Vec::new();
        let mut next: Option<u64> = None;
        for t in tools {
            if t.state == ToolState::Deregistered {
                continue;
            }
            let at = match checks.get(&t.tool_id) {
                Some(c) if c.uri == t.metadata_uri && c.hash == t.manifest_hash => {
                    let every = if c.status == "verified" {
                        self.policy.reverify_every
                    } else {
                        self.policy.retry_failed_after
                    };
                    c.checked_at.saturating_add(every)
                }
                // The same location checked against another commitment. When the index has
                // not changed since this task last fetched the tool, no chain change asks for
                // this fetch (the re-read found a newer commitment the index has yet to
                // reach; or, after a restart, nothing is known): not sooner than MIN_GAP
                // after the last fetch. A change on chain (an update that kept its
                // `metadataURI`, a reorganisation) is checked now.
                Some(c) if c.uri == t.metadata_uri => {
                    let indexed = (t.metadata_uri.clone(), t.manifest_hash.clone());
                    match fetched_for.get(&t.tool_id) {
                        Some(before) if *before != indexed => now,
                        _ => c.checked_at.saturating_add(MIN_GAP),
                    }
                }
                // A new location, or never checked: now.
                _ => now,
            };
            if at <= now {
                due.push(t);
            } else {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        (due, next)
    }

    /// Check manifests until the task is dropped.
    pub async fn run(self) {
        // Per tool, the commitment the index held at this task's last fetch of it.
        let mut fetched_for: HashMap<u64, (String, String)> = HashMap::new();
        loop {
            let now = crate::clock::wall_now();
            let (due, next) = self.due(now, &fetched_for);
            for chunk in due.chunks(self.policy.concurrency.max(1)) {
                let checks = chunk.iter().map(|t| self.check(t));
                let results = futures_util::future::join_all(checks).await;
                for (t, c) in chunk.iter().zip(results) {
                    fetched_for
                        .insert(t.tool_id, (t.metadata_uri.clone(), t.manifest_hash.clone()));
                    match self.db.put_check(t.tool_id, &c) {
                        Ok(()) => (self.on_checked)(t.tool_id),
                        Err(e) => {
                            tracing::warn!(error = %e, tool = t.tool_id, "storing a check failed")
                        }
                    }
                }
            }
            if !due.is_empty() {
                continue;
            }
            let wait = next.map_or(Duration::from_secs(3600), |n| {
                Duration::from_secs(n.saturating_sub(crate::clock::wall_now()).max(1))
            });
            let _ = tokio::time::timeout(wait, self.wake.notified()).await;
        }
    }

    /// Check tool `t` now.
    pub async fn check(&self, t: &Tool) -> Check {
        let now = crate::clock::wall_now();
        let mut c = Check {
            uri: t.metadata_uri.clone(),
            hash: t.manifest_hash.clone(),
            status: String::new(),
            reason: None,
            computed: None,
            detail: None,
            // Until these bytes say otherwise, the last claims stand (a failed fetch moves
            // nothing in the order).
            claims: self
                .db
                .check(t.tool_id)
                .ok()
                .flatten()
                .map_or_else(|| claims_json(None), |p| p.claims),
            checked_at: now,
        };
        let bytes = match self.fetcher.fetch(&t.metadata_uri).await {
            FetchOutcome::Fetched { bytes, .. } => bytes,
            FetchOutcome::Failed { detail, kind } => {
                c.status = "unreachable".into();
                c.reason = Some(fail_reason(kind).into());
                c.detail = Some(erc8257::strip_for_display(&detail, DETAIL_MAX));
                return c;
            }
        };
        if let Ok(value) = erc8257::parse_manifest(&bytes) {
            c.claims = claims_json(Some(&value));
        }
        // Steps 2-4 in the ERC's order; on a hash mismatch the chain is read once more, in
        // case it moved on since the events were read.
        let creator = parse_address(&t.creator).map_or([0; 20], |a| a.0 .0);
        let committed = parse_b256(&t.manifest_hash);
        let mut v = erc8257::verify(&bytes, &t.metadata_uri, &committed, &creator);
        if v.status == erc8257::Status::HashMismatch {
            let computed = v.computed.map(|h| format!("0x{}", hex::encode(h)));
            if let Some((uri, hash)) = self.reread(t.tool_id).await {
                if Some(&hash) == computed.as_ref() && uri == t.metadata_uri {
                    // The chain moved on: this check is for the new commitment.
                    v = erc8257::verify(&bytes, &t.metadata_uri, &parse_b256(&hash), &creator);
                    c.hash = hash;
                }
            }
        }
        c.status = v.status.as_str().into();
        c.reason = v.reason.map(Into::into);
        c.computed = v.computed.map(|h| format!("0x{}", hex::encode(h)));
        c.detail = v.detail.map(|d| erc8257::strip_for_display(&d, DETAIL_MAX));
        c
    }

    /// `getToolConfig(id)` read again: (metadataURI, manifestHash), or `None` when it could
    /// not be read.
    async fn reread(&self, id: u64) -> Option<(String, String)> {
        let address = self.registry?;
        let registry = IToolRegistry::new(address, self.rpc.provider());
        let cfg = tokio::time::timeout(
            Duration::from_secs(10),
            registry.getToolConfig(U256::from(id)).call(),
        )
        .await
        .ok()?
        .ok()?;
        Some((cfg.metadataURI, b256_text(&cfg.manifestHash)))
    }
}
