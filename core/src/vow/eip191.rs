//! EIP-191 `personal_sign` verification: recover the address that signed a text. The crate's
//! one way to recover a signer is `owner::recover` (it first checks the text is a message of
//! the kind expected); this module gives each signature its one canonical spelling.

use alloy_primitives::Signature;

/// The 65 bytes `r ‖ s ‖ v` of `signature` in hex (`0x` optional), `v` being 27/28 or 0/1.
fn parse(signature: &str) -> Result<Signature, SignatureError> {
    let hex_part = signature
        .strip_prefix("0x")
        .or_else(|| signature.strip_prefix("0X"))
        .unwrap_or(signature);
    let raw = hex::decode(hex_part).map_err(|_| SignatureError::NotHex)?;
    if raw.len() != 65 {
        return Err(SignatureError::Length(raw.len()));
    }
    Signature::from_raw(&raw).map_err(|e| SignatureError::Malformed(e.to_string()))
}

/// Recover the 20-byte address whose key signed `message` with EIP-191 `personal_sign`.
///
/// `signature` is 65 bytes `r ‖ s ‖ v` in hex (`0x` optional), `v` being 27/28 or 0/1.
pub(crate) fn recover(message: &str, signature: &str) -> Result<[u8; 20], SignatureError> {
    let addr = parse(signature)?
        .recover_address_from_msg(message.as_bytes())
        .map_err(|e| SignatureError::NoAddress(e.to_string()))?;
    Ok(addr.into_array())
}

/// The one spelling of `signature` that is stored and compared for replays: `0x`, `r`, the
/// low `s` (EIP-2), `v` as 27 or 28, lower-case hex. `recover` accepts the same signature
/// spelled many ways (with or without `0x`, `v` as 0/1 or 27/28, the high-`s` twin); a "used
/// once" check keyed on anything but this form could be passed again by re-spelling it.
pub fn canonical(signature: &str) -> Result<String, SignatureError> {
    let sig = parse(signature)?;
    let low = sig.normalize_s().unwrap_or(sig);
    Ok(format!("0x{}", hex::encode(low.as_bytes())))
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

#[cfg(test)]
mod tests {
    use super::*;

    // Produced with PyPI eth-account 0.14.0:
    //   Account.from_key("0x" + "11"*32).sign_message(encode_defunct(text="hello conduct"))
    const KEY_ADDR: &str = "19e7e376e7c213b7e7e7e46cc70a5dd086daff2a";

    #[test]
    fn every_spelling_of_a_signature_has_one_canonical_form() {
        let key = alloy_primitives::B256::repeat_byte(0x11);
        let signer = k256::ecdsa::SigningKey::from_slice(key.as_slice()).unwrap();
        let msg = "hello conduct";
        let hash = alloy_primitives::eip191_hash_message(msg.as_bytes());
        let (sig, rec) = signer.sign_prehash_recoverable(hash.as_slice()).unwrap();
        let sig = Signature::from_signature_and_parity(sig, rec.is_y_odd());
        let bytes = sig.as_bytes();
        let base = hex::encode(bytes);
        let canon = canonical(&base).unwrap();
        // v as 0/1, no 0x, upper case, and the high-s twin all name the same signature.
        let mut v01 = bytes;
        v01[64] -= 27;
        let n = alloy_primitives::U256::from_be_slice(
            &hex::decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
                .unwrap(),
        );
        let s = alloy_primitives::U256::from_be_slice(&bytes[32..64]);
        let mut high = bytes;
        high[32..64].copy_from_slice(&(n - s).to_be_bytes::<32>());
        high[64] = if bytes[64] == 27 { 28 } else { 27 };
        for spelling in [
            format!("0x{base}"),
            base.to_uppercase(),
            hex::encode(v01),
            format!("0x{}", hex::encode(high)),
        ] {
            assert_eq!(canonical(&spelling).unwrap(), canon, "{spelling}");
            assert_eq!(
                recover(msg, &spelling).unwrap(),
                recover(msg, &canon).unwrap()
            );
        }
        assert!(canon.starts_with("0x") && canon.len() == 132);
    }

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
