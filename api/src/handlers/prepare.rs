//! Prepared transactions (library/PREPARE.md): `GET /prepare` (the index of every
//! on-chain action, its contract, function and arguments) and `GET|POST /prepare/<action>`
//! (the unsigned transactions to sign in order and the preconditions to check first). The
//! catalogue, the calldata and the live reads are `conduct_indexer::chain::prepare`'s; this
//! module reads the arguments (query parameters, or a JSON object of strings), shapes and
//! signs the answer. The service never holds, asks for or accepts a key.

use bytes::Bytes;
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::trace::FieldError;
use conduct_indexer::chain::prepare::{
    self, parse_args, Action, ArgError, Env, PrepareError, Prepared, ACTIONS,
};
use conduct_indexer::chain::registry::{address_text, parse_address};
use conduct_renderer::snapshot::signed_bytes;
use serde_json::{json, Value};
use warp::http::{header, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::handlers::views::Chain;
use crate::http::reply::{json_response, Problem};
use crate::sources::service_now;

/// What preparing reads of the running service: the signing key, the chain followed (its
/// contracts, the RPC of the live reads) and the quest token (`[munus] token`).
#[derive(Clone, Copy)]
pub struct Prepare<'a> {
    /// The signing key.
    pub key: &'a ServiceKey,
    /// The chain followed.
    pub chain: Chain<'a>,
    /// The quest token's address, when configured.
    pub quest_token: Option<&'a str>,
}

/// The type of `GET /prepare`'s answer.
pub const INDEX_TYPE: &str = "conduct.prepare-index/v1";
/// The type of `/prepare/<action>`'s answer.
pub const PREPARED_TYPE: &str = "conduct.prepared/v1";

/// The six rules of library/PREPARE.md ("The rules, as implemented"); both answers carry them.
pub const RULES: [&str; 6] = [
    "1. An action that pulls an ERC-20 returns the approve of the token being sold as an earlier transaction of the same list; the action itself is always last. Sign them in the given order.",
    "2. That approve carries skip_if: the condition (the allowance already covers the amount), the eth_call that reads it, what it read and whether it holds. Drop the approve when it holds.",
    "3. minOut and deadline are always the caller's; no action here swaps, so none takes them. The service never quotes, routes or chooses a price: a ticket's price is the contract's, read now or stated by you.",
    "4. Preconditions are read live from the chain at one block. assumed means the service could not read it: check it yourself before signing. assumed never means zero or false.",
    "5. A contract not deployed here has to: null; the calldata is still exact, and a precondition says the address is unset.",
    "6. The service never asks for a private key, a mnemonic or a seed: an argument named like one is refused. You sign with your own wallet.",
];

/// What a caller does with an answer.
const SIGN: &str = "Check every precondition first (assumed: not read, check it yourself). Then \
    sign each transaction in order with your own wallet, filling nonce, gas and fees as your \
    wallet does, and send each after the previous one is mined; drop an approve whose skip_if \
    holds. The service holds no key and never asks for one.";

/// Where arguments came from: query parameters or a JSON body (names errors `?x` or `/x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `GET` query parameters.
    Query,
    /// `POST` JSON body members.
    Body,
}

impl Source {
    fn pointer(self, name: &str) -> String {
        match self {
            Source::Query => format!("?{name}"),
            Source::Body => format!("/{name}"),
        }
    }
}

/// The `[chain]` name and id, or null.
fn chain_value(chain: &Chain<'_>) -> Value {
    match chain.cfg {
        Some(c) => json!({"name": c.name, "chain_id": c.chain_id}),
        None => Value::Null,
    }
}

/// Sign a document; a live answer is never cached.
pub fn signed_answer(
    key: &ServiceKey,
    status: StatusCode,
    doc: Value,
) -> Result<WarpResponse, Problem> {
    let bytes = signed_bytes(key, doc).map_err(|e| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unrepresentable",
            "The answer could not be signed",
            e.to_string(),
        )
    })?;
    let mut resp = json_response(bytes);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// The configured address of an action's contract (the quest token: `[munus] token`).
fn contract_address(ctx: &Prepare<'_>, a: &Action) -> Option<String> {
    let c = ctx.chain.cfg;
    let addr = match a.target {
        prepare::Target::Registry => c.and_then(|c| c.registry.as_ref()).map(|x| &*x.address),
        prepare::Target::Tickets => c.and_then(|c| c.tickets.as_ref()).map(|x| &*x.address),
        prepare::Target::Validation => c.and_then(|c| c.validation.as_ref()).map(|x| &*x.address),
        prepare::Target::QuestToken => ctx.quest_token,
    }?;
    parse_address(addr).ok().map(|a| address_text(&a))
}

