//! `operations:ws`: a message relay between the caller and the gateway,
//! bounded in message size and idle time. Closing either side closes the
//! other; closing never releases the Session Run.

use std::sync::Arc;

use axum::extract::ws::{self, CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use http::HeaderMap;
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};

use super::gateway::{GatewayStream, GatewayTarget};
use super::runs::Mode;
use super::{V1State, identity_fields};
use crate::error::ConsoleError;
use kruntimes_core::auth::Caller as Identity;
use kruntimes_core::auth::{ResourceAttributes, Revoked};
use kruntimes_core::h1;
use kruntimes_core::limit::Slot;
use kruntimes_core::serve::read_into;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

type Upstream = WebSocketStream<GatewayStream>;

/// Read buffer of each side of a relay: a socket keeps it while it lives,
/// and a larger message takes more reads (the TLS stream below holds the
/// rest of its record meanwhile).
const RELAY_READ: usize = 256;
/// Frames are written out once they exceed this (each message is flushed).
const RELAY_WRITE: usize = 512;

/// What a relay keeps besides its two sockets, in one allocation: the task
/// running the relay then holds pointers, not copies (a future keeps a slot
/// for every value it captures, for as long as it lives).
struct Relay {
    identity: Identity,
    attrs: ResourceAttributes,
    /// Shared: the re-check, the lifecycle and the idle bound.
    state: Arc<V1State>,
    /// The `/v1` place the socket holds until it closes.
    slot: Slot,
}

