//! `operations:ws`: a message relay between the caller and the gateway,
//! bounded in message size and idle time. Closing either side closes the
//! other; closing never releases the Session Run.
//!
//! The Console answers the caller's upgrade itself and relays frames
//! ([`super::frames`]) in one task that owns both sockets.

use kruntimes_core::failure::{Reason, Refusal as _};
use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header, request};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite;

use super::frames::{Direction, Pipe, Refusal, Stop};
use super::gateway::{GatewayStream, GatewayTarget};
use super::policy::identity_fields;
use super::runs::Mode;
use super::{AccessFailure, AccessState};
use crate::error::ConsoleError;
use kruntimes_core::auth::Caller as Identity;
use kruntimes_core::auth::{ResourceAttributes, Revoked};
use kruntimes_core::limit::Slot;
use kruntimes_transport::h1;
use kruntimes_transport::serve::read_into;

/// Close codes (RFC 6455 §7.4.1).
const AWAY: u16 = 1001;
const PROTOCOL: u16 = 1002;
const NOT_UTF8: u16 = 1007;
const POLICY: u16 = 1008;
const TOO_BIG: u16 = 1009;
const ERROR: u16 = 1011;
const TRY_AGAIN: u16 = 1013;

/// The close reason of a socket whose frames would pass the byte budget.
const BUSY_REASON: &str =
    "too many bytes held (--access-max-buffered-bytes, -per-caller); retry later";

/// How long the last frames and TLS close of an ending relay may take.
const CLOSING_TIMEOUT: Duration = Duration::from_secs(5);

/// What a relay keeps besides its two sockets, in one allocation: the task
/// running the relay then holds pointers, not copies (a future keeps a slot
/// for every value it captures, for as long as it lives).
struct Relay {
    identity: Identity,
    attrs: ResourceAttributes,
    /// Shared: the re-check, the lifecycle and the bounds.
    state: Arc<AccessState>,
    /// The `/v1` place the socket holds until it closes.
    slot: Slot,
}

/// The caller's upgrade request, checked: what answering it takes.
pub struct Upgrade {
    on: hyper::upgrade::OnUpgrade,
    accept: String,
}

/// Checks that a request asks for a WebSocket (RFC 6455 §4.2.1, HTTP/1.1);
/// `None` when it does not.
pub fn upgrade_request(parts: &mut request::Parts) -> Option<Upgrade> {
    let headers = &parts.headers;
    let key = headers.get("sec-websocket-key")?.as_bytes();
    // The base64 form of 16 bytes.
    let key_ok = key.len() == 24
        && key[..22]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
        && &key[22..] == b"==";
    let ok = parts.method == http::Method::GET
        && parts.version == http::Version::HTTP_11
        && crate::origin::websocket_upgrade(headers)
        && headers
            .get("sec-websocket-version")
            .is_some_and(|v| v.as_bytes() == b"13")
        && key_ok;
    if !ok {
        return None;
    }
    let accept = tungstenite::handshake::derive_accept_key(key);
    let on = parts.extensions.remove::<hyper::upgrade::OnUpgrade>()?;
    Some(Upgrade { on, accept })
}

/// Resolves the (already admitted) call, connects the gateway, then answers the upgrade.
#[allow(clippy::too_many_arguments)]
pub async fn open(
    state: Arc<AccessState>,
    identity: Identity,
    slot: Slot,
    ns: &str,
    name: &str,
    uid: &str,
    headers: &HeaderMap,
    upgrade: Upgrade,
) -> Result<Response, ConsoleError> {
    let run = state.runs.resolve(ns, name, uid, Mode::Session)?;
    let target = state.gateways.target(ns, &run.spec.runtime).await?;
    let timeout = state.bounds.connect_timeout;
    let stream = super::gateway::connect(&state.tls, &target, timeout).await?;
    let path = format!("/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws");
    let protocol = headers.get("sec-websocket-protocol");
    let (upstream, first, chosen) = tokio::time::timeout(
        timeout,
        handshake(stream, &target, &path, &identity, protocol),
    )
    .await
    .map_err(|_| {
        tracing::warn!(gateway = %target.authority(), "gateway WebSocket handshake timed out");
        refused(&target)
    })??;
    let parts = Box::new(Relay {
        identity,
        attrs: super::run_attributes(ns, name, "operations"),
        state,
        slot,
    });
    let Upgrade { on, accept } = upgrade;
    tokio::spawn(async move {
        match on.await {
            Ok(upgraded) => relay(TokioIo::new(upgraded), upstream, first, parts).await,
            Err(e) => tracing::debug!(error = %e, "the caller's upgrade failed"),
        }
    });
    let mut answer = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let h = answer.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::try_from(accept).expect("base64 is a field value"),
    );
    // The caller's answer names the subprotocol the gateway chose.
    if let Some(p) = chosen {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    Ok(answer)
}

fn refused(target: &GatewayTarget) -> ConsoleError {
    ConsoleError::unavailable(format!(
        "the Runtime gateway {} refused the operations socket",
        target.authority()
    ))
}

