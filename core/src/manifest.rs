//! The signed mirror manifest (library/MIRRORS.md): `manifest.json` lists every file of the
//! rendered tree with its SHA-256 and length. The renderer writes it and `conduct verify-site`
//! checks it; both name its format by the one constant here.

/// Manifest format name (its `type`).
pub const MANIFEST_TYPE: &str = "conduct.manifest/v1";
