//! The agent subject ids a validation credential is bound to (library/ERC8004.md, "Subject
//! forms"): each form's grammar, its check, and the one normal form the credential carries.
//!
//! | form | grammar | normal form |
//! |---|---|---|
//! | `erc8004-agentId` | `eip155:<chain id>:<0x registry>#<agent id>` | registry in EIP-55 |
//! | `wallet` | `0x` + 40 hex digits | EIP-55 |
//! | `caip10` | CAIP-10 `namespace:reference:address` | `eip155` addresses in EIP-55, others as given |
//! | `vow` | 16 lowercase hex digits (a vow of this service) | as given |
//! | `npub` | NIP-19 bech32 `npub1...` of a 32-byte x-only key on secp256k1 | lower case |
//! | `did` | W3C DID `did:<method>:<method-specific-id>` | as given |
//!
//! Hex addresses in one case (all lower or all upper) are accepted as they are; an address in
//! mixed case must carry a valid EIP-55 checksum (a typo in it is caught, never repaired).

use crate::erc8257::keccak256;
use crate::trace::FieldError;

/// Most characters of any subject id (a long `did:jwk` fits; nothing else comes near).
pub const MAX_SUBJECT_ID: usize = 2048;

/// Largest `uint256`, in decimal (the bound of an ERC-8004 `agentId`).
const UINT256_MAX: &str =
    "115792089237316195423570985008687907853269984665640564039457584007913129639935";

/// A subject form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// An ERC-8004 agent: its identity registry on an EVM chain and its `agentId`.
    AgentId,
    /// An EVM wallet address.
    Wallet,
    /// A CAIP-10 account id on any chain.
    Caip10,
    /// A vow of this service.
    Vow,
    /// A Nostr public key (NIP-19).
    Npub,
    /// A W3C decentralized identifier.
    Did,
}

impl Form {
    /// Every form, in the order the documents list them.
    pub const ALL: [Form; 6] = [
        Form::AgentId,
        Form::Wallet,
        Form::Caip10,
        Form::Vow,
        Form::Npub,
        Form::Did,
    ];

    /// The form's name in a request and a credential.
    pub fn name(self) -> &'static str {
        match self {
            Form::AgentId => "erc8004-agentId",
            Form::Wallet => "wallet",
            Form::Caip10 => "caip10",
            Form::Vow => "vow",
            Form::Npub => "npub",
            Form::Did => "did",
        }
    }

    /// The form named `name` (exact, case-sensitive).
    pub fn from_name(name: &str) -> Option<Form> {
        Form::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The form's rule, as a refusal states it.
    pub fn rule(self) -> &'static str {
        match self {
            Form::AgentId => {
                "eip155:<chain id>:<registry>#<agent id>: a decimal chain id (no leading zero, \
                 not 0), the identity registry as 0x and 40 hex digits (EIP-55 when in mixed \
                 case), and the agentId as a decimal uint256 (no leading zero)"
            }
            Form::Wallet => "0x and 40 hex digits (EIP-55 when in mixed case)",
            Form::Caip10 => {
                "a CAIP-10 account id namespace:reference:address ([-a-z0-9]{3,8}, \
                 [-_a-zA-Z0-9]{1,32}, [-.%a-zA-Z0-9]{1,128}); for eip155 a decimal chain id and \
                 a 0x address of 40 hex digits (EIP-55 when in mixed case)"
            }
            Form::Vow => "a vow id of this service: 16 lowercase hex digits (see /vows)",
            Form::Npub => {
                "a NIP-19 npub: bech32 (BIP-173) with prefix npub, a valid checksum, in one \
                 case, of a 32-byte x-only secp256k1 public key"
            }
            Form::Did => {
                "a W3C DID did:<method>:<method-specific-id>: a method of lowercase letters and \
                 digits, an id of letters, digits, '.', '-', '_', '%' and two hex digits, and \
                 ':', not ending in ':'; no path, query or fragment"
            }
        }
    }
}

/// A checked subject in its normal form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// Its form.
    pub form: Form,
    /// The id in its normal form (see the module table).
    pub id: String,
}

