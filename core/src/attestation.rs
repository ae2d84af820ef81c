//! The attestation (`conduct.attestation/v1`, library/ATTESTATION.md) and predicate disclosure.
//!
//! [`attest`] runs the whole pure profile path: validate, hash the canonical trace, reduce turns
//! to symbols, meter, and build the (still unsigned) attestation object. Signing is one call on
//! [`crate::signing::ServiceKey`]; the demo path simply does not make it.

use serde_json::{json, Map, Value};

use std::sync::LazyLock;

use crate::canonical::{
    jcs, trace_sha256, write_array, write_f64, write_string, write_u64, CanonicalError, Sink,
};
use crate::meter::{self, Meter, Profile, Quantity, Stratified, TurnSymbols};
use crate::scope::scope_value;
use crate::time::rfc3339;
use crate::trace::{validate, Disclosure, FieldError, TraceRef};

/// The attestation format name.
pub const ATTESTATION_TYPE: &str = "conduct.attestation/v1";

pub use crate::limits::{Band, BANDS};

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
        .ok_or_else(|| {
            FieldError::at(
                "/disclosure/predicate/metric",
                format!(
                    "unknown metric; posted metrics are {}",
                    meter::QUANTITY_KEYS.join(", ")
                ),
            )
        })?;
    let band = BANDS
        .iter()
        .find(|b| b.name == d.predicate.band)
        .ok_or_else(|| {
            FieldError::at(
                "/disclosure/predicate/band",
                format!(
                    "unknown band; posted bands are {}",
                    BANDS.map(|b| b.name).join(", ")
                ),
            )
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

/// The `meter` block of one version: its name and the parameters its numbers depend on.
fn meter_value(m: Meter) -> Value {
    match m {
        Meter::V1 => json!({
            "version": m.as_str(),
            "m_symbols": m.lexicon(),
            "d_clean": meter::D_CLEAN,
            "p_exact_max_tables": meter::EXACT_MAX_TABLES,
            "p_monte_carlo_samples": meter::MC_SAMPLES,
        }),
        Meter::V2 => json!({
            "version": m.as_str(),
            "m_symbols": m.lexicon(),
            "d_clean": meter::D_CLEAN,
            "p_exact_max_tables": meter::EXACT_MAX_TABLES,
            "p_exact_max_work": meter::EXACT_MAX_WORK,
            "p_monte_carlo_samples": meter::MC_SAMPLES,
            "stratified_by": meter::STRATA_BY,
        }),
    }
}

static METER_BLOCKS: LazyLock<[Value; 2]> =
    LazyLock::new(|| [meter_value(Meter::V1), meter_value(Meter::V2)]);

fn slot(m: Meter) -> usize {
    match m {
        Meter::V1 => 0,
        Meter::V2 => 1,
    }
}

/// The meter description carried by every attestation and entry measured with `m`.
pub fn meter_block(m: Meter) -> Value {
    METER_BLOCKS[slot(m)].clone()
}

/// Canonical bytes of the constant members, computed once.
static METER_JCS: LazyLock<[Vec<u8>; 2]> =
    LazyLock::new(|| METER_BLOCKS.clone().map(|b| jcs(&b).unwrap_or_default()));
static SCOPE_JCS: LazyLock<Vec<u8>> = LazyLock::new(|| jcs(&scope_value()).unwrap_or_default());

/// Reduce a validated trace to the per-turn symbols of `meter`: C, the D symbol, the M
/// symbol of the meter's discretizer and, for `meter/2`, the turn's group of equal Y.
pub fn symbols<'a>(trace: TraceRef<'_, 'a>, meter: Meter) -> Vec<TurnSymbols<'a>> {
    let n = trace.turns.len();
    let mut m = Vec::with_capacity(n);
    match meter {
        Meter::V1 => {
            let mut syms = Vec::with_capacity(n);
            meter::m_symbols(n, |i| &trace.turns[i].m, &mut syms);
            m.extend(syms.into_iter().map(|s| s.rank() as u8));
        }
        Meter::V2 => meter::lexicon2::symbols(n, |i| &trace.turns[i].m, &mut m),
    }
    let mut ys: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    trace
        .turns
        .iter()
        .zip(m)
        .map(|(t, m)| TurnSymbols {
            c: t.context.get(trace.context_key) == Some(1),
            d: match &t.d {
                std::borrow::Cow::Borrowed(s) => meter::d_symbol(s),
                std::borrow::Cow::Owned(s) => {
                    std::borrow::Cow::Owned(meter::d_symbol(s).into_owned())
                }
            },
            m,
            y: if meter.stratifies() {
                let next = ys.len() as u32;
                *ys.entry(&t.y).or_insert(next)
            } else {
                0
            },
        })
        .collect()
}

/// The measured, unsigned result of a profile call.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Raw `sha256(trace)`.
    pub trace_sha256: [u8; 32],
    /// The meter that measured it.
    pub meter: Meter,
    /// The four quantities.
    pub profile: Profile,
}

/// Validate, hash and meter a trace with `meter`.
pub fn measure(trace: TraceRef<'_, '_>, meter: Meter) -> Result<Measured, Vec<FieldError>> {
    validate(trace)?;
    let hash = trace_sha256(trace);
    let syms = symbols(trace, meter);
    let profile = meter::measure(meter, &syms, &hash);
    Ok(Measured {
        trace_sha256: hash,
        meter,
        profile,
    })
}

/// An attestation as typed data: written canonically without an intermediate JSON value.
#[derive(Debug, Clone)]
pub struct Attestation<'m> {
    /// The measured trace.
    pub measured: &'m Measured,
    /// The conditioning flag name.
    pub context_key: &'m str,
    /// Turns in the trace.
    pub n_turns: usize,
    /// Predicate disclosure, replacing the profile.
    pub predicate: Option<Predicate>,
    /// Issue instant, unix seconds.
    pub issued_at_unix: u64,
    /// Signer key id, set when the attestation is signed.
    pub key_id: Option<String>,
}

