//! The vow snapshots of the static tree: `/vow/<id>` (the vow, its chain in brief, trajectory
//! stats), `/vow/<id>/chain` (the complete raw chain: a signed head pinning the last of the
//! immutable pages of [`LINKS_PAGE_SIZE`] records at `/vow/<id>/chain/<k>` by hash, each page
//! pinning the one before it, plus the tail; library/VOWS.md, "The chain"),
//! `/vow/<id>/reading` (the signed trajectory plus an interpretation labelled as guidance, and
//! `note_check`, each note's claim compared with the numbers). The index `/vows` is
//! vows_index.rs's.
//!
//! Each is a signed JSON snapshot. Pages that depend on the clock carry `as_of`; the same
//! chain and `as_of` give the same bytes. [`VowDocs`] keeps a vow's state between renders, so
//! a report-in costs one record's work plus copying bytes, whatever the chain's length: a full
//! chain page is written once and never again, and the documents are assembled from each
//! entry's pre-rendered RFC 8785 lines.

use conduct_core::canonical::{jcs_map_with_raw, sha256_hex};
use conduct_core::scope::scope_value;
use conduct_core::signing::{PinnedKey, ServiceKey};
use conduct_core::time::rfc3339;
use conduct_core::vow::interpret::InterpretationInput;
use conduct_core::vow::notes;
use conduct_core::vow::trajectory::{Track, TrackState, SERIES_LIMIT};
use conduct_core::vow::windows::Windows;
use serde_json::{json, Map, Value};

use crate::snapshot::signed_raw;
use crate::vow_html::{
    feed_atom, feed_path, interpretation_html, links_html, vow_html, vow_html_path,
};
use crate::RenderError;

/// Type of `/vow/<id>`.
pub const VOW_PAGE_TYPE: &str = "conduct.vow_page/v1";
/// Type of `/vow/<id>/chain`.
pub const LINKS_TYPE: &str = "conduct.chain/v2";
/// Type of `/vow/<id>/reading`.
pub const INTERPRETATION_TYPE: &str = "conduct.reading/v1";

/// Records per immutable page of a vow's chain (`/vow/<id>/chain/<k>`).
pub const LINKS_PAGE_SIZE: usize = 32;

/// Type of `/vow/<id>/chain/<k>`.
pub const LINKS_PAGE_TYPE: &str = "conduct.chain_page/v2";

/// Rendered files as (relative path, bytes).
pub type Files = Vec<(String, Vec<u8>)>;

/// Records as (log index, leaf bytes), in chain order.
pub type Records = [(u64, Vec<u8>)];

/// Path of a vow's page.
pub fn vow_path(id: &str) -> String {
    format!("vow/{id}.json")
}

/// Path of a vow's chain head.
pub fn links_path(id: &str) -> String {
    format!("vow/{id}/chain.json")
}

/// The tail of vow `id`'s chain head as [`VowDocs::render`] wrote it at [`links_path`]: its
/// `tail_from_position` and its records as (log index, leaf bytes, the leaf's `prev`), each
/// leaf the exact bytes of the file. `None` when `bytes` are not such a document. Nothing here
/// says the records are the log's: a caller compares them with the store (the file may be
/// older than the store, or not the service's).
pub fn links_doc_tail(id: &str, bytes: &[u8]) -> Option<(usize, Vec<TailRecord>)> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        ty: &'a str,
        #[serde(borrow)]
        vow_id: &'a str,
        tail_from_position: usize,
        #[serde(borrow)]
        tail: Vec<&'a serde_json::value::RawValue>,
    }
    let head: Head<'_> = serde_json::from_slice(bytes).ok()?;
    if head.ty != LINKS_TYPE || head.vow_id != id {
        return None;
    }
    let tail = head
        .tail
        .iter()
        .map(|raw| TailRecord::parse(raw.get().as_bytes()))
        .collect::<Option<_>>()?;
    Some((head.tail_from_position, tail))
}

/// One record of a chain head's tail ([`links_doc_tail`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRecord {
    /// Its `log_index`.
    pub log_index: u64,
    /// Its leaf bytes.
    pub leaf: Vec<u8>,
    /// Its `prev` (hex SHA-256 of the record before it; none on the vow record).
    pub prev: Option<String>,
}

