//! C2SP signed-note: notes signed by one or more keys, Ed25519 (type 0x01) signing and
//! verification, and verifier keys (`vkey`s).
//!
//! A signed note is the text (ending in `\n`), a blank line, then one or more lines
//! `— <name> <base64(key id ‖ signature)>\n` (U+2014 em dash). Verifiers ignore signatures whose
//! (name, key id) they do not know, reject the note when a known key's signature fails, and
//! reject it when no known key verifies.

use std::fmt;
use std::str::FromStr;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};

use crate::signing::{key_id, ServiceKey};

/// Signature type byte of Ed25519 note signatures.
pub const ALG_ED25519: u8 = 0x01;
/// Most signature lines a note may carry (the spec requires accepting at least 16).
pub const MAX_SIGNATURES: usize = 100;
/// The signature line prefix: U+2014 em dash and a space.
pub const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// Why a note, a signature line or a verifier key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    /// The note (or its text) does not follow the signed-note format.
    #[error("malformed note: {0}")]
    Malformed(&'static str),
    /// A key name is empty, or holds a space, a `+` or a control character.
    #[error("invalid key name {0:?}")]
    InvalidKeyName(String),
    /// A verifier key string is not `name+hex8+base64(0x01 ‖ pubkey)` with a matching id.
    #[error("invalid verifier key: {0}")]
    InvalidVerifierKey(&'static str),
    /// More than [`MAX_SIGNATURES`] signature lines.
    #[error("more than {MAX_SIGNATURES} signatures")]
    TooManySignatures,
    /// Two different verifier keys share a name and key id.
    #[error("ambiguous verifier key {name}+{key_id}")]
    AmbiguousKey {
        /// Key name.
        name: String,
        /// Key id, 8 hex characters.
        key_id: String,
    },
    /// A signature from a known key does not verify.
    #[error("invalid signature for key {name}+{key_id}")]
    BadSignature {
        /// Key name.
        name: String,
        /// Key id, 8 hex characters.
        key_id: String,
    },
    /// No signature from a known key.
    #[error("note has no signature from a known key")]
    NoVerifiedSignature,
}

/// Whether `name` is a valid key name: non-empty, without whitespace, `+` or control characters.
pub fn is_valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '+')
}

fn check_name(name: &str) -> Result<(), NoteError> {
    if is_valid_key_name(name) {
        Ok(())
    } else {
        Err(NoteError::InvalidKeyName(name.to_owned()))
    }
}

/// Check note text: non-empty, ending in `\n`, no control characters but `\n`.
fn check_text(text: &str) -> Result<(), NoteError> {
    if !text.ends_with('\n') {
        return Err(NoteError::Malformed("text must end with a newline"));
    }
    check_no_controls(text)
}

fn check_no_controls(s: &str) -> Result<(), NoteError> {
    if s.bytes().any(|b| b < 0x20 && b != b'\n') {
        return Err(NoteError::Malformed("control character"));
    }
    Ok(())
}

/// An Ed25519 note verifier: key name, key id and public key, parsed from a C2SP vkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    name: String,
    key_id: [u8; 4],
    key: VerifyingKey,
}

impl Verifier {
    /// Parse a vkey `name+hex(key id)+base64(0x01 ‖ 32-byte public key)`; the key id must be
    /// the one derived from the name and key.
    pub fn parse(vkey: &str) -> Result<Self, NoteError> {
        let mut parts = vkey.splitn(3, '+');
        let (Some(name), Some(id_hex), Some(key_b64)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(NoteError::InvalidVerifierKey("expected name+id+key"));
        };
        check_name(name)?;
        let id: [u8; 4] = match hex::decode(id_hex) {
            Ok(b) if id_hex.len() == 8 => [b[0], b[1], b[2], b[3]],
            _ => return Err(NoteError::InvalidVerifierKey("key id is not 8 hex digits")),
        };
        let raw = B64
            .decode(key_b64)
            .map_err(|_| NoteError::InvalidVerifierKey("key is not base64"))?;
        let [alg, pubkey @ ..] = raw.as_slice() else {
            return Err(NoteError::InvalidVerifierKey("empty key"));
        };
        if *alg != ALG_ED25519 {
            return Err(NoteError::InvalidVerifierKey("not an Ed25519 (0x01) key"));
        }
        let pubkey: &[u8; 32] = pubkey
            .try_into()
            .map_err(|_| NoteError::InvalidVerifierKey("Ed25519 key is not 32 bytes"))?;
        let key = VerifyingKey::from_bytes(pubkey)
            .map_err(|_| NoteError::InvalidVerifierKey("not an Ed25519 point"))?;
        let verifier = Self::from_public(name, &key)?;
        if verifier.key_id != id {
            return Err(NoteError::InvalidVerifierKey(
                "key id does not match name and key",
            ));
        }
        Ok(verifier)
    }

