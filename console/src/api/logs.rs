//! Run logs through kube-apiserver's aggregated path, as the caller: the
//! Console never reads a Pod log for a browser itself.

use kruntimes_core::failure::{Failure, Reason, Refusal as _};
use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use kruntimes_apiserver::logs::cursor::Cursor;
use kruntimes_apiserver::logs::search::{Search, SearchParams};
use kruntimes_core::query;
use kruntimes_core::status::ApiError;

use super::{ApiPath, check_name, check_namespace, user_client};
use crate::api::types::AccessRequest;
use crate::error::ConsoleError;
use crate::state::{ConsoleState, RequestCredentials};

/// `tail`, `follow`, `sinceCursor`, `beforeCursor`, `fromStart` and the
/// search parameters of the logs endpoint.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LogsQuery {
    /// Records from the end (`tail`, passed on as `tailLines`), 1..500, default
    /// 100.
    pub tail: u32,
    /// Stream new records as NDJSON (`follow`).
    pub follow: bool,
    /// Passed on as it came (checked to be a cursor first).
    pub since_cursor: Option<String>,
    /// Passed on as it came (checked to be a cursor first); never with
    /// `follow`.
    pub before_cursor: Option<String>,
    /// The Run's first records instead of its last (plain only).
    pub from_start: bool,
    /// `search`, `regex`, `ignoreCase`, `context`: parsed as the Run-log
    /// API parses them, and passed on.
    pub search: Option<Search>,
}

fn cursor(name: &str, v: String) -> Result<String, ConsoleError> {
    match Cursor::parse(&v) {
        Ok(_) => Ok(v),
        Err(e) => Err(ConsoleError::bad_request(format!(
            "{name} must be a record's cursor: {e}; got {v:?}"
        ))),
    }
}

/// Parses the logs endpoint's query: a 400 naming the parameter for an unknown
/// one, a value out of range or a combination the Run-log API refuses.
pub fn parse(raw: Option<&str>) -> Result<LogsQuery, ConsoleError> {
    let mut q = LogsQuery {
        tail: 100,
        ..LogsQuery::default()
    };
    let mut search = SearchParams::default();
    query::parse(raw, |k, v| {
        if search
            .accept(&k, &v)
            .map_err(|e| ConsoleError::bad_request(e.to_string()))?
        {
            return Ok(());
        }
        match k.as_str() {
            "tail" => {
                q.tail = query::bounded(&v, 500).map(|n| n as u32).ok_or_else(|| {
                    ConsoleError::bad_request(format!(
                        "tail must be an integer from 1 to 500, got {v:?}"
                    ))
                })?;
            }
            // A bare `follow=` is `false`.
            "follow" => {
                q.follow = if v.is_empty() {
                    false
                } else {
                    query::boolean(&v).ok_or_else(|| {
                        ConsoleError::bad_request(format!(
                            "follow must be true or false, got {v:?}"
                        ))
                    })?
                }
            }
            "sinceCursor" => q.since_cursor = Some(cursor("sinceCursor", v)?),
            "beforeCursor" => q.before_cursor = Some(cursor("beforeCursor", v)?),
            "fromStart" => {
                q.from_start = query::boolean(&v).ok_or_else(|| {
                    ConsoleError::bad_request(format!("fromStart must be true or false, got {v:?}"))
                })?;
            }
            other => {
                return Err(ConsoleError::bad_request(format!(
                    "unknown parameter {other:?}; logs accepts tail, follow, sinceCursor, beforeCursor, fromStart, search, regex, ignoreCase and context"
                )));
            }
        }
        Ok(())
    })?;
    if q.since_cursor.is_some() && q.before_cursor.is_some() {
        return Err(ConsoleError::bad_request(
            "sinceCursor and beforeCursor cannot be combined",
        ));
    }
    if q.follow && q.before_cursor.is_some() {
        return Err(ConsoleError::bad_request(
            "beforeCursor cannot be combined with follow=true",
        ));
    }
    q.search = search
        .finish()
        .map_err(|e| ConsoleError::bad_request(e.to_string()))?;
    if q.from_start
        && (q.follow || q.since_cursor.is_some() || q.before_cursor.is_some() || q.search.is_some())
    {
        // The same words as the Run-log API's.
        return Err(ConsoleError::bad_request(
            "fromStart=true reads the first records of a plain answer: it cannot be combined with follow=true, sinceCursor, beforeCursor or search",
        ));
    }
    if q.search.is_some() {
        // The same words as the Run-log API's.
        if q.before_cursor.is_some() {
            return Err(ConsoleError::bad_request(
                "search cannot be combined with beforeCursor: a search reads forward; page with sinceCursor",
            ));
        }
        if q.follow {
            return Err(ConsoleError::bad_request(
                "search cannot be combined with follow=true: a search reads forward; page with sinceCursor",
            ));
        }
    }
    Ok(q)
}

