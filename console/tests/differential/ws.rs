//! The relay's frame checks (`frames::Pipe`, both directions) against
//! tungstenite's strict reader (masking by role, no unmasked client frames,
//! the message bound as its frame and message limits):
//!
//! - the relay and tungstenite end alike: both see a close frame (with the
//!   same code), both wait for more, or both refuse;
//! - what the relay passes on, read back by tungstenite, is the messages
//!   tungstenite read from the source (all of them; when the relay refused,
//!   the first ones: frames queued in the read that ended in a refusal are
//!   dropped with the connection);
//! - and it is well-formed for its destination (masked towards the
//!   gateway, unmasked towards the caller).
//!
//! The relay refuses a frame by its header alone, before its payload has
//! come; tungstenite reads a frame whole first. When the relay refused and
//! tungstenite is still waiting, the source's last frame is completed with
//! zeros and tungstenite must then refuse too.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use kruntimes_console_http::runtime_access::frames::{Direction, Pipe, Stop};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocket, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error, Message};

use super::Tape;

/// One differential case: the source's bytes, the reads they arrive in.
#[derive(Clone, Debug)]
pub struct Case {
    pub direction: Direction,
    pub max_message: usize,
    pub bytes: Vec<u8>,
    pub cuts: Vec<usize>,
    /// The first read is handed over as bytes read before the relay began
    /// (`Pipe::take_first`).
    pub first: bool,
}

/// How a side ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Closed(Option<u16>),
    /// Waiting for more.
    Ended,
    Refused,
}

/// What a case came to (for the tests' coverage figures).
#[derive(Clone, Debug)]
pub struct Seen {
    pub outcome: Outcome,
    pub messages: usize,
}

const CLOSE_CODES: [u16; 20] = [
    1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1009, 1011, 1012, 1013, 1015, 1016, 1017, 2999,
    3000, 4999, 5000, 0,
];

