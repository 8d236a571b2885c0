//! Turns the bytes of a container log file into what `kubectl logs` shows: the content of each
//! logical line, optionally prefixed with its timestamp, filtered by time and stream.
//!
//! The decoder is fed arbitrary chunks and writes output as it goes: only the first
//! [`MAX_HEADER`] bytes of a record are ever held back, so lines of any length stream through.

use jiff::Timestamp;

use crate::sim::cri::{Header, MAX_HEADER, format_rfc3339_nano, parse_header};
use crate::sim::logfilter::LogOptions;

/// Streaming decoder for one log file.
#[derive(Debug)]
pub struct Decoder {
    opts: LogOptions,
    /// Time given to plain (non-CRI) lines: the file's modification time.
    plain_time: Timestamp,
    /// The start of the current record while its header is not yet known.
    head: Vec<u8>,
    /// Set while inside a record whose header is known.
    body: Option<Body>,
    /// The previous record was partial: the next CRI record continues its logical line.
    group_open: bool,
    /// Whether the open logical line is being written out.
    group_emit: bool,
}

#[derive(Clone, Copy, Debug)]
struct Body {
    emit: bool,
    partial: bool,
}

impl Decoder {
    pub fn new(opts: LogOptions, plain_time: Timestamp) -> Self {
        Self {
            opts,
            plain_time,
            head: Vec::with_capacity(MAX_HEADER),
            body: None,
            group_open: false,
            group_emit: false,
        }
    }

    /// Updates the time stamped on plain lines read from now on.
    pub fn set_plain_time(&mut self, plain_time: Timestamp) {
        self.plain_time = plain_time;
    }

    /// Forgets any record in progress (after the file was truncated or replaced).
    pub fn reset(&mut self) {
        self.head.clear();
        self.body = None;
        self.group_open = false;
        self.group_emit = false;
    }