/// The log answer of the aggregated API (a `RunLog`, or NDJSON of
/// `LogRecord` when following), relayed as it is.
pub async fn logs(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ConsoleError> {
    check_namespace(&ns)?;
    check_name("run", &name)?;
    let q = parse(raw.as_deref())?;
    let client = user_client(&state, &caller)?;
    // Each open follow holds an upstream stream: capped per caller and in total.
    let slot = match (&caller.0, q.follow) {
        (Some(c), true) => Some(
            state
                .follows
                .acquire(&c.caller.user)
                .map_err(|e| crate::runtime_access::cap_reached(&e))?,
        ),
        _ => None,
    };
    let mut path = format!(
        "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{name}/log?tailLines={}",
        q.tail
    );
    if q.follow {
        path.push_str("&follow=true");
    }
    // Cursors are [0-9.-] only (checked above): safe in a query as they are.
    if let Some(c) = &q.since_cursor {
        path.push_str("&sinceCursor=");
        path.push_str(c);
    }
    if let Some(c) = &q.before_cursor {
        path.push_str("&beforeCursor=");
        path.push_str(c);
    }
    if q.from_start {
        path.push_str("&fromStart=true");
    }
    if let Some(s) = &q.search {
        path.push_str(&s.to_query());
    }
    let req = http::Request::get(path)
        .body(kube::client::Body::empty())
        .map_err(|e| ConsoleError::internal(e.to_string()))?;
    let resp = client.send(req).await.map_err(|e| {
        tracing::warn!(error = %e, "forwarding a log request failed");
        ConsoleError::unavailable("the Kubernetes API is unreachable")
    })?;
    let status = resp.status();
    if !status.is_success() {
        let body = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(status_error(status, &body, &ns, &name));
    }
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/json"));
    let mut out = if q.follow {
        let guard = state.metrics.follow_opened();
        let identity = caller.0.as_ref().map(|c| c.caller.clone());
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(16);
        let recheck = state.recheck.clone();
        let attrs = kruntimes_apiserver::logs::handler::log_attributes(&ns, &name);
        let mut upstream = resp.into_body();
        // Relays the upstream follow, re-checking the caller's own access
        // (kube-apiserver authenticated them once, when the follow began).
        let lifecycle = state.lifecycle.clone();
        tokio::spawn(async move {
            let _held = (guard, slot, lifecycle.track());
            let stopping = lifecycle.stopping();
            tokio::pin!(stopping);
            // A final line must start a line of its own.
            let mut at_line_start = true;
            let revoked = async {
                match &identity {
                    Some(c) => recheck.revoked(c, &attrs).await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(revoked);
            loop {
                tokio::select! {
                    frame = upstream.frame() => match frame {
                        Some(Ok(f)) => {
                            if let Ok(data) = f.into_data() {
                                if let Some(last) = data.last() {
                                    at_line_start = *last == b'\n';
                                }
                                if tx.send(Ok(data)).await.is_err() {
                                    return;
                                }
                            }
                        }
                        Some(Err(e)) => {
                            // The upstream broke off: say so, so the client reconnects
                            // with sinceCursor instead of taking the end as final.
                            tracing::debug!(error = %e, "a relayed log follow broke off");
                            let status = ApiError::unavailable(
                                "the log stream broke off; reconnect with sinceCursor to continue after the last record",
                            );
                            let _ = tx.send(Ok(final_line(&status, at_line_start))).await;
                            return;
                        }
                        None => return,
                    },
                    why = &mut revoked => {
                        tracing::info!(reason = %why, "ending a log follow whose access ended");
                        let status = why.to_api_error();
                        let _ = tx.send(Ok(final_line(&status, at_line_start))).await;
                        return;
                    }
                    // The browser reconnects to another replica.
                    () = &mut stopping => {
                        let _ = tx.send(Ok(final_line(&ApiError::shutting_down(), at_line_start))).await;
                        return;
                    }
                    () = tx.closed() => return,
                }
            }
        });
        let body = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Response::new(Body::from_stream(body))
    } else {
        Response::new(Body::new(resp.into_body()))
    };
    out.headers_mut().insert(header::CONTENT_TYPE, content_type);
    out.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(out)
}

/// The final `Status` line of a relayed follow, on a line of its own.
fn final_line(status: &ApiError, at_line_start: bool) -> bytes::Bytes {
    let line = status.status_line();
    if at_line_start {
        line
    } else {
        [&b"\n"[..], &line].concat().into()
    }
}

/// A Kubernetes `Status` from the log API, kept faithful.
fn status_error(code: StatusCode, body: &[u8], ns: &str, name: &str) -> ConsoleError {
    let status: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let message = status
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or("the log request failed")
        .to_owned();
    let reason = status.get("reason").and_then(|m| m.as_str()).unwrap_or("");
    let mut e = ConsoleError::from(Failure::relayed(code.as_u16(), reason, message));
    if e.is(Reason::Forbidden) {
        let mut a = AccessRequest::new("get", "logs.kruntimes.io", "runs", ns, Some(name));
        a.subresource = Some("log".into());
        e = e.with_access(a);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_start_is_passed_on_for_plain_reads() {
        let q = parse(Some("fromStart=true&tail=500")).unwrap();
        assert!(q.from_start);
        assert_eq!(q.tail, 500);
        assert!(!parse(Some("fromStart=false")).unwrap().from_start);
    }

    #[test]
    fn parses_tail_and_follow() {
        assert_eq!(
            parse(None).unwrap(),
            LogsQuery {
                tail: 100,
                ..LogsQuery::default()
            }
        );
        assert_eq!(
            parse(Some("tail=5&follow=true")).unwrap(),
            LogsQuery {
                tail: 5,
                follow: true,
                ..LogsQuery::default()
            }
        );
        assert_eq!(
            parse(Some("sinceCursor=1764601040.123456789-3&follow=true"))
                .unwrap()
                .since_cursor
                .as_deref(),
            Some("1764601040.123456789-3")
        );
        assert_eq!(
            parse(Some("beforeCursor=1764601040.123456789-0"))
                .unwrap()
                .before_cursor
                .as_deref(),
            Some("1764601040.123456789-0")
        );
        assert_eq!(
            parse(Some("t%61il=7")).unwrap().tail,
            7,
            "names are decoded"
        );
        for bad in [
            "tail=0",
            "tail=501",
            "tail=x",
            "tail=+5",
            "follow=maybe",
            "x=1",
            "tail=1&tail=2",
            "tail=%zz",
            "sinceCursor=x",
            "beforeCursor=1764601040.123456789-0&follow=true",
            "sinceCursor=1764601040.123456789-0&beforeCursor=1764601040.123456789-1",
            "sinceCursor=1764601040.123456789-0%26tail%3D1",
            "fromStart=yes",
            "fromStart=true&follow=true",
            "fromStart=true&sinceCursor=1764601040.123456789-0",
            "fromStart=true&search=x",
        ] {
            assert!(parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_search_as_the_log_api_does() {
        let q = parse(Some("search=a%26b&ignoreCase=true&context=4&tail=7")).unwrap();
        let s = q.search.expect("a search");
        assert_eq!(
            (s.text.as_str(), s.ignore_case, s.context),
            ("a&b", true, 4)
        );
        assert_eq!(q.tail, 7);
        assert_eq!(
            s.to_query(),
            "&search=a%26b&ignoreCase=true&context=4",
            "passed on encoded"
        );
        for (bad, want) in [
            ("search=", "1 to 256 bytes"),
            ("search=x&regex=maybe", "regex must be true or false"),
            (
                "search=x&context=11",
                "context must be an integer from 0 to 10",
            ),
            ("context=1", "context needs search"),
            ("search=%28&regex=true", "not a valid regular expression"),
            (
                "search=x&follow=true",
                "cannot be combined with follow=true",
            ),
            (
                "search=x&beforeCursor=1764601040.123456789-0",
                "cannot be combined with beforeCursor",
            ),
        ] {
            let e = parse(Some(bad)).unwrap_err();
            assert!(format!("{e:?}").contains(want), "{bad}: {e:?}");
        }
    }
}
