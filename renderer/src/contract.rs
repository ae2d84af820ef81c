//! What a route takes and answers (its [`Contract`]): parameters, request body, success
//! statuses and representations, problem statuses, and the named schemas of `components`.
//! The route table (the api's `routes.rs`) writes one per route; [`crate::openapi`] turns
//! them into `/openapi.json`. Its own module so that the route descriptions
//! ([`crate::input::RouteInfo`]) and the document builder do not depend on each other.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, SchemaGenerator};

/// `application/json`
pub const JSON: &str = "application/json";
/// `text/html`
pub const HTML: &str = "text/html";
/// `text/plain`
pub const TEXT: &str = "text/plain";
/// `text/markdown`
pub const MARKDOWN: &str = "text/markdown";
/// `application/octet-stream`
pub const OCTETS: &str = "application/octet-stream";
/// `application/atom+xml`
pub const ATOM: &str = "application/atom+xml";
/// `application/xml`
pub const XML: &str = "application/xml";
/// `image/svg+xml`
pub const SVG: &str = "image/svg+xml";
/// `text/css`
pub const CSS: &str = "text/css";

/// Where a parameter travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    /// A `{name}` of the path pattern.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
}

/// The JSON Schema of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamSchema {
    /// Written out (JSON text).
    Json(&'static str),
    /// The name of a published library document (an `enum` of the published names).
    DocumentName,
}

/// One parameter of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Name (for a path parameter, the `{name}` of the pattern).
    pub name: &'static str,
    /// Where it travels.
    pub location: In,
    /// Must be present.
    pub required: bool,
    /// Its schema.
    pub schema: ParamSchema,
    /// What it is.
    pub description: &'static str,
}

impl Param {
    /// A path parameter.
    pub const fn path(name: &'static str, schema: &'static str, description: &'static str) -> Self {
        Param {
            name,
            location: In::Path,
            required: true,
            schema: ParamSchema::Json(schema),
            description,
        }
    }

    /// A query parameter.
    pub const fn query(
        name: &'static str,
        required: bool,
        schema: &'static str,
        description: &'static str,
    ) -> Self {
        Param {
            name,
            location: In::Query,
            required,
            schema: ParamSchema::Json(schema),
            description,
        }
    }

    /// An optional request header.
    pub const fn header(
        name: &'static str,
        schema: &'static str,
        description: &'static str,
    ) -> Self {
        Param {
            name,
            location: In::Header,
            required: false,
            schema: ParamSchema::Json(schema),
            description,
        }
    }
}

/// A named schema of the document's `components`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// A signed JSON snapshot (`key_id`, `signature`).
    Snapshot,
    /// A signed ledger record (a vow or a report-in).
    Record,
    /// An attestation (`/schemas/attestation.json`).
    Attestation,
    /// `GET /health`'s answer.
    Health,
    /// The body of `POST /oracle/ask`.
    OracleRequest,
    /// The answer of `POST /oracle/ask` (unsigned).
    OracleAnswer,
    /// This document.
    OpenApi,
    /// The body of `POST /mcp`: one JSON-RPC 2.0 message of the Model Context Protocol.
    McpMessage,
    /// An answer of `POST /mcp`: one JSON-RPC 2.0 response (a result or an error).
    McpAnswer,
    /// The answer of `POST /erc8004/validation`: the credential and its hash.
    Erc8004Validation,
    /// The answer of `GET /prepare`: every action the service prepares.
    PrepareIndex,
    /// The answer of `/prepare/{action}` and `/ticket/{game}/prepare`: txs and preconditions.
    Prepared,
    /// The body of `POST /prepare/{action}`: the action's arguments, each a string.
    PrepareRequest,
    /// The answer of `POST /ticket/{game}/entitle`: the signed entitlement.
    Entitlement,
    /// The answer of `POST /witness/reading`: the signed reading.
    WitnessReading,
    /// The answer of `POST /familiar/summon`: the familiar's signed log record.
    Familiar,
    /// The schema of a Rust type, derived from it ([`Schema::of`]).
    Derived(Derived),
}

impl Schema {
    /// The schema of `T`, derived from the type (`schemars`): its component is named by the
    /// type's schema name, and the types it holds that are not inlined are components too.
    pub const fn of<T: JsonSchema>() -> Schema {
        Schema::Derived(Derived {
            name: T::schema_name,
            schema: T::json_schema,
        })
    }

