//! `operations:ws` against a scripted gateway: the handshake the Console
//! makes (what it sends, which answers it refuses) and the relay of frames
//! between a caller (an in-memory pipe) and the gateway's TLS connection.

use super::*;
use crate::runtime_access::gateway;
use crate::runtime_access::testkit::{
    Gateway, NS, SESSION, Script, Split, bounds, field_of, states, within, write_split,
};
use bytes::{Buf, BytesMut};
use kruntimes_core::auth::AuthMethod;
use tokio::io::DuplexStream;

const PATH: &str =
    "/v1/namespaces/team-a/runs/shell/6f1c2b9e-0000-4000-8000-000000000001/operations:ws";

fn alice() -> Identity {
    Identity {
        user: "alice".into(),
        uid: Some("u-1".into()),
        groups: vec!["system:masters".into()],
        extra: Default::default(),
        method: AuthMethod::BearerToken,
        token: None,
        expires_at: None,
    }
}

/// The gateway's answer to a handshake whose key was `key`, with `fields` after.
fn switching(key: &str, fields: &str) -> Vec<u8> {
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
         sec-websocket-accept: {accept}\r\n{fields}\r\n"
    )
    .into_bytes()
}

/// Runs the Console's handshake against the gateway, which reads the
/// request and answers what `reply` makes of its key.
async fn handshake_with(
    gw: &Gateway,
    protocol: Option<&str>,
    reply: impl FnOnce(&str) -> (Vec<u8>, Split),
) -> (
    Result<(Box<GatewayStream>, Vec<u8>, Option<HeaderValue>), ConsoleError>,
    Script,
    String,
) {
    let console = async {
        let stream = gateway::connect(&gw.tls, &gw.target, Duration::from_secs(5))
            .await
            .unwrap();
        let protocol = protocol.map(|p| HeaderValue::from_str(p).unwrap());
        handshake(stream, &gw.target, PATH, &alice(), protocol.as_ref()).await
    };
    let script = async {
        let mut g = gw.accept().await;
        let head = g.read_head().await;
        let key = field_of(&head, "sec-websocket-key").unwrap().to_owned();
        let (bytes, split) = reply(&key);
        g.send(&bytes, split).await;
        (g, head)
    };
    let (res, (g, head)) = within("a handshake", async { tokio::join!(console, script) }).await;
    (res, g, head)
}

/// A frame (FIN set), masked with `mask` when given.
fn frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    let bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(bit | n as u8),
        n if n < 65536 => {
            out.push(bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason.as_bytes());
    p
}

/// A frame as read: opcode, payload (unmasked), the mask key it had.
#[derive(Debug, PartialEq)]
struct Frame {
    fin: bool,
    opcode: u8,
    payload: Vec<u8>,
    mask: Option<[u8; 4]>,
}

impl Frame {
    /// A close frame's code and reason.
    fn close(&self) -> (u16, String) {
        assert_eq!(self.opcode, 8, "not a close frame: {self:?}");
        let code = u16::from_be_bytes([self.payload[0], self.payload[1]]);
        (code, String::from_utf8(self.payload[2..].to_vec()).unwrap())
    }
}

/// Reads one frame from `io` (buffered in `buf`); `None` at a clean end
/// with nothing buffered.
async fn read_frame<R: AsyncRead + Unpin>(io: &mut R, buf: &mut BytesMut) -> Option<Frame> {
    within("a frame", async {
        loop {
            if buf.len() >= 2 {
                let masked = buf[1] & 0x80 != 0;
                let (len, at) = match buf[1] & 0x7f {
                    126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                    127 if buf.len() >= 10 => (
                        u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                        10,
                    ),
                    126 | 127 => (usize::MAX, 0),
                    n => (n as usize, 2),
                };
                let end = at + if masked { 4 } else { 0 };
                if len != usize::MAX && buf.len() >= end + len {
                    let mask: Option<[u8; 4]> = masked.then(|| buf[at..at + 4].try_into().unwrap());
                    let mut payload = buf[end..end + len].to_vec();
                    if let Some(k) = mask {
                        payload
                            .iter_mut()
                            .enumerate()
                            .for_each(|(i, b)| *b ^= k[i % 4]);
                    }
                    let f = Frame {
                        fin: buf[0] & 0x80 != 0,
                        opcode: buf[0] & 0x0f,
                        payload,
                        mask,
                    };
                    buf.advance(end + len);
                    return Some(f);
                }
            }
            match read_into(io, buf).await {
                Ok(n) if n > 0 => {}
                _ => {
                    assert!(buf.is_empty(), "ended within a frame: {buf:?}");
                    return None;
                }
            }
        }
    })
    .await
}

