//! Ticket copies (library/PREPARE.md "Tickets"): the exact EIP-191 text a holder
//! signs to prove its wallet (`GET /ticket/{game}/message`), and the signed entitlement
//! `POST /ticket/{game}/entitle` answers with (`conduct.ticket-entitlement/v1`).
//!
//! The text names the origin, the action `prove_holder`, the game, the wallet and the UTC
//! date: a signature is good for that wallet and game on that UTC day only. Replaying it within
//! the day is allowed: an entitlement check changes nothing and is answered from a fresh
//! balance read each time, so a replay learns only what the chain says now.
//!
//! The entitlement itself is a balance read (ERC-1155 `balanceOf(wallet, game)` at a named
//! block): `entitled` is `balance > 0`. A chain that does not answer gives no entitlement at
//! all (the service answers 503), never `entitled: false`.

use serde_json::{json, Value};

use crate::munus::utc_date;

/// The type of a signed entitlement.
pub const ENTITLEMENT_TYPE: &str = "conduct.ticket-entitlement/v1";

/// The action the holder-proof text names.
pub const ACTION: &str = "prove_holder";

/// What an entitlement is and is not (signed with it).
pub const ENTITLEMENT_WHAT: &str = "A reading of the chain: the wallet, which proved itself \
    with an EIP-191 signature over the text of GET /ticket/{game}/message, held `balance` \
    copies of the game (ERC-1155 token id) on the ticket contract at `block`. Entitled means \
    balance > 0 at that block. It says nothing about any later block: a copy transferred away \
    takes the entitlement with it, so ask again for a newer reading.";

/// The exact text a wallet signs with EIP-191 `personal_sign` to prove it holds copies of
/// `game` (`GET /ticket/{game}/message`). `game` is the decimal token id, `wallet` the address
/// as 0x and lower-case hex, `now` the unix second whose UTC date the text names.
pub fn holder_message(origin: &str, game: &str, wallet: &str, now: u64) -> String {
    let date = utc_date(now);
    crate::owner::OwnerText {
        kind: crate::owner::Kind::ProveHolder,
        effect: "Signing proves this wallet asks for its entitlement to the game below. It moves \
                 no funds, approves nothing, and is good on this UTC date only.",
        origin,
        params: vec![("Game", game.to_owned()), ("Wallet", wallet.to_owned())],
        date: &date,
        after: Vec::new(),
        block: None,
    }
    .render()
}

/// The facts of one entitlement reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalanceAt<'a> {
    /// The service's public URL (the text's origin).
    pub origin: &'a str,
    /// The game (decimal token id).
    pub game: &'a str,
    /// The wallet (0x, lower-case hex).
    pub wallet: &'a str,
    /// The wallet's EIP-191 signature over [`holder_message`] (0x hex), as given.
    pub holder_signature: &'a str,
    /// The ticket contract (0x, lower-case hex).
    pub contract: &'a str,
    /// The EIP-155 chain id.
    pub chain_id: u64,
    /// `balanceOf(wallet, game)` (decimal).
    pub balance: &'a str,
    /// The block the balance was read at.
    pub block: u64,
    /// That block's hash (0x hex), when read.
    pub block_hash: Option<&'a str>,
    /// Unix seconds of the reading (the date of the signed text).
    pub at: u64,
}

/// The entitlement document (unsigned: the service signs it like every object it serves).
pub fn entitlement_doc(r: &BalanceAt<'_>, scope: Value) -> Value {
    json!({
        "type": ENTITLEMENT_TYPE,
        "entitled": r.balance != "0",
        "game": r.game,
        "wallet": r.wallet,
        "balance": r.balance,
        "contract": r.contract,
        "chain_id": r.chain_id,
        "block": r.block,
        "block_hash": r.block_hash,
        "at": crate::time::rfc3339(r.at),
        "proof": {
            "scheme": "eip191-personal_sign",
            "message": holder_message(r.origin, r.game, r.wallet, r.at),
            "signature": r.holder_signature,
        },
        "what": ENTITLEMENT_WHAT,
        "scope": scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_origin_action_game_wallet_and_date() {
        let w = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
        let t = holder_message("https://conduct.example", "7", w, 86_400 * 365);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "conduct: prove you hold a ticket copy");
        assert_eq!(
            &lines[lines.len() - 5..],
            [
                "Origin: https://conduct.example",
                "Action: prove_holder",
                "Game: 7",
                &format!("Wallet: {w}"),
                "Date (UTC): 1971-01-01",
            ]
        );
        // The same day gives the same text; the next day another.
        assert_eq!(
            t,
            holder_message("https://conduct.example", "7", w, 86_400 * 366 - 1)
        );
        assert_ne!(
            t,
            holder_message("https://conduct.example", "7", w, 86_400 * 366)
        );
    }

    #[test]
    fn entitled_is_a_positive_balance() {
        let r = BalanceAt {
            origin: "https://conduct.example",
            game: "1",
            wallet: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
            holder_signature: "0x00",
            contract: "0xdc64a140aa3e981100a9beca4e685f962f0cf6c9",
            chain_id: 31337,
            balance: "0",
            block: 9,
            block_hash: None,
            at: 0,
        };
        let d = entitlement_doc(&r, Value::Null);
        assert_eq!(d["entitled"], false);
        assert_eq!(d["type"], ENTITLEMENT_TYPE);
        let d = entitlement_doc(
            &BalanceAt {
                balance: "2",
                ..r.clone()
            },
            Value::Null,
        );
        assert_eq!(d["entitled"], true);
        assert_eq!(
            d["proof"]["message"],
            holder_message(r.origin, r.game, r.wallet, r.at)
        );
    }
}
