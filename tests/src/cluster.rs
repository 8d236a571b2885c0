//! The real node of `hack/cluster`, for the suites that need Pods to run
//! (containerd, CNI, kube-proxy, CoreDNS).
//!
//! Cluster suites run only when `CLUSTER_STATE` names a running cluster
//! (`hack/test` starts one and sets it); otherwise each test writes
//! `skipped: no hack/cluster` and returns, so `cargo test` against
//! `hack/testenv` alone stays green and fast.
//!
//! Objects are read and written as the admin through the Kubernetes API
//! (kube, blocking on a runtime of the cluster's own); the suites keep the
//! CLIs where they are what is tested: `helm`, `kubectl get --raw` as a
//! user holding only a token (how a user reads `runs/log`) and `kubectl
//! port-forward`.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace as NamespaceObject, Pod, ServiceAccount};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::env::parse_exports;
use crate::objects::{self, describe};

/// Variables printed by `hack/cluster up`, and the admin's client.
pub struct Cluster {
    vars: std::collections::BTreeMap<String, String>,
    kube: OnceLock<Kube>,
}

/// The admin's client and the runtime its calls block on.
struct Kube {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

/// The running cluster, or `None` (after writing the skip line) without one.
pub fn cluster(test: &str) -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    let c = CLUSTER
        .get_or_init(|| {
            let state = std::env::var("CLUSTER_STATE").ok()?;
            let text = std::fs::read_to_string(Path::new(&state).join("env.sh"))
                .unwrap_or_else(|e| panic!("CLUSTER_STATE={state}, but its env.sh: {e}"));
            Some(Cluster {
                vars: parse_exports(&text),
                kube: OnceLock::new(),
            })
        })
        .as_ref();
    if c.is_none() {
        // Straight to the stream: the test harness captures only print macros.
        let _ = writeln!(
            std::io::stderr(),
            "{test}: skipped: no hack/cluster (run `hack/cluster up` and set CLUSTER_STATE)"
        );
    }
    c
}

