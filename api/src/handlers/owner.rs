//! The owner-signed write, written once (ARCHITECTURE.md, "api"; library/PREPARE.md, "Owner
//! messages"). A quest claim, a delivery, an npub binding, a witness pledge and a familiar are
//! each a `conduct_core::record::OwnerSigned` record. Their handlers parse the body, look up
//! what their kind needs (the quest, the owner's sworn vow) and say how to build the record;
//! the steps every kind shares are here:
//!
//! 1. [`verify`]: the owner's signature, as sent, in its one canonical spelling (the record
//!    keeps that one), recovered through `conduct_core::owner::recover` over the text the
//!    record itself rebuilds (`OwnerSigned::message_at`, at the service's public URL), and the
//!    signer compared with the owner's wallet. Nothing is written yet.
//! 2. [`commit`]: the record appended through its kind's job (the sequencer re-checks the
//!    sworn vow, the single use of each signature and the daily limit inside the append
//!    transaction; a refusal becomes its problem in `handlers::refusal`), its pages rendered,
//!    and the commit answered: 201, the signed record, its `Location`, `Conduct-Render`.
//!
//! [`write`] is the two in a row. A kind whose record needs a check between them (a binding's
//! second signature, a delivery's claim) or around them (a familiar's payment) calls them one
//! by one. Each kind words its own refusals ([`Refuse`]: library/ERRORS.md); the vow-owned
//! kinds share one wording ([`Words`]), the board's are its own (`handlers::munus`).

use std::future::Future;
use std::sync::Arc;

use conduct_core::owner::{self, Kind};
use conduct_core::record::OwnerSigned;
use conduct_core::time::utc_date;
use conduct_core::trace::FieldError;
use conduct_core::vow::eip191;
use conduct_core::vow::parse_wallet;
use conduct_core::vow::record::checksum_address;
use conduct_indexer::ledger::{Appended, Job, OnCommit, Sequencer};
use conduct_indexer::vows::{VowReader, VowRow};
use conduct_renderer::live::{LiveSite, SourceId};
use tokio::sync::oneshot;
use warp::http::StatusCode;
use warp::reply::Response as WarpResponse;

use crate::error::ledger_problem;
use crate::handlers::common::{created, find_vow, with_render_state};
use crate::http::reply::{text_response, Problem};
use crate::http::request::{query_param, required_param};
use crate::payment::gate::Served;
use crate::sources::service_now;

/// How one owner-signed kind refuses what [`verify`] and [`sworn_vow`] find.
pub(crate) trait Refuse: Sync {
    /// The owner named a sandbox vow (`id`): no wallet signed it.
    fn sandbox(&self, id: &str) -> Problem;
    /// The signature is missing or empty; `None` where the body requires one (an empty one
    /// is then refused as unreadable).
    fn missing(&self) -> Option<Problem>;
    /// No address recovers from the signature (`why`).
    fn unreadable(&self, why: String) -> Problem;
    /// The signature recovers to `signer`, not the owner's `wallet` (both EIP-55).
    fn not_owner(&self, signer: &str, wallet: &str) -> Problem;
    /// The append found that the record's wallet is not its vow's (`Refusal::WrongWallet`,
    /// the sequencer's own check).
    fn wrong_wallet(&self) -> Problem;
}

/// Who signs for the record of a vow-owned kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Party {
    /// A sworn vow's wallet, the vow named at `/vow_id`.
    Vow,
    /// A familiar's owner, a sworn vow (at `/owner/vow_id`) or a wallet: its refusals name the
    /// owner's wallet, and say nothing was charged (the summon is paid).
    Owner,
}

/// The words of a kind's refusals (library/ERRORS.md): its problem types and titles, and what
/// its details name. The message the owner signs is its kind's (`owner::Kind::entry`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Words {
    /// The owner message.
    pub kind: Kind,
    /// Who signs.
    pub party: Party,
    /// The problem type and title of a sandbox vow named as the owner (403), and what such a
    /// vow lacks here (after "vow {id} is sandbox (no wallet signed it), so ").
    pub sandbox: (&'static str, &'static str, &'static str),
    /// The problem type and title of a signature that is missing, unreadable or not the
    /// owner's (403).
    pub signature: (&'static str, &'static str),
    /// The body member that carries the signature.
    pub member: &'static str,
    /// What the text names besides today's UTC date.
    pub names: &'static str,
}

