//! The embedded web UI: static assets with immutable caching for hashed
//! files, and the SPA's `index.html` for every other non-API path.
//!
//! Every build embeds the assets (rust-embed's `debug-embed`), and only a
//! name in the embedded set is ever looked up. A path that tries to leave
//! the asset tree (`..`, `\`, NUL, an encoded `/`, `\`, `.` or NUL) is
//! refused with 400; other odd shapes (an empty or `.` segment, any other
//! percent-encoding) are not looked up and get `index.html`.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, Uri, header};
use kruntimes_core::failure::{Reason, Refusal as _};
use rust_embed::Embed;

#[derive(Embed)]
#[folder = "$OUT_DIR/web"]
struct Assets;

/// The embedded names, collected once.
fn embedded() -> &'static std::collections::HashSet<String> {
    static NAMES: std::sync::OnceLock<std::collections::HashSet<String>> =
        std::sync::OnceLock::new();
    NAMES.get_or_init(|| Assets::iter().map(|n| n.into_owned()).collect())
}

/// How a request path (without the leading `/`) is treated.
#[derive(Debug, PartialEq, Eq)]
pub enum PathKind {
    /// Plain segments: may name an embedded file.
    Lookup,
    /// Not a file name (empty or `.` segment, other percent-encoding): `index.html`.
    Route,
    /// Tries to leave the asset tree: refused.
    Refused(&'static str),
}

/// Classifies a path before anything is looked up.
pub fn classify(path: &str) -> PathKind {
    let lower = path.to_ascii_lowercase();
    if path.bytes().any(|b| b == 0 || b.is_ascii_control()) {
        return PathKind::Refused("the path contains a control character");
    }
    if path.contains('\\') {
        return PathKind::Refused("the path contains a backslash");
    }
    for enc in ["%2f", "%5c", "%2e", "%00"] {
        if lower.contains(enc) {
            return PathKind::Refused("the path contains an encoded '/', '\\', '.' or NUL");
        }
    }
    if path.split('/').any(|s| s == "..") {
        return PathKind::Refused("the path contains a '..' segment");
    }
    if path.is_empty() || path.contains('%') || path.split('/').any(|s| s.is_empty() || s == ".") {
        return PathKind::Route;
    }
    PathKind::Lookup
}

fn file_response(path: &str, immutable: bool) -> Option<Response> {
    if !embedded().contains(path) {
        return None;
    }
    let file = Assets::get(path)?;
    let mime = file.metadata.mimetype();
    // Embedded data is borrowed from the binary: served without a copy.
    let body = match file.data {
        std::borrow::Cow::Borrowed(b) => Body::from(bytes::Bytes::from_static(b)),
        std::borrow::Cow::Owned(v) => Body::from(v),
    };
    let mut resp = Response::new(body);
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
    match classify(path) {
        PathKind::Refused(why) => {
            return crate::error::ConsoleError::bad_request(format!(
                "invalid path: {why}; nothing was looked up"
            ))
            .into_response();
        }
        PathKind::Route => {}
        // Vite puts content-hashed files under assets/.
        PathKind::Lookup => {
            if let Some(resp) = file_response(path, path.starts_with("assets/")) {
                return resp;
            }
        }
    }
    if path.starts_with("assets/") {
        return (Reason::NotFound.code(), "not found").into_response();
    }
    file_response("index.html", false)
        .unwrap_or_else(|| (Reason::NotFound.code(), "no web UI").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified_before_any_lookup() {
        for p in [
            "index.html",
            "assets/index-abc123.js",
            "runs/team-a/x",
            "favicon.svg",
        ] {
            assert_eq!(classify(p), PathKind::Lookup, "{p}");
        }
        for p in ["", "a//b", "a/./b", "./x", "runs/", "a%20b"] {
            assert_eq!(classify(p), PathKind::Route, "{p}");
        }
        for p in [
            "../../etc/mtab",
            "assets/../../x",
            "..",
            "a\\b",
            "a%2fb",
            "a%2F..%2Fb",
            "a%5cb",
            "%2e%2e/etc",
            "a%00b",
            "a\0b",
        ] {
            assert!(matches!(classify(p), PathKind::Refused(_)), "{p}");
        }
    }

    #[test]
    fn only_embedded_names_are_served() {
        assert!(embedded().contains("index.html"));
        assert!(file_response("index.html", false).is_some());
        assert!(file_response("../index.html", false).is_none());
        assert!(file_response("not-there.txt", false).is_none());
    }
}