    /// The verifier of an Ed25519 public key under `name`.
    pub fn from_public(name: &str, key: &VerifyingKey) -> Result<Self, NoteError> {
        check_name(name)?;
        Ok(Verifier {
            name: name.to_owned(),
            key_id: key_id(name, key),
            key: *key,
        })
    }

    /// The verifier of a service key (its name and public half).
    pub fn for_key(key: &ServiceKey) -> Result<Self, NoteError> {
        Self::from_public(key.name(), &key.public())
    }

    /// Key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Key id: `SHA-256(name ‖ 0x0A ‖ 0x01 ‖ pubkey)[:4]`.
    pub fn key_id(&self) -> [u8; 4] {
        self.key_id
    }

    /// The Ed25519 public key.
    pub fn public(&self) -> &VerifyingKey {
        &self.key
    }

    /// The vkey string, `name+hex(key id)+base64(0x01 ‖ pubkey)`.
    pub fn vkey(&self) -> String {
        let mut typed = Vec::with_capacity(33);
        typed.push(ALG_ED25519);
        typed.extend_from_slice(self.key.as_bytes());
        format!(
            "{}+{}+{}",
            self.name,
            hex::encode(self.key_id),
            B64.encode(typed)
        )
    }

    /// Whether `sig` (64 bytes, without the key id) is this key's signature of `msg`.
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        let Ok(sig) = <[u8; 64]>::try_from(sig) else {
            return false;
        };
        self.key
            .verify_strict(msg, &Signature::from_bytes(&sig))
            .is_ok()
    }
}

impl FromStr for Verifier {
    type Err = NoteError;
    fn from_str(s: &str) -> Result<Self, NoteError> {
        Self::parse(s)
    }
}

impl fmt::Display for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.vkey())
    }
}

/// One signature line: key name, key id, and the signature bytes after the key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// Key name.
    pub name: String,
    /// Key id (the first 4 decoded bytes).
    pub key_id: [u8; 4],
    /// Signature bytes (the rest; 64 for Ed25519, other lengths for other types).
    pub signature: Vec<u8>,
}

impl NoteSignature {
    /// The line `— <name> <base64(key id ‖ signature)>\n`.
    pub fn line(&self) -> String {
        let mut raw = Vec::with_capacity(4 + self.signature.len());
        raw.extend_from_slice(&self.key_id);
        raw.extend_from_slice(&self.signature);
        format!("{SIGNATURE_PREFIX}{} {}\n", self.name, B64.encode(raw))
    }

    /// Parse one signature line, without its trailing newline.
    pub fn parse_line(line: &str) -> Result<Self, NoteError> {
        let rest = line
            .strip_prefix(SIGNATURE_PREFIX)
            .ok_or(NoteError::Malformed(
                "signature line must start with an em dash",
            ))?;
        let (name, b64) = rest
            .split_once(' ')
            .ok_or(NoteError::Malformed("signature line has no signature"))?;
        check_name(name)?;
        let raw = B64
            .decode(b64)
            .map_err(|_| NoteError::Malformed("signature is not base64"))?;
        if raw.len() < 5 {
            return Err(NoteError::Malformed("signature is too short"));
        }
        Ok(NoteSignature {
            name: name.to_owned(),
            key_id: [raw[0], raw[1], raw[2], raw[3]],
            signature: raw[4..].to_vec(),
        })
    }

    fn same_key(&self, name: &str, id: [u8; 4]) -> bool {
        self.name == name && self.key_id == id
    }
}

/// The outcome of verifying a note: signatures by known keys that verified, and signatures
/// by unknown keys (ignored). Exact duplicate lines are listed once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verification {
    /// Signatures from known keys, all verified.
    pub verified: Vec<NoteSignature>,
    /// Signatures whose (name, key id) no verifier knows.
    pub unknown: Vec<NoteSignature>,
}

/// A note: its text and signature lines (verified or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    text: String,
    signatures: Vec<NoteSignature>,
}

