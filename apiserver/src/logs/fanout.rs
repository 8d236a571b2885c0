//! One upstream `pods/log` follow per Pod, shared by every follower of a
//! Run on that Pod.
//!
//! A hub reads its Pod's log once, gives each line its cursor, and hands
//! each line of a followed Run (one parse per line, not per follower) to
//! that Run's followers as a ready NDJSON line. A follower's queue is
//! bounded in records and bytes: a follower that does not keep up is
//! dropped from the hub with a final `FellBehind` line, so it never slows
//! the hub or the others, nor grows without bound. The upstream stream
//! closes when its last follower leaves.

use kruntimes_core::failure::{Reason, Refusal as _};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use tokio::sync::Notify;

use super::cursor::{Cursor, Sequencer};
use super::filter::{RunFilter, StreamFilter};
use super::lines::{Line, LineReader};
use super::reader::record_line;
use super::{MAX_LINE_BYTES, RUNTIMED_CONTAINER};
use kruntimes_core::guard::OnDrop;
use kruntimes_core::metrics::Metrics;
use kruntimes_core::status::{ApiError, from_kube};
use prometheus_client::metrics::gauge::Gauge;

/// Which Pod a hub reads: namespace, name and UID (a replaced Pod of the
/// same name gets a hub of its own).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodKey {
    /// The Run's namespace.
    pub namespace: String,
    /// The Run's name.
    pub name: String,
    /// The Run's UID.
    pub uid: String,
}

/// Bounds of each follower's queue.
#[derive(Clone, Copy, Debug)]
pub struct QueueLimits {
    /// Records a follower's queue holds at most.
    pub records: usize,
    /// Bytes a follower's queue holds at most.
    pub bytes: usize,
}

/// Every hub of the process.
pub struct Fanout {
    hubs: Mutex<HashMap<PodKey, Arc<Hub>>>,
    metrics: Metrics,
    limits: QueueLimits,
    /// Seconds before now a new hub starts reading (the clock-skew margin):
    /// a line the node stamped a little in the past is not missed.
    skew_secs: i64,
}

struct Hub {
    key: PodKey,
    members: Mutex<Members>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

#[derive(Default)]
struct Members {
    next_id: u64,
    /// Followers by Run UID, with one filter per Run.
    runs: HashMap<String, RunGroup>,
    /// Set once the hub ended: nobody joins it any more.
    ended: bool,
}

struct RunGroup {
    filter: RunFilter,
    followers: Vec<Member>,
}

struct Member {
    id: u64,
    streams: StreamFilter,
    queue: Arc<Queue>,
    /// `log_followers`, decremented when the member leaves the hub.
    counted: Gauge,
}

impl Drop for Member {
    fn drop(&mut self) {
        self.counted.dec();
    }
}

/// A follower's waiting lines.
pub struct Queue {
    state: Mutex<QueueState>,
    ready: Notify,
    /// Signals `ended` (set once the follower left its hub).
    gone: Notify,
    ended: AtomicBool,
    limits: QueueLimits,
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<(Cursor, Bytes)>,
    bytes: usize,
    /// The final line, once the follower was dropped from its hub.
    end: Option<Bytes>,
    /// Live: the follower's history was sent. Before, a full queue drops
    /// its oldest lines instead of ending the follower: the history may
    /// cover them.
    live: bool,
    /// The newest line dropped before going live.
    dropped: Option<Cursor>,
    /// The newest line the history read, once live. The hub's read starts
    /// further back and may still be on lines up to it: they were sent, so
    /// they are not queued (nor counted against the bounds).
    covered: Option<Cursor>,
}

/// What a follower gets next.
pub enum Next {
    /// A record of the Run, with the cursor of its line.
    Record(Cursor, Bytes),
    /// The final `Status` line: the hub ended or the follower fell behind.
    End(Bytes),
}

impl Queue {
    fn new(limits: QueueLimits) -> Self {
        Self {
            state: Mutex::new(QueueState::default()),
            ready: Notify::new(),
            gone: Notify::new(),
            ended: AtomicBool::new(false),
            limits,
        }
    }

