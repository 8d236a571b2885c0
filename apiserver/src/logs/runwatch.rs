//! When followed Runs finish: one watch of Runs per namespace with a
//! follower, shared by all of them (not one watch per follower).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use futures::StreamExt;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use kruntimes_core::run::Run;

/// Watches of Runs, by namespace.
pub struct RunWatch {
    client: kube::Client,
    namespaces: Mutex<HashMap<String, Arc<Namespace>>>,
}

/// The phase of a watched Run once it is terminal, and its follower count.
type Watched = (watch::Sender<Option<String>>, usize);

struct Namespace {
    /// Watched Runs by UID.
    runs: Mutex<HashMap<String, Watched>>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

/// A follower's interest in one Run; dropping it ends the interest (and
/// the namespace's watch with the last one).
pub struct Finished {
    owner: Weak<RunWatch>,
    ns: Arc<Namespace>,
    namespace: String,
    uid: String,
    rx: watch::Receiver<Option<String>>,
}

impl Finished {
    /// Resolves with the Run's phase once it is terminal.
    pub async fn wait(&mut self) -> String {
        loop {
            if let Some(phase) = self.rx.borrow_and_update().clone() {
                return phase;
            }
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        let Some(owner) = self.owner.upgrade() else {
            return;
        };
        let mut namespaces = owner.namespaces.lock().unwrap_or_else(|e| e.into_inner());
        let mut runs = self.ns.runs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = runs.get_mut(&self.uid) {
            entry.1 -= 1;
            if entry.1 == 0 {
                runs.remove(&self.uid);
            }
        }
        if runs.is_empty() {
            if namespaces
                .get(&self.namespace)
                .is_some_and(|n| Arc::ptr_eq(n, &self.ns))
            {
                namespaces.remove(&self.namespace);
            }
            if let Some(task) = self
                .ns
                .task
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                task.abort();
            }
        }
    }
}

impl RunWatch {
    /// A Run cache watching Runs with `client`.
    pub fn new(client: kube::Client) -> Arc<Self> {
        Arc::new(Self {
            client,
            namespaces: Mutex::new(HashMap::new()),
        })
    }

    /// Tells when the Run `uid` in `namespace` becomes terminal.
    pub fn finished(self: &Arc<Self>, namespace: &str, uid: &str) -> Finished {
        let mut namespaces = self.namespaces.lock().unwrap_or_else(|e| e.into_inner());
        let ns = namespaces
            .entry(namespace.to_owned())
            .or_insert_with(|| {
                let ns = Arc::new(Namespace {
                    runs: Mutex::new(HashMap::new()),
                    task: Mutex::new(None),
                });
                let api: Api<Run> = Api::namespaced(self.client.clone(), namespace);
                let task = tokio::spawn(watch_namespace(api, Arc::downgrade(&ns)));
                *ns.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task.abort_handle());
                ns
            })
            .clone();
        let mut runs = ns.runs.lock().unwrap_or_else(|e| e.into_inner());
        let entry = runs
            .entry(uid.to_owned())
            .or_insert_with(|| (watch::channel(None).0, 0));
        entry.1 += 1;
        let rx = entry.0.subscribe();
        drop(runs);
        Finished {
            owner: Arc::downgrade(self),
            ns,
            namespace: namespace.to_owned(),
            uid: uid.to_owned(),
            rx,
        }
    }
}

async fn watch_namespace(api: Api<Run>, ns: Weak<Namespace>) {
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = stream.next().await {
        let run = match event {
            Ok(watcher::Event::Apply(r) | watcher::Event::InitApply(r)) => r,
            Ok(_) => continue,
            Err(error) => {
                tracing::debug!(%error, "watching runs for followed ones that finish; retrying");
                continue;
            }
        };
        if !run.is_terminal() {
            continue;
        }
        let Some(ns) = ns.upgrade() else { return };
        let uid = run.metadata.uid.as_deref().unwrap_or_default();
        let runs = ns.runs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((tx, _)) = runs.get(uid) {
            tx.send_replace(Some(run.phase().to_owned()));
        }
    }
}
