//! The body of the quest list (`GET /munus`, library/MUNUS.md): every quest with its derived status
//! and claim, the counts, the paid ledger with each row's flag as re-read from the chain
//! (`true`, `false` or `null`; never a missing row, never `null` turned into `false`), the
//! file errors, and the fixed texts (`walls`, `done_is_not_settled`, `how_verified`, `docs`,
//! `why_this_is_the_quest`, `scope`). Unsigned here: the renderer signs it like every JSON
//! file of the tree.

use serde_json::{json, Map, Value};

use super::state::{Board, LiveClaim, Status};
use crate::scope::scope_value;
use crate::time::rfc3339;

/// Type of the list document.
pub const LIST_TYPE: &str = "conduct.munus/v1";

/// The four walls (library/MUNUS.md, "Walls"), in canonical order.
pub const WALLS: [(&str, &str); 4] = [
    (
        "labor_never_a_reading",
        "No quest pays for, gates on, or moves a meter number. Work done for the board never touches a profile, a vow's chain, a trajectory or a reading.",
    ),
    (
        "merge_is_a_human_act",
        "A delivery is reviewed and merged by a person. Being paid closes a quest; it does not merge anything.",
    ),
    (
        "no_shell_here",
        "The service never executes submitted code. A delivery is a link to a pull request, read by eye or checked elsewhere, never run by the service.",
    ),
    (
        "no_yield_language",
        "A quest is paid labor, not an investment. Nothing on the board promises a return, a yield or a price.",
    ),
];

/// Why done and settled are counted apart.
pub const DONE_IS_NOT_SETTLED: &str = "Done and settled are different facts. delivered_by_a_worker counts quests with a delivery on the record; settled_to_a_worker counts payments the chain confirms. A delivery does not prove a payment, and a payment does not merge anything.";

/// How the paid ledger is verified.
pub const HOW_VERIFIED: &str = "Each paid row is re-read from the chain when this list is rendered: true when the transaction succeeded and holds a token transfer to `to` for exactly `amount_scry`; false when the chain answered and it does not match; null when the chain did not answer (never the same as false, never zero). Claims, deliveries, lapses and payments are signed records of the transparency log (/log), checked offline by conduct verify-log.";

/// Why these are the quests.
pub const WHY_THIS_IS_THE_QUEST: &str = "Every quest improves this service itself, and each is named by the rung of the design it belongs to. Sworn agents (a signed vow) claim them; a person reviews each delivery and pays by a public on-chain transfer. Money cannot claim, rank or close a quest.";

fn claim_value(c: &LiveClaim) -> Value {
    json!({
        "vow_id": c.vow_id,
        "wallet": c.wallet,
        "log_index": c.log_index,
        "at": rfc3339(c.at),
        "lapses_at": c.lapses_at().map(rfc3339),
        "delivery": c.delivery.as_ref().map_or(Value::Null, |(i, link, at)| json!({
            "log_index": i, "link": link, "at": rfc3339(*at),
        })),
    })
}

/// The list at `now`, with the file errors (`claims_file_error` is the quest file's).
pub fn list_value(
    board: &Board,
    claims_file_error: Option<&str>,
    paid_file_error: Option<&str>,
    now: u64,
) -> Value {
    let quests: Vec<Value> = board
        .quests
        .iter()
        .map(|q| {
            let d = &q.quest;
            let mut m = Map::new();
            m.insert("id".into(), json!(d.id));
            m.insert("title".into(), json!(d.title));
            m.insert("rung".into(), json!(d.rung));
            m.insert("what".into(), json!(d.what));
            m.insert("deliverable".into(), json!(d.deliverable));
            m.insert("check".into(), json!(d.check.as_str()));
            m.insert("status".into(), json!(q.status.as_str()));
            let (claim, settled_by, in_house) = match &q.status {
                Status::Open => (Value::Null, Value::Null, Value::Null),
                Status::Claimed(c) => (claim_value(c), Value::Null, Value::Null),
                Status::Settled { claim, payment } => (
                    claim.as_ref().map_or(Value::Null, claim_value),
                    json!({ "payment_log_index": payment }),
                    Value::Null,
                ),
                Status::InHouse { link } => (Value::Null, Value::Null, json!(link)),
            };
            m.insert("claim".into(), claim);
            m.insert("settled_by".into(), settled_by);
            m.insert("delivered_in_house".into(), in_house);
            m.insert("page".into(), json!(format!("/munus/{}", d.id)));
            Value::Object(m)
        })
        .collect();
    let paid: Vec<Value> = board
        .paid
        .iter()
        .map(|p| {
            json!({
                "quest_id": p.payment.quest_id,
                "to": p.payment.to,
                "amount_scry": p.payment.amount_scry,
                "token": p.payment.token,
                "chain_id": p.payment.chain_id,
                "tx": p.payment.tx,
                "log_index": p.log_index,
                "verified": p.verified,
            })
        })
        .collect();
    let c = board.counts();
    let mut walls = Map::new();
    for (k, v) in WALLS {
        walls.insert(k.into(), json!(v));
    }
    json!({
        "type": LIST_TYPE,
        "at": rfc3339(now),
        "quests": quests,
        "open": c.open,
        "claimed": c.claimed,
        "claims_file_error": claims_file_error,
        "delivered_in_house": c.delivered_in_house,
        "delivered_by_a_worker": c.delivered_by_a_worker,
        "done_is_not_settled": DONE_IS_NOT_SETTLED,
        "paid": paid,
        "settled_to_a_worker": c.settled_to_a_worker,
        "unverified": c.unverified,
        "uncheckable_right_now": c.uncheckable_right_now,
        "paid_file_error": paid_file_error,
        "how_verified": HOW_VERIFIED,
        "walls": Value::Object(walls),
        "scope": scope_value(),
        "docs": {
            "design": "/library/MUNUS.md",
            "message": "GET /play/message?action=claim|submit&quest=&vow_id=[&link=]",
            "claim": "POST /munus/{id}/claim",
            "submit": "POST /munus/{id}/submit",
            "log": "/log",
        },
        "why_this_is_the_quest": WHY_THIS_IS_THE_QUEST,
    })
}

