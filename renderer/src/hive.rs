//! `/hive/profile` and `/hive/mark.svg`: the service's Nostr profile (library/NOSTR.md), written at
//! startup (`conduct serve`, `conduct render`) beside the static pages.
//!
//! `hive/profile.json` is the canonical kind-0 event exactly as NIP-01 defines it (`id`,
//! `pubkey`, `created_at`, `kind`, `tags`, `content`, `sig`, compact JSON and a newline): no
//! member is added, so it carries no Ed25519 `signature` of the service like the tree's other
//! JSON files. It is authenticated by its own BIP-340 signature and, like every file, pinned by
//! hash in the signed manifest (`verify-site` checks both). Its content's `picture` is
//! `<public_url>/hive/mark.svg`, the service's mark ([`crate::mark`]) drawn from its Ed25519 key
//! id. The event is signed by the indexer (`conduct_indexer::nostr`), which holds the key.

use conduct_core::nostr::Event;

use crate::mark::mark_svg;
use crate::vows::Files;

/// Path of the profile event in the tree.
pub const PROFILE_PATH: &str = "hive/profile.json";
/// Path of the service's mark in the tree.
pub const MARK_PATH: &str = "hive/mark.svg";

/// The hive files: the signed kind-0 `event` and the mark of the service's key id `key_id`.
pub fn hive_files(event: &Event, key_id: &str) -> Files {
    // Serialized from the struct: members in NIP-01's order.
    let mut profile = serde_json::to_vec(event).unwrap_or_default();
    profile.push(b'\n');
    vec![
        (PROFILE_PATH.to_owned(), profile),
        (MARK_PATH.to_owned(), mark_svg(key_id).into_bytes()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_file_is_the_event_alone() {
        let ev = Event::sign(&[3; 32], 1, 0, Vec::new(), "{}".into(), &[0; 32]).unwrap();
        let files = hive_files(&ev, "1a2b3c4d");
        let v: serde_json::Value = serde_json::from_slice(&files[0].1).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 7);
        let back: Event = serde_json::from_value(v).unwrap();
        back.verify().unwrap();
        assert_eq!(files[1].1, mark_svg("1a2b3c4d").into_bytes());
    }
}
