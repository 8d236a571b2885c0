//! Keep-alive HTTP/1.1 connections to Runtime gateways for the invoke fast
//! path ([`super::fast`]): one pool per connection thread, so a call and the
//! gateway connection it uses stay on one thread. Like the general path's
//! hyper client: HTTPS only, HTTP/1.1, a connection idle 60 s is closed, a
//! request is never re-sent once it may have reached the gateway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::BytesMut;
use http::HeaderMap;
use kruntimes_transport::workers::PerThread;
use rustls::ClientConfig;
use tokio::time::Instant;

use super::gateway::{self, GatewayError, GatewayTarget};

/// How long an unused connection is kept.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// One connection to a gateway, with its read buffer and header map.
pub struct Upstream {
    /// The TLS connection.
    pub io: gateway::GatewayStream,
    /// Bytes read from the gateway and not yet consumed.
    pub buf: BytesMut,
    /// The headers of the answer read last (the map is reused from call to
    /// call).
    pub headers: HeaderMap,
}

impl Upstream {
    /// Has the gateway closed (or sent anything) since the last answer? An
    /// idle connection's socket has nothing to read; readiness is what the
    /// reactor last saw, so this costs no system call.
    fn is_closed(&self) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        let mut cx = Context::from_waker(Waker::noop());
        matches!(self.io.get_ref().poll_read_ready(&mut cx), Poll::Ready(_))
    }

    /// Does TLS hold bytes the last answer did not account for (decrypted
    /// and not read, or the gateway's close)? Such a connection is not
    /// reused: its bytes would begin the next caller's answer.
    fn has_leftovers(&self) -> bool {
        self.io.has_buffered()
    }
}

struct Idle {
    conn: Box<Upstream>,
    since: Instant,
}

#[derive(Default)]
struct Pool {
    idle: HashMap<GatewayTarget, Vec<Idle>>,
    reaping: bool,
}

impl Pool {
    fn prune(&mut self, now: Instant) {
        self.idle.retain(|_, conns| {
            conns.retain(|c| now.duration_since(c.since) < IDLE_TIMEOUT);
            !conns.is_empty()
        });
    }
}

/// The pools of every connection thread.
pub struct Upstreams {
    pools: PerThread<Arc<Mutex<Pool>>>,
    tls: Arc<ClientConfig>,
    connect_timeout: Duration,
}

impl Upstreams {
    /// Pools for `threads` connection threads (and the main runtime), whose
    /// connections use `tls` and wait at most `connect_timeout` for each step
    /// of connecting.
    pub fn new(threads: usize, tls: Arc<ClientConfig>, connect_timeout: Duration) -> Self {
        Self {
            pools: PerThread::new(threads, Default::default),
            tls,
            connect_timeout,
        }
    }

    /// An idle connection to `target` from this thread's pool, or `None`.
    pub fn idle(&self, target: &GatewayTarget) -> Option<Box<Upstream>> {
        let mut pool = self.pools.get().lock().unwrap_or_else(|e| e.into_inner());
        let conns = pool.idle.get_mut(target)?;
        let now = Instant::now();
        // The most recently used first: it is the warmest.
        let found = loop {
            let Some(c) = conns.pop() else { break None };
            if now.duration_since(c.since) < IDLE_TIMEOUT && !c.conn.is_closed() {
                break Some(c.conn);
            }
        };
        if conns.is_empty() {
            pool.idle.remove(target);
        }
        found
    }

    /// A new connection to `target` (TCP and TLS within the connect timeout).
    /// Boxed: a call moves its connection several times, and the TLS state
    /// is over a kilobyte.
    pub async fn connect(&self, target: &GatewayTarget) -> Result<Box<Upstream>, GatewayError> {
        let io = gateway::connect(&self.tls, target, self.connect_timeout).await?;
        Ok(Box::new(Upstream {
            io,
            buf: BytesMut::with_capacity(4096),
            headers: HeaderMap::new(),
        }))
    }

    /// Returns a connection whose last answer was read to its end.
    pub fn put(&self, target: &GatewayTarget, mut conn: Box<Upstream>) {
        if !conn.buf.is_empty() || conn.has_leftovers() {
            return;
        }
        conn.headers.clear();
        if conn.buf.capacity() > 64 << 10 {
            conn.buf = BytesMut::with_capacity(4096);
        }
        let pool = self.pools.get();
        let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
        let since = Instant::now();
        match p.idle.get_mut(target) {
            Some(v) => v.push(Idle { conn, since }),
            None => {
                p.idle.insert(target.clone(), vec![Idle { conn, since }]);
            }
        }
        if !p.reaping {
            p.reaping = true;
            // Closes connections idle too long while no call comes; ends
            // once the pool is empty (the next connection put starts another).
            let pool = pool.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(IDLE_TIMEOUT / 4).await;
                    let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
                    p.prune(Instant::now());
                    if p.idle.is_empty() {
                        p.reaping = false;
                        return;
                    }
                }
            });
        }
    }

    /// Idle connections in this thread's pool (tests).
    pub fn idle_count(&self) -> usize {
        let p = self.pools.get().lock().unwrap_or_else(|e| e.into_inner());
        p.idle.values().map(Vec::len).sum()
    }
}
