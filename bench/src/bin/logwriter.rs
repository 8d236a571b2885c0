//! The access log's writer, in process: the Console's own writer thread
//! (`kruntimes-console/src/logging.rs`) next to `tracing-appender`'s non-blocking
//! writer, on the same JSON lines.
//!
//! ```sh
//! cargo build --release -p kruntimes-bench --bin bench-logwriter
//! target/release/bench-logwriter                 # ~3 min; flags: --lines --threads --rate --runs
//! ```
//!
//! Each measurement is a child process of this binary (a process installs
//! one log writer), with its standard error sent to a file or to
//! `/dev/null`, as the Console's is. `--threads` threads (the request
//! threads) write access records formatted by the Console's own
//! `access_json`; each call is timed. Writers:
//! - `thread`: `logging::init("json")` and `logging::write_access`, the
//!   Console's path (a shared buffer, one `write` per gathered batch);
//! - `appender`: `tracing_appender::non_blocking(stderr())`, blocking when
//!   its 128,000-line channel is full (`lossy(false)`: the Console never
//!   drops lines), one `write` per line;
//! - `appender-buf`: the same over a 64 KiB `BufWriter` (the worker flushes
//!   when its channel is empty), i.e. batched writes like `thread`;
//! - `none` (baseline): the line formatted and dropped, so what a writer
//!   adds is its row minus this one.
//!
//! Two loads: `burst` writes `--lines` records as fast as the threads can
//! (throughput, and what a logger waits when the writer falls behind);
//! `paced` writes `--rate` records per second for `--lines / 10` records
//! (a busy Console: what one call costs a request). Reported per writer:
//! the time until the last call returned, until every line was written
//! (the guard dropped at exit), the process's CPU time, and the per-call
//! p50/p99/max. The file's lines are counted: none may be missing. The
//! allocator is the Console's (mimalloc).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use kruntimes_bench::{procfs, stats};
use kruntimes_console::logging;
use kruntimes_core::observe::Access;
use serde_json::{Value, json};
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder};

/// The Console's allocator: `tracing-appender` allocates a buffer per line.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WRITERS: [&str; 4] = ["none", "thread", "appender", "appender-buf"];

#[derive(Parser)]
struct Args {
    /// Records per burst measurement (a paced one writes a tenth of them).
    #[arg(long, default_value_t = 1_000_000)]
    lines: u64,
    /// Threads writing records at the same time.
    #[arg(long, default_value_t = 2)]
    threads: u64,
    /// Records per second of the paced load (all threads together).
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Repetitions of every measurement.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The file the `file` measurements write to (removed afterwards).
    #[arg(long, default_value = "target/bench-logwriter.log")]
    file: PathBuf,
    /// Internal: run one measurement with this writer and print its result.
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Internal: the load of `--child` (`burst` or `paced`).
    #[arg(long, hide = true, default_value = "burst")]
    load: String,
}

fn main() -> Result<()> {
    let args = Args::parse();
    match &args.child {
        Some(writer) => child(&args, writer),
        None => parent(&args),
    }
}

