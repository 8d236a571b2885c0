//! Command-line flags. Every flag is documented once, here.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use kruntimes_dashboard::DashboardArgs;

use kruntimes_core::flags::DurationArg;
use kruntimes_core::limit::Reserve;
use kruntimes_transport::serve::ConnLimits;

/// The binary's other programs; without one it serves.
#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    /// Check an installation from inside the cluster (the chart's helm
    /// test): the APIService is Available, discovery of logs.kruntimes.io
    /// answers through kube-apiserver, and every ready Console Pod answers
    /// /ready. Exits non-zero with the reason otherwise.
    Check(CheckArgs),
    /// The Console on your own machine, with your kubeconfig identity: a proxy
    /// on a loopback address port-forwards (through kube-apiserver) to a ready
    /// Console Pod, verifies the Console's certificate against its CA, and adds
    /// your kubeconfig credential (token, exec plugin, or client certificate
    /// when the Console verifies client certificates) to the requests it
    /// forwards. The browser never receives the credential; it is not written
    /// to disk or logged.
    ///
    /// It serves only requests whose Host is its own address and port, and
    /// state-changing requests and WebSocket upgrades only from its own Origin;
    /// anything else is answered 403 and not forwarded.
    ///
    /// LOCAL DEVELOPMENT ONLY: this is not a production authentication mode.
    /// Anyone who can connect to the loopback port (any process of any user of
    /// this machine) acts with your credential.
    Dashboard(Box<DashboardArgs>),
}

/// kruntimes-console serves the aggregated Run-log API
/// (logs.kruntimes.io/v1alpha1, registered with kube-apiserver by an
/// APIService), the Console (web UI, /api and the /v1 Runtime access
/// handler) and an admin listener with probes and metrics.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "kruntimes-console",
    version = kruntimes_console_http::VERSION,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Traces: OpenTelemetry over OTLP http/protobuf, off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; OTEL_SERVICE_NAME (default kruntimes-console), OTEL_TRACES_SAMPLER(_ARG), OTEL_EXPORTER_OTLP_HEADERS/_TIMEOUT/_CERTIFICATE and OTEL_BSP_* apply (docs/operations.md, \"Traces\")."
)]
pub struct Args {
    /// Another program of the binary instead of the server.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Kubeconfig holding the Console's own (ServiceAccount) credentials.
    /// Without it the in-cluster configuration is used.
    #[arg(long, env = "KRUNTIMES_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// Address of the aggregated API listener (kube-apiserver proxies
    /// logs.kruntimes.io here).
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub apiserver_listen: SocketAddr,

    /// PEM serving certificate (chain) of the aggregated API listener.
    /// Re-read when the file changes.
    // Option only so that a subcommand parses without it; clap requires it
    // when the binary serves.
    #[arg(long, required = true)]
    pub apiserver_tls_cert: Option<PathBuf>,

    /// PEM private key of the aggregated API listener. Re-read when the file changes.
    #[arg(long, required = true)]
    pub apiserver_tls_key: Option<PathBuf>,

    /// Address of the Console listener: the web UI, /api and /v1.
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub console_listen: SocketAddr,

    /// PEM serving certificate of the Console listener (default: the
    /// aggregated listener's). Re-read when the file changes.
    #[arg(long)]
    pub console_tls_cert: Option<PathBuf>,

    /// PEM private key of the Console listener (default: the aggregated listener's).
    #[arg(long)]
    pub console_tls_key: Option<PathBuf>,

    /// PEM CA bundle whose client certificates authenticate on the Console
    /// listener (user from CN, groups from O). Re-read when the file changes.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,

    /// Key material that seals session cookies; share it between replicas.
    /// A file is one key (at least 32 bytes); a directory (a mounted Secret)
    /// holds one key per file, in name order, at most 16: the first seals,
    /// every one opens. Re-read every 5 s. Without it a random key is
    /// used and sessions end when the process does.
    #[arg(long)]
    pub cookie_key_file: Option<PathBuf>,

    /// Lifetime of a browser session. Signing out clears the cookie in the
    /// browser only: a copy stays valid until this runs out.
    #[arg(long, default_value = "1h")]
    pub session_ttl: DurationArg,

