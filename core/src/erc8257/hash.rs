//! The manifest hash (ERC-8257 §2 "Canonical Manifest Bytes"): reject a BOM, non-NFC strings
//! and upper-case hex in the ERC's hex fields, then `keccak256` of the RFC 8785 bytes.

use serde_json::Value;
use sha3::{Digest, Keccak256};

use super::{pointer, push_token, ManifestError, MAX_MANIFEST_BYTES};
use crate::canonical::jcs;

/// `keccak256` of `bytes`.
pub fn keccak256(bytes: &[u8]) -> [u8; 32] {
    Keccak256::digest(bytes).into()
}

/// Parse fetched manifest bytes: refuse a UTF-8 BOM, more than [`MAX_MANIFEST_BYTES`], invalid
/// UTF-8 or JSON (lone surrogates included), and anything but an object. A member named twice
/// keeps its last value, as `JSON.parse` does.
pub fn parse_manifest(bytes: &[u8]) -> Result<Value, ManifestError> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(ManifestError::Bom);
    }
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(ManifestError::TooLarge { len: bytes.len() });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| ManifestError::InvalidJson {
        reason: format!("invalid UTF-8 at byte {}", e.valid_up_to()),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| ManifestError::InvalidJson {
        reason: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(ManifestError::invalid(
            "",
            "the manifest is not a JSON object",
        ));
    }
    Ok(value)
}

/// The pre-JCS rules on a parsed manifest: every string, key or value at any depth, in NFC;
/// lower-case hex digits in `creatorAddress`, the `0x` parts of `pricing[].asset` and
/// `pricing[].recipient`, `access.requirements[].kind` and `.data`,
/// `verifiability.attestation.enclaveHash` and `verifiability.reproducibleBuild.buildHash`.
/// Fields that are not hex at all are left to [`super::validate_manifest`].
pub fn check_canonical_rules(value: &Value) -> Result<(), ManifestError> {
    let mut path = Vec::new();
    check_nfc(value, &mut path)?;
    check_hex_case(value)
}

/// RFC 8785 bytes of fetched manifest bytes, after [`parse_manifest`] and
/// [`check_canonical_rules`].
pub fn canonical_bytes(bytes: &[u8]) -> Result<Vec<u8>, ManifestError> {
    let value = parse_manifest(bytes)?;
    check_canonical_rules(&value)?;
    jcs(&value).map_err(|e| ManifestError::invalid("", e.to_string()))
}

/// `manifestHash` of fetched bytes: `keccak256(JCS(manifest))` once the bytes pass
/// [`parse_manifest`] and [`check_canonical_rules`]. The manifest rules are
/// [`super::validate_manifest`]'s.
pub fn manifest_hash(bytes: &[u8]) -> Result<[u8; 32], ManifestError> {
    canonical_bytes(bytes).map(|c| keccak256(&c))
}

/// `keccak256(JCS(value))`, no rule checked.
pub(crate) fn hash_value(value: &Value) -> Result<[u8; 32], ManifestError> {
    jcs(value)
        .map(|c| keccak256(&c))
        .map_err(|e| ManifestError::invalid("", e.to_string()))
}

/// A reference token of the path walked so far.
enum Token<'a> {
    Key(&'a str),
    Index(usize),
}

fn render(path: &[Token<'_>]) -> String {
    let mut p = String::new();
    for t in path {
        match t {
            Token::Key(k) => push_token(&mut p, k),
            Token::Index(i) => push_token(&mut p, &i.to_string()),
        }
    }
    p
}

fn nfc(s: &str) -> bool {
    s.is_ascii() || unicode_normalization::is_nfc(s)
}

fn check_nfc<'a>(value: &'a Value, path: &mut Vec<Token<'a>>) -> Result<(), ManifestError> {
    match value {
        Value::String(s) if !nfc(s) => Err(ManifestError::NotNfc { path: render(path) }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Token::Index(i));
                check_nfc(item, path)?;
                path.pop();
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Token::Key(k));
                if !nfc(k) {
                    return Err(ManifestError::NotNfc { path: render(path) });
                }
                check_nfc(v, path)?;
                path.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// True when `s` is `0x` (or `0X`) and hex digits, with an upper-case letter among them.
pub(crate) fn upper_hex(s: &str) -> bool {
    let Some(digits) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) else {
        return false;
    };
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_hexdigit())
        && (s.as_bytes()[1] == b'X' || digits.bytes().any(|b| b.is_ascii_uppercase()))
}

