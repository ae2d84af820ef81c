//! The published JSON Schemas (`/schemas/trace.json`, `/schemas/attestation.json`).

/// JSON Schema of a trace (spec 2.1).
pub const TRACE_SCHEMA: &str = include_str!("../schemas/trace.json");
/// JSON Schema of an attestation (spec 2.2, library/ATTESTATION.md).
pub const ATTESTATION_SCHEMA: &str = include_str!("../schemas/attestation.json");
