//! Prometheus metrics of the server, one registry for both listeners.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use std::sync::{Arc, Mutex};

use crate::guard::OnDrop;

/// Labels of a request count: listener, route and status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The listener that served the request: `apiserver` or `console`.
    pub listener: &'static str,
    /// The route's fixed name (never the request path).
    pub route: &'static str,
    /// The HTTP status code of the answer.
    pub code: u16,
}

/// Labels of a request duration: listener and route.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The listener that served the request: `apiserver` or `console`.
    pub listener: &'static str,
    /// The route's fixed name (never the request path).
    pub route: &'static str,
}

/// Labels of a per-listener metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabels {
    /// The listener: `apiserver` or `console`.
    pub listener: &'static str,
}

/// Labels of a connection closed by a connection cap.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConnRefusalLabels {
    /// The listener that refused the connection: `apiserver` or `console`.
    pub listener: &'static str,
    /// The cap that refused: `max_connections` or `max_connections_per_peer`.
    pub reason: &'static str,
}

/// Labels of a request refused by a cap on open requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestRefusalLabels {
    /// The listener that refused the request: `apiserver`, `console` or `admin`.
    pub listener: &'static str,
    /// The cap that refused: `max_open_requests` or `max_open_requests_per_peer`.
    pub reason: &'static str,
}

/// Labels of a cap on long-lived work.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CapLabels {
    /// The listener the cap belongs to: `apiserver` or `console`.
    pub listener: &'static str,
    /// What the cap bounds: `follows`, `watches` or `v1_calls`.
    pub cap: &'static str,
}

/// Labels of a request a cap refused with 429.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CapRefusalLabels {
    /// The listener the cap belongs to: `apiserver` or `console`.
    pub listener: &'static str,
    /// What the cap bounds: `follows`, `watches`, `v1_calls` or
    /// `v1_buffered_bytes`.
    pub cap: &'static str,
    /// Which bound refused: `total` or `per_caller`.
    pub scope: &'static str,
}

/// Labels of a call's outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// The outcome: `authenticated`, `rejected`, `allowed`, `denied`, `error`;
    /// for live reads `ok`, `not_found`, `error`.
    pub result: &'static str,
}

/// Every metric the server exports.
#[derive(Clone)]
pub struct Metrics {
    /// HTTP requests by listener, route and status code.
    pub requests: Family<RequestLabels, Counter>,
    /// Time to the response head, in seconds, by listener and route.
    pub request_seconds: Family<RouteLabels, Histogram>,
    /// TokenReview calls made, by result.
    pub token_reviews: Family<ResultLabels, Counter>,
    /// Authentications answered from the TokenReview cache.
    pub token_review_cache_hits: Counter,
    /// SubjectAccessReview calls made, by result.
    pub access_reviews: Family<ResultLabels, Counter>,
    /// Authorizations answered from the SubjectAccessReview cache.
    pub access_review_cache_hits: Counter,
    /// Run-log follow streams open now.
    pub follow_streams: Gauge,
    /// Open upstream `pods/log` follow streams (one per followed Pod).
    pub log_upstream_streams: Gauge,
    /// Followers attached to an upstream stream.
    pub log_followers: Gauge,
    /// Bytes of Pod log read to answer `runs/log`.
    pub log_read_bytes: Counter,
    /// Upstream `pods/log` follow streams that ended in an error (not a
    /// Pod that went away, not a stream the kubelet closed).
    pub log_upstream_failures: Counter,
    /// Calls to runtimed's status endpoint for live output, by result.
    pub log_live_reads: Family<ResultLabels, Counter>,
    /// Connections open now, by listener.
    pub connections_open: Family<ListenerLabels, Gauge>,
    /// Connections closed right after accept by a connection cap, by listener
    /// and cap.
    pub connections_refused: Family<ConnRefusalLabels, Counter>,
    /// Requests open now (head read, answer not yet sent whole), by
    /// listener; the fast path's requests are not counted.
    pub requests_open: Family<ListenerLabels, Gauge>,
    /// Requests answered 503 by a cap on open requests, by listener and cap.
    pub requests_refused: Family<RequestRefusalLabels, Counter>,
    /// Requests served by a listener's HTTP/1.1 fast path (`/v1` invoke).
    pub fast_path_requests: Counter,
    /// HTTP/2 requests a listener served without its router (`/v1` invoke).
    pub direct_requests: Counter,
    /// Places taken now under a cap on long-lived work (follows, watches, `/v1` calls).
    pub cap_in_use: Family<CapLabels, Gauge>,
    /// The total bound of each cap.
    pub cap_limit: Family<CapLabels, Gauge>,
    /// Requests refused with 429 by a cap.
    pub cap_refusals: Family<CapRefusalLabels, Counter>,
    /// When the serving certificate of each TLS listener expires (Unix seconds).
    pub tls_certificate_expiry: Family<ListenerLabels, Gauge>,
    /// Run before every scrape, to bring gauges that mirror outside state up to date.
    scrape_hooks: Arc<Mutex<Vec<ScrapeHook>>>,
}

/// Brings a gauge up to date just before a scrape.
pub type ScrapeHook = Box<dyn Fn() + Send + Sync>;