impl Subject {
    /// For an `erc8004-agentId` subject: the chain id, registry (EIP-55) and agent id (decimal),
    /// the arguments an ERC-8004 validation request needs.
    pub fn agent(&self) -> Option<(&str, &str, &str)> {
        if self.form != Form::AgentId {
            return None;
        }
        let rest = self.id.strip_prefix("eip155:")?;
        let (chain, rest) = rest.split_once(':')?;
        let (registry, agent) = rest.split_once('#')?;
        Some((chain, registry, agent))
    }
}

/// Check `id` as a subject of form `form` (a name of [`Form::name`]) and return its normal
/// form. A refusal names `/subject/form` (an unknown form) or `/subject/id` with the form's
/// rule.
pub fn parse_subject(form: &str, id: &str) -> Result<Subject, FieldError> {
    let f = Form::from_name(form).ok_or_else(|| {
        FieldError::at(
            "/subject/form",
            format!(
                "unknown subject form {form:?}; the forms are {}",
                Form::ALL.map(Form::name).join(", ")
            ),
        )
    })?;
    let refuse = |why: String| {
        FieldError::at(
            "/subject/id",
            format!(
                "not a {} subject id ({why}); expected {}",
                f.name(),
                f.rule()
            ),
        )
    };
    if id.chars().count() > MAX_SUBJECT_ID {
        return Err(refuse(format!("longer than {MAX_SUBJECT_ID} characters")));
    }
    let normal = match f {
        Form::AgentId => agent_id(id),
        Form::Wallet => address(id),
        Form::Caip10 => caip10(id),
        Form::Vow => vow(id),
        Form::Npub => npub(id),
        Form::Did => did(id),
    }
    .map_err(refuse)?;
    Ok(Subject {
        form: f,
        id: normal,
    })
}

/// EIP-55 form of 20 address bytes.
pub fn eip55(bytes: &[u8; 20]) -> String {
    let lower = hex::encode(bytes);
    let hash = keccak256(lower.as_bytes());
    let mut out = String::with_capacity(42);
    out.push_str("0x");
    for (i, c) in lower.chars().enumerate() {
        let nibble = (hash[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0x0f;
        out.push(if c.is_ascii_alphabetic() && nibble >= 8 {
            c.to_ascii_uppercase()
        } else {
            c
        });
    }
    out
}

/// `0x` + 40 hex digits: one case as given, mixed case only with a valid EIP-55 checksum;
/// returned in EIP-55.
fn address(s: &str) -> Result<String, String> {
    let hex_part = s
        .strip_prefix("0x")
        .ok_or_else(|| "does not start with 0x".to_owned())?;
    if hex_part.len() != 40 || !hex_part.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the address is not 40 hex digits".into());
    }
    let mut bytes = [0u8; 20];
    hex::decode_to_slice(hex_part, &mut bytes).map_err(|e| e.to_string())?;
    let checksummed = eip55(&bytes);
    let mixed = hex_part.bytes().any(|b| b.is_ascii_lowercase())
        && hex_part.bytes().any(|b| b.is_ascii_uppercase());
    if mixed && checksummed != s {
        return Err(format!(
            "mixed case but not the EIP-55 checksum (which is {checksummed})"
        ));
    }
    Ok(checksummed)
}

/// A decimal number without a leading zero (`0` itself only when `zero`), at most `max_len`
/// digits.
fn decimal(s: &str, what: &str, max_len: usize, zero: bool) -> Result<(), String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("the {what} is not a decimal number"));
    }
    if s == "0" {
        return if zero {
            Ok(())
        } else {
            Err(format!("the {what} is 0"))
        };
    }
    if s.starts_with('0') {
        return Err(format!("the {what} has a leading zero"));
    }
    if s.len() > max_len {
        return Err(format!("the {what} has more than {max_len} digits"));
    }
    Ok(())
}

