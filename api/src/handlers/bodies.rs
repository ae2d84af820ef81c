//! The request-body schemas of the free write routes that both the route table
//! ([`crate::routes`]) and the MCP tools' schemas name, derived from the core types; they
//! import neither.

use conduct_renderer::openapi::Schema;

/// `POST /profile` and `POST /demo/profile`.
pub const PROFILE_BODY: Schema = Schema::of::<conduct_core::trace::ProfileRequest<'static>>();
/// `POST /vow`.
pub const VOW_BODY: Schema = Schema::of::<conduct_core::vow::VowRequest>();
/// `POST /vow/report` and `POST /vow/report/demo`.
pub const REPORT_BODY: Schema = Schema::of::<conduct_core::vow::ReportRequest<'static>>();
