//! JSON-RPC with failover: the configured URLs in order; a call that fails on one (no answer,
//! a transport error, a timeout) is tried on the next, and the one that answered is used
//! first from then on. An error *answer* (the node refused the request) is returned as it
//! is: another node would not make the request valid, and the follower shrinks a refused
//! `eth_getLogs` range itself.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use alloy::eips::BlockNumberOrTag;
use alloy::primitives::B256;
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::types::{Filter, Log, TransactionReceipt};
use alloy::transports::{RpcError, TransportErrorKind};

use super::ChainError;

/// Why an RPC call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcFailure {
    /// No URL answered (each failed or timed out).
    #[error("no RPC answered: {0}")]
    Unreachable(String),
    /// A node answered with an error.
    #[error("the node refused: {0}")]
    Refused(String),
    /// A node answered something unusable (a wrong chain id, a missing block hash).
    #[error("{0}")]
    Bad(String),
}

/// The configured RPC URLs.
#[derive(Debug)]
pub struct Rpc {
    /// (shown name, raw URL, client).
    nodes: Vec<(String, String, RootProvider)>,
    current: AtomicUsize,
    timeout: Duration,
}

/// A URL without credentials or path, for logs and status: scheme, host and port.
pub fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}",
            u.scheme(),
            u.host_str().unwrap_or("?"),
            u.port().map(|p| format!(":{p}")).unwrap_or_default()
        ),
        Err(_) => "(unparsable URL)".to_owned(),
    }
}

impl Rpc {
    /// Clients for `urls` (each an http(s) URL), each call bounded by `timeout`.
    pub fn new(urls: &[String], timeout: Duration) -> Result<Rpc, ChainError> {
        let mut nodes = Vec::new();
        for u in urls {
            let parsed = url::Url::parse(u).map_err(|e| ChainError::RpcUrl {
                url: shown(u),
                reason: e.to_string(),
            })?;
            nodes.push((shown(u), u.clone(), RootProvider::new_http(parsed)));
        }
        if nodes.is_empty() {
            return Err(ChainError::NoRpcUrl);
        }
        Ok(Rpc {
            nodes,
            current: AtomicUsize::new(0),
            timeout,
        })
    }