    /// Serve Run, Runtime and WorkflowRun list summaries (names, phases,
    /// runtimes, ages, counts) in a namespace the caller names to callers
    /// without credentials, read with the Console's own identity. The
    /// namespace list itself always needs a credential.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub public_read: bool,

    /// Address of the plain-HTTP admin listener: /metrics, /live, /ready.
    #[arg(long, default_value = "0.0.0.0:9090")]
    pub admin_listen: SocketAddr,

    /// How long a TokenReview result is reused (capped by the token's own expiry).
    #[arg(long, default_value = "10s")]
    pub authentication_cache_ttl: DurationArg,

    /// How long a SubjectAccessReview decision is reused; at most 30s.
    #[arg(long, default_value = "10s")]
    pub authorization_cache_ttl: DurationArg,

    /// Largest request target and header block accepted, in bytes.
    #[arg(long, default_value_t = 16 << 10)]
    pub max_header_bytes: usize,

    /// Idle connections to kube-apiserver kept for reuse, for the Console's
    /// own identity and for callers' reads each; a burst of concurrent reads
    /// (e.g. many follows opening) closes the rest when it is over.
    #[arg(long, default_value_t = 128)]
    pub kube_idle_connections: usize,

    /// PEM CA bundle that verifies Runtime gateways' serving certificates.
    /// Re-read when the file changes.
    #[arg(long)]
    pub gateway_ca_file: Option<PathBuf>,

    /// PEM client certificate the Console presents to Runtime gateways.
    /// Re-read (with its key) when the files change.
    #[arg(long)]
    pub gateway_client_cert: Option<PathBuf>,

    /// PEM private key of --gateway-client-cert.
    #[arg(long)]
    pub gateway_client_key: Option<PathBuf>,

    /// Name of the gateway Service port that serves /v1.
    #[arg(long, default_value = "https")]
    pub gateway_port_name: String,

    /// Largest /v1 request body; larger bodies get 413 and nothing is forwarded.
    #[arg(long, default_value_t = 1 << 20)]
    pub access_max_request_bytes: usize,

    /// Largest gateway response body relayed for an invoke.
    #[arg(long, default_value_t = 16 << 20)]
    pub access_max_response_bytes: usize,

    /// Largest WebSocket message relayed on operations:ws (either direction).
    #[arg(long, default_value_t = 1 << 20)]
    pub access_max_ws_message_bytes: usize,

    /// An operations:ws connection with no message either way for this long is closed.
    #[arg(long, default_value = "60s")]
    pub access_idle_timeout: DurationArg,

    /// Longest wait for a gateway's answer to an invoke.
    #[arg(long, default_value = "300s")]
    pub access_total_timeout: DurationArg,

    /// Longest wait for each step of reaching a gateway: looking up its
    /// name's addresses, connecting, the TLS handshake.
    #[arg(long, default_value = "5s")]
    pub access_connect_timeout: DurationArg,

    /// On SIGTERM, how long the process stays up not ready but still
    /// serving, so endpoints and kube-proxy move new connections to other
    /// replicas before it stops accepting.
    #[arg(long, default_value = "5s")]
    pub shutdown_delay: DurationArg,

    /// After the delay, how long open requests and streams may take to
    /// finish (follows end with a final Status line, operation sockets
    /// close with 1001) before the process exits anyway.
    #[arg(long, default_value = "25s")]
    pub shutdown_timeout: DurationArg,
    // Connection limits: every listener (aggregated API, Console, admin) enforces them.
    /// Longest TLS handshake; a connection that has not finished it by then is closed.
    #[arg(long, default_value = "10s")]
    pub tls_handshake_timeout: DurationArg,

    /// A connection that has not sent a complete first request header this
    /// long after it was accepted (after the TLS handshake) is closed.
    #[arg(long, default_value = "10s")]
    pub first_request_timeout: DurationArg,

    /// A connection with no request in flight for this long is closed
    /// (HTTP/1 keep-alive and HTTP/2). A follow or an upgraded WebSocket is
    /// never idle.
    #[arg(long, default_value = "90s")]
    pub connection_idle_timeout: DurationArg,

    /// A response the connection has not sent on for this long (the client
    /// stopped reading, or keeps its HTTP/2 flow-control window shut) ends
    /// its connection; seen within twice this. On every listener.
    #[arg(long, default_value = "60s")]
    pub send_timeout: DurationArg,

