//! `runs/log?search=…`: the records of a Run's whole window whose message
//! holds a substring or matches a regular expression, with a few records of
//! context, paged like a tail.
//!
//! One forward read from the Run's floor (the previous `runtimed`
//! container's log first, when there was a restart) to its end: each line
//! goes through the same line reader and Run filter as a tail, so nothing
//! of the window is held but a ring of `context` records before the current
//! one and the answer being built. The read counts every record of the Run
//! as it goes (its `line`), and every match of the whole window (`total`,
//! up to [`MAX_COUNTED_MATCHES`]).
//!
//! Regular expressions are Rust `regex` patterns: a finite automaton with
//! no backtracking, so a match costs time linear in the message, and a
//! pattern is refused when its compiled program or its lazy DFA would
//! exceed [`REGEX_SIZE_LIMIT`] / [`REGEX_DFA_SIZE_LIMIT`].

use std::collections::VecDeque;
use std::sync::Arc;

use memchr::memmem;
use serde::Serialize;

use super::cursor::Cursor;
use super::filter::{LogRecord, RunFilter, StreamFilter};
use super::live::{Handover, LiveCursor, LiveLines, LivePos, Take};
use super::reader::{Container, LogSource};
use super::tail::Cut;
use kruntimes_core::query;
use kruntimes_core::runtimed::StatusResponse;
use kruntimes_core::status::ApiError;

/// Longest `search` value, in bytes.
pub const MAX_SEARCH_BYTES: usize = 256;
/// Most records of context before and after each match.
pub const MAX_CONTEXT: usize = 10;
/// Records of context when `context` is not given.
pub const DEFAULT_CONTEXT: usize = 2;
/// Bound of a compiled pattern's program (`RegexBuilder::size_limit`).
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Bound of a pattern's lazy DFA cache (`RegexBuilder::dfa_size_limit`).
pub const REGEX_DFA_SIZE_LIMIT: usize = 1 << 20;
/// Matches of the whole window counted at most; past it the read stops as
/// soon as the page is complete and `totalCapped` is set.
pub const MAX_COUNTED_MATCHES: u64 = 10_000;

/// A search parameter that could not be accepted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// A search text longer than the bound.
    #[error("search must be 1 to {MAX_SEARCH_BYTES} bytes, got {0} bytes")]
    Length(usize),
    /// A bad `regex`.
    #[error("regex must be true or false, got {0:?}")]
    Regex(String),
    /// A bad `ignoreCase`.
    #[error("ignoreCase must be true or false, got {0:?}")]
    IgnoreCase(String),
    /// A bad `context`.
    #[error("context must be an integer from 0 to {MAX_CONTEXT}, got {0:?}")]
    Context(String),
    /// A search option without `search`.
    #[error("{0} needs search (the text or pattern to look for)")]
    WithoutSearch(&'static str),
    /// `search` with a parameter it does not go with.
    #[error("search cannot be combined with {0}: a search reads forward; page with sinceCursor")]
    Combined(&'static str),
    #[error(
        "search is not a valid regular expression (Rust regex syntax, no look-around or backreferences): {0}"
    )]
    /// A pattern the regex engine refuses.
    BadPattern(String),
    #[error(
        "search is too large a regular expression: it exceeds the {} KiB bound of a compiled pattern; use a simpler pattern",
        REGEX_SIZE_LIMIT >> 10
    )]
    /// A pattern past the regex engine's size bounds.
    TooLarge,
}

/// What a caller looks for.
#[derive(Clone, Debug)]
pub struct Search {
    /// What is searched for.
    pub text: String,
    /// `text` is a regular expression.
    pub regex: bool,
    /// Case is ignored.
    pub ignore_case: bool,
    /// Records of context on each side of a match.
    pub context: usize,
    matcher: Arc<Matcher>,
}

impl PartialEq for Search {
    fn eq(&self, other: &Self) -> bool {
        (&self.text, self.regex, self.ignore_case, self.context)
            == (&other.text, other.regex, other.ignore_case, other.context)
    }
}

impl Eq for Search {}

