//! What verify-log's checkers of the service's own records share (the quest board, npub
//! bindings, witness pledges, familiars): the vows seen so far in the log ([`SwornVows`]), the
//! checks of one signed leaf ([`signed_record`]: its bytes are the RFC 8785 form of the record,
//! the service signed it, it parses in exactly its format, and its `log_index` names its
//! position), the rules of an owner-signed record ([`owner_rules`]: its own checks, a sworn vow
//! with its wallet, each signature used once, the kind's daily limit), and the one checker of
//! every [`OwnerSigned`] kind ([`OwnerChecker`]). verify-log runs them as [`LeafCheck`]s.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::rc::Rc;

use serde_json::Value;

use crate::canonical::{jcs, CanonicalError};
use crate::record::{OwnerSigned, Parts, RecordError};
use crate::signing::{verify_object, PinnedKey, VerifyError};
use crate::time::utc_day;
use crate::vow::links::LinkError;
use crate::vow::record::VOW_TYPE;

/// Why verify-log refused one of the service's own records ([`signed_record`],
/// [`owner_rules`]); a checker prefixes the leaf (`leaf <n> (<type>): `). A record names its
/// party as `who` ("the claim", "the binding", ...: its kind's `owner::RecordRule`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeafError {
    /// The leaf's JSON could not be canonicalized.
    #[error("{}", .0 .0)]
    Canonical(CanonicalError),
    /// The leaf's bytes are not the RFC 8785 form of the record they hold.
    #[error("the leaf is not the RFC 8785 form of its record")]
    NotCanonical,
    /// The service's signature of the record does not verify under the pinned key.
    #[error("signature: {0}")]
    Signature(VerifyError),
    /// The record is not exactly in its format, or its kind's own checks refused it.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The leaf is not a record of the kind named (`"a board record"`, a `type`).
    #[error("not {0}")]
    NotOfKind(&'static str),
    /// The record's `log_index` is not the leaf's position.
    #[error("log_index does not name the leaf's position")]
    WrongPosition,
    /// The vow the record names was not recorded before it.
    #[error("{who} names no vow recorded before it")]
    NoVow {
        /// The record, as its rule names it.
        who: &'static str,
    },
    /// The vow the record names is a sandbox vow.
    #[error("{who} names a sandbox vow")]
    SandboxVow {
        /// The record, as its rule names it.
        who: &'static str,
    },
    /// The record's wallet is not its vow's.
    #[error("{who}'s wallet is not its vow's wallet")]
    NotVowWallet {
        /// The record, as its rule names it.
        who: &'static str,
    },
    /// A signature of the record was used by an earlier record: its rule's refusal.
    #[error("{0}")]
    Replayed(&'static str),
    /// The kind's daily limit is exceeded.
    #[error("more than {limit} {what} in one UTC day")]
    OverDailyLimit {
        /// Records allowed a UTC day.
        limit: u64,
        /// What they are counted as.
        what: &'static str,
    },
}

/// The vows recorded so far: for each id, the wallet of a signed vow, `None` for a sandbox
/// vow. verify-log keeps one for all its record checkers ([`SharedVows`]).
#[derive(Debug, Clone, Default)]
pub struct SwornVows(HashMap<Box<str>, Option<Box<str>>>);

/// One [`SwornVows`] several checkers note vows into and read (each notes every vow it is
/// shown, so the set is the same whichever saw a vow first): what a verifier keeps of each vow
/// is kept once, not once a checker.
pub type SharedVows = Rc<RefCell<SwornVows>>;

impl SwornVows {
    /// Note `v` when it is a vow record; true when it was one (the caller is done with it).
    pub fn note(&mut self, v: &Value) -> bool {
        if v.get("type").and_then(Value::as_str) != Some(VOW_TYPE) {
            return false;
        }
        if let Some(id) = v.get("vow_id").and_then(Value::as_str) {
            let signed = v.get("sandbox") == Some(&Value::Bool(false));
            let wallet = v.get("wallet").and_then(Value::as_str).filter(|_| signed);
            match self.0.get_mut(id) {
                Some(slot) => *slot = wallet.map(Into::into),
                None => {
                    self.0.insert(id.into(), wallet.map(Into::into));
                }
            }
        }
        true
    }

    /// `vow_id` names a signed (not sandbox) vow recorded earlier whose wallet is `wallet`;
    /// else why not, naming the record as `who` ("the claim", "the binding", ...).
    pub fn check(&self, vow_id: &str, wallet: &str, who: &'static str) -> Result<(), LeafError> {
        match self.0.get(vow_id) {
            None => Err(LeafError::NoVow { who }),
            Some(None) => Err(LeafError::SandboxVow { who }),
            Some(Some(w)) if **w != *wallet => Err(LeafError::NotVowWallet { who }),
            Some(Some(_)) => Ok(()),
        }
    }
}

/// Check the leaf at `index` (`bytes`, parsed as `v`) as a record the service signed with
/// `pinned`, read back by `parse` (which gives the record's `log_index`): the record, or why
/// not. `what` names the kind of record ("a board record").
pub fn signed_record<T>(
    index: u64,
    bytes: &[u8],
    v: &Value,
    pinned: &PinnedKey,
    what: &'static str,
    parse: impl FnOnce(&Value) -> Result<Option<(u64, T)>, RecordError>,
) -> Result<T, LeafError> {
    if jcs(v).map_err(LeafError::Canonical)? != bytes {
        return Err(LeafError::NotCanonical);
    }
    verify_object(v, pinned).map_err(LeafError::Signature)?;
    let (log_index, rec) = parse(v)?.ok_or(LeafError::NotOfKind(what))?;
    if log_index != index {
        return Err(LeafError::WrongPosition);
    }
    Ok(rec)
}

/// True when the RFC 8785 bytes of a leaf hold the member `"type":"<ty>"` (a cheap filter
/// before parsing: report-in entries, the bulk of the log, are skipped).
pub fn has_type(bytes: &[u8], ty: &str) -> bool {
    const KEY: &[u8] = b"\"type\":\"";
    let ty = ty.as_bytes();
    let n = KEY.len() + ty.len() + 1;
    bytes
        .windows(n)
        .any(|w| w.starts_with(KEY) && &w[KEY.len()..n - 1] == ty && w[n - 1] == b'"')
}

/// What the owner-signed records checked so far used: their signatures (lowercase), and how
/// many records of each kind and daily key fell on each UTC day.
#[derive(Debug, Clone, Default)]
pub struct Spent {
    signatures: HashSet<String>,
    days: HashMap<(&'static str, String, u64), u64>,
}

/// A vow that `rec` names with a wallet is a signed vow recorded earlier with that wallet
/// (`vows`); else why not, naming the record as its rule's `who`.
pub fn sworn<T: OwnerSigned>(rec: &T, vows: &SwornVows) -> Result<(), LeafError> {
    match rec.parts() {
        Parts {
            vow_id: Some(vow_id),
            wallet: Some(wallet),
            ..
        } => vows.check(vow_id, wallet, T::rule().who),
        _ => Ok(()),
    }
}

/// The rules of the owner-signed record `rec`, after its leaf checked ([`signed_record`]): the
/// kind's own checks ([`OwnerSigned::check_record`]); [`sworn`]; each of its signatures is
/// used by no earlier record noted in `spent`; and its kind's daily limit holds. Notes what it
/// used in `spent`.
pub fn owner_rules<T: OwnerSigned>(
    rec: &T,
    vows: &SwornVows,
    spent: &mut Spent,
) -> Result<(), LeafError> {
    rec.check_record()?;
    sworn(rec, vows)?;
    let rule = T::rule();
    for sig in rec.signatures() {
        if !spent.signatures.insert(sig.to_ascii_lowercase()) {
            return Err(LeafError::Replayed(rule.replayed));
        }
    }
    if let (Some((limit, what)), Some(key)) = (rule.per_day, rec.daily_key()) {
        let day = utc_day(rec.parts().at);
        let n = spent.days.entry((T::TYPE, key, day)).or_default();
        *n += 1;
        if *n > limit {
            return Err(LeafError::OverDailyLimit { limit, what });
        }
    }
    Ok(())
}

/// One of verify-log's checkers of the records beside the vow chains: it is shown the leaves in
/// log order (those it [`LeafCheck::wants`]), then finishes.
pub trait LeafCheck {
    /// Whether a leaf's bytes may be a record it checks, or a vow it needs (a cheap filter on
    /// the RFC 8785 form before parsing).
    fn wants(&self, bytes: &[u8]) -> bool;

    /// Check the leaf at `index` (`bytes`, parsed as `v`). Leaves of other types are ignored.
    fn record(&mut self, index: u64, bytes: &[u8], v: &Value) -> Result<(), LinkError>;

    /// After the last leaf: what only the whole log shows (the board's replay).
    fn finish(&self) -> Result<(), LinkError> {
        Ok(())
    }

    /// Records that verified.
    fn count(&self) -> u64;
}

/// verify-log's checker of one [`OwnerSigned`] kind: every leaf of its type is a record the
/// service signed in exactly its format at its position ([`signed_record`]) that keeps the
/// kind's rules ([`owner_rules`]). What it cannot check without the `wallet` feature: the
/// owner's EIP-191 signature ([`OwnerSigned::check_wallet`] does, with it); the service checks
/// it before it appends.
#[derive(Debug)]
pub struct OwnerChecker<T> {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: SharedVows,
    spent: Spent,
    /// Records that verified.
    pub count: u64,
    kind: PhantomData<fn() -> T>,
}

impl<T: OwnerSigned> OwnerChecker<T> {
    /// A checker for records signed by `pinned`.
    pub fn new(pinned: PinnedKey) -> Self {
        Self::sharing(pinned, SharedVows::default())
    }

    /// A checker for records signed by `pinned` that notes and reads the vows in `vows`
    /// (shared with verify-log's other record checkers).
    pub fn sharing(pinned: PinnedKey, vows: SharedVows) -> Self {
        OwnerChecker {
            pinned,
            vows,
            spent: Spent::default(),
            count: 0,
            kind: PhantomData,
        }
    }
}

impl<T: OwnerSigned> LeafCheck for OwnerChecker<T> {
    fn wants(&self, bytes: &[u8]) -> bool {
        has_type(bytes, VOW_TYPE) || has_type(bytes, T::TYPE)
    }

    fn record(&mut self, index: u64, bytes: &[u8], v: &Value) -> Result<(), LinkError> {
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let at = |m: LeafError| LinkError(format!("leaf {index} ({ty}): {m}"));
        if self.vows.borrow_mut().note(v) || ty != T::TYPE {
            return Ok(());
        }
        let rec = signed_record(index, bytes, v, &self.pinned, T::TYPE, T::parse).map_err(at)?;
        owner_rules(&rec, &self.vows.borrow(), &mut self.spent).map_err(at)?;
        self.count += 1;
        Ok(())
    }

    fn count(&self) -> u64 {
        self.count
    }
}

/// A vow record as the record checkers read it (`type`, `vow_id`, `sandbox`, `wallet`,
/// `log_index`), signed by `key`: a sandbox vow when `wallet` is `None` (tests).
#[cfg(test)]
pub(crate) fn test_vow(
    key: &crate::signing::ServiceKey,
    id: &str,
    wallet: Option<&str>,
    index: u64,
) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("type".into(), VOW_TYPE.into());
    m.insert("vow_id".into(), id.into());
    m.insert("sandbox".into(), wallet.is_none().into());
    m.insert("wallet".into(), wallet.into());
    m.insert("log_index".into(), index.into());
    key.sign_object(&mut m).unwrap();
    Value::Object(m)
}