    /// After a connection is closed while its caller may still be sending
    /// (a refused body), how long what still arrives is read and dropped, so
    /// the caller reads the refusal instead of failing its next write on a
    /// reset. On every listener. 0s closes at once.
    #[arg(long, default_value = "2s")]
    pub linger_timeout: DurationArg,

    /// Interval of HTTP/2 keep-alive pings.
    #[arg(long, default_value = "30s")]
    pub http2_keepalive_interval: DurationArg,

    /// An HTTP/2 connection that does not answer a keep-alive ping within this is closed.
    #[arg(long, default_value = "10s")]
    pub http2_keepalive_timeout: DurationArg,

    /// Concurrent HTTP/2 streams per connection.
    #[arg(long, default_value_t = 100)]
    pub http2_max_concurrent_streams: u32,

    /// Open connections per listener; more are closed right after accept.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,

    /// Open requests per listener, across its connections (HTTP/2 streams,
    /// HTTP/1.1 requests not served by the invoke fast path); more are
    /// answered 503 with Retry-After. Bounds what many connections with many
    /// streams each can hold.
    #[arg(long, default_value_t = 16_384)]
    pub max_open_requests: usize,

    /// Open requests from one peer IP address on the Console and admin
    /// listeners; more are answered 503 with Retry-After.
    #[arg(long, default_value_t = 2_048)]
    pub max_open_requests_per_peer: usize,

    /// Threads serving the Console listener's connections, each with its own
    /// event loop, so a `/v1` call and its gateway connection stay on one
    /// thread; 0 serves them on the main runtime's workers. Default: the
    /// number of CPUs the process may use.
    #[arg(long)]
    pub console_threads: Option<usize>,

    /// Serve `/v1` invoke over HTTP/1.1 on the connection's own buffers,
    /// without hyper and the router, and over HTTP/2 through hyper without
    /// the router: the same checks, bounds, headers, metrics and access line
    /// at a fraction of the CPU per call. false: every request goes through
    /// the router.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub access_fast_path: bool,

    /// Open connections from one peer IP address on the Console and admin
    /// listeners; more are closed right after accept.
    #[arg(long, default_value_t = 256)]
    pub max_connections_per_peer: usize,

    /// Longest wait for a /v1 request body once the call is admitted
    /// (authenticated and authorized from its headers); then 408.
    #[arg(long, default_value = "30s")]
    pub access_body_timeout: DurationArg,

    /// Concurrent /v1 calls (invokes and open operations:ws sockets) in
    /// total; more get 429 with Retry-After.
    #[arg(long, default_value_t = 1024)]
    pub access_max_concurrent_calls: usize,

    /// Concurrent /v1 calls of one caller (user name); more get 429 with Retry-After.
    #[arg(long, default_value_t = 64)]
    pub access_max_concurrent_calls_per_caller: usize,

    /// Bytes held in memory at once for /v1 calls, across every caller:
    /// invoke bodies (read whole before they are forwarded; an announced
    /// length is reserved on admission) and operations:ws frames not yet
    /// whole or not yet written. An invoke that would pass it gets 429 with
    /// Retry-After; a socket is closed with 1013 (try again later).
    #[arg(long, default_value_t = 64 << 20)]
    pub access_max_buffered_bytes: usize,

    /// One caller's (user name's) share of --access-max-buffered-bytes, in
    /// all its calls; past it, as past the total.
    #[arg(long, default_value_t = 16 << 20)]
    pub access_max_buffered_bytes_per_caller: usize,

    /// Percent of each shared cap kept for light callers: the last places
    /// of --max-connections and --max-open-requests (on the Console and
    /// admin listeners; not on the aggregated API's), of
    /// --access-max-concurrent-calls and of --access-max-buffered-bytes go
    /// only to a caller (peer address, or user name for /v1) that holds at
    /// most a sixteenth of its own cap with them, so that callers filling
    /// their own caps from several addresses or names leave room for
    /// others. 0 keeps nothing.
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub reserve_for_light_callers: u8,

    /// Open log follows in total, on the aggregated API and on /api each;
    /// more get 429 with Retry-After.
    #[arg(long, default_value_t = 1024)]
    pub max_follows: usize,

