//! The load-test floor: a bare warp handler that reads the body and answers its SHA-256.
//! Same runtime and server as `conduct serve`. Usage: `bare_hash 127.0.0.1:0` (prints the bound address).

use sha2::{Digest, Sha256};
use warp::Filter;

#[tokio::main]
async fn main() {
    let addr: std::net::SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18403".into())
        .parse()
        .unwrap_or_else(|e| panic!("address: {e}"));
    let route = warp::post()
        .and(warp::body::bytes())
        .map(|b: bytes::Bytes| hex::encode(Sha256::digest(&b)));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| panic!("bind {addr}: {e}"));
    let local = listener.local_addr().unwrap_or(addr);
    println!("bare listening on http://{local}");
    warp::serve(route).incoming(listener).run().await;
}
