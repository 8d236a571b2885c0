//! Filter throughput, in process: how fast one core selects one Run's records
//! out of runtimed lines of other Runs.
//!
//! ```sh
//! cargo run --release -p kruntimes-bench --bin bench-filter
//! ```
//!
//! A few MiB of realistic runtimed lines (random Run UIDs, messages of
//! 50–300 bytes) are generated and repeated to `--size-mib` in memory, with
//! 0%, 1% and 10% of the lines belonging to the Run looked for. Each pass
//! runs on one thread; throughput is reported per wall second and per
//! second the thread spent on a CPU (`/proc/thread-self/schedstat`), which
//! discounts time the thread waited for a core.
//!
//! Modes:
//! - `record`: lines split with `memchr`, each passed to `RunFilter::record`
//!   (the prefilter, then the JSON parse of candidates) — the filter alone;
//! - `reader`: the server's whole per-line path: `LineReader` over an
//!   in-memory stream delivered in 16 KiB pieces (like a network body), the
//!   kubelet timestamp split, then `RunFilter::record`;
//! - `split-only` (baseline): the `memchr` line split and nothing else;
//! - `parse-all` (baseline): every line parsed as JSON and its `run_uid`
//!   compared, i.e. filtering without the prefilter.

use std::borrow::Cow;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use clap::Parser;
use futures::io::{AsyncBufRead, AsyncRead};
use kruntimes_apiserver::logs::filter::StreamFilter;
use kruntimes_apiserver::logs::lines::{Line, LineReader};
use kruntimes_apiserver::logs::{MAX_LINE_BYTES, RunFilter};
use kruntimes_bench::lines::{LineGen, RunIdentity, rfc3339_nano};
use kruntimes_bench::stats;
use rand::Rng;

#[derive(Parser, Debug)]
#[command(about = "Throughput of the Run-log filter over runtimed lines, one core")]
struct Args {
    /// Bytes of log per pass, in MiB.
    #[arg(long, default_value_t = 512)]
    size_mib: usize,
    /// Size of the generated block that is repeated, in MiB.
    #[arg(long, default_value_t = 4)]
    block_mib: usize,
    /// Passes per case.
    #[arg(long, default_value_t = 5)]
    passes: usize,
    /// Stop repeating a case after this many seconds.
    #[arg(long, default_value_t = 60)]
    max_seconds_per_case: u64,
    /// Matching ratios to measure, in percent.
    #[arg(long, value_delimiter = ',', default_values_t = vec![0.0, 1.0, 10.0])]
    match_percent: Vec<f64>,
    /// Piece size of the in-memory stream of the `reader` mode, in KiB.
    #[arg(long, default_value_t = 16)]
    piece_kib: usize,
}

const NS: &str = "team-a";
const POD: &str = "python-pool-5d8f7-0";
const BACKGROUND_RUNS: usize = 200;

/// Content lines (no timestamps) and the same lines with kubelet timestamps.
struct Corpus {
    content: Vec<u8>,
    stamped: Vec<u8>,
    lines: u64,
    matching: u64,
}

fn generate(args: &Args, target: &RunIdentity, ratio: f64, seed: u64) -> Corpus {
    let mut g = LineGen::new(seed, NS, "python", POD);
    let others: Vec<RunIdentity> = (0..BACKGROUND_RUNS).map(|_| g.other_run()).collect();
    let block_bytes = args.block_mib << 20;
    let mut block = Vec::with_capacity(block_bytes + 1024);
    let mut stamped_block = Vec::with_capacity(block_bytes + block_bytes / 4);
    let mut lines = 0u64;
    let mut matching = 0u64;
    let mut t = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
    let mut line = Vec::with_capacity(512);
    while block.len() < block_bytes {
        let is_target = g.rng().random_bool(ratio);
        let run = if is_target {
            matching += 1;
            target.clone()
        } else {
            others[g.rng().random_range(0..others.len())].clone()
        };
        let msg = g.message();
        line.clear();
        g.write_line_on(&run, "stdout", &msg, &mut line);
        block.extend_from_slice(&line);
        block.push(b'\n');
        t += jiff::SignedDuration::from_micros(g.rng().random_range(1..2000));
        stamped_block.extend_from_slice(rfc3339_nano(t).as_bytes());
        stamped_block.push(b' ');
        stamped_block.extend_from_slice(&line);
        stamped_block.push(b'\n');
        lines += 1;
    }
    let copies = (args.size_mib << 20).div_ceil(block.len()).max(1);
    Corpus {
        content: block.repeat(copies),
        stamped: stamped_block.repeat(copies),
        lines: lines * copies as u64,
        matching: matching * copies as u64,
    }
}

/// CPU time of this thread so far.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

/// An in-memory stream handing out at most `piece` bytes at a time, without copying.
struct Pieces<'a> {
    data: &'a [u8],
    pos: usize,
    piece: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = buf.len().min(this.piece).min(this.data.len() - this.pos);
        buf[..n].copy_from_slice(&this.data[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(n))
    }
}