impl Cluster {
    /// A variable of the cluster (panics when missing: the cluster is broken).
    pub fn var(&self, name: &str) -> &str {
        self.vars
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("hack/cluster did not export {name}"))
    }

    pub fn state(&self) -> PathBuf {
        PathBuf::from(self.var("CLUSTER_STATE"))
    }

    fn kube(&self) -> &Kube {
        self.kube.get_or_init(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let client = runtime.block_on(async {
                let kubeconfig = kube::config::Kubeconfig::read_from(self.var("KUBECONFIG"))
                    .expect("the cluster's admin kubeconfig");
                let config = kube::Config::from_custom_kubeconfig(
                    kubeconfig,
                    &kube::config::KubeConfigOptions::default(),
                )
                .await
                .expect("admin client configuration");
                Client::try_from(config).expect("admin client")
            });
            Kube { runtime, client }
        })
    }

    /// The admin's Kubernetes client on the cluster.
    pub fn client(&self) -> Client {
        self.kube().client.clone()
    }

    /// Runs `f` to its end (the admin client's calls) from a test's thread.
    pub fn block<F: Future>(&self, f: F) -> F::Output {
        self.kube().runtime.block_on(f)
    }

    /// The API of a namespaced kind in `ns`.
    pub fn api<K>(&self, ns: &str) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client(), ns)
    }

    /// An object as JSON, or `None` when it does not exist; panics on any
    /// other error.
    pub fn get_opt<K>(&self, api: &Api<K>, name: &str) -> Option<Value>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + serde::Serialize,
    {
        self.block(api.get_opt(name))
            .unwrap_or_else(|e| panic!("reading {name}: {}", describe(&e)))
            .map(|o| serde_json::to_value(o).expect("an object as JSON"))
    }

    /// An object as JSON (`kubectl get -o json`); panics unless it exists.
    pub fn get<K>(&self, api: &Api<K>, name: &str) -> Value
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + serde::Serialize,
    {
        self.block(objects::get_json(api, name))
    }

    /// The objects of `api` (a label selector, or "" for all) as JSON.
    pub fn list<K>(&self, api: &Api<K>, labels: &str) -> Vec<Value>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + serde::Serialize,
    {
        let mut lp = ListParams::default();
        if !labels.is_empty() {
            lp = lp.labels(labels);
        }
        self.block(api.list(&lp))
            .unwrap_or_else(|e| panic!("listing {labels:?}: {}", describe(&e)))
            .items
            .into_iter()
            .map(|o| serde_json::to_value(o).expect("an object as JSON"))
            .collect()
    }

    /// An object of a kind the cluster serves, by `apiVersion` and `kind`
    /// (CRDs such as cert-manager's and the Prometheus Operator's), as JSON,
    /// or `None` when it does not exist.
    pub fn get_kind(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
        self.block(async {
            let api = objects::api_for(&self.client(), api_version, kind, Some(ns)).await?;
            match api.get_opt(name).await {
                Ok(o) => Ok(o.map(|o| serde_json::to_value(o).expect("an object as JSON"))),
                Err(e) => Err(format!("reading {kind} {ns}/{name}: {}", describe(&e))),
            }
        })
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Deletes the objects of a kind that carry `labels` (or all of them
    /// for ""), in namespace `ns` or in every namespace (`None`), without
    /// waiting for them to go (`kubectl delete -l ... --wait=false`). A
    /// kind the cluster does not serve has nothing to delete. For clean-ups:
    /// an error is returned, not raised.
    pub fn delete_all(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        labels: &str,
    ) -> Result<(), String> {
        self.block(async {
            let client = self.client();
            // Not served (a CRD not installed): nothing to delete.
            let Ok((ar, scope)) = objects::resource_for(&client, api_version, kind).await else {
                return Ok(());
            };
            let api = objects::api_in(&client, &ar, &scope, ns);
            let mut lp = ListParams::default();
            if !labels.is_empty() {
                lp = lp.labels(labels);
            }
            let items = api
                .list(&lp)
                .await
                .map_err(|e| format!("listing {kind} {labels:?}: {}", describe(&e)))?;
            for o in items {
                let api = objects::api_in(&client, &ar, &scope, o.metadata.namespace.as_deref());
                let name = o.metadata.name.clone().unwrap_or_default();
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(format!("deleting {kind} {name}: {}", describe(&e))),
                }
            }
            Ok(())
        })
    }

    /// Merges `status` into a Run's status subresource
    /// (`kubectl patch run --subresource=status --type=merge`).
    pub fn patch_run_status(&self, ns: &str, run: &str, status: Value) {
        self.block(async {
            let api =
                objects::api_for(&self.client(), "kruntimes.io/v1alpha1", "Run", Some(ns)).await?;
            api.patch_status(
                run,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .map(|_| ())
            .map_err(|e| format!("patching the status of Run {ns}/{run}: {}", describe(&e)))
        })
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A container's log (`kubectl logs`): `container` (the Pod's only one
    /// when `None`), the last `tail` lines, the previous container's.
    pub fn logs(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        tail: Option<i64>,
        previous: bool,
    ) -> Result<String, String> {
        let lp = LogParams {
            container: container.map(str::to_owned),
            tail_lines: tail,
            previous,
            ..LogParams::default()
        };
        self.block(self.api::<Pod>(ns).logs(pod, &lp))
            .map_err(|e| format!("the log of {ns}/{pod}: {}", describe(&e)))
    }

    /// [`Cluster::logs`]; panics unless it is read.
    pub fn logs_ok(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        tail: Option<i64>,
        previous: bool,
    ) -> String {
        self.logs(ns, pod, container, tail, previous)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A GET of `path` as the admin (`kubectl get --raw`): the body, or the
    /// API's refusal.
    pub fn get_raw(&self, path: &str) -> Result<String, String> {
        let request = http::Request::get(path)
            .body(Vec::new())
            .expect("a GET request");
        self.block(self.client().request_text(request))
            .map_err(|e| format!("GET {path}: {}", describe(&e)))
    }

    /// Server-side applies a YAML stream as the admin (`kubectl apply
    /// --server-side --force-conflicts -f -`).
    pub fn apply(&self, yaml: &str) {
        self.block(objects::apply(&self.client(), yaml))
            .unwrap_or_else(|e| panic!("applying: {e}\n{yaml}"));
    }

    /// A namespace of its own for one test, deleted when dropped.
    pub fn namespace(&self, prefix: &str) -> Namespace<'_> {
        let name = crate::env::unique(prefix);
        let object: NamespaceObject =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("a Namespace");
        self.block(
            Api::<NamespaceObject>::all(self.client()).create(&PostParams::default(), &object),
        )
        .unwrap_or_else(|e| panic!("creating namespace {name}: {}", describe(&e)));
        // Pods need the namespace's default ServiceAccount (kube-controller-manager makes it).
        let accounts = self.api::<ServiceAccount>(&name);
        eventually(&format!("ServiceAccount default in {name}"), 60, || {
            self.get_opt(&accounts, "default").map(|_| ())
        });
        Namespace {
            cluster: self,
            name,
        }
    }
}

/// A test's namespace; deleting it removes its Pods from the node.
pub struct Namespace<'a> {
    cluster: &'a Cluster,
    pub name: String,
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let c = self.cluster;
        let _ = c.block(
            Api::<NamespaceObject>::all(c.client()).delete(&self.name, &DeleteParams::background()),
        );
    }
}