/// Largest handshake answer read from a gateway.
const MAX_HANDSHAKE_ANSWER: usize = 16 << 10;

/// The client side of the WebSocket handshake with the gateway. Returns
/// the socket, the bytes the gateway sent after its answer (the first
/// frames) and the subprotocol it chose.
async fn handshake(
    mut stream: GatewayStream,
    target: &GatewayTarget,
    path: &str,
    identity: &Identity,
    protocol: Option<&HeaderValue>,
) -> Result<(Box<GatewayStream>, Vec<u8>, Option<HeaderValue>), ConsoleError> {
    let key = tungstenite::handshake::client::generate_key();
    let mut req = Vec::with_capacity(512);
    req.extend_from_slice(format!("GET {path} HTTP/1.1\r\n").as_bytes());
    let field = h1::field;
    super::upstream::host_field(&mut req, target);
    field(&mut req, "connection", b"Upgrade");
    field(&mut req, "upgrade", b"websocket");
    field(&mut req, "sec-websocket-version", b"13");
    field(&mut req, "sec-websocket-key", key.as_bytes());
    identity_fields(identity, |k, v| field(&mut req, k, v.as_bytes()));
    if let Some(p) = protocol {
        field(&mut req, "sec-websocket-protocol", p.as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    let failed = |why: &str| {
        tracing::warn!(gateway = %target.authority(), error = why, "gateway WebSocket handshake failed");
        refused(target)
    };
    stream
        .write_all(&req)
        .await
        .map_err(|e| failed(&e.to_string()))?;
    stream.flush().await.map_err(|e| failed(&e.to_string()))?;
    let mut buf = bytes::BytesMut::with_capacity(1024);
    let mut answer = HeaderMap::new();
    let head = loop {
        match h1::parse_response(&buf, &mut answer) {
            h1::Parsed::Complete(head) => break head,
            h1::Parsed::Partial if buf.len() < MAX_HANDSHAKE_ANSWER => {}
            _ => return Err(failed("malformed handshake answer")),
        }
        match read_into(&mut stream, &mut buf).await {
            Ok(n) if n > 0 => {}
            Ok(_) => return Err(failed("closed during the handshake")),
            Err(e) => return Err(failed(&e.to_string())),
        }
    };
    if head.status == Reason::TooManyRequests.code_u16() {
        tracing::warn!(gateway = %target.authority(), "the gateway refused an operations socket: 429");
        return Err(AccessFailure::GatewayBusy.into());
    }
    let has = |name: &str, token: &str| h1::has_token(&answer, name, token);
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let accepted = answer
        .get("sec-websocket-accept")
        .is_some_and(|v| v.as_bytes() == accept.as_bytes());
    if head.status != 101
        || !head.http11
        || !has("upgrade", "websocket")
        || !has("connection", "upgrade")
        || !accepted
    {
        return Err(failed(&format!(
            "answered {} without a valid upgrade",
            head.status
        )));
    }
    // No extension was offered: the gateway may not use one.
    if answer.contains_key("sec-websocket-extensions") {
        return Err(failed("answered with an extension nobody offered"));
    }
    // The gateway may pick one of the caller's subprotocols, no other.
    let chosen = match answer.get("sec-websocket-protocol") {
        None => None,
        Some(p) => {
            let p = p.to_str().unwrap_or_default().trim();
            let offered = protocol
                .and_then(|o| o.to_str().ok())
                .is_some_and(|o| o.split(',').any(|t| t.trim() == p));
            if !offered || p.is_empty() {
                return Err(failed("chose a subprotocol the caller did not offer"));
            }
            HeaderValue::from_str(p).ok()
        }
    };
    // Frames the gateway sent right after its answer are the socket's first bytes.
    let first = buf[head.len..].to_vec();
    Ok((Box::new(stream), first, chosen))
}

/// How a relay ended.
enum End {
    Revoked(Revoked),
    Stopping,
    Idle,
    /// A direction stopped: from the caller, or from the gateway.
    Caller(Stop),
    Gateway(Stop),
}

/// Relays frames both ways until a side closes, access ends, the Console
/// stops or neither side sent anything for the idle timeout; then closes
/// both sockets with a close frame each.
async fn relay<C>(mut caller: C, mut gateway: Box<GatewayStream>, first: Vec<u8>, parts: Box<Relay>)
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let Relay {
        identity,
        attrs,
        state,
        slot: _slot,
    } = &*parts;
    let max = state.bounds.max_ws_message_bytes;
    // What either direction keeps is held under the caller's share of the
    // budget that invoke bodies are held under.
    let mut up =
        Pipe::new(Direction::ToGateway, max).held_under(state.buffered.hold(&identity.user));
    let mut down =
        Pipe::new(Direction::ToCaller, max).held_under(state.buffered.hold(&identity.user));
    let _stream = state.lifecycle.track();
    let idle = state.bounds.idle_timeout;
    let mut active = Instant::now();
    let end = match down.take_first(first) {
        Err(refusal) => End::Gateway(Stop::Refused(refusal)),
        Ok(()) => {
            let revoked = state.recheck.revoked(identity, attrs);
            let stopping = state.lifecycle.stopping();
            let timer = tokio::time::sleep(idle);
            tokio::pin!(revoked, stopping, timer);
            poll_fn(|cx| {
                if let Poll::Ready(why) = revoked.as_mut().poll(cx) {
                    return Poll::Ready(End::Revoked(why));
                }
                if stopping.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(End::Stopping);
                }
                if let Poll::Ready(stop) = up.poll_relay(cx, &mut caller, &mut *gateway) {
                    return Poll::Ready(End::Caller(stop));
                }
                if let Poll::Ready(stop) = down.poll_relay(cx, &mut *gateway, &mut caller) {
                    return Poll::Ready(End::Gateway(stop));
                }
                if up.take_moved() | down.take_moved() {
                    active = Instant::now();
                }
                // The timer is moved only when it fires early.
                while timer.as_mut().poll(cx).is_ready() {
                    if Instant::now() >= active + idle {
                        return Poll::Ready(End::Idle);
                    }
                    timer.as_mut().reset(active + idle);
                }
                Poll::Pending
            })
            .await
        }
    };
    let caller_there = last_frames(&end, &mut up, &mut down);
    let finish = async {
        let to_gateway = async {
            let _ = poll_fn(|cx| up.poll_write(cx, &mut *gateway)).await;
            let _ = gateway.shutdown().await;
        };
        let to_caller = async {
            if caller_there {
                let _ = poll_fn(|cx| down.poll_write(cx, &mut caller)).await;
            }
            let _ = caller.shutdown().await;
        };
        tokio::join!(to_gateway, to_caller);
    };
    let _ = tokio::time::timeout(CLOSING_TIMEOUT, finish).await;
}

