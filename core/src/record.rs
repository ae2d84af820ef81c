//! The service's own log records, written once: [`Logged`], a record the service signs into
//! the log (its `type`, its members, the exact round trip), and [`OwnerSigned`], a logged
//! record whose owner signed an owner message first (`crate::owner`): a quest claim or
//! delivery, an npub binding, a witness pledge, a familiar (ARCHITECTURE.md, "core").
//!
//! Every such record is an object signed by the service (Ed25519 over RFC 8785, `key_id`
//! inside), its leaf bytes the RFC 8785 bytes of the signed object:
//!
//! ```text
//! {"type": TYPE, <the kind's members, in order>, "log_index": n, "scope": {...}, "key_id", "signature"}
//! ```
//!
//! A kind lists its members once ([`Logged::fields`]): the same list writes them
//! ([`Logged::to_object`], [`Logged::leaf`]) and reads them back ([`Logged::parse`], whose
//! refusals name the type and the member), and the parse refuses an object that is not exactly
//! what the kind writes. An owner-signed kind also names its owner message ([`OwnerSigned::KIND`],
//! whose row in `owner::Kind::entry` holds its record's rules), rebuilds the text
//! ([`OwnerSigned::message_at`]) and names its parts ([`OwnerSigned::parts`]); verify-log checks
//! every such kind with one checker, `leaf::OwnerChecker`.
//!
//! The vow and its report-ins (`vow::record`) are owner-signed too, but their records cannot
//! rebuild their text (a sealed vow publishes only its text's hash, and neither record keeps
//! the origin the text names): they are hash chains, checked by `vow::links::LinkChecker`.

use serde_json::{json, Map, Value};

use crate::canonical::{jcs_map, CanonicalError};
use crate::owner::{Kind, RecordRule, RecoverError};
use crate::scope::scope_value;
use crate::signing::{ServiceKey, KEY_ID_FIELD, SIGNATURE_FIELD};
use crate::time::{parse_rfc3339, rfc3339, utc_date};

/// The shape a member read back must have ([`RecordError::Missing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A JSON string.
    String,
    /// A JSON integer (unsigned, 64 bits).
    Integer,
    /// A JSON object.
    Object,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shape::String => "a string",
            Shape::Integer => "an integer",
            Shape::Object => "an object",
        })
    }
}

/// Why a logged record was refused: read back ([`Logged::parse`], naming its type and the
/// member), by its kind's own checks ([`OwnerSigned::check_record`]), or by its owner's
/// signature ([`OwnerSigned::signer_at`], [`OwnerSigned::check_wallet`]). The texts are the
/// ones verify-log and the api show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The value is not a JSON object.
    #[error("not an object")]
    NotAnObject,
    /// Member `member` of a `ty` record is missing or not of its shape.
    #[error("{ty}: `{member}` is missing or not {shape}")]
    Missing {
        /// The record's `type`.
        ty: &'static str,
        /// The member.
        member: String,
        /// The shape it must have.
        shape: Shape,
    },
    /// Member `member` of a `ty` record is not an RFC 3339 UTC instant.
    #[error("{ty}: `{member}` is not an RFC 3339 UTC instant")]
    NotInstant {
        /// The record's `type`.
        ty: &'static str,
        /// The member.
        member: String,
    },
    /// A `ty` record's shape is wrong in a way its kind names ([`Fields::malformed`]).
    #[error("{ty}: {why}")]
    WrongShape {
        /// The record's `type`.
        ty: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A member of the `ty` record at `log_index` breaks its kind's rules
    /// ([`Fields::refused`]).
    #[error("{ty} at log index {log_index}: {why}")]
    Refused {
        /// The record's `type`.
        ty: &'static str,
        /// Its `log_index`.
        log_index: u64,
        /// What is wrong.
        why: String,
    },
    /// The `ty` record at `log_index` is not exactly what its kind writes.
    #[error("{ty} at log index {log_index}: members differ from the record format")]
    NotExact {
        /// The record's `type`.
        ty: &'static str,
        /// Its `log_index`.
        log_index: u64,
    },
    /// The kind's own check failed (an npub binding's BIP-340 signature, say): its error's
    /// text, as the kind's module converts it (record.rs names no kind).
    #[error("{0}")]
    OwnCheck(String),
    /// The owner's signature (member `signature`) recovers no address.
    #[error("{signature}: {why}")]
    BadSignature {
        /// The member holding the owner's signature.
        signature: &'static str,
        /// Why nothing was recovered.
        why: RecoverError,
    },
    /// The owner's signature (member `signature`) recovers to another address than the
    /// record's wallet.
    #[error("{signature} does not recover to the record's wallet")]
    WrongSigner {
        /// The member holding the owner's signature.
        signature: &'static str,
    },
    /// A `ty` record keeps no origin or no wallet, so [`OwnerSigned::check_wallet`] cannot run.
    #[error(
        "a {ty} record does not keep its origin and wallet; recover its signer at the \
         service's public URL (signer_at)"
    )]
    NoOriginOrWallet {
        /// The record's `type`.
        ty: &'static str,
    },
}