    /// Open log follows of one caller (user name), on the aggregated API and
    /// on /api each; more get 429 with Retry-After.
    #[arg(long, default_value_t = 32)]
    pub max_follows_per_caller: usize,

    /// How far a node's clock may run behind kube-apiserver's: every Run-log
    /// read starts this long before the Run's startTime or creationTimestamp,
    /// whichever is later (no record of a Run is older than the Run).
    #[arg(long, default_value = "5s")]
    pub log_clock_skew: DurationArg,

    /// Records one Run-log follower may have waiting (read from the Pod log,
    /// not yet taken by the client); past this, or past
    /// --log-follower-buffer-bytes, the follow ends with a FellBehind Status
    /// line and the others go on.
    #[arg(long, default_value_t = kruntimes_apiserver::logs::handler::DEFAULT_FOLLOWER_BUFFER_RECORDS)]
    pub log_follower_buffer_records: usize,

    /// Bytes of NDJSON one Run-log follower may have waiting; see
    /// --log-follower-buffer-records.
    #[arg(long, default_value_t = kruntimes_apiserver::logs::handler::DEFAULT_FOLLOWER_BUFFER_BYTES)]
    pub log_follower_buffer_bytes: usize,

    /// How long the final line of a Run-log follow (a fallen-behind
    /// follower's FellBehind Status, or any other end) may wait for a client
    /// that does not read; then the answer is closed.
    #[arg(long, default_value = "10s")]
    pub log_follower_final_timeout: DurationArg,

    /// Reads of Pod logs (tails and follows' histories) open at once; more
    /// wait for a place. Each holds a connection to kube-apiserver and its
    /// buffers while it reads; a history streamed to a client that reads
    /// nothing for --log-follower-final-timeout gives its place up.
    #[arg(long, default_value_t = kruntimes_apiserver::logs::handler::DEFAULT_MAX_CONCURRENT_READS)]
    pub log_max_concurrent_reads: usize,

    /// Most bytes of a Pod log read to count the records before an answer
    /// that does not start at the Run's first record (the records' stable
    /// line numbers). Numbers of records already given out are remembered
    /// for 10 minutes, so paging on costs no count; past this bound the
    /// answer has no line numbers.
    #[arg(long, default_value_t = kruntimes_apiserver::logs::numbers::DEFAULT_MAX_BYTES)]
    pub log_numbering_max_bytes: u64,

    /// Read a running Run's live output from runtimed's status endpoint
    /// (gRPC Runtime.Status, plain HTTP/2) at the Runtime Pod's address
    /// while runtimed has written none of its records; the Console dials
    /// Pod addresses, so a NetworkPolicy that isolates Runtime Pods must
    /// admit it on --live-output-port (docs/security.md).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub live_output: bool,

    /// The port of runtimed's status endpoint on a Runtime Pod.
    #[arg(long, default_value_t = kruntimes_core::runtimed::DEFAULT_STATUS_PORT)]
    pub live_output_port: u16,

    /// How often a follow of a running Run asks runtimed for new output.
    #[arg(long, default_value = "500ms")]
    pub live_output_poll_interval: DurationArg,

    /// Bounds one call to runtimed's status endpoint: connecting, the
    /// request and the whole answer.
    #[arg(long, default_value = "3s")]
    pub live_output_timeout: DurationArg,

    /// The largest answer read from runtimed's status endpoint (both
    /// streams of a Run's output so far); a larger one is refused.
    #[arg(long, default_value_t = kruntimes_apiserver::logs::live::DEFAULT_MAX_BYTES)]
    pub live_output_max_bytes: usize,

    /// Dial loopback Pod addresses too: only for development environments
    /// whose Runtime Pods are simulated on this host, never in a cluster.
    #[arg(long, default_value_t = false, hide = true)]
    pub live_output_allow_loopback: bool,
    /// Open /api watch streams (live lists and details) in total; each holds
    /// one Kubernetes watch per kind it follows. More get 429 with Retry-After.
    #[arg(long, default_value_t = 512)]
    pub max_watches: usize,

    /// Open /api watch streams of one caller (user name); more get 429 with
    /// Retry-After.
    #[arg(long, default_value_t = 8)]
    pub max_watches_per_caller: usize,

