//! The vow ledger's pure logic (library/VOWS.md): vow and report-in
//! requests and their validation, the exact EIP-191 text a wallet signs, the signed record
//! formats `conduct.vow/v1` and `conduct.entry/v1`, the declared-purpose match, report-in
//! windows, chain verification, trajectories and readings (the rule-based interpretation and
//! the notes compared with the numbers).

pub mod consistency;
#[cfg(feature = "wallet")]
pub mod eip191;
#[cfg(feature = "wallet")]
pub mod fixture;
pub mod interpret;
pub mod links;
pub mod notes;
pub mod record;
pub mod trajectory;
pub mod view;
pub mod windows;

use std::borrow::Cow;

use serde::Deserialize;

use crate::trace::{FieldError, TraceRef, Turn};

/// Most characters in a vow's text.
pub const MAX_VOW_TEXT: usize = 4000;
/// Most characters in an agent name.
pub const MAX_AGENT: usize = 64;
/// Most characters in a report-in's public note (library/VOWS.md).
pub const MAX_NOTE: usize = 1000;
/// Shortest declared cadence, hours (36 seconds).
pub const MIN_CADENCE_HOURS: f64 = 0.01;
/// Longest declared cadence, hours (one year).
pub const MAX_CADENCE_HOURS: f64 = 8760.0;

/// Body of `POST /vow`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schemars",
    schemars(title = "POST /vow body", description = "")
)]
#[serde(deny_unknown_fields)]
pub struct VowRequest {
    /// The declared purpose.
    #[cfg_attr(feature = "schemars", schemars(length(min = 1, max = MAX_VOW_TEXT),
        pattern(crate::schema::TEXT_CHARS),
        description = "The declared purpose: not blank; no control characters but newline and tab."))]
    pub text: String,
    /// Public agent name.
    #[cfg_attr(feature = "schemars", schemars(length(min = 1, max = MAX_AGENT),
        pattern(crate::schema::AGENT_CHARS),
        description = "Public agent name (kept in Unicode NFC): no leading or trailing spaces, \
            no control, bidirectional or zero-width characters."))]
    pub agent: String,
    /// Declared report-in cadence, hours.
    #[cfg_attr(feature = "schemars", schemars(range(min = MIN_CADENCE_HOURS, max = MAX_CADENCE_HOURS),
        description = "Report-in cadence; a whole number of seconds."))]
    pub cadence_hours: f64,
    /// Wallet that signed the vow text.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(pattern(crate::schema::VOW_WALLET)))]
    pub wallet: Option<String>,
    /// EIP-191 signature by `wallet` over [`vow_message`].
    #[serde(default)]
    #[cfg_attr(
        feature = "schemars",
        schemars(description = "EIP-191 signature by wallet over \
        the text of GET /vow/message (0x and 130 hex digits). One that does not verify makes \
        the vow sandbox (a sealed vow is refused).")
    )]
    pub signature: Option<String>,
    /// Publish only `sha256(text)` (requires a valid signature).
    #[serde(default)]
    pub sealed: Option<bool>,
}

