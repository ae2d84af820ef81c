//! Serving: the warp filter that turns every request into a [`Request`] for
//! [`dispatch`], run on our own accept loop ([`crate::http::conn`], which caps connections
//! and puts deadlines on slow or idle clients) until SIGTERM or Ctrl-C, then a graceful
//! shutdown.

use std::sync::Arc;

use tokio::net::TcpListener;
use warp::Filter;

use crate::http::conn::{self, Limits, Peer};
use crate::http::dispatch::dispatch;
use crate::http::request::Request;
use crate::state::App;

/// Serve `app` on `listener` until SIGTERM or Ctrl-C; returns once the connections are closed.
pub async fn run(listener: TcpListener, app: Arc<App>, limits: Limits) {
    let service = hyper_util::service::TowerToHyperService::new(warp::service(filter(app)));
    conn::run(listener, service, limits, shutdown_signal()).await;
}

/// The warp filter answering every request through the route table.
pub fn filter(
    app: Arc<App>,
) -> impl Filter<Extract = (warp::reply::Response,), Error = std::convert::Infallible> + Clone {
    let query = warp::query::raw().or(warp::any().map(String::new)).unify();
    warp::any()
        .and(warp::method())
        .and(warp::path::full())
        .and(query)
        .and(warp::header::headers_cloned())
        .and(warp::ext::optional::<Peer>())
        .and(warp::addr::remote())
        .and(warp::body::stream())
        .then(
            move |method,
                  path: warp::path::FullPath,
                  query,
                  headers,
                  peer: Option<Peer>,
                  remote: Option<std::net::SocketAddr>,
                  body| {
                let app = app.clone();
                async move {
                    dispatch(
                        app,
                        Request {
                            method,
                            path: path.as_str().to_owned(),
                            query,
                            headers,
                            // The TCP peer as our accept loop saw it (warp's own server, if
                            // this filter is served by it, sets `remote` instead).
                            remote: peer.map(|p| p.0).or(remote),
                            body,
                        },
                    )
                    .await
                }
            },
        )
        .recover(|_rej: warp::Rejection| async move {
            // Reached only if a filter above rejected (it does not today); answer 400.
            Ok::<_, std::convert::Infallible>(crate::http::reply::finish(
                crate::http::reply::Problem::new(
                    warp::http::StatusCode::BAD_REQUEST,
                    "bad-request",
                    "Bad request",
                    "the request could not be read",
                )
                .into_response(""),
            ))
        })
        .unify()
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