/// Sign `obj` with the service's key; its leaf bytes (RFC 8785).
pub fn signed_leaf(
    key: &ServiceKey,
    mut obj: Map<String, Value>,
) -> Result<Vec<u8>, CanonicalError> {
    key.sign_object(&mut obj)?;
    jcs_map(&obj)
}

/// A record the service signs into the log, in exactly one form.
pub trait Logged: Sized + Clone + Default {
    /// Its `type`.
    const TYPE: &'static str;

    /// Visit its members after `type` and before `log_index`, in order: the one list that
    /// writes them and reads them back (a blank record, `Default`, is read into).
    fn fields(&mut self, m: &mut Members<'_>) -> Result<(), RecordError>;

    /// The unsigned object (without `key_id` and `signature`) at `log_index`.
    fn to_object(&self, log_index: u64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), json!(Self::TYPE));
        // Writing refuses nothing.
        let _ = self.clone().fields(&mut Members(Direction::Write(&mut m)));
        m.insert("log_index".into(), json!(log_index));
        m.insert("scope".into(), scope_value());
        m
    }

    /// Sign the record that will sit at `log_index`; its leaf bytes (RFC 8785).
    fn leaf(&self, key: &ServiceKey, log_index: u64) -> Result<Vec<u8>, CanonicalError> {
        signed_leaf(key, self.to_object(log_index))
    }

    /// Read a logged object back: `Ok(None)` when it is not of this type, else the record and
    /// its `log_index`. Refuses an object that is not exactly what [`Logged::to_object`]
    /// writes (plus `key_id`, `signature`, and `scope` as written: the service's wording of its
    /// day); the service's signature is checked by the caller (`signing::verify_object`).
    fn parse(v: &Value) -> Result<Option<(u64, Self)>, RecordError> {
        if v.get("type").and_then(Value::as_str) != Some(Self::TYPE) {
            return Ok(None);
        }
        let obj = v.as_object().ok_or(RecordError::NotAnObject)?;
        let log_index = obj
            .get("log_index")
            .and_then(Value::as_u64)
            .ok_or_else(|| RecordError::Missing {
                ty: Self::TYPE,
                member: "log_index".into(),
                shape: Shape::Integer,
            })?;
        let r = Fields {
            ty: Self::TYPE,
            obj,
            log_index,
        };
        let mut rec = Self::default();
        rec.fields(&mut Members(Direction::Read(r)))?;
        let mut rebuilt = rec.to_object(log_index);
        for k in [KEY_ID_FIELD, SIGNATURE_FIELD, "scope"] {
            if let Some(x) = obj.get(k) {
                rebuilt.insert(k.into(), x.clone());
            }
        }
        if &rebuilt != obj {
            return Err(RecordError::NotExact {
                ty: Self::TYPE,
                log_index,
            });
        }
        Ok(Some((log_index, rec)))
    }
}

/// A record's members in one direction ([`Logged::fields`]): written into an object, or read
/// back from one (a refusal names the type and the member).
pub struct Members<'a>(Direction<'a>);

