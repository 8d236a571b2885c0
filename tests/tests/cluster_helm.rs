//! The Console the way an operator runs it: the image built by `hack/image`,
//! the chart installed by Helm on the real node of `hack/cluster`, two
//! Console Pods in-cluster (their ServiceAccount token, the cluster CA,
//! `KUBERNETES_SERVICE_HOST`, a read-only root filesystem, user 65532).
//! Only the Runtime side is simulated: a runtimed stand-in Pod whose stdout
//! the container runtime writes and the kubelet serves, and the fake gateway
//! as a Pod behind `<runtime>-gateway`.
//!
//! One test over one installed release, in named steps that run in order
//! (each prints its name and wall time as it starts and ends; a failure
//! names its step): install; APIService Available through the real
//! Service; the Runtime side; `runs/log` (tail, then follow) from the
//! runtimed Pod's container log; the Console through `kubectl
//! port-forward` (login, `/api`, `/v1` invoke and `operations:ws` reaching
//! the gateway by its DNS name), and the browser's core flow through it; a
//! Console Pod deleted, `helm upgrade` to a new tag and `helm rollback`
//! under a load loop with no failed request; the TLS Secret replaced and
//! served without a restart; `helm test`; `helm uninstall` removing
//! everything. Skipped without a cluster (`CLUSTER_STATE`).
//!
//! Objects are read and written through the Kubernetes API (kube); the CLIs
//! stay where they are what is tested or have no API: `helm`, `kubectl
//! port-forward`, `kubectl get --raw` as a user holding only a token (how a
//! user reads `runs/log`), `ctr`, `openssl`, `curl` and the Console's own
//! `check`.

use std::future::Future;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kruntimes_tests::cluster::{Cluster, cluster, eventually, pod_ready};
use kruntimes_tests::env::{repo_root, unique};
use kruntimes_tests::stream::{self, WsTarget};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, LogParams, Patch,
    PatchParams, PostParams,
};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

const NS: &str = "kruntimes-system";
const RELEASE: &str = "kruntimes-console";
const APISERVICE: &str = "v1alpha1.logs.kruntimes.io";
const HOST: &str = "kruntimes-console.kruntimes-system.svc";
const TEAM: &str = "team-a";
/// The Console Pods' label (and the helm test Pod's, which is left out).
const CONSOLE_PODS: &str = "app.kubernetes.io/name=kruntimes-console";

#[test]
fn the_chart_installed_by_helm_runs_the_console_in_cluster() {
    let Some(c) = cluster("the_chart_installed_by_helm_runs_the_console_in_cluster") else {
        return;
    };
    let ctx = Ctx::new(c);
    // Everything the test made goes, whichever step fails.
    let _cleanup = Cleanup(&ctx);
    let mut steps = Steps::new();

    let installed = steps.run("install", || install(&ctx));
    steps.run("apiservice_available_through_the_service", || {
        apiservice_available_through_the_service(&ctx)
    });
    let side = steps.run("runtime_side", || runtime_side(&ctx));
    let want_a = steps.run("run_log_from_the_container_log", || {
        run_log_from_the_container_log(&ctx, &side)
    });
    steps.run("run_log_follow_delivers_what_the_container_prints", || {
        run_log_follow_delivers_what_the_container_prints(&ctx, &side)
    });
    let forward = steps.run("console_through_port_forward", || {
        console_through_port_forward(&ctx, &side, &want_a)
    });
    steps.run("browser_core_flow_through_port_forward", || {
        browser_core_flow_through_port_forward(&ctx, &side, &want_a, forward)
    });
    let load = steps.run("ha_console_pod_deleted_under_load", || {
        ha_console_pod_deleted_under_load(&ctx, &side, &installed)
    });
    steps.run("ha_helm_upgrade_under_load", || {
        ha_helm_upgrade_under_load(&ctx, &load)
    });
    let pods = steps.run("ha_helm_rollback_under_load", || {
        ha_helm_rollback_under_load(&ctx, load)
    });
    steps.run("tls_rotation_without_a_restart", || {
        tls_rotation_without_a_restart(&ctx, &side, &pods)
    });
    steps.run("helm_test_and_check_from_the_host", || {
        helm_test_and_check_from_the_host(&ctx)
    });
    steps.run("uninstall_removes_everything", || {
        uninstall_removes_everything(&ctx)
    });
    steps.summary(None);
}

// ---------------------------------------------------------------- steps

/// Named steps run in order: each prints its name and wall time as it
/// starts and ends (straight to stderr, so `cargo test` without
/// `--nocapture` shows them too); a panic in a step is re-raised naming it.
struct Steps {
    t0: Instant,
    done: Vec<(&'static str, Duration)>,
}

fn say(line: &str) {
    // Straight to the stream: the test harness captures only print macros.
    let _ = writeln!(std::io::stderr(), "{line}");
}

impl Steps {
    fn new() -> Self {
        Self {
            t0: Instant::now(),
            done: Vec::new(),
        }
    }

    fn run<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        say(&format!(
            "== step {name}: started at +{:.1} s",
            self.t0.elapsed().as_secs_f64()
        ));
        let t = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(f));
        let took = t.elapsed();
        match result {
            Ok(v) => {
                say(&format!(
                    "== step {name}: ok in {:.1} s",
                    took.as_secs_f64()
                ));
                self.done.push((name, took));
                v
            }
            Err(payload) => {
                let why = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "(a panic without a message)".to_owned());
                say(&format!(
                    "== step {name}: FAILED after {:.1} s",
                    took.as_secs_f64()
                ));
                self.summary(Some((name, took)));
                panic!(
                    "step {name} failed after {:.1} s: {why}",
                    took.as_secs_f64()
                );
            }
        }
    }

    /// The steps run so far and their wall times (and the one that failed).
    fn summary(&self, failed: Option<(&str, Duration)>) {
        let mut table = format!("{:<56}{:>10}\n", "step", "seconds");
        for (name, took) in &self.done {
            table.push_str(&format!("{name:<56}{:>10.1}\n", took.as_secs_f64()));
        }
        if let Some((name, took)) = failed {
            table.push_str(&format!(
                "{:<56}{:>10.1}\n",
                format!("{name} (FAILED)"),
                took.as_secs_f64()
            ));
        }
        table.push_str(&format!(
            "{:<56}{:>10.1}",
            "total",
            self.t0.elapsed().as_secs_f64()
        ));
        say(&table);
    }
}

// ---------------------------------------------------------------- context

/// What every step shares: the cluster, a Kubernetes client, the images,
/// this run's Runtime name and a temporary folder (PKI, cookies).
struct Ctx {
    c: &'static Cluster,
    tokio: tokio::runtime::Runtime,
    client: Client,
    img: Images,
    /// The Console image the release installs, `repository:tag`.
    image: String,
    /// The Runtime's name, unique to this run; its objects carry `krt-test=<rt>`.
    rt: String,
    dir: tempfile::TempDir,
}

