//! Hosted familiars in the store (library/FAMILIARS.md): the job that appends a summoned
//! familiar's record and the reads of the familiars recorded.
//!
//! [`familiar_job`] appends a `conduct.familiar/v1` record through the
//! [`crate::ledger::Sequencer`], re-checking inside the append transaction that the owner's
//! signature was not used before and, for a vow owner, that the vow exists and is signed (not
//! sandbox) with the owner's wallet. Rows of `familiar` keep each record by its id.

use conduct_core::familiar::record::Familiar;
use conduct_core::record::Logged;
use conduct_core::signing::ServiceKey;

use crate::ledger::append::{FamiliarIndex, OwnerRecord, Signatures};
use crate::ledger::{Job, Refusal};

pub use crate::store::familiar::FamiliarRow;

/// The job that appends `rec`, refused (nothing written) when, inside the append transaction:
///
/// - its owner signature was recorded by an earlier familiar: [`Refusal::FamiliarReplayed`]
///   (checked first);
/// - a vow owner's vow does not exist, is sandbox, or its wallet is not the owner's:
///   [`Refusal::UnknownVow`], [`Refusal::SandboxVow`], [`Refusal::WrongWallet`].
///
/// The signature itself is checked by the caller before it submits the job.
pub fn familiar_job(key: ServiceKey, rec: Familiar) -> Job {
    Job::build(move |tx, index| {
        let sig = rec.owner_signature.to_ascii_lowercase();
        if tx.signature_used(Signatures::Familiar, &sig)? {
            return Err(Refusal::FamiliarReplayed);
        }
        let wallet = rec.owner.wallet().to_ascii_lowercase();
        if let Some(vow_id) = rec.owner.vow_id() {
            tx.require_sworn(vow_id, &wallet, OwnerRecord::Familiar)?;
        }
        let id = rec.id();
        let leaf = rec.leaf(&key, index).map_err(|e| Refusal::Invalid(e.0))?;
        let row = FamiliarIndex {
            familiar_id: &id,
            log_index: index,
            owner_wallet: &wallet,
            owner_vow: rec.owner.vow_id(),
            at: rec.at,
            leaf: &leaf,
        };
        if !tx.put_familiar(&row)? || !tx.use_signature(Signatures::Familiar, &sig, index)? {
            return Err(Refusal::FamiliarReplayed);
        }
        Ok(leaf)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job_bench::JobBench;
    use crate::vows::VowReader;
    use conduct_core::familiar::{parse_order, Owner};

    fn rec(owner: Owner, sig: &str) -> Familiar {
        Familiar {
            origin: "https://conduct.example".into(),
            owner,
            owner_signature: sig.into(),
            order: parse_order(&serde_json::json!({"title": "t", "what": "w"}), "/order").unwrap(),
            labor_price_usd: "1.00".into(),
            at: 10,
        }
    }

    #[test]
    fn familiars_append_once_and_read_back() {
        let w = "0xAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAbAb";
        let lower = w.to_ascii_lowercase();
        let bench = JobBench::new(&[
            ("000000000000000a", false, &lower),
            ("00000000000000cc", true, &lower),
        ]);
        let submit = |f: Familiar| bench.submit(familiar_job(bench.key.clone(), f));
        let vow = |id: &str, wallet: &str| Owner::Vow {
            vow_id: id.into(),
            wallet: wallet.into(),
        };
        let first = rec(vow("000000000000000a", w), "0x01");
        let done = submit(first.clone()).unwrap();
        let leaf = done.leaf.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&leaf).unwrap();
        assert_eq!(v["wallet"], serde_json::Value::Null);
        assert_eq!(v["faucet_cap"], "0");
        let e = submit(rec(Owner::Wallet { wallet: w.into() }, "0x01")).unwrap_err();
        assert!(e.to_string().contains("familiar-replayed"), "{e}");
        let e = submit(rec(vow("00000000000000cc", w), "0x02")).unwrap_err();
        assert!(e.to_string().contains("familiar-sandbox-vow"), "{e}");
        let e = submit(rec(vow("00000000000000ff", w), "0x03")).unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
        let other = "0xCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCdCd";
        let e = submit(rec(vow("000000000000000a", other), "0x04")).unwrap_err();
        assert!(e.to_string().contains("familiar-wrong-wallet"), "{e}");
        submit(rec(
            Owner::Wallet {
                wallet: other.into(),
            },
            "0x05",
        ))
        .unwrap();
        let reader = VowReader::open(&bench.store).unwrap();
        let all = reader.familiars().unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].familiar_id, first.id());
        assert_eq!(all[0].leaf, leaf);
        assert_eq!(
            reader.familiar(&first.id()).unwrap().unwrap().log_index,
            done.index
        );
        assert!(reader.familiar("0000000000000000").unwrap().is_none());
    }
}