impl Words {
    /// The owner's wallet, as the details name it.
    fn whose(&self) -> &'static str {
        match self.party {
            Party::Vow => "vow",
            Party::Owner => "owner",
        }
    }

    /// Where the exact text is served (`GET /...`).
    fn message(&self) -> &'static str {
        let m = self.kind.entry().message;
        m.split('?').next().unwrap_or(m)
    }

    /// The refusal of the owner's signature, saying `detail`, naming the member that carries it.
    pub(crate) fn refused(&self, detail: String) -> Problem {
        let after = match self.party {
            Party::Vow => "",
            Party::Owner => "; nothing was charged",
        };
        let (kind, title) = self.signature;
        let must = format!(
            "the {} wallet's EIP-191 signature over the text of {}",
            self.whose(),
            self.message()
        );
        Problem::new(
            StatusCode::FORBIDDEN,
            kind,
            title,
            format!("{detail}{after}"),
        )
        .at(format!("/{}", self.member), must)
    }

    /// The refusal of a missing signature.
    pub(crate) fn absent(&self) -> Problem {
        self.refused(format!(
            "{} is missing: the {}'s wallet signs the text of {} (EIP-191 personal_sign)",
            self.member,
            self.whose(),
            self.message()
        ))
    }
}

impl Refuse for Words {
    fn sandbox(&self, id: &str) -> Problem {
        let (kind, title, lacks) = self.sandbox;
        let (at, instead) = match self.party {
            Party::Vow => (
                "/vow_id",
                "take a signed vow with POST /vow and a signature over GET /vow/message",
            ),
            Party::Owner => (
                "/owner/vow_id",
                "name a signed vow, or {\"wallet\": \"0x...\"} as the owner",
            ),
        };
        let detail = format!("vow {id} is sandbox (no wallet signed it), so {lacks}; {instead}");
        Problem::new(StatusCode::FORBIDDEN, kind, title, detail).at(at, "a sandbox vow")
    }

    fn missing(&self) -> Option<Problem> {
        Some(self.absent())
    }

    fn unreadable(&self, why: String) -> Problem {
        self.refused(format!("{} does not verify: {why}", self.member))
    }

    fn not_owner(&self, signer: &str, wallet: &str) -> Problem {
        let whose = self.whose();
        let named = match self.party {
            Party::Vow => String::new(),
            Party::Owner => format!(" {wallet}"),
        };
        self.refused(format!(
            "{} recovers to {signer}, not the {whose}'s wallet{named}; sign the exact text of {} \
             (it names {} and today's UTC date) with the {whose}'s wallet",
            self.member,
            self.message(),
            self.names
        ))
    }

    fn wrong_wallet(&self) -> Problem {
        self.refused(
            "the vow's wallet is not the one that signed; sign with the vow's wallet".into(),
        )
    }
}

/// The wallet (EIP-55) of a sworn vow: signed with its wallet, not sandbox.
pub(crate) fn sworn_wallet(row: &VowRow) -> Option<String> {
    let wallet = row.wallet.as_deref().filter(|_| !row.sandbox)?;
    parse_wallet(wallet).map(|a| checksum_address(&a))
}

/// The sworn vow `id` (of `vows`), and its wallet as the signer of a record of the kind
/// `refuse` words: 404 when the store has no such vow, the kind's sandbox refusal when it is
/// not sworn.
pub(crate) async fn sworn_vow<'r>(
    vows: &Arc<VowReader>,
    id: &str,
    refuse: &'r dyn Refuse,
) -> Result<(VowRow, Signer<'r>), Problem> {
    let row = find_vow(vows, id).await?;
    match sworn_wallet(&row) {
        Some(wallet) => Ok((row, Signer { wallet, refuse })),
        None => Err(refuse.sandbox(id)),
    }
}

/// `GET` the exact text a vow's owner signs today (`text/plain`), for any vow that exists (the
/// write refuses a sandbox vow): `build` writes it from the service's `public_url`, the vow (of
/// `vows`), the query's `param` as `read` takes it, and today's UTC date. A missing `vow_id`
/// and what `read` refuses are named together (422); a vow the store lacks is 404.
pub(crate) async fn vow_message<T>(
    public_url: &str,
    vows: &Arc<VowReader>,
    query: &str,
    param: &str,
    read: impl FnOnce(Option<String>) -> Result<T, Vec<FieldError>>,
    build: impl FnOnce(&str, &str, &T, &str) -> String,
) -> Result<WarpResponse, Problem> {
    let mut errs = Vec::new();
    let vow_id = required_param(query, "vow_id", &mut errs);
    let value = read(query_param(query, param)).map_err(|e| errs.extend(e));
    let (Ok(value), true) = (value, errs.is_empty()) else {
        return Err(Problem::invalid(errs));
    };
    let vow = find_vow(vows, &vow_id).await?;
    let date = utc_date(service_now());
    Ok(text_response(build(public_url, &vow.vow_id, &value, &date)))
}

