//! The Action and PersistentWorkspace endpoints on the router itself: no
//! sockets, no cluster. Kubernetes is an in-process stand-in where
//! `alice-token` may read Actions, PersistentWorkspaces, WorkflowRuns and
//! Runtimes in team-a but no Pods, `bob-token` may read nothing, and the
//! Console's ServiceAccount (no Authorization header) may read everything.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use kruntimes_core::auth::{AccessReview, Authenticator, Recheck, TokenReviewer};
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::limit::Caps;
use kruntimes_core::metrics::Metrics;
use kruntimes_core::tls::{ClientRoots, DynamicClientVerifier};
use serde_json::{Value, json};
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use crate::clients::UserClients;
use crate::session::SessionSealer;
use crate::state::ConsoleState;

const SECRET: &str = "s3cr3t-env-value";
const BASE: &str = "/apis/kruntimes.io/v1alpha1/namespaces/team-a";

fn action() -> Value {
    json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Action",
        "metadata": {"name": "setup-go", "namespace": "team-a", "uid": "a1",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "inputs": {"version": {"type": "string", "required": true},
                       "cache": {"default": "true"}},
            "outputs": {"path": {"value": "${{ steps.install.outputs.path }}"}},
            "steps": [{"name": "install", "run": "install.sh \"$VERSION\"",
                       "args": ["--quiet"], "env": {"TOKEN": SECRET}}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Accepted",
            "message": "accepted", "lastTransitionTime": "2026-01-01T00:00:01Z"}]}})
}

fn workflow_run(name: &str, created: &str, uses: &str) -> Value {
    json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
        "metadata": {"name": name, "namespace": "team-a", "creationTimestamp": created},
        "spec": {"jobs": {"build": {"runs-on": "bash", "steps": [
            {"name": "checkout", "run": "git clone"}, {"name": "setup", "uses": uses}]}}},
        "status": {"phase": "Succeeded"}})
}

fn workspace() -> Value {
    json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "PersistentWorkspace",
        "metadata": {"name": "cache", "namespace": "team-a", "uid": "w1"},
        "spec": {"runtime": "bash", "mode": "RuntimePodLocal", "ttlSecondsAfterUnused": 3600,
                 "cleanupPolicy": "DeleteAfterTTL"},
        "status": {"phase": "Bound", "runtime": "bash", "boundPod": "bash-0",
                   "path": "/workspace/cache", "lastUsedTime": "2026-01-02T00:00:00Z",
                   "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted"}]}})
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": format!("{kind}List"),
           "metadata": {}, "items": items})
}

fn forbidden(who: &str, resource: &str) -> (u16, Value) {
    (
        403,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "reason": "Forbidden", "code": 403,
            "message": format!("{resource} is forbidden: User \"{who}\" cannot read it in the namespace \"team-a\"")}),
    )
}

