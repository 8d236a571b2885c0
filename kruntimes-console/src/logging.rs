//! Structured logs. Request headers are never logged, so tokens never are.
//!
//! Lines are written to standard error by a dedicated thread: a request only
//! appends its formatted line to a shared buffer, and the thread writes what
//! has gathered in one `write` at most every 50 ms. The buffer is bounded;
//! when the thread falls behind, loggers wait for it (lines are never dropped).
//! Dropping the guard at exit writes every pending line, however many.
//!
//! Why not `tracing-appender`'s non-blocking writer (`bench-logwriter`,
//! bench/README.md §7, same access lines, mimalloc, `lossy(false)`): at
//! 20,000 lines/s to a file this writer adds 0.05 CPU-s per 5 s to
//! formatting alone, `tracing-appender` 0.69 (0.66 over a `BufWriter`),
//! because its worker is woken for every line; a call's p99 is 2.1 µs here
//! against 8.8 µs (8.6). A burst of 1,000,000 lines from 2 threads to a file:
//! 2.1 M lines/s here, 0.34 M (0.82 M). It also bounds its queue in lines
//! (128,000), not bytes, and its guard gives up on lines still queued after
//! 1 s at exit.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use kruntimes_core::observe::Access;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Lines gathered before the writer is woken without waiting.
const FLUSH_AT: usize = 64 << 10;
/// Loggers wait while this much is pending.
const MAX_PENDING: usize = 4 << 20;
/// How long the writer lets lines gather after the first one arrives: each
/// batch costs a wake-up of this thread and of the logger that finds the
/// buffer empty (at 5 ms, 5% of the Console's CPU per `/v1` call at
/// concurrency 1, bench/README.md §5).
const GATHER: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled to the writer: data arrived, the buffer is large, or closing.
    data: Condvar,
    /// Signalled to loggers: the buffer was taken.
    space: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn append(&self, line: &[u8]) {
        let mut s = self.lock();
        while s.pending.len() >= MAX_PENDING && !s.closed {
            s = self.space.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        if s.closed {
            // After shutdown began: write directly rather than lose the line.
            drop(s);
            let _ = std::io::stderr().write_all(line);
            return;
        }
        let before = s.pending.len();
        s.pending.extend_from_slice(line);
        if before == 0 || (before < FLUSH_AT && s.pending.len() >= FLUSH_AT) {
            self.data.notify_one();
        }
    }

    /// The writer thread: takes whatever gathered and writes it in one go.
    fn run(&self, out: &mut dyn Write) {
        let mut batch = Vec::new();
        loop {
            let mut s = self.lock();
            while s.pending.is_empty() && !s.closed {
                s = self.data.wait(s).unwrap_or_else(|p| p.into_inner());
            }
            if !s.closed && s.pending.len() < FLUSH_AT {
                s = self
                    .data
                    .wait_timeout(s, GATHER)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            let closed = s.closed;
            std::mem::swap(&mut s.pending, &mut batch);
            self.space.notify_all();
            drop(s);
            if !batch.is_empty() {
                let _ = out.write_all(&batch);
                let _ = out.flush();
                batch.clear();
                if batch.capacity() > MAX_PENDING {
                    batch = Vec::new();
                }
            }
            if closed && self.lock().pending.is_empty() {
                return;
            }
        }
    }
}

/// Hands each formatted line to the writer thread.
#[derive(Clone)]
struct Lines(Arc<Shared>);

impl Write for &Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.append(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = &'a Lines;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

/// Keeps the writer thread; dropping it writes what is pending and stops it.
pub struct LogGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.data.notify_one();
        self.shared.space.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The writer of this process, for lines formatted without `tracing`.
static WRITER: OnceLock<Arc<Shared>> = OnceLock::new();

/// An access record as the JSON line `tracing` would write, formatted
/// directly (it is written once per request; `tracing`'s JSON formatter cost
/// a sixth of a proxied call). Public for `bench-logwriter`.
pub fn access_json(a: &Access<'_>, out: &mut Vec<u8>) {
    thread_local! {
        static SECOND: std::cell::RefCell<Second> = const { std::cell::RefCell::new(Second::NONE) };
    }
    out.extend_from_slice(b"{\"timestamp\":\"");
    SECOND.with_borrow_mut(|second| stamp(jiff::Timestamp::now(), second, out));
    out.extend_from_slice(b"\",\"level\":\"INFO\",\"message\":\"request\",\"listener\":");
    let _ = serde_json::to_writer(&mut *out, a.listener);
    out.extend_from_slice(b",\"request_id\":");
    let _ = serde_json::to_writer(&mut *out, a.request_id);
    out.extend_from_slice(b",\"method\":");
    let _ = serde_json::to_writer(&mut *out, a.method);
    out.extend_from_slice(b",\"path\":");
    let _ = serde_json::to_writer(&mut *out, a.path);
    out.extend_from_slice(b",\"code\":");
    out.extend_from_slice(itoa::Buffer::new().format(a.code).as_bytes());
    out.extend_from_slice(b",\"ms\":");
    // As `tracing`'s JSON lines write a number (a non-finite one as null).
    let _ = serde_json::to_writer(&mut *out, &a.ms);
    out.extend_from_slice(b",\"target\":\"kruntimes_core::observe\"}\n");
}

/// The date and time of one second, as RFC 3339 up to the seconds.
struct Second {
    secs: i64,
    text: [u8; 20],
}

impl Second {
    const NONE: Self = Self {
        secs: i64::MIN,
        text: [0; 20],
    };
}

/// `ts` as `{ts:.6}` writes it (`2026-12-07T00:06:50.123456Z`), with the
/// date and time formatted once per second: the formatter cost more than
/// the rest of the access line.
fn stamp(ts: jiff::Timestamp, second: &mut Second, out: &mut Vec<u8>) {
    let secs = ts.as_second();
    let micros = ts.subsec_microsecond();
    // A time before 1970 has a negative fraction: left to the formatter.
    if micros < 0 {
        let _ = write!(out, "{ts:.6}");
        return;
    }
    if second.secs != secs {
        let whole = jiff::Timestamp::from_second(secs).unwrap_or(ts);
        let text = format!("{whole:.0}");
        // `YYYY-MM-DDTHH:MM:SSZ`; a year past 9999 is left to the formatter.
        let Some(t) = text.as_bytes().get(..19).filter(|_| text.len() == 20) else {
            let _ = write!(out, "{ts:.6}");
            return;
        };
        second.text[..19].copy_from_slice(t);
        second.text[19] = b'.';
        second.secs = secs;
    }
    out.extend_from_slice(&second.text);
    let mut frac = [b'0'; 6];
    let mut n = micros as u32;
    for d in frac.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&frac);
    out.push(b'Z');
}

/// Writes one access record through the writer thread (the access log
/// `init` installs; public for `bench-logwriter`). Nothing before `init`.
pub fn write_access(a: &Access<'_>) {
    thread_local! {
        static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let Some(writer) = WRITER.get() else {
        return;
    };
    LINE.with_borrow_mut(|line| {
        line.clear();
        access_json(a, line);
        writer.append(line);
    });
}

/// Installs the global subscriber; keep the guard until the process ends.
pub fn init(format: &str) -> LogGuard {
    init_with_traces(format, None)
}

/// [`init`], and with `tracer` the spans of [`kruntimes_core::trace`] go to
/// it (and only those: log lines never become span events). The log filter
/// (`RUST_LOG`) applies to log lines only, so it cannot turn traces off.
pub fn init_with_traces(
    format: &str,
    tracer: Option<opentelemetry_sdk::trace::Tracer>,
) -> LogGuard {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let shared = Arc::new(Shared::default());
    let _ = WRITER.set(shared.clone());
    let writer_side = shared.clone();
    let thread = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn(move || writer_side.run(&mut std::io::stderr()))
        .ok();
    let lines = Lines(shared.clone());
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("info,kube=warn,kube_runtime=warn,hyper=warn,rustls=warn,tower=warn")
    });
    let text = format == "text";
    let fmt = tracing_subscriber::fmt::layer().with_writer(lines);
    let log: Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync> = if text {
        Box::new(fmt)
    } else {
        // Span fields stay out of log lines: they are the same with traces on or off.
        Box::new(
            fmt.json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false),
        )
    };
    let traced = tracer.is_some();
    let otel = tracer.map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(kruntimes_core::trace::SpanFilter)
    });
    tracing_subscriber::registry()
        .with(log.with_filter(filter))
        .with(otel)
        .init();
    if !text {
        kruntimes_core::observe::set_access_log(write_access);
    }
    if traced {
        kruntimes_core::trace::enable();
    }
    LogGuard { shared, thread }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that records each `write_all` batch.
    #[derive(Clone, Default)]
    struct Batches(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Batches {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn start() -> (Arc<Shared>, Batches, JoinHandle<()>) {
        let shared = Arc::new(Shared::default());
        let out = Batches::default();
        let (s, mut o) = (shared.clone(), out.clone());
        let t = std::thread::spawn(move || s.run(&mut o));
        (shared, out, t)
    }

    fn close(shared: &Shared, t: JoinHandle<()>) {
        shared.lock().closed = true;
        shared.data.notify_one();
        t.join().unwrap();
    }

    #[test]
    fn access_lines_are_json_like_the_other_lines() {
        use serde_json::json;
        let mut out = Vec::new();
        access_json(
            &Access {
                listener: "console",
                request_id: "0123456789abcdef",
                method: "POST",
                path: "/v1/namespaces/a/runs/b/\"x\\y\"/invoke",
                code: 200,
                ms: 0.25,
            },
            &mut out,
        );
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["message"], "request");
        assert_eq!(v["level"], "INFO");
        assert_eq!(v["listener"], "console");
        assert_eq!(v["method"], "POST");
        assert_eq!(v["path"], "/v1/namespaces/a/runs/b/\"x\\y\"/invoke");
        assert_eq!(v["code"], 200);
        assert_eq!(v["ms"], 0.25);
        let ts = v["timestamp"].as_str().unwrap();
        assert!(ts.parse::<jiff::Timestamp>().is_ok(), "{ts}");
        assert_eq!(v.as_object().unwrap().len(), 10);
        // Every number stays JSON, an odd one too.
        for (ms, want) in [
            (3.0, json!(3.0)),
            (1e-7, json!(1e-7)),
            (12345.678, json!(12345.678)),
            (f64::NAN, json!(null)),
        ] {
            let mut out = Vec::new();
            let a = Access {
                listener: "console",
                request_id: "0",
                method: "GET",
                path: "/",
                code: 503,
                ms,
            };
            access_json(&a, &mut out);
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!((v["ms"].clone(), v["code"].clone()), (want, json!(503)));
        }
    }

    #[test]
    fn access_stamps_are_written_as_the_formatter_writes_them() {
        let mut second = Second::NONE;
        let base = jiff::Timestamp::now().as_second();
        let mut cases: Vec<jiff::Timestamp> = [
            (0, 0),
            (0, 999_999_999),
            (1, 1_000),
            (1, 999),
            (base, 0),
            (base, 5_000),
            (base, 123_456_789),
            (base + 1, 999_999_000),
            (253_402_207_200, 999_999_999),
            (-1, 500_000_000),
        ]
        .into_iter()
        .map(|(s, n)| jiff::Timestamp::new(s, n).unwrap())
        .collect();
        // A run through many seconds and fractions, as the cache sees them.
        let mut rng = rand::rng();
        use rand::Rng;
        for _ in 0..2_000 {
            let s = base + rng.random_range(-3..3);
            cases.push(jiff::Timestamp::new(s, rng.random_range(0..1_000_000_000)).unwrap());
        }
        for ts in cases {
            let mut out = Vec::new();
            stamp(ts, &mut second, &mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("{ts:.6}"),
                "{ts:?}"
            );
        }
    }

    #[test]
    fn every_line_arrives_in_order_and_lines_are_batched() {
        let (shared, out, t) = start();
        let lines: Vec<String> = (0..20_000).map(|i| format!("line {i}\n")).collect();
        for l in &lines {
            shared.append(l.as_bytes());
        }
        close(&shared, t);
        let batches = out.0.lock().unwrap();
        let all: Vec<u8> = batches.concat();
        assert_eq!(all, lines.concat().into_bytes());
        assert!(
            batches.len() < lines.len() / 10,
            "{} writes for {} lines",
            batches.len(),
            lines.len()
        );
    }

    #[test]
    fn a_lone_line_is_written_without_waiting_for_more() {
        let (shared, out, t) = start();
        shared.append(b"hello\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.0.lock().unwrap().is_empty() {
            assert!(std::time::Instant::now() < deadline, "never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(out.0.lock().unwrap().concat(), b"hello\n");
        close(&shared, t);
    }

    #[test]
    fn concurrent_loggers_never_interleave_within_a_line() {
        let (shared, out, t) = start();
        let threads: Vec<_> = (0..4)
            .map(|n| {
                let s = shared.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        s.append(format!("{{\"thread\":{n},\"i\":{i}}}\n").as_bytes());
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        close(&shared, t);
        let all = out.0.lock().unwrap().concat();
        let text = String::from_utf8(all).unwrap();
        let mut next = [0u64; 4];
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let n = v["thread"].as_u64().unwrap() as usize;
            assert_eq!(v["i"].as_u64().unwrap(), next[n], "thread {n} out of order");
            next[n] += 1;
        }
        assert_eq!(next, [5_000; 4]);
    }
}