impl TailRecord {
    /// The record whose leaf is `leaf`; `None` when it is not a JSON object with a
    /// `log_index` (and, when present, a string `prev`).
    pub fn parse(leaf: &[u8]) -> Option<TailRecord> {
        #[derive(serde::Deserialize)]
        struct Link<'a> {
            log_index: u64,
            #[serde(borrow)]
            prev: Option<&'a str>,
        }
        let link: Link<'_> = serde_json::from_slice(leaf).ok()?;
        Some(TailRecord {
            log_index: link.log_index,
            prev: link.prev.map(str::to_owned),
            leaf: leaf.to_vec(),
        })
    }
}

/// Path of page `k` of a vow's chain.
pub fn links_page_path(id: &str, k: usize) -> String {
    format!("vow/{id}/chain/{k}.json")
}

/// Path of a vow's reading.
pub fn interpretation_path(id: &str) -> String {
    format!("vow/{id}/reading.json")
}

/// Path of a vow chain head's HTML twin.
pub fn links_html_path(id: &str) -> String {
    format!("vow/{id}/chain.html")
}

/// Path of a vow reading's HTML twin.
pub fn interpretation_html_path(id: &str) -> String {
    format!("vow/{id}/reading.html")
}

fn links(id: &str) -> Value {
    json!({
        "self": format!("/vow/{id}"),
        "chain": format!("/vow/{id}/chain"),
        "reading": format!("/vow/{id}/reading"),
        "verify_text": format!("/vow/{id}/verify_text?text="),
        "report_in": "/vow/report",
        "report_in_free": "/vow/report/demo",
        "log_proof": "/log/proof/{log_index}",
        "index": "/vows",
    })
}

/// Leaves as one RFC 8785 array (they are canonical already).
fn leaf_array(records: &Records) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.iter().map(|(_, l)| l.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (k, (_, leaf)) in records.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(leaf);
    }
    out.push(b']');
    out
}

const HOW_TO_VERIFY: &str = "Each record is signed by the service key (remove `signature`, \
RFC 8785, Ed25519). Record n's RFC 8785 bytes are log leaf `log_index`; entry n's `prev` is the \
hex SHA-256 of record n-1's RFC 8785 bytes; `seq` counts from 1. The chain is the records of \
every page in order, then the tail. Each full page is immutable; `last_page` pins the last one \
by the SHA-256 of its file, and each page's `prev_page_sha256` pins the one before it (null on \
page 0). `conduct verify-log` checks every chain against the log.";

/// What the render of one vow produced besides its files.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The files: page, chain head, reading (and nothing else: new chain pages come from
    /// [`VowDocs::extend`]).
    pub files: Files,
    /// The window state at the render instant.
    pub windows: Windows,
    /// What an interpreter sees.
    pub input: InterpretationInput,
}

/// One vow's published state, kept between renders: its [`Track`], how many full chain pages
/// it has and the hash of the last. Rendering after a report-in costs the new record plus
/// copying bytes, and the state's size does not grow with the chain.
#[derive(Debug)]
pub struct VowDocs {
    id: String,
    track: Track,
    full_pages: usize,
    /// Hex SHA-256 of the last full page's file.
    last_page: Option<String>,
    /// This vow's state at the last page boundary [`Self::extend`] passed, not yet taken
    /// ([`Self::take_resume_point`]).
    resume_point: Option<(usize, Vec<u8>)>,
}

/// Type of a vow's kept render state ([`VowDocs::state`]).
pub const VOW_STATE_TYPE: &str = "conduct.vow_render_state/1";

/// [`VowDocs`] as kept: the track's own kept form inside.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptDocs {
    #[serde(rename = "type")]
    ty: String,
    vow_id: String,
    full_pages: usize,
    last_page: Option<String>,
    track: TrackState,
}

impl VowDocs {
    /// Start from the vow record (chain position 0). `trusted`: this process verified it
    /// before.
    pub fn new(
        key: &ServiceKey,
        id: &str,
        vow: (u64, &[u8]),
        trusted: bool,
    ) -> Result<VowDocs, RenderError> {
        let pinned =
            PinnedKey::parse(&key.vkey()).map_err(|e| RenderError::Input(e.to_string()))?;
        let track = Track::new(&pinned, key.name(), vow.0, vow.1, trusted)
            .map_err(|e| RenderError::Input(e.0))?;
        Ok(VowDocs {
            id: id.to_owned(),
            track,
            full_pages: 0,
            last_page: None,
            resume_point: None,
        })
    }

