//! The aggregated API listener's routes and middleware.

use kruntimes_core::failure::Refusal as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;

use crate::discovery;
use crate::logs::handler::{LogApi, get_run_log};
use kruntimes_core::auth::{AuthError, Authenticator, RequestHeaderSource};
use kruntimes_core::observe::{Observer, observe};
use kruntimes_core::status::ApiError;
use kruntimes_core::tls::PeerCertificates;

/// Maps an authentication failure to a `Status`.
pub fn auth_error(e: &AuthError) -> ApiError {
    match e {
        AuthError::Unavailable(m) => ApiError::unavailable(m.clone()),
        AuthError::TokenTooLong | AuthError::MalformedHeader(_) => {
            ApiError::bad_request(e.to_string())
        }
        _ => ApiError::unauthorized(format!("Unauthorized: {e}")),
    }
}

#[derive(Clone)]
struct AuthnState {
    authn: Authenticator,
}

async fn authenticate(State(state): State<AuthnState>, mut req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<PeerCertificates>()
        .cloned()
        .unwrap_or_default();
    match state.authn.authenticate(req.headers(), &peer).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => auth_error(&e).into_response(),
    }
}

/// Leaks nothing: matched route templates are a fixed set.
fn route_name(p: &str) -> &'static str {
    match p {
        "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{name}/log" => "runs/log",
        "/apis" | "/apis/logs.kruntimes.io" | "/apis/logs.kruntimes.io/v1alpha1" => "discovery",
        "/openapi/v2" | "/openapi/v3" | "/openapi/v3/apis/logs.kruntimes.io/v1alpha1" => "openapi",
        "/healthz" | "/livez" | "/readyz" => "health",
        _ => "other",
    }
}

async fn not_found(req: Request) -> Response {
    ApiError::not_found(format!(
        "the server could not find the requested resource {:?}",
        req.uri().path()
    ))
    .into_response()
}

async fn method_not_allowed() -> Response {
    ApiError::method_not_allowed("only GET is served on this path").into_response()
}

/// The aggregated listener's router. `ready` reports whether the
/// authentication configuration has been loaded.
pub fn router(
    api: Arc<LogApi>,
    authn: Authenticator,
    request_header: Option<RequestHeaderSource>,
) -> Router {
    let metrics = api.metrics.clone();
    let readyz = move || {
        let rh = request_header.clone();
        async move {
            if rh.as_ref().is_none_or(RequestHeaderSource::is_loaded) {
                (StatusCode::OK, "ok").into_response()
            } else {
                ApiError::unavailable("the authentication configuration is not loaded yet")
                    .into_response()
            }
        }
    };
    Router::new()
        .route(
            "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{name}/log",
            get(get_run_log).fallback(method_not_allowed),
        )
        .with_state(api)
        .route("/apis", get(discovery::apis).fallback(method_not_allowed))
        .route(
            "/apis/logs.kruntimes.io",
            get(discovery::group).fallback(method_not_allowed),
        )
        .route(
            "/apis/logs.kruntimes.io/v1alpha1",
            get(discovery::resources).fallback(method_not_allowed),
        )
        .route("/openapi/v2", get(discovery::openapi_v2))
        .route("/openapi/v3", get(discovery::openapi_v3_index))
        .route(
            "/openapi/v3/apis/logs.kruntimes.io/v1alpha1",
            get(discovery::openapi_v3_group),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            AuthnState { authn },
            authenticate,
        ))
        .layer(middleware::from_fn_with_state(
            std::sync::Arc::new(Observer {
                metrics,
                listener: "apiserver",
                route_name,
                unmatched: "other",
            }),
            observe,
        ))
}
