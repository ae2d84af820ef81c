//! The tree in an S3-compatible bucket (`site = "s3://bucket/prefix"`), through Apache Arrow's
//! `object_store` client: SigV4, bounded retries, and the standard AWS environment for the
//! endpoint, region and credentials (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint).
//!
//! A PUT is whole and durable once the server answers it, so every put is synced and the
//! barrier is free. Each object carries its `Content-Type` and `Cache-Control`
//! ([`super::content_type`], [`super::cache_control`]). Nothing here relies on conditional
//! writes (the S3-compatible servers that install here do not make them atomic): a put is
//! safe to repeat, and the order of publication is the callers'. A crash leaves nothing to
//! repair: an object that was not put whole is not there.
//!
//! The client is async; this backend runs it on a small runtime of its own and blocks the
//! caller until the answer, so it may be called from any thread (async callers use a blocking
//! thread, as for the directory).

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as Key;
use object_store::{
    Attribute, Attributes, ClientOptions, ObjectStore, ObjectStoreExt, PutOptions, PutPayload,
    RetryConfig,
};

use super::{cache_control, check_path, content_type, Children, Listed, Put, Tree, Warm};

mod warmed;

/// How long one request may take, and how long retries may go on, before the call fails
/// (the caller answers 503 and publication catches up later): a down bucket must not hold a
/// writer for the client's default of minutes.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const RETRY_FOR: Duration = Duration::from_secs(15);
/// Requests a [`Tree::put_many`] or a [`Tree::warm`] has in flight at once.
const IN_FLIGHT: usize = 32;

/// A tree in a bucket, under a prefix.
pub struct Bucket {
    store: Arc<AmazonS3>,
    bucket: String,
    /// The key prefix, without slashes at either end (empty: the bucket's root).
    prefix: String,
    endpoint: String,
    /// Where the client's futures run; taken (and shut down in the background) on drop, so
    /// a bucket may be dropped inside another runtime.
    runtime: Option<tokio::runtime::Runtime>,
    /// What the last warmings fetched, for the reads that follow.
    warmed: warmed::Warmed,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Drop for Bucket {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl Bucket {
    /// The bucket `bucket[/prefix]` (what follows `s3://`), its endpoint, region and
    /// credentials from the standard AWS environment.
    pub fn from_env(location: &str) -> io::Result<Bucket> {
        Bucket::open(
            location,
            std::env::vars().filter(|(k, _)| k.starts_with("AWS_")),
        )
    }

    /// [`Self::from_env`] with the AWS settings given (`AWS_ENDPOINT_URL`, ...) instead of
    /// read from the environment; names the client does not know are ignored.
    pub fn open(
        location: &str,
        aws: impl IntoIterator<Item = (String, String)>,
    ) -> io::Result<Bucket> {
        let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
        let prefix = prefix.trim_matches('/');
        if bucket.is_empty() {
            return Err(invalid(format!("site: no bucket in s3://{location}")));
        }
        if !prefix.is_empty() {
            check_path(prefix).map_err(|_| invalid(format!("site: bad prefix {prefix:?}")))?;
        }
        // The client's TLS needs a process-wide provider (see Cargo.toml); one installed
        // already stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = ClientOptions::new()
            .with_timeout(REQUEST_TIMEOUT)
            .with_connect_timeout(CONNECT_TIMEOUT);
        let retry = RetryConfig {
            max_retries: 3,
            retry_timeout: RETRY_FOR,
            ..RetryConfig::default()
        };
        // The client options first: setting them replaces those the AWS settings give
        // (`AWS_ALLOW_HTTP`).
        let mut builder = AmazonS3Builder::new()
            .with_client_options(client)
            .with_retry(retry);
        for (name, value) in aws {
            if let Ok(key) = name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                builder = builder.with_config(key, value);
            }
        }
        let builder = builder.with_bucket_name(bucket);
        let endpoint = builder
            .get_config_value(&AmazonS3ConfigKey::Endpoint)
            .unwrap_or_else(|| "aws".into());
        let store = builder
            .build()
            .map_err(|e| invalid(format!("site: s3://{location}: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tree-s3")
            .enable_all()
            .build()?;
        Ok(Bucket {
            store: Arc::new(store),
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            endpoint,
            runtime: Some(runtime),
            warmed: warmed::Warmed::default(),
        })
    }

    /// The key, payload and options of a put of `bytes` at `path`: its own `Content-Type` and
    /// `Cache-Control`.
    fn object(
        &self,
        path: &str,
        bytes: &[u8],
        how: Put,
    ) -> io::Result<(Key, PutPayload, PutOptions)> {
        let key = self.key(path)?;
        let mut attributes = Attributes::new();
        attributes.insert(Attribute::ContentType, content_type(path).into());
        attributes.insert(
            Attribute::CacheControl,
            cache_control(how.for_path(path).immutable).into(),
        );
        let opts = PutOptions {
            attributes,
            ..PutOptions::default()
        };
        Ok((key, PutPayload::from(bytes.to_vec()), opts))
    }

    fn key(&self, path: &str) -> io::Result<Key> {
        check_path(path)?;
        let full = if self.prefix.is_empty() {
            path.to_owned()
        } else {
            format!("{}/{path}", self.prefix)
        };
        Key::parse(full).map_err(|e| invalid(format!("{path:?}: {e}")))
    }

    /// The tree path of a key under the prefix.
    fn path_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        if self.prefix.is_empty() {
            Some(key)
        } else {
            key.strip_prefix(self.prefix.as_str())?.strip_prefix('/')
        }
    }

    /// The key of the directory `dir` of the tree (`""`: its top), `None` for the bucket's
    /// root.
    fn dir_key(&self, dir: &str) -> io::Result<Option<Key>> {
        match (self.prefix.is_empty(), dir.is_empty()) {
            (true, true) => Ok(None),
            (false, true) => Key::parse(&self.prefix)
                .map(Some)
                .map_err(|e| invalid(e.to_string())),
            _ => self.key(dir).map(Some),
        }
    }

    /// What a listing says of an object under the prefix; `None` for one outside it.
    fn listed(&self, m: &object_store::ObjectMeta) -> Option<Listed> {
        Some(Listed {
            path: self.path_of(m.location.as_ref())?.to_owned(),
            len: m.size,
            modified: modified(m),
        })
    }

    /// Run `fut` on the bucket's runtime and wait for it on this thread.
    fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> io::Result<Result<T, object_store::Error>> {
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| io::Error::other("the bucket's runtime is gone"))?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| io::Error::other("the bucket's request was dropped"))
    }
}

