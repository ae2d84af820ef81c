//! The vow endpoints (library/VOWS.md): `GET /vow/message`, `POST /vow`, `POST /vow/report/demo`
//! (free), `POST /vow/report` (paid through the x402 gate) and `GET /vow/{id}/verify_text`.
//! Reads of vows are static snapshots kept current by the live site (`conduct_renderer::live`).
//!
//! Every check runs before anything is written or paid for; a write is acknowledged (201)
//! only after the log committed it and the vow's pages were re-rendered.

use std::sync::Arc;

use bytes::Bytes;
use conduct_core::attestation::measure;
use conduct_core::canonical::{sha256_hex, write_trace};
use conduct_core::meter::{self, Meter};
use conduct_core::owner::{self, Kind};
use conduct_core::tlog::MAX_ENTRY_LEN;
use conduct_core::trace::{parse_json, FieldError};
use conduct_core::vow::consistency::y_consistency;
use conduct_core::vow::record::{declared_ys, text_sha256, Proof};
use conduct_core::vow::{self as vow, eip191, ReportRequest, VowRequest};
use conduct_indexer::ledger::LedgerError;
use conduct_indexer::vows::{
    entry_job, vow_job, DonatedTraces, NewEntry, NewVow, VowReader, VowRow,
};
use serde_json::json;
use warp::http::{HeaderMap, HeaderValue, StatusCode};
use warp::reply::Response as WarpResponse;

use crate::error::unavailable;
use crate::handlers::common::{blocking, created, find_vow, unknown_vow, with_render_state};
use crate::handlers::views::{Ledger, Signing};
use crate::http::reply::{json_response, text_response, Problem};
use crate::http::request::{query_param, required_param};
use crate::payment;
use crate::payment::gate::{gate, Charge, Payments, Served};
use crate::sources::service_now;

/// What the vow endpoints read of the running service.
#[derive(Clone, Copy)]
pub struct Vows<'a> {
    /// The signing key and public URL.
    pub sign: Signing<'a>,
    /// The log, the vows and their pages.
    pub ledger: Ledger<'a>,
    /// Donated raw traces, kept apart.
    pub donated: &'a Arc<dyn DonatedTraces>,
    /// What the payment gate charges with (`POST /vow/report`).
    pub pay: Payments<'a>,
}

/// The problem for a path under `/vow/<id>` the tree does not hold when `vows` has no such
/// vow: `unknown-vow`, as the write routes and MCP tools say it (library/MCP.md); `None` for any
/// other path, or a vow the store holds.
pub(crate) async fn missing(vows: &Arc<VowReader>, path: &str) -> Option<Problem> {
    let rest = path.strip_prefix("/vow/").unwrap_or("");
    let id = rest.get(..vow::VOW_ID_LEN).unwrap_or("");
    let tail = rest.get(vow::VOW_ID_LEN..).unwrap_or("");
    let vow_path = tail.is_empty() || tail.starts_with('/') || tail.starts_with('.');
    if !(vow_path && vow::is_vow_id(id)) {
        return None;
    }
    match find_vow(vows, id).await {
        Err(p) if p.kind == "unknown-vow" => Some(p),
        _ => None,
    }
}

/// `GET /vow/message?text=&agent=&cadence_hours=[&sealed=true]`: the exact EIP-191 text.
pub fn message(ctx: Vows<'_>, query: &str) -> Result<WarpResponse, Problem> {
    let mut errs = Vec::new();
    let text = required_param(query, "text", &mut errs);
    let agent = required_param(query, "agent", &mut errs);
    let cadence_raw = required_param(query, "cadence_hours", &mut errs);
    if !errs.is_empty() {
        return Err(Problem::invalid(errs));
    }
    let sealed = match query_param(query, "sealed").as_deref() {
        None | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(other) => {
            return Err(Problem::invalid(vec![FieldError::at(
                "?sealed",
                format!("{other:?} is not true or false"),
            )]))
        }
    };
    let cadence: f64 = cadence_raw
        .parse()
        .map_err(|_| Problem::invalid(vec![FieldError::at("?cadence_hours", "not a number")]))?;
    let checks = [
        vow::check_text(&text, "?text"),
        vow::check_agent(&agent, "?agent"),
        vow::check_cadence(cadence, "?cadence_hours").map(|_| ()),
    ];
    let errs: Vec<FieldError> = checks.into_iter().filter_map(Result::err).collect();
    if !errs.is_empty() {
        return Err(Problem::invalid(errs));
    }
    let agent = vow::normalize_agent(&agent);
    let today = conduct_core::time::utc_date(service_now());
    let msg = vow::vow_message(ctx.sign.public_url, &text, &agent, cadence, sealed, &today);
    Ok(text_response(msg))
}

