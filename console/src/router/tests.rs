//! The Console listener's HTTP rules, tested on the router itself: no
//! sockets, no cluster. Kubernetes is an in-process stand-in that answers
//! TokenReviews and the few reads these rules need.

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
use kruntimes_core::tls::PeerCertificates;
use kruntimes_core::tls::{ClientRoots, DynamicClientVerifier, client_verifier, root_store};
use rustls_pki_types::CertificateDer;
use serde_json::{Value, json};
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use crate::clients::UserClients;
use crate::session::SessionSealer;
use crate::state::ConsoleState;

/// Engine-shaped objects served to `eve-token`, and the handler tests on them.
mod engine;

const HOST: &str = "console.test";
const ORIGIN: &str = "https://console.test";
const MAX_HEADER_BYTES: usize = 16 << 10;

/// The stand-in kube-apiserver: `alice-token`, `bob-token` and `dana-token`
/// (the ServiceAccount `team-b:ci`) are valid; the Console's ServiceAccount
/// (no Authorization header) may list Runs and namespaces; a user may read
/// nothing (403, as RBAC answers) but may ask where they could list Runs:
/// alice in team-a, dana in team-a and team-b, bob nowhere.
async fn kube(req: Request<kube::client::Body>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let user_token = req
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
        let user = match review["spec"]["token"].as_str() {
            Some("alice-token") => Some("alice"),
            Some("bob-token") => Some("bob"),
            Some("dana-token") => Some("system:serviceaccount:team-b:ci"),
            Some("eve-token") => Some("eve"),
            _ => None,
        };
        let status = match user {
            Some(u) => json!({"authenticated": true, "user": {"username": u, "groups": ["devs"]}}),
            None => json!({"authenticated": false}),
        };
        (
            201,
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}),
        )
    } else if path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        && let Some(user) = &user_token
    {
        let review: Value = body
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let attrs = &review["spec"]["resourceAttributes"];
        let ns = attrs["namespace"].as_str().unwrap_or_default();
        // alice may run operations on team-a/shell, and only that; bob may not.
        let operations = attrs["verb"] == "create"
            && attrs["group"] == "kruntimes.io"
            && attrs["resource"] == "runs"
            && attrs["subresource"] == "operations"
            && ns == "team-a"
            && attrs["name"] == "shell";
        let runs = attrs["verb"] == "list"
            && attrs["group"] == "kruntimes.io"
            && attrs["resource"] == "runs";
        let allowed = (operations && user == "alice-token")
            || (runs
                && match user.as_str() {
                    "alice-token" => ns == "team-a",
                    "dana-token" => ns == "team-a" || ns == "team-b",
                    _ => false,
                });
        let reason = if operations && allowed {
            "RBAC: allowed by RoleBinding \"operators/team-a\""
        } else {
            ""
        };
        (
            201,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": review["spec"], "status": {"allowed": allowed, "reason": reason}}),
        )
    } else if user_token.as_deref() == Some("eve-token") {
        engine::answer(&path, &query)
    } else if let Some(user) = user_token {
        let who = if user == "alice-token" {
            "alice"
        } else {
            "bob"
        };
        (
            403,
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "reason": "Forbidden", "code": 403,
                "message": format!("runs.kruntimes.io is forbidden: User \"{who}\" cannot get resource \"runs\" in API group \"kruntimes.io\" in the namespace \"team-a\""),
            }),
        )
    } else if path == "/api/v1/namespaces" {
        let ns = |n: &str| json!({"metadata": {"name": n}, "status": {"phase": "Active"}});
        (
            200,
            json!({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {},
                   "items": [ns("default"), ns("team-a"), ns("team-b")]}),
        )
    } else if path == "/apis/kruntimes.io/v1alpha1/namespaces/team-a/runs" {
        (
            200,
            json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "RunList", "metadata": {}, "items": []}),
        )
    } else {
        (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"}),
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

fn kube_client() -> kube::Client {
    kube::Client::new(tower::service_fn(kube), "default")
}

fn user_clients() -> UserClients {
    let upstream = tower::service_fn(kube)
        .map_response(|resp| resp.map(|b| b.map_err(|never| match never {}).boxed_unsync()))
        .map_err(tower::BoxError::from);
    let config = kube::Config::new("http://kube.test".parse().unwrap());
    UserClients::with_upstream(config, BoxCloneSyncService::new(upstream))
}

/// A test CA and a client certificate from it (CN `carol`).
struct ClientPki {
    ca_pem: String,
    client: CertificateDer<'static>,
}

fn client_pki() -> ClientPki {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "client ca");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.distinguished_name.push(DnType::CommonName, "carol");
    leaf.extended_key_usages
        .push(ExtendedKeyUsagePurpose::ClientAuth);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    ClientPki {
        ca_pem: ca_cert.pem(),
        client: leaf_cert.der().clone(),
    }
}

fn state(public_read: bool, client_ca_pem: Option<&str>) -> Arc<ConsoleState> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let metrics = Metrics::default();
    let sa = kube_client();
    let tokens = TokenReviewer::new(sa.clone(), Duration::from_secs(10), metrics.clone());
    let access = AccessReview::new(sa.clone(), Duration::from_secs(10), metrics.clone());
    let verifier = Arc::new(DynamicClientVerifier::new(ClientRoots::default()));
    if let Some(pem) = client_ca_pem {
        let roots = root_store(pem.as_bytes(), "test client CA").unwrap();
        verifier.set_client_ca(Some(client_verifier(roots).unwrap()));
    }
    Arc::new(ConsoleState {
        authn: Authenticator::new(verifier, None, tokens.clone()),
        access: access.clone(),
        sealer: Arc::new(SessionSealer::ephemeral(3600).unwrap()),
        users: user_clients(),
        service_account: sa,
        public_read,
        metrics,
        lifecycle: Lifecycle::default(),
        follows: Caps::new(
            "open log follows",
            8,
            "--max-follows",
            4,
            "--max-follows-per-caller",
        ),
        watches: Caps::new(
            "open watch streams",
            8,
            "--max-watches",
            2,
            "--max-watches-per-caller",
        ),
        recheck: Recheck {
            tokens,
            access,
            interval: Duration::from_secs(10),
        },
    })
}

