//! The public index of every vow (`/vows`) and the crawlers' sitemap, sized for a million
//! vows: vows in the order they were taken, in immutable pages of [`PAGE_SIZE`] (`/vows/<k>`,
//! each pinning the page before it by hash) under a small signed head that lists the newest
//! vows (the tail) and pins the last full page; the sitemap an index of files of
//! [`SITEMAP_VOWS`] vows each, immutable once full. Taking a vow rewrites the head, its HTML
//! twin and the last sitemap file, and a page when one fills: bytes bounded by the page sizes,
//! whatever the number of vows (library/VOWS.md, "The index of vows").

use askama::Template;
use conduct_core::canonical::sha256_hex;
use conduct_core::scope::scope_value;
use conduct_core::signing::ServiceKey;
use conduct_core::time::rfc3339;
use conduct_core::vow::record::text_sha256;
use conduct_indexer::vows::VowRow;
use serde_json::{json, Value};

use crate::chart::xml_escape;
use crate::pages::{PageHead, VowsPage};
use crate::snapshot::signed_bytes;
use crate::vow_html::vow_row_view;
use crate::vows::Files;
use crate::RenderError;

/// Type of `/vows`, the head.
pub const VOWS_TYPE: &str = "conduct.vows/v2";
/// Type of `/vows/<k>`, a full page.
pub const VOWS_PAGE_TYPE: &str = "conduct.vows_page/v1";
/// Vows per immutable page (`/vows/<k>` holds the vows taken `256k .. 256k+255`).
pub const PAGE_SIZE: usize = 256;
/// Vows per sitemap file (`sitemap/<j>.xml`), three URLs each: far under the sitemap
/// protocol's 50,000 URLs a file. A multiple of [`PAGE_SIZE`].
pub const SITEMAP_VOWS: usize = 2 * PAGE_SIZE;

const ORDER: &str = "in the order taken (by log index), oldest first; never by score";

const HOW_TO_VERIFY: &str = "Each document is signed by the service key (remove `signature`, \
RFC 8785, Ed25519). The index is every full page in order, then the tail: `last_page` pins \
the last full page by the SHA-256 of its file, and each page's `prev` pins the page before it, \
so walking back from the head reaches every vow. Full pages never change.";

/// Where the index stands: what is written and never changes again. Kept between renders so
/// a vow taken costs reading the vows after the last complete sitemap file, not every vow.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct IndexState {
    /// Complete sitemap files: the vows read start at rank `chunks * SITEMAP_VOWS`.
    chunks: usize,
    /// Log index of the last vow before that rank (`None`: from the first vow).
    chunk_after: Option<u64>,
    /// Full pages written.
    pages: usize,
    /// SHA-256 (hex) of the last full page's JSON file.
    last_sha: Option<String>,
    /// Vows listed by the last render.
    count: usize,
}

/// What every render of the index shares.
pub struct IndexInput<'a> {
    /// The service key.
    pub key: &'a ServiceKey,
    /// Absolute URLs in the sitemap start with this.
    pub public_url: &'a str,
    /// The site's fixed HTML pages and library pages, for `sitemap/pages.xml`.
    pub fixed: &'a [String],
}

