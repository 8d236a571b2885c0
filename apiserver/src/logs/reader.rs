//! Reading a Run's records from its Pod's `runtimed` log through `pods/log`.
//!
//! The kubelet's `tailLines` counts lines of the whole container log, not of
//! one Run, so a tail reads growing windows from the end of the log (bounded
//! below by the Run's start time with `sinceTime`) until it holds enough of
//! the Run's records or has covered everything since the Run started. No
//! window is ever held in memory: lines stream through the filter.

use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use tokio::sync::mpsc;

use super::filter::{LogRecord, RunFilter};
use super::lines::{Line, LineReader};
use super::tail::{Cut, TailWindow};
use super::{MAX_LINE_BYTES, RUNTIMED_CONTAINER};
use kruntimes_core::metrics::Metrics;
use kruntimes_core::status::{ApiError, from_kube};

/// First tail window, in Pod log lines, before growing.
pub const MIN_WINDOW: i64 = 1024;
/// Growth factor of the window.
pub const WINDOW_GROWTH: i64 = 8;
/// Largest window searched (lines).
pub const MAX_WINDOW: i64 = 1 << 24;
/// How far before the Run's start the log is read, for clock skew.
pub const START_SLACK_SECS: i64 = 5;
/// How far past the Run's completion the log is read (late flushes, clock skew).
pub const COMPLETION_SLACK_SECS: i64 = 30;

/// Where a Run's records are.
pub struct LogSource {
    pub pods: Api<Pod>,
    pub pod: String,
    pub filter: RunFilter,
    /// Only log lines at or after this time can belong to the Run.
    pub since: Option<jiff::Timestamp>,
    /// When the Run finished: no later line can belong to it.
    pub until: Option<jiff::Timestamp>,
    pub metrics: Metrics,
}

/// The outcome of a tail search.
pub struct Tail {
    pub records: Vec<LogRecord>,
    pub cut: Option<Cut>,
    /// The window that held the result, in Pod log lines.
    pub window: i64,
    /// Pod log lines read in the last pass.
    pub lines: i64,
    /// Bytes of Pod log read across all passes.
    pub bytes_read: u64,
}

impl LogSource {
    fn params(&self, window: Option<i64>, follow: bool) -> LogParams {
        LogParams {
            container: Some(RUNTIMED_CONTAINER.to_owned()),
            follow,
            tail_lines: window,
            since_time: self
                .since
                .map(|t| t - jiff::SignedDuration::from_secs(START_SLACK_SECS)),
            timestamps: true,
            ..LogParams::default()
        }
    }

    async fn open(
        &self,
        window: Option<i64>,
        follow: bool,
    ) -> Result<LineReader<impl futures::io::AsyncBufRead + Unpin + use<>>, ApiError> {
        // The handler checked the name; this is the last line before a URL.
        if !kruntimes_core::names::is_dns1123_subdomain(&self.pod) {
            return Err(ApiError::conflict(format!(
                "pod name {:?} is not a DNS-1123 subdomain; no log was read",
                self.pod
            )));
        }
        let stream = self
            .pods
            .log_stream(&self.pod, &self.params(window, follow))
            .await
            .map_err(|e| from_kube(&e, &format!("reading the log of pod {:?}", self.pod)))?;
        Ok(LineReader::new(Box::pin(stream), MAX_LINE_BYTES))
    }

    fn record_of(&self, line: &Line) -> Option<LogRecord> {
        self.filter.line_record(line)
    }