impl Search {
    /// A search for `text` (a pattern when `regex`), compiled and bounded.
    pub fn new(
        text: &str,
        regex: bool,
        ignore_case: bool,
        context: usize,
    ) -> Result<Self, SearchError> {
        if text.is_empty() || text.len() > MAX_SEARCH_BYTES {
            return Err(SearchError::Length(text.len()));
        }
        if context > MAX_CONTEXT {
            return Err(SearchError::Context(context.to_string()));
        }
        let matcher = if !regex && !ignore_case {
            Matcher::Substring(memmem::Finder::new(text.as_bytes()).into_owned())
        } else {
            // A case-insensitive substring is the escaped text as a pattern:
            // Unicode simple case folding, and regex's literal prefilters.
            let pattern = if regex {
                text.to_owned()
            } else {
                regex::escape(text)
            };
            let re = regex::RegexBuilder::new(&pattern)
                .case_insensitive(ignore_case)
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
                .build()
                .map_err(|e| match e {
                    regex::Error::CompiledTooBig(_) => SearchError::TooLarge,
                    other => SearchError::BadPattern(one_line(&other.to_string())),
                })?;
            Matcher::Regex(re)
        };
        Ok(Self {
            text: text.to_owned(),
            regex,
            ignore_case,
            context,
            matcher: Arc::new(matcher),
        })
    }

    /// The search as `runs/log` query parameters, each after a `&`.
    pub fn to_query(&self) -> String {
        const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'.')
            .remove(b'_')
            .remove(b'~');
        let mut q = format!(
            "&search={}",
            percent_encoding::utf8_percent_encode(&self.text, UNRESERVED)
        );
        if self.regex {
            q.push_str("&regex=true");
        }
        if self.ignore_case {
            q.push_str("&ignoreCase=true");
        }
        q.push_str(&format!("&context={}", self.context));
        q
    }

    /// Whether a record's message matches.
    pub fn is_match(&self, message: &str) -> bool {
        match &*self.matcher {
            Matcher::Substring(f) => f.find(message.as_bytes()).is_some(),
            Matcher::Regex(re) => re.is_match(message),
        }
    }
}

