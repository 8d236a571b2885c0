//! TLS streams on rustls's unbuffered API: the connection keeps no record
//! buffers of its own while idle. Bytes are read from the socket into one
//! scratch buffer per thread and decrypted there; only a record that has not
//! arrived whole, plaintext the reader has not taken yet, and TLS bytes the
//! socket has not accepted yet are kept per connection, each in a buffer
//! that is freed once empty. (rustls's buffered connection keeps 4 KiB of
//! received records per connection for its whole life: a thousand open
//! WebSockets relayed over two TLS connections each kept 8 MiB idle.)
//!
//! Semantics are those of `tokio_rustls`: a write returns once its records
//! are encrypted (a flush sends them), a read never waits to write (TLS
//! messages a read produced go out with the next write or flush; an alert
//! after an error is tried once), `shutdown` sends `close_notify`, and a
//! peer that ends the TCP stream without `close_notify` is an
//! `UnexpectedEof` error, never an end of stream.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::ops::DerefMut;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use rustls::client::{ClientConnectionData, UnbufferedClientConnection};
use rustls::pki_types::ServerName;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{
    ConnectionState, EncodeError, EncodeTlsData, EncryptError, InsufficientSizeError,
    UnbufferedConnectionCommon, UnbufferedStatus, WriteTraffic,
};
use rustls::{ClientConfig, CommonState, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read from the socket at once: a whole record of the largest size.
const READ_SIZE: usize = 16 * 1024 + 2048 + 5;
/// Plaintext encrypted per write (one full record).
const WRITE_PLAINTEXT: usize = 16 * 1024;
/// Room for one record of `WRITE_PLAINTEXT` and a queued key update.
const WRITE_SIZE: usize = WRITE_PLAINTEXT + 1024;
/// Most bytes kept for a record or handshake message not yet whole (rustls
/// refuses a handshake message over 64 KiB).
const MAX_INCOMING: usize = 64 * 1024 + READ_SIZE;

thread_local! {
    /// The thread's read and write scratch buffers.
    static SCRATCH: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Runs `f` on this thread's scratch buffers (`read`, `write`), or on new
/// ones if they are in use further up the stack.
fn with_scratch<R>(f: impl FnOnce(&mut [u8], &mut [u8]) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut bufs) => {
            let (read, write) = &mut *bufs;
            if read.is_empty() {
                read.resize(READ_SIZE, 0);
                write.resize(WRITE_SIZE, 0);
            }
            f(read, write)
        }
        Err(_) => f(&mut vec![0; READ_SIZE], &mut vec![0; WRITE_SIZE]),
    })
}

/// The side of a connection: how its records are processed.
pub trait Side: DerefMut<Target = UnbufferedConnectionCommon<Self::Data>> + Unpin {
    /// The application data of the side's records.
    type Data;
    /// Processes the TLS records at the start of `tls`.
    fn process<'c, 'i>(&'c mut self, tls: &'i mut [u8]) -> UnbufferedStatus<'c, 'i, Self::Data>;
}

impl Side for UnbufferedServerConnection {
    type Data = ServerConnectionData;
    fn process<'c, 'i>(&'c mut self, tls: &'i mut [u8]) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(tls)
    }
}

impl Side for UnbufferedClientConnection {
    type Data = ClientConnectionData;
    fn process<'c, 'i>(&'c mut self, tls: &'i mut [u8]) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(tls)
    }
}

/// A server-side TLS connection.
pub type ServerStream<IO> = TlsStream<IO, UnbufferedServerConnection>;
/// A client-side TLS connection.
pub type ClientStream<IO> = TlsStream<IO, UnbufferedClientConnection>;

/// Accepts a TLS connection: the handshake, through the client's `Finished`.
pub async fn accept<IO: AsyncRead + AsyncWrite + Unpin>(
    config: Arc<ServerConfig>,
    io: IO,
) -> io::Result<ServerStream<IO>> {
    let conn = UnbufferedServerConnection::new(config).map_err(tls_error)?;
    TlsStream::handshake(io, conn).await
}

