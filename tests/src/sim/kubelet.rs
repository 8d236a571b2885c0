//! The fake kubelet's HTTP side: `GET /containerLogs/{namespace}/{pod}/{container}` served from
//! `<logs-dir>/<namespace>_<pod>/<container>.log`, as kube-apiserver calls it for `pods/log`;
//! with `previous=true`, from `<container>.previous.log` (the previous container's log, which
//! a follow reads to its end and no further, as that container no longer runs).

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
use crate::sim::logwake::LogWake;
use crate::sim::podwatch::PodWatch;

/// Shared state of the fake kubelet.
#[derive(Clone)]
pub struct Kubelet {
    pub logs_dir: PathBuf,
    /// Watches Pods so followers end when their Pod goes; None without a kubeconfig.
    pub pods: Option<PodWatch>,
    /// Wakes followers when their log file changes.
    pub wake: LogWake,
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
    let mut opts = match LogOptions::from_query(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        jiff::Timestamp::now(),
    ) {
        Ok(opts) => opts,
        Err(err) => return plain(StatusCode::BAD_REQUEST, format!("{err}\n")),
    };
    if opts.previous {
        // The previous container has ended: its log does not grow.
        opts.follow = false;
    }
    let file_name = if opts.previous {
        format!("{container}.previous.log")
    } else {
        format!("{container}.log")
    };
    let pod_dir = kubelet.logs_dir.join(format!("{namespace}_{pod}"));
    // A test makes the kubelet fail for a container: `<container>.fail` holds
    // `<status code> <message>` (e.g. `500 simulated failure`).
    if let Ok(text) = std::fs::read_to_string(pod_dir.join(format!("{container}.fail"))) {
        let (code, message) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
        let code = code
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return plain(code, format!("{message}\n"));
    }
    let path = pod_dir.join(file_name);
    let log = match logstream::open(&path).await {
        Ok(log) => log,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && opts.previous => {
            // The kubelet answers 400 with the error's text and nothing else (go-restful's
            // WriteError); kube-apiserver turns a 400 into a BadRequest Status with that text
            // as its message, which kubectl prints.
            return plain(
                StatusCode::BAD_REQUEST,
                format!("previous terminated container {container:?} in pod {pod:?} not found"),
            );
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return plain(
                StatusCode::NOT_FOUND,
                format!("container {container:?} in pod {namespace}/{pod} not found\n"),
            );
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
    let served = Served::open(
        kubelet
            .logs_dir
            .join(format!("{namespace}_{pod}"))
            .join(format!("{container}.requests")),
        opts.follow,
        &query,
    );
    let (tx, rx) = mpsc::channel::<Bytes>(8);
    tokio::spawn(logstream::stream(
        log,
        opts,
        guard,
        kubelet.wake.clone(),
        tx,
    ));
    let body = futures::stream::unfold((rx, served), |(mut rx, mut served)| async move {
        let chunk = rx.recv().await?;
        served.bytes += chunk.len() as u64;
        Some((Ok::<_, Infallible>(chunk), (rx, served)))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from_stream(body))
        .unwrap_or_else(|err| plain(StatusCode::INTERNAL_SERVER_ERROR, format!("{err}\n")))
}

/// The record of one `containerLogs` request, for tests that check what a
/// client read: `<container>.requests` next to the log holds one JSON line
/// when a request opens (`"event":"open"`) and one when its response ends
/// or the client leaves (`"event":"close"`, with the `bytes` served).
struct Served {
    path: PathBuf,
    follow: bool,
    query: String,
    bytes: u64,
}

impl Served {
    fn open(path: PathBuf, follow: bool, query: &str) -> Self {
        let served = Self {
            path,
            follow,
            query: query.to_owned(),
            bytes: 0,
        };
        served.write("open");
        served
    }

    fn write(&self, event: &str) {
        use std::io::Write;
        let line = serde_json::json!({
            "event": event, "follow": self.follow, "query": self.query, "bytes": self.bytes,
        });
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(err) = written {
            tracing::warn!(path = %self.path.display(), error = %err, "cannot record a request");
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.write("close");
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    async fn get(router: &Router, uri: &str) -> (StatusCode, String) {
        let request = Request::get(uri).body(Body::empty()).expect("request");
        let response = router.clone().oneshot(request).await.expect("response");
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn serves_files_and_refuses_bad_requests() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pod_dir = dir.path().join("team-a_pod-1");
        std::fs::create_dir(&pod_dir).expect("mkdir");
        std::fs::write(
            pod_dir.join("runtimed.log"),
            "2024-05-01T10:00:00Z stdout F a\n2024-05-01T10:00:01Z stdout F b\n",
        )
        .expect("write");
        let router = router(Kubelet {
            logs_dir: dir.path().to_owned(),
            pods: None,
            wake: LogWake::none(),
        });
        assert_eq!(
            get(&router, "/containerLogs/team-a/pod-1/runtimed").await,
            (StatusCode::OK, "a\nb\n".into())
        );
        assert_eq!(
            get(
                &router,
                "/containerLogs/team-a/pod-1/runtimed?tailLines=1&timestamps=true"
            )
            .await,
            (StatusCode::OK, "2024-05-01T10:00:01Z b\n".into())
        );
        let (status, body) = get(&router, "/containerLogs/team-a/pod-2/runtimed").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body.contains("not found"), "{body}");
        assert_eq!(
            get(
                &router,
                "/containerLogs/team-a/pod-1/runtimed?previous=true",
            )
            .await,
            (
                StatusCode::BAD_REQUEST,
                r#"previous terminated container "runtimed" in pod "pod-1" not found"#.into()
            )
        );
        let (status, body) = get(&router, "/containerLogs/team-a/..%2F..%2Fetc/passwd").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let (status, body) =
            get(&router, "/containerLogs/team-a/pod-1/runtimed?limitBytes=0").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.contains("limitBytes"), "{body}");
    }

    #[tokio::test]
    async fn previous_serves_the_previous_containers_log_with_the_same_options() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pod_dir = dir.path().join("team-a_pod-1");
        std::fs::create_dir(&pod_dir).expect("mkdir");
        std::fs::write(
            pod_dir.join("runtimed.log"),
            "2024-05-01T11:00:00Z stdout F now\n",
        )
        .expect("write");
        std::fs::write(
            pod_dir.join("runtimed.previous.log"),
            "2024-05-01T10:00:00Z stdout F a\nnot a record\n2024-05-01T10:00:01Z stderr F b\n2024-05-01T10:00:02Z stdout F c\n",
        )
        .expect("write");
        let router = router(Kubelet {
            logs_dir: dir.path().to_owned(),
            pods: None,
            wake: LogWake::none(),
        });
        let at = |q: &str| format!("/containerLogs/team-a/pod-1/runtimed?previous=true{q}");
        assert_eq!(
            get(&router, &at("")).await,
            (StatusCode::OK, "a\nb\nc\n".into())
        );
        assert_eq!(
            get(&router, &at("&tailLines=2&timestamps=true")).await,
            (
                StatusCode::OK,
                "2024-05-01T10:00:01Z b\n2024-05-01T10:00:02Z c\n".into()
            )
        );
        assert_eq!(
            get(&router, &at("&sinceTime=2024-05-01T10:00:01Z")).await,
            (StatusCode::OK, "b\nc\n".into())
        );
        assert_eq!(
            get(&router, &at("&limitBytes=3")).await,
            (StatusCode::OK, "a\nb".into())
        );
        // A follow of the previous log ends at its end (the test would hang otherwise).
        let followed = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            get(&router, &at("&follow=true")),
        )
        .await
        .expect("a follow of a previous log ends");
        assert_eq!(followed, (StatusCode::OK, "a\nb\nc\n".into()));
    }

    #[tokio::test]
    async fn a_lines_time_does_not_change_between_requests() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pod_dir = dir.path().join("team-a_pod-1");
        std::fs::create_dir(&pod_dir).expect("mkdir");
        let path = pod_dir.join("runtimed.log");
        std::fs::write(&path, "plain\n2024-05-01T10:00:00Z stdout F a\n").expect("write");
        let router = router(Kubelet {
            logs_dir: dir.path().to_owned(),
            pods: None,
            wake: LogWake::none(),
        });
        let uri = "/containerLogs/team-a/pod-1/runtimed?timestamps=true";
        let first = get(&router, uri).await;
        assert_eq!(first, (StatusCode::OK, "2024-05-01T10:00:00Z a\n".into()));
        // The file changes (its modification time moves on); what was served does not.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        std::io::Write::write_all(&mut f, b"more plain\n").expect("append");
        drop(f);
        assert_eq!(get(&router, uri).await, first);
    }

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
