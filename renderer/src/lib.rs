//! conduct-renderer: state -> static tree.
//!
//! Signed JSON snapshots, HTML pages (askama), the library (pulldown-cmark) and the signed
//! mirror manifest. Pure given its input: the same state and `as_of` give the same bytes.

pub mod bazaar;
pub mod chart;
pub mod contract;
pub mod discovery;
pub mod docs;
pub mod familiar;
pub mod hive;
pub mod input;
pub mod live;
pub mod manifest;
pub mod mark;
pub mod munus;
pub mod openapi;
pub mod pages;
pub mod parallel;
pub mod passages;
pub mod publish;
pub mod registry;
pub mod reputation;
pub mod site;
pub mod snapshot;
pub mod tree;
pub mod vow_html;
pub mod vows;
pub mod vows_index;
pub mod warm;

pub use input::{PostedPrice, RouteInfo, SiteInput};
pub use site::render;
pub use tree::Tree;

/// Why a render failed.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A template failed to render.
    #[error("template: {0}")]
    Template(#[from] askama::Error),
    /// A document could not be canonicalized for signing.
    #[error(transparent)]
    Canonical(#[from] conduct_core::canonical::CanonicalError),
    /// An input was malformed.
    #[error("input: {0}")]
    Input(String),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] conduct_indexer::store::StoreError),
}
