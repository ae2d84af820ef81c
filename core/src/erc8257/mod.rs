//! ERC-8257 (Agent Tool Registry) manifests: the hash a registration commits to, the manifest
//! rules, the well-known binding of `metadataURI` to `endpoint`, the creator match, and the
//! claims shown for display. Pure logic: fetching a manifest and reading the chain belong to the
//! caller.
//!
//! The consumer checks of ERC-8257 §7, in order: the binding ([`check_binding`]), the pre-JCS
//! rules and the hash ([`manifest_hash`]), the manifest rules ([`validate_manifest`]), the
//! creator ([`creator_matches`]); [`verify`] runs them all on fetched bytes. Nothing is ever
//! repaired: a BOM, a non-NFC string or an upper-case hex digit is a rejection, not a fix.

mod binding;
mod claims;
mod hash;
mod validate;

pub use binding::check_binding;
pub use claims::{
    claims, is_stripped, strip_for_display, Claims, CLAIM_DESCRIPTION_MAX, CLAIM_ENDPOINT_MAX,
    CLAIM_NAME_MAX,
};
pub use hash::{canonical_bytes, check_canonical_rules, keccak256, manifest_hash, parse_manifest};
pub use validate::{
    validate_manifest, Access, Logic, Manifest, Pricing, Requirement, Verifiability,
};

/// The manifest `type` of ERC-8257 v1.
pub const MANIFEST_TYPE: &str = "https://ercs.ethereum.org/ERCS/erc-8257#tool-manifest-v1";

/// Largest manifest a consumer reads (ERC-8257 "Manifest Parser Hardening": 1 MiB).
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// Largest `metadataURI`, in bytes (ERC-8257 "Metadata URI Length Cap").
pub const MAX_METADATA_URI_BYTES: usize = 2048;

/// The verification status of a registered tool, as the registry view publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Every check passed: binding, pre-JCS rules, hash, manifest rules, creator.
    Verified,
    /// The manifest could not be fetched (the caller decides: HTTP status, timeout, redirect).
    Unreachable,
    /// The served bytes do not hash to the on-chain `manifestHash`.
    HashMismatch,
    /// The served bytes break a rule of the manifest format.
    InvalidManifest,
    /// The manifest's `creatorAddress` is not the on-chain creator.
    CreatorMismatch,
    /// `metadataURI` is not the well-known path on the origin of `endpoint`.
    BindingMismatch,
    /// The creator deregistered the tool.
    Deregistered,
}

impl Status {
    /// The published name of the status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Unreachable => "unreachable",
            Status::HashMismatch => "hash-mismatch",
            Status::InvalidManifest => "invalid-manifest",
            Status::CreatorMismatch => "creator-mismatch",
            Status::BindingMismatch => "binding-mismatch",
            Status::Deregistered => "deregistered",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a manifest (or its binding) was rejected. Paths are JSON pointers (RFC 6901) into the
/// manifest; the empty pointer is the whole document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The bytes start with a UTF-8 byte-order mark (EF BB BF).
    #[error("the manifest starts with a UTF-8 byte-order mark (EF BB BF)")]
    Bom,
    /// The bytes exceed [`MAX_MANIFEST_BYTES`].
    #[error("the manifest is {len} bytes, more than the {MAX_MANIFEST_BYTES}-byte limit")]
    TooLarge {
        /// Its length in bytes.
        len: usize,
    },
    /// The bytes are not UTF-8 JSON.
    #[error("not UTF-8 JSON: {reason}")]
    InvalidJson {
        /// What the parser said.
        reason: String,
    },
    /// A string (key or value) is not in Unicode Normalization Form C.
    #[error("{}: string is not in Unicode NFC", show(path))]
    NotNfc {
        /// The member or item holding it.
        path: String,
    },
    /// A hex field named by the ERC has upper-case digits.
    #[error("{}: hex digits must be lower-case", show(path))]
    UppercaseHex {
        /// The field.
        path: String,
    },
    /// A field breaks a manifest rule.
    #[error("{}: {reason}", show(path))]
    Invalid {
        /// The field.
        path: String,
        /// The rule it breaks.
        reason: String,
    },
    /// `metadataURI` is not bound to `endpoint` (ERC-8257 §6).
    #[error("binding: {reason}")]
    Binding {
        /// The sub-check that failed.
        reason: String,
    },
}

fn show(path: &str) -> &str {
    if path.is_empty() {
        "(the document)"
    } else {
        path
    }
}

