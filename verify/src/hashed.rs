//! Reading a file of the tree while hashing it, and checking a signed JSON file: the two reads
//! every check of a mirror makes (`site.rs` for listed files, `chain_pages.rs` for the pages a
//! chain head reaches).

use std::io::Read;

use conduct_core::signing::{verify_snapshot, PinnedKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::files::Files;
use crate::Error;

/// Read the file at `rel` through `buf`, hashing it as it comes: its length, its SHA-256, and,
/// when `keep` gives its listed length, its bytes (those past that length are not kept: the
/// length check fails anyway).
pub(crate) fn read_hashed<F: Files + ?Sized>(
    files: &F,
    rel: &str,
    keep: Option<u64>,
    buf: &mut [u8],
) -> Result<(u64, [u8; 32], Vec<u8>), Error> {
    let fail = |source| Error::Read {
        path: rel.to_owned(),
        source,
    };
    let mut reader = files.reader(rel)?;
    let mut hasher = Sha256::new();
    let cap = keep.map_or(0, |n| usize::try_from(n).unwrap_or(0).min(1 << 24));
    let mut kept = Vec::with_capacity(cap);
    let mut len = 0u64;
    loop {
        let n = match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e)),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
        if keep.is_some_and(|listed| len <= listed) {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    Ok((len, hasher.finalize().into(), kept))
}

/// Parse `bytes` as a JSON object and verify its signature under `pinned` (`x-signature` for
/// the OpenAPI document, see [`verify_snapshot`]).
pub(crate) fn signed_json(path: &str, bytes: &[u8], pinned: &PinnedKey) -> Result<Value, Error> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|source| Error::NotJson {
        path: path.to_owned(),
        source,
    })?;
    verify_snapshot(&doc, pinned).map_err(|source| Error::Signature {
        path: path.to_owned(),
        source,
    })?;
    Ok(doc)
}