/// Who must have signed a record: its owner's wallet, and how the kind refuses.
pub(crate) struct Signer<'a> {
    /// Its wallet, EIP-55.
    pub wallet: String,
    /// How its kind refuses.
    pub refuse: &'a dyn Refuse,
}

/// Verify the owner's signature `sent` over the record `make` builds (given the signature in
/// its one canonical spelling): recovered over the record's own text at `origin`, it must be
/// `signer`'s wallet. The record, or the kind's refusal; nothing is written.
pub(crate) fn verify<R: OwnerSigned>(
    origin: &str,
    signer: &Signer<'_>,
    sent: Option<&str>,
    make: impl FnOnce(String) -> R,
) -> Result<R, Problem> {
    let refuse = signer.refuse;
    let sent = match sent.filter(|s| !s.is_empty()) {
        Some(s) => s,
        None => match refuse.missing() {
            Some(p) => return Err(p),
            None => sent.unwrap_or_default(),
        },
    };
    // One spelling per signature, so a re-spelled replay is the same replay.
    let canonical = eip191::canonical(sent).map_err(|e| refuse.unreadable(e.to_string()))?;
    let rec = make(canonical);
    let text = rec.message_at(origin);
    let recovered = owner::recover(R::KIND, &text, sent)
        .map(|a| checksum_address(&a))
        .map_err(|e| refuse.unreadable(e.to_string()))?;
    if !recovered.eq_ignore_ascii_case(&signer.wallet) {
        return Err(refuse.not_owner(&recovered, &signer.wallet));
    }
    Ok(rec)
}

/// What a committed record's answer says: where it is, and the pages rendered from it before
/// the answer.
pub(crate) struct Ack {
    /// The `Location`; `None`: the log proof of the entry.
    location: Option<String>,
    /// Each page: its source, key, and whether the source's index follows.
    pages: Vec<(SourceId, String, bool)>,
}

impl Ack {
    /// Located at `location`.
    pub(crate) fn at(location: String) -> Ack {
        Ack {
            location: Some(location),
            pages: Vec::new(),
        }
    }

    /// Located at the entry's log proof, with no page of its own.
    pub(crate) fn proof() -> Ack {
        Ack {
            location: None,
            pages: Vec::new(),
        }
    }

    /// Rendering `key` of `source` (and its index when `index`) before the answer. Pages are
    /// asked for in this order: the vow's last (the integration mark is checked against the
    /// vows' renders, renderer/src/live/mod.rs `Marks`).
    pub(crate) fn page(mut self, source: SourceId, key: String, index: bool) -> Ack {
        self.pages.push((source, key, index));
        self
    }
}

impl From<Committed> for Served {
    /// A paid write's answer, and the record its idempotent replay serves.
    fn from(c: Committed) -> Served {
        Served {
            response: c.response,
            record: c.leaf,
        }
    }
}

/// A committed record: the answer, and the signed record's bytes.
pub(crate) struct Committed {
    /// 201, the record, its `Location`, and `Conduct-Render` when it has pages.
    pub response: WarpResponse,
    /// The leaf bytes (the signed record).
    pub leaf: Vec<u8>,
}

/// Asks for an acknowledgement's pages from the sequencer's commit hook, as the record
/// commits: a request dropped after its commit still gets them. Every page is asked for at
/// once, in the [`Ack`]'s order, before any is awaited, so the integration mark never passes
/// the record while one of them waits (renderer/src/live/mod.rs, `Marks`).
#[derive(Clone)]
pub(crate) struct AskOnCommit {
    site: LiveSite,
    pages: Arc<[(SourceId, String, bool)]>,
    /// Where the commit that succeeds hands what it asked for (taken once).
    asked: Arc<std::sync::Mutex<Option<oneshot::Sender<Vec<Asked>>>>>,
}

/// One page asked for: its render's outcome.
type Asked = oneshot::Receiver<Result<(), conduct_renderer::live::NotRendered>>;

