//! Serving: the route table as the hyper service of our own accept loop
//! ([`crate::http::conn`], which caps connections and puts deadlines on slow or idle
//! clients): each request becomes a [`Request`] for [`dispatch`], until SIGTERM or Ctrl-C,
//! then a graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http_body_util::BodyDataStream;
use tokio::net::TcpListener;
use warp::reply::Response as WarpResponse;

use crate::http::conn::{self, Limits, Peer, TimedBody};
use crate::http::dispatch::dispatch;
use crate::http::request::Request;
use crate::state::App;

/// Serve `app` on `listener` until SIGTERM or Ctrl-C; returns once the connections are closed.
pub async fn run(listener: TcpListener, app: Arc<App>, limits: Limits) {
    conn::run(listener, Routes { app }, limits, shutdown_signal()).await;
}

/// The route table as a hyper service: a request's parts, moved (its path and query as
/// strings, its TCP peer from the accept loop's [`Peer`]), and its body as a stream, to
/// [`dispatch`].
#[derive(Clone)]
pub struct Routes {
    app: Arc<App>,
}

impl hyper::service::Service<warp::http::Request<TimedBody>> for Routes {
    type Response = WarpResponse;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<WarpResponse, Infallible>> + Send>>;

    fn call(&self, req: warp::http::Request<TimedBody>) -> Self::Future {
        let (parts, body) = req.into_parts();
        let req = Request {
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().unwrap_or("").to_owned(),
            method: parts.method,
            headers: parts.headers,
            remote: parts.extensions.get::<Peer>().map(|p| p.0),
            body: BodyDataStream::new(body),
        };
        let app = self.app.clone();
        Box::pin(async move { Ok(dispatch(app, req).await) })
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = tokio::signal::ctrl_c() => {},
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down");
}
