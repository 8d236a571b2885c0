//! The Console JSON API (`/api/...`). Every read uses the caller's own
//! token; only public-read summaries use the Console's ServiceAccount.

pub mod access;
pub mod actions;
pub mod kinds;
pub mod listing;
pub mod logs;
pub mod manifest;
pub mod namespaces;
pub mod objects;
pub mod runs;
pub mod runtimes;
pub mod session;
pub mod types;
pub mod watch;
pub mod workflowruns;
pub mod workspaces;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path};
use kruntimes_core::failure::Refusal as _;
use kruntimes_core::names::{is_dns1123_label, is_dns1123_subdomain};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use serde::de::DeserializeOwned;

use crate::error::ConsoleError;
use crate::state::{ConsoleState, RequestCredentials};

/// Who reads for this request.
pub enum Reader {
    /// The caller, with their own token.
    User(Client),
    /// No credential, public read on: the ServiceAccount, summaries only.
    Public(Client),
}

impl Reader {
    /// The client that reads.
    pub fn client(&self) -> &Client {
        match self {
            Reader::User(c) | Reader::Public(c) => c,
        }
    }
    /// Whether this is a public-read summary (no credential).
    pub fn is_public(&self) -> bool {
        matches!(self, Reader::Public(_))
    }
}

/// The caller's own client; details, logs and everything but list summaries need it.
pub fn user_client(
    state: &ConsoleState,
    caller: &RequestCredentials,
) -> Result<Client, ConsoleError> {
    match &caller.0 {
        Some(c) => state.users.for_token(c.token()?),
        None => Err(ConsoleError::unauthorized(
            "log in or send a bearer token to read this",
        )),
    }
}

/// The reader for a list endpoint.
pub fn list_reader(
    state: &ConsoleState,
    caller: &RequestCredentials,
) -> Result<Reader, ConsoleError> {
    match &caller.0 {
        Some(c) => Ok(Reader::User(state.users.for_token(c.token()?)?)),
        None if state.public_read => Ok(Reader::Public(state.service_account.clone())),
        None => Err(ConsoleError::unauthorized(
            "log in or send a bearer token to read this",
        )),
    }
}

/// Refuses (400) a namespace that is not a DNS-1123 label.
pub fn check_namespace(ns: &str) -> Result<(), ConsoleError> {
    if is_dns1123_label(ns) {
        Ok(())
    } else {
        Err(ConsoleError::bad_request(format!(
            "namespace {ns:?} is not a valid name: lowercase letters, digits and '-', at most 63 characters"
        )))
    }
}

/// Refuses (400) a `kind` name that is not a DNS-1123 subdomain.
pub fn check_name(kind: &str, name: &str) -> Result<(), ConsoleError> {
    if is_dns1123_subdomain(name) {
        Ok(())
    } else {
        Err(ConsoleError::bad_request(format!(
            "{kind} name {name:?} is not a valid name: lowercase letters, digits, '-' and '.', at most 253 characters"
        )))
    }
}

/// A kruntimes.io resource of `kind` (plural `plural`).
pub fn kruntimes_api(client: Client, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", kind),
        plural,
    );
    Api::namespaced_with(client, ns, &ar)
}

/// The path parameters of an `/api` route; a path axum cannot extract is
/// refused with a [`ConsoleError`] like every other bad request.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ConsoleError;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let Path(t) = Path::<T>::from_request_parts(parts, state).await?;
        Ok(ApiPath(t))
    }
}

/// A request body, read within the router's `DefaultBodyLimit`; one over it
/// is refused with a [`ConsoleError`] (413, the JSON error body).
pub struct ApiBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBody {
    type Rejection = ConsoleError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        Ok(ApiBody(Bytes::from_request(req, state).await?))
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::extract::DefaultBodyLimit;
    use axum::routing::post;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    async fn echo(ApiBody(b): ApiBody) -> Bytes {
        b
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_a_json_413() {
        let app = Router::new()
            .route("/", post(echo))
            .layer(DefaultBodyLimit::max(16));
        let req = |body: &'static str| {
            http::Request::post("/")
                .body(axum::body::Body::from(body))
                .unwrap()
        };
        let ok = app.clone().oneshot(req("small")).await.unwrap();
        assert_eq!(ok.status(), http::StatusCode::OK);
        let resp = app
            .oneshot(req("a body well over sixteen bytes"))
            .await
            .unwrap();
        assert_eq!(resp.status(), http::StatusCode::PAYLOAD_TOO_LARGE);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).expect("a JSON error body");
        assert_eq!(v["error"]["code"], 413);
        assert_eq!(v["error"]["reason"], "RequestEntityTooLarge");
    }
}
