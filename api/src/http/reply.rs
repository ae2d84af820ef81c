//! Building HTTP responses: RFC 9457 problem details, JSON bodies, and the headers every
//! response carries (CORS, including the exposed x402 payment headers).

use conduct_core::scope::scope_value;
use conduct_core::trace::FieldError;
use serde_json::{json, Value};
use warp::http::{header, HeaderValue, Response, StatusCode};
use warp::reply::Response as WarpResponse;

/// Headers a browser client may read (x402 challenge and receipts, where a created record
/// is, whether its pages are rendered, whether its wait for them was applied).
pub const EXPOSED_HEADERS: &str =
    "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE, Retry-After, Allow, Server-Timing, Idempotent-Replayed, Location, Conduct-Render, Preference-Applied";
/// Headers a browser client may send (`Prefer: wait=` asks a report-in to wait for its pages).
pub const ALLOWED_HEADERS: &str =
    "Content-Type, Accept, PAYMENT-SIGNATURE, X-PAYMENT, Idempotency-Key, Prefer";

/// An RFC 9457 problem.
#[derive(Debug, Clone)]
pub struct Problem {
    /// HTTP status.
    pub status: StatusCode,
    /// Short problem type slug (documented in `library/ERRORS.md`).
    pub kind: &'static str,
    /// Human title.
    pub title: &'static str,
    /// What happened in this case.
    pub detail: String,
    /// Located field errors.
    pub errors: Vec<FieldError>,
    /// Extra headers (e.g. `Retry-After`, `Allow`).
    pub headers: Vec<(header::HeaderName, String)>,
}

impl Problem {
    /// A problem without field errors.
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        Problem {
            status,
            kind,
            title,
            detail: detail.into(),
            errors: Vec::new(),
            headers: Vec::new(),
        }
    }

    /// 400 for a body that did not parse or validate.
    pub fn invalid(errors: Vec<FieldError>) -> Self {
        let detail = match errors.first() {
            Some(e) if errors.len() == 1 => format!("{e}"),
            Some(e) => format!("{e} (and {} more)", errors.len() - 1),
            None => "the request is invalid".into(),
        };
        let status = if errors
            .iter()
            .any(|e| e.detail.starts_with("malformed JSON"))
        {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        Problem {
            status,
            kind: if status == StatusCode::BAD_REQUEST {
                "malformed"
            } else {
                "invalid"
            },
            title: if status == StatusCode::BAD_REQUEST {
                "The body is not well-formed JSON"
            } else {
                "The request does not satisfy the schema"
            },
            detail,
            errors,
            headers: Vec::new(),
        }
    }

    /// Naming the field at `pointer`: what it must be, or what is wrong with it.
    pub fn at(mut self, pointer: impl Into<String>, detail: impl Into<String>) -> Self {
        self.errors.push(FieldError::at(pointer, detail));
        self
    }

    /// Attach a header.
    pub fn with_header(mut self, name: header::HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The problem as a response.
    pub fn into_response(self, instance: &str) -> WarpResponse {
        let mut body = json!({
            "type": format!("/library/ERRORS.md#{}", self.kind),
            "title": self.title,
            "status": self.status.as_u16(),
            "detail": self.detail,
            "instance": instance,
            "scope": scope_value(),
        });
        if !self.errors.is_empty() {
            body["errors"] = Value::Array(
                self.errors
                    .iter()
                    .map(|e| json!({"pointer": e.pointer, "detail": e.detail}))
                    .collect(),
            );
        }
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut resp = bytes_response(self.status, "application/problem+json", bytes);
        for (k, v) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&v) {
                resp.headers_mut().append(k, v);
            }
        }
        resp
    }
}

/// A response with a body and content type.
pub fn bytes_response(
    status: StatusCode,
    content_type: &str,
    body: impl Into<bytes::Bytes>,
) -> WarpResponse {
    let body: bytes::Bytes = body.into();
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// A 200 JSON response.
pub fn json_response(body: Vec<u8>) -> WarpResponse {
    let mut resp = Response::new(body.into());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// 200 `text/plain; charset=utf-8`: an owner message's exact text, a log proof.
pub fn text_response(text: String) -> WarpResponse {
    bytes_response(
        StatusCode::OK,
        "text/plain; charset=utf-8",
        text.into_bytes(),
    )
}

/// Add the headers every response carries.
pub fn finish(mut resp: WarpResponse) -> WarpResponse {
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// The answer to a CORS preflight.
pub fn preflight() -> WarpResponse {
    let mut resp = Response::new(Vec::<u8>::new().into());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, HEAD, POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOWED_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    resp
}