/// The request duration histogram's upper bounds, in seconds: 1 ms to 10 s.
/// Long-lived answers (follows, watches) are timed to their head only.
pub const REQUEST_SECONDS_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(|| {
                Histogram::new(REQUEST_SECONDS_BUCKETS)
            }),
            token_reviews: Family::default(),
            token_review_cache_hits: Counter::default(),
            access_reviews: Family::default(),
            access_review_cache_hits: Counter::default(),
            follow_streams: Gauge::default(),
            log_upstream_streams: Gauge::default(),
            log_followers: Gauge::default(),
            log_read_bytes: Counter::default(),
            log_upstream_failures: Counter::default(),
            log_live_reads: Family::default(),
            connections_open: Family::default(),
            connections_refused: Family::default(),
            requests_open: Family::default(),
            requests_refused: Family::default(),
            fast_path_requests: Counter::default(),
            direct_requests: Counter::default(),
            cap_in_use: Family::default(),
            cap_limit: Family::default(),
            cap_refusals: Family::default(),
            tls_certificate_expiry: Family::default(),
            scrape_hooks: Arc::default(),
        }
    }
}

impl Metrics {
    /// Counts a follow stream as open until the returned guard is dropped,
    /// however the stream ends.
    pub fn follow_opened(&self) -> OnDrop<impl FnOnce() + use<>> {
        self.follow_streams.inc();
        let open = self.follow_streams.clone();
        OnDrop::new(move || {
            open.dec();
        })
    }

    /// Runs `hook` before every scrape (see [`Self::before_scrape`]).
    pub fn on_scrape(&self, hook: impl Fn() + Send + Sync + 'static) {
        self.scrape_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(hook));
    }

    /// Brings gauges that mirror outside state (certificate files) up to date.
    pub fn before_scrape(&self) {
        for hook in self
            .scrape_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            hook();
        }
    }

    /// Registers every metric under the `kruntimes_console` prefix.
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("kruntimes_console");
        r.register(
            "http_requests",
            "HTTP requests by listener, route and status code",
            self.requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "Time to the response head by listener and route",
            self.request_seconds.clone(),
        );
        r.register(
            "token_reviews",
            "TokenReview calls made, by result",
            self.token_reviews.clone(),
        );
        r.register(
            "token_review_cache_hits",
            "Authentications answered from the TokenReview cache",
            self.token_review_cache_hits.clone(),
        );
        r.register(
            "access_reviews",
            "SubjectAccessReview calls made, by result",
            self.access_reviews.clone(),
        );
        r.register(
            "access_review_cache_hits",
            "Authorizations answered from the SubjectAccessReview cache",
            self.access_review_cache_hits.clone(),
        );
        r.register(
            "log_follow_streams",
            "Run-log follow streams open now",
            self.follow_streams.clone(),
        );
        r.register(
            "log_upstream_streams",
            "Upstream pods/log follow streams open now, one per Pod with at least one follower",
            self.log_upstream_streams.clone(),
        );
        r.register(
            "log_followers",
            "Run-log followers reading from an upstream pods/log stream now",
            self.log_followers.clone(),
        );
        r.register(
            "log_read_bytes",
            "Bytes of Pod log read to answer runs/log",
            self.log_read_bytes.clone(),
        );
        r.register(
            "log_upstream_failures",
            "Upstream pods/log follow streams that ended in an error (the Pod still exists)",
            self.log_upstream_failures.clone(),
        );
        r.register(
            "log_live_reads",
            "Calls to runtimed's status endpoint for a running Run's live output, by result (ok, not_found, error)",
            self.log_live_reads.clone(),
        );
        r.register(
            "connections_open",
            "Connections open now, by listener",
            self.connections_open.clone(),
        );
        r.register(
            "connections_refused",
            "Connections closed right after accept by a connection cap, by listener and cap",
            self.connections_refused.clone(),
        );
        r.register(
            "requests_open",
            "Requests open now (head read, answer not yet sent whole), by listener; the HTTP/1.1 fast path's are not counted",
            self.requests_open.clone(),
        );
        r.register(
            "requests_refused",
            "Requests answered 503 by a cap on open requests, by listener and cap (max_open_requests, max_open_requests_per_peer)",
            self.requests_refused.clone(),
        );
        r.register(
            "fast_path_requests",
            "Requests served by the Console listener's HTTP/1.1 fast path (/v1 invoke), also counted in http_requests",
            self.fast_path_requests.clone(),
        );
        r.register(
            "direct_requests",
            "HTTP/2 requests served by the Console listener without its router (/v1 invoke), also counted in http_requests",
            self.direct_requests.clone(),
        );
        r.register(
            "cap_in_use",
            "Places taken now under a cap on long-lived work, by listener and cap (follows, watches, v1_calls)",
            self.cap_in_use.clone(),
        );
        r.register(
            "cap_limit",
            "The total bound of a cap on long-lived work, by listener and cap",
            self.cap_limit.clone(),
        );
        r.register(
            "cap_refusals",
            "Requests refused with 429 by a cap on long-lived work, by listener, cap and scope (total, per_caller)",
            self.cap_refusals.clone(),
        );
        r.register(
            "tls_certificate_expiry_timestamp_seconds",
            "When the serving certificate of a TLS listener expires, in Unix seconds",
            self.tls_certificate_expiry.clone(),
        );
    }
}
