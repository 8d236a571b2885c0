//! A follow of one Run: its history (the tail, or every record after
//! `sinceCursor`), read once, then the live records, without a gap or a
//! duplicate between the two (records are told apart by their cursors).
//!
//! While runtimed has written none of the Run's records (the engine writes
//! them only when the Run ends), the follow also polls runtimed's status
//! endpoint for the Run's live output ([`super::live`]); the first written
//! record ends the polling, and written records already delivered as live
//! lines are skipped (the hand-over).

use kruntimes_core::failure::Refusal as _;
use std::sync::Arc;
use std::time::Duration;

use super::outbox;
use bytes::Bytes;
use tokio::time::Instant;

use super::cursor::Cursor;
use super::fanout::{Next, Subscription};
use super::filter::LogRecord;
use super::live::{Handover, LiveCursor, LiveLines, LivePos, StatusConn, Take};
use super::runwatch::Finished;
use kruntimes_core::guard::OnDrop;
use tokio::sync::{Notify, mpsc};

/// How long a follow goes on after its Run finished, for the last lines
/// still on their way.
pub const FINISH_DRAIN: Duration = Duration::from_secs(2);
use super::reader::{LogSource, Sent, record_line, send_records};
use kruntimes_core::metrics::Metrics;
use kruntimes_core::status::ApiError;

/// Why a follow ended, when it was not an error.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The caller went away.
    Left,
    /// The Run finished: its history is all there is.
    Finished,
    /// The Run finished while followed, in this phase.
    FinishedAs(String),
    /// The shared stream ended the follow with this final line (the Pod
    /// went, its log broke off, or the follower fell behind).
    Final(Bytes),
}

/// What a follow sends first.
pub struct History {
    /// The last records (count and bytes bounded), used when `since` is `None`
    /// and `skip` is `None`.
    pub tail: (usize, usize),
    /// Every record after this one.
    pub since: Option<Cursor>,
    /// Resuming after live output: every written record from the Run's
    /// floor, less those already delivered as live lines.
    pub skip: Option<Handover>,
}

/// How a follow goes live: it joins its Pod's shared stream.
pub struct Live<S> {
    /// Joins the Pod's shared stream (called once, when the follow starts).
    pub subscribe: S,
    /// Tells when the Run finishes.
    pub finished: Finished,
    /// How long a line may wait for a client that does not read once the
    /// follower was dropped from the stream.
    pub final_timeout: Duration,
}

/// A follow's polling of runtimed's status endpoint for live output.
pub struct Polling {
    /// The connection to runtimed's status endpoint.
    pub conn: StatusConn,
    /// The live lines sent so far (their positions).
    pub lines: LiveLines,
    /// The Run's UID (the execution's ID).
    pub uid: String,
    /// How often the status endpoint is asked.
    pub interval: Duration,
    /// Only the last records of the first answer are sent, within these
    /// bounds (a follow that began with a tail); `None` sends all.
    pub first: Option<(usize, usize)>,
    /// Where live reads are counted.
    pub metrics: Metrics,
}

/// A follower gone live: all it holds for as long as it is open. The
/// history's read state, the Run and the Pod check are gone by then (a
/// follow's task keeps its largest state for as long as it lives).
pub struct Following {
    sub: Subscription,
    finished: Finished,
    /// The newest line the history read: what is not after it was sent.
    last: Option<Cursor>,
    /// No line stamped before this Unix second belongs to the Run.
    floor: i64,
    final_timeout: Duration,
    /// The history met written records of the Run.
    pub written: bool,
    /// Written records still to skip (a resumed hand-over).
    skip: Option<Handover>,
    /// The number of the last written record the history met, when known.
    numbered_to: Option<u64>,
}

/// How a follow ended and what it met on the way.
#[derive(Debug)]
pub struct Delivered {
    /// Why the follow ended.
    pub end: End,
    /// Written records of the Run were met (history or stream).
    pub written: bool,
    /// Live lines were delivered.
    pub live: bool,
}

/// How sending the history ended.
pub enum Started {
    /// Live records follow.
    Live(Following),
    /// Nothing more to send (`true`: the history met written records).
    Ended(End, bool),
}

/// Sends the history and, unless the Run `finished`, joins the Pod's
/// shared stream for what comes next.
///
/// The follower joins the stream before it reads its history, so nothing
/// written meanwhile is missed; what the history already covered (cursors
/// up to the last line it read) is skipped by [`deliver`].
pub async fn start(
    source: &LogSource,
    history: History,
    finished: bool,
    live: Live<impl FnOnce() -> Subscription>,
    tx: &outbox::Sender,
) -> Result<Started, ApiError> {
    let mut skip = history.skip;
    if finished {
        return Ok(
            match Box::pin(send_history(source, &history, skip.as_mut(), tx)).await? {
                Some(sent) => Started::Ended(End::Finished, sent.seen > 0),
                None => Started::Ended(End::Left, false),
            },
        );
    }
    let Live {
        subscribe,
        finished,
        final_timeout,
    } = live;
    let sub = subscribe();
    // Until the history is sent, a full queue drops its oldest lines (the
    // history may cover them; `go_live` ends the follower when it did not).
    let sent = tokio::select! {
        sent = Box::pin(send_history(source, &history, skip.as_mut(), tx)) => sent?,
        () = sub.queue.dropped() => {
            return Ok(Started::Ended(match sub.queue.take_end() {
                Some(line) => End::Final(line),
                None => End::Left,
            }, false));
        }
    };
    let Some(Sent {
        last,
        seen,
        numbered_to,
    }) = sent
    else {
        return Ok(Started::Ended(End::Left, false));
    };
    // What the queue dropped while the history was read must be covered by it.
    if let Err(line) = sub.queue.go_live(last) {
        return Ok(Started::Ended(End::Final(line), seen > 0));
    }
    Ok(Started::Live(Following {
        sub,
        finished,
        last,
        floor: source.floor,
        final_timeout,
        written: seen > 0,
        skip: skip.filter(|h| !h.done()),
        numbered_to,
    }))
}

