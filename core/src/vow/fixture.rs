//! A deterministic example chain, for the tests and benchmarks of code that reads chains (in
//! this crate and in others): real signed records, exactly as the ledger would append them.

use super::record::{declared_ys, entry_record, record_hash, vow_record, EntryFields, VowFields};
use crate::meter::Profile;
use crate::signing::ServiceKey;

/// Origin of the example chain's log.
pub const EXAMPLE_ORIGIN: &str = "example.org/log";
/// Instant the example vow is taken (unix seconds); its cadence is one hour.
pub const EXAMPLE_START: u64 = 1_000_000;

/// The example vow ("serve billing questions", agent `a`, hourly, at log index 0) and `n`
/// entries at log indexes 1..=n, entry `seq` at `EXAMPLE_START + seq` hours. Entry `seq` has
/// `y_consistency` seq/(n+1), a note when seq is even (`note é <seq> "quoted"`), is attested
/// when seq is a multiple of 3, and declares "billing questions" and "other" (none when
/// `sealed`). Returns the vow id and the leaves in chain order.
pub fn example_chain(key: &ServiceKey, n: u64, sealed: bool) -> (String, Vec<Vec<u8>>) {
    let profile = crate::meter::measure(crate::meter::Meter::V1, &[], &[0; 32]);
    let notes: Vec<Option<String>> = (1..=n)
        .map(|seq| (seq % 2 == 0).then(|| format!("note \u{e9} {seq} \"quoted\"")))
        .collect();
    let entries: Vec<(&Profile, Option<&str>)> =
        notes.iter().map(|n| (&profile, n.as_deref())).collect();
    example_chain_of(key, &entries, sealed)
}

/// The example vow and one entry per `(profile, note)` of `entries` (each entry names the
/// meter its profile was measured with), otherwise as [`example_chain`] with
/// `n = entries.len()`.
pub fn example_chain_of(
    key: &ServiceKey,
    entries: &[(&Profile, Option<&str>)],
    sealed: bool,
) -> (String, Vec<Vec<u8>>) {
    let n = entries.len() as u64;
    let fields = VowFields {
        origin: EXAMPLE_ORIGIN,
        agent: "a",
        text: "serve billing questions",
        cadence_hours: 1.0,
        wallet: None,
        wallet_signature: None,
        sealed,
        sandbox_reason: None,
        at: EXAMPLE_START,
    };
    let Ok((id, vow)) = vow_record(key, &fields, 0) else {
        return (String::new(), Vec::new());
    };
    let proof = super::record::Proof::SandboxOpen;
    let mut leaves = vec![vow];
    for (seq, (profile, note)) in (1..).zip(entries) {
        let prev = leaves.last().map(|l| record_hash(l)).unwrap_or_default();
        let f = EntryFields {
            vow_id: &id,
            trace_sha256: [seq as u8; 32],
            context_key: "monitored",
            n_turns: 4,
            // A profile measured with `meter/2` carries its within-Y tests.
            meter: if profile.i_c_d.stratified.is_some() {
                crate::meter::Meter::V2
            } else {
                crate::meter::Meter::V1
            },
            profile,
            declared_y: (!sealed).then(|| declared_ys(["billing questions", "other"])),
            y_consistency: Some(seq as f64 / (n + 1) as f64),
            note: *note,
            attested: seq % 3 == 0,
            trace_donated: false,
            at: EXAMPLE_START + seq * 3600,
            proof: &proof,
        };
        match entry_record(key, &f, seq, &prev, seq) {
            Ok(leaf) => leaves.push(leaf),
            Err(_) => break,
        }
    }
    (id, leaves)
}

/// Sign `text` with EIP-191 `personal_sign` by the key whose secret is `secret` (for tests):
/// the signature (`0x`, `r ‖ s ‖ v`, `v` 27 or 28, lowercase hex) and the signer's EIP-55
/// address.
pub fn personal_sign(secret: [u8; 32], text: &str) -> (String, String) {
    use k256::ecdsa::SigningKey;
    let sk = SigningKey::from_slice(&secret).expect("a secp256k1 secret");
    let hash = alloy_primitives::eip191_hash_message(text.as_bytes());
    let (sig, rec) = sk
        .sign_prehash_recoverable(hash.as_slice())
        .expect("a signature");
    let mut raw = sig.to_bytes().to_vec();
    raw.push(27 + rec.to_byte());
    let addr = alloy_primitives::Address::from_private_key(&sk);
    (
        format!("0x{}", hex::encode(raw)),
        super::record::checksum_address(&addr.into_array()),
    )
}