fn app(state: Arc<ConsoleState>) -> axum::Router {
    super::router(state, axum::Router::new(), MAX_HEADER_BYTES)
}

fn request(method: &str, path: &str) -> http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
}

/// The status, the headers and the body as JSON (Null when it is not JSON).
async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, http::HeaderMap, Value) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (parts.status, parts.headers, json)
}

/// Logs in as `token` and returns the `Cookie` header the browser would send.
async fn login(app: &axum::Router, token: &str) -> String {
    let req = request("POST", "/api/session")
        .header(header::ORIGIN, ORIGIN)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"token": token}).to_string()))
        .unwrap();
    let (code, headers, body) = send(app, req).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|c| !c.contains("Max-Age=0"))
        .filter_map(|c| c.split(';').next())
        .collect::<Vec<_>>()
        .join("; ")
}

fn assert_error(code: StatusCode, body: &Value, want: StatusCode, message_has: &str) {
    assert_eq!(code, want, "{body}");
    assert_eq!(body["error"]["code"], want.as_u16(), "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(message_has),
        "message {message:?} should mention {message_has:?}"
    );
}

#[tokio::test]
async fn a_cookie_state_change_needs_the_console_origin() {
    let app = app(state(false, None));
    let cookie = login(&app, "alice-token").await;
    assert!(cookie.contains('='), "no session cookie: {cookie:?}");
    for origin in [Some("https://evil.example"), None] {
        let mut req = request("DELETE", "/api/session").header(header::COOKIE, &cookie);
        if let Some(o) = origin {
            req = req.header(header::ORIGIN, o);
        }
        let (code, _, body) = send(&app, req.body(Body::empty()).unwrap()).await;
        assert_error(code, &body, StatusCode::FORBIDDEN, "cross-origin");
    }
    // A read needs no Origin; the same change from the Console's origin passes.
    let req = request("GET", "/api/session").header(header::COOKIE, &cookie);
    let (code, _, body) = send(&app, req.body(Body::empty()).unwrap()).await;
    assert_eq!((code, &body["username"]), (StatusCode::OK, &json!("alice")));
    let req = request("DELETE", "/api/session")
        .header(header::COOKIE, &cookie)
        .header(header::ORIGIN, ORIGIN);
    let (code, _, body) = send(&app, req.body(Body::empty()).unwrap()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_certificate_state_change_needs_the_console_origin_when_a_browser_sends_one() {
    let pki = client_pki();
    let app = app(state(false, Some(&pki.ca_pem)));
    let with_cert = |method: &str, origin: Option<&str>| {
        let mut req = request(method, "/api/session");
        if let Some(o) = origin {
            req = req.header(header::ORIGIN, o);
        }
        let mut req = req.body(Body::empty()).unwrap();
        req.extensions_mut()
            .insert(PeerCertificates(Arc::new(vec![pki.client.clone()])));
        req
    };
    let (code, _, body) = send(&app, with_cert("GET", Some("https://evil.example"))).await;
    assert_eq!(
        (code, &body["username"]),
        (StatusCode::OK, &json!("carol")),
        "{body}"
    );
    let (code, _, body) = send(&app, with_cert("DELETE", Some("https://evil.example"))).await;
    assert_error(code, &body, StatusCode::FORBIDDEN, "client certificate");
    // A CLI sends no Origin; its certificate is enough.
    let (code, _, body) = send(&app, with_cert("DELETE", None)).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, _, body) = send(&app, with_cert("DELETE", Some(ORIGIN))).await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn an_oversized_header_block_is_431_as_json() {
    let app = app(state(false, None));
    let req = request("GET", "/api/namespaces")
        .header("x-padding", "a".repeat(MAX_HEADER_BYTES))
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_error(
        code,
        &body,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "request target and headers total",
    );
}

/// Item 9 of issue 28: the request target counts toward the bound (HTTP/2
/// carries it as `:path`, outside the header fields hyper bounds).
#[tokio::test]
async fn an_oversized_request_target_is_431_as_json() {
    let app = app(state(false, None));
    let target = format!(
        "/v1/namespaces/team-a/runs/r/{}/invoke",
        "u".repeat(MAX_HEADER_BYTES)
    );
    let req = request("POST", &target).body(Body::empty()).unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_error(
        code,
        &body,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "request target and headers total",
    );
}

#[tokio::test]
async fn an_oversized_login_body_is_413_as_json() {
    let app = app(state(false, None));
    let token = "a".repeat(64 << 10);
    let req = request("POST", "/api/session")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({ "token": token }).to_string()))
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_error(code, &body, StatusCode::PAYLOAD_TOO_LARGE, "larger than");
}