async fn kube(req: Request<kube::client::Body>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_start_matches("Bearer ").to_owned());
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let (code, answer) = if path == "/apis/authentication.k8s.io/v1/tokenreviews" {
        let review: Value = body
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let status = match review["spec"]["token"].as_str() {
            Some("alice-token") => json!({"authenticated": true, "user": {"username": "alice"}}),
            Some("bob-token") => json!({"authenticated": true, "user": {"username": "bob"}}),
            _ => json!({"authenticated": false}),
        };
        (201, json!({"kind": "TokenReview", "status": status}))
    } else if token.as_deref() == Some("bob-token") {
        forbidden("bob", path.rsplit('/').next().unwrap_or_default())
    } else if token.as_deref() == Some("alice-token") && path.starts_with("/api/v1/") {
        forbidden("alice", "pods")
    } else if path == format!("{BASE}/actions") {
        (200, list("Action", vec![action()]))
    } else if path == format!("{BASE}/actions/setup-go") {
        (200, action())
    } else if path == format!("{BASE}/workflowruns") {
        (
            200,
            list(
                "WorkflowRun",
                vec![
                    workflow_run("old", "2026-01-01T00:00:00Z", "setup-go"),
                    workflow_run("other", "2026-01-02T00:00:00Z", "another"),
                    workflow_run("new", "2026-01-03T00:00:00Z", "setup-go"),
                ],
            ),
        )
    } else if path == format!("{BASE}/persistentworkspaces") {
        (200, list("PersistentWorkspace", vec![workspace()]))
    } else if path == format!("{BASE}/persistentworkspaces/cache") {
        (200, workspace())
    } else if path == format!("{BASE}/runtimes/bash") {
        (
            200,
            json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
                "metadata": {"name": "bash", "namespace": "team-a"},
                "spec": {"replicas": 1, "workspace": {"persistentVolumeClaim": {"claimName": "ws-data"}}}}),
        )
    } else {
        (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "reason": "NotFound", "code": 404, "message": format!("{path} not found")}),
        )
    };
    let mut resp = Response::new(Full::new(Bytes::from(answer.to_string())));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn app(public_read: bool) -> axum::Router {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let metrics = Metrics::default();
    let sa = kube::Client::new(tower::service_fn(kube), "default");
    let upstream = tower::service_fn(kube)
        .map_response(|resp| resp.map(|b| b.map_err(|never| match never {}).boxed_unsync()))
        .map_err(tower::BoxError::from);
    let users = UserClients::with_upstream(
        kube::Config::new("http://kube.test".parse().unwrap()),
        BoxCloneSyncService::new(upstream),
    );
    let tokens = TokenReviewer::new(sa.clone(), Duration::from_secs(10), metrics.clone());
    let access = AccessReview::new(sa.clone(), Duration::from_secs(10), metrics.clone());
    let verifier = Arc::new(DynamicClientVerifier::new(ClientRoots::default()));
    let state = Arc::new(ConsoleState {
        authn: Authenticator::new(verifier, None, tokens.clone()),
        access: access.clone(),
        sealer: Arc::new(SessionSealer::ephemeral(3600).unwrap()),
        users,
        service_account: sa,
        public_read,
        metrics,
        lifecycle: Lifecycle::default(),
        follows: Caps::new("follows", 8, "--max-follows", 4, "--max-follows-per-caller"),
        watches: Caps::new("watches", 8, "--max-watches", 2, "--max-watches-per-caller"),
        recheck: Recheck {
            tokens,
            access,
            interval: Duration::from_secs(10),
        },
    });
    super::router(state, axum::Router::new(), 16 << 10)
}

async fn get(app: &axum::Router, path: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut req = Request::get(path).header(header::HOST, "console.test");
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let code = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const PATHS: [&str; 4] = [
    "/api/namespaces/team-a/actions",
    "/api/namespaces/team-a/actions/setup-go",
    "/api/namespaces/team-a/persistentworkspaces",
    "/api/namespaces/team-a/persistentworkspaces/cache",
];

#[tokio::test]
async fn without_a_credential_both_kinds_are_401_even_with_public_read() {
    for public_read in [true, false] {
        let app = app(public_read);
        for path in PATHS {
            let (code, body) = get(&app, path, None).await;
            assert_eq!(code, StatusCode::UNAUTHORIZED, "{path}: {body}");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("not part of public read"), "{message}");
            assert!(!body.to_string().contains("setup-go\""), "{body}");
        }
    }
}

#[tokio::test]
async fn a_caller_refused_by_kubernetes_gets_the_403_and_the_access_it_needed() {
    let app = app(true);
    for (path, verb, resource) in [
        (PATHS[0], "list", "actions"),
        (PATHS[1], "get", "actions"),
        (PATHS[2], "list", "persistentworkspaces"),
        (PATHS[3], "get", "persistentworkspaces"),
    ] {
        let (code, body) = get(&app, path, Some("bob-token")).await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(body["error"]["access"]["verb"], verb, "{body}");
        assert_eq!(body["error"]["access"]["resource"], resource, "{body}");
        assert_eq!(body["error"]["access"]["namespace"], "team-a", "{body}");
    }
}

