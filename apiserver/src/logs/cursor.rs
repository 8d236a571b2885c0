//! Record addresses: a record's CRI timestamp and its index among the Pod
//! log's lines with exactly that timestamp.
//!
//! Written `<secs>.<nanos9>-<seq>` (e.g. `1764601040.123456789-0`): only
//! `[0-9.-]`, safe in a query value and a URL fragment. `seq` counts every
//! line of the Pod log with that timestamp, not only the Run's, so the same
//! record has the same cursor whichever window of the log was read: every
//! read starts at a whole second (`sinceTime`) or drops the lines of its
//! first timestamp, so it always sees each timestamp's lines from the first.

use std::fmt;

/// A kubelet timestamp as Unix seconds and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    /// Whole seconds since the Unix epoch.
    pub secs: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
}

impl Stamp {
    /// Parses a kubelet timestamp (RFC 3339, UTC `Z` in practice). The
    /// common `YYYY-MM-DDTHH:MM:SS[.fraction]Z` form is read without
    /// allocation; anything else goes through `jiff`.
    pub fn parse(ts: &str) -> Option<Stamp> {
        fast_utc(ts.as_bytes()).or_else(|| {
            let t: jiff::Timestamp = ts.parse().ok()?;
            Some(Stamp::of(t))
        })
    }

    /// The stamp of a `jiff` timestamp.
    pub fn of(t: jiff::Timestamp) -> Stamp {
        let (secs, nanos) = (t.as_second(), t.subsec_nanosecond());
        // Before 1970 jiff counts the second toward zero and the fraction
        // below it; a stamp's second is the one the instant falls in.
        match u32::try_from(nanos) {
            Ok(nanos) => Stamp { secs, nanos },
            Err(_) => Stamp {
                secs: secs - 1,
                nanos: (nanos + 1_000_000_000).unsigned_abs(),
            },
        }
    }

    /// The start of Unix second `secs`.
    pub fn whole_second(secs: i64) -> Stamp {
        Stamp { secs, nanos: 0 }
    }
}

fn digits(b: &[u8]) -> Option<i64> {
    let mut n = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(c - b'0');
    }
    Some(n)
}

/// Days in month `m` (1-12) of year `y`, proleptic Gregorian.
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn fast_utc(b: &[u8]) -> Option<Stamp> {
    if b.len() < 20 || b[b.len() - 1] != b'Z' {
        return None;
    }
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, s) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let frac = &b[19..b.len() - 1];
    let nanos = match frac {
        [] => 0,
        [b'.', rest @ ..] if !rest.is_empty() && rest.len() <= 9 => {
            let n = digits(rest)?;
            (n * 10i64.pow(9 - rest.len() as u32)) as u32
        }
        _ => return None,
    };
    // A leap second (`:60`) is the last second of its minute, as jiff reads it.
    let s = s.min(59);
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    Some(Stamp { secs, nanos })
}

/// The address of one line of a Pod log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor {
    /// The line's kubelet timestamp.
    pub stamp: Stamp,
    /// Which of the lines with that stamp (0 for the first).
    pub seq: u32,
}

/// A cursor that is not `<secs>.<nanos9>-<seq>`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected <seconds>.<nine-digit nanoseconds>-<sequence>, e.g. 1764601040.123456789-0")]
pub struct BadCursor;

impl Cursor {
    /// Longest text form accepted.
    pub const MAX_LEN: usize = 40;

    /// Reads a cursor as [`Cursor`]'s `Display` writes it.
    pub fn parse(s: &str) -> Result<Cursor, BadCursor> {
        if s.len() > Self::MAX_LEN {
            return Err(BadCursor);
        }
        let (stamp, seq) = s.split_once('-').ok_or(BadCursor)?;
        let (secs, nanos) = stamp.split_once('.').ok_or(BadCursor)?;
        let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(secs) || nanos.len() != 9 || !all_digits(nanos) || !all_digits(seq) {
            return Err(BadCursor);
        }
        if secs.len() > 12 || seq.len() > 9 {
            return Err(BadCursor);
        }
        Ok(Cursor {
            stamp: Stamp {
                secs: secs.parse().map_err(|_| BadCursor)?,
                nanos: nanos.parse().map_err(|_| BadCursor)?,
            },
            seq: seq.parse().map_err(|_| BadCursor)?,
        })
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}-{}",
            self.stamp.secs, self.stamp.nanos, self.seq
        )
    }
}