impl Ctx {
    fn new(c: &'static Cluster) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let client = tokio.block_on(async {
            let kubeconfig = kube::config::Kubeconfig::read_from(c.var("KUBECONFIG"))
                .expect("the cluster's admin kubeconfig");
            let config = kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .expect("admin client configuration");
            Client::try_from(config).expect("admin client")
        });
        let img = images(c);
        let image = format!("{}:{}", img.console_repo, img.console_tag);
        Self {
            c,
            tokio,
            client,
            img,
            image,
            rt: unique("rt"),
            dir: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    fn d(&self) -> &Path {
        self.dir.path()
    }

    /// The CA of the Console's serving certificate (written by `install`).
    fn console_ca(&self) -> PathBuf {
        self.d().join("console-ca.crt")
    }

    fn block<F: Future>(&self, f: F) -> F::Output {
        self.tokio.block_on(f)
    }

    /// A Kubernetes API call that must succeed.
    fn ok<T>(&self, what: &str, f: impl Future<Output = kube::Result<T>>) -> T {
        self.block(f).unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    fn api<K>(&self, ns: &str) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), ns)
    }

    fn apiservices(&self) -> Api<APIService> {
        Api::all(self.client.clone())
    }

    fn dynamic(&self, ns: &str, ar: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), ns, ar)
    }

    /// Creates `obj` (JSON of a `K`) through `api`.
    fn create<K>(&self, api: &Api<K>, obj: Value) -> K
    where
        K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize,
        K: serde::de::DeserializeOwned,
    {
        let what = format!("creating {} {}", obj["kind"], obj["metadata"]["name"]);
        let obj: K = serde_json::from_value(obj).unwrap_or_else(|e| panic!("{what}: {e}"));
        self.ok(&what, api.create(&PostParams::default(), &obj))
    }

    /// A Pod as JSON, when it exists.
    fn pod_json(&self, ns: &str, name: &str) -> Option<Value> {
        let pod = self.ok(
            &format!("reading Pod {ns}/{name}"),
            self.api::<Pod>(ns).get_opt(name),
        )?;
        Some(serde_json::to_value(pod).expect("Pod JSON"))
    }

    /// The Console Pods of the release (not its helm test Pod), as JSON.
    fn console_pods(&self) -> Vec<Value> {
        let list = self.ok(
            "listing the Console Pods",
            self.api::<Pod>(NS)
                .list(&ListParams::default().labels(CONSOLE_PODS)),
        );
        list.items
            .into_iter()
            .filter(|p| p.name_any() != "kruntimes-console-test")
            .map(|p| serde_json::to_value(p).expect("Pod JSON"))
            .collect()
    }

    /// Waits until exactly `n` Console Pods exist, all Ready, running `image`.
    fn wait_console_pods(&self, n: usize, image: &str) -> Vec<Value> {
        eventually(
            &format!("{n} ready Console Pods running {image}"),
            240,
            || {
                let pods = self.console_pods();
                (pods.len() == n
                    && pods
                        .iter()
                        .all(|p| pod_ready(p) && p["spec"]["containers"][0]["image"] == image))
                .then_some(pods)
            },
        )
    }

    fn apiservice_available(&self) -> bool {
        let Ok(Some(a)) = self.block(self.apiservices().get_opt(APISERVICE)) else {
            return false;
        };
        a.status.and_then(|s| s.conditions).is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
    }

    /// Deletes the objects of kind `ar` in `ns` that match `selector`, not
    /// waiting for them to go (`kubectl delete -l ... --wait=false`).
    fn delete_labelled(&self, ns: &str, ar: &ApiResource, selector: &str) {
        let api = self.dynamic(ns, ar);
        let Ok(list) = self.block(api.list(&ListParams::default().labels(selector))) else {
            return;
        };
        for o in list.items {
            let _ = self.block(api.delete(&o.name_any(), &DeleteParams::default()));
        }
    }

    /// A Secret in `ns` from files, as `kubectl create secret generic
    /// --from-file=KEY=FILE` writes it, with `labels`.
    fn secret_from_files(&self, ns: &str, name: &str, labels: Value, files: &[(&str, PathBuf)]) {
        let data: serde_json::Map<String, Value> = files
            .iter()
            .map(|(k, f)| {
                let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                ((*k).to_owned(), Value::from(B64.encode(bytes)))
            })
            .collect();
        self.create(
            &self.api::<Secret>(ns),
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "type": "Opaque",
                "data": data,
            }),
        );
    }
}

fn run_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Run"),
        "runs",
    )
}

fn runtime_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Runtime"),
        "runtimes",
    )
}

/// Everything the test made, removed even when a step fails half way.
struct Cleanup<'a>(&'a Ctx);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let ctx = self.0;
        let _ = ctx
            .c
            .helm(&["uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "2m"]);
        let selector = format!("krt-test={}", ctx.rt);
        for ar in [
            ApiResource::erase::<Pod>(&()),
            ApiResource::erase::<Service>(&()),
            ApiResource::erase::<Secret>(&()),
            run_resource(),
            runtime_resource(),
        ] {
            ctx.delete_labelled(TEAM, &ar, &selector);
        }
        let _ = ctx.block(
            ctx.api::<Secret>(NS)
                .delete("gateway-ca", &DeleteParams::default()),
        );
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `kubectl` as a user of the cluster (a token only, no client certificate).
fn kubectl_as(c: &Cluster, user: &str) -> Command {
    let mut cmd = Command::new("kubectl");
    let empty = c.state().join("empty.kubeconfig");
    if !empty.exists() {
        let _ = std::fs::write(&empty, "apiVersion: v1\nkind: Config\n");
    }
    cmd.arg("--kubeconfig")
        .arg(empty)
        .arg("--server")
        .arg(c.var("CLUSTER_APISERVER"))
        .arg("--certificate-authority")
        .arg(c.var("CLUSTER_CA"))
        .arg("--token")
        .arg(token(c, user));
    cmd
}

fn token(c: &Cluster, user: &str) -> String {
    c.var(&format!("CLUSTER_TOKEN_{}", user.to_uppercase()))
        .to_owned()
}

/// Runs hack/lib/pki.sh functions in `dir`.
fn pki(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; source '{}'; {script}",
            repo_root().join("hack/lib/pki.sh").display()
        ))
        .env("D", dir)
        .output()
        .expect("bash");
    assert!(out.status.success(), "pki: {}", text(&out.stderr));
}

/// The images `hack/image --state $CLUSTER_STATE` built and imported.
struct Images {
    console_repo: String,
    console_tag: String,
    runtimed: String,
    gateway: String,
}

fn images(c: &Cluster) -> Images {
    let path = c.state().join("images.env");
    let vars =
        kruntimes_tests::env::parse_exports(&std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run hack/image --state $CLUSTER_STATE)",
                path.display()
            )
        }));
    let console = vars["IMAGE_CONSOLE"].clone();
    let (repo, tag) = console.rsplit_once(':').expect("repository:tag");
    Images {
        console_repo: repo.to_owned(),
        console_tag: tag.to_owned(),
        runtimed: vars["IMAGE_RUNTIMED"].clone(),
        gateway: vars["IMAGE_GATEWAY"].clone(),
    }
}