#[tokio::test]
async fn the_handshake_asks_for_a_websocket_and_keeps_the_frames_after_the_answer() {
    let gw = Gateway::start().await;
    let early = frame(1, b"hello from the gateway", None);
    let (res, _g, head) = handshake_with(&gw, Some("v1.shell, v2.shell"), |key| {
        let mut bytes = switching(key, "sec-websocket-protocol: v2.shell\r\n");
        bytes.extend_from_slice(&early);
        (bytes, Split::Whole)
    })
    .await;
    assert!(
        head.starts_with(&format!("GET {PATH} HTTP/1.1\r\n")),
        "{head}"
    );
    assert_eq!(field_of(&head, "upgrade"), Some("websocket"));
    assert_eq!(field_of(&head, "connection"), Some("Upgrade"));
    assert_eq!(field_of(&head, "sec-websocket-version"), Some("13"));
    assert_eq!(field_of(&head, "sec-websocket-key").map(str::len), Some(24));
    assert_eq!(
        field_of(&head, "sec-websocket-protocol"),
        Some("v1.shell, v2.shell")
    );
    assert_eq!(field_of(&head, "x-remote-user"), Some("alice"));
    assert_eq!(field_of(&head, "x-remote-group"), Some("system:masters"));
    let (_, first, chosen) = res.unwrap();
    assert_eq!(first, early, "the frames sent with the answer");
    assert_eq!(chosen.unwrap(), "v2.shell");
}

/// An answer split into single bytes is read whole.
#[tokio::test]
async fn a_handshake_answer_in_single_bytes_is_read() {
    let gw = Gateway::start().await;
    let (res, _g, _) = handshake_with(&gw, None, |key| (switching(key, ""), Split::Every(1))).await;
    let (_, first, chosen) = res.unwrap();
    assert!(first.is_empty() && chosen.is_none());
}

/// A gateway that refuses the upgrade: an error (503, or 429 passed on), no socket.
#[tokio::test]
async fn a_refused_handshake_is_an_error() {
    let gw = Gateway::start().await;
    for (answer, code) in [
        ("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n", 503),
        ("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", 503),
        (
            "HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\n\r\n",
            429,
        ),
    ] {
        let (res, _g, _) =
            handshake_with(&gw, None, |_| (answer.as_bytes().to_vec(), Split::Whole)).await;
        let err = res
            .err()
            .unwrap_or_else(|| panic!("{answer:?} opened a socket"));
        assert_eq!(err.code().as_u16(), code, "{answer:?}");
    }
}

/// Answers that are not a valid upgrade to what was asked are refused.
#[tokio::test]
async fn a_bad_upgrade_answer_is_refused() {
    let gw = Gateway::start().await;
    type Reply = fn(&str) -> Vec<u8>;
    let bad: [(&str, Reply); 8] = [
        ("a wrong Sec-WebSocket-Accept", |_| {
            switching("dGhlIHNhbXBsZSBub25jZQ==", "")
        }),
        ("no Sec-WebSocket-Accept", |_| {
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n"
                .to_vec()
        }),
        ("HTTP/1.0", |key| {
            let mut b = switching(key, "");
            b[5..8].copy_from_slice(b"1.0");
            b
        }),
        ("no Upgrade: websocket", |key| {
            String::from_utf8(switching(key, ""))
                .unwrap()
                .replace("upgrade: websocket", "upgrade: h2c")
                .into_bytes()
        }),
        ("no Connection: upgrade", |key| {
            String::from_utf8(switching(key, ""))
                .unwrap()
                .replace("connection: Upgrade", "connection: keep-alive")
                .into_bytes()
        }),
        ("a 200", |key| {
            String::from_utf8(switching(key, ""))
                .unwrap()
                .replace("101 Switching Protocols", "200 OK")
                .into_bytes()
        }),
        ("an extension nobody offered", |key| {
            switching(key, "sec-websocket-extensions: permessage-deflate\r\n")
        }),
        ("a subprotocol nobody offered", |key| {
            switching(key, "sec-websocket-protocol: v9.other\r\n")
        }),
    ];
    for (what, reply) in bad {
        let (res, _g, _) =
            handshake_with(&gw, Some("v1.shell"), |key| (reply(key), Split::Whole)).await;
        let err = res.err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert_eq!(err.code().as_u16(), 503, "{what}");
    }
}

