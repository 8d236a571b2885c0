//! The Runtime access handler (`/v1/...`): function invoke and session
//! operations, authorized by SubjectAccessReview and forwarded to the Run's
//! Runtime gateway with the caller's identity in `X-Remote-*` headers.

#[cfg(test)]
mod diff_tests;
pub mod failure;
pub mod fast;
pub mod frames;
pub mod gateway;
pub mod memo;
pub mod policy;
pub mod runs;
#[cfg(test)]
mod testkit;
pub mod upstream;
pub mod ws;

use kruntimes_core::failure::{Reason, Refusal as _};
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header};
use http_body_util::BodyExt;
use kruntimes_core::auth::access::Decision;
use kruntimes_core::auth::{AccessReview, Caller as Identity, Recheck, ResourceAttributes};
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::limit::{ByteBudget, CapReached, Caps, Held, Slot};
use kruntimes_core::names::{is_dns1123_label, is_dns1123_subdomain};
use kruntimes_core::routes::{self, Route};
use kruntimes_core::trace;
use kruntimes_transport::serve::{ConnectionLocal, Watchdog};
use rustls::ClientConfig;
use std::time::Instant;

use self::gateway::{GatewayResolver, GatewayTarget};
use self::memo::CallerMemo;
use self::policy::{
    INVOCATION_ID, MAX_INVOCATION_ID, answers_call, broke_off, connection_listed, is_stripped,
};
use self::runs::{Mode, RunCache};
use self::upstream::{GatewayBody, Upstreams, framing, write_request_head};
use crate::api::types::AccessRequest;
use crate::credentials::Credentials;
use crate::error::{ConsoleError, REFUSAL_DRAIN_BYTES, drain, refuse};
use crate::state::RequestCredentials;
pub use failure::AccessFailure;

/// What the buffer budget bounds, and its flag (see [`AccessState::buffered`]).
pub const BUFFERED_WHAT: &str = "bytes of /v1 request bodies and WebSocket frames held";
/// The flag of the buffer budget.
pub const BUFFERED_FLAG: &str = "--access-max-buffered-bytes";
/// The flag of one caller's share of the buffer budget.
pub const BUFFERED_PER_CALLER_FLAG: &str = "--access-max-buffered-bytes-per-caller";

/// Bounds of `/v1` calls (`console.access`).
#[derive(Clone, Copy, Debug)]
pub struct AccessBounds {
    /// Largest request body, in bytes; a larger one is answered 413 and nothing
    /// is forwarded (`--access-max-request-bytes`).
    pub max_request_bytes: usize,
    /// Largest gateway response body relayed for an invoke, in bytes; a larger
    /// one breaks the call off (`--access-max-response-bytes`).
    pub max_response_bytes: usize,
    /// Largest WebSocket message relayed on `operations:ws`, either way, in
    /// bytes (`--access-max-ws-message-bytes`).
    pub max_ws_message_bytes: usize,
    /// An `operations:ws` socket with no frame either way for this long is
    /// closed (`--access-idle-timeout`).
    pub idle_timeout: Duration,
    /// Longest wait for a gateway's answer to an invoke, its body included
    /// (`--access-total-timeout`).
    pub total_timeout: Duration,
    /// Longest wait for each step of reaching a gateway: the name lookup, the
    /// connection, the TLS handshake (`--access-connect-timeout`).
    pub connect_timeout: Duration,
    /// Longest wait for a request body, once the call is admitted.
    pub body_timeout: Duration,
}

/// What the handler shares.
pub struct AccessState {
    /// The Runs the calls name, from a watch-backed cache.
    pub runs: RunCache,
    /// Finds the gateway Service of a Run's Runtime and the addresses to dial.
    pub gateways: GatewayResolver,
    /// Authorizes calls with SubjectAccessReview (`create` on `runs/invoke` or
    /// `runs/operations`).
    pub access: AccessReview,
    /// TLS to the gateways: their CA, and the Console's client certificate.
    pub tls: Arc<ClientConfig>,
    /// The gateway client of every invoke, on both paths: a pool of
    /// connections per connection thread, and one for the main runtime.
    pub upstreams: Arc<Upstreams>,
    /// The bounds of every call.
    pub bounds: AccessBounds,
    /// Concurrent invokes and operations sockets, in total and per caller.
    pub calls: Arc<Caps>,
    /// Bytes of invoke bodies held before they are forwarded and of
    /// WebSocket frames not yet whole or not yet written, across every call
    /// and per caller (`--access-max-buffered-bytes`,
    /// `--access-max-buffered-bytes-per-caller`).
    pub buffered: Arc<ByteBudget>,
    /// Re-checks an open operations socket's access.
    pub recheck: Recheck,
    /// Operation sockets close (1001) when the process stops.
    pub lifecycle: Lifecycle,
}

