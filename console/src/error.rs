//! The Console's mapping module: its domain errors become [`Failure`]s
//! (whose reason the one table in `kruntimes_core::failure` answers), and
//! a failure is rendered as `{"error": {"code", "reason", "message"}}`.

use axum::Json;
use axum::response::{IntoResponse, Response};
use kruntimes_core::failure::{Failure, Reason, Refusal, relay_kube};

use crate::api::types::{AccessRequest, ApiErrorBody, ApiErrorInfo, Section};
use crate::headers::limit::HeadersTooLarge;
use crate::runtime_access::failure::AccessFailure;
use crate::runtime_access::gateway::GatewayError;
use crate::runtime_access::runs::RunUnavailable;

/// A Console failure: a [`Failure`] (answered through the one table in
/// `kruntimes_core::failure`), and the access a refusal needed when the
/// Kubernetes API server refused it.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{failure}")]
pub struct ConsoleError {
    /// The failure the answer reports.
    pub failure: Failure,
    /// The access the Kubernetes API server refused, named in the answer as
    /// `error.access`.
    pub access: Option<Box<AccessRequest>>,
}

impl From<Failure> for ConsoleError {
    fn from(failure: Failure) -> Self {
        Self {
            failure,
            access: None,
        }
    }
}

impl Refusal for ConsoleError {
    fn failure_mut(&mut self) -> &mut Failure {
        &mut self.failure
    }
}

impl std::ops::Deref for ConsoleError {
    type Target = Failure;
    fn deref(&self) -> &Failure {
        &self.failure
    }
}

impl std::ops::DerefMut for ConsoleError {
    fn deref_mut(&mut self) -> &mut Failure {
        &mut self.failure
    }
}

impl ConsoleError {
    /// Names the access a refusal needed.
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