/// A gateway that closes before its answer is whole: an error.
#[tokio::test]
async fn a_gateway_closing_during_the_handshake_is_an_error() {
    let gw = Gateway::start().await;
    let console = async {
        let stream = gateway::connect(&gw.tls, &gw.target, Duration::from_secs(5))
            .await
            .unwrap();
        handshake(stream, &gw.target, PATH, &alice(), None).await
    };
    let script = async {
        let mut g = gw.accept().await;
        g.read_head().await;
        g.send(b"HTTP/1.1 101 Switching", Split::Whole).await;
        g.close().await;
    };
    let (res, ()) = within("a handshake", async { tokio::join!(console, script) }).await;
    assert_eq!(res.err().expect("a socket opened").code().as_u16(), 503);
}

/// An open relay: the caller's end of its pipe, the gateway's script, and
/// the relay's task.
struct Open {
    caller: DuplexStream,
    from_relay: BytesMut,
    g: Script,
    task: tokio::task::JoinHandle<()>,
}

/// Handshakes with the gateway (which sends `first` with its answer) and
/// starts the relay between it and a caller.
async fn open(gw: &Gateway, state: &Arc<AccessState>, first: &[u8]) -> Open {
    let first = first.to_vec();
    let (res, g, _) = handshake_with(gw, None, move |key| {
        let mut b = switching(key, "");
        b.extend_from_slice(&first);
        (b, Split::Whole)
    })
    .await;
    let (upstream, first, _) = res.unwrap();
    let (caller, console_end) = tokio::io::duplex(64 << 10);
    let parts = Box::new(Relay {
        identity: alice(),
        attrs: super::super::run_attributes(NS, SESSION, "operations"),
        state: state.clone(),
        slot: state.calls.acquire("alice").unwrap(),
    });
    let task = tokio::spawn(relay(console_end, upstream, first, parts));
    Open {
        caller,
        from_relay: BytesMut::new(),
        g,
        task,
    }
}

impl Open {
    async fn caller_gets(&mut self) -> Option<Frame> {
        read_frame(&mut self.caller, &mut self.from_relay).await
    }

    async fn gateway_gets(&mut self) -> Option<Frame> {
        read_frame(&mut self.g.io, &mut self.g.buf).await
    }

    async fn caller_sends(&mut self, bytes: &[u8], split: Split) {
        within(
            "the caller's write",
            write_split(&mut self.caller, bytes, split),
        )
        .await
        .unwrap();
    }

    /// The relay ends, having closed both sides: the gateway's with TLS's
    /// close_notify (a clean end), the caller's pipe.
    async fn ended(mut self) {
        let (clean, rest) = self.g.until_closed().await;
        assert!(clean, "the gateway's connection ended without close_notify");
        assert!(rest.is_empty(), "more bytes to the gateway: {rest:?}");
        assert_eq!(self.caller_gets().await, None, "more frames to the caller");
        within("the relay's end", self.task).await.unwrap();
    }
}