impl Cursor {
    /// The address of the first line a read from the whole second `secs` can meet.
    pub fn floor_of(secs: i64) -> Cursor {
        Cursor {
            stamp: Stamp::whole_second(secs),
            seq: 0,
        }
    }

    /// The address right after this one (the next line of the same
    /// timestamp, if there is one): a read bounded by it includes this line.
    pub fn successor(self) -> Cursor {
        Cursor {
            stamp: self.stamp,
            seq: self.seq.saturating_add(1),
        }
    }
}

/// A cursor handed back by a client, checked as the lines of a read go by:
/// it must name a line of the Run where it says. A read that passes its
/// address without meeting that line would otherwise skip, without a word,
/// whatever was lost (a rotated log, a replaced Pod) or start at a place the
/// cursor never named.
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    at: Cursor,
    met: bool,
}

/// Where a line is, seen from an [`Anchor`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Before the anchor, or the anchor's own line.
    NotAfter,
    /// After the anchor, which was met.
    After,
}

/// The anchor's line was not met where it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missing(pub Cursor);

impl Anchor {
    /// An anchor at the line `at`, not met yet.
    pub fn new(at: Cursor) -> Self {
        Self { at, met: false }
    }

    /// Places the line at `cursor`; `runs` says whether it is a line of the Run.
    pub fn place(&mut self, cursor: Cursor, runs: bool) -> Result<Side, Missing> {
        if cursor < self.at {
            return Ok(Side::NotAfter);
        }
        if cursor == self.at {
            self.met |= runs;
            return Ok(Side::NotAfter);
        }
        if self.met {
            Ok(Side::After)
        } else {
            Err(Missing(self.at))
        }
    }

    /// At the end of the reads: was the anchor's line met?
    pub fn finish(&self) -> Result<(), Missing> {
        if self.met {
            Ok(())
        } else {
            Err(Missing(self.at))
        }
    }
}

/// Gives each line of a stream its cursor: the sequence restarts at each
/// new timestamp. Lines without a timestamp have none.
#[derive(Debug, Default)]
pub struct Sequencer {
    last: Vec<u8>,
    stamp: Option<Stamp>,
    seq: u32,
}