/// What a follow does next.
enum Step {
    Send(Bytes),
    Skip,
    End(End),
}

/// Sends every new record of a live follower until the follow ends,
/// polling for live output while runtimed has written none of the Run's
/// records.
pub async fn deliver(
    following: Following,
    polling: Option<Box<Polling>>,
    tx: &outbox::Sender,
) -> Delivered {
    let Following {
        sub,
        mut finished,
        last,
        floor,
        final_timeout,
        mut written,
        mut skip,
        mut numbered_to,
    } = following;
    // The polling runs in a task of its own, so a slow or unreachable
    // runtimed never holds up the Pod's stream; its batches come through
    // `batches`, and what was delivered of them decides the hand-over.
    let (batch_tx, mut batches) = mpsc::channel::<Vec<LogRecord>>(1);
    let wake = Arc::new(Notify::new());
    let mut delivered: LivePos = polling.as_ref().map(|p| p.lines.pos()).unwrap_or_default();
    let mut poller = polling.filter(|_| !written).map(|p| {
        let task = tokio::spawn(poll_loop(*p, batch_tx, wake.clone()));
        OnDrop::new(move || task.abort())
    });
    let mut live = false;
    let queue = &sub.queue;
    let mut deadline: Option<Instant> = None;
    let mut phase: Option<String> = None;
    // One timer, armed once the Run finished (not one built per record).
    let drained = tokio::time::sleep_until(Instant::now());
    tokio::pin!(drained);
    let done = |end, written, live| Delivered { end, written, live };
    loop {
        let step = tokio::select! {
            n = queue.next() => match n {
                Next::Record(cursor, line) => {
                    if last.is_some_and(|l| cursor <= l) || cursor.stamp.secs < floor {
                        Step::Skip
                    } else {
                        written = true;
                        if poller.take().is_some() {
                            // runtimed writes the Run's records now: what
                            // was delivered live is not delivered again.
                            skip = Some(Handover::new(delivered));
                        }
                        // Every written record has its number, delivered or skipped.
                        numbered_to = numbered_to.map(|n| n + 1);
                        match handed_over(line, &mut skip) {
                            Step::Send(line) => Step::Send(numbered(line, numbered_to)),
                            step => step,
                        }
                    }
                }
                Next::End(line) => Step::End(End::Final(line)),
            },
            batch = batches.recv(), if poller.is_some() => {
                let Some(records) = batch else {
                    poller = None;
                    continue;
                };
                let mut ended = None;
                for rec in records {
                    if let Err(end) = send_live(tx, &rec, final_timeout).await {
                        ended = Some(end);
                        break;
                    }
                    live = true;
                    if let Ok(c) = LiveCursor::parse(&rec.cursor) {
                        delivered = c.pos;
                    }
                }
                match ended {
                    Some(end) => Step::End(end),
                    None => Step::Skip,
                }
            }
            p = finished.wait(), if phase.is_none() => {
                phase = Some(p);
                drained.as_mut().reset(Instant::now() + FINISH_DRAIN);
                // The last output before runtimed forgets the execution.
                if poller.is_some() {
                    wake.notify_one();
                }
                continue;
            }
            () = drained.as_mut(), if phase.is_some() => {
                return done(End::FinishedAs(phase.unwrap_or_default()), written, live);
            }
            () = tx.closed() => return done(End::Left, written, live),
        };
        let mut line = match step {
            Step::Send(line) => line,
            Step::Skip => continue,
            Step::End(end) => return done(end, written, live),
        };
        // Once dropped from the stream, what is left gets `final_timeout`
        // to reach a client that does not read.
        if deadline.is_none() {
            // The usual case: there is room, no waiting.
            line = match tx.try_send(line) {
                Ok(()) => continue,
                Err(outbox::TrySendError::Closed) => return done(End::Left, written, live),
                Err(outbox::TrySendError::Full(line)) => line,
            };
            tokio::select! {
                r = tx.send(line.clone()) => {
                    if r.is_err() {
                        return done(End::Left, written, live);
                    }
                    continue;
                }
                () = queue.dropped() => {
                    deadline = Some(Instant::now() + final_timeout);
                }
            }
        }
        let at = deadline.unwrap_or_else(Instant::now);
        if !matches!(tokio::time::timeout_at(at, tx.send(line)).await, Ok(Ok(()))) {
            return done(End::Left, written, live);
        }
    }
}

