//! The embedded web UI: static assets with immutable caching for hashed
//! files, and the SPA's `index.html` for every other non-API path.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, Uri, header};
use rust_embed::Embed;

#[derive(Embed)]
#[folder = "$OUT_DIR/web"]
struct Assets;

fn file_response(path: &str, immutable: bool) -> Option<Response> {
    let file = Assets::get(path)?;
    let mime = file.metadata.mimetype();
    let mut resp = Response::new(Body::from(file.data.into_owned()));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if immutable {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..12]));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    Some(resp)
}

/// Serves a static file, or `index.html` for client-side routes.
pub async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("api/") || path == "api" || path.starts_with("v1/") {
        return crate::error::ConsoleError::not_found(format!("no such endpoint {:?}", uri.path()))
            .into_response();
    }
    // Vite puts content-hashed files under assets/.
    if !path.is_empty()
        && let Some(resp) = file_response(path, path.starts_with("assets/"))
    {
        return resp;
    }
    if path.starts_with("assets/") {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    }
    file_response("index.html", false)
        .unwrap_or_else(|| (StatusCode::NOT_FOUND, "no web UI").into_response())
}
