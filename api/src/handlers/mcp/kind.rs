//! The `/mcp` tools by name ([`Kind`]) and the HTTP request each one is: what the tools'
//! schemas ([`super::schemas`]) and their calls ([`super::tools`]) both name.

use rmcp::model::JsonObject;
use warp::http::Method;

/// One tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `about`: the service card.
    About,
    /// `take_vow`: a sandbox vow.
    TakeVow,
    /// `report_in`: a free report-in.
    ReportIn,
    /// `read_ledger`: a vow's chain.
    ReadLedger,
    /// `list_vows`: the index of vows.
    ListVows,
    /// `get_reading`: a vow's reading.
    GetReading,
    /// `demo_profile`: an unsigned profile.
    DemoProfile,
    /// `ask`: the oracle.
    Ask,
}

impl Kind {
    /// Every tool, in the order they are documented.
    pub const ALL: &'static [Kind] = &[
        Kind::About,
        Kind::TakeVow,
        Kind::ReportIn,
        Kind::ReadLedger,
        Kind::ListVows,
        Kind::GetReading,
        Kind::DemoProfile,
        Kind::Ask,
    ];

    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::About => "about",
            Kind::TakeVow => "take_vow",
            Kind::ReportIn => "report_in",
            Kind::ReadLedger => "read_ledger",
            Kind::ListVows => "list_vows",
            Kind::GetReading => "get_reading",
            Kind::DemoProfile => "demo_profile",
            Kind::Ask => "ask",
        }
    }

    /// The HTTP request a call with (checked) `args` is: method, path and JSON body.
    pub(super) fn request(self, args: &JsonObject) -> (Method, String, Option<Vec<u8>>) {
        let body = || serde_json::to_vec(args).ok();
        let vow = || args.get("vow_id").and_then(|v| v.as_str()).unwrap_or("");
        match self {
            Kind::About => (Method::GET, "/".into(), None),
            Kind::TakeVow => (Method::POST, "/vow".into(), body()),
            Kind::ReportIn => (Method::POST, "/vow/report/demo".into(), body()),
            Kind::ReadLedger => {
                let path = match args.get("page").and_then(|p| p.as_u64()) {
                    Some(k) => format!("/vow/{}/chain/{k}", vow()),
                    None => format!("/vow/{}/chain", vow()),
                };
                (Method::GET, path, None)
            }
            Kind::ListVows => {
                let path = match args.get("page").and_then(|p| p.as_u64()) {
                    Some(k) => format!("/vows/{k}"),
                    None => "/vows".into(),
                };
                (Method::GET, path, None)
            }
            Kind::GetReading => (Method::GET, format!("/vow/{}/reading", vow()), None),
            Kind::DemoProfile => (Method::POST, "/demo/profile".into(), body()),
            Kind::Ask => (Method::POST, "/oracle/ask".into(), body()),
        }
    }
}