#[tokio::test]
async fn without_credentials_lists_need_public_read() {
    let off = app(state(false, None));
    let req = request("GET", "/api/namespaces/team-a/runs")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&off, req).await;
    assert_error(code, &body, StatusCode::UNAUTHORIZED, "log in");

    let on = app(state(true, None));
    let req = request("GET", "/api/namespaces/team-a/runs")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&on, req).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["items"], json!([]), "{body}");
    // Details are never public.
    let req = request("GET", "/api/namespaces/team-a/runs/r1")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&on, req).await;
    assert_error(code, &body, StatusCode::UNAUTHORIZED, "log in");
}

#[tokio::test]
async fn a_kubernetes_403_is_passed_through_with_its_message() {
    let app = app(state(false, None));
    let req = request("GET", "/api/namespaces/team-a/runs/r1")
        .header(header::AUTHORIZATION, "Bearer bob-token")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_error(
        code,
        &body,
        StatusCode::FORBIDDEN,
        "User \"bob\" cannot get",
    );
    assert_eq!(body["error"]["reason"], "Forbidden", "{body}");
    let text = body.to_string();
    assert!(!text.contains("bob-token"), "the token leaked: {text}");
}

#[tokio::test]
async fn an_invalid_bearer_token_is_401() {
    let app = app(state(true, None));
    let req = request("GET", "/api/namespaces/team-a/runs")
        .header(header::AUTHORIZATION, "Bearer wrong-token")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED, "{body}");
    assert!(!body.to_string().contains("wrong-token"), "{body}");
}