/// Body of `POST /vow/report` and `POST /vow/report/demo`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schemars",
    schemars(title = "POST /vow/report body", description = "")
)]
#[serde(deny_unknown_fields)]
pub struct ReportRequest<'a> {
    /// The vow reported on.
    #[serde(borrow)]
    #[cfg_attr(feature = "schemars", schemars(pattern(crate::schema::vow_id())))]
    pub vow_id: Cow<'a, str>,
    /// Names the context flag the read is conditioned on.
    #[serde(borrow)]
    #[cfg_attr(
        feature = "schemars",
        schemars(schema_with = "crate::schema::context_key", description = "")
    )]
    pub context_key: Cow<'a, str>,
    /// The ordered turns.
    #[serde(borrow)]
    #[cfg_attr(
        feature = "schemars",
        schemars(schema_with = "crate::schema::turns", description = "")
    )]
    pub turns: Vec<Turn<'a>>,
    /// Optional public self-account, at most [`MAX_NOTE`] characters.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(length(max = MAX_NOTE),
        pattern(crate::schema::TEXT_CHARS), description = "Optional public self-account."))]
    pub note: Option<String>,
    /// Keep the raw trace (apart from the public tree) and mark the entry `trace_donated`.
    #[serde(default)]
    pub donate_trace: Option<bool>,
    /// EIP-191 signature by the vow's wallet over [`report_message`] (a wallet-signed vow's
    /// free report-in needs it; on the paid route the payer being the wallet also proves it).
    #[serde(default)]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            pattern(crate::schema::EIP191),
            description = "For a wallet-signed vow: the wallet's EIP-191 signature over the text of \
            GET /vow/report/message."
        )
    )]
    pub signature: Option<String>,
    /// The meter to measure with, `meter/1` or `meter/2` (library/METER.md); absent: `meter/2`.
    #[serde(default, borrow)]
    #[cfg_attr(
        feature = "schemars",
        schemars(
            schema_with = "crate::schema::meter_name",
            extend("default" = crate::meter::Meter::DEFAULT.as_str())
        )
    )]
    pub meter: Option<Cow<'a, str>>,
}

impl<'a> ReportRequest<'a> {
    /// The trace part of the request.
    pub fn trace(&self) -> TraceRef<'_, 'a> {
        TraceRef {
            context_key: &self.context_key,
            turns: &self.turns,
        }
    }

    /// The meter the request names, if this route offers it (`/meter` otherwise).
    pub fn meter(
        &self,
        offered: &[crate::meter::Meter],
    ) -> Result<crate::meter::Meter, crate::trace::FieldError> {
        crate::trace::requested_meter(self.meter.as_deref(), offered)
    }
}

/// Whether `s` holds a control character (newline and tab aside when `allow_newlines`) or a
/// character XML cannot carry (U+FFFE, U+FFFF): text of a vow reaches Atom feeds and HTML.
pub fn has_control(s: &str, allow_newlines: bool) -> bool {
    s.chars().any(|c| {
        (c.is_control() && !(allow_newlines && (c == '\n' || c == '\t')))
            || c == '\u{FFFE}'
            || c == '\u{FFFF}'
    })
}

/// Bidirectional controls and zero-width characters: invisible, they make one agent name
/// look like another (refused in agent names).
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{180E}')
}

/// The form an agent name is kept, signed and matched in: Unicode NFC.
pub fn normalize_agent(agent: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    agent.nfc().collect()
}

/// The exact text a vow's wallet signs with EIP-191 `personal_sign` to report in on the free
/// route (library/VOWS.md, "Reporting in"): it names the origin, the action, the vow and binds the trace
/// (`sha256(trace)`), the note, the donation choice, the meter (a `Meter` line for every
/// meter but `meter/1`, whose text is the one signed before there were two) and the UTC date
/// it is good on, so it proves this one report-in ([`crate::owner`]). A signature is accepted
/// once (a replay is refused).
pub fn report_message(
    origin: &str,
    vow_id: &str,
    trace_sha256: &str,
    note: Option<&str>,
    donate_trace: bool,
    meter: crate::meter::Meter,
    date: &str,
) -> String {
    use sha2::{Digest, Sha256};
    let mut params = vec![
        ("Vow", vow_id.to_owned()),
        ("Trace SHA-256", trace_sha256.to_owned()),
        (
            "Note SHA-256",
            note.map_or_else(
                || "none".to_owned(),
                |n| hex::encode(Sha256::digest(n.as_bytes())),
            ),
        ),
        (
            "Donate trace",
            if donate_trace { "yes" } else { "no" }.to_owned(),
        ),
    ];
    if meter != crate::meter::Meter::V1 {
        params.push(("Meter", meter.as_str().to_owned()));
    }
    crate::owner::OwnerText {
        kind: crate::owner::Kind::ReportIn,
        effect: "Signing adds this report-in to the vow's public chain. It moves no funds.",
        origin,
        params,
        date,
        after: Vec::new(),
        block: None,
    }
    .render()
}