fn write_opt_f64<S: Sink>(out: &mut S, v: Option<f64>) -> Result<(), CanonicalError> {
    match v {
        Some(f) => write_f64(out, f),
        None => {
            out.put(b"null");
            Ok(())
        }
    }
}

/// Write one quantity canonically (keys in RFC 8785 order).
fn write_quantity<S: Sink>(out: &mut S, q: &Quantity) -> Result<(), CanonicalError> {
    out.put(b"{\"adjusted\":");
    write_opt_f64(out, q.adjusted)?;
    out.put(b",\"ami\":");
    write_opt_f64(out, q.ami)?;
    out.put(b",\"bits\":");
    write_opt_f64(out, q.bits)?;
    out.put(b",\"columns\":");
    write_array(out, &q.columns, |o, c| {
        write_string(o, c);
        Ok(())
    })?;
    if let Some(d) = q.direction {
        out.put(b",\"direction\":");
        write_opt_f64(out, d)?;
    }
    out.put(b",\"emi\":");
    write_opt_f64(out, q.emi)?;
    out.put(b",\"n\":");
    write_u64(out, q.n)?;
    out.put(b",\"p\":");
    write_opt_f64(out, q.p)?;
    out.put(b",\"p_method\":");
    match q.p_method {
        Some(m) => write_string(out, m.as_str()),
        None => out.put(b"null"),
    }
    if let Some(r) = &q.reason {
        out.put(b",\"reason\":");
        write_string(out, r);
    }
    if let Some(st) = &q.stratified {
        out.put(b",\"stratified\":");
        write_stratified(out, st)?;
    }
    out.put(b",\"table\":");
    write_table(out, &q.table)?;
    out.put(b"}");
    Ok(())
}

fn write_table<S: Sink>(out: &mut S, table: &[Vec<u64>; 2]) -> Result<(), CanonicalError> {
    write_array(out, table, |o, row| {
        write_array(o, row, |o, v| write_u64(o, *v))
    })
}

/// Write a quantity's within-Y test canonically (keys in RFC 8785 order).
fn write_stratified<S: Sink>(out: &mut S, st: &Stratified) -> Result<(), CanonicalError> {
    out.put(b"{\"by\":");
    write_string(out, st.by);
    out.put(b",\"margins\":");
    write_array(out, &st.margins, |o, g| {
        o.put(b"[");
        write_u64(o, g.count)?;
        o.put(b",");
        write_u64(o, g.margins.c1)?;
        o.put(b",[");
        let mut first = true;
        for (j, &b) in g.margins.b.iter().enumerate().filter(|(_, &b)| b > 0) {
            if !first {
                o.put(b",");
            }
            first = false;
            o.put(b"[");
            write_u64(o, j as u64)?;
            o.put(b",");
            write_u64(o, b)?;
            o.put(b"]");
        }
        o.put(b"]]");
        Ok(())
    })?;
    out.put(b",\"n\":");
    write_u64(out, st.n)?;
    out.put(b",\"p\":");
    write_opt_f64(out, st.p)?;
    out.put(b",\"p_method\":");
    match st.p_method {
        Some(m) => write_string(out, m.as_str()),
        None => out.put(b"null"),
    }
    if let Some(r) = &st.reason {
        out.put(b",\"reason\":");
        write_string(out, r);
    }
    out.put(b",\"strata\":");
    write_u64(out, st.strata)?;
    out.put(b",\"table\":");
    write_table(out, &st.table)?;
    out.put(b"}");
    Ok(())
}