fn agent_id(s: &str) -> Result<String, String> {
    let rest = s
        .strip_prefix("eip155:")
        .ok_or_else(|| "does not start with eip155:".to_owned())?;
    let (chain, rest) = rest
        .split_once(':')
        .ok_or_else(|| "no ':' after the chain id".to_owned())?;
    decimal(chain, "chain id", 32, false)?;
    let (registry, agent) = rest
        .split_once('#')
        .ok_or_else(|| "no '#' before the agent id".to_owned())?;
    let registry = address(registry).map_err(|e| format!("registry: {e}"))?;
    decimal(agent, "agent id", UINT256_MAX.len(), true)?;
    if agent.len() == UINT256_MAX.len() && agent > UINT256_MAX {
        return Err("the agent id is above the largest uint256".into());
    }
    Ok(format!("eip155:{chain}:{registry}#{agent}"))
}

fn all_in(s: &str, min: usize, max: usize, ok: impl Fn(u8) -> bool) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(ok)
}

fn caip10(s: &str) -> Result<String, String> {
    let mut parts = s.splitn(3, ':');
    let (namespace, reference, account) = match (parts.next(), parts.next(), parts.next()) {
        (Some(n), Some(r), Some(a)) => (n, r, a),
        _ => return Err("not three parts separated by ':'".into()),
    };
    if !all_in(namespace, 3, 8, |b| {
        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
    }) {
        return Err("the namespace is not [-a-z0-9]{3,8}".into());
    }
    if !all_in(reference, 1, 32, |b| {
        b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
    }) {
        return Err("the chain reference is not [-_a-zA-Z0-9]{1,32}".into());
    }
    if !all_in(account, 1, 128, |b| {
        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'%')
    }) {
        return Err("the account address is not [-.%a-zA-Z0-9]{1,128}".into());
    }
    if namespace == "eip155" {
        decimal(reference, "eip155 chain id", 32, false)?;
        let a = address(account)?;
        return Ok(format!("eip155:{reference}:{a}"));
    }
    Ok(s.to_owned())
}

fn vow(s: &str) -> Result<String, String> {
    if crate::vow::is_vow_id(s) {
        Ok(s.to_owned())
    } else {
        Err("not 16 lowercase hex digits".into())
    }
}

fn npub(s: &str) -> Result<String, String> {
    let key = crate::nostr::npub_decode(s).map_err(|e| e.to_string())?;
    if !crate::nostr::is_curve_point(&key) {
        return Err("its key is not the x coordinate of a secp256k1 point".into());
    }
    Ok(crate::nostr::npub_encode(&key))
}

