//! What passes between a caller and a Runtime gateway on an invoke, the
//! same on both paths: the request fields forwarded, the caller's identity
//! as the front proxy's `X-Remote-*` fields, the answer's fields never
//! relayed, and whether an answer is the call's.

use std::fmt::Write as _;

use http::{HeaderMap, HeaderName, HeaderValue, header};
use kruntimes_core::auth::Caller as Identity;
use kruntimes_core::trace;

use super::failure::AccessFailure;
use super::gateway::GatewayTarget;
use crate::error::ConsoleError;

/// Header carrying an invocation's ID, echoed back.
pub const INVOCATION_ID: &str = "x-kruntime-invocation-id";
/// Longest invocation ID.
pub const MAX_INVOCATION_ID: usize = 128;

/// Request headers forwarded to the gateway on an invoke; every other
/// request header is dropped. The body's length is set by the Console, and
/// the caller's identity travels in the Console's own `X-Remote-*`.
pub const FORWARDED_REQUEST_HEADERS: [&str; 10] = [
    "accept",
    "accept-encoding",
    "accept-language",
    "content-type",
    "content-encoding",
    "user-agent",
    "traceparent",
    "tracestate",
    "x-request-id",
    INVOCATION_ID,
];

/// Is this request header forwarded to the gateway? Only allow-listed
/// names; none of them carries identity or trust (a unit test holds the
/// list to that).
pub fn is_forwarded_request_header(name: &HeaderName) -> bool {
    FORWARDED_REQUEST_HEADERS.contains(&name.as_str())
}

/// Is this forwarded header's value passed on? A `traceparent` that is not
/// valid W3C or a `tracestate` over its bound is dropped (never an error);
/// with traces on, both are replaced by the gateway call's own.
pub fn is_passable(name: &HeaderName, value: &[u8]) -> bool {
    if trace::enabled() && matches!(name.as_str(), "traceparent" | "tracestate") {
        return false;
    }
    trace::is_passable(name.as_str(), value)
}

/// Hop-by-hop headers and credentials never relayed back from the gateway.
pub fn is_stripped(name: &HeaderName, connection_listed: &[String]) -> bool {
    let n = name.as_str();
    matches!(
        n,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "authorization"
            | "cookie"
            | "set-cookie"
            | "host"
            | "content-length"
    ) || n.starts_with("x-remote-")
        || n.starts_with("sec-websocket-")
        || connection_listed.iter().any(|c| c == n)
}

/// The field names a `Connection` header lists, in lower case: hop-by-hop
/// for this answer.
pub fn connection_listed(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .collect()
}

/// The caller's identity as `X-Remote-*` fields, the way kube-apiserver's
/// front proxy sends it: `emit(name, value)` for each, names in lower case.
/// A value no header can carry (a control character) is left out.
pub fn identity_fields(id: &Identity, mut emit: impl FnMut(&str, &str)) {
    let mut field = |name: &str, v: &str| {
        if is_field_value(v) {
            emit(name, v);
        }
    };
    field("x-remote-user", &id.user);
    if let Some(uid) = &id.uid {
        field("x-remote-uid", uid);
    }
    for g in &id.groups {
        field("x-remote-group", g);
    }
    let mut key = String::new();
    for (k, vs) in &id.extra {
        // The key is percent-encoded, as kube-apiserver's front proxy does.
        key.clear();
        key.push_str("x-remote-extra-");
        for b in k.bytes() {
            match b {
                b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => key.push(b as char),
                _ => {
                    let _ = write!(key, "%{b:02x}");
                }
            }
        }
        for v in vs {
            field(&key, v);
        }
    }
}

/// Can a header field carry this value (as `HeaderValue::from_str` decides)?
pub fn is_field_value(v: &str) -> bool {
    v.bytes().all(|b| b == b'\t' || (b >= 32 && b != 127))
}

/// Sets the caller's identity the way kube-apiserver's front proxy does.
pub fn identity_headers(id: &Identity, out: &mut HeaderMap) {
    identity_fields(id, |name, v| {
        if let (Ok(name), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            out.append(name, v);
        }
    });
}

/// Is this answer the one to the call sent with invocation ID `sent`? A
/// gateway that echoes `X-Kruntime-Invocation-ID` (as the simulated one
/// does; the engine has no gateway yet) names its call; an answer naming another is an extra or late answer
/// left on a reused connection, and relaying it would hand one caller
/// another's result. An answer without the field cannot be matched.
pub fn answers_call(
    answer: &HeaderMap,
    sent: &HeaderValue,
    target: &GatewayTarget,
) -> Result<(), AccessFailure> {
    match answer.get_all(INVOCATION_ID).iter().find(|v| *v != sent) {
        None => Ok(()),
        Some(got) => {
            let got = String::from_utf8_lossy(got.as_bytes())
                .chars()
                .take(MAX_INVOCATION_ID)
                .collect::<String>();
            tracing::warn!(gateway = %target.authority(), sent = ?sent, got = %got, "a Runtime gateway answered another call; its connection is closed");
            Err(AccessFailure::AnotherCallsAnswer { got })
        }
    }
}

/// Is a gateway's answer with this status the call's answer, relayed as it
/// is? Only a final status (200 to 999): interim answers (1xx) are read
/// past, and a `101 Switching Protocols`, which no invoke asks for, ends
/// no call: the call broke off (502). Both paths decide with this; hyper
/// hands the router a 101 as if it were final (which then became a 101 to
/// an HTTP/1.1 caller and a reset stream over HTTP/2).
pub fn is_final_answer(status: u16) -> bool {
    (200..=999).contains(&status)
}

/// A call dispatched and broken off: not retried (the call may have run).
pub fn broke_off() -> ConsoleError {
    AccessFailure::BrokeOff.into()
}
