//! C2SP tlog-proof: an offline proof that an entry is in a log ("spicy signature").
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! [extra <base64>]
//! index <i>
//! <base64 inclusion hash>...
//!
//! <signed checkpoint, verbatim>
//! ```

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::checkpoint::{open_checkpoint, CheckpointError, SignedCheckpoint};
use super::hash::{leaf_hash, Hash};
use super::note::Verifier;
use super::proof::verify_inclusion;

/// First line of a tlog-proof.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";
/// Most inclusion hashes a proof may carry (a tree of `2^64` leaves needs 64).
pub const MAX_PROOF_HASHES: usize = 64;

/// Why a tlog-proof was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlogProofError {
    /// The text does not follow the tlog-proof format.
    #[error("malformed tlog-proof: {0}")]
    Malformed(&'static str),
    /// The checkpoint is malformed or does not verify.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The index is not below the checkpoint's tree size.
    #[error("index {index} is out of range for tree size {size}")]
    IndexOutOfRange {
        /// The proof's index.
        index: u64,
        /// The checkpoint's size.
        size: u64,
    },
    /// The inclusion proof does not lead from the leaf to the checkpoint root.
    #[error("inclusion proof does not verify")]
    InclusionFailed,
}

/// A parsed tlog-proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    /// Optional opaque extra data (unauthenticated).
    pub extra: Option<Vec<u8>>,
    /// Zero-based leaf index.
    pub index: u64,
    /// Inclusion proof, from the leaf's sibling up to the root's child.
    pub proof: Vec<Hash>,
    /// The signed checkpoint note, verbatim.
    pub checkpoint: String,
}

/// Split off the next line (without its `\n`); `None` if there is no newline.
fn next_line<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let (line, tail) = rest.split_once('\n')?;
    *rest = tail;
    Some(line)
}

impl TlogProof {
    /// The text encoding.
    pub fn encode(&self) -> String {
        let mut s = format!("{TLOG_PROOF_HEADER}\n");
        if let Some(extra) = &self.extra {
            s.push_str(&format!("extra {}\n", B64.encode(extra)));
        }
        s.push_str(&format!("index {}\n", self.index));
        for h in &self.proof {
            s.push_str(&B64.encode(h));
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&self.checkpoint);
        s
    }

    /// Parse the text encoding. The checkpoint is kept verbatim, not yet verified.
    pub fn parse(text: &str) -> Result<Self, TlogProofError> {
        let mut rest = text;
        if next_line(&mut rest) != Some(TLOG_PROOF_HEADER) {
            return Err(TlogProofError::Malformed("missing header line"));
        }
        let mut line = next_line(&mut rest).ok_or(TlogProofError::Malformed("truncated"))?;
        let mut extra = None;
        if let Some(b64) = line.strip_prefix("extra ") {
            extra = Some(
                B64.decode(b64)
                    .map_err(|_| TlogProofError::Malformed("extra is not base64"))?,
            );
            line = next_line(&mut rest).ok_or(TlogProofError::Malformed("truncated"))?;
        }
        let index = line
            .strip_prefix("index ")
            .filter(|n| {
                !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && (*n == "0" || !n.starts_with('0'))
            })
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or(TlogProofError::Malformed("missing or non-canonical index"))?;
        let mut proof = Vec::new();
        loop {
            let line = next_line(&mut rest).ok_or(TlogProofError::Malformed("truncated"))?;
            if line.is_empty() {
                break;
            }
            if proof.len() == MAX_PROOF_HASHES {
                return Err(TlogProofError::Malformed("too many proof hashes"));
            }
            let h: Hash = B64
                .decode(line)
                .ok()
                .and_then(|h| h.try_into().ok())
                .ok_or(TlogProofError::Malformed(
                    "proof line is not base64 of 32 bytes",
                ))?;
            proof.push(h);
        }
        if rest.is_empty() {
            return Err(TlogProofError::Malformed("missing checkpoint"));
        }
        Ok(TlogProof {
            extra,
            index,
            proof,
            checkpoint: rest.to_owned(),
        })
    }

    /// Verify that `entry` is leaf `index` of the checkpointed tree: the checkpoint must carry
    /// a valid log signature (see [`open_checkpoint`]) and the inclusion proof must check out.
    /// Witness policies are left to the caller, from the returned verification.
    pub fn verify(
        &self,
        entry: &[u8],
        verifiers: &[Verifier],
    ) -> Result<SignedCheckpoint, TlogProofError> {
        self.verify_leaf_hash(&leaf_hash(entry), verifiers)
    }

    /// [`TlogProof::verify`] for an entry given by its leaf hash.
    pub fn verify_leaf_hash(
        &self,
        leaf: &Hash,
        verifiers: &[Verifier],
    ) -> Result<SignedCheckpoint, TlogProofError> {
        let signed = open_checkpoint(&self.checkpoint, verifiers)?;
        let (size, root) = (signed.checkpoint.size, signed.checkpoint.root);
        if self.index >= size {
            return Err(TlogProofError::IndexOutOfRange {
                index: self.index,
                size,
            });
        }
        if !verify_inclusion(self.index, size, leaf, &self.proof, &root) {
            return Err(TlogProofError::InclusionFailed);
        }
        Ok(signed)
    }
}
