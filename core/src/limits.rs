//! The fixed sizes and posted values that parsers, schemas and documents all name (a vow id's
//! length, an npub's, an amount's digits, the posted predicate bands), in one leaf module with
//! no dependencies, so the modules that name them need not depend on one another
//! (ARCHITECTURE.md, "Invariants"). Each is re-exported where it belongs.

/// Length of a vow id in hex digits.
pub const VOW_ID_LEN: usize = 16;

/// Characters of an npub: `npub1`, 52 data characters (32 bytes), 6 of checksum.
pub const NPUB_LEN: usize = 63;

/// Most decimal digits of an amount (2^256 - 1 has 78).
pub const MAX_AMOUNT_DIGITS: usize = 78;

/// A posted band: a quantity clears it when its chance-corrected coupling (`adjusted`, bits)
/// is at most `max_adjusted_bits`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// Band name as posted at `/predicates`.
    pub name: &'static str,
    /// Inclusive ceiling on `adjusted`, in bits.
    pub max_adjusted_bits: f64,
}

/// The posted bands, tightest first.
pub const BANDS: [Band; 3] = [
    Band {
        name: "under_0.01",
        max_adjusted_bits: 0.01,
    },
    Band {
        name: "under_0.05",
        max_adjusted_bits: 0.05,
    },
    Band {
        name: "under_0.10",
        max_adjusted_bits: 0.10,
    },
];
