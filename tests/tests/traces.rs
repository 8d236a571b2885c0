//! OpenTelemetry traces end to end: a real Jaeger (built from hack/jaeger,
//! OTLP receiver, in-memory storage, query API on loopback), a Console of
//! its own exporting to it through the `OTEL_EXPORTER_OTLP_*` variables, the
//! real control plane and the fake Runtime gateway. Each call carries a
//! caller `traceparent`; its trace is read back from Jaeger's query API.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kruntimes_tests::curl::{self, Body, bearer};
use kruntimes_tests::env::{
    ConsoleProcess, Fixtures, env, free_port, gateway_requests, header_values, log_path, repo_root,
    unique,
};
use serde_json::{Value, json};

/// Jaeger's binary: `$KRT_JAEGER` (hack/test builds it first), else built
/// here through hack/lib/gobuild.sh (once per pin, then cached).
fn jaeger_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("KRT_JAEGER") {
        return PathBuf::from(bin);
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(
            "source hack/lib/gobuild.sh && \
             gobuild_cached jaeger jaeger github.com/jaegertracing/jaeger/cmd/jaeger",
        )
        .current_dir(repo_root())
        .stderr(Stdio::inherit())
        .output()
        .expect("running hack/lib/gobuild.sh");
    assert!(out.status.success(), "building Jaeger failed");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A Jaeger process of this test's own.
struct Jaeger {
    child: Child,
    otlp: u16,
    query: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Jaeger {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (otlp, query, query_grpc) = (free_port(), free_port(), free_port());
        let config = format!(
            "service:\n\
             \x20 extensions: [jaeger_storage, jaeger_query]\n\
             \x20 pipelines:\n\
             \x20   traces:\n\
             \x20     receivers: [otlp]\n\
             \x20     processors: [batch]\n\
             \x20     exporters: [jaeger_storage_exporter]\n\
             \x20 telemetry:\n\
             \x20   metrics:\n\
             \x20     level: none\n\
             \x20   logs:\n\
             \x20     level: warn\n\
             extensions:\n\
             \x20 jaeger_query:\n\
             \x20   storage:\n\
             \x20     traces: memstore\n\
             \x20   http:\n\
             \x20     endpoint: 127.0.0.1:{query}\n\
             \x20   grpc:\n\
             \x20     endpoint: 127.0.0.1:{query_grpc}\n\
             \x20 jaeger_storage:\n\
             \x20   backends:\n\
             \x20     memstore:\n\
             \x20       memory:\n\
             \x20         max_traces: 10000\n\
             receivers:\n\
             \x20 otlp:\n\
             \x20   protocols:\n\
             \x20     http:\n\
             \x20       endpoint: 127.0.0.1:{otlp}\n\
             processors:\n\
             \x20 batch:\n\
             \x20   timeout: 100ms\n\
             exporters:\n\
             \x20 jaeger_storage_exporter:\n\
             \x20   trace_storage: memstore\n"
        );
        let path = dir.path().join("jaeger.yaml");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("jaeger.log")).unwrap();
        let child = Command::new(jaeger_bin())
            .arg("--config")
            .arg(&path)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting Jaeger");
        let mut j = Jaeger {
            child,
            otlp,
            query,
            _dir: dir,
        };
        for _ in 0..300 {
            if env().curl(&j.url("/api/services"), &[]).0 == 200 {
                return j;
            }
            if let Ok(Some(status)) = j.child.try_wait() {
                panic!(
                    "Jaeger exited ({status}): {}",
                    std::fs::read_to_string(j._dir.path().join("jaeger.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "Jaeger's query API did not answer: {}",
            std::fs::read_to_string(j._dir.path().join("jaeger.log")).unwrap_or_default()
        );
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.query)
    }

    /// The trace `id` once it holds the request's span and `done` holds for
    /// its spans; fails after 30 s.
    fn trace(&self, id: &str, done: impl Fn(&Trace) -> bool) -> (Trace, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last: String;
        loop {
            let (code, body) = env().curl(&self.url(&format!("/api/traces/{id}")), &[]);
            if code == 200
                && let Ok(v) = serde_json::from_str::<Value>(&body)
                && let Some(t) = v["data"].get(0)
            {
                let t = Trace(t.clone());
                // The request's own span ends last (after its answer's body)
                // and may be exported in a later batch than its children:
                // a trace is read once it holds it too.
                if !server_spans(&t).is_empty() && done(&t) {
                    return (t, body);
                }
            }
            last = format!("{code} {body}");
            assert!(
                Instant::now() < deadline,
                "trace {id} never held the expected spans: {last}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// One trace as Jaeger's query API returns it.
struct Trace(Value);

impl Trace {
    fn spans(&self) -> &[Value] {
        self.0["spans"].as_array().map(Vec::as_slice).unwrap_or(&[])
    }

    fn named(&self, operation: &str) -> Vec<&Value> {
        self.spans()
            .iter()
            .filter(|s| s["operationName"] == operation)
            .collect()
    }

    fn service_of(&self, span: &Value) -> String {
        let p = span["processID"].as_str().unwrap_or_default();
        self.0["processes"][p]["serviceName"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

fn tag<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["tags"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .map(|t| &t["value"])
}

/// The span ID `span` is a child of (within its trace).
fn parent(span: &Value) -> Option<&str> {
    span["references"]
        .as_array()?
        .iter()
        .find(|r| r["refType"] == "CHILD_OF")?
        .get("spanID")?
        .as_str()
}

fn id(span: &Value) -> &str {
    span["spanID"].as_str().unwrap_or_default()
}

/// Is `span` a descendant of `ancestor` in `t`?
fn descends(t: &Trace, span: &Value, ancestor: &str) -> bool {
    let mut at = parent(span).map(str::to_owned);
    for _ in 0..16 {
        match at {
            Some(p) if p == ancestor => return true,
            Some(p) => {
                at = t
                    .spans()
                    .iter()
                    .find(|s| id(s) == p)
                    .and_then(parent)
                    .map(str::to_owned)
            }
            None => return false,
        }
    }
    false
}

/// A random trace ID and parent span ID of a caller.
fn caller_ids() -> (String, String) {
    let n = unique("t");
    let digest = |s: &str| {
        use std::hash::{BuildHasher, RandomState};
        format!("{:016x}", RandomState::new().hash_one(s))
    };
    (format!("{}{}", digest(&n), digest(&n)), digest(&n))
}

/// The trace's server spans: a request's own.
fn server_spans(t: &Trace) -> Vec<&Value> {
    t.spans()
        .iter()
        .filter(|s| tag(s, "span.kind").and_then(Value::as_str) == Some("server"))
        .collect()
}

/// The request span: the server span whose parent is the caller's span.
fn request_span<'a>(t: &'a Trace, route: &str, caller_span: &str) -> &'a Value {
    let spans = server_spans(t);
    assert_eq!(spans.len(), 1, "one request span: {:#}", t.0);
    let s = spans[0];
    assert_eq!(
        tag(s, "http.route").and_then(Value::as_str),
        Some(route),
        "the request span carries its route template: {s:#}"
    );
    assert_eq!(
        parent(s),
        Some(caller_span),
        "the request span is the caller's span's child: {s:#}"
    );
    assert_eq!(t.service_of(s), "kruntimes-console");
    s
}

/// Fails when any test token appears anywhere in `body`.
fn no_token_in(body: &str, what: &str) {
    for token in env().all_tokens() {
        assert!(!body.contains(&token), "a token appears in {what}");
    }
}

/// The trace of `/v1` invokes over HTTP/2 (the router) and HTTP/1.1 (the
/// fast path) and of a Run-log read: the caller's trace ID, the request
/// span with its route, the SubjectAccessReview, gateway and Pod-log read
/// children, the gateway's `traceparent` naming the gateway call's span,
/// and no token anywhere in the traces.
#[tokio::test]
async fn requests_are_traced_with_their_calls_as_children() {
    let jaeger = Jaeger::start();
    let e = env();
    let fx = Fixtures::new("team-a").await;
    let name = unique("traced");
    let uid = fx.create_run(&name, "bash", "function", json!({})).await;
    fx.set_run_status(&name, json!({"phase": "Ready"})).await;
    let logged = fx.logged_run("traced-log", "hello traces").await;

    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", jaeger.otlp);
    let console = ConsoleProcess::start_with_env(
        dir.path(),
        &[
            format!("--gateway-ca-file={}", e.pki("gateway-ca.crt").display()),
            format!("--gateway-client-cert={}", e.pki("console.crt").display()),
            format!("--gateway-client-key={}", e.pki("console.key").display()),
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let url = format!(
        "https://127.0.0.1:{}/v1/namespaces/team-a/runs/{name}/{uid}/invoke",
        console.console_port
    );
    let invoke = |version: &str, token: &str, traceparent: &str, inv: &str| {
        curl::request_as(
            Some(version),
            "POST",
            &url,
            &[
                ("Authorization", token),
                ("traceparent", traceparent),
                ("tracestate", "krt=test"),
                ("x-kruntime-invocation-id", inv),
            ],
            Body::Raw("{}"),
        )
    };
    // The Console's Run cache holds the Run (warmed as admin, so the
    // operator's first call below still reviews its access).
    let mut last = String::new();
    let warm = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for _ in 0..150 {
        let r = invoke("2", &bearer("admin"), warm, &unique("warm"));
        if r.code == 200 {
            break;
        }
        last = format!("{} {}", r.code, r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        invoke("2", &bearer("admin"), warm, &unique("warm")).code,
        200,
        "never invocable: {last}"
    );

    // 1. /v1 over HTTP/2: the router.
    let (trace_id, caller_span) = caller_ids();
    let inv = unique("inv");
    let r = invoke(
        "2",
        &bearer("operator"),
        &format!("00-{trace_id}-{caller_span}-01"),
        &inv,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let (t, body) = jaeger.trace(&trace_id, |t| {
        !t.named("Runtime gateway POST").is_empty() && !t.named("kube-apiserver POST").is_empty()
    });
    let route = "/v1/namespaces/{ns}/runs/{name}/{uid}/invoke";
    let req = request_span(&t, route, &caller_span);
    assert_eq!(
        tag(req, "http.response.status_code").and_then(Value::as_i64),
        Some(200)
    );
    let reviews: Vec<&Value> = t
        .named("kube-apiserver POST")
        .into_iter()
        .filter(|s| {
            tag(s, "url.path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.ends_with("/subjectaccessreviews"))
        })
        .collect();
    assert!(
        !reviews.is_empty(),
        "a SubjectAccessReview child: {:#}",
        t.0
    );
    assert!(reviews.iter().all(|s| descends(&t, s, id(req))));
    let gw = t.named("Runtime gateway POST");
    assert_eq!(gw.len(), 1, "{:#}", t.0);
    assert_eq!(parent(gw[0]), Some(id(req)), "the gateway call is a child");
    no_token_in(&body, "the router call's trace");
    // The gateway received a traceparent of the same trace, naming the gateway call.
    let seen = gateway_requests(&name)
        .into_iter()
        .find(|q| header_values(q, "x-kruntime-invocation-id") == [inv.clone()])
        .expect("the gateway recorded the call");
    assert_eq!(
        header_values(&seen, "traceparent"),
        [format!("00-{trace_id}-{}-01", id(gw[0]))],
        "the gateway's traceparent names the gateway call's span"
    );
    assert_eq!(header_values(&seen, "tracestate"), ["krt=test"]);

    // 2. /v1 over HTTP/1.1: the fast path.
    let (trace_id, caller_span) = caller_ids();
    let inv = unique("inv");
    let r = invoke(
        "1.1",
        &bearer("operator"),
        &format!("00-{trace_id}-{caller_span}-01"),
        &inv,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let (t, body) = jaeger.trace(&trace_id, |t| !t.named("Runtime gateway POST").is_empty());
    let req = request_span(&t, route, &caller_span);
    let gw = t.named("Runtime gateway POST");
    assert_eq!(gw.len(), 1, "{:#}", t.0);
    assert_eq!(parent(gw[0]), Some(id(req)), "the gateway call is a child");
    no_token_in(&body, "the fast path call's trace");
    let seen = gateway_requests(&name)
        .into_iter()
        .find(|q| header_values(q, "x-kruntime-invocation-id") == [inv.clone()])
        .expect("the gateway recorded the call");
    assert_eq!(
        header_values(&seen, "traceparent"),
        [format!("00-{trace_id}-{}-01", id(gw[0]))],
        "the gateway's traceparent names the gateway call's span"
    );
    assert!(
        console.metric("kruntimes_console_fast_path_requests_total") >= Some(1.0),
        "the HTTP/1.1 call took the fast path"
    );

    // 3. A Run's log through the aggregated API.
    let (trace_id, caller_span) = caller_ids();
    let log_url = format!(
        "https://127.0.0.1:{}{}",
        console.api_port,
        log_path("team-a", &logged.run, "")
    );
    let r = curl::request(
        "GET",
        &log_url,
        &[
            ("Authorization", &bearer("admin")),
            ("traceparent", &format!("00-{trace_id}-{caller_span}-01")),
        ],
        Body::None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body.contains("hello traces"), "{}", r.body);
    let (t, body) = jaeger.trace(&trace_id, |t| {
        !t.named("Pod log read").is_empty() && !t.named("kube-apiserver GET").is_empty()
    });
    let req = request_span(
        &t,
        "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{name}/log",
        &caller_span,
    );
    let reads = t.named("Pod log read");
    assert!(reads.iter().all(|s| descends(&t, s, id(req))));
    assert!(
        reads
            .iter()
            .all(|s| tag(s, "k8s.pod.name").and_then(Value::as_str) == Some(&logged.pod)),
        "{:#}",
        t.0
    );
    let pod_log = format!("/pods/{}/log", logged.pod);
    let log_calls: Vec<&Value> = t
        .named("kube-apiserver GET")
        .into_iter()
        .filter(|s| {
            tag(s, "url.path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.ends_with(&pod_log))
        })
        .collect();
    assert!(
        !log_calls.is_empty(),
        "the Pod log call to kube-apiserver: {:#}",
        t.0
    );
    assert!(
        log_calls
            .iter()
            .all(|s| reads.iter().any(|r| parent(s) == Some(id(r)))),
        "each Pod log call is a child of a Pod log read"
    );
    no_token_in(&body, "the log read's trace");

    // No token in any trace the Console sent (the warm-up calls included).
    let (code, all) = env().curl(
        &jaeger.url("/api/traces?service=kruntimes-console&limit=1000&lookback=1h"),
        &[],
    );
    assert_eq!(code, 200, "{all}");
    no_token_in(&all, "the Console's traces");
    drop(console);
}

/// A malformed or oversize `traceparent` is ignored, not an error: the
/// call succeeds and its trace is a new one, not the caller's.
#[tokio::test]
async fn a_malformed_traceparent_is_ignored() {
    let jaeger = Jaeger::start();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", jaeger.otlp);
    let console = ConsoleProcess::start_with_env(
        dir.path(),
        &[],
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{endpoint}/v1/traces"),
            ),
            ("OTEL_SERVICE_NAME", "krt-traces-malformed"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let url = format!("https://127.0.0.1:{}/api/namespaces", console.console_port);
    let long = format!("00-{}-{}-01", "a".repeat(32), "b".repeat(300));
    for bad in [
        "00-ZZf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        long.as_str(),
    ] {
        let r = curl::request(
            "GET",
            &url,
            &[("Authorization", &bearer("viewer")), ("traceparent", bad)],
            Body::None,
        );
        assert_eq!(r.code, 200, "{bad}: {}", r.body);
    }
    // The calls are traced under the configured service name, as new traces.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = env().curl(
            &jaeger.url("/api/traces?service=krt-traces-malformed&limit=100&lookback=1h"),
            &[],
        );
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        let traces = v["data"].as_array().cloned().unwrap_or_default();
        let requests: Vec<&Value> = traces
            .iter()
            .flat_map(|t| t["spans"].as_array().into_iter().flatten())
            .filter(|s| tag(s, "http.route").and_then(Value::as_str) == Some("/api/namespaces"))
            .collect();
        if code == 200 && requests.len() >= 3 {
            for s in &requests {
                assert!(
                    parent(s).is_none(),
                    "a malformed traceparent became a parent: {s:#}"
                );
                assert_ne!(s["traceID"], "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
            }
            no_token_in(&body, "the traces");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the calls were never traced: {code} {body}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}
