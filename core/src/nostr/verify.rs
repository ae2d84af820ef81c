//! Offline checks of the binding records in a log (for `conduct-verify`'s verify-log, beside
//! `munus::verify::BoardChecker`): every `conduct.npub-binding/v1` leaf is the RFC 8785 form of
//! an object the service signed, in exactly the record format, at the position its `log_index`
//! names; it names a signed (not sandbox) vow recorded earlier, with that vow's wallet; its npub
//! encodes its `pubkey`; its `nostr_signature` is the npub key's BIP-340 signature over
//! `sha256` of the exact text (rebuilt from the record's origin, vow, npub and date; checked
//! with the plain [`super::bip340`] arithmetic, no wallet library needed); each wallet and
//! nostr signature is used by one binding only; and a vow makes at most
//! [`super::record::MAX_BINDINGS_PER_DAY`] bindings a UTC day. The rules are the record's
//! ([`crate::record::OwnerSigned`]); the checker is the one of every owner-signed kind.
//!
//! What it cannot check without the `wallet` feature: the EIP-191 `wallet_signature`
//! ([`crate::record::OwnerSigned::check_wallet`] does, with it). The service checks both
//! before it appends.

use super::record::Binding;
use crate::leaf::OwnerChecker;

/// Streams leaves and checks the binding records in them: [`OwnerChecker`] of [`Binding`].
pub type BindingChecker = OwnerChecker<Binding>;
