//! The manifest rules of ERC-8257 §2-§5 and "Manifest Parser Hardening". Unknown keys are
//! ignored (§2 "Unknown Fields and Extensions"); a known key with the wrong shape is refused.

use serde_json::{Map, Value};

use super::binding::{is_slug, parse_https};
use super::hash::{caip_upper_hex, upper_hex};
use super::{push_token, ManifestError, MANIFEST_TYPE};

/// Longest `name`, in code points.
const NAME_MAX: usize = 128;
/// Longest `description` (top level and `verifiability`), in code points.
const DESCRIPTION_MAX: usize = 500;
/// Longest URL (`image`, `featuredImage`, `links` keys and values), in UTF-8 bytes.
const URL_MAX: usize = 2048;
/// Most `tags`, and the longest tag in code points.
const TAGS_MAX: usize = 16;
const TAG_MAX: usize = 32;
/// Most `pricing` entries.
const PRICING_MAX: usize = 32;
/// Most `access.requirements`, the largest decoded `data`, the longest `label` (bytes).
const REQUIREMENTS_MAX: usize = 256;
const DATA_MAX: usize = 4096;
const LABEL_MAX: usize = 256;
/// Deepest `inputs` / `outputs` schema, and most nodes in both together.
const SCHEMA_DEPTH_MAX: usize = 16;
const SCHEMA_NODES_MAX: usize = 1024;
/// `type(uint256).max` in decimal (78 digits).
const UINT256_MAX: &str =
    "115792089237316195423570985008687907853269984665640564039457584007913129639935";

/// A manifest that passed [`validate_manifest`]: the fields the ERC defines.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `name`: 1-128 code points, no control character.
    pub name: String,
    /// `description`: 1-500 code points, no control character but LF, CR and TAB.
    pub description: String,
    /// `endpoint`: an `https` URL, as served.
    pub endpoint: String,
    /// `inputs`: a JSON Schema object.
    pub inputs: Value,
    /// `outputs`: a JSON Schema object.
    pub outputs: Value,
    /// `creatorAddress`: `0x` and 40 lower-case hex digits, not the zero address.
    pub creator_address: String,
    /// `version`, if given.
    pub version: Option<String>,
    /// `image`, if given.
    pub image: Option<String>,
    /// `featuredImage`, if given.
    pub featured_image: Option<String>,
    /// `tags` (empty when absent).
    pub tags: Vec<String>,
    /// `pricing` (empty when absent; never empty when present).
    pub pricing: Vec<Pricing>,
    /// `access`, if given.
    pub access: Option<Access>,
    /// `verifiability`, if given.
    pub verifiability: Option<Verifiability>,
}

/// One `pricing` entry (ERC-8257 §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pricing {
    /// Decimal amount in the asset's smallest unit, at most `type(uint256).max`.
    pub amount: String,
    /// CAIP-19 asset.
    pub asset: String,
    /// CAIP-10 recipient on the asset's chain.
    pub recipient: String,
    /// Payment protocol (opaque).
    pub protocol: String,
}

/// How `access.requirements` combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logic {
    /// All must hold.
    And,
    /// One suffices.
    Or,
}

/// The `access` block (ERC-8257 §4): advisory hints, the predicate decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `logic`.
    pub logic: Logic,
    /// `requirements`: 1-256 entries.
    pub requirements: Vec<Requirement>,
}

/// One access requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// `kind`, the 4-byte selector.
    pub kind: [u8; 4],
    /// `data`, decoded (at most 4,096 bytes).
    pub data: Vec<u8>,
    /// `label` (at most 256 bytes).
    pub label: String,
    /// `links`, name to `https` URL, in key order.
    pub links: Vec<(String, String)>,
}

/// The `verifiability` block (ERC-8257 §5), self-attested: its summary fields only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifiability {
    /// `tier`.
    pub tier: String,
    /// `execution`.
    pub execution: String,
}

