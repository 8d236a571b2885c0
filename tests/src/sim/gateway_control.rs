//! The fake gateway's control API (plain HTTP, for tests):
//!
//! | request | effect |
//! | --- | --- |
//! | `GET /requests` | the last 200 requests seen on the TLS side |
//! | `DELETE /requests` | clears them |
//! | `GET /mode`, `POST /mode {"mode":"normal"\|"429"\|"500"\|"slow"\|"chunked"\|"stall"\|"early413","delayMs"?:N}` | failure mode |
//! | `POST /down`, `POST /up` | close / reopen the TLS listener on the same port |
//! | `GET /stats` | counters |
//! | `POST /reset` | clears requests and counters, mode back to normal |
//! | `GET /healthz` | `ok` |

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::sim::gateway::{Gateway, ModeConfig, TlsSide, error};

#[derive(Clone)]
struct Control {
    gateway: Arc<Gateway>,
    tls: Arc<TlsSide>,
}

/// The control router.
pub fn router(gateway: Arc<Gateway>, tls: Arc<TlsSide>) -> Router {
    Router::new()
        .route("/requests", get(requests).delete(clear_requests))
        .route("/mode", get(mode).post(set_mode))
        .route("/down", post(down))
        .route("/up", post(up))
        .route("/stats", get(stats))
        .route("/reset", post(reset))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(Control { gateway, tls })
}

async fn requests(State(control): State<Control>) -> Response {
    Json(control.gateway.requests()).into_response()
}

async fn clear_requests(State(control): State<Control>) -> StatusCode {
    control.gateway.clear_requests();
    StatusCode::NO_CONTENT
}

async fn mode(State(control): State<Control>) -> Response {
    Json(control.gateway.mode()).into_response()
}

async fn set_mode(
    State(control): State<Control>,
    body: Result<Json<ModeConfig>, JsonRejection>,
) -> Response {
    match body {
        Ok(Json(mode)) => {
            tracing::info!(?mode, "gateway mode changed");
            control.gateway.set_mode(mode);
            Json(mode).into_response()
        }
        Err(err) => error(
            StatusCode::BAD_REQUEST,
            &format!(
                "expected {{\"mode\": \"normal\" | \"429\" | \"500\" | \"slow\" | \"chunked\" | \"stall\", \"delayMs\"?: N}}: {err}"
            ),
        ),
    }
}

async fn status(control: &Control) -> Response {
    Json(json!({
        "up": control.tls.is_up().await,
        "address": control.tls.addr().to_string(),
    }))
    .into_response()
}

async fn down(State(control): State<Control>) -> Response {
    control.tls.down().await;
    status(&control).await
}

async fn up(State(control): State<Control>) -> Response {
    match control.tls.up().await {
        Ok(()) => status(&control).await,
        Err(err) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot listen on {} again: {err}", control.tls.addr()),
        ),
    }
}

async fn stats(State(control): State<Control>) -> Response {
    let mut stats = control.gateway.stats.snapshot();
    if let Some(map) = stats.as_object_mut() {
        map.insert("up".into(), control.tls.is_up().await.into());
    }
    Json(stats).into_response()
}

async fn reset(State(control): State<Control>) -> StatusCode {
    control.gateway.reset();
    StatusCode::NO_CONTENT
}