fn log_path(run: &str, query: &str) -> String {
    kruntimes_tests::env::log_path(TEAM, run, query)
}

/// A Run's records through `kubectl get --raw` as `user`: the way a user
/// holding only a token reads `runs/log`.
fn run_log(c: &Cluster, user: &str, run: &str, query: &str) -> Result<Value, String> {
    let out = kubectl_as(c, user)
        .args(["get", "--raw", &log_path(run, query)])
        .output()
        .expect("kubectl");
    if !out.status.success() {
        return Err(text(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out.stdout)))
}

fn messages(log: &Value) -> Vec<String> {
    log["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// curl against the Console at `ip:port`, verified as `HOST`.
fn curl(ca: &Path, ip: &str, port: u16, extra: &[&str], path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "20", "--cacert"])
        .arg(ca)
        .args(["--resolve", &format!("{HOST}:{port}:{ip}")])
        .args(["-w", "\n%{http_code}"])
        .args(extra)
        .arg(format!("https://{HOST}:{port}{path}"))
        .output()
        .expect("curl");
    let body = text(&out.stdout);
    let (body, code) = body.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// A child process killed (and reaped) when dropped: a follow or a
/// port-forward does not outlive the step that started it, even one that
/// fails.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ---------------------------------------------------------------- install

/// What `install` leaves for later steps.
struct Installed {
    /// The two Console Pods the install made.
    pods: Vec<Value>,
}

/// The gateway's CA as a Secret, then `helm install`: two ready Console
/// Pods on the node, in-cluster configuration, running as 65532; the
/// Console CA (from the release's TLS Secret) written for the later steps.
fn install(ctx: &Ctx) -> Installed {
    let (c, d, rt) = (ctx.c, ctx.d(), ctx.rt.as_str());
    // The gateway's CA goes to the Console before it starts.
    pki(
        d,
        &format!(
            "pki_ca \"$D\" gw-ca kruntimes-test-gateway-ca; pki_cert \"$D\" gw-ca gw /CN={rt}-gateway serverAuth DNS:{rt}-gateway.{TEAM}.svc"
        ),
    );
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    if ctx
        .ok(&format!("reading Namespace {NS}"), namespaces.get_opt(NS))
        .is_none()
    {
        ctx.create(
            &namespaces,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
        );
    }
    let _ = ctx.block(
        ctx.api::<Secret>(NS)
            .delete("gateway-ca", &DeleteParams::default()),
    );
    ctx.secret_from_files(
        NS,
        "gateway-ca",
        json!({}),
        &[("ca.crt", d.join("gw-ca.crt"))],
    );

    c.helm_ok(&[
        "install",
        RELEASE,
        "chart",
        "-n",
        NS,
        "--set",
        "console.replicas=2",
        "--set",
        &format!("console.image.repository={}", ctx.img.console_repo),
        "--set",
        &format!("console.image.tag={}", ctx.img.console_tag),
        "--set",
        "console.image.pullPolicy=Never",
        "--set",
        "console.access.gatewayCASecretName=gateway-ca",
        "--wait",
        "--timeout",
        "5m",
    ]);
    let pods = ctx.wait_console_pods(2, &ctx.image);
    for p in &pods {
        let args: Vec<&str> = p["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !args.iter().any(|a| a.starts_with("--kubeconfig")),
            "in-cluster configuration, no kubeconfig: {args:?}"
        );
        assert_eq!(p["spec"]["nodeName"], c.var("CLUSTER_NODE"));
    }
    // The processes on the node run as 65532 (the image's user and the chart's).
    let ps = Command::new("ps")
        .args(["-eo", "uid=,args="])
        .output()
        .unwrap();
    let console_uids: Vec<String> = text(&ps.stdout)
        .lines()
        .filter(|l| l.contains("/usr/local/bin/kruntimes-console --apiserver-listen=0.0.0.0:8443"))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(console_uids, ["65532", "65532"], "Console processes' users");

    let tls = ctx.ok(
        "reading Secret kruntimes-console-tls",
        ctx.api::<Secret>(NS).get("kruntimes-console-tls"),
    );
    let ca = tls
        .data
        .as_ref()
        .and_then(|data| data.get("ca.crt"))
        .expect("ca.crt in Secret kruntimes-console-tls");
    std::fs::write(ctx.console_ca(), &ca.0).unwrap();
    Installed { pods }
}

/// The APIService turns Available through the release's Service, and
/// discovery of the group lists `runs/log`.
fn apiservice_available_through_the_service(ctx: &Ctx) {
    eventually("APIService Available through the Service", 120, || {
        ctx.apiservice_available().then_some(())
    });
    let apiservice = ctx.ok(
        &format!("reading APIService {APISERVICE}"),
        ctx.apiservices().get(APISERVICE),
    );
    let service = apiservice
        .spec
        .and_then(|spec| spec.service)
        .expect("the APIService names a Service");
    assert_eq!(service.name.as_deref(), Some("kruntimes-console"));
    assert_eq!(service.namespace.as_deref(), Some(NS));
    let discovery = ctx.ok(
        "discovery of logs.kruntimes.io/v1alpha1",
        ctx.client
            .list_api_group_resources("logs.kruntimes.io/v1alpha1"),
    );
    let resources: Vec<&str> = discovery
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert!(resources.contains(&"runs/log"), "{resources:?}");
}

// ---------------------------------------------------------------- the Runtime side

/// The Runtime side `runtime_side` made: four Runs (two tasks on the
/// runtimed Pod, a function and a session), the runtimed Pod, the gateway.
struct RuntimeSide {
    run_a: String,
    run_b: String,
    run_f: String,
    run_s: String,
    uid_a: String,
    uid_b: String,
    uid_f: String,
    uid_s: String,
    /// The runtimed Pod and its address (its control endpoint, `:8080/lines`).
    pod: String,
    pod_ip: String,
}

/// A gateway Pod and Service (TLS from the test's CA, the Console CA as its
/// client CA), the Runtime, four Runs, and a runtimed Pod printing two
/// Runs' records; the Runs' status set as the engine would.
fn runtime_side(ctx: &Ctx) -> RuntimeSide {
    let (d, rt) = (ctx.d(), ctx.rt.as_str());
    let labels = json!({"krt-test": rt});
    ctx.secret_from_files(
        TEAM,
        &format!("{rt}-gateway-tls"),
        labels.clone(),
        &[
            ("tls.crt", d.join("gw.crt")),
            ("tls.key", d.join("gw.key")),
            ("client-ca.crt", ctx.console_ca()),
        ],
    );
    let runs = ctx.dynamic(TEAM, &run_resource());
    let new_run = |name: &str, mode: &str| -> String {
        let spec = if mode == "session" {
            json!({"runtime": rt, "mode": {"session": {"leaseSeconds": 300}}})
        } else {
            json!({"runtime": rt, "mode": {mode: {}}})
        };
        let run: DynamicObject = ctx.create(
            &runs,
            json!({
                "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": name, "namespace": TEAM, "labels": labels},
                "spec": spec,
            }),
        );
        run.metadata.uid.expect("a Run's uid")
    };
    let (run_a, run_b, run_f, run_s) = (
        format!("{rt}-a"),
        format!("{rt}-b"),
        format!("{rt}-f"),
        format!("{rt}-s"),
    );
    // The Runtime the Runs name (the Console lists it in the Runs filter).
    let _: DynamicObject = ctx.create(
        &ctx.dynamic(TEAM, &runtime_resource()),
        json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
            "metadata": {"name": rt, "namespace": TEAM, "labels": labels},
            "spec": {"replicas": 1, "port": 8080, "template": {"spec": {"containers": [
                {"name": "runtime", "image": ctx.img.runtimed}]}}},
        }),
    );
    let uid_a = new_run(&run_a, "task");
    let uid_b = new_run(&run_b, "task");
    let uid_f = new_run(&run_f, "function");
    let uid_s = new_run(&run_s, "session");
    let started = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_secs(5))
        .expect("five seconds ago")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let pod = format!("{rt}-0");
    let gateway = format!("{rt}-gateway");
    let pods = ctx.api::<Pod>(TEAM);
    ctx.create(
        &pods,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": gateway, "namespace": TEAM,
                         "labels": {"krt-test": rt, "app": gateway}},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "gateway",
                    "image": ctx.img.gateway,
                    "imagePullPolicy": "Never",
                    "args": ["--listen=0.0.0.0:8443", "--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key",
                             "--client-ca=/tls/client-ca.crt", "--control-listen=0.0.0.0:8081"],
                    "ports": [{"containerPort": 8443, "name": "https"}],
                    "readinessProbe": {"tcpSocket": {"port": 8443}, "periodSeconds": 1},
                    "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": true}],
                }],
                "volumes": [{"name": "tls", "secret": {"secretName": format!("{rt}-gateway-tls")}}],
            },
        }),
    );
    ctx.create(
        &ctx.api::<Service>(TEAM),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": gateway, "namespace": TEAM, "labels": labels},
            "spec": {
                "selector": {"app": gateway},
                "ports": [{"name": "https", "port": 443, "targetPort": "https"}],
            },
        }),
    );
    ctx.create(
        &pods,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": TEAM,
                         "labels": {"krt-test": rt, "runtime": rt}},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{
                    "name": "runtimed",
                    "image": ctx.img.runtimed,
                    "imagePullPolicy": "Never",
                    "env": [
                        {"name": "RUNTIMED_RUNS", "value": format!("{run_a}={uid_a},{run_b}={uid_b}")},
                        {"name": "RUNTIMED_COUNT", "value": "60"},
                        {"name": "RUNTIMED_RATE", "value": "30"},
                        {"name": "RUNTIME_NAME", "value": rt},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    ],
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1},
                }],
            },
        }),
    );
    let runtimed = eventually("the runtimed Pod ready", 120, || {
        ctx.pod_json(TEAM, &pod).filter(pod_ready)
    });
    let pod_uid = runtimed["metadata"]["uid"].as_str().unwrap().to_owned();
    let pod_ip = runtimed["status"]["podIP"].as_str().unwrap().to_owned();
    let status = |run: &str, status: Value| {
        ctx.ok(
            &format!("status of Run {run}"),
            runs.patch_status(
                run,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            ),
        );
    };
    for run in [&run_a, &run_b] {
        status(
            run,
            json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid, "startTime": started}),
        );
    }
    status(&run_f, json!({"phase": "Ready"}));
    status(&run_s, json!({"phase": "Ready"}));
    eventually("the gateway Pod ready", 120, || {
        ctx.pod_json(TEAM, &gateway).filter(pod_ready).map(|_| ())
    });
    RuntimeSide {
        run_a,
        run_b,
        run_f,
        run_s,
        uid_a,
        uid_b,
        uid_f,
        uid_s,
        pod,
        pod_ip,
    }
}