/// `POST /vow`: take a vow (sandbox unless a wallet signature verifies).
pub async fn take(ctx: Vows<'_>, body: Bytes) -> Result<WarpResponse, Problem> {
    let req: VowRequest = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
    let checked = vow::check_vow(&req).map_err(Problem::invalid)?;
    let mut signed_message = None;
    let mut signature = None;
    let mut sandbox_reason = None;
    if let (Some(sig), Some(wallet)) = (&req.signature, &checked.wallet) {
        let msg = vow::vow_message(
            ctx.sign.public_url,
            &req.text,
            &checked.agent,
            req.cadence_hours,
            checked.sealed,
            &conduct_core::time::utc_date(service_now()),
        );
        let failed = match owner::recover(Kind::TakeVow, &msg, sig) {
            Ok(addr) if &addr == wallet => None,
            Ok(addr) => Some(format!(
                "the wallet signature did not verify: it recovers to 0x{}, not the wallet; \
                 sign the exact text of GET /vow/message with these parameters (sealed={})",
                hex::encode(addr),
                checked.sealed
            )),
            Err(e) => Some(format!("the wallet signature did not verify: {e}")),
        };
        match failed {
            None => {
                signed_message = Some(sha256_hex(
                    format!("{}\n{msg}", hex::encode(wallet)).as_bytes(),
                ));
                // Ok above means it parses: the canonical spelling exists.
                signature = eip191::canonical(sig).ok();
            }
            // A sealed vow publishes only its hash: accepting it as an open sandbox vow
            // would publish the text its author meant to seal, so it is refused instead.
            Some(why) if checked.sealed => {
                let mut p = Problem::invalid(vec![FieldError::at("/signature", why)]);
                p.kind = "bad-signature";
                p.title = "The wallet signature does not verify";
                return Err(p);
            }
            // A vow without a valid wallet signature is accepted, sandbox for good (VOWS.md).
            Some(why) => sandbox_reason = Some(why),
        }
    }
    let new_wallet = checked
        .wallet
        .filter(|_| signature.is_some() && sandbox_reason.is_none())
        .map(|w| format!("0x{}", hex::encode(w)));
    let new = NewVow {
        origin: ctx.sign.key.name().to_owned(),
        agent: checked.agent.clone(),
        text: req.text,
        cadence_hours: req.cadence_hours,
        cadence_seconds: checked.cadence_seconds,
        wallet: checked.wallet.filter(|_| signature.is_some()),
        wallet_signature: signature,
        signed_message_sha256: signed_message,
        sealed: checked.sealed,
        sandbox_reason: sandbox_reason.clone(),
        at: service_now(),
    };
    // From the commit on, the answer is its acknowledgement: the pages are asked for by the
    // sequencer as it commits (a request dropped after that still gets them). The handle's
    // public record and, for a signed vow, the creator records of the tools its wallet
    // registered first, then the vow's pages, so the integration mark never passes the vow
    // while they wait (renderer/src/live/mod.rs, `Marks`).
    let (site, agent) = (ctx.ledger.site.clone(), checked.agent.clone());
    let (asked_tx, asked) = tokio::sync::oneshot::channel();
    let on_commit: conduct_indexer::ledger::OnCommit = Box::new(move |r| {
        let Ok(appended) = r else { return };
        let id = vow_id_of(appended.leaf.as_deref().unwrap_or_default());
        let who = conduct_renderer::live::registry::who_key;
        drop(site.start_render(crate::sources::REGISTRY, &who(&agent), false));
        if let Some(w) = new_wallet {
            drop(site.start_render(crate::sources::REGISTRY, &who(&w), true));
        }
        let _ = asked_tx.send((
            id.clone(),
            site.start_render(crate::sources::VOWS, &id, true),
        ));
    });
    let appended = ctx
        .ledger
        .seq
        .submit_job_then(vow_job(ctx.sign.key.clone(), new), Some(on_commit))
        .await
        .map_err(crate::error::ledger_problem)?;
    let leaf = appended.leaf.unwrap_or_default();
    // A render that fails (a full site disk) is retried by the render thread until the pages
    // catch up.
    let (id, rendered) = match asked.await {
        Ok((id, page)) => {
            let why = conduct_renderer::live::rendered(page).await.err();
            (id, why.map(|e| e.0))
        }
        Err(_) => (
            vow_id_of(&leaf),
            Some("the commit hook did not run".to_owned()),
        ),
    };
    Ok(with_render_state(
        created(leaf, &format!("/vow/{id}")),
        rendered,
    ))
}

