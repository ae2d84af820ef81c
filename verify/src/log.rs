//! Audit a copy of the transparency log from its files alone (`conduct verify-log DIR|URL`), and
//! check a single entry's inclusion proof or an older checkpoint against it.
//!
//! [`verify_log`] checks, in order:
//!
//! - the checkpoint's signature, against the pinned vkey;
//! - every entry bundle, each decoding and covering exactly the checkpoint's size;
//! - every vow chain in the entries: each `conduct.vow/v1` and `conduct.entry/v1` record is
//!   canonical, signed by the pinned key, names its own log index, and links to the previous
//!   record of its vow by `seq` and `prev` (see `conduct_core::vow::links`);
//! - every quest-board record (`conduct_core::munus::verify`) and every npub binding
//!   (`conduct_core::nostr::verify`: signed by the pinned key in the exact format, naming an
//!   earlier signed vow with its wallet, each signature used once, at most 10 a vow a UTC day,
//!   and the npub key's BIP-340 signature over the exact text; the wallet's EIP-191 signature
//!   is not recovered here);
//! - every witness pledge (`conduct_core::witness::verify`: signed in the exact format with
//!   normalized limits, naming an earlier signed vow with its wallet, each signature once, at
//!   most 10 a vow a UTC day) and
//!   every familiar (`conduct_core::familiar::verify`: signed in the exact format, so
//!   `wallet: null` and `faucet_cap: "0"`, a vow owner an earlier signed vow with its wallet,
//!   each owner signature once; EIP-191 signatures are not recovered here);
//! - the root recomputed from the entries' leaf hashes, against the signed root;
//! - every hash tile the log must serve, byte for byte against the tiles rebuilt from the entries;
//! - the root read back through the tiles alone, against the signed root.
//!
//! Any changed byte in any file fails one of these checks. The log's format is C2SP
//! tlog-tiles with signed-note checkpoints (library/VOWS.md, library/MIRRORS.md).
//!
//! The audit streams: entries are read bundle by bundle, and each hash tile is rebuilt and
//! compared as soon as its last hash is known (`crate::stream`), so what it holds does not grow
//! with the log's entries; what grows with the log is what its checks need of each vow (the
//! head of its links, the wallet it was sworn with). A failure is still reported in the order
//! above (a tile that differs is reported after the root, at the lowest level first). On a
//! terminal, the entries done, their rate and the time left are shown on standard error.

use base64::Engine;
use conduct_core::familiar::verify::FamiliarChecker;
use conduct_core::leaf::{LeafCheck, SharedVows};
use conduct_core::munus::verify::BoardChecker;
use conduct_core::nostr::verify::BindingChecker;
use conduct_core::signing::PinnedKey;
use conduct_core::tlog::checkpoint::{open_checkpoint, Checkpoint};
use conduct_core::tlog::note::Verifier;
use conduct_core::tlog::tiles::{decode_bundle, entries_path, root_from_tiles, Tile};
use conduct_core::tlog::tlog_proof::TlogProof;
use conduct_core::tlog::{empty_root, leaf_hash, Hash};
use conduct_core::vow::links::LinkChecker;
use conduct_core::witness::verify::PledgeChecker;

use crate::files::{open, Files};
use crate::progress::{peak_text, throughput, Progress, Run};
use crate::stream::TileStream;
use crate::Error;

/// What a successful audit found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAudit {
    /// Log origin.
    pub origin: String,
    /// Number of entries.
    pub size: u64,
    /// Base64 root.
    pub root: String,
    /// Files checked.
    pub files: usize,
    /// Vow records whose chains verified.
    pub vows: u64,
    /// Report-in entries that verified.
    pub entries: u64,
    /// Quest-board records (claims, deliveries, lapses, payments) that verified.
    pub board: u64,
    /// npub-binding records that verified.
    pub bindings: u64,
    /// Witness pledge records that verified.
    pub pledges: u64,
    /// Familiar records that verified.
    pub familiars: u64,
    /// Leaves that are not vow-chain records (not checked as chains).
    pub other: u64,
    /// How long the audit took, and the peak memory.
    pub run: Run,
}

impl std::fmt::Display for LogAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} size {} root {} ({} files checked; {} vow chains, {} entries verified; {} \
             quest-board records verified; {} npub bindings verified; {} witness pledges \
             verified; {} familiars verified; {} other leaves)",
            self.origin,
            self.size,
            self.root,
            self.files,
            self.vows,
            self.entries,
            self.board,
            self.bindings,
            self.pledges,
            self.familiars,
            self.other
        )?;
        write!(
            f,
            "\nverified {}{}",
            throughput(self.size, "entries", self.run.elapsed),
            peak_text(self.run.peak_memory)
        )
    }
}

