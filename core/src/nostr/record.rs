//! The binding's log record, `conduct.npub-binding/v1`: a signed vow's wallet and an npub's
//! key both signed [`super::bind_message`] for the vow and the npub on the record's UTC date,
//! so from then on the npub names the vow (`/card?key=npub1…`, `/who?handle=npub1…`). The
//! latest binding of an npub wins: binding it again (to the same vow or another) moves it.
//!
//! Like every record of the log it is an object signed by the service (Ed25519 over RFC 8785,
//! `key_id` inside), its leaf bytes the RFC 8785 bytes of the signed object. Members:
//!
//! `type`, `origin` (the service's public URL, named by the text), `vow_id`, `wallet` (EIP-55),
//! `npub`, `pubkey` (the npub's 32 bytes, lowercase hex), `wallet_signature` (EIP-191, `0x`
//! and 130 lowercase hex digits), `nostr_signature` (BIP-340, 128 lowercase hex digits, over
//! `sha256(UTF-8 text)`), `signed` (how the text is rebuilt and signed, fixed words), `date`
//! (`YYYY-MM-DD`, the text's), `at` (RFC 3339 UTC), `log_index`, `scope`, `key_id`,
//! `signature`.

use serde_json::json;

use super::NostrError;
use crate::owner::Kind;
use crate::record::{Logged, Members, OwnerSigned, Parts, RecordError};

/// Type of a binding record.
pub const BINDING_TYPE: &str = "conduct.npub-binding/v1";

/// What `signed` says in every binding record.
pub const SIGNED: &str = "The text is conduct_core::nostr::bind_message(origin, vow_id, npub, \
date) (library/NOSTR.md). wallet_signature: EIP-191 personal_sign of the text by wallet. \
nostr_signature: BIP-340 by pubkey over the 32 bytes sha256(UTF-8 text).";

/// Most bindings one vow makes per UTC day (library/NOSTR.md).
pub use crate::owner::MAX_BINDINGS_PER_DAY;

/// Why a binding's own check ([`Binding::check_nostr`]) refused it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// `npub` is not an npub.
    #[error("npub: {0}")]
    Npub(NostrError),
    /// `npub` is not written in its canonical lowercase form.
    #[error("npub is not in its canonical lowercase form")]
    NotCanonical,
    /// `pubkey` is not the key `npub` encodes.
    #[error("pubkey is not the key the npub encodes")]
    WrongPubkey,
    /// `nostr_signature` is not the npub key's BIP-340 signature of the text.
    #[error("nostr_signature: {0}")]
    NostrSignature(NostrError),
}

impl From<BindingError> for RecordError {
    fn from(e: BindingError) -> RecordError {
        RecordError::OwnCheck(e.to_string())
    }
}

/// A binding of an npub to a signed vow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
    /// The service's public URL the text names.
    pub origin: String,
    /// The signed (not sandbox) vow.
    pub vow_id: String,
    /// The vow's wallet, EIP-55.
    pub wallet: String,
    /// The npub (lowercase, canonical).
    pub npub: String,
    /// Its 32-byte x-only key, lowercase hex.
    pub pubkey: String,
    /// EIP-191 signature of the text by `wallet` (`0x`, lowercase hex).
    pub wallet_signature: String,
    /// BIP-340 signature by `pubkey` over `sha256(text)` (lowercase hex).
    pub nostr_signature: String,
    /// Instant recorded, unix seconds (its UTC date is the text's).
    pub at: u64,
}

impl Binding {
    /// Check what needs no wallet library: the npub is canonical and encodes `pubkey`, and
    /// `nostr_signature` is the npub key's BIP-340 signature over `sha256` of the text. (The
    /// EIP-191 `wallet_signature` needs the `wallet` feature: [`OwnerSigned::check_wallet`].)
    pub fn check_nostr(&self) -> Result<(), BindingError> {
        let pk = super::npub_decode(&self.npub).map_err(BindingError::Npub)?;
        if super::npub_encode(&pk) != self.npub {
            return Err(BindingError::NotCanonical);
        }
        if hex::encode(pk) != self.pubkey {
            return Err(BindingError::WrongPubkey);
        }
        super::verify_text(&pk, &self.message_at(&self.origin), &self.nostr_signature)
            .map_err(BindingError::NostrSignature)
    }
}

impl Logged for Binding {
    const TYPE: &'static str = BINDING_TYPE;

    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError> {
        m.signed(&mut self.wallet_signature, &mut self.at)?;
        m.text("origin", &mut self.origin)?;
        m.sworn(&mut self.vow_id, &mut self.wallet)?;
        m.text("npub", &mut self.npub)?;
        m.text("pubkey", &mut self.pubkey)?;
        m.text("nostr_signature", &mut self.nostr_signature)?;
        m.computed("signed", json!(SIGNED));
        Ok(())
    }
}

impl OwnerSigned for Binding {
    const KIND: Kind = Kind::BindNpub;

    /// The wallet's signature and the npub key's: each is used once.
    fn signatures(&self) -> Vec<&str> {
        vec![&self.wallet_signature, &self.nostr_signature]
    }

    fn message_at(&self, origin: &str) -> String {
        super::bind_message(origin, &self.vow_id, &self.npub, &self.date())
    }

    /// The npub encodes `pubkey`, which signed the text (BIP-340, no wallet library).
    fn check_record(&self) -> Result<(), RecordError> {
        Ok(self.check_nostr()?)
    }

    fn parts(&self) -> Parts<'_> {
        Parts::signed(&self.wallet_signature, self.at)
            .sworn(&self.vow_id, &self.wallet)
            .at_origin(&self.origin)
    }
}
