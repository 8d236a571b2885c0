//! `GET /api/namespaces/{ns}/watch?runs=&runtimes=&workflowruns=`: what
//! changes in a namespace, streamed to the browser over one connection as
//! NDJSON. Each named kind is a Kubernetes watch made with the caller's own
//! token, resumed from the resourceVersion given (or from now), with
//! bookmarks so a reconnect resumes where the last one ended. Lines carry
//! names and resourceVersions, never objects: the UI reads what changed
//! through the ordinary endpoints.

use kruntimes_core::failure::{Reason, Refusal as _};
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use futures::{StreamExt, TryStreamExt};
use http::{HeaderValue, header};
use kruntimes_core::auth::ResourceAttributes;
use kruntimes_core::query;
use kube::api::{ListParams, WatchEvent, WatchParams};
use tokio::sync::mpsc;

use super::types::{AccessRequest, WatchLine};
use super::{ApiPath, check_namespace, kruntimes_api, user_client};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// The kinds a watch stream can follow: (query name and plural, kind).
const KINDS: &[(&str, &str)] = &[
    ("runs", "Run"),
    ("runtimes", "Runtime"),
    ("workflowruns", "WorkflowRun"),
];

/// How long one upstream watch request lasts before it is renewed (from the
/// last resourceVersion seen); kube-apiserver caps it anyway.
const WATCH_TIMEOUT_SECS: u32 = 240;

/// A line every so often, so a dead connection shows on both ends.
const HEARTBEAT: Duration = Duration::from_secs(20);

/// What a watch stream follows: each kind and the resourceVersion to resume from.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WatchQuery {
    /// Each kind asked for (`runs`, `runtimes`, `workflowruns`) and the
    /// resourceVersion to resume from (`None`: from now).
    pub kinds: Vec<(&'static str, Option<String>)>,
}

/// A resourceVersion as kube-apiserver writes it: digits, bounded.
fn valid_rv(v: &str) -> bool {
    !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_digit())
}

/// Parses the watch query: at least one kind, each with a resourceVersion
/// (digits) or empty; anything else is a 400.
pub fn parse(raw: Option<&str>) -> Result<WatchQuery, ConsoleError> {
    let mut q = WatchQuery::default();
    query::parse(raw, |k, v| {
        let Some((name, _)) = KINDS.iter().find(|(n, _)| *n == k) else {
            return Err(ConsoleError::bad_request(format!(
                "unknown parameter {k:?}; watch accepts runs, runtimes and workflowruns (each with a resourceVersion or empty)"
            )));
        };
        if !v.is_empty() && !valid_rv(&v) {
            return Err(ConsoleError::bad_request(format!(
                "{k} must be empty or a resourceVersion (digits), got {v:?}"
            )));
        }
        q.kinds.push((name, (!v.is_empty()).then_some(v)));
        Ok(())
    })?;
    if q.kinds.is_empty() {
        return Err(ConsoleError::bad_request(
            "name at least one of runs, runtimes and workflowruns to watch",
        ));
    }
    Ok(q)
}

fn line(l: &WatchLine) -> bytes::Bytes {
    let mut v = serde_json::to_vec(l).unwrap_or_default();
    v.push(b'\n');
    v.into()
}

fn watch_attributes(ns: &str, plural: &'static str) -> ResourceAttributes {
    ResourceAttributes {
        verb: "watch",
        group: "kruntimes.io",
        resource: plural,
        subresource: None,
        namespace: ns.to_owned(),
        name: None,
    }
}

/// The current resourceVersion of a kind's list (a one-item list).
async fn current_rv(
    api: &kube::Api<kube::api::DynamicObject>,
    ns: &str,
    plural: &'static str,
) -> Result<String, ConsoleError> {
    let list = api
        .list(&ListParams::default().limit(1))
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "listing to start a watch",
                AccessRequest::new("list", "kruntimes.io", plural, ns, None),
            )
        })?;
    Ok(list.metadata.resource_version.unwrap_or_default())
}

