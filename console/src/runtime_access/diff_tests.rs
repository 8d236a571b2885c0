//! One invoke policy on both `/v1` paths, shown by a differential test: the
//! same invokes go (a) through the HTTP/1.1 fast path, (b) through the
//! router over HTTP/2, and (c) through the router over HTTP/1.1 on a
//! listener without the fast path (`--access-fast-path=false`), against one
//! scripted gateway. The three answers, and the three requests the gateway
//! received, must be the same once what legitimately differs between
//! connections and HTTP versions is normalised ([`Answer::of`]).

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::HeaderMap;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::testkit::{
    ConsoleListener, DOWN, FUNCTION, Gateway, NS, PENDING, Received, SESSION, Script, TOKEN, UID,
    WAIT, answer, bounds, chunked, console_listener, field_of, states, within,
};

/// The four ways an invoke reaches the handler.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    /// HTTP/1.1 on a listener with the fast path.
    Fast,
    /// HTTP/2 on the same listener: hyper, and the fast path's `direct`
    /// instead of the router.
    DirectH2,
    /// HTTP/2 on a listener without the fast path: hyper and the router.
    RouterH2,
    /// HTTP/1.1 on a listener without the fast path: hyper and the router.
    RouterH1,
}

impl Path {
    fn h2(self) -> bool {
        matches!(self, Path::DirectH2 | Path::RouterH2)
    }
}

const PATHS: [Path; 4] = [Path::Fast, Path::DirectH2, Path::RouterH2, Path::RouterH1];

/// What the scripted gateway does with the next request.
#[derive(Clone, Copy)]
enum Gw {
    /// Nothing may reach it (a request that does is answered, and recorded).
    Unreached,
    /// Reads the request and writes `answer(invocation ID received)`; then
    /// serves the connection on, or (`true`) closes it.
    Answer(fn(&str) -> Vec<u8>, bool),
    /// Reads the head alone, writes `answer(..)` and closes with the body
    /// unread (a gateway with a smaller body limit).
    Early(fn(&str) -> Vec<u8>),
}

/// The request body a caller sends.
enum Body {
    /// With its length announced (`content-length` on either version).
    Announced(Vec<u8>),
    /// Without one: chunked over HTTP/1.1, no `content-length` over HTTP/2.
    Unannounced(Vec<u8>),
}

