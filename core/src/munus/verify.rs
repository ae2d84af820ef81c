//! Offline checks of the board's records in a log (for `conduct-verify`'s verify-log, beside
//! `vow::links::LinkChecker`): every board record is the RFC 8785 form of an object the
//! service signed, in exactly the record format, at the position its `log_index` names; a
//! claim names a signed (not sandbox) vow recorded earlier, with that vow's wallet; and the
//! records replayed through the state machine break no rule (first come, one claim per vow
//! per UTC day, deliveries on the live claim of their vow, lapses exactly 14 idle days after
//! the last activity).
//!
//! What it cannot check offline: the payment flags (they are re-read from the chain; offline
//! every flag is unknown, so no payment settles a quest here), and the EIP-191 signatures of
//! claims and deliveries, which need the `wallet` feature and the service's public URL, which
//! the records do not keep (`OwnerSigned::signer_at`: [`super::play_message`] rebuilt from the
//! record at that origin, recovered through `owner::recover`). Signatures are not counted for
//! single use here: the replay refuses a replayed claim (one claim per vow per UTC day).

use serde_json::Value;

use super::record::{BoardRecord, TYPES};
use super::state::Board;
use crate::leaf::{has_type, signed_record, sworn, LeafCheck, SharedVows};
use crate::signing::PinnedKey;
use crate::vow::links::LinkError;
use crate::vow::record::VOW_TYPE;

/// Streams leaves and checks the board's records in them.
#[derive(Debug)]
pub struct BoardChecker {
    pinned: PinnedKey,
    /// Each vow seen: its wallet when signed, `None` when sandbox.
    vows: SharedVows,
    records: Vec<(u64, BoardRecord)>,
    /// Board records seen, by type (claims, deliveries, lapses, payments).
    pub counts: [u64; 4],
}

impl BoardChecker {
    /// A checker for records signed by `pinned`.
    pub fn new(pinned: PinnedKey) -> Self {
        Self::sharing(pinned, SharedVows::default())
    }

    /// A checker for records signed by `pinned` that notes and reads the vows in `vows`
    /// (shared with verify-log's other record checkers).
    pub fn sharing(pinned: PinnedKey, vows: SharedVows) -> Self {
        BoardChecker {
            pinned,
            vows,
            records: Vec::new(),
            counts: [0; 4],
        }
    }
}

impl LeafCheck for BoardChecker {
    fn wants(&self, bytes: &[u8]) -> bool {
        has_type(bytes, VOW_TYPE) || TYPES.iter().any(|t| has_type(bytes, t))
    }

    /// Leaves that are neither vows nor board records are ignored (the vow chains are
    /// `LinkChecker`'s business).
    fn record(&mut self, index: u64, bytes: &[u8], v: &Value) -> Result<(), LinkError> {
        let ty = v.get("type").and_then(Value::as_str).unwrap_or("");
        let at = |m: &dyn std::fmt::Display| LinkError(format!("leaf {index} ({ty}): {m}"));
        if self.vows.borrow_mut().note(v) {
            return Ok(());
        }
        let Some(kind) = TYPES.iter().position(|t| *t == ty) else {
            return Ok(());
        };
        let rec = signed_record(
            index,
            bytes,
            v,
            &self.pinned,
            "a board record",
            BoardRecord::parse,
        )
        .map_err(|e| at(&e))?;
        if !super::is_quest_id(rec.quest_id()) {
            return Err(at(&"quest_id is not a quest id"));
        }
        match &rec {
            BoardRecord::Claim(c) => sworn(c, &self.vows.borrow()).map_err(|e| at(&e)),
            BoardRecord::Delivery(d) => super::check_link(&d.link).map_err(|e| at(&e)),
            BoardRecord::Lapse(_) => Ok(()),
            BoardRecord::Payment(p) => {
                if super::is_address(&p.to)
                    && super::is_address(&p.token)
                    && super::is_tx_hash(&p.tx)
                    && super::is_amount(&p.amount_scry)
                {
                    Ok(())
                } else {
                    Err(at(&"a payment field is malformed"))
                }
            }
        }?;
        self.counts[kind] += 1;
        self.records.push((index, rec));
        Ok(())
    }