impl ManifestError {
    /// The registry status this rejection publishes: `binding-mismatch` for a binding failure,
    /// `invalid-manifest` for every format error.
    pub fn status(&self) -> &'static str {
        self.kind().as_str()
    }

    /// A stable, machine-readable reason for this rejection (published beside the status).
    pub fn reason(&self) -> &'static str {
        match self {
            ManifestError::Bom => "bom",
            ManifestError::TooLarge { .. } => "too-large",
            ManifestError::InvalidJson { .. } => "invalid-json",
            ManifestError::NotNfc { .. } => "not-nfc",
            ManifestError::UppercaseHex { .. } => "uppercase-hex",
            ManifestError::Invalid { .. } => "invalid-field",
            ManifestError::Binding { .. } => "binding",
        }
    }

    /// The same as [`ManifestError::status`], typed.
    pub fn kind(&self) -> Status {
        match self {
            ManifestError::Binding { .. } => Status::BindingMismatch,
            _ => Status::InvalidManifest,
        }
    }

    pub(crate) fn invalid(path: impl Into<String>, reason: impl Into<String>) -> Self {
        ManifestError::Invalid {
            path: path.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn binding(reason: impl Into<String>) -> Self {
        ManifestError::Binding {
            reason: reason.into(),
        }
    }
}

/// Creator match (ERC-8257 §7, check 4): the manifest's `creatorAddress` byte-equals the
/// on-chain creator written as `0x` and 40 lower-case hex digits. No case folding: a manifest
/// with upper-case digits never matches.
pub fn creator_matches(manifest_creator: &str, onchain: &[u8; 20]) -> bool {
    let b = manifest_creator.as_bytes();
    if b.len() != 42 || &b[..2] != b"0x" {
        return false;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    onchain.iter().enumerate().all(|(i, byte)| {
        b[2 + 2 * i] == HEX[(byte >> 4) as usize] && b[3 + 2 * i] == HEX[(byte & 0xf) as usize]
    })
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The status to publish.
    pub status: Status,
    /// `keccak256(JCS(manifest))` of the served bytes, when they are a JSON object (it is
    /// computed even when a rule fails, so a reader can compare it with the commitment).
    pub computed: Option<[u8; 32]>,
    /// Why it failed (naming the field), `None` when verified.
    pub detail: Option<String>,
    /// A stable reason for the failure ([`ManifestError::reason`], `hash-mismatch`,
    /// `creator-mismatch`), `None` when verified.
    pub reason: Option<&'static str>,
}

/// Every consumer check of ERC-8257 §7 on fetched manifest bytes, in the ERC's order: the
/// binding of `metadata_uri` to the manifest's `endpoint`, the pre-JCS rules (BOM, NFC, hex
/// case), the hash against `committed`, the manifest rules, and the creator against `creator`.
/// The first failure decides the status. Fetching (and `unreachable`, `deregistered`, the one
/// re-read of `getToolConfig` on a mismatch) is the caller's.
pub fn verify(
    bytes: &[u8],
    metadata_uri: &str,
    committed: &[u8; 32],
    creator: &[u8; 20],
) -> Verification {
    let fail =
        |status: Status, reason: &'static str, computed: Option<[u8; 32]>, detail: String| {
            Verification {
                status,
                computed,
                detail: Some(detail),
                reason: Some(reason),
            }
        };
    let reject = |e: ManifestError, computed| fail(e.kind(), e.reason(), computed, e.to_string());
    let value = match parse_manifest(bytes) {
        Ok(v) => v,
        Err(e) => return reject(e, None),
    };
    let computed = hash::hash_value(&value).ok();
    let Some(endpoint) = value.get("endpoint").and_then(|e| e.as_str()) else {
        return reject(
            ManifestError::invalid("/endpoint", "required, a string"),
            computed,
        );
    };
    let checks = check_binding(metadata_uri, endpoint).and_then(|()| check_canonical_rules(&value));
    if let Err(e) = checks {
        return reject(e, computed);
    }
    let Some(hash) = computed else {
        return reject(ManifestError::invalid("", "cannot be canonicalized"), None);
    };
    if &hash != committed {
        return fail(
            Status::HashMismatch,
            "hash-mismatch",
            computed,
            format!(
                "keccak256(JCS(manifest)) is 0x{}, the registration commits to 0x{}",
                hex::encode(hash),
                hex::encode(committed)
            ),
        );
    }
    let manifest = match validate_manifest(&value) {
        Ok(m) => m,
        Err(e) => return reject(e, computed),
    };
    if !creator_matches(&manifest.creator_address, creator) {
        return fail(
            Status::CreatorMismatch,
            "creator-mismatch",
            computed,
            format!(
                "/creatorAddress is {}, the on-chain creator is 0x{}",
                manifest.creator_address,
                hex::encode(creator)
            ),
        );
    }
    Verification {
        status: Status::Verified,
        computed,
        detail: None,
        reason: None,
    }
}

/// Append one reference token to a JSON pointer (RFC 6901: `~` as `~0`, `/` as `~1`).
pub(crate) fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// A JSON pointer from reference tokens.
pub(crate) fn pointer<'a>(tokens: impl IntoIterator<Item = &'a str>) -> String {
    let mut p = String::new();
    for t in tokens {
        push_token(&mut p, t);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_the_published_names() {
        assert_eq!(ManifestError::Bom.status(), "invalid-manifest");
        assert_eq!(
            ManifestError::binding("other host").status(),
            "binding-mismatch"
        );
        assert_eq!(Status::HashMismatch.to_string(), "hash-mismatch");
        assert_eq!(Status::CreatorMismatch.as_str(), "creator-mismatch");
        assert_eq!(Status::Deregistered.as_str(), "deregistered");
    }

    #[test]
    fn creator_match_is_byte_equal_lower_case() {
        let mut a = [0u8; 20];
        a[0] = 0xab;
        a[19] = 0x01;
        let lower = format!("0x{}", hex::encode(a));
        assert!(creator_matches(&lower, &a));
        assert!(!creator_matches(
            &lower.to_uppercase().replace("0X", "0x"),
            &a
        ));
        assert!(!creator_matches(&lower[..41], &a));
        assert!(!creator_matches(&format!("{lower}0"), &a));
        a[19] = 0x02;
        assert!(!creator_matches(&lower, &a));
    }

    #[test]
    fn pointers_escape_tilde_and_slash() {
        assert_eq!(pointer(["a/b", "c~d", "0"]), "/a~1b/c~0d/0");
    }
}
