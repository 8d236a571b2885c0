//! Kubernetes `Status` errors: the one place where the aggregated listener
//! turns a failure into an HTTP answer.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

/// A failure answered with a Kubernetes `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: StatusCode,
    pub reason: &'static str,
    pub message: String,
    /// `details` of the Status: the object the failure is about, when known.
    pub details: Option<StatusDetails>,
    /// Seconds a client should wait before retrying (`Retry-After`).
    pub retry_after: Option<u32>,
}

/// `details` of a Kubernetes `Status`.
#[derive(Debug, Clone)]
pub struct StatusDetails {
    pub name: String,
    pub group: &'static str,
    pub kind: &'static str,
}

impl ApiError {
    fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Forbidden", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NotFound", message)
    }

    /// 410: what the request names existed once and is gone (a cursor
    /// whose record left the log).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Gone", message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "Conflict", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            message,
        );
        e.retry_after = Some(1);
        e
    }

    /// A cap was reached: 429 with `Retry-After: 1`.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", message);
        e.retry_after = Some(1);
        e
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", message)
    }

    /// Names the object the failure is about in the Status `details`.
    pub fn about(
        mut self,
        group: &'static str,
        kind: &'static str,
        name: impl Into<String>,
    ) -> Self {
        self.details = Some(StatusDetails {
            name: name.into(),
            group,
            kind,
        });
        self
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> serde_json::Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        if let Some(d) = &self.details {
            status["details"] = json!({"name": d.name, "group": d.group, "kind": d.kind});
        }
        if let Some(secs) = self.retry_after {
            let details = status.as_object_mut().and_then(|o| {
                o.entry("details")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            });
            if let Some(details) = details {
                details.insert("retryAfterSeconds".into(), json!(secs));
            }
        }
        status
    }

    /// The `Status` as the final NDJSON line of a follow that the server ends.
    pub fn status_line(&self) -> bytes::Bytes {
        let mut line = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        line.push(b'\n');
        bytes::Bytes::from(line)
    }

    /// A follow whose reader fell behind: it is ended so it cannot slow the
    /// others; the caller reconnects with `sinceCursor` to continue.
    pub fn fell_behind(message: impl Into<String>) -> Self {
        let mut e = Self::unavailable(message);
        e.reason = "FellBehind";
        e
    }

    /// Why a follow ends when the process stops: the caller reconnects (with
    /// `sinceCursor` to continue without a gap) and reaches another replica.
    pub fn shutting_down() -> Self {
        Self::unavailable(
            "the server is shutting down; reconnect (with sinceCursor to continue after the last record)",
        )
    }
}

/// The final NDJSON line of a follow that ended because its Run finished:
/// a `Status` with `"status":"Success"`, `"reason":"RunFinished"`.
pub fn run_finished_line(phase: &str) -> bytes::Bytes {
    run_finished_line_saying(phase, None)
}

/// [`run_finished_line`] with a sentence on what the log holds (e.g. why a
/// Run has no records).
pub fn run_finished_line_saying(phase: &str, note: Option<&str>) -> bytes::Bytes {
    let message = match note {
        Some(note) => format!("the Run finished: {phase}; {note}"),
        None => format!("the Run finished: {phase}"),
    };
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 200,
        "reason": "RunFinished",
        "message": message,
    });
    let mut line = serde_json::to_vec(&status).unwrap_or_default();
    line.push(b'\n');
    bytes::Bytes::from(line)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut resp = (self.code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

/// Maps a Kubernetes client error from a call the server made with its own
/// identity: the cluster unreachable is 503; API answers keep their code.
pub fn from_kube(err: &kube::Error, what: &str) -> ApiError {
    match err {
        kube::Error::Api(status) => {
            let code = status.code;
            let msg = format!("{what}: {}", status.message);
            match code {
                404 => ApiError::not_found(msg),
                403 => ApiError::internal(format!(
                    "{what}: the server's own identity was refused ({}); check the kruntimes-console RBAC",
                    status.message
                )),
                429 | 500..=599 => ApiError::unavailable(msg),
                _ => ApiError::internal(msg),
            }
        }
        _ => ApiError::unavailable(format!("{what}: the Kubernetes API is unreachable")),
    }
}
