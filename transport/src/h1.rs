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
    /// The request method.
    pub method: Method,
    /// The request target as sent (origin-form: path and query).
    pub target: String,
    /// Bytes of the head, through its empty line.
    pub len: usize,
}

/// What parsing a buffer's start found.
#[derive(Debug)]
pub enum Parsed<T> {
    /// A whole head, parsed.
    Complete(T),
    /// More bytes are needed.
    Partial,
    /// Not a head this parser takes (malformed, another version, too many
    /// fields, a name or value `http` refuses, a target not in origin form
    /// or with a fragment, a CONNECT): hyper decides what to answer.
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
            // Origin-form targets only, as hyper reads them: httparse takes
            // any visible bytes, where hyper refuses what `http`'s URI
            // parser refuses, drops a fragment, and normalises other forms;
            // a CONNECT turns the connection into a tunnel. (Found by the
            // `h1_request` differential.)
            if method == Method::CONNECT
                || !target.starts_with('/')
                || target.contains('#')
                || http::Uri::try_from(target).is_err()
            {
                return Parsed::Invalid;
            }
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
    /// The status code.
    pub status: u16,
    /// HTTP/1.1 (else 1.0).
    pub http11: bool,
    /// Bytes of the head, through its empty line.
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
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
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

/// Decodes a chunked body incrementally, with hyper's grammar and bounds (a
/// differential test in `tests/chunked.rs` holds it to hyper's client):
///
/// - a chunk-size line is hex digits (at least one; any number, as long as
///   the size fits in 64 bits), then optional spaces or tabs, then an
///   optional extension from `;` to the CR, then CRLF; a bare LF in an
///   extension, a CR not followed by LF, or anything else is an error;
/// - extensions total fewer than [`MAX_EXTENSION_BYTES`] over the body;
/// - trailer lines (after the last chunk) are fields, at most
///   [`MAX_TRAILER_FIELDS`], all of them fewer than
///   [`MAX_TRAILER_BYTES`]; each must parse as a header field. They are
///   checked and dropped.
#[derive(Debug, Default)]
pub struct Chunked {
    state: ChunkState,
    /// The chunk size being read, then the data bytes left in the chunk.
    size: u64,
    /// Extension bytes read so far in the body.
    extensions: u64,
    /// The trailer section as read, once it has begun.
    trailers: Option<Vec<u8>>,
    /// Trailer lines ended so far.
    trailer_lines: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// The first digit of a chunk size.
    #[default]
    Start,
    Size,
    /// Spaces or tabs after the size.
    SizeLws,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// After the last chunk's line, or after a trailer line.
    EndCr,
    EndLf,
    Trailer,
    TrailerLf,
    Done,
}

/// A chunked body that breaks the grammar or a bound.
#[derive(Debug, thiserror::Error)]
#[error("malformed chunked body: {0}")]
pub struct ChunkError(pub &'static str);

/// Extension bytes allowed over a whole body (hyper's bound): this many is
/// an error.
pub const MAX_EXTENSION_BYTES: u64 = 16 << 10;
/// Bytes allowed in the trailer section (hyper's bound, with no header size
/// limit configured): this many is an error.
pub const MAX_TRAILER_BYTES: usize = 16 << 10;
/// Trailer lines allowed (hyper's default header count).
pub const MAX_TRAILER_FIELDS: usize = 100;

impl Chunked {
    /// Whether the last chunk and the trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes what it can of `input` (from its start), appending data to
    /// `out`; returns the bytes consumed, which are all of `input` until
    /// the body ends. Call again with more input until
    /// [`Chunked::is_done`].
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, ChunkError> {
        use ChunkState::*;
        let mut at = 0;
        while at < input.len() {
            if self.state == Done {
                break;
            }
            if self.state == Data {
                let n = (input.len() - at).min(usize::try_from(self.size).unwrap_or(usize::MAX));
                out.extend_from_slice(&input[at..at + n]);
                at += n;
                self.size -= n as u64;
                if self.size == 0 {
                    self.state = DataCr;
                }
                continue;
            }
            let b = input[at];
            at += 1;
            self.state = self.step(b)?;
        }
        Ok(at)
    }

    /// One byte of everything but chunk data.
    fn step(&mut self, b: u8) -> Result<ChunkState, ChunkError> {
        use ChunkState::*;
        Ok(match (self.state, b) {
            (Start | Size, b) if b.is_ascii_hexdigit() => {
                let digit = u64::from((b as char).to_digit(16).unwrap_or_default());
                self.size = self
                    .size
                    .checked_mul(16)
                    .and_then(|s| s.checked_add(digit))
                    .ok_or(ChunkError("the chunk size does not fit in 64 bits"))?;
                Size
            }
            (Start, _) => return Err(ChunkError("a chunk-size line without a size")),
            (Size | SizeLws, b' ' | b'\t') => SizeLws,
            (Size | SizeLws, b';') => Extension,
            (Size | SizeLws, b'\r') => SizeLf,
            (Size, _) => return Err(ChunkError("a chunk size that is not hex digits")),
            (SizeLws, _) => return Err(ChunkError("text after the chunk size's white space")),
            (Extension, b'\r') => SizeLf,
            (Extension, b'\n') => return Err(ChunkError("a line feed in a chunk extension")),
            (Extension, _) => {
                self.extensions += 1;
                if self.extensions >= MAX_EXTENSION_BYTES {
                    return Err(ChunkError("chunk extensions over their bound"));
                }
                Extension
            }
            (SizeLf, b'\n') if self.size == 0 => EndCr,
            (SizeLf, b'\n') => Data,
            (SizeLf, _) => return Err(ChunkError("a chunk-size line not ended by CRLF")),
            (DataCr, b'\r') => DataLf,
            (DataLf, b'\n') => Start,
            (DataCr | DataLf, _) => return Err(ChunkError("chunk data not followed by CRLF")),
            (EndCr, b'\r') => {
                self.keep_trailer(b)?;
                EndLf
            }
            (EndCr, b) => {
                match &mut self.trailers {
                    None => self.trailers = Some(vec![b]),
                    Some(_) => self.keep_trailer(b)?,
                }
                Trailer
            }
            (EndLf, b'\n') => {
                self.keep_trailer(b)?;
                self.end_trailers()?;
                Done
            }
            (EndLf, _) => return Err(ChunkError("the last chunk not ended by CRLF")),
            (Trailer, b) => {
                self.keep_trailer(b)?;
                if b == b'\r' { TrailerLf } else { Trailer }
            }
            (TrailerLf, b'\n') => {
                if self.trailer_lines >= MAX_TRAILER_FIELDS {
                    return Err(ChunkError("more trailer fields than allowed"));
                }
                self.trailer_lines += 1;
                self.keep_trailer(b)?;
                EndCr
            }
            (TrailerLf, _) => return Err(ChunkError("a trailer line not ended by CRLF")),
            (Data | Done, _) => unreachable!("data and the end take no single bytes"),
        })
    }

    /// Adds a byte to the trailer section, if one has begun.
    fn keep_trailer(&mut self, b: u8) -> Result<(), ChunkError> {
        if let Some(t) = &mut self.trailers {
            t.push(b);
            if t.len() >= MAX_TRAILER_BYTES {
                return Err(ChunkError("trailers over their bound"));
            }
        }
        Ok(())
    }

    /// At the end of the body: every trailer line must be a header field.
    fn end_trailers(&mut self) -> Result<(), ChunkError> {
        let Some(section) = self.trailers.take() else {
            return Ok(());
        };
        let mut fields = vec![httparse::EMPTY_HEADER; self.trailer_lines];
        match httparse::parse_headers(&section, &mut fields) {
            Ok(httparse::Status::Complete((_, fields))) => {
                for f in fields.iter() {
                    http::HeaderName::from_bytes(f.name.as_bytes())
                        .map_err(|_| ChunkError("a trailer field with an invalid name"))?;
                    http::HeaderValue::from_bytes(f.value)
                        .map_err(|_| ChunkError("a trailer field with an invalid value"))?;
                }
                Ok(())
            }
            _ => Err(ChunkError("a trailer line that is not a header field")),
        }
    }
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
            b"DELETE -S0N{\"< HTTP/1.1\r\n\r\n",
            b"GET /#1/ HTTP/1.1\r\n\r\n",
            b"GET HTTP://H/x HTTP/1.1\r\n\r\n",
            b"CONNECT /v1/ HTTP/1.1\r\n\r\n",
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
