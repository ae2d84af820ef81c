//! Owner messages (library/PREPARE.md, "Owner messages"): the exact texts an
//! address signs with EIP-191 `personal_sign` to prove itself, one shape for all of them, and
//! the index `GET /prepare/sign` is built from.
//!
//! Every text names the origin (the service's public URL), the action, the action's
//! parameters and the UTC date it is good on, in this shape:
//!
//! ```text
//! conduct: <title>
//!
//! <what signing does>
//!
//! Origin: <public URL>
//! Action: <action>
//! <Param>: <value>          (the parameters that identify the act)
//! Date (UTC): <YYYY-MM-DD>
//! <Param>: <value>          (parameters after the date, if any)
//! <Label>:                  (a free text last, if any: a vow's text)
//! <text>
//! ```
//!
//! Because the action and every parameter are in the signed bytes, a signature made for one
//! message recovers to another address over any other message: it is refused everywhere else.
//! Each endpoint also accepts a signature once (its own replay table).

/// Most deliveries one claim takes per UTC day (each is a permanent leaf; library/MUNUS.md).
pub const MAX_DELIVERIES_PER_DAY: u64 = 10;
/// Most npub bindings one vow makes per UTC day (library/NOSTR.md).
pub const MAX_BINDINGS_PER_DAY: u64 = 10;
/// Most pledges one vow makes per UTC day (library/WITNESS.md).
pub const MAX_PLEDGES_PER_DAY: u64 = 10;

/// Every kind of owner message, with where its text is served and where its signature goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Take a signed vow.
    TakeVow,
    /// A wallet-signed report-in on the free route.
    ReportIn,
    /// Claim a quest.
    ClaimQuest,
    /// Put a delivery on a claimed quest.
    SubmitDelivery,
    /// Bind an npub to a vow (the chat binding; the npub signs the same text with BIP-340).
    BindNpub,
    /// Prove holding a ticket copy.
    ProveHolder,
    /// Pledge portfolio limits to the witness.
    PledgeLimits,
    /// Authorize a familiar's labor order (owner-auth).
    SummonFamiliar,
}

/// One kind's row: what the index says of its message, and the rules of its logged record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The `Action:` line.
    pub action: &'static str,
    /// The first line after `conduct: `.
    pub title: &'static str,
    /// Where the exact text is served (`GET`, with its query).
    pub message: &'static str,
    /// Where the signature is sent.
    pub post_to: &'static str,
    /// The body members that carry the signature.
    pub signature_fields: &'static str,
    /// What a valid signature proves and does.
    pub proves: &'static str,
    /// The rules of its logged record, when that record is a `record::OwnerSigned` one (the
    /// vow and its report-ins are hash chains instead; a ticket entitlement is not logged).
    pub record: Option<RecordRule>,
}

/// The rules of an owner-signed record that verify-log checks (`leaf::owner_rules`) and the
/// service keeps when it appends, in verify-log's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRule {
    /// The record's member that holds the owner's EIP-191 signature.
    pub signature: &'static str,
    /// Whose vow must be a sworn vow with the record's wallet, as a refusal names it.
    pub who: &'static str,
    /// The refusal of a signature an earlier record of the kind used (each is used once).
    pub replayed: &'static str,
    /// At most this many records a UTC day per `OwnerSigned::daily_key`, and what they are
    /// counted as; `None` when the kind has no daily limit.
    pub per_day: Option<(u64, &'static str)>,
}

impl RecordRule {
    /// The rule of a record that keeps the owner's signature in `wallet_signature`, naming the
    /// party whose vow must be sworn `who` and a signature used before `replayed`.
    pub const fn new(who: &'static str, replayed: &'static str) -> Self {
        RecordRule {
            signature: "wallet_signature",
            who,
            replayed,
            per_day: None,
        }
    }

    /// At most `limit` records a UTC day, counted as `what`.
    pub const fn per_day(self, limit: u64, what: &'static str) -> Self {
        RecordRule {
            per_day: Some((limit, what)),
            ..self
        }
    }
}