impl Note {
    /// An unsigned note. The text must end with `\n` and hold no control character but `\n`.
    pub fn new(text: impl Into<String>) -> Result<Self, NoteError> {
        let text = text.into();
        check_text(&text)?;
        Ok(Note {
            text,
            signatures: Vec::new(),
        })
    }

    /// The note text, including its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The signature lines, in order.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// Sign the text with `key` (Ed25519), replacing any signature with the same name and id.
    pub fn sign(&mut self, key: &ServiceKey) -> Result<(), NoteError> {
        check_name(key.name())?;
        let sig = NoteSignature {
            name: key.name().to_owned(),
            key_id: key.key_id(),
            signature: key.sign_bytes(self.text.as_bytes()).to_vec(),
        };
        self.add_signature(sig)
    }

    /// Add a signature line (e.g. a cosignature made elsewhere), replacing any with the same
    /// name and id. Nothing is verified here.
    pub fn add_signature(&mut self, sig: NoteSignature) -> Result<(), NoteError> {
        check_name(&sig.name)?;
        if sig.signature.is_empty() {
            return Err(NoteError::Malformed("signature is too short"));
        }
        self.signatures
            .retain(|s| !s.same_key(&sig.name, sig.key_id));
        if self.signatures.len() >= MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures);
        }
        self.signatures.push(sig);
        Ok(())
    }

    /// Parse a signed note, without verifying it. The text ends at the last blank line.
    pub fn parse(note: &str) -> Result<Self, NoteError> {
        check_no_controls(note)?;
        let split = note
            .rfind("\n\n")
            .ok_or(NoteError::Malformed("no blank line before the signatures"))?;
        let (text, sigs) = (&note[..split + 1], &note[split + 2..]);
        let Some(sigs) = sigs.strip_suffix('\n') else {
            return Err(NoteError::Malformed(
                "missing signature lines or final newline",
            ));
        };
        let mut signatures = Vec::new();
        for line in sigs.split('\n') {
            if signatures.len() == MAX_SIGNATURES {
                return Err(NoteError::TooManySignatures);
            }
            signatures.push(NoteSignature::parse_line(line)?);
        }
        Ok(Note {
            text: text.to_owned(),
            signatures,
        })
    }

    /// Verify against `verifiers`: unknown (name, id) pairs are ignored, a known key whose
    /// signature fails rejects the note, and at least one known key must verify.
    pub fn verify(&self, verifiers: &[Verifier]) -> Result<Verification, NoteError> {
        let mut out = Verification::default();
        for sig in &self.signatures {
            let mut known = verifiers.iter().filter(|v| sig.same_key(&v.name, v.key_id));
            let Some(v) = known.next() else {
                if !out.unknown.contains(sig) {
                    out.unknown.push(sig.clone());
                }
                continue;
            };
            if known.any(|other| other.key != v.key) {
                return Err(NoteError::AmbiguousKey {
                    name: sig.name.clone(),
                    key_id: hex::encode(sig.key_id),
                });
            }
            if !v.verify(self.text.as_bytes(), &sig.signature) {
                return Err(NoteError::BadSignature {
                    name: sig.name.clone(),
                    key_id: hex::encode(sig.key_id),
                });
            }
            if !out.verified.contains(sig) {
                out.verified.push(sig.clone());
            }
        }
        if out.verified.is_empty() {
            return Err(NoteError::NoVerifiedSignature);
        }
        Ok(out)
    }
}

impl FromStr for Note {
    type Err = NoteError;
    fn from_str(s: &str) -> Result<Self, NoteError> {
        Self::parse(s)
    }
}

/// The signed-note encoding: text, blank line, signature lines. A note needs at least one
/// signature to parse back.
impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)?;
        f.write_str("\n")?;
        for sig in &self.signatures {
            f.write_str(&sig.line())?;
        }
        Ok(())
    }
}

/// Sign `text` with `key` and return the signed note.
pub fn sign_note(text: &str, key: &ServiceKey) -> Result<String, NoteError> {
    let mut note = Note::new(text)?;
    note.sign(key)?;
    Ok(note.to_string())
}

/// Parse and verify a signed note in one step.
pub fn open_note(note: &str, verifiers: &[Verifier]) -> Result<(Note, Verification), NoteError> {
    let note = Note::parse(note)?;
    let verification = note.verify(verifiers)?;
    Ok((note, verification))
}
