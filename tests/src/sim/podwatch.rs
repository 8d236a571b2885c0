//! Knows which Pods exist (name → UID) through a metadata watch, so log followers can end when
//! their Pod is deleted or replaced by a Pod of the same name.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::PartialObjectMeta;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Config};

/// Errors while connecting to kube-apiserver.
#[derive(Debug, thiserror::Error)]
pub enum PodWatchError {
    #[error("cannot read kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("cannot build a client from kubeconfig {path}: {source}")]
    Client { path: String, source: kube::Error },
}

type PodMeta = PartialObjectMeta<Pod>;

/// A live view of Pod names and UIDs in every namespace.
#[derive(Clone)]
pub struct PodWatch {
    store: Store<PodMeta>,
}

impl PodWatch {
    /// Starts watching Pods with the credentials of an (admin) kubeconfig.
    pub async fn start(kubeconfig: &Path) -> Result<Self, PodWatchError> {
        let path = kubeconfig.display().to_string();
        let file =
            Kubeconfig::read_from(kubeconfig).map_err(|source| PodWatchError::Kubeconfig {
                path: path.clone(),
                source,
            })?;
        let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
            .await
            .map_err(|source| PodWatchError::Kubeconfig {
                path: path.clone(),
                source,
            })?;
        let client =
            Client::try_from(config).map_err(|source| PodWatchError::Client { path, source })?;
        Ok(Self::with_client(client))
    }

    /// Starts watching Pods with an existing client.
    pub fn with_client(client: Client) -> Self {
        let (store, writer) = reflector::store::<PodMeta>();
        let events = reflector::reflector(
            writer,
            watcher::watcher(Api::<PodMeta>::all(client), watcher::Config::default())
                .default_backoff(),
        );
        tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                if let Err(err) = event {
                    tracing::warn!(error = %err, "pod watch failed; retrying");
                }
            }
        });
        Self { store }
    }

    /// Whether the initial list has arrived.
    async fn wait_ready(&self, limit: Duration) -> bool {
        matches!(
            tokio::time::timeout(limit, self.store.wait_until_ready()).await,
            Ok(Ok(()))
        )
    }

    /// The UID of the Pod with this name, if it exists.
    fn uid(&self, namespace: &str, name: &str) -> Option<String> {
        let key = ObjectRef::<PodMeta>::new(name).within(namespace);
        self.store
            .get(&key)
            .and_then(|pod| pod.metadata.uid.clone())
    }

    /// Starts guarding one Pod: remembers the UID it has now.
    pub async fn guard(&self, namespace: &str, name: &str) -> PodGuard {
        let ready = self.wait_ready(Duration::from_secs(5)).await;
        let uid = if ready {
            self.uid(namespace, name)
        } else {
            None
        };
        PodGuard {
            watch: self.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid,
            ready,
            started: Instant::now(),
        }
    }
}

/// How long a follow waits for a Pod it never saw to show up before ending.
const UNSEEN_POD_GRACE: Duration = Duration::from_secs(3);

/// Tells whether the Pod a log stream belongs to is still the same Pod.
pub struct PodGuard {
    watch: PodWatch,
    namespace: String,
    name: String,
    uid: Option<String>,
    ready: bool,
    started: Instant,
}

impl PodGuard {
    /// False once the Pod was deleted or replaced by another with the same name.
    pub async fn alive(&mut self) -> bool {
        if !self.ready {
            // Without a working watch nothing can be known: keep streaming.
            self.ready = self.watch.wait_ready(Duration::ZERO).await;
            if !self.ready {
                return true;
            }
        }
        let current = self.watch.uid(&self.namespace, &self.name);
        match (&self.uid, current) {
            (Some(seen), Some(now)) => *seen == now,
            (Some(_), None) => false,
            (None, Some(now)) => {
                self.uid = Some(now);
                true
            }
            (None, None) => self.started.elapsed() < UNSEEN_POD_GRACE,
        }
    }

    /// The Pod UID seen when the stream started (or first seen since).
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
}
