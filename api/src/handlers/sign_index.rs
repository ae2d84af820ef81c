//! `GET /prepare/sign`: the index of every owner message (library/PREPARE.md, "Owner messages";
//! library/PREPARE.md, "Owner messages"): for each, the action, where its exact text is served
//! and where the signature is sent. Built from [`conduct_core::owner::Kind::ALL`], the one
//! list every message builder speaks (so the index cannot drift from the texts), and from
//! [`conduct_core::owner::NOT_MESSAGES`], the acts (a listing) that have no text here.

use conduct_core::owner::{Kind, NOT_MESSAGES};
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use serde_json::{json, Value};
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::http::reply::{json_response, Problem};

/// Format name of the index.
pub const SIGN_INDEX_TYPE: &str = "conduct.sign-index/v1";

/// The index (unsigned).
pub fn index() -> Value {
    let messages: Vec<Value> = Kind::ALL
        .iter()
        .map(|k| {
            let e = k.entry();
            json!({
                "action": e.action,
                "title": e.title,
                "message": e.message,
                "post_to": e.post_to,
                "signature_fields": e.signature_fields,
                "proves": e.proves,
            })
        })
        .collect();
    let not_messages: Vec<Value> = NOT_MESSAGES
        .iter()
        .map(|n| json!({"name": n.name, "why": n.why, "instead": n.instead}))
        .collect();
    json!({
        "type": SIGN_INDEX_TYPE,
        "what": "Every text an address signs here with EIP-191 personal_sign to prove itself (no accounts, no API keys): where the exact text is served and where the signature goes. The service never asks for a private key; your wallet signs.",
        "shape": "conduct: <title>\n\n<what signing does>\n\nOrigin: <public URL>\nAction: <action>\n<Parameter>: <value>\n...\nDate (UTC): <YYYY-MM-DD>",
        "rules": [
            "Sign the exact text the message route serves, byte for byte; it names the origin, the action, every parameter and the UTC date.",
            "A signature is good on the UTC date its text names.",
            "A signature made for one message recovers to another address over any other message (the action and the parameters are in the signed bytes): it is refused everywhere else.",
            "Each signature is accepted once, in any spelling (with or without 0x, v as 0/1 or 27/28, the high-s twin).",
            "On-chain actions are not messages: GET /prepare lists the transactions to sign with your wallet.",
            "not_messages names the owner acts that have no text here (a listing is a transaction), why not, and what to use instead.",
        ],
        "messages": messages,
        "not_messages": not_messages,
        "prepare": "/prepare",
        "docs": "/library/PREPARE.md",
        "scope": scope_value(),
    })
}

/// `GET /prepare/sign`: the index, signed with `key`.
pub fn serve(key: &ServiceKey) -> Result<WarpResponse, Problem> {
    let bytes = conduct_renderer::snapshot::signed_bytes(key, index()).map_err(|e| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unrepresentable",
            "The index could not be signed",
            e.to_string(),
        )
    })?;
    Ok(json_response(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_the_interface_names_is_said_to_be_no_message_with_what_to_use() {
        let i = index();
        let actions: Vec<&str> = i["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["action"].as_str().unwrap())
            .collect();
        assert!(
            !actions.iter().any(|a| a.contains("listing")),
            "{actions:?}"
        );
        let absent = i["not_messages"].as_array().expect("not_messages");
        let listing = absent
            .iter()
            .find(|n| n["name"] == "listing")
            .expect("listing is named");
        let why = listing["why"].as_str().unwrap();
        assert!(
            why.contains("registerTool") && why.contains("setGame"),
            "{why}"
        );
        let instead = listing["instead"].as_str().unwrap();
        assert!(
            instead.starts_with("GET /prepare/register_tool"),
            "{instead}"
        );
        assert!(i["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("not_messages")));
    }
}
