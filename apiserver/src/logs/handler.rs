//! `GET /apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{name}/log`.

use kruntimes_core::failure::Refusal as _;
use std::convert::Infallible;
use std::sync::Arc;

use super::outbox;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, header};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde::Serialize;

use super::fanout::{Fanout, PodKey, QueueLimits, reconnect};
use super::filter::{LogRecord, RunFilter};
use super::follow::{Delivered, End, History, Polling};
use super::live::{self, Handover, LiveConfig, LiveCursor, LiveLines, LivePos, StatusConn, Take};
use super::notes::{self, LiveOutcome, LogNote, Met};
use super::params::LogQuery;
use super::reader::{LogSource, Tail, floor_of, until_of};
use super::runwatch::RunWatch;
use super::search::{PageStart, Search, SearchSummary, search_live, search_written};
use super::tail::Cut;
use kruntimes_core::auth::access::Decision;
use kruntimes_core::auth::{AccessReview, Caller, Recheck, ResourceAttributes};
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::limit::{Caps, Slot};
use kruntimes_core::metrics::Metrics;
use kruntimes_core::names::{is_dns1123_label, is_dns1123_subdomain};
use kruntimes_core::run::Run;
use kruntimes_core::status::{ApiError, from_kube, run_finished_line_saying};

/// The API group of the Run-log API.
pub const GROUP: &str = "logs.kruntimes.io";
/// Its version.
pub const VERSION: &str = "v1alpha1";

/// What the Run-log handler needs.
#[derive(Clone)]
pub struct LogApi {
    /// The server's own narrow identity: reads Runs, Pods and `pods/log`.
    pub service_account: Client,
    /// Authorizes each read (SubjectAccessReview, cached).
    pub access: AccessReview,
    /// Where reads and follows are counted.
    pub metrics: Metrics,
    /// Open follows, in total and per caller.
    pub follows: Arc<Caps>,
    /// Re-checks an open follow's access.
    pub recheck: Recheck,
    /// Follows end with a final `Status` line when the process stops.
    pub lifecycle: Lifecycle,
    /// The bounds of reads and follows.
    pub limits: LogLimits,
    /// One upstream `pods/log` follow per Pod, shared by its followers.
    pub fanout: Arc<Fanout>,
    /// Tells followers when their Run finishes (one watch per namespace).
    pub run_watch: Arc<RunWatch>,
    /// Places for Pod log reads open at once (`--log-max-concurrent-reads`).
    pub reads: Arc<tokio::sync::Semaphore>,
    /// How a running Run's live output is read from runtimed's status endpoint.
    pub live: LiveConfig,
    /// Status endpoints that failed lately (plain reads answer at once).
    pub live_failures: Arc<live::RecentFailures>,
    /// Numbers of records given out lately.
    pub numbers: Arc<super::numbers::LineNumbers>,
}

impl LogApi {
    /// The fan-out for `limits`.
    pub fn fanout(metrics: &Metrics, limits: &LogLimits) -> Arc<Fanout> {
        Fanout::new(
            metrics.clone(),
            QueueLimits {
                records: limits.follower_buffer_records,
                bytes: limits.follower_buffer_bytes,
            },
            limits.clock_skew_secs,
        )
    }

    /// The places for Pod log reads of `limits`.
    pub fn reads(limits: &LogLimits) -> Arc<tokio::sync::Semaphore> {
        Arc::new(tokio::sync::Semaphore::new(
            limits.max_concurrent_reads.max(1),
        ))
    }
}

/// Bounds of the Run-log reader.
#[derive(Clone, Debug)]
pub struct LogLimits {
    /// Seconds a node's clock may be behind kube-apiserver's: reads start
    /// this long before `max(startTime, creationTimestamp)`.
    pub clock_skew_secs: i64,
    /// Records a follower may have waiting before it is ended as fallen behind.
    pub follower_buffer_records: usize,
    /// Bytes of NDJSON a follower may have waiting before it is ended as fallen behind.
    pub follower_buffer_bytes: usize,
    /// How long a follow's final line may take to reach a client that does
    /// not read before the connection is closed (and how long a streamed
    /// history line waits for one).
    pub follower_final_timeout: std::time::Duration,
    /// Reads of Pod logs (tails, histories) open at once in the process;
    /// more wait for a place.
    pub max_concurrent_reads: usize,
    /// Most bytes of a Pod log read to count the records before an answer
    /// (its records' line numbers); past it the answer has none.
    pub numbering_max_bytes: u64,
}

