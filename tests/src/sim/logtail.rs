//! Finds where the last N wanted logical lines of a log file begin, reading the file backwards
//! in fixed-size blocks so that a short tail of a huge file costs a few blocks, not the file.
//!
//! Records (newline-terminated) are visited from the end; a record's first bytes say whether it
//! is a CRI record (and whether partial) or a plain line. Logical lines are counted with the same
//! rules as [`crate::sim::logdecode::Decoder`]: a partial CRI record joins the next CRI record,
//! and a plain line is skipped (neither counted nor ending a partial line).
//! Timestamps are taken as non-decreasing in file order (as the container runtime writes them):
//! the scan stops at the first logical line older than `since`.

use std::io;

use jiff::Timestamp;

use crate::sim::cri::{Header, MAX_HEADER, Stream, parse_header};
use crate::sim::logdecode::UNPARSABLE_TIME;
use crate::sim::logfilter::LogOptions;

/// Block size of the backward scan.
pub const BLOCK_SIZE: usize = 64 * 1024;

/// Positional reads, so the scan needs no seek state.
pub trait ReadAt {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (0 at the end).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// Fills `buf` from `offset`, short only at the end of the data; returns the count read.
fn read_full(src: &(impl ReadAt + ?Sized), buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match src.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(done)
}

/// Where the output should start so that it holds the last `lines` logical lines (of those
/// `opts` wants) of the first `len` bytes of `src`. With `lines = u64::MAX` this finds where
/// lines newer than `opts.since` start.
pub fn tail_start(
    src: &(impl ReadAt + ?Sized),
    len: u64,
    lines: u64,
    opts: &LogOptions,
) -> io::Result<u64> {
    tail_start_with_block(src, len, lines, opts, BLOCK_SIZE)
}

/// One record seen by the backward scan.
#[derive(Clone, Copy, Debug)]
struct Record {
    start: u64,
    timestamp: Timestamp,
    stream: Option<Stream>,
    partial: bool,
}

struct Scan<'a> {
    opts: &'a LogOptions,
    lines: u64,
    counted: u64,
    /// Start of the most recently evaluated logical line (the one after the current position).
    next_line_start: u64,
}

impl Scan<'_> {
    /// Evaluates the logical line that starts with `first`. Returns the answer when known.
    fn line(&mut self, first: &Record) -> Option<u64> {
        if self.opts.since.is_some_and(|since| first.timestamp < since) {
            return Some(self.next_line_start);
        }
        if self.opts.wants(first.timestamp, first.stream) {
            self.counted += 1;
            if self.counted >= self.lines {
                return Some(first.start);
            }
        }
        self.next_line_start = first.start;
        None
    }
}

