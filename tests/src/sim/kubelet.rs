//! The fake kubelet's HTTP side: `GET /containerLogs/{namespace}/{pod}/{container}` served from
//! `<logs-dir>/<namespace>_<pod>/<container>.log`, as kube-apiserver calls it for `pods/log`.

use std::convert::Infallible;
use std::path::PathBuf;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::sim::logfilter::LogOptions;
use crate::sim::logstream;
use crate::sim::podwatch::PodWatch;

/// Shared state of the fake kubelet.
#[derive(Clone)]
pub struct Kubelet {
    pub logs_dir: PathBuf,
    /// Watches Pods so followers end when their Pod goes; None without a kubeconfig.
    pub pods: Option<PodWatch>,
}

/// The router kube-apiserver talks to.
pub fn router(kubelet: Kubelet) -> Router {
    Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .route("/healthz", get(|| async { "ok" }))
        .fallback(|| async { plain(StatusCode::NOT_FOUND, "404 page not found\n".into()) })
        .with_state(kubelet)
}

fn plain(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// Whether `name` can be a Kubernetes object name (DNS subdomain; labels are a subset).
/// Anything else — in particular `/`, `..` or `_` — is refused before touching the disk.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !name.contains("..")
}

async fn container_logs(
    State(kubelet): State<Kubelet>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    for (what, value) in [
        ("namespace", &namespace),
        ("pod", &pod),
        ("container", &container),
    ] {
        if !valid_name(value) {
            return plain(
                StatusCode::BAD_REQUEST,
                format!("invalid {what} name {value:?}\n"),
            );
        }
    }
    let query = query.unwrap_or_default();
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let opts = match LogOptions::from_query(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        jiff::Timestamp::now(),
    ) {
        Ok(opts) => opts,
        Err(err) => return plain(StatusCode::BAD_REQUEST, format!("{err}\n")),
    };
    let file_name = if opts.previous {
        format!("{container}.previous.log")
    } else {
        format!("{container}.log")
    };
    let path = kubelet
        .logs_dir
        .join(format!("{namespace}_{pod}"))
        .join(file_name);
    let log = match logstream::open(&path).await {
        Ok(log) => log,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let message = if opts.previous {
                format!("previous terminated container {container:?} in pod {pod:?} not found\n")
            } else {
                format!("container {container:?} in pod {namespace}/{pod} not found\n")
            };
            return plain(StatusCode::NOT_FOUND, message);
        }
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "cannot open log file");
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot read the log of container {container:?}: {err}\n"),
            );
        }
    };
    tracing::info!(%namespace, %pod, %container, follow = opts.follow,
        tail = ?opts.tail_lines, limit = ?opts.limit_bytes, since = ?opts.since, "serving container log");

    let guard = match (&kubelet.pods, opts.follow) {
        (Some(pods), true) => Some(pods.guard(&namespace, &pod).await),
        _ => None,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(8);
    tokio::spawn(logstream::stream(log, opts, guard, tx));
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(chunk), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from_stream(body))
        .unwrap_or_else(|err| plain(StatusCode::INTERNAL_SERVER_ERROR, format!("{err}\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["team-a", "run-1.pod", "a", "runtimed"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "", "..", ".", "a/b", "a_b", "-a", "a-", "A", "a..b", "%2e%2e",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