#[tokio::test]
async fn an_action_is_listed_and_its_definition_shown_without_env_values() {
    let app = app(true);
    let (code, body) = get(&app, PATHS[0], Some("alice-token")).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let item = &body["items"][0];
    assert_eq!(item["metadata"]["name"], "setup-go");
    assert_eq!(
        (&item["inputs"], &item["outputs"], &item["steps"]),
        (&json!(2), &json!(1), &json!(1))
    );
    assert_eq!(item["ready"]["status"], "True");
    assert!(body.get("summary").is_none(), "{body}");

    let (code, body) = get(&app, PATHS[1], Some("alice-token")).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(
        !body.to_string().contains(SECRET),
        "an env value leaked: {body}"
    );
    assert_eq!(
        body["inputs"],
        json!([{"name": "cache", "type": "string", "required": false, "default": "true"},
               {"name": "version", "type": "string", "required": true}])
    );
    assert_eq!(
        body["outputs"][0]["value"],
        "${{ steps.install.outputs.path }}"
    );
    assert_eq!(
        body["steps"][0],
        json!({"name": "install", "run": "install.sh \"$VERSION\"", "args": ["--quiet"], "envNames": ["TOKEN"]})
    );
    assert_eq!(body["conditions"][0]["reason"], "Accepted");
    // Newest caller first; the WorkflowRun calling another Action is not one.
    let used = &body["usedBy"];
    assert_eq!(used["state"], "ok", "{used}");
    assert_eq!(used["complete"], true);
    let names: Vec<&str> = used["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["new", "old"]);
    assert_eq!(used["items"][0]["jobs"], json!(["build"]));
    assert_eq!(used["items"][0]["phase"], "Succeeded");
}

#[tokio::test]
async fn a_workspace_shows_its_binding_and_a_forbidden_pod_section_alone() {
    let app = app(true);
    let (code, body) = get(&app, PATHS[2], Some("alice-token")).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        (
            &body["items"][0]["phase"],
            &body["items"][0]["boundPod"],
            &body["items"][0]["runtime"]
        ),
        (&json!("Bound"), &json!("bash-0"), &json!("bash"))
    );
    assert_eq!(body["items"][0]["lastUsedTime"], "2026-01-02T00:00:00Z");

    let (code, body) = get(&app, PATHS[3], Some("alice-token")).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["status"]["phase"], "Bound");
    assert_eq!(body["status"]["path"], "/workspace/cache");
    assert_eq!(body["spec"]["ttlSecondsAfterUnused"], 3600);
    assert_eq!(body["status"]["conditions"][0]["type"], "Accepted");
    // alice may not read Pods: that section says so, the page still answers.
    assert_eq!(body["pod"]["state"], "forbidden", "{body}");
    assert_eq!(body["pod"]["access"]["resource"], "pods");
    assert_eq!(body["pod"]["access"]["name"], "bash-0");
    assert_eq!(
        body["volume"],
        json!({"state": "ok", "runtime": "bash", "source": "persistentVolumeClaim",
               "declared": true, "claimName": "ws-data"})
    );
}

#[tokio::test]
async fn bad_names_and_queries_are_400() {
    let app = app(true);
    for path in [
        "/api/namespaces/Team_A/actions",
        "/api/namespaces/team-a/actions/Bad_Name",
        "/api/namespaces/team-a/persistentworkspaces/Bad_Name",
        "/api/namespaces/team-a/persistentworkspaces?phase=Bound",
        "/api/namespaces/team-a/actions?limit=0",
    ] {
        let (code, body) = get(&app, path, Some("alice-token")).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    let (code, body) = get(
        &app,
        "/api/namespaces/team-a/actions/missing",
        Some("alice-token"),
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{body}");
}

#[tokio::test]
async fn the_yaml_view_of_an_action_hides_its_env_values() {
    let app = app(true);
    let path = "/api/namespaces/team-a/actions/setup-go/manifest";
    let (code, body) = get(&app, path, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    let (code, body) = get(&app, path, Some("alice-token")).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(
        !body.to_string().contains(SECRET),
        "an env value leaked: {body}"
    );
    assert_eq!(
        body["object"]["spec"]["steps"][0]["env"]["TOKEN"],
        crate::api::manifest::HIDDEN
    );
    assert_eq!(body["hidden"], json!(["spec.steps[0].env.TOKEN"]));
    let (code, body) = get(
        &app,
        "/api/namespaces/team-a/persistentworkspaces/cache/manifest",
        Some("alice-token"),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["object"]["status"]["boundPod"], "bash-0");
}