enum Direction<'a> {
    Write(&'a mut Map<String, Value>),
    Read(Fields<'a>),
}

impl Members<'_> {
    /// Member `k` of any shape: written as `write(v)`, read back into `v` by `read`.
    pub fn member<T>(
        &mut self,
        k: &str,
        v: &mut T,
        write: impl FnOnce(&T) -> Value,
        read: impl FnOnce(&Fields<'_>) -> Result<T, RecordError>,
    ) -> Result<(), RecordError> {
        match &mut self.0 {
            Direction::Write(m) => {
                m.insert(k.into(), write(v));
            }
            Direction::Read(r) => *v = read(r)?,
        }
        Ok(())
    }

    /// A string member.
    pub fn text(&mut self, k: &str, v: &mut String) -> Result<(), RecordError> {
        self.member(k, v, |v| json!(v), |r| r.str(k))
    }

    /// An integer member.
    pub fn int(&mut self, k: &str, v: &mut u64) -> Result<(), RecordError> {
        self.member(k, v, |v| json!(v), |r| r.u64(k))
    }

    /// An instant member (unix seconds, written RFC 3339 UTC).
    pub fn instant(&mut self, k: &str, v: &mut u64) -> Result<(), RecordError> {
        self.member(k, v, |v| json!(rfc3339(*v)), |r| r.instant(k))
    }

    /// A member computed from the others (or fixed words): written; read back only as part of
    /// the exact form.
    pub fn computed(&mut self, k: &str, v: Value) {
        if let Direction::Write(m) = &mut self.0 {
            m.insert(k.into(), v);
        }
    }

    /// What every owner-signed record but a familiar writes alike: `wallet_signature` (the
    /// owner's, canonical), `at` and `date` (its UTC date, the one the text names).
    pub fn signed(&mut self, signature: &mut String, at: &mut u64) -> Result<(), RecordError> {
        self.text("wallet_signature", signature)?;
        self.instant("at", at)?;
        self.computed("date", json!(utc_date(*at)));
        Ok(())
    }

    /// What a record a sworn vow's wallet signed names: `vow_id` and `wallet` (EIP-55).
    pub fn sworn(&mut self, vow_id: &mut String, wallet: &mut String) -> Result<(), RecordError> {
        self.text("vow_id", vow_id)?;
        self.text("wallet", wallet)
    }
}

/// The members of a logged object being read back, whose refusals name its type.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    ty: &'static str,
    obj: &'a Map<String, Value>,
    log_index: u64,
}

impl<'a> Fields<'a> {
    /// Member `k`, if present.
    pub fn get(&self, k: &str) -> Option<&'a Value> {
        self.obj.get(k)
    }

    /// String member `k`.
    pub fn str(&self, k: &str) -> Result<String, RecordError> {
        self.obj
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| self.missing(k, Shape::String))
    }

    /// Integer member `k`.
    pub fn u64(&self, k: &str) -> Result<u64, RecordError> {
        self.obj
            .get(k)
            .and_then(Value::as_u64)
            .ok_or_else(|| self.missing(k, Shape::Integer))
    }

    /// Instant member `k` (RFC 3339 UTC), unix seconds.
    pub fn instant(&self, k: &str) -> Result<u64, RecordError> {
        parse_rfc3339(&self.str(k)?).ok_or_else(|| RecordError::NotInstant {
            ty: self.ty,
            member: k.into(),
        })
    }

    /// Object member `k`, read the same way.
    pub fn object(&self, k: &str) -> Result<Fields<'a>, RecordError> {
        let obj = self
            .obj
            .get(k)
            .and_then(Value::as_object)
            .ok_or_else(|| self.missing(k, Shape::Object))?;
        Ok(Fields { obj, ..*self })
    }

    fn missing(&self, k: &str, shape: Shape) -> RecordError {
        RecordError::Missing {
            ty: self.ty,
            member: k.into(),
            shape,
        }
    }

    /// A refusal of this record: `<type> at log index <n>: <why>`.
    pub fn refused(&self, why: impl std::fmt::Display) -> RecordError {
        RecordError::Refused {
            ty: self.ty,
            log_index: self.log_index,
            why: why.to_string(),
        }
    }

    /// A refusal of this record's shape: `<type>: <why>`.
    pub fn malformed(&self, why: impl std::fmt::Display) -> RecordError {
        RecordError::WrongShape {
            ty: self.ty,
            why: why.to_string(),
        }
    }
}