struct Case {
    what: &'static str,
    /// The Run named (name, UID).
    run: (&'static str, &'static str),
    /// The caller's fields, besides `host`.
    fields: Vec<(&'static str, String)>,
    body: Body,
    gw: Gw,
    /// The status every path must answer.
    status: u16,
}

/// The gateway's answer to `inv` with `fields` and a body of its length.
fn with_length(status: &str, inv: &str, fields: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let len = body.len().to_string();
    let mut all = fields.to_vec();
    all.push(("content-length", &len));
    answer(status, Some(inv), &all, body)
}

/// A body under the request bound (8 MiB) and over what the socket
/// buffers between the Console and the gateway hold.
const BIG: usize = 6 << 20;

fn cases() -> Vec<Case> {
    let auth = || ("authorization", format!("Bearer {TOKEN}"));
    let inv = |id: &str| ("x-kruntime-invocation-id", id.to_owned());
    let f = |k: &'static str, v: &str| (k, v.to_owned());
    let ok = (FUNCTION, UID);
    let small = || Body::Announced(br#"{"input": 1}"#.to_vec());
    let over = (8 << 20) + 1;
    vec![
        Case {
            what: "length answer; hop-by-hop, credential and security fields of the gateway",
            run: ok,
            fields: vec![
                auth(),
                inv("inv-length"),
                f("content-type", "application/json"),
                f("accept", "application/json"),
                f("user-agent", "diff/1"),
                f("x-request-id", "caller-rid"),
                f("x-custom", "dropped"),
            ],
            body: small(),
            gw: Gw::Answer(
                |inv| {
                    with_length(
                        "HTTP/1.1 200 OK",
                        inv,
                        &[
                            ("content-type", "application/json"),
                            ("connection", "x-hop"),
                            ("x-hop", "1"),
                            ("keep-alive", "timeout=5"),
                            ("proxy-authenticate", "Basic"),
                            ("set-cookie", "s=1"),
                            ("x-remote-user", "gateway"),
                            ("upgrade", "foo/1"),
                            ("x-frame-options", "ALLOWALL"),
                            ("cache-control", "max-age=5"),
                            ("x-request-id", "gateway-rid"),
                            ("x-custom", "kept"),
                        ],
                        br#"{"output": 1}"#,
                    )
                },
                false,
            ),
            status: 200,
        },
        Case {
            what: "chunked answer with an extension and trailers, to a caller that takes trailers",
            run: ok,
            fields: vec![auth(), inv("inv-chunked"), f("te", "trailers")],
            body: small(),
            gw: Gw::Answer(
                |inv| {
                    let mut out = answer(
                        "HTTP/1.1 200 OK",
                        Some(inv),
                        &[
                            ("content-type", "text/plain"),
                            ("transfer-encoding", "chunked"),
                            ("trailer", "x-trailer"),
                        ],
                        b"",
                    );
                    let body: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
                    out.extend(chunked(&body, 700));
                    // A trailer section with a field no answer may carry.
                    out.truncate(out.len() - 2);
                    out.extend_from_slice(b"set-cookie: t=1\r\n\r\n");
                    out
                },
                false,
            ),
            status: 200,
        },
        Case {
            what: "close-delimited answer",
            run: ok,
            fields: vec![auth(), inv("inv-close")],
            body: small(),
            gw: Gw::Answer(
                |inv| answer("HTTP/1.1 200 OK", Some(inv), &[], &[b'c'; 20 << 10]),
                true,
            ),
            status: 200,
        },
        Case {
            what: "204 answer",
            run: ok,
            fields: vec![auth(), inv("inv-204")],
            body: small(),
            gw: Gw::Answer(
                |inv| answer("HTTP/1.1 204 No Content", Some(inv), &[], b""),
                false,
            ),
            status: 204,
        },
        Case {
            what: "gateway 429 with retry-after",
            run: ok,
            fields: vec![auth(), inv("inv-429")],
            body: small(),
            gw: Gw::Answer(
                |inv| {
                    with_length(
                        "HTTP/1.1 429 Too Many Requests",
                        inv,
                        &[("retry-after", "7"), ("content-type", "application/json")],
                        br#"{"error": "busy"}"#,
                    )
                },
                false,
            ),
            status: 429,
        },
        Case {
            what: "no invocation ID, no body: the Console makes the ID",
            run: ok,
            fields: vec![auth()],
            body: Body::Announced(Vec::new()),
            gw: Gw::Answer(
                |_| answer("HTTP/1.1 200 OK", None, &[("content-length", "2")], b"ok"),
                false,
            ),
            status: 200,
        },
        Case {
            what: "the caller's own identity and trust fields",
            run: ok,
            fields: vec![
                auth(),
                inv("inv-identity"),
                f("x-remote-user", "mallory"),
                f("x-remote-group", "system:masters"),
                f("x-remote-uid", "0"),
                f("x-remote-extra-scopes", "all"),
                f("x_remote_user", "mallory"),
                f("impersonate-user", "admin"),
                f("impersonate-group", "system:masters"),
                f("impersonate_user", "admin"),
                f("cookie", "sid=x"),
                f("forwarded", "for=10.0.0.1"),
                f("x-forwarded-for", "10.0.0.1"),
                f("x-forwarded-client-cert", "Hash=1"),
                f("proxy-authorization", "Basic YTpi"),
                f("x-real-ip", "10.0.0.1"),
            ],
            body: small(),
            gw: Gw::Answer(
                |inv| with_length("HTTP/1.1 200 OK", inv, &[], b"seen"),
                false,
            ),
            status: 200,
        },
        Case {
            what: "no credential",
            run: ok,
            fields: vec![inv("inv-anon")],
            body: small(),
            gw: Gw::Unreached,
            status: 401,
        },
        Case {
            what: "a token that does not authenticate",
            run: ok,
            fields: vec![
                ("authorization", "Bearer not-a-token".into()),
                inv("inv-bad"),
            ],
            body: small(),
            gw: Gw::Unreached,
            status: 401,
        },
        Case {
            what: "invocation ID over 128 bytes",
            run: ok,
            fields: vec![auth(), ("x-kruntime-invocation-id", "i".repeat(129))],
            body: small(),
            gw: Gw::Unreached,
            status: 400,
        },
        Case {
            what: "empty invocation ID",
            run: ok,
            fields: vec![auth(), inv("")],
            body: small(),
            gw: Gw::Unreached,
            status: 400,
        },
        Case {
            what: "invocation ID with a space",
            run: ok,
            fields: vec![auth(), inv("inv 1")],
            body: small(),
            gw: Gw::Unreached,
            status: 400,
        },
        Case {
            what: "announced body over the bound",
            run: ok,
            fields: vec![auth(), inv("inv-big-announced")],
            body: Body::Announced(vec![b'x'; over]),
            gw: Gw::Unreached,
            status: 413,
        },
        Case {
            what: "unannounced body over the bound",
            run: ok,
            fields: vec![auth(), inv("inv-big-unannounced")],
            body: Body::Unannounced(vec![b'x'; over]),
            gw: Gw::Unreached,
            status: 413,
        },
        Case {
            what: "gateway answers 413 from the head and closes, the body unread",
            run: ok,
            fields: vec![auth(), inv("inv-early")],
            body: Body::Announced(vec![b'b'; BIG]),
            gw: Gw::Early(|inv| {
                with_length(
                    "HTTP/1.1 413 Payload Too Large",
                    inv,
                    &[("connection", "close"), ("content-type", "text/plain")],
                    b"too big!",
                )
            }),
            status: 413,
        },
        Case {
            what: "gateway closes without an answer",
            run: ok,
            fields: vec![auth(), inv("inv-hangup")],
            body: small(),
            gw: Gw::Answer(|_| Vec::new(), true),
            status: 502,
        },
        Case {
            what: "gateway closes in the middle of the head",
            run: ok,
            fields: vec![auth(), inv("inv-half")],
            body: small(),
            gw: Gw::Answer(|_| b"HTTP/1.1 200 OK\r\ncontent-le".to_vec(), true),
            status: 502,
        },
        Case {
            what: "gateway answers another call",
            run: ok,
            fields: vec![auth(), inv("inv-mine")],
            body: small(),
            gw: Gw::Answer(
                |_| with_length("HTTP/1.1 200 OK", "inv-theirs", &[], b"secret"),
                false,
            ),
            status: 502,
        },
        Case {
            what: "gateway announces an answer over the response bound",
            run: ok,
            fields: vec![auth(), inv("inv-huge")],
            body: small(),
            gw: Gw::Answer(
                |inv| {
                    answer(
                        "HTTP/1.1 200 OK",
                        Some(inv),
                        &[("content-length", "2097152")],
                        b"",
                    )
                },
                true,
            ),
            status: 502,
        },
        Case {
            what: "gateway answers an unknown status 599",
            run: ok,
            fields: vec![auth(), inv("inv-599")],
            body: small(),
            gw: Gw::Answer(
                |inv| with_length("HTTP/1.1 599 Odd", inv, &[], b"odd"),
                false,
            ),
            status: 599,
        },
        Case {
            what: "gateway answers an unknown status 299",
            run: ok,
            fields: vec![auth(), inv("inv-299")],
            body: small(),
            gw: Gw::Answer(
                |inv| with_length("HTTP/1.1 299 Odd", inv, &[], b"odd"),
                false,
            ),
            status: 299,
        },
        Case {
            what: "gateway answers 100 and 103 before its answer",
            run: ok,
            fields: vec![auth(), inv("inv-interim")],
            body: small(),
            gw: Gw::Answer(
                |inv| {
                    let mut out =
                        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n"
                            .to_vec();
                    out.extend(with_length("HTTP/1.1 200 OK", inv, &[], b"final"));
                    out
                },
                false,
            ),
            status: 200,
        },
        Case {
            what: "gateway answers 101 to a call that asked for no upgrade",
            run: ok,
            fields: vec![auth(), inv("inv-101")],
            body: small(),
            gw: Gw::Answer(
                |inv| {
                    answer(
                        "HTTP/1.1 101 Switching Protocols",
                        Some(inv),
                        &[("upgrade", "websocket"), ("connection", "upgrade")],
                        b"",
                    )
                },
                true,
            ),
            status: 502,
        },
        Case {
            what: "gateway unreachable",
            run: (DOWN, UID),
            fields: vec![auth(), inv("inv-down")],
            body: small(),
            gw: Gw::Unreached,
            status: 503,
        },
        Case {
            what: "no such Run",
            run: ("fn-none", UID),
            fields: vec![auth(), inv("inv-none")],
            body: small(),
            gw: Gw::Unreached,
            status: 404,
        },
        Case {
            what: "the Run under another UID",
            run: (FUNCTION, "00000000-0000-4000-8000-000000000000"),
            fields: vec![auth(), inv("inv-uid")],
            body: small(),
            gw: Gw::Unreached,
            status: 404,
        },
        Case {
            what: "Run not Ready",
            run: (PENDING, UID),
            fields: vec![auth(), inv("inv-pending")],
            body: small(),
            gw: Gw::Unreached,
            status: 503,
        },
        Case {
            what: "a session Run",
            run: (SESSION, UID),
            fields: vec![auth(), inv("inv-session")],
            body: small(),
            gw: Gw::Unreached,
            status: 400,
        },
    ]
}

/// The two Console listeners over one Console state, and the gateway both call.
struct Consoles {
    /// With the fast path: HTTP/1.1 takes it, HTTP/2 goes to the router.
    fast: ConsoleListener,
    /// Without it (`--access-fast-path=false`).
    plain: ConsoleListener,
    /// Invokes the fast path served.
    metrics: kruntimes_core::metrics::Metrics,
    /// What the gateway does with the next request.
    plan: Arc<Mutex<Gw>>,
    /// The requests it received.
    seen: Arc<Mutex<Vec<Received>>>,
    /// The connections the gateway accepted.
    connections: Arc<AtomicUsize>,
}

async fn consoles() -> Consoles {
    let gw = Arc::new(Gateway::start().await);
    let (state, access) = states(&gw, bounds()).await;
    let metrics = state.metrics.clone();
    let fast = console_listener(state.clone(), access.clone(), true).await;
    let plain = console_listener(state, access, false).await;
    let plan = Arc::new(Mutex::new(Gw::Unreached));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (p, s, n) = (plan.clone(), seen.clone(), connections.clone());
    gw.serve_each(move |script| {
        n.fetch_add(1, Ordering::SeqCst);
        serve_gateway(script, p.clone(), s.clone())
    });
    Consoles {
        fast,
        plain,
        metrics,
        plan,
        seen,
        connections,
    }
}

/// The gateway's side of one connection: each request as the plan of the
/// moment it arrived says.
async fn serve_gateway(mut s: Script, plan: Arc<Mutex<Gw>>, seen: Arc<Mutex<Vec<Received>>>) {
    while let Some(head) = s.next_head().await {
        let plan = *plan.lock().unwrap();
        let inv = field_of(&head, "x-kruntime-invocation-id")
            .unwrap_or_default()
            .to_owned();
        let (bytes, close) = match plan {
            Gw::Early(answer) => {
                seen.lock().unwrap().push(Received {
                    head,
                    body: Vec::new(),
                });
                (answer(&inv), true)
            }
            Gw::Answer(answer, close) => {
                let Some(body) = s.next_body(&head).await else {
                    return;
                };
                seen.lock().unwrap().push(Received { head, body });
                (answer(&inv), close)
            }
            Gw::Unreached => {
                let body = s.next_body(&head).await.unwrap_or_default();
                seen.lock().unwrap().push(Received { head, body });
                (with_length("HTTP/1.1 200 OK", &inv, &[], b"reached"), false)
            }
        };
        if s.io.write_all(&bytes).await.is_err() || s.io.flush().await.is_err() {
            return;
        }
        if close {
            // close_notify and FIN; dropping the socket with a body unread
            // then resets the connection, as a real server's close does.
            let _ = tokio::time::timeout(WAIT, s.io.shutdown()).await;
            return;
        }
    }
}

/// An answer as one path gave it, normalised for comparison.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    /// Every field, names in lower case, in name order (the order of one
    /// name's values kept), except the framing fields.
    fields: Vec<(String, String)>,
    /// The framing fields (`content-length`, `transfer-encoding`):
    /// compared between the two HTTP/1.1 paths only.
    framing: Vec<(String, String)>,
    /// `connection` (HTTP/1.1 only): checked, not compared.
    connection: Vec<String>,
    /// The body, or why it did not end.
    body: Result<Vec<u8>, String>,
    trailers: Vec<(String, String)>,
    /// `error.message` of a `{"error": ...}` body.
    message: Option<String>,
}

fn sorted(h: &HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = h
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    // Stable: the order of one name's values is kept.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

impl Answer {
    /// Normalises what legitimately differs: `date` (the time of the
    /// answer) and `x-request-id` (a new one per request) are checked for
    /// shape and replaced; an invocation ID the Console made is checked
    /// to be the one the gateway got and replaced; the framing fields are
    /// set apart, as HTTP/2 has no `transfer-encoding` (RFC 9113 §8.2.2)
    /// and may or may not send a length, while both HTTP/1.1 paths must
    /// frame alike; `connection` is only checked to say nothing but
    /// `close`: whether a connection carries another call is its own
    /// business (the fast path closes after every answer that did not come
    /// from the gateway, as it may not have read the whole request; hyper
    /// keeps what it can), not the call's, and HTTP/2 has no such field.
    fn of(
        path: Path,
        status: u16,
        headers: &HeaderMap,
        body: Result<Bytes, String>,
        trailers: Option<&HeaderMap>,
        made_inv: Option<&str>,
    ) -> Self {
        let mut fields = Vec::new();
        let mut framing = Vec::new();
        let mut connection = Vec::new();
        for (k, v) in sorted(headers) {
            match k.as_str() {
                "content-length" | "transfer-encoding" => framing.push((k, v)),
                "connection" => connection.push(v),
                "date" => {
                    // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
                    assert!(v.len() == 29 && v.ends_with(" GMT"), "{path:?}: date {v:?}");
                    fields.push((k, "<date>".into()));
                }
                "x-request-id" => {
                    assert!(
                        v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit()),
                        "{path:?}: request ID {v:?}"
                    );
                    fields.push((k, "<request id>".into()));
                }
                "x-kruntime-invocation-id" if made_inv.is_some_and(|m| m == v) => {
                    fields.push((k, "<made by the Console>".into()))
                }
                _ => fields.push((k, v)),
            }
        }
        let message = body.as_ref().ok().and_then(|b| {
            let v: Value = serde_json::from_slice(b).ok()?;
            Some(v["error"]["message"].as_str()?.to_owned())
        });
        Answer {
            status,
            fields,
            framing,
            connection,
            body: body.map(|b| b.to_vec()),
            trailers: trailers.map(sorted).unwrap_or_default(),
            message,
        }
    }

    /// What no answer may carry on any path: hop-by-hop fields (the
    /// gateway's, or those it listed in `Connection`), credentials and
    /// identity fields; framing that contradicts the body.
    fn check_clean(&self, path: Path, what: &str) {
        for v in &self.connection {
            assert!(
                v == "close" && !path.h2(),
                "{what}, {path:?}: connection: {v}"
            );
        }
        for (k, v) in self.fields.iter().chain(&self.framing) {
            assert!(
                !matches!(
                    k.as_str(),
                    "keep-alive"
                        | "proxy-authenticate"
                        | "proxy-connection"
                        | "te"
                        | "trailer"
                        | "upgrade"
                        | "set-cookie"
                        | "x-hop"
                ) && !k.starts_with("x-remote-"),
                "{what}, {path:?}: {k}: {v} relayed"
            );
        }
        for (k, v) in &self.framing {
            let ok = match k.as_str() {
                "transfer-encoding" => v == "chunked",
                _ => matches!(&self.body, Ok(b) if *v == b.len().to_string()),
            };
            assert!(ok, "{what}, {path:?}: {k}: {v}");
            assert!(
                !path.h2() || k == "content-length",
                "{what}, {path:?}: {k} over HTTP/2"
            );
        }
    }
}

impl Answer {
    /// `self`'s status and body, and how `other` differs from it.
    /// `framing`: whether the framing fields are compared.
    fn differences(&self, other: &Answer, framing: bool) -> String {
        let body = |b: &Result<Vec<u8>, String>| match b {
            Ok(b) if b.len() > 160 => format!(
                "{} bytes {:?}...",
                b.len(),
                String::from_utf8_lossy(&b[..160])
            ),
            Ok(b) => format!("{:?}", String::from_utf8_lossy(b)),
            Err(e) => e.clone(),
        };
        if std::ptr::eq(self, other) {
            return format!("{} {}", self.status, body(&self.body));
        }
        let only = |a: &[(String, String)], b: &[(String, String)]| -> Vec<String> {
            a.iter()
                .filter(|f| !b.contains(f))
                .map(|(k, v)| format!("{k}: {v}"))
                .collect()
        };
        let mut out = format!("{} {}", other.status, body(&other.body));
        if other.status != self.status || other.message != self.message {
            out.push_str(&format!("; message {:?}", other.message));
        }
        for (name, a, b) in [
            ("fields", &self.fields, &other.fields),
            ("framing (HTTP/1.1)", &self.framing, &other.framing),
            ("trailers", &self.trailers, &other.trailers),
        ] {
            let (gone, new) = (only(a, b), only(b, a));
            if name.ends_with("(HTTP/1.1)") && !framing {
                continue;
            }
            if !gone.is_empty() || !new.is_empty() {
                out.push_str(&format!("; {name} without {gone:?}, with {new:?}"));
            }
        }
        out
    }
}

/// A request as the gateway received it, normalised: the request line,
/// the fields in name order (an invocation ID the Console made replaced,
/// once checked), the body.
#[derive(Debug, PartialEq)]
struct Forwarded {
    line: String,
    fields: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Forwarded {
    /// The request and the invocation ID the Console made for it, if it did.
    fn of(r: &Received) -> (Self, Option<String>) {
        let mut lines = r.head.split("\r\n");
        let line = lines.next().unwrap().to_owned();
        let mut made = None;
        let mut fields: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                let (k, mut v) = (k.to_ascii_lowercase(), v.trim().to_owned());
                // `inv-` and 32 hex digits, as the Console makes them.
                if k == "x-kruntime-invocation-id"
                    && v.strip_prefix("inv-")
                        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                {
                    made = Some(std::mem::replace(&mut v, "<made by the Console>".into()));
                }
                (k, v)
            })
            .collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        let body = r.body.clone();
        (Self { line, fields, body }, made)
    }

