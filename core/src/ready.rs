//! Readiness: the process takes traffic only when every component it
//! registered says it is ready. Each component sets its own handle.

use std::sync::{Arc, Mutex};

/// The components that must be ready, by name, in registration order.
#[derive(Clone, Default)]
pub struct Readiness {
    components: Arc<Mutex<Vec<(&'static str, bool)>>>,
}

/// One component's place in [`Readiness`].
#[derive(Clone)]
pub struct ReadyHandle {
    readiness: Readiness,
    index: usize,
}

impl Readiness {
    /// Adds a component, not ready until its handle says so.
    pub fn register(&self, name: &'static str) -> ReadyHandle {
        let mut components = self.components.lock().expect("readiness");
        components.push((name, false));
        ReadyHandle {
            readiness: self.clone(),
            index: components.len() - 1,
        }
    }

    /// Registers a component that is ready once `until` completes.
    pub fn when<F>(&self, name: &'static str, until: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let handle = self.register(name);
        tokio::spawn(async move {
            until.await;
            handle.set(true);
        });
    }

    /// The components not ready yet (empty: ready).
    pub fn pending(&self) -> Vec<&'static str> {
        let components = self.components.lock().expect("readiness");
        components
            .iter()
            .filter(|(_, ready)| !ready)
            .map(|(name, _)| *name)
            .collect()
    }
}

impl ReadyHandle {
    pub fn set(&self, ready: bool) {
        let mut components = self.readiness.components.lock().expect("readiness");
        components[self.index].1 = ready;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_component_is() {
        let r = Readiness::default();
        assert!(r.pending().is_empty(), "nothing registered: ready");
        let a = r.register("a");
        let b = r.register("b");
        assert_eq!(r.pending(), ["a", "b"]);
        b.set(true);
        assert_eq!(r.pending(), ["a"]);
        a.set(true);
        assert!(r.pending().is_empty());
        a.set(false);
        assert_eq!(r.pending(), ["a"]);
    }

    #[tokio::test]
    async fn a_component_is_ready_when_its_future_completes() {
        let r = Readiness::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        r.when("cache", async move {
            let _ = rx.await;
        });
        tokio::task::yield_now().await;
        assert_eq!(r.pending(), ["cache"]);
        tx.send(()).unwrap();
        for _ in 0..100 {
            if r.pending().is_empty() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("still pending: {:?}", r.pending());
    }
}
