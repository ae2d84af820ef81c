//! Each action's transactions and preconditions. The calldata is computed from the caller's
//! arguments and the configured addresses alone; the chain is read (at one block, through
//! [`Reader`]) only for the preconditions and an approve's `skip_if`. Where a value the
//! calldata needs can only come from the chain (a ticket's price or token the caller did not
//! state), a chain that does not answer is [`PrepareError::NeedsChain`], never a guess.

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::{SolCall, SolError};

use super::super::registry::{address_text, IToolRegistry};
use super::super::ChainConfig;
use super::read::{Call, Reader};
use super::{Action, Args, Check, Precondition, Prepared, SkipIf, Status, Target, Tx};
use crate::chain::rpc::Rpc;

alloy::sol! {
    /// ERC-20: what a prepared payment calls and reads.
    interface IErc20 {
        function approve(address spender, uint256 amount) external returns (bool);
        function transfer(address to, uint256 amount) external returns (bool);
        function allowance(address owner, address spender) external view returns (uint256);
        function balanceOf(address account) external view returns (uint256);
    }

    /// ERC-8257: the creator's changes to a tool, and why they revert.
    interface IToolRegistryOwner {
        function updateToolMetadata(uint256 toolId, string newURI, bytes32 newHash) external;
        function setAccessPredicate(uint256 toolId, address newPredicate) external;
        function deregisterTool(uint256 toolId) external;
        error ToolNotFound(uint256 toolId);
        error ToolIsDeregistered(uint256 toolId);
    }

    /// contracts/TicketCopies.sol: buying, giving and reading copies.
    interface ITicketCopies {
        function buy(uint256 id, uint256 amount) external;
        function games(uint256 id) external view returns (uint256 price, bool open, bool listed);
        function token() external view returns (address);
        function balanceOf(address account, uint256 id) external view returns (uint256);
        function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data) external;
    }

    /// ERC-8004 validation registry (contracts/ValidationRegistry.sol).
    interface IValidationRegistry {
        function validationRequest(address validatorAddress, uint256 agentId, string requestURI, bytes32 requestHash) external;
        function validationResponse(bytes32 requestHash, uint8 response, string responseURI, bytes32 responseHash, string tag) external;
        function getValidationStatus(bytes32 requestHash) external view returns (address validatorAddress, uint256 agentId, uint8 response, bytes32 responseHash, string tag, uint256 lastUpdate);
        function getIdentityRegistry() external view returns (address identityRegistry);
        error RequestNotFound(bytes32 requestHash);
    }

    /// ERC-721, as an ERC-8004 identity registry is read.
    interface IIdentity {
        function ownerOf(uint256 tokenId) external view returns (address);
        function getApproved(uint256 tokenId) external view returns (address);
        function isApprovedForAll(address owner, address operator) external view returns (bool);
    }
}

/// Why a ticket's price (and so the approve's amount) is unknown: it is the only case where it
/// is (with the ticket contract set, a price the chain cannot give is a 503 instead).
const UNKNOWN_PRICE: &str =
    "no price was stated and the ticket contract that states it is not set here (state ?price)";

/// What an action is prepared against: the chain and addresses configured here, and the RPC
/// its preconditions are read through.
pub struct Env<'a> {
    /// `[chain]` (none: no chain; every address unset, nothing read).
    pub chain: Option<&'a ChainConfig>,
    /// `[munus] token`: the operator's payment token.
    pub quest_token: Option<Address>,
    /// The RPC (none without a chain).
    pub rpc: Option<&'a Rpc>,
}

/// A value the calldata needs could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsChain {
    /// The arguments that would stand in for the read (`price`, `token`).
    pub missing: Vec<&'static str>,
    /// Why.
    pub detail: String,
    /// The chain did not answer (else it answered something unusable).
    pub unreachable: bool,
}

/// Why an action could not be prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepareError {
    /// A value of the calldata must come from the chain, and it did not.
    NeedsChain(NeedsChain),
    /// The arguments together are impossible (`price x amount` overflows).
    Invalid {
        /// The argument named.
        name: &'static str,
        /// Why.
        detail: String,
    },
}

fn hex0x(data: &[u8]) -> String {
    alloy::hex::encode_prefixed(data)
}

fn pre(
    what: &str,
    status: Status,
    value: Option<String>,
    detail: impl Into<String>,
) -> Precondition {
    Precondition {
        what: what.to_owned(),
        status,
        value,
        detail: detail.into(),
    }
}

/// One preparation in progress.
struct Build<'e, 'a> {
    env: &'e Env<'a>,
    r: Reader<'a>,
    from: Address,
    txs: Vec<Tx>,
    pre: Vec<Precondition>,
}

impl<'e, 'a> Build<'e, 'a> {
    fn chain_id(&self) -> Option<u64> {
        self.env.chain.map(|c| c.chain_id)
    }

