//! Failures and the one table that turns them into answers.
//!
//! Code raises small domain errors where a failure happens (a cap reached,
//! a Kubernetes call refused, a body that did not arrive…) and maps each to
//! a [`Failure`] in one mapping module per crate; a `Failure` names a
//! [`Reason`], and [`TABLE`] alone says which status code, `reason` word and
//! default `Retry-After` a reason is answered with. Two renderers write the
//! answer: a Kubernetes `Status` ([`Failure::to_status`], the aggregated
//! API) and the Console's `{"error": …}` body (in the Console crate).
//! `hack/lib/statuscodes.py` checks that no other code picks a failure code.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

/// Why a request failed, as the table knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A malformed request: a bad name, path, parameter or body.
    BadRequest,
    /// No valid credential came with the request.
    Unauthorized,
    /// The caller may not do what the request asks.
    Forbidden,
    /// What the request names does not exist.
    NotFound,
    /// The path exists but not for this method.
    MethodNotAllowed,
    /// The request body did not arrive in time.
    RequestTimeout,
    /// The object is not in a state the request can be served in (a Run not yet
    /// assigned to a Pod, or assigned to an invalid Pod name).
    Conflict,
    /// What the request names existed once and is gone (a cursor whose
    /// record left the log).
    Gone,
    /// The request body is over its bound.
    PayloadTooLarge,
    /// A value the server read is not valid (Kubernetes' `Invalid`).
    Invalid,
    /// A cap was reached.
    TooManyRequests,
    /// The request's header block, or one header, is over its bound.
    HeadersTooLarge,
    /// The server failed in a way the caller cannot fix (its own configuration
    /// or a bug).
    Internal,
    /// An upstream broke off or answered too much.
    BadGateway,
    /// The server, the cluster or an upstream cannot serve now; a retry later
    /// may succeed.
    Unavailable,
    /// A follow whose reader fell behind was ended so it cannot slow the
    /// others; the caller reconnects with `sinceCursor`.
    FellBehind,
    /// An upstream did not answer in time.
    GatewayTimeout,
}

/// One row of [`TABLE`]: how a [`Reason`] is answered.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The reason this row answers.
    pub reason: Reason,
    /// The HTTP status code of the answer.
    pub code: StatusCode,
    /// The `reason` word of the answer.
    pub word: &'static str,
    /// `Retry-After` seconds unless the failure says otherwise.
    pub retry_after: Option<u32>,
}

const fn row(reason: Reason, code: StatusCode, word: &'static str) -> Row {
    Row {
        reason,
        code,
        word,
        retry_after: None,
    }
}

const fn retry(reason: Reason, code: StatusCode, word: &'static str, secs: u32) -> Row {
    Row {
        reason,
        code,
        word,
        retry_after: Some(secs),
    }
}

/// The one table: every [`Reason`] in declaration order (a unit test holds
/// it to that), with the status code, word and default `Retry-After` it is
/// answered with.
pub const TABLE: &[Row] = &[
    row(Reason::BadRequest, StatusCode::BAD_REQUEST, "BadRequest"),
    row(
        Reason::Unauthorized,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
    ),
    row(Reason::Forbidden, StatusCode::FORBIDDEN, "Forbidden"),
    row(Reason::NotFound, StatusCode::NOT_FOUND, "NotFound"),
    row(
        Reason::MethodNotAllowed,
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
    ),
    row(
        Reason::RequestTimeout,
        StatusCode::REQUEST_TIMEOUT,
        "RequestTimeout",
    ),
    row(Reason::Conflict, StatusCode::CONFLICT, "Conflict"),
    row(Reason::Gone, StatusCode::GONE, "Gone"),
    row(
        Reason::PayloadTooLarge,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
    ),
    row(Reason::Invalid, StatusCode::UNPROCESSABLE_ENTITY, "Invalid"),
    retry(
        Reason::TooManyRequests,
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        1,
    ),
    row(
        Reason::HeadersTooLarge,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "RequestHeaderFieldsTooLarge",
    ),
    row(
        Reason::Internal,
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
    ),
    row(Reason::BadGateway, StatusCode::BAD_GATEWAY, "BadGateway"),
    retry(
        Reason::Unavailable,
        StatusCode::SERVICE_UNAVAILABLE,
        "ServiceUnavailable",
        1,
    ),
    retry(
        Reason::FellBehind,
        StatusCode::SERVICE_UNAVAILABLE,
        "FellBehind",
        1,
    ),
    row(
        Reason::GatewayTimeout,
        StatusCode::GATEWAY_TIMEOUT,
        "Timeout",
    ),
];

