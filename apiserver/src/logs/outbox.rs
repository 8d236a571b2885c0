//! The lines on their way from a follow's task to its answer's body: a
//! bounded single-consumer queue that allocates only what waits in it.
//!
//! A follower lives for as long as its client reads, and there may be tens
//! of thousands: `tokio::sync::mpsc` allocates ~1.5 KiB per channel up
//! front (a 32-slot block and a cache-padded channel), this ~0.2 KiB.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

struct Shared {
    queue: Mutex<VecDeque<Bytes>>,
    capacity: usize,
    /// Wakes the receiver: a line came or the sender left.
    readable: Notify,
    /// Wakes a sender waiting on a full queue: room was made or the
    /// receiver left.
    writable: Notify,
    /// Wakes `closed()`: the receiver left (and only then: a follow waits
    /// on it all the time, and must not wake for every line read).
    gone: Notify,
    sender_gone: AtomicBool,
    receiver_gone: AtomicBool,
}

/// The follow's side.
pub struct Sender(Arc<Shared>);

/// The answer's side.
pub struct Receiver(Arc<Shared>);

/// The receiver went away: the line was not queued.
#[derive(Debug)]
pub struct Closed;

/// Why [`Sender::try_send`] did not queue a line.
#[derive(Debug)]
pub enum TrySendError {
    /// The queue is full: the line is handed back.
    Full(Bytes),
    /// The receiver went away.
    Closed,
}

/// A queue holding at most `capacity` lines (at least 1).
pub fn channel(capacity: usize) -> (Sender, Receiver) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::new()),
        capacity: capacity.max(1),
        readable: Notify::new(),
        writable: Notify::new(),
        gone: Notify::new(),
        sender_gone: AtomicBool::new(false),
        receiver_gone: AtomicBool::new(false),
    });
    (Sender(shared.clone()), Receiver(shared))
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Bytes>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Sender {
    /// Queues `line` if there is room, without waiting.
    pub fn try_send(&self, line: Bytes) -> Result<(), TrySendError> {
        if self.0.receiver_gone.load(Ordering::Acquire) {
            return Err(TrySendError::Closed);
        }
        let mut queue = self.0.lock();
        if queue.len() >= self.0.capacity {
            return Err(TrySendError::Full(line));
        }
        queue.push_back(line);
        drop(queue);
        self.0.readable.notify_one();
        Ok(())
    }

    /// Queues `line`, waiting while the queue is full. A queue with room
    /// takes it without registering for a wake-up.
    pub async fn send(&self, mut line: Bytes) -> Result<(), Closed> {
        loop {
            line = match self.try_send(line) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed) => return Err(Closed),
                Err(TrySendError::Full(line)) => line,
            };
            // Registered before looking again: room made in between wakes it.
            let room = self.0.writable.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            line = match self.try_send(line) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed) => return Err(Closed),
                Err(TrySendError::Full(line)) => line,
            };
            room.await;
        }
    }

    /// Whether the receiver went away.
    pub fn is_closed(&self) -> bool {
        self.0.receiver_gone.load(Ordering::Acquire)
    }

    /// Resolves once the receiver went away.
    pub async fn closed(&self) {
        loop {
            let gone = self.0.gone.notified();
            tokio::pin!(gone);
            gone.as_mut().enable();
            if self.is_closed() {
                return;
            }
            gone.await;
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.sender_gone.store(true, Ordering::Release);
        self.0.readable.notify_one();
    }
}

impl Receiver {
    /// The next line; `None` once the sender went away and nothing waits.
    pub async fn recv(&mut self) -> Option<Bytes> {
        loop {
            let ready = self.0.readable.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut queue = self.0.lock();
                let was_full = queue.len() >= self.0.capacity;
                if let Some(line) = queue.pop_front() {
                    if queue.is_empty() {
                        // A burst drained: give its room back.
                        queue.shrink_to(self.0.capacity.min(4));
                    }
                    drop(queue);
                    // A sender waits only on a full queue (it saw it full
                    // under the lock, after registering).
                    if was_full {
                        self.0.writable.notify_waiters();
                    }
                    return Some(line);
                }
            }
            if self.0.sender_gone.load(Ordering::Acquire) {
                return None;
            }
            ready.await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.0.receiver_gone.store(true, Ordering::Release);
        self.0.lock().clear();
        self.0.writable.notify_waiters();
        self.0.gone.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn lines_arrive_in_order_and_a_full_queue_waits_for_room() {
        let (tx, mut rx) = channel(2);
        tx.send(Bytes::from_static(b"1")).await.unwrap();
        tx.send(Bytes::from_static(b"2")).await.unwrap();
        let third =
            tokio::time::timeout(Duration::from_millis(50), tx.send(Bytes::from_static(b"3")));
        assert!(third.await.is_err(), "a full queue took a third line");
        assert_eq!(rx.recv().await.as_deref(), Some(&b"1"[..]));
        let sender = tokio::spawn(async move {
            tx.send(Bytes::from_static(b"3")).await.unwrap();
        });
        assert_eq!(rx.recv().await.as_deref(), Some(&b"2"[..]));
        assert_eq!(rx.recv().await.as_deref(), Some(&b"3"[..]));
        sender.await.unwrap();
        // The sender is gone and nothing waits.
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn try_send_hands_the_line_back_when_full_and_fails_once_the_receiver_left() {
        let (tx, mut rx) = channel(1);
        tx.try_send(Bytes::from_static(b"1")).unwrap();
        match tx.try_send(Bytes::from_static(b"2")) {
            Err(TrySendError::Full(line)) => assert_eq!(&line[..], b"2"),
            other => panic!("a full queue answered {other:?}"),
        }
        assert_eq!(rx.recv().await.as_deref(), Some(&b"1"[..]));
        tx.try_send(Bytes::from_static(b"2")).unwrap();
        drop(rx);
        assert!(matches!(
            tx.try_send(Bytes::from_static(b"3")),
            Err(TrySendError::Closed)
        ));
    }

    #[tokio::test]
    async fn what_was_queued_is_read_after_the_sender_left() {
        let (tx, mut rx) = channel(4);
        tx.send(Bytes::from_static(b"last")).await.unwrap();
        drop(tx);
        assert_eq!(rx.recv().await.as_deref(), Some(&b"last"[..]));
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_gone_receiver_fails_sends_and_resolves_closed_even_for_a_waiting_sender() {
        let (tx, rx) = channel(1);
        tx.send(Bytes::from_static(b"1")).await.unwrap();
        let tx = Arc::new(tx);
        let waiting = {
            let tx = tx.clone();
            tokio::spawn(async move { tx.send(Bytes::from_static(b"2")).await })
        };
        let closed = {
            let tx = tx.clone();
            tokio::spawn(async move { tx.closed().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!tx.is_closed());
        drop(rx);
        assert!(waiting.await.unwrap().is_err(), "a waiting send succeeded");
        tokio::time::timeout(Duration::from_secs(1), closed)
            .await
            .expect("closed() did not resolve")
            .unwrap();
        assert!(tx.is_closed());
        assert!(tx.send(Bytes::from_static(b"3")).await.is_err());
    }
}
