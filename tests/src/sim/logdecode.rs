//! Turns the bytes of a container log file into what `kubectl logs` shows: the content of each
//! logical line, optionally prefixed with its timestamp, filtered by time and stream.
//!
//! Only CRI records are served, each with its own time; a line that is not a CRI record is
//! skipped, as the kubelet skips a line it cannot parse. So a line's time never changes
//! between requests. A record whose time has the right shape but does not parse (a 13th
//! month) carries the Unix epoch.
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
    /// Not a CRI record: neither written nor part of a logical line.
    skip: bool,
}

/// The time of a CRI record whose timestamp does not parse.
pub const UNPARSABLE_TIME: Timestamp = Timestamp::UNIX_EPOCH;

impl Decoder {
    pub fn new(opts: LogOptions) -> Self {
        Self {
            opts,
            head: Vec::with_capacity(MAX_HEADER),
            body: None,
            group_open: false,
            group_emit: false,
        }
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
        if header == Header::Plain {
            self.head.clear();
            self.body = Some(Body {
                emit: false,
                partial: false,
                skip: true,
            });
            return;
        }
        let emit = if self.group_open {
            self.group_emit
        } else {
            let timestamp = self
                .opts
                .needs_time()
                .then(|| header.timestamp(&self.head).unwrap_or(UNPARSABLE_TIME));
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
            skip: false,
        });
    }

    /// The current record's newline was reached.
    fn end_record(&mut self, out: &mut Vec<u8>) {
        let Some(body) = self.body.take() else {
            return;
        };
        if body.skip {
            return;
        }
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

    fn decode(opts: LogOptions, input: &[u8]) -> String {
        let mut decoder = Decoder::new(opts);
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
    fn joins_partial_records_and_skips_plain_lines() {
        assert_eq!(
            decode(LogOptions::default(), SAMPLE.as_bytes()),
            "first\nsecond\n\nlast\n"
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
        assert_eq!(decode(opts.clone(), SAMPLE.as_bytes()), "second\n\nlast\n");
        let opts = LogOptions {
            since: Some("2024-05-01T10:00:01.1Z".parse().expect("ts")),
            ..opts
        };
        // A logical line carries the time of its first record.
        assert_eq!(decode(opts, SAMPLE.as_bytes()), "\nlast\n");
    }

    #[test]
    fn stream_filter() {
        let opts = LogOptions {
            stream: Some(Stream::Stderr),
            ..LogOptions::default()
        };
        assert_eq!(decode(opts, SAMPLE.as_bytes()), "second\n");
    }

    #[test]
    fn any_chunking_gives_the_same_output() {
        let whole = decode(LogOptions::default(), SAMPLE.as_bytes());
        for size in [1, 2, 3, 7, 40, 127, 128, 129] {
            let mut decoder = Decoder::new(LogOptions::default());
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
        let mut decoder = Decoder::new(LogOptions::default());
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
        assert_eq!(
            decode(
                LogOptions::default(),
                b"2024-05-01T10:00:00Z stdout F a\n2024-05-01T10:00:00Z stdout F b"
            ),
            "a\nb"
        );
        assert_eq!(decode(LogOptions::default(), b"a\nb"), "");
        assert_eq!(
            decode(LogOptions::default(), b"2024-05-01T10:00:00Z stdout P tail"),
            "tail"
        );
    }

    #[test]
    fn a_plain_line_inside_a_partial_line_is_skipped() {
        assert_eq!(
            decode(
                LogOptions::default(),
                b"2024-05-01T10:00:00Z stdout P half\nplain\n2024-05-01T10:00:00Z stdout F rest\n"
            ),
            "halfrest\n"
        );
    }

    #[test]
    fn a_record_with_an_impossible_time_carries_the_epoch() {
        let opts = LogOptions {
            timestamps: true,
            ..LogOptions::default()
        };
        assert_eq!(
            decode(opts, b"2024-13-45T10:00:00Z stdout F x\n"),
            "1970-01-01T00:00:00Z x\n"
        );
    }

    #[test]
    fn reset_forgets_a_record_in_progress() {
        let mut decoder = Decoder::new(LogOptions::default());
        let mut out = Vec::new();
        decoder.feed(b"2024-05-01T10:00:00Z stdout P abc", &mut out);
        decoder.reset();
        decoder.feed(b"2024-05-01T10:00:00Z stdout F new\n", &mut out);
        assert_eq!(out, b"new\n");
    }
}