    pub(crate) fn name(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Schema::Snapshot => "Snapshot",
            Schema::Record => "Record",
            Schema::Attestation => "Attestation",
            Schema::Health => "Health",
            Schema::OracleRequest => "OracleRequest",
            Schema::OracleAnswer => "OracleAnswer",
            Schema::OpenApi => "OpenApi",
            Schema::McpMessage => "McpMessage",
            Schema::McpAnswer => "McpAnswer",
            Schema::Erc8004Validation => "Erc8004Validation",
            Schema::PrepareIndex => "PrepareIndex",
            Schema::Prepared => "Prepared",
            Schema::PrepareRequest => "PrepareRequest",
            Schema::Entitlement => "Entitlement",
            Schema::WitnessReading => "WitnessReading",
            Schema::Familiar => "Familiar",
            Schema::Derived(d) => return (d.name)(),
        })
    }
}

/// A schema derived from a Rust type: its name and its JSON Schema, as `schemars` gives them.
/// Two are equal when they name the same component.
#[derive(Clone, Copy)]
pub struct Derived {
    pub(crate) name: fn() -> Cow<'static, str>,
    pub(crate) schema: fn(&mut SchemaGenerator) -> schemars::Schema,
}

impl PartialEq for Derived {
    fn eq(&self, other: &Self) -> bool {
        (self.name)() == (other.name)()
    }
}

impl Eq for Derived {}

impl fmt::Debug for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Derived({})", (self.name)())
    }
}

/// What one route takes and answers: the route table's half of its OpenAPI operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contract {
    /// Path, query and header parameters.
    pub params: &'static [Param],
    /// The schema of the JSON request body, when the route reads one.
    pub body: Option<Schema>,
    /// Success statuses.
    pub ok: &'static [u16],
    /// Media types of a success (several when `Accept` or `?format=` chooses).
    pub media: &'static [&'static str],
    /// The schema of a JSON success body.
    pub schema: Option<Schema>,
    /// `Accept` and `?format=` choose among [`Contract::media`] (adds `format`, 400 and 406).
    pub negotiated: bool,
    /// Other statuses answered with problem+json.
    pub problems: &'static [u16],
    /// A request body the route takes (JSON text), shown as the `bazaar` discovery
    /// extension's example of a paid route ([`crate::bazaar`]).
    pub example: Option<&'static str>,
}

impl Contract {
    /// Not described yet: the operation documents a `default` response only (any status).
    pub const UNDESCRIBED: Contract = Contract {
        params: &[],
        body: None,
        ok: &[],
        media: &[],
        schema: None,
        negotiated: false,
        problems: &[],
        example: None,
    };

    /// A file of the tree served as it is: 200, or 404 when absent.
    pub const fn file(media: &'static [&'static str], schema: Option<Schema>) -> Self {
        Contract {
            params: &[],
            body: None,
            ok: &[200],
            media,
            schema,
            negotiated: false,
            problems: &[404],
            example: None,
        }
    }

    /// A clean URL of the tree whose twins (`.json`, `.html`, `.txt`) `Accept` or `?format=`
    /// chooses among.
    pub const fn page(media: &'static [&'static str]) -> Self {
        Contract {
            negotiated: true,
            ..Contract::file(media, Some(Schema::Snapshot))
        }
    }

    /// A handler's answer: `ok` statuses in `media` (JSON per `schema`), or a problem.
    pub const fn call(
        ok: &'static [u16],
        media: &'static [&'static str],
        schema: Option<Schema>,
        problems: &'static [u16],
    ) -> Self {
        Contract {
            params: &[],
            body: None,
            ok,
            media,
            schema,
            negotiated: false,
            problems,
            example: None,
        }
    }

    /// With these parameters.
    pub const fn params(self, params: &'static [Param]) -> Self {
        Contract { params, ..self }
    }

    /// Reading a JSON body of this schema.
    pub const fn body(self, body: Schema) -> Self {
        Contract {
            body: Some(body),
            ..self
        }
    }

    /// With `example`, a body the route takes (JSON text).
    pub const fn example(self, example: &'static str) -> Self {
        Contract {
            example: Some(example),
            ..self
        }
    }

    /// Choosing its representation by `Accept` or `?format=`.
    pub const fn negotiated(self) -> Self {
        Contract {
            negotiated: true,
            ..self
        }
    }
}
