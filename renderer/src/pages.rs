//! HTML pages (askama templates in `templates/`). Every value is escaped by askama; only the
//! library's markdown HTML (with raw HTML already escaped) is marked safe.

use askama::Template;
use conduct_core::scope::scope_line;
use conduct_core::signing::ServiceKey;

/// What every page's layout (`templates/layout.html`) shows besides its content: the title,
/// the description, the scope line and the id of the key that signs the page's JSON twin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageHead<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Scope line.
    pub scope_line: String,
    /// Key id.
    pub key_id: String,
}

impl<'a> PageHead<'a> {
    /// The head of a page of the service whose key is `key`.
    pub fn new(key: &ServiceKey, title: &'a str, description: &'a str) -> PageHead<'a> {
        PageHead {
            title,
            description,
            scope_line: scope_line(),
            key_id: key.key_id_hex(),
        }
    }
}

/// The service card page (`/`).
#[derive(Template)]
#[template(path = "card.html")]
pub struct CardPage<'a> {
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
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
    /// The meters served, in words ("meter/1, meter/2").
    pub meters: String,
    /// The default meter.
    pub default_meter: &'a str,
    /// How a request names its meter.
    pub meters_choose: &'a str,
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
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
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
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
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
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
    /// File name of the raw markdown.
    pub name: &'a str,
    /// HTML body (raw HTML inside the markdown already escaped).
    pub body: &'a str,
}

/// One entry row of a vow page.
#[derive(Debug, Clone)]
pub struct EntryRow {
    /// Chain position.
    pub seq: u64,
    /// Report-in instant, RFC 3339.
    pub at: String,
    /// Paid or free tier, in words.
    pub tier: &'static str,
    /// Adjusted bits of the four quantities, formatted.
    pub bits: [String; 4],
    /// `y_consistency`, formatted.
    pub y: String,
    /// The public note.
    pub note: Option<String>,
    /// Its log index.
    pub log_index: u64,
}

/// The HTML twin of `/vow/<id>`.
#[derive(Template)]
#[template(path = "vow.html")]
pub struct VowPage<'a> {
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
    /// Vow id.
    pub vow_id: &'a str,
    /// Agent name.
    pub agent: &'a str,
    /// The text (`None` when sealed).
    pub text: Option<&'a str>,
    /// SHA-256 of the text.
    pub text_sha256: &'a str,
    /// Badges in words (sealed, sandbox, wallet-signed).
    pub badges: Vec<String>,
    /// Cadence in words.
    pub cadence: String,
    /// When it was taken, RFC 3339.
    pub taken_at: &'a str,
    /// The state in short lines (entries, windows, overdue, chain check).
    pub status: Vec<String>,
    /// Whether the vow is overdue.
    pub overdue: bool,
    /// The trajectory chart (SVG made by [`crate::chart`], every text escaped there).
    pub chart: &'a str,
    /// The series legend names.
    pub series: [&'a str; 4],
    /// The most recent entries, newest first.
    pub rows: Vec<EntryRow>,
    /// How many entries the table leaves out.
    pub older: u64,
    /// The render instant, RFC 3339.
    pub as_of: &'a str,
    /// JSON-LD (already safe for a script element).
    pub json_ld: &'a str,
}

/// The HTML twin of `/vow/<id>/reading`.
#[derive(Template)]
#[template(path = "reading.html")]
pub struct InterpretationPage<'a> {
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
    /// Vow id.
    pub vow_id: &'a str,
    /// Agent name.
    pub agent: &'a str,
    /// What produced the interpretation, in words.
    pub source: String,
    /// The interpretation, one paragraph per line.
    pub paragraphs: Vec<String>,
    /// The notes compared with the numbers, one sentence per note that claims something.
    pub note_check: Vec<String>,
    /// How the notes are compared.
    pub note_check_method: &'a str,
    /// Caveats.
    pub caveats: Vec<String>,
    /// Entries covered.
    pub covers_seq: u64,
    /// The render instant, RFC 3339.
    pub as_of: &'a str,
}

/// One record row of a chain page.
#[derive(Debug, Clone)]
pub struct RecordRow {
    /// Chain position.
    pub position: u64,
    /// What it is.
    pub kind: &'static str,
    /// Its `at`.
    pub at: String,
    /// Its log index.
    pub log_index: u64,
    /// Hex SHA-256 of its leaf.
    pub sha256: String,
}

/// The link to a chain's last full page.
#[derive(Debug, Clone)]
pub struct PageRow {
    /// Link.
    pub href: String,
    /// First and last chain position.
    pub from: u64,
    /// Last chain position.
    pub to: u64,
    /// Pinned SHA-256 of its file.
    pub sha256: String,
}

/// The HTML twin of `/vow/<id>/chain`.
#[derive(Template)]
#[template(path = "chain.html")]
pub struct LinksPage<'a> {
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
    /// Vow id.
    pub vow_id: &'a str,
    /// Entries in the chain.
    pub length: u64,
    /// Hex SHA-256 of the head record.
    pub head_sha256: &'a str,
    /// How many full pages there are.
    pub full_pages: usize,
    /// The last full page, pinned (each page pins the one before it).
    pub last_page: Option<PageRow>,
    /// Records after the last full page.
    pub tail: Vec<RecordRow>,
}

/// One vow of the index.
#[derive(Debug, Clone)]
pub struct VowRowView {
    /// Vow id.
    pub vow_id: String,
    /// Agent name.
    pub agent: String,
    /// The text, or a note that it is sealed.
    pub text: String,
    /// CSS classes for the filters (`sealed`/`open`, `sandbox`/`signed`).
    pub classes: String,
    /// Badges in words.
    pub badges: String,
    /// Cadence in words.
    pub cadence: String,
    /// Taken, date.
    pub taken: String,
}

/// One page of the HTML vow index (`/vows`, the newest; `/vows/<k>`, immutable).
#[derive(Template)]
#[template(path = "vows.html")]
pub struct VowsPage<'a> {
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
    /// What this page lists, in a sentence.
    pub summary: String,
    /// The rank (1-based) of the first vow listed.
    pub start: usize,
    /// The vows of this page.
    pub vows: Vec<VowRowView>,
    /// The page of older vows, if any.
    pub older: Option<String>,
    /// The page of the newest vows, when this is not it.
    pub newest: Option<String>,
    /// This page's signed JSON.
    pub json_href: String,
}

/// The HTML twin of `/pubkey`.
#[derive(Template)]
#[template(path = "pubkey.html")]
pub struct PubkeyPage<'a> {
    /// Title, description, scope line and key id.
    pub head: PageHead<'a>,
    /// Base64 public key.
    pub public_key: &'a str,
    /// C2SP vkey.
    pub vkey: &'a str,
    /// Key name.
    pub name: &'a str,
}