/// Queues the last frames of a relay that ended: for the caller (after the
/// frame being written, if any), and a close frame for the gateway unless
/// it sent one. Returns whether the caller is still there to take its own.
fn last_frames(end: &End, up: &mut Pipe, down: &mut Pipe) -> bool {
    match end {
        End::Revoked(why) => {
            tracing::info!(reason = %why, "closing an operations socket whose access ended");
            let event = serde_json::json!({
                "type": "terminal",
                "status": "Revoked",
                "error": why.to_string(),
            });
            down.text(&event.to_string());
            down.close(Some(POLICY), &close_reason(why.to_string()));
        }
        // Closing does not release the Session Run: the client reconnects to another replica.
        End::Stopping => down.close(Some(AWAY), "the server is shutting down; reconnect"),
        End::Idle => down.close(Some(AWAY), "idle timeout"),
        // The caller's close frame went to the gateway: answered with its code.
        End::Caller(Stop::Closed(code)) => down.close(*code, ""),
        End::Caller(Stop::Refused(r)) => {
            tracing::debug!(refusal = ?r, "the caller sent a frame the relay refuses");
            let (code, reason) = match r {
                Refusal::TooLarge => (TOO_BIG, "message too large"),
                Refusal::Malformed => (PROTOCOL, "malformed frame"),
                Refusal::NotUtf8 => (NOT_UTF8, "text message not UTF-8"),
                Refusal::Busy => (TRY_AGAIN, BUSY_REASON),
            };
            down.close(Some(code), reason);
        }
        End::Caller(Stop::Ended | Stop::Failed(_)) => {}
        End::Caller(Stop::Unwritable(_)) => {
            tracing::debug!("writing to the gateway's socket failed");
            down.close(Some(ERROR), "the Runtime gateway connection failed");
        }
        // The gateway's close frame went to the caller: answered with its code.
        End::Gateway(Stop::Closed(code)) => up.close(*code, ""),
        End::Gateway(Stop::Ended) => {
            down.close(Some(AWAY), "the Runtime gateway closed the connection")
        }
        // Writing to the caller failed: the caller is gone.
        End::Gateway(Stop::Unwritable(_)) => {}
        End::Gateway(Stop::Refused(Refusal::Busy)) => {
            tracing::debug!("the gateway's frames would pass the byte budget");
            down.close(Some(TRY_AGAIN), BUSY_REASON);
        }
        End::Gateway(Stop::Refused(_) | Stop::Failed(_)) => {
            tracing::debug!("the gateway's socket failed or sent a frame the relay refuses");
            down.close(Some(ERROR), "the Runtime gateway connection failed");
        }
    }
    up.close(None, "");
    !matches!(
        end,
        End::Caller(Stop::Ended | Stop::Failed(_)) | End::Gateway(Stop::Unwritable(_))
    )
}

/// A close reason is at most 123 bytes.
fn close_reason(mut reason: String) -> String {
    while reason.len() > 123 {
        reason.pop();
    }
    reason
}

#[cfg(test)]
#[path = "ws_tests.rs"]
mod tests;