    /// Open connections from one peer IP address on the aggregated API
    /// listener. kube-apiserver's aggregator brings every caller's request
    /// from its own address, so this is high.
    #[arg(long, default_value_t = 4096)]
    pub apiserver_max_connections_per_peer: usize,

    /// Open requests from one peer IP address on the aggregated API
    /// listener (kube-apiserver's aggregator multiplexes every caller's
    /// follows on its connections, so this is high).
    #[arg(long, default_value_t = 16_384)]
    pub apiserver_max_open_requests_per_peer: usize,

    /// Log format: json or text.
    #[arg(long, default_value = "json", value_parser = ["json", "text"])]
    pub log_format: String,
}

impl Args {
    /// The Console listener's connection limits (its per-peer caps).
    pub fn console_limits(&self) -> ConnLimits {
        self.conn_limits(
            self.max_connections_per_peer,
            self.max_open_requests_per_peer,
        )
    }

    /// The reserve of the `/v1` byte budget: a light caller holds a
    /// sixteenth of its share, and at least one largest body or message
    /// with room for its frame header and output buffer, so that it can
    /// still send one from the reserve.
    pub fn buffer_reserve(&self) -> Reserve {
        let mut r = Reserve::share(
            self.access_max_buffered_bytes,
            self.access_max_buffered_bytes_per_caller,
            self.reserve_for_light_callers,
        );
        let largest = self
            .access_max_request_bytes
            .max(self.access_max_ws_message_bytes);
        r.light = r.light.max(largest.saturating_add(64 << 10));
        r
    }

    /// The aggregated API listener's connection limits (its per-peer caps,
    /// and no reserve: every caller arrives through kube-apiserver's few
    /// addresses, which the reserve would hold to part of the caps).
    pub fn apiserver_limits(&self) -> ConnLimits {
        ConnLimits {
            reserve_percent: 0,
            ..self.conn_limits(
                self.apiserver_max_connections_per_peer,
                self.apiserver_max_open_requests_per_peer,
            )
        }
    }

    /// The connection limits of a listener whose per-peer caps are
    /// `per_peer` connections and `per_peer_requests` open requests.
    fn conn_limits(&self, per_peer: usize, per_peer_requests: usize) -> ConnLimits {
        let drain_timeout = self.shutdown_timeout.into();
        ConnLimits {
            handshake_timeout: self.tls_handshake_timeout.into(),
            first_request_timeout: self.first_request_timeout.into(),
            idle_timeout: self.connection_idle_timeout.into(),
            h2_keepalive_interval: self.http2_keepalive_interval.into(),
            h2_keepalive_timeout: self.http2_keepalive_timeout.into(),
            h2_max_concurrent_streams: self.http2_max_concurrent_streams,
            max_connections: self.max_connections,
            max_connections_per_peer: per_peer,
            max_open_requests: self.max_open_requests,
            max_open_requests_per_peer: per_peer_requests,
            // The transport allows twice the bound so the Console can answer 431 itself.
            max_header_bytes: self.max_header_bytes * 2,
            drain_timeout,
            send_timeout: self.send_timeout.into(),
            linger_timeout: self.linger_timeout.into(),
            reserve_percent: self.reserve_for_light_callers,
        }
    }

    /// The Run-log reader's bounds.
    pub fn log_limits(&self) -> kruntimes_apiserver::logs::handler::LogLimits {
        kruntimes_apiserver::logs::handler::LogLimits {
            clock_skew_secs: i64::try_from(self.log_clock_skew.0.as_secs()).unwrap_or(i64::MAX),
            follower_buffer_records: self.log_follower_buffer_records,
            follower_buffer_bytes: self.log_follower_buffer_bytes,
            follower_final_timeout: self.log_follower_final_timeout.into(),
            max_concurrent_reads: self.log_max_concurrent_reads,
            numbering_max_bytes: self.log_numbering_max_bytes,
        }
    }

    /// How live output is read from runtimed's status endpoint.
    pub fn live_output(&self) -> kruntimes_apiserver::logs::live::LiveConfig {
        kruntimes_apiserver::logs::live::LiveConfig {
            enabled: self.live_output,
            port: self.live_output_port,
            poll_interval: self.live_output_poll_interval.into(),
            timeout: self.live_output_timeout.into(),
            max_bytes: self.live_output_max_bytes,
            allow_loopback: self.live_output_allow_loopback,
        }
    }

