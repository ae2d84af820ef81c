//! What a settler is handed to report a settlement transaction it has broadcast, before it
//! waits for the receipt (library/PAYMENTS.md, "Settlement pending"). Shared by the rails'
//! `Settler` and the in-process Permit2 settler.

/// What a settler calls with the hash of a settlement transaction it has broadcast, before it
/// waits for the receipt: the gate keeps the hash with the payment's claim, so a settlement
/// whose answer never comes can still be resumed.
pub type OnBroadcast<'a> = &'a (dyn Fn(String) -> Recording + Send + Sync);

/// The recording of a broadcast transaction's hash, awaited before its receipt is.
pub type Recording = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
