//! The shared test environment: a real control plane from `hack/testenv`.
//!
//! When `hack/test` (or a developer) has already run `hack/testenv up
//! --with-console` and exported its variables, the tests use that
//! environment; otherwise the first test of a binary starts one under
//! `target/testenv` (reused by later runs, stopped by `hack/testenv down`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Cargo's folder of debug binaries: `target/debug`, or `debug` under
/// `CARGO_TARGET_DIR` when that is set. `hack/testenv` builds the Console
/// and the fake kubelet and gateway there, with the same `CARGO_TARGET_DIR`.
pub fn bin_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| repo_root().join(d))
        .unwrap_or_else(|| repo_root().join("target"))
        .join("debug")
}

/// Cargo's folder of intermediate debug artifacts (its build directory,
/// `.cargo/config.toml`'s `build-dir`, outside the clone): the folder of
/// this test binary's own folder (`deps`), with the build scripts' output
/// under `build`.
pub fn build_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| repo_root().join("target/debug"))
}

/// Waits until the wall clock reads a later whole second than when called:
/// what was written before the call then carries an earlier second than
/// anything written after it (timestamps with whole seconds, such as a
/// Run's completionTime). Half a second on average, never more than one.
pub async fn into_a_later_second() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let left = std::time::Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()));
    // A few milliseconds past the boundary, for clocks read a little apart.
    tokio::time::sleep(left + std::time::Duration::from_millis(20)).await;
}

/// Variables printed by `hack/testenv up`.
#[derive(Debug)]
pub struct TestEnv {
    vars: BTreeMap<String, String>,
}

static ENV: OnceLock<TestEnv> = OnceLock::new();

pub fn parse_exports(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The environment shared by every test of this binary.
pub fn env() -> &'static TestEnv {
    ENV.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let (Ok(state), Ok(_)) = (std::env::var("TESTENV_STATE"), std::env::var("CONSOLE_URL")) {
            let text = std::fs::read_to_string(Path::new(&state).join("env.sh"))
                .expect("reading $TESTENV_STATE/env.sh");
            return TestEnv {
                vars: parse_exports(&text),
            };
        }
        let state = repo_root().join("target/testenv");
        let out = Command::new(repo_root().join("hack/testenv"))
            .args(["up", "--with-console", "--state"])
            .arg(&state)
            .stderr(Stdio::inherit())
            .output()
            .expect("running hack/testenv up");
        assert!(out.status.success(), "hack/testenv up failed");
        TestEnv {
            vars: parse_exports(&String::from_utf8_lossy(&out.stdout)),
        }
    })
}

impl TestEnv {
    /// A variable of the environment (panics when missing: the environment is broken).
    pub fn var(&self, name: &str) -> &str {
        self.vars
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("testenv did not export {name}"))
    }

    pub fn state(&self) -> PathBuf {
        PathBuf::from(self.var("TESTENV_STATE"))
    }

    pub fn pki(&self, file: &str) -> PathBuf {
        self.state().join("pki").join(file)
    }

    /// The static token of a test user: admin, viewer, operator, outsider.
    pub fn token(&self, user: &str) -> &str {
        self.var(&format!("TESTENV_TOKEN_{}", user.to_ascii_uppercase()))
    }

    /// Every test token, for leak checks.
    pub fn all_tokens(&self) -> Vec<String> {
        ["admin", "viewer", "operator", "outsider"]
            .iter()
            .map(|u| self.token(u).to_owned())
            .collect()
    }

    /// An admin client (for setting up fixtures).
    pub async fn admin(&self) -> Client {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(self.var("KUBECONFIG")).expect("admin kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .expect("admin config");
        Client::try_from(config).expect("admin client")
    }

    /// `kubectl` against the control plane as the holder of `token` (none: no credential).
    pub fn kubectl(&self, token: Option<&str>, args: &[&str]) -> Output {
        self.kubectl_command(token, args)
            .output()
            .expect("running kubectl")
    }

    /// The `kubectl` command without running it.
    pub fn kubectl_command(&self, token: Option<&str>, args: &[&str]) -> Command {
        let empty = self.state().join("empty.kubeconfig");
        if !empty.exists() {
            let _ = std::fs::write(&empty, "apiVersion: v1\nkind: Config\n");
        }
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&empty)
            .arg("--server")
            .arg(self.var("TESTENV_APISERVER"))
            .arg("--certificate-authority")
            .arg(self.var("TESTENV_CA"));
        if let Some(t) = token {
            cmd.arg("--token").arg(t);
        }
        cmd.args(args);
        cmd
    }

    /// `curl` to one of the local listeners: returns (status, body).
    pub fn curl(&self, url: &str, extra: &[&str]) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20"])
            .args(extra)
            .arg(url)
            .output()
            .expect("running curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }
}