/// An object being read, with its JSON pointer.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    fn new(value: &'a Value, path: String) -> Result<Self, ManifestError> {
        match value {
            Value::Object(map) => Ok(Obj { map, path }),
            _ => Err(ManifestError::invalid(path, "must be an object")),
        }
    }

    fn at(&self, key: &str) -> String {
        let mut p = self.path.clone();
        push_token(&mut p, key);
        p
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ManifestError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ManifestError::invalid(self.at(key), "must be a string")),
        }
    }

    fn str(&self, key: &str) -> Result<&'a str, ManifestError> {
        self.opt_str(key)?
            .ok_or_else(|| ManifestError::invalid(self.at(key), "required, a string"))
    }

    fn obj(&self, key: &str) -> Result<Option<Obj<'a>>, ManifestError> {
        self.map
            .get(key)
            .map(|v| Obj::new(v, self.at(key)))
            .transpose()
    }

    fn arr(&self, key: &str) -> Result<Option<&'a Vec<Value>>, ManifestError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(ManifestError::invalid(self.at(key), "must be an array")),
        }
    }
}

/// Text of 1..=`max` code points with no control character (general category Cc) except, when
/// `markdown`, LF, CR and TAB.
fn text(path: String, s: &str, max: usize, markdown: bool) -> Result<(), ManifestError> {
    let n = s.chars().count();
    if n == 0 || n > max {
        return Err(ManifestError::invalid(
            path,
            format!("must be 1-{max} code points, is {n}"),
        ));
    }
    let allowed = |c: char| markdown && matches!(c, '\n' | '\r' | '\t');
    if let Some(c) = s.chars().find(|c| c.is_control() && !allowed(*c)) {
        return Err(ManifestError::invalid(
            path,
            format!("holds the control character U+{:04X}", c as u32),
        ));
    }
    Ok(())
}

/// An `https` URL of at most 2,048 bytes.
fn https(path: String, s: &str) -> Result<(), ManifestError> {
    if s.len() > URL_MAX {
        return Err(ManifestError::invalid(
            path,
            format!("is {} bytes, more than {URL_MAX}", s.len()),
        ));
    }
    parse_https(s)
        .map(|_| ())
        .map_err(|r| ManifestError::invalid(path, r.to_string()))
}

/// A hex field: `0x` and lower-case hex digits, `min..=max` digits, an even count when `even`.
/// Upper-case digits are reported as such.
fn hex_field(
    path: String,
    s: &str,
    min: usize,
    max: usize,
    even: bool,
) -> Result<Vec<u8>, ManifestError> {
    if upper_hex(s) {
        return Err(ManifestError::UppercaseHex { path });
    }
    let digits = s.strip_prefix("0x").unwrap_or("");
    let ok = s.starts_with("0x")
        && (min..=max).contains(&digits.len())
        && (!even || digits.len().is_multiple_of(2))
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !ok {
        let count = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("{min} or more")
        } else {
            format!("{min}-{max}")
        };
        let parity = if even { ", an even number of them" } else { "" };
        return Err(ManifestError::invalid(
            path,
            format!("must be 0x and {count} lower-case hex digits{parity}"),
        ));
    }
    hex::decode(digits).map_err(|e| ManifestError::invalid(path, e.to_string()))
}

/// Depth (nesting of objects and arrays, the schema itself at 1) and node count (every JSON
/// value) of a schema, stopping early past the limits.
fn schema_size(v: &Value, depth: usize, nodes: &mut usize) -> usize {
    *nodes += 1;
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return depth - 1,
    };
    if depth > SCHEMA_DEPTH_MAX || *nodes > SCHEMA_NODES_MAX {
        return depth;
    }
    let mut deepest = depth;
    for c in children {
        deepest = deepest.max(schema_size(c, depth + 1, nodes));
        if deepest > SCHEMA_DEPTH_MAX || *nodes > SCHEMA_NODES_MAX {
            break;
        }
    }
    deepest
}

