//! The offline checks: `conduct verify` (a signed object), `verify-log` (a copy of the log),
//! `verify-site` (a mirror of the tree) and `manifest-hash`, through conduct-verify and core.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use conduct_indexer::tree::SharedTree;
use conduct_verify::Error as VerifyError;

/// `conduct verify FILE --pubkey [--trace TRACE]`: exit 0 only when the signed object
/// verifies (and, with a trace, when it is an attestation of that trace whose numbers are
/// what its meter gives).
pub fn verify(
    file: PathBuf,
    pubkey: String,
    trace: Option<PathBuf>,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let bytes = read_input(&file)?;
    let pinned = match conduct_verify::pinned_key(&pubkey) {
        Ok(k) => k,
        Err(VerifyError::PinnedKey(e)) => return Err(e.into()),
        Err(e) => return Err(e.to_string().into()),
    };
    let checked = match &trace {
        None => conduct_verify::verify_signed(&bytes, &pinned),
        Some(_) => conduct_verify::verify_attestation(&bytes, &pinned),
    };
    match checked {
        Ok(doc) => {
            println!("OK: signature verifies");
            if let Some(t) = trace {
                let trace_bytes = read_input(&t)?;
                match conduct_verify::verify_measurement(&doc, &trace_bytes) {
                    Ok(m) => println!(
                        "OK: {} recomputed from {}: {} of {} quantities as attested",
                        m.meter,
                        t.display(),
                        m.checked,
                        m.checked
                    ),
                    Err(e) => {
                        println!("FAIL: {e}");
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(VerifyError::NotJson { source, .. }) => {
            Err(format!("{}: not JSON: {source}", file.display()).into())
        }
        Err(VerifyError::Signature { source, .. }) => {
            println!("FAIL: {source}");
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            println!("FAIL: {}", failure(&e));
            Ok(ExitCode::from(1))
        }
    }
}

/// `conduct verify-log LOCATION --pubkey`: exit 0 only when the whole log verifies. A
/// location `s3://bucket/prefix` is read from the bucket with the standard AWS environment's
/// endpoint and credentials.
pub fn verify_log(location: &str, pubkey: &str) -> ExitCode {
    let checked = match in_bucket(location) {
        Some(tree) => tree.and_then(|t| conduct_verify::verify_log(&TreeFiles::new(t, ""), pubkey)),
        None => conduct_verify::verify_log_at(location, pubkey),
    };
    match checked {
        Ok(a) => {
            println!("OK: {a}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAIL: {}", failure(&e));
            ExitCode::from(1)
        }
    }
}

/// `conduct verify-site LOCATION --pubkey [--settle S]`: exit 0 only when the whole tree
/// verifies. A location `s3://bucket/prefix` is read from the bucket (as `verify-log` reads
/// it), with the checks a reader without a listing makes (a URL's).
pub fn verify_site(location: &str, pubkey: &str, settle: u64) -> ExitCode {
    let settle = std::time::Duration::from_secs(settle);
    let checked = match in_bucket(location) {
        Some(tree) => tree.and_then(|t| {
            let (site, log) = (TreeFiles::new(t.clone(), ""), TreeFiles::new(t, "log/"));
            conduct_verify::verify_site_files(&site, &log, pubkey, settle)
        }),
        None => conduct_verify::verify_site_settled(location, pubkey, settle),
    };
    match checked {
        Ok(a) => {
            println!("OK: {a}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAIL: {}", failure(&e));
            ExitCode::from(1)
        }
    }
}

/// `conduct manifest-hash FILE`: the ERC-8257 `manifestHash` of a tool manifest; exit 1 when a
/// rule it checks refuses it.
pub fn manifest_hash(file: &Path) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let bytes = read_input(file)?;
    match conduct_core::erc8257::manifest_hash(&bytes) {
        Ok(hash) => {
            println!("0x{}", hex::encode(hash));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("conduct: {}: {e}", file.display());
            Ok(ExitCode::from(1))
        }
    }
}

/// The bytes of `file`, or of standard input for "-".
fn read_input(file: &std::path::Path) -> Result<Vec<u8>, String> {
    if file.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
            .map_err(|e| format!("stdin: {e}"))?;
        Ok(v)
    } else {
        std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))
    }
}

/// A verification failure as the `verify*` commands print it: the pinned key is named by its
/// flag, `--pubkey`.
fn failure(e: &VerifyError) -> String {
    match e {
        VerifyError::PinnedKey(e) => format!("--pubkey: {e}"),
        VerifyError::Log(e) => format!("log: {}", failure(e)),
        e => e.to_string(),
    }
}

/// The tree at `location` when it names a bucket (`s3://...`), opened through the Tree seam;
/// `None` for a directory or a URL.
fn in_bucket(location: &str) -> Option<Result<SharedTree, VerifyError>> {
    location.starts_with("s3://").then(|| {
        conduct_indexer::tree::open(location.trim_end_matches('/'), None).map_err(|source| {
            VerifyError::Read {
                path: location.to_owned(),
                source,
            }
        })
    })
}

/// The files of a tree under `under` (`""`, or `log/`), read through the Tree seam.
struct TreeFiles {
    tree: SharedTree,
    under: &'static str,
}

impl TreeFiles {
    fn new(tree: SharedTree, under: &'static str) -> TreeFiles {
        TreeFiles { tree, under }
    }
}

impl conduct_verify::Files for TreeFiles {
    fn read(&self, rel: &str) -> Result<Vec<u8>, VerifyError> {
        let path = format!("{}{rel}", self.under);
        let read = |source| VerifyError::Read {
            path: path.clone(),
            source,
        };
        match self.tree.get(&path) {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(read(std::io::ErrorKind::NotFound.into())),
            Err(e) => Err(read(e)),
        }
    }
}