    /// Why something was not read, for an `assumed` precondition.
    fn unread(&self, how: &str) -> String {
        let why = match (self.env.chain, self.r.at().error) {
            (None, _) => "this instance follows no chain ([chain] is not configured)".to_owned(),
            (Some(_), Some(e)) => format!("the chain did not answer ({e})"),
            (Some(_), None) => "the chain did not answer".to_owned(),
        };
        format!("not read: {why}. Assumed, never zero or false: check it yourself before signing ({how})")
    }

    fn assumed(&mut self, what: &str, value: Option<String>, how: &str) {
        let d = self.unread(how);
        self.pre.push(pre(what, Status::Assumed, value, d));
    }

    /// The address of `target` as configured here.
    fn address(&self, target: Target, token_arg: Option<Address>) -> Option<Address> {
        let c = self.env.chain;
        let configured = |f: fn(&ChainConfig) -> Option<&super::super::ContractConfig>| {
            c.and_then(f)
                .and_then(|cc| super::super::registry::parse_address(&cc.address).ok())
        };
        match target {
            Target::Registry => configured(|c| c.registry.as_ref()),
            Target::Tickets => configured(|c| c.tickets.as_ref()),
            Target::Validation => configured(|c| c.validation.as_ref()),
            Target::QuestToken => token_arg.or(self.env.quest_token),
        }
    }

    /// The contract's address and code preconditions; `true` when its code is there.
    async fn contract(&mut self, target: Target, address: Option<Address>) -> bool {
        let what = format!("{} address", target.name());
        let Some(a) = address else {
            self.pre.push(pre(
                &what,
                Status::Unset,
                None,
                format!(
                    "not set here ({}): the contract is not deployed for this instance, so `to` is \
                     null; the calldata is exact, and the transaction can be sent once you know \
                     the address",
                    target.config()
                ),
            ));
            return false;
        };
        self.pre.push(pre(
            &what,
            Status::Ok,
            Some(address_text(&a)),
            format!("configured here ({})", target.config()),
        ));
        let what = format!("{} code", target.name());
        match self.r.code(a).await {
            Some(code) if code.is_empty() => {
                let chain = self
                    .env
                    .chain
                    .map(|c| c.name.as_str())
                    .unwrap_or("the chain");
                self.pre.push(pre(
                    &what,
                    Status::Fails,
                    Some("0".into()),
                    format!("no contract code at {} on {chain}", address_text(&a)),
                ));
                false
            }
            Some(code) => {
                self.pre.push(pre(
                    &what,
                    Status::Ok,
                    Some(code.len().to_string()),
                    "contract code is deployed at the address (bytes of runtime code)",
                ));
                true
            }
            None => {
                self.assumed(&what, None, "eth_getCode of the address is not empty");
                false
            }
        }
    }

    /// The signer's native balance, for gas.
    async fn gas(&mut self) {
        let what = "gas balance of from";
        match self.r.balance(self.from).await {
            Some(b) if b.is_zero() => self.pre.push(pre(
                what,
                Status::Fails,
                Some("0".into()),
                "from holds no native currency to pay gas",
            )),
            Some(b) => self.pre.push(pre(
                what,
                Status::Ok,
                Some(b.to_string()),
                "from holds native currency for gas (wei); the fee itself is your wallet's estimate",
            )),
            None => self.assumed(what, None, "eth_getBalance(from) covers the gas"),
        }
    }

    /// `balanceOf(from)` on `token` against `need`.
    async fn token_balance(&mut self, token: Option<Address>, need: Option<U256>) {
        let what = "token balance of from";
        let Some(t) = token else {
            self.pre.push(pre(
                what,
                Status::Unset,
                None,
                "the token is not known here, so its balance was not read",
            ));
            return;
        };
        let Some(need) = need else {
            // The amount is unknown here (no price stated, and the contract that states it is
            // not set): a balance cannot be judged against it, so it is not read.
            self.pre.push(pre(
                what,
                Status::Unset,
                None,
                format!(
                    "the amount this pays is unknown: {UNKNOWN_PRICE}; balanceOf(from) on {} was \
                     not read against it",
                    address_text(&t)
                ),
            ));
            return;
        };
        match self
            .r
            .view(t, &IErc20::balanceOfCall { account: self.from })
            .await
        {
            Some(Some(b)) => {
                let ok = b >= need;
                self.pre.push(pre(
                    what,
                    if ok { Status::Ok } else { Status::Fails },
                    Some(b.to_string()),
                    if ok {
                        format!("covers the {need} this pays (base units)")
                    } else {
                        format!("below the {need} this pays (base units)")
                    },
                ))
            }
            Some(None) => self.pre.push(pre(
                what,
                Status::Fails,
                None,
                format!(
                    "balanceOf(from) on {} did not answer a uint256",
                    address_text(&t)
                ),
            )),
            None => self.assumed(
                what,
                None,
                &format!("balanceOf(from) on {} is at least {need}", address_text(&t)),
            ),
        }
    }