    /// This state as bytes [`Self::resume`] takes back (JSON of type [`VOW_STATE_TYPE`]).
    pub fn state(&self) -> Result<Vec<u8>, RenderError> {
        let kept = KeptDocs {
            ty: VOW_STATE_TYPE.into(),
            vow_id: self.id.clone(),
            full_pages: self.full_pages,
            last_page: self.last_page.clone(),
            track: self.track.state(),
        };
        serde_json::to_vec(&kept).map_err(|e| RenderError::Input(e.to_string()))
    }

    /// Vow `id`'s state kept by [`Self::state`]: it renders and extends exactly as the state
    /// that was kept. Fails when `state` is not vow `id`'s kept state at a page boundary.
    pub fn resume(key: &ServiceKey, id: &str, state: &[u8]) -> Result<VowDocs, RenderError> {
        let bad = |m: String| RenderError::Input(format!("vow {id}: kept state: {m}"));
        let kept: KeptDocs = serde_json::from_slice(state).map_err(|e| bad(e.to_string()))?;
        if kept.ty != VOW_STATE_TYPE || kept.vow_id != id {
            return Err(bad(format!("{} of vow {}", kept.ty, kept.vow_id)));
        }
        let pinned =
            PinnedKey::parse(&key.vkey()).map_err(|e| RenderError::Input(e.to_string()))?;
        let track = Track::resume(&pinned, key.name(), kept.track).map_err(|e| bad(e.0))?;
        let docs = VowDocs {
            id: id.to_owned(),
            track,
            full_pages: kept.full_pages,
            last_page: kept.last_page,
            resume_point: None,
        };
        if docs.records() != docs.tail_from() || (docs.full_pages > 0) != docs.last_page.is_some() {
            return Err(bad("not at a page boundary".into()));
        }
        Ok(docs)
    }

    /// The state at the last page boundary that [`Self::extend`] passed since the last call
    /// (chain position and [`Self::state`] bytes), to keep so a later render can resume there.
    pub fn take_resume_point(&mut self) -> Option<(usize, Vec<u8>)> {
        self.resume_point.take()
    }

    /// Chain position of the first record not in a full page.
    pub fn tail_from(&self) -> usize {
        self.full_pages * LINKS_PAGE_SIZE
    }

    /// Records taken so far (the vow record and its entries).
    pub fn records(&self) -> usize {
        self.track.records()
    }

    /// Leading records that verified.
    pub fn verified(&self) -> usize {
        self.track.verified()
    }

    /// Hex SHA-256 of the last record taken.
    pub fn track_head_sha256(&self) -> &str {
        self.track.head_sha256()
    }

    /// Entries taken (the chain's head seq).
    pub fn head_seq(&self) -> u64 {
        self.track.entries()
    }

    /// Bytes held (for a cache of these).
    pub fn weight(&self) -> usize {
        self.track.weight() + 64
    }

    /// Take the records of `read` (chain positions `from`.. , with `from` ≤ [`Self::tail_from`])
    /// that are new. The first `trusted` positions were verified by this process before. A
    /// page that fills is rendered (linked to the page before it) and returned: pages are
    /// deterministic, so one published before comes out the same bytes, which the publisher
    /// does not write again.
    pub fn extend(
        &mut self,
        key: &ServiceKey,
        read: &Records,
        from: usize,
        trusted: usize,
    ) -> Result<Files, RenderError> {
        if from > self.tail_from() || from + read.len() < self.records() {
            return Err(RenderError::Input(format!(
                "vow {}: records read from {from} do not continue the chain at {}",
                self.id,
                self.records()
            )));
        }
        let mut pages = Vec::new();
        // Only the last boundary passed is kept: a long read passes many.
        let last_boundary = (from + read.len()) / LINKS_PAGE_SIZE * LINKS_PAGE_SIZE;
        for pos in self.records()..from + read.len() {
            let (index, leaf) = &read[pos - from];
            self.track
                .push(*index, leaf, pos < trusted)
                .map_err(RenderError::from)?;
            if (pos + 1) % LINKS_PAGE_SIZE == 0 {
                let k = pos / LINKS_PAGE_SIZE;
                let first = k * LINKS_PAGE_SIZE;
                let bytes = self.page_doc(key, k, &read[first - from..=pos - from])?;
                self.last_page = Some(sha256_hex(&bytes));
                self.full_pages = k + 1;
                pages.push((links_page_path(&self.id, k), bytes));
                if pos + 1 == last_boundary {
                    self.resume_point = Some((pos + 1, self.state()?));
                }
            }
        }
        Ok(pages)
    }