impl Default for LogLimits {
    fn default() -> Self {
        Self {
            clock_skew_secs: super::reader::DEFAULT_CLOCK_SKEW_SECS,
            follower_buffer_records: DEFAULT_FOLLOWER_BUFFER_RECORDS,
            follower_buffer_bytes: DEFAULT_FOLLOWER_BUFFER_BYTES,
            follower_final_timeout: std::time::Duration::from_secs(10),
            max_concurrent_reads: DEFAULT_MAX_CONCURRENT_READS,
            numbering_max_bytes: super::numbers::DEFAULT_MAX_BYTES,
        }
    }
}

/// Default of `--log-follower-buffer-records`.
pub const DEFAULT_FOLLOWER_BUFFER_RECORDS: usize = 256;
/// Default of `--log-max-concurrent-reads`.
pub const DEFAULT_MAX_CONCURRENT_READS: usize = 32;
/// Default of `--log-follower-buffer-bytes`.
pub const DEFAULT_FOLLOWER_BUFFER_BYTES: usize = 256 << 10;

/// The plain (non-follow) answer.
#[derive(Debug, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RunLog {
    /// Always `RunLog`.
    pub kind: &'static str,
    /// Always `logs.kruntimes.io/v1alpha1`.
    pub api_version: &'static str,
    /// The Run the log is of.
    pub metadata: RunLogMeta,
    /// The Runtime Pod read.
    pub pod: String,
    /// The Run's records, oldest first.
    pub records: Vec<LogRecord>,
    /// Whether a bound cut the result short.
    pub truncated: bool,
    /// Which bound, when `truncated`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_by: Option<Cut>,
    /// Why the answer holds no or only some of the Run's records, and what
    /// its records' times mean.
    pub notes: Vec<LogNote>,
    /// The matches of a `search` (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchSummary>,
}

/// The Run a `RunLog` is of.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct RunLogMeta {
    /// The Run's name.
    pub name: String,
    /// The Run's namespace.
    pub namespace: String,
    /// The Run's UID.
    pub uid: String,
}

fn run_not_found(ns: &str, name: &str) -> ApiError {
    ApiError::not_found(format!(
        "runs.kruntimes.io {name:?} not found in namespace {ns:?}"
    ))
    .about("kruntimes.io", "runs", name)
}

/// What reading a Run's log needs: `get runs/log` in `logs.kruntimes.io`
/// (admission here, and the re-checks of follows on both listeners).
pub fn log_attributes(ns: &str, name: &str) -> ResourceAttributes {
    ResourceAttributes {
        verb: "get",
        group: GROUP,
        resource: "runs",
        subresource: Some("log"),
        namespace: ns.to_owned(),
        name: Some(name.to_owned()),
    }
}

/// Checks names, parameters and the caller's access; `Ok` means go ahead.
pub async fn admit(
    api: &LogApi,
    caller: &Caller,
    ns: &str,
    name: &str,
    raw_query: Option<&str>,
) -> Result<LogQuery, ApiError> {
    if !is_dns1123_label(ns) {
        return Err(ApiError::bad_request(format!(
            "namespace {ns:?} is not a valid name: lowercase letters, digits and '-', at most 63 characters"
        )));
    }
    if !is_dns1123_subdomain(name) {
        return Err(ApiError::bad_request(format!(
            "run name {name:?} is not a valid name: lowercase letters, digits, '-' and '.', at most 253 characters"
        )));
    }
    let query = LogQuery::parse(raw_query).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let attrs = log_attributes(ns, name);
    match api.access.check(caller, &attrs).await {
        Ok(Decision::Allowed) => Ok(query),
        Ok(Decision::Denied(_)) => Err(ApiError::forbidden(format!(
            "runs.logs.kruntimes.io {name:?} is forbidden: User {:?} cannot get resource \"runs/log\" in API group \"{GROUP}\" in the namespace {ns:?}",
            caller.user
        ))
        .about(GROUP, "runs", name)),
        Err(e) => Err(ApiError::unavailable(e.to_string())),
    }
}

