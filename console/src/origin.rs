//! The credentials layer of `/api` and `/v1`: resolves who is calling once
//! per request and enforces the Origin rule for credentials a browser
//! attaches by itself.

use kruntimes_core::failure::Refusal as _;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, Method, header};
use kruntimes_core::tls::PeerCertificates;

use crate::credentials::{Credentials, Source, resolve};
use crate::error::{ConsoleError, refuse};
use crate::state::{ConsoleState, RequestCredentials};

/// Does `Origin` name this server? The host comes from `Host` (HTTP/1.1) or
/// the request URI's authority (HTTP/2 `:authority`).
pub fn same_origin(headers: &HeaderMap, uri: &http::Uri) -> bool {
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
    if let Some(c) = &creds
        && let Some(refusal) = cross_origin(c, req.method(), req.headers(), req.uri())
    {
        return refuse(req.into_body(), refusal).await;
    }
    req.extensions_mut()
        .insert(RequestCredentials(creds.map(Arc::new)));
    next.run(req).await
}

/// The Origin rule: credentials a browser attaches by itself (the cookie, a
/// client certificate) must come from our own origin on state changes and
/// upgrades. A CLI sends no Origin: fine with a certificate, while a cookie
/// state change always needs a matching one. `Some` is the refusal.
pub fn cross_origin(
    c: &Credentials,
    method: &Method,
    headers: &HeaderMap,
    uri: &http::Uri,
) -> Option<ConsoleError> {
    let changes_state = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    let is_ws = headers
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if !(changes_state || is_ws) {
        return None;
    }
    let has_origin = headers.contains_key(header::ORIGIN);
    let refused = match c.source {
        Source::Header => false,
        Source::Cookie => !same_origin(headers, uri),
        Source::Certificate => has_origin && !same_origin(headers, uri),
    };
    if !refused {
        return None;
    }
    let what = if c.source == Source::Cookie {
        "the session cookie"
    } else {
        "a client certificate"
    };
    Some(ConsoleError::forbidden(format!(
        "cross-origin request refused: a request authenticated by {what} must come from the Console's own origin"
    )))
}
