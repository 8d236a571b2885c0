//! `operations:ws`: a message relay between the caller and the gateway,
//! bounded in message size and idle time. Closing either side closes the
//! other; closing never releases the Session Run.

use std::sync::Arc;

use axum::extract::ws::{self, CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use http::HeaderMap;
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};

use super::runs::Mode;
use super::{V1State, identity_headers};
use crate::error::ConsoleError;
use kruntimes_core::auth::Caller as Identity;
use kruntimes_core::auth::Revoked;
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::limit::Slot;

type Upstream =
    tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// Read and write buffer of each side of a relay: an operation event fits.
const RELAY_BUFFER: usize = 512;

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
    let stream = super::gateway::connect(&state.tls, &target, state.bounds.connect_timeout).await?;
    let url = format!(
        "wss://{}/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws",
        target.authority()
    );
    let mut request = tungstenite::client::IntoClientRequest::into_client_request(url.as_str())
        .map_err(|e| ConsoleError::internal(e.to_string()))?;
    identity_headers(&identity, request.headers_mut());
    if let Some(p) = headers.get("sec-websocket-protocol") {
        request
            .headers_mut()
            .insert("sec-websocket-protocol", p.clone());
    }
    let max = state.bounds.max_ws_message_bytes;
    // Small buffers: operation frames are small, and a relay holds two
    // sockets per caller. A larger frame grows the read buffer for as long
    // as it takes (up to the message bound).
    let config = WebSocketConfig::default()
        .read_buffer_size(RELAY_BUFFER)
        .write_buffer_size(RELAY_BUFFER)
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let (upstream, _) = tokio_tungstenite::client_async_with_config(request, stream, Some(config))
        .await
        .map_err(|e| {
            tracing::warn!(gateway = %target.authority(), error = %e, "gateway WebSocket handshake failed");
            match e {
                tungstenite::Error::Http(resp) if resp.status() == http::StatusCode::TOO_MANY_REQUESTS => {
                    let mut e = ConsoleError::new(http::StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", "the Runtime gateway is busy");
                    e.retry_after = Some(1);
                    e
                }
                _ => ConsoleError::unavailable(format!("the Runtime gateway {} refused the operations socket", target.authority())),
            }
        })?;
    let idle = state.bounds.idle_timeout;
    let lifecycle = state.lifecycle.clone();
    let recheck = state.recheck.clone();
    let attrs = super::run_attributes(ns, name, "operations");
    Ok(upgrade
        .read_buffer_size(RELAY_BUFFER)
        .write_buffer_size(RELAY_BUFFER)
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |client| async move {
            let revoked = async move { recheck.revoked(&identity, &attrs).await };
            relay(client, upstream, idle, revoked, lifecycle).await;
            drop(slot);
        }))
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

async fn relay(
    client: WebSocket,
    upstream: Upstream,
    idle: std::time::Duration,
    revoked: impl std::future::Future<Output = Revoked>,
    lifecycle: Lifecycle,
) {
    let _stream = lifecycle.track();
    let stopping = lifecycle.stopping();
    tokio::pin!(stopping);
    let (mut c_tx, mut c_rx) = client.split();
    let (mut u_tx, mut u_rx) = upstream.split();
    tokio::pin!(revoked);
    loop {
        tokio::select! {
            why = &mut revoked => {
                tracing::info!(reason = %why, "closing an operations socket whose access ended");
                let (event, close) = revocation(&why);
                let _ = c_tx.send(event).await;
                let _ = c_tx.send(close).await;
                break;
            }
            m = c_rx.next() => match m {
                Some(Ok(m)) => {
                    let closing = matches!(m, Message::Close(_));
                    if let Some(m) = to_upstream(m)
                        && u_tx.send(m).await.is_err()
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
                    let _ = c_tx.send(Message::Close(Some(CloseFrame { code: ws::close_code::SIZE, reason: "message too large or malformed".into() }))).await;
                    break;
                }
                None => break,
            },
            m = u_rx.next() => match m {
                Some(Ok(m)) => {
                    let closing = matches!(m, tungstenite::Message::Close(_));
                    if let Some(m) = to_client(m)
                        && c_tx.send(m).await.is_err()
                    {
                        break;
                    }
                    if closing {
                        break;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "gateway WebSocket error");
                    let _ = c_tx.send(Message::Close(Some(CloseFrame { code: ws::close_code::ERROR, reason: "the Runtime gateway connection failed".into() }))).await;
                    break;
                }
                None => {
                    let _ = c_tx.send(Message::Close(Some(CloseFrame { code: ws::close_code::AWAY, reason: "the Runtime gateway closed the connection".into() }))).await;
                    break;
                }
            },
            // Closing does not release the Session Run: the client reconnects to another replica.
            () = &mut stopping => {
                let _ = c_tx.send(Message::Close(Some(CloseFrame { code: ws::close_code::AWAY, reason: "the server is shutting down; reconnect".into() }))).await;
                break;
            }
            () = tokio::time::sleep(idle) => {
                let _ = c_tx.send(Message::Close(Some(CloseFrame { code: ws::close_code::AWAY, reason: "idle timeout".into() }))).await;
                break;
            }
        }
    }
    let _ = u_tx.close().await;
    let _ = c_tx.close().await;
}