/// A claim's or delivery's signature used before (they share one replay table).
const BOARD_REPLAYED: &str = "its wallet signature was used by an earlier claim or delivery";
/// A binding's wallet or nostr signature used before.
const BINDING_REPLAYED: &str = "a signature of this binding was used by an earlier one";
/// A pledge's signature used before.
const PLEDGE_REPLAYED: &str = "its wallet signature was used by an earlier pledge";
/// A familiar's owner signature used before.
const FAMILIAR_REPLAYED: &str = "its owner signature was used by an earlier familiar";

impl Kind {
    /// Every kind, in the index's order.
    pub const ALL: [Kind; 8] = [
        Kind::TakeVow,
        Kind::ReportIn,
        Kind::ClaimQuest,
        Kind::SubmitDelivery,
        Kind::BindNpub,
        Kind::ProveHolder,
        Kind::PledgeLimits,
        Kind::SummonFamiliar,
    ];

    /// The index entry of this kind.
    pub fn entry(self) -> Entry {
        match self {
            Kind::TakeVow => Entry {
                action: "take_vow",
                title: "take a vow",
                message: "GET /vow/message?text=&agent=&cadence_hours=[&sealed=true]",
                post_to: "POST /vow",
                signature_fields: "wallet, signature",
                proves: "the wallet takes this vow (text, agent, cadence, sealed) today; without a valid signature the vow is a sandbox vow",
                record: None,
            },
            Kind::ReportIn => Entry {
                action: "report_in",
                title: "report in",
                message: "GET /vow/report/message?vow_id=&trace_sha256=[&note=][&donate_trace=true]",
                post_to: "POST /vow/report/demo (or the paid POST /vow/report)",
                signature_fields: "signature",
                proves: "the vow's wallet reports this trace, note and donation choice today",
                record: None,
            },
            Kind::ClaimQuest => Entry {
                action: "claim_quest",
                title: "claim a quest",
                message: "GET /play/message?action=claim&quest=&vow_id=",
                post_to: "POST /munus/{id}/claim",
                signature_fields: "vow_id, signature",
                proves: "the sworn vow's wallet claims this quest today",
                record: Some(RecordRule::new("the claim", BOARD_REPLAYED)),
            },
            Kind::SubmitDelivery => Entry {
                action: "submit_delivery",
                title: "submit a delivery",
                message: "GET /play/message?action=submit&quest=&vow_id=&link=",
                post_to: "POST /munus/{id}/submit",
                signature_fields: "vow_id, link, signature",
                proves: "the claimant's wallet puts this delivery link on the record today",
                record: Some(RecordRule::new("the delivery", BOARD_REPLAYED).per_day(
                    MAX_DELIVERIES_PER_DAY,
                    "deliveries on one claim",
                )),
            },
            Kind::BindNpub => Entry {
                action: "bind_npub",
                title: "bind a Nostr key",
                message: "GET /nostr/bind/message?vow_id=&npub=",
                post_to: "POST /nostr/bind",
                signature_fields: "wallet_signature (EIP-191), nostr_signature (BIP-340 over sha256 of the text)",
                proves: "the vow's wallet and the npub's key both bind the npub to the vow today",
                record: Some(RecordRule::new("the binding", BINDING_REPLAYED).per_day(
                    MAX_BINDINGS_PER_DAY,
                    "bindings of one vow",
                )),
            },
            Kind::ProveHolder => Entry {
                action: "prove_holder",
                title: "prove you hold a ticket copy",
                message: "GET /ticket/{game}/message?wallet=",
                post_to: "POST /ticket/{game}/entitle",
                signature_fields: "wallet, signature",
                proves: "the wallet asks for its entitlement today; the entitlement itself is a live balance read",
                record: None,
            },
            Kind::PledgeLimits => Entry {
                action: "pledge_limits",
                title: "pledge portfolio limits",
                message: "GET /witness/pledge/message?vow_id=&limits=",
                post_to: "POST /witness/pledge",
                signature_fields: "signature",
                proves: "the sworn vow's wallet pledges these limits to the witness today",
                record: Some(RecordRule::new("the pledge", PLEDGE_REPLAYED).per_day(
                    MAX_PLEDGES_PER_DAY,
                    "pledges of one vow",
                )),
            },
            Kind::SummonFamiliar => Entry {
                action: "summon_familiar",
                title: "summon a familiar",
                message: "GET /familiar/message?vow_id=|wallet=&order=",
                post_to: "POST /familiar/summon",
                signature_fields: "signature",
                proves: "the owner authorizes this labor order today (paid at the labor price)",
                record: Some(RecordRule {
                    signature: "owner_signature",
                    ..RecordRule::new("the owner", FAMILIAR_REPLAYED)
                }),
            },
        }
    }