/// Opens a TLS connection to `name` over `io`.
pub async fn connect<IO: AsyncRead + AsyncWrite + Unpin>(
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    io: IO,
) -> io::Result<ClientStream<IO>> {
    let conn = UnbufferedClientConnection::new(config, name).map_err(tls_error)?;
    TlsStream::handshake(io, conn).await
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A TLS connection over `io`.
pub struct TlsStream<IO, C> {
    io: IO,
    /// Received bytes not yet processed: part of a record, or records
    /// behind plaintext the reader has not taken yet.
    incoming: Vec<u8>,
    tls: Tls<C>,
}

/// The connection's state besides the socket and the received bytes.
struct Tls<C> {
    conn: C,
    bufs: Buffers,
}

/// What a connection keeps for its reader and its socket.
#[derive(Default)]
struct Buffers {
    /// Decrypted bytes not yet read, from `plain_at` on.
    plain: Vec<u8>,
    plain_at: usize,
    /// TLS bytes not yet written to the socket, from `out_at` on.
    outgoing: Vec<u8>,
    out_at: usize,
    /// The peer sent `close_notify`.
    read_closed: bool,
    /// This side sent `close_notify`.
    write_closed: bool,
    /// An error ended the connection; rustls is not called again.
    failed: bool,
}

/// Where a connection state leaves the caller.
enum Next<'c, D> {
    /// Ask rustls again.
    More,
    /// The peer closed its side; this side may still write.
    PeerClosed,
    /// Application data may be written; no whole record is waiting.
    Writable(WriteTraffic<'c, D>),
    /// More bytes are needed (the handshake goes on), or both sides closed.
    Stop,
}

/// What processing received bytes came to.
struct Outcome {
    /// Bytes of the buffer consumed.
    used: usize,
    /// Plaintext was handed over (to the reader or to `plain`).
    delivered: bool,
}

impl Buffers {
    /// Takes what a connection state hands over: plaintext to `dst` while
    /// nothing is buffered before it and it has room, else to `plain`; TLS
    /// messages to `outgoing`, sent by the next flush before anything
    /// written later. `delivered` is set when plaintext was handed over.
    fn absorb<'c, D>(
        &mut self,
        state: ConnectionState<'c, '_, D>,
        mut dst: Option<&mut ReadBuf<'_>>,
        delivered: &mut bool,
    ) -> io::Result<Next<'c, D>> {
        Ok(match state {
            ConnectionState::ReadTraffic(mut traffic) => {
                while let Some(record) = traffic.next_record() {
                    let payload = record.map_err(tls_error)?.payload;
                    let n = match dst.as_deref_mut() {
                        Some(d) if self.plain_at == self.plain.len() => {
                            let n = d.remaining().min(payload.len());
                            d.put_slice(&payload[..n]);
                            n
                        }
                        _ => 0,
                    };
                    self.plain.extend_from_slice(&payload[n..]);
                    *delivered |= !payload.is_empty();
                }
                Next::More
            }
            ConnectionState::EncodeTlsData(mut encode) => {
                encode_into(&mut encode, &mut self.outgoing)?;
                Next::More
            }
            ConnectionState::TransmitTlsData(transmit) => {
                transmit.done();
                Next::More
            }
            ConnectionState::PeerClosed => {
                self.read_closed = true;
                Next::PeerClosed
            }
            ConnectionState::Closed => {
                self.read_closed = true;
                Next::Stop
            }
            ConnectionState::WriteTraffic(traffic) => Next::Writable(traffic),
            ConnectionState::BlockedHandshake => Next::Stop,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "unexpected TLS connection state",
                ));
            }
        })
    }
}

impl<C: Side> Tls<C> {
    /// Processes `buf` (the received bytes not yet processed; rustls may
    /// hold parts of them from an earlier call) until it needs more bytes or
    /// `dst` is full.
    fn run(&mut self, buf: &mut [u8], mut dst: Option<&mut ReadBuf<'_>>) -> io::Result<Outcome> {
        let mut out = Outcome {
            used: 0,
            delivered: false,
        };
        loop {
            if out.delivered
                && (self.bufs.plain_at < self.bufs.plain.len()
                    || dst.as_ref().is_none_or(|d| d.remaining() == 0))
            {
                return Ok(out);
            }
            let UnbufferedStatus { discard, state } = self.conn.process(&mut buf[out.used..]);
            let next = match state {
                Ok(state) => self
                    .bufs
                    .absorb(state, dst.as_deref_mut(), &mut out.delivered),
                Err(e) => Err(tls_error(e)),
            };
            out.used += discard;
            match next {
                Ok(Next::More) => {}
                // A whole record is not there yet.
                Ok(_) => return Ok(out),
                // The connection is over: what is left of `buf` does not matter.
                Err(e) => {
                    self.queue_alert(&mut buf[out.used..]);
                    return Err(e);
                }
            }
        }
    }