/// An `object_store` error as an `io::Error` of the nearest kind.
fn io_error(e: object_store::Error) -> io::Error {
    use object_store::Error as E;
    let kind = match &e {
        E::NotFound { .. } => io::ErrorKind::NotFound,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
        E::InvalidPath { .. } => io::ErrorKind::InvalidInput,
        _ => io::ErrorKind::Other,
    };
    // The client's own message leaves out the causes (a refused connection, a timeout).
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let said = c.to_string();
        if !message.contains(&said) {
            message = format!("{message}: {said}");
        }
        cause = c.source();
    }
    io::Error::new(kind, message)
}

/// `Ok(None)` for a missing object.
fn found<T>(r: Result<T, object_store::Error>) -> io::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(io_error(e)),
    }
}

fn modified(meta: &object_store::ObjectMeta) -> SystemTime {
    SystemTime::from(meta.last_modified)
}

impl Tree for Bucket {
    fn put(&self, path: &str, bytes: &[u8], how: Put) -> io::Result<()> {
        self.warmed.written(path);
        let (key, payload, opts) = self.object(path, bytes, how)?;
        let store = self.store.clone();
        self.run(async move { store.put_opts(&key, payload, opts).await })?
            .map(|_| ())
            .map_err(io_error)
    }

    /// Up to [`IN_FLIGHT`] puts at once.
    fn put_many(&self, puts: &[(&str, &[u8], Put)]) -> Vec<io::Result<()>> {
        let objects: Vec<_> = puts
            .iter()
            .map(|(path, bytes, how)| {
                self.warmed.written(path);
                self.object(path, bytes, *how)
            })
            .collect();
        let store = self.store.clone();
        let sent = self.run(async move {
            let answers = futures_util::stream::iter(objects)
                .map(|object| {
                    let store = store.clone();
                    async move {
                        let (key, payload, opts) = object?;
                        store
                            .put_opts(&key, payload, opts)
                            .await
                            .map(|_| ())
                            .map_err(io_error)
                    }
                })
                .buffered(IN_FLIGHT)
                .collect::<Vec<io::Result<()>>>()
                .await;
            Ok(answers)
        });
        let failed = |e: io::Error| -> Vec<io::Result<()>> {
            let (kind, said) = (e.kind(), e.to_string());
            puts.iter()
                .map(|_| Err(io::Error::new(kind, said.clone())))
                .collect()
        };
        match sent {
            Ok(Ok(answers)) => answers,
            Ok(Err(e)) => failed(io_error(e)),
            Err(e) => failed(e),
        }
    }