/// Follows one kind until the receiver goes away or the watch fails for good.
async fn follow_kind(
    api: kube::Api<kube::api::DynamicObject>,
    ns: String,
    plural: &'static str,
    mut rv: String,
    tx: mpsc::Sender<bytes::Bytes>,
) {
    let send = |l: WatchLine| {
        let tx = tx.clone();
        async move { tx.send(line(&l)).await.is_ok() }
    };
    loop {
        let mut params = WatchParams::default().timeout(WATCH_TIMEOUT_SECS);
        params.bookmarks = true;
        let stream = match api.watch(&params, &rv).await {
            Ok(s) => s,
            Err(e) => {
                let err: ConsoleError = KubeFailure::new(
                    e,
                    "watching",
                    AccessRequest::new("watch", "kruntimes.io", plural, &ns, None),
                )
                .into();
                let _ = send(WatchLine::error(
                    plural,
                    err.code().as_u16(),
                    err.failure.message,
                ))
                .await;
                return;
            }
        };
        let mut stream = stream.boxed();
        loop {
            let ev = match stream.try_next().await {
                Ok(Some(ev)) => ev,
                // The upstream request ended (its timeout): renew from `rv`.
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, kind = plural, "a watch broke; renewing it");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
            };
            let (kind, obj) = match ev {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(b) => {
                    rv = b.metadata.resource_version;
                    if !send(WatchLine::bookmark(plural, &rv)).await {
                        return;
                    }
                    continue;
                }
                WatchEvent::Error(e) if e.code == Reason::Gone.code_u16() => {
                    // Too old to resume: start again from now and tell the
                    // UI to read everything of this kind again.
                    match current_rv(&api, &ns, plural).await {
                        Ok(now) => rv = now,
                        Err(err) => {
                            let _ = send(WatchLine::error(
                                plural,
                                err.code().as_u16(),
                                err.failure.message,
                            ))
                            .await;
                            return;
                        }
                    }
                    if !send(WatchLine::resync(plural, &rv)).await {
                        return;
                    }
                    break;
                }
                WatchEvent::Error(e) => {
                    let _ = send(WatchLine::error(plural, e.code, e.message)).await;
                    return;
                }
            };
            if let Some(v) = obj.metadata.resource_version.clone() {
                rv = v;
            }
            let l = WatchLine {
                kind: Some(plural.to_owned()),
                type_: kind.to_owned(),
                name: obj.metadata.name.clone(),
                resource_version: Some(rv.clone()),
                code: None,
                message: None,
            };
            if !send(l).await {
                return;
            }
        }
    }
}

/// `GET /api/namespaces/{ns}/watch`: NDJSON [`WatchLine`]s from one Kubernetes
/// watch per kind asked for, made with the caller's token.
pub async fn watch(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath(ns): ApiPath<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ConsoleError> {
    check_namespace(&ns)?;
    let q = parse(raw.as_deref())?;
    let client = user_client(&state, &caller)?;
    let creds = caller
        .0
        .clone()
        .ok_or_else(|| ConsoleError::unauthorized("log in to watch"))?;
    // Each stream holds one upstream watch per kind: capped per caller and in total.
    let slot = state
        .watches
        .acquire(&creds.caller.user)
        .map_err(|e| crate::runtime_access::cap_reached(&e))?;

    // Start every kind first, so a refusal is an ordinary error answer.
    let mut starts = Vec::new();
    for (plural, rv) in &q.kinds {
        let kind = KINDS
            .iter()
            .find(|(p, _)| p == plural)
            .map(|(_, k)| *k)
            .unwrap_or("Run");
        let api = kruntimes_api(client.clone(), &ns, kind, plural);
        let rv = match rv {
            Some(rv) => rv.clone(),
            None => current_rv(&api, &ns, plural).await?,
        };
        starts.push((api, *plural, rv));
    }

    let (tx, rx) = mpsc::channel::<bytes::Bytes>(64);
    for (_, plural, rv) in &starts {
        // Where each kind starts, so the UI can resume from here.
        let _ = tx.try_send(line(&WatchLine::bookmark(plural, rv)));
    }
    let lifecycle = state.lifecycle.clone();
    let recheck = state.recheck.clone();
    let attrs: Vec<ResourceAttributes> = starts
        .iter()
        .map(|(_, plural, _)| watch_attributes(&ns, plural))
        .collect();
    let tasks: Vec<_> = starts
        .into_iter()
        .map(|(api, plural, rv)| tokio::spawn(follow_kind(api, ns.clone(), plural, rv, tx.clone())))
        .collect();
    tokio::spawn(async move {
        let _held = (slot, lifecycle.track());
        let stopping = lifecycle.stopping();
        tokio::pin!(stopping);
        // The caller's own access, re-checked like a follow's: kube-apiserver
        // authorized each watch once, when it began.
        let revoked = futures::future::select_all(
            attrs
                .iter()
                .map(|a| Box::pin(recheck.revoked(&creds.caller, a))),
        );
        tokio::pin!(revoked);
        let mut beat = tokio::time::interval(HEARTBEAT);
        beat.tick().await;
        let end = loop {
            tokio::select! {
                (why, _, _) = &mut revoked => {
                    tracing::info!(reason = %why, "ending a watch stream whose access ended");
                    let e = why.to_api_error();
                    break Some(WatchLine::end(e.code().as_u16(), e.message.clone()));
                }
                () = &mut stopping => break Some(WatchLine::end(Reason::Unavailable.code_u16(), "the server is shutting down; reconnect".into())),
                () = tx.closed() => break None,
                _ = beat.tick() => {
                    if tx.send(line(&WatchLine::heartbeat())).await.is_err() {
                        break None;
                    }
                }
            }
        };
        for t in &tasks {
            t.abort();
        }
        if let Some(l) = end {
            let _ = tx.send(line(&l)).await;
        }
    });
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    let mut out = Response::new(Body::from_stream(body));
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    out.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kinds_and_resource_versions() {
        let q = parse(Some("runs=&workflowruns=1234")).unwrap();
        assert_eq!(
            q.kinds,
            [("runs", None), ("workflowruns", Some("1234".to_owned()))]
        );
        assert!(parse(None).is_err());
        assert!(parse(Some("pods=")).is_err());
        assert!(parse(Some("runs=abc")).is_err());
        assert!(parse(Some("runs=1&runs=2")).is_err());
        assert!(parse(Some(&format!("runs={}", "1".repeat(40)))).is_err());
    }
}