impl AccessState {
    /// The handler's state: no budget on buffered bytes, one gateway client and
    /// a lifecycle of its own until the `with_*` methods say otherwise.
    pub fn new(
        runs: RunCache,
        gateways: GatewayResolver,
        access: AccessReview,
        tls: Arc<ClientConfig>,
        bounds: AccessBounds,
        calls: Arc<Caps>,
        recheck: Recheck,
    ) -> Self {
        let upstreams = Arc::new(Upstreams::new(0, tls.clone(), bounds.connect_timeout));
        Self {
            runs,
            gateways,
            access,
            tls,
            upstreams,
            bounds,
            calls,
            buffered: ByteBudget::new(
                BUFFERED_WHAT,
                usize::MAX,
                BUFFERED_FLAG,
                usize::MAX,
                BUFFERED_PER_CALLER_FLAG,
            ),
            recheck,
            lifecycle: Lifecycle::default(),
        }
    }

    /// Invoke bodies held at once are bounded by `budget`.
    pub fn with_buffer_budget(mut self, budget: Arc<ByteBudget>) -> Self {
        self.buffered = budget;
        self
    }

    /// One pool of gateway connections per connection thread (`threads` of
    /// them) besides the main one.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.upstreams = Arc::new(Upstreams::new(
            threads,
            self.tls.clone(),
            self.bounds.connect_timeout,
        ));
        self
    }

    /// Operation sockets close when `lifecycle` stops.
    pub fn with_lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }
}

/// The invoke route's template.
pub const INVOKE_ROUTE: &str = "/v1/namespaces/{ns}/runs/{name}/{uid}/invoke";

/// The `/v1` routes; every one is counted as `v1`.
pub static ROUTES: &[Route<Arc<AccessState>>] = &[
    Route {
        path: INVOKE_ROUTE,
        name: "v1",
        methods: || post(invoke),
    },
    Route {
        path: "/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws",
        name: "v1",
        methods: || get(operations),
    },
];

/// The `/v1` routes on `state`.
pub fn router(state: Arc<AccessState>) -> Router {
    routes::register(ROUTES, Router::new()).with_state(state)
}

pub(crate) fn check_path(ns: &str, name: &str, uid: &str) -> Result<(), ConsoleError> {
    if !is_dns1123_label(ns) {
        return Err(ConsoleError::bad_request(format!(
            "namespace {ns:?} is not a valid name"
        )));
    }
    if !is_dns1123_subdomain(name) {
        return Err(ConsoleError::bad_request(format!(
            "run name {name:?} is not a valid name"
        )));
    }
    let uid_ok = !uid.is_empty()
        && uid.len() <= 64
        && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !uid_ok {
        return Err(ConsoleError::bad_request(format!(
            "{uid:?} is not a Run UID"
        )));
    }
    Ok(())
}

/// `create` on `runs/<sub>` of one Run.
fn run_attributes(ns: &str, name: &str, sub: &'static str) -> ResourceAttributes {
    ResourceAttributes {
        verb: "create",
        group: "kruntimes.io",
        resource: "runs",
        subresource: Some(sub),
        namespace: ns.to_owned(),
        name: Some(name.to_owned()),
    }
}

