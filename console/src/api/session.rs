//! `/api/session`: who the caller is, login (a token sealed into the
//! HttpOnly cookie) and logout.

use kruntimes_core::failure::Refusal as _;
use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::response::AppendHeaders;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use kruntimes_core::auth::BearerToken;

use crate::api::ApiBody;
use crate::api::types::{SessionInfo, SessionLogin};
use crate::credentials::auth_error;
use crate::error::ConsoleError;
use crate::origin::same_origin;
use crate::session::SessionSealer;
use crate::state::{ConsoleState, RequestCredentials};

/// Largest login body (a 16 KiB token plus JSON).
pub const MAX_LOGIN_BODY: usize = 20 << 10;

/// A session answer and the cookies it sets or clears.
type WithCookies = (
    AppendHeaders<Vec<(HeaderName, HeaderValue)>>,
    Json<SessionInfo>,
);

fn cookies(values: Vec<String>) -> AppendHeaders<Vec<(HeaderName, HeaderValue)>> {
    AppendHeaders(
        values
            .iter()
            .filter_map(|c| HeaderValue::from_str(c).ok())
            .map(|v| (header::SET_COOKIE, v))
            .collect(),
    )
}

/// `GET /api/session`: who the request's credential names, if any.
pub async fn get(
    State(state): State<Arc<ConsoleState>>,
    Extension(RequestCredentials(creds)): Extension<RequestCredentials>,
) -> Json<SessionInfo> {
    Json(SessionInfo {
        authenticated: creds.is_some(),
        username: creds.map(|c| c.caller.user.clone()),
        public_read: Some(state.public_read),
    })
}

/// `POST /api/session`: reviews the token of the body and seals it into the
/// session cookie.
pub async fn login(
    State(state): State<Arc<ConsoleState>>,
    uri: http::Uri,
    headers: HeaderMap,
    ApiBody(body): ApiBody,
) -> Result<WithCookies, ConsoleError> {
    // Login CSRF: a browser always sends Origin on a POST; it must be ours.
    if headers.contains_key(header::ORIGIN) && !same_origin(&headers, &uri) {
        return Err(ConsoleError::forbidden("cross-origin login refused"));
    }
    let login: SessionLogin = serde_json::from_slice(&body).map_err(|e| {
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
    Ok((
        cookies(state.sealer.set_cookies(&sealed)),
        Json(SessionInfo {
            authenticated: true,
            username: Some(caller.user),
            public_read: Some(state.public_read),
        }),
    ))
}

/// `DELETE /api/session`: clears the session cookie.
pub async fn logout(State(state): State<Arc<ConsoleState>>) -> WithCookies {
    (
        cookies(SessionSealer::clear_cookies()),
        Json(SessionInfo {
            authenticated: false,
            username: None,
            public_read: Some(state.public_read),
        }),
    )
}
