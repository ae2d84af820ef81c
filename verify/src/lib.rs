//! conduct-verify: check what a conduct service signs, offline, against its pinned key.
//!
//! A counterparty depends on this crate alone: no server, no async runtime, no database, no
//! wallet code (conduct-core without its `wallet` feature; the optional `http` feature adds
//! ureq, a small blocking client). It verifies
//!
//! - an **attestation**, or any signed object ([`verify_attestation`], [`verify_signed`]), and
//!   with the trace it attests, its numbers under the meter it names, `meter/1` or `meter/2`
//!   ([`verify_measurement`]);
//! - a copy of the **transparency log** ([`verify_log`]): the signed checkpoint, every entry
//!   bundle, the root, every hash tile, every vow chain; a single entry's inclusion proof
//!   ([`verify_inclusion`]) and an older checkpoint's consistency with the log
//!   ([`verify_log_extends`]);
//! - a **mirror** of the signed tree ([`verify_site_at`]): the manifest (a trie of signed
//!   bins, each checked against its parent), every listed file's hash and signature, every
//!   vow chain page through its chain head, no unlisted file, and its log.
//!
//! Audits stream: their memory does not grow with the log's entries, the tree's files or its
//! bytes (what grows is what the checks need of each vow; the manifest is read one path of bins
//! at a time, and a tree proven complete by counting). While one runs with standard error on a terminal, it shows its progress there
//! (done of total, rate, time left; [`progress`]); a finished audit carries its duration and
//! the process's peak memory, and its `Display` ends with a line saying its throughput.
//!
//! The formats are in the repository's `library/` (ATTESTATION.md, VOWS.md, MIRRORS.md); the
//! `conduct verify`, `verify-log` and `verify-site` commands are thin wrappers over this crate.
//!
//! ```no_run
//! let key = conduct_verify::pinned_key("example.org/log+1a2b3c4d+AU5v...")?;
//! let bytes = std::fs::read("attestation.json")?;
//! let doc = conduct_verify::verify_attestation(&bytes, &key)?;
//! println!("trace {} attested", doc["trace_sha256"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod attestation;
mod chain_pages;
mod error;
pub mod files;
mod hashed;
pub mod log;
mod manifest;
pub mod progress;
pub mod site;
mod stream;

pub use attestation::{
    pinned_key, verify_attestation, verify_measurement, verify_signed, Measurement,
};
pub use conduct_core::signing::{PinnedKey, VerifyError};
pub use error::{BinProblem, Error, ManifestError, MirrorProblem};
pub use files::Files;
#[cfg(feature = "http")]
pub use files::HttpFiles;
pub use log::{verify_inclusion, verify_log, verify_log_at, verify_log_extends, LogAudit};
pub use site::{
    check_log_dir, verify_site_at, verify_site_dir, verify_site_files, verify_site_settled,
    verify_site_url, verify_tree, SiteAudit, TreeAudit, MANIFEST_TYPE, MAX_SETTLES,
};