impl Reason {
    /// This reason's row of [`TABLE`].
    pub const fn row(self) -> &'static Row {
        &TABLE[self as usize]
    }

    /// The status code this reason is answered with.
    pub const fn code(self) -> StatusCode {
        self.row().code
    }

    /// [`Reason::code`] as a number (to compare with a code read from a
    /// Kubernetes or gateway answer).
    pub const fn code_u16(self) -> u16 {
        self.row().code.as_u16()
    }

    /// The `reason` word this reason is answered with.
    pub const fn word(self) -> &'static str {
        self.row().word
    }
}

/// `details` of a Kubernetes `Status`.
#[derive(Debug, Clone)]
pub struct StatusDetails {
    /// Name of the object.
    pub name: String,
    /// API group of the object (`""` for the core group).
    pub group: &'static str,
    /// The object's resource, plural (`runs`, `pods`), as Kubernetes fills
    /// `details.kind`.
    pub kind: &'static str,
}

/// What a failure is answered as: a row of the table, or an answer from a
/// Kubernetes API server (or the HTTP layer) relayed as it came.
#[derive(Debug, Clone)]
enum Kind {
    Table(Reason),
    Relayed { code: StatusCode, word: String },
}

/// A failure: what the server answers when a request fails.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    kind: Kind,
    /// What went wrong, for people: the answer's `message`.
    pub message: String,
    /// `details` of the Status: the object the failure is about, when known
    /// (boxed: a failure travels in `Result`s and stays small).
    pub details: Option<Box<StatusDetails>>,
    /// Seconds a client should wait before retrying (`Retry-After`).
    pub retry_after: Option<u32>,
}

