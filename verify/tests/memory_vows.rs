//! What verify-log keeps of each vow is compact (ARCHITECTURE.md, **verify**): the head of its
//! links (seq, hash, instant) and, once for every record checker, whether it is sworn and with
//! which wallet. Counted by this binary's allocator, the audit's peak heap grows by at most
//! 400 bytes a signed vow (it was about 740: a hex string a head, and five copies of the sworn
//! vows, one a checker).
//!
//! One test in this binary, so nothing else allocates while it measures.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use conduct_core::vow::record::{vow_record, VowFields};
use conduct_verify::verify_log;

/// The system allocator, counting the bytes held now and the most held since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        HELD.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The audit's peak heap over a log of `n` signed vows (each with a wallet).
fn peak_for(n: u64) -> usize {
    let key = common::key();
    let leaves: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let agent = format!("agent-{i}");
            let fields = VowFields {
                origin: common::ORIGIN,
                agent: &agent,
                text: "serve billing questions",
                cadence_hours: 1.0,
                wallet: Some([7; 20]),
                wallet_signature: Some("0x00"),
                sealed: false,
                sandbox_reason: None,
                at: 1_000_000,
            };
            vow_record(&key, &fields, i).expect("a vow").1
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    common::write_log(dir.path(), &key, &leaves, leaves.len());
    drop(leaves);
    let base = HELD.load(Relaxed);
    PEAK.store(base, Relaxed);
    let audit = verify_log(dir.path(), &key.vkey()).expect("the log verifies");
    assert_eq!(audit.vows, n);
    PEAK.load(Relaxed) - base
}

#[test]
fn the_audit_keeps_a_compact_state_a_vow() {
    let (small, large) = (peak_for(2_000), peak_for(10_000));
    let per_vow = large.saturating_sub(small) / 8_000;
    eprintln!("verify-log: 2,000 vows {small} bytes, 10,000 vows {large}: {per_vow} a vow");
    assert!(per_vow <= 400, "{per_vow} bytes a vow");
}