fn selector(function: &str) -> String {
    let (name, rest) = function.split_once('(').unwrap_or((function, ")"));
    let types: Vec<&str> = rest
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|p| p.split_whitespace().next())
        .collect();
    let canonical = format!("{name}({})", types.join(","));
    let hash = alloy_primitives::keccak256(canonical.as_bytes());
    format!("0x{}", hex::encode(&hash[..4]))
}

/// `GET /prepare`: every action, its contract, function and arguments.
pub fn index(ctx: Prepare<'_>) -> Result<WarpResponse, Problem> {
    let actions: Vec<Value> = ACTIONS
        .iter()
        .map(|a| {
            let params: Vec<Value> = a
                .params
                .iter()
                .map(|p| {
                    json!({
                        "name": p.name,
                        "type": p.kind.abi(),
                        "required": p.required,
                        "default": p.default,
                        "rule": p.kind.rule(),
                        "description": p.description,
                    })
                })
                .collect();
            let approve = a.pulls_erc20.then(|| {
                json!({
                    "function": "approve(address spender, uint256 amount)",
                    "selector": selector("approve(address,uint256)"),
                    "token": "the ERC-20 the game is paid in (the token argument, else the ticket contract's token())",
                    "spender": "the ticket contract",
                    "amount": "price x amount",
                    "skip_if": "allowance(from, ticket contract) >= price x amount",
                })
            });
            json!({
                "name": a.name,
                "path": format!("/prepare/{}", a.name),
                "title": a.title,
                "description": a.description,
                "contract": {
                    "name": a.target.name(),
                    "address": contract_address(&ctx, a),
                    "configured_by": a.target.config(),
                },
                "function": a.function,
                "selector": selector(a.function),
                "pulls_erc20": a.pulls_erc20,
                "approve": approve,
                "quoted": false,
                "params": params,
            })
        })
        .collect();
    let doc = json!({
        "type": INDEX_TYPE,
        "what": "Every on-chain action this service prepares: unsigned transactions to sign in \
            order with your own wallet, and the preconditions to check first, read live. The \
            service never holds, asks for or accepts a key.",
        "chain": chain_value(&ctx.chain),
        "how": "GET /prepare/<action>?from=0x…&<argument>=… (or POST /prepare/<action> with a \
            JSON object of the same arguments, each a string): {txs, preconditions}. Unknown \
            arguments are refused, and so is any named like a key.",
        "rules": RULES,
        "quotes": "none: no action here swaps, so none takes minOut or deadline (rule 3 holds \
            with nothing to apply it to); the service never quotes, routes or prices",
        "actions": actions,
        "tickets": {
            "prepare": "/ticket/{game}/prepare?from=0x…[&amount=][&price=][&token=]: buy_ticket for the game",
            "message": "/ticket/{game}/message?wallet=0x…: the exact EIP-191 text a holder signs",
            "entitle": "POST /ticket/{game}/entitle {wallet, signature}: a signed entitlement, read live from balanceOf(wallet, game)",
        },
        "docs": "/library/PREPARE.md",
        "scope": scope_value(),
    });
    signed_answer(ctx.key, StatusCode::OK, doc)
}