/// Serves a Run's log (tail as JSON, follow as NDJSON).
pub async fn get_run_log(
    State(api): State<Arc<LogApi>>,
    Extension(caller): Extension<Caller>,
    Path((ns, name)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = admit(&api, &caller, &ns, &name, raw.as_deref()).await?;
    tracing::info!(user = %caller.user, namespace = %ns, run = %name, follow = query.follow, tail = query.tail, search = query.search.is_some(), "runs/log");
    let slot = if query.follow {
        let slot = api
            .follows
            .acquire(&caller.user)
            .map_err(|e| ApiError::too_many_requests(e.to_string()))?;
        Some(slot)
    } else {
        None
    };
    serve(api, ns, name, query, slot.map(|s| (s, caller))).await
}

/// Serves an admitted request.
pub async fn serve(
    api: Arc<LogApi>,
    ns: String,
    name: String,
    query: LogQuery,
    follower: Option<(Slot, Caller)>,
) -> Result<Response, ApiError> {
    let runs: Api<Run> = Api::namespaced(api.service_account.clone(), &ns);
    let mut run = runs
        .get_opt(&name)
        .await
        .map_err(|e| from_kube(&e, &format!("reading run {ns}/{name}")))?
        .ok_or_else(|| run_not_found(&ns, &name))?;
    // A follow keeps its Run for as long as it lives; not the field history.
    run.metadata.managed_fields = None;
    let pods: Api<Pod> = Api::namespaced(api.service_account.clone(), &ns);
    if !query.follow {
        let Some((pod, _)) = run.assignment() else {
            return Err(ApiError::conflict(format!(
                "run {ns}/{name} is not yet assigned to a Runtime Pod (phase {}); retry later or use follow=true to wait",
                run.phase()
            ))
            .about("kruntimes.io", "runs", &name));
        };
        let pod = pod.to_owned();
        let facts = check_pod(&pods, &run).await?;
        let source = source_for(&api, pods, &run, &pod, &query, &facts);
        if let Some(search) = &query.search {
            let (found, live) = searched(&api, &run, &source, &query, search, &facts).await?;
            let notes = notes::notes(&run, &found.records, found.met, &live);
            let body = RunLog {
                kind: "RunLog",
                api_version: "logs.kruntimes.io/v1alpha1",
                metadata: RunLogMeta {
                    name: name.clone(),
                    namespace: ns.clone(),
                    uid: run.metadata.uid.clone().unwrap_or_default(),
                },
                pod,
                records: found.records,
                truncated: found.cut.is_some(),
                truncated_by: found.cut,
                notes,
                search: Some(found.summary),
            };
            return Ok(Json(body).into_response());
        }
        let (tail, live) = plain(&api, &run, &source, &query, &facts).await?;
        let met = Met {
            written: tail.seen,
            from_previous: tail.from_previous,
            previous_gone: tail.previous_gone,
        };
        let notes = notes::notes(&run, &tail.records, met, &live);
        let body = RunLog {
            kind: "RunLog",
            api_version: "logs.kruntimes.io/v1alpha1",
            metadata: RunLogMeta {
                name: name.clone(),
                namespace: ns.clone(),
                uid: run.metadata.uid.clone().unwrap_or_default(),
            },
            pod,
            records: tail.records,
            truncated: tail.cut.is_some(),
            truncated_by: tail.cut,
            notes,
            search: None,
        };
        return Ok(Json(body).into_response());
    }
    if run.assignment().is_some() {
        check_pod(&pods, &run).await?;
    }
    let (tx, rx) = outbox::channel(16);
    // What a follow's task captures stays in it for as long as it lives
    // (moved out or not): only small values and one box it frees once live.
    let open = api.metrics.follow_opened();
    let shared = api.clone();
    let grace = api.limits.follower_final_timeout;
    let attrs = log_attributes(&ns, &name);
    let start = Box::new(StartArgs {
        api,
        runs,
        pods,
        run,
        query,
    });
    let task = async move {
        // The follow's place is freed however the follow ends.
        let _open = open;
        let caller = follower.as_ref().map(|(_slot, caller)| caller);
        let revoked = async {
            match caller {
                Some(c) => shared.recheck.revoked(c, &attrs).await,
                None => std::future::pending().await,
            }
        };
        let _stream = shared.lifecycle.track();
        // Getting live (the Run, the Pod check, the history read) is boxed
        // and freed on the way.
        let followed = async {
            match Box::pin(start_follow(start, &tx)).await? {
                Begun::Done(line) => Ok::<_, ApiError>(line),
                Begun::Live(following, polling, phase) => {
                    let Delivered { end, written, live } =
                        super::follow::deliver(*following, polling, &tx).await;
                    Ok(final_of(end, &phase, written, live))
                }
            }
        };
        tokio::select! {
            res = followed => {
                match res {
                    Ok(None) => {}
                    Ok(Some(line)) => final_line(&tx, line, grace).await,
                    Err(error) => {
                        tracing::debug!(%error, namespace = %attrs.namespace, run = attrs.name.as_deref().unwrap_or_default(), "follow ended");
                        final_line(&tx, error.status_line(), grace).await;
                    }
                }
            }
            why = revoked => {
                tracing::info!(reason = %why, namespace = %attrs.namespace, run = attrs.name.as_deref().unwrap_or_default(), "ending a follow whose access ended");
                let status = why.to_api_error();
                final_line(&tx, status.status_line(), grace).await;
            }
            () = shared.lifecycle.stopping() => {
                final_line(&tx, ApiError::shutting_down().status_line(), grace).await;
            }
        }
    };
    // With traces on, the follow's reads are children of its request's span.
    tokio::spawn(tracing::Instrument::in_current_span(task));
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    let mut resp = Response::new(Body::from_stream(body));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}

fn source_for(
    api: &LogApi,
    pods: Api<Pod>,
    run: &Run,
    pod: &str,
    query: &LogQuery,
    facts: &PodFacts,
) -> LogSource {
    let completion = run.is_terminal().then(|| run.completion_time()).flatten();
    LogSource {
        pods,
        pod: pod.to_owned(),
        filter: RunFilter::new(run.metadata.uid.as_deref().unwrap_or(""), query.stream, pod),
        floor: floor_of(
            run.start_time(),
            run.metadata.creation_timestamp.as_ref().map(|t| t.0),
            api.limits.clock_skew_secs,
        ),
        until: until_of(completion),
        metrics: api.metrics.clone(),
        reads: api.reads.clone(),
        send_timeout: api.limits.follower_final_timeout,
        restarted_at: facts.restarted_at,
        completed_at: completion.map(|t| t.as_second()),
        numbers: api.numbers.clone(),
        numbering_max_bytes: api.limits.numbering_max_bytes,
    }
}

/// Reads a plain (not followed) answer: written records, or the live
/// output of a running Run whose records runtimed has not written yet.
async fn plain(
    api: &LogApi,
    run: &Run,
    source: &LogSource,
    query: &LogQuery,
    facts: &PodFacts,
) -> Result<(Tail, LiveOutcome), ApiError> {
    let (max, bytes) = (query.tail, query.limit_bytes);
    let attempt = notes::attempt(run);
    if query.from_start {
        let written = source.after(None, max, bytes, None).await?;
        if written.seen > 0 || run.is_terminal() {
            return Ok((written, LiveOutcome::NotTried));
        }
        // Nothing written yet: the live output's first lines.
        let (resp, outcome) = read_live(api, run, facts).await;
        let Some(resp) = resp else {
            return Ok((written, outcome));
        };
        let start = LivePos {
            attempt,
            stdout: 0,
            stderr: 0,
        };
        let mut lines = LiveLines::new(start, &source.pod, query.stream);
        let (records, cut) = lines.advance(&resp, None, Take::First(max, bytes));
        return Ok((
            Tail {
                records,
                cut,
                ..written
            },
            outcome,
        ));
    }
    if let Some(c) = query.since_cursor {
        return Ok((
            source.after(Some(c), max, bytes, None).await?,
            LiveOutcome::NotTried,
        ));
    }
    if let Some(c) = query.since_live {
        // Written since? Then they continue after what was delivered live.
        let mut skip = if c.pos.attempt == attempt {
            Handover::new(c.pos)
        } else {
            Handover::default()
        };
        let written = source.after(None, max, bytes, Some(&mut skip)).await?;
        if written.seen > 0 || run.is_terminal() {
            return Ok((written, LiveOutcome::NotTried));
        }
        let (resp, outcome) = read_live(api, run, facts).await;
        let Some(resp) = resp else {
            return Ok((written, outcome));
        };
        let mut lines = LiveLines::new(resume_at(c, attempt), &source.pod, query.stream);
        let mut out = written;
        let (records, cut) = lines.advance(&resp, None, Take::First(max, bytes));
        out.records = records;
        out.cut = cut;
        return Ok((out, outcome));
    }
    if let Some(c) = query.before_live {
        let (resp, outcome) = read_live(api, run, facts).await;
        let Some(resp) = resp else {
            return Err(ApiError::conflict(format!(
                "the live record {c} is no longer live output (runtimed has written the Run's records or forgotten its execution); read the log again without beforeCursor"
            )));
        };
        let (records, cut) = live::snapshot(
            &resp,
            attempt,
            &source.pod,
            query.stream,
            Some(c),
            max,
            bytes,
        );
        let tail = Tail {
            records,
            cut,
            ..Tail::default()
        };
        return Ok((tail, outcome));
    }
    let tail = source.tail(max, bytes, query.before_cursor).await?;
    if tail.seen > 0 || run.is_terminal() || query.before_cursor.is_some() {
        return Ok((tail, LiveOutcome::NotTried));
    }
    let (resp, outcome) = read_live(api, run, facts).await;
    let Some(resp) = resp else {
        return Ok((tail, outcome));
    };
    let (records, cut) =
        live::snapshot(&resp, attempt, &source.pod, query.stream, None, max, bytes);
    Ok((
        Tail {
            records,
            cut,
            ..tail
        },
        outcome,
    ))
}

/// A search answer's parts.
struct Searched {
    records: Vec<LogRecord>,
    cut: Option<Cut>,
    summary: SearchSummary,
    met: Met,
}

/// Searches the Run's written records and, for a running Run whose records
/// runtimed has not written yet, its live output.
async fn searched(
    api: &LogApi,
    run: &Run,
    source: &LogSource,
    query: &LogQuery,
    search: &Search,
    facts: &PodFacts,
) -> Result<(Searched, LiveOutcome), ApiError> {
    let attempt = notes::attempt(run);
    let start = match (query.since_cursor, query.since_live) {
        (Some(c), _) => PageStart::Cursor(c),
        // Written records delivered live before are left out, unless the
        // Run was retried since.
        (None, Some(c)) if c.pos.attempt == attempt => PageStart::Live(c),
        _ => PageStart::Start,
    };
    let uid = run.metadata.uid.as_deref().unwrap_or_default();
    let (found, mut collector) = search_written(
        source,
        uid,
        query.stream,
        search,
        start,
        query.tail,
        query.limit_bytes,
    )
    .await?;
    let mut outcome = LiveOutcome::NotTried;
    if found.seen == 0 && !run.is_terminal() && query.since_cursor.is_none() {
        let (resp, o) = read_live(api, run, facts).await;
        outcome = o;
        if let Some(resp) = resp {
            search_live(
                &mut collector,
                &resp,
                attempt,
                &source.pod,
                query.stream,
                search,
                query.since_live,
            );
        }
    }
    let (records, cut, summary) = collector.finish();
    let met = Met {
        written: found.seen,
        from_previous: found.from_previous,
        previous_gone: found.previous_gone,
    };
    Ok((
        Searched {
            records,
            cut,
            summary,
            met,
        },
        outcome,
    ))
}

/// One read of a running Run's live output.
async fn read_live(
    api: &LogApi,
    run: &Run,
    facts: &PodFacts,
) -> (
    Option<kruntimes_core::runtimed::StatusResponse>,
    LiveOutcome,
) {
    if !api.live.enabled {
        return (None, LiveOutcome::Disabled);
    }
    let addr = match live::target(facts.ip.as_deref().unwrap_or(""), &api.live) {
        Ok(a) => a,
        Err(e) => return (None, LiveOutcome::Failed(e.public().to_owned())),
    };
    if let Some(e) = api.live_failures.get(addr) {
        return (None, LiveOutcome::Failed(e.public().to_owned()));
    }
    let uid = run.metadata.uid.as_deref().unwrap_or_default();
    let result = StatusConn::new(addr, api.live.clone()).status(uid).await;
    api.live_failures.record(addr, result.as_ref().err());
    live::count(&api.metrics, &result);
    match result {
        Ok(Some(resp)) => (Some(resp), LiveOutcome::Used),
        Ok(None) => (None, LiveOutcome::NotFound),
        Err(e) => {
            tracing::debug!(error = %e, "reading live output");
            (None, LiveOutcome::Failed(e.public().to_owned()))
        }
    }
}

/// Where a reader resumes after the live record `c` of a Run now in
/// `attempt`: after it, or at the start of the current attempt when the
/// Run was retried since (that attempt's lines are all new to the reader).
fn resume_at(c: LiveCursor, attempt: u32) -> LivePos {
    if c.pos.attempt < attempt {
        LivePos {
            attempt,
            stdout: 0,
            stderr: 0,
        }
    } else {
        c.pos
    }
}

/// `status.assignedPod` goes into URL paths: anything but a DNS-1123
/// subdomain is refused before any read.
pub fn check_assigned_pod(run: &Run, pod: &str) -> Result<(), ApiError> {
    if is_dns1123_subdomain(pod) {
        return Ok(());
    }
    let name = run.metadata.name.as_deref().unwrap_or_default();
    let ns = run.metadata.namespace.as_deref().unwrap_or_default();
    Err(ApiError::conflict(format!(
        "run {ns}/{name} has an invalid status.assignedPod {pod:?} (not a DNS-1123 subdomain); no log was read"
    ))
    .about("kruntimes.io", "runs", name))
}

/// What a Run-log read needs of the Run's Pod.
#[derive(Clone, Debug, Default)]
pub struct PodFacts {
    /// `status.podIP`: where runtimed's status endpoint is.
    pub ip: Option<String>,
    /// When the current `runtimed` container started, if it restarted.
    pub restarted_at: Option<i64>,
}

impl PodFacts {
    fn of(pod: &Pod) -> Self {
        let status = pod.status.as_ref();
        let runtimed = status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.name == super::RUNTIMED_CONTAINER));
        let restarted_at = runtimed.filter(|c| c.restart_count > 0).and_then(|c| {
            let state = c.state.as_ref()?;
            let started = state
                .running
                .as_ref()
                .and_then(|r| r.started_at.as_ref())
                .or_else(|| {
                    state
                        .terminated
                        .as_ref()
                        .and_then(|t| t.started_at.as_ref())
                })
                .map(|t| t.0.as_second());
            // Waiting to start again: everything so far is in the last log.
            started.or_else(|| Some(jiff::Timestamp::now().as_second()))
        });
        Self {
            ip: status
                .and_then(|s| s.pod_ip.clone())
                .filter(|ip| !ip.is_empty()),
            restarted_at,
        }
    }
}

