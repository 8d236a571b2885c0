//! Bounded line reading over a streamed Pod log.

use futures::io::{AsyncBufRead, AsyncBufReadExt};

use super::scan::TopLevelScan;

/// One line of a Pod log: at most `max` bytes of it are kept.
#[derive(Debug, Default)]
pub struct Line {
    /// The line without its newline, cut at the bound when `oversized`.
    pub bytes: Vec<u8>,
    /// Length of the whole line.
    pub len: u64,
    /// The line is longer than the bound: `bytes` holds its start.
    pub oversized: bool,
    /// The top-level members of an oversized line, read from all of its bytes
    /// (after the timestamp) as they streamed by.
    pub scan: TopLevelScan,
}

/// Capacity a line buffer keeps between lines; a longer line grows it for
/// itself only, so a reader never holds more than this between lines.
pub const NORMAL_LINE_CAPACITY: usize = 16 << 10;

impl Line {
    /// Splits the kubelet's `timestamps=true` prefix (`<RFC 3339> `) from the content.
    pub fn split_timestamp(&self) -> (Option<&str>, &[u8]) {
        split_timestamp(&self.bytes)
    }
}

/// Splits a `timestamps=true` prefix off a line when it has one.
pub fn split_timestamp(bytes: &[u8]) -> (Option<&str>, &[u8]) {
    // A kubelet timestamp is RFC 3339 with nanoseconds: 20..=35 bytes, then one space.
    let Some(space) = memchr::memchr(b' ', &bytes[..bytes.len().min(40)]) else {
        return (None, bytes);
    };
    let head = &bytes[..space];
    let looks_like_time = head.len() >= 20
        && head[4] == b'-'
        && head[7] == b'-'
        && head[10] == b'T'
        && (head.ends_with(b"Z")
            || head.get(head.len() - 6) == Some(&b'+')
            || head.get(head.len() - 6) == Some(&b'-'));
    if !looks_like_time {
        return (None, bytes);
    }
    match std::str::from_utf8(head) {
        Ok(ts) => (Some(ts), &bytes[space + 1..]),
        Err(_) => (None, bytes),
    }
}

/// Reads lines of at most `max` bytes each; longer lines are consumed to
/// their end without being buffered. Counts every byte read.
pub struct LineReader<R> {
    inner: R,
    max: usize,
    bytes_read: u64,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Lines of `inner`, each kept up to `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            bytes_read: 0,
        }
    }

    /// Total bytes read from the stream so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Reads the next line into `line`; `false` at the end of the stream.
    /// A last line without a newline is returned too.
    pub async fn next_line(&mut self, line: &mut Line) -> std::io::Result<bool> {
        line.bytes.clear();
        if line.bytes.capacity() > NORMAL_LINE_CAPACITY {
            line.bytes.shrink_to(NORMAL_LINE_CAPACITY);
        }
        line.len = 0;
        line.oversized = false;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(line.len > 0);
            }
            let buf_len = buf.len();
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(pos) => (&buf[..pos], Some(pos + 1)),
                None => (buf, None),
            };
            let room = self.max.saturating_sub(line.bytes.len());
            let keep = chunk.len().min(room);
            line.bytes.extend_from_slice(&chunk[..keep]);
            if chunk.len() > room {
                if !line.oversized {
                    line.oversized = true;
                    line.scan.reset();
                    line.scan.feed(split_timestamp(&line.bytes).1);
                }
                line.scan.feed(&chunk[keep..]);
            }
            line.len += chunk.len() as u64;
            let used = done.unwrap_or(buf_len);
            self.inner.consume_unpin(used);
            self.bytes_read += used as u64;
            if done.is_some() {
                if line.bytes.last() == Some(&b'\r') && !line.oversized {
                    line.bytes.pop();
                }
                return Ok(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn splits_and_bounds_lines() {
        let mut data = b"one\ntwo\r\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 100));
        data.extend(b"\nlast");
        let mut r = LineReader::new(
            futures::io::BufReader::with_capacity(7, futures::io::Cursor::new(data.clone())),
            10,
        );
        let mut l = Line::default();
        assert!(r.next_line(&mut l).await.unwrap());
        assert_eq!(l.bytes, b"one");
        assert!(r.next_line(&mut l).await.unwrap());
        assert_eq!(l.bytes, b"two");
        assert!(r.next_line(&mut l).await.unwrap());
        assert!(l.oversized);
        assert_eq!(l.bytes.len(), 10);
        assert_eq!(l.len, 100);
        assert!(r.next_line(&mut l).await.unwrap());
        assert_eq!(l.bytes, b"last");
        assert!(!r.next_line(&mut l).await.unwrap());
        assert_eq!(r.bytes_read(), data.len() as u64);
    }

    #[test]
    fn timestamp_prefix() {
        let (ts, rest) = split_timestamp(b"2026-11-29T10:00:00.123456789Z {\"a\":1}");
        assert_eq!(ts, Some("2026-11-29T10:00:00.123456789Z"));
        assert_eq!(rest, b"{\"a\":1}");
        let (ts, rest) = split_timestamp(b"{\"a\": 1}");
        assert_eq!(ts, None);
        assert_eq!(rest, b"{\"a\": 1}");
        let (ts, _) = split_timestamp(b"2026-11-29T10:00:00+02:00 x");
        assert_eq!(ts, Some("2026-11-29T10:00:00+02:00"));
    }

    #[tokio::test]
    async fn buffer_returns_to_its_normal_capacity_after_a_long_line() {
        let mut data = vec![b'y'; 200 << 10];
        data.extend(b"\nshort\n");
        let mut r = LineReader::new(
            futures::io::BufReader::with_capacity(8192, futures::io::Cursor::new(data)),
            256 << 10,
        );
        let mut l = Line::default();
        assert!(r.next_line(&mut l).await.unwrap());
        assert_eq!(l.bytes.len(), 200 << 10);
        assert!(r.next_line(&mut l).await.unwrap());
        assert_eq!(l.bytes, b"short");
        assert!(
            l.bytes.capacity() <= NORMAL_LINE_CAPACITY,
            "a reader keeps {} bytes after one long line",
            l.bytes.capacity()
        );
    }
}