/// Authenticates and authorizes a `/v1` call: `create` on `runs/<sub>`.
/// With the connection's `memo`, a decision it kept is reused (until the
/// access cache's deadline for it) and a new one from the cache is kept.
async fn admit<'a>(
    state: &AccessState,
    caller: &'a RequestCredentials,
    ns: &str,
    name: &str,
    sub: &'static str,
    memo: Option<&ConnectionLocal>,
) -> Result<&'a Arc<Credentials>, ConsoleError> {
    let Some(creds) = &caller.0 else {
        return Err(ConsoleError::unauthorized(
            "send a bearer token, a client certificate or log in",
        ));
    };
    // Refused before it is authorized: the gateway must see the identity
    // that was authorized, on both paths.
    if let Some(why) = creds.caller.unforwardable() {
        return Err(ConsoleError::forbidden(format!(
            "this identity cannot be passed to the Runtime gateway as it was authenticated: {why}"
        )));
    }
    let kept = memo.and_then(|m| {
        m.with(|c: &mut CallerMemo| c.decision(creds, ns, name, sub, Instant::now()))
    });
    let decision = match kept {
        Some(d) => {
            state.access.reused();
            Ok(d)
        }
        None => {
            let attrs = run_attributes(ns, name, sub);
            state
                .access
                .check_until(&creds.caller, &attrs)
                .await
                .map(|(d, until)| {
                    if let (Some(m), Some(until)) = (memo, until) {
                        m.with(|c: &mut CallerMemo| {
                            c.keep_decision(creds, ns, name, sub, d.clone(), until)
                        });
                    }
                    d
                })
        }
    };
    match decision {
        Ok(Decision::Allowed) => Ok(creds),
        Ok(Decision::Denied(_)) => {
            let mut a = AccessRequest::new("create", "kruntimes.io", "runs", ns, Some(name));
            a.subresource = Some(sub.into());
            Err(ConsoleError::forbidden(format!(
                "User {:?} cannot create resource \"runs/{sub}\" in API group \"kruntimes.io\" for run {name:?} in the namespace {ns:?}",
                creds.caller.user
            ))
            .with_access(a))
        }
        Err(e) => Err(ConsoleError::unavailable(e.to_string())),
    }
}

/// A 429 for a reached cap, naming it and its flag.
pub fn cap_reached(e: &CapReached) -> ConsoleError {
    e.into()
}

fn take_slot(state: &AccessState, identity: &Identity) -> Result<Slot, ConsoleError> {
    state
        .calls
        .acquire(&identity.user)
        .map_err(|e| cap_reached(&e))
}

/// The invocation ID of the request, or a new one.
fn invocation_id(headers: &HeaderMap) -> Result<HeaderValue, ConsoleError> {
    match headers.get(INVOCATION_ID) {
        Some(v) => {
            let ok = !v.is_empty()
                && v.len() <= MAX_INVOCATION_ID
                && v.as_bytes().iter().all(|b| b.is_ascii_graphic());
            if ok {
                Ok(v.clone())
            } else {
                Err(ConsoleError::bad_request(format!(
                    "X-Kruntime-Invocation-ID must be 1 to {MAX_INVOCATION_ID} visible ASCII characters (got {} bytes)",
                    v.len()
                )))
            }
        }
        None => {
            use rand::Rng;
            let n = rand::rng().random::<u128>();
            let mut id = *b"inv-00000000000000000000000000000000";
            kruntimes_core::observe::lower_hex(n, &mut id[4..]);
            HeaderValue::from_bytes(&id).map_err(|e| ConsoleError::internal(e.to_string()))
        }
    }
}