    fn push_tx(
        &mut self,
        to: Option<Address>,
        data: Option<Vec<u8>>,
        function: &'static str,
        description: String,
        skip_if: Option<SkipIf>,
    ) {
        self.txs.push(Tx {
            step: self.txs.len() + 1,
            from: address_text(&self.from),
            to: to.map(|a| address_text(&a)),
            data: data.map(|d| hex0x(&d)),
            value: "0",
            chain_id: self.chain_id(),
            function,
            description,
            skip_if,
        });
    }

    /// The tool's state and creator (`getToolConfig`), for a creator's change.
    async fn tool(&mut self, registry: Option<Address>, deployed: bool, tool_id: U256) {
        let (state, creator) = ("tool state", "tool creator is from");
        let Some(reg) = registry.filter(|_| deployed) else {
            let status = if registry.is_none() {
                Status::Unset
            } else {
                Status::Fails
            };
            let detail = if registry.is_none() {
                "the registry address is not set here, so the tool was not read"
            } else {
                "the registry is not there (see its code), so the tool was not read"
            };
            if self.r.at().reachable == Some(false) && registry.is_some() {
                self.assumed(state, None, "getToolConfig(toolId) returns the tool");
                self.assumed(creator, None, "getToolConfig(toolId).creator is from");
            } else {
                self.pre.push(pre(state, status, None, detail));
                self.pre.push(pre(creator, status, None, detail));
            }
            return;
        };
        let call = IToolRegistry::getToolConfigCall { toolId: tool_id };
        match self.r.call(reg, call.abi_encode()).await {
            None => {
                self.assumed(state, None, "getToolConfig(toolId) returns the tool");
                self.assumed(creator, None, "getToolConfig(toolId).creator is from");
            }
            Some(Call::Returned(out)) => {
                match IToolRegistry::getToolConfigCall::abi_decode_returns(&out) {
                    Ok(cfg) => {
                        self.pre.push(pre(
                            state,
                            Status::Ok,
                            Some("registered".into()),
                            format!("tool {tool_id} is registered"),
                        ));
                        let c = address_text(&cfg.creator);
                        if cfg.creator == self.from {
                            self.pre.push(pre(
                                creator,
                                Status::Ok,
                                Some(c),
                                "from created the tool",
                            ));
                        } else {
                            self.pre.push(pre(
                                creator,
                                Status::Fails,
                                Some(c.clone()),
                                format!(
                                    "only the creator ({c}) can change tool {tool_id}; from \
                                     would revert NotToolCreator"
                                ),
                            ));
                        }
                    }
                    Err(_) => {
                        let d = "getToolConfig(toolId) did not answer a ToolConfig";
                        self.pre.push(pre(state, Status::Fails, None, d));
                        self.pre.push(pre(creator, Status::Fails, None, d));
                    }
                }
            }
            Some(Call::Reverted(data)) => {
                let (value, detail) =
                    if IToolRegistryOwner::ToolIsDeregistered::abi_decode(&data).is_ok() {
                        (
                            "deregistered",
                            format!("tool {tool_id} was deregistered (irreversible)"),
                        )
                    } else if IToolRegistryOwner::ToolNotFound::abi_decode(&data).is_ok() {
                        ("not-registered", format!("there is no tool {tool_id}"))
                    } else {
                        (
                            "reverted",
                            format!("getToolConfig({tool_id}) reverted ({})", hex0x(&data)),
                        )
                    };
                self.pre
                    .push(pre(state, Status::Fails, Some(value.into()), detail));
                self.pre.push(pre(
                    creator,
                    Status::Fails,
                    None,
                    "no live tool, so no creator can change it",
                ));
            }
        }
    }
}

