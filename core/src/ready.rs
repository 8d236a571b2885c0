//! Readiness: the process takes traffic only when every component it
//! registered says it is ready. Each component answers for itself, from
//! the state it already keeps (a watch that has loaded, a cache that has
//! synced).

use std::sync::{Arc, Mutex};

type Check = Box<dyn Fn() -> bool + Send + Sync>;

/// The components that must be ready, by name, in registration order.
#[derive(Clone, Default)]
pub struct Readiness {
    components: Arc<Mutex<Vec<(&'static str, Check)>>>,
}

impl Readiness {
    /// Adds a component, ready whenever `ready` says so.
    pub fn add(&self, name: &'static str, ready: impl Fn() -> bool + Send + Sync + 'static) {
        let mut components = self.components.lock().expect("readiness");
        components.push((name, Box::new(ready)));
    }

    /// The components not ready now (empty: ready).
    pub fn pending(&self) -> Vec<&'static str> {
        let components = self.components.lock().expect("readiness");
        components
            .iter()
            .filter(|(_, ready)| !ready())
            .map(|(name, _)| *name)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn ready_only_when_every_component_is() {
        let r = Readiness::default();
        assert!(r.pending().is_empty(), "nothing registered: ready");
        let a = Arc::new(AtomicBool::new(false));
        let b = Arc::new(AtomicBool::new(false));
        for (name, flag) in [("a", &a), ("b", &b)] {
            let flag = flag.clone();
            r.add(name, move || flag.load(Ordering::SeqCst));
        }
        assert_eq!(r.pending(), ["a", "b"]);
        b.store(true, Ordering::SeqCst);
        assert_eq!(r.pending(), ["a"]);
        a.store(true, Ordering::SeqCst);
        assert!(r.pending().is_empty());
        a.store(false, Ordering::SeqCst);
        assert_eq!(r.pending(), ["a"]);
    }
}