/// A CAIP identifier with an upper-case `0x` part (parts split at `:` and `/`).
pub(crate) fn caip_upper_hex(s: &str) -> bool {
    s.split([':', '/']).any(upper_hex)
}

fn check_hex_case(m: &Value) -> Result<(), ManifestError> {
    let whole = |v: Option<&Value>, path: &[&str]| match v.and_then(Value::as_str) {
        Some(s) if upper_hex(s) => Err(ManifestError::UppercaseHex {
            path: pointer(path.iter().copied()),
        }),
        _ => Ok(()),
    };
    whole(m.get("creatorAddress"), &["creatorAddress"])?;
    if let Some(entries) = m.get("pricing").and_then(Value::as_array) {
        for (i, e) in entries.iter().enumerate() {
            for field in ["asset", "recipient"] {
                if e.get(field)
                    .and_then(Value::as_str)
                    .is_some_and(caip_upper_hex)
                {
                    return Err(ManifestError::UppercaseHex {
                        path: pointer(["pricing", &i.to_string(), field]),
                    });
                }
            }
        }
    }
    // The ERC names `access[].requirements[]`; `access` is an object in its schema, but an
    // array of such objects is checked the same way (it is rejected later anyway).
    let mut blocks: Vec<(Option<String>, &Value)> = Vec::new();
    match m.get("access") {
        Some(Value::Array(items)) => blocks.extend(
            items
                .iter()
                .enumerate()
                .map(|(i, b)| (Some(i.to_string()), b)),
        ),
        Some(b) => blocks.push((None, b)),
        None => {}
    }
    for (at, block) in blocks {
        let Some(reqs) = block.get("requirements").and_then(Value::as_array) else {
            continue;
        };
        for (i, r) in reqs.iter().enumerate() {
            let i = i.to_string();
            for field in ["kind", "data"] {
                let mut path = vec!["access"];
                if let Some(at) = &at {
                    path.push(at);
                }
                path.extend(["requirements", &i, field]);
                whole(r.get(field), &path)?;
            }
        }
    }
    let v = m.get("verifiability");
    whole(
        v.and_then(|v| v.get("attestation"))
            .and_then(|a| a.get("enclaveHash")),
        &["verifiability", "attestation", "enclaveHash"],
    )?;
    whole(
        v.and_then(|v| v.get("reproducibleBuild"))
            .and_then(|a| a.get("buildHash")),
        &["verifiability", "reproducibleBuild", "buildHash"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keccak_of_empty_is_the_known_value() {
        assert_eq!(
            hex::encode(keccak256(b"")),
            "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        );
    }

    #[test]
    fn upper_hex_only_flags_hex_with_capitals() {
        assert!(upper_hex("0xAB"));
        assert!(upper_hex("0XAb"));
        assert!(upper_hex("0X12"));
        assert!(!upper_hex("0xab"));
        assert!(!upper_hex("0x"));
        assert!(!upper_hex("0xZZ"));
        assert!(!upper_hex("AB"));
        assert!(caip_upper_hex("eip155:1/erc20:0xA0b8"));
        assert!(caip_upper_hex("eip155:1:0xABCDEF"));
        assert!(!caip_upper_hex("eip155:1/slip44:60"));
    }

    #[test]
    fn nfd_key_is_named() {
        let v: Value = serde_json::json!({"a": {"e\u{301}": 1}});
        assert_eq!(
            check_canonical_rules(&v),
            Err(ManifestError::NotNfc {
                path: "/a/e\u{301}".into()
            })
        );
        let v: Value = serde_json::json!({"a": ["ok", "e\u{301}"]});
        assert_eq!(
            check_canonical_rules(&v),
            Err(ManifestError::NotNfc {
                path: "/a/1".into()
            })
        );
    }
}