fn schemas(m: &Obj<'_>) -> Result<(Value, Value), ManifestError> {
    let mut nodes = 0;
    let mut out = Vec::with_capacity(2);
    for key in ["inputs", "outputs"] {
        let v = m
            .get(key)
            .ok_or_else(|| ManifestError::invalid(m.at(key), "required, a JSON Schema object"))?;
        if !v.is_object() {
            return Err(ManifestError::invalid(
                m.at(key),
                "must be a JSON Schema object",
            ));
        }
        let depth = schema_size(v, 1, &mut nodes);
        if depth > SCHEMA_DEPTH_MAX {
            return Err(ManifestError::invalid(
                m.at(key),
                format!("schema is deeper than {SCHEMA_DEPTH_MAX} levels"),
            ));
        }
        if nodes > SCHEMA_NODES_MAX {
            return Err(ManifestError::invalid(
                m.at(key),
                format!("inputs and outputs hold more than {SCHEMA_NODES_MAX} schema nodes"),
            ));
        }
        out.push(v.clone());
    }
    let outputs = out.pop().unwrap_or_default();
    let inputs = out.pop().unwrap_or_default();
    Ok((inputs, outputs))
}

/// CAIP-2 `namespace:reference`.
fn caip2(s: &str) -> bool {
    let Some((ns, reference)) = s.split_once(':') else {
        return false;
    };
    (3..=8).contains(&ns.len())
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && (1..=32).contains(&reference.len())
        && reference
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `[-.%a-zA-Z0-9]{1,max}`, the CAIP account / asset reference alphabet.
fn caip_ref(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'%'))
}

/// CAIP-19 `chain/asset_namespace:asset_reference[/token_id]`; gives the chain.
fn caip19(s: &str) -> Option<&str> {
    let (chain, asset) = s.split_once('/')?;
    let (asset, token) = match asset.split_once('/') {
        Some((a, t)) => (a, Some(t)),
        None => (asset, None),
    };
    let (ns, reference) = asset.split_once(':')?;
    let ok = caip2(chain)
        && (3..=8).contains(&ns.len())
        && ns
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && caip_ref(reference, 128)
        && token.is_none_or(|t| caip_ref(t, 78));
    ok.then_some(chain)
}

/// CAIP-10 `chain:account`; gives the chain and the account.
fn caip10(s: &str) -> Option<(&str, &str)> {
    let (chain, account) = s.rsplit_once(':')?;
    (caip2(chain) && caip_ref(account, 128)).then_some((chain, account))
}

fn amount(path: String, s: &str) -> Result<(), ManifestError> {
    let grammar =
        s == "0" || (s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() && !s.starts_with('0'));
    if !grammar {
        return Err(ManifestError::invalid(path, "must match ^(0|[1-9][0-9]*)$"));
    }
    if s.len() > UINT256_MAX.len() || (s.len() == UINT256_MAX.len() && s > UINT256_MAX) {
        return Err(ManifestError::invalid(path, "exceeds type(uint256).max"));
    }
    Ok(())
}

fn pricing(m: &Obj<'_>) -> Result<Vec<Pricing>, ManifestError> {
    let Some(entries) = m.arr("pricing")? else {
        return Ok(Vec::new());
    };
    if entries.is_empty() || entries.len() > PRICING_MAX {
        return Err(ManifestError::invalid(
            m.at("pricing"),
            format!("must hold 1-{PRICING_MAX} entries, holds {}", entries.len()),
        ));
    }
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let mut path = m.at("pricing");
        push_token(&mut path, &i.to_string());
        let e = Obj::new(e, path)?;
        let (amt, asset, recipient, protocol) = (
            e.str("amount")?,
            e.str("asset")?,
            e.str("recipient")?,
            e.str("protocol")?,
        );
        amount(e.at("amount"), amt)?;
        for (field, s) in [("asset", asset), ("recipient", recipient)] {
            if caip_upper_hex(s) {
                return Err(ManifestError::UppercaseHex { path: e.at(field) });
            }
        }
        let asset_chain = caip19(asset)
            .ok_or_else(|| ManifestError::invalid(e.at("asset"), "must be a CAIP-19 asset id"))?;
        let (recipient_chain, account) = caip10(recipient).ok_or_else(|| {
            ManifestError::invalid(e.at("recipient"), "must be a CAIP-10 account id")
        })?;
        if asset_chain != recipient_chain {
            return Err(ManifestError::invalid(
                e.at("recipient"),
                format!("is on chain {recipient_chain}, the asset on {asset_chain}"),
            ));
        }
        let zero = account
            .strip_prefix("0x")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b == b'0'));
        if zero {
            return Err(ManifestError::invalid(
                e.at("recipient"),
                "is the zero address",
            ));
        }
        if protocol.is_empty() {
            return Err(ManifestError::invalid(
                e.at("protocol"),
                "must not be empty",
            ));
        }
        out.push(Pricing {
            amount: amt.into(),
            asset: asset.into(),
            recipient: recipient.into(),
            protocol: protocol.into(),
        });
    }
    Ok(out)
}

