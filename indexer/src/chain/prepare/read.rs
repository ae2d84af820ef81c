//! The live reads of a prepared action, pinned to one block: the head is read first, and
//! every `eth_call`, balance and code read is made at that block. Once the chain fails to
//! answer, nothing more is asked (each read is then "not read": a precondition `assumed`),
//! so an unreachable chain costs one timeout, not one per precondition.

use alloy::primitives::{Address, Bytes, U256};

use super::super::rpc::{Rpc, RpcFailure};
use super::ReadAt;

/// What one `eth_call` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// It returned these bytes.
    Returned(Bytes),
    /// It reverted with this data (empty: none).
    Reverted(Bytes),
}

/// Reads at one block (none without an RPC).
pub struct Reader<'a> {
    rpc: Option<&'a Rpc>,
    block: Option<u64>,
    down: bool,
    error: Option<String>,
}

impl<'a> Reader<'a> {
    /// Read the head (the block every later read is made at). Without an RPC nothing is read.
    pub async fn new(rpc: Option<&'a Rpc>) -> Reader<'a> {
        let mut r = Reader {
            rpc,
            block: None,
            down: false,
            error: None,
        };
        if let Some(rpc) = rpc {
            match rpc.head().await {
                Ok(b) => r.block = Some(b),
                Err(e) => r.fail(e),
            }
        }
        r
    }

    fn fail(&mut self, e: RpcFailure) {
        self.error = Some(e.to_string());
        self.down = true;
    }

    /// Where the reads were made.
    pub fn at(&self) -> ReadAt {
        ReadAt {
            block: self.block,
            reachable: self.rpc.map(|_| !self.down),
            error: self.error.clone(),
        }
    }

    /// The RPC, while the chain answers.
    fn live(&self) -> Option<(&'a Rpc, u64)> {
        if self.down {
            return None;
        }
        Some((self.rpc?, self.block?))
    }

    /// `eth_call` of `data` to `to`; `None` when not read.
    pub async fn call(&mut self, to: Address, data: Vec<u8>) -> Option<Call> {
        let (rpc, block) = self.live()?;
        match rpc.view_at(to, data, Some(block)).await {
            Ok(Ok(out)) => Some(Call::Returned(out)),
            Ok(Err(revert)) => Some(Call::Reverted(revert)),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// The runtime code at `address`; `None` when not read.
    pub async fn code(&mut self, address: Address) -> Option<Bytes> {
        let (rpc, block) = self.live()?;
        match rpc.code_at(address, Some(block)).await {
            Ok(c) => Some(c),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// The native balance (wei) of `address`; `None` when not read.
    pub async fn balance(&mut self, address: Address) -> Option<U256> {
        let (rpc, block) = self.live()?;
        match rpc.balance_at(address, Some(block)).await {
            Ok(b) => Some(b),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// A view returning one value of type `C`'s return; `None` when not read, `Some(None)`
    /// when it reverted or did not decode.
    pub async fn view<C: alloy::sol_types::SolCall>(
        &mut self,
        to: Address,
        call: &C,
    ) -> Option<Option<C::Return>> {
        match self.call(to, call.abi_encode()).await? {
            Call::Returned(out) => Some(C::abi_decode_returns(&out).ok()),
            Call::Reverted(_) => Some(None),
        }
    }
}