/// [`tail_start`] with a chosen block size (small blocks exercise block boundaries in tests).
pub fn tail_start_with_block(
    src: &(impl ReadAt + ?Sized),
    len: u64,
    lines: u64,
    opts: &LogOptions,
    block_size: usize,
) -> io::Result<u64> {
    if lines == 0 || len == 0 {
        return Ok(len);
    }
    let block_size = block_size.max(1);
    let mut last = [0u8; 1];
    read_full(src, &mut last, len - 1)?;
    let ends_with_newline = last[0] == b'\n';

    let mut scan = Scan {
        opts,
        lines,
        counted: 0,
        next_line_start: len,
    };
    let mut block = vec![0u8; block_size];
    let mut head = [0u8; MAX_HEADER];
    // The record after the one being visited (higher offset), and where that one starts.
    let mut later: Option<Record> = None;
    let mut later_start = len;
    // Newlines at offsets [0, scan_end) remain to be scanned; one at len - 1 ends the last
    // record and starts none.
    let mut scan_end = len - 1;

    loop {
        let block_start = scan_end.saturating_sub(block_size as u64);
        let block_len = usize::try_from(scan_end - block_start).unwrap_or(block_size);
        let filled = read_full(src, &mut block[..block_len], block_start)?;
        let data = &block[..filled];

        // Record starts within this block, highest first, then (at the file start) offset 0.
        let newlines = memchr::memrchr_iter(b'\n', data).map(|i| block_start + i as u64 + 1);
        let starts: Box<dyn Iterator<Item = u64>> = if block_start == 0 {
            Box::new(newlines.chain(std::iter::once(0)))
        } else {
            Box::new(newlines)
        };
        for start in starts {
            // The record runs to the next record's start, less its newline.
            let end = if later_start == len && !ends_with_newline {
                len
            } else {
                later_start - 1
            };
            let record_len = end.saturating_sub(start);
            let head_len = usize::try_from(record_len).map_or(MAX_HEADER, |n| n.min(MAX_HEADER));
            let head = &mut head[..head_len];
            let in_block = start
                .checked_sub(block_start)
                .and_then(|off| usize::try_from(off).ok())
                .filter(|&off| off + head_len <= data.len());
            match in_block {
                Some(off) => head.copy_from_slice(&data[off..off + head_len]),
                None => {
                    let n = read_full(src, head, start)?;
                    head[n..].fill(0);
                }
            }
            let complete = record_len <= MAX_HEADER as u64;
            let header = parse_header(head, complete);
            later_start = start;
            if header == Header::Plain {
                // Skipped, as the decoder skips it.
                continue;
            }
            let record = Record {
                start,
                // Only `since` needs times; parsing them is skipped otherwise.
                timestamp: match opts.since {
                    Some(_) => header.timestamp(head).unwrap_or(UNPARSABLE_TIME),
                    None => UNPARSABLE_TIME,
                },
                stream: header.stream(),
                partial: header.is_partial(),
            };
            if let Some(later) = &later {
                // A logical line starts at `later` unless `record` is partial and `later`
                // continues it.
                if !record.partial
                    && let Some(answer) = scan.line(later)
                {
                    return Ok(answer);
                }
            }
            later = Some(record);
        }
        if block_start == 0 {
            break;
        }
        scan_end = block_start;
    }
    // The first record of the file starts a logical line.
    if let Some(first) = &later
        && let Some(answer) = scan.line(first)
    {
        return Ok(answer);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::sim::logdecode::Decoder;

    /// Counts bytes read, to check the scan's cost.
    struct Counting<'a> {
        data: &'a [u8],
        read: Cell<u64>,
    }

    impl ReadAt for Counting<'_> {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let n = self.data.read_at(buf, offset)?;
            self.read.set(self.read.get() + n as u64);
            Ok(n)
        }
    }

    fn decode_from(data: &[u8], start: u64, opts: &LogOptions) -> String {
        let mut decoder = Decoder::new(opts.clone());
        let mut out = Vec::new();
        decoder.feed(&data[usize::try_from(start).expect("small")..], &mut out);
        decoder.finish(&mut out);
        String::from_utf8(out).expect("utf-8")
    }

    /// The last `n` lines of the whole decoded output, computed the slow way.
    fn expected_tail(data: &[u8], n: usize, opts: &LogOptions) -> String {
        let all = decode_from(data, 0, opts);
        let lines: Vec<&str> = all.split_inclusive('\n').collect();
        lines[lines.len().saturating_sub(n)..].concat()
    }

    /// A log mixing CRI records (full and partial, both streams) and plain lines, with records
    /// longer than the header limit and than the small block sizes used below.
    fn mixed_log() -> Vec<u8> {
        let mut log = String::new();
        for i in 0..60u32 {
            let ts = format!("2024-05-01T10:{:02}:{:02}.{:03}Z", i / 60, i % 60, i);
            let stream = if i % 3 == 0 { "stderr" } else { "stdout" };
            match i % 7 {
                0 => log.push_str(&format!("plain {i}\n")),
                1 => {
                    log.push_str(&format!("{ts} {stream} P part-a-{i}-\n"));
                    log.push_str(&format!("{ts} {stream} P {}\n", "y".repeat(150)));
                    log.push_str(&format!("{ts} {stream} F -end-{i}\n"));
                }
                2 => log.push_str(&format!("{ts} {stream} F {}{i}\n", "x".repeat(200))),
                _ => log.push_str(&format!("{ts} {stream} F line {i}\n")),
            }
        }
        log.into_bytes()
    }

    #[test]
    fn backward_tail_matches_forward_decoding_across_block_boundaries() {
        let data = mixed_log();
        let opts = LogOptions::default();
        for block in [1, 2, 5, 16, 63, 64, 100, 4096, BLOCK_SIZE] {
            for n in [1, 2, 3, 7, 10, 25, 59, 60, 61, 70, 1000] {
                let start = tail_start_with_block(&data[..], data.len() as u64, n, &opts, block)
                    .expect("scan");
                assert_eq!(
                    decode_from(&data, start, &opts),
                    expected_tail(&data, n as usize, &opts),
                    "block {block}, tail {n}"
                );
            }
        }
    }

    #[test]
    fn tail_without_final_newline_and_with_trailing_partial() {
        let opts = LogOptions::default();
        for data in [
            &b"a\nb\nc"[..],
            b"a\n2024-05-01T10:00:00Z stdout F b\n2024-05-01T10:00:01Z stdout P c",
            b"\n\n\n",
            b"x",
        ] {
            for n in 1..5 {
                for block in [1, 3, 64] {
                    let start = tail_start_with_block(data, data.len() as u64, n, &opts, block)
                        .expect("scan");
                    assert_eq!(
                        decode_from(data, start, &opts),
                        expected_tail(data, n as usize, &opts),
                        "{:?} tail {n} block {block}",
                        String::from_utf8_lossy(data)
                    );
                }
            }
        }
    }

    #[test]
    fn tail_counts_only_wanted_lines_and_stops_at_since() {
        let data = mixed_log();
        let stderr = LogOptions {
            stream: Some(Stream::Stderr),
            ..LogOptions::default()
        };
        let since = LogOptions {
            since: Some("2024-05-01T10:00:40Z".parse().expect("ts")),
            timestamps: true,
            ..LogOptions::default()
        };
        // Plain lines are skipped; the since case also runs on records only.
        let records_only: Vec<u8> = data
            .split_inclusive(|&b| b == b'\n')
            .filter(|line| !line.starts_with(b"plain"))
            .flatten()
            .copied()
            .collect();
        for (opts, data) in [(stderr, &data), (since, &records_only)] {
            for n in [1, 4, 9, 1000] {
                for block in [7, 64, BLOCK_SIZE] {
                    let start =
                        tail_start_with_block(&data[..], data.len() as u64, n, &opts, block)
                            .expect("scan");
                    assert_eq!(
                        decode_from(data, start, &opts),
                        expected_tail(data, n as usize, &opts),
                        "{opts:?} tail {n} block {block}"
                    );
                }
            }
        }
    }

    #[test]
    fn since_alone_skips_the_old_part_of_the_file() {
        let mut data = Vec::new();
        for i in 0..20_000u32 {
            let ts = jiff::Timestamp::from_second(1_700_000_000 + i64::from(i)).expect("ts");
            data.extend_from_slice(format!("{ts} stdout F message number {i}\n").as_bytes());
        }
        let since = jiff::Timestamp::from_second(1_700_000_000 + 19_990).expect("ts");
        let opts = LogOptions {
            since: Some(since),
            ..LogOptions::default()
        };
        let src = Counting {
            data: &data,
            read: Cell::new(0),
        };
        let start = tail_start(&src, data.len() as u64, u64::MAX, &opts).expect("scan");
        let out = decode_from(&data, start, &opts);
        assert_eq!(out.lines().count(), 10);
        assert!(out.starts_with("message number 19990\n"));
        assert!(
            src.read.get() < 2 * BLOCK_SIZE as u64,
            "read {} bytes",
            src.read.get()
        );
    }

    #[test]
    fn a_short_tail_of_a_large_log_reads_little() {
        let line = b"2024-05-01T10:00:00.123456789Z stdout F {\"run_uid\":\"abc\",\"message\":\"hello\"}\n";
        let data: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * 200_000)
            .collect();
        let src = Counting {
            data: &data,
            read: Cell::new(0),
        };
        let opts = LogOptions::default();
        let start = tail_start(&src, data.len() as u64, 10, &opts).expect("scan");
        assert_eq!(start, data.len() as u64 - 10 * line.len() as u64);
        assert!(
            src.read.get() < 2 * BLOCK_SIZE as u64,
            "read {} bytes",
            src.read.get()
        );
    }

    #[test]
    fn zero_lines_starts_at_the_end() {
        let data = b"a\nb\n";
        let start = tail_start(&data[..], 4, 0, &LogOptions::default()).expect("scan");
        assert_eq!(start, 4);
    }
}