    /// Checks combinations clap cannot.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.authorization_cache_ttl.0 > std::time::Duration::from_secs(30) {
            anyhow::bail!("--authorization-cache-ttl must be at most 30s");
        }
        for (flag, value) in [
            ("--max-connections", self.max_connections),
            ("--max-open-requests", self.max_open_requests),
            (
                "--max-open-requests-per-peer",
                self.max_open_requests_per_peer,
            ),
            (
                "--apiserver-max-open-requests-per-peer",
                self.apiserver_max_open_requests_per_peer,
            ),
            ("--max-follows", self.max_follows),
            ("--max-follows-per-caller", self.max_follows_per_caller),
            ("--log-max-concurrent-reads", self.log_max_concurrent_reads),
            ("--live-output-max-bytes", self.live_output_max_bytes),
            ("--live-output-port", usize::from(self.live_output_port)),
            ("--max-watches", self.max_watches),
            ("--max-watches-per-caller", self.max_watches_per_caller),
            (
                "--log-follower-buffer-records",
                self.log_follower_buffer_records,
            ),
            (
                "--log-follower-buffer-bytes",
                self.log_follower_buffer_bytes,
            ),
            (
                "--access-max-concurrent-calls",
                self.access_max_concurrent_calls,
            ),
            (
                "--access-max-concurrent-calls-per-caller",
                self.access_max_concurrent_calls_per_caller,
            ),
            (
                "--access-max-buffered-bytes",
                self.access_max_buffered_bytes,
            ),
            (
                "--access-max-buffered-bytes-per-caller",
                self.access_max_buffered_bytes_per_caller,
            ),
            ("--max-connections-per-peer", self.max_connections_per_peer),
            (
                "--apiserver-max-connections-per-peer",
                self.apiserver_max_connections_per_peer,
            ),
            (
                "--http2-max-concurrent-streams",
                self.http2_max_concurrent_streams as usize,
            ),
        ] {
            if value == 0 {
                anyhow::bail!("{flag} must be at least 1");
            }
        }
        for (flag, value) in [
            ("--tls-handshake-timeout", self.tls_handshake_timeout),
            ("--access-body-timeout", self.access_body_timeout),
            ("--first-request-timeout", self.first_request_timeout),
            ("--connection-idle-timeout", self.connection_idle_timeout),
            ("--send-timeout", self.send_timeout),
            ("--http2-keepalive-interval", self.http2_keepalive_interval),
            ("--http2-keepalive-timeout", self.http2_keepalive_timeout),
            (
                "--log-follower-final-timeout",
                self.log_follower_final_timeout,
            ),
            (
                "--live-output-poll-interval",
                self.live_output_poll_interval,
            ),
            ("--live-output-timeout", self.live_output_timeout),
        ] {
            if value.0.is_zero() {
                anyhow::bail!("{flag} must be longer than 0s");
            }
        }
        if self.max_header_bytes < 1024 {
            anyhow::bail!("--max-header-bytes must be at least 1024");
        }
        Ok(())
    }
}

/// Checks an installation: the APIService is Available, discovery of
/// logs.kruntimes.io answers through kube-apiserver, and every ready Console
/// Pod answers /ready. Exits non-zero with the reason otherwise.
#[derive(Clone, Debug, clap::Args)]
pub struct CheckArgs {
    /// Kubeconfig to use; without it the in-cluster configuration.
    #[arg(long, env = "KRUNTIMES_KUBECONFIG")]
    pub kubeconfig: Option<std::path::PathBuf>,

    /// Namespace of the Console Service.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kruntimes-system")]
    pub namespace: String,

    /// Name of the Console Service.
    #[arg(long, default_value = "kruntimes-console")]
    pub service: String,

    /// Name of the APIService.
    #[arg(long, default_value = "v1alpha1.logs.kruntimes.io")]
    pub apiservice: String,

    /// Port of the Pods' admin listener (/ready).
    #[arg(long, default_value_t = 9090)]
    pub admin_port: u16,

    /// How long to keep retrying before giving up.
    #[arg(long, default_value = "60s")]
    pub timeout: DurationArg,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Result<Args, String> {
        Args::try_parse_from(argv).map_err(|e| e.to_string())
    }

