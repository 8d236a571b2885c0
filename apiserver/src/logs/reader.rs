//! Reading a Run's records from its Pod's `runtimed` log through `pods/log`.
//!
//! Every read is bounded below by the Run's floor (the later of its
//! `startTime` and `creationTimestamp`, less the clock-skew margin) and, for
//! a finished Run, above by its `completionTime` (plus
//! [`COMPLETION_SLACK_SECS`]). A finished Run's tail is one forward read of
//! that stretch. Any other tail reads segments of the log backwards in
//! time: each segment is read forward with `sinceTime` and stops where the
//! newer one began, so no line is read twice and the whole search never
//! reads more than the log between the floor and the end (plus what the
//! stream had in flight when a segment stopped). No segment is
//! held in memory: lines stream through the filter.

use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::failure::{Reason, Refusal as _};
use kube::Api;
use kube::api::LogParams;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::outbox;

use super::cursor::{Anchor, Cursor, Missing, Sequencer, Side, Stamp};
use super::filter::{LogRecord, RunFilter};
use super::lines::{Line, LineReader};
use super::live::Handover;
use super::numbers::{self, LineNumbers};
use super::tail::{Cut, TailWindow};
use super::{MAX_LINE_BYTES, RUNTIMED_CONTAINER};
use kruntimes_core::metrics::Metrics;
use kruntimes_core::status::{ApiError, from_kube};

/// Seconds of log the first segment of a tail covers.
pub const FIRST_SPAN_SECS: i64 = 4;
/// Growth of the span covered when a segment held no record of the Run.
pub const SPAN_GROWTH: i64 = 8;
/// Largest growth of the covered span from one segment to the next.
pub const MAX_SPAN_GROWTH: i64 = 16;
/// Default margin for clock skew between kube-apiserver (which stamps
/// `creationTimestamp`) and the node's kubelet (which stamps log lines).
pub const DEFAULT_CLOCK_SKEW_SECS: i64 = 5;
/// How far past the Run's completion the log is read (late flushes, clock skew).
pub const COMPLETION_SLACK_SECS: i64 = 30;

/// Where a Run's records are.
pub struct LogSource {
    /// The Pods of the Run's namespace, read with the caller's identity or the Console's.
    pub pods: Api<Pod>,
    /// The Runtime Pod whose log is read.
    pub pod: String,
    /// Keeps the Run's records.
    pub filter: RunFilter,
    /// No line stamped before this Unix second can belong to the Run.
    pub floor: i64,
    /// A finished Run: no line stamped at or after this Unix second belongs to it.
    pub until: Option<i64>,
    /// Where reads are counted.
    pub metrics: Metrics,
    /// Reads of Pod logs open at once in the process (each holds a
    /// connection to kube-apiserver and its buffers while it reads).
    pub reads: Arc<Semaphore>,
    /// How long a streamed history line waits for a client that does not read.
    pub send_timeout: Duration,
    /// The Unix second the current `runtimed` container started, when it
    /// restarted after the Run's floor: the Run's earlier records are in the
    /// previous container's log, read too.
    pub restarted_at: Option<i64>,
    /// A finished Run's completion second: records stamped from then on
    /// were written when the Run ended (the engine's runtimed writes them
    /// all then), so their time is not when they were printed.
    pub completed_at: Option<i64>,
    /// Numbers of records given out lately.
    pub numbers: Arc<LineNumbers>,
    /// Most bytes of log read to count the records before an answer
    /// (`--log-numbering-max-bytes`).
    pub numbering_max_bytes: u64,
}

/// Which of the `runtimed` container's logs a read covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// The running container.
    Current,
    /// The container that ran before the last restart (`previous=true`).
    Previous,
}

