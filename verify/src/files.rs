//! Where the files to verify come from: a directory ([`Path`]), an http(s) base URL
//! ([`HttpFiles`], with the `http` feature), or your own [`Files`].

use std::io::Read;
use std::path::Path;

use crate::Error;

/// A source of files addressed by relative paths with `/` separators (`checkpoint`,
/// `tile/0/000`, `vow/abc.json`).
pub trait Files {
    /// The bytes of the file at `rel`.
    fn read(&self, rel: &str) -> Result<Vec<u8>, Error>;

    /// The file at `rel` as a stream, for files read without holding them (the manifest, a
    /// listed file being hashed). By default, [`Files::read`]'s bytes.
    fn reader(&self, rel: &str) -> Result<Box<dyn Read + '_>, Error> {
        Ok(Box::new(std::io::Cursor::new(self.read(rel)?)))
    }
}

impl Files for Path {
    fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        std::fs::read(self.join(rel)).map_err(|source| Error::Read {
            path: rel.to_owned(),
            source,
        })
    }

    fn reader(&self, rel: &str) -> Result<Box<dyn Read + '_>, Error> {
        let file = std::fs::File::open(self.join(rel)).map_err(|source| Error::Read {
            path: rel.to_owned(),
            source,
        })?;
        Ok(Box::new(file))
    }
}

/// Whether `location` is an `http://` or `https://` URL (otherwise it is a directory).
pub fn is_url(location: &str) -> bool {
    location.starts_with("http://") || location.starts_with("https://")
}

#[cfg(feature = "http")]
pub use http::HttpFiles;

#[cfg(feature = "http")]
mod http {
    use std::time::Duration;

    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

    use super::Files;
    use crate::Error;

    /// Characters escaped in a URL path segment (the server percent-decodes request paths).
    const SEGMENT: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'`')
        .add(b'{')
        .add(b'}')
        .add(b'\\')
        .add(b'^')
        .add(b'|')
        .add(b'[')
        .add(b']');

    /// `rel` with each path segment percent-encoded.
    pub(crate) fn encode_path(rel: &str) -> String {
        let segments: Vec<String> = rel
            .split('/')
            .map(|s| utf8_percent_encode(s, SEGMENT).to_string())
            .collect();
        segments.join("/")
    }

    /// Files served over HTTP(S) under a base URL, each fetched by its exact, percent-encoded
    /// path. Redirects are not followed (a mirror serves its files where they are); each
    /// request may take 30 s at most; proxies are taken from the environment.
    pub struct HttpFiles {
        base: String,
        agent: ureq::Agent,
    }

    impl HttpFiles {
        /// Files under `base` (e.g. `https://example.org` or `http://localhost:8402/log`).
        pub fn new(base: &str) -> Self {
            let agent = ureq::Agent::config_builder()
                .max_redirects(0)
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(30)))
                .build()
                .into();
            HttpFiles {
                base: base.trim_end_matches('/').to_owned(),
                agent,
            }
        }
    }

    impl HttpFiles {
        /// The answer to `GET base/rel`, when it is a success.
        fn get(&self, rel: &str) -> Result<(String, ureq::http::Response<ureq::Body>), Error> {
            let url = format!("{}/{}", self.base, encode_path(rel));
            let resp = self.agent.get(&url).call().map_err(|e| Error::Fetch {
                url: url.clone(),
                reason: e.to_string(),
            })?;
            if !resp.status().is_success() {
                let reason = format!("HTTP {}", resp.status());
                return Err(Error::Fetch { url, reason });
            }
            Ok((url, resp))
        }
    }

    impl Files for HttpFiles {
        fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
            let (url, mut resp) = self.get(rel)?;
            resp.body_mut()
                .with_config()
                .read_to_vec()
                .map_err(|e| Error::Fetch {
                    url,
                    reason: e.to_string(),
                })
        }

        fn reader(&self, rel: &str) -> Result<Box<dyn std::io::Read + '_>, Error> {
            let (_, resp) = self.get(rel)?;
            Ok(Box::new(resp.into_body().into_reader()))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::encode_path;

        #[test]
        fn url_paths_are_percent_encoded_by_segment() {
            assert_eq!(encode_path("a b?#%.json"), "a%20b%3F%23%25.json");
            assert_eq!(encode_path("vow/vow-1_x.json"), "vow/vow-1_x.json");
            assert_eq!(encode_path("tile/0/000.p/70"), "tile/0/000.p/70");
        }
    }
}

/// Open `location`: a URL is read over HTTP, anything else as a directory.
pub(crate) fn open(location: &str) -> Result<Box<dyn Files>, Error> {
    if is_url(location) {
        #[cfg(feature = "http")]
        return Ok(Box::new(HttpFiles::new(location)));
        #[cfg(not(feature = "http"))]
        return Err(Error::NoHttp {
            url: location.to_owned(),
        });
    }
    Ok(Box::new(Path::new(location).to_path_buf()))
}

impl Files for std::path::PathBuf {
    fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        self.as_path().read(rel)
    }

    fn reader(&self, rel: &str) -> Result<Box<dyn Read + '_>, Error> {
        self.as_path().reader(rel)
    }
}

impl<F: Files + ?Sized> Files for Box<F> {
    fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        (**self).read(rel)
    }

    fn reader(&self, rel: &str) -> Result<Box<dyn Read + '_>, Error> {
        (**self).reader(rel)
    }
}

impl<F: Files + ?Sized> Files for &F {
    fn read(&self, rel: &str) -> Result<Vec<u8>, Error> {
        (**self).read(rel)
    }

    fn reader(&self, rel: &str) -> Result<Box<dyn Read + '_>, Error> {
        (**self).reader(rel)
    }
}