    fn page_doc(
        &self,
        key: &ServiceKey,
        k: usize,
        records: &Records,
    ) -> Result<Vec<u8>, RenderError> {
        let mut m = Map::new();
        m.insert("type".into(), json!(LINKS_PAGE_TYPE));
        m.insert("vow_id".into(), json!(self.id));
        m.insert("page".into(), json!(k));
        m.insert("from_position".into(), json!(k * LINKS_PAGE_SIZE));
        m.insert("head".into(), json!(format!("/vow/{}/chain", self.id)));
        m.insert("prev_page_sha256".into(), json!(self.last_page));
        m.insert("scope".into(), scope_value());
        Ok(signed_raw(key, m, &[("records", &leaf_array(records))])?)
    }

    fn links_doc(&self, key: &ServiceKey, tail: &Records) -> Result<Vec<u8>, RenderError> {
        let id = &self.id;
        let last_page = self.last_page.as_ref().map(|sha| {
            let k = self.full_pages - 1;
            json!({
                "href": format!("/vow/{id}/chain/{k}"),
                "from_position": k * LINKS_PAGE_SIZE,
                "records": LINKS_PAGE_SIZE,
                "sha256": sha,
            })
        });
        let mut m = Map::new();
        m.insert("type".into(), json!(LINKS_TYPE));
        m.insert("vow_id".into(), json!(id));
        m.insert("length".into(), json!(self.track.entries()));
        m.insert("head_sha256".into(), json!(self.track.head_sha256()));
        m.insert("page_size".into(), json!(LINKS_PAGE_SIZE));
        m.insert("full_pages".into(), json!(self.full_pages));
        m.insert("last_page".into(), json!(last_page));
        m.insert("tail_from_position".into(), json!(self.tail_from()));
        m.insert("how_to_verify".into(), json!(HOW_TO_VERIFY));
        m.insert("scope".into(), scope_value());
        Ok(signed_raw(key, m, &[("tail", &leaf_array(tail))])?)
    }

