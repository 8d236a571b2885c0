//! The real node of `hack/cluster`, for the suites that need Pods to run
//! (containerd, CNI, kube-proxy, CoreDNS).
//!
//! Cluster suites run only when `CLUSTER_STATE` names a running cluster
//! (`hack/test` starts one and sets it); otherwise each test writes
//! `skipped: no hack/cluster` and returns, so `cargo test` against
//! `hack/testenv` alone stays green and fast.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::env::parse_exports;

/// Variables printed by `hack/cluster up`.
#[derive(Debug)]
pub struct Cluster {
    vars: std::collections::BTreeMap<String, String>,
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

    /// `kubectl` as the admin user.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.var("KUBECONFIG"))
            .args(args)
            .output()
            .expect("running kubectl")
    }

    /// `kubectl` as the admin user; panics unless it succeeds; its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply -f -` of `yaml`.
    pub fn apply(&self, yaml: &str) {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.var("KUBECONFIG"))
            .args(["apply", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running kubectl apply");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(yaml.as_bytes())
            .expect("writing to kubectl");
        let out = child.wait_with_output().expect("kubectl apply");
        assert!(
            out.status.success(),
            "kubectl apply failed: {}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A namespace of its own for one test, deleted when dropped.
    pub fn namespace(&self, prefix: &str) -> Namespace<'_> {
        let name = crate::env::unique(prefix);
        self.kubectl_ok(&["create", "namespace", &name]);
        // Pods need the namespace's default ServiceAccount (kube-controller-manager makes it).
        eventually(&format!("ServiceAccount default in {name}"), 60, || {
            self.kubectl(&["-n", &name, "get", "serviceaccount", "default"])
                .status
                .success()
                .then_some(())
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
        let _ = self
            .cluster
            .kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
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

    /// `kubectl ... -o json` as the admin user.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok(&a)).expect("kubectl JSON")
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
        self.json(&[
            "-n",
            CONSOLE_NS,
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/name=kruntimes-console",
        ])["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
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
        let out = self.kubectl(&["get", "apiservice", name, "-o", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        out.status.success()
            && v["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            })
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