/// The Run kind (`kruntimes.io/v1alpha1`, `runs`).
pub fn run_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Run"),
        "runs",
    )
}

/// A unique, valid object name with `prefix`.
pub fn unique(prefix: &str) -> String {
    use rand::Rng;
    let n: u32 = rand::rng().random();
    format!("{prefix}-{n:08x}")
}

/// Fixtures in one namespace, made with the admin identity.
pub struct Fixtures {
    pub client: Client,
    pub ns: String,
}

impl Fixtures {
    pub async fn new(ns: &str) -> Self {
        Self {
            client: env().admin().await,
            ns: ns.to_owned(),
        }
    }

    fn runs(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.ns, &run_resource())
    }

    /// A Runtime Pod bound to the fake Node, with a `runtimed` container. Returns its UID.
    pub async fn create_pod(&self, name: &str, runtime: &str) -> String {
        let pods: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.client.clone(), &self.ns);
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"runtime": runtime}},
            "spec": {"nodeName": env().var("TESTENV_NODE"),
                     "containers": [{"name": "runtimed", "image": "kruntimes/runtimed:test"}]},
        }))
        .expect("pod json");
        let created = pods
            .create(&PostParams::default(), &pod)
            .await
            .expect("creating pod");
        created.metadata.uid.expect("pod uid")
    }

    pub async fn delete_pod(&self, name: &str) {
        let pods: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.client.clone(), &self.ns);
        let dp = kube::api::DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        let _ = pods.delete(name, &dp).await;
        for _ in 0..100 {
            if pods.get_opt(name).await.ok().flatten().is_none() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("pod {name} was not deleted");
    }

    /// A Run with `mode` (`task`, `function`, `session`). Returns its UID.
    pub async fn create_run(
        &self,
        name: &str,
        runtime: &str,
        mode: &str,
        extra_spec: Value,
    ) -> String {
        let mut spec = json!({"runtime": runtime, "mode": {mode: {}}});
        if let (Some(s), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
            for (k, v) in extra {
                s.insert(k.clone(), v.clone());
            }
        }
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
            "metadata": {"name": name},
            "spec": spec,
        }))
        .expect("run json");
        let created = self
            .runs()
            .create(&PostParams::default(), &obj)
            .await
            .expect("creating run");
        created.metadata.uid.expect("run uid")
    }

    /// Merges `status` into the Run's status.
    pub async fn set_run_status(&self, name: &str, status: Value) {
        self.runs()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .expect("patching run status");
    }

    /// Assigns the Run to a Pod and marks it Running since `start`.
    pub async fn assign(&self, run: &str, pod: &str, pod_uid: &str, start: &str) {
        self.set_run_status(
            run,
            json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid, "startTime": start, "attempt": 1}),
        )
        .await;
    }

    pub async fn delete_run(&self, name: &str) {
        let _ = self.runs().delete(name, &Default::default()).await;
    }

    /// The runtimed log file the fake kubelet serves for a Pod.
    pub fn log_path(&self, pod: &str) -> PathBuf {
        PathBuf::from(env().var("TESTENV_LOGS"))
            .join(format!("{}_{pod}", self.ns))
            .join("runtimed.log")
    }

    /// Appends raw lines to a Pod's runtimed log with the given RFC 3339
    /// stamps (CRI format), in one write.
    pub fn append_log_at(&self, pod: &str, lines: &[(String, String)]) {
        use std::io::Write;
        let path = self.log_path(pod);
        std::fs::create_dir_all(path.parent().expect("log dir")).expect("log dir");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("opening log");
        let mut buf = String::new();
        for (ts, l) in lines {
            buf.push_str(&format!("{ts} stdout F {l}\n"));
        }
        f.write_all(buf.as_bytes()).expect("appending log");
    }

    /// Appends raw lines to a Pod's runtimed log, each stamped now (CRI format).
    pub fn append_log(&self, pod: &str, lines: &[String]) {
        let stamped: Vec<(String, String)> = lines
            .iter()
            .map(|l| {
                let ts = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.9fZ");
                (ts.to_string(), l.clone())
            })
            .collect();
        self.append_log_at(pod, &stamped);
    }

    /// A task Run of Runtime `bash` (named from `prefix`) assigned now to a
    /// Pod of its own, whose log holds one stdout record `first` of it.
    pub async fn logged_run(&self, prefix: &str, first: &str) -> LoggedRun {
        let pod = unique("pool");
        let pod_uid = self.create_pod(&pod, "bash").await;
        let run = unique(prefix);
        let uid = self.create_run(&run, "bash", "task", json!({})).await;
        self.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
        self.append_log(
            &pod,
            &[runtimed_line(&uid, &run, &self.ns, &pod, "stdout", first)],
        );
        LoggedRun { run, uid, pod }
    }
    /// A Ready Run of `mode` (`function` or `session`, with a lease) of
    /// Runtime `bash`, as `/v1` serves it. Returns its name and UID.
    pub async fn ready_run(&self, mode: &str) -> (String, String) {
        let name = unique(&format!("{mode}-ready"));
        let spec = if mode == "session" {
            json!({"mode": {"session": {"leaseSeconds": 60}}})
        } else {
            json!({})
        };
        let uid = self.create_run(&name, "bash", mode, spec).await;
        self.set_run_status(&name, json!({"phase": "Ready"})).await;
        (name, uid)
    }
}

