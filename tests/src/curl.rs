//! One HTTP exchange through `curl` against the test environment's Console
//! (trusting its CA): status, response headers, body.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::env::env;

/// The answer: status (0 when curl got none), headers with lower-cased
/// names (every header block curl saw, in order), body as text.
pub struct Reply {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// What curl said when it got no answer (its exit status and error), else empty.
    pub error: String,
}

impl Reply {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.header_all(name).into_iter().next()
    }

    /// Every value of header `name` (lower case).
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// What a request sends.
pub enum Body<'a> {
    None,
    /// JSON, with `Content-Type: application/json`.
    Json(&'a str),
    /// These bytes as they are (the caller sets any Content-Type).
    Raw(&'a str),
    /// A file's bytes.
    File(&'a Path),
}

/// Sends one request with `headers` and `body`; 30 s at most. The HTTP
/// version is curl's choice (HTTP/2 where the server offers it), or
/// `KRT_TEST_HTTP` (`1.1` or `2`) when set: the `/v1` suites run once more
/// with `1.1`, through the Console's HTTP/1.1 invoke path.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: Body<'_>) -> Reply {
    let version = std::env::var("KRT_TEST_HTTP").ok();
    request_as(version.as_deref(), method, url, headers, body)
}

/// [`request`] over HTTP `version` (`1.1` or `2`; `None`: curl's choice).
pub fn request_as(
    version: Option<&str>,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Body<'_>,
) -> Reply {
    let dir = tempfile::tempdir().expect("temporary directory");
    let hfile = dir.path().join("h");
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "-X",
        method,
        "--max-time",
        "30",
        "--cacert",
        env().var("CONSOLE_CA"),
        "-D",
    ])
    .arg(&hfile)
    .args(["-o", "-", "-w", "\n%{http_code}"]);
    match version {
        Some("1.1") => drop(cmd.arg("--http1.1")),
        Some("2") => drop(cmd.arg("--http2")),
        Some(other) => panic!("KRT_TEST_HTTP must be 1.1 or 2, not {other}"),
        None => {}
    }
    for (k, v) in headers {
        cmd.arg("-H").arg(format!("{k}: {v}"));
    }
    match body {
        Body::None => {}
        Body::Json(b) => {
            cmd.args(["-H", "Content-Type: application/json", "--data-binary"])
                .arg(b);
        }
        Body::Raw(b) => {
            cmd.arg("--data-binary").arg(b);
        }
        Body::File(f) => {
            cmd.arg("--data-binary").arg(format!("@{}", f.display()));
        }
    }
    let out = cmd.arg(url).output().expect("running curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let headers = std::fs::read_to_string(&hfile)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let code = code.trim().parse().unwrap_or(0);
    let error = if code == 0 || !out.status.success() {
        format!(
            "curl {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    } else {
        String::new()
    };
    Reply {
        code,
        headers,
        body: body.to_owned(),
        error,
    }
}

/// `Bearer <token of user>` for an Authorization header.
pub fn bearer(user: &str) -> String {
    format!("Bearer {}", env().token(user))
}
