//! The attestation (`conduct.attestation/v1`, DESIGN.md section 5) and predicate disclosure.
//!
//! [`attest`] runs the whole pure profile path: validate, hash the canonical trace, reduce turns
//! to symbols, meter, and build the (still unsigned) attestation object. Signing is one call on
//! [`crate::signing::ServiceKey`]; the demo path simply does not make it.

use serde_json::{json, Map, Value};

use crate::canonical::trace_sha256;
use crate::meter::{self, Profile, Quantity, TurnSymbols};
use crate::scope::scope_value;
use crate::time::rfc3339;
use crate::trace::{validate, Disclosure, FieldError, TraceRef};

/// The attestation format name.
pub const ATTESTATION_TYPE: &str = "conduct.attestation/v1";

/// A posted band: a quantity clears it when its chance-corrected coupling (`adjusted`, bits)
/// is at most `max_adjusted_bits`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// Band name as posted at `/predicates`.
    pub name: &'static str,
    /// Inclusive ceiling on `adjusted`, in bits.
    pub max_adjusted_bits: f64,
}

/// The posted bands, tightest first.
pub const BANDS: [Band; 3] = [
    Band {
        name: "under_0.01",
        max_adjusted_bits: 0.01,
    },
    Band {
        name: "under_0.05",
        max_adjusted_bits: 0.05,
    },
    Band {
        name: "under_0.10",
        max_adjusted_bits: 0.10,
    },
];

/// The `/predicates` document body (unsigned; the renderer signs it).
pub fn predicates_doc() -> Value {
    json!({
        "type": "conduct.predicates/v1",
        "what": "Posted predicate metrics and bands for POST /profile with \
                 {\"disclosure\":{\"predicate\":{\"metric\":M,\"band\":B}}}. The signed answer \
                 carries only whether the metric clears the band; no raw number leaves.",
        "metrics": meter::QUANTITY_KEYS.iter().map(|k| json!({
            "metric": k,
            "measured_by": "adjusted",
            "unit": "bits",
        })).collect::<Vec<_>>(),
        "bands": BANDS.iter().map(|b| json!({
            "band": b.name,
            "clears_when": format!("adjusted <= {}", b.max_adjusted_bits),
            "max_adjusted_bits": b.max_adjusted_bits,
        })).collect::<Vec<_>>(),
        "clears_null": "clears is null (could not look) when the quantity is null: a C group \
                        had fewer than 2 turns. Null is never false.",
        "scope": scope_value(),
    })
}

/// A resolved predicate request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Predicate {
    /// Quantity key.
    pub metric: &'static str,
    /// Band.
    pub band: Band,
}

/// Check a disclosure against the posted metrics and bands.
pub fn resolve_predicate(d: &Disclosure) -> Result<Predicate, FieldError> {
    let metric = meter::QUANTITY_KEYS
        .iter()
        .find(|k| **k == d.predicate.metric)
        .ok_or_else(|| FieldError {
            pointer: "/disclosure/predicate/metric".into(),
            detail: format!(
                "unknown metric; posted metrics are {}",
                meter::QUANTITY_KEYS.join(", ")
            ),
        })?;
    let band = BANDS
        .iter()
        .find(|b| b.name == d.predicate.band)
        .ok_or_else(|| FieldError {
            pointer: "/disclosure/predicate/band".into(),
            detail: format!(
                "unknown band; posted bands are {}",
                BANDS.map(|b| b.name).join(", ")
            ),
        })?;
    Ok(Predicate {
        metric,
        band: *band,
    })
}

fn clears(q: &Quantity, band: &Band) -> Value {
    match q.adjusted {
        Some(a) => Value::Bool(a <= band.max_adjusted_bits),
        None => Value::Null,
    }
}

/// The meter description carried by every attestation.
pub fn meter_block() -> Value {
    json!({
        "version": meter::METER_VERSION,
        "m_symbols": meter::M_SYMBOLS_VERSION,
        "d_clean": meter::D_CLEAN,
        "p_exact_max_tables": meter::EXACT_MAX_TABLES,
        "p_monte_carlo_samples": meter::MC_SAMPLES,
    })
}

/// Reduce a validated trace to the meter's per-turn symbols.
pub fn symbols<'a>(trace: TraceRef<'_, 'a>) -> Vec<TurnSymbols<'a>> {
    trace
        .turns
        .iter()
        .map(|t| TurnSymbols {
            c: t.context.get(trace.context_key) == Some(1),
            d: match &t.d {
                std::borrow::Cow::Borrowed(s) => meter::d_symbol(s),
                std::borrow::Cow::Owned(s) => {
                    std::borrow::Cow::Owned(meter::d_symbol(s).into_owned())
                }
            },
            m: meter::m_symbol(&t.m),
        })
        .collect()
}

/// The measured, unsigned result of a profile call.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Raw `sha256(trace)`.
    pub trace_sha256: [u8; 32],
    /// The four quantities.
    pub profile: Profile,
}

/// Validate, hash and meter a trace.
pub fn measure(trace: TraceRef<'_, '_>) -> Result<Measured, Vec<FieldError>> {
    validate(trace)?;
    let hash = trace_sha256(trace);
    let syms = symbols(trace);
    let profile = meter::measure(&syms, &hash);
    Ok(Measured {
        trace_sha256: hash,
        profile,
    })
}

/// Build the unsigned attestation object for a measured trace.
pub fn attestation_object(
    measured: &Measured,
    context_key: &str,
    n_turns: usize,
    predicate: Option<Predicate>,
    issued_at_unix: u64,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(ATTESTATION_TYPE.into()));
    m.insert(
        "trace_sha256".into(),
        Value::String(hex::encode(measured.trace_sha256)),
    );
    m.insert("context_key".into(), Value::String(context_key.into()));
    m.insert("n_turns".into(), Value::from(n_turns as u64));
    match predicate {
        None => {
            m.insert(
                "profile".into(),
                serde_json::to_value(&measured.profile).unwrap_or(Value::Null),
            );
        }
        Some(p) => {
            let q = measured.profile.get(p.metric);
            let c = q.map(|q| clears(q, &p.band)).unwrap_or(Value::Null);
            m.insert(
                "predicate".into(),
                json!({"metric": p.metric, "band": p.band.name, "clears": c}),
            );
        }
    }
    m.insert("meter".into(), meter_block());
    m.insert("issued_at".into(), Value::String(rfc3339(issued_at_unix)));
    m.insert("scope".into(), scope_value());
    m
}
