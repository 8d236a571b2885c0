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