/// Reads the request body up to the bound; nothing is forwarded past it.
/// Reads the request body up to the bound; nothing is forwarded past it. The
/// bytes read are held under the buffer budget in `held`.
async fn bounded_body(body: Body, max: usize, held: &mut Held) -> Result<Bytes, ConsoleError> {
    let mut body = body;
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| ConsoleError::bad_request("the request body could not be read"))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max {
                drain(body, max).await;
                return Err(too_large(max));
            }
            if let Err(e) = held.reserve_to(buf.len() + data.len()) {
                drain(body, REFUSAL_DRAIN_BYTES).await;
                return Err(ConsoleError::from(&e));
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

pub(crate) fn too_large(max: usize) -> ConsoleError {
    ConsoleError::too_large(format!(
        "the request body exceeds {max} bytes; nothing was forwarded"
    ))
}

async fn invoke(
    State(state): State<Arc<AccessState>>,
    Extension(caller): Extension<RequestCredentials>,
    Path((ns, name, uid)): Path<(String, String, String)>,
    req: Request,
) -> Response {
    invoke_call(&state, &caller, &ns, &name, &uid, req).await
}

/// The invoke handler's work, for the router and for HTTP/2 invokes served
/// without it ([`fast::InvokeFastPath`]'s `direct`).
pub(crate) async fn invoke_call(
    state: &AccessState,
    caller: &RequestCredentials,
    ns: &str,
    name: &str,
    uid: &str,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    // Everything that can refuse the call is decided from the headers, before
    // any of the body is read; a refusal drains only a little of it.
    let memo = parts.extensions.get::<ConnectionLocal>();
    let admitted = match admit_invoke(state, caller, ns, name, uid, &parts.headers, memo).await {
        Ok(a) => a,
        Err(e) => {
            let announced = content_length(&parts.headers);
            let max = state.bounds.max_request_bytes;
            if e.is(Reason::PayloadTooLarge)
                && announced.is_some_and(|len| len <= max.saturating_mul(2))
            {
                drain(body, announced.unwrap_or(0)).await;
                return e.into_response();
            }
            return refuse(body, e).await;
        }
    };
    match forward_invoke(state, admitted, parts, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

fn content_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
}

/// An invoke that passed every check made from its headers.
pub(crate) struct AdmittedInvoke {
    /// The caller's credentials, shared with the request (not copied).
    pub creds: Arc<Credentials>,
    pub inv: HeaderValue,
    pub target: Arc<GatewayTarget>,
    pub slot: Slot,
    /// The gateway's path, built from the validated parameters (never the
    /// request's own spelling: `team%2Da` was authorized as `team-a`).
    pub path: String,
    /// The body's bytes under the buffer budget: its announced length once
    /// admitted, grown as it is read when it announces none.
    pub held: Held,
}

/// The gateway's path of an invoke (built without the formatter: on every call).
fn gateway_path(ns: &str, name: &str, uid: &str) -> String {
    let parts = ["/v1/namespaces/", ns, "/runs/", name, "/", uid, "/invoke"];
    let mut path = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        path.push_str(p);
    }
    path
}

pub(crate) async fn admit_invoke(
    state: &AccessState,
    caller: &RequestCredentials,
    ns: &str,
    name: &str,
    uid: &str,
    headers: &HeaderMap,
    memo: Option<&ConnectionLocal>,
) -> Result<AdmittedInvoke, ConsoleError> {
    let max = state.bounds.max_request_bytes;
    if content_length(headers).is_some_and(|len| len > max) {
        return Err(too_large(max));
    }
    check_path(ns, name, uid)?;
    let inv = invocation_id(headers)?;
    let creds = admit(state, caller, ns, name, "invoke", memo)
        .await?
        .clone();
    let slot = take_slot(state, &creds.caller)?;
    let run = state.runs.resolve(ns, name, uid, Mode::Function)?;
    let target = state.gateways.target(ns, &run.spec.runtime).await?;
    // An announced length is reserved whole before any of the body is read
    // (a refusal comes first, and the buffer is sized once); a body without
    // a length grows its share as it arrives.
    let mut held = state.buffered.hold(&creds.caller.user);
    if let Some(len) = content_length(headers) {
        held.reserve_to(len).map_err(|e| ConsoleError::from(&e))?;
    }
    Ok(AdmittedInvoke {
        creds,
        inv,
        target,
        slot,
        path: gateway_path(ns, name, uid),
        held,
    })
}

/// The second half of an invoke: reads the body within its bound and its
/// deadline and relays it to the gateway (admission came from the headers).
async fn forward_invoke(
    state: &AccessState,
    admitted: AdmittedInvoke,
    parts: http::request::Parts,
    body: Body,
) -> Result<Response, ConsoleError> {
    let AdmittedInvoke {
        creds,
        inv,
        target,
        slot,
        path,
        mut held,
    } = admitted;
    let timeout = state.bounds.body_timeout;
    // The (bounded) body is read before any answer, so an HTTP/2 client that
    // is still sending gets the answer rather than a reset stream.
    let read = bounded_body(body, state.bounds.max_request_bytes, &mut held);
    let body = tokio::time::timeout(timeout, read).await.map_err(|_| {
        ConsoleError::from(AccessFailure::BodyTimeout {
            secs: timeout.as_secs_f32(),
        })
    })??;
    let span =
        trace::enabled().then(|| trace::gateway_span(INVOKE_ROUTE, &target.host, target.port));
    let mut req = Vec::with_capacity(1024 + body.len());
    write_request_head(
        &mut req,
        &path,
        &target,
        &parts.headers,
        &creds.caller,
        &inv,
        span.as_ref(),
        body.len() as u64,
    );
    req.extend_from_slice(&body);
    drop(body);
    // The answer, its body included, within the total timeout.
    let bounds = &state.bounds;
    let deadline = tokio::time::Instant::now() + bounds.total_timeout;
    let mut timer = Watchdog::new(bounds.total_timeout.min(bounds.connect_timeout));
    let exchange = state
        .upstreams
        .exchange(&mut timer, &target, &req, deadline);
    let exchange = match &span {
        Some(span) => {
            use tracing::Instrument;
            let x = exchange.instrument(span.clone()).await;
            trace::record_call(span, x.as_ref().ok().map(|(_, head)| head.status));
            x
        }
        None => exchange.await,
    };
    drop(req);
    // The body went out with the request: its bytes are no longer held.
    drop(held);
    let (up, head) = exchange?;
    // An answer to another call: the connection is dropped with it.
    answers_call(&up.headers, &inv, &target)?;
    let max = bounds.max_response_bytes;
    let framing = framing(head, &up.headers, max, &target)?;
    // The gateway's fields, less what is never relayed; the body is
    // relayed as it is, with its length.
    let listed = connection_listed(&up.headers);
    let mut headers = HeaderMap::with_capacity(up.headers.len() + crate::headers::ADDED_FIELDS);
    for (k, v) in &up.headers {
        if (k == header::CONTENT_LENGTH && !framing.no_body) || !is_stripped(k, &listed) {
            headers.append(k.clone(), v.clone());
        }
    }
    // Each call's own: never indexed in HPACK (see `request_id_value`).
    let mut inv = inv;
    inv.set_sensitive(true);
    headers.insert(INVOCATION_ID, inv);
    let status = http::StatusCode::from_u16(head.status).map_err(|_| broke_off())?;
    let body = GatewayBody::new(
        up,
        framing,
        max,
        timer.into_sleep(deadline),
        state.upstreams.clone(),
        target,
        slot,
    );
    let mut out = Response::new(Body::new(body));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}

async fn operations(
    State(state): State<Arc<AccessState>>,
    Extension(caller): Extension<RequestCredentials>,
    Path((ns, name, uid)): Path<(String, String, String)>,
    req: Request,
) -> Response {
    let (mut parts, _body) = req.into_parts();
    // Access is decided before the upgrade is required, so a plain GET tells a
    // client (the browser cannot read a refused upgrade's status) whether it may.
    if let Err(e) = check_path(&ns, &name, &uid) {
        return e.into_response();
    }
    let identity = match admit(&state, &caller, &ns, &name, "operations", None).await {
        Ok(creds) => creds.caller.clone(),
        Err(e) => return e.into_response(),
    };
    // An operations socket holds a /v1 place for its whole life.
    let slot = match take_slot(&state, &identity) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let Some(upgrade) = ws::upgrade_request(&mut parts) else {
        return ConsoleError::bad_request(
            "operations:ws needs a WebSocket upgrade (HTTP/1.1 GET with Upgrade: websocket)",
        )
        .into_response();
    };
    match ws::open(
        state,
        identity,
        slot,
        &ns,
        &name,
        &uid,
        &parts.headers,
        upgrade,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::policy::*;
    use super::*;
    use http::HeaderName;

    #[test]
    fn strips_credentials_and_hop_by_hop() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, x-custom".parse().unwrap());
        let listed = connection_listed(&h);
        for n in [
            "authorization",
            "cookie",
            "x-remote-user",
            "x-remote-group",
            "transfer-encoding",
            "x-custom",
            "host",
        ] {
            assert!(is_stripped(&HeaderName::from_static(n), &listed), "{n}");
        }
        for n in ["content-type", "accept", "x-kruntime-invocation-id"] {
            assert!(!is_stripped(&HeaderName::from_static(n), &listed), "{n}");
        }
    }

    #[test]
    fn only_allow_listed_request_headers_are_forwarded() {
        for n in FORWARDED_REQUEST_HEADERS {
            assert!(
                is_forwarded_request_header(&HeaderName::from_static(n)),
                "{n}"
            );
        }
        for n in [
            "authorization",
            "cookie",
            "x-remote-user",
            "x_remote_user",
            "x_remote_group",
            "impersonate-user",
            "impersonate_group",
            "forwarded",
            "x-forwarded-for",
            "x-forwarded-client-cert",
            "x-real-ip",
            "x-foo",
            "host",
            "connection",
            "content-length",
            "sec-websocket-key",
        ] {
            assert!(
                !is_forwarded_request_header(&HeaderName::from_static(n)),
                "{n}"
            );
        }
        for n in [
            "X_Remote_User",
            "X-FORWARDED-HOST",
            "Proxy_Authorization",
            "IMPERSONATE-UID",
        ] {
            assert!(is_identity_header(n), "{n}");
        }
        assert!(!is_identity_header("content-type"));
        for n in FORWARDED_REQUEST_HEADERS {
            assert!(
                !is_identity_header(n),
                "{n} is allow-listed but carries identity"
            );
        }
    }

    /// Does this name, lower-cased with `_` read as `-` (as CGI, WSGI, Rack
    /// and nginx's `underscores_in_headers` do), carry identity or trust?
    fn is_identity_header(name: &str) -> bool {
        let n = name.to_ascii_lowercase().replace('_', "-");
        matches!(
            n.as_str(),
            "authorization"
                | "cookie"
                | "forwarded"
                | "x-real-ip"
                | "x-client-ip"
                | "true-client-ip"
        ) || ["x-remote-", "impersonate-", "x-forwarded-", "proxy-"]
            .iter()
            .any(|p| n.starts_with(p))
    }

    #[test]
    fn invocation_ids() {
        let mut h = HeaderMap::new();
        let made = |h: &HeaderMap| invocation_id(h).unwrap().to_str().unwrap().to_owned();
        let (a, b) = (made(&h), made(&h));
        for id in [&a, &b] {
            let hex = id.strip_prefix("inv-").expect(id);
            assert_eq!(hex.len(), 32, "{id}");
            assert!(
                hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')),
                "{id}"
            );
        }
        assert_ne!(a, b);
        assert_eq!(
            gateway_path("team-a", "fn", "u-1"),
            "/v1/namespaces/team-a/runs/fn/u-1/invoke"
        );
        h.insert(INVOCATION_ID, "a".repeat(128).parse().unwrap());
        assert!(invocation_id(&h).is_ok());
        h.insert(INVOCATION_ID, "a".repeat(129).parse().unwrap());
        assert_eq!(
            invocation_id(&h).unwrap_err().code(),
            http::StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn identity_as_headers() {
        let id = Identity {
            user: "alice".into(),
            uid: Some("u1".into()),
            groups: vec!["a".into(), "b".into()],
            extra: [("scopes.example/x".to_string(), vec!["s".to_string()])]
                .into_iter()
                .collect(),
            method: kruntimes_core::auth::AuthMethod::BearerToken,
            token: None,
            expires_at: None,
        };
        let mut h = HeaderMap::new();
        identity_headers(&id, &mut h);
        assert_eq!(h["x-remote-user"], "alice");
        assert_eq!(h.get_all("x-remote-group").iter().count(), 2);
        assert_eq!(h["x-remote-extra-scopes.example%2Fx"], "s");
    }

    #[test]
    fn path_checks() {
        assert!(check_path("team-a", "run-1", "6f1c2b9e-1111-4a2b-9c3d-000000000001").is_ok());
        assert!(check_path("team-a", "run-1", "../x").is_err());
        assert!(check_path("Team", "run-1", "abc").is_err());
    }
}