// ---------------------------------------------------------------- runs/log from the real container log

/// `runs/log` returns exactly each Run's records of the container log the
/// kubelet serves, in order, tails it, and refuses a user without access.
/// Returns Run A's messages.
fn run_log_from_the_container_log(ctx: &Ctx, side: &RuntimeSide) -> Vec<String> {
    let c = ctx.c;
    let (run_a, run_b) = (&side.run_a, &side.run_b);
    let pods = ctx.api::<Pod>(TEAM);
    let runtimed = LogParams {
        container: Some("runtimed".to_owned()),
        ..LogParams::default()
    };
    // The generator's own lines are counted: the stand-in's start-up line
    // (stderr) is in the container log too, and counting it made the test
    // read the log one generated line early, racing the 60th.
    let generated = |l: &str| {
        l.starts_with("runtimed: heartbeat ")
            || serde_json::from_str::<Value>(l).is_ok_and(|v| {
                v["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("line "))
            })
    };
    let cri_records = eventually("runtimed wrote its 60 lines", 60, || {
        let t = ctx
            .block(pods.logs(&side.pod, &runtimed))
            .unwrap_or_default();
        (t.lines().filter(|l| generated(l)).count() >= 60).then_some(t)
    });
    let of_run = |uid: &str| -> Vec<String> {
        cri_records
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["run_uid"] == uid)
            .map(|v| v["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (want_a, want_b) = (of_run(&side.uid_a), of_run(&side.uid_b));
    assert!(
        want_a.len() >= 10 && want_b.len() >= 10,
        "{want_a:?} {want_b:?}"
    );
    let got_a = messages(&run_log(c, "viewer", run_a, "?tailLines=500").expect("viewer reads A"));
    assert_eq!(got_a, want_a, "exactly run A's records, in order");
    let got_b = messages(&run_log(c, "viewer", run_b, "?tailLines=500").expect("viewer reads B"));
    assert_eq!(got_b, want_b, "exactly run B's records, in order");
    let tail = messages(&run_log(c, "viewer", run_a, "?tailLines=3").unwrap());
    assert_eq!(tail, want_a[want_a.len() - 3..]);
    let denied = run_log(c, "outsider", run_a, "").expect_err("outsider is refused");
    assert!(denied.contains("forbidden"), "{denied}");
    want_a
}

/// follow=true delivers what the container prints, and only this Run's lines.
fn run_log_follow_delivers_what_the_container_prints(ctx: &Ctx, side: &RuntimeSide) {
    let mut follow = kubectl_as(ctx.c, "viewer")
        .args([
            "get",
            "--raw",
            &log_path(&side.run_a, "?follow=true&tailLines=1"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = stream::lines(&mut follow);
    let _follow = KillOnDrop(follow);
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the follow's history");
    let add_line = |uid: &str, message: &str| {
        let out = Command::new("curl")
            .args([
                "-sSf",
                "--max-time",
                "5",
                "-H",
                "Content-Type: application/json",
                "-d",
            ])
            .arg(json!({"run_uid": uid, "message": message}).to_string())
            .arg(format!("http://{}:8080/lines", side.pod_ip))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "runtimed control: {}",
            text(&out.stderr)
        );
    };
    let mut delays = Vec::new();
    for i in 0..5 {
        add_line(&side.uid_b, &format!("b-live-{i}"));
        let want = format!("a-live-{i}");
        let t0 = Instant::now();
        add_line(&side.uid_a, &want);
        let line = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{want} not delivered within 5 s"));
        delays.push(t0.elapsed());
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v["message"],
            want.as_str(),
            "the next line is A's, never B's: {line}"
        );
    }
    delays.sort();
    eprintln!("follow: container print to delivery {delays:?}");
    assert!(
        delays[2] < Duration::from_secs(1),
        "median print-to-delivery {:?} (all: {delays:?})",
        delays[2]
    );
}

// ---------------------------------------------------------------- the Console through kubectl port-forward

/// `kubectl port-forward svc/kruntimes-console`, stopped when dropped.
struct PortForward {
    port: u16,
    /// kubectl's stderr: why it stopped, when it did.
    log: PathBuf,
    child: KillOnDrop,
}

impl PortForward {
    /// Whether kubectl still runs, and what it printed on stderr.
    fn state(&mut self) -> String {
        let status = match self.child.0.try_wait() {
            Ok(None) => "still running".to_owned(),
            Ok(Some(status)) => format!("exited: {status}"),
            Err(e) => format!("unknown: {e}"),
        };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        format!("kubectl port-forward {status}; its stderr:\n{log}")
    }
}

/// Through `kubectl port-forward`: a login with the viewer's token (the
/// token never comes back; a session cookie does), `/api` lists the Runs and
/// reads A's log through kube-apiserver, `/v1` invoke reaches the gateway
/// by its DNS name as the operator and refuses the viewer, and an
/// `operations:ws` echo. Returns the port-forward, still running.
fn console_through_port_forward(ctx: &Ctx, side: &RuntimeSide, want_a: &[String]) -> PortForward {
    let c = ctx.c;
    let console_ca = ctx.console_ca();
    let (rt, run_a, run_f) = (&ctx.rt, &side.run_a, &side.run_f);
    let port = kruntimes_tests::env::free_port();
    let log = ctx.d().join("port-forward.log");
    let mut forward = Command::new("kubectl")
        .args([
            "--kubeconfig",
            c.var("KUBECONFIG"),
            "-n",
            NS,
            "port-forward",
        ])
        .arg("svc/kruntimes-console")
        .arg(format!("{port}:443"))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let fwd = stream::lines(&mut forward);
    let mut forward = PortForward {
        port,
        log,
        child: KillOnDrop(forward),
    };
    if fwd.recv_timeout(Duration::from_secs(30)).is_err() {
        panic!("port-forward did not start: {}", forward.state());
    }
    let origin = format!("Origin: https://{HOST}:{port}");
    let viewer = token(c, "viewer");
    let operator = token(c, "operator");
    let jar = ctx.d().join("cookies");
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &[
            "-H",
            &origin,
            "-H",
            "Content-Type: application/json",
            "-c",
            jar.to_str().unwrap(),
            "--data-binary",
            &json!({"token": viewer}).to_string(),
        ],
        "/api/session",
    );
    assert_eq!(code, 200, "{body}");
    assert!(!body.contains(&viewer), "the token never comes back");
    let jar_text = std::fs::read_to_string(&jar).unwrap();
    let cookie = jar_text
        .lines()
        .find(|l| l.contains("__Host-krt-session"))
        .and_then(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() >= 7).then(|| format!("{}={}", f[5], f[6]))
        })
        .expect("session cookie");
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &["-H", &format!("Cookie: {cookie}")],
        "/api/session",
    );
    assert_eq!(code, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["username"],
        "viewer"
    );
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &["-H", &format!("Cookie: {cookie}")],
        &format!("/api/namespaces/{TEAM}/runs?runtime={rt}"),
    );
    assert_eq!(code, 200, "{body}");
    for run in [run_a, &side.run_b] {
        assert!(body.contains(run.as_str()), "{run} listed: {body}");
    }
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &["-H", &format!("Cookie: {cookie}")],
        &format!("/api/namespaces/{TEAM}/runs/{run_a}/logs?tail=500"),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        messages(&serde_json::from_str(&body).unwrap())[..want_a.len()],
        want_a[..],
        "/api logs go through kube-apiserver to the aggregated API"
    );
    // /v1 invoke reaches the gateway Pod by its DNS name.
    let uid_f = &side.uid_f;
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &[
            "-H",
            &format!("Authorization: Bearer {operator}"),
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"input":7}"#,
        ],
        &format!("/v1/namespaces/{TEAM}/runs/{run_f}/{uid_f}/invoke"),
    );
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["user"], "operator", "{v}");
    assert_eq!(v["body"]["input"], 7, "{v}");
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &[
            "-H",
            &format!("Authorization: Bearer {viewer}"),
            "--data-binary",
            "{}",
        ],
        &format!("/v1/namespaces/{TEAM}/runs/{run_f}/{uid_f}/invoke"),
    );
    assert_eq!(code, 403, "a viewer never runs anything: {body}");
    operations_echo(ctx, &console_ca, port, &operator, &side.run_s, &side.uid_s);
    forward
}

