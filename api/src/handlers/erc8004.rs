//! `POST /erc8004/validation` (library/ERC8004.md): a signed predicate about one trace, bound to
//! an agent subject id, and `keccak256(JCS(credential))`, the hash an ERC-8004 validation request
//! or response carries. Paid through the one payment gate, like `POST /profile`: refused input
//! costs nothing, the credential is issued before settlement and served only once it settled,
//! and the same request within 24 hours is the same bytes, not charged again.
//!
//! The credential logic is core's (`conduct_core::erc8004`); this module parses, checks the
//! subject against the service's state (a `vow` must exist), and runs the gate.

use std::sync::Arc;

use bytes::Bytes;
use conduct_core::attestation::{measure, Predicate};
use conduct_core::erc8004::{
    answer_bytes, parse_subject, predicate_only, resolve, Credential, Form, Subject,
    ValidationRequest,
};
use conduct_core::meter::Meter;
use conduct_core::signing::ServiceKey;
use conduct_core::trace::{parse_json, validate, FieldError};
use conduct_indexer::vows::VowReader;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::handlers::profile::{replay_from_record, replay_record};
use crate::handlers::views::Signing;
use crate::http::reply::{json_response, Problem};
use crate::payment::gate::{gate, Charge, Payments, Served};
use crate::sources::service_now;

/// What `POST /erc8004/validation` reads of the running service: the signing key and public
/// URL (the issuer), the vows (a `vow` subject must exist) and the payments.
#[derive(Clone, Copy)]
pub struct Erc8004<'a> {
    /// The signing key and public URL.
    pub sign: Signing<'a>,
    /// Reads of vows.
    pub vows: &'a Arc<VowReader>,
    /// What the payment gate charges with.
    pub pay: Payments<'a>,
}

self_cell::self_cell!(
    /// A validation request parsed once, borrowing the body it came from.
    struct Body {
        owner: Bytes,
        #[covariant]
        dependent: ValidationRequest,
    }
);

/// A request that passed every check that needs no money: the body, its predicate, its subject
/// in normal form.
pub struct Checked {
    body: Body,
    predicate: Predicate,
    subject: Subject,
    meter: Meter,
}

/// 422 `predicate-only`: the request asks for raw numbers (`errors[0]` names the member).
fn refuse_raw(e: FieldError) -> Problem {
    let mut p = Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "predicate-only",
        "A validation credential carries a predicate only",
        e.to_string(),
    );
    p.errors.push(e);
    p
}

/// 422 `invalid-subject`: an unknown form, an id that breaks its form's rule, or no such vow.
fn refuse_subject(e: FieldError) -> Problem {
    let mut p = Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid-subject",
        "The subject is not a valid id of its form",
        e.to_string(),
    );
    p.errors.push(e);
    p
}

impl Checked {
    /// Parse and check a body: raw-number requests first (so `{"full": true}` is named as such,
    /// not as an unknown member), then the schema, the predicate, the subject and every trace
    /// rule.
    pub fn new(body: Bytes) -> Result<Checked, Problem> {
        if let Some(e) = predicate_only(&body) {
            return Err(refuse_raw(e));
        }
        let body = Body::try_new(body, |b| {
            parse_json::<ValidationRequest>(b).map_err(|e| Problem::invalid(vec![e]))
        })?;
        let req = body.borrow_dependent();
        let predicate = resolve(&req.predicate).map_err(|e| Problem::invalid(vec![e]))?;
        let subject = parse_subject(&req.subject.form, &req.subject.id).map_err(refuse_subject)?;
        let meter = conduct_core::trace::requested_meter(req.meter.as_deref(), super::METERS)
            .map_err(|e| Problem::invalid(vec![e]))?;
        validate(req.trace.trace()).map_err(|errs| {
            Problem::invalid(
                errs.into_iter()
                    .map(|mut e| {
                        e.pointer = format!("/trace{}", e.pointer);
                        e
                    })
                    .collect(),
            )
        })?;
        Ok(Checked {
            body,
            predicate,
            subject,
            meter,
        })
    }

