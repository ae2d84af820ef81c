//! Prepared transactions (library/PREPARE.md): the catalogue of every on-chain action
//! the service knows, the checks of a caller's arguments, the exact calldata of each
//! transaction, and the live reads of the preconditions to check before signing.
//!
//! The service never holds or asks for a key: it hands out unsigned transactions, in the order
//! they are signed, and what it read of the chain. The rules, as implemented:
//!
//! 1. An action that pulls an ERC-20 (buying a ticket copy) returns the `approve` of the token
//!    being sold as an earlier transaction; the action itself is always last.
//! 2. That approve carries `skip_if`: the condition (the existing allowance already covers the
//!    amount) under which it is dropped, with the call that reads it and what it read.
//! 3. No action here swaps, so none takes `minOut` or `deadline`; the service never quotes,
//!    routes or chooses a price (a ticket's price is the contract's, read or stated by the
//!    caller, never set by the service).
//! 4. Preconditions are read live, at one block; one that could not be read is `assumed`,
//!    which never means zero or false.
//! 5. A contract whose address is not configured here has `to: null`; the calldata is still
//!    exact, and a precondition says the address is `unset`.
//! 6. An argument named like a key (`private_key`, `mnemonic`, `seed`, ...) is refused.
//!
//! Every calldata is a pure function of the caller's arguments and the configured addresses
//! ([`build`]); what is read from the chain only fills the preconditions and `skip_if`, so the
//! calldata is byte-identical whether or not the chain answers.
//!
//! - [`args`]: the arguments of an action, checked and typed.
//! - [`build`]: each action's transactions and preconditions.
//! - [`read`]: the live reads, pinned to one block.
//! - [`holding`]: a wallet's copies of a game, read live (`/ticket/{game}/entitle`).

pub mod args;
pub mod build;
pub mod holding;
pub mod read;

use conduct_core::schema::{ADDRESS_LOWER, HEX_DATA};
use schemars::JsonSchema;
use serde::Serialize;

pub use args::{parse_args, ArgError, Args};
pub use build::{prepare, Env, NeedsChain, PrepareError};

/// The kind of an argument (its ABI type and its rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `address`: 0x and 40 hex digits (any case); `nonzero` refuses the zero address.
    Address {
        /// The zero address is refused.
        nonzero: bool,
    },
    /// `uint256` (or narrower): a decimal string without sign or leading zeros.
    Uint {
        /// Zero is refused.
        nonzero: bool,
        /// The largest value (`None`: 2^256 - 1).
        max: Option<u64>,
        /// The ABI type shown (`uint256`, `uint8`).
        abi: &'static str,
    },
    /// `bytes32`: 0x and 64 hex digits (any case).
    Bytes32 {
        /// All zeros are refused.
        nonzero: bool,
    },
    /// `string`: UTF-8, between `min` and `max` bytes, no control characters.
    Text {
        /// Fewest bytes.
        min: usize,
        /// Most bytes.
        max: usize,
    },
}

impl Kind {
    /// The ABI type name.
    pub fn abi(&self) -> &'static str {
        match self {
            Kind::Address { .. } => "address",
            Kind::Uint { abi, .. } => abi,
            Kind::Bytes32 { .. } => "bytes32",
            Kind::Text { .. } => "string",
        }
    }

    /// The rule, in words.
    pub fn rule(&self) -> String {
        match self {
            Kind::Address { nonzero } => format!(
                "0x and 40 hex digits{}",
                if *nonzero {
                    ", not the zero address"
                } else {
                    ""
                }
            ),
            Kind::Uint { nonzero, max, .. } => format!(
                "a decimal string (no sign, no leading zeros){}{}",
                if *nonzero { ", at least 1" } else { "" },
                max.map(|m| format!(", at most {m}")).unwrap_or_default()
            ),
            Kind::Bytes32 { nonzero } => format!(
                "0x and 64 hex digits{}",
                if *nonzero { ", not all zeros" } else { "" }
            ),
            Kind::Text { min, max } => {
                format!("a string of {min} to {max} UTF-8 bytes, no control characters")
            }
        }
    }
}

/// One argument of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name (a query parameter or a member of the POST body).
    pub name: &'static str,
    /// Its type and rules.
    pub kind: Kind,
    /// Must be given.
    pub required: bool,
    /// The value used when it is not given.
    pub default: Option<&'static str>,
    /// What it is.
    pub description: &'static str,
}

const fn param(name: &'static str, kind: Kind, required: bool, description: &'static str) -> Param {
    Param {
        name,
        kind,
        required,
        default: None,
        description,
    }
}

/// The contract an action's last transaction goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The ERC-8257 tool registry (`[chain.registry]`).
    Registry,
    /// The ERC-1155 ticket copies contract (`[chain.tickets]`).
    Tickets,
    /// The ERC-8004 validation registry (`[chain.validation]`).
    Validation,
    /// The operator's payment token (the `token` argument, else `[munus] token`).
    QuestToken,
}