/// Frames cut into single bytes, and random pieces, both ways: each
/// arrives whole; the caller's are masked again with the Console's key.
#[tokio::test]
async fn frames_split_across_reads_pass_both_ways() {
    let gw = Gateway::start().await;
    let (_, state) = states(&gw, bounds()).await;
    let hello = frame(1, b"first, sent with the 101", None);
    let mut o = open(&gw, &state, &hello).await;
    let f = o.caller_gets().await.unwrap();
    assert_eq!(
        (f.opcode, f.payload.as_slice()),
        (1, &b"first, sent with the 101"[..])
    );

    let key = [0x11, 0x22, 0x33, 0x44];
    let big: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    let mut up = frame(1, "héllo gateway".as_bytes(), Some(key));
    up.extend(frame(2, &big, Some(key)));
    up.extend(frame(9, b"ping", Some(key)));
    o.caller_sends(&up[..200], Split::Every(1)).await;
    o.caller_sends(&up[200..], Split::Random(11)).await;
    let text = o.gateway_gets().await.unwrap();
    assert_eq!(
        (text.opcode, text.payload.as_slice()),
        (1, "héllo gateway".as_bytes())
    );
    let mask = text.mask.expect("a frame to the gateway unmasked");
    assert_ne!(mask, key, "the caller chose the masking key");
    let binary = o.gateway_gets().await.unwrap();
    assert_eq!(
        (binary.opcode, binary.payload == big, binary.mask.is_some()),
        (2, true, true)
    );
    let ping = o.gateway_gets().await.unwrap();
    assert_eq!((ping.opcode, ping.payload.as_slice()), (9, &b"ping"[..]));

    let mut down = frame(1, "déjà vu".as_bytes(), None);
    down.extend(frame(2, &big, None));
    let mut cont = vec![0x01, 3];
    cont.extend_from_slice(b"abc");
    cont.extend(frame(0, b"def", None));
    down.extend(cont);
    o.g.send(&down[..300], Split::Every(1)).await;
    o.g.send(&down[300..], Split::Random(12)).await;
    let text = o.caller_gets().await.unwrap();
    assert_eq!(
        (text.opcode, text.payload.as_slice(), text.mask),
        (1, "déjà vu".as_bytes(), None)
    );
    let binary = o.caller_gets().await.unwrap();
    assert_eq!((binary.opcode, binary.payload == big), (2, true));
    let part = o.caller_gets().await.unwrap();
    assert_eq!(
        (part.fin, part.opcode, part.payload.as_slice()),
        (false, 1, &b"abc"[..])
    );
    let rest = o.caller_gets().await.unwrap();
    assert_eq!(
        (rest.fin, rest.opcode, rest.payload.as_slice()),
        (true, 0, &b"def"[..])
    );
    o.task.abort();
}

/// The caller closes: its close frame reaches the gateway, the caller gets
/// the same code back, and both connections end.
#[tokio::test]
async fn a_caller_close_is_passed_on_and_answered() {
    let gw = Gateway::start().await;
    let (_, state) = states(&gw, bounds()).await;
    let mut o = open(&gw, &state, b"").await;
    let bye = frame(8, &close_payload(1000, "bye"), Some([1, 2, 3, 4]));
    o.caller_sends(&bye, Split::Every(1)).await;
    let f = o.gateway_gets().await.unwrap();
    assert_eq!(f.close(), (1000, "bye".into()));
    assert!(f.mask.is_some());
    let back = o.caller_gets().await.unwrap();
    assert_eq!(back.close().0, 1000);
    o.ended().await;
}

/// The gateway closes: its close frame reaches the caller, the gateway gets
/// the same code back, and both connections end.
#[tokio::test]
async fn a_gateway_close_is_passed_on_and_answered() {
    let gw = Gateway::start().await;
    let (_, state) = states(&gw, bounds()).await;
    let mut o = open(&gw, &state, b"").await;
    o.g.send(
        &frame(8, &close_payload(4000, "done"), None),
        Split::Every(1),
    )
    .await;
    let f = o.caller_gets().await.unwrap();
    assert_eq!((f.close(), f.mask), ((4000, "done".into()), None));
    let back = o.gateway_gets().await.unwrap();
    assert_eq!(back.close().0, 4000);
    assert!(back.mask.is_some());
    o.ended().await;
}

/// The gateway's connection ends without a close frame: cleanly
/// (close_notify) the caller gets 1001, broken off (no close_notify) 1011.
#[tokio::test]
async fn a_gateway_that_goes_away_closes_the_caller() {
    let gw = Gateway::start().await;
    let (_, state) = states(&gw, bounds()).await;
    for (clean, code) in [(true, 1001), (false, 1011)] {
        let Open {
            mut caller,
            from_relay: mut buf,
            mut g,
            task,
        } = open(&gw, &state, b"").await;
        g.send(&frame(1, b"last", None), Split::Whole).await;
        if clean {
            g.close().await;
        } else {
            drop(g);
        }
        let f = read_frame(&mut caller, &mut buf).await.unwrap();
        assert_eq!(f.payload, b"last");
        let f = read_frame(&mut caller, &mut buf).await.unwrap();
        assert_eq!(f.close().0, code, "clean: {clean}");
        assert_eq!(read_frame(&mut caller, &mut buf).await, None);
        within("the relay's end", task).await.unwrap();
    }
}