/// Prepare `action` with `args` against `env`: its transactions in signing order and its
/// preconditions, read at one block.
pub async fn prepare(
    env: &Env<'_>,
    action: &'static Action,
    args: &Args,
) -> Result<Prepared, PrepareError> {
    let from = args.address("from").unwrap_or(Address::ZERO);
    let rpc = env.chain.and(env.rpc);
    let mut b = Build {
        env,
        r: Reader::new(rpc).await,
        from,
        txs: Vec::new(),
        pre: Vec::new(),
    };
    if env.chain.is_none() {
        b.pre.push(pre(
            "chain",
            Status::Unset,
            None,
            "this instance follows no chain ([chain] is not configured): chain_id and every \
             contract address are null, and nothing was read",
        ));
    }
    let zero = U256::ZERO;
    let uint = |n: &str| args.uint(n).unwrap_or(zero);
    let b32 = |n: &str| args.bytes32(n).unwrap_or_default();
    let text = |n: &str| args.text(n).unwrap_or_default().to_owned();
    let addr = |n: &str| args.address(n).unwrap_or(Address::ZERO);
    let target = b.address(action.target, args.address("token"));
    match action.name {
        "register_tool" => {
            let data = IToolRegistry::registerToolCall {
                metadataURI: text("metadata_uri"),
                manifestHash: b32("manifest_hash"),
                accessPredicate: addr("access_predicate"),
            }
            .abi_encode();
            b.contract(action.target, target).await;
            b.gas().await;
            b.push_tx(
                target,
                Some(data),
                action.function,
                "Register the tool: the registry assigns the next id to from as creator.".into(),
                None,
            );
        }
        "update_tool_metadata" | "set_access_predicate" | "deregister_tool" => {
            let id = uint("tool_id");
            let (data, what) = match action.name {
                "update_tool_metadata" => (
                    IToolRegistryOwner::updateToolMetadataCall {
                        toolId: id,
                        newURI: text("metadata_uri"),
                        newHash: b32("manifest_hash"),
                    }
                    .abi_encode(),
                    format!("Point tool {id} at the new manifest and commitment."),
                ),
                "set_access_predicate" => (
                    IToolRegistryOwner::setAccessPredicateCall {
                        toolId: id,
                        newPredicate: addr("access_predicate"),
                    }
                    .abi_encode(),
                    format!("Set tool {id}'s access predicate."),
                ),
                _ => (
                    IToolRegistryOwner::deregisterToolCall { toolId: id }.abi_encode(),
                    format!("Deregister tool {id}, irreversibly."),
                ),
            };
            let deployed = b.contract(action.target, target).await;
            b.tool(target, deployed, id).await;
            b.gas().await;
            b.push_tx(target, Some(data), action.function, what, None);
        }
        "buy_ticket" => buy_ticket(&mut b, action, args, target).await?,
        "transfer_ticket" => {
            let (to, game, amount) = (addr("to"), uint("game"), uint("amount"));
            let data = ITicketCopies::safeTransferFromCall {
                from,
                to,
                id: game,
                value: amount,
                data: Bytes::new(),
            }
            .abi_encode();
            let deployed = b.contract(action.target, target).await;
            let what = "copies held by from";
            match target.filter(|_| deployed) {
                None if target.is_none() => b.pre.push(pre(
                    what,
                    Status::Unset,
                    None,
                    "the ticket contract is not set here",
                )),
                None if b.r.at().reachable == Some(false) => {
                    b.assumed(what, None, "balanceOf(from, game) is at least amount")
                }
                None => b.pre.push(pre(
                    what,
                    Status::Fails,
                    None,
                    "the ticket contract is not there",
                )),
                Some(t) => match b
                    .r
                    .view(
                        t,
                        &ITicketCopies::balanceOfCall {
                            account: from,
                            id: game,
                        },
                    )
                    .await
                {
                    Some(Some(held)) => {
                        let ok = held >= amount;
                        b.pre.push(pre(
                            what,
                            if ok { Status::Ok } else { Status::Fails },
                            Some(held.to_string()),
                            if ok { format!("from holds at least {amount} of game {game}") } else { format!("from holds fewer than {amount} of game {game}: the transfer would revert") },
                        ));
                    }
                    Some(None) => b.pre.push(pre(
                        what,
                        Status::Fails,
                        None,
                        "balanceOf(from, game) did not answer a uint256",
                    )),
                    None => b.assumed(what, None, "balanceOf(from, game) is at least amount"),
                },
            }
            b.gas().await;
            b.push_tx(
                target,
                Some(data),
                action.function,
                format!(
                    "Give {amount} copies of game {game} to {}.",
                    address_text(&to)
                ),
                None,
            );
        }
        "validation_request" => {
            let (validator, agent, hash) =
                (addr("validator"), uint("agent_id"), b32("request_hash"));
            let data = IValidationRegistry::validationRequestCall {
                validatorAddress: validator,
                agentId: agent,
                requestURI: text("request_uri"),
                requestHash: hash,
            }
            .abi_encode();
            let deployed = b.contract(action.target, target).await;
            validation_request_checks(&mut b, target, deployed, agent, hash).await;
            b.gas().await;
            b.push_tx(
                target,
                Some(data),
                action.function,
                format!(
                    "Ask {} to validate agent {agent} against requestHash.",
                    address_text(&validator)
                ),
                None,
            );
        }
        "validation_response" => {
            let hash = b32("request_hash");
            let response = u8::try_from(uint("response")).unwrap_or(u8::MAX);
            let data = IValidationRegistry::validationResponseCall {
                requestHash: hash,
                response,
                responseURI: text("response_uri"),
                responseHash: b32("response_hash"),
                tag: text("tag"),
            }
            .abi_encode();
            let deployed = b.contract(action.target, target).await;
            validation_response_checks(&mut b, target, deployed, hash).await;
            b.gas().await;
            b.push_tx(
                target,
                Some(data),
                action.function,
                format!("Answer the request with response {response}."),
                None,
            );
        }
        "quest_payment" => {
            let (to, amount) = (addr("to"), uint("amount"));
            let data = IErc20::transferCall { to, amount }.abi_encode();
            let deployed = b.contract(action.target, target).await;
            if deployed || target.is_none() || b.r.at().reachable != Some(true) {
                b.token_balance(target, Some(amount)).await;
            } else {
                b.pre.push(pre(
                    "token balance of from",
                    Status::Fails,
                    None,
                    "the token is not there",
                ));
            }
            b.gas().await;
            b.push_tx(
                target,
                Some(data),
                action.function,
                format!(
                    "Transfer {amount} base units of the token to {}: the quest's payment, from the \
                     operator's own wallet. Record it afterwards: conduct quest pay --quest … --to … \
                     --amount {amount} --token … --tx <hash>.",
                    address_text(&to)
                ),
                None,
            );
        }
        other => {
            return Err(PrepareError::Invalid {
                name: "action",
                detail: format!("{other:?} has no builder"),
            })
        }
    }
    Ok(Prepared {
        action: action.name,
        arguments: args.shown(),
        txs: b.txs,
        preconditions: b.pre,
        read_at: b.r.at(),
    })
}

