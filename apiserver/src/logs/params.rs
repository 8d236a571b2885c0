//! Query parameters of `runs/log`, parsed strictly: every bad value is a
//! 400 that says what is wrong.

use kruntimes_core::query::{self, QueryError};

use super::cursor::Cursor;
use super::filter::StreamFilter;
use super::live::LiveCursor;
use super::search::{Search, SearchError, SearchParams};
use super::{MAX_LIMIT_BYTES, MAX_TAIL_RECORDS};

/// Records returned when `tailLines` is not given.
pub const DEFAULT_TAIL: usize = 100;

/// What a caller asked of a Run's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogQuery {
    /// `tailLines`: the newest records to return.
    pub tail: usize,
    /// `follow`: keep the answer open for new records.
    pub follow: bool,
    /// `limitBytes`: the most bytes of records to return.
    pub limit_bytes: usize,
    /// `stream`: which streams' records.
    pub stream: StreamFilter,
    /// Only records after this one.
    pub since_cursor: Option<Cursor>,
    /// Only records before this one (not with `follow`).
    pub before_cursor: Option<Cursor>,
    /// Only records after this live record (`L…` cursors).
    pub since_live: Option<LiveCursor>,
    /// Only records before this live record (not with `follow`).
    pub before_live: Option<LiveCursor>,
    /// The first records of the Run instead of its last (plain only).
    pub from_start: bool,
    /// Only matching records with their context (`search`, `regex`,
    /// `ignoreCase`, `context`); `tail` then counts matches.
    pub search: Option<Search>,
}

impl Default for LogQuery {
    fn default() -> Self {
        Self {
            tail: DEFAULT_TAIL,
            follow: false,
            limit_bytes: MAX_LIMIT_BYTES,
            stream: StreamFilter::Both,
            since_cursor: None,
            before_cursor: None,
            since_live: None,
            before_live: None,
            from_start: false,
            search: None,
        }
    }
}

/// A query parameter that could not be accepted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// A bad `tailLines`.
    #[error("tailLines must be an integer from 1 to {MAX_TAIL_RECORDS}, got {0:?}")]
    TailLines(String),
    /// A bad `limitBytes`.
    #[error("limitBytes must be an integer from 1 to {MAX_LIMIT_BYTES} (1 MiB), got {0:?}")]
    LimitBytes(String),
    /// A bad `follow`.
    #[error("follow must be true or false, got {0:?}")]
    Follow(String),
    /// A bad `stream`.
    #[error("stream must be stdout or stderr, got {0:?}")]
    Stream(String),
    #[error(
        "{0} must be a record's cursor (<seconds>.<nine-digit nanoseconds>-<sequence>, e.g. 1764601040.123456789-0, or a live record's L<attempt>-<stdout lines>-<stderr lines>-<o|e>, e.g. L1-12-0-o), got {1:?}"
    )]
    /// A bad cursor parameter (its name, the value).
    Cursor(&'static str, String),
    /// `sinceCursor` and `beforeCursor` together.
    #[error("sinceCursor and beforeCursor cannot be combined")]
    BothCursors,
    /// `beforeCursor` with `follow`.
    #[error("beforeCursor cannot be combined with follow=true")]
    BeforeWithFollow,
    /// A bad `fromStart`.
    #[error("fromStart must be true or false, got {0:?}")]
    FromStart(String),
    #[error(
        "fromStart=true reads the first records of a plain answer: it cannot be combined with follow=true, sinceCursor, beforeCursor or search"
    )]
    /// `fromStart` with a parameter it does not go with.
    FromStartWith,
    #[error(
        "unknown parameter {0:?}; runs/log accepts tailLines, follow, limitBytes, stream, sinceCursor, beforeCursor, fromStart, search, regex, ignoreCase and context"
    )]
    /// A parameter the API does not take.
    Unknown(String),
    /// A bad search parameter.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// A query string that cannot be read.
    #[error(transparent)]
    Query(#[from] QueryError),
}