    fn get(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        if let Some(warmed) = self.warmed.take(path) {
            return Ok(warmed);
        }
        let key = self.key(path)?;
        let store = self.store.clone();
        let got = self.run(async move {
            match store.get(&key).await {
                Ok(r) => r.bytes().await,
                Err(e) => Err(e),
            }
        })?;
        Ok(found(got)?.map(|b| b.to_vec()))
    }

    fn head(&self, path: &str) -> io::Result<Option<Listed>> {
        if let Some(warmed) = self.warmed.peek(path) {
            return Ok(warmed.map(|(len, modified)| Listed {
                path: path.to_owned(),
                len,
                modified,
            }));
        }
        let key = self.key(path)?;
        let store = self.store.clone();
        let meta = found(self.run(async move { store.head(&key).await })?)?;
        Ok(meta.map(|m| Listed {
            path: path.to_owned(),
            len: m.size,
            modified: modified(&m),
        }))
    }

    fn delete(&self, path: &str) -> io::Result<bool> {
        // S3 answers a delete of a missing key with success: ask first, so the answer says
        // whether there was one (a race with another deleter only changes that answer).
        self.warmed.written(path);
        if self.head(path)?.is_none() {
            return Ok(false);
        }
        let key = self.key(path)?;
        let store = self.store.clone();
        Ok(found(self.run(async move { store.delete(&key).await })?)?.is_some())
    }

    fn list(&self, prefix: &str) -> io::Result<Vec<Listed>> {
        // The client lists by whole segments: list the deepest directory the prefix names
        // whole, and filter by the rest.
        let base = prefix.rfind('/').map_or("", |i| &prefix[..i]);
        let under = self.dir_key(base)?;
        let store = self.store.clone();
        let metas = self.run(async move {
            let mut stream = store.list(under.as_ref());
            let mut out = Vec::new();
            while let Some(m) = stream.next().await {
                out.push(m?);
            }
            Ok(out)
        })?;
        Ok((metas.map_err(io_error)?.iter())
            .filter_map(|m| self.listed(m))
            .filter(|l| l.path.starts_with(prefix))
            .collect())
    }

    fn children(&self, dir: &str) -> io::Result<Children> {
        let under = self.dir_key(dir)?;
        let store = self.store.clone();
        let listed = self.run(async move { store.list_with_delimiter(under.as_ref()).await })?;
        let listed = listed.map_err(io_error)?;
        Ok(Children {
            files: listed
                .objects
                .iter()
                .filter_map(|m| self.listed(m))
                .collect(),
            dirs: (listed.common_prefixes.iter())
                .filter_map(|p| Some(self.path_of(p.as_ref())?.to_owned()))
                .collect(),
        })
    }

    /// Fetch every path, [`IN_FLIGHT`] at once, for the heads and reads that follow
    /// (`warmed.rs`): a page whose inode a directory would warm is small, and its head costs a
    /// round trip all the same.
    fn warm(&self, paths: &[(String, Warm)]) -> usize {
        let wanted: Vec<(String, Key)> = paths
            .iter()
            .filter_map(|(p, _)| Some((p.clone(), self.key(p).ok()?)))
            .collect();
        if wanted.is_empty() {
            return 0;
        }
        self.warmed.start();
        let store = self.store.clone();
        let fetched = self.run(async move {
            let got = futures_util::stream::iter(wanted)
                .map(|(path, key)| {
                    let store = store.clone();
                    async move {
                        let got = match store.get(&key).await {
                            Ok(r) => {
                                let modified = modified(&r.meta);
                                r.bytes().await.map(|b| {
                                    Some(warmed::Fetched {
                                        bytes: b.to_vec(),
                                        modified,
                                    })
                                })
                            }
                            Err(object_store::Error::NotFound { .. }) => Ok(None),
                            Err(e) => Err(e),
                        };
                        got.ok().map(|bytes| (path, bytes))
                    }
                })
                .buffered(IN_FLIGHT)
                .collect::<Vec<_>>()
                .await;
            Ok(got.into_iter().flatten().collect::<Vec<_>>())
        });
        let fetched = match fetched {
            Ok(Ok(f)) => f,
            _ => Vec::new(),
        };
        let found = fetched.iter().filter(|(_, b)| b.is_some()).count();
        self.warmed.keep(fetched);
        found
    }

    fn barrier(&self) -> io::Result<()> {
        Ok(())
    }

    fn recover(&self, _clean: bool) -> io::Result<usize> {
        Ok(0)
    }

    fn locator(&self) -> String {
        match self.prefix.as_str() {
            "" => format!("s3://{} at {}", self.bucket, self.endpoint),
            p => format!("s3://{}/{p} at {}", self.bucket, self.endpoint),
        }
    }
}
