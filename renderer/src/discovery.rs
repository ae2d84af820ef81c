//! Discovery for agents: `/lost`, `/llms.txt` and the cards of `/card?key=`. (Being built.)

use conduct_core::signing::ServiceKey;
use conduct_indexer::vows::VowRow;

use crate::site::SiteInput;
use crate::RenderError;

/// /lost (.json, .txt, .html) and /llms.txt, as (relative path, bytes).
pub fn discovery_files(input: &SiteInput<'_>) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let _ = input;
    Ok(Vec::new())
}

/// Relative path stem of the card of lookup key `lookup` (no extension).
pub fn card_stem(lookup: &str) -> String {
    format!("card/{}", hex::encode(lookup.as_bytes()))
}

/// The card of lookup key `lookup` given every vow that matches it in any role.
pub fn card_files(
    key: &ServiceKey,
    public_url: &str,
    lookup: &str,
    vows: &[VowRow],
) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    let _ = (key, public_url, lookup, vows);
    Ok(Vec::new())
}