impl LogQuery {
    /// Parses a raw query string (`a=1&b=2`, percent-encoded).
    pub fn parse(raw: Option<&str>) -> Result<Self, ParamError> {
        let mut q = LogQuery::default();
        let mut search = SearchParams::default();
        query::parse(raw, |k, v| {
            if search.accept(&k, &v)? {
                return Ok(());
            }
            match k.as_str() {
                "tailLines" => {
                    q.tail =
                        query::bounded(&v, MAX_TAIL_RECORDS).ok_or(ParamError::TailLines(v))?;
                }
                "limitBytes" => {
                    q.limit_bytes =
                        query::bounded(&v, MAX_LIMIT_BYTES).ok_or(ParamError::LimitBytes(v))?;
                }
                "follow" => q.follow = query::boolean(&v).ok_or(ParamError::Follow(v))?,
                "fromStart" => {
                    q.from_start = query::boolean(&v).ok_or(ParamError::FromStart(v))?;
                }
                "stream" => {
                    q.stream = match v.as_str() {
                        "stdout" => StreamFilter::Stdout,
                        "stderr" => StreamFilter::Stderr,
                        "" | "all" => StreamFilter::Both,
                        _ => return Err(ParamError::Stream(v)),
                    }
                }
                "sinceCursor" if LiveCursor::is_live(&v) => {
                    q.since_live = Some(
                        LiveCursor::parse(&v).map_err(|_| ParamError::Cursor("sinceCursor", v))?,
                    );
                }
                "sinceCursor" => {
                    q.since_cursor =
                        Some(Cursor::parse(&v).map_err(|_| ParamError::Cursor("sinceCursor", v))?);
                }
                "beforeCursor" if LiveCursor::is_live(&v) => {
                    q.before_live = Some(
                        LiveCursor::parse(&v).map_err(|_| ParamError::Cursor("beforeCursor", v))?,
                    );
                }
                "beforeCursor" => {
                    q.before_cursor =
                        Some(Cursor::parse(&v).map_err(|_| ParamError::Cursor("beforeCursor", v))?);
                }
                // Clients such as kubectl may send these; they change nothing here.
                "pretty" | "timeout" => {}
                _ => return Err(ParamError::Unknown(k)),
            }
            Ok(())
        })?;
        let since = q.since_cursor.is_some() || q.since_live.is_some();
        let before = q.before_cursor.is_some() || q.before_live.is_some();
        if since && before {
            return Err(ParamError::BothCursors);
        }
        if q.follow && before {
            return Err(ParamError::BeforeWithFollow);
        }
        q.search = search.finish()?;
        if q.from_start && (q.follow || since || before || q.search.is_some()) {
            return Err(ParamError::FromStartWith);
        }
        if q.search.is_some() {
            if before {
                return Err(SearchError::Combined("beforeCursor").into());
            }
            if q.follow {
                return Err(SearchError::Combined("follow=true").into());
            }
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_start_is_plain_only() {
        assert!(LogQuery::parse(Some("fromStart=true")).unwrap().from_start);
        assert!(!LogQuery::parse(Some("fromStart=false")).unwrap().from_start);
        assert_eq!(
            LogQuery::parse(Some("fromStart=yes")),
            Err(ParamError::FromStart("yes".into()))
        );
        for bad in [
            "fromStart=true&follow=true",
            "fromStart=true&sinceCursor=1764601040.123456789-0",
            "fromStart=true&beforeCursor=L1-1-0-o",
        ] {
            assert_eq!(
                LogQuery::parse(Some(bad)),
                Err(ParamError::FromStartWith),
                "{bad}"
            );
        }
    }

    #[test]
    fn defaults() {
        assert_eq!(LogQuery::parse(None).unwrap(), LogQuery::default());
        assert_eq!(LogQuery::parse(Some("")).unwrap().tail, DEFAULT_TAIL);
    }

    #[test]
    fn accepts_good_values() {
        let q = LogQuery::parse(Some(
            "tailLines=2&follow=true&limitBytes=1048576&stream=stderr",
        ))
        .unwrap();
        assert_eq!(q.tail, 2);
        assert!(q.follow);
        assert_eq!(q.limit_bytes, MAX_LIMIT_BYTES);
        assert_eq!(q.stream, StreamFilter::Stderr);
        assert_eq!(LogQuery::parse(Some("tailLines=500")).unwrap().tail, 500);
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            "tailLines=0",
            "tailLines=-1",
            "tailLines=501",
            "tailLines=abc",
            "tailLines=",
            "tailLines=1e3",
        ] {
            assert!(
                matches!(LogQuery::parse(Some(bad)), Err(ParamError::TailLines(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            LogQuery::parse(Some("limitBytes=1048577")),
            Err(ParamError::LimitBytes(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("limitBytes=0")),
            Err(ParamError::LimitBytes(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("follow=yes")),
            Err(ParamError::Follow(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("stream=both")),
            Err(ParamError::Stream(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("tailLines=1&tailLines=2")),
            Err(ParamError::Query(QueryError::Repeated(_)))
        ));
        assert!(matches!(
            LogQuery::parse(Some("container=x")),
            Err(ParamError::Unknown(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("tailLines=%zz")),
            Err(ParamError::Query(QueryError::Malformed(_)))
        ));
    }

    #[test]
    fn cursors() {
        let q = LogQuery::parse(Some("sinceCursor=1764601040.123456789-2&follow=true")).unwrap();
        assert_eq!(
            q.since_cursor.map(|c| c.to_string()).as_deref(),
            Some("1764601040.123456789-2")
        );
        let q = LogQuery::parse(Some("beforeCursor=1764601040.000000000-0")).unwrap();
        assert!(q.before_cursor.is_some());
        for (bad, word) in [
            ("sinceCursor=abc", "sinceCursor"),
            ("beforeCursor=1.1-1", "beforeCursor"),
            ("sinceCursor=", "sinceCursor"),
        ] {
            let e = LogQuery::parse(Some(bad)).unwrap_err();
            assert!(matches!(e, ParamError::Cursor(..)), "{bad}");
            assert!(e.to_string().starts_with(word), "{e}");
        }
        assert_eq!(
            LogQuery::parse(Some(
                "sinceCursor=1764601040.123456789-2&beforeCursor=1764601040.123456789-3"
            )),
            Err(ParamError::BothCursors)
        );
        assert_eq!(
            LogQuery::parse(Some("beforeCursor=1764601040.123456789-3&follow=true")),
            Err(ParamError::BeforeWithFollow)
        );
        // Live cursors.
        let q = LogQuery::parse(Some("sinceCursor=L2-10-0-o&follow=true")).unwrap();
        assert_eq!(
            q.since_live.map(|c| c.to_string()).as_deref(),
            Some("L2-10-0-o")
        );
        assert!(q.since_cursor.is_none());
        let q = LogQuery::parse(Some("beforeCursor=L1-3-1-e")).unwrap();
        assert!(q.before_live.is_some());
        assert!(matches!(
            LogQuery::parse(Some("sinceCursor=L1-0-0-o")),
            Err(ParamError::Cursor("sinceCursor", _))
        ));
        assert_eq!(
            LogQuery::parse(Some("sinceCursor=L1-1-0-o&beforeCursor=L1-2-0-o")),
            Err(ParamError::BothCursors)
        );
        assert_eq!(
            LogQuery::parse(Some("beforeCursor=L1-1-0-o&follow=true")),
            Err(ParamError::BeforeWithFollow)
        );
    }

    #[test]
    fn search_parameters() {
        let q = LogQuery::parse(Some(
            "search=a%20b&ignoreCase=true&context=0&tailLines=3&sinceCursor=1764601040.123456789-2",
        ))
        .unwrap();
        let s = q.search.expect("a search");
        assert_eq!(
            (s.text.as_str(), s.ignore_case, s.context),
            ("a b", true, 0)
        );
        assert_eq!(q.tail, 3);
        // A live cursor continues a search of live output.
        assert!(LogQuery::parse(Some("search=x&sinceCursor=L1-2-0-o")).is_ok());
        for (bad, want) in [
            (
                "search=x&follow=true",
                "search cannot be combined with follow=true",
            ),
            (
                "search=x&beforeCursor=1764601040.123456789-2",
                "search cannot be combined with beforeCursor",
            ),
            ("search=x&beforeCursor=L1-1-0-o", "beforeCursor"),
            ("regex=true", "regex needs search"),
            ("search=%28&regex=true", "not a valid regular expression"),
            ("search=x&search=y", "more than once"),
            (
                "search=x&context=11",
                "context must be an integer from 0 to 10",
            ),
        ] {
            let e = LogQuery::parse(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn messages_say_what_is_wrong() {
        let e = LogQuery::parse(Some("tailLines=501"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tailLines") && e.contains("500") && e.contains("501"),
            "{e}"
        );
    }
}
