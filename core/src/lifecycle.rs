//! The process's shutdown phases, shared by the listeners, the readiness
//! probe and long-lived streams.
//!
//! On SIGTERM the process first stops being ready while it keeps serving
//! (so endpoints and kube-proxy stop sending it new connections), then stops
//! accepting, ends its long-lived streams (follows end with a final `Status`
//! line, WebSockets close with 1001) and waits a bounded time for the
//! requests still in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, watch};

/// Where the process is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Ready and serving.
    Serving,
    /// Not ready; still serving every request and accepting connections.
    Draining,
    /// No new connections; long-lived streams end; in-flight requests finish.
    Stopping,
}

/// A handle on the process's phase; clones share it.
#[derive(Clone, Debug)]
pub struct Lifecycle {
    tx: Arc<watch::Sender<Phase>>,
    streams: Arc<Streams>,
}

#[derive(Debug, Default)]
struct Streams {
    open: AtomicUsize,
    ended: Notify,
}

/// Held by a long-lived stream (a follow, a WebSocket relay) while it runs,
/// so shutdown can wait for it to say goodbye.
#[derive(Debug)]
pub struct StreamGuard(Arc<Streams>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.ended.notify_waiters();
        }
    }
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            tx: Arc::new(watch::channel(Phase::Serving).0),
            streams: Arc::default(),
        }
    }
}

impl Lifecycle {
    /// The phase the process is in now.
    pub fn phase(&self) -> Phase {
        *self.tx.borrow()
    }

    /// Moves forward to `phase` (never back).
    pub fn enter(&self, phase: Phase) {
        self.tx.send_if_modified(|p| {
            if phase > *p {
                *p = phase;
                true
            } else {
                false
            }
        });
    }

    /// Resolves once the process is in `phase` or past it.
    pub async fn reached(&self, phase: Phase) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|p| *p >= phase).await;
    }

    /// Resolves once long-lived streams must end.
    pub async fn stopping(&self) {
        self.reached(Phase::Stopping).await;
    }

    /// Counts a long-lived stream until the guard is dropped.
    pub fn track(&self) -> StreamGuard {
        self.streams.open.fetch_add(1, Ordering::AcqRel);
        StreamGuard(self.streams.clone())
    }

    /// Long-lived streams still open.
    pub fn open_streams(&self) -> usize {
        self.streams.open.load(Ordering::Acquire)
    }

    /// Resolves once no tracked stream is open.
    pub async fn streams_ended(&self) {
        loop {
            let ended = self.streams.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.open_streams() == 0 {
                return;
            }
            ended.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn phases_only_move_forward() {
        let l = Lifecycle::default();
        assert_eq!(l.phase(), Phase::Serving);
        l.enter(Phase::Stopping);
        l.enter(Phase::Draining);
        assert_eq!(l.phase(), Phase::Stopping);
        // Already reached: resolves at once.
        l.reached(Phase::Draining).await;
    }

    #[tokio::test]
    async fn waiters_wake_on_the_phase() {
        let l = Lifecycle::default();
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.stopping().await }
        });
        l.enter(Phase::Draining);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        l.enter(Phase::Stopping);
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .unwrap();
    }

    #[tokio::test]
    async fn streams_ended_waits_for_every_guard() {
        let l = Lifecycle::default();
        l.streams_ended().await;
        let a = l.track();
        let b = l.track();
        assert_eq!(l.open_streams(), 2);
        let waiter = tokio::spawn({
            let l = l.clone();
            async move { l.streams_ended().await }
        });
        drop(a);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(b);
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .unwrap();
    }
}