/// What [`Fixtures::logged_run`] made.
pub struct LoggedRun {
    pub run: String,
    pub uid: String,
    pub pod: String,
}

/// A runtimed line for a Run, fields in runtimed's order (`run_uid` first).
pub fn runtimed_line(
    run_uid: &str,
    run: &str,
    ns: &str,
    pod: &str,
    stream: &str,
    message: &str,
) -> String {
    let q = |v: &str| Value::String(v.to_owned()).to_string();
    format!(
        r#"{{"run_uid":{},"run_name":{},"namespace":{},"runtime":"bash","pod":{},"stream":{},"message":{}}}"#,
        q(run_uid),
        q(run),
        q(ns),
        q(pod),
        q(stream),
        q(message)
    )
}

/// Now, as the RFC 3339 seconds the API server stores.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Where [`free_port`] looks: below Linux's ephemeral range (32768 and up
/// by default), so an outgoing connection of any process cannot take a port
/// between the moment it is chosen and the moment a server binds it; and
/// below the NodePort range (30000-32767), which kube-proxy on `hack/cluster`
/// answers on every local address.
const PORT_RANGE: std::ops::Range<u32> = 20000..30000;

/// A free loopback port, never the same twice in one process.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let width = PORT_RANGE.end - PORT_RANGE.start;
    // Each test process starts elsewhere in the range, so processes running
    // side by side rarely walk over the same ports.
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % width,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..width {
        let port = PORT_RANGE.start + NEXT.fetch_add(1, Ordering::SeqCst) % width;
        let port = u16::try_from(port).expect("port range");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {PORT_RANGE:?}")
}

/// A Console process of its own (for tests that need other flags or files).
pub struct ConsoleProcess {
    child: std::process::Child,
    pub api_port: u16,
    pub console_port: u16,
    pub admin_port: u16,
    pub log: PathBuf,
}