/// Polls `f` every half second until it returns `Some`, for at most `secs`
/// seconds; panics with `what` when it never does.
pub fn eventually<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s: {what}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The Console's namespace and Helm release on the cluster.
pub const CONSOLE_NS: &str = "kruntimes-system";
pub const RELEASE: &str = "kruntimes-console";

impl Cluster {
    /// `hack/helm ARGS` against the cluster.
    pub fn helm(&self, args: &[&str]) -> Output {
        Command::new(crate::env::repo_root().join("hack/helm"))
            .current_dir(crate::env::repo_root())
            .env("KUBECONFIG", self.var("KUBECONFIG"))
            .args(args)
            .output()
            .expect("running hack/helm")
    }

    /// `hack/helm ARGS`; panics unless it succeeds; its stdout.
    pub fn helm_ok(&self, args: &[&str]) -> String {
        let out = self.helm(args);
        assert!(
            out.status.success(),
            "helm {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The Console image `hack/image --state $CLUSTER_STATE` built and
    /// imported: (repository, tag).
    pub fn console_image(&self) -> (String, String) {
        let path = self.state().join("images.env");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run hack/image --state $CLUSTER_STATE)",
                path.display()
            )
        });
        let vars = parse_exports(&text);
        let (repo, tag) = vars["IMAGE_CONSOLE"]
            .rsplit_once(':')
            .expect("repository:tag");
        (repo.to_owned(), tag.to_owned())
    }

    /// The Console Pods of the release (not its helm test Pod).
    pub fn console_pods(&self) -> Vec<serde_json::Value> {
        self.list(
            &self.api::<Pod>(CONSOLE_NS),
            "app.kubernetes.io/name=kruntimes-console",
        )
        .into_iter()
        .filter(|p| p["metadata"]["name"] != "kruntimes-console-test")
        .collect()
    }

    /// Waits until `n` Console Pods exist, all Ready.
    pub fn wait_console_pods(&self, n: usize) -> Vec<serde_json::Value> {
        eventually(&format!("{n} ready Console Pod(s)"), 240, || {
            let pods = self.console_pods();
            (pods.len() == n && pods.iter().all(pod_ready)).then_some(pods)
        })
    }

    /// Whether APIService `name` reports Available.
    pub fn apiservice_available(&self, name: &str) -> bool {
        let v = self.get_opt(&self.apiservices(), name).unwrap_or_default();
        v["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Available" && c["status"] == "True")
        })
    }

    /// The cluster's APIServices.
    pub fn apiservices(&self) -> Api<APIService> {
        Api::all(self.client())
    }

    /// A kubeconfig file at `path` for the cluster with `user` (the YAML of
    /// a kubeconfig `users[].user`, indented by four spaces).
    pub fn kubeconfig_for(&self, path: &Path, user: &str) {
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: dev\nclusters:\n- name: krt\n  cluster:\n    server: {}\n    certificate-authority: {}\ncontexts:\n- name: dev\n  context: {{cluster: krt, user: dev}}\nusers:\n- name: dev\n  user:\n{user}",
            self.var("CLUSTER_APISERVER"),
            self.var("CLUSTER_CA")
        );
        std::fs::write(path, text).expect("writing a kubeconfig");
    }
}

/// Whether a Pod (JSON) is Ready and not being deleted.
pub fn pod_ready(pod: &serde_json::Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}