    /// What the signed answer depends on: the trace hash (with its `context_key`), the
    /// predicate and the subject in normal form. The default idempotency key.
    fn request(&self) -> String {
        let req = self.body.borrow_dependent();
        let hash = conduct_core::canonical::trace_sha256(req.trace.trace());
        let key = format!(
            "{}|{}/{}|{}|{}",
            hex::encode(hash),
            self.predicate.metric,
            self.predicate.band.name,
            self.subject.form.name(),
            self.subject.id
        );
        match &req.meter {
            Some(m) => format!("{key}|{m}"),
            None => key,
        }
    }

    /// The answer's bytes (`{credential, credential_hash, how_to_use, scope}`, RFC 8785) as
    /// issued at `issued_at`.
    fn issue(
        &self,
        issued_at: u64,
        meter: Meter,
        key: &ServiceKey,
        public_url: &str,
    ) -> Result<Vec<u8>, Problem> {
        let req = self.body.borrow_dependent();
        let measured = measure(req.trace.trace(), meter).map_err(Problem::invalid)?;
        let credential = Credential {
            subject: &self.subject,
            predicate: self.predicate,
            measured: &measured,
            context_key: &req.trace.context_key,
            n_turns: req.trace.turns.len(),
            issued_at_unix: issued_at,
            issuer: public_url,
        };
        credential
            .signed(key)
            .and_then(|signed| answer_bytes(public_url, &self.subject, &signed))
            .map_err(|e| {
                Problem::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "unrepresentable",
                    "Result not representable",
                    e.to_string(),
                )
            })
    }
}

/// A `vow` subject must be a vow of this service.
async fn vow_exists(vows: &Arc<VowReader>, subject: &Subject) -> Result<(), Problem> {
    if subject.form != Form::Vow {
        return Ok(());
    }
    match crate::handlers::common::find_vow(vows, &subject.id).await {
        Ok(_) => Ok(()),
        Err(p) if p.kind == "unknown-vow" => Err(refuse_subject(FieldError::at(
            "/subject/id",
            format!(
                "there is no vow {:?} on this service (a vow subject is a vow of this service; \
                 see /vows)",
                subject.id
            ),
        ))),
        Err(p) => Err(p),
    }
}

/// `POST /erc8004/validation`: check (nothing is asked for before the request is valid), take
/// payment, issue and sign, settle, serve (the payment gate, settling after the handler: a
/// credential that cannot be issued is never charged).
pub async fn paid(
    ctx: Erc8004<'_>,
    body: Bytes,
    charge: Charge<'_>,
) -> Result<WarpResponse, Problem> {
    let checked = Arc::new(Checked::new(body)?);
    vow_exists(ctx.vows, &checked.subject).await?;
    let request = checked.request();
    let now = service_now();
    let (again, key, public) = (
        checked.clone(),
        ctx.sign.key.clone(),
        ctx.sign.public_url.to_owned(),
    );
    let rebuild = move |record: Vec<u8>| {
        replay_from_record(&record, |at, meter| again.issue(at, meter, &key, &public))
    };
    let (key, public) = (ctx.sign.key.clone(), ctx.sign.public_url.to_owned());
    let meter = checked.meter;
    let handler = || async move {
        let bytes =
            tokio::task::spawn_blocking(move || checked.issue(now, checked.meter, &key, &public))
                .await
                .map_err(|e| {
                    Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "busy",
                        "Could not issue now",
                        format!("issuing task failed: {e}"),
                    )
                })??;
        Ok(Served {
            record: replay_record(now, meter, &bytes),
            response: json_response(bytes),
        })
    };
    let parts = ctx.pay.gate_parts(charge.pay.price, now);
    gate(parts, &charge, request, rebuild, |_| Ok(()), handler).await
}
