//! The self-hosted allowance rail: `exact` + Permit2, verified and settled in-process against an
//! EVM JSON-RPC with the `x402-chain-eip155` facilitator (payer signature, amount, recipient,
//! time window, Permit2 allowance, balance and an `eth_call` simulation of the x402 Permit2
//! proxy before; the proxy's `settle` and a receipt after).
//!
//! The settlement transaction is the crate's (the proxy's `settle` call it builds), sent by
//! this module's [`CallSender`]: one send at a time, its nonce the chain's pending nonce of the
//! settler (so a failed send leaves no gap and nothing to reset), its hash handed to the gate
//! before the receipt is awaited, and a receipt not seen within the rail's
//! `receipt_wait_seconds` answered `settlement_pending` with that hash, resumed later by reading
//! the receipt (library/PAYMENTS.md, "Settlement pending").
//!
//! The settler key is read from an environment variable named in the configuration, never from
//! the file, and is never logged.

use crate::error::Error;
use std::sync::Arc;
use std::time::Duration;

use alloy_network::TransactionBuilder;
use alloy_primitives::{Address, TxHash};
use alloy_provider::Provider;
use alloy_rpc_types_eth::{BlockId, TransactionReceipt, TransactionRequest};
use serde_json::{json, Value};
use x402_chain_eip155::chain::config::{
    Eip155ChainConfig, Eip155ChainConfigInner, EvmPrivateKey, RpcConfig,
};
use x402_chain_eip155::chain::{
    Eip155ChainProvider, Eip155ChainReference, Eip155MetaTransactionProvider,
    Eip155SignerAddresses, InnerProvider, MetaTransaction, MetaTransactionSendError,
};
use x402_chain_eip155::v2_eip155_exact::{
    V2Eip155ExactFacilitator, V2Eip155ExactFacilitatorConfig,
};
use x402_types::chain::{ChainId, ChainProviderOps, FromConfig};
use x402_types::config::LiteralOrEnv;
use x402_types::proto::{self, AsPaymentProblem};
use x402_types::scheme::X402SchemeFacilitator;

use super::broadcast::OnBroadcast;
use super::wire::{Payment, SettleResponse, VerifyResponse};

/// Seconds the crate's own sender would wait for a receipt (it is not used to settle: see
/// [`CallSender`]).
const CRATE_RECEIPT_TIMEOUT_SECS: u64 = 30;

/// How often a settlement's receipt is asked for while it is awaited.
const RECEIPT_POLL: Duration = Duration::from_millis(250);

/// An in-process facilitator for one EVM chain.
pub struct LocalFacilitator {
    fac: V2Eip155ExactFacilitator<Arc<Eip155ChainProvider>>,
    provider: Arc<Eip155ChainProvider>,
    settler: Address,
    /// Held while a settlement transaction is prepared and sent: one send at a time, so each
    /// takes the chain's pending nonce after the previous one is in the pool.
    sends: tokio::sync::Mutex<()>,
    receipt_wait: Duration,
    network: String,
    rpc_url: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for LocalFacilitator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFacilitator")
            .field("network", &self.network)
            .field("rpc_url", &self.rpc_url)
            .finish()
    }
}

impl LocalFacilitator {
    /// Connect to `rpc_url` for chain `chain_id`, settling with `settler_key` (hex) and
    /// waiting `receipt_wait` for a settlement's receipt before answering it pending.
    ///
    /// Fails when the chain has no Permit2 or x402 Permit2 proxy at their canonical addresses.
    pub async fn connect(
        chain_id: u64,
        rpc_url: &str,
        settler_key: &str,
        receipt_wait: Duration,
    ) -> Result<Self, Error> {
        Self::connect_to(chain_id, rpc_url, settler_key, receipt_wait)
            .await
            .map_err(Error::Rail)
    }