#[cfg(test)]
mod tests {
    use super::super::record::{BoardRecord, Claim, Payment};
    use super::super::{parse_quests, LAPSE_SECONDS};
    use super::*;

    #[test]
    fn the_list_carries_every_field_of_spec_2_6_and_null_stays_null() {
        let q = |id: &str| json!({"id": id, "title": "t", "rung": "r", "what": "w", "deliverable": "d", "check": "machine"});
        let quests =
            parse_quests(&serde_json::to_vec(&json!({"quests": [q("a"), q("b")]})).unwrap()).items;
        let t0 = 1_795_262_400;
        let recs = vec![
            (
                0,
                BoardRecord::Claim(Claim {
                    quest_id: "a".into(),
                    vow_id: "000000000000000a".into(),
                    wallet: "0xAb".into(),
                    wallet_signature: "0x1".into(),
                    at: t0,
                }),
            ),
            (
                1,
                BoardRecord::Payment(Payment {
                    quest_id: "b".into(),
                    claim: None,
                    to: "0xab".into(),
                    amount_scry: "5".into(),
                    token: "0xcd".into(),
                    chain_id: 1,
                    tx: "0xef".into(),
                    at: t0,
                }),
            ),
        ];
        let board = Board::fold(&quests, &recs, &|_| None, t0 + 1);
        let v = list_value(&board, Some("quests.json: quests[2]: bad"), None, t0 + 1);
        for k in [
            "open",
            "claimed",
            "claims_file_error",
            "delivered_in_house",
            "delivered_by_a_worker",
            "done_is_not_settled",
            "paid",
            "settled_to_a_worker",
            "unverified",
            "uncheckable_right_now",
            "paid_file_error",
            "how_verified",
            "walls",
            "scope",
            "docs",
            "why_this_is_the_quest",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        for k in [
            "labor_never_a_reading",
            "merge_is_a_human_act",
            "no_shell_here",
            "no_yield_language",
        ] {
            assert!(v["walls"][k].is_string(), "{k}");
        }
        assert_eq!(
            (v["open"].as_u64(), v["claimed"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(v["paid"][0]["verified"], Value::Null);
        assert_eq!(v["uncheckable_right_now"], 1);
        assert_eq!(v["unverified"], 0);
        assert_eq!(v["paid_file_error"], Value::Null);
        assert_eq!(v["quests"][0]["status"], "open");
        assert_eq!(
            v["quests"][0]["claim"]["lapses_at"],
            rfc3339(t0 + LAPSE_SECONDS)
        );
        assert_eq!(v["quests"][1]["claim"], Value::Null);
        for k in [
            "id",
            "title",
            "rung",
            "what",
            "deliverable",
            "check",
            "status",
        ] {
            assert!(v["quests"][0][k].is_string(), "{k}");
        }
        // No yield language anywhere in the fixed texts.
        let s = v.to_string().to_lowercase();
        for w in ["yield\"", "return on", "invest "] {
            assert!(!s.contains(w), "{w}");
        }
        assert!(crate::canonical::jcs(&v).is_ok());
    }
}
