//! The Console's outer guard: the request header bound, and security
//! headers on every response (the refusals included).

pub mod limit;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderName, HeaderValue, header};

/// The size of a header block as the bound counts it.
pub fn header_bytes(h: &http::HeaderMap) -> usize {
    h.iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum()
}

/// Same-origin only, no inline script, no framing.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

/// The security headers set on every response, replacing any the handler set.
pub const SECURITY_HEADERS: [(&str, &str); 8] = [
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    (
        "strict-transport-security",
        "max-age=31536000; includeSubDomains",
    ),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
    (
        "permissions-policy",
        "camera=(), microphone=(), geolocation=()",
    ),
];

/// [`SECURITY_HEADERS`] as typed fields, built at compile time: a name
/// given as a string would be parsed again on every answer.
const SECURITY_FIELDS: [(HeaderName, HeaderValue); 8] = [
    field(0),
    field(1),
    field(2),
    field(3),
    field(4),
    field(5),
    field(6),
    field(7),
];

const fn field(i: usize) -> (HeaderName, HeaderValue) {
    (
        HeaderName::from_static(SECURITY_HEADERS[i].0),
        HeaderValue::from_static(SECURITY_HEADERS[i].1),
    )
}

/// Fields the Console adds to an answer: the security headers,
/// `Cache-Control`, the request ID and the invocation ID (room reserved up
/// front, so the map is not grown while they are added).
pub const ADDED_FIELDS: usize = SECURITY_HEADERS.len() + 3;

/// Sets the security headers, and `Cache-Control: no-store` on an API
/// answer that set no cache policy.
pub fn secure(h: &mut http::HeaderMap, api: bool) {
    for (name, value) in SECURITY_FIELDS {
        h.insert(name, value);
    }
    if api && !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// Is this one of the headers the Console sets on every response?
pub fn is_security_header(name: &str) -> bool {
    SECURITY_HEADERS.iter().any(|(n, _)| *n == name)
}

pub use limit::HeadersTooLarge;

/// The refusal of a request whose target and header block exceed `max`
/// bytes. The target counts too: HTTP/2 carries it as `:path`, which
/// hyper's header-list bound leaves out.
pub fn oversized(
    headers: &http::HeaderMap,
    uri: &http::Uri,
    max: usize,
) -> Option<HeadersTooLarge> {
    let target = uri.path_and_query().map_or(0, |pq| pq.as_str().len());
    let size = header_bytes(headers) + target;
    (size > max).then_some(HeadersTooLarge { size, max })
}

/// Refuses a request whose target and header block exceed `max` bytes (431), and sets
/// the security headers on the response.
pub async fn guard(State(max): State<usize>, req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/") || req.uri().path().starts_with("/v1/");
    let mut resp = match oversized(req.headers(), req.uri(), max) {
        Some(refusal) => crate::error::refuse(req.into_body(), refusal.into()).await,
        None => next.run(req).await,
    };
    secure(resp.headers_mut(), api);
    resp
}
