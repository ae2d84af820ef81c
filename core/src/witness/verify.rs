//! Offline checks of the pledge records in a log (for `conduct-verify`'s verify-log, beside
//! `nostr::verify::BindingChecker`): every `conduct.witness-pledge/v1` leaf is the RFC 8785
//! form of an object the service signed, in exactly the record format with normalized limits,
//! at the position its `log_index` names; it names a signed (not sandbox) vow recorded
//! earlier, with that vow's wallet; each wallet signature is used by one pledge only; and a
//! vow pledges at most [`super::record::MAX_PLEDGES_PER_DAY`] times a UTC day. The rules are
//! the record's ([`crate::record::OwnerSigned`]); the checker is the one of every owner-signed
//! kind.
//!
//! What it cannot check without the `wallet` feature: the EIP-191 `wallet_signature`
//! ([`crate::record::OwnerSigned::check_wallet`] does, with it). The service checks it before
//! it appends.

use super::record::Pledge;
use crate::leaf::OwnerChecker;

/// Streams leaves and checks the pledge records in them: [`OwnerChecker`] of [`Pledge`].
pub type PledgeChecker = OwnerChecker<Pledge>;