impl IndexState {
    /// The state the tree at `root` stands for, read from its immutable files rather than
    /// rebuilt from every vow (a restart at a million vows would otherwise read every vow and
    /// re-sign every page): its whole sitemap files of full pages, each page's JSON and HTML
    /// and each sitemap file present, the last page signed by the key `pinned` verifies and
    /// its last vow the store's (`log_index_of` gives a vow's log index in the store) and
    /// below `below`, the log size up to which the tree's files are durable (the integration
    /// mark: whole files past it are left out, to be rendered again), and named by the last
    /// sitemap file.
    /// `None` when there is no such file or anything fails to check: every vow is read once,
    /// as without a state.
    pub fn resume(
        root: &dyn conduct_indexer::tree::Tree,
        pinned: &conduct_core::signing::PinnedKey,
        log_index_of: impl Fn(&str) -> Option<u64>,
        below: u64,
    ) -> Option<IndexState> {
        let names = |dir: &str| -> std::collections::HashSet<String> {
            let files = root.children(dir).map(|c| c.files).unwrap_or_default();
            (files.into_iter())
                .filter_map(|f| Some(f.path.strip_prefix(dir)?.strip_prefix('/')?.to_owned()))
                .collect()
        };
        let (pages_on_disk, sitemaps) = (names("vows"), names("sitemap"));
        let pages = (0..)
            .take_while(|k| {
                pages_on_disk.contains(&format!("{k}.json"))
                    && pages_on_disk.contains(&format!("{k}.html"))
            })
            .count();
        let chunks = (0..pages / 2)
            .take_while(|j| sitemaps.contains(&format!("{j}.xml")))
            .count();
        // The last vow of the last page of whole sitemap file `j - 1`, read from its page.
        let last_of = |j: usize| -> Option<(Vec<u8>, Value)> {
            let bytes = root.get(&format!("vows/{}.json", 2 * j - 1)).ok()??;
            let page: Value = serde_json::from_slice(&bytes).ok()?;
            Some((bytes, page))
        };
        let at_of = |page: &Value| page["vows"].as_array()?.last()?["log_index"].as_u64();
        // The most whole sitemap files whose vows are all below the mark (the log indices
        // grow with the pages): a binary search, a page read a step.
        let (mut lo, mut hi) = (0, chunks);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let below_mark = last_of(mid)
                .and_then(|(_, page)| at_of(&page))
                .is_some_and(|at| at < below);
            if below_mark {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let chunks = lo;
        let last = (chunks * 2).checked_sub(1)?;
        let (bytes, page) = last_of(chunks)?;
        conduct_core::signing::verify_snapshot(&page, pinned).ok()?;
        let vows = page["vows"].as_array()?;
        let last_vow = vows.last()?;
        let (id, at) = (
            last_vow["vow_id"].as_str()?,
            last_vow["log_index"].as_u64()?,
        );
        let whole = page["type"] == VOWS_PAGE_TYPE
            && page["page"].as_u64() == Some(last as u64)
            && vows.len() == PAGE_SIZE
            && log_index_of(id) == Some(at)
            && at < below;
        let sitemap = root.get(&format!("sitemap/{}.xml", chunks - 1)).ok()??;
        let sitemap = String::from_utf8(sitemap).ok()?;
        let named = sitemap.contains(&format!("/vow/{id}/chain</loc>"))
            && sitemap.contains(&format!("/vows/{last}</loc>"));
        (whole && named).then(|| IndexState {
            chunks,
            chunk_after: Some(at),
            pages: chunks * 2,
            last_sha: Some(sha256_hex(&bytes)),
            count: chunks * SITEMAP_VOWS,
        })
    }

    /// Full pages written.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// The log index after which [`Self::files`] needs every vow (`None`: all of them).
    pub fn after(&self) -> Option<u64> {
        self.chunk_after
    }

    /// Whether `path` is one of the files every render rewrites (the head, its HTML twin, the
    /// sitemap's index and fixed pages), as opposed to a page or a sitemap file of vows.
    pub fn is_head(&self, path: &str) -> bool {
        matches!(
            path,
            "vows.json" | "vows.html" | "sitemap.xml" | "sitemap/pages.xml"
        )
    }

    /// Whether `path`, a file under `vows/` or `sitemap/`, is one the last render wrote or
    /// wrote before (a page of an earlier layout, or of a sitemap file since merged, is not).
    pub fn is_current(&self, path: &str) -> bool {
        let numbered = |name: &str, ext: &str| {
            name.strip_suffix(ext)
                .filter(|n| n == &"0" || !n.starts_with('0'))
                .and_then(|n| n.parse::<usize>().ok())
        };
        if let Some(name) = path.strip_prefix("vows/") {
            let k = numbered(name, ".json").or_else(|| numbered(name, ".html"));
            k.is_some_and(|k| k < self.pages)
        } else if let Some(name) = path.strip_prefix("sitemap/") {
            name == "pages.xml"
                || numbered(name, ".xml").is_some_and(|j| j < self.count.div_ceil(SITEMAP_VOWS))
        } else {
            false
        }
    }

    /// The index's files, given `rows`: every vow taken after [`Self::after`], in the order
    /// taken. Returns the pages that filled (JSON and HTML), the head and its HTML, the
    /// sitemap files that changed and the sitemap index, and moves past what is now
    /// immutable.
    pub fn files(&mut self, inp: &IndexInput<'_>, rows: &[VowRow]) -> Result<Files, RenderError> {
        let base = self.chunks * SITEMAP_VOWS;
        let count = base + rows.len();
        self.count = count;
        let mut files = Vec::new();
        while (self.pages + 1) * PAGE_SIZE <= count {
            let k = self.pages;
            let from = k * PAGE_SIZE - base;
            let page = &rows[from..from + PAGE_SIZE];
            let bytes = page_json(inp.key, k, page, self.last_sha.as_deref())?;
            self.last_sha = Some(sha256_hex(&bytes));
            files.push((format!("vows/{k}.json"), bytes));
            files.push((format!("vows/{k}.html"), page_html(inp.key, k, page)?));
            self.pages += 1;
        }
        let tail = &rows[self.pages * PAGE_SIZE - base..];
        files.push((
            "vows.json".into(),
            head_json(inp.key, count, self.pages, self.last_sha.as_deref(), tail)?,
        ));
        files.push((
            "vows.html".into(),
            head_html(inp.key, count, self.pages, tail)?,
        ));
        for (n, chunk) in rows.chunks(SITEMAP_VOWS).enumerate() {
            let j = self.chunks + n;
            files.push((
                format!("sitemap/{j}.xml"),
                sitemap_vows(inp.public_url, j, chunk, self.pages),
            ));
        }
        let files_now = count.div_ceil(SITEMAP_VOWS);
        files.push((
            "sitemap.xml".into(),
            sitemap_index(inp.public_url, files_now),
        ));
        files.push((
            "sitemap/pages.xml".into(),
            sitemap_pages(inp.public_url, inp.fixed),
        ));
        let complete = rows.len() / SITEMAP_VOWS;
        if complete > 0 {
            self.chunks += complete;
            self.chunk_after = Some(rows[complete * SITEMAP_VOWS - 1].log_index);
        }
        Ok(files)
    }
}

/// One vow as the index lists it: the fields fixed when it was taken (counts and windows live
/// on the vow's own page).
fn vow_entry(r: &VowRow) -> Value {
    let mut v = json!({
        "vow_id": r.vow_id,
        "agent": r.agent,
        "sealed": r.sealed,
        "sandbox": r.sandbox,
        "wallet": r.wallet,
        "cadence_hours": r.cadence_seconds as f64 / 3600.0,
        "taken_at": rfc3339(r.created_at),
        "log_index": r.log_index,
        "text_sha256": text_sha256(&r.text),
        "href": format!("/vow/{}", r.vow_id),
    });
    if !r.sealed {
        v["text"] = json!(r.text);
    }
    v
}

fn page_ref(k: usize, sha: &str) -> Value {
    json!({ "href": format!("/vows/{k}"), "page": k, "sha256": sha })
}

/// `/vows/<k>`: the [`PAGE_SIZE`] vows taken from rank `256k`, pinning page `k-1` by `prev`.
fn page_json(
    key: &ServiceKey,
    k: usize,
    rows: &[VowRow],
    prev: Option<&str>,
) -> Result<Vec<u8>, RenderError> {
    let doc = json!({
        "type": VOWS_PAGE_TYPE,
        "page": k,
        "from": k * PAGE_SIZE,
        "order": ORDER,
        "prev": prev.map(|sha| page_ref(k - 1, sha)),
        "head": "/vows",
        "vows": rows.iter().map(vow_entry).collect::<Vec<_>>(),
        "scope": scope_value(),
    });
    Ok(signed_bytes(key, doc)?)
}

/// `/vows`: how many vows, the last full page by hash, and the vows after it.
fn head_json(
    key: &ServiceKey,
    count: usize,
    pages: usize,
    last_sha: Option<&str>,
    tail: &[VowRow],
) -> Result<Vec<u8>, RenderError> {
    let last = match (pages, last_sha) {
        (0, _) | (_, None) => Value::Null,
        (p, Some(sha)) => page_ref(p - 1, sha),
    };
    let doc = json!({
        "type": VOWS_TYPE,
        "count": count,
        "order": ORDER,
        "page_size": PAGE_SIZE,
        "pages": pages,
        "last_page": last,
        "tail_from": pages * PAGE_SIZE,
        "tail": tail.iter().map(vow_entry).collect::<Vec<_>>(),
        "how_to_verify": HOW_TO_VERIFY,
        "scope": scope_value(),
    });
    Ok(signed_bytes(key, doc)?)
}

fn head_html(
    key: &ServiceKey,
    count: usize,
    pages: usize,
    tail: &[VowRow],
) -> Result<Vec<u8>, RenderError> {
    let summary = if pages == 0 {
        format!("{count} vows, in the order taken, never by score.")
    } else {
        format!(
            "{count} vows, in the order taken, never by score: the newest {} here, the older \
             ones in pages of {PAGE_SIZE}.",
            tail.len()
        )
    };
    Ok(VowsPage {
        head: PageHead::new(
            key,
            "Vows",
            "Every public vow, in the order taken, never by score.",
        ),
        summary,
        start: pages * PAGE_SIZE + 1,
        vows: tail.iter().map(vow_row_view).collect(),
        older: pages.checked_sub(1).map(|k| format!("/vows/{k}")),
        newest: None,
        json_href: "/vows?format=json".into(),
    }
    .render()?
    .into_bytes())
}

fn page_html(key: &ServiceKey, k: usize, rows: &[VowRow]) -> Result<Vec<u8>, RenderError> {
    let from = k * PAGE_SIZE + 1;
    Ok(VowsPage {
        head: PageHead::new(
            key,
            "Vows",
            "Every public vow, in the order taken, never by score.",
        ),
        summary: format!(
            "Vows {from} to {}, in the order taken, never by score. This page never changes.",
            from + rows.len() - 1
        ),
        start: from,
        vows: rows.iter().map(vow_row_view).collect(),
        older: k.checked_sub(1).map(|p| format!("/vows/{p}")),
        newest: Some("/vows".into()),
        json_href: format!("/vows/{k}?format=json"),
    }
    .render()?
    .into_bytes())
}

const URLSET: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";

fn url_line(out: &mut String, public_url: &str, path: &str) {
    out.push_str("<url><loc>");
    out.push_str(&xml_escape(&format!("{public_url}{path}")));
    out.push_str("</loc></url>\n");
}

/// `sitemap.xml`: a sitemap index naming `sitemap/pages.xml` and the `files` vow files.
fn sitemap_index(public_url: &str, files: usize) -> Vec<u8> {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    let names = std::iter::once("pages".to_owned()).chain((0..files).map(|j| j.to_string()));
    for name in names {
        out.push_str("<sitemap><loc>");
        out.push_str(&xml_escape(&format!("{public_url}/sitemap/{name}.xml")));
        out.push_str("</loc></sitemap>\n");
    }
    out.push_str("</sitemapindex>\n");
    out.into_bytes()
}

/// `sitemap/pages.xml`: the service's fixed pages.
fn sitemap_pages(public_url: &str, fixed: &[String]) -> Vec<u8> {
    let mut out = String::from(URLSET);
    for p in fixed {
        url_line(&mut out, public_url, p);
    }
    out.push_str("</urlset>\n");
    out.into_bytes()
}

/// `sitemap/<j>.xml`: the full index pages among vows `512j ..` (of `pages` written) and each
/// vow's page, reading and chain.
fn sitemap_vows(public_url: &str, j: usize, rows: &[VowRow], pages: usize) -> Vec<u8> {
    let mut out = String::from(URLSET);
    let first = j * SITEMAP_VOWS / PAGE_SIZE;
    for k in first..(first + SITEMAP_VOWS / PAGE_SIZE).min(pages) {
        url_line(&mut out, public_url, &format!("/vows/{k}"));
    }
    for r in rows {
        for suffix in ["", "/reading", "/chain"] {
            url_line(&mut out, public_url, &format!("/vow/{}{suffix}", r.vow_id));
        }
    }
    out.push_str("</urlset>\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn key() -> ServiceKey {
        ServiceKey::from_seed(&[7; 32], "bench.invalid/log")
    }

    fn row(i: usize) -> VowRow {
        VowRow {
            vow_id: format!("{i:016x}"),
            log_index: 10 + 3 * i as u64,
            agent: format!("agent-<{i}>"),
            text: "I keep my word & report in".into(),
            sealed: i.is_multiple_of(5),
            sandbox: i.is_multiple_of(2),
            wallet: None,
            cadence_seconds: 3600,
            created_at: 1_700_000_000 + i as u64,
            head_seq: 0,
            head_at: 0,
        }
    }

    const URL: &str = "https://example.org";

    fn fixed() -> Vec<String> {
        vec!["/".to_owned(), "/vows".to_owned()]
    }

    fn input<'a>(key: &'a ServiceKey, fixed: &'a [String]) -> IndexInput<'a> {
        IndexInput {
            key,
            public_url: URL,
            fixed,
        }
    }

    /// The tree after taking `n` vows, one a render up to just past the first page, then 97
    /// (a prime: the renders end at every offset of a page) a render, each render given what
    /// the store would give; and the most bytes one render wrote.
    fn one_at_a_time(n: usize) -> (BTreeMap<String, Vec<u8>>, usize, IndexState) {
        let (key, fixed) = (key(), fixed());
        let inp = input(&key, &fixed);
        let all: Vec<VowRow> = (0..n).map(row).collect();
        let mut st = IndexState::default();
        let mut tree = BTreeMap::new();
        let mut most = 0;
        let mut taken = 0;
        while taken < n {
            taken = (taken + if taken <= PAGE_SIZE + 2 { 1 } else { 97 }).min(n);
            let rows: Vec<VowRow> = all[..taken]
                .iter()
                .filter(|r| st.after().is_none_or(|a| r.log_index > a))
                .cloned()
                .collect();
            let mut written = 0;
            let complete = st.chunks;
            for (p, b) in st.files(&inp, &rows).unwrap() {
                let sitemap_file = p
                    .strip_prefix("sitemap/")
                    .and_then(|f| f.strip_suffix(".xml"));
                let immutable = p.starts_with("vows/")
                    || sitemap_file
                        .and_then(|j| j.parse::<usize>().ok())
                        .is_some_and(|j| j < complete);
                if immutable && tree.contains_key(&p) {
                    assert!(tree[&p] == b, "{p} never changes once written");
                }
                if tree.get(&p) != Some(&b) {
                    written += b.len();
                    tree.insert(p, b);
                }
            }
            most = most.max(written);
        }
        (tree, most, st)
    }

    fn json(tree: &BTreeMap<String, Vec<u8>>, p: &str) -> Value {
        serde_json::from_slice(&tree[p]).unwrap()
    }

    #[test]
    fn one_vow_at_a_time_gives_the_bytes_of_rendering_all_at_once() {
        let n = 2 * SITEMAP_VOWS + PAGE_SIZE + 17;
        let (tree, _, st) = one_at_a_time(n);
        let (key, fixed) = (key(), fixed());
        let inp = input(&key, &fixed);
        let all: Vec<VowRow> = (0..n).map(row).collect();
        let mut fresh = IndexState::default();
        let whole: BTreeMap<String, Vec<u8>> =
            fresh.files(&inp, &all).unwrap().into_iter().collect();
        assert_eq!(tree, whole);
        assert_eq!(st, fresh);
        assert_eq!(st.pages, 5);
    }

    #[test]
    fn walking_back_from_the_head_lists_every_vow_in_order_once() {
        let n = 3 * PAGE_SIZE + 5;
        let (tree, _, _) = one_at_a_time(n);
        let head = json(&tree, "vows.json");
        assert_eq!(head["count"], n);
        assert_eq!(head["type"], VOWS_TYPE);
        let mut listed: Vec<Value> = head["tail"].as_array().unwrap().clone();
        let mut next = head["last_page"].clone();
        while !next.is_null() {
            let path = format!("vows/{}.json", next["page"]);
            assert_eq!(next["sha256"], sha256_hex(&tree[&path]), "{path} is pinned");
            let page = json(&tree, &path);
            let mut vows = page["vows"].as_array().unwrap().clone();
            assert_eq!(vows.len(), PAGE_SIZE);
            vows.extend(listed);
            listed = vows;
            next = page["prev"].clone();
        }
        let ids: Vec<String> = listed
            .iter()
            .map(|v| v["vow_id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ids, (0..n).map(|i| row(i).vow_id).collect::<Vec<_>>());
        let sealed = &listed[0];
        assert!(sealed.get("text").is_none() && sealed["sealed"] == true);
    }

    #[test]
    fn taking_a_vow_rewrites_bounded_bytes_and_the_sitemap_keeps_every_url() {
        let n = 4 * SITEMAP_VOWS + 3;
        let (tree, most, _) = one_at_a_time(n);
        // The head lists at most a page of vows; a filling page adds one page and its twin.
        assert!(most < 600 * 1024, "{most} bytes in one render");
        let index = String::from_utf8(tree["sitemap.xml"].clone()).unwrap();
        assert!(index.starts_with("<?xml") && index.contains("<sitemapindex"));
        let mut urls = 0;
        for j in 0..=4 {
            let loc = format!("<loc>{URL}/sitemap/{j}.xml</loc>");
            assert!(index.contains(&loc), "{loc}");
            let file = String::from_utf8(tree[&format!("sitemap/{j}.xml")].clone()).unwrap();
            urls += file.matches("<url>").count();
        }
        assert!(!index.contains("/sitemap/5.xml"));
        // Three URLs a vow and one a full page.
        assert_eq!(urls, 3 * n + n / PAGE_SIZE);
        let pages = String::from_utf8(tree["sitemap/pages.xml"].clone()).unwrap();
        assert!(pages.contains(&format!("<loc>{URL}/vows</loc>")));
    }

    fn pinned_of(key: &ServiceKey) -> conduct_core::signing::PinnedKey {
        conduct_core::signing::PinnedKey::parse(&key.vkey()).unwrap()
    }

    fn write_tree(tree: &BTreeMap<String, Vec<u8>>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (p, b) in tree {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b).unwrap();
        }
        dir
    }

    /// A restart resumes from the tree's immutable files, and the next render writes exactly
    /// what a render from the first vow would; anything that does not check resumes less, or
    /// nothing.
    #[test]
    fn a_restart_resumes_the_index_from_its_files_and_renders_the_same_bytes() {
        let n = 2 * SITEMAP_VOWS + PAGE_SIZE + 40;
        let (tree, _, st) = one_at_a_time(n);
        let (key, fixed) = (key(), fixed());
        let inp = input(&key, &fixed);
        let all: Vec<VowRow> = (0..n).map(row).collect();
        let in_store = |id: &str| all.iter().find(|r| r.vow_id == id).map(|r| r.log_index);
        let dir = write_tree(&tree);
        let site = conduct_indexer::tree::Dir::open(dir.path()).unwrap();
        let above = all[n - 1].log_index + 1;
        let mut resumed = IndexState::resume(&site, &pinned_of(&key), in_store, above).unwrap();
        assert_eq!((resumed.chunks, resumed.pages), (2, 4));
        assert_eq!(resumed.after(), Some(all[2 * SITEMAP_VOWS - 1].log_index));
        let rows: Vec<VowRow> = all[2 * SITEMAP_VOWS..].to_vec();
        let files: BTreeMap<String, Vec<u8>> =
            resumed.files(&inp, &rows).unwrap().into_iter().collect();
        for (p, b) in &files {
            assert!(tree[p] == *b, "{p} differs after resuming");
        }
        assert!(files.contains_key("vows/4.json") && files.contains_key("vows.json"));
        assert!(!files.contains_key("vows/3.json") && !files.contains_key("sitemap/1.xml"));
        assert_eq!(resumed, st);

        // The mark must be past the last vow resumed: whole files past it are left out.
        let at = all[2 * SITEMAP_VOWS - 1].log_index;
        let mut before = IndexState::resume(&site, &pinned_of(&key), in_store, at).unwrap();
        assert_eq!((before.chunks, before.pages), (1, 2));
        assert_eq!(before.after(), Some(all[SITEMAP_VOWS - 1].log_index));
        for (p, b) in before.files(&inp, &all[SITEMAP_VOWS..]).unwrap() {
            assert!(tree[&p] == b, "{p} differs after resuming less");
        }
        assert_eq!(before, st);
        let at = all[SITEMAP_VOWS - 1].log_index;
        assert!(IndexState::resume(&site, &pinned_of(&key), in_store, at).is_none());
        // A store that does not hold that vow (a tree ahead of its store).
        assert!(IndexState::resume(&site, &pinned_of(&key), |_| None, above).is_none());
        // Another key.
        let other = ServiceKey::from_seed(&[8; 32], "bench.invalid/log");
        assert!(IndexState::resume(&site, &pinned_of(&other), in_store, above).is_none());
        // A page's HTML twin missing: the whole sitemap files before it.
        std::fs::remove_file(dir.path().join("vows/2.html")).unwrap();
        let fewer = IndexState::resume(&site, &pinned_of(&key), in_store, above).unwrap();
        assert_eq!((fewer.chunks, fewer.pages), (1, 2));
        // The last whole sitemap file written before it was whole.
        std::fs::write(
            dir.path().join("sitemap/0.xml"),
            sitemap_vows(URL, 0, &all[..SITEMAP_VOWS - 1], 2),
        )
        .unwrap();
        assert!(IndexState::resume(&site, &pinned_of(&key), in_store, above).is_none());
        // A tampered page.
        let dir = write_tree(&tree);
        let mut page = tree["vows/3.json"].clone();
        let at = page.len() / 2;
        page[at] ^= 1;
        std::fs::write(dir.path().join("vows/3.json"), page).unwrap();
        assert!(IndexState::resume(&site, &pinned_of(&key), in_store, above).is_none());
        // No whole sitemap file yet.
        let (small, _, _) = one_at_a_time(SITEMAP_VOWS - 1);
        let dir = write_tree(&small);
        let site = conduct_indexer::tree::Dir::open(dir.path()).unwrap();
        assert!(IndexState::resume(&site, &pinned_of(&key), in_store, above).is_none());
    }

    #[test]
    fn files_of_an_earlier_layout_are_not_current() {
        let (tree, _, st) = one_at_a_time(3 * PAGE_SIZE + 1);
        for p in tree
            .keys()
            .filter(|p| p.starts_with("vows/") || p.starts_with("sitemap/"))
        {
            assert!(st.is_current(p), "{p}");
        }
        for p in [
            "vows/3.html",
            "vows/3.json",
            "vows/03.json",
            "vows/2.htm",
            "sitemap/2.xml",
        ] {
            assert!(!st.is_current(p), "{p}");
        }
    }

    #[test]
    fn user_text_is_escaped_in_the_pages() {
        let (tree, _, _) = one_at_a_time(PAGE_SIZE + 1);
        for p in ["vows.html", "vows/0.html"] {
            let html = String::from_utf8(tree[p].clone()).unwrap();
            assert!(!html.contains("agent-<"), "{p}");
            assert!(
                html.contains("agent-&lt;") || html.contains("agent-&#60;"),
                "{p}"
            );
        }
        let page0 = String::from_utf8(tree["vows/0.html"].clone()).unwrap();
        assert!(page0.contains("href=\"/vows\""));
        let head = String::from_utf8(tree["vows.html"].clone()).unwrap();
        assert!(head.contains("href=\"/vows/0\""));
    }
}
