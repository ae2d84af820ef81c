//! The meter versions (`meter/1`, `meter/2`): what each one reads and how a request names it.
//!
//! A version pins everything a number depends on: the M discretizer, the D clean set, the
//! permutation tests and their limits (library/METER.md). A version never changes once
//! published; a change of estimator is a new version, and every old one stays served and
//! verifiable.

use serde::Serialize;

/// A version of the meter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Meter {
    /// `meter/1`: `lexicon/1`, turn-level permutation tests (ChaCha20 Monte Carlo).
    #[serde(rename = "meter/1")]
    V1,
    /// `meter/2`: `lexicon/2`, and every quantity also tested within groups of equal Y.
    #[serde(rename = "meter/2")]
    V2,
}

impl Meter {
    /// The version a request gets when it names none.
    pub const DEFAULT: Meter = Meter::V2;

    /// Every served version, oldest first.
    pub const ALL: [Meter; 2] = [Meter::V1, Meter::V2];

    /// The version's name: `meter/1` or `meter/2`.
    pub fn as_str(self) -> &'static str {
        match self {
            Meter::V1 => "meter/1",
            Meter::V2 => "meter/2",
        }
    }

    /// The version named `name`, if it is served.
    pub fn parse(name: &str) -> Option<Meter> {
        Meter::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The names of every served version, for error messages: `meter/1, meter/2`.
    pub fn names() -> String {
        Meter::ALL.map(Meter::as_str).join(", ")
    }

    /// The M discretizer of this version: `lexicon/1` or `lexicon/2`.
    pub fn lexicon(self) -> &'static str {
        match self {
            Meter::V1 => super::lexicon::M_SYMBOLS_VERSION,
            Meter::V2 => super::lexicon2::LEXICON_VERSION,
        }
    }

    /// The M symbols of this version's discretizer, in byte order (the column order).
    pub fn m_symbols(self) -> &'static [&'static str] {
        match self {
            Meter::V1 => &super::lexicon::SYMBOLS,
            Meter::V2 => &super::lexicon2::SYMBOLS,
        }
    }

    /// Whether every quantity carries the within-Y test (`stratified`).
    pub fn stratifies(self) -> bool {
        matches!(self, Meter::V2)
    }
}

/// The meter a request names (`None`: [`Meter::DEFAULT`]), if it is one of `offered`; else
/// why not, in plain words (the refusal of the request's member `meter`).
pub fn requested(name: Option<&str>, offered: &[Meter]) -> Result<Meter, String> {
    let list = || {
        offered
            .iter()
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let m = match name {
        None if offered.contains(&Meter::DEFAULT) => return Ok(Meter::DEFAULT),
        None => {
            return offered
                .last()
                .copied()
                .ok_or_else(|| "this route offers no meter".to_string())
        }
        Some(n) => Meter::parse(n)
            .ok_or_else(|| format!("unknown meter {n:?}; the meters are {}", Meter::names()))?,
    };
    if offered.contains(&m) {
        Ok(m)
    } else {
        Err(format!(
            "{m} is not offered here; this route offers {}",
            list()
        ))
    }
}

impl std::fmt::Display for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Meter::ALL {
            assert_eq!(Meter::parse(m.as_str()), Some(m));
            assert_eq!(serde_json::to_value(m).ok(), Some(m.as_str().into()));
            let syms = m.m_symbols();
            assert!(syms.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
            assert!(syms.iter().all(|s| !s.contains('|')));
        }
        assert_eq!(Meter::parse("meter/3"), None);
        assert_eq!(Meter::parse("Meter/2"), None);
        assert_eq!(Meter::names(), "meter/1, meter/2");
        assert_eq!(Meter::DEFAULT, Meter::V2);
    }

    #[test]
    fn a_request_names_its_meter() {
        assert_eq!(requested(None, &Meter::ALL), Ok(Meter::V2));
        assert_eq!(requested(Some("meter/1"), &Meter::ALL), Ok(Meter::V1));
        let e = requested(Some("meter/3"), &Meter::ALL).unwrap_err();
        assert_eq!(
            e,
            "unknown meter \"meter/3\"; the meters are meter/1, meter/2"
        );
        let e = requested(Some("meter/1"), &[Meter::V2]).unwrap_err();
        assert_eq!(e, "meter/1 is not offered here; this route offers meter/2");
        assert_eq!(requested(None, &[Meter::V1]), Ok(Meter::V1));
    }
}