impl Target {
    /// What it is.
    pub fn name(&self) -> &'static str {
        match self {
            Target::Registry => "ERC-8257 tool registry",
            Target::Tickets => "ERC-1155 ticket copies (TicketCopies)",
            Target::Validation => "ERC-8004 validation registry",
            Target::QuestToken => "ERC-20 payment token",
        }
    }

    /// Where its address is configured.
    pub fn config(&self) -> &'static str {
        match self {
            Target::Registry => "[chain.registry] address",
            Target::Tickets => "[chain.tickets] address",
            Target::Validation => "[chain.validation] address",
            Target::QuestToken => "the token argument, else [munus] token",
        }
    }
}

/// One on-chain action the service prepares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// Its name (`/prepare/<name>`).
    pub name: &'static str,
    /// What it does, in a line.
    pub title: &'static str,
    /// The contract of the last transaction.
    pub target: Target,
    /// The Solidity signature of the last transaction.
    pub function: &'static str,
    /// Whether it pulls an ERC-20 (an `approve` comes first, rule 1).
    pub pulls_erc20: bool,
    /// Its arguments (`from` first).
    pub params: &'static [Param],
    /// More about it: who signs, what it checks.
    pub description: &'static str,
}

const FROM: Param = param(
    "from",
    Kind::Address { nonzero: true },
    true,
    "The wallet that signs and sends every transaction (your own; the service never holds a key).",
);
const TOOL_ID: Param = param(
    "tool_id",
    Kind::Uint {
        nonzero: true,
        max: None,
        abi: "uint256",
    },
    true,
    "The ERC-8257 tool id.",
);
const URI: Kind = Kind::Text { min: 1, max: 2048 };
const HASH: Kind = Kind::Bytes32 { nonzero: true };
const UINT: Kind = Kind::Uint {
    nonzero: false,
    max: None,
    abi: "uint256",
};
const POSITIVE: Kind = Kind::Uint {
    nonzero: true,
    max: None,
    abi: "uint256",
};
const GAME: Param = param(
    "game",
    UINT,
    true,
    "The game: its ERC-1155 token id on the ticket contract.",
);
const COPIES: Param = Param {
    name: "amount",
    kind: POSITIVE,
    required: false,
    default: Some("1"),
    description: "How many copies.",
};

