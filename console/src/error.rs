//! The one place where Console failures become HTTP answers:
//! `{"error": {"code", "reason", "message"}}`.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::api::types::{AccessRequest, ApiErrorBody, ApiErrorInfo, Section};
use crate::runtime_access::gateway::GatewayError;
use crate::runtime_access::runs::RunUnavailable;

/// A Console failure.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct ConsoleError {
    pub code: StatusCode,
    pub reason: String,
    pub message: String,
    pub access: Option<Box<AccessRequest>>,
    pub retry_after: Option<u32>,
}

impl ConsoleError {
    pub fn new(code: StatusCode, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            access: None,
            retry_after: None,
        }
    }
    pub fn bad_request(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", m)
    }
    pub fn unauthorized(m: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", m)
    }
    pub fn forbidden(m: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Forbidden", m)
    }
    pub fn not_found(m: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NotFound", m)
    }
    pub fn unavailable(m: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", m);
        e.retry_after = Some(1);
        e
    }
    pub fn too_large(m: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge", m)
    }
    pub fn internal(m: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", m)
    }
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }
    pub fn with_access(mut self, access: AccessRequest) -> Self {
        self.access = Some(Box::new(access));
        self
    }

    /// `/api` needs the caller's own token to act as them.
    pub fn needs_token() -> Self {
        Self::unauthorized(
            "this request needs a bearer token (log in, or send Authorization: Bearer); \
             a client certificate authenticates /v1 calls only",
        )
    }

    /// The JSON body.
    pub fn body(&self) -> ApiErrorBody {
        ApiErrorBody {
            error: ApiErrorInfo {
                code: self.code.as_u16(),
                reason: self.reason.clone(),
                message: self.message.clone(),
                access: self.access.as_deref().cloned(),
            },
        }
    }
}

/// How much of a refused request's body is read before the refusal is sent.
pub const REFUSAL_DRAIN_BYTES: usize = 64 << 10;

/// Answers `err` after reading a little of the request body: an HTTP/2
/// client still sending would otherwise see a reset stream, not the answer.
pub async fn refuse(body: axum::body::Body, err: ConsoleError) -> Response {
    drain(body, REFUSAL_DRAIN_BYTES).await;
    err.into_response()
}

/// Reads and drops up to `budget` more bytes (a few seconds at most) so the
/// client, still sending, receives the refusal.
pub async fn drain(mut body: axum::body::Body, budget: usize) {
    use http_body_util::BodyExt;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let mut read = 0;
        while read <= budget {
            match body.frame().await {
                Some(Ok(f)) => read += f.data_ref().map_or(0, |d| d.len()),
                _ => break,
            }
        }
    })
    .await;
}

/// A query string no endpoint accepts (repeated name, bad escape) is a 400.
impl From<kruntimes_core::query::QueryError> for ConsoleError {
    fn from(e: kruntimes_core::query::QueryError) -> Self {
        ConsoleError::bad_request(e.to_string())
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let mut resp = (self.code, Json(self.body())).into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, s.into());
        }
        resp
    }
}

/// A Kubernetes API call that failed: what was being done, and the access
/// it needed (named in the answer when the API server refused it).
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct KubeFailure {
    pub what: &'static str,
    pub access: AccessRequest,
    #[source]
    pub source: kube::Error,
}

impl KubeFailure {
    pub fn new(source: kube::Error, what: &'static str, access: AccessRequest) -> Self {
        Self {
            what,
            access,
            source,
        }
    }
}

/// Kubernetes failures pass through faithfully (401/403/404/409…); the
/// cluster unreachable is 503.
impl From<KubeFailure> for ConsoleError {
    fn from(f: KubeFailure) -> Self {
        let KubeFailure {
            what,
            access,
            source,
        } = f;
        match source {
            kube::Error::Api(status) => {
                let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::BAD_GATEWAY);
                let reason = if status.reason.is_empty() {
                    code.canonical_reason().unwrap_or("Error").replace(' ', "")
                } else {
                    status.reason.clone()
                };
                let mut e = ConsoleError::new(code, &reason, status.message.clone());
                if code.is_server_error() {
                    e.retry_after = Some(1);
                }
                if code == StatusCode::FORBIDDEN {
                    e = e.with_access(access);
                }
                e
            }
            other => {
                tracing::warn!(error = %other, what, "Kubernetes API call failed");
                ConsoleError::unavailable(format!("{what}: the Kubernetes API is unreachable"))
            }
        }
    }
}

impl From<GatewayError> for ConsoleError {
    fn from(e: GatewayError) -> Self {
        ConsoleError::unavailable(e.to_string())
    }
}

impl From<RunUnavailable> for ConsoleError {
    fn from(e: RunUnavailable) -> Self {
        let message = e.to_string();
        match e {
            RunUnavailable::Loading => ConsoleError::unavailable(message).retry_after(2),
            RunUnavailable::NotFound { .. } => ConsoleError::not_found(message),
            RunUnavailable::WrongMode { .. } => ConsoleError::bad_request(message),
            // A finished Run will not become Ready: retrying soon is pointless.
            RunUnavailable::NotReady { finished, .. } => {
                ConsoleError::unavailable(message).retry_after(if finished { 30 } else { 2 })
            }
        }
    }
}

/// A body over the Console's limit (or one that broke off) is refused like
/// every other request, not with axum's plain-text answer.
impl From<axum::extract::rejection::BytesRejection> for ConsoleError {
    fn from(r: axum::extract::rejection::BytesRejection) -> Self {
        let code = r.status();
        if code == StatusCode::PAYLOAD_TOO_LARGE {
            return ConsoleError::too_large(
                "the request body is larger than this endpoint accepts",
            );
        }
        let reason = code.canonical_reason().unwrap_or("Error").replace(' ', "");
        ConsoleError::new(code, &reason, r.body_text())
    }
}

/// A path segment axum could not extract answers like every other refusal.
impl From<axum::extract::rejection::PathRejection> for ConsoleError {
    fn from(r: axum::extract::rejection::PathRejection) -> Self {
        let code = r.status();
        let reason = code.canonical_reason().unwrap_or("Error").replace(' ', "");
        ConsoleError::new(code, &reason, r.body_text())
    }
}

impl<T> Section<T> {
    /// The section of a read that failed: `forbidden` when the refusal names
    /// the access it needed, `error` otherwise.
    pub fn failed(e: impl Into<ConsoleError>) -> Self {
        let e = e.into();
        match e.access {
            Some(access) => Section::Forbidden {
                message: e.message,
                access: Some(*access),
            },
            None => Section::Error {
                message: e.message,
                code: Some(e.code.as_u16()),
            },
        }
    }
}