impl Drop for ConsoleProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ConsoleProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the process to exit by itself.
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }

    /// Waits until the process listens (`/live` answers: every listener is
    /// bound), without waiting for readiness.
    pub fn wait_live(&self) {
        for _ in 0..150 {
            let (code, _) = env().curl(&format!("http://127.0.0.1:{}/live", self.admin_port), &[]);
            if code == 200 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "kruntimes-console did not start listening: {}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// The sum of metric `name`'s series on this Console's `/metrics`
    /// (None when it has none).
    pub fn metric(&self, name: &str) -> Option<f64> {
        let url = format!("http://127.0.0.1:{}/metrics", self.admin_port);
        let (_, body) = env().curl(&url, &[]);
        body.lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .reduce(|a, b| a + b)
    }

    /// Starts `kruntimes-console` with the environment's identity and `args`
    /// appended; waits until it is ready (with `--no-wait`: until it
    /// listens). Its listeners bind port 0 (unless `args` names a
    /// `--console-listen`) and the ports are read from its `listening`
    /// line, so no port is chosen before the Console binds it.
    pub fn start(dir: &Path, args: &[String]) -> Self {
        Self::start_with_env(dir, args, &[])
    }

    /// [`start`](Self::start) with `vars` added to its environment.
    pub fn start_with_env(dir: &Path, args: &[String], vars: &[(&str, &str)]) -> Self {
        let e = env();
        let log = dir.join("console.log");
        let out = std::fs::File::create(&log).expect("console log");
        let mut cmd = Command::new(bin_dir().join("kruntimes-console"));
        cmd.arg("--kubeconfig")
            .arg(e.state().join("console.kubeconfig"))
            .args(["--apiserver-listen", "127.0.0.1:0"])
            .args(["--admin-listen", "127.0.0.1:0"]);
        let has = |flag: &str| {
            args.iter()
                .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        };
        if !has("--console-listen") {
            cmd.args(["--console-listen", "127.0.0.1:0"]);
        }
        if !has("--apiserver-tls-cert") {
            cmd.arg("--apiserver-tls-cert")
                .arg(e.pki("console.crt"))
                .arg("--apiserver-tls-key")
                .arg(e.pki("console.key"));
        }
        cmd.args(args.iter().filter(|a| *a != "--no-wait"))
            .envs(vars.iter().copied())
            .stdout(out.try_clone().expect("log"))
            .stderr(out);
        let mut child = cmd.spawn().expect("starting kruntimes-console");
        let failed = |why: &str, log: &Path| -> ! {
            panic!(
                "kruntimes-console {why}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            )
        };
        let mut listening = None;
        for _ in 0..150 {
            listening = std::fs::read_to_string(&log).ok().and_then(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .find(|v| v["message"] == "listening")
            });
            if listening.is_some() || matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let Some(listening) = listening else {
            let _ = child.kill();
            failed("did not start listening", &log)
        };
        let port = |listener: &str| -> u16 {
            listening[listener]
                .as_str()
                .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
                .map(|a| a.port())
                .unwrap_or_else(|| panic!("no {listener} address in {listening}"))
        };
        let p = Self {
            child,
            api_port: port("apiserver"),
            console_port: port("console"),
            admin_port: port("admin"),
            log,
        };
        if args.iter().any(|a| a == "--no-wait") {
            return p;
        }
        let mut p = p;
        for _ in 0..150 {
            let (code, _) = e.curl(&format!("http://127.0.0.1:{}/ready", p.admin_port), &[]);
            if code == 200 {
                return p;
            }
            if let Ok(Some(_)) = p.child.try_wait() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        failed("did not become ready", &p.log)
    }
}

/// The Run-log API path of a Run's log (`query` starts with `?` or is empty).
pub fn log_path(ns: &str, run: &str, query: &str) -> String {
    format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{run}/log{query}")
}

/// The `/v1` invoke path of a Run.
pub fn invoke_path(ns: &str, name: &str, uid: &str) -> String {
    format!("/v1/namespaces/{ns}/runs/{name}/{uid}/invoke")
}

/// The `/v1` session operations path of a Run.
pub fn ops_path(ns: &str, name: &str, uid: &str) -> String {
    format!("/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws")
}

/// The requests the fake gateway recorded whose path names `run`.
pub fn gateway_requests(run: &str) -> Vec<Value> {
    let url = format!("{}/requests", env().var("TESTENV_GATEWAY_CONTROL"));
    let (code, body) = env().curl(&url, &[]);
    assert_eq!(code, 200, "gateway /requests: {body}");
    let all: Vec<Value> = serde_json::from_str(&body).expect("gateway /requests JSON");
    all.into_iter()
        .filter(|r| r["path"].as_str().unwrap_or("").contains(run))
        .collect()
}

/// The values of header `name` (any case) in a request the gateway recorded.
pub fn header_values(req: &Value, name: &str) -> Vec<String> {
    req["headers"]
        .as_array()
        .expect("recorded headers")
        .iter()
        .filter(|h| h[0].as_str().unwrap_or_default().eq_ignore_ascii_case(name))
        .map(|h| h[1].as_str().unwrap_or_default().to_owned())
        .collect()
}
