//! HTML pages (askama templates in `templates/`). Every value is escaped by askama; only the
//! library's markdown HTML (with raw HTML already escaped) is marked safe.

use askama::Template;

/// The service card page (`/`).
#[derive(Template)]
#[template(path = "card.html")]
pub struct CardPage<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Scope line.
    pub scope_line: &'a str,
    /// Key id.
    pub key_id: &'a str,
    /// What the service does.
    pub what: &'a str,
    /// Who it is for.
    pub for_whom: &'a str,
    /// The demo cap in words.
    pub demo_cap: &'a str,
    /// Price per paid read.
    pub price: &'a str,
    /// Public base URL.
    pub public_url: &'a str,
    /// Base64 public key.
    pub public_key: &'a str,
    /// C2SP vkey.
    pub vkey: &'a str,
    /// One line per rail.
    pub rails: Vec<String>,
}

/// One row of the catalog page.
#[derive(Debug, Clone)]
pub struct EndpointRow {
    /// HTTP method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Paid via x402.
    pub paid: bool,
    /// What it does.
    pub description: String,
}

/// The catalog page.
#[derive(Template)]
#[template(path = "catalog.html")]
pub struct CatalogPage<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Scope line.
    pub scope_line: &'a str,
    /// Key id.
    pub key_id: &'a str,
    /// The endpoints.
    pub endpoints: Vec<EndpointRow>,
}

/// One row of the library page.
#[derive(Debug, Clone)]
pub struct DocRow {
    /// File name.
    pub name: String,
    /// Name without `.md`.
    pub stem: String,
    /// Title.
    pub title: String,
    /// Size in bytes.
    pub bytes: usize,
}

/// The library index page.
#[derive(Template)]
#[template(path = "library.html")]
pub struct LibraryPage<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Scope line.
    pub scope_line: &'a str,
    /// Key id.
    pub key_id: &'a str,
    /// Published documents.
    pub docs: Vec<DocRow>,
    /// How many are held back.
    pub withheld_count: usize,
    /// Why.
    pub withheld_why: &'a str,
}

/// One library document rendered.
#[derive(Template)]
#[template(path = "doc.html")]
pub struct DocPage<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Scope line.
    pub scope_line: &'a str,
    /// Key id.
    pub key_id: &'a str,
    /// File name of the raw markdown.
    pub name: &'a str,
    /// HTML body (raw HTML inside the markdown already escaped).
    pub body: &'a str,
}
