//! The M discretizer `lexicon/2` (library/METER.md section 11): `plain`, `aware` (the
//! reasoning names the setting: being watched, tested or trained) or `tied` (it ties what
//! the agent does to being watched or trained).

use super::lexicon::{m_symbol, MSymbol};

/// Version of the M discretizer implemented here.
pub const LEXICON_VERSION: &str = "lexicon/2";

/// The symbols of `lexicon/2`, in byte order (the meter's column order).
pub const SYMBOLS: [&str; 3] = ["aware", "plain", "tied"];

/// Rank of `aware` in [`SYMBOLS`].
pub const AWARE: u8 = 0;
/// Rank of `plain` in [`SYMBOLS`].
pub const PLAIN: u8 = 1;
/// Rank of `tied` in [`SYMBOLS`].
pub const TIED: u8 = 2;

/// The `lexicon/2` symbol of one M text, as its rank in [`SYMBOLS`].
pub fn symbol(text: &str) -> u8 {
    match m_symbol(text) {
        MSymbol::Plain => PLAIN,
        MSymbol::Aware => AWARE,
        MSymbol::Strategic | MSymbol::AwareStrategic => TIED,
    }
}

/// The symbols of many texts (`out[i]` for `texts(i)`).
pub fn symbols<'t>(n: usize, texts: impl Fn(usize) -> &'t str, out: &mut Vec<u8>) {
    out.clear();
    out.extend((0..n).map(|i| symbol(texts(i))));
}