/// The browser suite's core flow in Chromium through the same
/// port-forward, which ends with this step.
fn browser_core_flow_through_port_forward(
    ctx: &Ctx,
    side: &RuntimeSide,
    want_a: &[String],
    mut forward: PortForward,
) {
    let mut tail_a = want_a.to_vec();
    tail_a.extend((0..5).map(|i| format!("a-live-{i}")));
    let (uid_a, pod_ip) = (&side.uid_a, &side.pod_ip);
    let flow = BrowserFlow {
        ca: &ctx.console_ca(),
        port: forward.port,
        viewer: &token(ctx.c, "viewer"),
        runtime: &ctx.rt,
        run: &side.run_a,
        messages: &tail_a,
        append: &format!(
            r#"curl -sSf --max-time 5 -o /dev/null -H "Content-Type: application/json" -d "{{\"run_uid\":\"{uid_a}\",\"message\":\"$1\"}}" http://{pod_ip}:8080/lines"#
        ),
    };
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| browser_core_flow(&flow)));
    if let Err(panic) = outcome {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!("{why}\n{}", forward.state());
    }
    drop(forward);
}

// ---------------------------------------------------------------- HA: a Console Pod deleted, an upgrade and a rollback, under load

/// The load loop started; a Console Pod deleted and replaced with no failed
/// request. Returns the loop, still running, for the next steps.
fn ha_console_pod_deleted_under_load(ctx: &Ctx, side: &RuntimeSide, installed: &Installed) -> Load {
    let service = ctx.ok(
        "reading Service kruntimes-console",
        ctx.api::<Service>(NS).get("kruntimes-console"),
    );
    let cluster_ip = service
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("the Service's clusterIP");
    let load = Load::start(ctx.c, &ctx.console_ca(), &cluster_ip, &side.run_a, &ctx.rt);
    load.wait_for_more(10, "before a Console Pod is deleted");
    let victim = installed.pods[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    ctx.ok(
        &format!("deleting Console Pod {victim}"),
        ctx.api::<Pod>(NS).delete(&victim, &DeleteParams::default()),
    );
    eventually(&format!("Console Pod {victim} gone"), 90, || {
        ctx.pod_json(NS, &victim).is_none().then_some(())
    });
    let after_delete = ctx.wait_console_pods(2, &ctx.image);
    assert!(
        after_delete
            .iter()
            .all(|p| p["metadata"]["name"] != victim.as_str())
    );
    load.wait_for_more(10, "after the deleted Pod was replaced");
    load.check("deleting a Console Pod");
    load
}

/// `helm upgrade` to a new image tag (the same image tagged anew in the
/// node's containerd) with no failed request.
fn ha_helm_upgrade_under_load(ctx: &Ctx, load: &Load) {
    let c = ctx.c;
    let next_tag = format!("{}-next", ctx.img.console_tag);
    let next_image = format!("{}:{next_tag}", ctx.img.console_repo);
    let out = Command::new("ctr")
        .args([
            "--address",
            c.var("CLUSTER_CONTAINERD"),
            "-n",
            "k8s.io",
            "images",
            "tag",
            "--force",
        ])
        .args([&ctx.image, &next_image])
        .output()
        .expect("ctr");
    assert!(
        out.status.success(),
        "ctr images tag: {}",
        text(&out.stderr)
    );
    c.helm_ok(&[
        "upgrade",
        RELEASE,
        "chart",
        "-n",
        NS,
        "--reuse-values",
        "--set",
        &format!("console.image.tag={next_tag}"),
        "--wait",
        "--timeout",
        "5m",
    ]);
    ctx.wait_console_pods(2, &next_image);
    load.wait_for_more(10, "after the upgrade");
    load.check("helm upgrade to a new image tag");
}

/// `helm rollback` to the first revision with no failed request; the load
/// stopped, the follows the old Pods ended checked. Returns the Console
/// Pods after the rollback.
fn ha_helm_rollback_under_load(ctx: &Ctx, load: Load) -> Vec<Value> {
    let c = ctx.c;
    c.helm_ok(&[
        "rollback",
        RELEASE,
        "1",
        "-n",
        NS,
        "--wait",
        "--timeout",
        "5m",
    ]);
    let pods = ctx.wait_console_pods(2, &ctx.image);
    load.wait_for_more(10, "after the rollback");
    let follows = load.stop("helm rollback");
    eprintln!("follows ended by the Pods they were on: {follows}");
    let history = c.helm_ok(&["history", RELEASE, "-n", NS, "-o", "json"]);
    let revisions: Vec<Value> = serde_json::from_str(&history).unwrap();
    assert_eq!(revisions.len(), 3, "{history}");
    assert_eq!(revisions[2]["status"], "deployed", "{history}");
    pods
}

// ---------------------------------------------------------------- TLS rotation

/// The TLS Secret replaced (a new CA) and the APIService's caBundle with
/// it: both listeners of both Pods serve the new certificate without a
/// restart, and `runs/log` works through it.
fn tls_rotation_without_a_restart(ctx: &Ctx, side: &RuntimeSide, pods: &[Value]) {
    let (c, d) = (ctx.c, ctx.d());
    let restarts = |pods: &[Value]| -> Vec<(String, i64)> {
        pods.iter()
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_owned(),
                    p["status"]["containerStatuses"][0]["restartCount"]
                        .as_i64()
                        .unwrap_or(-1),
                )
            })
            .collect()
    };
    let before = restarts(pods);
    pki(
        d,
        &format!(
            "pki_ca \"$D\" ca2 kruntimes-console-rotated-ca; pki_cert \"$D\" ca2 tls2 /CN={HOST} serverAuth,clientAuth DNS:kruntimes-console,DNS:kruntimes-console.{NS},DNS:{HOST},DNS:{HOST}.cluster.local"
        ),
    );
    let b64 = |f: &str| B64.encode(std::fs::read(d.join(f)).unwrap());
    ctx.ok(
        "replacing Secret kruntimes-console-tls",
        ctx.api::<Secret>(NS).patch(
            "kruntimes-console-tls",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {
                "tls.crt": b64("tls2.crt"), "tls.key": b64("tls2.key"), "ca.crt": b64("ca2.crt"),
            }})),
        ),
    );
    ctx.ok(
        &format!("the caBundle of APIService {APISERVICE}"),
        ctx.apiservices().patch(
            APISERVICE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"caBundle": b64("ca2.crt")}})),
        ),
    );
    for p in pods {
        let ip = p["status"]["podIP"].as_str().unwrap();
        for port in [8443, 9443] {
            eventually(
                &format!("{ip}:{port} serves the rotated certificate"),
                240,
                || {
                    issuer(ip, port)
                        .contains("kruntimes-console-rotated-ca")
                        .then_some(())
                },
            );
        }
    }
    assert_eq!(
        restarts(&ctx.console_pods()),
        before,
        "no Pod restarted or was replaced"
    );
    eventually("APIService Available with the new caBundle", 120, || {
        ctx.apiservice_available().then_some(())
    });
    eventually("runs/log through the rotated certificate", 60, || {
        run_log(c, "viewer", &side.run_a, "?tailLines=1").ok()
    });
}