impl AskOnCommit {
    fn new(site: &LiveSite, ack: &Ack) -> (AskOnCommit, oneshot::Receiver<Vec<Asked>>) {
        let (tx, rx) = oneshot::channel();
        let ask = AskOnCommit {
            site: site.clone(),
            pages: ack.pages.clone().into(),
            asked: Arc::new(std::sync::Mutex::new(Some(tx))),
        };
        (ask, rx)
    }

    /// The hook of one submission (a refused one asks for nothing, so a kind may submit
    /// again); `None` when there are no pages.
    pub(crate) fn hook(&self) -> Option<OnCommit> {
        if self.pages.is_empty() {
            return None;
        }
        let me = self.clone();
        Some(Box::new(move |r| {
            if r.is_err() {
                return;
            }
            let asked: Vec<Asked> = me
                .pages
                .iter()
                .map(|(source, key, index)| me.site.start_render(*source, key, *index))
                .collect();
            if let Some(tx) = me.asked.lock().ok().and_then(|mut g| g.take()) {
                // Nobody waiting (the request went away): the renders stay queued.
                let _ = tx.send(asked);
            }
        }))
    }
}

/// Append a record through its kind's `job`, by `seq`, its pages asked for by `ask` as it
/// commits.
pub(crate) async fn append(
    seq: &Sequencer,
    job: Job,
    ask: AskOnCommit,
) -> Result<Appended, Problem> {
    seq.submit_job_then(job, ask.hook())
        .await
        .map_err(ledger_problem)
}

/// Append a verified record (`append`, given the hook that asks for its pages as it commits)
/// and answer the commit as `ack` says, its pages rendered by `site`. From the commit on, the
/// answer is its acknowledgement: a page that could not be rendered is retried by the render
/// thread and said so (`Conduct-Render: pending`).
pub(crate) async fn commit<F>(
    site: &LiveSite,
    ack: Ack,
    append: impl FnOnce(AskOnCommit) -> F,
) -> Result<Committed, Problem>
where
    F: Future<Output = Result<Appended, Problem>>,
{
    let (ask, asked) = AskOnCommit::new(site, &ack);
    let appended = append(ask).await?;
    let leaf = appended.leaf.unwrap_or_default();
    let location = ack
        .location
        .unwrap_or_else(|| format!("/log/proof/{}", appended.index));
    let mut response = created(leaf.clone(), &location);
    if !ack.pages.is_empty() {
        let pending = match asked.await {
            Err(_) => Some("the commit hook did not run".to_owned()),
            Ok(pages) => {
                let mut pending = None;
                for page in pages {
                    let why = conduct_renderer::live::rendered(page).await.err();
                    pending = pending.or(why.map(|e| e.0));
                }
                pending
            }
        };
        response = with_render_state(response, pending);
    }
    Ok(Committed { response, leaf })
}