    /// The `Action:` line's value.
    pub fn action(self) -> &'static str {
        self.entry().action
    }
}

/// An owner act the interface names among the signed messages that has no message here: why
/// not, and what to use instead (PREPARE.md, "Owner messages"). The index lists these beside
/// the messages, so nobody looks for a text that is not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAMessage {
    /// The name the act goes by.
    pub name: &'static str,
    /// Why no text is served for it.
    pub why: &'static str,
    /// What to use instead.
    pub instead: &'static str,
}

/// Every named owner act without a message: a listing, which is a transaction, never a text.
pub const NOT_MESSAGES: [NotAMessage; 1] = [NotAMessage {
    name: "listing",
    why: "A listing is an on-chain act here, never a signed text. A tool is listed in the \
          ERC-8257 registry by its creator's own registerTool transaction, and GET /registry \
          shows what the chain says (verified against the manifest, never against a signature \
          kept here); a game's ticket copies are listed by the TicketCopies owner's setGame. \
          The service holds no key and cannot list anything for you, and a signature it kept \
          would prove nothing the chain does not.",
    instead: "GET /prepare/register_tool (then /prepare/update_tool_metadata, \
              /prepare/set_access_predicate, /prepare/deregister_tool): the transactions to sign \
              with your wallet; GET /opensea for the whole recipe (manifest, hash, register)",
}];

/// One owner message, before it is written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerText<'a> {
    /// Which message.
    pub kind: Kind,
    /// What signing does (one paragraph).
    pub effect: &'a str,
    /// The service's public URL.
    pub origin: &'a str,
    /// Parameters before the date.
    pub params: Vec<(&'a str, String)>,
    /// The UTC date `YYYY-MM-DD` the signature is good on.
    pub date: &'a str,
    /// Parameters after the date.
    pub after: Vec<(&'a str, String)>,
    /// A free text written last, under its label (a vow's text).
    pub block: Option<(&'a str, &'a str)>,
}

impl OwnerText<'_> {
    /// The exact text to sign.
    pub fn render(&self) -> String {
        let e = self.kind.entry();
        let mut s = format!(
            "conduct: {}\n\n{}\n\nOrigin: {}\nAction: {}",
            e.title, self.effect, self.origin, e.action
        );
        for (k, v) in &self.params {
            s.push_str(&format!("\n{k}: {v}"));
        }
        s.push_str(&format!("\nDate (UTC): {}", self.date));
        for (k, v) in &self.after {
            s.push_str(&format!("\n{k}: {v}"));
        }
        if let Some((label, text)) = self.block {
            s.push_str(&format!("\n{label}:\n{text}"));
        }
        s
    }
}

/// Which kind of owner message `text` is (by its `Action:` line), if any.
pub fn kind_of(text: &str) -> Option<Kind> {
    let action = text.lines().find_map(|l| l.strip_prefix("Action: "))?;
    Kind::ALL.into_iter().find(|k| k.action() == action)
}

/// Recover the address that signed `text` as a message of `kind`: refused (without
/// recovering) when the text is not a message of that kind.
#[cfg(feature = "wallet")]
pub fn recover(kind: Kind, text: &str, signature: &str) -> Result<[u8; 20], RecoverError> {
    if kind_of(text) != Some(kind) {
        return Err(RecoverError::WrongMessage(kind.action()));
    }
    crate::vow::eip191::recover(text, signature).map_err(|e| RecoverError::Signature(e.to_string()))
}

/// [`recover`], and the signature's one canonical spelling (`vow::eip191::canonical`), which
/// every single-use check keys on.
#[cfg(feature = "wallet")]
pub fn recover_canonical(
    kind: Kind,
    text: &str,
    signature: &str,
) -> Result<([u8; 20], String), RecoverError> {
    let address = recover(kind, text, signature)?;
    let canonical = crate::vow::eip191::canonical(signature)
        .map_err(|e| RecoverError::Signature(e.to_string()))?;
    Ok((address, canonical))
}

