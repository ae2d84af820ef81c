//! Bech32 (BIP-173) decoding for NIP-19 `npub` subject ids: the checksum (the original bech32
//! constant 1, not bech32m), the character set, one case, and the 8-to-5-bit regrouping with
//! zero padding.
//!
//! Local to the ERC-8004 subject parser until the Nostr helper (`crate::nostr`) offers one
//! decoder for the whole crate; [`decode`] is the only entry point, so replacing it is a
//! one-line change in `subject.rs`.

/// The bech32 character set, indexed by 5-bit value.
const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/// Longest bech32 string BIP-173 allows.
pub const MAX_LEN: usize = 90;

/// Why a string is not a bech32 string of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bech32Error {
    /// Longer than [`MAX_LEN`] characters.
    TooLong,
    /// Both upper- and lower-case letters.
    MixedCase,
    /// No `1` separator, an empty prefix, or fewer than 6 checksum characters.
    NoSeparator,
    /// A character outside the bech32 set (or a prefix character outside US-ASCII 33..126).
    BadChar(char),
    /// The checksum does not verify.
    Checksum,
    /// The 5-bit groups do not regroup into whole bytes with zero padding.
    Padding,
}

impl std::fmt::Display for Bech32Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bech32Error::TooLong => write!(f, "longer than {MAX_LEN} characters"),
            Bech32Error::MixedCase => f.write_str("mixes upper and lower case"),
            Bech32Error::NoSeparator => f.write_str("has no prefix, separator 1 and checksum"),
            Bech32Error::BadChar(c) => write!(f, "holds {c:?}, not a bech32 character"),
            Bech32Error::Checksum => f.write_str("its bech32 checksum does not verify"),
            Bech32Error::Padding => f.write_str("its data is not whole bytes"),
        }
    }
}

fn polymod(values: impl Iterator<Item = u8>) -> u32 {
    const GEN: [u32; 5] = [
        0x3b6a_57b2,
        0x2650_8e6d,
        0x1ea1_19fa,
        0x3d42_33dd,
        0x2a14_62b3,
    ];
    let mut chk: u32 = 1;
    for v in values {
        let top = chk >> 25;
        chk = ((chk & 0x01ff_ffff) << 5) ^ u32::from(v);
        for (i, g) in GEN.iter().enumerate() {
            if (top >> i) & 1 == 1 {
                chk ^= g;
            }
        }
    }
    chk
}

fn hrp_expand(hrp: &[u8]) -> impl Iterator<Item = u8> + '_ {
    hrp.iter()
        .map(|b| b >> 5)
        .chain(std::iter::once(0))
        .chain(hrp.iter().map(|b| b & 31))
}

/// Decode a bech32 string into its (lower-case) prefix and data bytes.
pub fn decode(s: &str) -> Result<(String, Vec<u8>), Bech32Error> {
    if s.len() > MAX_LEN {
        return Err(Bech32Error::TooLong);
    }
    if let Some(c) = s.chars().find(|c| !(33..=126).contains(&u32::from(*c))) {
        return Err(Bech32Error::BadChar(c));
    }
    let (lower, upper) = (
        s.bytes().any(|b| b.is_ascii_lowercase()),
        s.bytes().any(|b| b.is_ascii_uppercase()),
    );
    if lower && upper {
        return Err(Bech32Error::MixedCase);
    }
    let s = s.to_ascii_lowercase();
    let sep = s.rfind('1').ok_or(Bech32Error::NoSeparator)?;
    if sep == 0 || sep + 7 > s.len() {
        return Err(Bech32Error::NoSeparator);
    }
    let (hrp, rest) = (&s.as_bytes()[..sep], &s.as_bytes()[sep + 1..]);
    let mut data = Vec::with_capacity(rest.len());
    for &b in rest {
        let v = CHARSET
            .iter()
            .position(|c| *c == b)
            .ok_or(Bech32Error::BadChar(char::from(b)))?;
        data.push(v as u8);
    }
    if polymod(hrp_expand(hrp).chain(data.iter().copied())) != 1 {
        return Err(Bech32Error::Checksum);
    }
    let groups = &data[..data.len() - 6];
    let mut out = Vec::with_capacity(groups.len() * 5 / 8);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &g in groups {
        acc = (acc << 5) | u32::from(g);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 5 || acc != 0 {
        return Err(Bech32Error::Padding);
    }
    Ok((String::from_utf8_lossy(hrp).into_owned(), out))
}

/// Encode `data` under the prefix `hrp` (lower case). For tests.
#[cfg(test)]
pub fn encode(hrp: &str, data: &[u8]) -> String {
    let mut groups = Vec::with_capacity(data.len() * 8 / 5 + 1);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &b in data {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            groups.push(((acc >> bits) & 31) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        groups.push(((acc << (5 - bits)) & 31) as u8);
    }
    let hrp_bytes = hrp.as_bytes();
    let pm = polymod(
        hrp_expand(hrp_bytes)
            .chain(groups.iter().copied())
            .chain([0u8; 6]),
    ) ^ 1;
    let mut s = String::with_capacity(hrp.len() + 1 + groups.len() + 6);
    s.push_str(hrp);
    s.push('1');
    for g in groups
        .iter()
        .copied()
        .chain((0..6).map(|i| ((pm >> (5 * (5 - i))) & 31) as u8))
    {
        s.push(char::from(CHARSET[usize::from(g)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nip19_vector_decodes() {
        // NIP-19's example npub.
        let (hrp, data) =
            decode("npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg").unwrap();
        assert_eq!(hrp, "npub");
        assert_eq!(
            hex::encode(data),
            "7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e"
        );
    }

    #[test]
    fn bip173_valid_and_invalid_strings() {
        for ok in [
            "A12UEL5L",
            "a12uel5l",
            "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
            "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
            "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
        ] {
            assert!(decode(ok).is_ok(), "{ok}");
        }
        for bad in [
            "pzry9x0s0muk",
            "1pzry9x0s0muk",
            "x1b4n0q5v",
            "li1dgmt3",
            "A1G7SGD8",
            "10a06t8",
            "1qzzfhee",
            "a12UEL5L",
            "an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1569pvx",
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn encode_round_trips() {
        let key = [7u8; 32];
        let s = encode("npub", &key);
        assert_eq!(decode(&s).unwrap(), ("npub".to_owned(), key.to_vec()));
        assert_eq!(decode(&s.to_ascii_uppercase()).unwrap().1, key.to_vec());
    }
}