/// Verify an owner-signed request and append it ([`verify`], then [`commit`]): the record
/// `make` builds, signed by `signer` over its text at `public_url`, appended by `append`
/// (with the hook that asks for its pages), answered as `ack` says (its pages rendered by
/// `site`).
pub(crate) async fn write<R, F>(
    public_url: &str,
    site: &LiveSite,
    signer: &Signer<'_>,
    sent: Option<&str>,
    make: impl FnOnce(String) -> R,
    append: impl FnOnce(R, AskOnCommit) -> F,
    ack: Ack,
) -> Result<WarpResponse, Problem>
where
    R: OwnerSigned,
    F: Future<Output = Result<Appended, Problem>>,
{
    let rec = verify(public_url, signer, sent, make)?;
    Ok(commit(site, ack, |ask| append(rec, ask)).await?.response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::{familiar, munus, nostr, witness};

    /// A source that reports each key it renders.
    struct Reporting(std::sync::mpsc::Sender<String>);

    impl conduct_renderer::live::Source for Reporting {
        fn name(&self) -> &'static str {
            "reporting"
        }
        fn render_all(
            &mut self,
            _: &mut conduct_renderer::publish::Publisher,
            _: u64,
        ) -> Result<(), conduct_renderer::RenderError> {
            Ok(())
        }
        fn render(
            &mut self,
            keys: &std::collections::BTreeSet<String>,
            _: bool,
            _: u64,
            _: &conduct_renderer::live::Known<'_>,
        ) -> Result<conduct_renderer::vows::Files, conduct_renderer::RenderError> {
            for k in keys {
                let _ = self.0.send(k.clone());
            }
            Ok(Vec::new())
        }
        fn take_due(&mut self, _: u64, _: usize) -> Vec<String> {
            Vec::new()
        }
        fn next_due(&self) -> Option<u64> {
            None
        }
        fn forget(&mut self, _: &std::collections::BTreeSet<String>) {}
    }

    /// The pages are asked for by the commit that succeeds, whoever waits: a refused
    /// submission asks for nothing (its kind may submit again), and the answer's request
    /// going away after the commit leaves them rendered.
    #[tokio::test]
    async fn pages_are_asked_for_by_the_commit_not_by_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let key = conduct_core::signing::ServiceKey::from_seed(&[7; 32], "test");
        let publisher = conduct_renderer::publish::Publisher::from_tree(
            conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
            &conduct_renderer::Tree::default(),
        );
        let (tx, rendered) = std::sync::mpsc::channel();
        let site = LiveSite::start(publisher, key, 3600, vec![Box::new(Reporting(tx))]).unwrap();
        let ack = Ack::at("/here".into())
            .page(SourceId("reporting"), "first".into(), false)
            .page(SourceId("reporting"), "second".into(), true);
        let (ask, asked) = AskOnCommit::new(&site, &ack);
        let refused = conduct_indexer::ledger::LedgerError::Refused(
            conduct_indexer::ledger::Refusal::MunusLapsePending,
        );
        (ask.hook().unwrap())(&Err(refused));
        let wait = std::time::Duration::from_secs(30);
        // Nothing asked: the refusal kept the hand-over for the next submission.
        let quiet = std::time::Duration::from_millis(300);
        assert!(
            rendered.recv_timeout(quiet).is_err(),
            "a refused submission asked"
        );
        (ask.hook().unwrap())(&Ok(Appended {
            index: 0,
            leaf: None,
        }));
        // The request went away: nobody awaits the renders.
        drop(asked);
        let mut got: Vec<String> = (0..2)
            .map(|_| rendered.recv_timeout(wait).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, ["first", "second"]);
        // No pages: no hook.
        assert!(AskOnCommit::new(&site, &Ack::proof()).0.hook().is_none());
        // A second commit's hook hands nothing over twice.
        let (ask, asked) = AskOnCommit::new(&site, &ack);
        (ask.hook().unwrap())(&Ok(Appended {
            index: 1,
            leaf: None,
        }));
        (ask.hook().unwrap())(&Ok(Appended {
            index: 2,
            leaf: None,
        }));
        let pages = asked.await.unwrap();
        assert_eq!(pages.len(), 2);
        for page in pages {
            conduct_renderer::live::rendered(page).await.unwrap();
        }
    }

    const SIGNER: &str = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    const OWNER: &str = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359";

    /// A refusal as (status, type, title, detail, the fields it names).
    type Said = (
        u16,
        &'static str,
        &'static str,
        String,
        Vec<(String, String)>,
    );

    fn said(p: Problem) -> Said {
        let fields = p
            .errors
            .iter()
            .map(|e| (e.pointer.clone(), e.detail.clone()));
        (
            p.status.as_u16(),
            p.kind,
            p.title,
            p.detail.clone(),
            fields.collect(),
        )
    }

    /// One kind's refusals as they were worded before they were written once (each kind's
    /// own functions): its words, then the sandbox refusal's type, title, detail and pointer,
    /// the signature refusal's type, title, member, what the member must be and the ending of
    /// every detail, and the missing and not-the-owner details.
    struct Before {
        words: &'static Words,
        sandbox: (&'static str, &'static str, &'static str, &'static str),
        signature: (
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
        ),
        missing: &'static str,
        not_owner: String,
    }

    fn before() -> [Before; 3] {
        [
            Before {
                words: &nostr::WORDS,
                sandbox: (
                    "nostr-bind-sandbox-vow",
                    "A sandbox vow cannot bind an npub",
                    "nothing ties it to a key; take a signed vow with POST /vow and a signature \
                     over GET /vow/message",
                    "/vow_id",
                ),
                signature: (
                    "nostr-bind-wallet-signature",
                    "The vow's wallet did not sign this binding",
                    "wallet_signature",
                    "the vow wallet's EIP-191 signature over the text of GET /nostr/bind/message",
                    "",
                ),
                missing: "wallet_signature is missing: the vow's wallet signs the text of GET \
                          /nostr/bind/message (EIP-191 personal_sign)",
                not_owner: format!(
                    "wallet_signature recovers to {SIGNER}, not the vow's wallet; sign the exact \
                     text of GET /nostr/bind/message (it names the vow, the npub and today's UTC \
                     date) with the vow's wallet"
                ),
            },
            Before {
                words: &witness::WORDS,
                sandbox: (
                    "witness-sandbox-vow",
                    "A sandbox vow cannot pledge",
                    "no wallet is bound to it; take a signed vow with POST /vow and a signature \
                     over GET /vow/message",
                    "/vow_id",
                ),
                signature: (
                    "witness-pledge-signature",
                    "The vow's wallet did not sign this pledge",
                    "signature",
                    "the vow wallet's EIP-191 signature over the text of GET \
                     /witness/pledge/message",
                    "",
                ),
                missing: "signature is missing: the vow's wallet signs the text of GET \
                          /witness/pledge/message (EIP-191 personal_sign)",
                not_owner: format!(
                    "signature recovers to {SIGNER}, not the vow's wallet; sign the exact text of \
                     GET /witness/pledge/message (it names the vow, every limit and today's UTC \
                     date) with the vow's wallet"
                ),
            },
            Before {
                words: &familiar::WORDS,
                sandbox: (
                    "familiar-sandbox-vow",
                    "A sandbox vow cannot own a familiar",
                    "no wallet can sign for it; name a signed vow, or {\"wallet\": \"0x...\"} as \
                     the owner",
                    "/owner/vow_id",
                ),
                signature: (
                    "familiar-owner-signature",
                    "The owner's wallet did not sign this summon",
                    "signature",
                    "the owner wallet's EIP-191 signature over the text of GET /familiar/message",
                    "; nothing was charged",
                ),
                missing: "signature is missing: the owner's wallet signs the text of GET \
                          /familiar/message (EIP-191 personal_sign)",
                not_owner: format!(
                    "signature recovers to {SIGNER}, not the owner's wallet {OWNER}; sign the \
                     exact text of GET /familiar/message (it names the owner, the order's sha256 \
                     and today's UTC date) with the owner's wallet"
                ),
            },
        ]
    }

    #[test]
    fn each_kinds_refusals_are_worded_as_before() {
        for b in before() {
            let w = b.words;
            let (kind, title, why, at) = b.sandbox;
            let detail = format!("vow 0123456789abcdef is sandbox (no wallet signed it), so {why}");
            let field = vec![(at.to_owned(), "a sandbox vow".to_owned())];
            assert_eq!(
                said(w.sandbox("0123456789abcdef")),
                (403, kind, title, detail, field)
            );
            let (kind, title, member, must, after) = b.signature;
            let field = vec![(format!("/{member}"), must.to_owned())];
            let refused =
                |detail: &str| (403, kind, title, format!("{detail}{after}"), field.clone());
            assert_eq!(said(w.absent()), refused(b.missing));
            assert!(w.missing().is_some());
            let unreadable = format!("{member} does not verify: the signature is not hex");
            assert_eq!(
                said(w.unreadable("the signature is not hex".into())),
                refused(&unreadable)
            );
            assert_eq!(said(w.not_owner(SIGNER, OWNER)), refused(&b.not_owner));
            let wrong = "the vow's wallet is not the one that signed; sign with the vow's wallet";
            assert_eq!(said(w.wrong_wallet()), refused(wrong));
        }
    }

    #[test]
    fn the_boards_refusals_are_its_own() {
        let b = &munus::Board;
        assert!(b.missing().is_none());
        let why = "the signature is not hex";
        let invalid = Problem::invalid(vec![FieldError::at("/signature", why)]).detail;
        let field = vec![("/signature".to_owned(), why.to_owned())];
        let unreadable = (422, "bad-signature", "Not a signature", invalid, field);
        assert_eq!(said(b.unreadable(why.into())), unreadable);
        let detail = format!(
            "the signature recovers to {SIGNER}, not the vow's wallet; sign the exact text of GET \
             /play/message (it names the action, the quest, the vow and today's UTC date) with \
             the vow's wallet"
        );
        let title = "Not the vow's wallet";
        let not_owner = (403, "munus-wrong-wallet", title, detail, Vec::new());
        assert_eq!(said(b.not_owner(SIGNER, OWNER)), not_owner);
        let p = b.sandbox("0123456789abcdef");
        assert_eq!((p.status.as_u16(), p.kind), (403, "munus-sandbox-vow"));
        assert!(p.errors.is_empty());
        let p = b.wrong_wallet();
        assert_eq!(
            (p.kind, p.detail.as_str()),
            (
                "munus-wrong-wallet",
                "the claim must be signed by the wallet the vow was signed with"
            )
        );
    }
}