    async fn connect_to(
        chain_id: u64,
        rpc_url: &str,
        settler_key: &str,
        receipt_wait: Duration,
    ) -> Result<Self, String> {
        let key = settler_key
            .trim()
            .parse::<EvmPrivateKey>()
            .map_err(|_| "the settler key is not a 32-byte hex private key".to_string())?;
        let url = url::Url::parse(rpc_url).map_err(|e| format!("rpc_url {rpc_url:?}: {e}"))?;
        let config = Eip155ChainConfig {
            chain_reference: Eip155ChainReference::new(chain_id),
            inner: Eip155ChainConfigInner {
                eip1559: true,
                flashblocks: false,
                signers: vec![LiteralOrEnv::from_literal(key)],
                rpc: vec![RpcConfig {
                    http: LiteralOrEnv::from_literal(url),
                    rate_limit: None,
                }],
                receipt_timeout_secs: CRATE_RECEIPT_TIMEOUT_SECS,
            },
        };
        let provider = Arc::new(
            Eip155ChainProvider::from_config(&config)
                .await
                .map_err(|e| format!("permit2 rail on eip155:{chain_id} via {rpc_url}: {e}"))?,
        );
        let settler = Eip155SignerAddresses::signer_addresses(&provider)
            .first()
            .copied()
            .ok_or_else(|| "the settler key gives no address".to_string())?;
        let fac = V2Eip155ExactFacilitator::new(provider.clone(), Self::config());
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("rpc client: {e}"))?;
        Ok(LocalFacilitator {
            fac,
            provider,
            settler,
            sends: tokio::sync::Mutex::new(()),
            receipt_wait,
            network: format!("eip155:{chain_id}"),
            rpc_url: rpc_url.to_owned(),
            http,
        })
    }

    fn config() -> V2Eip155ExactFacilitatorConfig {
        V2Eip155ExactFacilitatorConfig {
            eip2612_gas_sponsoring: false,
        }
    }

    fn request(payment: &Payment, req: &Value) -> Result<proto::VerifyRequest, Error> {
        let body = json!({
            "x402Version": payment.version,
            "paymentPayload": payment.raw,
            "paymentRequirements": req,
        });
        serde_json::value::to_raw_value(&body)
            .map(proto::VerifyRequest::from)
            .map_err(|e| Error::Rail(format!("invalid_payload: {e}")))
    }

    /// Verify a payment: the verdict, with the facilitator's reason when invalid.
    pub async fn verify(&self, payment: &Payment, req: &Value) -> Result<VerifyResponse, Error> {
        let request = Self::request(payment, req)?;
        match self.fac.verify(&request).await {
            Ok(proto::VerifyResponse(v)) => serde_json::from_value(v)
                .map_err(|e| Error::Rail(format!("local verify reply: {e}"))),
            Err(e) => {
                let p = e.as_payment_problem();
                Ok(VerifyResponse {
                    is_valid: false,
                    invalid_reason: Some(reason_of(&p.reason())),
                    invalid_message: Some(p.details().to_string()),
                    payer: Some(payment.payer.clone()),
                })
            }
        }
    }

    /// Settle a verified payment: the crate's settlement call, sent by a [`CallSender`] that
    /// hands its transaction hash to `on_sent` before awaiting the receipt. A receipt not seen
    /// within the rail's wait (or not readable) is `settlement_pending` with that hash; a
    /// transaction never sent is a failure.
    pub async fn settle(
        &self,
        payment: &Payment,
        req: &Value,
        on_sent: OnBroadcast<'_>,
    ) -> Result<SettleResponse, Error> {
        let request = Self::request(payment, req)?;
        let sender = CallSender {
            fac: self,
            on_sent,
            state: std::sync::Mutex::new(Sent::Nothing),
        };
        let fac = V2Eip155ExactFacilitator::new(&sender, Self::config());
        let result = fac.settle(&request).await;
        let state = sender.sent();
        let reply = |success: bool, reason: Option<String>, message: Option<String>, tx: String| {
            SettleResponse {
                success,
                error_reason: reason,
                error_message: message,
                transaction: tx,
                network: self.network.clone(),
                payer: Some(payment.payer.clone()),
            }
        };
        Ok(match (result, state) {
            (Ok(proto::SettleResponse(v)), _) => SettleResponse {
                success: v["success"].as_bool().unwrap_or(false),
                error_reason: None,
                error_message: None,
                transaction: v["transaction"].as_str().unwrap_or("").to_owned(),
                network: self.network.clone(),
                payer: v["payer"].as_str().map(str::to_owned),
            },
            // Broadcast, no receipt seen: the transfer may still land.
            (Err(e), Sent::Broadcast(tx)) => reply(
                false,
                Some("settlement_pending".into()),
                Some(e.as_payment_problem().details().to_string()),
                tx.to_string(),
            ),
            (Err(e), sent) => {
                let p = e.as_payment_problem();
                let tx = match sent {
                    Sent::Mined(tx) => tx.to_string(),
                    _ => String::new(),
                };
                reply(
                    false,
                    Some(reason_of(&p.reason())),
                    Some(p.details().to_string()),
                    tx,
                )
            }
        })
    }

    /// Whether the RPC answers `eth_chainId` with this rail's chain.
    pub async fn rpc_up(&self) -> bool {
        let resp = self
            .http
            .post(&self.rpc_url)
            .timeout(Duration::from_secs(3))
            .json(&json!({"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}))
            .send()
            .await;
        let Ok(resp) = resp else { return false };
        let Ok(v) = resp.json::<Value>().await else {
            return false;
        };
        let want = self.network.strip_prefix("eip155:").unwrap_or("");
        v["result"]
            .as_str()
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .is_some_and(|id| id.to_string() == want)
    }

    /// The RPC URL.
    pub fn rpc_url(&self) -> &str {
        &self.rpc_url
    }

    /// The HTTP client of its RPC.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

/// What a [`CallSender`] has done with its settlement transaction.
#[derive(Debug, Clone, Copy)]
enum Sent {
    /// Nothing was broadcast.
    Nothing,
    /// Broadcast; no receipt seen.
    Broadcast(TxHash),
    /// Broadcast and its receipt seen.
    Mined(TxHash),
}

/// The sender of one settlement: the crate's facilitator builds the Permit2 proxy's `settle`
/// call (or the EIP-3009 transfer) and hands it here. It is sent with the crate's provider
/// (its wallet and gas fillers) but with a nonce of its own: the settler's pending nonce on
/// the chain, read while [`LocalFacilitator::sends`] is held, so the crate's nonce cache is
/// never used and a failed send leaves nothing to reset. The hash goes to `on_sent` before
/// the receipt is awaited; the receipt is polled until the rail's wait runs out.
struct CallSender<'a> {
    fac: &'a LocalFacilitator,
    on_sent: OnBroadcast<'a>,
    state: std::sync::Mutex<Sent>,
}

impl CallSender<'_> {
    fn sent(&self) -> Sent {
        match self.state.lock() {
            Ok(s) => *s,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn set(&self, to: Sent) {
        match self.state.lock() {
            Ok(mut s) => *s = to,
            Err(poisoned) => *poisoned.into_inner() = to,
        }
    }

    async fn send(
        &self,
        tx: MetaTransaction,
    ) -> Result<TransactionReceipt, MetaTransactionSendError> {
        let inner = self.fac.provider.inner();
        let from = tx.from.unwrap_or(self.fac.settler);
        let hash = {
            let _turn = self.fac.sends.lock().await;
            let nonce = inner.get_transaction_count(from).pending().await?;
            let mut txr = TransactionRequest::default()
                .with_to(tx.to)
                .with_from(from)
                .with_input(tx.calldata)
                .with_nonce(nonce);
            let gas = inner
                .estimate_gas(txr.clone())
                .block(BlockId::pending())
                .await?;
            txr.set_gas_limit(gas);
            *inner.send_transaction(txr).await?.tx_hash()
        };
        self.set(Sent::Broadcast(hash));
        (self.on_sent)(hash.to_string()).await;
        let deadline = tokio::time::Instant::now() + self.fac.receipt_wait;
        loop {
            // A failed read is not a failed settlement: the transfer is broadcast.
            if let Ok(Some(receipt)) = inner.get_transaction_receipt(hash).await {
                self.set(Sent::Mined(hash));
                return Ok(receipt);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(MetaTransactionSendError::Custom(format!(
                    "settlement_pending: no receipt for {hash} within {} s",
                    self.fac.receipt_wait.as_secs_f64()
                )));
            }
            tokio::time::sleep(RECEIPT_POLL).await;
        }
    }
}

impl Eip155MetaTransactionProvider for &CallSender<'_> {
    type Error = MetaTransactionSendError;
    type Inner = InnerProvider;

    fn inner(&self) -> &InnerProvider {
        self.fac.provider.inner()
    }

    fn chain(&self) -> &Eip155ChainReference {
        self.fac.provider.chain()
    }

    fn send_transaction(
        &self,
        tx: MetaTransaction,
    ) -> impl std::future::Future<Output = Result<TransactionReceipt, Self::Error>> + Send {
        self.send(tx)
    }
}

impl ChainProviderOps for &CallSender<'_> {
    fn signer_addresses(&self) -> Vec<String> {
        ChainProviderOps::signer_addresses(&*self.fac.provider)
    }

    fn chain_id(&self) -> ChainId {
        ChainProviderOps::chain_id(&*self.fac.provider)
    }
}

fn reason_of<T: serde::Serialize>(reason: &T) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unexpected_error".into())
}