/// The assigned Pod must exist and be the same Pod (UID) the Run was given.
async fn check_pod(pods: &Api<Pod>, run: &Run) -> Result<PodFacts, ApiError> {
    let Some((pod, uid)) = run.assignment() else {
        return Ok(PodFacts::default());
    };
    let name = run.metadata.name.as_deref().unwrap_or_default();
    check_assigned_pod(run, pod)?;
    let live = pods
        .get_opt(pod)
        .await
        .map_err(|e| from_kube(&e, &format!("reading pod {pod}")))?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "pod {pod:?} that ran run {name:?} no longer exists; its log is gone"
            ))
            .about("", "pods", pod)
        })?;
    if live.metadata.uid.as_deref() != Some(uid) {
        return Err(ApiError::not_found(format!(
            "pod {pod:?} that ran run {name:?} was replaced by a new pod of the same name; the run's log is gone"
        ))
        .about("", "pods", pod));
    }
    Ok(PodFacts::of(&live))
}

/// How a follow's start ended.
enum Begun {
    /// Live, for a Run in this phase, polling its live output while
    /// runtimed has written none of its records.
    Live(Box<super::follow::Following>, Option<Box<Polling>>, String),
    /// Over: the final line to send, if any (`None` when the caller left).
    Done(Option<Bytes>),
}

