//! WebSocket frames (RFC 6455) relayed one way, from a source socket to a
//! destination socket, for `operations:ws`. A frame is checked and passed
//! on whole: the caller's frames are unmasked and masked again with a key
//! of the Console's own, the gateway's go on as they came. Between frames a
//! direction keeps no buffer: received bytes are read onto the stack, and
//! only a frame not yet whole (its buffer sized once, from its header), or
//! frames the destination has not taken yet, are kept (and freed once
//! passed on). What is kept is held under the caller's share of a byte
//! budget, when the pipe has one: a frame that would pass it is refused.
//!
//! Every frame is checked as a WebSocket endpoint checks it (masking by
//! role, reserved bits, opcodes, control frames, continuation order, UTF-8
//! of text messages, close codes); no extension is negotiated. A frame
//! whose header declares more than the message bound is refused before its
//! payload is read.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use kruntimes_core::limit::Held;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// Received bytes are read in pieces of this size, on the stack.
const READ_CHUNK: usize = 4096;
/// Reads a direction makes in one turn before it lets the other run.
const READS_PER_TURN: usize = 16;

/// Which way a [`Pipe`] passes frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the caller (a client: masked frames) to the gateway (masked again).
    ToGateway,
    /// From the gateway (a server: unmasked frames) to the caller.
    ToCaller,
}

/// Why a direction refused its source's frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A frame or message over the message bound.
    TooLarge,
    /// Not a frame the protocol allows.
    Malformed,
    /// A text message that is not UTF-8.
    NotUtf8,
    /// Keeping the frame would pass the byte budget.
    Busy,
}

/// Why a direction stopped.
#[derive(Debug)]
pub enum Stop {
    /// A close frame was passed on, with its code if it had one.
    Closed(Option<u16>),
    /// The source ended without a close frame.
    Ended,
    /// The source sent a frame the relay refuses (nothing of it was passed on).
    Refused(Refusal),
    /// Reading the source failed.
    Failed(io::Error),
    /// Writing the destination failed.
    Unwritable(io::Error),
}

/// A text or binary message whose last frame has not come yet.
#[derive(Clone, Copy, Debug)]
struct Message {
    text: bool,
    /// Payload bytes so far.
    len: u64,
    /// The end of a UTF-8 sequence a text frame cut.
    carry: Utf8Carry,
}

/// One direction of a relay.
#[derive(Debug)]
pub struct Pipe {
    direction: Direction,
    max_message: u64,
    /// Received bytes of a frame not yet whole.
    partial: Vec<u8>,
    /// Frames for the destination not yet written, from `out_at` on.
    out: Vec<u8>,
    out_at: usize,
    /// Written bytes the destination has not flushed yet.
    unflushed: bool,
    message: Option<Message>,
    /// A close frame was passed on (or sent): nothing more is read.
    closed: Option<Option<u16>>,
    /// A frame was passed on since [`Pipe::take_moved`].
    moved: bool,
    /// The budget share that `partial` and `out` are held under.
    held: Option<Held>,
}

/// A frame header, as read.
#[derive(Clone, Copy, Debug)]
struct Header {
    fin: bool,
    opcode: u8,
    mask: Option<[u8; 4]>,
    len: u64,
    /// Header bytes.
    size: usize,
}

impl Pipe {
    /// A relay in `direction` that refuses a message over `max_message` bytes.
    pub fn new(direction: Direction, max_message: usize) -> Self {
        Self {
            direction,
            max_message: max_message as u64,
            partial: Vec::new(),
            out: Vec::new(),
            out_at: 0,
            unflushed: false,
            message: None,
            closed: None,
            moved: false,
            held: None,
        }
    }

    /// Holds what this direction keeps (a frame not yet whole, frames not
    /// yet written) under `held`; a frame that would pass it is refused
    /// ([`Refusal::Busy`]).
    pub fn held_under(mut self, held: Held) -> Self {
        self.held = Some(held);
        self
    }

    /// Is a fragmented message being passed on (so no other data frame may
    /// be written to the destination until it ends)?
    pub fn mid_message(&self) -> bool {
        self.message.is_some()
    }