impl Attestation<'_> {
    /// RFC 8785 bytes of the attestation, with `signature` when given.
    ///
    /// Equal to [`crate::canonical::jcs`] of [`Attestation::to_map`] (property-tested).
    pub fn canonical(&self, signature: Option<&str>) -> Result<Vec<u8>, CanonicalError> {
        let mut out = Vec::with_capacity(2048);
        out.put(b"{\"context_key\":");
        write_string(&mut out, self.context_key);
        out.put(b",\"issued_at\":");
        write_string(&mut out, &rfc3339(self.issued_at_unix));
        if let Some(k) = &self.key_id {
            out.put(b",\"key_id\":");
            write_string(&mut out, k);
        }
        out.put(b",\"meter\":");
        out.put(&METER_JCS[slot(self.measured.meter)]);
        out.put(b",\"n_turns\":");
        write_u64(&mut out, self.n_turns as u64)?;
        match self.predicate {
            Some(p) => {
                out.put(b",\"predicate\":{\"band\":");
                write_string(&mut out, p.band.name);
                out.put(b",\"clears\":");
                let c = self
                    .measured
                    .profile
                    .get(p.metric)
                    .map(|q| clears(q, &p.band));
                out.put(match c {
                    Some(Value::Bool(true)) => b"true".as_slice(),
                    Some(Value::Bool(false)) => b"false".as_slice(),
                    _ => b"null".as_slice(),
                });
                out.put(b",\"metric\":");
                write_string(&mut out, p.metric);
                out.put(b"}");
            }
            None => {
                let pr = &self.measured.profile;
                out.put(b",\"profile\":{\"i_c_d\":");
                write_quantity(&mut out, &pr.i_c_d)?;
                out.put(b",\"i_c_dm\":");
                write_quantity(&mut out, &pr.i_c_dm)?;
                out.put(b",\"i_c_m\":");
                write_quantity(&mut out, &pr.i_c_m)?;
                out.put(b",\"i_c_m_given_d_clean\":");
                write_quantity(&mut out, &pr.i_c_m_given_d_clean)?;
                out.put(b"}");
            }
        }
        out.put(b",\"scope\":");
        out.put(&SCOPE_JCS);
        if let Some(sig) = signature {
            out.put(b",\"signature\":");
            write_string(&mut out, sig);
        }
        out.put(b",\"trace_sha256\":");
        write_string(&mut out, &hex::encode(self.measured.trace_sha256));
        out.put(b",\"type\":");
        write_string(&mut out, ATTESTATION_TYPE);
        out.put(b"}");
        Ok(out)
    }

    /// Sign with `key`: sets `key_id`, signs the canonical bytes, returns the signed bytes.
    pub fn signed(&mut self, key: &crate::signing::ServiceKey) -> Result<Vec<u8>, CanonicalError> {
        use base64::Engine;
        self.key_id = Some(key.key_id_hex());
        let body = self.canonical(None)?;
        let sig = base64::engine::general_purpose::STANDARD.encode(key.sign_bytes(&body));
        self.canonical(Some(&sig))
    }

    /// The same attestation as a JSON object (unsigned; `key_id` when set).
    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = attestation_object(
            self.measured,
            self.context_key,
            self.n_turns,
            self.predicate,
            self.issued_at_unix,
        );
        if let Some(k) = &self.key_id {
            m.insert("key_id".into(), Value::String(k.clone()));
        }
        m
    }
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
    m.insert("meter".into(), meter_block(measured.meter));
    m.insert("issued_at".into(), Value::String(rfc3339(issued_at_unix)));
    m.insert("scope".into(), scope_value());
    m
}
