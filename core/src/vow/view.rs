//! What the interpretation and the note check both read of a report-in entry
//! ([`EntryView`]) and the coupling threshold they share (library/VOWS.md, "Readings"). Its
//! own module so that `interpret` (which runs the note check) and `notes` (which reads entry
//! views) depend on it, not on each other.

use serde::{Deserialize, Serialize};

/// Most distinct declared purposes kept per entry (in order of first appearance).
pub const MAX_DECLARED_Y_PER_ENTRY: usize = 10;
/// Most characters kept of one declared purpose.
pub const MAX_DECLARED_Y_CHARS: usize = 200;
/// Adjusted-bits threshold of the coupling rules.
pub const COUPLING_BITS: f64 = 0.05;

/// One report-in entry as an interpreter sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EntryView {
    /// Chain position (1 for the first report-in).
    pub seq: u64,
    /// Report-in instant, RFC 3339.
    pub at: String,
    /// Paid (true) or free tier (false).
    pub attested: bool,
    /// Adjusted bits of I(C;D): do actions depend on the context flag.
    pub i_c_d: Option<f64>,
    /// Adjusted bits of I(C;M): does reasoning depend on the context flag.
    pub i_c_m: Option<f64>,
    /// Adjusted bits of I(C;M | D clean), the switch signature.
    pub i_c_m_given_d_clean: Option<f64>,
    /// Adjusted bits of I(C;D,M).
    pub i_c_dm: Option<f64>,
    /// Permutation p-value of I(C;D).
    pub p_i_c_d: Option<f64>,
    /// Permutation p-value of I(C;M).
    pub p_i_c_m: Option<f64>,
    /// Word match of the declared purposes against the vow text, in [0, 1].
    pub y_consistency: Option<f64>,
    /// Distinct declared purposes (at most [`MAX_DECLARED_Y_PER_ENTRY`], each clipped to
    /// [`MAX_DECLARED_Y_CHARS`] characters); empty when the vow is sealed.
    pub declared_y: Vec<String>,
    /// The public note, if any.
    pub note: Option<String>,
    /// The meter that measured its numbers (`meter/1` for a record that names none).
    #[serde(default = "first_meter")]
    pub meter: String,
}

/// The meter of an entry that names none: every entry before `meter/2` was `meter/1`'s.
pub fn first_meter() -> String {
    crate::meter::Meter::V1.as_str().to_owned()
}