/// regex's errors point at the pattern over several lines; a `Status`
/// message is one.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // One per request, behind an Arc.
enum Matcher {
    Substring(memmem::Finder<'static>),
    Regex(regex::Regex),
}

/// The search parameters of one query string, as they come.
#[derive(Debug, Default)]
pub struct SearchParams {
    search: Option<String>,
    regex: Option<bool>,
    ignore_case: Option<bool>,
    context: Option<usize>,
}

impl SearchParams {
    /// Takes `key=value` when it is a search parameter (`Ok(true)`).
    pub fn accept(&mut self, key: &str, value: &str) -> Result<bool, SearchError> {
        match key {
            "search" => self.search = Some(value.to_owned()),
            "regex" => {
                self.regex =
                    Some(query::boolean(value).ok_or(SearchError::Regex(value.to_owned()))?);
            }
            "ignoreCase" => {
                self.ignore_case =
                    Some(query::boolean(value).ok_or(SearchError::IgnoreCase(value.to_owned()))?);
            }
            "context" => {
                let n = (value == "0")
                    .then_some(0)
                    .or_else(|| query::bounded(value, MAX_CONTEXT))
                    .ok_or(SearchError::Context(value.to_owned()))?;
                self.context = Some(n);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The search asked for, if any; the others need `search`.
    pub fn finish(self) -> Result<Option<Search>, SearchError> {
        let Some(text) = self.search else {
            return match (self.regex, self.ignore_case, self.context) {
                (Some(_), _, _) => Err(SearchError::WithoutSearch("regex")),
                (_, Some(_), _) => Err(SearchError::WithoutSearch("ignoreCase")),
                (_, _, Some(_)) => Err(SearchError::WithoutSearch("context")),
                _ => Ok(None),
            };
        };
        Search::new(
            &text,
            self.regex.unwrap_or(false),
            self.ignore_case.unwrap_or(false),
            self.context.unwrap_or(DEFAULT_CONTEXT),
        )
        .map(Some)
    }
}

/// What a search answer says of the matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SearchSummary {
    /// Matching records in this answer.
    pub matches: u32,
    /// Matching records in the Run's whole window (also before `sinceCursor`).
    #[ts(type = "number")]
    pub total: u64,
    /// Counting stopped at the server's bound: `total` is a lower bound.
    pub total_capped: bool,
}

/// Builds one page of a search: matches and their context in log order, no
/// record twice, within a count of matches and a byte bound.
#[derive(Debug)]
pub struct Collector {
    context: usize,
    max_matches: usize,
    max_bytes: usize,
    /// Records since the last one answered, at most `context`.
    ring: VecDeque<LogRecord>,
    records: Vec<LogRecord>,
    bytes: usize,
    matches: usize,
    /// Records of context still to add after the last match.
    after_left: usize,
    /// No more records are taken.
    closed: bool,
    cut: Option<Cut>,
    total: u64,
    capped: bool,
}

impl Collector {
    /// A collector of matches with `context` records around each, up to `max_matches` and `max_bytes`.
    pub fn new(context: usize, max_matches: usize, max_bytes: usize) -> Self {
        Self {
            context,
            max_matches,
            max_bytes,
            ring: VecDeque::with_capacity(context),
            records: Vec::new(),
            bytes: 0,
            matches: 0,
            after_left: 0,
            closed: false,
            cut: None,
            total: 0,
            capped: false,
        }
    }

    /// Counts one match of the window (answered or not).
    pub fn count(&mut self) {
        if self.total < MAX_COUNTED_MATCHES {
            self.total += 1;
        } else {
            self.capped = true;
        }
    }

    /// Takes the next record of the page's stretch of the log.
    pub fn push(&mut self, mut rec: LogRecord, is_match: bool) {
        if self.closed {
            if is_match {
                self.cut.get_or_insert(Cut::TailLines);
            }
            return;
        }
        if !is_match {
            if self.after_left > 0 {
                if self.bytes + rec.weight() > self.max_bytes {
                    // Context that does not fit is left out.
                    self.after_left = 0;
                } else {
                    self.after_left -= 1;
                    self.bytes += rec.weight();
                    self.records.push(rec);
                }
                if self.after_left == 0 && self.matches == self.max_matches {
                    self.closed = true;
                }
                return;
            }
            if self.matches == self.max_matches {
                self.closed = true;
                return;
            }
            if self.context > 0 {
                if self.ring.len() == self.context {
                    self.ring.pop_front();
                }
                self.ring.push_back(rec);
            }
            return;
        }
        if self.matches == self.max_matches {
            self.closed = true;
            self.cut = Some(Cut::TailLines);
            return;
        }
        let ring_bytes: usize = self.ring.iter().map(LogRecord::weight).sum();
        if self.bytes + ring_bytes + rec.weight() > self.max_bytes {
            if self.matches > 0 {
                // The next page starts after the last match answered.
                self.closed = true;
                self.cut = Some(Cut::LimitBytes);
                return;
            }
            // The first match is always answered: context gives way first,
            // then a message larger than the whole budget keeps its head.
            while let Some(old) = self.ring.pop_front() {
                if self.bytes
                    + self.ring.iter().map(LogRecord::weight).sum::<usize>()
                    + rec.weight()
                    <= self.max_bytes
                {
                    break;
                }
                drop(old);
            }
            if rec.weight() > self.max_bytes {
                let mut end = self.max_bytes;
                while !rec.message.is_char_boundary(end) {
                    end -= 1;
                }
                rec.message.truncate(end);
                rec.truncated = true;
                self.ring.clear();
            }
            self.cut = Some(Cut::LimitBytes);
            self.closed = true;
        }
        for old in self.ring.drain(..) {
            self.bytes += old.weight();
            self.records.push(old);
        }
        rec.is_match = true;
        self.bytes += rec.weight();
        self.records.push(rec);
        self.matches += 1;
        self.after_left = if self.closed { 0 } else { self.context };
    }

    /// Whether the page is complete, it is known whether more matches
    /// follow, and counting reached its bound: nothing more to read.
    pub fn done(&self) -> bool {
        self.closed && self.cut.is_some() && self.capped
    }

    /// The records answered, which bound cut the page, and the counts.
    pub fn finish(self) -> (Vec<LogRecord>, Option<Cut>, SearchSummary) {
        let summary = SearchSummary {
            matches: self.matches as u32,
            total: self.total,
            total_capped: self.capped,
        };
        (self.records, self.cut, summary)
    }
}

/// The outcome of a search.
#[derive(Debug, Default)]
pub struct Found {
    /// Records of the Run met in its written log.
    pub seen: u64,
    /// Records were read from the container before its last restart.
    pub from_previous: bool,
    /// The container before the last restart was asked for and its log is gone.
    pub previous_gone: bool,
}

/// Where a page starts.
#[derive(Clone, Copy, Debug)]
pub enum PageStart {
    /// The start of the Run's window.
    Start,
    /// After a written record.
    Cursor(Cursor),
    /// After a live record: written records runtimed has written since
    /// that were delivered live are left out (as a tail's `Handover`).
    Live(LiveCursor),
}

/// Searches the Run's written records (both `runtimed` containers' logs
/// when there was a restart). `uid` is the Run's; `streams` the ones asked
/// for (line numbers count those, as a tail's do).
pub async fn search_written(
    source: &LogSource,
    uid: &str,
    streams: StreamFilter,
    search: &Search,
    from: PageStart,
    max_matches: usize,
    max_bytes: usize,
) -> Result<(Found, Collector), ApiError> {
    let filter = RunFilter::new(uid, StreamFilter::Both, &source.pod);
    let mut collector = Collector::new(search.context, max_matches, max_bytes);
    let mut found = Found::default();
    let (after, mut skip) = match from {
        PageStart::Start => (None, None),
        PageStart::Cursor(c) => (Some(c), None),
        PageStart::Live(c) => (None, Some(Handover::new(c.pos))),
    };
    let mut line = 0u64;
    let mut earliest = None;
    'containers: for &container in source.containers(source.floor) {
        let Some(mut scan) = source.open(container, source.floor, None).await? else {
            found.previous_gone = true;
            continue;
        };
        while let Some((cursor, rec)) = scan.next(&filter).await? {
            let Some(mut rec) = rec else { continue };
            earliest = earliest.or(Some(cursor));
            found.seen += 1;
            let delivered = skip.as_mut().is_some_and(|h| h.delivered(&rec.stream));
            if !streams.admits(&rec.stream) {
                continue;
            }
            line += 1;
            // A line past the line bound lost its message: nothing to match.
            let hit = !rec.truncated && search.is_match(&rec.message);
            if hit {
                collector.count();
            }
            if delivered || after.is_some_and(|a| cursor <= a) {
                continue;
            }
            rec.line = Some(line);
            rec.written_at_end = source.written_at_end(earliest);
            if container == Container::Previous {
                found.from_previous = true;
            }
            collector.push(rec, hit);
            if collector.done() {
                break 'containers;
            }
        }
    }
    Ok((found, collector))
}

/// Searches a running Run's live output (`resp`, its attempt `attempt`),
/// stdout lines first then stderr, as a tail answers them; with `after`,
/// the page starts after that live record. Live records carry no `line`.
pub fn search_live(
    collector: &mut Collector,
    resp: &StatusResponse,
    attempt: u32,
    pod: &str,
    streams: StreamFilter,
    search: &Search,
    after: Option<LiveCursor>,
) {
    let start = LivePos {
        attempt,
        stdout: 0,
        stderr: 0,
    };
    let mut lines = LiveLines::new(start, pod, streams);
    let (records, _) = lines.advance(resp, None, Take::First(usize::MAX, usize::MAX));
    for rec in records {
        let hit = !rec.truncated && search.is_match(&rec.message);
        if hit {
            collector.count();
        }
        let past = match (after, LiveCursor::parse(&rec.cursor)) {
            (Some(a), Ok(c)) if a.pos.attempt == c.pos.attempt => {
                c.pos.count(c.stream) > a.pos.count(c.stream)
            }
            _ => true,
        };
        if past {
            collector.push(rec, hit);
        }
        if collector.done() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(msg: &str) -> LogRecord {
        LogRecord {
            stream: "stdout".into(),
            message: msg.into(),
            pod: "p".into(),
            invocation_id: None,
            time: None,
            cursor: msg.into(),
            truncated: false,
            source: None,
            written_at_end: false,
            line: None,
            is_match: false,
        }
    }

    fn parse(raw: &str) -> Result<Option<Search>, SearchError> {
        let mut p = SearchParams::default();
        for pair in raw.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = query::decode(v).unwrap();
            assert!(p.accept(k, &v)?, "{k} is a search parameter");
        }
        p.finish()
    }

    /// Runs `messages` through a collector; a message holding `!` matches.
    fn page(messages: &[&str], context: usize, max: usize, bytes: usize) -> Collector {
        let mut c = Collector::new(context, max, bytes);
        for m in messages {
            let hit = m.contains('!');
            if hit {
                c.count();
            }
            c.push(rec(m), hit);
        }
        c
    }

    fn shown(records: &[LogRecord]) -> Vec<String> {
        records
            .iter()
            .map(|r| {
                if r.is_match {
                    format!("*{}", r.message)
                } else {
                    r.message.clone()
                }
            })
            .collect()
    }

    #[test]
    fn parses_good_values() {
        let s = parse("search=needle").unwrap().unwrap();
        assert_eq!(
            (s.text.as_str(), s.regex, s.ignore_case, s.context),
            ("needle", false, false, DEFAULT_CONTEXT)
        );
        let s = parse("search=a.c&regex=true&ignoreCase=1&context=0")
            .unwrap()
            .unwrap();
        assert!(s.regex && s.ignore_case && s.context == 0);
        assert_eq!(parse("search=x&context=10").unwrap().unwrap().context, 10);
        assert!(parse("search=x&regex=false").unwrap().is_some());
        let max = "x".repeat(MAX_SEARCH_BYTES);
        assert!(parse(&format!("search={max}")).unwrap().is_some());
        let mut none = SearchParams::default();
        assert!(!none.accept("tailLines", "5").unwrap());
        assert!(none.finish().unwrap().is_none());
    }

    #[test]
    fn every_bad_value_says_what_is_wrong() {
        let long = "é".repeat(129);
        let cases: Vec<(String, &str)> = vec![
            ("search=".into(), "1 to 256 bytes, got 0"),
            (format!("search={long}"), "got 258 bytes"),
            ("search=x&regex=yes".into(), "regex must be true or false"),
            ("search=x&ignoreCase=".into(), "ignoreCase must be"),
            ("search=x&context=11".into(), "0 to 10, got \"11\""),
            ("search=x&context=-1".into(), "context must be"),
            ("search=x&context=01x".into(), "context must be"),
            ("search=x&context=".into(), "context must be"),
            ("regex=true".into(), "regex needs search"),
            ("ignoreCase=true".into(), "ignoreCase needs search"),
            ("context=3".into(), "context needs search"),
            (
                "search=a(b&regex=true".into(),
                "not a valid regular expression",
            ),
            (
                "search=(?=a)&regex=true".into(),
                "not a valid regular expression",
            ),
            (
                "search=\\1&regex=true".into(),
                "not a valid regular expression",
            ),
            // Each repetition multiplies the program: far past 1 MiB.
            ("search=\\w{100}{100}&regex=true".into(), "too large"),
        ];
        for (raw, want) in cases {
            let e = parse(&raw).unwrap_err().to_string();
            assert!(e.contains(want), "{raw}: {e}");
            assert!(!e.contains('\n'), "{raw}: one line: {e}");
        }
    }

    #[test]
    fn a_search_passes_on_as_the_same_parameters() {
        for raw in [
            "search=a%20b%26c%3Dd%25%2B%23",
            "search=%5E%28x%7Cy%29%24&regex=true&ignoreCase=true&context=0",
            "search=%C3%A9t%C3%A9&context=10",
        ] {
            let s = parse(raw).unwrap().unwrap();
            let again = parse(s.to_query().trim_start_matches('&'))
                .unwrap()
                .unwrap();
            assert_eq!(s, again, "{raw} -> {}", s.to_query());
        }
    }

    #[test]
    fn matching_substring_regex_and_case() {
        let s = |raw: &str| parse(raw).unwrap().unwrap();
        assert!(s("search=dle").is_match("needle"));
        assert!(!s("search=DLE").is_match("needle"));
        assert!(s("search=DLE&ignoreCase=true").is_match("needle"));
        // The text is taken literally unless regex=true.
        assert!(!s("search=a.c").is_match("abc"));
        assert!(s("search=a.c").is_match("xa.cx"));
        assert!(s("search=a.c&regex=true").is_match("abc"));
        assert!(s("search=^err&regex=true&ignoreCase=true").is_match("ERROR x"));
        assert!(!s("search=^err&regex=true").is_match("an err"));
        assert!(s("search=ÉTÉ&ignoreCase=true").is_match("un été"));
    }

    #[test]
    fn context_overlapping_is_merged_in_log_order() {
        let c = page(
            &["a", "b", "c", "!d", "e", "!f", "g", "h", "i", "j"],
            2,
            10,
            1000,
        );
        let (records, cut, sum) = c.finish();
        assert_eq!(shown(&records), ["b", "c", "*!d", "e", "*!f", "g", "h"]);
        assert_eq!(cut, None);
        assert_eq!(
            sum,
            SearchSummary {
                matches: 2,
                total: 2,
                total_capped: false
            }
        );
        // Context 0: matches only; adjacent matches stay one each.
        let (records, ..) = page(&["a", "!b", "!c", "d"], 0, 10, 1000).finish();
        assert_eq!(shown(&records), ["*!b", "*!c"]);
        // Separate groups; the ring never reaches back past an answered record.
        let (records, ..) = page(&["!a", "b", "c", "d", "e", "!f"], 1, 10, 1000).finish();
        assert_eq!(shown(&records), ["*!a", "b", "e", "*!f"]);
    }

    #[test]
    fn a_full_page_keeps_its_last_context_and_knows_more_follow() {
        let msgs = ["x", "!a", "y", "!b", "z", "w", "v", "!c", "u"];
        let (records, cut, sum) = page(&msgs, 2, 2, 1000).finish();
        assert_eq!(shown(&records), ["x", "*!a", "y", "*!b", "z", "w"]);
        assert_eq!(cut, Some(Cut::TailLines));
        assert_eq!((sum.matches, sum.total), (2, 3));
        // The next match inside the last one's context ends the page there.
        let (records, cut, _) = page(&["!a", "!b", "c"], 2, 1, 1000).finish();
        assert_eq!(shown(&records), ["*!a"]);
        assert_eq!(cut, Some(Cut::TailLines));
        // Exactly enough: no cut.
        let (records, cut, _) = page(&["!a", "b", "c", "d"], 2, 1, 1000).finish();
        assert_eq!(shown(&records), ["*!a", "b", "c"]);
        assert_eq!(cut, None);
    }

    #[test]
    fn bytes_bound_a_page_and_the_first_match_is_always_answered() {
        // 4 bytes: "ab" + "!cd" does not fit, the match alone does not either.
        let (records, cut, _) = page(&["ab", "!cdefg", "!h"], 1, 10, 4).finish();
        assert_eq!(shown(&records), ["*!cde"]);
        assert!(records[0].truncated);
        assert_eq!(cut, Some(Cut::LimitBytes));
        // A later match that does not fit ends the page before it.
        let (records, cut, sum) = page(&["!a", "b", "!cccc"], 1, 10, 4).finish();
        assert_eq!(shown(&records), ["*!a", "b"]);
        assert_eq!(cut, Some(Cut::LimitBytes));
        assert_eq!(sum.total, 2);
        // Context gives way to the first match.
        let (records, ..) = page(&["aa", "bb", "!c"], 2, 10, 4).finish();
        assert_eq!(shown(&records), ["bb", "*!c"]);
    }

    #[test]
    fn counting_stops_at_its_bound() {
        let mut c = Collector::new(0, 1, 1000);
        for i in 0..MAX_COUNTED_MATCHES + 5 {
            c.count();
            c.push(rec(&format!("!{i}")), true);
        }
        assert!(c.done());
        let (records, cut, sum) = c.finish();
        assert_eq!(records.len(), 1);
        assert_eq!(cut, Some(Cut::TailLines));
        assert_eq!(sum.total, MAX_COUNTED_MATCHES);
        assert!(sum.total_capped);
    }

    #[test]
    fn live_pages_continue_after_their_cursor() {
        let resp = StatusResponse {
            stdout: "a\n!b\nc\n!d\n".into(),
            stderr: "!e\n".into(),
            ..StatusResponse::default()
        };
        let s = parse("search=!&context=0").unwrap().unwrap();
        let mut c = Collector::new(0, 2, 1000);
        search_live(&mut c, &resp, 1, "p", StreamFilter::Both, &s, None);
        let (records, cut, sum) = c.finish();
        assert_eq!(shown(&records), ["*!b", "*!d"]);
        assert_eq!(cut, Some(Cut::TailLines));
        assert_eq!(sum.total, 3);
        let last = LiveCursor::parse(&records[1].cursor).unwrap();
        let mut c = Collector::new(0, 2, 1000);
        search_live(&mut c, &resp, 1, "p", StreamFilter::Both, &s, Some(last));
        let (records, cut, _) = c.finish();
        assert_eq!(shown(&records), ["*!e"]);
        assert_eq!(records[0].stream, "stderr");
        assert_eq!(cut, None);
    }
}
