//! Container log records as the kubelet finds them under `/var/log/pods`.
//!
//! A CRI record is `<RFC 3339 timestamp> <stdout|stderr> <tags> <content>` where the first tag
//! is `F` (full line) or `P` (partial: the content continues in the next record). Any other
//! record is a plain line, stamped with a time supplied by the caller.

use jiff::Timestamp;

/// How many bytes at the start of a record are enough to recognise a CRI header.
/// A timestamp with nanoseconds and an offset is 35 bytes, the stream 6, the tags a few.
pub const MAX_HEADER: usize = 128;

/// The output stream a record was written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// Parses the stream names of CRI records and of the `stream` log query parameter.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "stdout" | "Stdout" => Some(Self::Stdout),
            "stderr" | "Stderr" => Some(Self::Stderr),
            _ => None,
        }
    }
}

/// What the start of a record says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// A CRI record: its timestamp is bytes `..timestamp_len` of the record (checked for shape
    /// only; see [`Header::timestamp`]) and its content starts at byte `content_start`.
    Cri {
        timestamp_len: usize,
        stream: Stream,
        partial: bool,
        content_start: usize,
    },
    /// Not a CRI record: the whole record is content.
    Plain,
}

impl Header {
    /// True when the logical line continues in the next record.
    pub fn is_partial(&self) -> bool {
        matches!(self, Self::Cri { partial: true, .. })
    }

    /// The time of a CRI record, given the record's first bytes (the same `head` that was
    /// classified). None for plain lines and for timestamps that do not parse.
    pub fn timestamp(&self, head: &[u8]) -> Option<Timestamp> {
        match self {
            Self::Cri { timestamp_len, .. } => std::str::from_utf8(head.get(..*timestamp_len)?)
                .ok()?
                .parse()
                .ok(),
            Self::Plain => None,
        }
    }

    /// The stream of a CRI record.
    pub fn stream(&self) -> Option<Stream> {
        match self {
            Self::Cri { stream, .. } => Some(*stream),
            Self::Plain => None,
        }
    }

    /// Where the content starts within the record.
    pub fn content_start(&self) -> usize {
        match self {
            Self::Cri { content_start, .. } => *content_start,
            Self::Plain => 0,
        }
    }
}

/// Classifies a record from its first bytes.
///
/// `head` is the start of the record without its newline. `complete` says whether `head` is the
/// whole record; otherwise it must hold at least [`MAX_HEADER`] bytes (or the whole record) for
/// a CRI header to be recognised.
pub fn parse_header(head: &[u8], complete: bool) -> Header {
    let head = &head[..head.len().min(MAX_HEADER)];
    let mut fields = head.splitn(4, |&b| b == b' ');
    let (Some(ts), Some(stream), Some(tags)) = (fields.next(), fields.next(), fields.next()) else {
        return Header::Plain;
    };
    let has_content_delimiter = fields.next().is_some();
    if !has_content_delimiter && !complete {
        // The tags run to the end of what we were given: the header was cut short.
        return Header::Plain;
    }
    let partial = match tags.split(|&b| b == b':').next() {
        Some(b"P") => true,
        Some(b"F") => false,
        _ => return Header::Plain,
    };
    let Some(stream) = std::str::from_utf8(stream).ok().and_then(Stream::parse) else {
        return Header::Plain;
    };
    if !looks_like_rfc3339(ts) {
        return Header::Plain;
    }
    let mut content_start = ts.len() + 1 + stream_len(stream) + 1 + tags.len();
    if has_content_delimiter {
        content_start += 1;
    }
    Header::Cri {
        timestamp_len: ts.len(),
        stream,
        partial,
        content_start,
    }
}

/// Checks the shape `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` without parsing: classifying a
/// record must be cheap, and most requests never need its time.
pub fn looks_like_rfc3339(text: &[u8]) -> bool {
    const SHAPE: &[u8; 19] = b"dddd-dd-ddTdd:dd:dd";
    if text.len() < 20 {
        return false;
    }
    let shape_ok = SHAPE.iter().zip(text).all(|(&want, &got)| match want {
        b'd' => got.is_ascii_digit(),
        b'T' => got == b'T' || got == b't',
        other => got == other,
    });
    if !shape_ok {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return false;
        }
        rest = &fraction[digits..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()),
        _ => false,
    }
}

