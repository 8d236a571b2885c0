//! The Run-log API's query parser (`LogQuery::parse`): no panic on any
//! query string, and every query it accepts, written back as parameters,
//! parses to the same query.
#![no_main]

use kruntimes_apiserver::logs::filter::StreamFilter;
use kruntimes_apiserver::logs::params::LogQuery;
use libfuzzer_sys::fuzz_target;

fn to_query(q: &LogQuery) -> String {
    let stream = match q.stream {
        StreamFilter::Stdout => "stdout",
        StreamFilter::Stderr => "stderr",
        StreamFilter::Both => "all",
    };
    let mut s = format!(
        "tailLines={}&follow={}&limitBytes={}&stream={stream}&fromStart={}",
        q.tail, q.follow, q.limit_bytes, q.from_start
    );
    if let Some(c) = q.since_cursor {
        s.push_str(&format!("&sinceCursor={c}"));
    }
    if let Some(c) = q.before_cursor {
        s.push_str(&format!("&beforeCursor={c}"));
    }
    if let Some(c) = &q.since_live {
        s.push_str(&format!("&sinceCursor={c}"));
    }
    if let Some(c) = &q.before_live {
        s.push_str(&format!("&beforeCursor={c}"));
    }
    if let Some(search) = &q.search {
        s.push_str(&search.to_query());
    }
    s
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(q) = LogQuery::parse(Some(raw)) else {
        return;
    };
    let written = to_query(&q);
    match LogQuery::parse(Some(&written)) {
        Ok(again) => assert_eq!(q, again, "{raw:?} written back as {written:?}"),
        Err(e) => panic!("{raw:?} written back as {written:?} is refused: {e}"),
    }
});
