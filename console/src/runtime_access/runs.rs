//! Runs resolved from a watch-backed cache (the Console's own identity).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruntimes_core::run::{Phase, Run, RunStatus};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

/// Why the Run cache cannot hand out the Run a `/v1` call names.
#[derive(Debug, thiserror::Error)]
pub enum RunUnavailable {
    /// The cache has not finished its first list; the call may be retried soon.
    #[error("the Run cache is still loading; retry shortly")]
    Loading,
    /// No Run of that name in the namespace, or it has another UID (a Run
    /// recreated under the same name).
    #[error("run {ns}/{name} with uid {uid} not found")]
    NotFound {
        /// The namespace the call named.
        ns: String,
        /// The Run name the call named.
        name: String,
        /// The UID the call named.
        uid: String,
    },
    /// The Run is not in the mode the endpoint serves (an invoke of a session
    /// Run, say).
    #[error("run {ns}/{name} is a {actual} Run; this endpoint serves {wanted} Runs")]
    WrongMode {
        /// The Run's namespace.
        ns: String,
        /// The Run's name.
        name: String,
        /// The Run's mode: `task`, `function`, `session`, or `unknown` when
        /// none is set.
        actual: &'static str,
        /// The mode the endpoint serves: `function` or `session`.
        wanted: &'static str,
    },
    /// The Run is not Ready (yet, or any more).
    #[error(
        "run {ns}/{name} is {phase}, not Ready{}",
        if *finished { "; it has finished and will not become Ready" } else { "" }
    )]
    NotReady {
        /// The Run's namespace.
        ns: String,
        /// The Run's name.
        name: String,
        /// The Run's phase.
        phase: String,
        /// The Run is in a terminal phase.
        finished: bool,
    },
}

/// What a `/v1` call needs of the Run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A function Run, for `invoke`.
    Function,
    /// A session Run, for `operations:ws`.
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

    /// Whether the cache has finished its first list.
    pub fn is_ready(&self) -> bool {
        futures::FutureExt::now_or_never(self.store.wait_until_ready()).is_some()
    }

    /// The Ready Run `ns/name` with this UID, in the wanted mode.
    pub fn resolve(
        &self,
        ns: &str,
        name: &str,
        uid: &str,
        mode: Mode,
    ) -> Result<Arc<Run>, RunUnavailable> {
        if !self.is_ready() {
            return Err(RunUnavailable::Loading);
        }
        let not_found = || RunUnavailable::NotFound {
            ns: ns.to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
        };
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
            return Err(RunUnavailable::WrongMode {
                ns: ns.to_owned(),
                name: name.to_owned(),
                actual,
                wanted: mode.name(),
            });
        }
        if Phase::parse(run.phase()) != Some(Phase::Ready) {
            return Err(RunUnavailable::NotReady {
                ns: ns.to_owned(),
                name: name.to_owned(),
                phase: run.phase().to_owned(),
                finished: run.is_terminal(),
            });
        }
        Ok(run)
    }
}