/// The final line of a follow that ended so (`phase`: the Run's when it
/// started), which met written records of the Run or not, and delivered
/// live lines or not.
fn final_of(end: End, phase: &str, written: bool, live: bool) -> Option<Bytes> {
    let finished =
        |phase: &str| run_finished_line_saying(phase, notes::finished_note(phase, written, live));
    match end {
        End::Left => None,
        End::Final(line) => Some(line),
        End::Finished => Some(finished(phase)),
        End::FinishedAs(phase) => Some(finished(&phase)),
    }
}

/// What starting a follow needs.
struct StartArgs {
    api: Arc<LogApi>,
    runs: Api<Run>,
    pods: Api<Pod>,
    run: Run,
    query: LogQuery,
}

/// Waits for the Run's assignment, checks its Pod, sends its history and
/// joins the Pod's shared stream.
async fn start_follow(args: Box<StartArgs>, tx: &outbox::Sender) -> Result<Begun, ApiError> {
    let StartArgs {
        api,
        runs,
        pods,
        run,
        query,
    } = *args;
    let run = if run.assignment().is_some() {
        run
    } else {
        match Box::pin(wait_for_assignment(&runs, &run, tx)).await {
            Waited::Assigned(run) => run,
            Waited::Left => return Ok(Begun::Done(None)),
            Waited::Finished(run) => {
                return Ok(Begun::Done(final_of(
                    End::Finished,
                    run.phase(),
                    false,
                    false,
                )));
            }
            Waited::Gone => {
                let name = run.metadata.name.as_deref().unwrap_or_default();
                return Err(ApiError::not_found(format!(
                    "run {name:?} was deleted or replaced while the follow waited for its assignment"
                ))
                .about("kruntimes.io", "runs", name));
            }
        }
    };
    let facts = check_pod(&pods, &run).await?;
    let Some((pod, pod_uid)) = run.assignment() else {
        return Ok(Begun::Done(None));
    };
    let key_ns = run.metadata.namespace.clone().unwrap_or_default();
    let key = PodKey {
        namespace: key_ns.clone(),
        name: pod.to_owned(),
        uid: pod_uid.to_owned(),
    };
    let pod = pod.to_owned();
    let source = source_for(&api, pods.clone(), &run, &pod, &query, &facts);
    let attempt = notes::attempt(&run);
    // Resuming after live output: the written records continue after what
    // was delivered live (all of them when the Run was retried since).
    let skip = query.since_live.map(|c| {
        if c.pos.attempt == attempt {
            Handover::new(c.pos)
        } else {
            Handover::default()
        }
    });
    let history = History {
        tail: (query.tail, query.limit_bytes),
        since: query.since_cursor,
        skip,
    };
    let finished = source.until.is_some() || run.is_terminal();
    let uid = run.metadata.uid.clone().unwrap_or_default();
    let polling = (!finished && query.since_cursor.is_none())
        .then(|| polling_for(&api, &facts, &uid, &pod, &query, attempt))
        .flatten();
    let subscribe = || api.fanout.subscribe(&pods, key, &uid, query.stream);
    let live = super::follow::Live {
        subscribe,
        finished: api.run_watch.finished(&key_ns, &uid),
        final_timeout: api.limits.follower_final_timeout,
    };
    match super::follow::start(&source, history, finished, live, tx).await {
        Ok(super::follow::Started::Live(following)) => Ok(Begun::Live(
            Box::new(following),
            polling,
            run.phase().to_owned(),
        )),
        Ok(super::follow::Started::Ended(end, written)) => {
            Ok(Begun::Done(final_of(end, run.phase(), written, false)))
        }
        Err(error) => {
            // A read of the Pod log failed: 404 when the Pod went, else 503
            // (the container not started, kube-apiserver or the kubelet
            // failing): the client reconnects with sinceCursor.
            check_pod(&pods, &run).await?;
            Err(reconnect(&error))
        }
    }
}