/// `buy_ticket`: approve (skip_if), then buy.
async fn buy_ticket(
    b: &mut Build<'_, '_>,
    action: &'static Action,
    args: &Args,
    tickets: Option<Address>,
) -> Result<(), PrepareError> {
    let from = b.from;
    let game = args.uint("game").unwrap_or_default();
    let amount = args.uint("amount").unwrap_or(U256::from(1));
    let (price_arg, token_arg) = (args.uint("price"), args.address("token"));
    let deployed = b.contract(Target::Tickets, tickets).await;
    // What the contract says (only where the contract is there to ask).
    let (mut token_read, mut game_read) = (None, None);
    if let Some(t) = tickets.filter(|_| deployed) {
        token_read = b.r.view(t, &ITicketCopies::tokenCall {}).await;
        game_read = b.r.view(t, &ITicketCopies::gamesCall { id: game }).await;
    }
    let price = price_arg.or_else(|| game_read.clone().flatten().map(|g| g.price));
    let token = token_arg.or(token_read.flatten());
    if tickets.is_some() {
        let mut missing = Vec::new();
        if price.is_none() {
            missing.push("price");
        }
        if token.is_none() {
            missing.push("token");
        }
        if !missing.is_empty() {
            let unreachable = b.r.at().reachable != Some(true);
            let why = if unreachable {
                b.unread("")
                    .split(". Assumed")
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            } else {
                "the ticket contract did not answer token() and games(game)".to_owned()
            };
            return Err(PrepareError::NeedsChain(NeedsChain {
                missing: missing.clone(),
                detail: format!(
                    "the approve's amount and token come from the ticket contract, and it was \
                     {why}; state {} yourself (the price per copy you accept and the ERC-20 it \
                     is paid in) and the transactions are exact without the chain",
                    missing.join(" and ")
                ),
                unreachable,
            }));
        }
    }
    let cost = match price.map(|p| p.checked_mul(amount)) {
        Some(Some(c)) => Some(c),
        Some(None) => {
            return Err(PrepareError::Invalid {
                name: "amount",
                detail: "price x amount is larger than 2^256 - 1".into(),
            })
        }
        None => None,
    };

    // The token.
    let what = "payment token";
    match (token_arg, token_read) {
        (_, None) if tickets.is_none() => b.pre.push(pre(
            what,
            Status::Unset,
            token_arg.map(|t| address_text(&t)),
            "the ticket contract is not set here, so its token() was not read",
        )),
        (Some(arg), Some(Some(t))) if arg != t => b.pre.push(pre(
            what,
            Status::Fails,
            Some(address_text(&t)),
            format!(
                "the contract is paid in {}, not the token stated",
                address_text(&t)
            ),
        )),
        (_, Some(Some(t))) => b.pre.push(pre(
            what,
            Status::Ok,
            Some(address_text(&t)),
            "the contract's token(): the approve is on it",
        )),
        (_, Some(None)) => b.pre.push(pre(
            what,
            Status::Fails,
            None,
            "token() did not answer an address",
        )),
        (_, None) if !deployed && b.r.at().reachable == Some(true) => b.pre.push(pre(
            what,
            Status::Fails,
            token_arg.map(|t| address_text(&t)),
            "the ticket contract is not there",
        )),
        (_, None) => b.assumed(
            what,
            token_arg.map(|t| address_text(&t)),
            "token() of the ticket contract is the token stated",
        ),
    }
    // The game and its price.
    let (gw, pw) = ("game open", "price per copy");
    match game_read {
        _ if tickets.is_none() => {
            b.pre.push(pre(
                gw,
                Status::Unset,
                None,
                "the ticket contract is not set here",
            ));
            b.pre.push(pre(
                pw,
                Status::Unset,
                price_arg.map(|p| p.to_string()),
                match price_arg {
                    Some(_) => "the ticket contract is not set here, so its price was not read: \
                                the approve is for the price stated x amount"
                        .to_owned(),
                    None => format!(
                        "the price per copy is unknown: {UNKNOWN_PRICE}, so the approve's amount \
                         (skip_if.amount) is null"
                    ),
                },
            ));
        }
        Some(Some(g)) => {
            let (status, detail) = match (g.listed, g.open) {
                (true, true) => (Status::Ok, format!("game {game} is listed and open")),
                (true, false) => (
                    Status::Fails,
                    format!("game {game} is closed: buy would revert GameNotOpen"),
                ),
                (false, _) => (
                    Status::Fails,
                    format!("game {game} is not listed: buy would revert GameNotOpen"),
                ),
            };
            b.pre.push(pre(
                gw,
                status,
                Some(if g.open { "open" } else { "closed" }.into()),
                detail,
            ));
            match price_arg {
                Some(p) if p != g.price => b.pre.push(pre(
                    pw,
                    Status::Fails,
                    Some(g.price.to_string()),
                    format!("the contract's price is {} now, not the {p} stated: buy pulls price x amount at the contract's price", g.price),
                )),
                Some(_) => b.pre.push(pre(pw, Status::Ok, Some(g.price.to_string()), "the contract's price is the price stated")),
                None => b.pre.push(pre(pw, Status::Ok, Some(g.price.to_string()), "read from games(game) now: the approve is for price x amount; the service sets no price")),
            }
        }
        Some(None) => {
            b.pre
                .push(pre(gw, Status::Fails, None, "games(game) did not answer"));
            b.pre
                .push(pre(pw, Status::Fails, None, "games(game) did not answer"));
        }
        None if !deployed && b.r.at().reachable == Some(true) => {
            b.pre.push(pre(
                gw,
                Status::Fails,
                None,
                "the ticket contract is not there",
            ));
            b.pre.push(pre(
                pw,
                Status::Fails,
                price_arg.map(|p| p.to_string()),
                "the ticket contract is not there",
            ));
        }
        None => {
            b.assumed(gw, None, "games(game) says listed and open");
            b.assumed(
                pw,
                price_arg.map(|p| p.to_string()),
                "games(game).price is the price stated",
            );
        }
    }
    b.token_balance(token, cost).await;

    // The allowance, which decides skip_if. (A cost is unknown only while the ticket contract
    // is unset, so every allowance read below has one.)
    let cost_text = match cost {
        Some(c) => c.to_string(),
        None => "price x amount".to_owned(),
    };
    let check_data = tickets.map(|s| {
        IErc20::allowanceCall {
            owner: from,
            spender: s,
        }
        .abi_encode()
    });
    let allowance = match (token, tickets, &check_data) {
        (Some(t), Some(_), Some(d)) if deployed || b.r.at().reachable != Some(true) => {
            match b.r.call(t, d.clone()).await {
                Some(Call::Returned(out)) => {
                    Some(IErc20::allowanceCall::abi_decode_returns(&out).ok())
                }
                Some(Call::Reverted(_)) => Some(None),
                None => None,
            }
        }
        _ => None,
    };
    let holds = match (&allowance, cost) {
        (Some(Some(a)), Some(c)) => Some(*a >= c),
        _ => None,
    };
    let what = "allowance of from to the ticket contract";
    match (&allowance, holds) {
        (Some(Some(a)), Some(true)) => b.pre.push(pre(
            what,
            Status::Ok,
            Some(a.to_string()),
            format!("already covers the {cost_text} buy pulls: transaction 1 (approve) can be dropped (skip_if holds)"),
        )),
        (Some(Some(a)), _) => b.pre.push(pre(
            what,
            Status::Ok,
            Some(a.to_string()),
            format!("below the {cost_text} buy pulls: transaction 1 (approve) sets it, so sign it first"),
        )),
        (Some(None), _) => b.pre.push(pre(what, Status::Fails, None, "allowance(from, spender) did not answer a uint256")),
        (None, _) if tickets.is_none() => b.pre.push(pre(what, Status::Unset, None, "the spender (the ticket contract) is not set here")),
        (None, _) => b.assumed(what, None, "allowance(from, ticket contract) on the token; sign the approve unless it covers the cost"),
    }
    b.gas().await;

    let approve = tickets.zip(cost).map(|(s, c)| {
        IErc20::approveCall {
            spender: s,
            amount: c,
        }
        .abi_encode()
    });
    let skip = SkipIf {
        condition: "allowance(owner, spender) >= amount",
        token: token.map(|t| address_text(&t)),
        owner: address_text(&from),
        spender: tickets.map(|t| address_text(&t)),
        amount: cost.map(|c| c.to_string()),
        check: Check {
            to: token.map(|t| address_text(&t)),
            data: check_data.as_deref().map(hex0x),
            returns: "uint256",
        },
        allowance: allowance.flatten().map(|a| a.to_string()),
        holds,
    };
    let approve_text = match (approve.is_some(), cost) {
        (true, _) => format!(
            "Approve the ticket contract to pull exactly {cost_text} base units of the token \
             (price x amount). Drop it when skip_if holds."
        ),
        (false, Some(c)) => format!(
            "Approve the ticket contract to pull exactly {c} base units of the token (price x \
             amount). Drop it when skip_if holds. Its calldata names the ticket contract as \
             spender, whose address is not set here, so data is null until it is."
        ),
        (false, None) => format!(
            "Approve the ticket contract to pull price x amount base units of the token. Drop \
             it when skip_if holds. Its calldata names the ticket contract as spender and the \
             amount, and neither is known here, so data and skip_if.amount are null. The \
             price per copy is unknown: {UNKNOWN_PRICE}."
        ),
    };
    let unknown_note = match cost {
        Some(_) => String::new(),
        None => format!(" The price per copy is unknown: {UNKNOWN_PRICE}."),
    };
    b.push_tx(
        token,
        approve,
        "approve(address spender, uint256 amount)",
        approve_text,
        Some(skip),
    );
    b.push_tx(
        tickets,
        Some(ITicketCopies::buyCall { id: game, amount }.abi_encode()),
        action.function,
        format!("Buy {amount} copies of game {game}: pulls {cost_text} with transferFrom and mints the copies to from.{unknown_note}"),
        None,
    );
    Ok(())
}