/// Every action, in the order `/prepare` lists them.
pub const ACTIONS: &[Action] = &[
    Action {
        name: "register_tool",
        title: "Register a tool in the ERC-8257 registry",
        target: Target::Registry,
        function: "registerTool(string metadataURI, bytes32 manifestHash, address accessPredicate)",
        pulls_erc20: false,
        params: &[
            FROM,
            param("metadata_uri", URI, true, "Where the manifest is served: https://<origin>/.well-known/ai-tool/<slug>.json (see /opensea)."),
            param("manifest_hash", HASH, true, "keccak256 of the manifest's RFC 8785 bytes (conduct manifest-hash FILE)."),
            Param {
                name: "access_predicate",
                kind: Kind::Address { nonzero: false },
                required: false,
                default: Some("0x0000000000000000000000000000000000000000"),
                description: "The access predicate contract; the zero address is open access.",
            },
        ],
        description: "From the creator's own wallet; the registry assigns the next tool id. The manifest is checked by the registry view once it is on chain (/library/REGISTRY.md).",
    },
    Action {
        name: "update_tool_metadata",
        title: "Change a tool's manifest location and commitment",
        target: Target::Registry,
        function: "updateToolMetadata(uint256 toolId, string newURI, bytes32 newHash)",
        pulls_erc20: false,
        params: &[
            FROM,
            TOOL_ID,
            param("metadata_uri", URI, true, "The new manifest location."),
            param("manifest_hash", HASH, true, "keccak256 of the new manifest's RFC 8785 bytes."),
        ],
        description: "Only the tool's creator, while the tool is registered (preconditions: tool state, creator).",
    },
    Action {
        name: "set_access_predicate",
        title: "Change a tool's access predicate",
        target: Target::Registry,
        function: "setAccessPredicate(uint256 toolId, address newPredicate)",
        pulls_erc20: false,
        params: &[
            FROM,
            TOOL_ID,
            param("access_predicate", Kind::Address { nonzero: false }, true, "The new predicate; the zero address is open access."),
        ],
        description: "Only the tool's creator, while the tool is registered.",
    },
    Action {
        name: "deregister_tool",
        title: "Deregister a tool (irreversible)",
        target: Target::Registry,
        function: "deregisterTool(uint256 toolId)",
        pulls_erc20: false,
        params: &[FROM, TOOL_ID],
        description: "Only the tool's creator, while the tool is registered. A deregistered id is never reused or revived.",
    },
    Action {
        name: "buy_ticket",
        title: "Buy copies of a game's ticket (ERC-1155), paid in its ERC-20",
        target: Target::Tickets,
        function: "buy(uint256 id, uint256 amount)",
        pulls_erc20: true,
        params: &[
            FROM,
            GAME,
            COPIES,
            param("price", UINT, false, "The price of one copy you accept, in the token's base units. Omitted: the contract's price, read now (the chain must answer). Stated: the approve is for exactly price x amount, and a precondition says whether the contract's price is still that."),
            param("token", Kind::Address { nonzero: true }, false, "The ERC-20 the game is paid in. Omitted: the contract's token(), read now. Stated: checked against it."),
        ],
        description: "Two transactions: approve(ticket contract, price x amount) on the token (skip_if: the allowance already covers it), then buy(game, amount), which pulls price x amount with transferFrom and mints the copies to from.",
    },
    Action {
        name: "transfer_ticket",
        title: "Give copies of a game's ticket to another wallet",
        target: Target::Tickets,
        function: "safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data)",
        pulls_erc20: false,
        params: &[
            FROM,
            param("to", Kind::Address { nonzero: true }, true, "The receiving wallet (a contract must accept ERC-1155)."),
            GAME,
            COPIES,
        ],
        description: "From the holder's wallet; data is empty. The entitlement (/ticket/{game}/entitle) follows the balance.",
    },
    Action {
        name: "validation_request",
        title: "Ask a validator to validate an agent (ERC-8004)",
        target: Target::Validation,
        function: "validationRequest(address validatorAddress, uint256 agentId, string requestURI, bytes32 requestHash)",
        pulls_erc20: false,
        params: &[
            FROM,
            param("validator", Kind::Address { nonzero: true }, true, "The validator's address."),
            param("agent_id", UINT, true, "The agent's id in the identity registry."),
            param("request_uri", URI, true, "Where the validator fetches the evidence (e.g. a published credential of POST /erc8004/validation)."),
            param("request_hash", HASH, true, "keccak256 of the evidence: a credential's credential_hash (/library/ERC8004.md)."),
        ],
        description: "From the agent's owner or operator when the registry has an identity registry; a request hash is used once.",
    },
    Action {
        name: "validation_response",
        title: "Answer a validation request (ERC-8004), as the named validator",
        target: Target::Validation,
        function: "validationResponse(bytes32 requestHash, uint8 response, string responseURI, bytes32 responseHash, string tag)",
        pulls_erc20: false,
        params: &[
            FROM,
            param("request_hash", HASH, true, "The request answered."),
            param("response", Kind::Uint { nonzero: false, max: Some(100), abi: "uint8" }, true, "0 to 100; its meaning is the validator's (ERC-8004)."),
            Param { name: "response_uri", kind: Kind::Text { min: 0, max: 2048 }, required: false, default: Some(""), description: "Where the validator's report is." },
            Param { name: "response_hash", kind: Kind::Bytes32 { nonzero: false }, required: false, default: Some("0x0000000000000000000000000000000000000000000000000000000000000000"), description: "keccak256 of the report." },
            Param { name: "tag", kind: Kind::Text { min: 0, max: 256 }, required: false, default: Some(""), description: "A tag, e.g. conduct.erc8004-validation/v1." },
        ],
        description: "Only the validator the request names.",
    },
    Action {
        name: "quest_payment",
        title: "Pay a quest: the operator's ERC-20 transfer to the worker",
        target: Target::QuestToken,
        function: "transfer(address to, uint256 amount)",
        pulls_erc20: false,
        params: &[
            FROM,
            param("to", Kind::Address { nonzero: true }, true, "The worker's wallet."),
            param("amount", POSITIVE, true, "In the token's base units (amount_scry of paid.json)."),
            param("token", Kind::Address { nonzero: true }, false, "The token paid in; omitted: [munus] token."),
        ],
        description: "From the operator's own wallet (/library/MUNUS.md, How a quest is paid). A transfer pushes: nothing is pulled, so there is no approve. Then record it with conduct quest pay --tx.",
    },
];

/// The action named `name`.
pub fn action(name: &str) -> Option<&'static Action> {
    ACTIONS.iter().find(|a| a.name == name)
}

/// Whether a precondition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Read, and it holds.
    Ok,
    /// Read, and it does not hold: the transaction would revert (or do something else).
    Fails,
    /// The chain could not be read: check it yourself before signing. Never zero, never false.
    Assumed,
    /// An address this needs is not configured here (not deployed).
    Unset,
}

/// One precondition: what to check before signing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Precondition {
    /// What is checked.
    pub what: String,
    /// Whether it holds.
    pub status: Status,
    /// What was read (decimal, address or text), `None` when nothing was.
    #[schemars(description = "What was read (decimal, address or text); null when nothing was.")]
    pub value: Option<String>,
    /// In words, with how to check it yourself.
    pub detail: String,
}

