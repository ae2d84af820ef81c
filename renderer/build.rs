//! Embeds every `library/*.md` document into the binary, so `conduct serve` publishes the
//! library with no files beside it.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let lib = root.join("../library");
    println!("cargo:rerun-if-changed={}", lib.display());
    let mut names: Vec<String> = std::fs::read_dir(&lib)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".md"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out =
        String::from("/// Library documents embedded at build time: (file name, markdown).\n");
    out.push_str("pub const LIBRARY: &[(&str, &str)] = &[\n");
    for n in &names {
        let p = lib.join(n);
        println!("cargo:rerun-if-changed={}", p.display());
        let _ = writeln!(
            out,
            "    ({n:?}, include_str!({:?})),",
            p.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("library_docs.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}