/// `validation_request`'s reads: the hash unused, the identity registry, and from as the
/// agent's owner or operator.
async fn validation_request_checks(
    b: &mut Build<'_, '_>,
    registry: Option<Address>,
    deployed: bool,
    agent: U256,
    hash: alloy::primitives::B256,
) {
    let (hw, iw, ow) = (
        "request hash unused",
        "identity registry",
        "from is the agent's owner or operator",
    );
    let Some(reg) = registry.filter(|_| deployed) else {
        let (status, detail) = match registry {
            None => (Status::Unset, "the validation registry is not set here"),
            Some(_) if b.r.at().reachable != Some(true) => (Status::Assumed, ""),
            Some(_) => (Status::Fails, "the validation registry is not there"),
        };
        for w in [hw, iw, ow] {
            if status == Status::Assumed {
                b.assumed(w, None, "read it from the registry");
            } else {
                b.pre.push(pre(w, status, None, detail));
            }
        }
        return;
    };
    match b
        .r
        .call(
            reg,
            IValidationRegistry::getValidationStatusCall { requestHash: hash }.abi_encode(),
        )
        .await
    {
        None => b.assumed(
            hw,
            None,
            "getValidationStatus(requestHash) reverts RequestNotFound",
        ),
        Some(Call::Reverted(d)) if IValidationRegistry::RequestNotFound::abi_decode(&d).is_ok() => {
            b.pre
                .push(pre(hw, Status::Ok, None, "no request with this hash yet"))
        }
        Some(Call::Reverted(d)) => b.pre.push(pre(
            hw,
            Status::Fails,
            None,
            format!("getValidationStatus reverted ({})", hex0x(&d)),
        )),
        Some(Call::Returned(out)) => {
            let v = IValidationRegistry::getValidationStatusCall::abi_decode_returns(&out)
                .map(|s| address_text(&s.validatorAddress))
                .ok();
            b.pre.push(pre(
                hw,
                Status::Fails,
                v,
                "a request with this hash exists: validationRequest would revert RequestExists",
            ))
        }
    }
    let identity = match b
        .r
        .view(reg, &IValidationRegistry::getIdentityRegistryCall {})
        .await
    {
        None => {
            b.assumed(iw, None, "getIdentityRegistry()");
            b.assumed(ow, None, "ownerOf(agentId), getApproved(agentId) or isApprovedForAll(owner, from) on the identity registry");
            return;
        }
        Some(None) => {
            b.pre.push(pre(
                iw,
                Status::Fails,
                None,
                "getIdentityRegistry() did not answer an address",
            ));
            b.pre.push(pre(
                ow,
                Status::Fails,
                None,
                "the identity registry is not known",
            ));
            return;
        }
        Some(Some(i)) => i,
    };
    if identity == Address::ZERO {
        b.pre.push(pre(
            iw,
            Status::Ok,
            Some(address_text(&identity)),
            "none: this registry checks no owner, anyone may request",
        ));
        b.pre.push(pre(
            ow,
            Status::Ok,
            None,
            "no identity registry, so no owner check",
        ));
        return;
    }
    b.pre.push(pre(
        iw,
        Status::Ok,
        Some(address_text(&identity)),
        "requests must come from the agent's owner, its approved address or an operator",
    ));
    let from = b.from;
    let owner = match b
        .r
        .view(identity, &IIdentity::ownerOfCall { tokenId: agent })
        .await
    {
        None => {
            return b.assumed(
                ow,
                None,
                "ownerOf(agentId) on the identity registry is from, or from is approved",
            )
        }
        Some(None) => {
            return b.pre.push(pre(
                ow,
                Status::Fails,
                None,
                format!("ownerOf({agent}) reverted: no such agent (AgentNotFound)"),
            ))
        }
        Some(Some(o)) => o,
    };
    let mut ok = owner == from;
    if !ok {
        ok =
            b.r.view(identity, &IIdentity::getApprovedCall { tokenId: agent })
                .await
                .flatten()
                == Some(from);
    }
    if !ok {
        ok =
            b.r.view(
                identity,
                &IIdentity::isApprovedForAllCall {
                    owner,
                    operator: from,
                },
            )
            .await
            .flatten()
                == Some(true);
    }
    if ok {
        b.pre.push(pre(
            ow,
            Status::Ok,
            Some(address_text(&owner)),
            "from is the agent's owner, approved address or operator",
        ));
    } else if b.r.at().reachable != Some(true) {
        b.assumed(
            ow,
            None,
            "getApproved(agentId) or isApprovedForAll(owner, from)",
        );
    } else {
        b.pre.push(pre(
            ow,
            Status::Fails,
            Some(address_text(&owner)),
            "from is not the agent's owner, approved address or operator: NotAgentOwnerOrOperator",
        ));
    }
}

