//! The quest board's payment check (library/MUNUS.md "How a quest is paid"): a paid
//! row is re-read from the chain each time, never trusted from the file. Its flag is
//! `Some(true)` when the transaction succeeded and holds an ERC-20 `Transfer` log of the
//! row's token to `to` for exactly `amount`; `Some(false)` when the chain answered and it does
//! not (a failed transaction, no such transaction, another token, recipient or amount);
//! `None` when no RPC answered. `None` is never shown as false or zero.

use alloy::primitives::{Address, B256, U256};
use alloy::rpc::types::Log;
use alloy::sol_types::SolEvent;

use super::rpc::{Rpc, RpcFailure};

alloy::sol! {
    /// The ERC-20 transfer event.
    event Transfer(address indexed from, address indexed to, uint256 value);
}

/// One payment to check, as the operator recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaymentQuery {
    /// The transaction hash.
    pub tx: B256,
    /// The ERC-20 token.
    pub token: Address,
    /// The worker's wallet.
    pub to: Address,
    /// Amount in base units.
    pub amount: U256,
}

impl PaymentQuery {
    /// From a payment record's strings (`0x` hex addresses and hash, decimal amount); `None`
    /// when one does not parse (the record parsers refuse such rows before this).
    pub fn parse(tx: &str, token: &str, to: &str, amount_scry: &str) -> Option<PaymentQuery> {
        Some(PaymentQuery {
            tx: tx.parse().ok()?,
            token: token.parse().ok()?,
            to: to.parse().ok()?,
            amount: U256::from_str_radix(amount_scry, 10).ok()?,
        })
    }
}

/// True when one of `logs` is a `Transfer` of `q.token` to `q.to` for exactly `q.amount`
/// (the receipt's success is checked by the caller).
pub fn transfer_matches(logs: &[Log], q: &PaymentQuery) -> bool {
    logs.iter().any(|log| {
        log.address() == q.token
            && log.topics().first() == Some(&Transfer::SIGNATURE_HASH)
            && Transfer::decode_log_data(log.data())
                .is_ok_and(|t| t.to == q.to && t.value == q.amount)
    })
}

/// Re-read one payment from the chain: `Some(true)`, `Some(false)` or `None` (no answer).
pub async fn check_payment(rpc: &Rpc, q: &PaymentQuery) -> Option<bool> {
    match rpc.receipt(q.tx).await {
        Ok(Some(r)) => Some(r.status() && transfer_matches(r.logs(), q)),
        // The node answered: no mined transaction has this hash.
        Ok(None) => Some(false),
        Err(RpcFailure::Unreachable(e) | RpcFailure::Refused(e) | RpcFailure::Bad(e)) => {
            tracing::warn!("payment {}: the chain did not answer: {e}", q.tx);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{address, b256, LogData};

    fn log(token: Address, to: Address, value: u64) -> Log {
        let ev = Transfer {
            from: address!("00000000000000000000000000000000000000aa"),
            to,
            value: U256::from(value),
        };
        Log {
            inner: alloy::primitives::Log {
                address: token,
                data: ev.encode_log_data(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn only_the_exact_token_recipient_and_amount_match() {
        let token = address!("00000000000000000000000000000000000000cc");
        let to = address!("00000000000000000000000000000000000000bb");
        let q = PaymentQuery {
            tx: b256!("0000000000000000000000000000000000000000000000000000000000000001"),
            token,
            to,
            amount: U256::from(1_000_000u64),
        };
        assert!(transfer_matches(&[log(token, to, 1_000_000)], &q));
        assert!(!transfer_matches(&[log(token, to, 999_999)], &q));
        assert!(!transfer_matches(&[log(to, to, 1_000_000)], &q));
        assert!(!transfer_matches(&[log(token, token, 1_000_000)], &q));
        assert!(transfer_matches(
            &[log(token, token, 1), log(token, to, 1_000_000)],
            &q
        ));
        // Another event with the same data is not a transfer.
        let mut other = log(token, to, 1_000_000);
        let topics = vec![B256::ZERO, B256::left_padding_from(to.as_slice())];
        other.inner.data = LogData::new_unchecked(topics, other.inner.data.data.clone());
        assert!(!transfer_matches(&[other], &q));
        assert!(!transfer_matches(&[], &q));
    }

    #[test]
    fn queries_parse_from_record_strings() {
        let q = PaymentQuery::parse(
            &format!("0x{}", "ef".repeat(32)),
            &format!("0x{}", "cd".repeat(20)),
            &format!("0x{}", "AB".repeat(20)),
            "1500000",
        )
        .unwrap();
        assert_eq!(q.amount, U256::from(1_500_000u64));
        assert!(PaymentQuery::parse("0x1", "0x2", "0x3", "1").is_none());
        assert!(PaymentQuery::parse(
            &format!("0x{}", "ef".repeat(32)),
            &format!("0x{}", "cd".repeat(20)),
            &format!("0x{}", "ab".repeat(20)),
            "1.5"
        )
        .is_none());
    }
}