    /// Replay the records through the state machine: every rule break, by leaf.
    fn finish(&self) -> Result<(), LinkError> {
        let last = self.records.last().map_or(0, |(_, r)| r.at());
        let board = Board::fold(&[], &self.records, &|_| None, last);
        match board.anomalies.first() {
            Some(a) => Err(LinkError(a.clone())),
            None => Ok(()),
        }
    }

    /// Board records of every type that verified.
    fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::{Claim, Delivery};
    use super::*;
    use crate::signing::ServiceKey;

    const T0: u64 = 1_795_262_400;

    fn vow(key: &ServiceKey, id: &str, sandbox: bool, index: u64) -> Vec<u8> {
        let v = crate::leaf::test_vow(key, id, (!sandbox).then_some("0xAbAb"), index);
        crate::canonical::jcs(&v).unwrap()
    }

    fn claim(vow: &str, quest: &str, at: u64) -> BoardRecord {
        BoardRecord::Claim(Claim {
            quest_id: quest.into(),
            vow_id: vow.into(),
            wallet: "0xAbAb".into(),
            wallet_signature: "0x11".into(),
            at,
        })
    }

    fn run(key: &ServiceKey, leaves: &[Vec<u8>]) -> Result<BoardChecker, LinkError> {
        let mut c = BoardChecker::new(PinnedKey::parse(&key.vkey()).unwrap());
        for (i, l) in leaves.iter().enumerate() {
            let v: Value = serde_json::from_slice(l).unwrap();
            c.record(i as u64, l, &v)?;
        }
        c.finish()?;
        Ok(c)
    }

    #[test]
    fn checks_authenticity_vows_and_rules() {
        let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
        let mut leaves = vec![
            vow(&key, "000000000000000a", false, 0),
            vow(&key, "000000000000000b", true, 1),
        ];
        leaves.push(claim("000000000000000a", "q", T0).leaf(&key, 2).unwrap());
        leaves.push(
            BoardRecord::Delivery(Delivery {
                quest_id: "q".into(),
                vow_id: "000000000000000a".into(),
                claim: 2,
                link: "https://github.com/o/r/pull/1".into(),
                wallet_signature: "0x22".into(),
                at: T0 + 5,
            })
            .leaf(&key, 3)
            .unwrap(),
        );
        let c = run(&key, &leaves).unwrap();
        assert_eq!(c.counts, [1, 1, 0, 0]);

        // A sandbox vow's claim, an unknown vow, a wrong position, another key, a second
        // claim on a claimed quest: each refused.
        let mut bad = leaves.clone();
        bad.push(claim("000000000000000b", "r", T0).leaf(&key, 4).unwrap());
        assert!(run(&key, &bad).unwrap_err().0.contains("sandbox"));
        let mut bad = leaves.clone();
        bad.push(claim("00000000000000ff", "r", T0).leaf(&key, 4).unwrap());
        assert!(run(&key, &bad).unwrap_err().0.contains("no vow"));
        let mut bad = leaves.clone();
        bad.push(
            claim("000000000000000a", "r", T0 + 86_400)
                .leaf(&key, 9)
                .unwrap(),
        );
        assert!(run(&key, &bad).unwrap_err().0.contains("log_index"));
        let other = ServiceKey::from_seed(&[8; 32], "example.org/log");
        let mut bad = leaves.clone();
        bad.push(
            claim("000000000000000a", "r", T0 + 86_400)
                .leaf(&other, 4)
                .unwrap(),
        );
        assert!(run(&key, &bad).unwrap_err().0.contains("signature"));
        let mut bad = leaves.clone();
        bad.push(
            claim("000000000000000a", "q", T0 + 86_400)
                .leaf(&key, 4)
                .unwrap(),
        );
        assert!(run(&key, &bad).unwrap_err().0.contains("not open"));
        let mut bad = leaves.clone();
        bad.push(
            claim("000000000000000a", "r", T0 + 60)
                .leaf(&key, 4)
                .unwrap(),
        );
        let e = run(&key, &bad).unwrap_err().0;
        assert!(e.contains("already claimed"), "{e}");
    }
}
