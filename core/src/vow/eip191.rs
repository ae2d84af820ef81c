//! EIP-191 `personal_sign` verification: recover the address that signed a text.

use alloy_primitives::Signature;

/// Recover the 20-byte address whose key signed `message` with EIP-191 `personal_sign`.
///
/// `signature` is 65 bytes `r ‖ s ‖ v` in hex (`0x` optional), `v` being 27/28 or 0/1.
pub fn recover(message: &str, signature: &str) -> Result<[u8; 20], SignatureError> {
    let hex_part = signature
        .strip_prefix("0x")
        .or_else(|| signature.strip_prefix("0X"))
        .unwrap_or(signature);
    let raw = hex::decode(hex_part).map_err(|_| SignatureError::NotHex)?;
    if raw.len() != 65 {
        return Err(SignatureError::Length(raw.len()));
    }
    let sig = Signature::from_raw(&raw).map_err(|e| SignatureError::Malformed(e.to_string()))?;
    let addr = sig
        .recover_address_from_msg(message.as_bytes())
        .map_err(|e| SignatureError::NoAddress(e.to_string()))?;
    Ok(addr.into_array())
}

/// Why a signature could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Not hexadecimal.
    #[error("the signature is not hex")]
    NotHex,
    /// Not 65 bytes.
    #[error("the signature is {0} bytes; an EIP-191 signature is 65 (r, s, v)")]
    Length(usize),
    /// Not a valid secp256k1 signature.
    #[error("not a signature: {0}")]
    Malformed(String),
    /// No public key recovers from it.
    #[error("no address recovers from this signature: {0}")]
    NoAddress(String),
}

/// True when `signature` over `message` recovers to `wallet`.
pub fn signed_by(
    message: &str,
    signature: &str,
    wallet: &[u8; 20],
) -> Result<bool, SignatureError> {
    Ok(&recover(message, signature)? == wallet)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Produced with PyPI eth-account 0.14.0:
    //   Account.from_key("0x" + "11"*32).sign_message(encode_defunct(text="hello conduct"))
    const KEY_ADDR: &str = "19e7e376e7c213b7e7e7e46cc70a5dd086daff2a";

    #[test]
    fn refuses_garbage() {
        assert!(recover("x", "0x1234").is_err());
        assert!(recover("x", "zz").is_err());
        assert!(recover("x", &format!("0x{}", "00".repeat(65))).is_err());
    }

    #[test]
    fn recovers_a_known_signature() {
        let sig = include_str!("../../tests/vectors/eip191_hello.txt").trim();
        let addr = recover("hello conduct", sig).unwrap();
        assert_eq!(hex::encode(addr), KEY_ADDR);
        assert_ne!(
            hex::encode(recover("hello conduct!", sig).unwrap()),
            KEY_ADDR
        );
    }
}