impl AsyncBufRead for Pieces<'_> {
    fn poll_fill_buf(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        let end = ((this.pos / this.piece + 1) * this.piece).min(this.data.len());
        Poll::Ready(Ok(&this.data[this.pos..end]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        self.get_mut().pos += amt;
    }
}

fn pass_record(filter: &RunFilter, data: &[u8]) -> u64 {
    let mut found = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        if filter.record(&rest[..end], None).is_some() {
            found += 1;
        }
        rest = &rest[(end + 1).min(rest.len())..];
    }
    found
}

fn pass_reader(filter: &RunFilter, data: &[u8], piece: usize) -> u64 {
    futures::executor::block_on(async {
        let mut reader = LineReader::new(
            Pieces {
                data,
                pos: 0,
                piece,
            },
            MAX_LINE_BYTES,
        );
        let mut line = Line::default();
        let mut found = 0u64;
        while reader.next_line(&mut line).await.unwrap_or(false) {
            // What the server does per line (`LogSource::record_of`).
            if filter.line_record(&line).is_some() {
                found += 1;
            }
        }
        found
    })
}

fn pass_split(data: &[u8]) -> u64 {
    let mut n = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        n += std::hint::black_box(&rest[..end]).len() as u64 & 1;
        rest = &rest[(end + 1).min(rest.len())..];
    }
    n
}

#[derive(serde::Deserialize)]
struct UidOnly<'a> {
    #[serde(borrow)]
    run_uid: Option<Cow<'a, str>>,
}

fn pass_parse_all(uid: &str, data: &[u8]) -> u64 {
    let mut found = 0u64;
    let mut rest = data;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        if let Ok(v) = serde_json::from_slice::<UidOnly<'_>>(&rest[..end])
            && v.run_uid.as_deref() == Some(uid)
        {
            found += 1;
        }
        rest = &rest[(end + 1).min(rest.len())..];
    }
    found
}

struct CaseResult {
    gb_wall: Vec<f64>,
    gb_cpu: Vec<f64>,
}

fn measure(
    args: &Args,
    bytes: usize,
    mut pass: impl FnMut() -> u64,
    expect: Option<u64>,
) -> Result<CaseResult> {
    let deadline = Instant::now() + Duration::from_secs(args.max_seconds_per_case);
    let mut r = CaseResult {
        gb_wall: Vec::new(),
        gb_cpu: Vec::new(),
    };
    // One warm-up pass (page faults, caches), not counted.
    let _ = pass();
    for _ in 0..args.passes {
        let (c0, t0) = (thread_cpu(), Instant::now());
        let found = std::hint::black_box(pass());
        let (wall, cpu) = (t0.elapsed(), thread_cpu() - c0);
        if let Some(e) = expect {
            ensure!(found == e, "found {found} records, expected {e}");
        }
        r.gb_wall.push(bytes as f64 / wall.as_secs_f64() / 1e9);
        if cpu > Duration::ZERO {
            r.gb_cpu.push(bytes as f64 / cpu.as_secs_f64() / 1e9);
        }
        if Instant::now() > deadline {
            break;
        }
    }
    Ok(r)
}

fn row(mode: &str, pct: f64, corpus_lines: u64, bytes: usize, r: &CaseResult) {
    let avg_line = bytes as f64 / corpus_lines as f64;
    let line_rate = |gb: f64| gb * 1e9 / avg_line / 1e6;
    println!(
        "| {mode} | {pct}% | {:.0} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} |",
        avg_line,
        r.gb_wall.len(),
        stats::median(&r.gb_wall),
        stats::min(&r.gb_wall),
        stats::max(&r.gb_wall),
        stats::median(&r.gb_cpu),
        line_rate(stats::median(&r.gb_wall)),
    );
}

fn main() -> Result<()> {
    let args = Args::parse();
    ensure!(args.piece_kib > 0 && args.block_mib > 0 && args.size_mib >= args.block_mib);
    let mut g = LineGen::new(1, NS, "python", POD);
    let target = g.other_run();
    let filter = RunFilter::new(&target.uid, StreamFilter::Both, POD);
    println!(
        "log per pass: {} MiB (a {} MiB block repeated); {} passes per case after one warm-up; one thread",
        args.size_mib, args.block_mib, args.passes
    );
    println!();
    println!(
        "| mode | matching lines | avg line bytes | passes | GB/s wall median | min | max | GB/s CPU median | Mlines/s |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (i, &pct) in args.match_percent.iter().enumerate() {
        let corpus = generate(&args, &target, pct / 100.0, 100 + i as u64);
        let n = corpus.content.len();
        let r = measure(
            &args,
            n,
            || pass_record(&filter, &corpus.content),
            Some(corpus.matching),
        )?;
        row("record", pct, corpus.lines, n, &r);
        let ns = corpus.stamped.len();
        let piece = args.piece_kib << 10;
        let r = measure(
            &args,
            ns,
            || pass_reader(&filter, &corpus.stamped, piece),
            Some(corpus.matching),
        )?;
        row("reader (CRI timestamps)", pct, corpus.lines, ns, &r);
        if pct == 0.0 {
            let r = measure(&args, n, || pass_split(&corpus.content), None)?;
            row("split-only (baseline)", pct, corpus.lines, n, &r);
            let r = measure(
                &args,
                n,
                || pass_parse_all(&target.uid, &corpus.content),
                Some(0),
            )?;
            row(
                "parse-all, no prefilter (baseline)",
                pct,
                corpus.lines,
                n,
                &r,
            );
        }
    }
    Ok(())
}
