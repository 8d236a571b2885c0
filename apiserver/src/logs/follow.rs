//! A follow of one Run: its history (the tail, or every record after
//! `sinceCursor`), read once, then the live records, without a gap or a
//! duplicate between the two (records are told apart by their cursors).

use bytes::Bytes;
use tokio::sync::mpsc;

use super::cursor::Cursor;
use super::reader::{LogSource, send, send_records};
use kruntimes_core::status::ApiError;

/// Why a follow ended, when it was not an error.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// The caller went away.
    Left,
    /// The Run finished: its history is all there is.
    Finished,
    /// The Pod log stream ended (the Pod went, or its container stopped).
    StreamEnded,
}

/// What a follow sends first.
pub struct History {
    /// The last records (count and bytes bounded), or `None` for every
    /// record after `since`.
    pub tail: (usize, usize),
    pub since: Option<Cursor>,
}

/// Sends the history, then (unless the Run `finished`) every new record.
pub async fn follow(
    source: &LogSource,
    history: History,
    finished: bool,
    tx: &mpsc::Sender<Bytes>,
) -> Result<End, ApiError> {
    let Some(last) = send_history(source, &history, tx).await? else {
        return Ok(End::Left);
    };
    if finished {
        return Ok(End::Finished);
    }
    // Live: the stream starts at the second of the last line read (every
    // line of that second is seen, so cursors match) and skips up to it.
    let since = last.map_or(source.floor, |c| c.stamp.secs);
    let mut scan = source.scan(since, None, true).await?;
    loop {
        let next = tokio::select! {
            n = scan.next(&source.filter) => n,
            () = tx.closed() => return Ok(End::Left),
        };
        match next {
            Ok(Some((cursor, Some(rec)))) if Some(cursor) > last => {
                if !send(tx, &rec).await {
                    return Ok(End::Left);
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => return Ok(End::StreamEnded),
            Err(error) => return Err(error),
        }
    }
}

/// Sends the history; the cursor of the newest line it read (`Some(None)`
/// when it read none), or `None` when the caller left.
pub async fn send_history(
    source: &LogSource,
    history: &History,
    tx: &mpsc::Sender<Bytes>,
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