fn did(s: &str) -> Result<String, String> {
    let rest = s
        .strip_prefix("did:")
        .ok_or_else(|| "does not start with did:".to_owned())?;
    let (method, id) = rest
        .split_once(':')
        .ok_or_else(|| "no ':' after the method".to_owned())?;
    if method.is_empty()
        || !method
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err("the method is not one or more lowercase letters and digits".into());
    }
    if id.is_empty() || id.ends_with(':') {
        return Err("the method-specific id is empty or ends with ':'".into());
    }
    let b = id.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let pair = b.get(i + 1..i + 3);
                if !pair.is_some_and(|p| p.iter().all(u8::is_ascii_hexdigit)) {
                    return Err("a '%' is not followed by two hex digits".into());
                }
                i += 3;
            }
            c if c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':') => i += 1,
            c => {
                let what = match c {
                    b'/' | b'?' | b'#' => "a DID URL's path, query or fragment",
                    _ => "a character outside the DID syntax",
                };
                return Err(format!("holds {:?}: {what}", char::from(c)));
            }
        }
    }
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NPUB: &str = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg";

    fn ok(form: &str, id: &str) -> String {
        match parse_subject(form, id) {
            Ok(s) => s.id,
            Err(e) => panic!("{form} {id}: {e}"),
        }
    }

    fn refused(form: &str, id: &str) -> FieldError {
        match parse_subject(form, id) {
            Ok(s) => panic!("{form} {id} accepted as {}", s.id),
            Err(e) => e,
        }
    }

    #[test]
    fn eip55_vectors() {
        // EIP-55's own examples.
        for a in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            assert_eq!(ok("wallet", a), a);
            assert_eq!(ok("wallet", &a.to_ascii_lowercase()), a);
            assert_eq!(
                ok("wallet", &format!("0x{}", a[2..].to_ascii_uppercase())),
                a
            );
        }
        let e = refused("wallet", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD");
        assert_eq!(e.pointer, "/subject/id");
        assert!(e.detail.contains("EIP-55"), "{}", e.detail);
    }

    #[test]
    fn every_form_accepts_its_grammar() {
        assert_eq!(
            ok(
                "erc8004-agentId",
                "eip155:8453:0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed#42"
            ),
            "eip155:8453:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#42"
        );
        ok(
            "erc8004-agentId",
            &format!("eip155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#{UINT256_MAX}"),
        );
        ok(
            "erc8004-agentId",
            "eip155:31337:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#0",
        );
        assert_eq!(
            ok(
                "caip10",
                "eip155:1:0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359"
            ),
            "eip155:1:0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
        );
        for c in [
            "bip122:000000000019d6689c085ae165831e93:128Lkh3S7CkDTBZ8W7BbpsN3YYizJMp8p6",
            "cosmos:cosmoshub-3:cosmos1t2uflqwqe0fsj0shcfkrvpukewcw40yjj6hdc0",
            "solana:4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZ:9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
            "hedera:mainnet:0.0.1234567",
        ] {
            assert_eq!(ok("caip10", c), c);
        }
        assert_eq!(ok("vow", "0123456789abcdef"), "0123456789abcdef");
        assert_eq!(ok("npub", NPUB), NPUB);
        assert_eq!(ok("npub", &NPUB.to_ascii_uppercase()), NPUB);
        for d in [
            "did:example:123456789abcdefghi",
            "did:web:example.com",
            "did:web:example.com%3A8443:user:alice",
            "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
            "did:pkh:eip155:1:0xb9c5714089478a327f09197987f16f9e5d936e8a",
        ] {
            assert_eq!(ok("did", d), d);
        }
    }

    #[test]
    fn a_malformed_id_of_each_form_is_refused_with_its_rule() {
        // A well-formed npub of 32 bytes that are no x coordinate of the curve.
        let off_curve = crate::nostr::npub_encode(&[0xff; 32]);
        let cases = [
            (
                "erc8004-agentId",
                "eip155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            ),
            (
                "erc8004-agentId",
                "eip155:01:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#1",
            ),
            (
                "erc8004-agentId",
                "eip155:0:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#1",
            ),
            (
                "erc8004-agentId",
                "eip155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#01",
            ),
            (
                "erc8004-agentId",
                "eip155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#-1",
            ),
            (
                "erc8004-agentId",
                "solana:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed#1",
            ),
            (
                "erc8004-agentId",
                "eip155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD#1",
            ),
            ("wallet", "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
            ("wallet", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe"),
            ("wallet", "0xgaAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
            ("wallet", " 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
            ("caip10", "eip155:1"),
            (
                "caip10",
                "EIP155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            ),
            ("caip10", "eip155:1:0x5aAeb"),
            (
                "caip10",
                "eip155:1:0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD",
            ),
            ("caip10", "ab:1:xyz"),
            ("caip10", "cosmos:cosmoshub-3:cosmos1/x"),
            ("vow", "0123456789ABCDEF"),
            ("vow", "0123456789abcde"),
            (
                "npub",
                "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptf",
            ),
            (
                "npub",
                "nsec10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg",
            ),
            (
                "npub",
                "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjPtg",
            ),
            ("npub", &off_curve),
            ("did", "did:Example:123"),
            ("did", "did:example:"),
            ("did", "did:example:abc:"),
            ("did", "did::abc"),
            ("did", "did:web:example.com/path"),
            ("did", "did:example:abc#key-1"),
            ("did", "did:example:a%2"),
            ("did", "urn:example:abc"),
        ];
        for (form, id) in cases {
            let e = refused(form, id);
            assert_eq!(e.pointer, "/subject/id", "{form} {id}");
            let rule = Form::from_name(form).unwrap().rule();
            assert!(e.detail.contains(rule), "{form} {id}: {}", e.detail);
        }
        let e = refused("ens", "vitalik.eth");
        assert_eq!(e.pointer, "/subject/form");
        assert!(e
            .detail
            .contains("erc8004-agentId, wallet, caip10, vow, npub, did"));
        let long = format!("did:example:{}", "a".repeat(MAX_SUBJECT_ID));
        assert!(refused("did", &long).detail.contains("longer than"));
    }

    #[test]
    fn an_agent_subject_gives_its_request_arguments() {
        let s = parse_subject(
            "erc8004-agentId",
            "eip155:8453:0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed#42",
        )
        .unwrap();
        assert_eq!(
            s.agent(),
            Some(("8453", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "42"))
        );
        assert_eq!(
            parse_subject("vow", "0123456789abcdef").unwrap().agent(),
            None
        );
    }

    fn addr() -> impl Strategy<Value = [u8; 20]> {
        proptest::array::uniform20(any::<u8>())
    }

    proptest! {
        #[test]
        fn parsers_never_panic_and_normal_forms_are_fixed_points(
            form in prop::sample::select(Form::ALL.map(Form::name).to_vec()),
            id in "\\PC{0,80}",
        ) {
            if let Ok(s) = parse_subject(form, &id) {
                let again = parse_subject(form, &s.id).unwrap();
                prop_assert_eq!(again, s);
            }
        }

        #[test]
        fn addresses_in_any_one_case_normalise_to_eip55(a in addr(), upper in any::<bool>()) {
            let lower = format!("0x{}", hex::encode(a));
            let given = if upper { format!("0x{}", hex::encode_upper(a)) } else { lower.clone() };
            let want = eip55(&a);
            prop_assert_eq!(ok("wallet", &given), want.clone());
            prop_assert_eq!(ok("caip10", &format!("eip155:10:{given}")), format!("eip155:10:{want}"));
            prop_assert_eq!(
                ok("erc8004-agentId", &format!("eip155:10:{given}#7")),
                format!("eip155:10:{want}#7")
            );
        }

        #[test]
        fn flipping_one_letters_case_of_an_eip55_address_is_refused(a in addr(), pick in any::<usize>()) {
            let good = eip55(&a);
            let letters: Vec<usize> = good.char_indices()
                .skip(2)
                .filter(|(_, c)| c.is_ascii_alphabetic())
                .map(|(i, _)| i)
                .collect();
            prop_assume!(letters.len() >= 2);
            let at = letters[pick % letters.len()];
            let mut bad: Vec<u8> = good.clone().into_bytes();
            bad[at] = if bad[at].is_ascii_uppercase() { bad[at].to_ascii_lowercase() } else { bad[at].to_ascii_uppercase() };
            let bad = String::from_utf8(bad).unwrap();
            // Still mixed case after the flip (else it is a valid one-case address).
            let hexpart = &bad[2..];
            prop_assume!(hexpart.bytes().any(|b| b.is_ascii_lowercase()) && hexpart.bytes().any(|b| b.is_ascii_uppercase()));
            prop_assert!(parse_subject("wallet", &bad).is_err());
        }

        #[test]
        fn any_npub_round_trips_and_one_changed_character_is_refused(
            key in proptest::array::uniform32(any::<u8>()),
            at in 5usize..63,
            to in 0usize..32,
        ) {
            prop_assume!(crate::nostr::is_curve_point(&key));
            let npub = crate::nostr::npub_encode(&key);
            prop_assert_eq!(ok("npub", &npub), npub.clone());
            let charset = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
            let mut b = npub.clone().into_bytes();
            prop_assume!(b[at] != charset[to]);
            b[at] = charset[to];
            prop_assert!(parse_subject("npub", &String::from_utf8(b).unwrap()).is_err());
        }

        #[test]
        fn agent_ids_and_chain_ids_round_trip(chain in 1u64.., agent in any::<u128>(), a in addr()) {
            let id = format!("eip155:{chain}:{}#{agent}", eip55(&a));
            prop_assert_eq!(ok("erc8004-agentId", &id), id);
        }

        #[test]
        fn dids_of_the_grammar_are_accepted(
            method in "[a-z0-9]{1,12}",
            segs in proptest::collection::vec("([A-Za-z0-9._-]|%[0-9A-Fa-f]{2}){1,12}", 1..4),
        ) {
            let id = format!("did:{method}:{}", segs.join(":"));
            prop_assert_eq!(ok("did", &id), id);
        }
    }
}
