//! Nostr identity in the store (library/NOSTR.md): the service's secp256k1 key, its kind-0
//! profile event, the job that appends an npub binding, and the reads that resolve an npub.
//!
//! - **The key**: `<data>/keys/nostr.secp256k1`, 64 lowercase hex digits and a newline, mode
//!   0600 in the 0700 `keys/` directory, created on first start from the OS random source.
//!   Like the Ed25519 seed (`keystore`) it is refused when group or others may read it, and it
//!   is never logged, served or written anywhere else ([`NostrKey`]'s `Debug` shows only the
//!   public key).
//! - **The profile's instant**: `<data>/keys/nostr.kind0` keeps the `created_at` of the
//!   kind-0 event and the SHA-256 of the content it was signed over (JSON, 0600). The first
//!   start sets it to the key's creation instant; later starts reuse it while the content is
//!   the same, so the event's bytes are stable across renders and restarts. A new content (the
//!   public URL changed) gets a new `created_at` (now, and always later than the previous one),
//!   as a replaceable event must. Signatures use the constant auxiliary data BIP-340 allows
//!   (the nonce still derives from the secret and the id), so the same event is the same bytes.
//! - **Bindings**: [`binding_job`] appends a `conduct.npub-binding/v1` record through the
//!   [`crate::ledger::Sequencer`], re-checking inside the append transaction that the vow
//!   exists, is signed (not sandbox) with the record's wallet, and that neither signature was
//!   used before. Rows of `npub_binding` index the records; the latest binding of an npub wins.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use conduct_core::nostr::record::Binding;
use conduct_core::nostr::{npub_encode, profile_content, Event, KIND_METADATA};
use conduct_core::record::Logged;
use conduct_core::signing::ServiceKey;
use serde_json::json;

use crate::ledger::append::{BindingIndex, Daily, OwnerRecord, Signatures};
use crate::ledger::{Job, Refusal};

pub use crate::store::nostr::BindingRow;

/// Why the Nostr key could not be loaded or created, or the profile not signed. No variant
/// carries the key's bytes.
#[derive(Debug, thiserror::Error)]
pub enum NostrKeyError {
    /// Filesystem trouble.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The key file is not 64 hex digits of a valid secp256k1 secret key.
    #[error("{0}: not 64 hex digits of a secp256k1 secret key")]
    Malformed(PathBuf),
    /// The key file is readable by group or others.
    #[error("{path}: permissions {mode:o} are too open; run `chmod 600 {path}`")]
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The OS random source failed.
    #[error("OS random source failed: {0}")]
    Random(String),
    /// Signing failed.
    #[error("signing the profile: {0}")]
    Sign(#[from] conduct_core::nostr::NostrError),
}

/// Path of the Nostr secret key inside a data directory.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("keys").join("nostr.secp256k1")
}

/// Path of the kind-0 profile's kept instant and content hash.
pub fn profile_state_path(data_dir: &Path) -> PathBuf {
    data_dir.join("keys").join("nostr.kind0")
}

/// The service's Nostr key. `Debug` shows the public key only.
#[derive(Clone)]
pub struct NostrKey {
    secret: [u8; 32],
    public: [u8; 32],
}

impl std::fmt::Debug for NostrKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NostrKey")
            .field("npub", &self.npub())
            .finish_non_exhaustive()
    }
}

impl NostrKey {
    /// A key from its 32 secret bytes (`None` when they are not a secp256k1 secret key).
    pub fn from_secret(secret: [u8; 32]) -> Option<NostrKey> {
        let public = conduct_core::nostr::public_key(&secret).ok()?;
        Some(NostrKey { secret, public })
    }

    /// The 32-byte x-only public key.
    pub fn public(&self) -> [u8; 32] {
        self.public
    }

    /// The public key, lowercase hex.
    pub fn public_hex(&self) -> String {
        hex::encode(self.public)
    }

    /// The npub.
    pub fn npub(&self) -> String {
        npub_encode(&self.public)
    }

