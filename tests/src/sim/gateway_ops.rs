//! `operations:ws` sessions: scripted operations that never run real commands.
//!
//! Commands: `echo ARGS...` (prints the arguments), `cat` (prints `stdin`), `sleep SECONDS`
//! (progress every 200 ms; cancellable), `fail [MESSAGE...]` (exit 1), `binary` (one base64
//! chunk of non-UTF-8 bytes), `demo` (one event of every kind). Anything else exits 127.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::sim::gateway_state::{Gateway, bump, new_id};

/// Interval between progress events of `sleep`.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);
/// Longest `sleep` accepted.
pub const MAX_SLEEP_SECONDS: f64 = 3600.0;
/// Bytes sent by `binary`: not valid UTF-8.
pub const BINARY_BYTES: &[u8] = &[0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, b'k', b'r', b't', 0x0a];

/// A frame from the client.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ClientFrame {
    Send {
        operation: Operation,
    },
    Cancel {
        #[serde(rename = "operationID")]
        operation_id: String,
    },
    Heartbeat,
}

/// What to run.
#[derive(Clone, Debug, Deserialize)]
pub struct Operation {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub stdin: Option<Value>,
}

/// The operation in progress on a socket.
struct Running {
    id: String,
    cancel: CancellationToken,
}

/// Keeps the open-socket gauge right however the session ends.
struct OpenSocket<'a>(&'a Gateway);

impl Drop for OpenSocket<'_> {
    fn drop(&mut self) {
        self.0.stats.ws_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one WebSocket until the client closes it or the listener goes down.
pub async fn session(mut socket: WebSocket, gateway: Arc<Gateway>, down: CancellationToken) {
    bump(&gateway.stats.ws_open);
    let _open = OpenSocket(&gateway);
    let (events_tx, mut events) = mpsc::channel::<Value>(64);
    let mut running: Option<Running> = None;
    loop {
        tokio::select! {
            () = down.cancelled() => {
                if let Some(op) = running.take() {
                    op.cancel.cancel();
                }
                let _ = socket.send(Message::Close(None)).await;
                break;
            }
            event = events.recv() => {
                let Some(event) = event else { break };
                let terminal = event.get("type").and_then(Value::as_str) == Some("terminal");
                if terminal {
                    running = None;
                }
                if socket.send(Message::Text(event.to_string().into())).await.is_err() {
                    if let Some(op) = running.take() {
                        bump(&gateway.stats.upstream_disconnects);
                        op.cancel.cancel();
                    }
                    break;
                }
            }
            frame = socket.recv() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
                    Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => {
                        if let Some(op) = running.take() {
                            tracing::info!(operation = %op.id, "client went away during an operation");
                            bump(&gateway.stats.upstream_disconnects);
                            op.cancel.cancel();
                        }
                        break;
                    }
                };
                if let Some(reply) = handle_frame(&text, &gateway, &mut running, &events_tx)
                    && socket.send(Message::Text(reply.to_string().into())).await.is_err() {
                        break;
                    }
            }
        }
    }
    if let Some(op) = running.take() {
        op.cancel.cancel();
    }
}

/// Acts on one client frame; returns an immediate reply when there is one.
fn handle_frame(
    text: &str,
    gateway: &Gateway,
    running: &mut Option<Running>,
    events: &mpsc::Sender<Value>,
) -> Option<Value> {
    let frame = match serde_json::from_str::<ClientFrame>(text) {
        Ok(frame) => frame,
        Err(err) => {
            return Some(json!({
                "type": "error",
                "error": format!("invalid frame: {err}"),
            }));
        }
    };
    match frame {
        ClientFrame::Heartbeat => {
            bump(&gateway.stats.heartbeats);
            None
        }
        ClientFrame::Cancel { operation_id } => {
            bump(&gateway.stats.cancels);
            match running {
                Some(op) if op.id == operation_id => {
                    op.cancel.cancel();
                    None
                }
                _ => Some(json!({
                    "type": "error",
                    "operationID": operation_id,
                    "error": "no such operation is running",
                })),
            }
        }
        ClientFrame::Send { operation } => {
            if let Some(op) = running {
                return Some(json!({
                    "type": "error",
                    "error": format!("operation {} is still running", op.id),
                }));
            }
            bump(&gateway.stats.operations);
            let id = new_id("op");
            let cancel = CancellationToken::new();
            tracing::info!(operation = %id, command = %operation.command, "operation accepted");
            tokio::spawn(run(id.clone(), operation, cancel.clone(), events.clone()));
            *running = Some(Running { id, cancel });
            None
        }
    }
}