/// Resolves the (already admitted) call, connects the gateway, then accepts the upgrade.
#[allow(clippy::too_many_arguments)]
pub async fn open(
    state: Arc<V1State>,
    identity: Identity,
    slot: Slot,
    ns: &str,
    name: &str,
    uid: &str,
    headers: &HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Result<Response, ConsoleError> {
    let run = state.runs.resolve(ns, name, uid, Mode::Session)?;
    let target = state.gateways.target(ns, &run.spec.runtime).await?;
    let timeout = state.bounds.connect_timeout;
    let stream = super::gateway::connect(&state.tls, &target, timeout).await?;
    let max = state.bounds.max_ws_message_bytes;
    // Small buffers: operation frames are small, and a relay holds two
    // sockets per caller. A larger frame grows the read buffer for as long
    // as it takes (up to the message bound).
    let config = WebSocketConfig::default()
        .read_buffer_size(RELAY_READ)
        .write_buffer_size(RELAY_WRITE)
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let path = format!("/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws");
    let protocol = headers.get("sec-websocket-protocol");
    let (upstream, chosen) = tokio::time::timeout(
        timeout,
        handshake(stream, &target, &path, &identity, protocol, config),
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
    let upstream = Box::new(upstream);
    // The caller's answer names the subprotocol the gateway chose.
    Ok(upgrade
        .protocols(chosen)
        .read_buffer_size(RELAY_READ)
        .write_buffer_size(RELAY_WRITE)
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |client| relay(Box::new(client), upstream, parts)))
}

fn refused(target: &GatewayTarget) -> ConsoleError {
    ConsoleError::unavailable(format!(
        "the Runtime gateway {} refused the operations socket",
        target.authority()
    ))
}

/// Largest handshake answer read from a gateway.
const MAX_HANDSHAKE_ANSWER: usize = 16 << 10;

/// The client side of the WebSocket handshake with the gateway, on a read
/// buffer of its own: tungstenite's client handshake reads into 4 KiB that
/// then stay the socket's read buffer for its whole life.
async fn handshake(
    mut stream: GatewayStream,
    target: &GatewayTarget,
    path: &str,
    identity: &Identity,
    protocol: Option<&http::HeaderValue>,
    config: WebSocketConfig,
) -> Result<(Upstream, Option<String>), ConsoleError> {
    use tokio::io::AsyncWriteExt;
    let key = tungstenite::handshake::client::generate_key();
    let mut req = Vec::with_capacity(512);
    req.extend_from_slice(format!("GET {path} HTTP/1.1\r\n").as_bytes());
    let mut field = |name: &str, value: &[u8]| {
        req.extend_from_slice(name.as_bytes());
        req.extend_from_slice(b": ");
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\n");
    };
    field("host", target.authority().as_bytes());
    field("connection", b"Upgrade");
    field("upgrade", b"websocket");
    field("sec-websocket-version", b"13");
    field("sec-websocket-key", key.as_bytes());
    identity_fields(identity, |k, v| field(k, v.as_bytes()));
    if let Some(p) = protocol {
        field("sec-websocket-protocol", p.as_bytes());
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
    if head.status == 429 {
        tracing::warn!(gateway = %target.authority(), "the gateway refused an operations socket: 429");
        let mut e = ConsoleError::new(
            http::StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            "the Runtime gateway is busy",
        );
        e.retry_after = Some(1);
        return Err(e);
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
            Some(p.to_owned())
        }
    };
    // Frames the gateway sent right after its answer are the socket's first bytes.
    let rest = buf.split_off(head.len).to_vec();
    drop(buf);
    let upstream =
        WebSocketStream::from_partially_read(stream, rest, Role::Client, Some(config)).await;
    Ok((upstream, chosen))
}

fn to_upstream(m: Message) -> Option<tungstenite::Message> {
    Some(match m {
        Message::Text(t) => tungstenite::Message::Text(t.as_str().into()),
        Message::Binary(b) => tungstenite::Message::Binary(b),
        Message::Ping(b) => tungstenite::Message::Ping(b),
        Message::Pong(b) => tungstenite::Message::Pong(b),
        Message::Close(c) => {
            tungstenite::Message::Close(c.map(|c| tungstenite::protocol::CloseFrame {
                code: c.code.into(),
                reason: c.reason.as_str().into(),
            }))
        }
    })
}

fn to_client(m: tungstenite::Message) -> Option<Message> {
    Some(match m {
        tungstenite::Message::Text(t) => Message::Text(t.as_str().into()),
        tungstenite::Message::Binary(b) => Message::Binary(b),
        tungstenite::Message::Ping(b) => Message::Ping(b),
        tungstenite::Message::Pong(b) => Message::Pong(b),
        tungstenite::Message::Close(c) => Message::Close(c.map(|c| CloseFrame {
            code: c.code.into(),
            reason: c.reason.as_str().into(),
        })),
        tungstenite::Message::Frame(_) => return None,
    })
}

/// The terminal event and close frame of a socket whose access ended.
/// A close frame for the caller.
fn close(code: u16, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

fn revocation(why: &Revoked) -> (Message, Message) {
    let event = serde_json::json!({
        "type": "terminal",
        "status": "Revoked",
        "error": why.to_string(),
    });
    let mut reason = why.to_string();
    // A close reason is at most 123 bytes.
    while reason.len() > 123 {
        reason.pop();
    }
    (
        Message::Text(event.to_string().into()),
        Message::Close(Some(CloseFrame {
            code: ws::close_code::POLICY,
            reason: reason.into(),
        })),
    )
}

/// Relays messages both ways. The sockets are not split: a branch's future
/// is dropped before its handler runs, so the handler may write to the
/// socket the other branch reads.
async fn relay(mut client: Box<WebSocket>, mut upstream: Box<Upstream>, parts: Box<Relay>) {
    let Relay {
        identity,
        attrs,
        state,
        slot: _slot,
    } = &*parts;
    let idle = state.bounds.idle_timeout;
    let revoked = state.recheck.revoked(identity, attrs);
    let _stream = state.lifecycle.track();
    let stopping = state.lifecycle.stopping();
    tokio::pin!(stopping);
    tokio::pin!(revoked);
    loop {
        tokio::select! {
            why = &mut revoked => {
                tracing::info!(reason = %why, "closing an operations socket whose access ended");
                let (event, close) = revocation(&why);
                let _ = client.send(event).await;
                let _ = client.send(close).await;
                break;
            }
            m = client.next() => match m {
                Some(Ok(m)) => {
                    let closing = matches!(m, Message::Close(_));
                    if let Some(m) = to_upstream(m)
                        && upstream.send(m).await.is_err()
                    {
                        break;
                    }
                    if closing {
                        break;
                    }
                }
                // The caller went away (or broke a bound): end the upstream operation socket.
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "client WebSocket error");
                    let _ = client.send(close(ws::close_code::SIZE, "message too large or malformed")).await;
                    break;
                }
                None => break,
            },
            m = upstream.next() => match m {
                Some(Ok(m)) => {
                    let closing = matches!(m, tungstenite::Message::Close(_));
                    if let Some(m) = to_client(m)
                        && client.send(m).await.is_err()
                    {
                        break;
                    }
                    if closing {
                        break;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "gateway WebSocket error");
                    let _ = client.send(close(ws::close_code::ERROR, "the Runtime gateway connection failed")).await;
                    break;
                }
                None => {
                    let _ = client.send(close(ws::close_code::AWAY, "the Runtime gateway closed the connection")).await;
                    break;
                }
            },
            // Closing does not release the Session Run: the client reconnects to another replica.
            () = &mut stopping => {
                let _ = client.send(close(ws::close_code::AWAY, "the server is shutting down; reconnect")).await;
                break;
            }
            () = tokio::time::sleep(idle) => {
                let _ = client.send(close(ws::close_code::AWAY, "idle timeout")).await;
                break;
            }
        }
    }
    let _ = upstream.close().await;
    let _ = client.close().await;
}
