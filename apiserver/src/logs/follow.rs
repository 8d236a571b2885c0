//! A follow of one Run: its history (the tail, or every record after
//! `sinceCursor`), read once, then the live records, without a gap or a
//! duplicate between the two (records are told apart by their cursors).

use std::time::Duration;

use super::outbox;
use bytes::Bytes;
use tokio::time::Instant;

use super::cursor::Cursor;
use super::fanout::{Next, Subscription};
use super::runwatch::Finished;

/// How long a follow goes on after its Run finished, for the last lines
/// still on their way.
pub const FINISH_DRAIN: Duration = Duration::from_secs(2);
use super::reader::{LogSource, send_records};
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
    /// The last records (count and bytes bounded), used when `since` is `None`.
    pub tail: (usize, usize),
    /// Every record after this one.
    pub since: Option<Cursor>,
}

/// How a follow goes live: it joins its Pod's shared stream.
pub struct Live<S> {
    pub subscribe: S,
    /// Tells when the Run finishes.
    pub finished: Finished,
    /// How long a line may wait for a client that does not read once the
    /// follower was dropped from the stream.
    pub final_timeout: Duration,
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
}

/// How sending the history ended.
pub enum Started {
    /// Live records follow.
    Live(Following),
    /// Nothing more to send.
    Ended(End),
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
    if finished {
        return Ok(Started::Ended(
            match Box::pin(send_history(source, &history, tx)).await? {
                Some(_) => End::Finished,
                None => End::Left,
            },
        ));
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
        sent = Box::pin(send_history(source, &history, tx)) => sent?,
        () = sub.queue.dropped() => {
            return Ok(Started::Ended(match sub.queue.take_end() {
                Some(line) => End::Final(line),
                None => End::Left,
            }));
        }
    };
    let Some(last) = sent else {
        return Ok(Started::Ended(End::Left));
    };
    // What the queue dropped while the history was read must be covered by it.
    if let Err(line) = sub.queue.go_live(last) {
        return Ok(Started::Ended(End::Final(line)));
    }
    Ok(Started::Live(Following {
        sub,
        finished,
        last,
        floor: source.floor,
        final_timeout,
    }))
}

/// Sends every new record of a live follower until the follow ends.
pub async fn deliver(following: Following, tx: &outbox::Sender) -> End {
    let Following {
        sub,
        mut finished,
        last,
        floor,
        final_timeout,
    } = following;
    let queue = &sub.queue;
    let mut deadline: Option<Instant> = None;
    let mut phase: Option<String> = None;
    // One timer, armed once the Run finished (not one built per record).
    let drained = tokio::time::sleep_until(Instant::now());
    tokio::pin!(drained);
    loop {
        let next = tokio::select! {
            n = queue.next() => n,
            p = finished.wait(), if phase.is_none() => {
                phase = Some(p);
                drained.as_mut().reset(Instant::now() + FINISH_DRAIN);
                continue;
            }
            () = drained.as_mut(), if phase.is_some() => {
                return End::FinishedAs(phase.unwrap_or_default());
            }
            () = tx.closed() => return End::Left,
        };
        let mut line = match next {
            Next::Record(cursor, line) => {
                if last.is_some_and(|l| cursor <= l) || cursor.stamp.secs < floor {
                    continue;
                }
                line
            }
            Next::End(line) => return End::Final(line),
        };
        // Once dropped from the stream, what is left gets `final_timeout`
        // to reach a client that does not read.
        if deadline.is_none() {
            // The usual case: there is room, no waiting.
            line = match tx.try_send(line) {
                Ok(()) => continue,
                Err(outbox::TrySendError::Closed) => return End::Left,
                Err(outbox::TrySendError::Full(line)) => line,
            };
            tokio::select! {
                r = tx.send(line.clone()) => {
                    if r.is_err() {
                        return End::Left;
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
            return End::Left;
        }
    }
}

/// Sends the history; the cursor of the newest line it read (`Some(None)`
/// when it read none), or `None` when the caller left.
pub async fn send_history(
    source: &LogSource,
    history: &History,
    tx: &outbox::Sender,
) -> Result<Option<Option<Cursor>>, ApiError> {
    if let Some(since) = history.since {
        let last = source.send_after(since, tx).await?;
        if tx.is_closed() {
            return Ok(None);
        }
        return Ok(Some(last));
    }
    let (records, bytes) = history.tail;
    let tail = source.tail(records, bytes, None).await?;
    if !send_records(tx, &tail.records).await {
        return Ok(None);
    }
    Ok(Some(tail.last))
}