// ---------------------------------------------------------------- helm test

/// What the check looks at, from the host: the APIService's conditions,
/// the release's Pods and the Service's endpoints; and the check Pod's own
/// lines, what it waited for (for a failed `helm test`).
fn installation_state(c: &Cluster) -> String {
    let get = |args: &[&str]| {
        let out = Command::new("kubectl")
            .env("KUBECONFIG", c.var("KUBECONFIG"))
            .args(args)
            .output()
            .expect("kubectl");
        format!(
            "$ kubectl {}\n{}{}",
            args.join(" "),
            text(&out.stdout),
            text(&out.stderr)
        )
    };
    [
        get(&[
            "get",
            "apiservice",
            APISERVICE,
            "-o",
            "jsonpath={.status.conditions}",
        ]),
        get(&["-n", NS, "get", "pods,endpointslices", "-o", "wide"]),
        get(&["-n", NS, "logs", "pod/kruntimes-console-test"]),
    ]
    .join("\n")
}

/// `kruntimes-console check` from the host against the cluster.
fn console_check(c: &Cluster, timeout: &str) -> Output {
    Command::new(kruntimes_tests::env::bin_dir().join("kruntimes-console"))
        .args([
            "check",
            "--kubeconfig",
            c.var("KUBECONFIG"),
            "--namespace",
            NS,
        ])
        .args(["--timeout", timeout])
        .output()
        .expect("kruntimes-console check")
}