/// Check a vow text (also used for `GET /vow/message`). `pointer` names the field.
pub fn check_text(text: &str, pointer: &str) -> Result<(), FieldError> {
    let n = text.chars().count();
    if text.trim().is_empty() {
        return Err(FieldError::at(pointer, "the vow text is empty"));
    }
    if n > MAX_VOW_TEXT {
        return Err(FieldError::at(
            pointer,
            format!("the vow text is {n} characters; at most {MAX_VOW_TEXT}"),
        ));
    }
    if has_control(text, true) || text.contains('\r') {
        return Err(FieldError::at(
            pointer,
            "the vow text may not contain control characters other than newline and tab",
        ));
    }
    Ok(())
}

/// Check an agent name.
pub fn check_agent(agent: &str, pointer: &str) -> Result<(), FieldError> {
    let n = agent.chars().count();
    if n == 0 || n > MAX_AGENT {
        return Err(FieldError::at(
            pointer,
            format!("the agent name must be 1 to {MAX_AGENT} characters (got {n})"),
        ));
    }
    if agent.trim() != agent || has_control(agent, false) {
        return Err(FieldError::at(
            pointer,
            "the agent name may not start or end with spaces or contain control characters",
        ));
    }
    if let Some(c) = agent.chars().find(|&c| is_invisible(c)) {
        return Err(FieldError::at(
            pointer,
            format!(
                "the agent name may not contain bidirectional controls or zero-width characters \
                 (found U+{:04X})",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

/// Check a cadence in hours and return it in whole seconds.
pub fn check_cadence(hours: f64, pointer: &str) -> Result<u64, FieldError> {
    let secs = hours * 3600.0;
    if !hours.is_finite()
        || !(MIN_CADENCE_HOURS..=MAX_CADENCE_HOURS).contains(&hours)
        || secs.fract() != 0.0
    {
        return Err(FieldError::at(
            pointer,
            format!(
                "cadence_hours must be a number of hours from {MIN_CADENCE_HOURS} to \
                 {MAX_CADENCE_HOURS} that is a whole number of seconds (got {hours})"
            ),
        ));
    }
    Ok(secs as u64)
}

/// Parse a `0x`-prefixed 20-byte address (any case).
pub fn parse_wallet(s: &str) -> Option<[u8; 20]> {
    let hex_part = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let mut out = [0u8; 20];
    hex::decode_to_slice(hex_part, &mut out).ok()?;
    Some(out)
}

/// A vow request that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedVow {
    /// The agent name in NFC (what is signed, kept and matched).
    pub agent: String,
    /// Cadence in seconds.
    pub cadence_seconds: u64,
    /// The wallet, lowercase hex, when given.
    pub wallet: Option<[u8; 20]>,
    /// Whether a signature was given (it still has to verify).
    pub signed: bool,
    /// Whether the vow is sealed.
    pub sealed: bool,
}

/// Check every field of a vow request (the signature itself is verified by the caller with
/// [`eip191`] against [`vow_message`]).
pub fn check_vow(req: &VowRequest) -> Result<CheckedVow, Vec<FieldError>> {
    let mut errs = Vec::new();
    if let Err(e) = check_text(&req.text, "/text") {
        errs.push(e);
    }
    if let Err(e) = check_agent(&req.agent, "/agent") {
        errs.push(e);
    }
    let cadence = check_cadence(req.cadence_hours, "/cadence_hours")
        .map_err(|e| errs.push(e))
        .unwrap_or(0);
    let wallet = match &req.wallet {
        None => None,
        Some(w) => match parse_wallet(w) {
            Some(a) => Some(a),
            None => {
                errs.push(FieldError::at(
                    "/wallet",
                    "wallet must be a 0x-prefixed 20-byte hex address",
                ));
                None
            }
        },
    };
    let sealed = req.sealed.unwrap_or(false);
    match (&req.signature, &req.wallet) {
        (Some(_), None) => errs.push(FieldError::at(
            "/wallet",
            "a signature needs the wallet that made it",
        )),
        (None, Some(_)) if !sealed => errs.push(FieldError::at(
            "/signature",
            "a wallet without its signature proves nothing: sign the text of GET /vow/message \
             with EIP-191, or leave wallet out for a sandbox vow",
        )),
        (None, _) if sealed => errs.push(FieldError::at(
            "/sealed",
            "a sealed vow must be signed by its wallet: GET /vow/message with sealed=true, \
             sign it with EIP-191, and send wallet and signature",
        )),
        _ => {}
    }
    if errs.is_empty() {
        Ok(CheckedVow {
            agent: normalize_agent(&req.agent),
            cadence_seconds: cadence,
            wallet,
            signed: req.signature.is_some(),
            sealed,
        })
    } else {
        Err(errs)
    }
}

/// Check a report-in's own fields (the trace is validated by [`crate::trace::validate`]).
pub fn check_report(req: &ReportRequest<'_>) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    if !is_vow_id(&req.vow_id) {
        errs.push(FieldError::at(
            "/vow_id",
            format!(
                "{:?} is not a vow id (16 lowercase hex digits)",
                clip(&req.vow_id)
            ),
        ));
    }
    if let Some(sig) = &req.signature {
        if !is_signature_hex(sig) {
            errs.push(FieldError::at(
                "/signature",
                "signature must be 130 hex digits (65 bytes), 0x optional",
            ));
        }
    }
    if let Some(note) = &req.note {
        let n = note.chars().count();
        if n > MAX_NOTE {
            errs.push(FieldError::at(
                "/note",
                format!("the note is {n} characters; at most {MAX_NOTE}"),
            ));
        } else if has_control(note, true) {
            errs.push(FieldError::at(
                "/note",
                "the note may not contain control characters other than newline and tab",
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// 65 bytes of hex, `0x` optional: the shape of an EIP-191 signature, in every spelling the
/// owner-signed writes take (PREPARE.md, "Owner messages").
pub fn is_signature_hex(s: &str) -> bool {
    let h = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    h.len() == 130 && h.bytes().all(|b| b.is_ascii_hexdigit())
}

fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

pub use crate::limits::VOW_ID_LEN;

/// True when `s` has the shape of a vow id.
pub fn is_vow_id(s: &str) -> bool {
    s.len() == VOW_ID_LEN && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A vow id held as the 8 bytes its 16 hex digits spell: what the renderer keeps per vow
/// (window schedule, checks) costs a word, not a string, at a million vows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VowKey(u64);

impl VowKey {
    /// The key of vow id `s`; `None` when `s` is not a vow id ([`is_vow_id`]).
    pub fn parse(s: &str) -> Option<VowKey> {
        if !is_vow_id(s) {
            return None;
        }
        u64::from_str_radix(s, 16).ok().map(VowKey)
    }
}

impl std::fmt::Display for VowKey {
    /// The vow id: 16 lowercase hex digits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The vow id assigned to the vow recorded at `log_index`: the first 8 bytes of
/// SHA-256(`conduct.vow_id/v1`, origin, log index, text hash, agent), in hex.
pub fn vow_id(origin: &str, log_index: u64, text_sha256: &str, agent: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [
        "conduct.vow_id/v1",
        origin,
        &log_index.to_string(),
        text_sha256,
        agent,
    ] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(&h.finalize()[..VOW_ID_LEN / 2])
}

/// A cadence in hours as the message and records print it (the JSON number form).
pub fn format_hours(hours: f64) -> String {
    let mut out = Vec::new();
    match crate::canonical::write_f64(&mut out, hours) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => hours.to_string(),
    }
}

/// The exact text a wallet signs with EIP-191 `personal_sign` to take a vow (library/VOWS.md,
/// "Taking a vow"): it names the service origin, the action, every parameter and the UTC date
/// (`YYYY-MM-DD`) it is good on, so a signature cannot be replayed elsewhere or for another
/// vow ([`crate::owner`]).
pub fn vow_message(
    origin: &str,
    text: &str,
    agent: &str,
    cadence_hours: f64,
    sealed: bool,
    date: &str,
) -> String {
    use sha2::{Digest, Sha256};
    crate::owner::OwnerText {
        kind: crate::owner::Kind::TakeVow,
        effect: "Signing publishes this vow on the conduct ledger. It moves no funds.",
        origin,
        params: vec![
            ("Agent", agent.to_owned()),
            ("Cadence hours", format_hours(cadence_hours)),
            ("Sealed", if sealed { "yes" } else { "no" }.to_owned()),
        ],
        date,
        after: vec![("Text SHA-256", hex::encode(Sha256::digest(text.as_bytes())))],
        block: Some(("Text", text)),
    }
    .render()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A vow id and its key spell each other; nothing else has a key.
        #[test]
        fn a_vow_key_spells_its_vow_id(n in proptest::prelude::any::<u64>(), s in ".{0,20}") {
            let id = format!("{n:016x}");
            let key = VowKey::parse(&id).unwrap();
            proptest::prop_assert_eq!(key.to_string(), id);
            proptest::prop_assert_eq!(VowKey::parse(&s).is_some(), is_vow_id(&s));
            if let Some(k) = VowKey::parse(&s) {
                proptest::prop_assert_eq!(k.to_string(), s);
            }
        }
    }

    #[test]
    fn vow_keys_refuse_what_is_not_a_vow_id() {
        for s in [
            "",
            "0123456789abcde",
            "0123456789ABCDEF",
            "+123456789abcdef",
            "0123456789abcdef0",
        ] {
            assert_eq!(VowKey::parse(s), None, "{s}");
        }
        let id = vow_id("https://x", 7, "ab", "agent");
        assert_eq!(VowKey::parse(&id).unwrap().to_string(), id);
    }

    #[test]
    fn agent_names_refuse_invisible_characters_and_are_nfc() {
        assert!(check_agent("bot\u{202E}gnp", "/agent").is_err());
        assert!(check_agent("b\u{200B}ot", "/agent").is_err());
        assert!(check_agent("bot\u{FFFF}", "/agent").is_err());
        assert!(check_agent("caf\u{e9}", "/agent").is_ok());
        assert_eq!(normalize_agent("cafe\u{301}"), "caf\u{e9}");
    }

    #[test]
    fn notes_refuse_characters_xml_cannot_carry() {
        for bad in ["a\u{FFFE}", "a\u{FFFF}", "a\u{1}"] {
            assert!(has_control(bad, true), "{bad:?}");
        }
        assert!(!has_control("line\nnext\ttab", true));
    }

    #[test]
    fn report_message_binds_vow_trace_note_donation_and_meter() {
        use crate::meter::Meter;
        let d = "2026-11-24";
        let msg = |note, donate, meter, date| {
            report_message(
                "https://x.example",
                "00ff00ff00ff00ff",
                "ab",
                note,
                donate,
                meter,
                date,
            )
        };
        let m = msg(Some("n"), false, Meter::V1, d);
        assert!(m.contains("Vow: 00ff00ff00ff00ff\n"));
        assert!(m.contains("Trace SHA-256: ab\n"));
        // meter/1's text is the one signed before there were two meters.
        assert!(m.ends_with("Donate trace: no\nDate (UTC): 2026-11-24"));
        let m2 = msg(Some("n"), false, Meter::V2, d);
        assert!(m2.ends_with("Donate trace: no\nMeter: meter/2\nDate (UTC): 2026-11-24"));
        assert_ne!(m, m2);
        assert_ne!(m, msg(None, false, Meter::V1, d));
        assert_ne!(m, msg(Some("n"), true, Meter::V1, d));
        assert_ne!(m, msg(Some("n"), false, Meter::V1, "2026-11-25"));
    }

    fn req(v: serde_json::Value) -> VowRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn vow_checks_name_the_field() {
        let ok = req(serde_json::json!({"text":"help users","agent":"a","cadence_hours":24}));
        assert_eq!(check_vow(&ok).unwrap().cadence_seconds, 86_400);
        let sealed =
            req(serde_json::json!({"text":"x","agent":"a","cadence_hours":24,"sealed":true}));
        assert_eq!(check_vow(&sealed).unwrap_err()[0].pointer, "/sealed");
        let bad =
            req(serde_json::json!({"text":" ","agent":"","cadence_hours":0.005,"wallet":"0x12"}));
        let ptrs: Vec<_> = check_vow(&bad)
            .unwrap_err()
            .into_iter()
            .map(|e| e.pointer)
            .collect();
        assert_eq!(
            ptrs,
            ["/text", "/agent", "/cadence_hours", "/wallet", "/signature"]
        );
        let frac = req(serde_json::json!({"text":"x","agent":"a","cadence_hours":1.0001}));
        assert!(check_vow(&frac).is_err());
        let half = req(serde_json::json!({"text":"x","agent":"a","cadence_hours":1.5}));
        assert_eq!(check_vow(&half).unwrap().cadence_seconds, 5400);
    }

    #[test]
    fn signatures_take_every_spelling_of_65_bytes() {
        let h = "ab".repeat(65);
        for ok in [
            format!("0x{h}"),
            format!("0X{h}"),
            h.clone(),
            h.to_uppercase(),
        ] {
            assert!(is_signature_hex(&ok), "{ok}");
        }
        for bad in [
            format!("0x{}", &h[2..]),
            format!("0x{h}00"),
            format!("0y{h}"),
            "0x".into(),
        ] {
            assert!(!is_signature_hex(&bad), "{bad}");
        }
    }

    #[test]
    fn note_limit_is_characters() {
        let mk = |note: String| ReportRequest {
            vow_id: "0123456789abcdef".into(),
            context_key: "c".into(),
            turns: vec![],
            note: Some(note),
            donate_trace: None,
            signature: None,
            meter: None,
        };
        assert!(check_report(&mk("é".repeat(1000))).is_ok());
        let e = check_report(&mk("x".repeat(1001))).unwrap_err();
        assert_eq!(e[0].pointer, "/note");
    }

    #[test]
    fn message_names_everything() {
        let d = "2026-11-24";
        let m = vow_message("https://c.example", "serve\nwell", "bot", 24.0, true, d);
        for part in [
            "Origin: https://c.example",
            "Action: take_vow",
            "Agent: bot",
            "Cadence hours: 24\n",
            "Sealed: yes",
            "Date (UTC): 2026-11-24\n",
            "Text:\nserve\nwell",
        ] {
            assert!(m.contains(part), "{part}");
        }
        assert_ne!(
            m,
            vow_message("https://other.example", "serve\nwell", "bot", 24.0, true, d)
        );
        assert_ne!(
            m,
            vow_message(
                "https://c.example",
                "serve\nwell",
                "bot",
                24.0,
                true,
                "2026-11-25"
            )
        );
        assert_eq!(format_hours(1.5), "1.5");
    }

    #[test]
    fn vow_ids_are_stable_and_shaped() {
        let id = vow_id("o", 3, "ab", "agent");
        assert!(is_vow_id(&id));
        assert_eq!(id, vow_id("o", 3, "ab", "agent"));
        assert_ne!(id, vow_id("o", 4, "ab", "agent"));
    }
}
