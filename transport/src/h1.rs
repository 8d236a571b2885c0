//! HTTP/1.1 pieces for a handler that serves requests on a connection's own
//! bytes (the accept loop's fast path): reading a request or response head
//! into a reusable header map, the `Date` header, a chunked-body decoder.
//! The grammar is httparse's, the parser hyper itself uses, so a head is
//! accepted or refused exactly as hyper would.

use std::cell::RefCell;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderName, HeaderValue, Method};

/// Most header fields in one head (hyper's default).
pub const MAX_HEADERS: usize = 100;

/// A parsed request head.
#[derive(Debug)]
pub struct RequestHead {
    pub method: Method,
    /// The request target as sent (origin-form: path and query).
    pub target: String,
    /// Bytes of the head, through its empty line.
    pub len: usize,
}

/// What parsing a buffer's start found.
#[derive(Debug)]
pub enum Parsed<T> {
    Complete(T),
    /// More bytes are needed.
    Partial,
    /// Not a head this parser takes (malformed, another version, too many
    /// fields, a name or value `http` refuses): hyper decides what to answer.
    Invalid,
}

fn fill_headers(fields: &[httparse::Header<'_>], headers: &mut HeaderMap) -> bool {
    headers.clear();
    for f in fields {
        let Ok(name) = HeaderName::from_bytes(f.name.as_bytes()) else {
            return false;
        };
        let Ok(value) = HeaderValue::from_bytes(f.value) else {
            return false;
        };
        headers.append(name, value);
    }
    true
}

/// Parses an HTTP/1.1 request head at the start of `buf`, its fields into
/// `headers` (cleared first; its capacity is reused).
pub fn parse_request(buf: &[u8], headers: &mut HeaderMap) -> Parsed<RequestHead> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            if req.version != Some(1) {
                return Parsed::Invalid;
            }
            let (Some(method), Some(target)) = (req.method, req.path) else {
                return Parsed::Invalid;
            };
            let Ok(method) = Method::from_bytes(method.as_bytes()) else {
                return Parsed::Invalid;
            };
            if !fill_headers(req.headers, headers) {
                return Parsed::Invalid;
            }
            Parsed::Complete(RequestHead {
                method,
                target: target.to_owned(),
                len,
            })
        }
        Ok(httparse::Status::Partial) => Parsed::Partial,
        Err(_) => Parsed::Invalid,
    }
}

/// A parsed response head.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: u16,
    /// HTTP/1.1 (else 1.0).
    pub http11: bool,
    pub len: usize,
}

/// Parses a response head at the start of `buf`, its fields into `headers`.
pub fn parse_response(buf: &[u8], headers: &mut HeaderMap) -> Parsed<ResponseHead> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut fields);
    match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let Some(status) = resp.code else {
                return Parsed::Invalid;
            };
            if !fill_headers(resp.headers, headers) {
                return Parsed::Invalid;
            }
            Parsed::Complete(ResponseHead {
                status,
                http11: resp.version == Some(1),
                len,
            })
        }
        Ok(httparse::Status::Partial) => Parsed::Partial,
        Err(_) => Parsed::Invalid,
    }
}

/// How a message's body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Length(u64),
    Chunked,
    /// Until the connection closes (responses only).
    Close,
}

/// The body framing of a message with `headers`, or `None` when it is
/// ambiguous or malformed (several lengths, a length with a transfer coding,
/// a transfer coding other than a final `chunked`).
pub fn body_kind(headers: &HeaderMap) -> Option<BodyKind> {
    let mut lengths = headers.get_all(http::header::CONTENT_LENGTH).iter();
    let mut te = headers.get_all(http::header::TRANSFER_ENCODING).iter();
    if let Some(first) = te.next() {
        let chunked_only = te.next().is_none()
            && lengths.next().is_none()
            && first
                .as_bytes()
                .trim_ascii()
                .eq_ignore_ascii_case(b"chunked");
        return chunked_only.then_some(BodyKind::Chunked);
    }
    match (lengths.next(), lengths.next()) {
        (None, _) => Some(BodyKind::Close),
        (Some(v), None) => parse_length(v.as_bytes()).map(BodyKind::Length),
        (Some(_), Some(_)) => None,
    }
}

/// A `Content-Length` value: digits only.
pub fn parse_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Appends a header field line (`name: value` and CRLF) to a head being written.
pub fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Does a field `name` list `token` (comma-separated, any case)?
pub fn has_token(headers: &HeaderMap, name: &str, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|b| *b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// Does a `Connection` field name the token `close`?
pub fn wants_close(headers: &HeaderMap) -> bool {
    has_token(headers, "connection", "close")
}

thread_local! {
    static DATE: RefCell<(u64, [u8; 29])> = const { RefCell::new((u64::MAX, [0; 29])) };
}

/// The `Date` field's value for now (formatted once a second per thread).
pub fn date() -> [u8; 29] {
    let now = SystemTime::now();
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        if d.0 != secs {
            let s = httpdate::fmt_http_date(now);
            let mut out = [b' '; 29];
            let n = s.len().min(29);
            out[..n].copy_from_slice(&s.as_bytes()[..n]);
            *d = (secs, out);
        }
        d.1
    })
}

/// Decodes a chunked body incrementally; trailer fields are read and dropped.
#[derive(Debug, Default)]
pub struct Chunked {
    state: ChunkState,
    /// Data bytes left in the current chunk.
    left: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// A chunk-size line is next.
    #[default]
    Size,
    Data,
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines, until the empty one.
    Trailer,
    Done,
}