/// The read that decides a `skip_if`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Check {
    /// The contract called (`None`: not known here).
    #[schemars(
        pattern(ADDRESS_LOWER),
        description = "The contract called; null when not known here."
    )]
    pub to: Option<String>,
    /// The calldata of the `eth_call`; `None` (null) when it is unknown here (the spender,
    /// a contract not set, is one of its arguments).
    #[schemars(
        pattern(HEX_DATA),
        description = "The eth_call's calldata; null when unknown \
        here (the spender, a contract not set, is one of its arguments)."
    )]
    pub data: Option<String>,
    /// What it returns.
    pub returns: &'static str,
}

/// When an `approve` may be dropped (rule 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(
    inline,
    description = "When the approve may be dropped: the allowance already \
    covers the amount."
)]
pub struct SkipIf {
    /// The condition.
    pub condition: &'static str,
    /// The token approved.
    #[schemars(pattern(ADDRESS_LOWER))]
    pub token: Option<String>,
    /// The owner of the allowance (`from`).
    #[schemars(pattern(ADDRESS_LOWER))]
    pub owner: String,
    /// The spender (the contract that pulls).
    #[schemars(pattern(ADDRESS_LOWER))]
    pub spender: Option<String>,
    /// The amount the action pulls (decimal base units); `None` (null) when it is unknown
    /// here: no price was stated and the contract that states it is not set.
    #[schemars(
        description = "The amount the action pulls (decimal base units); null when \
        it is unknown here: no price was stated and the contract that states it is not set."
    )]
    pub amount: Option<String>,
    /// The `eth_call` that reads the allowance.
    pub check: Check,
    /// The allowance read now (`None`: not read).
    #[schemars(description = "The allowance read now; null when not read.")]
    pub allowance: Option<String>,
    /// Whether the condition holds now: `true` drop the approve, `false` sign it, `None`
    /// not read (sign it, or read `check` yourself).
    #[schemars(
        description = "Whether the condition holds now: true, drop the approve; \
        false, sign it; null, not read (sign it, or read check yourself)."
    )]
    pub holds: Option<bool>,
}

/// One unsigned transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Tx {
    /// Its place in the signing order, from 1.
    #[schemars(range(min = 1))]
    pub step: usize,
    /// The wallet that signs it.
    #[schemars(pattern(ADDRESS_LOWER))]
    pub from: String,
    /// The contract called; `None` (null) while its address is unset here.
    #[schemars(
        pattern(ADDRESS_LOWER),
        description = "The contract called; null while its \
        address is unset here."
    )]
    pub to: Option<String>,
    /// The exact calldata; `None` only for an approve whose spender is a contract not
    /// deployed here (its address is part of the calldata).
    #[schemars(
        pattern(HEX_DATA),
        description = "The exact calldata; null only for an approve \
        whose spender is a contract not deployed here (its address is part of the calldata)."
    )]
    pub data: Option<String>,
    /// Wei sent: always "0".
    #[schemars(extend("const" = "0"))]
    pub value: &'static str,
    /// The EIP-155 chain id (`None` without a chain).
    #[schemars(description = "The EIP-155 chain id; null without a chain.")]
    pub chain_id: Option<u64>,
    /// The Solidity signature called.
    pub function: &'static str,
    /// What it does.
    pub description: String,
    /// When it may be dropped (an approve only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "SkipIf")]
    pub skip_if: Option<SkipIf>,
}

/// Where the preconditions were read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline, description = "")]
pub struct ReadAt {
    /// The block every read was made at (`None`: the chain was not read).
    #[schemars(
        description = "The block every read was made at; null when the chain was not \
        read."
    )]
    pub block: Option<u64>,
    /// Whether the chain answered (`None`: no chain is configured).
    #[schemars(description = "Whether the chain answered; null when no chain is configured.")]
    pub reachable: Option<bool>,
    /// Why it did not (URLs named by host only).
    pub error: Option<String>,
}

/// What `/prepare/<action>` answers (before the api adds its envelope and signs it). Its
/// schema (`schemars`, as serialized) is the typed part of the answer's in `/openapi.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline, description = "")]
pub struct Prepared {
    /// The action.
    pub action: &'static str,
    /// The arguments as used (defaults filled, addresses and hashes in lower-case hex).
    pub arguments: std::collections::BTreeMap<&'static str, String>,
    /// The transactions, in signing order; the action is last.
    #[schemars(length(min = 1))]
    pub txs: Vec<Tx>,
    /// What to check before signing.
    pub preconditions: Vec<Precondition>,
    /// Where they were read.
    pub read_at: ReadAt,
}

#[cfg(test)]
mod tests;