/// The log key pinned as a C2SP vkey (a log's checkpoint is a signed note, which names its key).
fn log_verifier(vkey: &str) -> Result<Verifier, Error> {
    Verifier::parse(vkey).map_err(|e| Error::PinnedKey(e.to_string()))
}

/// Audit a log given as a directory path or an `http(s)://` URL (e.g. `site/log`,
/// `https://example.org/log`) against the pinned log key `vkey` (a C2SP vkey).
pub fn verify_log_at(location: &str, vkey: &str) -> Result<LogAudit, Error> {
    verify_log(&open(location)?, vkey)
}

/// Audit the log whose files `files` yields against the pinned log key `vkey`.
pub fn verify_log<F: Files + ?Sized>(files: &F, vkey: &str) -> Result<LogAudit, Error> {
    audit(files, vkey, None).map(|(audit, _)| audit)
}

/// [`verify_log`], then check that `older`, a signed checkpoint of the same log kept from
/// earlier (e.g. the `checkpoint` file of a previous audit), describes a prefix of it: its
/// signature verifies under `vkey`, its size is at most the log's, and the first entries hash
/// to its root. This is the consistency a log must keep: it only ever grows.
pub fn verify_log_extends<F: Files + ?Sized>(
    files: &F,
    vkey: &str,
    older: &str,
) -> Result<LogAudit, Error> {
    let old = open_checkpoint(older, &[log_verifier(vkey)?])
        .map_err(Error::Checkpoint)?
        .checkpoint;
    let (audit, prefix) = audit(files, vkey, Some(old.size))?;
    if prefix != Some(old.root) {
        return Err(Error::NotAPrefix {
            old_size: old.size,
            size: audit.size,
        });
    }
    Ok(audit)
}

/// Verify a C2SP tlog-proof (as served at `/log/proof/{index}`): its checkpoint is signed by
/// the pinned log key `vkey` and its inclusion proof leads from `entry` (the leaf's bytes) to
/// the checkpoint's root. Returns the checkpoint the entry is proven to be in.
pub fn verify_inclusion(proof: &str, entry: &[u8], vkey: &str) -> Result<Checkpoint, Error> {
    let verifier = log_verifier(vkey)?;
    let proof = TlogProof::parse(proof).map_err(Error::Proof)?;
    proof
        .verify(entry, &[verifier])
        .map(|signed| signed.checkpoint)
        .map_err(Error::Proof)
}

/// The audit, and the root of its first `prefix` entries when it has that many.
fn audit<F: Files + ?Sized>(
    files: &F,
    vkey: &str,
    prefix: Option<u64>,
) -> Result<(LogAudit, Option<Hash>), Error> {
    let start = std::time::Instant::now();
    let verifier = log_verifier(vkey)?;
    let text = String::from_utf8(files.read("checkpoint")?).map_err(|_| Error::NotUtf8 {
        path: "checkpoint".into(),
    })?;
    let signed = open_checkpoint(&text, &[verifier]).map_err(Error::Checkpoint)?;
    let cp = signed.checkpoint;
    let mut checked = 1usize;

    // Entries, bundle by bundle, and every vow chain in them; each hash tile as it completes.
    let mut tiles = TileStream::default();
    let mut tile_checks = TileChecks::default();
    let mut prefix_root = (prefix == Some(0)).then(empty_root);
    let pinned = PinnedKey::parse(vkey).map_err(|e| Error::PinnedKey(e.to_string()))?;
    let mut chains = LinkChecker::new(pinned.clone(), Some(cp.origin.clone()));
    let mut records = record_checks(&pinned);
    let mut progress = Progress::start("log", "entries", Some(cp.size));
    let mut n = 0u64;
    while (n * 256) < cp.size {
        let width = (cp.size - n * 256).min(256) as u16;
        let rel = entries_path(n, width);
        let bytes = files.read(&rel)?;
        let entries = decode_bundle(&bytes).map_err(|source| Error::Bundle {
            path: rel.clone(),
            source,
        })?;
        drop(bytes);
        if entries.len() != usize::from(width) {
            return Err(Error::BundleWidth {
                path: rel,
                entries: entries.len(),
                needed: width,
            });
        }
        for (i, e) in entries.iter().enumerate() {
            let index = n * 256 + i as u64;
            chains.leaf(index, e).map_err(|reason| Error::Chain {
                index,
                reason: reason.0,
            })?;
            // A leaf that is not JSON is no record (the chain checker counts it as other);
            // it is parsed once, for the first checker that wants it.
            let mut parsed: Option<Option<serde_json::Value>> = None;
            for r in records.iter_mut().filter(|r| r.check.wants(e)) {
                let v = parsed.get_or_insert_with(|| serde_json::from_slice(e).ok());
                let Some(v) = v.as_ref() else { break };
                r.check
                    .record(index, e, v)
                    .map_err(|reason| (r.fail)(reason.0))?;
            }
            tiles.push(leaf_hash(e), |tile, want| {
                tile_checks.check(files, tile, want);
                Ok::<(), Error>(())
            })?;
            if prefix == Some(tiles.size()) {
                prefix_root = Some(tiles.root());
            }
        }
        checked += 1;
        n += 1;
        progress.add(u64::from(width));
    }
    drop(progress);
    for r in &records {
        r.check.finish().map_err(|reason| (r.fail)(reason.0))?;
    }
    if tiles.root() != cp.root {
        return Err(Error::EntriesRoot);
    }

    // Every tile, byte for byte: the full ones were compared as they completed, the partial
    // ones now; the first that failed, lowest level first, is the audit's failure.
    for (tile, want) in tiles.partial() {
        tile_checks.check(files, tile, want);
    }
    checked += tile_checks.finish()?;

    // And the root through the tiles alone, as a tile-reading client sees it.
    let via_tiles = root_from_tiles(cp.size, |t| files.read(&t.path()))
        .map_err(|e| Error::TileRead(Box::new(e)))?;
    if via_tiles != cp.root {
        return Err(Error::TilesRoot);
    }
    let audit = LogAudit {
        origin: cp.origin,
        size: cp.size,
        root: base64::engine::general_purpose::STANDARD.encode(cp.root),
        files: checked,
        vows: chains.vows,
        entries: chains.entries,
        board: 0,
        bindings: 0,
        pledges: 0,
        familiars: 0,
        other: chains.other,
        run: Run::since(start),
    };
    let audit = records.iter().fold(audit, |mut a, r| {
        *(r.count)(&mut a) = r.check.count();
        a
    });
    Ok((audit, prefix_root))
}