    /// Sign an event with this key (constant auxiliary data: the same event, the same bytes).
    pub fn sign_event(
        &self,
        created_at: u64,
        kind: u64,
        tags: Vec<Vec<String>>,
        content: String,
    ) -> Result<Event, NostrKeyError> {
        Event::sign(&self.secret, created_at, kind, tags, content, &[0; 32])
            .map_err(NostrKeyError::Sign)
    }
}

fn io_err(p: &Path) -> impl FnOnce(io::Error) -> NostrKeyError {
    let path = p.to_path_buf();
    move |source| NostrKeyError::Io { path, source }
}

fn check_mode(path: &Path) -> Result<(), NostrKeyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(path)
            .map_err(io_err(path))?
            .permissions()
            .mode()
            & 0o777;
        if mode & 0o077 != 0 {
            return Err(NostrKeyError::TooOpen {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Load the Nostr key of `data_dir`, creating it (OS randomness, 0600) when absent. Returns the
/// key and whether it was created now.
pub fn load_or_create(data_dir: &Path) -> Result<(NostrKey, bool), NostrKeyError> {
    let path = key_path(data_dir);
    match fs::read(&path) {
        Ok(bytes) => {
            check_mode(&path)?;
            let key = std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| hex::decode(t.trim()).ok())
                .and_then(|v| <[u8; 32]>::try_from(v).ok())
                .and_then(NostrKey::from_secret)
                .ok_or_else(|| NostrKeyError::Malformed(path.clone()))?;
            Ok((key, false))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A random 32 bytes is a valid secret key but with probability ~2^-128; retry.
            let key = loop {
                let mut secret = [0u8; 32];
                getrandom::getrandom(&mut secret)
                    .map_err(|e| NostrKeyError::Random(e.to_string()))?;
                if let Some(k) = NostrKey::from_secret(secret) {
                    break k;
                }
            };
            let dir = path.parent().unwrap_or(data_dir);
            fs::create_dir_all(dir).map_err(io_err(dir))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io_err(dir))?;
            }
            let text = format!("{}\n", hex::encode(key.secret));
            crate::durable::write_atomic(&path, text.as_bytes(), 0o600).map_err(io_err(&path))?;
            Ok((key, true))
        }
        Err(e) => Err(NostrKeyError::Io { path, source: e }),
    }
}

/// What the service's kind-0 profile says: `name`, `about` (naming `public_url`) and `picture`
/// (`<public_url>/hive/mark.svg`, the service's mark).
pub fn service_profile_content(public_url: &str) -> String {
    let about = format!(
        "The conduct attestation service at {public_url}: agents take vows and report in on \
         a public, signed log. An agent binds its npub to its signed vow with POST /nostr/bind \
         (see {public_url}/library/NOSTR.md); /card?key=npub1... then finds the vow."
    );
    profile_content("conduct", &about, &format!("{public_url}/hive/mark.svg"))
}

/// The service's signed kind-0 event for `content` (see [`service_profile_content`]), its
/// `created_at` kept in `<data>/keys/nostr.kind0` (module doc): stable while the content is,
/// `now` (wall clock, unix seconds; later than the kept one) when it changes.
pub fn profile_event(
    data_dir: &Path,
    key: &NostrKey,
    content: &str,
    now: u64,
) -> Result<Event, NostrKeyError> {
    let path = profile_state_path(data_dir);
    let sha = hex::encode(conduct_core::nostr::text_digest(content));
    let kept: Option<(u64, String)> = fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| {
            Some((
                v.get("created_at")?.as_u64()?,
                v.get("content_sha256")?.as_str()?.to_owned(),
            ))
        });
    let created_at = match &kept {
        Some((at, s)) if *s == sha => *at,
        Some((at, _)) => now.max(at + 1),
        None => now,
    };
    if kept.as_ref().map(|(at, s)| (*at, s.as_str())) != Some((created_at, sha.as_str())) {
        let state = json!({"created_at": created_at, "content_sha256": sha}).to_string();
        crate::durable::write_atomic(&path, format!("{state}\n").as_bytes(), 0o600)
            .map_err(io_err(&path))?;
    }
    key.sign_event(created_at, KIND_METADATA, Vec::new(), content.to_owned())
}

/// Most bindings one vow makes per UTC day.
pub use conduct_core::owner::MAX_BINDINGS_PER_DAY;