    /// Processes `buf` as `run` does until application data may be sent,
    /// then runs `f`. Answers the bytes of `buf` consumed, and `None` when
    /// the connection can send no more.
    fn writable<R>(
        &mut self,
        buf: &mut [u8],
        f: impl FnOnce(&mut WriteTraffic<'_, C::Data>, &mut Vec<u8>) -> io::Result<R>,
    ) -> (usize, io::Result<Option<R>>) {
        let mut used = 0;
        let mut delivered = false;
        loop {
            let UnbufferedStatus { discard, state } = self.conn.process(&mut buf[used..]);
            let next = match state {
                Ok(state) => self.bufs.absorb(state, None, &mut delivered),
                Err(e) => Err(tls_error(e)),
            };
            used += discard;
            match next {
                Ok(Next::More | Next::PeerClosed) => {}
                Ok(Next::Writable(mut traffic)) => {
                    return (used, f(&mut traffic, &mut self.bufs.outgoing).map(Some));
                }
                Ok(Next::Stop) => return (used, Ok(None)),
                Err(e) => {
                    self.queue_alert(&mut buf[used..]);
                    return (used, Err(e));
                }
            }
        }
    }

    /// After an error: the connection is over, and the alert rustls queued
    /// (answered before it looks at `buf` again) goes to `outgoing`.
    fn queue_alert(&mut self, buf: &mut [u8]) {
        self.bufs.failed = true;
        if let Ok(ConnectionState::EncodeTlsData(mut encode)) = self.conn.process(buf).state {
            let _ = encode_into(&mut encode, &mut self.bufs.outgoing);
        }
    }

    /// Hands buffered plaintext to `dst`.
    fn take_plain(&mut self, dst: &mut ReadBuf<'_>) {
        let rest = &self.bufs.plain[self.bufs.plain_at..];
        let n = rest.len().min(dst.remaining());
        dst.put_slice(&rest[..n]);
        self.bufs.plain_at += n;
        if self.bufs.plain_at == self.bufs.plain.len() {
            self.bufs.plain = Vec::new();
            self.bufs.plain_at = 0;
        }
    }
}

fn encode_into<D>(encode: &mut EncodeTlsData<'_, D>, out: &mut Vec<u8>) -> io::Result<()> {
    let need = match encode.encode(&mut []) {
        Ok(_) => return Ok(()),
        Err(EncodeError::InsufficientSize(InsufficientSizeError { required_size })) => {
            required_size
        }
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    let at = out.len();
    out.resize(at + need, 0);
    let n = encode
        .encode(&mut out[at..])
        .map_err(|e| io::Error::other(e.to_string()))?;
    out.truncate(at + n);
    Ok(())
}

/// Drops the first `n` bytes of `incoming`; an emptied buffer is freed.
fn consume(incoming: &mut Vec<u8>, n: usize) {
    if n >= incoming.len() {
        *incoming = Vec::new();
    } else if n > 0 {
        incoming.drain(..n);
    }
}

/// Encrypts `data` (one record's worth) into `dst`, or into `outgoing`
/// when `dst` is too small; answers the bytes put in `dst`.
fn encrypt<D>(
    traffic: &mut WriteTraffic<'_, D>,
    data: &[u8],
    dst: &mut [u8],
    outgoing: &mut Vec<u8>,
) -> io::Result<usize> {
    match traffic.encrypt(data, dst) {
        Ok(n) => Ok(n),
        Err(EncryptError::InsufficientSize(InsufficientSizeError { required_size })) => {
            let at = outgoing.len();
            outgoing.resize(at + required_size, 0);
            let n = traffic
                .encrypt(data, &mut outgoing[at..])
                .map_err(encrypt_error)?;
            outgoing.truncate(at + n);
            Ok(0)
        }
        Err(e) => Err(encrypt_error(e)),
    }
}

fn failed() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "the TLS connection failed")
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the TLS connection is closed")
}

fn encrypt_error(e: EncryptError) -> io::Error {
    io::Error::other(e.to_string())
}

