//! Selects the lines of one Run out of a shared runtimed log.
//!
//! A `memchr` substring search for the Run UID rejects almost every line of
//! other Runs without parsing; only candidate lines are parsed as JSON and
//! kept when their top-level `run_uid` field equals the UID exactly. Lines
//! too long to keep whole follow the same rule through a streaming scan
//! ([`super::scan`]): nested keys never count, a repeated one drops the line.

use std::borrow::Cow;

use memchr::memmem;
use serde::{Deserialize, Serialize};

use super::lines::Line;
use super::scan::TopLevelScan;

/// One record of a Run's log, as the API returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct LogRecord {
    /// `stdout` or `stderr` as runtimed reported it.
    #[ts(type = "'stdout' | 'stderr'")]
    pub stream: String,
    /// The message runtimed recorded (the program's output line).
    pub message: String,
    /// The Runtime Pod that wrote the record.
    pub pod: String,
    /// The invocation the record belongs to, when runtimed named one.
    #[serde(rename = "invocationID", skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// When the kubelet received the line (RFC 3339), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The record's address, `<secs>.<nanos9>-<seq>` (its CRI timestamp and
    /// its index among the Pod log's lines of that timestamp): hand it back
    /// as `sinceCursor` or `beforeCursor`. Opaque to clients.
    #[serde(default)]
    pub cursor: String,
    /// The record's number (1-based) among the Run's records of the
    /// streams asked for, counted from the start of the Run's window:
    /// the same record has the same number in every answer. Absent when
    /// it is not known (live output; a count that would read more than
    /// `--log-numbering-max-bytes` of the log).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[ts(as = "Option<f64>")]
    pub line: Option<u64>,
    /// Set when the line was longer than the server keeps and its message was dropped.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    #[ts(as = "Option<bool>")]
    pub truncated: bool,
    /// Where the record was read: absent for runtimed's log, `status` for
    /// the live output of a Run whose records runtimed has not written yet
    /// (its cursor is then a live cursor,
    /// `L<attempt>-<stdout lines>-<stderr lines>-<o|e>`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[ts(type = "'status'")]
    pub source: Option<String>,
    /// Set when runtimed wrote the record only when the Run ended: its
    /// `time` is when it was written, not when the line was printed.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    #[ts(as = "Option<bool>")]
    pub written_at_end: bool,
    /// Set on the records of a `search` answer that match it (the others
    /// are context).
    #[serde(rename = "match", skip_serializing_if = "std::ops::Not::not", default)]
    #[ts(as = "Option<bool>")]
    pub is_match: bool,
}

impl LogRecord {
    /// Bytes this record counts against `limitBytes`.
    pub fn weight(&self) -> usize {
        self.message.len()
    }
}

/// Which runtimed streams a caller asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StreamFilter {
    /// Both streams.
    #[default]
    Both,
    /// Standard output only.
    Stdout,
    /// Standard error only.
    Stderr,
}

impl StreamFilter {
    /// Whether a record of `stream` (`stdout` or `stderr`) is kept.
    pub fn admits(self, stream: &str) -> bool {
        match self {
            StreamFilter::Both => true,
            StreamFilter::Stdout => stream == "stdout",
            StreamFilter::Stderr => stream == "stderr",
        }
    }
}

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(borrow)]
    run_uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stream: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pod: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    invocation_id: Option<Cow<'a, str>>,
}

/// The filter for one Run: its UID and the streams asked for.
pub struct RunFilter {
    uid: String,
    finder: memmem::Finder<'static>,
    streams: StreamFilter,
    default_pod: String,
}

impl RunFilter {
    /// The Run's UID.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The streams asked for.
    pub fn streams(&self) -> StreamFilter {
        self.streams
    }

    /// The filter of the Run with UID `uid`; records without a Pod name are `default_pod`'s.
    pub fn new(uid: &str, streams: StreamFilter, default_pod: &str) -> Self {
        Self {
            uid: uid.to_owned(),
            finder: memmem::Finder::new(uid.as_bytes()).into_owned(),
            streams,
            default_pod: default_pod.to_owned(),
        }
    }

    /// The record of one line read by a [`LineReader`](super::lines::LineReader),
    /// whole or oversized.
    pub fn line_record(&self, line: &Line) -> Option<LogRecord> {
        let (time, content) = line.split_timestamp();
        if line.oversized {
            self.oversized_record(&line.scan, line.len, time)
        } else {
            self.record(content, time)
        }
    }

    /// Cheap test on a line read by a [`LineReader`](super::lines::LineReader):
    /// can it belong to the Run at all? (An oversized line is decided by its
    /// top-level `run_uid`, read from all of its bytes.)
    pub fn is_candidate_line(&self, line: &Line) -> bool {
        if line.oversized {
            return line
                .scan
                .fields()
                .is_some_and(|f| f.get("run_uid") == Some(self.uid.as_str()));
        }
        self.is_candidate(line.split_timestamp().1)
    }