#[tokio::test]
async fn unknown_api_routes_are_404_as_json_and_the_ui_serves_the_rest() {
    let app = app(state(false, None));
    for path in ["/api/nope", "/api", "/v1/nope"] {
        let req = request("GET", path).body(Body::empty()).unwrap();
        let (code, _, body) = send(&app, req).await;
        assert_error(code, &body, StatusCode::NOT_FOUND, "no such endpoint");
    }
    let req = request("GET", "/runs/team-a/r1")
        .body(Body::empty())
        .unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let ct = resp.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(ct.starts_with("text/html"), "{ct}");
}

#[tokio::test]
async fn a_wrong_method_on_an_api_route_is_405() {
    let app = app(state(false, None));
    let req = request("DELETE", "/api/namespaces")
        .header(header::AUTHORIZATION, "Bearer alice-token")
        .body(Body::empty())
        .unwrap();
    let (code, _, _) = send(&app, req).await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn the_operations_access_check_asks_with_the_callers_own_token() {
    let app = app(state(true, None));
    let path = "/api/namespaces/team-a/runs/shell/operations/access";
    for (token, allowed) in [("alice-token", true), ("bob-token", false)] {
        let cookie = login(&app, token).await;
        let req = request("GET", path)
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap();
        let (code, _, body) = send(&app, req).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        assert_eq!(body["allowed"], allowed, "{token}: {body}");
        assert_eq!(
            body["access"],
            json!({"verb": "create", "group": "kruntimes.io", "resource": "runs",
                   "subresource": "operations", "namespace": "team-a", "name": "shell"}),
        );
        assert_eq!(body.get("reason").is_some(), allowed, "{body}");
    }
    // Another Run is not covered by alice's grant: the question names the Run.
    let cookie = login(&app, "alice-token").await;
    let req = request("GET", "/api/namespaces/team-a/runs/other/operations/access")
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .unwrap();
    let (_, _, body) = send(&app, req).await;
    assert_eq!(body["allowed"], false, "{body}");
    // Without credentials it is 401, even with public read on (never the ServiceAccount's answer).
    let (code, _, body) = send(&app, request("GET", path).body(Body::empty()).unwrap()).await;
    assert_error(code, &body, StatusCode::UNAUTHORIZED, "log in");
    // A bad name is 400 and asks nothing.
    let (code, _, body) = send(
        &app,
        request(
            "GET",
            "/api/namespaces/team-a/runs/Not_A_Name/operations/access",
        )
        .body(Body::empty())
        .unwrap(),
    )
    .await;
    assert_error(code, &body, StatusCode::BAD_REQUEST, "run");
}

async fn namespaces_of(app: &axum::Router, token: &str) -> Value {
    let req = request("GET", "/api/namespaces")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(app, req).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    body
}

fn names(body: &Value) -> Vec<&str> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_caller_who_may_not_list_namespaces_gets_those_they_may_read() {
    let app = app(state(false, None));
    // alice may list Runs only in team-a: not default (the login help's old
    // namespace), not team-b.
    let body = namespaces_of(&app, "alice-token").await;
    assert_eq!(names(&body), ["team-a"], "{body}");
    assert_eq!(body["items"][0]["readable"], true, "{body}");
    assert_eq!(body["home"], "team-a", "{body}");
    assert!(body.get("summary").is_none(), "{body}");
}

#[tokio::test]
async fn a_service_account_lands_in_its_own_namespace() {
    let app = app(state(false, None));
    // team-b comes second in the list but is the ServiceAccount's own.
    let body = namespaces_of(&app, "dana-token").await;
    assert_eq!(names(&body), ["team-a", "team-b"], "{body}");
    assert_eq!(body["home"], "team-b", "{body}");
}

#[tokio::test]
async fn a_caller_who_may_read_nowhere_gets_no_namespace_and_no_home() {
    let app = app(state(true, None));
    let body = namespaces_of(&app, "bob-token").await;
    assert_eq!(body["items"], json!([]), "{body}");
    assert!(body.get("home").is_none(), "{body}");
    // Without a credential (public read on or off) no namespace is named.
    for public_read in [true, false] {
        let anon = self::app(state(public_read, None));
        let req = request("GET", "/api/namespaces")
            .body(Body::empty())
            .unwrap();
        let (code, _, body) = send(&anon, req).await;
        assert_error(code, &body, StatusCode::UNAUTHORIZED, "log in");
        assert!(!body.to_string().contains("team-b"), "{body}");
    }
}

#[tokio::test]
async fn a_watch_needs_a_credential_and_a_known_kind() {
    let app = app(state(true, None));
    // Public read covers summaries, never a watch.
    let req = request("GET", "/api/namespaces/team-a/watch?runs=")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_error(code, &body, StatusCode::UNAUTHORIZED, "log in");
    for (query, says) in [
        ("pods=", "unknown parameter \"pods\""),
        ("runs=abc", "resourceVersion"),
        ("", "at least one"),
    ] {
        let req = request("GET", &format!("/api/namespaces/team-a/watch?{query}"))
            .header(header::AUTHORIZATION, "Bearer alice-token")
            .body(Body::empty())
            .unwrap();
        let (code, _, body) = send(&app, req).await;
        assert_error(code, &body, StatusCode::BAD_REQUEST, says);
    }
    // A caller Kubernetes refuses gets its 403, with the access it needed.
    let req = request("GET", "/api/namespaces/team-a/watch?runs=")
        .header(header::AUTHORIZATION, "Bearer bob-token")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_error(code, &body, StatusCode::FORBIDDEN, "cannot");
    assert_eq!(body["error"]["access"]["resource"], "runs", "{body}");
}

async fn namespace_check(app: &axum::Router, token: Option<&str>, ns: &str) -> (StatusCode, Value) {
    let mut req = request("GET", &format!("/api/namespaces/{ns}"));
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let (code, _, body) = send(app, req.body(Body::empty()).unwrap()).await;
    (code, body)
}

/// A caller whose own read of a namespace is forbidden never learns whether
/// it exists, public read on or off; without a credential the answer is 401.
#[tokio::test]
async fn whether_a_namespace_exists_is_told_only_from_the_callers_own_read() {
    let public = app(state(true, None));
    let private = app(state(false, None));
    for app in [&public, &private] {
        for ns in ["no-such-ns", "team-b"] {
            for token in ["alice-token", "bob-token"] {
                let (code, body) = namespace_check(app, Some(token), ns).await;
                assert_eq!(code, StatusCode::OK, "{body}");
                assert_eq!(
                    body,
                    json!({"name": ns}),
                    "the existence of {ns} leaked to {token}"
                );
            }
        }
        let (code, body) = namespace_check(app, None, "team-a").await;
        assert_error(code, &body, StatusCode::UNAUTHORIZED, "log in");
    }
    let (code, body) = namespace_check(&public, Some("alice-token"), "Not_A_Namespace").await;
    assert_error(code, &body, StatusCode::BAD_REQUEST, "namespace");
}
