//! The tail window: the last records of a Run within a count and a byte bound.

use std::collections::VecDeque;

use super::filter::LogRecord;

/// Which bound cut a result short.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub enum Cut {
    /// More records matched than `tailLines` allows.
    TailLines,
    /// The records asked for exceed `limitBytes`.
    LimitBytes,
    /// The Pod log was too long to search to the Run's start.
    SearchWindow,
}

/// Keeps the last `max_records` records whose messages fit in `max_bytes`.
#[derive(Debug)]
pub struct TailWindow {
    records: VecDeque<LogRecord>,
    bytes: usize,
    max_records: usize,
    max_bytes: usize,
    seen: u64,
    cut: Option<Cut>,
    /// Whether a single record larger than the byte bound keeps its tail
    /// end (the newest record of a result) or is left out (older records
    /// added in front of newer ones).
    cut_single: bool,
}

impl TailWindow {
    /// Keeps at most the newest `max_records` records and `max_bytes` bytes.
    pub fn new(max_records: usize, max_bytes: usize) -> Self {
        Self {
            records: VecDeque::with_capacity(max_records.min(64)),
            bytes: 0,
            max_records,
            max_bytes,
            seen: 0,
            cut: None,
            cut_single: true,
        }
    }

    /// A window for records older than ones already kept: a record that
    /// does not fit whole is left out.
    pub fn whole_records_only(mut self) -> Self {
        self.cut_single = false;
        self
    }

    /// Bytes of the records kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Which bound dropped records so far.
    pub fn cut(&self) -> Option<Cut> {
        self.cut
    }

    /// Adds the newest record, dropping the oldest past either bound.
    pub fn push(&mut self, mut record: LogRecord) {
        self.seen += 1;
        if record.weight() > self.max_bytes && !self.cut_single {
            self.cut = Some(Cut::LimitBytes);
            return;
        }
        // A single record larger than the whole byte budget keeps its tail end.
        if record.weight() > self.max_bytes {
            let mut start = record.message.len() - self.max_bytes;
            while !record.message.is_char_boundary(start) {
                start += 1;
            }
            record.message.drain(..start);
            record.truncated = true;
            self.cut = Some(Cut::LimitBytes);
        }
        self.bytes += record.weight();
        self.records.push_back(record);
        while self.records.len() > self.max_records {
            self.evict();
            self.cut.get_or_insert(Cut::TailLines);
        }
        while self.bytes > self.max_bytes {
            self.evict();
            self.cut = Some(Cut::LimitBytes);
        }
    }

    fn evict(&mut self) {
        if let Some(old) = self.records.pop_front() {
            self.bytes -= old.weight();
        }
    }

    /// Records matched so far, including those dropped.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Records kept.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record is kept.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Is the count bound met?
    pub fn is_full(&self) -> bool {
        self.records.len() >= self.max_records || self.cut == Some(Cut::LimitBytes)
    }

    /// Records that the read was cut at `cut`.
    pub fn mark_cut(&mut self, cut: Cut) {
        self.cut.get_or_insert(cut);
    }

    /// The records kept, oldest first, and where the read was cut.
    pub fn into_parts(self) -> (Vec<LogRecord>, Option<Cut>) {
        (self.records.into(), self.cut)
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
            cursor: String::new(),
            line: None,
            truncated: false,
            source: None,
            written_at_end: false,
            is_match: false,
        }
    }

    #[test]
    fn keeps_last_n_in_order() {
        let mut w = TailWindow::new(2, 1000);
        for m in ["a", "b", "c"] {
            w.push(rec(m));
        }
        let (records, cut) = w.into_parts();
        assert_eq!(
            records
                .iter()
                .map(|r| r.message.as_str())
                .collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert_eq!(cut, Some(Cut::TailLines));
    }

    #[test]
    fn no_cut_when_everything_fits() {
        let mut w = TailWindow::new(5, 1000);
        w.push(rec("a"));
        w.push(rec("b"));
        assert_eq!(w.into_parts().1, None);
    }

    #[test]
    fn byte_bound_drops_oldest() {
        let mut w = TailWindow::new(10, 5);
        for m in ["aaa", "bb", "cc"] {
            w.push(rec(m));
        }
        let (records, cut) = w.into_parts();
        assert_eq!(
            records
                .iter()
                .map(|r| r.message.as_str())
                .collect::<Vec<_>>(),
            ["bb", "cc"]
        );
        assert_eq!(cut, Some(Cut::LimitBytes));
    }

    #[test]
    fn single_huge_record_is_cut_on_a_char_boundary() {
        let mut w = TailWindow::new(10, 4);
        w.push(rec("ééééé"));
        let (records, cut) = w.into_parts();
        assert!(records[0].message.len() <= 4);
        assert!(records[0].truncated);
        assert_eq!(cut, Some(Cut::LimitBytes));
    }
}