    /// Run `call` on the current node, then on each other one until one answers.
    async fn call<T, F, Fut>(&self, what: &str, call: F) -> Result<T, RpcFailure>
    where
        F: Fn(RootProvider) -> Fut,
        Fut: Future<Output = Result<T, RpcError<TransportErrorKind>>>,
    {
        let n = self.nodes.len();
        let start = self.current.load(Ordering::Relaxed) % n;
        let mut errors = Vec::new();
        for k in 0..n {
            let i = (start + k) % n;
            let (name, raw, node) = &self.nodes[i];
            // An error's text may quote the URL (with its key): name it by host only.
            let clean = |e: &str| {
                short(
                    &e.replace(raw.as_str(), name)
                        .replace(raw.trim_end_matches('/'), name),
                )
            };
            match tokio::time::timeout(self.timeout, call(node.clone())).await {
                Ok(Ok(v)) => {
                    if i != start {
                        tracing::warn!(rpc = %name, "{what}: fell over to this RPC");
                        self.current.store(i, Ordering::Relaxed);
                    }
                    return Ok(v);
                }
                Ok(Err(RpcError::ErrorResp(e))) => {
                    return Err(RpcFailure::Refused(format!(
                        "{what}: {}",
                        clean(&e.message)
                    )))
                }
                Ok(Err(e)) => errors.push(format!("{name}: {what}: {}", clean(&e.to_string()))),
                Err(_) => errors.push(format!(
                    "{name}: {what}: no answer within {} s",
                    self.timeout.as_secs_f32()
                )),
            }
        }
        Err(RpcFailure::Unreachable(errors.join("; ")))
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, RpcFailure> {
        self.call("eth_chainId", |p| async move { p.get_chain_id().await })
            .await
    }

    /// `eth_blockNumber`.
    pub async fn head(&self) -> Result<u64, RpcFailure> {
        self.call(
            "eth_blockNumber",
            |p| async move { p.get_block_number().await },
        )
        .await
    }

    /// The hash of block `n`; `None` when the node has no such block (a shorter chain).
    pub async fn block_hash(&self, n: u64) -> Result<Option<B256>, RpcFailure> {
        let block = self
            .call("eth_getBlockByNumber", |p| async move {
                p.get_block_by_number(BlockNumberOrTag::Number(n)).await
            })
            .await?;
        Ok(block.map(|b| b.header.hash))
    }

    /// `eth_getLogs` over `filter`.
    pub async fn logs(&self, filter: &Filter) -> Result<Vec<Log>, RpcFailure> {
        self.call("eth_getLogs", |p| {
            let f = filter.clone();
            async move { p.get_logs(&f).await }
        })
        .await
    }

    /// `eth_getTransactionReceipt`; `None` when the node knows no such mined transaction.
    pub async fn receipt(&self, tx: B256) -> Result<Option<TransactionReceipt>, RpcFailure> {
        self.call("eth_getTransactionReceipt", |p| async move {
            p.get_transaction_receipt(tx).await
        })
        .await
    }

    /// The runtime code at `address` at the latest block (empty: no contract there).
    pub async fn code(
        &self,
        address: alloy::primitives::Address,
    ) -> Result<alloy::primitives::Bytes, RpcFailure> {
        self.call(
            "eth_getCode",
            |p| async move { p.get_code_at(address).await },
        )
        .await
    }

    /// `eth_call` of `data` to `to` at the latest block: the returned bytes.
    pub async fn view(
        &self,
        to: alloy::primitives::Address,
        data: Vec<u8>,
    ) -> Result<alloy::primitives::Bytes, RpcFailure> {
        self.call("eth_call", |p| {
            let tx = alloy::rpc::types::TransactionRequest::default()
                .to(to)
                .input(data.clone().into());
            async move { p.call(tx).await }
        })
        .await
    }

    /// `eth_call` of `data` to `to` at block `block` (the latest when `None`), telling a
    /// revert apart from a failure: `Ok(Ok(bytes))` returned, `Ok(Err(data))` reverted with
    /// `data` (empty when the node gave none), `Err` no node answered (or one refused the
    /// request for another reason).
    pub async fn view_at(
        &self,
        to: alloy::primitives::Address,
        data: Vec<u8>,
        block: Option<u64>,
    ) -> Result<Result<alloy::primitives::Bytes, alloy::primitives::Bytes>, RpcFailure> {
        self.call("eth_call", |p| {
            let tx = alloy::rpc::types::TransactionRequest::default()
                .to(to)
                .input(data.clone().into());
            async move {
                let call = p.call(tx);
                let call = match block {
                    Some(n) => call.block(alloy::eips::BlockId::number(n)),
                    None => call,
                };
                match call.await {
                    Ok(out) => Ok(Ok(out)),
                    Err(RpcError::ErrorResp(e)) if e.message.contains("revert") => {
                        Ok(Err(e.as_revert_data().unwrap_or_default()))
                    }
                    Err(e) => Err(e),
                }
            }
        })
        .await
    }

    /// `eth_getBalance` of `address` (wei) at block `block` (the latest when `None`).
    pub async fn balance_at(
        &self,
        address: alloy::primitives::Address,
        block: Option<u64>,
    ) -> Result<alloy::primitives::U256, RpcFailure> {
        self.call("eth_getBalance", |p| async move {
            let call = p.get_balance(address);
            match block {
                Some(n) => call.block_id(alloy::eips::BlockId::number(n)).await,
                None => call.await,
            }
        })
        .await
    }

    /// The runtime code at `address` at block `block` (the latest when `None`).
    pub async fn code_at(
        &self,
        address: alloy::primitives::Address,
        block: Option<u64>,
    ) -> Result<alloy::primitives::Bytes, RpcFailure> {
        self.call("eth_getCode", |p| async move {
            let call = p.get_code_at(address);
            match block {
                Some(n) => call.block_id(alloy::eips::BlockId::number(n)).await,
                None => call.await,
            }
        })
        .await
    }

    /// A provider for `eth_call`s (the current node).
    pub fn provider(&self) -> RootProvider {
        let i = self.current.load(Ordering::Relaxed) % self.nodes.len();
        self.nodes[i].2.clone()
    }
}

/// The first line of an error, bounded.
fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    line.chars().take(200).collect()
}