/// A frame as it goes on the wire; `wide` picks a longer length encoding
/// than needed (0: minimal, 1: 16 bits, 2: 64 bits).
fn frame(out: &mut Vec<u8>, t: &mut Tape<'_>, masked: bool, b0: u8, payload: &[u8], wide: u8) {
    out.push(b0);
    let mask_bit = if masked { 0x80 } else { 0 };
    let len = payload.len();
    if len < 126 && wide == 0 {
        out.push(mask_bit | len as u8);
    } else if len <= 0xFFFF && wide < 2 {
        out.push(mask_bit | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let key = if masked {
        let k = [t.byte(), t.byte(), t.byte(), t.byte()];
        out.extend_from_slice(&k);
        k
    } else {
        [0; 4]
    };
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
}

/// Text of `size` bytes or so, of one- to four-byte characters, sometimes
/// with a byte that breaks UTF-8.
fn text(t: &mut Tape<'_>, size: usize) -> Vec<u8> {
    const CHARS: [&str; 5] = ["a", "\u{e9}", "\u{20ac}", "\u{1d11e}", " "];
    let mut s = Vec::new();
    while s.len() < size {
        s.extend_from_slice(CHARS[t.below(CHARS.len())].as_bytes());
    }
    if t.one_in(16) && !s.is_empty() {
        let at = t.below(s.len());
        s[at] = [0xFF, 0xC0, 0x80, 0xED][t.below(4)];
    }
    s
}

/// A case drawn from the tape: frames from a grammar of messages
/// (fragmented, with control frames in between), odd frames now and then,
/// a few bytes changed now and then.
pub fn generate(t: &mut Tape<'_>) -> Case {
    let direction = if t.one_in(2) {
        Direction::ToGateway
    } else {
        Direction::ToCaller
    };
    let to_gateway = direction == Direction::ToGateway;
    // At least a control frame's 125 bytes: tungstenite's frame limit
    // applies to control frames too, the relay's bound does not.
    let max_message = 125 + t.below(200);
    let mut b = Vec::new();
    let mask = |t: &mut Tape<'_>| to_gateway != t.one_in(100);
    let wide = |t: &mut Tape<'_>| [0, 0, 0, 0, 0, 0, 0, 0, 1, 2][t.below(10)];
    let mut frames = 0;
    while !t.is_empty() && frames < 10 {
        match t.below(40) {
            0..=3 => {
                let len = if t.one_in(16) { 126 } else { t.below(20) };
                let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let op = if t.one_in(2) { 0x9 } else { 0xA };
                let (m, w) = (mask(t), wide(t));
                frame(&mut b, t, m, 0x80 | op, &payload, w);
                frames += 1;
            }
            4 => {
                let mut payload = Vec::new();
                match t.below(8) {
                    0 => {}
                    1 => payload.push(3),
                    _ => {
                        let code = CLOSE_CODES[t.below(CLOSE_CODES.len())];
                        payload.extend_from_slice(&code.to_be_bytes());
                        let n = t.below(6);
                        let reason = text(t, n);
                        payload.extend_from_slice(&reason);
                    }
                }
                let (m, w) = (mask(t), wide(t));
                frame(&mut b, t, m, 0x88, &payload, w);
                frames += 1;
            }
            5 => {
                // Any first byte: reserved bits, reserved opcodes, a
                // continuation out of place, a control frame not final.
                let b0 = t.byte();
                let payload: Vec<u8> = (0..t.below(8)).map(|i| i as u8).collect();
                let (m, w) = (mask(t), wide(t));
                frame(&mut b, t, m, b0, &payload, w);
                frames += 1;
            }
            _ => {
                let is_text = t.one_in(2);
                let size = t.below(max_message + 8);
                let data = if is_text {
                    text(t, size)
                } else {
                    (0..size).map(|i| (i * 7) as u8).collect()
                };
                let mut cuts: Vec<usize> =
                    (0..t.below(4)).map(|_| t.below(data.len() + 1)).collect();
                cuts.sort_unstable();
                cuts.push(data.len());
                let mut at = 0;
                for (i, &c) in cuts.iter().enumerate() {
                    let last = i + 1 == cuts.len();
                    let op = if i == 0 {
                        if is_text { 0x1 } else { 0x2 }
                    } else {
                        0x0
                    };
                    let (m, w) = (mask(t), wide(t));
                    frame(&mut b, t, m, u8::from(last) << 7 | op, &data[at..c], w);
                    frames += 1;
                    at = c;
                    if !last && t.one_in(4) {
                        let (m, w) = (mask(t), wide(t));
                        frame(&mut b, t, m, 0x89, b"mid", w);
                    }
                }
            }
        }
    }
    if t.one_in(6) && !b.is_empty() {
        for _ in 0..1 + t.below(3) {
            let at = t.below(b.len());
            b[at] ^= 1 << t.below(8);
        }
    }
    let cuts = (0..t.below(6)).map(|_| t.below(b.len() + 1)).collect();
    Case {
        direction,
        max_message,
        bytes: b,
        cuts,
        first: t.one_in(4),
    }
}

/// The source: one piece a read.
struct Pieces(VecDeque<Vec<u8>>);

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(mut p) = self.0.pop_front() {
            let n = p.len().min(buf.remaining());
            buf.put_slice(&p[..n]);
            if n < p.len() {
                self.0.push_front(p.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

fn split(bytes: &[u8], cuts: &[usize]) -> VecDeque<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    cuts.sort_unstable();
    let mut at = 0;
    let mut out = VecDeque::new();
    for c in cuts {
        if c > at {
            out.push_back(bytes[at..c].to_vec());
            at = c;
        }
    }
    if at < bytes.len() {
        out.push_back(bytes[at..].to_vec());
    }
    out
}

/// The relay over the case's reads: what it passed on, and how it ended.
pub fn relay(case: &Case) -> (Vec<u8>, Outcome) {
    let mut pipe = Pipe::new(case.direction, case.max_message);
    let mut pieces = split(&case.bytes, &case.cuts);
    let mut out = Vec::new();
    if case.first
        && let Some(p) = pieces.pop_front()
        && pipe.take_first(p).is_err()
    {
        return (out, Outcome::Refused);
    }
    let mut src = Pieces(pieces);
    let mut cx = Context::from_waker(Waker::noop());
    let stop = loop {
        if let Poll::Ready(stop) = pipe.poll_relay(&mut cx, &mut src, &mut out) {
            break stop;
        }
    };
    let outcome = match stop {
        Stop::Closed(code) => Outcome::Closed(code),
        Stop::Ended => Outcome::Ended,
        Stop::Refused(_) => Outcome::Refused,
        Stop::Failed(e) | Stop::Unwritable(e) => panic!("in-memory I/O failed: {e}"),
    };
    (out, outcome)
}

/// In-memory bytes for tungstenite: reading past them would block.
struct Mem {
    data: Vec<u8>,
    at: usize,
}

impl Read for Mem {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.data.len() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Write for Mem {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// tungstenite reading `bytes` as `role` reads its peer's frames, with
/// `limit` as its frame and message limits.
pub fn tungstenite_reads(
    bytes: &[u8],
    role: Role,
    limit: Option<usize>,
) -> (Vec<Message>, Outcome) {
    let config = WebSocketConfig::default()
        .max_message_size(limit)
        .max_frame_size(limit)
        .accept_unmasked_frames(false);
    let mem = Mem {
        data: bytes.to_vec(),
        at: 0,
    };
    let mut ws = WebSocket::from_raw_socket(mem, role, Some(config));
    let mut messages = Vec::new();
    loop {
        match ws.read() {
            Ok(Message::Close(frame)) => {
                let code = frame.as_ref().map(|f| u16::from(f.code));
                // A close frame whose code may not be sent is handed over by
                // tungstenite as 1002 "Protocol violation" (and answered
                // so): a refusal.
                if let Some(f) = &frame
                    && u16::from(f.code) == 1002
                    && f.reason.as_str() == "Protocol violation"
                {
                    return (messages, Outcome::Refused);
                }
                messages.push(Message::Close(frame));
                return (messages, Outcome::Closed(code));
            }
            Ok(m) => messages.push(m),
            Err(Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                return (messages, Outcome::Ended);
            }
            Err(_) => return (messages, Outcome::Refused),
        }
    }
}

/// `bytes` with its last frame completed with zeros (header and payload),
/// if it ends inside one; `None` when it ends on a frame boundary.
fn complete_last_frame(bytes: &[u8], cap: usize) -> Option<Vec<u8>> {
    let mut at = 0;
    while at < bytes.len() {
        let mut head = bytes[at..].to_vec();
        head.resize(head.len().max(2), 0);
        let len_size = match head[1] & 0x7F {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let size = 2 + len_size + if head[1] & 0x80 != 0 { 4 } else { 0 };
        head.resize(head.len().max(size), 0);
        let len = match len_size {
            0 => u64::from(head[1] & 0x7F),
            n => {
                let mut l = [0u8; 8];
                l[8 - n..].copy_from_slice(&head[2..2 + n]);
                u64::from_be_bytes(l)
            }
        };
        let total = (size as u64).saturating_add(len);
        let end = (at as u64).saturating_add(total);
        if end > bytes.len() as u64 {
            let mut out = bytes.to_vec();
            let missing = (end - bytes.len() as u64).min(cap as u64) as usize;
            out.resize(bytes.len() + missing, 0);
            return Some(out);
        }
        at = end as usize;
    }
    None
}

/// Runs a case both ways and holds the relay to tungstenite (panics with a
/// description of the case on a difference).
pub fn same(case: &Case, what: &str) -> Seen {
    let (source_role, limit) = match case.direction {
        Direction::ToCaller => (Role::Client, case.max_message),
        Direction::ToGateway => (Role::Server, case.max_message),
    };
    let (out, ours) = relay(case);
    if ours == Outcome::Closed(Some(1014)) {
        // 1014 (Bad Gateway) was registered with IANA after tungstenite's
        // list of codes was written: the relay passes it on as it passes
        // 1013, tungstenite takes it for a code that may not be sent. The
        // one known difference; nothing to compare.
        return Seen {
            outcome: ours,
            messages: 0,
        };
    }
    let (mut theirs_msgs, mut theirs) = tungstenite_reads(&case.bytes, source_role, Some(limit));
    if ours == Outcome::Refused
        && theirs == Outcome::Ended
        && let Some(done) = complete_last_frame(&case.bytes, limit + 14)
    {
        (theirs_msgs, theirs) = tungstenite_reads(&done, source_role, Some(limit));
    }
    let shown = || {
        format!(
            "{:?}, bound {}, {} bytes {:02x?} cut at {:?}{}",
            case.direction,
            case.max_message,
            case.bytes.len(),
            &case.bytes[..case.bytes.len().min(200)],
            case.cuts,
            if case.first {
                ", first read taken before"
            } else {
                ""
            }
        )
    };
    assert_eq!(
        ours,
        theirs,
        "{what}: the relay and tungstenite end differently: {}",
        shown()
    );
    // What went through, as its destination reads it: strictly well-formed.
    let (passed, end) = tungstenite_reads(&out, source_role, None);
    let expected_end = match ours {
        Outcome::Closed(code) => Outcome::Closed(code),
        _ => Outcome::Ended,
    };
    assert_eq!(
        end,
        expected_end,
        "{what}: what the relay passed on does not read back: {:02x?} from {}",
        &out[..out.len().min(200)],
        shown()
    );
    if ours == Outcome::Refused {
        assert!(
            passed.len() <= theirs_msgs.len() && passed[..] == theirs_msgs[..passed.len()],
            "{what}: the relay passed on other messages than tungstenite read: {passed:?} vs {theirs_msgs:?} from {}",
            shown()
        );
    } else {
        assert_eq!(
            passed,
            theirs_msgs,
            "{what}: the relay passed on other messages than tungstenite read from {}",
            shown()
        );
    }
    Seen {
        outcome: ours,
        messages: passed.len(),
    }
}
