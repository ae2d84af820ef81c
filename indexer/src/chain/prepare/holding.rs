//! A ticket holding read live, for `POST /ticket/{game}/entitle`: the head, its hash, and
//! ERC-1155 `balanceOf(wallet, game)` at that block. A chain that does not answer is
//! [`HoldingError::Unreachable`], never a balance of zero.

use alloy::primitives::{Address, U256};
use alloy::sol_types::SolCall;

use super::build::ITicketCopies;
use crate::chain::rpc::{Rpc, RpcFailure};

/// What the chain said of one wallet's copies of one game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// Copies held.
    pub balance: U256,
    /// The block read at.
    pub block: u64,
    /// Its hash (0x hex), when the node gave it.
    pub block_hash: Option<String>,
}

/// Why a holding could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HoldingError {
    /// No RPC answered.
    #[error("{0}")]
    Unreachable(String),
    /// The chain answered, and there is no contract at the address.
    #[error("no contract code at {0}")]
    NoContract(String),
    /// The contract answered something that is not a balance.
    #[error("{0}")]
    Unreadable(String),
}

fn unreachable(e: RpcFailure) -> HoldingError {
    HoldingError::Unreachable(e.to_string())
}

/// Read `balanceOf(wallet, game)` on `contract` at the head.
pub async fn holding(
    rpc: &Rpc,
    contract: Address,
    wallet: Address,
    game: U256,
) -> Result<Holding, HoldingError> {
    let block = rpc.head().await.map_err(unreachable)?;
    let block_hash = rpc
        .block_hash(block)
        .await
        .map_err(unreachable)?
        .map(|h| super::super::registry::b256_text(&h));
    let call = ITicketCopies::balanceOfCall {
        account: wallet,
        id: game,
    };
    let out = rpc
        .view_at(contract, call.abi_encode(), Some(block))
        .await
        .map_err(unreachable)?;
    let text = super::super::registry::address_text(&contract);
    let bytes = match out {
        Ok(b) => b,
        Err(revert) => {
            return Err(HoldingError::Unreadable(format!(
                "balanceOf reverted on {text} ({})",
                alloy::hex::encode_prefixed(&revert)
            )))
        }
    };
    match ITicketCopies::balanceOfCall::abi_decode_returns(&bytes) {
        Ok(balance) => Ok(Holding {
            balance,
            block,
            block_hash,
        }),
        Err(_) => {
            let code = rpc
                .code_at(contract, Some(block))
                .await
                .map_err(unreachable)?;
            if code.is_empty() {
                Err(HoldingError::NoContract(text))
            } else {
                Err(HoldingError::Unreadable(format!(
                    "balanceOf on {text} did not answer a uint256"
                )))
            }
        }
    }
}
