//! The service's clock: unix seconds now, shifted by `CONDUCT_CLOCK_OFFSET_SECONDS` when that
//! variable is set (read once). Everything that dates a record or decides a deadline (vow
//! windows, the quest board's 14-day lapse, renders) reads this clock, so a test can start the
//! service days ahead and watch a deadline pass without waiting for it. The log's checkpoints
//! and the site manifest keep the wall clock (their readers check them against their own).
//! A shifted clock is logged at start and shown in `/health` (ARCHITECTURE.md, "The two
//! clocks").

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable holding the offset in seconds (may be negative).
pub const OFFSET_VAR: &str = "CONDUCT_CLOCK_OFFSET_SECONDS";

/// The offset in seconds this process runs at (0 unless [`OFFSET_VAR`] is set to an integer).
pub fn offset() -> i64 {
    static OFFSET: OnceLock<i64> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var(OFFSET_VAR)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// The wall clock in unix seconds (0 before 1970).
pub fn wall_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The service's now: the wall clock plus [`offset`].
pub fn service_now() -> u64 {
    wall_now().saturating_add_signed(offset())
}
