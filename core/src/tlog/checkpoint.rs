//! C2SP tlog-checkpoint: the note body `<origin>\n<size>\n<base64 root>\n` and its signing and
//! verification.
//!
//! Checkpoints written here carry no extension lines; parsing tolerates (and keeps) them. A
//! checkpoint verifies only with a signature from a known key whose name is the origin.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::hash::Hash;
use super::note::{Note, NoteError, Verification, Verifier};
use crate::signing::ServiceKey;

/// Why a checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The signed note is malformed or does not verify.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// The origin is empty or holds a control character.
    #[error("invalid origin {0:?}")]
    InvalidOrigin(String),
    /// The body is not origin, size and root lines (plus non-empty extension lines).
    #[error("malformed checkpoint body: {0}")]
    MalformedBody(&'static str),
    /// Signing with a key whose name is not the origin.
    #[error("key name {key_name:?} does not match origin {origin:?}")]
    OriginMismatch {
        /// The checkpoint origin.
        origin: String,
        /// The signing key's name.
        key_name: String,
    },
    /// The note verified, but not with a known key named after the origin.
    #[error("no verified signature from the log key {origin:?}")]
    NoLogSignature {
        /// The checkpoint origin.
        origin: String,
    },
}

/// A checkpoint: log origin, tree size, RFC 6962 root hash, and any extension lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Log origin (first line), which is also the log key's name.
    pub origin: String,
    /// Tree size.
    pub size: u64,
    /// Root hash of the tree of that size.
    pub root: Hash,
    /// Extension lines after the root, without newlines; empty for checkpoints built here.
    pub extensions: Vec<String>,
}

fn check_origin(origin: &str) -> Result<(), CheckpointError> {
    if origin.is_empty() || origin.chars().any(char::is_control) {
        return Err(CheckpointError::InvalidOrigin(origin.to_owned()));
    }
    Ok(())
}

impl Checkpoint {
    /// A checkpoint without extension lines.
    pub fn new(origin: &str, size: u64, root: Hash) -> Result<Self, CheckpointError> {
        check_origin(origin)?;
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions: Vec::new(),
        })
    }

    /// The note text: origin, size, base64 root, then any extension lines, each ending in `\n`.
    pub fn body(&self) -> String {
        let mut s = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        );
        for ext in &self.extensions {
            s.push_str(ext);
            s.push('\n');
        }
        s
    }

    /// Parse a checkpoint note text (no signatures).
    pub fn parse_body(text: &str) -> Result<Self, CheckpointError> {
        let Some(text) = text.strip_suffix('\n') else {
            return Err(CheckpointError::MalformedBody("must end with a newline"));
        };
        let mut lines = text.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(CheckpointError::MalformedBody("fewer than three lines"));
        };
        check_origin(origin)?;
        let canonical = !size.is_empty()
            && size.bytes().all(|b| b.is_ascii_digit())
            && (size == "0" || !size.starts_with('0'));
        let size: u64 = match size.parse() {
            Ok(n) if canonical => n,
            _ => {
                return Err(CheckpointError::MalformedBody(
                    "size is not a canonical decimal",
                ))
            }
        };
        let root: Hash = B64
            .decode(root)
            .ok()
            .and_then(|r| r.try_into().ok())
            .ok_or(CheckpointError::MalformedBody(
                "root is not base64 of 32 bytes",
            ))?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(|e| e.is_empty()) {
            return Err(CheckpointError::MalformedBody("empty extension line"));
        }
        if extensions.iter().any(|e| e.chars().any(char::is_control)) {
            return Err(CheckpointError::MalformedBody("control character"));
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        })
    }

    /// The unsigned note of this checkpoint.
    pub fn to_note(&self) -> Result<Note, CheckpointError> {
        Ok(Note::new(self.body())?)
    }

    /// Sign with the log key, whose name must be the origin; returns the signed note.
    pub fn sign(&self, key: &ServiceKey) -> Result<String, CheckpointError> {
        if key.name() != self.origin {
            return Err(CheckpointError::OriginMismatch {
                origin: self.origin.clone(),
                key_name: key.name().to_owned(),
            });
        }
        let mut note = self.to_note()?;
        note.sign(key)?;
        Ok(note.to_string())
    }
}

/// A verified checkpoint with its note and the outcome of signature verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    /// The parsed body.
    pub checkpoint: Checkpoint,
    /// The note as parsed (text and all signature lines).
    pub note: Note,
    /// Which signatures verified and which were from unknown keys.
    pub verification: Verification,
}

/// Parse and verify a signed checkpoint against `verifiers`.
///
/// The note must verify (see [`Note::verify`]) and one verified signature must come from a key
/// named after the origin (the log key); the others (e.g. witnesses') are reported.
pub fn open_checkpoint(
    signed: &str,
    verifiers: &[Verifier],
) -> Result<SignedCheckpoint, CheckpointError> {
    let note = Note::parse(signed)?;
    let checkpoint = Checkpoint::parse_body(note.text())?;
    let verification = note.verify(verifiers)?;
    if !verification
        .verified
        .iter()
        .any(|s| s.name == checkpoint.origin)
    {
        return Err(CheckpointError::NoLogSignature {
            origin: checkpoint.origin,
        });
    }
    Ok(SignedCheckpoint {
        checkpoint,
        note,
        verification,
    })
}
