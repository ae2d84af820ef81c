//! The signed mirror manifest (library/MIRRORS.md, "The manifest"): a 16-way trie of signed
//! bins that together list every file of the rendered tree ([`listed`]: all but `log/` and the
//! vow chain pages) with its SHA-256 and length.
//! `manifest.json` is the root (the only bin with `as_of` and `expires`); each other bin is
//! `manifest/<prefix>.json` and lists either the files whose [`key`] starts with its prefix or
//! its non-empty children. The renderer writes it and `conduct verify-site` checks it; both
//! take the format's names and rules from here.

use sha2::{Digest, Sha256};

/// The root's format name (the `type` of `manifest.json`).
pub const MANIFEST_TYPE: &str = "conduct.manifest/v3";

/// The root's format name before the chain pages left the listing ([`listed`]): the same
/// members, every chain page listed. Read (a tree mid-upgrade), never written.
pub const V2_TYPE: &str = "conduct.manifest/v2";

/// The format name of the single-file manifest the trie replaced (one `files` object listing
/// everything): a restarted service takes it once (library/MIRRORS.md, "Mirrors of the
/// single-file manifest").
pub const V1_TYPE: &str = "conduct.manifest/v1";

/// The format name of every other bin (`manifest/<prefix>.json`).
pub const BIN_TYPE: &str = "conduct.manifest-bin/v1";

/// The root's path in the tree.
pub const ROOT_PATH: &str = "manifest.json";

/// The directory holding every bin but the root.
pub const BIN_DIR: &str = "manifest";

/// Hex digits of a [`key`]: the trie is at most this deep.
pub const KEY_DIGITS: usize = 64;

/// The unit of a file: its path up to the second `/` or the first `.` after its first
/// component. A unit's files always share a bin (`vow/<id>.json`, `vow/<id>.html` and
/// `vow/<id>/chain/3.json` are all `vow/<id>`; `index.html` is `index`).
pub fn unit(path: &str) -> &str {
    match path.find('/') {
        Some(i) => {
            let rest = &path[i + 1..];
            let end = rest.find(['/', '.']).unwrap_or(rest.len());
            &path[..i + 1 + end]
        }
        None => {
            // A leading dot belongs to the name (the tree has no such root file, but the
            // rule must not give an empty unit).
            let end = path
                .char_indices()
                .skip(1)
                .find(|&(_, c)| c == '.')
                .map_or(path.len(), |(i, _)| i);
            &path[..end]
        }
    }
}

/// A file's bin key: the lower-case hex SHA-256 of its [`unit`]. A bin with prefix `p` holds
/// exactly the files whose key starts with `p`.
pub fn key(path: &str) -> String {
    hex::encode(Sha256::digest(unit(path).as_bytes()))
}

/// The path of the bin with `prefix` (`""` is the root, `manifest.json`).
pub fn bin_path(prefix: &str) -> String {
    if prefix.is_empty() {
        ROOT_PATH.to_owned()
    } else {
        format!("{BIN_DIR}/{prefix}.json")
    }
}

/// The prefix a bin path names: `Some("")` for the root, `Some(p)` for
/// `manifest/<p>.json` with `p` one to [`KEY_DIGITS`] lower-case hex digits, else `None`.
pub fn bin_prefix(path: &str) -> Option<&str> {
    if path == ROOT_PATH {
        return Some("");
    }
    let p = path
        .strip_prefix(BIN_DIR)?
        .strip_prefix('/')?
        .strip_suffix(".json")?;
    let hex = p.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    (hex && !p.is_empty() && p.len() <= KEY_DIGITS).then_some(p)
}