/// The comparisons of the log's hash tiles with the tiles rebuilt from its entries, made as
/// each tile is rebuilt and reported once the entries are checked: a failure (a tile that
/// differs or cannot be read) is kept for its level, the first one of each level, and no tile
/// of that level or above is read after it (the lowest level's is the one reported).
#[derive(Default)]
struct TileChecks {
    /// Tiles that matched.
    matched: usize,
    /// The first failure and its level, the lowest level failed so far.
    failed: Option<(u8, Error)>,
}

impl TileChecks {
    fn check<F: Files + ?Sized>(&mut self, files: &F, tile: Tile, want: &[u8]) {
        if self.failed.as_ref().is_some_and(|(l, _)| *l <= tile.level) {
            return;
        }
        let rel = tile.path();
        match files.read(&rel) {
            Ok(got) if got == want => self.matched += 1,
            Ok(_) => self.failed = Some((tile.level, Error::TileMismatch { path: rel })),
            Err(e) => self.failed = Some((tile.level, e)),
        }
    }

    /// The tiles that matched, or the failure to report.
    fn finish(self) -> Result<usize, Error> {
        match self.failed {
            Some((_, e)) => Err(e),
            None => Ok(self.matched),
        }
    }
}

/// One kind of record verify-log checks beside the vow chains: its checker, the error its
/// refusals become, and the audit's count of it.
struct RecordCheck {
    check: Box<dyn LeafCheck>,
    fail: fn(String) -> Error,
    count: fn(&mut LogAudit) -> &mut u64,
}

/// The record checkers verify-log runs beside the vow chains, one row per kind of record (an
/// owner-signed kind's checker is `conduct_core::leaf::OwnerChecker` of its record type). They
/// share one set of sworn vows.
fn record_checks(pinned: &PinnedKey) -> [RecordCheck; 4] {
    let row = |check: Box<dyn LeafCheck>, fail, count| RecordCheck { check, fail, count };
    let vows = SharedVows::default();
    [
        row(
            Box::new(BoardChecker::sharing(pinned.clone(), vows.clone())),
            |reason| Error::Board { reason },
            |a| &mut a.board,
        ),
        row(
            Box::new(BindingChecker::sharing(pinned.clone(), vows.clone())),
            |reason| Error::Binding { reason },
            |a| &mut a.bindings,
        ),
        row(
            Box::new(PledgeChecker::sharing(pinned.clone(), vows.clone())),
            |reason| Error::Pledge { reason },
            |a| &mut a.pledges,
        ),
        row(
            Box::new(FamiliarChecker::sharing(pinned.clone(), vows)),
            |reason| Error::Familiar { reason },
            |a| &mut a.familiars,
        ),
    ]
}
