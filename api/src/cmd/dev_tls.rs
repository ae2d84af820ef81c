//! A throwaway certificate authority and a small HTTPS server on loopback, for `conduct dev`'s
//! sample tool manifest (and the end-to-end tests, which serve every kind of bad manifest with
//! it). The registry verifier fetches over https only; `conduct dev` trusts this CA through
//! `[manifests] extra_roots` and allows loopback. Never used by `conduct serve`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::error::Error;

/// A CA (its PEM, to trust) and a server identity for `localhost` and `127.0.0.1` it signed.
pub struct Pki {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    server: Arc<ServerConfig>,
}

impl Pki {
    /// A fresh CA and server certificate.
    pub fn new() -> Result<Pki, Error> {
        fn e(what: &'static str) -> impl Fn(rcgen::Error) -> Error {
            move |err| Error::Dev(format!("{what}: {err}"))
        }
        let ca_key = KeyPair::generate().map_err(e("CA key"))?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(e("CA"))?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "conduct dev throwaway CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).map_err(e("CA certificate"))?;
        let issuer = Issuer::new(ca, ca_key);
        let leaf_key = KeyPair::generate().map_err(e("server key"))?;
        let mut leaf = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .map_err(e("server"))?;
        leaf.distinguished_name
            .push(DnType::CommonName, "localhost");
        leaf.extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
        let leaf_cert = leaf
            .signed_by(&leaf_key, &issuer)
            .map_err(e("server certificate"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| Error::Dev(err.to_string()))?
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf_cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .map_err(|err| Error::Dev(err.to_string()))?;
        Ok(Pki {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        })
    }
}

/// What the server answers at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This status line (e.g. "200 OK"), extra header lines and body.
    Reply {
        /// Status code and reason.
        status: String,
        /// Extra header lines (`Name: value`).
        headers: Vec<String>,
        /// The body.
        body: Vec<u8>,
    },
    /// Never answer (a server that hangs).
    Stall,
}

impl Answer {
    /// 200 with a JSON body.
    pub fn json(body: impl Into<Vec<u8>>) -> Answer {
        Answer::Reply {
            status: "200 OK".into(),
            headers: vec!["Content-Type: application/json".into()],
            body: body.into(),
        }
    }
}

/// The answers by path; changed while the server runs.
pub type Routes = Arc<Mutex<HashMap<String, Answer>>>;

/// Serve `routes` over HTTPS (HTTP/1.1, one request per connection) on `127.0.0.1:port` (0:
/// any). Returns the bound address; the server runs as a tokio task. Unknown paths are 404.
pub async fn serve(pki: &Pki, port: u16, routes: Routes) -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| Error::Dev(format!("binding the dev HTTPS server: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Dev(e.to_string()))?;
    let acceptor = TlsAcceptor::from(pki.server.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, routes) = (acceptor.clone(), routes.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                    if head.len() > 16 * 1024 {
                        return;
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let answer = conduct_core::sync::lock(&routes).get(&path).cloned();
                let (status, headers, body) = match answer {
                    Some(Answer::Stall) => {
                        std::future::pending::<()>().await;
                        return;
                    }
                    Some(Answer::Reply {
                        status,
                        headers,
                        body,
                    }) => (status, headers, body),
                    None => ("404 Not Found".to_owned(), Vec::new(), Vec::new()),
                };
                let mut out = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for h in headers {
                    out.push_str(&h);
                    out.push_str("\r\n");
                }
                out.push_str("\r\n");
                let mut bytes = out.into_bytes();
                bytes.extend_from_slice(&body);
                let _ = tls.write_all(&bytes).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Ok(addr)
}