/// The vow id of a vow record's leaf bytes ("" when they hold none).
fn vow_id_of(leaf: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(leaf)
        .ok()
        .and_then(|v| v["vow_id"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A report-in checked, scored and ready to append.
struct Metered {
    entry: NewEntry,
    donated: Option<Vec<u8>>,
    /// The wallet a paid report-in's payer must be (a wallet-signed vow reported on without
    /// a signature); the entry's proof is then the payer.
    payer_must_be: Option<String>,
}

fn wallet_proof_required(detail: String) -> Problem {
    Problem::new(
        StatusCode::FORBIDDEN,
        "wallet-proof-required",
        "This vow's wallet must prove the report-in",
        detail,
    )
    .at(
        "/signature",
        "sign the text of GET /vow/report/message with the vow's wallet (EIP-191)",
    )
}

/// The proof a report-in on `row` carries: open for a sandbox vow; for a wallet-signed vow
/// its signature over the report-in text at `public_url`, or (paid route only) the payer,
/// checked later.
fn proof_for(
    public_url: &str,
    row: &VowRow,
    req: &ReportRequest<'_>,
    trace_sha256: &[u8; 32],
    meter: Meter,
    paid: bool,
) -> Result<(Proof, Option<String>), Problem> {
    let Some(wallet) = row.wallet.as_deref().filter(|_| !row.sandbox) else {
        return Ok((Proof::SandboxOpen, None));
    };
    let Some(sig) = &req.signature else {
        if paid {
            return Ok((Proof::Payer(wallet.to_owned()), Some(wallet.to_owned())));
        }
        return Err(wallet_proof_required(format!(
            "vow {} is signed by wallet {wallet}: a free report-in needs that wallet's EIP-191 \
             signature over the exact text of GET /vow/report/message (which binds the trace's \
             sha256, the note, donate_trace and the meter); a paid report-in may instead be paid \
             by that wallet",
            row.vow_id
        )));
    };
    let msg = vow::report_message(
        public_url,
        &row.vow_id,
        &hex::encode(trace_sha256),
        req.note.as_deref(),
        req.donate_trace.unwrap_or(false),
        meter,
        &conduct_core::time::utc_date(service_now()),
    );
    let want = vow::parse_wallet(wallet).unwrap_or_default();
    match owner::recover(Kind::ReportIn, &msg, sig) {
        Ok(addr) if addr == want => {
            // One spelling per signature, so a re-spelled replay is the same replay.
            let canon = eip191::canonical(sig).unwrap_or_else(|_| sig.to_ascii_lowercase());
            Ok((Proof::WalletSignature(canon), None))
        }
        Ok(addr) => Err(wallet_proof_required(format!(
            "the signature recovers to 0x{}, not the vow's wallet {wallet}; sign the exact text \
             of GET /vow/report/message for this trace, note, donate_trace and meter",
            hex::encode(addr)
        ))),
        Err(e) => Err(wallet_proof_required(format!(
            "the signature does not verify: {e}"
        ))),
    }
}

/// `GET /vow/report/message?vow_id=&trace_sha256=[&note=][&donate_trace=true][&meter=]`: the
/// exact EIP-191 text a wallet-signed vow's wallet signs to report in (`meter` as the body
/// will name it; absent, the default).
pub async fn report_message(ctx: Vows<'_>, query: &str) -> Result<WarpResponse, Problem> {
    let mut errs = Vec::new();
    let vow_id = query_param(query, "vow_id").unwrap_or_default();
    if !vow::is_vow_id(&vow_id) {
        errs.push(FieldError::at(
            "?vow_id",
            "a vow id (16 lowercase hex digits) is required",
        ));
    }
    let trace = query_param(query, "trace_sha256").unwrap_or_default();
    if trace.len() != 64
        || !trace
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        errs.push(FieldError::at(
            "?trace_sha256",
            "the trace's sha256 (64 lowercase hex digits; RFC 8785 of {context_key, turns}, see library/ATTESTATION.md) is required",
        ));
    }
    let donate = match query_param(query, "donate_trace").as_deref() {
        None | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(other) => {
            errs.push(FieldError::at(
                "?donate_trace",
                format!("{other:?} is not true or false"),
            ));
            false
        }
    };
    let note = query_param(query, "note");
    let meter =
        match meter::version::requested(query_param(query, "meter").as_deref(), super::METERS) {
            Ok(m) => m,
            Err(why) => {
                errs.push(FieldError::at("?meter", why));
                Meter::DEFAULT
            }
        };
    if !errs.is_empty() {
        return Err(Problem::invalid(errs));
    }
    let row = find_vow(ctx.ledger.vows, &vow_id).await?;
    let msg = vow::report_message(
        ctx.sign.public_url,
        &row.vow_id,
        &trace,
        note.as_deref(),
        donate,
        meter,
        &conduct_core::time::utc_date(service_now()),
    );
    Ok(text_response(msg))
}

/// Check and score a report-in body (everything but appending), off the runtime.
/// Refuse a report-in (before anything is metered, paid or written) while the live site is
/// further behind than its bound: answering at the commit must not let the pages fall
/// behind without limit.
fn pushed_back(ctx: &Vows<'_>) -> Result<(), Problem> {
    match ctx.ledger.site.pushback() {
        Some((wait, bound)) => Err(crate::error::integration_behind(wait, bound)),
        None => Ok(()),
    }
}

async fn meter_report(ctx: &Vows<'_>, body: Bytes, attested: bool) -> Result<Metered, Problem> {
    let (reader, key) = (ctx.ledger.vows.clone(), ctx.sign.key.clone());
    let public_url = ctx.sign.public_url.to_owned();
    let work = move || -> Result<Metered, Problem> {
        let req: ReportRequest = parse_json(&body).map_err(|e| Problem::invalid(vec![e]))?;
        vow::check_report(&req).map_err(Problem::invalid)?;
        let row = reader
            .vow_to_append(&req.vow_id)
            .map_err(|e| unavailable("reading the vow", e))?
            .ok_or_else(|| unknown_vow(&req.vow_id))?;
        let meter = req
            .meter(super::METERS)
            .map_err(|e| Problem::invalid(vec![e]))?;
        let measured = measure(req.trace(), meter).map_err(Problem::invalid)?;
        let (proof, payer_must_be) = proof_for(
            &public_url,
            &row,
            &req,
            &measured.trace_sha256,
            meter,
            attested,
        )?;
        let ys = || req.turns.iter().map(|t| t.y.as_ref());
        let donate = req.donate_trace.unwrap_or(false);
        let donated = donate.then(|| {
            let mut out = Vec::new();
            write_trace(&mut out, req.trace());
            out
        });
        let entry = NewEntry {
            vow_id: row.vow_id.clone(),
            trace_sha256: measured.trace_sha256,
            context_key: req.context_key.to_string(),
            n_turns: req.turns.len(),
            meter: measured.meter,
            profile: measured.profile,
            declared_y: (!row.sealed).then(|| declared_ys(ys())),
            y_consistency: y_consistency(&row.text, ys()),
            note: req.note.clone(),
            attested,
            trace_donated: donate,
            at: service_now(),
            proof,
        };
        let len = entry
            .worst_case_len(&key)
            .map_err(|e| unavailable("signing the entry", e))?;
        if len > MAX_ENTRY_LEN {
            return Err(crate::error::ledger_problem(LedgerError::EntryTooLarge {
                position: 0,
                len,
            }));
        }
        Ok(Metered {
            entry,
            donated,
            payer_must_be,
        })
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| unavailable("scoring", e))?
}

/// What a report-in's answer says of its vow's pages (`Conduct-Render`, VOWS.md "Durability
/// and verification").
enum Render {
    /// Being integrated after the answer (no wait asked, or the wait ran out).
    Queued,
    /// The vow's signed snapshots are written.
    Done,
    /// They could not be written yet (the render thread retries them): why.
    Pending(String),
}

/// Where a report-in's time went, as a W3C `Server-Timing` value: `commit` (until the entry
/// committed), `render` (from the commit until the vow's files were written, when the client
/// waited for them) and `total`.
struct Timing {
    commit_ms: f64,
    render_ms: Option<f64>,
    total_ms: f64,
    render: Render,
    /// The `Prefer: wait` applied, seconds.
    waited: Option<u64>,
}

impl Timing {
    fn header(&self) -> String {
        match self.render_ms {
            Some(r) => format!(
                "commit;dur={:.2}, render;dur={r:.2};desc=\"after commit\", total;dur={:.2}",
                self.commit_ms, self.total_ms
            ),
            None => format!(
                "commit;dur={:.2}, total;dur={:.2}",
                self.commit_ms, self.total_ms
            ),
        }
    }
}

/// Append a metered report-in and have its vow re-rendered; the signed entry bytes and
/// where the time went. The answer comes once the entry committed (and the log's files are
/// published); with `wait` (`Prefer: wait=`), once the vow's signed snapshots are written
/// too, or the wait ran out. Renders are coalesced per vow by the render thread.
async fn append(
    ctx: &Vows<'_>,
    p: Metered,
    wait: Option<std::time::Duration>,
) -> Result<(Vec<u8>, Timing), Problem> {
    let vow_id = p.entry.vow_id.clone();
    if let Some(trace) = p.donated {
        let (d, v, h, at) = (
            ctx.donated.clone(),
            vow_id.clone(),
            hex::encode(p.entry.trace_sha256),
            p.entry.at,
        );
        blocking("keeping the donated trace", move || {
            d.put(&v, &h, &trace, at).map_err(|e| e.to_string())
        })
        .await?;
    }
    // The vow is re-rendered as soon as the entry has committed, while the log's files are
    // being published; the render's integration latency is measured from the commit.
    let (site, id) = (ctx.ledger.site.clone(), vow_id.clone());
    let (rendered_tx, rendered) = tokio::sync::oneshot::channel();
    let started_at = std::time::Instant::now();
    let on_commit: conduct_indexer::ledger::OnCommit = Box::new(move |r| {
        if r.is_ok() {
            let at = std::time::Instant::now();
            let _ = rendered_tx.send((
                at,
                site.start_render_committed(crate::sources::VOWS, &id, false, at),
            ));
        }
    });
    let appended = ctx
        .ledger
        .seq
        .submit_job_then(entry_job(ctx.sign.key.clone(), p.entry), Some(on_commit))
        .await
        .map_err(crate::error::ledger_problem)?;
    // Committed: from here on the answer is the entry's acknowledgement. A render that
    // fails (say, the site's disk is full) is retried by the render thread until the vow's
    // pages catch up; the response says where they are in `Conduct-Render`.
    let (committed_at, render) = match rendered.await {
        Err(_) => (
            std::time::Instant::now(),
            Render::Pending("the commit hook did not run".to_owned()),
        ),
        Ok((at, started)) => match wait {
            // Dropping the receiver leaves the render queued.
            None => (at, Render::Queued),
            Some(w) => {
                match tokio::time::timeout(w, conduct_renderer::live::rendered(started)).await {
                    Err(_) => (at, Render::Queued),
                    Ok(Err(e)) => (at, Render::Pending(e.0)),
                    Ok(Ok(())) => (at, Render::Done),
                }
            }
        },
    };
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let timing = Timing {
        commit_ms: ms(committed_at.duration_since(started_at)),
        render_ms: wait.map(|_| ms(committed_at.elapsed())),
        total_ms: ms(started_at.elapsed()),
        render,
        waited: wait.map(|w| w.as_secs()),
    };
    Ok((appended.leaf.unwrap_or_default(), timing))
}

fn with_timing(mut resp: WarpResponse, t: &Timing) -> WarpResponse {
    if let Ok(v) = HeaderValue::from_str(&t.header()) {
        resp.headers_mut().insert("server-timing", v);
    }
    if let Some(w) = t.waited {
        if let Ok(v) = HeaderValue::from_str(&format!("wait={w}")) {
            resp.headers_mut().insert("preference-applied", v);
        }
    }
    match &t.render {
        Render::Queued => {
            resp.headers_mut()
                .insert("conduct-render", HeaderValue::from_static("queued"));
            resp
        }
        Render::Done => with_render_state(resp, None),
        Render::Pending(e) => with_render_state(resp, Some(e.clone())),
    }
}

/// `POST /vow/report/demo`: a free report-in, `attested: false` forever, answered at its
/// commit (its pages waited for when `headers` ask with `Prefer: wait=`).
pub async fn report_demo(
    ctx: Vows<'_>,
    body: Bytes,
    headers: &HeaderMap,
) -> Result<WarpResponse, Problem> {
    let wait = crate::http::prefer::wait(headers);
    pushed_back(&ctx)?;
    let metered = meter_report(&ctx, body, false).await?;
    let id = metered.entry.vow_id.clone();
    let (leaf, timing) = append(&ctx, metered, wait).await?;
    Ok(with_timing(
        created(leaf, &format!("/vow/{id}/chain")),
        &timing,
    ))
}

/// `POST /vow/report`: a paid report-in, `attested: true`, through the payment gate. Checked
/// and scored first; the payment settles before the entry is appended (an `attested: true`
/// entry exists only for a settled payment). The same `Idempotency-Key` (default: the body's
/// hash) within 24 hours returns the same entry and charges nothing.
pub async fn report_paid(
    ctx: Vows<'_>,
    body: Bytes,
    charge: Charge<'_>,
) -> Result<WarpResponse, Problem> {
    let request = format!("vow-report|{}", sha256_hex(&body));
    pushed_back(&ctx)?;
    let metered = meter_report(&ctx, body, true).await?;
    // A wallet-signed vow reported on without a signature: the payer must be its wallet.
    let (must, vow_id) = (metered.payer_must_be.clone(), metered.entry.vow_id.clone());
    let check = move |auth: &payment::Authorized| match &must {
        Some(wallet) if !auth.payment.payer.eq_ignore_ascii_case(wallet) => {
            Err(wallet_proof_required(format!(
                "vow {vow_id} is signed by wallet {wallet}, but this payment is from {}; pay \
                 from the vow's wallet, or add its EIP-191 signature over GET \
                 /vow/report/message",
                auth.payment.payer
            )))
        }
        _ => Ok(()),
    };
    let wait = crate::http::prefer::wait(charge.headers);
    let handler = || async move {
        let id = metered.entry.vow_id.clone();
        let (leaf, timing) = append(&ctx, metered, wait).await?;
        Ok(Served {
            response: with_timing(created(leaf.clone(), &format!("/vow/{id}/chain")), &timing),
            record: leaf,
        })
    };
    let parts = ctx.pay.gate_parts(charge.pay.price, service_now());
    gate(parts, &charge, request, Ok, check, handler).await
}

/// `GET /vow/{id}/verify_text?text=`: whether a candidate text is the vow's text.
pub async fn verify_text(ctx: Vows<'_>, path: &str, query: &str) -> Result<WarpResponse, Problem> {
    let id = path
        .strip_prefix("/vow/")
        .and_then(|r| r.strip_suffix("/verify_text"))
        .unwrap_or("");
    if !vow::is_vow_id(id) {
        return Err(unknown_vow(id));
    }
    let text = query_param(query, "text").ok_or_else(|| {
        Problem::invalid(vec![FieldError::at("?text", "missing query parameter")])
    })?;
    let row = find_vow(ctx.ledger.vows, id).await?;
    let candidate = text_sha256(&text);
    let published = text_sha256(&row.text);
    let doc = json!({
        "type": "conduct.verify_text/v1",
        "vow_id": row.vow_id,
        "sealed": row.sealed,
        "text_sha256": published,
        "candidate_sha256": candidate,
        "matches": candidate == published,
        "how": "sha256 of the candidate's UTF-8 bytes compared with the vow's text_sha256",
        "scope": conduct_core::scope::scope_value(),
    });
    let bytes = conduct_renderer::snapshot::signed_bytes(ctx.sign.key, doc)
        .map_err(|e| unavailable("signing", e.0))?;
    Ok(json_response(bytes))
}