impl Sequencer {
    /// The cursor of the next line, whose kubelet timestamp is `ts`.
    pub fn next(&mut self, ts: Option<&str>) -> Option<Cursor> {
        let ts = ts?;
        if self.stamp.is_some() && self.last == ts.as_bytes() {
            self.seq += 1;
        } else {
            let stamp = Stamp::parse(ts)?;
            self.last.clear();
            self.last.extend_from_slice(ts.as_bytes());
            self.stamp = Some(stamp);
            self.seq = 0;
        }
        Some(Cursor {
            stamp: self.stamp?,
            seq: self.seq,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `log_cursor` fuzz target: before 1970, jiff counts the
    /// second toward zero with a negative fraction, and the stamp of a
    /// timestamp read by jiff (any form but plain UTC) differed from the same
    /// instant read by hand; a leap second read by hand was the next minute's
    /// first, by jiff its own minute's last; a day its month does not have
    /// (November 31) was read by hand as the next month's first.
    #[test]
    fn a_stamp_before_1970_or_in_a_leap_second_is_the_same_however_it_is_read() {
        let by_hand = Stamp::parse("0225-12-01T10:17:20.12389Z").unwrap();
        let by_jiff = Stamp::of("0225-12-01T10:17:20.12389Z".parse().unwrap());
        assert_eq!(by_hand, by_jiff);
        assert_eq!(by_hand.nanos, 123_890_000);
        let offset = Stamp::parse("0225-12-01T11:17:20.12389+01:00").unwrap();
        assert_eq!(offset, by_hand);
        // A leap second reads as the last second of its minute, as jiff reads it.
        assert_eq!(
            Stamp::parse("0225-12-01T10:17:60.12389Z"),
            Stamp::parse("0225-12-01T10:17:59.12389+00:00")
        );
        assert_eq!(
            Stamp::parse("2026-06-30T23:59:60Z"),
            Some(Stamp::of("2026-06-30T23:59:60Z".parse().unwrap()))
        );
        // A day its month does not have is no date, as for jiff.
        for bad in [
            "2012-11-31T10:17:20Z",
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
        ] {
            assert_eq!(Stamp::parse(bad), None, "{bad}");
            assert!(bad.parse::<jiff::Timestamp>().is_err(), "{bad}");
        }
        for good in [
            "2024-02-29T00:00:00Z",
            "2000-02-29T00:00:00Z",
            "2012-12-31T10:17:20Z",
        ] {
            assert_eq!(
                Stamp::parse(good),
                Some(Stamp::of(good.parse().unwrap())),
                "{good}"
            );
        }
        assert!(Stamp::parse("1969-12-31T23:59:59.5Z").unwrap() < Stamp::whole_second(0));
        assert_eq!(
            Stamp::parse("1969-12-31T23:59:59.5Z"),
            Some(Stamp {
                secs: -1,
                nanos: 500_000_000
            })
        );
    }

    #[test]
    fn parses_kubelet_timestamps_like_jiff() {
        for ts in [
            "2026-12-01T15:00:00Z",
            "2026-12-01T15:00:00.1Z",
            "2026-12-01T15:00:00.123456789Z",
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59.000000001Z",
            "2100-03-01T00:00:00.5Z",
        ] {
            let t: jiff::Timestamp = ts.parse().unwrap();
            assert_eq!(Stamp::parse(ts), Some(Stamp::of(t)), "{ts}");
            assert_eq!(fast_utc(ts.as_bytes()), Some(Stamp::of(t)), "{ts}");
        }
        let t: jiff::Timestamp = "2026-12-01T17:00:00.25+02:00".parse().unwrap();
        assert_eq!(
            Stamp::parse("2026-12-01T17:00:00.25+02:00"),
            Some(Stamp::of(t))
        );
        assert_eq!(Stamp::parse("yesterday"), None);
    }

    #[test]
    fn an_anchor_is_met_only_on_a_line_of_the_run_at_its_address() {
        let at = |secs, seq| Cursor {
            stamp: Stamp::whole_second(secs),
            seq,
        };
        let mut a = Anchor::new(at(10, 1));
        assert_eq!(a.place(at(9, 0), true), Ok(Side::NotAfter));
        assert_eq!(a.place(at(10, 0), true), Ok(Side::NotAfter));
        assert_eq!(a.place(at(10, 1), true), Ok(Side::NotAfter));
        assert_eq!(a.place(at(10, 2), false), Ok(Side::After));
        assert_eq!(a.finish(), Ok(()));
        // Rotated away: the first line read is past it.
        let mut gone = Anchor::new(at(10, 1));
        assert_eq!(gone.place(at(11, 0), true), Err(Missing(at(10, 1))));
        // Another line at its address (not the Run's) is no match either.
        let mut other = Anchor::new(at(10, 1));
        assert_eq!(other.place(at(10, 1), false), Ok(Side::NotAfter));
        assert_eq!(other.place(at(10, 2), true), Err(Missing(at(10, 1))));
        // A log that ends before it.
        let mut short = Anchor::new(at(10, 1));
        assert_eq!(short.place(at(10, 0), true), Ok(Side::NotAfter));
        assert_eq!(short.finish(), Err(Missing(at(10, 1))));
        assert_eq!(at(10, 1).successor(), at(10, 2));
    }

    #[test]
    fn cursor_round_trips_and_orders() {
        let c = Cursor::parse("1764601040.123456789-0").unwrap();
        assert_eq!(c.to_string(), "1764601040.123456789-0");
        assert!(c < Cursor::parse("1764601040.123456789-1").unwrap());
        assert!(c < Cursor::parse("1764601040.123456790-0").unwrap());
        assert!(c > Cursor::parse("1764601039.999999999-7").unwrap());
        for bad in [
            "",
            "1",
            "1.1-0",
            "1764601040.123456789",
            "1764601040.123456789-",
            "-1.123456789-0",
            "1764601040.12345678a-0",
            "1764601040.123456789-0-1",
            "1764601040.123456789-+1",
            "99999999999999.123456789-0",
        ] {
            assert_eq!(Cursor::parse(bad), Err(BadCursor), "{bad}");
        }
    }

    #[test]
    fn sequence_counts_equal_timestamps() {
        let mut s = Sequencer::default();
        let a = "2026-12-01T15:00:00.5Z";
        let b = "2026-12-01T15:00:01Z";
        let seqs: Vec<_> = [Some(a), Some(a), Some(b), None, Some(b), Some(a)]
            .into_iter()
            .map(|t| s.next(t).map(|c| c.seq))
            .collect();
        assert_eq!(seqs, [Some(0), Some(1), Some(0), None, Some(1), Some(0)]);
    }
}
