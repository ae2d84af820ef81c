//! The quest board's keeper as a task of the running service: once a second it re-renders
//! the board when the operator edited `quests.json`, imports new rows of `paid.json`, appends the lapse of every claim idle for 14 days (at that moment, with
//! no request arriving), and every `[munus] recheck_seconds` re-reads each payment from the
//! chain; whatever changed is re-rendered ([`crate::sources::MUNUS`]). See
//! [`conduct_indexer::munus::keeper`].

use std::sync::Arc;
use std::time::Duration;

use conduct_indexer::munus::keeper::Keeper;
use conduct_renderer::live::munus::quest_key;
use conduct_renderer::live::LiveSite;

use crate::sources::{service_now, MUNUS};

/// Seconds between the keeper's rounds (a lapse is recorded at most this late).
const TICK: Duration = Duration::from_secs(1);

/// Run the keeper forever (spawned by `serve`).
pub async fn run(keeper: Arc<Keeper>, site: LiveSite, recheck_seconds: u64) {
    let mut next_recheck = 0u64;
    loop {
        let now = service_now();
        let mut changed = std::collections::BTreeSet::new();
        // Flags first: a payment not read yet blocks its quest's lapse (it may be settled).
        if now >= next_recheck {
            match keeper.recheck_flags().await {
                Ok(c) => changed.extend(c),
                Err(e) => tracing::warn!(error = %e, "re-reading payments failed; retried"),
            }
            next_recheck = service_now() + recheck_seconds;
        }
        match keeper.import_paid(now).await {
            Ok(c) => changed.extend(c),
            Err(e) => tracing::warn!(error = %e, "importing paid.json failed; retried"),
        }
        match keeper.append_due_lapses(now, None).await {
            Ok(c) => changed.extend(c),
            Err(e) => tracing::warn!(error = %e, "recording a lapsed claim failed; retried"),
        }
        // The operator edited the quest file: every quest it names, and the list.
        if let Some(edited) = keeper.quests_changed() {
            drop(site.start_render(MUNUS, "", true));
            changed.extend(edited);
        }
        for id in &changed {
            drop(site.start_render(MUNUS, &quest_key(id), true));
        }
        tokio::time::sleep(TICK).await;
    }
}
