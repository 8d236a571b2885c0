//! Prometheus metrics of the server, one registry for both listeners.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::guard::OnDrop;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub listener: &'static str,
    pub route: &'static str,
    pub code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub listener: &'static str,
    pub route: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ListenerLabels {
    pub listener: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConnRefusalLabels {
    pub listener: &'static str,
    /// The cap that refused: `max_connections` or `max_connections_per_peer`.
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub result: &'static str,
}

/// Every metric the server exports.
#[derive(Clone)]
pub struct Metrics {
    pub requests: Family<RequestLabels, Counter>,
    pub request_seconds: Family<RouteLabels, Histogram>,
    pub token_reviews: Family<ResultLabels, Counter>,
    pub token_review_cache_hits: Counter,
    pub access_reviews: Family<ResultLabels, Counter>,
    pub access_review_cache_hits: Counter,
    pub follow_streams: Gauge,
    /// Open upstream `pods/log` follow streams (one per followed Pod).
    pub log_upstream_streams: Gauge,
    /// Followers attached to an upstream stream.
    pub log_followers: Gauge,
    pub log_bytes_read: Counter,
    /// Calls to runtimed's status endpoint for live output, by result.
    pub log_live_reads: Family<ResultLabels, Counter>,
    pub connections_open: Family<ListenerLabels, Gauge>,
    pub connections_refused: Family<ConnRefusalLabels, Counter>,
    /// Requests served by a listener's HTTP/1.1 fast path (`/v1` invoke).
    pub fast_path_requests: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 16))
            }),
            token_reviews: Family::default(),
            token_review_cache_hits: Counter::default(),
            access_reviews: Family::default(),
            access_review_cache_hits: Counter::default(),
            follow_streams: Gauge::default(),
            log_upstream_streams: Gauge::default(),
            log_followers: Gauge::default(),
            log_bytes_read: Counter::default(),
            log_live_reads: Family::default(),
            connections_open: Family::default(),
            connections_refused: Family::default(),
            fast_path_requests: Counter::default(),
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
            "log_bytes_read",
            "Bytes of Pod log read to answer runs/log",
            self.log_bytes_read.clone(),
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
            "fast_path_requests",
            "Requests served by the Console listener's HTTP/1.1 fast path (/v1 invoke), also counted in http_requests",
            self.fast_path_requests.clone(),
        );
    }
}
