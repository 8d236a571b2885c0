//! Line numbers: a record's place (1-based) among the Run's records of the
//! streams asked for, counted from the start of the Run's window, so the
//! same record has the same number in every answer.
//!
//! A read that starts at the Run's floor counts as it goes. Any other read
//! needs the count of the records before it: the numbers of records already
//! answered are remembered here (by Pod, Run, streams and cursor, for
//! [`TTL`]), so paging on from a record given out before costs nothing; on
//! a miss the count is one forward read from the floor, bounded by
//! `--log-numbering-max-bytes` (past that bound the answer carries no
//! numbers).

use std::time::{Duration, Instant};

use kruntimes_core::ttlmap::TtlMap;

use super::cursor::Cursor;
use super::filter::{LogRecord, RunFilter, StreamFilter};

/// How long a record's number is remembered.
pub const TTL: Duration = Duration::from_secs(600);
/// Numbers remembered at most (two per answer).
pub const CAPACITY: usize = 65_536;
/// Default bound of the log read to count the records before an answer.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    pod: String,
    run: String,
    streams: StreamFilter,
    cursor: Cursor,
}

/// Numbers of records given out lately.
pub struct LineNumbers {
    map: TtlMap<Key, u64>,
}

impl Default for LineNumbers {
    fn default() -> Self {
        Self {
            map: TtlMap::new(CAPACITY),
        }
    }
}

impl LineNumbers {
    fn key(pod: &str, filter: &RunFilter, cursor: Cursor) -> Key {
        Key {
            pod: pod.to_owned(),
            run: filter.uid().to_owned(),
            streams: filter.streams(),
            cursor,
        }
    }

    /// The number of the record at `cursor`, when it was given out lately.
    pub fn get(&self, pod: &str, filter: &RunFilter, cursor: Cursor) -> Option<u64> {
        self.map.get(&Self::key(pod, filter, cursor))
    }

    /// Remembers the numbers of the first and last of `records`.
    pub fn remember(&self, pod: &str, filter: &RunFilter, records: &[LogRecord]) {
        let deadline = Instant::now() + TTL;
        for rec in [records.first(), records.last()].into_iter().flatten() {
            if let (Some(line), Ok(cursor)) = (rec.line, Cursor::parse(&rec.cursor)) {
                self.map
                    .insert(Self::key(pod, filter, cursor), line, deadline);
            }
        }
    }
}

/// Numbers `records`, the last of which is the `total`-th record (all
/// records before the end of the read, when known).
pub fn number_ending_at(records: &mut [LogRecord], total: Option<u64>) {
    let len = records.len() as u64;
    for (i, rec) in records.iter_mut().enumerate() {
        rec.line = total
            .filter(|&t| t >= len)
            .map(|t| t - (len - 1 - i as u64));
    }
}

/// Numbers `records`, which follow the `before`-th record one after another.
pub fn number_after(records: &mut [LogRecord], before: Option<u64>) {
    for (i, rec) in records.iter_mut().enumerate() {
        rec.line = before.map(|b| b + 1 + i as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(n: usize) -> Vec<LogRecord> {
        (0..n)
            .map(|i| LogRecord {
                stream: "stdout".into(),
                message: format!("m{i}"),
                pod: "p".into(),
                invocation_id: None,
                time: None,
                cursor: format!("10.000000000-{i}"),
                line: None,
                is_match: false,
                truncated: false,
                source: None,
                written_at_end: false,
            })
            .collect()
    }

    #[test]
    fn numbers_count_from_either_end_and_are_remembered() {
        let mut r = recs(3);
        number_ending_at(&mut r, Some(10));
        assert_eq!(
            r.iter().map(|r| r.line).collect::<Vec<_>>(),
            [Some(8), Some(9), Some(10)]
        );
        number_ending_at(&mut r, None);
        assert!(r.iter().all(|r| r.line.is_none()));
        // A count smaller than the records is no count.
        number_ending_at(&mut r, Some(2));
        assert!(r.iter().all(|r| r.line.is_none()));
        number_after(&mut r, Some(0));
        assert_eq!(
            r.iter().map(|r| r.line).collect::<Vec<_>>(),
            [Some(1), Some(2), Some(3)]
        );
        let numbers = LineNumbers::default();
        let f = RunFilter::new("uid-1", StreamFilter::Both, "p");
        numbers.remember("p", &f, &r);
        let at = |s: &str| Cursor::parse(s).unwrap();
        assert_eq!(numbers.get("p", &f, at("10.000000000-0")), Some(1));
        assert_eq!(numbers.get("p", &f, at("10.000000000-2")), Some(3));
        assert_eq!(numbers.get("p", &f, at("10.000000000-1")), None);
        let stdout = RunFilter::new("uid-1", StreamFilter::Stdout, "p");
        assert_eq!(numbers.get("p", &stdout, at("10.000000000-0")), None);
        assert_eq!(numbers.get("q", &f, at("10.000000000-0")), None);
    }
}