/// The floor of a Run's reads: `max(startTime, creationTimestamp)` less
/// `skew_secs`, as a whole Unix second.
pub fn floor_of(
    start: Option<jiff::Timestamp>,
    created: Option<jiff::Timestamp>,
    skew_secs: i64,
) -> i64 {
    let at = match (start, created) {
        (Some(a), Some(b)) => a.max(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => jiff::Timestamp::UNIX_EPOCH,
    };
    (at.as_second() - skew_secs).max(0)
}

/// The exclusive upper second of a finished Run's reads.
pub fn until_of(completion: Option<jiff::Timestamp>) -> Option<i64> {
    completion.map(|t| t.as_second() + COMPLETION_SLACK_SECS + 1)
}

/// The outcome of a bounded read.
#[derive(Debug, Default)]
pub struct Tail {
    /// The records read, oldest first.
    pub records: Vec<LogRecord>,
    /// Where a bound cut the read, if one did.
    pub cut: Option<Cut>,
    /// The cursor of the newest Pod log line read (any Run's).
    pub last: Option<Cursor>,
    /// Bytes of Pod log read across all segments.
    pub bytes_read: u64,
    /// Records of the Run met, including those left out by a bound or
    /// skipped as already delivered.
    pub seen: u64,
    /// Records came from the previous container's log.
    pub from_previous: bool,
    /// The previous container's log was wanted but is gone.
    pub previous_gone: bool,
    /// The earliest of the Run's records met.
    pub earliest: Option<Cursor>,
    /// How many of the Run's records (of the streams asked for) there are
    /// up to the end of the read, when known: the number of the last
    /// record read.
    pub numbered_to: Option<u64>,
}

/// One forward read of the log from a whole second, ending before `stop`.
pub struct Scan<R> {
    reader: LineReader<R>,
    line: Line,
    seq: Sequencer,
    stop: Option<Cursor>,
    last: Option<Cursor>,
    pod: String,
    metrics: Metrics,
    counted: u64,
    /// This read's place among `--log-max-concurrent-reads`.
    _permit: OwnedSemaphorePermit,
}

impl<R: futures::io::AsyncBufRead + Unpin> Scan<R> {
    /// The next line's cursor and, when it is one of the Run's, its record;
    /// `None` at the end of the read.
    pub async fn next(
        &mut self,
        filter: &RunFilter,
    ) -> Result<Option<(Cursor, Option<LogRecord>)>, ApiError> {
        loop {
            let more = self.reader.next_line(&mut self.line).await.map_err(|e| {
                ApiError::unavailable(format!("the log of pod {:?} broke off: {e}", self.pod))
            });
            self.count();
            if !more? {
                return Ok(None);
            }
            let Some(cursor) = self.seq.next(self.line.split_timestamp().0) else {
                // Without a timestamp a line has no address: it is no record.
                continue;
            };
            if self.stop.is_some_and(|stop| cursor >= stop) {
                // Dropping the reader closes the stream: nothing past the bound is read.
                return Ok(None);
            }
            self.last = Some(cursor);
            let rec = filter.line_record(&self.line).map(|mut r| {
                r.cursor = cursor.to_string();
                r
            });
            return Ok(Some((cursor, rec)));
        }
    }

    fn count(&mut self) {
        let read = self.reader.bytes_read();
        self.metrics.log_read_bytes.inc_by(read - self.counted);
        self.counted = read;
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.reader.bytes_read()
    }

    /// The newest line read.
    pub fn last(&self) -> Option<Cursor> {
        self.last
    }

    /// Whether the line just read is one of the Run's (whatever its stream).
    pub fn names_run(&self, filter: &RunFilter) -> bool {
        filter.is_candidate_line(&self.line)
    }
}

impl LogSource {
    fn params(&self, since: i64, follow: bool, container: Container) -> LogParams {
        LogParams {
            limit_bytes: None,
            container: Some(RUNTIMED_CONTAINER.to_owned()),
            follow,
            previous: container == Container::Previous,
            // A whole second: kube-apiserver passes whole seconds on, and a
            // read that starts at one sees every line of each timestamp.
            since_time: jiff::Timestamp::from_second(since).ok(),
            timestamps: true,
            ..LogParams::default()
        }
    }

    /// Opens a read of the log from the whole second `since` (never below the
    /// floor), stopping before `stop` (and before the end of a finished Run).
    pub async fn scan(
        &self,
        since: i64,
        stop: Option<Cursor>,
        follow: bool,
    ) -> Result<Scan<impl futures::io::AsyncBufRead + Unpin + use<>>, ApiError> {
        self.scan_in(Container::Current, since, stop, follow).await
    }

    /// The containers whose logs hold records from the Unix second `since` on,
    /// oldest first.
    pub(super) fn containers(&self, since: i64) -> &'static [Container] {
        match self.restarted_at {
            // A second shared with the restart may hold lines of both.
            Some(at) if since.max(self.floor) <= at => &[Container::Previous, Container::Current],
            _ => &[Container::Current],
        }
    }

    /// [`Self::scan`] of one of the `runtimed` container's logs.
    pub async fn scan_in(
        &self,
        container: Container,
        since: i64,
        stop: Option<Cursor>,
        follow: bool,
    ) -> Result<Scan<impl futures::io::AsyncBufRead + Unpin + use<>>, ApiError> {
        self.scan_bounded(container, since, stop, follow, None)
            .await
    }

    /// [`Self::scan_in`] that reads at most `limit_bytes` of the log.
    async fn scan_bounded(
        &self,
        container: Container,
        since: i64,
        stop: Option<Cursor>,
        follow: bool,
        limit_bytes: Option<u64>,
    ) -> Result<Scan<impl futures::io::AsyncBufRead + Unpin + use<>>, ApiError> {
        // The handler checked the name; this is the last line before a URL.
        if !kruntimes_core::names::is_dns1123_subdomain(&self.pod) {
            return Err(ApiError::conflict(format!(
                "pod name {:?} is not a DNS-1123 subdomain; no log was read",
                self.pod
            )));
        }
        let since = since.max(self.floor);
        let until = self.until.map(|s| Cursor {
            stamp: Stamp::whole_second(s),
            seq: 0,
        });
        let stop = match (stop, until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let permit = self
            .reads
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::shutting_down())?;
        let mut params = self.params(since, follow, container);
        params.limit_bytes = limit_bytes.and_then(|b| i64::try_from(b).ok());
        let opened = self.pods.log_stream(&self.pod, &params);
        let stream = if kruntimes_core::trace::enabled() {
            use tracing::Instrument;
            let span = tracing::info_span!(
                target: kruntimes_core::trace::TARGET,
                "pod-log",
                otel.name = "Pod log read",
                k8s.pod.name = %self.pod,
                k8s.container.previous = params.previous,
                follow = params.follow,
            );
            opened.instrument(span).await
        } else {
            opened.await
        }
        .map_err(|e| from_kube(&e, &format!("reading the log of pod {:?}", self.pod)))?;
        Ok(Scan {
            reader: LineReader::new(Box::pin(stream), MAX_LINE_BYTES),
            line: Line::default(),
            seq: Sequencer::default(),
            stop,
            last: None,
            pod: self.pod.clone(),
            metrics: self.metrics.clone(),
            counted: 0,
            _permit: permit,
        })
    }

    /// Whether the Run's records were written when it had ended: its
    /// earliest record met is stamped at or after its completion second
    /// (the engine's runtimed writes them all then). A runtimed that writes
    /// records as they happen has earlier ones, unless the whole Run took
    /// less than a second.
    pub(super) fn written_at_end(&self, earliest: Option<Cursor>) -> bool {
        matches!((self.completed_at, earliest), (Some(c), Some(e)) if e.stamp.secs >= c)
    }

    /// Opens a read of one container's log, or `None` when it is the
    /// previous container's and that log is gone.
    pub(super) async fn open(
        &self,
        container: Container,
        since: i64,
        stop: Option<Cursor>,
    ) -> Result<Option<Scan<impl futures::io::AsyncBufRead + Unpin + use<>>>, ApiError> {
        match self.scan_in(container, since, stop, false).await {
            Ok(scan) => Ok(Some(scan)),
            // The kubelet keeps one previous container's log; a second
            // restart or a log removed leaves none (400 or 404).
            Err(e)
                if container == Container::Previous
                    && (e.is(Reason::BadRequest) || e.is(Reason::NotFound)) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The answer to a cursor that names no line of the Run where it says.
    pub fn gone(&self, param: &str, Missing(at): Missing) -> ApiError {
        ApiError::gone(format!(
            "{param} {at} is no longer a record of this Run in the log of pod {:?}: the kubelet rotated it away, the Pod's log was replaced, or it was never this Run's; records next to it may be lost. Read the log again without {param}",
            self.pod
        ))
    }

    /// How many of the Run's records (of the streams asked for) lie before
    /// `stop`, from the floor: remembered when the record just before was
    /// given out lately, else counted by one forward read of each container
    /// bounded by `numbering_max_bytes` (`None` past it).
    async fn count_before(&self, stop: Cursor) -> Result<Option<u64>, ApiError> {
        let mut count = Some(0);
        for &container in self.containers(self.floor) {
            let n = self.count_in(container, Some(stop)).await?;
            count = count.zip(n).map(|(a, b)| a + b);
        }
        Ok(count)
    }

    /// How many of the Run's records (of the streams asked for) one
    /// container's log holds from the floor (before `stop` when given), in
    /// one forward read bounded by `numbering_max_bytes` (`None` past it).
    async fn count_in(
        &self,
        container: Container,
        stop: Option<Cursor>,
    ) -> Result<Option<u64>, ApiError> {
        if stop.is_some_and(|s| s <= Cursor::floor_of(self.floor)) {
            return Ok(Some(0));
        }
        let limit = self.numbering_max_bytes;
        let scan = self
            .scan_bounded(container, self.floor, stop, false, Some(limit))
            .await;
        let mut scan = match scan {
            Ok(scan) => scan,
            // The previous container's log is gone: it holds nothing to count.
            Err(e)
                if container == Container::Previous
                    && (e.is(Reason::BadRequest) || e.is(Reason::NotFound)) =>
            {
                return Ok(Some(0));
            }
            Err(e) => return Err(e),
        };
        let mut count = 0;
        while let Some((_, rec)) = scan.next(&self.filter).await? {
            count += u64::from(rec.is_some());
        }
        Ok((scan.bytes_read() < limit).then_some(count))
    }

    /// The number of the record at `at` (which must be one of the Run's
    /// records of the streams asked for).
    async fn number_of(&self, at: Cursor) -> Result<Option<u64>, ApiError> {
        if let Some(n) = self.numbers.get(&self.pod, &self.filter, at) {
            return Ok(Some(n));
        }
        self.count_before(at.successor()).await
    }

    /// The last `max_records` records within `max_bytes` (before `before`
    /// when given), oldest first, numbered. `cut` is set when older records
    /// exist. A `before` that names no record of the Run is 410 Gone.
    pub async fn tail(
        &self,
        max_records: usize,
        max_bytes: usize,
        before: Option<Cursor>,
    ) -> Result<Tail, ApiError> {
        let reaches_back = self.restarted_at.is_some_and(|at| self.floor < at);
        let current = if self.until.is_some() {
            self.tail_forward(Container::Current, max_records, max_bytes, before)
                .await?
        } else {
            self.tail_current(max_records, max_bytes, before).await?
        };
        let mut tail = match (current, before) {
            (Some(tail), _) => tail,
            // Only a `before` can be missing: is it in the previous container's log?
            (None, Some(at)) if reaches_back => self
                .tail_forward(Container::Previous, max_records, max_bytes, before)
                .await?
                .ok_or_else(|| self.gone("beforeCursor", Missing(at)))?,
            (None, Some(at)) => return Err(self.gone("beforeCursor", Missing(at))),
            (None, None) => Tail::default(),
        };
        if tail.cut.is_none() && reaches_back && !tail.from_previous {
            // The rest of the window is in the previous container's log: one
            // forward read of it from the floor.
            let room = max_records - tail.records.len();
            let kept_bytes: usize = tail.records.iter().map(LogRecord::weight).sum();
            let mut window = TailWindow::new(room, max_bytes - kept_bytes);
            if !tail.records.is_empty() {
                window = window.whole_records_only();
            }
            match self.open(Container::Previous, self.floor, before).await? {
                None => tail.previous_gone = true,
                Some(mut scan) => {
                    while let Some((cursor, rec)) = scan.next(&self.filter).await? {
                        if let Some(rec) = rec {
                            tail.earliest = tail.earliest.min(Some(cursor)).or(Some(cursor));
                            window.push(rec);
                        }
                    }
                    tail.bytes_read += scan.bytes_read();
                    tail.seen += window.seen();
                    tail.from_previous = window.seen() > 0;
                    let (mut older, cut) = window.into_parts();
                    older.append(&mut tail.records);
                    tail.records = older;
                    tail.cut = cut;
                }
            }
        }
        numbers::number_ending_at(&mut tail.records, tail.numbered_to);
        self.numbers
            .remember(&self.pod, &self.filter, &tail.records);
        Ok(self.marked(tail))
    }

    /// A tail with its records marked when the Run's were written at its end.
    fn marked(&self, mut tail: Tail) -> Tail {
        if self.written_at_end(tail.earliest) {
            for r in &mut tail.records {
                r.written_at_end = true;
            }
        }
        tail
    }

    /// The last records of one container's log before `before` in one
    /// forward read from the floor: a finished Run's records all lie
    /// between its floor and its end, so that stretch and no more is read.
    /// `None` when `before` names no line of the Run in this log.
    async fn tail_forward(
        &self,
        container: Container,
        max_records: usize,
        max_bytes: usize,
        before: Option<Cursor>,
    ) -> Result<Option<Tail>, ApiError> {
        let mut window = TailWindow::new(max_records, max_bytes);
        let Some(mut scan) = self
            .open(container, self.floor, before.map(Cursor::successor))
            .await?
        else {
            return Ok(None);
        };
        let mut earliest = None;
        let mut met = before.is_none();
        while let Some((cursor, rec)) = scan.next(&self.filter).await? {
            if Some(cursor) == before {
                met = scan.names_run(&self.filter);
                continue;
            }
            if let Some(rec) = rec {
                earliest = earliest.or(Some(cursor));
                window.push(rec);
            }
        }
        if !met {
            return Ok(None);
        }
        let seen = window.seen();
        let (last, bytes_read) = (scan.last(), scan.bytes_read());
        // A count takes a read place of its own: this one is given back first.
        drop(scan);
        // The previous container's records come before the current one's.
        let before_this = match (container, self.restarted_at) {
            (Container::Current, Some(at)) if self.floor < at => {
                self.count_in(Container::Previous, None).await?
            }
            _ => Some(0),
        };
        let (records, cut) = window.into_parts();
        Ok(Some(Tail {
            records,
            cut,
            last,
            bytes_read,
            seen,
            from_previous: container == Container::Previous,
            previous_gone: false,
            earliest,
            numbered_to: before_this.map(|b| b + seen),
        }))
    }

    /// [`Self::tail`] of a running Run in the current container's log,
    /// read in segments backwards in time; `None` when `before` names no
    /// line of the Run in this log.
    async fn tail_current(
        &self,
        max_records: usize,
        max_bytes: usize,
        before: Option<Cursor>,
    ) -> Result<Option<Tail>, ApiError> {
        let anchor = match before {
            Some(c) => c.stamp.secs + 1,
            None => jiff::Timestamp::now().as_second() + 1,
        };
        // The newest segment ends at `before` (or at the end of the log);
        // each older one ends where the newer one began.
        let mut stop = before.map(Cursor::successor);
        let mut span = FIRST_SPAN_SECS;
        let mut kept: Vec<LogRecord> = Vec::new();
        let mut kept_bytes = 0usize;
        let mut last = None;
        let mut bytes_read = 0;
        let mut seen = 0;
        let mut earliest: Option<Cursor> = None;
        // Records counted from `counted_from` to the end, in the segments read whole.
        let mut counted = 0;
        let mut counted_from = anchor;
        let mut met = before.is_none();
        loop {
            let lo = (anchor - span).max(self.floor);
            let room = max_records - kept.len();
            let mut window = TailWindow::new(room, max_bytes - kept_bytes);
            if !kept.is_empty() {
                window = window.whole_records_only();
            }
            let mut scan = self.scan(lo, stop, false).await?;
            let mut whole = true;
            while let Some((cursor, rec)) = scan.next(&self.filter).await? {
                if Some(cursor) == before {
                    met = scan.names_run(&self.filter);
                    continue;
                }
                if let Some(rec) = rec {
                    earliest = earliest.min(Some(cursor)).or(Some(cursor));
                    window.push(rec);
                    if room == 0 || window.cut() == Some(Cut::LimitBytes) && window.is_empty() {
                        // Full already: one older record is all it takes to know.
                        whole = false;
                        break;
                    }
                }
            }
            if !met {
                return Ok(None);
            }
            bytes_read += scan.bytes_read();
            seen += window.seen();
            if whole {
                counted += window.seen();
                counted_from = lo;
            }
            if last.is_none() {
                last = scan.last();
            }
            drop(scan);
            kept_bytes += window.bytes();
            let (mut older, cut) = window.into_parts();
            older.append(&mut kept);
            kept = older;
            if cut.is_some() || lo <= self.floor {
                let numbered_to =
                    match before.and_then(|c| self.numbers.get(&self.pod, &self.filter, c)) {
                        // The record at `before` was given out with its number.
                        Some(n) => n.checked_sub(1),
                        None => self.count_outside(counted_from).await?.map(|n| n + counted),
                    };
                return Ok(Some(Tail {
                    records: kept,
                    cut,
                    last,
                    bytes_read,
                    seen,
                    from_previous: false,
                    previous_gone: false,
                    earliest,
                    numbered_to,
                }));
            }
            span = next_span(anchor - lo, kept.len(), max_records, anchor - self.floor);
            stop = Some(Cursor {
                stamp: Stamp::whole_second(lo),
                seq: 0,
            });
        }
    }

    /// The Run's records a backward tail did not count: those of the
    /// current container's log before the Unix second `from`, and all of
    /// the previous container's when the window reaches back before a
    /// restart.
    async fn count_outside(&self, from: i64) -> Result<Option<u64>, ApiError> {
        let current = self
            .count_in(Container::Current, Some(Cursor::floor_of(from)))
            .await?;
        let previous = if self.restarted_at.is_some_and(|at| self.floor < at) {
            self.count_in(Container::Previous, None).await?
        } else {
            Some(0)
        };
        Ok(current.zip(previous).map(|(a, b)| a + b))
    }

    /// The first `max_records` records after `after` (from the Run's floor
    /// when `None`) within `max_bytes`, oldest first, numbered, leaving out
    /// those `skip` says were already delivered as live output. `cut` is set
    /// when more records follow. An `after` that names no record of the
    /// Run is 410 Gone.
    pub async fn after(
        &self,
        after: Option<Cursor>,
        max_records: usize,
        max_bytes: usize,
        mut skip: Option<&mut Handover>,
    ) -> Result<Tail, ApiError> {
        let mut records: Vec<LogRecord> = Vec::new();
        let mut bytes = 0usize;
        let mut cut = None;
        let mut out = Tail::default();
        let mut anchor = after.map(Anchor::new);
        // Records after a cursor are no older than it.
        let mut earliest = after;
        // The number of the last record met (skipped or not).
        let mut number = match after {
            None => Some(0),
            Some(c) => self.number_of(c).await?,
        };
        let since = after.map_or(self.floor, |a| a.stamp.secs);
        'containers: for &container in self.containers(since) {
            let Some(mut scan) = self.open(container, since, None).await? else {
                out.previous_gone = true;
                continue;
            };
            while let Some((cursor, rec)) = scan.next(&self.filter).await? {
                if let Some(a) = anchor.as_mut() {
                    let runs = scan.names_run(&self.filter);
                    match a.place(cursor, runs) {
                        Ok(Side::After) => {}
                        Ok(Side::NotAfter) => continue,
                        Err(missing) => return Err(self.gone("sinceCursor", missing)),
                    }
                }
                let Some(mut rec) = rec else { continue };
                out.seen += 1;
                number = number.map(|n| n + 1);
                earliest = earliest.or(Some(cursor));
                if skip
                    .as_deref_mut()
                    .is_some_and(|h| h.delivered(&rec.stream))
                {
                    continue;
                }
                rec.written_at_end = self.written_at_end(earliest);
                rec.line = number;
                if container == Container::Previous {
                    out.from_previous = true;
                }
                if records.len() == max_records {
                    cut = Some(Cut::TailLines);
                    out.bytes_read += scan.bytes_read();
                    break 'containers;
                }
                if bytes + rec.weight() > max_bytes {
                    if records.is_empty() {
                        // A single record larger than the budget keeps its head.
                        let mut end = max_bytes;
                        while !rec.message.is_char_boundary(end) {
                            end -= 1;
                        }
                        rec.message.truncate(end);
                        rec.truncated = true;
                        records.push(rec);
                    }
                    cut = Some(Cut::LimitBytes);
                    out.bytes_read += scan.bytes_read();
                    break 'containers;
                }
                bytes += rec.weight();
                records.push(rec);
            }
            out.bytes_read += scan.bytes_read();
            if container == Container::Current {
                out.last = scan.last();
            }
        }
        if cut.is_none()
            && let Some(a) = anchor
        {
            a.finish().map_err(|m| self.gone("sinceCursor", m))?;
        }
        self.numbers.remember(&self.pod, &self.filter, &records);
        out.numbered_to = records.last().and_then(|r| r.line).or(number);
        out.records = records;
        out.cut = cut;
        out.earliest = earliest;
        Ok(out)
    }

    /// Sends every record after `after` (from the Run's floor when `None`)
    /// as NDJSON lines, numbered, reading the log up to its end once,
    /// leaving out what `skip` says was delivered; returns the newest line
    /// read, the Run's records met and the number of the last of them.
    pub async fn send_after(
        &self,
        after: Option<Cursor>,
        mut skip: Option<&mut Handover>,
        tx: &outbox::Sender,
    ) -> Result<Sent, ApiError> {
        let since = after.map_or(self.floor, |a| a.stamp.secs);
        let mut anchor = after.map(Anchor::new);
        let mut number = match after {
            None => Some(0),
            Some(c) => self.number_of(c).await?,
        };
        let mut sent = Sent::default();
        let mut earliest = after;
        let mut given: Option<LogRecord> = None;
        for &container in self.containers(since) {
            let Some(mut scan) = self.open(container, since, None).await? else {
                continue;
            };
            while let Some((cursor, rec)) = scan.next(&self.filter).await? {
                if let Some(a) = anchor.as_mut() {
                    let runs = scan.names_run(&self.filter);
                    match a.place(cursor, runs) {
                        Ok(Side::After) => {}
                        Ok(Side::NotAfter) => continue,
                        Err(missing) => return Err(self.gone("sinceCursor", missing)),
                    }
                }
                let Some(mut rec) = rec else { continue };
                sent.seen += 1;
                number = number.map(|n| n + 1);
                earliest = earliest.or(Some(cursor));
                if skip
                    .as_deref_mut()
                    .is_some_and(|h| h.delivered(&rec.stream))
                {
                    continue;
                }
                rec.written_at_end = self.written_at_end(earliest);
                rec.line = number;
                // The read holds one of few places: a client that stops reading
                // gives it up after `send_timeout` (timed only when it must wait).
                let line = match tx.try_send(record_line(&rec)) {
                    Ok(()) => {
                        given = Some(rec);
                        continue;
                    }
                    Err(outbox::TrySendError::Closed) => return Ok(sent),
                    Err(outbox::TrySendError::Full(line)) => line,
                };
                match tokio::time::timeout(self.send_timeout, tx.send(line)).await {
                    Ok(Ok(())) => given = Some(rec),
                    Ok(Err(_)) => return Ok(sent),
                    Err(_) => {
                        return Err(ApiError::fell_behind(format!(
                            "the client read nothing for {:?} while the history was sent; reconnect with sinceCursor to continue after the last record",
                            self.send_timeout
                        )));
                    }
                }
            }
            if container == Container::Current {
                sent.last = scan.last();
            }
        }
        if let Some(a) = anchor {
            a.finish().map_err(|m| self.gone("sinceCursor", m))?;
        }
        // The last record given out: a reconnect after it is numbered at once.
        self.numbers
            .remember(&self.pod, &self.filter, given.as_slice());
        sent.last = sent.last.max(after);
        sent.numbered_to = number;
        Ok(sent)
    }
}

/// What [`LogSource::send_after`] sent.
#[derive(Debug, Default)]
pub struct Sent {
    /// The newest line read.
    pub last: Option<Cursor>,
    /// The Run's records met.
    pub seen: u64,
    /// The number of the last of them, when known.
    pub numbered_to: Option<u64>,
}

/// Sends records as NDJSON lines; `false` when the receiver went away.
/// The span (seconds back from the anchor) the next, older segment of a tail
/// ends at, after segments covering `covered` seconds held `kept` records
/// of the `max_records` wanted, with `to_floor` seconds from the anchor to
/// the Run's floor. It grows by the rate the records came in at (at least
/// 2×, at most [`MAX_SPAN_GROWTH`]×; [`SPAN_GROWTH`]× when none came). When
/// that rate says the tail needs more than half the distance to the floor,
/// it goes to the floor at once: one read of the rest costs less than more
/// round trips through kube-apiserver to the kubelet (each of which reads
/// the file from its start to `sinceTime`), and never reads more than the
/// Run's window.
pub fn next_span(covered: i64, kept: usize, max_records: usize, to_floor: i64) -> i64 {
    // What the rate so far says the whole tail needs, and the step taken towards it.
    let (needed, growth) = if kept == 0 {
        (covered.saturating_mul(SPAN_GROWTH), SPAN_GROWTH)
    } else {
        let want = (max_records as f64 * 1.25 / kept as f64).ceil() as i64;
        (covered.saturating_mul(want), want.clamp(2, MAX_SPAN_GROWTH))
    };
    let span = covered.saturating_mul(growth);
    if needed.saturating_mul(2) >= to_floor || span >= to_floor {
        to_floor
    } else {
        span
    }
}

/// Sends `records` as NDJSON lines; false once the client is gone.
pub async fn send_records(tx: &outbox::Sender, records: &[LogRecord]) -> bool {
    for rec in records {
        if !send(tx, rec).await {
            return false;
        }
    }
    true
}

/// One record as an NDJSON line.
pub fn record_line(rec: &LogRecord) -> Bytes {
    let mut line = serde_json::to_vec(rec).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// Sends one record; `false` when the receiver went away (the caller left).
pub async fn send(tx: &outbox::Sender, rec: &LogRecord) -> bool {
    tx.send(record_line(rec)).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_tail_goes_to_the_floor_once_the_next_span_would_pass_half_way() {
        // 2 records in 4 s of a 720 s window: the rate says 1,252 s, so the rest at once.
        assert_eq!(next_span(4, 2, 500, 720), 720);
        // Dense: 14 records in 4 s grow by 16 (45 wanted), far from the floor.
        assert_eq!(next_span(4, 14, 500, 7200), 64);
        // Nothing yet: grow by 8, unless that is past half-way.
        assert_eq!(next_span(4, 0, 500, 7200), 32);
        assert_eq!(next_span(4, 0, 500, 60), 60);
        // Almost enough: at least double.
        assert_eq!(next_span(100, 499, 500, 100_000), 200);
    }

    #[test]
    fn the_floor_is_the_later_of_start_and_creation_less_the_skew() {
        let t = |s: &str| s.parse::<jiff::Timestamp>().ok();
        let created = t("2026-12-01T10:00:00Z");
        let started = t("2026-12-01T10:05:00Z");
        let base = created.unwrap().as_second();
        assert_eq!(floor_of(started, created, 5), base + 300 - 5);
        assert_eq!(floor_of(None, created, 5), base - 5);
        assert_eq!(floor_of(t("2026-12-01T09:00:00Z"), created, 0), base);
        assert_eq!(
            until_of(started),
            Some(base + 300 + COMPLETION_SLACK_SECS + 1)
        );
    }
}