/// A chunked body that breaks the grammar.
#[derive(Debug, thiserror::Error)]
#[error("malformed chunked body")]
pub struct ChunkError;

/// Longest chunk-size line (with extensions) or trailer line accepted.
const MAX_CHUNK_LINE: usize = 4096;

impl Chunked {
    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes what it can of `input` (from its start), appending data to
    /// `out`; returns the bytes consumed. Call again with more input until
    /// [`Chunked::is_done`].
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, ChunkError> {
        let mut at = 0;
        loop {
            let rest = &input[at..];
            match self.state {
                ChunkState::Done => return Ok(at),
                ChunkState::Size | ChunkState::Trailer => {
                    let Some(nl) = memchr_nl(rest) else {
                        if rest.len() > MAX_CHUNK_LINE {
                            return Err(ChunkError);
                        }
                        return Ok(at);
                    };
                    let line = rest[..nl].strip_suffix(b"\r").ok_or(ChunkError)?;
                    at += nl + 1;
                    if self.state == ChunkState::Trailer {
                        if line.is_empty() {
                            self.state = ChunkState::Done;
                        }
                        continue;
                    }
                    let hex = line
                        .split(|b| *b == b';')
                        .next()
                        .unwrap_or_default()
                        .trim_ascii();
                    if hex.is_empty() || hex.len() > 15 || !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(ChunkError);
                    }
                    let size =
                        u64::from_str_radix(std::str::from_utf8(hex).map_err(|_| ChunkError)?, 16)
                            .map_err(|_| ChunkError)?;
                    if size == 0 {
                        self.state = ChunkState::Trailer;
                    } else {
                        self.left = size;
                        self.state = ChunkState::Data;
                    }
                }
                ChunkState::Data => {
                    if rest.is_empty() {
                        return Ok(at);
                    }
                    let n = rest.len().min(self.left as usize);
                    out.extend_from_slice(&rest[..n]);
                    at += n;
                    self.left -= n as u64;
                    if self.left == 0 {
                        self.state = ChunkState::DataEnd;
                    }
                }
                ChunkState::DataEnd => {
                    if rest.len() < 2 {
                        return Ok(at);
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(ChunkError);
                    }
                    at += 2;
                    self.state = ChunkState::Size;
                }
            }
        }
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|c| *c == b'\n')
}

/// The canonical reason phrase of a status code ("" when none).
pub fn reason(code: u16) -> &'static str {
    http::StatusCode::from_u16(code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_parse_in_pieces_and_refuse_what_hyper_would_decide() {
        let mut h = HeaderMap::new();
        let raw =
            b"POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nX-A: 1\r\nx-a: 2\r\n\r\nabc";
        for cut in 0..raw.len() - 4 {
            assert!(
                matches!(parse_request(&raw[..cut], &mut h), Parsed::Partial),
                "{cut}"
            );
        }
        let Parsed::Complete(head) = parse_request(raw, &mut h) else {
            panic!("complete")
        };
        assert_eq!(head.method, Method::POST);
        assert_eq!(head.target, "/v1/x");
        assert_eq!(head.len, raw.len() - 3);
        assert_eq!(h.get_all("x-a").iter().count(), 2);
        assert_eq!(body_kind(&h), Some(BodyKind::Length(3)));
        for bad in [
            &b"POST /v1/x HTTP/1.0\r\n\r\n"[..],
            b"POST /v1/x HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET\r\n\r\n",
        ] {
            assert!(
                matches!(parse_request(bad, &mut h), Parsed::Invalid),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn body_framing_refuses_ambiguity() {
        let h = |pairs: &[(&'static str, &'static str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.append(*k, HeaderValue::from_static(v));
            }
            body_kind(&m)
        };
        assert_eq!(h(&[]), Some(BodyKind::Close));
        assert_eq!(h(&[("content-length", "10")]), Some(BodyKind::Length(10)));
        assert_eq!(h(&[("content-length", "1"), ("content-length", "1")]), None);
        assert_eq!(h(&[("content-length", "+1")]), None);
        assert_eq!(
            h(&[("transfer-encoding", "chunked")]),
            Some(BodyKind::Chunked)
        );
        assert_eq!(h(&[("transfer-encoding", "gzip, chunked")]), None);
        assert_eq!(
            h(&[("transfer-encoding", "chunked"), ("content-length", "1")]),
            None
        );
    }

    #[test]
    fn chunked_bodies_decode_across_any_split() {
        let raw = b"3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        for cut in 0..raw.len() {
            let mut d = Chunked::default();
            let mut out = Vec::new();
            let mut buf = raw[..cut].to_vec();
            let used = d.decode(&buf, &mut out).unwrap();
            buf.drain(..used);
            buf.extend_from_slice(&raw[cut..]);
            let used = d.decode(&buf, &mut out).unwrap();
            assert!(d.is_done(), "{cut}");
            assert_eq!(out, b"abc0123456789");
            assert_eq!(&buf[used..], b"NEXT");
        }
        let mut d = Chunked::default();
        assert!(d.decode(b"zz\r\n", &mut Vec::new()).is_err());
        assert!(d.decode(b"3\r\nabcXY", &mut Vec::new()).is_err());
    }

    #[test]
    fn connection_close_is_found_among_tokens() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("keep-alive, Close"));
        assert!(wants_close(&h));
        h.insert("connection", HeaderValue::from_static("closed"));
        assert!(!wants_close(&h));
    }

    #[test]
    fn the_date_is_an_imf_fixdate() {
        let d = date();
        let s = std::str::from_utf8(&d).unwrap();
        assert!(httpdate::parse_http_date(s).is_ok(), "{s}");
    }
}