/// Whether `path` belongs to the manifest itself (the root or anything under `manifest/`),
/// which lists no file of its own.
pub fn is_manifest_path(path: &str) -> bool {
    path == ROOT_PATH
        || path
            .strip_prefix(BIN_DIR)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The vow and page number of a vow chain page's path, `vow/<id>/chain/<k>.json` (`<k>` in
/// decimal, no leading zero); `None` for any other path.
pub fn chain_page(path: &str) -> Option<(&str, u64)> {
    let rest = path.strip_prefix("vow/")?;
    let (id, page) = rest.split_once("/chain/")?;
    let k = page.strip_suffix(".json")?;
    let digits = !k.is_empty()
        && k.len() <= 19
        && k.bytes().all(|c| c.is_ascii_digit())
        && (k == "0" || !k.starts_with('0'));
    let id_ok = !id.is_empty() && !id.contains('/');
    (digits && id_ok)
        .then(|| k.parse().ok())
        .flatten()
        .map(|k| (id, k))
}

/// The vow of a vow chain head's path, `vow/<id>/chain.json`; `None` for any other path.
pub fn chain_head(path: &str) -> Option<&str> {
    let id = path.strip_prefix("vow/")?.strip_suffix("/chain.json")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Whether the manifest lists the file at `path`: every file outside `log/` and the manifest
/// but the vow chain pages ([`chain_page`]), which their chain heads prove through their hash
/// links (library/MIRRORS.md, "What it lists").
pub fn listed(path: &str) -> bool {
    chain_page(path).is_none()
}

/// The hex digits, in order.
pub const DIGITS: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_group_a_vows_files() {
        for (p, u) in [
            ("vow/ab12/chain/3.json", "vow/ab12"),
            ("vow/ab12.json", "vow/ab12"),
            ("vow/ab12.html", "vow/ab12"),
            ("vow/ab12/feed.atom", "vow/ab12"),
            ("index.html", "index"),
            ("index.json", "index"),
            ("robots.txt", "robots"),
            ("sitemap", "sitemap"),
            (".well-known/x402.json", ".well-known/x402"),
            ("library/METER.md", "library/METER"),
            ("registry/tool/7.json", "registry/tool"),
            (".x", ".x"),
        ] {
            assert_eq!(unit(p), u, "{p}");
        }
        assert_eq!(key("vow/ab12.json"), key("vow/ab12/chain/0.json"));
        assert_ne!(key("vow/ab12.json"), key("vow/ab13.json"));
        assert_eq!(
            key("index.html"),
            "1bc04b5291c26a46d918139138b992d2de976d6851d0893b0476b85bfbdfc6e6"
        );
    }

    #[test]
    fn chain_pages_are_named_by_their_path_and_left_out() {
        assert_eq!(chain_page("vow/ab12/chain/3.json"), Some(("ab12", 3)));
        assert_eq!(chain_page("vow/ab12/chain/0.json"), Some(("ab12", 0)));
        for other in [
            "vow/ab12/chain.json",
            "vow/ab12/chain.html",
            "vow/ab12/chain/3.html",
            "vow/ab12/chain/x.json",
            "vow/ab12/chain/.json",
            "vow/ab12/chain/01.json",
            "vow//chain/1.json",
            "vow/a/b/chain/1.json",
            "vows/1.json",
            "index.json",
        ] {
            assert_eq!(chain_page(other), None, "{other}");
        }
        assert_eq!(chain_head("vow/ab12/chain.json"), Some("ab12"));
        assert_eq!(chain_head("vow/ab12/chain/1.json"), None);
        assert_eq!(chain_head("vow/a/b/chain.json"), None);
        assert!(!listed("vow/ab12/chain/3.json"));
        assert!(listed("vow/ab12/chain.json"));
        assert!(listed("vow/ab12.json"));
    }

    #[test]
    fn bin_paths_round_trip() {
        assert_eq!(bin_path(""), "manifest.json");
        assert_eq!(bin_path("a0"), "manifest/a0.json");
        for p in ["", "a", "0f3", &"f".repeat(64)] {
            assert_eq!(bin_prefix(&bin_path(p)), Some(p));
        }
        for bad in [
            "manifest/.json",
            "manifest/A.json",
            "manifest/g.json",
            "manifest/a.jso",
            "manifest/a/b.json",
            &format!("manifest/{}.json", "0".repeat(65)),
        ] {
            assert_eq!(bin_prefix(bad), None, "{bad}");
        }
        assert!(is_manifest_path("manifest.json") && is_manifest_path("manifest/x"));
        assert!(!is_manifest_path("manifests/x") && !is_manifest_path("manifest"));
    }
}