    /// Did a frame go through since the last call?
    pub fn take_moved(&mut self) -> bool {
        std::mem::take(&mut self.moved)
    }

    /// Passes frames from `src` to `dst` until one of them waits (Pending)
    /// or this direction stops.
    pub fn poll_relay<R, W>(&mut self, cx: &mut Context<'_>, src: &mut R, dst: &mut W) -> Poll<Stop>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        for _ in 0..READS_PER_TURN {
            match self.poll_write(cx, dst) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Stop::Unwritable(e)),
                // Frames wait for the destination: now they are held.
                Poll::Pending => {
                    return match self.account(self.out.capacity()) {
                        Ok(()) => Poll::Pending,
                        Err(refusal) => Poll::Ready(Stop::Refused(refusal)),
                    };
                }
            }
            if let Some(code) = self.closed {
                return Poll::Ready(Stop::Closed(code));
            }
            let mut chunk = [MaybeUninit::<u8>::uninit(); READ_CHUNK];
            let mut read = ReadBuf::uninit(&mut chunk);
            match Pin::new(&mut *src).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Stop::Failed(e)),
                Poll::Ready(Ok(())) => {}
            }
            if read.filled().is_empty() {
                return Poll::Ready(Stop::Ended);
            }
            if let Err(refusal) = self.absorb(read.filled_mut()) {
                return Poll::Ready(Stop::Refused(refusal));
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Writes (and flushes) what waits for the destination.
    pub fn poll_write<W: AsyncWrite + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        dst: &mut W,
    ) -> Poll<io::Result<()>> {
        while self.out_at < self.out.len() {
            let n = ready!(Pin::new(&mut *dst).poll_write(cx, &self.out[self.out_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_at += n;
            self.unflushed = true;
        }
        if !self.out.is_empty() {
            // Nothing is kept between frames.
            self.out = Vec::new();
            self.out_at = 0;
            // A smaller share always fits (and an unchanged one takes no lock).
            let _ = self.account(0);
        }
        if self.unflushed {
            ready!(Pin::new(&mut *dst).poll_flush(cx))?;
            self.unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    /// Queues a close frame of the relay's own for the destination (after
    /// what is queued already); nothing more is passed on.
    pub fn close(&mut self, code: Option<u16>, reason: &str) {
        if self.closed.is_some() {
            return;
        }
        match code {
            Some(code) => self.push_frame(true, CLOSE, &[&code.to_be_bytes(), reason.as_bytes()]),
            None => self.push_frame(true, CLOSE, &[]),
        }
        self.closed = Some(code);
    }

    /// Queues a text message of the relay's own for the destination, unless
    /// a fragmented message is being passed on or a close frame was.
    pub fn text(&mut self, text: &str) -> bool {
        if self.closed.is_some() || self.message.is_some() {
            return false;
        }
        self.push_frame(true, TEXT, &[text.as_bytes()]);
        true
    }

    /// Takes the bytes the source sent before the relay started.
    pub fn take_first(&mut self, mut bytes: Vec<u8>) -> Result<(), Refusal> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.absorb(&mut bytes)
    }

    /// Takes received bytes: passes on every whole frame, keeps the rest.
    fn absorb(&mut self, data: &mut [u8]) -> Result<(), Refusal> {
        if self.partial.is_empty() {
            let used = self.frames(data)?;
            if used < data.len() {
                let rest = &data[used..];
                let mut kept = Vec::new();
                self.room(&mut kept, rest)?;
                kept.extend_from_slice(rest);
                self.partial = kept;
            }
        } else {
            let mut buf = std::mem::take(&mut self.partial);
            self.room(&mut buf, data)?;
            buf.extend_from_slice(data);
            let used = self.frames(&mut buf)?;
            if used < buf.len() {
                buf.drain(..used);
                self.partial = buf;
            }
        }
        // Whole frames queued here are counted only if the destination
        // makes them wait (`poll_relay`): a relay whose destination takes
        // every frame touches the budget only for frames split across reads.
        self.account(0)
    }

    /// Makes room in `buf` (the start of a frame) for `more`: for the whole
    /// frame once its header is in (the buffer is sized once), under the
    /// budget before it is allocated.
    fn room(&mut self, buf: &mut Vec<u8>, more: &[u8]) -> Result<(), Refusal> {
        let len = buf.len() + more.len();
        let mut head = [0u8; MAX_HEADER];
        let have = buf.len().min(MAX_HEADER);
        head[..have].copy_from_slice(&buf[..have]);
        let from_more = (MAX_HEADER - have).min(more.len());
        head[have..have + from_more].copy_from_slice(&more[..from_more]);
        let whole = match parse_header(&head[..have + from_more]) {
            // Checked by `frames` before any of its payload is kept.
            Ok(Some(h)) if self.check(&h).is_ok() => h.size + h.len as usize,
            _ => len,
        };
        let want = whole.max(len);
        if want <= buf.capacity() {
            return Ok(());
        }
        // `out` is empty here: `absorb` runs once it is written.
        if let Some(held) = &mut self.held {
            held.resize_to(want + self.out.capacity())
                .map_err(|_| Refusal::Busy)?;
        }
        buf.reserve_exact(want - buf.len());
        Ok(())
    }

    /// Sets the budget share to the partial frame plus `waiting` bytes of
    /// queued frames (an unchanged share takes no lock).
    fn account(&mut self, waiting: usize) -> Result<(), Refusal> {
        match &mut self.held {
            Some(held) => held
                .resize_to(self.partial.capacity() + waiting)
                .map_err(|_| Refusal::Busy),
            None => Ok(()),
        }
    }

    /// Passes on the whole frames at the start of `buf`; returns the bytes used.
    fn frames(&mut self, buf: &mut [u8]) -> Result<usize, Refusal> {
        let mut at = 0;
        while self.closed.is_none() {
            let Some(header) = parse_header(&buf[at..])? else {
                break;
            };
            self.check(&header)?;
            let end = at + header.size + header.len as usize;
            if end > buf.len() {
                break;
            }
            self.frame(header, &mut buf[at + header.size..end])?;
            at = end;
        }
        if self.closed.is_some() {
            // Nothing after a close frame is read.
            return Ok(buf.len());
        }
        Ok(at)
    }

    /// What a frame's header alone tells: refused before its payload is read.
    fn check(&self, h: &Header) -> Result<(), Refusal> {
        let masked = self.direction == Direction::ToGateway;
        if h.mask.is_some() != masked {
            return Err(Refusal::Malformed);
        }
        match h.opcode {
            CLOSE | PING | PONG if !h.fin || h.len > 125 => Err(Refusal::Malformed),
            CLOSE | PING | PONG => Ok(()),
            CONTINUATION => match self.message {
                None => Err(Refusal::Malformed),
                Some(m) if m.len.saturating_add(h.len) > self.max_message => Err(Refusal::TooLarge),
                Some(_) => Ok(()),
            },
            TEXT | BINARY if self.message.is_some() => Err(Refusal::Malformed),
            TEXT | BINARY if h.len > self.max_message => Err(Refusal::TooLarge),
            TEXT | BINARY => Ok(()),
            _ => Err(Refusal::Malformed),
        }
    }

    /// Checks a whole frame (already checked by its header) and queues it.
    fn frame(&mut self, h: Header, payload: &mut [u8]) -> Result<(), Refusal> {
        if let Some(key) = h.mask {
            apply_mask(payload, key);
        }
        match h.opcode {
            CLOSE => self.closed = Some(close_code(payload)?),
            PING | PONG => {}
            opcode => {
                let mut m = match self.message {
                    Some(m) => m,
                    None => Message {
                        text: opcode == TEXT,
                        len: 0,
                        carry: Utf8Carry::default(),
                    },
                };
                if m.text && !m.carry.check(payload, h.fin) {
                    return Err(Refusal::NotUtf8);
                }
                m.len += h.len;
                self.message = (!h.fin).then_some(m);
            }
        }
        self.push_frame(h.fin, h.opcode, &[payload]);
        self.moved = true;
        Ok(())
    }

    /// Appends a frame for the destination, its payload the `parts` (not
    /// masked) one after the other; masked in place when it goes to the
    /// gateway.
    fn push_frame(&mut self, fin: bool, opcode: u8, parts: &[&[u8]]) {
        let masked = self.direction == Direction::ToGateway;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.out.reserve(14 + len);
        self.out.push(u8::from(fin) << 7 | opcode);
        let mask_bit = u8::from(masked) << 7;
        if len < 126 {
            self.out.push(mask_bit | len as u8);
        } else if len <= usize::from(u16::MAX) {
            self.out.push(mask_bit | 126);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(mask_bit | 127);
            self.out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        let key: [u8; 4] = if masked { rand::random() } else { [0; 4] };
        if masked {
            self.out.extend_from_slice(&key);
        }
        let start = self.out.len();
        for p in parts {
            self.out.extend_from_slice(p);
        }
        if masked {
            apply_mask(&mut self.out[start..], key);
        }
    }
}

/// The longest frame header: 2 bytes, an 8-byte length, a 4-byte key.
const MAX_HEADER: usize = 14;

/// Reads a frame header at the start of `buf`: `None` until it is whole.
fn parse_header(buf: &[u8]) -> Result<Option<Header>, Refusal> {
    let [b0, b1, ..] = *buf else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        // A reserved bit: no extension was negotiated.
        return Err(Refusal::Malformed);
    }
    let masked = b1 & 0x80 != 0;
    let (len_size, len7) = match b1 & 0x7F {
        126 => (2, None),
        127 => (8, None),
        n => (0, Some(u64::from(n))),
    };
    let size = 2 + len_size + if masked { 4 } else { 0 };
    if buf.len() < size {
        return Ok(None);
    }
    let len = match len7 {
        Some(n) => n,
        None => {
            let mut bytes = [0u8; 8];
            bytes[8 - len_size..].copy_from_slice(&buf[2..2 + len_size]);
            let n = u64::from_be_bytes(bytes);
            if n >> 63 != 0 {
                return Err(Refusal::Malformed);
            }
            n
        }
    };
    let mask = masked.then(|| {
        let k = &buf[2 + len_size..size];
        [k[0], k[1], k[2], k[3]]
    });
    Ok(Some(Header {
        fin: b0 & 0x80 != 0,
        opcode: b0 & 0x0F,
        mask,
        len,
        size,
    }))
}

/// A close frame's code, checked with its reason (RFC 6455 §5.5.1, §7.4).
fn close_code(payload: &[u8]) -> Result<Option<u16>, Refusal> {
    match payload {
        [] => Ok(None),
        [_] => Err(Refusal::Malformed),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            let sendable = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            if !sendable || std::str::from_utf8(reason).is_err() {
                return Err(Refusal::Malformed);
            }
            Ok(Some(code))
        }
    }
}

fn apply_mask(payload: &mut [u8], key: [u8; 4]) {
    let word = u32::from_ne_bytes(key);
    let mut chunks = payload.chunks_exact_mut(4);
    for c in &mut chunks {
        let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) ^ word;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= key[i];
    }
}

/// The bytes of a UTF-8 sequence that a text frame's end cut, checked once
/// the next frame completes it.
#[derive(Clone, Copy, Debug, Default)]
struct Utf8Carry {
    bytes: [u8; 4],
    len: u8,
}

impl Utf8Carry {
    /// Is `data` (after what is carried) valid UTF-8, with at most an
    /// incomplete sequence at its end when `last` is false?
    fn check(&mut self, mut data: &[u8], last: bool) -> bool {
        if self.len > 0 {
            let width = match self.bytes[0] {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let have = usize::from(self.len);
            let take = (width - have).min(data.len());
            self.bytes[have..have + take].copy_from_slice(&data[..take]);
            self.len += take as u8;
            data = &data[take..];
            let seq = &self.bytes[..usize::from(self.len)];
            match std::str::from_utf8(seq) {
                Ok(_) => self.len = 0,
                // Still incomplete (the frame was shorter than the sequence).
                Err(e) if e.error_len().is_none() && !last => return true,
                Err(_) => return false,
            }
        }
        match std::str::from_utf8(data) {
            Ok(_) => true,
            Err(e) if e.error_len().is_none() && !last => {
                let rest = &data[e.valid_up_to()..];
                self.bytes[..rest.len()].copy_from_slice(rest);
                self.len = rest.len() as u8;
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as a client sends it (masked with `key`).
    fn client_frame(fin: bool, opcode: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
        let mut p = Pipe::new(Direction::ToCaller, usize::MAX);
        p.push_frame(fin, opcode, &[payload]);
        // Re-encode with the mask bit and the key.
        let mut out = vec![p.out[0], p.out[1] | 0x80];
        let head = match p.out[1] {
            126 => 4,
            127 => 10,
            _ => 2,
        };
        out.extend_from_slice(&p.out[2..head]);
        out.extend_from_slice(&key);
        let mut body = payload.to_vec();
        apply_mask(&mut body, key);
        out.extend_from_slice(&body);
        out
    }

    fn server_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = Pipe::new(Direction::ToCaller, usize::MAX);
        p.push_frame(fin, opcode, &[payload]);
        p.out
    }

    /// Decodes the frames a pipe queued: (fin, opcode, payload unmasked, was masked).
    fn decode(mut buf: &[u8]) -> Vec<(bool, u8, Vec<u8>, bool)> {
        let mut frames = Vec::new();
        while let Some(h) = parse_header(buf).unwrap() {
            let mut payload = buf[h.size..h.size + h.len as usize].to_vec();
            if let Some(k) = h.mask {
                apply_mask(&mut payload, k);
            }
            frames.push((h.fin, h.opcode, payload, h.mask.is_some()));
            buf = &buf[h.size + h.len as usize..];
        }
        assert!(buf.is_empty(), "a partial frame was queued");
        frames
    }

    #[test]
    fn caller_frames_are_masked_again_and_passed_on_whole() {
        let mut p = Pipe::new(Direction::ToGateway, 1 << 20);
        let mut bytes = client_frame(true, TEXT, b"hello", [1, 2, 3, 4]);
        bytes.extend(client_frame(true, BINARY, &[7u8; 300], [9, 9, 9, 9]));
        bytes.extend(client_frame(true, PING, b"p", [5, 6, 7, 8]));
        // Fed one byte at a time: frames pass on only when whole.
        for i in 0..bytes.len() {
            p.absorb(&mut bytes[i..=i].to_vec()).unwrap();
        }
        assert!(p.partial.is_empty());
        let frames = decode(&p.out);
        assert_eq!(
            frames,
            vec![
                (true, TEXT, b"hello".to_vec(), true),
                (true, BINARY, vec![7u8; 300], true),
                (true, PING, b"p".to_vec(), true),
            ]
        );
        // The Console's own key, not the caller's.
        assert_ne!(&p.out[2..6], &[1, 2, 3, 4]);
    }

    #[test]
    fn gateway_frames_are_passed_on_unmasked() {
        let mut p = Pipe::new(Direction::ToCaller, 1 << 20);
        let mut bytes = server_frame(false, TEXT, "ab\u{e9}".as_bytes());
        bytes.extend(server_frame(true, CONTINUATION, b"cd"));
        bytes.extend(server_frame(true, CLOSE, &[0x03, 0xE8, b'o', b'k']));
        bytes.extend(server_frame(true, TEXT, b"after the close"));
        p.absorb(&mut bytes).unwrap();
        assert_eq!(p.closed, Some(Some(1000)));
        assert_eq!(
            decode(&p.out),
            vec![
                (false, TEXT, "ab\u{e9}".as_bytes().to_vec(), false),
                (true, CONTINUATION, b"cd".to_vec(), false),
                (true, CLOSE, vec![0x03, 0xE8, b'o', b'k'], false),
            ]
        );
    }

    #[test]
    fn masking_follows_the_role() {
        let mut up = Pipe::new(Direction::ToGateway, 1 << 20);
        assert_eq!(
            up.absorb(&mut server_frame(true, TEXT, b"x")),
            Err(Refusal::Malformed)
        );
        let mut down = Pipe::new(Direction::ToCaller, 1 << 20);
        assert_eq!(
            down.absorb(&mut client_frame(true, TEXT, b"x", [1, 1, 1, 1])),
            Err(Refusal::Malformed)
        );
        assert!(up.out.is_empty() && down.out.is_empty());
    }

    #[test]
    fn the_message_bound_is_kept_before_the_payload_is_read() {
        let mut p = Pipe::new(Direction::ToCaller, 100);
        // The header alone of a 101-byte frame is refused.
        let frame = server_frame(true, BINARY, &[0; 101]);
        assert_eq!(p.absorb(&mut frame[..2].to_vec()), Err(Refusal::TooLarge));
        // A message of fragments over the bound is refused at the fragment that crosses it.
        let mut p = Pipe::new(Direction::ToCaller, 100);
        p.absorb(&mut server_frame(false, BINARY, &[0; 60]))
            .unwrap();
        assert_eq!(
            p.absorb(&mut server_frame(true, CONTINUATION, &[0; 41])),
            Err(Refusal::TooLarge)
        );
        let mut p = Pipe::new(Direction::ToCaller, 100);
        p.absorb(&mut server_frame(false, BINARY, &[0; 60]))
            .unwrap();
        p.absorb(&mut server_frame(true, CONTINUATION, &[0; 40]))
            .unwrap();
        assert!(!p.mid_message());
        // 64-bit lengths with the top bit set are refused.
        let mut huge = vec![0x82, 127];
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(
            Pipe::new(Direction::ToCaller, 100).absorb(&mut huge),
            Err(Refusal::Malformed)
        );
    }

    #[test]
    fn protocol_rules() {
        let refused = |bytes: Vec<u8>| {
            let mut p = Pipe::new(Direction::ToCaller, 1 << 20);
            let mut b = bytes;
            p.absorb(&mut b)
        };
        // Reserved bits, unknown opcodes.
        let mut f = server_frame(true, TEXT, b"x");
        f[0] |= 0x40;
        assert_eq!(refused(f), Err(Refusal::Malformed));
        assert_eq!(
            refused(server_frame(true, 0x3, b"x")),
            Err(Refusal::Malformed)
        );
        assert_eq!(
            refused(server_frame(true, 0xB, b"")),
            Err(Refusal::Malformed)
        );
        // Control frames: whole and short.
        assert_eq!(
            refused(server_frame(false, PING, b"")),
            Err(Refusal::Malformed)
        );
        assert_eq!(
            refused(server_frame(true, PING, &[0; 126])),
            Err(Refusal::Malformed)
        );
        // Continuation order.
        assert_eq!(
            refused(server_frame(true, CONTINUATION, b"x")),
            Err(Refusal::Malformed)
        );
        let mut two = server_frame(false, TEXT, b"a");
        two.extend(server_frame(true, BINARY, b"b"));
        assert_eq!(refused(two), Err(Refusal::Malformed));
        // A control frame may come between fragments.
        let mut ok = server_frame(false, TEXT, b"a");
        ok.extend(server_frame(true, PING, b""));
        ok.extend(server_frame(true, CONTINUATION, b"b"));
        assert_eq!(refused(ok), Ok(()));
        // Close frames: a code alone or with a UTF-8 reason, a code that may be sent.
        assert_eq!(
            refused(server_frame(true, CLOSE, &[3])),
            Err(Refusal::Malformed)
        );
        for code in [999u16, 1004, 1005, 1006, 1015, 2000, 5000] {
            let f = server_frame(true, CLOSE, &code.to_be_bytes());
            assert_eq!(refused(f), Err(Refusal::Malformed), "{code}");
        }
        let f = server_frame(true, CLOSE, &[0x03, 0xE8, 0xFF]);
        assert_eq!(refused(f), Err(Refusal::Malformed));
        assert_eq!(refused(server_frame(true, CLOSE, &[0x0F, 0xA0])), Ok(()));
        assert_eq!(refused(server_frame(true, CLOSE, &[])), Ok(()));
    }

    #[test]
    fn text_is_utf8_across_fragments() {
        let e_acute = "\u{e9}".as_bytes(); // two bytes
        let euro = "\u{20ac}".as_bytes(); // three bytes
        let text = |frames: &[(bool, u8, &[u8])]| {
            let mut p = Pipe::new(Direction::ToCaller, 1 << 20);
            let mut bytes = Vec::new();
            for (fin, op, payload) in frames {
                bytes.extend(server_frame(*fin, *op, payload));
            }
            p.absorb(&mut bytes)
        };
        // A sequence cut between frames, even one byte per frame.
        assert_eq!(
            text(&[
                (false, TEXT, &e_acute[..1]),
                (true, CONTINUATION, &e_acute[1..])
            ]),
            Ok(())
        );
        assert_eq!(
            text(&[
                (false, TEXT, b"a"),
                (false, CONTINUATION, &euro[..1]),
                (false, CONTINUATION, &euro[1..2]),
                (true, CONTINUATION, &euro[2..]),
            ]),
            Ok(())
        );
        // Cut and never finished; invalid bytes; a bad continuation byte.
        assert_eq!(text(&[(true, TEXT, &euro[..2])]), Err(Refusal::NotUtf8));
        assert_eq!(
            text(&[(false, TEXT, &euro[..2]), (true, CONTINUATION, b"")]),
            Err(Refusal::NotUtf8)
        );
        assert_eq!(text(&[(true, TEXT, &[0xFF])]), Err(Refusal::NotUtf8));
        assert_eq!(
            text(&[(false, TEXT, &euro[..1]), (true, CONTINUATION, b"x")]),
            Err(Refusal::NotUtf8)
        );
        // Binary messages are not checked.
        assert_eq!(text(&[(true, BINARY, &[0xFF])]), Ok(()));
    }

    #[test]
    fn own_frames_wait_for_a_fragmented_message_to_end() {
        let mut p = Pipe::new(Direction::ToCaller, 1 << 20);
        p.absorb(&mut server_frame(false, TEXT, b"a")).unwrap();
        assert!(!p.text("event"), "a text frame inside another message");
        p.close(Some(1008), "revoked");
        assert_eq!(p.closed, Some(Some(1008)));
        let frames = decode(&p.out);
        assert_eq!(frames[1], (true, CLOSE, b"\x03\xf0revoked".to_vec(), false));
        // A close frame ends the direction: nothing more is queued.
        assert!(!p.text("late"));
    }

    #[tokio::test]
    async fn relays_between_sockets_and_frees_its_buffers() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut caller, mut relay_side) = tokio::io::duplex(64);
        let (mut gateway_side, mut gateway) = tokio::io::duplex(64);
        let mut p = Pipe::new(Direction::ToGateway, 1 << 20);
        let payload = vec![b'z'; 5000];
        let frame = client_frame(true, BINARY, &payload, [3, 1, 4, 1]);
        let writer = tokio::spawn(async move {
            caller.write_all(&frame).await.unwrap();
            caller.shutdown().await.unwrap();
            caller
        });
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            gateway.read_to_end(&mut got).await.unwrap();
            got
        });
        let stop =
            std::future::poll_fn(|cx| p.poll_relay(cx, &mut relay_side, &mut gateway_side)).await;
        assert!(matches!(stop, Stop::Ended), "{stop:?}");
        assert!(p.partial.capacity() == 0 && p.out.capacity() == 0);
        drop(gateway_side);
        writer.await.unwrap();
        let got = reader.await.unwrap();
        assert_eq!(decode(&got), vec![(true, BINARY, payload, true)]);
    }

    fn budget(max: usize, per_caller: usize) -> std::sync::Arc<kruntimes_core::limit::ByteBudget> {
        kruntimes_core::limit::ByteBudget::new(
            "bytes held",
            max,
            "--max",
            per_caller,
            "--per-caller",
        )
    }

    #[test]
    fn a_frame_not_yet_whole_is_held_under_the_budget_sized_from_its_header() {
        let budget = budget(1 << 20, 1 << 20);
        let mut p = Pipe::new(Direction::ToGateway, 1 << 20).held_under(budget.hold("alice"));
        let mut frame = client_frame(true, BINARY, &[5u8; 100_000], [1, 2, 3, 4]);
        let size = frame.len();
        // Its header and a little of its payload: the whole frame is reserved
        // once (not grown by doubling), and held.
        p.absorb(&mut frame[..3000].to_vec()).unwrap();
        assert_eq!(p.partial.capacity(), size);
        assert_eq!(budget.used_by("alice"), size);
        for piece in frame[3000..size - 1].chunks_mut(4096) {
            p.absorb(piece).unwrap();
            assert_eq!(p.partial.capacity(), size, "the buffer grew past the frame");
        }
        // Whole: queued for the destination, and counted only if it waits.
        p.absorb(&mut frame[size - 1..]).unwrap();
        assert!(p.partial.is_empty() && p.partial.capacity() == 0);
        assert_eq!(budget.used(), 0);
        let mut sink = Vec::new();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(matches!(
            p.poll_write(&mut cx, &mut sink),
            Poll::Ready(Ok(()))
        ));
        assert_eq!(decode(&sink).len(), 1);
        assert_eq!(budget.used(), 0, "nothing is held between frames");
        drop(p);
    }

    /// A destination that takes nothing.
    struct Stuck;

    impl AsyncWrite for Stuck {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Pending
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Pending
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    /// Frames the destination does not take are held under the caller's
    /// share from the moment they wait, and frames that would pass it stop
    /// the direction (the socket then closes with 1013); frames it takes
    /// at once never touch the budget.
    #[test]
    fn frames_that_wait_for_the_destination_are_held_and_refused_past_the_share() {
        let budget = budget(1 << 20, 50_000);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        // Taken at once: nothing held at any point.
        let small = server_frame(true, BINARY, &[1u8; 3000]);
        let mut p = Pipe::new(Direction::ToCaller, 1 << 20).held_under(budget.hold("alice"));
        let mut src: &[u8] = &small;
        let mut sink = Vec::new();
        assert!(matches!(
            p.poll_relay(&mut cx, &mut src, &mut sink),
            Poll::Ready(Stop::Ended)
        ));
        assert_eq!(decode(&sink).len(), 1);
        assert_eq!(budget.used_by("alice"), 0);
        // Waiting: held while it waits.
        let mut p = Pipe::new(Direction::ToCaller, 1 << 20).held_under(budget.hold("alice"));
        let mut src: &[u8] = &small;
        assert!(p.poll_relay(&mut cx, &mut src, &mut Stuck).is_pending());
        assert!(p.out.len() >= small.len());
        assert_eq!(budget.used_by("alice"), p.out.capacity());
        drop(p);
        assert_eq!(budget.used(), 0);
        // A frame that cannot wait under what is left of the caller's share
        // (another socket of the caller holds most of it): refused.
        let mut other = budget.hold("mallory");
        other.reserve_to(48_000).unwrap();
        let mut p = Pipe::new(Direction::ToCaller, 1 << 20).held_under(budget.hold("mallory"));
        let mut src: &[u8] = &small;
        let stop = p.poll_relay(&mut cx, &mut src, &mut Stuck);
        assert!(
            matches!(stop, Poll::Ready(Stop::Refused(Refusal::Busy))),
            "{stop:?}"
        );
        assert_eq!(budget.used_by("mallory"), 48_000);
    }

    #[test]
    fn a_frame_that_would_pass_the_callers_share_is_refused_and_nothing_of_it_kept() {
        let budget = budget(1 << 20, 50_000);
        // Another socket of the same caller holds part of its share.
        let mut other = budget.hold("mallory");
        other.reserve_to(20_000).unwrap();
        let mut p = Pipe::new(Direction::ToCaller, 1 << 20).held_under(budget.hold("mallory"));
        // 40,000 bytes announced: over what the caller has left.
        let mut head = server_frame(true, BINARY, &[0u8; 40_000]);
        head.truncate(10);
        assert_eq!(p.absorb(&mut head), Err(Refusal::Busy));
        assert_eq!(p.partial.capacity(), 0);
        assert_eq!(budget.used_by("mallory"), 20_000);
        // Another caller's frame of the same size fits.
        let mut q = Pipe::new(Direction::ToCaller, 1 << 20).held_under(budget.hold("alice"));
        let frame = server_frame(true, BINARY, &[0u8; 40_000]);
        q.absorb(&mut frame[..10].to_vec()).unwrap();
        assert_eq!(budget.used_by("alice"), 40_004);
        drop(q);
        assert_eq!(budget.used(), 20_000);
    }
}