impl Failure {
    /// A failure for `reason`, with the table's default `Retry-After`.
    pub fn of(reason: Reason, message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Table(reason),
            message: message.into(),
            details: None,
            retry_after: reason.row().retry_after,
        }
    }

    /// An answer relayed as it came: its code and `reason` word (the code's
    /// canonical phrase, without spaces, when it has none). A code that is
    /// not a failure code is relayed as a bad gateway.
    pub fn relayed(code: u16, word: &str, message: impl Into<String>) -> Self {
        let code = StatusCode::from_u16(code)
            .ok()
            .filter(|c| c.is_client_error() || c.is_server_error())
            .unwrap_or(StatusCode::BAD_GATEWAY);
        let word = if word.is_empty() {
            code.canonical_reason().unwrap_or("Error").replace(' ', "")
        } else {
            word.to_owned()
        };
        Self {
            kind: Kind::Relayed { code, word },
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// The status code of the answer.
    pub fn code(&self) -> StatusCode {
        match &self.kind {
            Kind::Table(r) => r.code(),
            Kind::Relayed { code, .. } => *code,
        }
    }

    /// The `reason` word of the answer.
    pub fn reason(&self) -> &str {
        match &self.kind {
            Kind::Table(r) => r.word(),
            Kind::Relayed { word, .. } => word,
        }
    }

    /// The table's reason, unless the answer is relayed.
    pub fn kind(&self) -> Option<Reason> {
        match self.kind {
            Kind::Table(r) => Some(r),
            Kind::Relayed { .. } => None,
        }
    }

    /// Is this answered as `reason` is (for a relayed answer: with its code)?
    pub fn is(&self, reason: Reason) -> bool {
        match &self.kind {
            Kind::Table(r) => *r == reason,
            Kind::Relayed { code, .. } => *code == reason.code(),
        }
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> serde_json::Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason(),
            "code": self.code().as_u16(),
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
}

/// The constructors of a failure, for [`Failure`] and the types that carry
/// one (the Console's error adds the access a refusal needed): written once.
pub trait Refusal: From<Failure> + Sized {
    /// The failure inside.
    fn failure_mut(&mut self) -> &mut Failure;

    /// A failure for `reason`.
    fn because(reason: Reason, message: impl Into<String>) -> Self {
        Failure::of(reason, message).into()
    }
    /// 400: a malformed request.
    fn bad_request(message: impl Into<String>) -> Self {
        Self::because(Reason::BadRequest, message)
    }
    /// 401: no valid credential.
    fn unauthorized(message: impl Into<String>) -> Self {
        Self::because(Reason::Unauthorized, message)
    }
    /// 403: the caller may not do this.
    fn forbidden(message: impl Into<String>) -> Self {
        Self::because(Reason::Forbidden, message)
    }
    /// 404: what the request names does not exist.
    fn not_found(message: impl Into<String>) -> Self {
        Self::because(Reason::NotFound, message)
    }
    /// 405: the path does not take this method.
    fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::because(Reason::MethodNotAllowed, message)
    }
    /// 410: what the request names existed once and is gone.
    fn gone(message: impl Into<String>) -> Self {
        Self::because(Reason::Gone, message)
    }
    /// 409: the object's state does not allow the request (a Run not yet
    /// assigned).
    fn conflict(message: impl Into<String>) -> Self {
        Self::because(Reason::Conflict, message)
    }
    /// 413: the request body is over its bound.
    fn too_large(message: impl Into<String>) -> Self {
        Self::because(Reason::PayloadTooLarge, message)
    }
    /// A cap was reached: 429 with `Retry-After: 1`.
    fn too_many_requests(message: impl Into<String>) -> Self {
        Self::because(Reason::TooManyRequests, message)
    }
    /// 500: a failure the caller cannot fix.
    fn internal(message: impl Into<String>) -> Self {
        Self::because(Reason::Internal, message)
    }
    /// 503 with `Retry-After: 1`.
    fn unavailable(message: impl Into<String>) -> Self {
        Self::because(Reason::Unavailable, message)
    }
    /// A follow whose reader fell behind: it is ended so it cannot slow the
    /// others; the caller reconnects with `sinceCursor` to continue.
    fn fell_behind(message: impl Into<String>) -> Self {
        Self::because(Reason::FellBehind, message)
    }
    /// Why a follow ends when the process stops: the caller reconnects (with
    /// `sinceCursor` to continue without a gap) and reaches another replica.
    fn shutting_down() -> Self {
        Self::unavailable(
            "the server is shutting down; reconnect (with sinceCursor to continue after the last record)",
        )
    }

    /// Sets `Retry-After`.
    fn retry_after(mut self, seconds: u32) -> Self {
        self.failure_mut().retry_after = Some(seconds);
        self
    }

    /// Names the object the failure is about in the Status `details`.
    fn about(mut self, group: &'static str, kind: &'static str, name: impl Into<String>) -> Self {
        self.failure_mut().details = Some(Box::new(StatusDetails {
            name: name.into(),
            group,
            kind,
        }));
        self
    }
}

impl Refusal for Failure {
    fn failure_mut(&mut self) -> &mut Failure {
        self
    }
}

/// A Kubernetes `Status` answer with `Retry-After`.
impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut resp = (self.code(), body).into_response();
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

// The core's domain errors, mapped.

/// A cap reached is a 429 naming it and its flag.
impl From<&crate::limit::CapReached> for Failure {
    fn from(e: &crate::limit::CapReached) -> Self {
        Failure::too_many_requests(e.to_string())
    }
}

/// A Kubernetes client error from a call the server made with its own
/// identity: the cluster unreachable is 503; a refusal of the server's own
/// identity is its configuration's fault (500).
pub fn from_kube(err: &kube::Error, what: &str) -> Failure {
    match err {
        kube::Error::Api(status) => {
            let msg = format!("{what}: {}", status.message);
            match StatusCode::from_u16(status.code).ok() {
                Some(StatusCode::NOT_FOUND) => Failure::not_found(msg),
                Some(StatusCode::FORBIDDEN) => Failure::internal(format!(
                    "{what}: the server's own identity was refused ({}); check the kruntimes-console RBAC",
                    status.message
                )),
                Some(c) if c == StatusCode::TOO_MANY_REQUESTS || c.is_server_error() => {
                    Failure::unavailable(msg)
                }
                _ => Failure::internal(msg),
            }
        }
        _ => Failure::unavailable(format!("{what}: the Kubernetes API is unreachable")),
    }
}

/// A Kubernetes failure relayed as it came (401/403/404/409…, its reason
/// word); a server error asks to retry after a second.
pub fn relay_kube(status: &kube::core::Status) -> Failure {
    let mut f = Failure::relayed(status.code, &status.reason, status.message.clone());
    if f.code().is_server_error() {
        f.retry_after = Some(1);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_one_row_per_reason_in_order() {
        let all = [
            Reason::BadRequest,
            Reason::Unauthorized,
            Reason::Forbidden,
            Reason::NotFound,
            Reason::MethodNotAllowed,
            Reason::RequestTimeout,
            Reason::Conflict,
            Reason::Gone,
            Reason::PayloadTooLarge,
            Reason::Invalid,
            Reason::TooManyRequests,
            Reason::HeadersTooLarge,
            Reason::Internal,
            Reason::BadGateway,
            Reason::Unavailable,
            Reason::FellBehind,
            Reason::GatewayTimeout,
        ];
        assert_eq!(TABLE.len(), all.len());
        for (i, r) in all.iter().enumerate() {
            assert_eq!(TABLE[i].reason, *r, "row {i}");
            assert_eq!(r.row().reason, *r);
        }
        // Every row is a distinct answer: no two share both code and word.
        for (i, a) in TABLE.iter().enumerate() {
            assert!(
                a.code.is_client_error() || a.code.is_server_error(),
                "{a:?}"
            );
            for b in &TABLE[i + 1..] {
                assert!(a.word != b.word, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn each_reason_is_answered_as_before() {
        let expect: &[(Reason, u16, &str, Option<u32>)] = &[
            (Reason::BadRequest, 400, "BadRequest", None),
            (Reason::Unauthorized, 401, "Unauthorized", None),
            (Reason::Forbidden, 403, "Forbidden", None),
            (Reason::NotFound, 404, "NotFound", None),
            (Reason::MethodNotAllowed, 405, "MethodNotAllowed", None),
            (Reason::RequestTimeout, 408, "RequestTimeout", None),
            (Reason::Conflict, 409, "Conflict", None),
            (Reason::Gone, 410, "Gone", None),
            (Reason::PayloadTooLarge, 413, "RequestEntityTooLarge", None),
            (Reason::Invalid, 422, "Invalid", None),
            (Reason::TooManyRequests, 429, "TooManyRequests", Some(1)),
            (
                Reason::HeadersTooLarge,
                431,
                "RequestHeaderFieldsTooLarge",
                None,
            ),
            (Reason::Internal, 500, "InternalError", None),
            (Reason::BadGateway, 502, "BadGateway", None),
            (Reason::Unavailable, 503, "ServiceUnavailable", Some(1)),
            (Reason::FellBehind, 503, "FellBehind", Some(1)),
            (Reason::GatewayTimeout, 504, "Timeout", None),
        ];
        assert_eq!(expect.len(), TABLE.len());
        for (reason, code, word, retry) in expect {
            let f = Failure::of(*reason, "m");
            assert_eq!(f.code().as_u16(), *code, "{reason:?}");
            assert_eq!(f.reason(), *word, "{reason:?}");
            assert_eq!(f.retry_after, *retry, "{reason:?}");
            assert!(f.is(*reason));
            assert_eq!(f.kind(), Some(*reason));
        }
    }

    #[test]
    fn the_status_renderer_writes_code_word_details_and_retry() {
        let s = Failure::fell_behind("slow").to_status();
        assert_eq!(s["code"], 503);
        assert_eq!(s["reason"], "FellBehind");
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["message"], "slow");
        assert_eq!(s["details"]["retryAfterSeconds"], 1);
        let s = Failure::not_found("no run")
            .about("kruntimes.io", "runs", "r1")
            .to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["name"], "r1");
        assert_eq!(s["details"]["group"], "kruntimes.io");
        assert!(s["details"].get("retryAfterSeconds").is_none());
        let line = Failure::shutting_down().status_line();
        assert!(line.ends_with(b"\n"));
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["reason"], "ServiceUnavailable");
        assert_eq!(v["details"]["retryAfterSeconds"], 1);
    }

    #[test]
    fn the_response_carries_code_type_and_retry_after() {
        let r = Failure::too_many_requests("cap").into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        let r = Failure::bad_request("x").retry_after(7).into_response();
        assert_eq!(r.headers()[header::RETRY_AFTER], "7");
        let r = Failure::internal("x").into_response();
        assert!(r.headers().get(header::RETRY_AFTER).is_none());
    }

    #[test]
    fn a_relayed_answer_keeps_its_code_and_word() {
        let f = Failure::relayed(409, "AlreadyExists", "taken");
        assert_eq!(f.code(), StatusCode::CONFLICT);
        assert_eq!(f.reason(), "AlreadyExists");
        assert!(f.is(Reason::Conflict));
        assert_eq!(f.kind(), None);
        assert_eq!(f.retry_after, None);
        let f = Failure::relayed(418, "", "teapot");
        assert_eq!(f.reason(), "I'mateapot");
        // Not a failure code: relayed as a bad gateway.
        assert_eq!(
            Failure::relayed(200, "", "x").code(),
            StatusCode::BAD_GATEWAY
        );
        assert_eq!(Failure::relayed(7, "", "x").code(), StatusCode::BAD_GATEWAY);
    }

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("msg", reason)
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn kubernetes_errors_map_as_before() {
        let f = from_kube(&api(404, "NotFound"), "reading");
        assert_eq!((f.code().as_u16(), f.reason()), (404, "NotFound"));
        assert_eq!(f.message, "reading: msg");
        let f = from_kube(&api(403, "Forbidden"), "reading");
        assert_eq!(f.code().as_u16(), 500);
        assert!(f.message.contains("RBAC"), "{}", f.message);
        for code in [429, 500, 503] {
            let f = from_kube(&api(code, "x"), "reading");
            assert_eq!(f.code().as_u16(), 503, "{code}");
            assert_eq!(f.retry_after, Some(1));
        }
        assert_eq!(from_kube(&api(409, "Conflict"), "w").code().as_u16(), 500);

        let kube::Error::Api(s) = api(403, "Forbidden") else {
            unreachable!()
        };
        let f = relay_kube(&s);
        assert_eq!((f.code().as_u16(), f.reason()), (403, "Forbidden"));
        assert_eq!(f.retry_after, None);
        let kube::Error::Api(s) = api(500, "") else {
            unreachable!()
        };
        let f = relay_kube(&s);
        assert_eq!(
            (f.code().as_u16(), f.reason()),
            (500, "InternalServerError")
        );
        assert_eq!(f.retry_after, Some(1));
    }

    #[test]
    fn a_failure_stays_small() {
        // It travels in every handler's `Result`; the Console's error adds a
        // pointer to it.
        assert!(
            std::mem::size_of::<Failure>() <= 80,
            "{}",
            std::mem::size_of::<Failure>()
        );
    }

    #[test]
    fn a_cap_reached_is_a_429_that_names_it() {
        let e = crate::limit::CapReached::Total {
            what: "calls",
            max: 3,
            flag: "--x",
        };
        let f = Failure::from(&e);
        assert_eq!(f.code(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(f.retry_after, Some(1));
        assert_eq!(f.message, e.to_string());
    }
}
