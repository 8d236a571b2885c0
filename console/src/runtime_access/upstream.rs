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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime_access::testkit::{Gateway, Script, Split, within};
    use kruntimes_transport::serve::read_into;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn upstreams(gw: &Gateway) -> Upstreams {
        Upstreams::new(0, gw.tls.clone(), Duration::from_secs(5))
    }

    /// A new connection to `gw`, and the gateway's side of it.
    async fn open(pool: &Upstreams, gw: &Gateway) -> (Box<Upstream>, Script) {
        let (up, g) = tokio::join!(pool.connect(&gw.target), gw.accept());
        (up.unwrap(), g)
    }

    /// One exchange on `up`: `ask` out, `reply` back (read whole into `up.buf`, then consumed).
    async fn exchange(up: &mut Upstream, g: &mut Script, ask: &[u8], reply: &[u8]) {
        within("an exchange", async {
            up.io.write_all(ask).await.unwrap();
            up.io.flush().await.unwrap();
            assert_eq!(g.read_exact(ask.len()).await, ask);
            g.send(reply, Split::Whole).await;
            while up.buf.len() < reply.len() {
                assert!(read_into(&mut up.io, &mut up.buf).await.unwrap() > 0);
            }
            assert_eq!(&up.buf[..], reply);
            up.buf.clear();
        })
        .await
    }

    /// Lets the I/O driver see what the gateway sent: the pool reads an idle
    /// connection's readiness as the reactor last saw it.
    async fn settle() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    /// A connection put back clean is handed out again, for its own target
    /// only, and carries the next exchange.
    #[tokio::test]
    async fn a_clean_connection_is_handed_out_again_for_its_target() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut up, mut g) = open(&pool, &gw).await;
        exchange(&mut up, &mut g, b"one", b"1").await;
        let local = up.io.get_ref().local_addr().unwrap();
        up.headers
            .insert("x-old", http::HeaderValue::from_static("1"));
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 1);
        let other = GatewayTarget {
            port: gw.target.port.wrapping_add(1),
            ..(*gw.target).clone()
        };
        assert!(pool.idle(&other).is_none(), "handed out for another target");
        let mut up = pool.idle(&gw.target).expect("the clean connection");
        assert_eq!(up.io.get_ref().local_addr().unwrap(), local);
        assert!(up.headers.is_empty(), "the last answer's fields were kept");
        assert_eq!(pool.idle_count(), 0);
        exchange(&mut up, &mut g, b"two", b"2").await;
        assert!(!gw.has_new_connection().await);
    }

    /// Bytes left in the connection's buffer would begin the next caller's
    /// answer: such a connection is not kept.
    #[tokio::test]
    async fn a_connection_with_bytes_in_its_buffer_is_not_kept() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut up, mut g) = open(&pool, &gw).await;
        exchange(&mut up, &mut g, b"ask", b"answer").await;
        up.buf.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 0);
        assert!(pool.idle(&gw.target).is_none());
    }

    /// Bytes TLS decrypted and nobody read (a record longer than the last
    /// read), or the gateway's close_notify, make a connection unusable.
    #[tokio::test]
    async fn a_connection_with_bytes_held_by_tls_is_not_kept() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut up, mut g) = open(&pool, &gw).await;
        g.send(b"0123456789 an answer and more", Split::Whole).await;
        let mut five = [0u8; 5];
        within("a short read", up.io.read_exact(&mut five))
            .await
            .unwrap();
        assert_eq!(&five, b"01234");
        assert!(up.buf.is_empty());
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 0, "kept with plaintext left in TLS");

        let (mut up, g) = open(&pool, &gw).await;
        g.close().await;
        // Read to the close: TLS now holds the peer's close_notify.
        let n = within("the close", read_into(&mut up.io, &mut up.buf))
            .await
            .unwrap();
        assert_eq!(n, 0);
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 0, "kept after the gateway's close");
    }

    /// The gateway sends bytes (a late or extra answer) on an idle
    /// connection, or closes it: once the reactor has seen it, the
    /// connection is not handed out.
    #[tokio::test]
    async fn an_idle_connection_the_gateway_wrote_to_or_closed_is_not_handed_out() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        for how in ["wrote", "closed", "dropped"] {
            let (mut up, mut g) = open(&pool, &gw).await;
            exchange(&mut up, &mut g, b"ask", b"answer").await;
            match how {
                "wrote" => g.send(b"HTTP/1.1 200 OK\r\n", Split::Whole).await,
                "closed" => g.close().await,
                _ => drop(g),
            }
            // The condition the pool reads: the socket's readiness, as the reactor saw it.
            within("the socket's readiness", up.io.get_ref().readable())
                .await
                .unwrap();
            pool.put(&gw.target, up);
            assert_eq!(pool.idle_count(), 1, "{how}");
            assert!(pool.idle(&gw.target).is_none(), "{how}: handed out");
            assert_eq!(pool.idle_count(), 0, "{how}");
        }
    }

    /// A connection idle longer than [`IDLE_TIMEOUT`] is not handed out, and
    /// the reaper empties the pool while no call comes.
    #[tokio::test]
    async fn connections_idle_too_long_are_closed() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut first, mut g1) = open(&pool, &gw).await;
        let (mut second, mut g2) = open(&pool, &gw).await;
        exchange(&mut first, &mut g1, b"a", b"1").await;
        exchange(&mut second, &mut g2, b"b", b"2").await;
        pool.put(&gw.target, first);
        tokio::time::pause();
        tokio::time::advance(IDLE_TIMEOUT / 2).await;
        pool.put(&gw.target, second);
        tokio::time::advance(IDLE_TIMEOUT / 2 + Duration::from_secs(1)).await;
        // The first is past its time; the second (put back later) is not.
        let up = pool.idle(&gw.target).expect("the connection idle for 31 s");
        pool.put(&gw.target, up);
        tokio::time::advance(IDLE_TIMEOUT).await;
        settle().await;
        assert_eq!(pool.idle_count(), 0, "the reaper left idle connections");
        assert!(pool.idle(&gw.target).is_none());
    }
}