    /// The identity the gateway must see is the Console's, and nothing the
    /// caller sent about it or its credentials.
    fn check_identity(&self, what: &str, path: Path) {
        let values = |name: &str| -> Vec<&str> {
            self.fields
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(values("x-remote-user"), ["alice"], "{what}, {path:?}");
        assert_eq!(values("x-remote-uid"), ["u-1"], "{what}, {path:?}");
        assert_eq!(
            values("x-remote-group"),
            ["system:masters"],
            "{what}, {path:?}"
        );
        for (k, _) in &self.fields {
            let n = k.replace('_', "-");
            assert!(
                !(n.starts_with("x-remote-extra-")
                    || n.starts_with("impersonate-")
                    || n.starts_with("x-forwarded-")
                    || n.starts_with("proxy-")
                    || matches!(
                        n.as_str(),
                        "authorization" | "cookie" | "forwarded" | "x-real-ip" | "x-custom"
                    )
                    || (n.starts_with("x-remote-") && k.contains('_'))),
                "{what}, {path:?}: {k} reached the gateway: {:?}",
                self.fields
            );
        }
    }
}

type ReqBody = BoxBody<Bytes, Infallible>;

impl Consoles {
    /// Sends `case` on a new connection of `path` and reads the whole answer.
    async fn call(
        &self,
        path: Path,
        case: &Case,
    ) -> (u16, HeaderMap, Result<Bytes, String>, Option<HeaderMap>) {
        let (listener, alpn): (&ConsoleListener, &[u8]) = match path {
            Path::Fast => (&self.fast, b"http/1.1"),
            Path::DirectH2 => (&self.fast, b"h2"),
            Path::RouterH2 => (&self.plain, b"h2"),
            Path::RouterH1 => (&self.plain, b"http/1.1"),
        };
        let mut tls = Arc::unwrap_or_clone(listener.tls.clone());
        tls.alpn_protocols = vec![alpn.to_vec()];
        let tcp = TcpStream::connect(listener.addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let io = within(
            "the caller's TLS handshake",
            kruntimes_transport::tls_stream::connect(Arc::new(tls), name, tcp),
        )
        .await
        .unwrap();
        assert_eq!(
            io.common().alpn_protocol(),
            Some(alpn),
            "{path:?}: the protocol was not chosen"
        );
        let (run, uid) = case.run;
        let target = format!("/v1/namespaces/{NS}/runs/{run}/{uid}/invoke");
        let body: ReqBody = match &case.body {
            Body::Announced(b) => Full::new(Bytes::from(b.clone())).boxed(),
            Body::Unannounced(b) => {
                let chunks: Vec<Result<http_body::Frame<Bytes>, Infallible>> = b
                    .chunks(64 << 10)
                    .map(|c| Ok(http_body::Frame::data(Bytes::copy_from_slice(c))))
                    .collect();
                StreamBody::new(futures::stream::iter(chunks)).boxed()
            }
        };
        let mut req = http::Request::post(if path.h2() {
            format!("https://console.test{target}")
        } else {
            target
        });
        if !path.h2() {
            req = req.header("host", "console.test");
        }
        for (k, v) in &case.fields {
            req = req.header(*k, v.as_str());
        }
        let req = req.body(body).unwrap();
        let sent = async {
            match path {
                Path::DirectH2 | Path::RouterH2 => {
                    let (mut sender, conn) = hyper::client::conn::http2::handshake(
                        TokioExecutor::new(),
                        TokioIo::new(io),
                    )
                    .await
                    .unwrap();
                    tokio::spawn(conn);
                    sender.send_request(req).await
                }
                _ => {
                    let (mut sender, conn) =
                        hyper::client::conn::http1::handshake(TokioIo::new(io))
                            .await
                            .unwrap();
                    tokio::spawn(conn);
                    sender.send_request(req).await
                }
            }
        };
        let resp = match within("the answer's head", sent).await {
            Ok(resp) => resp,
            // No answer at all: status 0 (each client words why its own way).
            Err(_) => return (0, HeaderMap::new(), Err("no answer".to_owned()), None),
        };
        let (parts, body) = resp.into_parts();
        let (body, trailers) = match within("the answer's body", body.collect()).await {
            Ok(c) => {
                let trailers = c.trailers().cloned();
                (Ok(c.to_bytes()), trailers)
            }
            // Broken off: how each client words it is no part of the answer.
            Err(_) => (Err("broken off".to_owned()), None),
        };
        (parts.status.as_u16(), parts.headers, body, trailers)
    }
}

/// Every case through the three paths: the same answers, the same requests
/// at the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invokes_are_answered_alike_on_the_fast_path_and_the_router_over_both_versions() {
    let c = consoles().await;
    let mut failures = Vec::new();
    let mut served_fast = 0;
    let mut served_direct = 0;
    for case in cases() {
        let what = case.what;
        *c.plan.lock().unwrap() = case.gw;
        let mut answers = Vec::new();
        let mut forwarded = Vec::new();
        for path in PATHS {
            c.seen.lock().unwrap().clear();
            let (status, headers, body, trailers) = c.call(path, &case).await;
            // The fast path claims what it can frame without doubt: not a
            // chunked request body (an unannounced one over HTTP/1.1).
            let claimed = path == Path::Fast && !matches!(case.body, Body::Unannounced(_));
            served_fast += u64::from(claimed);
            // Counted once the answer is written: it may come just after.
            let counted = within("the fast path's count", async {
                loop {
                    let n = c.metrics.fast_path_requests.get();
                    if n >= served_fast {
                        return n;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            })
            .await;
            assert_eq!(
                counted, served_fast,
                "{what}, {path:?}: served by the wrong path"
            );
            // HTTP/2 on the fast path's listener: an invoke it can name is
            // served without the router.
            let (run, uid) = case.run;
            let target = format!("/v1/namespaces/{NS}/runs/{run}/{uid}/invoke");
            let mut fields = HeaderMap::new();
            for (k, v) in &case.fields {
                fields.append(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    http::HeaderValue::from_str(v).unwrap(),
                );
            }
            let direct = path == Path::DirectH2
                && super::fast::invoke_path(&target).is_some()
                && !crate::origin::is_upgrade(&fields);
            served_direct += u64::from(direct);
            let counted = within("the direct count", async {
                loop {
                    let n = c.metrics.direct_requests.get();
                    if n >= served_direct {
                        return n;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            })
            .await;
            assert_eq!(
                counted, served_direct,
                "{what}, {path:?}: served by the wrong path"
            );
            let seen: Vec<(Forwarded, Option<String>)> =
                c.seen.lock().unwrap().iter().map(Forwarded::of).collect();
            let made = seen.first().and_then(|(_, m)| m.clone());
            let a = Answer::of(
                path,
                status,
                &headers,
                body,
                trailers.as_ref(),
                made.as_deref(),
            );
            a.check_clean(path, what);
            match case.gw {
                Gw::Unreached => assert!(seen.is_empty(), "{what}, {path:?}: forwarded: {seen:?}"),
                _ => {
                    assert_eq!(seen.len(), 1, "{what}, {path:?}: {seen:?}");
                    seen[0].0.check_identity(what, path);
                    // The caller's invocation ID, or one the Console made.
                    let sent = case
                        .fields
                        .iter()
                        .find(|(k, _)| *k == "x-kruntime-invocation-id");
                    let got = seen[0]
                        .0
                        .fields
                        .iter()
                        .find(|(k, _)| k == "x-kruntime-invocation-id");
                    match sent {
                        Some((_, id)) => {
                            assert_eq!(got.map(|(_, v)| v), Some(id), "{what}, {path:?}")
                        }
                        None => assert!(made.is_some(), "{what}, {path:?}: {got:?}"),
                    }
                }
            }
            if a.status != case.status {
                failures.push(format!(
                    "{what}, {path:?}: status {} (not {}): {a:?}",
                    a.status, case.status
                ));
            }
            answers.push(a);
            forwarded.push(seen.into_iter().map(|(f, _)| f).collect::<Vec<_>>());
        }
        let [fast, direct, h2, h1] = &answers[..] else {
            unreachable!()
        };
        // Everything but the framing alike on all four; the framing alike
        // on the two HTTP/1.1 paths, and on the two HTTP/2 paths.
        fn all(a: &Answer) -> impl PartialEq + '_ {
            (a.status, &a.fields, &a.body, &a.trailers, &a.message)
        }
        if all(fast) != all(direct)
            || all(fast) != all(h2)
            || all(fast) != all(h1)
            || fast.framing != h1.framing
            || direct.framing != h2.framing
        {
            failures.push(format!(
                "{what}: the answers differ:\n  fast path:     {}\n  direct HTTP/2: {}\n  router HTTP/2: {}\n  router HTTP/1: {}",
                fast.differences(fast, true),
                h2.differences(direct, true),
                fast.differences(h2, false),
                fast.differences(h1, true)
            ));
        }
        if forwarded.iter().any(|f| *f != forwarded[0]) {
            failures.push(format!(
                "{what}: the gateway received different requests:\n  fast path:     {:?}\n  direct HTTP/2: {:?}\n  router HTTP/2: {:?}\n  router HTTP/1: {:?}",
                forwarded[0], forwarded[1], forwarded[2], forwarded[3]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(served_direct > 0, "no case was served directly over HTTP/2");
}

/// Every path keeps its gateway connection for the next call after an
/// answer whose end is certain: a length (a body, none, or one of 48 KiB,
/// relayed in several parts), chunks with trailers, a 204. Calls follow
/// one another, so one connection carries them all; a path that dropped
/// it would make the gateway accept another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_path_reuses_its_gateway_connection_after_a_framed_answer() {
    let c = consoles().await;
    type Answering = fn(&str) -> Vec<u8>;
    let answers: [(&str, Answering); 5] = [
        ("a length", |inv| {
            with_length("HTTP/1.1 200 OK", inv, &[], b"{\"ok\":true}")
        }),
        // Relayed in several parts.
        ("a length of 48 KiB", |inv| {
            with_length("HTTP/1.1 200 OK", inv, &[], &[b'x'; 48 << 10])
        }),
        ("an empty length", |inv| {
            with_length("HTTP/1.1 200 OK", inv, &[], b"")
        }),
        ("chunks and trailers", |inv| {
            let mut a = answer(
                "HTTP/1.1 200 OK",
                Some(inv),
                &[("transfer-encoding", "chunked")],
                b"",
            );
            a.extend_from_slice(b"5\r\nhello\r\n0\r\nx-trailer: 1\r\n\r\n");
            a
        }),
        ("a 204", |inv| {
            answer("HTTP/1.1 204 No Content", Some(inv), &[], b"")
        }),
    ];
    let case = |gw| Case {
        what: "reuse",
        run: (FUNCTION, UID),
        fields: vec![("authorization", format!("Bearer {TOKEN}"))],
        body: Body::Announced(b"{}".to_vec()),
        gw,
        status: 0,
    };
    for path in PATHS {
        for (what, answer) in answers {
            *c.plan.lock().unwrap() = Gw::Answer(answer, false);
            let before = c.connections.load(Ordering::SeqCst);
            for round in 0..3 {
                let (status, _, body, _) = c.call(path, &case(Gw::Answer(answer, false))).await;
                assert!(
                    (200..300).contains(&status) && body.is_ok(),
                    "{path:?}, {what}, call {round}: {status} {body:?}"
                );
            }
            let opened = c.connections.load(Ordering::SeqCst) - before;
            assert!(
                opened <= 1,
                "{path:?}, {what}: {opened} gateway connections for 3 calls in a row"
            );
        }
    }
}
