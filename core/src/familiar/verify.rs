//! Offline checks of the familiar records in a log (for `conduct-verify`'s verify-log): every
//! `conduct.familiar/v1` leaf is the RFC 8785 form of an object the service signed, in exactly
//! the record format (so `wallet` is `null`, `faucet_cap` is `"0"`, `status` is `summoned`,
//! and `familiar_id` and `order_sha256` recompute), at the position its `log_index` names; a
//! vow owner names a signed (not sandbox) vow recorded earlier, with that vow's wallet; and
//! each owner signature (so each familiar id) is used once. The rules are the record's
//! ([`crate::record::OwnerSigned`]); the checker is the one of every owner-signed kind.
//!
//! What it cannot check without the `wallet` feature: the EIP-191 `owner_signature`
//! ([`crate::record::OwnerSigned::check_wallet`] does, with it). The service checks it before
//! it appends.

use super::record::Familiar;
use crate::leaf::OwnerChecker;

/// Streams leaves and checks the familiar records in them: [`OwnerChecker`] of [`Familiar`].
pub type FamiliarChecker = OwnerChecker<Familiar>;