    /// Adds a line; `false` (and the queue emptied, the end set) when it is full.
    fn push(&self, cursor: Cursor, line: &Bytes) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.end.is_some() {
            return false;
        }
        if st.live && st.covered.is_some_and(|c| cursor <= c) {
            return true;
        }
        let full = |st: &QueueState| {
            st.items.len() >= self.limits.records || st.bytes + line.len() > self.limits.bytes
        };
        if !st.live {
            while !st.items.is_empty() && full(&st) {
                if let Some((c, old)) = st.items.pop_front() {
                    st.bytes -= old.len();
                    st.dropped = st.dropped.max(Some(c));
                }
            }
        } else if full(&st) {
            st.items.clear();
            st.bytes = 0;
            st.end = Some(self.fell_behind());
            drop(st);
            self.close_signal();
            return false;
        }
        st.bytes += line.len();
        st.items.push_back((cursor, line.clone()));
        drop(st);
        self.ready.notify_one();
        true
    }

    fn fell_behind(&self) -> Bytes {
        ApiError::fell_behind(format!(
            "this follow fell behind (more than {} records or {} bytes waiting) and was ended so the others go on; reconnect with sinceCursor to continue after the last record",
            self.limits.records, self.limits.bytes
        ))
        .status_line()
    }

    /// The history was sent up to `last`: from now on a full queue ends the
    /// follower, and lines up to `last` are left out. `Err` with the final
    /// line when lines were dropped that the history did not cover (a gap).
    pub fn go_live(&self, last: Option<Cursor>) -> Result<(), Bytes> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.live = true;
        if st.dropped.is_some() && st.dropped > last {
            st.items.clear();
            st.bytes = 0;
            return Err(self.fell_behind());
        }
        // What waits and the history sent would only be skipped, yet would
        // hold the room the hub's next lines need.
        if let Some(last) = last {
            st.items.retain(|(c, _)| *c > last);
            st.bytes = st.items.iter().map(|(_, l)| l.len()).sum();
        }
        st.covered = last;
        Ok(())
    }

    fn end(&self, line: Bytes) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.end.is_none() {
            st.end = Some(line);
        }
        drop(st);
        self.close_signal();
    }

    fn close_signal(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.ready.notify_one();
        self.gone.notify_waiters();
    }

    /// The final line, once the follower left its hub, dropping what waits.
    pub fn take_end(&self) -> Option<Bytes> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.items.clear();
        st.bytes = 0;
        st.end.take()
    }

    /// The next line, waiting for one.
    pub async fn next(&self) -> Next {
        loop {
            let notified = self.ready.notified();
            {
                let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((cursor, line)) = st.items.pop_front() {
                    st.bytes -= line.len();
                    return Next::Record(cursor, line);
                }
                if let Some(end) = st.end.take() {
                    return Next::End(end);
                }
            }
            notified.await;
        }
    }

    /// Resolves once the follower was dropped from its hub (fell behind or the hub ended).
    pub async fn dropped(&self) {
        loop {
            let notified = self.gone.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.ended.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// A follower's place in a hub; leaving the hub when dropped.
pub struct Subscription {
    fanout: Weak<Fanout>,
    hub: Arc<Hub>,
    uid: String,
    id: u64,
    /// What the hub has queued for this follower.
    pub queue: Arc<Queue>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(fanout) = self.fanout.upgrade() {
            fanout.leave(&self.hub, &self.uid, self.id);
        }
    }
}

impl Fanout {
    /// A fan-out whose followers' queues keep to `limits`; a new hub starts
    /// reading `skew_secs` before now (the clock-skew margin).
    pub fn new(metrics: Metrics, limits: QueueLimits, skew_secs: i64) -> Arc<Self> {
        Arc::new(Self {
            hubs: Mutex::new(HashMap::new()),
            metrics,
            limits,
            skew_secs,
        })
    }

    /// Joins the hub of `key` (starting it, and its upstream stream, when
    /// it is the first follower) as a follower of the Run `uid`.
    pub fn subscribe(
        self: &Arc<Self>,
        pods: &Api<Pod>,
        key: PodKey,
        uid: &str,
        streams: StreamFilter,
    ) -> Subscription {
        let mut hubs = self.hubs.lock().unwrap_or_else(|e| e.into_inner());
        let hub = match hubs.get(&key) {
            Some(hub) if !hub.lock_members().ended => hub.clone(),
            _ => {
                let hub = Arc::new(Hub {
                    key: key.clone(),
                    members: Mutex::new(Members::default()),
                    task: Mutex::new(None),
                });
                hubs.insert(key.clone(), hub.clone());
                let task = tokio::spawn(run_hub(
                    Arc::downgrade(self),
                    hub.clone(),
                    pods.clone(),
                    self.metrics.clone(),
                    self.skew_secs,
                ));
                *hub.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
                hub
            }
        };
        let queue = Arc::new(Queue::new(self.limits));
        let counted = self.metrics.log_followers.clone();
        counted.inc();
        let mut members = hub.lock_members();
        members.next_id += 1;
        let id = members.next_id;
        members
            .runs
            .entry(uid.to_owned())
            .or_insert_with(|| RunGroup {
                filter: RunFilter::new(uid, StreamFilter::Both, &key.name),
                followers: Vec::new(),
            })
            .followers
            .push(Member {
                id,
                streams,
                queue: queue.clone(),
                counted,
            });
        drop(members);
        Subscription {
            fanout: Arc::downgrade(self),
            hub,
            uid: uid.to_owned(),
            id,
            queue,
        }
    }

    fn leave(&self, hub: &Arc<Hub>, uid: &str, id: u64) {
        let mut hubs = self.hubs.lock().unwrap_or_else(|e| e.into_inner());
        let mut members = hub.lock_members();
        if let Some(group) = members.runs.get_mut(uid) {
            group.followers.retain(|m| m.id != id);
            if group.followers.is_empty() {
                members.runs.remove(uid);
            }
        }
        if members.runs.is_empty() && !members.ended {
            // The last follower left: the upstream stream closes.
            members.ended = true;
            drop(members);
            if hubs.get(&hub.key).is_some_and(|h| Arc::ptr_eq(h, hub)) {
                hubs.remove(&hub.key);
            }
            if let Some(task) = hub.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
                task.abort();
            }
        }
    }

    /// The hub ended by itself: every follower gets `line`.
    fn ended(&self, hub: &Arc<Hub>, line: &Bytes) {
        let mut hubs = self.hubs.lock().unwrap_or_else(|e| e.into_inner());
        if hubs.get(&hub.key).is_some_and(|h| Arc::ptr_eq(h, hub)) {
            hubs.remove(&hub.key);
        }
        drop(hubs);
        let mut members = hub.lock_members();
        members.ended = true;
        for group in std::mem::take(&mut members.runs).into_values() {
            for m in group.followers {
                m.queue.end(line.clone());
            }
        }
    }

    /// Open hubs (for tests).
    pub fn hubs(&self) -> usize {
        self.hubs.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Hub {
    fn lock_members(&self) -> std::sync::MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands one line to the followers of its Run.
    fn dispatch(&self, line: &Line, cursor: Cursor) {
        let mut members = self.lock_members();
        if members.runs.is_empty() {
            return;
        }
        // Few Runs: their filters' substring search rejects other lines
        // without parsing. Many: the line's own `run_uid` picks the Run.
        let uid = if members.runs.len() <= 4 {
            members
                .runs
                .iter()
                .find(|(_, g)| g.filter.is_candidate_line(line))
                .map(|(uid, _)| uid.clone())
        } else {
            run_uid_of(line)
        };
        let Some(uid) = uid else { return };
        let Some(group) = members.runs.get_mut(&uid) else {
            return;
        };
        let Some(mut rec) = group.filter.line_record(line) else {
            return;
        };
        rec.cursor = cursor.to_string();
        let bytes = record_line(&rec);
        group.followers.retain(|m| {
            if !m.streams.admits(&rec.stream) {
                return true;
            }
            // Dropped when full: its final line is set, the others go on.
            m.queue.push(cursor, &bytes)
        });
        if group.followers.is_empty() {
            members.runs.remove(&uid);
        }
    }
}

/// The top-level `run_uid` of a runtimed line, when it has one.
fn run_uid_of(line: &Line) -> Option<String> {
    if line.oversized {
        return line.scan.fields()?.get("run_uid").map(str::to_owned);
    }
    #[derive(serde::Deserialize)]
    struct Uid<'a> {
        #[serde(borrow)]
        run_uid: Option<std::borrow::Cow<'a, str>>,
    }
    let content = line.split_timestamp().1;
    if content.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let v: Uid<'_> = serde_json::from_slice(content).ok()?;
    v.run_uid.map(|u| u.into_owned())
}

async fn run_hub(
    fanout: Weak<Fanout>,
    hub: Arc<Hub>,
    pods: Api<Pod>,
    metrics: Metrics,
    skew_secs: i64,
) {
    metrics.log_upstream_streams.inc();
    let open = metrics.log_upstream_streams.clone();
    let _open = OnDrop::new(move || {
        open.dec();
    });
    let result = read_upstream(&hub, &pods, &metrics, skew_secs).await;
    // However it ended: 404 when the Pod went or was replaced, else 503.
    let gone = match pods.get_metadata_opt(&hub.key.name).await {
        Ok(Some(p)) if p.metadata.uid.as_deref() == Some(hub.key.uid.as_str()) => None,
        Ok(Some(_)) => Some(
            ApiError::not_found(format!(
                "pod {:?} was replaced by a new pod of the same name; the run's log is gone",
                hub.key.name
            ))
            .about("", "pods", &hub.key.name),
        ),
        Ok(None) => Some(
            ApiError::not_found(format!(
                "pod {:?} no longer exists; its log is gone",
                hub.key.name
            ))
            .about("", "pods", &hub.key.name),
        ),
        Err(_) => None,
    };
    let status = match (gone, result) {
        (Some(gone), _) => gone,
        (None, Err(error)) => {
            metrics.log_upstream_failures.inc();
            reconnect(&error)
        }
        (None, Ok(())) => ApiError::unavailable(format!(
            "the log stream of pod {:?} ended; reconnect with sinceCursor to continue",
            hub.key.name
        )),
    };
    if let Some(fanout) = fanout.upgrade() {
        fanout.ended(&hub, &status.status_line());
    }
}

async fn read_upstream(
    hub: &Hub,
    pods: &Api<Pod>,
    metrics: &Metrics,
    skew_secs: i64,
) -> Result<(), ApiError> {
    if !kruntimes_core::names::is_dns1123_subdomain(&hub.key.name) {
        return Err(ApiError::conflict(format!(
            "pod name {:?} is not a DNS-1123 subdomain; no log was read",
            hub.key.name
        )));
    }
    // From a whole second a little in the past: the followers' histories
    // reach at least as far, and duplicates are told apart by cursor.
    let since = jiff::Timestamp::now().as_second() - skew_secs.max(1);
    let params = LogParams {
        container: Some(RUNTIMED_CONTAINER.to_owned()),
        follow: true,
        since_time: jiff::Timestamp::from_second(since).ok(),
        timestamps: true,
        ..LogParams::default()
    };
    let stream = pods
        .log_stream(&hub.key.name, &params)
        .await
        .map_err(|e| from_kube(&e, &format!("reading the log of pod {:?}", hub.key.name)))?;
    let mut reader = LineReader::new(Box::pin(stream), MAX_LINE_BYTES);
    let mut line = Line::default();
    let mut seq = Sequencer::default();
    let mut counted = 0;
    loop {
        let more = reader.next_line(&mut line).await.map_err(|e| {
            ApiError::unavailable(format!("the log of pod {:?} broke off: {e}", hub.key.name))
        })?;
        metrics.log_read_bytes.inc_by(reader.bytes_read() - counted);
        counted = reader.bytes_read();
        if !more {
            return Ok(());
        }
        if let Some(cursor) = seq.next(line.split_timestamp().0) {
            hub.dispatch(&line, cursor);
        }
    }
}

/// A failed read of a followed Pod log, as the follow's final line says it:
/// 503, and what to do (a fallen-behind follower and a gone cursor keep
/// their own answers).
pub fn reconnect(error: &ApiError) -> ApiError {
    // A reconnect cannot help a follower that fell behind (it reconnects
    // after its last record itself) or whose cursor is gone (410: read again
    // without it).
    if matches!(error.kind(), Some(Reason::FellBehind | Reason::Gone)) {
        return error.clone();
    }
    let message = error.message.trim_end();
    if message.contains("sinceCursor") {
        return ApiError::unavailable(message);
    }
    ApiError::unavailable(format!("{message}; reconnect with sinceCursor to continue"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::cursor::Stamp;

    fn at(seq: u32) -> Cursor {
        Cursor {
            stamp: Stamp::whole_second(1),
            seq,
        }
    }

    #[tokio::test]
    async fn a_full_queue_ends_with_fell_behind_and_keeps_nothing() {
        let q = Queue::new(QueueLimits {
            records: 2,
            bytes: 1 << 20,
        });
        q.go_live(None).unwrap();
        let line = Bytes::from_static(b"{}\n");
        assert!(q.push(at(0), &line));
        assert!(q.push(at(1), &line));
        assert!(!q.push(at(2), &line), "the third record overflows");
        assert!(!q.push(at(3), &line), "nothing is queued after the end");
        q.dropped().await;
        match q.next().await {
            Next::End(end) => {
                let v: serde_json::Value = serde_json::from_slice(&end).unwrap();
                assert_eq!(v["reason"], "FellBehind");
                assert_eq!(v["code"], 503);
            }
            Next::Record(..) => panic!("records were kept past the bound"),
        }
    }

    #[tokio::test]
    async fn the_byte_bound_counts_too_and_an_ended_hub_delivers_what_waits() {
        let q = Queue::new(QueueLimits {
            records: 100,
            bytes: 8,
        });
        q.go_live(None).unwrap();
        let line = Bytes::from_static(b"12345\n");
        assert!(q.push(at(0), &line));
        assert!(!q.push(at(1), &line), "12 bytes exceed 8");

        let q = Queue::new(QueueLimits {
            records: 100,
            bytes: 1 << 20,
        });
        assert!(q.push(at(0), &line));
        q.end(Bytes::from_static(b"end\n"));
        assert!(matches!(q.next().await, Next::Record(c, _) if c == at(0)));
        assert!(matches!(q.next().await, Next::End(e) if &e[..] == b"end\n"));
    }

    #[tokio::test]
    async fn before_going_live_a_full_queue_drops_its_oldest_and_a_gap_ends_it() {
        let limits = QueueLimits {
            records: 2,
            bytes: 1 << 20,
        };
        let line = Bytes::from_static(b"{}\n");
        // The history covered what was dropped: no gap, the newest remain.
        let q = Queue::new(limits);
        for seq in 0..5 {
            assert!(q.push(at(seq), &line));
        }
        q.go_live(Some(at(2))).unwrap();
        assert!(matches!(q.next().await, Next::Record(c, _) if c == at(3)));
        assert!(matches!(q.next().await, Next::Record(c, _) if c == at(4)));
        // It did not: the follower ends as fallen behind.
        let q = Queue::new(limits);
        for seq in 0..5 {
            assert!(q.push(at(seq), &line));
        }
        let end = q.go_live(Some(at(1))).unwrap_err();
        let v: serde_json::Value = serde_json::from_slice(&end).unwrap();
        assert_eq!(v["reason"], "FellBehind");
    }

    /// The hub's read starts seconds back and may still be reading lines
    /// the (shorter) history already sent when the follower goes live with
    /// a full queue: those lines are no backlog, and the follower must not
    /// fall behind on them (it did, after its history, with nothing lost).
    #[tokio::test]
    async fn a_stream_still_behind_the_history_when_going_live_does_not_end_the_follower() {
        let q = Queue::new(QueueLimits {
            records: 2,
            bytes: 1 << 20,
        });
        let line = Bytes::from_static(b"{}\n");
        for seq in 0..3 {
            assert!(q.push(at(seq), &line));
        }
        // The history read up to 6; the stream is at 2.
        q.go_live(Some(at(6))).unwrap();
        for seq in 3..=6 {
            assert!(q.push(at(seq), &line), "{seq} was sent by the history");
        }
        assert!(q.push(at(7), &line));
        assert!(q.push(at(8), &line));
        assert!(matches!(q.next().await, Next::Record(c, _) if c == at(7)));
        assert!(matches!(q.next().await, Next::Record(c, _) if c == at(8)));
        // What is new still counts against the bound.
        assert!(q.push(at(9), &line));
        assert!(q.push(at(10), &line));
        assert!(!q.push(at(11), &line), "a third new record overflows");
    }
}