fn terminal(id: &str, exit_code: i32, status: &str, error: Option<&str>) -> Value {
    let mut event = json!({
        "type": "terminal",
        "operationID": id,
        "exitCode": exit_code,
        "status": status,
    });
    if let (Some(error), Some(map)) = (error, event.as_object_mut()) {
        map.insert("error".into(), Value::String(error.to_owned()));
    }
    event
}

fn output(id: &str, stream: &str, data: &str) -> Value {
    json!({ "type": "output", "operationID": id, "stream": stream, "data": data })
}

fn binary_output(id: &str, bytes: &[u8]) -> Value {
    json!({
        "type": "output",
        "operationID": id,
        "stream": "stdout",
        "encoding": "base64",
        "data": base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

fn progress(id: &str, message: &str, percent: u32) -> Value {
    json!({ "type": "progress", "operationID": id, "message": message, "percent": percent })
}

/// Produces the events of one operation. Sending stops silently once the socket is gone.
async fn run(id: String, op: Operation, cancel: CancellationToken, events: mpsc::Sender<Value>) {
    let send = |event: Value| {
        let events = events.clone();
        async move { events.send(event).await.is_ok() }
    };
    if !send(json!({ "type": "accepted", "operationID": id })).await {
        return;
    }
    let end = match op.command.as_str() {
        "echo" => {
            send(output(&id, "stdout", &format!("{}\n", op.args.join(" ")))).await;
            terminal(&id, 0, "Succeeded", None)
        }
        "cat" => {
            let data = match &op.stdin {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            send(output(&id, "stdout", &data)).await;
            terminal(&id, 0, "Succeeded", None)
        }
        "binary" => {
            send(binary_output(&id, BINARY_BYTES)).await;
            terminal(&id, 0, "Succeeded", None)
        }
        "demo" => {
            send(output(&id, "stdout", "demo output\n")).await;
            send(binary_output(&id, BINARY_BYTES)).await;
            send(progress(&id, "half way", 50)).await;
            send(output(&id, "stderr", "demo warning\n")).await;
            terminal(&id, 0, "Succeeded", None)
        }
        "fail" => {
            let message = if op.args.is_empty() {
                "operation failed as requested".to_owned()
            } else {
                op.args.join(" ")
            };
            send(output(&id, "stderr", &format!("{message}\n"))).await;
            terminal(&id, 1, "Failed", Some(&message))
        }
        "sleep" => sleep(&id, &op.args, &cancel, &send).await,
        _ => terminal(&id, 127, "Failed", Some("command not found")),
    };
    send(end).await;
}

async fn sleep<F, Fut>(id: &str, args: &[String], cancel: &CancellationToken, send: &F) -> Value
where
    F: Fn(Value) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let seconds = match args.first().map(|a| a.parse::<f64>()) {
        Some(Ok(s)) if s.is_finite() && (0.0..=MAX_SLEEP_SECONDS).contains(&s) => s,
        _ => {
            return terminal(
                id,
                2,
                "Failed",
                Some(&format!(
                    "sleep: expected a number of seconds between 0 and {MAX_SLEEP_SECONDS}"
                )),
            );
        }
    };
    let total = Duration::from_secs_f64(seconds);
    let started = tokio::time::Instant::now();
    let deadline = started + total;
    let mut ticker = tokio::time::interval_at(started + PROGRESS_INTERVAL, PROGRESS_INTERVAL);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return terminal(id, 130, "Cancelled", Some("cancelled")),
            () = tokio::time::sleep_until(deadline) => break,
            _ = ticker.tick() => {
                let done = started.elapsed().as_secs_f64() / seconds.max(f64::EPSILON);
                let percent = (done * 100.0).clamp(0.0, 99.0) as u32;
                if !send(progress(id, "sleeping", percent)).await {
                    return terminal(id, 130, "Cancelled", Some("client went away"));
                }
            }
        }
    }
    send(progress(id, "sleeping", 100)).await;
    terminal(id, 0, "Succeeded", None)
}