/// A follow's polling of runtimed's status endpoint, when live output can
/// be read for the Pod.
fn polling_for(
    api: &LogApi,
    facts: &PodFacts,
    uid: &str,
    pod: &str,
    query: &LogQuery,
    attempt: u32,
) -> Option<Box<Polling>> {
    if !api.live.enabled {
        return None;
    }
    let addr = match live::target(facts.ip.as_deref().unwrap_or(""), &api.live) {
        Ok(addr) => addr,
        Err(error) => {
            tracing::debug!(%error, pod, "no live output for this follow");
            return None;
        }
    };
    let start = query.since_live.map_or(
        LivePos {
            attempt,
            stdout: 0,
            stderr: 0,
        },
        |c| resume_at(c, attempt),
    );
    Some(Box::new(Polling {
        conn: StatusConn::new(addr, api.live.clone()),
        lines: LiveLines::new(start, pod, query.stream),
        uid: uid.to_owned(),
        interval: api.live.poll_interval,
        first: query
            .since_live
            .is_none()
            .then_some((query.tail, query.limit_bytes)),
        metrics: api.metrics.clone(),
    }))
}

/// Sends a follow's final line, giving up after `grace` on a client that
/// does not read (dropping the sender then closes the answer).
async fn final_line(tx: &outbox::Sender, line: Bytes, grace: std::time::Duration) {
    let _ = tokio::time::timeout(grace, tx.send(line)).await;
}