impl<IO: AsyncRead + AsyncWrite + Unpin, C: Side> TlsStream<IO, C> {
    async fn handshake(io: IO, conn: C) -> io::Result<Self> {
        let mut stream = Self {
            io,
            incoming: Vec::new(),
            tls: Tls {
                conn,
                bufs: Buffers::default(),
            },
        };
        poll_fn(|cx| stream.poll_handshake(cx)).await?;
        Ok(stream)
    }

    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            ready!(self.poll_send(cx))?;
            let outcome = self.tls.run(&mut self.incoming, None);
            let outcome = match outcome {
                Ok(o) => o,
                Err(e) => return Poll::Ready(Err(self.fail(cx, e))),
            };
            self.consume(outcome.used);
            if !self.tls.bufs.outgoing.is_empty() {
                continue;
            }
            if !self.tls.conn.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            if self.tls.bufs.read_closed {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection during the TLS handshake",
                )));
            }
            // The bytes of a flight usually come in one read: processed in
            // the scratch buffer, nothing of them is kept.
            let read = if self.incoming.is_empty() {
                ready!(self.poll_read_scratch(cx, None)).map(|o| o.is_some())
            } else {
                ready!(self.poll_read_incoming(cx)).map(|n| n > 0)
            };
            match read {
                Ok(true) => {}
                Ok(false) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "tls handshake eof",
                    )));
                }
                Err(e) => return Poll::Ready(Err(self.fail(cx, e))),
            }
        }
    }

    /// Reads from the socket onto the end of `incoming`.
    fn poll_read_incoming(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let at = self.incoming.len();
        if at >= MAX_INCOMING {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a TLS message larger than allowed",
            )));
        }
        self.incoming.resize(at + READ_SIZE, 0);
        let mut buf = ReadBuf::new(&mut self.incoming[at..]);
        let read = Pin::new(&mut self.io).poll_read(cx, &mut buf);
        let n = buf.filled().len();
        self.incoming.truncate(at + n);
        if self.incoming.is_empty() {
            self.incoming = Vec::new();
        }
        ready!(read)?;
        Poll::Ready(Ok(n))
    }

    fn consume(&mut self, n: usize) {
        consume(&mut self.incoming, n);
    }

    /// Writes out `outgoing`; freed once sent.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let tls = &mut self.tls;
        while tls.bufs.out_at < tls.bufs.outgoing.len() {
            let n = ready!(
                Pin::new(&mut self.io).poll_write(cx, &tls.bufs.outgoing[tls.bufs.out_at..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            tls.bufs.out_at += n;
        }
        if tls.bufs.out_at > 0 || tls.bufs.outgoing.capacity() > 0 {
            tls.bufs.outgoing = Vec::new();
            tls.bufs.out_at = 0;
        }
        Poll::Ready(Ok(()))
    }

    /// Sends what rustls queued after an error (its alert), without waiting.
    fn fail(&mut self, cx: &mut Context<'_>, e: io::Error) -> io::Error {
        let _ = self.poll_send(cx);
        e
    }

    /// Encrypts up to a record's worth of `bufs` as one record and sends it
    /// (or keeps what the socket does not take, sent first by the next call).
    fn poll_write_slices(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // One write's records at most wait for the socket.
        ready!(self.poll_send(cx))?;
        if self.tls.bufs.failed {
            return Poll::Ready(Err(failed()));
        }
        if self.tls.bufs.write_closed {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "TLS close_notify was sent",
            )));
        }
        let total = bufs
            .iter()
            .map(|b| b.len())
            .sum::<usize>()
            .min(WRITE_PLAINTEXT);
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        let io = &mut self.io;
        let tls = &mut self.tls;
        let incoming = &mut self.incoming;
        with_scratch(|gather, scratch| {
            // A slice holding it all is encrypted where it is; several are
            // copied together first.
            let data = match bufs.iter().find(|b| !b.is_empty()) {
                Some(first) if first.len() >= total => &first[..total],
                _ => {
                    let mut at = 0;
                    for b in bufs {
                        let take = b.len().min(total - at);
                        gather[at..at + take].copy_from_slice(&b[..take]);
                        at += take;
                    }
                    &gather[..total]
                }
            };
            let (used, n) = tls.writable(incoming, |traffic, outgoing| {
                encrypt(traffic, data, scratch, outgoing)
            });
            consume(incoming, used);
            let n = n?.ok_or_else(closed)?;
            if tls.bufs.outgoing.is_empty() {
                // The common case: straight from the scratch buffer.
                match Pin::new(io).poll_write(cx, &scratch[..n]) {
                    Poll::Ready(Ok(w)) => tls.bufs.outgoing.extend_from_slice(&scratch[w..n]),
                    Poll::Ready(Err(e)) => return Err(e),
                    Poll::Pending => tls.bufs.outgoing.extend_from_slice(&scratch[..n]),
                }
            } else {
                tls.bufs.outgoing.extend_from_slice(&scratch[..n]);
            }
            Ok(())
        })?;
        // Written, or waiting for the socket with the waker registered.
        let _ = self.poll_send(cx)?;
        Poll::Ready(Ok(total))
    }

    /// The socket.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// The TLS connection's state: peer certificates, ALPN protocol.
    pub fn common(&self) -> &CommonState {
        &self.tls.conn
    }

    /// Holds received bytes, plaintext or ciphertext, not yet read.
    pub fn has_buffered(&self) -> bool {
        !self.incoming.is_empty()
            || self.tls.bufs.plain_at < self.tls.bufs.plain.len()
            || self.tls.bufs.read_closed
    }

    /// Reads one socket read's worth into the thread's scratch buffer and
    /// processes it there; what is left (a part record, or records behind a
    /// full `dst`) is kept in `incoming`.
    fn poll_read_scratch(
        &mut self,
        cx: &mut Context<'_>,
        dst: Option<&mut ReadBuf<'_>>,
    ) -> Poll<io::Result<Option<Outcome>>> {
        let io = &mut self.io;
        let tls = &mut self.tls;
        let incoming = &mut self.incoming;
        with_scratch(|scratch, _| {
            let n = {
                let mut buf = ReadBuf::new(&mut *scratch);
                ready!(Pin::new(io).poll_read(cx, &mut buf))?;
                buf.filled().len()
            };
            if n == 0 {
                return Poll::Ready(Ok(None));
            }
            let outcome = tls.run(&mut scratch[..n], dst)?;
            incoming.extend_from_slice(&scratch[outcome.used..n]);
            Poll::Ready(Ok(Some(outcome)))
        })
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin, C: Side> AsyncRead for TlsStream<IO, C> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if dst.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if this.tls.bufs.failed {
            return Poll::Ready(Err(failed()));
        }
        if this.tls.bufs.plain_at < this.tls.bufs.plain.len() {
            this.tls.take_plain(dst);
            return Poll::Ready(Ok(()));
        }
        // TLS messages rustls answers with while reading (a key update) are
        // sent by the next write or flush, as tokio-rustls does: a read that
        // waited for the socket to take them would replace the waker of a
        // writer in another task.
        loop {
            if !this.incoming.is_empty() {
                let outcome = match this.tls.run(&mut this.incoming, Some(dst)) {
                    Ok(o) => o,
                    Err(e) => return Poll::Ready(Err(this.fail(cx, e))),
                };
                this.consume(outcome.used);
                if outcome.delivered || this.tls.bufs.read_closed {
                    return Poll::Ready(Ok(()));
                }
                if ready!(this.poll_read_incoming(cx))? == 0 {
                    return Poll::Ready(Err(unexpected_eof()));
                }
                continue;
            }
            if this.tls.bufs.read_closed {
                return Poll::Ready(Ok(()));
            }
            match ready!(this.poll_read_scratch(cx, Some(dst))) {
                Ok(None) => return Poll::Ready(Err(unexpected_eof())),
                // A part record stays in `incoming` for the next round.
                Ok(Some(outcome)) => {
                    if outcome.delivered || this.tls.bufs.read_closed {
                        return Poll::Ready(Ok(()));
                    }
                }
                Err(e) => return Poll::Ready(Err(this.fail(cx, e))),
            }
        }
    }
}

