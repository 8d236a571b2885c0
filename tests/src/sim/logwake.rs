//! Wakes log followers when their file changes, as the kubelet does: it waits for an fsnotify
//! event on the followed file (a write, or a create, rename, remove or chmod meaning the file may
//! have been replaced) and re-reads at least once a second anyway. Here one inotify instance
//! serves every follower of the process (the per-user instance limit is small; watches are
//! plentiful); followers of the same file share its watch.
//!
//! Without inotify (`LogWake::none`, or when the kernel refuses it) followers poll.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::StreamExt;
use inotify::{Inotify, WatchDescriptor, WatchMask, Watches};
use tokio::sync::watch;

/// Every follower of this process registers its file here.
#[derive(Clone, Default)]
pub struct LogWake {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    state: Mutex<State>,
}

struct State {
    watches: Watches,
    files: HashMap<WatchDescriptor, Watched>,
}

struct Watched {
    changes: watch::Sender<u64>,
    followers: usize,
}

/// A follower's registration of one file; dropping it removes the watch once the file's last
/// follower is gone.
pub struct FileWatch {
    inner: Arc<Inner>,
    wd: WatchDescriptor,
    changes: watch::Receiver<u64>,
}

/// What counts as a change of a followed file.
fn mask() -> WatchMask {
    WatchMask::MODIFY | WatchMask::ATTRIB | WatchMask::MOVE_SELF | WatchMask::DELETE_SELF
}

impl LogWake {
    /// Followers poll.
    pub fn none() -> Self {
        Self { inner: None }
    }

    /// One inotify instance and the task reading its events; must run inside a Tokio runtime.
    pub fn new() -> io::Result<Self> {
        let inotify = Inotify::init()?;
        let mut events = inotify.into_event_stream(vec![0u8; 16 * 1024])?;
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                watches: events.watches(),
                files: HashMap::new(),
            }),
        });
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let Some(inner) = weak.upgrade() else { return };
                match event {
                    Ok(event) => {
                        if let Some(file) = inner.lock().files.get(&event.wd) {
                            file.changes.send_modify(|n| *n = n.wrapping_add(1));
                        }
                    }
                    Err(err) => {
                        // Followers still re-read on their own timer.
                        tracing::warn!(error = %err, "reading inotify events failed");
                        return;
                    }
                }
            }
        });
        Ok(Self { inner: Some(inner) })
    }

    /// Registers a follower of `path`; None when followers poll or the watch cannot be added.
    pub fn watch(&self, path: &Path) -> Option<FileWatch> {
        let inner = self.inner.as_ref()?;
        let mut state = inner.lock();
        let wd = match state.watches.add(path, mask()) {
            Ok(wd) => wd,
            Err(err) => {
                tracing::debug!(path = %path.display(), error = %err, "cannot watch log file; polling it");
                return None;
            }
        };
        // The same file watched twice gives the same descriptor: its followers share it.
        let file = state.files.entry(wd.clone()).or_insert_with(|| Watched {
            changes: watch::Sender::new(0),
            followers: 0,
        });
        file.followers += 1;
        let changes = file.changes.subscribe();
        Some(FileWatch {
            inner: Arc::clone(inner),
            wd,
            changes,
        })
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl FileWatch {
    /// Returns once the file changed since the previous call returned (or since registering).
    pub async fn changed(&mut self) {
        if self.changes.changed().await.is_err() {
            // The sender lives as long as a follower does; never reached, but never spin.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        let last = match state.files.get_mut(&self.wd) {
            Some(file) => {
                file.followers -= 1;
                file.followers == 0
            }
            None => false,
        };
        if last {
            state.files.remove(&self.wd);
            // Fails when the kernel removed it already (the file was deleted): nothing to do.
            let _ = state.watches.remove(self.wd.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_write_wakes_every_follower_of_the_file_and_the_last_one_leaving_removes_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.log");
        let mut file = std::fs::File::create(&path).unwrap();
        let wake = LogWake::new().unwrap();
        let mut a = wake.watch(&path).unwrap();
        let mut b = wake.watch(&path).unwrap();
        assert_eq!(a.wd, b.wd);

        file.write_all(b"line\n").unwrap();
        for w in [&mut a, &mut b] {
            tokio::time::timeout(Duration::from_secs(5), w.changed())
                .await
                .expect("a write wakes the follower");
        }
        // Nothing written since: no wake.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), a.changed())
                .await
                .is_err()
        );

        drop(a);
        assert_eq!(wake.inner.as_ref().unwrap().lock().files.len(), 1);
        drop(b);
        assert!(wake.inner.as_ref().unwrap().lock().files.is_empty());
    }

    #[test]
    fn without_inotify_there_is_no_watch() {
        assert!(LogWake::none().watch(Path::new("/nonexistent")).is_none());
    }
}