/// How waiting for a Run's assignment ended.
enum Waited {
    Assigned(Run),
    /// Finished without ever being assigned.
    Finished(Run),
    /// Deleted or replaced.
    Gone,
    /// The caller went away.
    Left,
}

/// Waits until the Run is assigned, deleted or replaced, or ends unassigned,
/// or the caller goes away.
async fn wait_for_assignment(runs: &Api<Run>, run: &Run, tx: &outbox::Sender) -> Waited {
    let name = run.metadata.name.clone().unwrap_or_default();
    let uid = run.metadata.uid.clone();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher::watcher(runs.clone(), config)
        .default_backoff()
        .boxed();
    let mut listed = false;
    loop {
        let event = tokio::select! {
            e = stream.next() => match e {
                Some(e) => e,
                None => return Waited::Gone,
            },
            () = tx.closed() => return Waited::Left,
        };
        match event {
            Ok(watcher::Event::Init) => listed = false,
            // The Run is gone if the (re)list did not contain it.
            Ok(watcher::Event::InitDone) if !listed => return Waited::Gone,
            Ok(watcher::Event::Apply(r) | watcher::Event::InitApply(r)) => {
                listed = true;
                if r.metadata.uid != uid {
                    return Waited::Gone;
                }
                if r.assignment().is_some() {
                    return Waited::Assigned(r);
                }
                if r.is_terminal() {
                    return Waited::Finished(r);
                }
            }
            Ok(watcher::Event::Delete(r)) if r.metadata.uid == uid => return Waited::Gone,
            Ok(_) => {}
            Err(error) => tracing::debug!(%error, "watching run for its assignment; retrying"),
        }
    }
}