/// One record as a request of the Console would log it.
fn record(i: u64, id: &mut String, path: &mut String, f: impl FnOnce(&Access<'_>)) {
    use std::fmt::Write as _;
    id.clear();
    let _ = write!(id, "{:016x}", 0x5eed_0000_0000_u64 + i);
    path.clear();
    let _ = write!(
        path,
        "/v1/namespaces/team-a/runtimes/python/runs/run-{}/invoke",
        i % 10_000
    );
    f(&Access {
        listener: "console",
        request_id: id,
        method: "POST",
        path,
        code: 200,
        ms: 1.0 + (i % 997) as f64 / 1000.0,
    });
}

static APPENDER: OnceLock<NonBlocking> = OnceLock::new();

/// The `appender` writers' access path: the same line, sent to the channel.
fn appender_access(a: &Access<'_>) {
    thread_local! {
        static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        // Each thread's own handle (a sender of the channel).
        static WRITER: std::cell::RefCell<Option<NonBlocking>> = APPENDER.get().cloned().into();
    }
    LINE.with_borrow_mut(|line| {
        line.clear();
        logging::access_json(a, line);
        WRITER.with_borrow_mut(|w| {
            if let Some(w) = w {
                let _ = w.write_all(line);
            }
        });
    });
}

/// The baseline: the same formatting, nothing written.
fn none_access(a: &Access<'_>) {
    thread_local! {
        static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    LINE.with_borrow_mut(|line| {
        line.clear();
        logging::access_json(a, line);
        std::hint::black_box(&line);
    });
}

fn child(args: &Args, writer: &str) -> Result<()> {
    let (write, guard): (fn(&Access<'_>), Box<dyn std::any::Any>) = match writer {
        "none" => (none_access, Box::new(())),
        "thread" => (logging::write_access, Box::new(logging::init("json"))),
        "appender" | "appender-buf" => {
            let builder = NonBlockingBuilder::default().lossy(false);
            let (nb, guard) = if writer == "appender" {
                builder.finish(std::io::stderr())
            } else {
                builder.finish(BufWriter::with_capacity(64 << 10, std::io::stderr()))
            };
            let _ = APPENDER.set(nb);
            (appender_access, Box::new(guard))
        }
        other => bail!("unknown writer {other}"),
    };
    let paced = args.load == "paced";
    let total = if paced { args.lines / 10 } else { args.lines };
    let per_thread = total / args.threads;
    // Each thread's share of the rate: one record every `gap`.
    let gap = Duration::from_secs_f64(args.threads as f64 / args.rate as f64);
    let started = Instant::now();
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            std::thread::spawn(move || {
                let (mut id, mut path) = (String::new(), String::new());
                let mut ns = Vec::with_capacity(per_thread as usize);
                let begin = Instant::now();
                for i in 0..per_thread {
                    if paced {
                        let due = begin + gap * i as u32;
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                    }
                    let t0 = Instant::now();
                    record(t * per_thread + i, &mut id, &mut path, write);
                    ns.push(t0.elapsed().as_nanos() as f64);
                }
                ns
            })
        })
        .collect();
    let mut ns = Vec::new();
    for h in handles {
        ns.extend(h.join().expect("a writing thread"));
    }
    let calls_done = started.elapsed();
    drop(guard);
    let all_written = started.elapsed();
    let cpu = procfs::cpu_seconds(std::process::id())?;
    println!(
        "{}",
        json!({
            "lines": per_thread * args.threads,
            "calls_s": calls_done.as_secs_f64(),
            "written_s": all_written.as_secs_f64(),
            "cpu_s": cpu,
            "p50_ns": stats::percentile(&ns, 50.0),
            "p99_ns": stats::percentile(&ns, 99.0),
            "max_ns": stats::max(&ns),
        })
    );
    Ok(())
}

fn run_child(args: &Args, writer: &str, load: &str, to_file: bool) -> Result<Value> {
    let exe = std::env::current_exe()?;
    let stderr = if to_file {
        std::fs::File::create(&args.file).with_context(|| format!("creating {:?}", args.file))?
    } else {
        std::fs::OpenOptions::new().write(true).open("/dev/null")?
    };
    let out = Command::new(exe)
        .args(["--child", writer, "--load", load])
        .args(["--lines", &args.lines.to_string()])
        .args(["--threads", &args.threads.to_string()])
        .args(["--rate", &args.rate.to_string()])
        .stdout(Stdio::piped())
        .stderr(stderr)
        .output()?;
    if !out.status.success() {
        bail!("{writer} {load}: the measurement failed ({})", out.status);
    }
    let v: Value = serde_json::from_slice(&out.stdout).context("the measurement's result")?;
    if to_file && writer != "none" {
        let file = std::fs::File::open(&args.file)?;
        let mut count = 0u64;
        for line in BufReader::new(file).lines() {
            let line = line?;
            if count == 0 {
                let first: Value = serde_json::from_str(&line).context("a JSON line")?;
                if first["message"] != "request" {
                    bail!("{writer}: unexpected first line {line}");
                }
            }
            count += 1;
        }
        if count != v["lines"].as_u64().unwrap_or(0) {
            bail!(
                "{writer} {load}: {count} lines in the file, {} written",
                v["lines"]
            );
        }
    }
    Ok(v)
}

fn parent(args: &Args) -> Result<()> {
    println!(
        "bench-logwriter: {} lines per burst, {} per paced run at {}/s, {} threads, {} runs; load average {}",
        args.lines,
        args.lines / 10,
        args.rate,
        args.threads,
        args.runs,
        procfs::load_average()
    );
    println!(
        "| load | target | writer | lines/s (calls) | all written s | CPU s | call p50 ns | call p99 ns | call max ms |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for load in ["burst", "paced"] {
        for (target, to_file) in [("file", true), ("/dev/null", false)] {
            for writer in WRITERS {
                let mut results = Vec::new();
                for _ in 0..args.runs {
                    results.push(run_child(args, writer, load, to_file)?);
                }
                let f = |k: &str| -> Vec<f64> {
                    results
                        .iter()
                        .map(|r| r[k].as_f64().unwrap_or(f64::NAN))
                        .collect()
                };
                let lines = results[0]["lines"].as_f64().unwrap_or(0.0);
                let rate: Vec<f64> = f("calls_s").iter().map(|s| lines / s).collect();
                let max_ms: Vec<f64> = f("max_ns").iter().map(|n| n / 1e6).collect();
                println!(
                    "| {load} | {target} | {writer} | {} | {} | {} | {} | {} | {} |",
                    stats::range(&rate, 0),
                    stats::range(&f("written_s"), 3),
                    stats::range(&f("cpu_s"), 2),
                    stats::range(&f("p50_ns"), 0),
                    stats::range(&f("p99_ns"), 0),
                    stats::range(&max_ms, 2),
                );
            }
        }
    }
    let _ = std::fs::remove_file(&args.file);
    Ok(())
}