fn access(m: &Obj<'_>) -> Result<Option<Access>, ManifestError> {
    let Some(a) = m.obj("access")? else {
        return Ok(None);
    };
    let logic = match a.str("logic")? {
        "AND" => Logic::And,
        "OR" => Logic::Or,
        _ => {
            return Err(ManifestError::invalid(
                a.at("logic"),
                "must be \"AND\" or \"OR\"",
            ))
        }
    };
    let reqs = a
        .arr("requirements")?
        .ok_or_else(|| ManifestError::invalid(a.at("requirements"), "required, an array"))?;
    if reqs.is_empty() || reqs.len() > REQUIREMENTS_MAX {
        return Err(ManifestError::invalid(
            a.at("requirements"),
            format!(
                "must hold 1-{REQUIREMENTS_MAX} entries, holds {}",
                reqs.len()
            ),
        ));
    }
    let mut requirements = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        let mut path = a.at("requirements");
        push_token(&mut path, &i.to_string());
        let r = Obj::new(r, path)?;
        let kind = hex_field(r.at("kind"), r.str("kind")?, 8, 8, false)?;
        let data = hex_field(r.at("data"), r.str("data")?, 0, usize::MAX, true)?;
        if data.len() > DATA_MAX {
            return Err(ManifestError::invalid(
                r.at("data"),
                format!("decodes to {} bytes, more than {DATA_MAX}", data.len()),
            ));
        }
        let label = r.str("label")?;
        if label.len() > LABEL_MAX {
            return Err(ManifestError::invalid(
                r.at("label"),
                format!("is {} bytes, more than {LABEL_MAX}", label.len()),
            ));
        }
        let mut links = Vec::new();
        if let Some(l) = r.obj("links")? {
            for (k, v) in l.map {
                let at = l.at(k);
                if k.len() > URL_MAX {
                    return Err(ManifestError::invalid(at, "key longer than 2,048 bytes"));
                }
                let Value::String(url) = v else {
                    return Err(ManifestError::invalid(at, "must be a string"));
                };
                https(at, url)?;
                links.push((k.clone(), url.clone()));
            }
        }
        let mut k = [0u8; 4];
        k.copy_from_slice(&kind);
        requirements.push(Requirement {
            kind: k,
            data,
            label: label.into(),
            links,
        });
    }
    Ok(Some(Access {
        logic,
        requirements,
    }))
}

fn verifiability(m: &Obj<'_>) -> Result<Option<Verifiability>, ManifestError> {
    let Some(v) = m.obj("verifiability")? else {
        return Ok(None);
    };
    let (tier, execution) = (v.str("tier")?, v.str("execution")?);
    for (key, s) in [("tier", tier), ("execution", execution)] {
        if s.is_empty() {
            return Err(ManifestError::invalid(v.at(key), "must not be empty"));
        }
    }
    if let Some(d) = v.opt_str("description")? {
        text(v.at("description"), d, DESCRIPTION_MAX, true)?;
    }
    v.opt_str("dataRetention")?;
    v.opt_str("sourceVisibility")?;
    if let Some(a) = v.obj("attestation")? {
        a.str("type")?;
        for key in ["endpoint", "transparencyLogURI"] {
            if let Some(u) = a.opt_str(key)? {
                https(a.at(key), u)?;
            }
        }
        if let Some(h) = a.opt_str("enclaveHash")? {
            hex_field(a.at("enclaveHash"), h, 2, usize::MAX, true)?;
        }
        if let Some(age) = a.get("maxAge") {
            if age.as_u64().is_none() {
                return Err(ManifestError::invalid(
                    a.at("maxAge"),
                    "must be a non-negative integer",
                ));
            }
        }
    }
    if let Some(b) = v.obj("reproducibleBuild")? {
        https(b.at("sourceCodeURI"), b.str("sourceCodeURI")?)?;
        b.opt_str("buildInstructions")?;
        if let Some(h) = b.opt_str("buildHash")? {
            hex_field(b.at("buildHash"), h, 2, usize::MAX, true)?;
        }
    }
    Ok(Some(Verifiability {
        tier: tier.into(),
        execution: execution.into(),
    }))
}

