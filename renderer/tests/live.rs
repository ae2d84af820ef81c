//! The live-site engine against a source of its own: after a restart catches up, the signed
//! manifest covers every file the engine wrote, derived files included.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use conduct_renderer::live::{Known, LiveSite, Source};
use conduct_renderer::publish::Publisher;
use conduct_renderer::snapshot::signed_bytes;
use conduct_renderer::vows::Files;
use conduct_renderer::{RenderError, Tree};
use serde_json::json;

/// Derived pages per key: enough that writing them outlasts signing the manifest.
const PAGES_PER_KEY: usize = 200;

/// A source whose every key is one signed record and many derived pages.
struct Pages {
    key: ServiceKey,
    keys: Vec<String>,
}

impl Source for Pages {
    fn name(&self) -> &'static str {
        "pages"
    }

    fn render_all(&mut self, _: &mut Publisher, _: u64) -> Result<(), RenderError> {
        Ok(())
    }

    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        _index: bool,
        now: u64,
        _known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        let mut files = Vec::new();
        for k in keys {
            let record = signed_bytes(&self.key, json!({"type": "test.page/v1", "key": k}))
                .map_err(|e| RenderError::Input(e.to_string()))?;
            files.push((format!("p/{k}.json"), record));
            for i in 0..PAGES_PER_KEY {
                let page = format!("<p>{k} page {i} at {now}</p>{}", "x".repeat(2048));
                files.push((format!("p/{k}/{i}.html"), page.into_bytes()));
            }
        }
        Ok(files)
    }

    fn take_due(&mut self, _: u64, _: usize) -> Vec<String> {
        Vec::new()
    }

    fn next_due(&self) -> Option<u64> {
        None
    }

    fn forget(&mut self, _: &BTreeSet<String>) {}

    fn backlog(&mut self) -> Result<Vec<String>, RenderError> {
        Ok(self.keys.clone())
    }
}

#[test]
fn the_manifest_covers_derived_files_written_after_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let key = ServiceKey::from_seed(&[7; 32], "test");
    let publisher = Publisher::from_tree(dir.path(), &Tree::default());
    let source = Pages {
        key: key.clone(),
        keys: (0..40).map(|i| format!("k{i:02}")).collect(),
    };
    let site =
        LiveSite::start_catching_up(publisher, key.clone(), 3600, vec![Box::new(source)], false)
            .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while site.catching_up() > 0 {
        assert!(Instant::now() < deadline, "the backlog never caught up");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The manifest is re-signed at most a second after the last write.
    let vkey = key.vkey();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        match conduct_verify::verify_tree(dir.path(), Some(dir.path()), &vkey, now) {
            Ok(audit) => {
                assert_eq!(audit.listed, 40 * (PAGES_PER_KEY + 1));
                break;
            }
            Err(e) => assert!(
                Instant::now() < deadline,
                "the manifest never covered the tree: {e}"
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(site);
}
