//! Which log lines a request wants, from the kubelet's `containerLogs` query parameters.

use jiff::Timestamp;

use crate::sim::cri::{Stream, parse_rfc3339};

/// A bad query parameter.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueryError {
    #[error("invalid value {value:?} for {name}: expected true or false")]
    Bool { name: &'static str, value: String },
    #[error("invalid value {value:?} for {name}: expected a non-negative integer")]
    Unsigned { name: &'static str, value: String },
    #[error("invalid value {value:?} for {name}: must be at least 1")]
    Positive { name: &'static str, value: String },
    #[error("invalid value {0:?} for sinceTime: expected an RFC 3339 timestamp")]
    SinceTime(String),
    #[error("invalid value {0:?} for stream: expected All, Stdout or Stderr")]
    Stream(String),
}

/// Options of one `containerLogs` request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<u64>,
    pub limit_bytes: Option<u64>,
    /// Lines older than this are dropped.
    pub since: Option<Timestamp>,
    /// Only lines of this stream; all streams when unset.
    pub stream: Option<Stream>,
}

impl LogOptions {
    /// Parses query pairs; unknown parameters are ignored as the kubelet does.
    /// `sinceSeconds` is relative to `now` and wins over `sinceTime`.
    pub fn from_query<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        now: Timestamp,
    ) -> Result<Self, QueryError> {
        let mut opts = Self::default();
        let mut since_seconds = None;
        let mut since_time = None;
        for (name, value) in pairs {
            match name {
                "follow" => opts.follow = parse_bool("follow", value)?,
                "previous" => opts.previous = parse_bool("previous", value)?,
                "timestamps" => opts.timestamps = parse_bool("timestamps", value)?,
                "tailLines" => opts.tail_lines = Some(parse_unsigned("tailLines", value)?),
                "limitBytes" => opts.limit_bytes = Some(parse_positive("limitBytes", value)?),
                "sinceSeconds" => since_seconds = Some(parse_positive("sinceSeconds", value)?),
                "sinceTime" => {
                    since_time = Some(
                        parse_rfc3339(value).ok_or_else(|| QueryError::SinceTime(value.into()))?,
                    );
                }
                "stream" => {
                    opts.stream = match value {
                        "" | "All" | "all" => None,
                        other => Some(
                            Stream::parse(other).ok_or_else(|| QueryError::Stream(value.into()))?,
                        ),
                    };
                }
                _ => {}
            }
        }
        opts.since = match since_seconds {
            Some(seconds) => {
                let seconds = i64::try_from(seconds).unwrap_or(i64::MAX);
                Some(
                    now.checked_sub(jiff::SignedDuration::from_secs(seconds))
                        .unwrap_or(Timestamp::MIN),
                )
            }
            None => since_time,
        };
        Ok(opts)
    }

    /// Whether a logical line with this timestamp and stream is wanted.
    pub fn wants(&self, timestamp: Timestamp, stream: Option<Stream>) -> bool {
        self.wants_time(timestamp) && self.wants_stream(stream)
    }

    /// Whether lines of this time pass `since`.
    pub fn wants_time(&self, timestamp: Timestamp) -> bool {
        self.since.is_none_or(|since| timestamp >= since)
    }

    /// Whether lines of this stream are wanted (plain lines have none and always are).
    pub fn wants_stream(&self, stream: Option<Stream>) -> bool {
        match (self.stream, stream) {
            (Some(wanted), Some(actual)) => wanted == actual,
            _ => true,
        }
    }

    /// Whether deciding about or printing a line needs its time.
    pub fn needs_time(&self) -> bool {
        self.since.is_some() || self.timestamps
    }
}

fn parse_bool(name: &'static str, value: &str) -> Result<bool, QueryError> {
    match value {
        "true" | "1" | "True" | "TRUE" => Ok(true),
        "" | "false" | "0" | "False" | "FALSE" => Ok(false),
        _ => Err(QueryError::Bool {
            name,
            value: value.into(),
        }),
    }
}

fn parse_unsigned(name: &'static str, value: &str) -> Result<u64, QueryError> {
    value.parse().map_err(|_| QueryError::Unsigned {
        name,
        value: value.into(),
    })
}

fn parse_positive(name: &'static str, value: &str) -> Result<u64, QueryError> {
    match parse_unsigned(name, value)? {
        0 => Err(QueryError::Positive {
            name,
            value: value.into(),
        }),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2024-05-01T10:00:00Z".parse().expect("timestamp")
    }

    #[test]
    fn parses_all_parameters() {
        let opts = LogOptions::from_query(
            [
                ("follow", "true"),
                ("tailLines", "10"),
                ("limitBytes", "100"),
                ("timestamps", "true"),
                ("sinceTime", "2024-05-01T09:00:00Z"),
                ("stream", "Stderr"),
                ("unknown", "x"),
            ],
            now(),
        )
        .expect("valid query");
        assert!(opts.follow && opts.timestamps && !opts.previous);
        assert_eq!(opts.tail_lines, Some(10));
        assert_eq!(opts.limit_bytes, Some(100));
        assert_eq!(
            opts.since,
            Some("2024-05-01T09:00:00Z".parse().expect("ts"))
        );
        assert_eq!(opts.stream, Some(Stream::Stderr));
    }

    #[test]
    fn since_seconds_wins_over_since_time() {
        let opts = LogOptions::from_query(
            [
                ("sinceTime", "2024-05-01T09:00:00Z"),
                ("sinceSeconds", "60"),
            ],
            now(),
        )
        .expect("valid query");
        assert_eq!(
            opts.since,
            Some("2024-05-01T09:59:00Z".parse().expect("ts"))
        );
    }

    #[test]
    fn rejects_bad_values() {
        for (name, value) in [
            ("follow", "yes"),
            ("tailLines", "-1"),
            ("tailLines", "x"),
            ("limitBytes", "0"),
            ("sinceSeconds", "0"),
            ("sinceTime", "yesterday"),
            ("stream", "stdin"),
        ] {
            assert!(
                LogOptions::from_query([(name, value)], now()).is_err(),
                "{name}={value} should be rejected"
            );
        }
    }

    #[test]
    fn wants_filters_by_time_and_stream() {
        let opts = LogOptions {
            since: Some(now()),
            stream: Some(Stream::Stdout),
            ..LogOptions::default()
        };
        assert!(opts.wants(now(), Some(Stream::Stdout)));
        assert!(opts.wants(now(), None));
        assert!(!opts.wants(now(), Some(Stream::Stderr)));
        let earlier = now() - jiff::SignedDuration::from_nanos(1);
        assert!(!opts.wants(earlier, Some(Stream::Stdout)));
    }
}
