//! Runtime Pods and Runs for the benchmarks, made with the admin identity of
//! the bench environment.

use std::path::PathBuf;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::envfile::BenchEnv;

/// Objects in one namespace of the bench environment.
pub struct Fixtures {
    pub client: Client,
    pub ns: String,
    node: String,
    logs: PathBuf,
}

fn run_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Run"),
        "runs",
    )
}

impl Fixtures {
    pub async fn new(env: &BenchEnv, ns: &str) -> Result<Self> {
        let kubeconfig = kube::config::Kubeconfig::read_from(env.var("KUBECONFIG")?)?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        Ok(Self {
            client: Client::try_from(config)?,
            ns: ns.to_owned(),
            node: env.var("TESTENV_NODE")?.to_owned(),
            logs: PathBuf::from(env.var("TESTENV_LOGS")?),
        })
    }

    fn runs(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.ns, &run_resource())
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// A Runtime Pod bound to the fake Node with a `runtimed` container; its UID.
    pub async fn create_pod(&self, name: &str, runtime: &str) -> Result<String> {
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"runtime": runtime}},
            "spec": {"nodeName": self.node,
                     "containers": [{"name": "runtimed", "image": "kruntimes/runtimed:bench"}]},
        }))?;
        let created = self
            .pods()
            .create(&PostParams::default(), &pod)
            .await
            .with_context(|| format!("creating pod {name}"))?;
        created.metadata.uid.context("pod without a UID")
    }

    /// The Pod's UID when it exists.
    pub async fn pod_uid(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .pods()
            .get_opt(name)
            .await?
            .and_then(|p| p.metadata.uid))
    }

    /// Deletes a Pod at once (grace period 0).
    pub async fn delete_pod(&self, name: &str) -> Result<()> {
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        let _ = self.pods().delete(name, &dp).await;
        Ok(())
    }

    /// A task Run of `runtime`; its UID.
    pub async fn create_run(&self, name: &str, runtime: &str) -> Result<String> {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
            "metadata": {"name": name},
            "spec": {"runtime": runtime, "mode": {"task": {}}},
        }))?;
        let created = self
            .runs()
            .create(&PostParams::default(), &obj)
            .await
            .with_context(|| format!("creating run {name}"))?;
        created.metadata.uid.context("run without a UID")
    }

    /// A task Run of `runtime`; its UID and `metadata.creationTimestamp`.
    pub async fn create_run_stamped(
        &self,
        name: &str,
        runtime: &str,
    ) -> Result<(String, jiff::Timestamp)> {
        let uid = self.create_run(name, runtime).await?;
        let created = self
            .run_created(name)
            .await?
            .context("the Run vanished after it was created")?;
        Ok((uid, created))
    }

    /// The Run's `metadata.creationTimestamp` when it exists.
    pub async fn run_created(&self, name: &str) -> Result<Option<jiff::Timestamp>> {
        let Some(run) = self.runs().get_opt(name).await? else {
            return Ok(None);
        };
        let at = run
            .metadata
            .creation_timestamp
            .context("run without a creationTimestamp")?;
        Ok(Some(at.0.to_string().parse()?))
    }

    /// The Run's UID when it exists.
    pub async fn run_uid(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .runs()
            .get_opt(name)
            .await?
            .and_then(|r| r.metadata.uid))
    }

    pub async fn delete_run(&self, name: &str) -> Result<()> {
        let _ = self.runs().delete(name, &DeleteParams::default()).await;
        Ok(())
    }

    /// Merges `status` into the Run's status.
    pub async fn set_run_status(&self, name: &str, status: Value) -> Result<()> {
        self.runs()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .with_context(|| format!("patching the status of run {name}"))?;
        Ok(())
    }

    /// The runtimed log file the fake kubelet serves for a Pod.
    pub fn log_path(&self, pod: &str) -> PathBuf {
        self.logs
            .join(format!("{}_{pod}", self.ns))
            .join("runtimed.log")
    }
}