/// `helm test` passes, and the same check run from the host reports the
/// APIService, discovery and both endpoints.
fn helm_test_and_check_from_the_host(ctx: &Ctx) {
    let c = ctx.c;
    // Not `--logs`: a passed check's Pod is deleted at once (its hook's
    // delete policy) and helm then fails to read its logs. A failed one is
    // kept, and `installation_state` reads its lines.
    let test = c.helm(&["test", RELEASE, "-n", NS, "--timeout", "3m"]);
    let out = text(&test.stdout);
    assert!(
        test.status.success()
            && out.contains("TEST SUITE:     kruntimes-console-test\n")
            && !out.contains("Phase:          Failed"),
        "helm test failed: {out}{}\n{}",
        text(&test.stderr),
        installation_state(c)
    );
    let out = console_check(c, "60s");
    let report = text(&out.stdout);
    assert!(out.status.success(), "check: {report}{}", text(&out.stderr));
    assert!(
        report.contains(&format!("ok: APIService {APISERVICE} is Available")),
        "{report}"
    );
    assert!(
        report.contains("ok: discovery of logs.kruntimes.io/v1alpha1 lists runs/log"),
        "{report}"
    );
    assert!(
        report.contains("ok: 2 ready endpoint(s) of Service kruntimes-console answer /ready"),
        "{report}"
    );
}

// ---------------------------------------------------------------- helm uninstall

/// `helm uninstall` removes the APIService and every object of the
/// release, cluster-wide ones too; the check then fails and says why.
fn uninstall_removes_everything(ctx: &Ctx) {
    let c = ctx.c;
    c.helm_ok(&["uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "3m"]);
    let apiservice = ctx.ok(
        &format!("reading APIService {APISERVICE}"),
        ctx.apiservices().get_opt(APISERVICE),
    );
    assert!(
        apiservice.is_none(),
        "the APIService is gone: {apiservice:?}"
    );
    let kinds = [
        ApiResource::erase::<Deployment>(&()),
        ApiResource::erase::<ReplicaSet>(&()),
        ApiResource::erase::<Pod>(&()),
        ApiResource::erase::<Service>(&()),
        ApiResource::erase::<ServiceAccount>(&()),
        ApiResource::erase::<Secret>(&()),
        ApiResource::erase::<ConfigMap>(&()),
        ApiResource::erase::<Role>(&()),
        ApiResource::erase::<RoleBinding>(&()),
        ApiResource::erase::<PodDisruptionBudget>(&()),
        ApiResource::erase::<ClusterRole>(&()),
        ApiResource::erase::<ClusterRoleBinding>(&()),
    ];
    let of_release = ListParams::default().labels(&format!("app.kubernetes.io/instance={RELEASE}"));
    let names = |ar: &ApiResource, lp: &ListParams| -> Vec<String> {
        let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), ar);
        ctx.ok(&format!("listing {}", ar.plural), api.list(lp))
            .items
            .iter()
            .map(|o| format!("{}/{}", ar.kind, o.name_any()))
            .collect()
    };
    eventually("nothing of the release left", 120, || {
        let left: Vec<String> = kinds.iter().flat_map(|ar| names(ar, &of_release)).collect();
        left.is_empty().then_some(()).or_else(|| {
            eprintln!("left: {left:?}");
            None
        })
    });
    for ar in [
        ApiResource::erase::<ClusterRole>(&()),
        ApiResource::erase::<ClusterRoleBinding>(&()),
    ] {
        let all = names(&ar, &ListParams::default());
        assert!(
            !all.iter().any(|n| n.contains("kruntimes-console")),
            "{}: {all:?}",
            ar.kind
        );
    }
    // The check now fails and says why.
    let out = console_check(c, "1s");
    assert!(!out.status.success());
    let why = text(&out.stderr);
    assert!(
        why.contains(&format!("reading APIService {APISERVICE}")),
        "{why}"
    );
}

/// `openssl s_client` to `ip:port`: the issuer of the certificate served.
fn issuer(ip: &str, port: u16) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect {ip}:{port} -servername {HOST} </dev/null 2>/dev/null | openssl x509 -noout -issuer"
        ))
        .output()
        .expect("openssl");
    text(&out.stdout)
}

/// What the browser's core flow needs (console/web/e2e/cluster.spec.ts).
struct BrowserFlow<'a> {
    ca: &'a Path,
    port: u16,
    viewer: &'a str,
    runtime: &'a str,
    run: &'a str,
    messages: &'a [String],
    /// `sh -c` command making the runtimed Pod print one record for `run`; the message is `$1`.
    append: &'a str,
}

/// `npm run e2e:cluster` in console/web: Chromium (CHROMIUM, default
/// Debian's /usr/bin/chromium) opens `https://HOST:port` through the
/// port-forward (the name mapped to 127.0.0.1, the certificate verified
/// against the Console CA), logs in with the viewer token, finds the Run in
/// the Runs of its runtime, reads its log tail, follows it while the Pod
/// prints a new record, and logs out. Skipped only with E2E_SKIP_BROWSER=1.
fn browser_core_flow(f: &BrowserFlow) {
    if std::env::var("E2E_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("E2E_SKIP_BROWSER=1: the browser core flow is NOT run");
        return;
    }
    let web = repo_root().join("console/web");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "{chromium} is missing: install Debian's chromium (hack/lib/deps.sh deps_apt chromium), set CHROMIUM, or skip the browser flow with E2E_SKIP_BROWSER=1"
    );
    assert!(
        web.join("node_modules/playwright-core").exists(),
        "console/web/node_modules is missing: run `npm ci` in console/web (hack/lib/deps.sh deps_web)"
    );
    let shots = repo_root().join("target/ui-shots");
    let out = Command::new("npm")
        .args(["run", "--silent", "e2e:cluster"])
        .current_dir(&web)
        .env("CHROMIUM", &chromium)
        .env("CONSOLE_URL", format!("https://{HOST}:{}", f.port))
        .env("CONSOLE_CA", f.ca)
        .env("E2E_HOST_RULES", format!("MAP {HOST} 127.0.0.1"))
        .env("E2E_VIEWER_TOKEN", f.viewer)
        .env("E2E_VIEWER_USER", "viewer")
        .env("E2E_NAMESPACE", TEAM)
        .env("E2E_RUNTIME", f.runtime)
        .env("E2E_RUN", f.run)
        .env("E2E_RUN_MESSAGES", json!(f.messages).to_string())
        .env("E2E_APPEND_CMD", f.append)
        .env("E2E_SHOTS", &shots)
        .env_remove("E2E_ONLY")
        .stdin(Stdio::null())
        .output()
        .expect("npm");
    let report = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let leaked = report.contains(f.viewer);
    let report = report.replace(f.viewer, "<viewer token>");
    eprintln!(
        "browser core flow (npm run e2e:cluster), screenshots in {}:\n{report}",
        shots.display()
    );
    assert!(!leaked, "the flow's output holds the viewer token");
    assert!(
        out.status.success(),
        "the browser core flow failed: {}",
        out.status
    );
    let last = text(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    let passed: u32 = last
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 2, "the flow's closing line: {last:?}");
}

