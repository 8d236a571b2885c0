//! Run-log record addresses: `Cursor` and `LiveCursor` parse what they
//! write and write what they parse back the same, order with their
//! successors, and never panic; kubelet timestamps (`Stamp::parse`, whose
//! common form is read by hand) read as `jiff` reads them.
#![no_main]

use kruntimes_apiserver::logs::cursor::{Cursor, Stamp};
use kruntimes_apiserver::logs::live::LiveCursor;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = Cursor::parse(s) {
        let written = c.to_string();
        assert_eq!(
            Cursor::parse(&written),
            Ok(c),
            "{s:?} written as {written:?}"
        );
        let next = c.successor();
        assert!(next >= c && (next > c || c.seq == u32::MAX), "{s:?}");
    }
    if let Ok(c) = LiveCursor::parse(s) {
        let written = c.to_string();
        assert_eq!(
            LiveCursor::parse(&written),
            Ok(c),
            "{s:?} written as {written:?}"
        );
        assert!(LiveCursor::is_live(&written));
    }
    let ours = Stamp::parse(s);
    let theirs = s.parse::<jiff::Timestamp>().ok().map(Stamp::of);
    assert_eq!(ours, theirs, "the timestamp {s:?}");
});