fn unexpected_eof() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "peer closed connection without sending TLS close_notify",
    )
}

impl<IO: AsyncRead + AsyncWrite + Unpin, C: Side> AsyncWrite for TlsStream<IO, C> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slices(cx, &[IoSlice::new(data)])
    }

    /// Several slices go out as one record (HTTP/2 writes a frame's header
    /// and its payload as two).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_slices(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.tls.bufs.write_closed && !this.tls.bufs.failed {
            ready!(this.poll_send(cx))?;
            let (used, sent) = this.tls.writable(&mut this.incoming, |traffic, outgoing| {
                let mut buf = [0u8; 64];
                let n = traffic
                    .queue_close_notify(&mut buf)
                    .map_err(encrypt_error)?;
                outgoing.extend_from_slice(&buf[..n]);
                Ok(())
            });
            consume(&mut this.incoming, used);
            this.tls.bufs.write_closed = true;
            sent?;
        }
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// The differential against tokio-rustls that the property tests below
/// and the `tls_stream` fuzz target share.
#[cfg(test)]
#[path = "../tests/differential/tls.rs"]
mod tls_harness;
#[cfg(test)]
use crate::tls_stream as tls_api;

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::RootCertStore;
    use rustls::server::WebPkiClientVerifier;
    use rustls_pki_types::PrivateKeyDer;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    struct Pki {
        server: Arc<ServerConfig>,
        client: Arc<ClientConfig>,
    }

    /// A CA, a server certificate for `localhost` and a client certificate
    /// for `alice`; the server requires the client certificate.
    fn pki(alpn: &[&[u8]]) -> Pki {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let issue = |names: Vec<String>, cn: &str| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut p = rcgen::CertificateParams::new(names).unwrap();
            p.distinguished_name
                .push(rcgen::DnType::CommonName, cn.to_owned());
            let cert = p.signed_by(&key, &issuer).unwrap();
            (
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
        };
        let (server_chain, server_key) = issue(vec!["localhost".into()], "localhost");
        let (client_chain, client_key) = issue(vec![], "alice");
        let mut roots = RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .unwrap();
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(server_chain, server_key)
            .unwrap();
        server.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let mut client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(client_chain, client_key)
            .unwrap();
        client.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Pki {
            server: Arc::new(server),
            client: Arc::new(client),
        }
    }

    fn localhost() -> ServerName<'static> {
        ServerName::try_from("localhost").unwrap()
    }

    /// Both ends on this module's streams, over TCP.
    async fn pair(pki: &Pki) -> (ServerStream<TcpStream>, ClientStream<TcpStream>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = pki.server.clone();
        let accepted = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            accept(server, tcp).await
        });
        let client = connect(
            pki.client.clone(),
            localhost(),
            TcpStream::connect(addr).await.unwrap(),
        )
        .await
        .unwrap();
        (accepted.await.unwrap().unwrap(), client)
    }

    /// Sends `n` patterned bytes one way while reading them the other way in
    /// reads of `chunk` bytes; checks every byte.
    async fn transfer<A, B>(from: &mut A, to: &mut B, n: usize, chunk: usize)
    where
        A: AsyncWrite + Unpin,
        B: AsyncRead + Unpin,
    {
        let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        let write = async {
            from.write_all(&data).await.unwrap();
            from.flush().await.unwrap();
        };
        let read = async {
            let mut got = Vec::with_capacity(n);
            let mut buf = vec![0; chunk];
            while got.len() < n {
                let k = to.read(&mut buf).await.unwrap();
                assert!(k > 0, "end of stream after {} of {n} bytes", got.len());
                got.extend_from_slice(&buf[..k]);
            }
            got
        };
        let ((), got) = tokio::join!(write, read);
        assert!(got == data, "bytes differ");
    }

    fn is_idle<IO, C: Side>(s: &TlsStream<IO, C>) -> bool {
        s.incoming.capacity() == 0
            && s.tls.bufs.plain.capacity() == 0
            && s.tls.bufs.outgoing.capacity() == 0
    }

    #[tokio::test]
    async fn both_sides_exchange_bytes_in_reads_of_any_size_and_keep_no_buffers_between() {
        let pki = pki(&[]);
        let (mut server, mut client) = pair(&pki).await;
        assert!(is_idle(&server) && is_idle(&client));
        for (n, chunk) in [
            (1, 1),
            (100, 7),
            (70_000, 3),
            (1 << 20, 65_536),
            (50_000, 16_384),
        ] {
            transfer(&mut client, &mut server, n, chunk).await;
            transfer(&mut server, &mut client, n, chunk).await;
            assert!(
                is_idle(&server) && is_idle(&client),
                "buffers kept after {n} bytes"
            );
        }
    }

    #[tokio::test]
    async fn a_slow_transport_backs_up_writes_both_ways_at_once_and_nothing_is_lost() {
        let pki = pki(&[]);
        // 1 KiB of transport buffer: most writes wait for the socket.
        let (server_io, client_io) = tokio::io::duplex(1024);
        let accepted = tokio::spawn(accept(pki.server.clone(), server_io));
        let client = connect(pki.client.clone(), localhost(), client_io)
            .await
            .unwrap();
        let server = accepted.await.unwrap().unwrap();
        let (mut sr, mut sw) = tokio::io::split(server);
        let (mut cr, mut cw) = tokio::io::split(client);
        tokio::join!(
            transfer(&mut cw, &mut sr, 300_000, 5000),
            transfer(&mut sw, &mut cr, 300_000, 777),
        );
        let (server, client) = (sr.unsplit(sw), cr.unsplit(cw));
        assert!(is_idle(&server) && is_idle(&client));
    }

    #[tokio::test]
    async fn a_vectored_write_is_one_record() {
        let pki = pki(&[]);
        let (server_io, mut tap_server) = tokio::io::duplex(1 << 16);
        let (mut tap_client, client_io) = tokio::io::duplex(1 << 16);
        let accepted = tokio::spawn(accept(pki.server.clone(), server_io));
        let connected = tokio::spawn(connect(pki.client.clone(), localhost(), client_io));
        // Relays both ways, reporting the size of each client write.
        let (sizes_tx, mut sizes) = tokio::sync::mpsc::unbounded_channel();
        let relay = tokio::spawn(async move {
            let mut a = [0u8; 8192];
            let mut b = [0u8; 8192];
            loop {
                tokio::select! {
                    n = tap_server.read(&mut a) => match n {
                        Ok(0) | Err(_) => break,
                        Ok(n) => { if tap_client.write_all(&a[..n]).await.is_err() { break } }
                    },
                    n = tap_client.read(&mut b) => match n {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let _ = sizes_tx.send(n);
                            if tap_server.write_all(&b[..n]).await.is_err() { break }
                        }
                    },
                }
            }
        });
        let mut server = accepted.await.unwrap().unwrap();
        let mut client = connected.await.unwrap().unwrap();
        transfer(&mut client, &mut server, 10, 10).await;
        while sizes.try_recv().is_ok() {}
        let header = [7u8; 9];
        let payload = [8u8; 100];
        let n = client
            .write_vectored(&[IoSlice::new(&header), IoSlice::new(&payload)])
            .await
            .unwrap();
        assert_eq!(n, 109);
        client.flush().await.unwrap();
        let mut got = [0u8; 109];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got[..9], &header);
        assert_eq!(&got[9..], &payload);
        // TLS 1.3: a 5-byte header, the content type and a 16-byte tag.
        assert_eq!(sizes.try_recv().unwrap(), 109 + 22);
        assert!(sizes.try_recv().is_err(), "more than one write");
        relay.abort();
    }

    #[tokio::test]
    async fn the_handshake_checks_both_certificates_and_agrees_on_alpn() {
        let both = pki(&[b"h2", b"http/1.1"]);
        let (server, client) = pair(&both).await;
        let chain = server.common().peer_certificates().unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(&chain[0]).unwrap();
        assert_eq!(
            cert.subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "alice"
        );
        assert_eq!(server.common().alpn_protocol(), Some(&b"h2"[..]));
        assert_eq!(client.common().alpn_protocol(), Some(&b"h2"[..]));

        // A client without a certificate is refused, and so is a server the client does not trust.
        let other = pki(&[]);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = both.server.clone();
        let accepted = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            accept(config, tcp).await.map(|_| ())
        });
        let untrusted = connect(
            other.client.clone(),
            localhost(),
            TcpStream::connect(addr).await.unwrap(),
        )
        .await;
        assert!(
            untrusted.is_err(),
            "a client trusted a server of another CA"
        );
        assert!(accepted.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn it_talks_to_tokio_rustls_both_ways_including_key_updates() {
        let pki = pki(&[]);
        // This module's server, a buffered client.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = pki.server.clone();
        let accepted = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            accept(config, tcp).await.unwrap()
        });
        let mut client = tokio_rustls::TlsConnector::from(pki.client.clone())
            .connect(localhost(), TcpStream::connect(addr).await.unwrap())
            .await
            .unwrap();
        let mut server = accepted.await.unwrap();
        transfer(&mut client, &mut server, 200_000, 1000).await;
        transfer(&mut server, &mut client, 200_000, 1000).await;
        // The client asks for new keys; the server answers with its own.
        client.get_mut().1.refresh_traffic_keys().unwrap();
        transfer(&mut client, &mut server, 100_000, 4096).await;
        transfer(&mut server, &mut client, 100_000, 4096).await;
        assert!(is_idle(&server));

        // A buffered server, this module's client.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = pki.server.clone();
        let accepted = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio_rustls::TlsAcceptor::from(config)
                .accept(tcp)
                .await
                .unwrap()
        });
        let mut client = connect(
            pki.client.clone(),
            localhost(),
            TcpStream::connect(addr).await.unwrap(),
        )
        .await
        .unwrap();
        let mut server = accepted.await.unwrap();
        transfer(&mut client, &mut server, 200_000, 333).await;
        transfer(&mut server, &mut client, 200_000, 333).await;
        server.get_mut().1.refresh_traffic_keys().unwrap();
        transfer(&mut server, &mut client, 100_000, 4096).await;
        transfer(&mut client, &mut server, 100_000, 4096).await;
        assert!(is_idle(&client));
    }

    #[tokio::test]
    async fn close_notify_ends_the_stream_and_a_bare_tcp_close_is_an_error() {
        let pki = pki(&[]);
        let (mut server, mut client) = pair(&pki).await;
        client.write_all(b"last words").await.unwrap();
        client.shutdown().await.unwrap();
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
        // The other direction still works after the peer's close_notify.
        server.write_all(b"reply").await.unwrap();
        server.flush().await.unwrap();
        let mut buf = [0; 5];
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"reply");

        // A truncation: the transport ends without close_notify.
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        let config = pki.server.clone();
        let accepted = tokio::spawn(accept(config, server_io));
        let client = connect(pki.client.clone(), localhost(), client_io)
            .await
            .unwrap();
        let mut server = accepted.await.unwrap().unwrap();
        drop(client);
        let err = server.read(&mut [0; 16]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn garbage_fails_the_handshake_and_a_flipped_bit_fails_the_stream() {
        let pki = pki(&[]);
        // Plain HTTP to a TLS port.
        let (mut raw, io) = tokio::io::duplex(1 << 16);
        let accepted = tokio::spawn(accept(pki.server.clone(), io));
        raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        assert!(accepted.await.unwrap().is_err());

        // A ClientHello announcing more than rustls accepts (64 KiB) is
        // refused as soon as its header arrives.
        let (mut raw, io) = tokio::io::duplex(1 << 16);
        let accepted = tokio::spawn(accept(pki.server.clone(), io));
        let mut hello = vec![0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0xff, 0xff, 0xff];
        hello.resize(5 + 0x4000, 0);
        raw.write_all(&hello).await.unwrap();
        let refused = tokio::time::timeout(std::time::Duration::from_secs(5), accepted)
            .await
            .expect("a 16 MiB ClientHello was waited for")
            .unwrap();
        assert!(refused.is_err());

        // A record altered on the way is refused, not delivered, and the
        // stream stays failed.
        let (server_io, mut tap_server) = tokio::io::duplex(1 << 16);
        let (mut tap_client, client_io) = tokio::io::duplex(1 << 16);
        let accepted = tokio::spawn(accept(pki.server.clone(), server_io));
        let connected = tokio::spawn(connect(pki.client.clone(), localhost(), client_io));
        let flip = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flip_next = flip.clone();
        let relay = tokio::spawn(async move {
            let mut a = [0u8; 8192];
            let mut b = [0u8; 8192];
            loop {
                tokio::select! {
                    n = tap_server.read(&mut a) => match n {
                        Ok(0) | Err(_) => break,
                        Ok(n) => { if tap_client.write_all(&a[..n]).await.is_err() { break } }
                    },
                    n = tap_client.read(&mut b) => match n {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if flip_next.load(std::sync::atomic::Ordering::SeqCst) {
                                b[n - 1] ^= 1;
                            }
                            if tap_server.write_all(&b[..n]).await.is_err() { break }
                        }
                    },
                }
            }
        });
        let mut server = accepted.await.unwrap().unwrap();
        let mut client = connected.await.unwrap().unwrap();
        transfer(&mut client, &mut server, 1000, 100).await;
        flip.store(true, std::sync::atomic::Ordering::SeqCst);
        client.write_all(b"hello").await.unwrap();
        client.flush().await.unwrap();
        let mut buf = [0; 64];
        let first = server.read(&mut buf).await;
        assert!(first.is_err(), "an altered record was delivered: {first:?}");
        assert!(server.read(&mut buf).await.is_err());
        assert!(server.write_all(b"x").await.is_err());
        relay.abort();
    }

    use super::tls_harness as harness;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn step() -> impl proptest::strategy::Strategy<Value = harness::Step> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (any::<bool>(), 0usize..40_000, 1usize..20_000)
                .prop_map(|(ours, n, chunk)| harness::Step::Send { ours, n, chunk }),
            1 => Just(harness::Step::KeyUpdate),
        ]
    }

    /// Inputs the `tls_stream` fuzz target found, kept as cases.
    #[test]
    fn the_cases_the_fuzz_target_found() {
        // A stream that failed early while tokio-rustls still had more to
        // send than the pipe holds: the harness waited on the writer.
        runtime().block_on(async {
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                harness::altered(true, vec![2], 49_333, 511),
            )
            .await
            .expect("the altered stream neither failed nor ended");
        });
        // The low byte of the first record's version altered (0x0303 to
        // 0x0323): rustls reads it, the record is authenticated as 0x0303,
        // and all 273 bytes arrive unaltered.
        runtime().block_on(async {
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                harness::altered(true, vec![1, 1, 1, 671, 10_001], 273, 8192),
            )
            .await
            .expect("the altered stream neither failed nor ended");
        });
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 48,
            failure_persistence: None,
            // A stalled case takes its timeout: shrinking is bounded in time.
            max_shrink_time: 60_000,
            ..Default::default()
        })]

        /// Against tokio-rustls, either side, over a transport that reads
        /// and writes in pieces of any size: any sequence of transfers both
        /// ways and key updates delivers every byte in order; close_notify
        /// then ends each direction as an end of stream; nothing stays
        /// buffered.
        #[test]
        fn it_agrees_with_tokio_rustls_for_any_pieces_transfers_and_key_updates(
            server in proptest::bool::ANY,
            sizes in proptest::collection::vec(1usize..20_000, 1..6),
            steps in proptest::collection::vec(step(), 1..8),
        ) {
            let exchange = async {
                let (ours, _peer) = harness::exchange(server, sizes, &steps).await;
                // Beyond what the public API shows: no buffer kept at all.
                match &ours {
                    harness::Either::A(s) => assert!(is_idle(s)),
                    harness::Either::B(s) => assert!(is_idle(s)),
                }
            };
            runtime().block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(10), exchange)
                    .await
                    .expect("the exchange stalled");
            });
        }

        /// Any bit flipped in the records tokio-rustls sends: no altered
        /// byte is delivered. The stream fails after a prefix of what was
        /// sent, or (for the record version's low byte, which rustls does
        /// not check) delivers all of it unaltered.
        #[test]
        fn an_altered_byte_anywhere_fails_the_stream_and_nothing_altered_is_delivered(
            server in proptest::bool::ANY,
            sizes in proptest::collection::vec(1usize..20_000, 1..6),
            n in 1usize..50_000,
            at in 0u64..50_000,
        ) {
            runtime().block_on(async {
                tokio::time::timeout(
                    std::time::Duration::from_secs(10),
                    harness::altered(server, sizes, n, at),
                )
                .await
                .expect("the altered stream neither failed nor ended");
            });
        }
    }
}