    /// Decodes `input`, appending output to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match self.body {
                None => {
                    let room = MAX_HEADER - self.head.len();
                    let window = &input[..input.len().min(room)];
                    if let Some(newline) = memchr::memchr(b'\n', window) {
                        self.head.extend_from_slice(&window[..newline]);
                        input = &input[newline + 1..];
                        self.start_record(true, out);
                        self.end_record(out);
                    } else {
                        self.head.extend_from_slice(window);
                        input = &input[window.len()..];
                        if self.head.len() == MAX_HEADER {
                            self.start_record(false, out);
                        }
                    }
                }
                Some(body) => match memchr::memchr(b'\n', input) {
                    Some(newline) => {
                        if body.emit {
                            out.extend_from_slice(&input[..newline]);
                        }
                        input = &input[newline + 1..];
                        self.end_record(out);
                    }
                    None => {
                        if body.emit {
                            out.extend_from_slice(input);
                        }
                        input = &[];
                    }
                },
            }
        }
    }

    /// Called at the end of the file when no more data is expected: writes out a last record
    /// that has no newline yet (without adding one).
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.body.is_none() && !self.head.is_empty() {
            self.start_record(true, out);
        }
    }

    /// The header of the record in `self.head` is known: decide whether to write it and write
    /// what content `head` already holds.
    fn start_record(&mut self, complete: bool, out: &mut Vec<u8>) {
        let header = parse_header(&self.head, complete);
        let continues = self.group_open && matches!(header, Header::Cri { .. });
        let emit = if continues {
            self.group_emit
        } else {
            if self.group_open && self.group_emit {
                // A plain line interrupts an unfinished partial line: end that line first.
                out.push(b'\n');
            }
            self.group_open = false;
            let timestamp = self
                .opts
                .needs_time()
                .then(|| header.timestamp(&self.head).unwrap_or(self.plain_time));
            let emit = self.opts.wants_stream(header.stream())
                && timestamp.is_none_or(|t| self.opts.wants_time(t));
            if let (true, true, Some(timestamp)) = (emit, self.opts.timestamps, timestamp) {
                out.extend_from_slice(format_rfc3339_nano(timestamp).as_bytes());
                out.push(b' ');
            }
            emit
        };
        if emit {
            let start = header.content_start().min(self.head.len());
            out.extend_from_slice(&self.head[start..]);
        }
        self.head.clear();
        self.body = Some(Body {
            emit,
            partial: header.is_partial(),
        });
    }

    /// The current record's newline was reached.
    fn end_record(&mut self, out: &mut Vec<u8>) {
        let Some(body) = self.body.take() else {
            return;
        };
        if body.partial {
            self.group_open = true;
            self.group_emit = body.emit;
        } else {
            self.group_open = false;
            if body.emit {
                out.push(b'\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::cri::Stream;

    fn mtime() -> Timestamp {
        "2024-05-01T12:00:00Z".parse().expect("timestamp")
    }

    fn decode(opts: LogOptions, input: &[u8]) -> String {
        let mut decoder = Decoder::new(opts, mtime());
        let mut out = Vec::new();
        decoder.feed(input, &mut out);
        decoder.finish(&mut out);
        String::from_utf8(out).expect("utf-8 output")
    }

    const SAMPLE: &str = "\
2024-05-01T10:00:00.5Z stdout F first
2024-05-01T10:00:01Z stderr P sec
2024-05-01T10:00:01.1Z stderr P o
2024-05-01T10:00:01.2Z stderr F nd
plain line
2024-05-01T10:00:03Z stdout F 
2024-05-01T10:00:04Z stdout F last
";

    #[test]
    fn joins_partial_records_and_passes_plain_lines() {
        assert_eq!(
            decode(LogOptions::default(), SAMPLE.as_bytes()),
            "first\nsecond\nplain line\n\nlast\n"
        );
    }

    #[test]
    fn prefixes_timestamps_like_the_kubelet() {
        let opts = LogOptions {
            timestamps: true,
            ..LogOptions::default()
        };
        assert_eq!(
            decode(opts, SAMPLE.as_bytes()),
            "2024-05-01T10:00:00.5Z first\n\
             2024-05-01T10:00:01Z second\n\
             2024-05-01T12:00:00Z plain line\n\
             2024-05-01T10:00:03Z \n\
             2024-05-01T10:00:04Z last\n"
        );
    }

    #[test]
    fn since_drops_older_lines() {
        let opts = LogOptions {
            since: Some("2024-05-01T10:00:01Z".parse().expect("ts")),
            ..LogOptions::default()
        };
        assert_eq!(
            decode(opts.clone(), SAMPLE.as_bytes()),
            "second\nplain line\n\nlast\n"
        );
        let opts = LogOptions {
            since: Some("2024-05-01T10:00:01.1Z".parse().expect("ts")),
            ..opts
        };
        // A logical line carries the time of its first record.
        assert_eq!(decode(opts, SAMPLE.as_bytes()), "plain line\n\nlast\n");
    }

    #[test]
    fn stream_filter_keeps_plain_lines() {
        let opts = LogOptions {
            stream: Some(Stream::Stderr),
            ..LogOptions::default()
        };
        assert_eq!(decode(opts, SAMPLE.as_bytes()), "second\nplain line\n");
    }

    #[test]
    fn any_chunking_gives_the_same_output() {
        let whole = decode(LogOptions::default(), SAMPLE.as_bytes());
        for size in [1, 2, 3, 7, 40, 127, 128, 129] {
            let mut decoder = Decoder::new(LogOptions::default(), mtime());
            let mut out = Vec::new();
            for chunk in SAMPLE.as_bytes().chunks(size) {
                decoder.feed(chunk, &mut out);
            }
            decoder.finish(&mut out);
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                whole,
                "chunk size {size}"
            );
        }
    }

    #[test]
    fn long_lines_stream_through_before_their_newline() {
        let mut decoder = Decoder::new(LogOptions::default(), mtime());
        let mut out = Vec::new();
        decoder.feed(b"2024-05-01T10:00:00Z stdout F ", &mut out);
        let chunk = vec![b'x'; 4096];
        for _ in 0..100 {
            decoder.feed(&chunk, &mut out);
        }
        // Everything but at most a header's worth has been written already.
        assert!(
            out.len() >= 100 * 4096 - MAX_HEADER,
            "{} bytes out",
            out.len()
        );
        decoder.feed(b"\n", &mut out);
        assert_eq!(out.len(), 100 * 4096 + 1);
        assert_eq!(out.last(), Some(&b'\n'));
    }

    #[test]
    fn last_record_without_newline_is_written_at_the_end() {
        assert_eq!(decode(LogOptions::default(), b"a\nb"), "a\nb");
        assert_eq!(
            decode(LogOptions::default(), b"2024-05-01T10:00:00Z stdout P tail"),
            "tail"
        );
    }

    #[test]
    fn plain_line_ends_an_unfinished_partial_line() {
        assert_eq!(
            decode(
                LogOptions::default(),
                b"2024-05-01T10:00:00Z stdout P half\nplain\n"
            ),
            "half\nplain\n"
        );
    }

    #[test]
    fn reset_forgets_a_record_in_progress() {
        let mut decoder = Decoder::new(LogOptions::default(), mtime());
        let mut out = Vec::new();
        decoder.feed(b"2024-05-01T10:00:00Z stdout P abc", &mut out);
        decoder.reset();
        decoder.feed(b"new\n", &mut out);
        assert_eq!(out, b"new\n");
    }
}