/// An image URL: at most 2,048 bytes, and not a scheme that runs script or reads local files
/// (`javascript:`, `vbscript:`, `file:`, `data:text/html`), which the ERC forbids for icons.
fn image(path: String, s: &str) -> Result<(), ManifestError> {
    if s.len() > URL_MAX {
        return Err(ManifestError::invalid(
            path,
            format!("is {} bytes, more than {URL_MAX}", s.len()),
        ));
    }
    let lower = s.trim_start().to_ascii_lowercase();
    let forbidden = ["javascript:", "vbscript:", "file:", "data:text/html"];
    if let Some(f) = forbidden.iter().find(|f| lower.starts_with(*f)) {
        return Err(ManifestError::invalid(
            path,
            format!("must not be a {f} URL"),
        ));
    }
    Ok(())
}

/// The manifest rules of ERC-8257: `type` is the v1 type; `name` 1-128 code points and
/// `description` 1-500 (no control characters; LF, CR, TAB allowed in `description`);
/// `endpoint` an `https` URL (A-label host); `inputs` and `outputs` objects, each at most 16
/// levels deep and together at most 1,024 nodes (every JSON value counts; `{}` is one);
/// `creatorAddress` `^0x[0-9a-f]{40}$`, not zero. When present: `version` a string; `image`
/// and `featuredImage` at most 2,048 bytes; `tags` at most 16 distinct slugs of 1-32
/// characters; `pricing` 1-32 entries (decimal amount at most `uint256` max, CAIP-19 asset,
/// CAIP-10 recipient on the same chain and not the zero address, protocol); `access` with
/// `logic` AND/OR and 1-256 requirements (`kind` 4 bytes, `data` at most 4,096 bytes, `label`
/// at most 256 bytes, `links` to `https` URLs); `verifiability` with `tier` and `execution`
/// and well-formed optional parts. Unknown keys are ignored. The pre-JCS rules (NFC, hex case
/// everywhere) are [`super::check_canonical_rules`]'s.
pub fn validate_manifest(value: &Value) -> Result<Manifest, ManifestError> {
    let m = Obj::new(value, String::new())
        .map_err(|_| ManifestError::invalid("", "the manifest is not a JSON object"))?;
    let ty = m.str("type")?;
    if ty != MANIFEST_TYPE {
        return Err(ManifestError::invalid(
            m.at("type"),
            format!("must be {MANIFEST_TYPE:?}"),
        ));
    }
    let name = m.str("name")?;
    text(m.at("name"), name, NAME_MAX, false)?;
    let description = m.str("description")?;
    text(m.at("description"), description, DESCRIPTION_MAX, true)?;
    let endpoint = m.str("endpoint")?;
    parse_https(endpoint).map_err(|r| ManifestError::invalid(m.at("endpoint"), r.to_string()))?;
    let (inputs, outputs) = schemas(&m)?;
    let creator = m.str("creatorAddress")?;
    let bytes = hex_field(m.at("creatorAddress"), creator, 40, 40, false)?;
    if bytes.iter().all(|b| *b == 0) {
        return Err(ManifestError::invalid(
            m.at("creatorAddress"),
            "must not be the zero address",
        ));
    }
    let version = m.opt_str("version")?;
    let images = (m.opt_str("image")?, m.opt_str("featuredImage")?);
    if let Some(s) = images.0 {
        image(m.at("image"), s)?;
    }
    if let Some(s) = images.1 {
        image(m.at("featuredImage"), s)?;
    }
    let mut tags = Vec::new();
    if let Some(items) = m.arr("tags")? {
        if items.len() > TAGS_MAX {
            return Err(ManifestError::invalid(
                m.at("tags"),
                format!("holds {} tags, more than {TAGS_MAX}", items.len()),
            ));
        }
        for (i, t) in items.iter().enumerate() {
            let mut at = m.at("tags");
            push_token(&mut at, &i.to_string());
            let Some(t) = t.as_str().filter(|t| is_slug(t, TAG_MAX)) else {
                return Err(ManifestError::invalid(
                    at,
                    "must match ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ in 1-32 characters",
                ));
            };
            if tags.iter().any(|seen: &String| seen == t) {
                return Err(ManifestError::invalid(at, format!("repeats the tag {t:?}")));
            }
            tags.push(t.to_owned());
        }
    }
    Ok(Manifest {
        name: name.into(),
        description: description.into(),
        endpoint: endpoint.into(),
        inputs,
        outputs,
        creator_address: creator.into(),
        version: version.map(Into::into),
        image: images.0.map(Into::into),
        featured_image: images.1.map(Into::into),
        tags,
        pricing: pricing(&m)?,
        access: access(&m)?,
        verifiability: verifiability(&m)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "type": MANIFEST_TYPE,
            "name": "t",
            "description": "d",
            "endpoint": "https://tools.example.com/t",
            "inputs": {},
            "outputs": {},
            "creatorAddress": "0xabcdef0123456789abcdef0123456789abcdef01"
        })
    }

    fn with(key: &str, v: Value) -> Value {
        let mut m = base();
        m[key] = v;
        m
    }

    fn path_of(v: &Value) -> String {
        match validate_manifest(v) {
            Err(ManifestError::Invalid { path, .. })
            | Err(ManifestError::UppercaseHex { path }) => path,
            other => panic!("expected a rejection, got {:?}", other.map(|m| m.name)),
        }
    }

    #[test]
    fn the_minimal_manifest_passes_and_unknown_keys_are_ignored() {
        let m = validate_manifest(&with("io.example.extra", json!([1, {"A": null}]))).unwrap();
        assert_eq!(m.name, "t");
        assert!(m.pricing.is_empty() && m.tags.is_empty() && m.access.is_none());
    }

    #[test]
    fn required_fields() {
        for key in [
            "type",
            "name",
            "description",
            "endpoint",
            "inputs",
            "outputs",
            "creatorAddress",
        ] {
            let mut m = base();
            m.as_object_mut().unwrap().remove(key);
            assert_eq!(path_of(&m), format!("/{key}"));
        }
        assert_eq!(path_of(&with("type", json!("tool-manifest-v1"))), "/type");
        assert_eq!(path_of(&with("name", json!(""))), "/name");
        assert_eq!(path_of(&with("name", json!("x".repeat(129)))), "/name");
        validate_manifest(&with("name", json!("\u{e9}".repeat(128)))).unwrap();
        assert_eq!(path_of(&with("name", json!("a\nb"))), "/name");
        validate_manifest(&with("description", json!("a\nb\tc\r"))).unwrap();
        assert_eq!(
            path_of(&with("description", json!("a\u{7}b"))),
            "/description"
        );
        assert_eq!(
            path_of(&with("description", json!("a\u{85}b"))),
            "/description"
        );
        assert_eq!(
            path_of(&with("description", json!("x".repeat(501)))),
            "/description"
        );
        assert_eq!(
            path_of(&with("endpoint", json!("http://x.example"))),
            "/endpoint"
        );
        assert_eq!(
            path_of(&with("endpoint", json!("https://ex\u{e4}mple.com"))),
            "/endpoint"
        );
        validate_manifest(&with("endpoint", json!("HTTPS://X.example:443/a?b#c"))).unwrap();
        assert_eq!(path_of(&with("inputs", json!([]))), "/inputs");
        assert_eq!(path_of(&with("outputs", json!(null))), "/outputs");
    }

    #[test]
    fn creator_address() {
        let zero = format!("0x{}", "0".repeat(40));
        assert_eq!(
            path_of(&with("creatorAddress", json!(zero))),
            "/creatorAddress"
        );
        let upper = "0xABCDEF0123456789abcdef0123456789abcdef01";
        assert!(matches!(
            validate_manifest(&with("creatorAddress", json!(upper))),
            Err(ManifestError::UppercaseHex { .. })
        ));
        for bad in [
            "0xabc",
            "abcdef0123456789abcdef0123456789abcdef0101",
            "0xg...",
        ] {
            assert_eq!(
                path_of(&with("creatorAddress", json!(bad))),
                "/creatorAddress"
            );
        }
    }

    #[test]
    fn schema_limits() {
        let mut deep = json!({});
        for _ in 0..15 {
            deep = json!({ "a": deep });
        }
        validate_manifest(&with("inputs", deep.clone())).unwrap();
        assert_eq!(path_of(&with("inputs", json!({ "a": deep }))), "/inputs");
        let wide: Map<String, Value> = (0..1021).map(|i| (format!("k{i}"), json!(1))).collect();
        // 1 (inputs) + 1021 members + 1 (outputs) = 1023 nodes; {"x": 1} makes 1024, one more 1025.
        validate_manifest(&with("inputs", Value::Object(wide.clone()))).unwrap();
        let mut m = with("inputs", Value::Object(wide));
        m["outputs"] = json!({ "x": 1 });
        validate_manifest(&m).unwrap();
        m["outputs"] = json!({ "x": 1, "y": 2 });
        assert_eq!(path_of(&m), "/outputs");
    }

    #[test]
    fn tags() {
        validate_manifest(&with("tags", json!(["a", "b-2", "x".repeat(32)]))).unwrap();
        assert_eq!(path_of(&with("tags", json!(["a", "a"]))), "/tags/1");
        assert_eq!(path_of(&with("tags", json!(["A"]))), "/tags/0");
        assert_eq!(path_of(&with("tags", json!(["a-"]))), "/tags/0");
        assert_eq!(path_of(&with("tags", json!(["x".repeat(33)]))), "/tags/0");
        assert_eq!(path_of(&with("tags", json!([1]))), "/tags/0");
        let many: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
        assert_eq!(path_of(&with("tags", json!(many))), "/tags");
        assert_eq!(path_of(&with("tags", json!("a"))), "/tags");
    }

    fn entry() -> Value {
        json!({
            "amount": "20000",
            "asset": "eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
            "recipient": "eip155:8453:0xabcdef0123456789abcdef0123456789abcdef01",
            "protocol": "x402"
        })
    }

    fn priced(field: &str, v: Value) -> Value {
        let mut e = entry();
        e[field] = v;
        with("pricing", json!([e]))
    }

    #[test]
    fn pricing_rules() {
        validate_manifest(&with("pricing", json!([entry()]))).unwrap();
        validate_manifest(&priced("amount", json!("0"))).unwrap();
        validate_manifest(&priced("amount", json!(UINT256_MAX))).unwrap();
        validate_manifest(&priced("asset", json!("eip155:8453/slip44:60"))).unwrap();
        assert_eq!(path_of(&with("pricing", json!(null))), "/pricing");
        assert_eq!(path_of(&with("pricing", json!([]))), "/pricing");
        let many: Vec<Value> = (0..33).map(|_| entry()).collect();
        assert_eq!(path_of(&with("pricing", json!(many))), "/pricing");
        for bad in ["01", "-1", "1.5", "", " 1", "1e3"] {
            assert_eq!(path_of(&priced("amount", json!(bad))), "/pricing/0/amount");
        }
        let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        assert_eq!(path_of(&priced("amount", json!(over))), "/pricing/0/amount");
        assert_eq!(
            path_of(&priced("amount", json!(20000))),
            "/pricing/0/amount"
        );
        assert_eq!(
            path_of(&priced(
                "recipient",
                json!("eip155:1:0xabcdef0123456789abcdef0123456789abcdef01")
            )),
            "/pricing/0/recipient"
        );
        let zero = format!("eip155:8453:0x{}", "0".repeat(40));
        assert_eq!(
            path_of(&priced("recipient", json!(zero))),
            "/pricing/0/recipient"
        );
        assert_eq!(
            path_of(&priced("asset", json!("eip155:8453"))),
            "/pricing/0/asset"
        );
        let upper = "eip155:8453/erc20:0x833589FCD6eDb6E08f4c7C32D4f71b54bdA02913";
        assert!(matches!(
            validate_manifest(&priced("asset", json!(upper))),
            Err(ManifestError::UppercaseHex { path }) if path == "/pricing/0/asset"
        ));
        let mut e = entry();
        e.as_object_mut().unwrap().remove("protocol");
        assert_eq!(path_of(&with("pricing", json!([e]))), "/pricing/0/protocol");
    }

    fn req() -> Value {
        json!({
            "kind": "0xabcd1234",
            "data": "0x000000000000000000000000abcdefabcdef1234567890abcdefabcdef123456",
            "label": "Hold any Chonk on Base",
            "links": {"buy": "https://opensea.io/collection/chonks"}
        })
    }

    #[test]
    fn access_rules() {
        let ok = validate_manifest(&with(
            "access",
            json!({"logic": "OR", "requirements": [req()]}),
        ))
        .unwrap();
        let a = ok.access.unwrap();
        assert_eq!(a.logic, Logic::Or);
        assert_eq!(a.requirements[0].kind, [0xab, 0xcd, 0x12, 0x34]);
        assert_eq!(a.requirements[0].data.len(), 32);
        let acc = |r: Value| with("access", json!({"logic": "AND", "requirements": [r]}));
        let mut r = req();
        r["kind"] = json!("0xABCD1234");
        assert!(matches!(
            validate_manifest(&acc(r)),
            Err(ManifestError::UppercaseHex { path }) if path == "/access/requirements/0/kind"
        ));
        let mut r = req();
        r["data"] = json!("0xabc");
        assert_eq!(path_of(&acc(r)), "/access/requirements/0/data");
        let mut r = req();
        r["data"] = json!(format!("0x{}", "00".repeat(4097)));
        assert_eq!(path_of(&acc(r)), "/access/requirements/0/data");
        let mut r = req();
        r["data"] = json!("0x");
        validate_manifest(&acc(r)).unwrap();
        let mut r = req();
        r["links"] = json!({"docs": "http://example.com"});
        assert_eq!(path_of(&acc(r)), "/access/requirements/0/links/docs");
        let mut r = req();
        r["label"] = json!("x".repeat(257));
        assert_eq!(path_of(&acc(r)), "/access/requirements/0/label");
        assert_eq!(
            path_of(&with(
                "access",
                json!({"logic": "XOR", "requirements": [req()]})
            )),
            "/access/logic"
        );
        assert_eq!(
            path_of(&with("access", json!({"logic": "AND", "requirements": []}))),
            "/access/requirements"
        );
        assert_eq!(
            path_of(&with("access", json!({"logic": "AND"}))),
            "/access/requirements"
        );
    }

    #[test]
    fn verifiability_rules() {
        let v = json!({
            "tier": "verifiable",
            "execution": "e2ee",
            "attestation": {
                "type": "nitro",
                "endpoint": "https://enclave.example.com/.well-known/attestation",
                "enclaveHash": "0x1234567890abcdef",
                "maxAge": 1800
            },
            "reproducibleBuild": {
                "sourceCodeURI": "https://github.com/example/tool/tree/abc123def456",
                "buildHash": "0x12"
            }
        });
        let m = validate_manifest(&with("verifiability", v.clone())).unwrap();
        assert_eq!(m.verifiability.unwrap().tier, "verifiable");
        let mut bad = v.clone();
        bad["attestation"]["enclaveHash"] = json!("0xABCD");
        assert!(matches!(
            validate_manifest(&with("verifiability", bad)),
            Err(ManifestError::UppercaseHex { path }) if path == "/verifiability/attestation/enclaveHash"
        ));
        let mut bad = v.clone();
        bad["reproducibleBuild"]["buildHash"] = json!("0x");
        assert_eq!(
            path_of(&with("verifiability", bad)),
            "/verifiability/reproducibleBuild/buildHash"
        );
        let mut bad = v.clone();
        bad["attestation"]["maxAge"] = json!(-1);
        assert_eq!(
            path_of(&with("verifiability", bad)),
            "/verifiability/attestation/maxAge"
        );
        let mut bad = v;
        bad.as_object_mut().unwrap().remove("tier");
        assert_eq!(path_of(&with("verifiability", bad)), "/verifiability/tier");
    }

    #[test]
    fn images() {
        validate_manifest(&with("image", json!("https://x.example/i.png"))).unwrap();
        assert_eq!(
            path_of(&with("image", json!("javascript:alert(1)"))),
            "/image"
        );
        assert_eq!(
            path_of(&with("featuredImage", json!("x".repeat(2049)))),
            "/featuredImage"
        );
        assert_eq!(path_of(&with("version", json!(1))), "/version");
    }
}
