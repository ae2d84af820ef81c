//! The live-site engine against a source of its own: after a restart catches up, the signed
//! manifest covers every file the engine wrote, derived files included.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use conduct_core::signing::ServiceKey;
use conduct_renderer::live::{Integrated, Known, LiveSite, Source};
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

    fn backlog(&mut self, _since: Option<&Integrated>) -> Result<Vec<String>, RenderError> {
        Ok(self.keys.clone())
    }
}

#[test]
fn the_manifest_covers_derived_files_written_after_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let key = ServiceKey::from_seed(&[7; 32], "test");
    let publisher = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    let source = Pages {
        key: key.clone(),
        keys: (0..40).map(|i| format!("k{i:02}")).collect(),
    };
    let site = LiveSite::start_catching_up(
        publisher,
        key.clone(),
        3600,
        vec![Box::new(source)],
        false,
        None,
        false,
    )
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

/// A source that records how many keys each round asked of it, slowly (so requests pile up
/// behind a round).
struct Counting {
    key: ServiceKey,
    rounds: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
}

impl Source for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn render_all(&mut self, _: &mut Publisher, _: u64) -> Result<(), RenderError> {
        Ok(())
    }

    fn render(
        &mut self,
        keys: &BTreeSet<String>,
        _index: bool,
        _now: u64,
        _known: &Known<'_>,
    ) -> Result<Files, RenderError> {
        self.rounds.lock().unwrap().push(keys.len());
        std::thread::sleep(Duration::from_millis(20));
        keys.iter()
            .map(|k| {
                let record = signed_bytes(&self.key, json!({"type": "test.count/v1", "key": k}))
                    .map_err(|e| RenderError::Input(e.to_string()))?;
                Ok((format!("c/{k}.json"), record))
            })
            .collect()
    }

    fn take_due(&mut self, _: u64, _: usize) -> Vec<String> {
        Vec::new()
    }

    fn next_due(&self) -> Option<u64> {
        None
    }

    fn forget(&mut self, _: &BTreeSet<String>) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_renders_a_bounded_number_of_keys_oldest_first_and_every_request_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let key = ServiceKey::from_seed(&[9; 32], "test");
    let rounds = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let source = Counting {
        key: key.clone(),
        rounds: rounds.clone(),
    };
    let publisher = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    let site = LiveSite::start(publisher, key, 3600, vec![Box::new(source)]).unwrap();
    let id = conduct_renderer::live::SourceId("counting");
    // 1,000 distinct keys and a second request for each of the first 100, all at once.
    let committed = Instant::now();
    let mut asked: Vec<_> = (0..1000)
        .map(|i| site.start_render_committed(id, &format!("k{i:04}"), false, committed))
        .collect();
    asked.extend((0..100).map(|i| site.start_render(id, &format!("k{i:04}"), false)));
    for rx in asked {
        rx.await.unwrap().unwrap();
    }
    let rounds = rounds.lock().unwrap().clone();
    assert!(rounds.iter().sum::<usize>() >= 1000, "{rounds:?}");
    assert!(
        rounds.iter().all(|n| *n <= 128),
        "a round rendered more than 128 keys: {rounds:?}"
    );
    assert!(rounds.len() >= 8, "{rounds:?}");
    for i in [0, 500, 999] {
        assert!(dir.path().join(format!("c/k{i:04}.json")).exists());
    }
    // Nothing is left waiting: no pushback once all is rendered.
    assert_eq!(site.pushback(), None);
}

/// A source whose files show the log up to 10 records, with nothing to render.
struct ShowsTen;

impl Source for ShowsTen {
    fn name(&self) -> &'static str {
        "shows-ten"
    }

    fn render_all(&mut self, _: &mut Publisher, _: u64) -> Result<(), RenderError> {
        Ok(())
    }

    fn render(
        &mut self,
        _: &BTreeSet<String>,
        _: bool,
        _: u64,
        _: &Known<'_>,
    ) -> Result<Files, RenderError> {
        Ok(Vec::new())
    }

    fn take_due(&mut self, _: u64, _: usize) -> Vec<String> {
        Vec::new()
    }

    fn next_due(&self) -> Option<u64> {
        None
    }

    fn forget(&mut self, _: &BTreeSet<String>) {}

    fn integrated(&mut self, _from: u64) -> Result<Option<u64>, RenderError> {
        Ok(Some(10))
    }
}

/// The integration mark never passes a record whose commit hook has not run yet (its pages
/// may not have been asked for), whatever the sources say their files show.
#[test]
fn the_mark_stops_where_the_commit_hooks_have_run() {
    let dir = tempfile::tempdir().unwrap();
    let (site_dir, data) = (dir.path().join("site"), dir.path().join("data"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&site_dir).unwrap();
    let key = ServiceKey::from_seed(&[7; 32], "test");
    let publisher = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(&site_dir).unwrap(),
        &Tree::default(),
    );
    let hooked = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(3));
    let marks = conduct_renderer::live::Marks {
        place: conduct_indexer::integrated::Place {
            data: data.clone(),
            render: "test".into(),
        },
        since: None,
        hooked: Some(hooked.clone()),
    };
    let _site = LiveSite::start_catching_up(
        publisher,
        key,
        3600,
        vec![Box::new(ShowsTen)],
        false,
        Some(marks),
        false,
    )
    .unwrap();
    let marked = || -> Option<u64> {
        let bytes = std::fs::read(data.join("site-integrated.json")).ok()?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        v["marks"][0]["mark"]["log_size"].as_u64()
    };
    let await_mark = |want: u64| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while marked() != Some(want) {
            assert!(
                Instant::now() < deadline,
                "the mark is {:?}, not {want}",
                marked()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    await_mark(3);
    hooked.store(10, std::sync::atomic::Ordering::Release);
    await_mark(10);
}

/// Sources are asked for by name, in any order of the list: two sources' requests reach their
/// own, a name no source has is answered with a refusal (never another source's render), and
/// two sources of one name are refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_are_wired_by_name() {
    use conduct_renderer::live::SourceId;
    let dir = tempfile::tempdir().unwrap();
    let key = ServiceKey::from_seed(&[9; 32], "test");
    let tree = conduct_indexer::tree::Dir::shared(dir.path()).unwrap();
    let counting = || Counting {
        key: key.clone(),
        rounds: Default::default(),
    };
    let pages = Pages {
        key: key.clone(),
        keys: Vec::new(),
    };
    let sources: Vec<Box<dyn Source>> = vec![Box::new(pages), Box::new(counting())];
    let publisher = Publisher::from_tree(tree.clone(), &Tree::default());
    let site = LiveSite::start(publisher, key.clone(), 3600, sources).unwrap();
    site.render(SourceId("counting"), "one", false)
        .await
        .unwrap();
    site.render(SourceId("pages"), "two", false).await.unwrap();
    assert!(dir.path().join("c/one.json").exists());
    assert!(dir.path().join("p/two.json").exists());
    assert!(!dir.path().join("c/two.json").exists());
    let refused = site.render(SourceId("nobody"), "three", false).await;
    assert_eq!(
        refused.unwrap_err().0,
        "no source is named nobody",
        "an unknown name is refused"
    );
    drop(site);

    let twice: Vec<Box<dyn Source>> = vec![Box::new(counting()), Box::new(counting())];
    let publisher = Publisher::from_tree(tree, &Tree::default());
    match LiveSite::start(publisher, key, 3600, twice) {
        Err(e) => assert!(
            e.to_string().contains("two sources are named counting"),
            "{e}"
        ),
        Ok(_) => panic!("two sources of one name started"),
    }
}