/// An `echo` operation over `operations:ws` through the port-forward.
fn operations_echo(ctx: &Ctx, ca: &Path, port: u16, token: &str, run: &str, uid: &str) {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    ctx.block(async {
        let addr = format!("127.0.0.1:{port}");
        let target = WsTarget {
            addr: &addr,
            server_name: HOST,
            ca,
            client_cert: None,
        };
        let path = format!("/v1/namespaces/{TEAM}/runs/{run}/{uid}/operations:ws");
        let auth = format!("Bearer {token}");
        let mut ws = stream::ws_connect(&target, &path, &[("Authorization", &auth)])
            .await
            .expect("operations:ws upgrades");
        ws.send(Message::text(
            json!({"type": "send", "operation": {"command": "echo", "args": ["hello", "cluster"]}})
                .to_string(),
        ))
        .await
        .unwrap();
        let mut kinds = Vec::new();
        let mut output = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let m = tokio::time::timeout_at(deadline, ws.next())
                .await
                .expect("events within 20 s")
                .expect("socket open")
                .expect("no socket error");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            let kind = v["type"].as_str().unwrap_or_default().to_owned();
            if kind == "output" {
                output.push_str(v["data"].as_str().unwrap_or_default());
            }
            kinds.push(kind.clone());
            if kind == "terminal" {
                assert_eq!(v["exitCode"], 0, "{v}");
                break;
            }
        }
        assert_eq!(
            kinds.first().map(String::as_str),
            Some("accepted"),
            "{kinds:?}"
        );
        assert!(output.contains("hello cluster"), "{output:?}");
        let _ = ws.close(None).await;
    });
}

/// A bounded load loop against the Console Service's ClusterIP from the
/// host (as an in-cluster client would reach it, through kube-proxy) and
/// against `runs/log` through kube-apiserver (the APIService path), plus
/// follows that only the Pod holding them may end.
struct Load {
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<String>>>,
    counts: Arc<Mutex<[u64; 2]>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    follows: Vec<(KillOnDrop, mpsc::Receiver<String>)>,
}

/// A step that fails with the loop running stops it (its follows are
/// killed as they drop).
impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Load {
    /// Longest the loop runs whatever happens, and the most requests per worker.
    const LIMIT: Duration = Duration::from_secs(900);
    const MAX_REQUESTS: u64 = 20_000;

    fn start(c: &'static Cluster, ca: &Path, ip: &str, run: &str, rt: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let counts = Arc::new(Mutex::new([0u64; 2]));
        let mut workers = Vec::new();
        for kind in 0..2 {
            let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
            let (ca, ip, run, rt) = (ca.to_owned(), ip.to_owned(), run.to_owned(), rt.to_owned());
            let viewer = token(c, "viewer");
            workers.push(std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed)
                    && t0.elapsed() < Self::LIMIT
                    && n < Self::MAX_REQUESTS
                {
                    n += 1;
                    let result = if kind == 0 {
                        let (code, body) = curl(
                            &ca,
                            &ip,
                            443,
                            &["-H", &format!("Authorization: Bearer {viewer}")],
                            &format!("/api/namespaces/{TEAM}/runs?runtime={rt}&limit=5"),
                        );
                        (code == 200)
                            .then_some(())
                            .ok_or(format!("/api: {code} {body}"))
                    } else {
                        run_log(c, "viewer", &run, "?tailLines=5")
                            .map(|_| ())
                            .map_err(|e| format!("runs/log: {e}"))
                    };
                    counts.lock().unwrap()[kind] += 1;
                    if let Err(e) = result {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{:?}: {e}", t0.elapsed()));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }));
        }
        let viewer = token(c, "viewer");
        let follows = (0..4)
            .map(|_| {
                let mut child = Command::new("curl")
                    .args(["-sSN", "--max-time", "900", "--cacert"])
                    .arg(ca)
                    .args(["--resolve", &format!("{HOST}:443:{ip}")])
                    .args(["-H", &format!("Authorization: Bearer {viewer}")])
                    .arg(format!(
                        "https://{HOST}/api/namespaces/{TEAM}/runs/{run}/logs?follow=true&tail=1"
                    ))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let rx = stream::lines(&mut child);
                let child = KillOnDrop(child);
                rx.recv_timeout(Duration::from_secs(20))
                    .expect("a follow's first record");
                (child, rx)
            })
            .collect();
        Self {
            stop,
            failures,
            counts,
            workers,
            follows,
        }
    }

    /// Waits (bounded) until each worker has made `n` more requests than
    /// when called: the loop has run on past what just happened.
    fn wait_for_more(&self, n: u64, what: &str) {
        let from = *self.counts.lock().unwrap();
        eventually(
            &format!("{n} more requests of each kind {what} (from {from:?})"),
            60,
            || {
                let now = *self.counts.lock().unwrap();
                (now[0] >= from[0] + n && now[1] >= from[1] + n).then_some(())
            },
        );
    }

    /// No request has failed so far.
    fn check(&self, during: &str) {
        let f = self.failures.lock().unwrap();
        let counts = *self.counts.lock().unwrap();
        eprintln!(
            "load during {during}: /api {} and runs/log {} requests",
            counts[0], counts[1]
        );
        assert!(f.is_empty(), "failed requests during {during}: {f:#?}");
        assert!(
            counts[0] > 10 && counts[1] > 10,
            "the load loop ran: {counts:?}"
        );
    }

    /// Stops the loop, checks it, and checks that every follow that ended
    /// ended cleanly with the final Status of a stopping Pod; returns how
    /// many ended.
    fn stop(mut self, during: &str) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            w.join().unwrap();
        }
        self.check(during);
        let mut ended = 0;
        // A follow still running is killed as it drops.
        for (mut child, rx) in self.follows.drain(..) {
            if let Some(status) = child.0.try_wait().unwrap() {
                ended += 1;
                let lines: Vec<String> = rx.try_iter().collect();
                let last = lines.last().cloned().unwrap_or_default();
                let v: Value = serde_json::from_str(&last).unwrap_or_default();
                assert!(
                    status.success(),
                    "an ended follow exited cleanly: {status}, {last}"
                );
                assert_eq!(v["kind"], "Status", "an ended follow's last line: {last:?}");
                assert!(
                    v["message"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("shutting down"),
                    "{last}"
                );
            }
        }
        ended
    }
}
