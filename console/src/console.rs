//! The Console listener: web UI, `/api` and `/v1`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, header};
use kruntimes_core::auth::{AccessReview, Authenticator, BearerToken};
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::metrics::Metrics;
use kruntimes_core::serve::PeerCertificates;

use crate::api::ApiBody;
use crate::api::types::{SessionInfo, SessionLogin};
use crate::clients::UserClients;
use crate::credentials::{Credentials, Source, auth_error, resolve};
use crate::error::{ConsoleError, refuse};
use crate::session::SessionSealer;

/// Everything the Console's handlers share.
pub struct ConsoleState {
    pub authn: Authenticator,
    pub access: AccessReview,
    pub sealer: Arc<SessionSealer>,
    pub users: UserClients,
    /// The Console's own identity: TokenReview, SubjectAccessReview,
    /// public-read summaries and the /v1 Run cache. Never reads on a user's behalf.
    pub service_account: kube::Client,
    pub public_read: bool,
    pub metrics: Metrics,
    /// Long-lived answers (follows) end when the process stops.
    pub lifecycle: Lifecycle,
    /// Open `/api` log follows, in total and per caller.
    pub follows: Arc<kruntimes_core::limit::Caps>,
    /// Re-checks an open follow's access.
    pub recheck: kruntimes_core::auth::Recheck,
}

/// The resolved credentials of a request (absent: none given).
#[derive(Clone, Debug)]
pub struct Caller(pub Option<std::sync::Arc<Credentials>>);

/// Does `Origin` name this server? The host comes from `Host` (HTTP/1.1) or
/// the request URI's authority (HTTP/2 `:authority`).
fn same_origin(headers: &HeaderMap, uri: &http::Uri) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()));
    host.is_some_and(|h| origin.eq_ignore_ascii_case(&format!("https://{h}")))
}

/// Resolves credentials once per request and enforces the Origin rule on
/// state changes and upgrades authenticated by the cookie or a client
/// certificate.
pub async fn credentials(
    State(state): State<Arc<ConsoleState>>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<PeerCertificates>()
        .cloned()
        .unwrap_or_default();
    let creds = match resolve(&state.authn, &state.sealer, req.headers(), &peer).await {
        Ok(c) => c,
        Err(e) => return refuse(req.into_body(), e).await,
    };
    let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    // Credentials a browser attaches by itself (the cookie, a client
    // certificate) must come from our own origin on state changes and
    // upgrades. A CLI sends no Origin: fine with a certificate, while a
    // cookie state change always needs a matching one.
    if let Some(c) = &creds
        && (changes_state || is_ws)
    {
        let has_origin = req.headers().contains_key(header::ORIGIN);
        let refused = match c.source {
            Source::Header => false,
            Source::Cookie => !same_origin(req.headers(), req.uri()),
            Source::Certificate => has_origin && !same_origin(req.headers(), req.uri()),
        };
        if refused {
            let what = if c.source == Source::Cookie {
                "the session cookie"
            } else {
                "a client certificate"
            };
            let refusal = ConsoleError::forbidden(format!(
                "cross-origin request refused: a request authenticated by {what} must come from the Console's own origin"
            ));
            return refuse(req.into_body(), refusal).await;
        }
    }
    req.extensions_mut()
        .insert(Caller(creds.map(std::sync::Arc::new)));
    next.run(req).await
}

/// Largest login body (a 16 KiB token plus JSON).
pub const MAX_LOGIN_BODY: usize = 20 << 10;

pub async fn session_get(
    State(state): State<Arc<ConsoleState>>,
    axum::Extension(Caller(creds)): axum::Extension<Caller>,
) -> Response {
    Json(SessionInfo {
        authenticated: creds.is_some(),
        username: creds.map(|c| c.caller.user.clone()),
        public_read: Some(state.public_read),
    })
    .into_response()
}

pub async fn session_post(
    State(state): State<Arc<ConsoleState>>,
    uri: http::Uri,
    headers: HeaderMap,
    ApiBody(body): ApiBody,
) -> Response {
    match login(&state, &headers, &uri, &body).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

async fn login(
    state: &ConsoleState,
    headers: &HeaderMap,
    uri: &http::Uri,
    body: &[u8],
) -> Result<Response, ConsoleError> {
    // Login CSRF: a browser always sends Origin on a POST; it must be ours.
    if headers.contains_key(header::ORIGIN) && !same_origin(headers, uri) {
        return Err(ConsoleError::forbidden("cross-origin login refused"));
    }
    let login: SessionLogin = serde_json::from_slice(body).map_err(|e| {
        ConsoleError::bad_request(format!("the body must be JSON {{\"token\": \"...\"}}: {e}"))
    })?;
    let token = BearerToken::new(login.token.trim()).map_err(auth_error)?;
    let caller = state
        .authn
        .tokens()
        .review(token.clone())
        .await
        .map_err(auth_error)?;
    let sealed = state
        .sealer
        .seal(&token)
        .ok_or_else(|| ConsoleError::internal("the session could not be sealed"))?;
    let mut resp = Json(SessionInfo {
        authenticated: true,
        username: Some(caller.user),
        public_read: Some(state.public_read),
    })
    .into_response();
    for c in state.sealer.set_cookies(&sealed) {
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    Ok(resp)
}

pub async fn session_delete(State(state): State<Arc<ConsoleState>>) -> Response {
    let mut resp = Json(SessionInfo {
        authenticated: false,
        username: None,
        public_read: Some(state.public_read),
    })
    .into_response();
    for c in SessionSealer::clear_cookies() {
        if let Ok(v) = HeaderValue::from_str(&c) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    resp
}
