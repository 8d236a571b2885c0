//! Connection threads: each runs its own current-thread tokio runtime, and
//! a connection handed to one is served there with everything it spawns
//! (hyper's HTTP/2 streams, the upstream client's connection tasks). A
//! request then never hops between threads: on a multi-thread runtime the
//! server's connection task, the handler and the upstream client's
//! connection task run on whichever worker is free and wake each other
//! across threads (futex and epoll calls on every request).
//!
//! Work that must not stall a connection thread (blocking calls) goes
//! through `spawn_blocking` as anywhere else; nothing here uses
//! `block_in_place`, which a current-thread runtime does not allow.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;

thread_local! {
    static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The index of the connection thread running the caller, or `None` off
/// those threads (the main runtime).
pub fn current() -> Option<usize> {
    INDEX.with(Cell::get)
}

/// A set of connection threads; cloning shares them.
#[derive(Clone)]
pub struct Workers {
    handles: Arc<[Handle]>,
    next: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("threads", &self.handles.len())
            .finish()
    }
}

impl Workers {
    /// Starts `n` (at least 1) threads named `name-0`, `name-1`, …; they live
    /// as long as the process.
    pub fn start(n: usize, name: &str) -> std::io::Result<Self> {
        let mut handles = Vec::with_capacity(n.max(1));
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            handles.push(rt.handle().clone());
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    INDEX.with(|c| c.set(Some(i)));
                    rt.block_on(std::future::pending::<()>());
                })?;
        }
        Ok(Self {
            handles: handles.into(),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The number of threads.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Whether there are no threads.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Runs `task` on the next thread, round-robin.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        drop(self.handles[i].spawn(task));
    }
}

/// One value per connection thread plus one for everywhere else: each
/// thread uses its own (an upstream client whose pooled connections live on
/// that thread's runtime).
pub struct PerThread<T> {
    values: Box<[T]>,
}

impl<T> PerThread<T> {
    /// `make` is called once for the main runtime and once per thread of `workers`.
    pub fn new(workers: usize, mut make: impl FnMut() -> T) -> Self {
        Self {
            values: (0..=workers).map(|_| make()).collect(),
        }
    }

    /// The caller's thread's value.
    pub fn get(&self) -> &T {
        let i = current().map_or(0, |i| i + 1);
        self.values.get(i).unwrap_or(&self.values[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tasks_run_on_the_threads_in_turn_and_see_their_own_value() {
        let workers = Workers::start(2, "test-conn").unwrap();
        let values = Arc::new(PerThread::new(workers.len(), {
            let mut n = 0;
            move || {
                n += 1;
                n
            }
        }));
        assert_eq!(*values.get(), 1, "off the threads: the first value");
        let mut seen = Vec::new();
        for _ in 0..4 {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let values = values.clone();
            workers.spawn(async move {
                // A task spawned from there stays on the same thread.
                let inner = tokio::spawn(async { current() }).await.unwrap();
                let _ = tx.send((current(), inner, *values.get()));
            });
            seen.push(rx.await.unwrap());
        }
        assert_eq!(
            seen,
            vec![
                (Some(0), Some(0), 2),
                (Some(1), Some(1), 3),
                (Some(0), Some(0), 2),
                (Some(1), Some(1), 3),
            ]
        );
    }
}
