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

use kruntimes_transport::h1;

use crate::credentials::{Credentials, Source, resolve_until};
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

/// Does a request ask to switch protocols? Any `Upgrade` field, whatever
/// its value and however many there are, or a `Connection` field naming
/// `upgrade`. The one answer every part of the Console uses: the Origin rule
/// below, the invoke fast path (which leaves such a request to the router)
/// and the `operations:ws` handler (which accepts only [`websocket_upgrade`]).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE) || h1::has_token(headers, "connection", "upgrade")
}

/// Is a request a WebSocket upgrade the Console answers? Exactly one
/// `Upgrade` field holding only the token `websocket`, and `Connection`
/// naming `upgrade`. Anything else [`is_upgrade`] sees is refused, never
/// switched.
pub fn websocket_upgrade(headers: &HeaderMap) -> bool {
    let mut fields = headers.get_all(header::UPGRADE).iter();
    let only_websocket = match (fields.next(), fields.next()) {
        (Some(v), None) => v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"websocket"),
        _ => false,
    };
    only_websocket && h1::has_token(headers, "connection", "upgrade")
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
    match caller(&state, req.method(), req.headers(), req.uri(), &peer).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => refuse(req.into_body(), e).await,
    }
}

/// The request's caller, as the credentials layer resolves it: its
/// credentials (none for an anonymous caller), refused when they fail or
/// break the Origin rule. The layer, the HTTP/1.1 invoke path and the
/// HTTP/2 direct one all call this.
pub async fn caller(
    state: &ConsoleState,
    method: &Method,
    headers: &HeaderMap,
    uri: &http::Uri,
    peer: &PeerCertificates,
) -> Result<RequestCredentials, ConsoleError> {
    caller_until(state, method, headers, uri, peer)
        .await
        .map(|(c, _)| c)
}

/// [`caller`], and until when credentials from a header token may be
/// taken again for the same token (the token cache's deadline for them).
pub async fn caller_until(
    state: &ConsoleState,
    method: &Method,
    headers: &HeaderMap,
    uri: &http::Uri,
    peer: &PeerCertificates,
) -> Result<(RequestCredentials, Option<std::time::Instant>), ConsoleError> {
    let (creds, until) = resolve_until(&state.authn, &state.sealer, headers, peer).await?;
    if let Some(c) = &creds
        && let Some(refusal) = cross_origin(c, method, headers, uri)
    {
        return Err(refusal);
    }
    Ok((RequestCredentials(creds.map(Arc::new)), until))
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
    if !(changes_state || is_upgrade(headers)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(fields: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in fields {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// (fields, is an upgrade, is a WebSocket upgrade the Console answers)
    #[test]
    fn upgrade_detection_table() {
        type Row = (&'static [(&'static str, &'static str)], bool, bool);
        let table: &[Row] = &[
            (&[], false, false),
            (&[("connection", "keep-alive")], false, false),
            (
                &[("connection", "Upgrade"), ("upgrade", "websocket")],
                true,
                true,
            ),
            (
                &[
                    ("connection", "keep-alive, Upgrade"),
                    ("upgrade", "WebSocket"),
                ],
                true,
                true,
            ),
            (
                &[("connection", "upgrade"), ("upgrade", " websocket ")],
                true,
                true,
            ),
            (&[("upgrade", "websocket")], true, false),
            (&[("connection", "upgrade")], true, false),
            (
                &[("connection", "upgrade"), ("upgrade", "websocket, x-foo")],
                true,
                false,
            ),
            (
                &[("connection", "upgrade"), ("upgrade", "x-foo, websocket")],
                true,
                false,
            ),
            (
                &[
                    ("connection", "upgrade"),
                    ("upgrade", "websocket"),
                    ("upgrade", "x-foo"),
                ],
                true,
                false,
            ),
            (
                &[
                    ("connection", "upgrade"),
                    ("upgrade", "x-foo"),
                    ("upgrade", "websocket"),
                ],
                true,
                false,
            ),
            (
                &[
                    ("connection", "upgrade"),
                    ("upgrade", "websocket"),
                    ("upgrade", "websocket"),
                ],
                true,
                false,
            ),
            (
                &[("connection", "upgrade"), ("upgrade", "h2c")],
                true,
                false,
            ),
            (&[("connection", "upgrade"), ("upgrade", "")], true, false),
        ];
        for (fields, upgrade, ws) in table {
            let h = headers(fields);
            assert_eq!(is_upgrade(&h), *upgrade, "is_upgrade {fields:?}");
            assert_eq!(websocket_upgrade(&h), *ws, "websocket_upgrade {fields:?}");
            assert!(
                !*ws || *upgrade,
                "a WebSocket upgrade is an upgrade: {fields:?}"
            );
        }
    }

    /// Every upgrade the table knows, with the cookie and a foreign Origin,
    /// is refused; from the Console's own origin it passes.
    #[test]
    fn the_origin_rule_covers_every_upgrade() {
        let cookie = Credentials {
            caller: kruntimes_core::auth::Caller {
                user: "operator".into(),
                uid: None,
                groups: Vec::new(),
                extra: Default::default(),
                method: kruntimes_core::auth::AuthMethod::BearerToken,
                token: None,
                expires_at: None,
            },
            source: Source::Cookie,
        };
        let uri = http::Uri::from_static("/v1/namespaces/a/runs/b/c/operations:ws");
        for upgrade in [
            vec!["websocket"],
            vec!["websocket, x-foo"],
            vec!["websocket", "x-foo"],
            vec!["h2c"],
        ] {
            let mut fields = vec![
                ("host", "console.example"),
                ("connection", "upgrade"),
                ("origin", "https://evil.example"),
            ];
            fields.extend(upgrade.iter().map(|u| ("upgrade", *u)));
            let h = headers(&fields);
            assert!(
                cross_origin(&cookie, &Method::GET, &h, &uri).is_some(),
                "{upgrade:?} from another origin"
            );
            let mut own = fields.clone();
            own[2] = ("origin", "https://console.example");
            let h = headers(&own);
            assert!(
                cross_origin(&cookie, &Method::GET, &h, &uri).is_none(),
                "{upgrade:?} from the Console's origin"
            );
        }
    }
}