    /// Render the page, chain head and reading (JSON and HTML) and the Atom feed at `as_of`,
    /// with absolute links under `public_url`. `read` holds the chain from
    /// position `from` (≤ [`Self::tail_from`]) to the head, as passed to [`Self::extend`];
    /// `interpretation` makes the reading's interpretation from what an interpreter sees.
    pub fn render(
        &self,
        key: &ServiceKey,
        public_url: &str,
        read: &Records,
        from: usize,
        as_of: u64,
        interpretation: impl FnOnce(&InterpretationInput) -> Value,
    ) -> Result<Rendered, RenderError> {
        let tail = read
            .get(self.tail_from().saturating_sub(from)..)
            .filter(|_| from <= self.tail_from() && from + read.len() == self.records())
            .ok_or_else(|| {
                RenderError::Input(format!(
                    "vow {}: the records read are not its tail",
                    self.id
                ))
            })?;
        let id = &self.id;
        let w = self.track.windows(as_of);
        let stats = self.track.stats(&w)?;
        let input = self.track.interpretation_input(&w);

        let mut chain = Map::new();
        chain.insert("length".into(), json!(self.track.entries()));
        chain.insert("head_sha256".into(), json!(self.track.head_sha256()));
        chain.insert("records_at".into(), json!(format!("/vow/{id}/chain")));
        chain.insert(
            "entries_listed".into(),
            json!(format!(
                "the last {SERIES_LIMIT} at most; every record is in the chain"
            )),
        );
        let chain = jcs_map_with_raw(&chain, &[("entries", &self.track.brief())])?;
        let mut page = Map::new();
        page.insert("type".into(), json!(VOW_PAGE_TYPE));
        page.insert("vow_id".into(), json!(id));
        page.insert("as_of".into(), json!(rfc3339(as_of)));
        page.insert("vow".into(), self.track.vow().clone());
        page.insert("links".into(), links(id));
        page.insert("mark".into(), json!(crate::mark::vow_mark_url(id)));
        page.insert("scope".into(), scope_value());
        let page = signed_raw(key, page, &[("chain", &chain), ("trajectory", &stats)])?;

        let vow = self.track.vow();
        let mut caveats = vec![
            "A reading is guidance, never a verdict.",
            "The interpretation sees the numbers, the vow text (withheld when sealed), the \
             declared purposes and public notes; never reasoning or actions.",
        ];
        if vow["sealed"] == true {
            caveats.push(
                "This vow is sealed: only the hash of its text is public, so no one else can \
                 check the declared purposes against it. A sealed vow is a weaker public \
                 commitment.",
            );
        }
        if vow["sandbox"] == true {
            caveats.push("This vow is sandbox: no wallet signed it, so it ties to no identity.");
        }
        let interp = interpretation(&input);
        let interp_copy = interp.clone();
        let findings = notes::check_notes(&input.entries);
        let mut reading = Map::new();
        reading.insert("type".into(), json!(INTERPRETATION_TYPE));
        reading.insert("vow_id".into(), json!(id));
        reading.insert("as_of".into(), json!(rfc3339(as_of)));
        reading.insert("covers_seq".into(), json!(self.track.entries()));
        reading.insert("interpretation".into(), interp);
        let note_check = findings.iter().map(notes::NoteFinding::to_value).collect();
        reading.insert("note_check".into(), Value::Array(note_check));
        reading.insert("note_check_method".into(), json!(notes::METHOD));
        reading.insert("caveats".into(), json!(caveats));
        reading.insert("links".into(), links(id));
        reading.insert("scope".into(), scope_value());
        let reading = signed_raw(key, reading, &[("trajectory", &stats)])?;

        let reading_page = interpretation_html(
            key,
            id,
            &self.track,
            &interp_copy,
            &findings,
            &caveats,
            as_of,
        )?;
        Ok(Rendered {
            files: vec![
                (vow_path(id), page),
                (
                    vow_html_path(id),
                    vow_html(key, public_url, id, &self.track, &w, as_of)?,
                ),
                (links_path(id), self.links_doc(key, tail)?),
                (
                    links_html_path(id),
                    links_html(
                        key,
                        id,
                        &self.track,
                        self.full_pages,
                        self.last_page.as_deref(),
                        tail,
                        self.tail_from(),
                    )?,
                ),
                (interpretation_path(id), reading),
                (interpretation_html_path(id), reading_page),
                (feed_path(id), feed_atom(public_url, id, &self.track)),
                (
                    crate::mark::vow_mark_path(id),
                    crate::mark::mark_svg(id).into_bytes(),
                ),
            ],
            windows: w,
            input,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conduct_core::signing::verify_object;
    use conduct_core::vow::fixture::{example_chain, EXAMPLE_ORIGIN};

    const URL: &str = "https://example.org";

    fn key() -> ServiceKey {
        ServiceKey::from_seed(&[5; 32], EXAMPLE_ORIGIN)
    }

    /// The example vow at log index 0 and `n` entries at 1..=n, as (log index, leaf).
    fn records(key: &ServiceKey, n: u64) -> (String, Vec<(u64, Vec<u8>)>) {
        let (id, leaves) = example_chain(key, n, false);
        (
            id,
            leaves.into_iter().zip(0..).map(|(l, i)| (i, l)).collect(),
        )
    }

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    fn rule(_: &InterpretationInput) -> Value {
        json!({"kind": "test"})
    }

    /// All of `read` taken by fresh docs: the new pages and the rendered files.
    fn whole(key: &ServiceKey, id: &str, read: &Records) -> (VowDocs, Files, Files) {
        let mut docs = VowDocs::new(key, id, (read[0].0, &read[0].1), false).unwrap();
        let pages = docs.extend(key, read, 0, 0).unwrap();
        let files = docs
            .render(key, URL, read, 0, 2_000_000, rule)
            .unwrap()
            .files;
        (docs, pages, files)
    }

    /// The chain as a reader gets it: the last page by the head's pin, each page before it by
    /// its successor's link (hashes checked), their records in order, then the tail.
    fn served_chain(files: &Files, id: &str) -> Vec<Value> {
        let get = |p: &str| files.iter().find(|(q, _)| q == p).map(|(_, b)| b.clone());
        let head = parse(&get(&links_path(id)).unwrap());
        let n = head["full_pages"].as_u64().unwrap() as usize;
        let mut pin = head["last_page"]["sha256"].as_str().map(str::to_owned);
        let mut pages = Vec::new();
        for k in (0..n).rev() {
            let bytes = get(&links_page_path(id, k)).unwrap();
            assert_eq!(Some(sha256_hex(&bytes)), pin, "page {k}'s pin");
            let page = parse(&bytes);
            assert_eq!(page["page"], k);
            pin = page["prev_page_sha256"].as_str().map(str::to_owned);
            pages.push(page);
        }
        assert_eq!(pin, None, "page 0 links to nothing");
        let mut out = Vec::new();
        for page in pages.iter().rev() {
            out.extend(page["records"].as_array().unwrap().iter().cloned());
        }
        out.extend(head["tail"].as_array().unwrap().iter().cloned());
        out
    }

    #[test]
    fn the_chain_heads_tail_reads_back_as_the_leaves_it_was_rendered_from() {
        let key = key();
        for n in [0, 5, 31, 70] {
            let (id, read) = records(&key, n);
            let (docs, _, files) = whole(&key, &id, &read);
            let (_, head) = files.iter().find(|(p, _)| *p == links_path(&id)).unwrap();
            let (from, tail) = links_doc_tail(&id, head).unwrap();
            assert_eq!(from, docs.tail_from());
            let want: Vec<TailRecord> = read[from..]
                .iter()
                .map(|(_, leaf)| TailRecord::parse(leaf).unwrap())
                .collect();
            assert_eq!(tail, want, "{n} entries");
            for (k, r) in tail.iter().enumerate() {
                assert_eq!(r.leaf, read[from + k].1);
                assert_eq!(r.log_index, read[from + k].0);
                let prev = (from + k > 0).then(|| sha256_hex(&read[from + k - 1].1));
                assert_eq!(r.prev, prev);
            }
            // Not this vow's head, not a head, not JSON.
            assert_eq!(links_doc_tail("0123456789abcdef", head), None);
            let (_, page) = files.iter().find(|(p, _)| *p == vow_path(&id)).unwrap();
            assert_eq!(links_doc_tail(&id, page), None);
            assert_eq!(links_doc_tail(&id, &head[..head.len() / 2]), None);
        }
    }

    #[test]
    fn pages_and_tail_are_the_whole_chain_and_every_file_is_signed() {
        let key = key();
        let pinned = PinnedKey::parse(&key.vkey()).unwrap();
        let (id, read) = records(&key, 70);
        let (docs, pages, files) = whole(&key, &id, &read);
        assert_eq!(pages.len(), 2);
        assert_eq!(docs.tail_from(), 64);
        let all: Files = pages.into_iter().chain(files).collect();
        let chain = served_chain(&all, &id);
        let leaves: Vec<Vec<u8>> = chain
            .iter()
            .map(|r| conduct_core::canonical::jcs(r).unwrap())
            .collect();
        let want: Vec<Vec<u8>> = read.iter().map(|(_, l)| l.clone()).collect();
        assert_eq!(leaves, want);
        for (path, bytes) in all.iter().filter(|(p, _)| p.ends_with(".json")) {
            verify_object(&parse(bytes), &pinned).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }

    #[test]
    fn extending_gives_the_bytes_of_rendering_from_scratch() {
        let key = key();
        let (id, read) = records(&key, 40);
        let mut docs = VowDocs::new(&key, &id, (read[0].0, &read[0].1), false).unwrap();
        let mut pages = docs.extend(&key, &read[..20], 0, 0).unwrap();
        assert!(pages.is_empty());
        // Later, only the tail is read (here: from position 0, still the tail).
        pages.extend(docs.extend(&key, &read, 0, 20).unwrap());
        assert_eq!(pages.len(), 1);
        // And once a page is full, reads start at the tail.
        let from = docs.tail_from();
        let more = docs.extend(&key, &read[from..], from, 41).unwrap();
        assert!(more.is_empty());
        let inc = docs
            .render(&key, URL, &read[from..], from, 2_000_000, rule)
            .unwrap();
        let (_, fresh_pages, fresh) = whole(&key, &id, &read);
        assert_eq!(pages, fresh_pages);
        assert_eq!(inc.files, fresh);
    }

    #[test]
    fn a_resume_point_renders_the_bytes_of_rendering_from_scratch() {
        let key = key();
        let (id, read) = records(&key, 100);
        // Reading 70 records passes the boundaries at 32 and 64: only the last is kept.
        let mut docs = VowDocs::new(&key, &id, (read[0].0, &read[0].1), false).unwrap();
        docs.extend(&key, &read[..70], 0, 0).unwrap();
        let (at, state) = docs.take_resume_point().unwrap();
        assert_eq!(at, 64);
        assert_eq!(docs.take_resume_point(), None);
        // Resumed there, it reads the chain from position 64 only.
        let mut resumed = VowDocs::resume(&key, &id, &state).unwrap();
        assert_eq!((resumed.records(), resumed.tail_from()), (64, 64));
        let pages = resumed.extend(&key, &read[64..], 64, 0).unwrap();
        assert_eq!(pages.len(), 1);
        assert_eq!(resumed.take_resume_point().map(|(at, _)| at), Some(96));
        let files = resumed
            .render(&key, URL, &read[96..], 96, 2_000_000, rule)
            .unwrap()
            .files;
        let (fresh_docs, fresh_pages, fresh) = whole(&key, &id, &read);
        assert_eq!(files, fresh);
        assert_eq!(pages[0], fresh_pages[2]);
        assert_eq!(resumed.state().unwrap(), fresh_docs.state().unwrap());
        // Another vow's state, a state off a page boundary and bytes that are no state are
        // refused.
        assert!(VowDocs::resume(&key, "another", &state).is_err());
        assert!(VowDocs::resume(&key, &id, &docs.state().unwrap()).is_err());
        assert!(VowDocs::resume(&key, &id, b"{}").is_err());
    }

    #[test]
    fn the_head_pins_only_the_last_page_and_does_not_grow_with_the_chain() {
        let key = key();
        let head_len = |n: u64| {
            let (id, read) = records(&key, n);
            let (docs, pages, files) = whole(&key, &id, &read);
            assert_eq!(pages.len(), read.len() / LINKS_PAGE_SIZE);
            let head = files.iter().find(|(p, _)| *p == links_path(&id)).unwrap();
            let doc = parse(&head.1);
            assert_eq!(doc["full_pages"], docs.full_pages);
            let last = pages.last().map(|(_, b)| sha256_hex(b));
            assert_eq!(doc["last_page"]["sha256"].as_str(), last.as_deref());
            // Page 1 links to page 0 by its file's hash.
            if pages.len() > 1 {
                let prev = parse(&pages[1].1)["prev_page_sha256"].clone();
                assert_eq!(prev, sha256_hex(&pages[0].1).as_str());
            }
            // The HTML twin names the last page, its records and its pin.
            let html = files
                .iter()
                .find(|(p, _)| p.ends_with("/chain.html"))
                .unwrap();
            let html = String::from_utf8_lossy(&html.1);
            let to = pages.len() * LINKS_PAGE_SIZE - 1;
            let from = to + 1 - LINKS_PAGE_SIZE;
            assert!(html.contains(&format!("Records {from} to {to}")), "{html}");
            assert!(html.contains(last.as_deref().unwrap()), "{html}");
            head.1.len()
        };
        let (id, read) = records(&key, 5);
        let (_, _, files) = whole(&key, &id, &read);
        let head = &files.iter().find(|(p, _)| *p == links_path(&id)).unwrap().1;
        assert_eq!(parse(head)["last_page"], Value::Null);
        // One record in the tail, at 2 and at 12 pages: the same size but for digits.
        let (short, long) = (head_len(64), head_len(384));
        assert!(long <= short + 8, "{short} -> {long} bytes");
    }

    #[test]
    fn records_that_do_not_continue_the_chain_are_refused() {
        let key = key();
        let (id, read) = records(&key, 40);
        let mut docs = VowDocs::new(&key, &id, (read[0].0, &read[0].1), false).unwrap();
        docs.extend(&key, &read[..10], 0, 0).unwrap();
        // A read starting past what the docs hold leaves a gap.
        assert!(docs.extend(&key, &read[12..], 12, 0).is_err());
        // Rendering with a read that is not the tail up to the head fails too.
        assert!(docs.render(&key, URL, &read[..5], 0, 0, rule).is_err());
    }

    /// The example vow with three report-ins: entry 1's actions ignore the context flag,
    /// entries 2 and 3 act on it every time. Entry 2's note says nothing changed, entry 3's
    /// that it switched.
    fn noted_records(key: &ServiceKey) -> (String, Vec<(u64, Vec<u8>)>) {
        use conduct_core::meter::{measure, TurnSymbols};
        let profile = |acts: bool| {
            let turns: Vec<TurnSymbols<'_>> = (0..40)
                .map(|k| {
                    let d = if acts && k % 2 == 0 {
                        "refuse"
                    } else {
                        "clean"
                    };
                    TurnSymbols::new(k % 2 == 0, d, "plain")
                })
                .collect();
            measure(conduct_core::meter::Meter::V1, &turns, &[7; 32])
        };
        let (flat, acts) = (profile(false), profile(true));
        let entries = [
            (&flat, None),
            (&acts, Some("Nothing changed.")),
            (&acts, Some("Switched to a new approach")),
        ];
        let (id, leaves) = conduct_core::vow::fixture::example_chain_of(key, &entries, false);
        (
            id,
            leaves.into_iter().zip(0..).map(|(l, i)| (i, l)).collect(),
        )
    }

    #[test]
    fn the_reading_compares_the_notes_with_the_numbers() {
        let key = key();
        let (id, read) = noted_records(&key);
        let (_, _, files) = whole(&key, &id, &read);
        let get = |p: &str| files.iter().find(|(q, _)| q == p).map(|(_, b)| b.clone());
        let reading = parse(&get(&interpretation_path(&id)).unwrap());
        let check = reading["note_check"].as_array().unwrap();
        let series = reading["trajectory"]["coupling_series"].as_array().unwrap();
        assert_eq!(reading["note_check_method"], notes::METHOD);
        assert_eq!(check.len(), 2, "{check:?}");
        assert_eq!(check[0]["seq"], 2);
        assert_eq!(check[0]["claim"], "steady");
        assert_eq!(check[0]["verdict"], "claims-steady-but-moved");
        assert_eq!(check[1]["seq"], 3);
        assert_eq!(check[1]["claim"], "change");
        assert_eq!(check[1]["verdict"], "claims-change-but-steady");
        // The numbers compared are the published series values.
        for f in check {
            let seq = f["seq"].as_u64().unwrap() as usize;
            for q in f["quantities"].as_array().unwrap() {
                let k = q["quantity"].as_str().unwrap();
                assert_eq!(q["from"], series[seq - 2][k]);
                assert_eq!(q["to"], series[seq - 1][k]);
            }
        }
        let to = series[1]["i_c_d"].as_f64().unwrap();
        assert!(to > 0.5, "{to}");
        let quoted = check[0]["quoted"].as_str().unwrap();
        assert!(
            quoted.starts_with(&format!(
                "I(C;D) {:.3} -> {to:.3} bits",
                series[0]["i_c_d"].as_f64().unwrap()
            )),
            "{quoted}"
        );
        // The page says it in words.
        let html = String::from_utf8(get(&format!("vow/{id}/reading.html")).unwrap()).unwrap();
        assert!(html.contains("Notes compared with the numbers"), "{html}");
        assert!(
            html.contains("Entry 2&#39;s note claims steadiness, but since entry 1"),
            "{html}"
        );
        // And a chain whose notes claim nothing has an empty check.
        let (id, read) = records(&key, 4);
        let (_, _, files) = whole(&key, &id, &read);
        let reading = parse(
            &files
                .iter()
                .find(|(p, _)| *p == interpretation_path(&id))
                .unwrap()
                .1,
        );
        assert_eq!(reading["note_check"], json!([]));
    }

    #[test]
    fn a_tampered_record_shows_in_the_verification_not_as_an_error() {
        let key = key();
        let (id, mut read) = records(&key, 5);
        let leaf = String::from_utf8(read[3].1.clone()).unwrap();
        read[3].1 = leaf.replace("\"n_turns\":4", "\"n_turns\":5").into_bytes();
        let (docs, _, files) = whole(&key, &id, &read);
        assert_eq!(docs.verified(), 3);
        let page = parse(&files[0].1);
        assert_eq!(page["trajectory"]["chain_verification"]["ok"], false);
    }
}