/// What an owner-signed record names, for its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts<'a> {
    /// The origin its text names, when the record keeps it (the board's records do not: their
    /// texts name the service's public URL, which [`OwnerSigned::message_at`] is given).
    pub origin: Option<&'a str>,
    /// The vow it names (a familiar owned by a wallet names none).
    pub vow_id: Option<&'a str>,
    /// The wallet that signed (EIP-55), when the record names it (a delivery does not: its
    /// claim's wallet signed).
    pub wallet: Option<&'a str>,
    /// The owner's signature, in its one canonical spelling (`vow::eip191::canonical`).
    pub signature: &'a str,
    /// The instant recorded, unix seconds; its UTC date is the one the text names.
    pub at: u64,
}

impl<'a> Parts<'a> {
    /// The parts of a record signed with `signature` at `at` that keeps no origin and names no
    /// vow or wallet (yet: [`Parts::sworn`], [`Parts::at_origin`]).
    pub fn signed(signature: &'a str, at: u64) -> Self {
        Parts {
            origin: None,
            vow_id: None,
            wallet: None,
            signature,
            at,
        }
    }

    /// These parts, naming the sworn vow `vow_id` and its wallet.
    pub fn sworn(self, vow_id: &'a str, wallet: &'a str) -> Self {
        Parts {
            vow_id: Some(vow_id),
            wallet: Some(wallet),
            ..self
        }
    }

    /// These parts, keeping the origin the text names.
    pub fn at_origin(self, origin: &'a str) -> Self {
        Parts {
            origin: Some(origin),
            ..self
        }
    }
}

/// A logged record whose owner signed an owner message (`crate::owner`) with EIP-191: the
/// service appends it after checking the signature, and anyone can rebuild the text from the
/// record and check it again. What a new kind writes: ARCHITECTURE.md, "core".
pub trait OwnerSigned: Logged {
    /// The owner message its signature is over; its row (`owner::Kind::entry`) holds the
    /// record's rules ([`OwnerSigned::rule`]).
    const KIND: Kind;

    /// The exact text the owner signed, rebuilt from the record, naming `origin` (the service's
    /// public URL).
    fn message_at(&self, origin: &str) -> String;

    /// What the record names, for its rules.
    fn parts(&self) -> Parts<'_>;

    /// Every signature the record uses once: the owner's, by default.
    fn signatures(&self) -> Vec<&str> {
        vec![self.parts().signature]
    }

    /// What the daily limit counts by: the vow, by default.
    fn daily_key(&self) -> Option<String> {
        self.parts().vow_id.map(str::to_owned)
    }

    /// The kind's own offline checks of the record, beyond its exact form (what needs no
    /// wallet library: an npub binding's BIP-340 signature).
    fn check_record(&self) -> Result<(), RecordError> {
        Ok(())
    }

    /// The record's rules, from its kind's row (`owner::Kind::entry`; every owner-signed
    /// kind's row has them: `tests/records.rs`).
    fn rule() -> RecordRule {
        let unnamed = RecordRule::new("the record", "its signature was used by an earlier record");
        Self::KIND.entry().record.unwrap_or(unnamed)
    }

    /// The UTC date (`YYYY-MM-DD`) of the record, the one its text names.
    fn date(&self) -> String {
        utc_date(self.parts().at)
    }

    /// The exact text the owner signed, at the origin the record keeps; `None` when it keeps
    /// none ([`OwnerSigned::message_at`] then).
    fn message(&self) -> Option<String> {
        self.parts().origin.map(|o| self.message_at(o))
    }

    /// The address whose key signed the text at `origin` (EIP-55), recovered through
    /// [`crate::owner::recover`].
    #[cfg(feature = "wallet")]
    fn signer_at(&self, origin: &str) -> Result<String, RecordError> {
        let text = self.message_at(origin);
        crate::owner::recover(Self::KIND, &text, self.parts().signature)
            .map(|a| crate::vow::record::checksum_address(&a))
            .map_err(|why| RecordError::BadSignature {
                signature: Self::rule().signature,
                why,
            })
    }

    /// Check that the owner's signature recovers to the record's wallet over the text rebuilt
    /// from the record alone (at its own origin).
    #[cfg(feature = "wallet")]
    fn check_wallet(&self) -> Result<(), RecordError> {
        let Parts {
            origin: Some(origin),
            wallet: Some(wallet),
            ..
        } = self.parts()
        else {
            return Err(RecordError::NoOriginOrWallet { ty: Self::TYPE });
        };
        if self.signer_at(origin)? != wallet {
            return Err(RecordError::WrongSigner {
                signature: Self::rule().signature,
            });
        }
        Ok(())
    }
}