/// The arguments of a query string: (name, percent-decoded value) pairs in order.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The arguments of a JSON body: an object whose members are strings.
pub fn body_pairs(body: &[u8]) -> Result<Vec<(String, String)>, Problem> {
    let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        conduct_core::trace::parse_json(body).map_err(|e| Problem::invalid(vec![e]))?
    };
    let Value::Object(map) = value else {
        return Err(Problem::invalid(vec![FieldError::at(
            "",
            "the body is a JSON object of arguments, each a string",
        )]));
    };
    let mut pairs = Vec::new();
    let mut errors = Vec::new();
    for (k, v) in map {
        match v {
            Value::String(s) => pairs.push((k, s)),
            other => {
                if prepare::args::is_secret_name(&k) {
                    pairs.push((k, String::new()));
                } else {
                    errors.push(FieldError::at(
                        format!("/{}", k.replace('~', "~0").replace('/', "~1")),
                        format!("every argument is a string (decimal integers too); got {other}"),
                    ));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(Problem::invalid(errors))
    }
}

/// The refusal of arguments: `never-a-key` when one is named like a key, else `invalid`.
pub fn arg_problem(errors: Vec<ArgError>, source: Source, rename: &[(&str, &str)]) -> Problem {
    let secret = errors.iter().any(|e| e.secret);
    let fields = errors
        .into_iter()
        .map(|e| {
            let pointer = rename
                .iter()
                .find(|(from, _)| *from == e.name)
                .map(|(_, to)| (*to).to_owned())
                .unwrap_or_else(|| source.pointer(&e.name));
            FieldError::at(pointer, e.detail)
        })
        .collect();
    let mut p = Problem::invalid(fields);
    if secret {
        p.kind = "never-a-key";
        p.title = "The service never asks for or accepts a key";
    }
    p
}

/// The answer of one prepared action.
pub fn answer(ctx: &Prepare<'_>, action: &Action, p: Prepared) -> Result<WarpResponse, Problem> {
    let mut read_at = serde_json::to_value(&p.read_at).unwrap_or(Value::Null);
    read_at["at"] = json!(conduct_core::time::rfc3339(service_now()));
    let doc = json!({
        "type": PREPARED_TYPE,
        "action": p.action,
        "title": action.title,
        "function": action.function,
        "chain": chain_value(&ctx.chain),
        "arguments": p.arguments,
        "txs": p.txs,
        "preconditions": p.preconditions,
        "read_at": read_at,
        "sign": SIGN,
        "quoted": false,
        "rules": RULES,
        "docs": "/library/PREPARE.md",
        "scope": scope_value(),
    });
    signed_answer(ctx.key, StatusCode::OK, doc)
}

fn unknown_action(name: &str) -> Problem {
    let names: Vec<&str> = ACTIONS.iter().map(|a| a.name).collect();
    Problem::new(
        StatusCode::NOT_FOUND,
        "prepare-unknown-action",
        "No such action",
        format!(
            "no action {name:?} is prepared here; the actions are {} (GET /prepare)",
            names.join(", ")
        ),
    )
    .at("/action", "unknown action")
}

/// Prepare `action` with `given` against this instance's chain.
pub async fn run(
    ctx: &Prepare<'_>,
    action: &'static Action,
    given: &[(String, String)],
    source: Source,
    rename: &[(&str, &str)],
) -> Result<WarpResponse, Problem> {
    let args = parse_args(action, given).map_err(|e| arg_problem(e, source, rename))?;
    let quest_token = ctx.quest_token.and_then(|t| parse_address(t).ok());
    let env = Env {
        chain: ctx.chain.cfg,
        quest_token,
        rpc: ctx.chain.parts.rpc.as_deref(),
    };
    match prepare::prepare(&env, action, &args).await {
        Ok(p) => answer(ctx, action, p),
        Err(PrepareError::NeedsChain(n)) => {
            let fields = n
                .missing
                .iter()
                .map(|m| FieldError::at(source.pointer(m), "state it to prepare without the chain"))
                .collect();
            let mut p = if n.unreachable {
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "chain-unreachable",
                    "The chain did not answer",
                    n.detail,
                )
                .with_header(header::RETRY_AFTER, "30")
            } else {
                let mut p = Problem::invalid(Vec::new());
                p.detail = n.detail;
                p
            };
            p.errors = fields;
            Err(p)
        }
        Err(PrepareError::Invalid { name, detail }) => Err(Problem::invalid(vec![FieldError::at(
            source.pointer(name),
            detail,
        )])),
    }
}

/// `GET /prepare/<action>` (query) and `POST /prepare/<action>` (JSON body).
pub async fn action(
    ctx: Prepare<'_>,
    path: &str,
    query: &str,
    body: Option<Bytes>,
) -> Result<WarpResponse, Problem> {
    let name = path.trim_start_matches("/prepare/");
    let Some(action) = prepare::action(name) else {
        return Err(unknown_action(name));
    };
    match body {
        None => run(&ctx, action, &query_pairs(query), Source::Query, &[]).await,
        Some(b) => {
            if !query.is_empty() {
                return Err(Problem::invalid(vec![FieldError::at(
                    "",
                    "a POST carries its arguments in the JSON body, not the query string",
                )]));
            }
            let given = body_pairs(&b)?;
            run(&ctx, action, &given, Source::Body, &[]).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routes_action_enum_is_the_catalogue() {
        let conduct_renderer::openapi::ParamSchema::Json(schema) = crate::routes::ACTION.schema
        else {
            panic!("the action parameter has a written schema");
        };
        let v: Value = serde_json::from_str(schema).unwrap();
        let names: Vec<&str> = v["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let want: Vec<&str> = ACTIONS.iter().map(|a| a.name).collect();
        assert_eq!(names, want);
    }

    #[test]
    fn selectors_are_of_the_canonical_signature() {
        assert_eq!(
            selector("approve(address spender, uint256 amount)"),
            "0x095ea7b3"
        );
        assert_eq!(
            selector("transfer(address to, uint256 amount)"),
            "0xa9059cbb"
        );
    }
}
