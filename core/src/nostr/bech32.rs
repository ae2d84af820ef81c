//! Bech32 (BIP-173; not Bech32m) as NIP-19 uses it for `npub`: a small implementation checked
//! against the BIP's test vectors (`super::tests`).
//!
//! Decoding follows BIP-173: at most 90 characters, printable ASCII (33..=126), not mixed case,
//! a non-empty human-readable part before the last `1`, at least 6 checksum characters, every
//! data character in the alphabet and the checksum valid.

/// The data alphabet.
const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
/// The longest string BIP-173 allows.
pub const MAX_LEN: usize = 90;

fn polymod(values: impl IntoIterator<Item = u8>) -> u32 {
    const GEN: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
    let mut chk: u32 = 1;
    for v in values {
        let b = chk >> 25;
        chk = ((chk & 0x1ff_ffff) << 5) ^ u32::from(v);
        for (i, g) in GEN.iter().enumerate() {
            if (b >> i) & 1 == 1 {
                chk ^= g;
            }
        }
    }
    chk
}

fn hrp_expand(hrp: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = hrp.iter().map(|c| c >> 5).collect();
    out.push(0);
    out.extend(hrp.iter().map(|c| c & 31));
    out
}

/// Encode 5-bit `data` under `hrp` (lowercase) with its checksum.
pub fn encode(hrp: &str, data: &[u8]) -> String {
    let hrp = hrp.to_ascii_lowercase();
    let mut values = hrp_expand(hrp.as_bytes());
    values.extend_from_slice(data);
    values.extend_from_slice(&[0; 6]);
    let m = polymod(values) ^ 1;
    let mut out = hrp;
    out.push('1');
    for d in data {
        out.push(CHARSET[usize::from(*d & 31)] as char);
    }
    for i in 0..6 {
        out.push(CHARSET[((m >> (5 * (5 - i))) & 31) as usize] as char);
    }
    out
}

/// Why a string is not Bech32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Bech32Error {
    /// Longer than BIP-173 allows.
    #[error("longer than {MAX_LEN} characters")]
    TooLong,
    /// A character outside printable ASCII.
    #[error("holds a character outside printable ASCII")]
    NotPrintable,
    /// Upper and lower case mixed.
    #[error("mixes upper and lower case")]
    MixedCase,
    /// No `1` separator.
    #[error("has no separator `1`")]
    NoSeparator,
    /// Nothing before the separator.
    #[error("has an empty human-readable part")]
    EmptyHrp,
    /// Fewer than six checksum characters.
    #[error("its checksum is too short")]
    ShortChecksum,
    /// A character outside the data alphabet.
    #[error("{0:?} is not a Bech32 data character")]
    DataCharacter(char),
    /// The checksum does not match.
    #[error("its checksum is wrong")]
    Checksum,
}

/// Decode a Bech32 string: its human-readable part (lowercase) and its 5-bit data (checksum
/// removed), or why not.
pub fn decode(s: &str) -> Result<(String, Vec<u8>), Bech32Error> {
    if s.len() > MAX_LEN {
        return Err(Bech32Error::TooLong);
    }
    if !s.bytes().all(|b| (33..=126).contains(&b)) {
        return Err(Bech32Error::NotPrintable);
    }
    let lower = s.bytes().any(|b| b.is_ascii_lowercase());
    let upper = s.bytes().any(|b| b.is_ascii_uppercase());
    if lower && upper {
        return Err(Bech32Error::MixedCase);
    }
    let s = s.to_ascii_lowercase();
    let pos = s.rfind('1').ok_or(Bech32Error::NoSeparator)?;
    if pos == 0 {
        return Err(Bech32Error::EmptyHrp);
    }
    if pos + 7 > s.len() {
        return Err(Bech32Error::ShortChecksum);
    }
    let (hrp, rest) = (&s[..pos], &s[pos + 1..]);
    let mut data = Vec::with_capacity(rest.len());
    for c in rest.bytes() {
        let v = CHARSET
            .iter()
            .position(|x| *x == c)
            .ok_or(Bech32Error::DataCharacter(c as char))?;
        data.push(v as u8);
    }
    let mut values = hrp_expand(hrp.as_bytes());
    values.extend_from_slice(&data);
    if polymod(values) != 1 {
        return Err(Bech32Error::Checksum);
    }
    data.truncate(data.len() - 6);
    Ok((hrp.to_owned(), data))
}

/// Regroup bits (`from` bits per input item, `to` per output item); `pad` for encoding. `None`
/// when decoding leaves non-zero padding or more than `from - 1` padding bits.
pub fn convert_bits(data: &[u8], from: u32, to: u32, pad: bool) -> Option<Vec<u8>> {
    let mut acc: u32 = 0;
    let mut bits: u32 = 0;
    let maxv: u32 = (1 << to) - 1;
    let mut out = Vec::with_capacity(data.len() * from as usize / to as usize + 1);
    for v in data {
        let v = u32::from(*v);
        if v >> from != 0 {
            return None;
        }
        acc = (acc << from) | v;
        bits += from;
        while bits >= to {
            bits -= to;
            out.push(((acc >> bits) & maxv) as u8);
        }
    }
    if pad {
        if bits > 0 {
            out.push(((acc << (to - bits)) & maxv) as u8);
        }
    } else if bits >= from || ((acc << (to - bits)) & maxv) != 0 {
        return None;
    }
    Some(out)
}