    /// Reads the log (the last `window` lines, or all since the Run's start)
    /// into a tail window, stopping at the first line stamped past `until`.
    async fn read_window(
        &self,
        window: Option<i64>,
        until: Option<&Bound>,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<(TailWindow, i64, u64), ApiError> {
        let mut reader = self.open(window, false).await?;
        let mut tw = TailWindow::new(max_records, max_bytes);
        let mut line = Line::default();
        let mut lines = 0i64;
        while reader.next_line(&mut line).await.map_err(|e| {
            ApiError::unavailable(format!("the log of pod {:?} broke off: {e}", self.pod))
        })? {
            lines += 1;
            if let Some(until) = until
                && line
                    .split_timestamp()
                    .0
                    .is_some_and(|ts| until.is_before(ts))
            {
                // Dropping the reader closes the stream: nothing past the bound is read.
                break;
            }
            if let Some(rec) = self.record_of(&line) {
                tw.push(rec);
            }
        }
        self.metrics.log_bytes_read.inc_by(reader.bytes_read());
        Ok((tw, lines, reader.bytes_read()))
    }

    /// The last `max_records` records within `max_bytes`.
    pub async fn tail(&self, max_records: usize, max_bytes: usize) -> Result<Tail, ApiError> {
        if let (Some(_), Some(until)) = (self.since, self.until) {
            // A finished Run's records lie between its start and completion:
            // read forward from the start, stop past the completion.
            let until = Bound::new(until + jiff::SignedDuration::from_secs(COMPLETION_SLACK_SECS));
            let (tw, lines, bytes_read) = self
                .read_window(None, Some(&until), max_records, max_bytes)
                .await?;
            let (records, cut) = tw.into_parts();
            return Ok(Tail {
                records,
                cut,
                window: lines.max(1),
                lines,
                bytes_read,
            });
        }
        let mut window = MIN_WINDOW.max(max_records as i64 * 4);
        let mut bytes_read = 0;
        loop {
            let (mut tw, lines, read) = self
                .read_window(Some(window), None, max_records, max_bytes)
                .await?;
            bytes_read += read;
            let covered = lines < window;
            if covered || tw.is_full() || window >= MAX_WINDOW {
                if !covered && !tw.is_full() {
                    tw.mark_cut(Cut::SearchWindow);
                }
                let (records, cut) = tw.into_parts();
                return Ok(Tail {
                    records,
                    cut,
                    window,
                    lines,
                    bytes_read,
                });
            }
            window = (window * WINDOW_GROWTH).min(MAX_WINDOW);
        }
    }

    /// Sends the last `max_records` records, then every new record, as NDJSON
    /// lines to `tx` until the Pod log ends or the receiver goes away.
    pub async fn follow(
        &self,
        max_records: usize,
        max_bytes: usize,
        tx: &mpsc::Sender<Bytes>,
    ) -> Result<(), ApiError> {
        let tail = self.tail(max_records, max_bytes).await?;
        if self.until.is_some() {
            // A finished Run writes no more records: its tail is all there is.
            return send_records(tx, &tail.records).await;
        }
        // The follow stream starts with the same window: its first `lines`
        // lines (or, when the window covered the log since the Run's start,
        // everything then) are history; the tail of them is sent once caught up.
        let history = tail.lines;
        let mut reader = self.open(Some(tail.window), true).await?;
        let mut tw = Some(TailWindow::new(max_records, max_bytes));
        let mut line = Line::default();
        let mut seen = 0i64;
        if history == 0
            && let Some(w) = tw.take()
        {
            send_all(tx, w).await?;
        }
        loop {
            let more = tokio::select! {
                r = reader.next_line(&mut line) => r,
                () = tx.closed() => return Ok(()),
            };
            match more {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    tracing::debug!(%error, pod = %self.pod, "follow stream broke off");
                    break;
                }
            }
            self.metrics.log_bytes_read.inc_by(line.len + 1);
            let rec = self.record_of(&line);
            match tw.as_mut() {
                Some(w) => {
                    if let Some(rec) = rec {
                        w.push(rec);
                    }
                    seen += 1;
                    if seen >= history
                        && let Some(w) = tw.take()
                    {
                        send_all(tx, w).await?;
                    }
                }
                None => {
                    if let Some(rec) = rec {
                        send(tx, &rec).await?;
                    }
                }
            }
        }
        if let Some(w) = tw.take() {
            send_all(tx, w).await?;
        }
        Ok(())
    }
}

async fn send_all(tx: &mpsc::Sender<Bytes>, w: TailWindow) -> Result<(), ApiError> {
    send_records(tx, &w.into_parts().0).await
}

async fn send_records(tx: &mpsc::Sender<Bytes>, records: &[LogRecord]) -> Result<(), ApiError> {
    for rec in records {
        send(tx, rec).await?;
    }
    Ok(())
}

async fn send(tx: &mpsc::Sender<Bytes>, rec: &LogRecord) -> Result<(), ApiError> {
    let mut line = serde_json::to_vec(rec).map_err(|e| ApiError::internal(e.to_string()))?;
    line.push(b'\n');
    // A closed receiver means the caller went away: not an error to report.
    let _ = tx.send(Bytes::from(line)).await;
    Ok(())
}

/// A time bound compared with kubelet timestamps on every line: its
/// whole-second UTC form is made once, so UTC stamps compare without parsing
/// (enough: the bound carries seconds of slack).
struct Bound {
    at: jiff::Timestamp,
    whole_second: String,
}

impl Bound {
    fn new(at: jiff::Timestamp) -> Self {
        Self {
            at,
            whole_second: at.strftime("%Y-%m-%dT%H:%M:%S").to_string(),
        }
    }

    /// Is the kubelet timestamp `ts` later than the bound?
    fn is_before(&self, ts: &str) -> bool {
        if ts.len() >= 20 && ts.ends_with('Z') {
            return ts.as_bytes()[..19] > *self.whole_second.as_bytes();
        }
        ts.parse::<jiff::Timestamp>().is_ok_and(|x| x > self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::Bound;

    fn after(ts: &str, t: jiff::Timestamp) -> bool {
        Bound::new(t).is_before(ts)
    }

    #[test]
    fn compares_kubelet_timestamps() {
        let t: jiff::Timestamp = "2026-11-29T10:00:05Z".parse().unwrap();
        assert!(!after("2026-11-29T10:00:05.999999999Z", t));
        assert!(after("2026-11-29T10:00:06Z", t));
        assert!(after("2026-11-29T10:00:06.1Z", t));
        assert!(!after("2026-11-29T09:59:59.5Z", t));
        assert!(!after("2026-11-29T12:00:05+02:00", t));
        assert!(after("2026-11-29T12:00:06+02:00", t));
    }
}