fn stream_len(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => "stdout".len(),
        Stream::Stderr => "stderr".len(),
    }
}

/// Parses an RFC 3339 timestamp (`2024-05-01T10:00:00.123456789Z`, or with a numeric offset).
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    // Require the RFC 3339 shape: date, 'T', time, and a 'Z' or numeric offset.
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes.get(10) != Some(&b'T') {
        return None;
    }
    let last = *bytes.last()?;
    let has_zone = last == b'Z' || (text.len() > 6 && matches!(bytes[text.len() - 6], b'+' | b'-'));
    if !has_zone {
        return None;
    }
    text.parse().ok()
}

/// Formats a timestamp like Go's `time.RFC3339Nano` in UTC, as the kubelet prefixes log lines:
/// trailing zeros of the fraction are dropped, and so is an all-zero fraction.
pub fn format_rfc3339_nano(ts: Timestamp) -> String {
    let seconds = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = ts.subsec_nanosecond();
    if nanos == 0 {
        return format!("{seconds}Z");
    }
    let fraction = format!("{nanos:09}");
    format!("{seconds}.{}Z", fraction.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().expect("valid timestamp")
    }

    #[test]
    fn parses_full_and_partial_records() {
        let line = b"2024-05-01T10:00:00.123456789Z stdout F hello world";
        let header = parse_header(line, true);
        assert_eq!(
            header,
            Header::Cri {
                timestamp_len: 30,
                stream: Stream::Stdout,
                partial: false,
                content_start: 40,
            }
        );
        assert_eq!(
            header.timestamp(line),
            Some(ts("2024-05-01T10:00:00.123456789Z"))
        );
        assert_eq!(&line[40..], b"hello world");

        let line = b"2024-05-01T10:00:00Z stderr P part";
        let header = parse_header(line, true);
        assert!(header.is_partial());
        assert_eq!(&line[header.content_start()..], b"part");
    }

    #[test]
    fn accepts_extra_tags_and_offsets() {
        let line = b"2024-05-01T12:00:00+02:00 stdout F:x y";
        let header = parse_header(line, true);
        assert_eq!(header.timestamp(line), Some(ts("2024-05-01T10:00:00Z")));
        assert_eq!(&line[parse_header(line, true).content_start()..], b"y");
    }

    #[test]
    fn empty_content_with_and_without_delimiter() {
        let with = b"2024-05-01T10:00:00Z stdout F ";
        assert_eq!(parse_header(with, true).content_start(), with.len());
        let without = b"2024-05-01T10:00:00Z stdout F";
        assert_eq!(parse_header(without, true).content_start(), without.len());
        // Cut short: cannot tell yet.
        assert_eq!(parse_header(without, false), Header::Plain);
    }

    #[test]
    fn rejects_plain_lines() {
        for line in [
            &b"hello world"[..],
            b"",
            b"2024-05-01T10:00:00Z stdout hello world",
            b"2024-05-01T10:00:00Z stdin F x",
            b"yesterday stdout F x",
            b"2024-05-01 stdout F x",
            b"2024-05-01T10:00:00 stdout F x",
            b"2024-05-01T10:00:00.Z stdout F x",
            b"2024-05-01T10:00:00+0200 stdout F x",
            b"2024-05-01X10:00:00Z stdout F x",
            b"{\"run_uid\":\"u\",\"message\":\"m\"}",
        ] {
            assert_eq!(
                parse_header(line, true),
                Header::Plain,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn an_impossible_date_is_a_record_without_a_time() {
        let line = b"2024-13-45T10:00:00Z stdout F x";
        let header = parse_header(line, true);
        assert!(matches!(header, Header::Cri { .. }));
        assert_eq!(header.timestamp(line), None);
    }

    #[test]
    fn formats_like_go_rfc3339nano() {
        assert_eq!(
            format_rfc3339_nano(ts("2024-05-01T10:00:00Z")),
            "2024-05-01T10:00:00Z"
        );
        assert_eq!(
            format_rfc3339_nano(ts("2024-05-01T10:00:00.120Z")),
            "2024-05-01T10:00:00.12Z"
        );
        assert_eq!(
            format_rfc3339_nano(ts("2024-05-01T12:00:00.000000001+02:00")),
            "2024-05-01T10:00:00.000000001Z"
        );
    }
}