/// A written record's line after live output: left out when it was
/// delivered as a live line.
fn handed_over(line: Bytes, skip: &mut Option<Handover>) -> Step {
    let Some(h) = skip.as_mut() else {
        return Step::Send(line);
    };
    let Ok(rec) = serde_json::from_slice::<LogRecord>(&line) else {
        return Step::Send(line);
    };
    if h.delivered(&rec.stream) {
        return Step::Skip;
    }
    if h.done() {
        *skip = None;
    }
    Step::Send(line)
}

/// A record's NDJSON line (as the shared stream serialized it, without a
/// number) with its number `n` put first.
fn numbered(line: Bytes, n: Option<u64>) -> Bytes {
    match (n, line.first()) {
        (Some(n), Some(b'{')) => {
            let mut out = Vec::with_capacity(line.len() + 24);
            out.extend_from_slice(format!("{{\"line\":{n},").as_bytes());
            out.extend_from_slice(&line[1..]);
            Bytes::from(out)
        }
        _ => line,
    }
}

/// Live records a batch holds at most (a fast printer's lines between two
/// polls go out in several).
const LIVE_BATCH: usize = 256;
/// Longest wait between polls of a status endpoint that fails.
const MAX_POLL_BACKOFF: Duration = Duration::from_secs(10);

/// Polls runtimed's status endpoint until the follow stops it (dropping
/// `out`'s receiver or aborting the task), sending the new live records in
/// batches. Failures back off, doubling up to [`MAX_POLL_BACKOFF`].
async fn poll_loop(mut p: Polling, out: mpsc::Sender<Vec<LogRecord>>, wake: Arc<Notify>) {
    let mut failures = 0u32;
    loop {
        let result = p.conn.status(&p.uid).await;
        super::live::count(&p.metrics, &result);
        match result {
            Ok(Some(resp)) => {
                failures = 0;
                if let Some((max, bytes)) = p.first.take() {
                    // The first answer of a follow that began with a tail:
                    // its last records only, and without a time (when they
                    // were printed is not known).
                    let (records, _) = p.lines.advance(&resp, None, Take::Last(max, bytes));
                    if !records.is_empty() && out.send(records).await.is_err() {
                        return;
                    }
                }
                let now = jiff::Timestamp::now().to_string();
                loop {
                    let (records, _) =
                        p.lines
                            .advance(&resp, Some(&now), Take::First(LIVE_BATCH, usize::MAX));
                    if records.is_empty() {
                        break;
                    }
                    if out.send(records).await.is_err() {
                        return;
                    }
                }
            }
            Ok(None) => failures = 0,
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::debug!(%error, run_uid = %p.uid, "reading live output");
            }
        }
        let wait = if failures == 0 {
            p.interval
        } else {
            p.interval
                .saturating_mul(1 << failures.min(5))
                .min(MAX_POLL_BACKOFF)
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = wake.notified() => {}
            () = out.closed() => return,
        }
    }
}

/// Sends one live record, waiting at most `timeout` for a client that
/// does not read.
async fn send_live(tx: &outbox::Sender, rec: &LogRecord, timeout: Duration) -> Result<(), End> {
    match tokio::time::timeout(timeout, tx.send(record_line(rec))).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(End::Left),
        Err(_) => Err(End::Final(
            ApiError::fell_behind(format!(
                "the client read nothing for {timeout:?}; reconnect with sinceCursor to continue after the last record"
            ))
            .status_line(),
        )),
    }
}

/// Sends the history; the cursor of the newest line it read (`None` inside
/// when it read none) and the Run's records it met, or `None` when the
/// caller left.
pub async fn send_history(
    source: &LogSource,
    history: &History,
    skip: Option<&mut Handover>,
    tx: &outbox::Sender,
) -> Result<Option<Sent>, ApiError> {
    if history.since.is_some() || skip.is_some() {
        let sent = source.send_after(history.since, skip, tx).await?;
        if tx.is_closed() {
            return Ok(None);
        }
        return Ok(Some(sent));
    }
    let (records, bytes) = history.tail;
    let tail = source.tail(records, bytes, None).await?;
    if !send_records(tx, &tail.records).await {
        return Ok(None);
    }
    Ok(Some(Sent {
        last: tail.last,
        seen: tail.seen,
        numbered_to: tail.numbered_to,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_goes_first_into_a_record_line() {
        let line =
            Bytes::from_static(b"{\"stream\":\"stdout\",\"message\":\"hi\",\"pod\":\"p\"}\n");
        assert_eq!(
            numbered(line.clone(), Some(7)),
            Bytes::from_static(
                b"{\"line\":7,\"stream\":\"stdout\",\"message\":\"hi\",\"pod\":\"p\"}\n"
            )
        );
        assert_eq!(numbered(line.clone(), None), line);
        let rec: LogRecord = serde_json::from_slice(&numbered(line, Some(3))).unwrap();
        assert_eq!(rec.line, Some(3));
    }
}
