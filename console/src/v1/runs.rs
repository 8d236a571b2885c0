//! Runs resolved from a watch-backed cache (the Console's own identity).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruntimes_apiserver::run::{Run, RunStatus};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use crate::error::ConsoleError;

/// What a `/v1` call needs of the Run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Function,
    Session,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Function => "function",
            Mode::Session => "session",
        }
    }
}

/// The Run cache.
#[derive(Clone)]
pub struct RunCache {
    store: Store<Run>,
}

impl RunCache {
    /// Starts the reflector; it resumes by itself after API server restarts.
    pub fn start(client: Client) -> Self {
        let (store, writer) = reflector::store();
        let api: Api<Run> = Api::all(client);
        // Keep only what /v1 reads (identity, runtime, mode kind, phase): a
        // cluster may hold many thousands of Runs.
        let objects = watcher(api, watcher::Config::default()).modify(|run: &mut Run| {
            let m = std::mem::take(&mut run.metadata);
            run.metadata = ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                uid: m.uid,
                resource_version: m.resource_version,
                ..ObjectMeta::default()
            };
            if let Some(mode) = &mut run.spec.mode {
                for v in [&mut mode.task, &mut mode.function].into_iter().flatten() {
                    *v = serde_json::Value::Null;
                }
            }
            if let Some(status) = &mut run.status {
                *status = RunStatus {
                    phase: status.phase.take(),
                    ..RunStatus::default()
                };
            }
        });
        let stream = reflector::reflector(writer, objects)
            .default_backoff()
            .touched_objects();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                if let Err(error) = ev {
                    tracing::warn!(%error, "watching runs for /v1 failed; retrying");
                }
            }
        });
        Self { store }
    }

    pub fn is_ready(&self) -> bool {
        futures::FutureExt::now_or_never(self.store.wait_until_ready()).is_some()
    }

    /// Completes once the first full list of Runs is in the cache.
    pub async fn loaded(&self) {
        if self.store.wait_until_ready().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// The Ready Run `ns/name` with this UID, in the wanted mode.
    pub fn resolve(
        &self,
        ns: &str,
        name: &str,
        uid: &str,
        mode: Mode,
    ) -> Result<Arc<Run>, ConsoleError> {
        if !self.is_ready() {
            let mut e = ConsoleError::unavailable("the Run cache is still loading; retry shortly");
            e.retry_after = Some(2);
            return Err(e);
        }
        let not_found =
            || ConsoleError::not_found(format!("run {ns}/{name} with uid {uid} not found"));
        let run = self
            .store
            .get(&ObjectRef::new(name).within(ns))
            .ok_or_else(not_found)?;
        if run.metadata.uid.as_deref() != Some(uid) {
            return Err(not_found());
        }
        let m = run.spec.mode.as_ref();
        let actual = match m {
            Some(m) if m.function.is_some() => "function",
            Some(m) if m.session.is_some() => "session",
            Some(m) if m.task.is_some() => "task",
            _ => "unknown",
        };
        if actual != mode.name() {
            return Err(ConsoleError::bad_request(format!(
                "run {ns}/{name} is a {actual} Run; this endpoint serves {} Runs",
                mode.name()
            )));
        }
        let phase = run.phase();
        if phase != "Ready" {
            let mut e = ConsoleError::unavailable(format!("run {ns}/{name} is {phase}, not Ready"));
            e.retry_after = Some(if run.is_terminal() { 30 } else { 2 });
            if run.is_terminal() {
                e.message
                    .push_str("; it has finished and will not become Ready");
            }
            return Err(e);
        }
        Ok(run)
    }
}