    /// The JSON body: `{"error": {"code", "reason", "message", "access"}}`.
    pub fn body(&self) -> ApiErrorBody {
        ApiErrorBody {
            error: ApiErrorInfo {
                code: self.code().as_u16(),
                reason: self.reason().to_owned(),
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
        let mut resp = (self.code(), Json(self.body())).into_response();
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
    /// What was being done, for the message ("listing runs").
    pub what: &'static str,
    /// The access the call needed.
    pub access: AccessRequest,
    /// The client's error.
    #[source]
    pub source: kube::Error,
}

impl KubeFailure {
    /// `source` met while doing `what`, which needed `access`.
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
                let e = ConsoleError::from(relay_kube(&status));
                if e.is(Reason::Forbidden) {
                    e.with_access(access)
                } else {
                    e
                }
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

/// A `/v1` call that failed at the gateway or on its way there.
impl From<AccessFailure> for ConsoleError {
    fn from(e: AccessFailure) -> Self {
        let reason = match e {
            AccessFailure::BodyTimeout { .. } => Reason::RequestTimeout,
            AccessFailure::GatewayTimeout => Reason::GatewayTimeout,
            // Dispatched and broken off: not retried (the call may have run).
            AccessFailure::BrokeOff => Reason::BadGateway,
            AccessFailure::ResponseTooLarge { .. } => Reason::BadGateway,
            AccessFailure::GatewayBusy => Reason::TooManyRequests,
            AccessFailure::AnotherCallsAnswer { .. } => Reason::BadGateway,
        };
        ConsoleError::because(reason, e.to_string())
    }
}

impl From<HeadersTooLarge> for ConsoleError {
    fn from(e: HeadersTooLarge) -> Self {
        ConsoleError::because(Reason::HeadersTooLarge, e.to_string())
    }
}

/// A cap reached: 429 naming it and its flag.
impl From<&kruntimes_core::limit::CapReached> for ConsoleError {
    fn from(e: &kruntimes_core::limit::CapReached) -> Self {
        Failure::from(e).into()
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
        let f = Failure::relayed(r.status().as_u16(), "", r.body_text());
        if f.is(Reason::PayloadTooLarge) {
            return ConsoleError::too_large(
                "the request body is larger than this endpoint accepts",
            );
        }
        f.into()
    }
}

/// A path segment axum could not extract answers like every other refusal.
impl From<axum::extract::rejection::PathRejection> for ConsoleError {
    fn from(r: axum::extract::rejection::PathRejection) -> Self {
        Failure::relayed(r.status().as_u16(), "", r.body_text()).into()
    }
}

impl<T> Section<T> {
    /// The section of a read that failed: `forbidden` when the refusal names
    /// the access it needed, `error` otherwise.
    pub fn failed(e: impl Into<ConsoleError>) -> Self {
        let e = e.into();
        let code = e.code().as_u16();
        match e.access {
            Some(access) => Section::Forbidden {
                message: e.failure.message,
                access: Some(*access),
            },
            None => Section::Error {
                message: e.failure.message,
                code: Some(code),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(e: impl Into<ConsoleError>) -> (u16, String, Option<u32>, String) {
        let e = e.into();
        (
            e.code().as_u16(),
            e.reason().to_owned(),
            e.retry_after,
            e.message.clone(),
        )
    }

    #[test]
    fn a_run_not_ready_asks_to_retry_later_when_finished() {
        let not_ready = |finished| RunUnavailable::NotReady {
            ns: "ns".into(),
            name: "r".into(),
            phase: "Succeeded".into(),
            finished,
        };
        let (code, reason, retry, message) = answer(not_ready(true));
        assert_eq!(
            (code, reason.as_str(), retry),
            (503, "ServiceUnavailable", Some(30))
        );
        assert!(message.contains("will not become Ready"), "{message}");
        assert_eq!(answer(not_ready(false)).2, Some(2));
        let (code, _, retry, _) = answer(RunUnavailable::Loading);
        assert_eq!((code, retry), (503, Some(2)));
        let nf = RunUnavailable::NotFound {
            ns: "ns".into(),
            name: "r".into(),
            uid: "u".into(),
        };
        assert_eq!(answer(nf).0, 404);
        let wrong = RunUnavailable::WrongMode {
            ns: "ns".into(),
            name: "r".into(),
            actual: "function",
            wanted: "job",
        };
        assert_eq!(answer(wrong).0, 400);
    }

    #[test]
    fn access_failures_answer_as_before() {
        let cases = [
            (
                AccessFailure::BodyTimeout { secs: 1.5 },
                408,
                "RequestTimeout",
                None,
                "the request body did not arrive within 1.5s (--access-body-timeout); nothing was forwarded",
            ),
            (
                AccessFailure::GatewayTimeout,
                504,
                "Timeout",
                None,
                "the Runtime gateway did not answer in time",
            ),
            (
                AccessFailure::BrokeOff,
                502,
                "BadGateway",
                None,
                "the Runtime gateway closed the connection before answering",
            ),
            (
                AccessFailure::ResponseTooLarge { max: 10 },
                502,
                "BadGateway",
                None,
                "the Runtime gateway's response exceeds 10 bytes",
            ),
            (
                AccessFailure::AnotherCallsAnswer {
                    got: "inv-1".into(),
                },
                502,
                "BadGateway",
                None,
                "the Runtime gateway answered another call (invocation ID \"inv-1\"); the connection was closed",
            ),
            (
                AccessFailure::GatewayBusy,
                429,
                "TooManyRequests",
                Some(1),
                "the Runtime gateway is busy",
            ),
        ];
        for (e, code, reason, retry, message) in cases {
            let got = answer(e);
            assert_eq!(got, (code, reason.to_owned(), retry, message.to_owned()));
        }
        let got = answer(HeadersTooLarge { size: 9, max: 8 });
        assert_eq!(
            got,
            (
                431,
                "RequestHeaderFieldsTooLarge".to_owned(),
                None,
                "the request target and headers total 9 bytes; at most 8 are accepted".to_owned()
            )
        );
        let unreachable = GatewayError::Unreachable {
            authority: "gw:443".into(),
        };
        assert_eq!(answer(unreachable).0, 503);
    }

    fn kube_error(code: u16, reason: &str) -> KubeFailure {
        KubeFailure::new(
            kube::Error::Api(
                kube::core::Status::failure("refused", reason)
                    .with_code(code)
                    .boxed(),
            ),
            "listing runs",
            AccessRequest::new("list", "kruntimes.io", "runs", "ns", None),
        )
    }

    #[test]
    fn kubernetes_answers_pass_through_with_the_access_a_refusal_needed() {
        let e = ConsoleError::from(kube_error(403, "Forbidden"));
        assert_eq!((e.code().as_u16(), e.reason()), (403, "Forbidden"));
        assert_eq!(e.access.as_ref().unwrap().verb, "list");
        let body = serde_json::to_value(e.body()).unwrap();
        assert_eq!(body["error"]["code"], 403);
        assert_eq!(body["error"]["reason"], "Forbidden");
        assert_eq!(body["error"]["message"], "refused");
        let e = ConsoleError::from(kube_error(409, "AlreadyExists"));
        assert_eq!((e.code().as_u16(), e.reason()), (409, "AlreadyExists"));
        assert!(e.access.is_none() && e.retry_after.is_none());
        let e = ConsoleError::from(kube_error(500, ""));
        assert_eq!(
            (e.code().as_u16(), e.reason()),
            (500, "InternalServerError")
        );
        assert_eq!(e.retry_after, Some(1));
    }

    #[test]
    fn the_console_body_and_headers_render_the_failure() {
        let r = ConsoleError::unavailable("later").into_response();
        assert_eq!(r.status().as_u16(), 503);
        assert_eq!(r.headers()[http::header::RETRY_AFTER], "1");
        let r = ConsoleError::needs_token().into_response();
        assert_eq!(r.status().as_u16(), 401);
        assert!(r.headers().get(http::header::RETRY_AFTER).is_none());
        let s = Section::<()>::failed(ConsoleError::too_large("big"));
        assert!(matches!(
            s,
            Section::Error {
                code: Some(413),
                ..
            }
        ));
    }
}