/// Why [`recover`] gave no address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecoverError {
    /// The text is not a message of the expected kind.
    #[error("the text is not a {0} message")]
    WrongMessage(&'static str),
    /// Not a recoverable signature.
    #[error("{0}")]
    Signature(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_action_and_routes() {
        let mut seen = std::collections::HashSet::new();
        for k in Kind::ALL {
            let e = k.entry();
            assert!(seen.insert(e.action), "{}", e.action);
            assert!(e.message.starts_with("GET /"), "{}", e.message);
            assert!(e.post_to.starts_with("POST /"), "{}", e.post_to);
            let t = OwnerText {
                kind: k,
                effect: "x",
                origin: "https://o.example",
                params: vec![("A", "1".into())],
                date: "2026-11-24",
                after: vec![],
                block: None,
            }
            .render();
            assert_eq!(kind_of(&t), Some(k));
            assert!(t.contains("\nOrigin: https://o.example\n"));
            assert!(t.contains("\nDate (UTC): 2026-11-24"));
        }
    }

    #[test]
    fn every_message_builder_speaks_its_kind() {
        assert_eq!(crate::ticket::ACTION, Kind::ProveHolder.action());
        assert_eq!(crate::witness::PLEDGE_ACTION, Kind::PledgeLimits.action());
        assert_eq!(
            crate::familiar::SUMMON_ACTION,
            Kind::SummonFamiliar.action()
        );
        assert_eq!(crate::nostr::BIND_ACTION, Kind::BindNpub.action());
        let o = "https://o.example";
        let d = "2026-11-24";
        let texts = [
            (
                Kind::TakeVow,
                crate::vow::vow_message(o, "t", "a", 24.0, false, d),
            ),
            (
                Kind::ReportIn,
                crate::vow::report_message(o, "v", "ab", None, false, crate::meter::Meter::V2, d),
            ),
            (
                Kind::ClaimQuest,
                crate::munus::play_message(o, crate::munus::Action::Claim, "q", "v", 0),
            ),
            (
                Kind::BindNpub,
                crate::nostr::bind_message(o, "v", "npub1x", d),
            ),
            (
                Kind::ProveHolder,
                crate::ticket::holder_message(o, "1", "0xab", 0),
            ),
            (
                Kind::SummonFamiliar,
                crate::familiar::familiar_message(o, "vow v", "ab", d),
            ),
        ];
        for (k, t) in texts {
            assert_eq!(kind_of(&t), Some(k), "{t}");
            assert!(
                t.starts_with(&format!("conduct: {}\n\n", k.entry().title)),
                "{t}"
            );
        }
    }

    #[test]
    fn no_message_is_also_named_as_not_a_message() {
        for n in NOT_MESSAGES {
            assert!(
                Kind::ALL.iter().all(|k| !k.action().contains(n.name)),
                "{}",
                n.name
            );
            assert!(n.instead.starts_with("GET /prepare/"), "{}", n.instead);
        }
    }

    #[test]
    fn the_shape_is_fixed() {
        let t = OwnerText {
            kind: Kind::TakeVow,
            effect: "Signing publishes this vow.",
            origin: "https://o.example",
            params: vec![("Agent", "a".into())],
            date: "2026-11-24",
            after: vec![("Text SHA-256", "ab".into())],
            block: Some(("Text", "line one\nline two")),
        }
        .render();
        assert_eq!(
            t,
            "conduct: take a vow\n\nSigning publishes this vow.\n\nOrigin: https://o.example\n\
             Action: take_vow\nAgent: a\nDate (UTC): 2026-11-24\nText SHA-256: ab\nText:\n\
             line one\nline two"
        );
    }

    #[cfg(feature = "wallet")]
    #[test]
    fn a_text_of_another_kind_is_refused_before_recovery() {
        let t = OwnerText {
            kind: Kind::ClaimQuest,
            effect: "x",
            origin: "o",
            params: vec![],
            date: "2026-11-24",
            after: vec![],
            block: None,
        }
        .render();
        let sig = format!("0x{}", "11".repeat(65));
        assert_eq!(
            recover(Kind::BindNpub, &t, &sig),
            Err(RecoverError::WrongMessage("bind_npub"))
        );
    }
}
