//! Replacing a vow's pages two ways on one tree (BENCHMARKS.md section 14): by a temporary
//! renamed over each file (`durable::replace_atomic`, which creates an inode and frees one),
//! and through the pool of spare inodes (`spares::Spares`, an exchange with a rested inode).
//!
//! The tree holds `VOWS` vow directories of seven files each (the sizes of a vow of ten
//! records: page, chain head, reading, their HTML twins, the feed). Each round replaces the
//! seven files of a vow drawn at random with bytes of about the same size; the two ways
//! alternate, three rounds of `SECONDS` each, after a warm-up of each. Printed: replacements a
//! second and the process's CPU (user + system) per replacement. The tree is on the file system
//! of `DIR` (default: a temporary directory), which is what is measured.
//!
//! `cargo bench -p conduct-indexer --bench replace -- [DIR] [VOWS] [SECONDS]`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use conduct_indexer::durable::replace_atomic;
use conduct_indexer::tree::dir::spares::Spares;

const FILES: [(&str, usize); 7] = [
    ("page.json", 9_000),
    ("page.html", 12_000),
    ("chain.json", 6_000),
    ("chain.html", 7_000),
    ("reading.json", 5_000),
    ("reading.html", 8_000),
    ("feed.atom", 4_000),
];

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let r = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(r.ru_utime) + t(r.ru_stime)
}

/// Replace random vows' files for `secs` with `replace`; (replacements/s, CPU µs each).
fn run(
    root: &Path,
    vows: usize,
    secs: f64,
    seed: &mut u64,
    replace: &dyn Fn(&Path, &[u8]) -> std::io::Result<()>,
) -> (f64, f64) {
    let bytes = vec![b'x'; 16_000];
    let (t0, c0) = (Instant::now(), cpu_seconds());
    let mut n = 0u64;
    while t0.elapsed() < Duration::from_secs_f64(secs) {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let dir = root.join(format!("vow/{}", *seed as usize % vows));
        for (name, size) in FILES {
            let size = size + (*seed as usize % 512);
            replace(&dir.join(name), &bytes[..size]).expect("replace");
            n += 1;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    (n as f64 / secs, (cpu_seconds() - c0) / n as f64 * 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let held = tempfile::tempdir().expect("temporary directory");
    let base = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| held.path().to_path_buf());
    let vows: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let secs: f64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(5.0);
    let root = base.join("site");
    let bytes = vec![b'x'; 16_000];
    for v in 0..vows {
        let dir = root.join(format!("vow/{v}"));
        std::fs::create_dir_all(&dir).expect("tree");
        for (name, size) in FILES {
            std::fs::write(dir.join(name), &bytes[..size]).expect("tree");
        }
    }
    let spares = Spares::open(&base.join("spares"))
        .expect("spare pool")
        .expect("the pool is this process's");
    let rename = |p: &Path, b: &[u8]| replace_atomic(p, b, 0o644, "bench");
    let exchange = |p: &Path, b: &[u8]| spares.replace(p, b, 0o644, "bench");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    println!(
        "{} vows of {} files under {}",
        vows,
        FILES.len(),
        base.display()
    );
    run(&root, vows, 2.0, &mut seed, &rename);
    run(&root, vows, 2.0, &mut seed, &exchange);
    for round in 1..=3 {
        let (r, rc) = run(&root, vows, secs, &mut seed, &rename);
        let (e, ec) = run(&root, vows, secs, &mut seed, &exchange);
        println!(
            "round {round}: rename {r:.0}/s, {rc:.1} us CPU each; spares {e:.0}/s, {ec:.1} us CPU each ({:.2}x less CPU)",
            rc / ec
        );
    }
    let (n, bytes) = spares.resting();
    println!("spares resting at the end: {n} ({bytes} bytes)");
}
