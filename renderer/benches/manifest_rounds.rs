//! The manifest trie's signing rounds alone (no service), over 20,000 vows of 16 files
//! (320,000 files): the whole manifest signed once, then rounds of one changed vow (time and
//! bytes rewritten) and of 100, 300 and 1,000 changed vows. BENCHMARKS.md, section 11.
//!
//! `cargo bench -p conduct-renderer --bench manifest_rounds`

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use conduct_core::signing::ServiceKey;
use conduct_renderer::publish::Publisher;
use conduct_renderer::Tree;

const AS_OF: u64 = 1_800_000_000;

/// The manifest's files (root and bins) and their bytes.
fn manifest_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .ok()?
                .to_string_lossy()
                .into_owned();
            (rel == "manifest.json" || rel.starts_with("manifest/"))
                .then(|| std::fs::read(e.path()).ok().map(|b| (rel, b)))
                .flatten()
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let key = ServiceKey::from_seed(&[7; 32], "example.org/log");
    let mut p = Publisher::from_tree(
        conduct_indexer::tree::Dir::shared(dir.path()).unwrap(),
        &Tree::default(),
    );
    let mut files = Vec::new();
    for v in 0..20_000u64 {
        let id = format!("{:016x}", v.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for k in 0..16 {
            files.push((
                format!("vow/{id}/f{k}.txt"),
                format!("{v}.{k}").into_bytes(),
            ));
        }
    }
    let t = Instant::now();
    p.put_many(files.clone())?;
    let put = t.elapsed();
    let t = Instant::now();
    p.write_manifest(&key, AS_OF, 3600)?;
    println!(
        "320,000 files written in {put:?}; the whole manifest signed in {:?}",
        t.elapsed()
    );
    let before = manifest_files(dir.path());
    let mut one = Vec::new();
    for i in 0..20 {
        p.put(&files[i * 16 * 997].0, format!("changed {i}").as_bytes())?;
        let t = Instant::now();
        p.write_manifest(&key, AS_OF + 1 + i as u64, 3600)?;
        one.push(t.elapsed());
    }
    let after = manifest_files(dir.path());
    let rewritten: usize = after
        .iter()
        .filter(|(path, bytes)| before.get(*path) != Some(*bytes))
        .map(|(_, bytes)| bytes.len())
        .sum();
    one.sort();
    println!(
        "a round of one changed vow: median {:?}, max {:?}; {rewritten} bytes rewritten for 20",
        one[10], one[19]
    );
    for n in [100usize, 300, 1000] {
        for i in 0..n {
            let (path, _) = &files[(i * 16 * 19 + 3) % files.len()];
            p.put(path, format!("again {n} {i}").as_bytes())?;
        }
        let t = Instant::now();
        p.write_manifest(&key, AS_OF + 100 + n as u64, 3600)?;
        println!("a round of {n} changed vows: {:?}", t.elapsed());
    }
    Ok(())
}
