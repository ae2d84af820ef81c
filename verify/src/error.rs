//! Why a verification failed: one [`Error`] for the whole crate. Its `Display` names the file at
//! fault first (`tile/0/001: ...`, `manifest.json: ...`), so a failure can be printed as it is.

use conduct_core::signing::VerifyError;
use conduct_core::tlog::{BundleError, CheckpointError, TileReadError, TlogProofError};

use conduct_core::manifest::{BIN_TYPE, MANIFEST_TYPE};

/// Why a verification failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pinned key does not parse: neither a C2SP vkey nor base64 of 32 bytes (a log needs
    /// the vkey, which names the log's key).
    #[error("pinned key: {0}")]
    PinnedKey(String),
    /// A file could not be read from a directory.
    #[error("{path}: {source}")]
    Read {
        /// The file, relative to what was read (e.g. `checkpoint`, `log/tile/0/000`).
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// A file could not be fetched: a transport error or a status other than 2xx.
    #[error("{url}: {reason}")]
    Fetch {
        /// The URL (or, for your own [`crate::Files`], the location) asked for.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A URL was given but this build has no HTTP client (the `http` feature is off).
    #[error("{url}: reading a URL needs the `http` feature of conduct-verify")]
    NoHttp {
        /// The URL given.
        url: String,
    },
    /// A file is not JSON.
    #[error("{path}: not JSON: {source}")]
    NotJson {
        /// The file.
        path: String,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The service's Nostr profile (`hive/profile.json`) is not a kind-0 event whose NIP-01 id
    /// and BIP-340 signature verify.
    #[error("{path}: not a verified Nostr kind-0 event: {reason}")]
    NostrEvent {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A signed JSON object does not verify under the pinned key.
    #[error("{path}: {source}")]
    Signature {
        /// The file.
        path: String,
        /// Why: no signature, another key id, a changed byte, an altered scope statement.
        source: VerifyError,
    },
    /// An attestation's numbers are not what its meter gives for the trace it names (or the
    /// trace is not the one it attests, or it names a meter this verifier does not know).
    #[error("measurement: {0}")]
    Measurement(String),
    /// A verified object is not an attestation.
    #[error("type {found:?}, expected {expected:?}")]
    NotAnAttestation {
        /// Its `type`, when a string.
        found: Option<String>,
        /// `conduct.attestation/v1`.
        expected: &'static str,
    },
    /// A text file is not UTF-8.
    #[error("{path}: not UTF-8")]
    NotUtf8 {
        /// The file.
        path: String,
    },
    /// The log's checkpoint is malformed or not signed by the pinned key.
    #[error("checkpoint: {0}")]
    Checkpoint(CheckpointError),
    /// An entry bundle does not decode.
    #[error("{path}: {source}")]
    Bundle {
        /// The bundle (`tile/entries/...`).
        path: String,
        /// The decoding error.
        source: BundleError,
    },
    /// An entry bundle holds another number of entries than the checkpoint's size needs.
    #[error("{path}: holds {entries} entries, the checkpoint needs {needed}")]
    BundleWidth {
        /// The bundle.
        path: String,
        /// Entries it holds.
        entries: usize,
        /// Entries the checkpoint needs there.
        needed: u16,
    },
    /// A vow chain in the log is broken (see `conduct_core::vow::links`).
    #[error("vow chain: {reason}")]
    Chain {
        /// The log index of the leaf at fault.
        index: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A quest-board record in the log is not authentic or breaks the board's rules (see
    /// `conduct_core::munus::verify`).
    #[error("quest board: {reason}")]
    Board {
        /// What is wrong, naming the leaf.
        reason: String,
    },
    /// An npub-binding record in the log is not authentic, names no earlier signed vow with
    /// its wallet, reuses a signature, or its nostr signature does not verify (see
    /// `conduct_core::nostr::verify`).
    #[error("npub binding: {reason}")]
    Binding {
        /// What is wrong, naming the leaf.
        reason: String,
    },
    /// A witness pledge record does not verify (signature, format, vow, replayed signature;
    /// `conduct_core::witness::verify`).
    #[error("witness pledge: {reason}")]
    Pledge {
        /// What is wrong, naming the leaf.
        reason: String,
    },
    /// A familiar record does not verify (signature, format, `wallet: null`, faucet cap `0`,
    /// owner vow, replayed signature; `conduct_core::familiar::verify`).
    #[error("familiar: {reason}")]
    Familiar {
        /// What is wrong, naming the leaf.
        reason: String,
    },
    /// The entries do not hash to the checkpoint's root.
    #[error("the entries do not hash to the signed root")]
    EntriesRoot,
    /// A hash tile differs from the one rebuilt from the entries.
    #[error("{path}: differs from the tile rebuilt from the entries")]
    TileMismatch {
        /// The tile (`tile/<level>/...`).
        path: String,
    },
    /// The tiles could not be read back (a missing tile, a wrong length).
    #[error("reading tiles: {0}")]
    TileRead(Box<TileReadError<Error>>),
    /// The tiles, read as a tile-reading client reads them, do not hash to the signed root.
    #[error("the tiles do not hash to the signed root")]
    TilesRoot,
    /// A tlog-proof is malformed, its checkpoint does not verify, or its inclusion proof fails.
    #[error("tlog-proof: {0}")]
    Proof(TlogProofError),
    /// An older checkpoint does not describe a prefix of the log.
    #[error(
        "the older checkpoint (size {old_size}) is not a prefix of the log (size {size}): the \
         log was rewritten, or the checkpoint belongs to another log"
    )]
    NotAPrefix {
        /// The older checkpoint's size.
        old_size: u64,
        /// The log's size.
        size: u64,
    },
    /// The system clock is before 1970.
    #[error("system clock: {0}")]
    Clock(std::time::SystemTimeError),
    /// A mirror given as a directory is not one.
    #[error("{0}: not a directory")]
    NotADirectory(String),
    /// The manifest is malformed or has expired.
    #[error("manifest.json: {0}")]
    Manifest(ManifestError),
    /// A listed file's length differs from the manifest's.
    #[error("{path}: {len} bytes, the manifest lists {listed}")]
    Length {
        /// The file.
        path: String,
        /// Its length.
        len: u64,
        /// The length the manifest lists.
        listed: u64,
    },
    /// A listed file's SHA-256 differs from the manifest's.
    #[error("{path}: sha256 {sha256}, the manifest lists {listed}")]
    Hash {
        /// The file.
        path: String,
        /// Its hex SHA-256.
        sha256: String,
        /// The hex SHA-256 the manifest lists.
        listed: String,
    },
    /// A bin of the manifest (`manifest.json` or `manifest/<prefix>.json`) breaks the trie's
    /// rules (library/MIRRORS.md, "The manifest").
    #[error("{path}: {problem}")]
    Bin {
        /// The bin.
        path: String,
        /// What is wrong.
        problem: BinProblem,
    },
    /// A vow chain page (or the chain head pinning it) does not hold: its hash against its
    /// successor's link or the head's pin, its type, vow or number (library/VOWS.md, "The
    /// chain").
    #[error("{path}: {reason}")]
    ChainPage {
        /// The page or head at fault.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A file of a mirror that should not be there, or a listed one that is not.
    #[error("{path}: {problem}")]
    Mirror {
        /// The file (a directory ends in `/`).
        path: String,
        /// What is wrong.
        problem: MirrorProblem,
    },
    /// A directory could not be walked.
    #[error("walking {dir}: {source}")]
    Walk {
        /// The directory.
        dir: String,
        /// The error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The log of a mirror (under `log/`) does not verify.
    #[error("log: {0}")]
    Log(Box<Error>),
}

/// What is wrong with a manifest (`manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Its `type` is neither `conduct.manifest/v3` nor `conduct.manifest/v2` (a
    /// `conduct.manifest/v1` manifest is the single-file format the trie replaced;
    /// library/MIRRORS.md).
    #[error("type {0:?}, expected {MANIFEST_TYPE:?}")]
    Type(Option<String>),
    /// `as_of` or `expires` is missing or not a string.
    #[error("no {0} string")]
    NoTime(&'static str),
    /// `as_of` or `expires` is not an RFC 3339 UTC time.
    #[error("{field} {value:?} is not an RFC 3339 UTC time")]
    BadTime {
        /// `as_of` or `expires`.
        field: &'static str,
        /// What it says.
        value: String,
    },
    /// It has expired: the mirror is stale.
    #[error(
        "expired {} ago (expires {expires}, now {}); it was signed {} ago (as_of {as_of}): the \
         mirror is stale",
        age(.now.saturating_sub(*.until)),
        conduct_core::time::rfc3339(*.now),
        age(.now.saturating_sub(*.signed_at))
    )]
    Expired {
        /// Its `as_of`.
        as_of: String,
        /// Its `expires`.
        expires: String,
        /// `as_of`, unix seconds.
        signed_at: u64,
        /// `expires`, unix seconds.
        until: u64,
        /// The time of the check, unix seconds.
        now: u64,
    },
}

/// What is wrong with a bin of the manifest (library/MIRRORS.md, "The manifest").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BinProblem {
    /// A bin's `type` is not `conduct.manifest-bin/v1`.
    #[error("type {0:?}, expected {BIN_TYPE:?}")]
    Type(Option<String>),
    /// A bin's `prefix` is not the one its path names.
    #[error("prefix {found:?}, its path names {expected:?}")]
    Prefix {
        /// What the bin says.
        found: Option<String>,
        /// The prefix of its path.
        expected: String,
    },
    /// Neither a `files` object nor a `bins` object, or both (the root must have `bins`).
    #[error("lists neither files nor bins (exactly one of the two objects)")]
    NoListing,
    /// A child is not named `manifest/<prefix><hex digit>.json`.
    #[error("names {0:?}, which is not one of its children")]
    NotAChild(String),
    /// A child's entry is not `{"files", "len", "sha256"}` with lower-case hex.
    #[error("the entry of {0:?} is not {{files, len, sha256}}")]
    BadChild(String),
    /// A listed file has no lowercase hex `sha256` or no `len`.
    #[error("the entry of {0:?} is not {{len, sha256}} with lower-case hex")]
    BadEntry(String),
    /// A listed path is not a plain relative path outside `log/` and the manifest.
    #[error("lists {0:?}, which is not a file path a mirror may hold")]
    BadPath(String),
    /// A listed file's key does not start with the bin's prefix: it is listed in the wrong bin.
    #[error("lists {path:?}, whose key {key} is outside the bin")]
    WrongBin {
        /// The listed path.
        path: String,
        /// Its key (the SHA-256 of its unit).
        key: String,
    },
    /// A bin lists another number of files than its parent says.
    #[error("lists {found} files, its parent says {named}")]
    Count {
        /// Files listed under the bin.
        found: u64,
        /// What its parent says.
        named: u64,
    },
    /// A file under `manifest/` that the trie does not name.
    #[error("not a bin the manifest names")]
    Unnamed,
}

/// What is wrong with a file of a mirror.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorProblem {
    /// A dot directory outside `log/` (only `.well-known` is served).
    #[error("a dot directory (not signed, not served)")]
    DotDirectory,
    /// A dotfile outside `log/`.
    #[error("a dotfile (not signed, not served)")]
    Dotfile,
    /// A dotfile under `log/`.
    #[error("a dotfile (not part of the log)")]
    LogDotfile,
    /// A symlink or another special file.
    #[error("not a regular file (a mirror holds plain files)")]
    NotRegular,
    /// A file outside `log/` the manifest does not list.
    #[error("not listed in the manifest (a mirror must not serve unsigned files)")]
    Unlisted,
    /// A chain page no listed chain head reaches.
    #[error("a chain page no listed chain head reaches (a mirror must not serve unsigned files)")]
    StrayPage,
    /// The tree holds another number of chain pages than the heads reach, and no single page
    /// was found at fault.
    #[error("{on_disk} chain pages on disk, the chain heads reach {reached}")]
    PageCount {
        /// Chain pages found on disk.
        on_disk: u64,
        /// Chain pages the listed heads reach.
        reached: u64,
    },
    /// The tree holds another number of files than the manifest lists, and no single file
    /// was found at fault (it changed while it was read).
    #[error("{on_disk} files on disk, the manifest lists {listed}")]
    Count {
        /// Files found outside `log/` and the manifest.
        on_disk: u64,
        /// Files the manifest lists.
        listed: u64,
    },
    /// A listed path that is not a file of the tree.
    #[error("listed in the manifest but not a file of the tree")]
    Missing,
    /// A file under `log/` that is neither the checkpoint, a tile nor an entry bundle.
    #[error("not a file of the log")]
    NotALogFile,
    /// A tile or bundle past the checkpoint's size.
    #[error("beyond the checkpoint's size {0}")]
    BeyondSize(u64),
    /// An older partial tile or bundle that is not a prefix of the current one.
    #[error("an older partial that is not the prefix of log/{current}")]
    NotAPrefix {
        /// The current tile or bundle at that position, relative to `log/`.
        current: String,
    },
    /// A file name that is not UTF-8.
    #[error("the file name is not UTF-8")]
    NameNotUtf8,
}

/// A duration as a short human reading (`3d 4h`, `2h 5m`, `40s`).
pub(crate) fn age(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, (secs / 3600) % 24, (secs / 60) % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", secs % 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_well() {
        assert_eq!(age(40), "40s");
        assert_eq!(age(125), "2m 5s");
        assert_eq!(age(2 * 3600 + 300), "2h 5m");
        assert_eq!(age(3 * 86_400 + 4 * 3600 + 9), "3d 4h");
    }
}