    #[test]
    fn the_subcommands_parse_without_the_servers_required_flags() {
        let check = parse(&["kruntimes-console", "check"]).unwrap();
        assert!(matches!(check.command, Some(Command::Check(_))));
        let dashboard = parse(&["kruntimes-console", "dashboard", "--port", "0"]).unwrap();
        match dashboard.command {
            Some(Command::Dashboard(d)) => assert_eq!(d.port, 0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_server_requires_its_serving_certificate() {
        let err = parse(&["kruntimes-console"]).unwrap_err();
        assert!(err.contains("--apiserver-tls-cert"), "{err}");
        let err = parse(&["kruntimes-console", "--apiserver-tls-cert", "c.pem"]).unwrap_err();
        assert!(err.contains("--apiserver-tls-key"), "{err}");
        let args = parse(&[
            "kruntimes-console",
            "--apiserver-tls-cert",
            "c.pem",
            "--apiserver-tls-key",
            "k.pem",
        ])
        .unwrap();
        assert!(args.command.is_none());
        assert_eq!(args.apiserver_tls_cert, Some(PathBuf::from("c.pem")));
    }

    /// Every connection flag reaches the listeners' limits, and each
    /// listener gets its own per-peer caps (the accept loop's tests in
    /// transport/src/serve.rs show what each limit does).
    #[test]
    fn connection_flags_become_the_listeners_limits() {
        let args = parse(&[
            "kruntimes-console",
            "--apiserver-tls-cert=c.pem",
            "--apiserver-tls-key=k.pem",
            "--tls-handshake-timeout=1s",
            "--first-request-timeout=2s",
            "--connection-idle-timeout=3s",
            "--send-timeout=4s",
            "--linger-timeout=15s",
            "--reserve-for-light-callers=16",
            "--http2-keepalive-interval=5s",
            "--http2-keepalive-timeout=6s",
            "--http2-max-concurrent-streams=7",
            "--max-connections=8",
            "--max-connections-per-peer=9",
            "--apiserver-max-connections-per-peer=10",
            "--max-open-requests=11",
            "--max-open-requests-per-peer=12",
            "--apiserver-max-open-requests-per-peer=13",
            "--max-header-bytes=2048",
            "--shutdown-timeout=14s",
        ])
        .unwrap();
        args.validate().unwrap();
        let s = std::time::Duration::from_secs;
        let (console, api) = (args.console_limits(), args.apiserver_limits());
        for l in [&console, &api] {
            assert_eq!(l.handshake_timeout, s(1));
            assert_eq!(l.first_request_timeout, s(2));
            assert_eq!(l.idle_timeout, s(3));
            assert_eq!(l.send_timeout, s(4));
            assert_eq!(l.linger_timeout, s(15));
            assert_eq!(l.h2_keepalive_interval, s(5));
            assert_eq!(l.h2_keepalive_timeout, s(6));
            assert_eq!(l.h2_max_concurrent_streams, 7);
            assert_eq!(l.max_connections, 8);
            assert_eq!(l.max_open_requests, 11);
            // Twice the bound, so that the Console answers 431 itself.
            assert_eq!(l.max_header_bytes, 4096);
            assert_eq!(l.drain_timeout, s(14));
        }
        assert_eq!(
            (
                console.max_connections_per_peer,
                console.max_open_requests_per_peer
            ),
            (9, 12)
        );
        assert_eq!(
            (api.max_connections_per_peer, api.max_open_requests_per_peer),
            (10, 13)
        );
        assert_eq!((console.reserve_percent, api.reserve_percent), (16, 0));
        // A light caller of the byte budget can still send one largest
        // message or body (1 MiB) from the reserve.
        let bytes = args.buffer_reserve();
        assert_eq!(bytes.places, (64 << 20) * 16 / 100);
        assert_eq!(bytes.light, (1 << 20) + (64 << 10));
        let zero = parse(&[
            "kruntimes-console",
            "--apiserver-tls-cert=c.pem",
            "--apiserver-tls-key=k.pem",
            "--max-open-requests-per-peer=0",
        ])
        .unwrap();
        let err = zero.validate().unwrap_err().to_string();
        assert!(err.contains("--max-open-requests-per-peer"), "{err}");
    }
}