    /// Cheap test: can this line belong to the Run at all?
    #[inline]
    pub fn is_candidate(&self, line: &[u8]) -> bool {
        self.finder.find(line).is_some()
    }

    /// The record of this line when it belongs to the Run and a wanted stream.
    pub fn record(&self, line: &[u8], time: Option<&str>) -> Option<LogRecord> {
        if !self.is_candidate(line) {
            return None;
        }
        // Only a JSON object is a runtimed record (serde would also read a struct from an array).
        if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return None;
        }
        let raw: RawLine<'_> = serde_json::from_slice(line).ok()?;
        if raw.run_uid.as_deref() != Some(self.uid.as_str()) {
            return None;
        }
        let stream = raw.stream.as_deref().unwrap_or("stdout");
        if !self.streams.admits(stream) {
            return None;
        }
        Some(LogRecord {
            stream: stream.to_owned(),
            message: raw.message.map(Cow::into_owned).unwrap_or_default(),
            pod: raw
                .pod
                .map(Cow::into_owned)
                .unwrap_or_else(|| self.default_pod.clone()),
            invocation_id: raw.invocation_id.map(Cow::into_owned),
            time: time.map(str::to_owned),
            cursor: String::new(),
            line: None,
            truncated: false,
            source: None,
            written_at_end: false,
            is_match: false,
        })
    }

    /// The record for a line longer than [`super::MAX_LINE_BYTES`], of which only
    /// a prefix was kept: its top-level members were read from every byte
    /// as the line streamed by (`scan`); the message itself is replaced by a note.
    pub fn oversized_record(
        &self,
        scan: &TopLevelScan,
        total_len: u64,
        time: Option<&str>,
    ) -> Option<LogRecord> {
        let fields = scan.fields()?;
        if fields.get("run_uid") != Some(self.uid.as_str()) {
            return None;
        }
        let stream = fields.get("stream").unwrap_or("stdout");
        if !self.streams.admits(stream) {
            return None;
        }
        Some(LogRecord {
            stream: stream.to_owned(),
            message: format!(
                "[record of {total_len} bytes exceeds the {} KiB line bound and was omitted]",
                super::MAX_LINE_BYTES >> 10
            ),
            pod: fields
                .get("pod")
                .map_or_else(|| self.default_pod.clone(), str::to_owned),
            invocation_id: fields.get("invocation_id").map(str::to_owned),
            time: time.map(str::to_owned),
            cursor: String::new(),
            line: None,
            truncated: true,
            source: None,
            written_at_end: false,
            is_match: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "6f1c2b9e-1111-4a2b-9c3d-000000000001";

    fn filter() -> RunFilter {
        RunFilter::new(UID, StreamFilter::Both, "pool-0")
    }

    #[test]
    fn keeps_exact_uid_only() {
        let f = filter();
        let mine =
            format!(r#"{{"run_uid":"{UID}","stream":"stdout","message":"hello","pod":"p1"}}"#);
        let rec = f
            .record(mine.as_bytes(), Some("2026-01-01T00:00:00Z"))
            .expect("own line kept");
        assert_eq!(rec.message, "hello");
        assert_eq!(rec.pod, "p1");
        assert_eq!(rec.time.as_deref(), Some("2026-01-01T00:00:00Z"));
    }

    #[test]
    fn rejects_uid_in_another_runs_message() {
        let f = filter();
        let other = format!(r#"{{"run_uid":"other","stream":"stdout","message":"see {UID}"}}"#);
        assert!(f.is_candidate(other.as_bytes()));
        assert!(f.record(other.as_bytes(), None).is_none());
    }

    #[test]
    fn rejects_prefix_and_superstring_uids() {
        let f = filter();
        let longer = format!(r#"{{"run_uid":"{UID}x","message":"m"}}"#);
        let shorter = format!(r#"{{"run_uid":"{}","message":"m"}}"#, &UID[..UID.len() - 1]);
        assert!(f.record(longer.as_bytes(), None).is_none());
        assert!(f.record(shorter.as_bytes(), None).is_none());
    }

    #[test]
    fn rejects_non_json_and_missing_uid() {
        let f = filter();
        assert!(
            f.record(format!("plain text {UID}").as_bytes(), None)
                .is_none()
        );
        assert!(
            f.record(format!(r#"{{"message":"{UID}"}}"#).as_bytes(), None)
                .is_none()
        );
        assert!(
            f.record(
                format!(r#"{{"run_uid":null,"message":"{UID}"}}"#).as_bytes(),
                None
            )
            .is_none()
        );
        assert!(f.record(format!(r#"["{UID}"]"#).as_bytes(), None).is_none());
    }

    #[test]
    fn stream_filter_applies() {
        let f = RunFilter::new(UID, StreamFilter::Stderr, "p");
        let out = format!(r#"{{"run_uid":"{UID}","stream":"stdout","message":"o"}}"#);
        let err = format!(r#"{{"run_uid":"{UID}","stream":"stderr","message":"e"}}"#);
        assert!(f.record(out.as_bytes(), None).is_none());
        assert_eq!(
            f.record(err.as_bytes(), None).map(|r| r.message),
            Some("e".into())
        );
    }

    #[test]
    fn invocation_id_and_escapes() {
        let f = filter();
        let line = format!(r#"{{"run_uid":"{UID}","message":"a\"b\n","invocation_id":"inv-1"}}"#);
        let rec = f.record(line.as_bytes(), None).expect("kept");
        assert_eq!(rec.message, "a\"b\n");
        assert_eq!(rec.invocation_id.as_deref(), Some("inv-1"));
        assert_eq!(rec.pod, "pool-0", "falls back to the assigned pod");
    }

    /// Expected outcome of one line: `None` dropped, else (stream, pod, invocation ID).
    type Expect = Option<(&'static str, &'static str, Option<&'static str>)>;

    /// One rule for whole and oversized lines: `{PAD}` is replaced by a short
    /// message, then by one that pushes the line past the line bound.
    const PARITY_CASES: &[(&str, &str, Expect)] = &[
        (
            "uid first",
            r#"{"run_uid":"{UID}","stream":"stdout","message":"{PAD}"}"#,
            Some(("stdout", "pool-0", None)),
        ),
        (
            "uid after the message",
            r#"{"message":"{PAD}","stream":"stderr","run_uid":"{UID}"}"#,
            Some(("stderr", "pool-0", None)),
        ),
        (
            "all fields after the message",
            r#"{"message":"{PAD}","pod":"p7","invocation_id":"inv-1","run_uid":"{UID}"}"#,
            Some(("stdout", "p7", Some("inv-1"))),
        ),
        (
            "nested uid before the message",
            r#"{"meta":{"run_uid":"{UID}"},"message":"{PAD}"}"#,
            None,
        ),
        (
            "nested uid after the message",
            r#"{"message":"{PAD}","meta":{"a":"b","run_uid":"{UID}"}}"#,
            None,
        ),
        (
            "nested uid in an array",
            r#"{"message":"{PAD}","list":[{"x":"y","run_uid":"{UID}"}]}"#,
            None,
        ),
        (
            "nested uid, other top-level uid",
            r#"{"run_uid":"other","message":"{PAD}","meta":{"a":"b","run_uid":"{UID}"}}"#,
            None,
        ),
        (
            "duplicate uid around the message",
            r#"{"run_uid":"{UID}","message":"{PAD}","run_uid":"other"}"#,
            None,
        ),
        (
            "duplicate uid, own second",
            r#"{"run_uid":"other","message":"{PAD}","run_uid":"{UID}"}"#,
            None,
        ),
        (
            "same uid twice before the message",
            r#"{"run_uid":"{UID}","run_uid":"{UID}","message":"{PAD}"}"#,
            None,
        ),
        (
            "same uid twice after the message",
            r#"{"message":"{PAD}","run_uid":"{UID}","run_uid":"{UID}"}"#,
            None,
        ),
        (
            "uid quoted inside the message",
            r#"{"message":"{PAD}\",\"run_uid\":\"{UID}\"","run_uid":"other"}"#,
            None,
        ),
        (
            "stream is not a string",
            r#"{"run_uid":"{UID}","message":"{PAD}","stream":5}"#,
            None,
        ),
        (
            "uid is null",
            r#"{"message":"{PAD}","run_uid":null,"x":"{UID}"}"#,
            None,
        ),
        ("not an object", r#"["{UID}","{PAD}"]"#, None),
    ];

    async fn read_one(line: &str) -> Line {
        let data = format!("2026-01-01T00:00:00.000000001Z {line}\n").into_bytes();
        let mut reader = super::super::lines::LineReader::new(
            futures::io::BufReader::with_capacity(8192, futures::io::Cursor::new(data)),
            super::super::MAX_LINE_BYTES,
        );
        let mut out = Line::default();
        assert!(reader.next_line(&mut out).await.unwrap());
        out
    }

    #[tokio::test]
    async fn whole_and_oversized_lines_follow_one_rule() {
        let f = filter();
        let big = "x".repeat(super::super::MAX_LINE_BYTES + (44 << 10));
        for (oversized, pad) in [(false, "short"), (true, big.as_str())] {
            for (name, template, expect) in PARITY_CASES {
                let text = template.replace("{UID}", UID).replace("{PAD}", pad);
                let line = read_one(&text).await;
                assert_eq!(line.oversized, oversized, "{name}");
                let got = f.line_record(&line);
                let got_parts = got.as_ref().map(|r| {
                    (
                        r.stream.as_str(),
                        r.pod.as_str(),
                        r.invocation_id.as_deref(),
                    )
                });
                assert_eq!(
                    got_parts,
                    *expect,
                    "{name} ({} line)",
                    if oversized { "oversized" } else { "whole" }
                );
                if let Some(rec) = got {
                    assert_eq!(rec.truncated, oversized, "{name}");
                    assert_eq!(rec.time.as_deref(), Some("2026-01-01T00:00:00.000000001Z"));
                }
            }
        }
    }
}