/// `validation_response`'s reads: the request exists and names from as its validator.
async fn validation_response_checks(
    b: &mut Build<'_, '_>,
    registry: Option<Address>,
    deployed: bool,
    hash: alloy::primitives::B256,
) {
    let (rw, vw) = ("request exists", "from is the request's validator");
    let Some(reg) = registry.filter(|_| deployed) else {
        for w in [rw, vw] {
            match registry {
                None => b.pre.push(pre(
                    w,
                    Status::Unset,
                    None,
                    "the validation registry is not set here",
                )),
                Some(_) if b.r.at().reachable != Some(true) => {
                    b.assumed(w, None, "getValidationStatus(requestHash)")
                }
                Some(_) => b.pre.push(pre(
                    w,
                    Status::Fails,
                    None,
                    "the validation registry is not there",
                )),
            }
        }
        return;
    };
    match b
        .r
        .call(
            reg,
            IValidationRegistry::getValidationStatusCall { requestHash: hash }.abi_encode(),
        )
        .await
    {
        None => {
            b.assumed(rw, None, "getValidationStatus(requestHash) returns");
            b.assumed(
                vw,
                None,
                "getValidationStatus(requestHash).validatorAddress is from",
            );
        }
        Some(Call::Returned(out)) => {
            match IValidationRegistry::getValidationStatusCall::abi_decode_returns(&out) {
                Ok(s) => {
                    b.pre
                        .push(pre(rw, Status::Ok, None, "the request is on the registry"));
                    let v = address_text(&s.validatorAddress);
                    if s.validatorAddress == b.from {
                        b.pre.push(pre(
                            vw,
                            Status::Ok,
                            Some(v),
                            "from is the validator the request names",
                        ));
                    } else {
                        b.pre.push(pre(
                            vw,
                            Status::Fails,
                            Some(v.clone()),
                            format!("the request names {v}: anyone else reverts NotValidator"),
                        ));
                    }
                }
                Err(_) => {
                    b.pre.push(pre(
                        rw,
                        Status::Fails,
                        None,
                        "getValidationStatus did not decode",
                    ));
                    b.pre.push(pre(
                        vw,
                        Status::Fails,
                        None,
                        "getValidationStatus did not decode",
                    ));
                }
            }
        }
        Some(Call::Reverted(_)) => {
            b.pre.push(pre(
                rw,
                Status::Fails,
                None,
                "no request with this hash: RequestNotFound",
            ));
            b.pre
                .push(pre(vw, Status::Fails, None, "no request, so no validator"));
        }
    }
}