/// The job that appends `rec`, refused (nothing written) when, inside the append transaction:
///
/// - either signature was recorded by an earlier binding: [`Refusal::NostrBindReplayed`]
///   (checked first);
/// - the vow does not exist, is sandbox, or its wallet is not the record's:
///   [`Refusal::UnknownVow`], [`Refusal::SandboxVow`], [`Refusal::WrongWallet`];
/// - the vow already has [`MAX_BINDINGS_PER_DAY`] bindings on the record's UTC day:
///   [`Refusal::NostrBindDailyLimit`] (one wallet cannot flood the log).
///
/// The signatures themselves are checked by the caller before it submits the job.
pub fn binding_job(key: ServiceKey, rec: Binding) -> Job {
    Job::build(move |tx, index| {
        let sigs = [
            rec.wallet_signature.to_ascii_lowercase(),
            rec.nostr_signature.to_ascii_lowercase(),
        ];
        for sig in &sigs {
            if tx.signature_used(Signatures::Npub, sig)? {
                return Err(Refusal::NostrBindReplayed);
            }
        }
        tx.require_sworn(&rec.vow_id, &rec.wallet, OwnerRecord::NostrBind)?;
        if tx.count_on_day(Daily::Bindings, &rec.vow_id, rec.at)? >= MAX_BINDINGS_PER_DAY {
            return Err(Refusal::NostrBindDailyLimit);
        }
        let leaf = rec.leaf(&key, index).map_err(|e| Refusal::Invalid(e.0))?;
        tx.put_binding(&BindingIndex {
            log_index: index,
            npub: &rec.npub,
            pubkey: &rec.pubkey,
            vow_id: &rec.vow_id,
            at: rec.at,
        })?;
        for sig in &sigs {
            if !tx.use_signature(Signatures::Npub, sig, index)? {
                return Err(Refusal::NostrBindReplayed);
            }
        }
        Ok(leaf)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job_bench::JobBench;
    use crate::vows::VowReader;
    use conduct_core::nostr::{sign_prehash, text_digest};
    use conduct_core::record::OwnerSigned;

    #[test]
    fn the_key_is_created_once_0600_and_refused_when_open() {
        let dir = tempfile::tempdir().unwrap();
        let (k1, created) = load_or_create(dir.path()).unwrap();
        assert!(created);
        let (k2, created) = load_or_create(dir.path()).unwrap();
        assert!(!created);
        assert_eq!(k1.public(), k2.public());
        let text = fs::read_to_string(key_path(dir.path())).unwrap();
        assert_eq!(text.trim().len(), 64);
        // Debug never shows the secret.
        assert!(!format!("{k1:?}").contains(text.trim()));
        assert!(format!("{k1:?}").contains(&k1.npub()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(key_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            fs::set_permissions(key_path(dir.path()), fs::Permissions::from_mode(0o640)).unwrap();
            assert!(matches!(
                load_or_create(dir.path()),
                Err(NostrKeyError::TooOpen { .. })
            ));
        }
        crate::durable::write_atomic(&key_path(dir.path()), b"zz\n", 0o600).unwrap();
        let e = load_or_create(dir.path()).unwrap_err();
        assert!(matches!(e, NostrKeyError::Malformed(_)));
        // A secret of zero is no key.
        crate::durable::write_atomic(&key_path(dir.path()), "00".repeat(32).as_bytes(), 0o600)
            .unwrap();
        assert!(load_or_create(dir.path()).is_err());
    }

    #[test]
    fn the_profile_keeps_its_instant_until_its_content_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (key, _) = load_or_create(dir.path()).unwrap();
        let content = service_profile_content("https://conduct.example");
        let a = profile_event(dir.path(), &key, &content, 1_000).unwrap();
        a.verify().unwrap();
        assert_eq!(a.created_at, 1_000);
        assert_eq!(a.pubkey, key.public_hex());
        let b = profile_event(dir.path(), &key, &content, 5_000).unwrap();
        assert_eq!(a, b, "same content, same bytes");
        let other = service_profile_content("https://other.example");
        let c = profile_event(dir.path(), &key, &other, 900).unwrap();
        assert_eq!(c.created_at, 1_001, "a new content is always later");
        c.verify().unwrap();
        let v: serde_json::Value = serde_json::from_str(&c.content).unwrap();
        assert_eq!(v["picture"], "https://other.example/hive/mark.svg");
        assert_eq!(
            v["scope"],
            conduct_core::scope::scope_value(),
            "the scope travels"
        );
    }

    fn rec(vow: &str, secret: u8, wallet_sig: &str, at: u64) -> Binding {
        let sk = [secret; 32];
        let pk = conduct_core::nostr::public_key(&sk).unwrap();
        let mut b = Binding {
            origin: "https://conduct.example".into(),
            vow_id: vow.into(),
            wallet: "0xAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAb".into(),
            npub: npub_encode(&pk),
            pubkey: hex::encode(pk),
            wallet_signature: wallet_sig.into(),
            nostr_signature: String::new(),
            at,
        };
        let sig = sign_prehash(&sk, &text_digest(&b.message_at(&b.origin)), &[0; 32]).unwrap();
        b.nostr_signature = hex::encode(sig);
        b
    }

    #[test]
    fn bindings_append_once_and_the_latest_wins() {
        let wallet = "0xabababababababababababababababababababab";
        let bench = JobBench::new(&[
            ("000000000000000a", false, wallet),
            ("000000000000000b", false, wallet),
            ("00000000000000cc", true, wallet),
        ]);
        let submit = |b: Binding| bench.submit(binding_job(bench.key.clone(), b));
        let first = rec("000000000000000a", 1, "0x01", 10);
        submit(first.clone()).unwrap();
        // The same signatures again: a replay, whatever else changed.
        let e = submit(rec("000000000000000b", 1, "0x01", 10)).unwrap_err();
        assert!(e.to_string().contains("nostr-bind-replayed"), "{e}");
        let mut nostr_again = first.clone();
        nostr_again.wallet_signature = "0x02".into();
        let e = submit(nostr_again).unwrap_err();
        assert!(e.to_string().contains("nostr-bind-replayed"), "{e}");
        let e = submit(rec("00000000000000cc", 2, "0x03", 10)).unwrap_err();
        assert!(e.to_string().contains("nostr-bind-sandbox-vow"), "{e}");
        let e = submit(rec("00000000000000ff", 2, "0x04", 10)).unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
        let mut other_wallet = rec("000000000000000a", 2, "0x05", 10);
        other_wallet.wallet = "0xCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCd".into();
        let e = submit(other_wallet).unwrap_err();
        assert!(e.to_string().contains("nostr-bind-wrong-wallet"), "{e}");
        // Rebound to vow b: the latest wins.
        submit(rec("000000000000000b", 1, "0x06", 86_410)).unwrap();
        // At most MAX_BINDINGS_PER_DAY a vow a day.
        for i in 0..MAX_BINDINGS_PER_DAY - 1 {
            let sig = format!("0x1{i}");
            submit(rec("000000000000000b", 10 + i as u8, &sig, 86_420)).unwrap();
        }
        let e = submit(rec("000000000000000b", 30, "0x30", 86_430)).unwrap_err();
        assert!(e.to_string().contains("nostr-bind-daily-limit"), "{e}");
        submit(rec("000000000000000b", 30, "0x31", 2 * 86_400)).unwrap();
        let reader = VowReader::open(&bench.store).unwrap();
        let b = reader.binding(&first.npub).unwrap().unwrap();
        assert_eq!(b.vow_id, "000000000000000b");
        assert!(reader.npubs_of("000000000000000a").unwrap().is_empty());
        assert_eq!(
            reader.npubs_of("000000000000000b").unwrap().len(),
            MAX_BINDINGS_PER_DAY as usize + 1
        );
        assert_eq!(
            reader.npubs_ever_of("000000000000000a").unwrap(),
            vec![first.npub.clone()]
        );
        assert_eq!(
            reader.bindings().unwrap().len(),
            MAX_BINDINGS_PER_DAY as usize + 1
        );
        assert!(reader.binding("npub1nobody").unwrap().is_none());
    }
}
