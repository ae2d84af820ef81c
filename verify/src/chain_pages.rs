//! A vow's chain pages, checked through its signed chain head (library/VOWS.md, "The chain";
//! library/MIRRORS.md, "What it lists"): the manifest lists the head, not the pages, so the
//! head's pin on the last page and each page's link to the one before it prove them, as a
//! checkpoint proves the log's tiles. A `conduct.chain/v1` head (a tree mid-upgrade) pins
//! every page itself. One page is held at a time.

use conduct_core::signing::PinnedKey;
use serde_json::Value;

use crate::files::Files;
use crate::hashed::{read_hashed, signed_json};
use crate::Error;

/// Records in a full page.
const PAGE_SIZE: u64 = 32;

/// Check every page the chain head at `head` (of vow `id`, already checked against its
/// listing) reaches: each page's file against the hash that pins it, signed, of this vow,
/// numbered and of 32 records. Returns how many pages it reached.
pub(crate) fn walk<F: Files + ?Sized>(
    files: &F,
    head: &str,
    id: &str,
    pinned: &PinnedKey,
    buf: &mut [u8],
) -> Result<u64, Error> {
    let fail = |path: &str, reason: String| Error::ChainPage {
        path: path.to_owned(),
        reason,
    };
    let (_, _, bytes) = read_hashed(files, head, Some(1 << 24), buf)?;
    let doc = signed_json(head, &bytes, pinned)?;
    if doc["vow_id"] != id {
        return Err(fail(
            head,
            format!("the chain of {}, not {id}", doc["vow_id"]),
        ));
    }
    let (n, pins, page_type) = match doc["type"].as_str() {
        Some("conduct.chain/v2") => {
            let n = doc["full_pages"]
                .as_u64()
                .ok_or_else(|| fail(head, "no full_pages count".into()))?;
            let last = &doc["last_page"];
            let pin = match (n, last) {
                (0, Value::Null) => None,
                (0, _) => return Err(fail(head, "last_page with no full page".into())),
                (_, Value::Object(_)) => {
                    let k = n - 1;
                    if last["href"] != format!("/vow/{id}/chain/{k}").as_str()
                        || last["from_position"].as_u64() != Some(k * PAGE_SIZE)
                        || last["records"].as_u64() != Some(PAGE_SIZE)
                    {
                        return Err(fail(head, format!("last_page is not page {k}")));
                    }
                    Some(sha_of(last, head)?)
                }
                _ => return Err(fail(head, format!("{n} full pages and no last_page"))),
            };
            (n, Pins::Linked(pin), "conduct.chain_page/v2")
        }
        Some("conduct.chain/v1") => {
            let pages = doc["pages"]
                .as_array()
                .ok_or_else(|| fail(head, "no pages".into()))?;
            let pins = pages
                .iter()
                .map(|p| sha_of(p, head))
                .collect::<Result<Vec<_>, _>>()?;
            (
                pages.len() as u64,
                Pins::Each(pins),
                "conduct.chain_page/v1",
            )
        }
        other => return Err(fail(head, format!("type {other:?}, not a chain head"))),
    };
    if doc["tail_from_position"].as_u64() != Some(n * PAGE_SIZE) {
        return Err(fail(
            head,
            format!("tail_from_position is not {}", n * PAGE_SIZE),
        ));
    }
    let mut link = match &pins {
        Pins::Linked(pin) => *pin,
        Pins::Each(_) => None,
    };
    for k in (0..n).rev() {
        let path = format!("vow/{id}/chain/{k}.json");
        let want = match &pins {
            Pins::Linked(_) => link,
            Pins::Each(each) => usize::try_from(k).ok().and_then(|i| each.get(i)).copied(),
        }
        .ok_or_else(|| fail(&path, "no hash pins it".into()))?;
        let (_, sha, bytes) = match read_hashed(files, &path, Some(1 << 24), buf) {
            Err(Error::Read { path, source }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(fail(&path, format!("missing (reached from {head})")))
            }
            other => other?,
        };
        if sha != want {
            return Err(Error::Hash {
                path,
                sha256: hex::encode(sha),
                listed: hex::encode(want),
            });
        }
        let page = signed_json(&path, &bytes, pinned)?;
        let records = page["records"].as_array().map_or(0, Vec::len) as u64;
        if page["type"] != page_type
            || page["vow_id"] != id
            || page["page"].as_u64() != Some(k)
            || page["from_position"].as_u64() != Some(k * PAGE_SIZE)
            || records != PAGE_SIZE
        {
            return Err(fail(
                &path,
                format!("not page {k} ({page_type}, 32 records) of vow {id}"),
            ));
        }
        if let Pins::Linked(_) = pins {
            link = match (&page["prev_page_sha256"], k) {
                (Value::Null, 0) => None,
                (Value::Null, _) => return Err(fail(&path, "no link to the page before".into())),
                (_, 0) => return Err(fail(&path, "page 0 links to a page before it".into())),
                (v, _) => Some(hex32(v).ok_or_else(|| fail(&path, "a bad link".into()))?),
            };
        }
    }
    Ok(n)
}

/// How a head pins its pages.
enum Pins {
    /// `v2`: the last page's hash (each page then pins the one before it).
    Linked(Option<[u8; 32]>),
    /// `v1`: every page's hash.
    Each(Vec<[u8; 32]>),
}

fn hex32(v: &Value) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(v.as_str()?, &mut out).ok()?;
    Some(out)
}

fn sha_of(pin: &Value, head: &str) -> Result<[u8; 32], Error> {
    hex32(&pin["sha256"]).ok_or_else(|| Error::ChainPage {
        path: head.to_owned(),
        reason: "a page pin without a hex sha256".into(),
    })
}
