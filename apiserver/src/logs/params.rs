//! Query parameters of `runs/log`, parsed strictly: every bad value is a
//! 400 that says what is wrong.

use super::filter::StreamFilter;
use super::{MAX_LIMIT_BYTES, MAX_TAIL_RECORDS};

/// Records returned when `tailLines` is not given.
pub const DEFAULT_TAIL: usize = 100;

/// What a caller asked of a Run's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogQuery {
    pub tail: usize,
    pub follow: bool,
    pub limit_bytes: usize,
    pub stream: StreamFilter,
}

impl Default for LogQuery {
    fn default() -> Self {
        Self {
            tail: DEFAULT_TAIL,
            follow: false,
            limit_bytes: MAX_LIMIT_BYTES,
            stream: StreamFilter::Both,
        }
    }
}

/// A query parameter that could not be accepted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("tailLines must be an integer from 1 to {MAX_TAIL_RECORDS}, got {0:?}")]
    TailLines(String),
    #[error("limitBytes must be an integer from 1 to {MAX_LIMIT_BYTES} (1 MiB), got {0:?}")]
    LimitBytes(String),
    #[error("follow must be true or false, got {0:?}")]
    Follow(String),
    #[error("stream must be stdout or stderr, got {0:?}")]
    Stream(String),
    #[error("parameter {0:?} is given more than once")]
    Repeated(String),
    #[error("unknown parameter {0:?}; runs/log accepts tailLines, follow, limitBytes and stream")]
    Unknown(String),
    #[error("the query string is not valid: {0}")]
    Malformed(String),
}

impl LogQuery {
    /// Parses a raw query string (`a=1&b=2`, percent-encoded).
    pub fn parse(raw: Option<&str>) -> Result<Self, ParamError> {
        let mut q = LogQuery::default();
        let Some(raw) = raw else { return Ok(q) };
        let mut seen: Vec<String> = Vec::new();
        for pair in raw.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = decode(k)?;
            let v = decode(v)?;
            if seen.contains(&k) {
                return Err(ParamError::Repeated(k));
            }
            match k.as_str() {
                "tailLines" => {
                    q.tail = parse_bounded(&v, MAX_TAIL_RECORDS).ok_or(ParamError::TailLines(v))?;
                }
                "limitBytes" => {
                    q.limit_bytes =
                        parse_bounded(&v, MAX_LIMIT_BYTES).ok_or(ParamError::LimitBytes(v))?;
                }
                "follow" => {
                    q.follow = match v.as_str() {
                        "true" | "1" => true,
                        "false" | "0" => false,
                        _ => return Err(ParamError::Follow(v)),
                    }
                }
                "stream" => {
                    q.stream = match v.as_str() {
                        "stdout" => StreamFilter::Stdout,
                        "stderr" => StreamFilter::Stderr,
                        "" | "all" => StreamFilter::Both,
                        _ => return Err(ParamError::Stream(v)),
                    }
                }
                // Clients such as kubectl may send these; they change nothing here.
                "pretty" | "timeout" => {}
                _ => return Err(ParamError::Unknown(k)),
            }
            seen.push(k);
        }
        Ok(q)
    }
}

fn parse_bounded(v: &str, max: usize) -> Option<usize> {
    if v.is_empty() || v.len() > 12 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = v.parse().ok()?;
    (1..=max).contains(&n).then_some(n)
}

/// Decodes one percent-encoded query component (`+` is a space).
pub fn decode(s: &str) -> Result<String, ParamError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ParamError::Malformed(format!("bad percent-escape in {s:?}")))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| ParamError::Malformed(format!("{s:?} is not UTF-8")))
}

/// Is `s` a DNS-1123 label (a namespace name)?
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Is `s` a DNS-1123 subdomain (an object name)?
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Err(ParamError::Repeated(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("container=x")),
            Err(ParamError::Unknown(_))
        ));
        assert!(matches!(
            LogQuery::parse(Some("tailLines=%zz")),
            Err(ParamError::Malformed(_))
        ));
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

    #[test]
    fn names() {
        assert!(is_dns1123_label("team-a"));
        assert!(!is_dns1123_label("Team"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("run.v1-x"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain("a_b"));
        assert!(!is_dns1123_subdomain("../etc"));
    }
}
