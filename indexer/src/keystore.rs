//! The service signing key on disk: `<data>/keys/ed25519.seed`, base64 of the 32-byte Ed25519
//! seed, file mode 0600 in a 0700 directory. Generated from the OS RNG on first start. The
//! seed is never logged or served.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use conduct_core::signing::ServiceKey;

/// Why the key could not be loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Filesystem trouble.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The key file exists but is not a base64 32-byte seed.
    #[error("{0}: not a base64-encoded 32-byte Ed25519 seed")]
    Malformed(PathBuf),
    /// The key file is readable by group or others.
    #[error("{path}: permissions {mode:o} are too open; run `chmod 600 {path}`")]
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The OS random source failed.
    #[error("OS random source failed: {0}")]
    Random(String),
}

/// Path of the key file inside a data directory.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join("keys").join("ed25519.seed")
}

/// Path of the file that fixes the log origin (the key's name) at first start.
pub fn origin_path(data_dir: &Path) -> PathBuf {
    data_dir.join("keys").join("origin")
}

/// Load the service key from `data_dir`, creating it if absent.
///
/// The key's name is the log origin, fixed when the key is first created (`keys/origin`): a
/// log's origin never changes, whatever address the service is later reached at. `name` is
/// the origin to fix when there is none yet. Returns the key and whether it was created now.
pub fn load_or_create(data_dir: &Path, name: &str) -> Result<(ServiceKey, bool), KeyError> {
    let origin_file = origin_path(data_dir);
    let fixed = match fs::read_to_string(&origin_file) {
        Ok(s) if !s.trim().is_empty() => s.trim().to_owned(),
        Ok(_) => name.to_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => name.to_owned(),
        Err(source) => {
            return Err(KeyError::Io {
                path: origin_file,
                source,
            })
        }
    };
    let (key, created) = load_or_create_seed(data_dir, &fixed)?;
    if !origin_file.exists() {
        crate::durable::write_atomic(&origin_file, format!("{fixed}\n").as_bytes(), 0o600)
            .map_err(|source| KeyError::Io {
                path: origin_file.clone(),
                source,
            })?;
    }
    Ok((key, created))
}

fn load_or_create_seed(data_dir: &Path, name: &str) -> Result<(ServiceKey, bool), KeyError> {
    let path = key_path(data_dir);
    let io_err = |p: &Path| {
        let p = p.to_path_buf();
        move |source| KeyError::Io { path: p, source }
    };
    match fs::read(&path) {
        Ok(bytes) => {
            check_mode(&path)?;
            let text = String::from_utf8(bytes).map_err(|_| KeyError::Malformed(path.clone()))?;
            let seed = B64
                .decode(text.trim())
                .ok()
                .and_then(|v| <[u8; 32]>::try_from(v).ok())
                .ok_or_else(|| KeyError::Malformed(path.clone()))?;
            Ok((ServiceKey::from_seed(&seed, name), false))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut seed = [0u8; 32];
            getrandom::getrandom(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
            let dir = path.parent().unwrap_or(data_dir);
            fs::create_dir_all(dir).map_err(io_err(dir))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io_err(dir))?;
            }
            let text = format!("{}\n", B64.encode(seed));
            crate::durable::write_atomic(&path, text.as_bytes(), 0o600).map_err(io_err(&path))?;
            Ok((ServiceKey::from_seed(&seed, name), true))
        }
        Err(e) => Err(KeyError::Io { path, source: e }),
    }
}

fn check_mode(path: &Path) -> Result<(), KeyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = fs::metadata(path).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::TooOpen {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_once_with_mode_0600_then_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let (k1, created) = load_or_create(dir.path(), "localhost:8402/log").unwrap();
        assert!(created);
        let (k2, created) = load_or_create(dir.path(), "localhost:8402/log").unwrap();
        assert!(!created);
        assert_eq!(k1.public_b64(), k2.public_b64());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(key_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn refuses_open_permissions_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let p = key_path(dir.path());
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        crate::durable::write_atomic(&p, b"not a key", 0o600).unwrap();
        assert!(matches!(
            load_or_create(dir.path(), "x"),
            Err(KeyError::Malformed(_))
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
            assert!(matches!(
                load_or_create(dir.path(), "x"),
                Err(KeyError::TooOpen { .. })
            ));
        }
    }
}
