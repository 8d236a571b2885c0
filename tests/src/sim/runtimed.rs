//! A simulated runtimed: the executions of one Runtime Pod, their output, the records runtimed
//! writes to its container log, and its gRPC status endpoint (served by `sim::runtimed_status`).
//!
//! Two modes:
//! - [`Mode::Engine`], what kruntimes' runtimed does (`internal/runtimed/execution_logs.go`):
//!   a Run's output is kept by the runtime, per stream, and written as records only when the Run
//!   ends, after its terminal status: all stdout lines, then all stderr lines. A Run that timed
//!   out or was cancelled writes none; an attempt that is retried writes none. While it runs,
//!   its output so far is only in the status endpoint's answer.
//! - [`Mode::Live`], the seeds' design: each complete line is written as soon as it is printed.
//!
//! Each stream keeps its first [`DEFAULT_OUTPUT_LIMIT`] bytes, as the bash runtime does
//! (`runtimes/bash/server.go`), and then reads as the kept bytes followed by
//! `"\n[output truncated]\n"`.
//!
//! Records are one JSON object per line with the keys of runtimed's `executionLogLine`, in its
//! order: `run_uid, run_name, namespace, runtime, pod, stream, message`. runtimed's own log
//! (klog text) goes to the container's stderr. Where it all goes is a [`Sink`]: the process's
//! stdout and stderr (in a real Pod the container runtime writes the CRI log), a CRI log file
//! the fake kubelet serves, or memory.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kruntimes_core::runtimed::{ExecutionState, StatusResponse};
use serde::Serialize;

use crate::sim::cri::{Stream, format_rfc3339_nano};

/// What the bash runtime keeps of each stream: 1 MiB.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;
/// What the bash runtime appends to a stream it cut.
pub const TRUNCATED_MARKER: &str = "\n[output truncated]\n";
/// containerd splits a longer line into partial (`P`) records of this size.
pub const CRI_MAX_LINE: usize = 16 * 1024;

/// When records are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// At the Run's end, all at once (the real engine).
    #[default]
    Engine,
    /// Line by line as printed (the seeds' design).
    Live,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "engine" => Ok(Self::Engine),
            "live" => Ok(Self::Live),
            _ => Err(format!("a mode is engine or live, not {s:?}")),
        }
    }
}

/// How a Run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Succeeded,
    Failed,
    Timeout,
    Cancelled,
}

impl Phase {
    /// Whether runtimed writes the Run's output at its end: only Succeeded and Failed Runs
    /// reach `applyTerminalWithOutput` with output; Timeout and Cancelled pass none.
    pub fn writes_output(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

impl std::str::FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "Succeeded" => Ok(Self::Succeeded),
            "Failed" => Ok(Self::Failed),
            "Timeout" => Ok(Self::Timeout),
            "Cancelled" => Ok(Self::Cancelled),
            _ => Err(format!(
                "a phase is Succeeded, Failed, Timeout or Cancelled, not {s:?}"
            )),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

fn stream_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Stdout => "stdout",
        Stream::Stderr => "stderr",
    }
}

/// Why a call was refused.
#[derive(Debug, thiserror::Error)]
pub enum RuntimedError {
    #[error("no execution for Run UID {0:?}")]
    UnknownExecution(String),
    #[error("an execution for Run UID {0:?} already runs")]
    AlreadyStarted(String),
    #[error("a Run UID must not be empty")]
    EmptyUid,
    #[error("cannot write runtimed's log: {0}")]
    Write(#[from] std::io::Error),
    #[error("a container restart needs a file sink")]
    NotAFile,
}

/// One stream as the bash runtime keeps it: the first `limit` bytes, and whether more came.
#[derive(Debug, Clone)]
pub struct BoundedBuffer {
    kept: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl BoundedBuffer {
    pub fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            limit,
            truncated: false,
        }
    }

    pub fn write(&mut self, p: &[u8]) {
        if self.limit == 0 {
            self.truncated |= !p.is_empty();
            return;
        }
        let remaining = self.limit.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&p[..remaining.min(p.len())]);
        if p.len() > remaining {
            self.truncated = true;
        }
    }

    /// The kept bytes (without the marker).
    pub fn kept(&self) -> &[u8] {
        &self.kept
    }

    /// What the stream reads as: the kept bytes, then the marker when something was dropped.
    pub fn view(&self) -> Vec<u8> {
        let mut out = self.kept.clone();
        if self.truncated {
            out.extend_from_slice(TRUNCATED_MARKER.as_bytes());
        }
        out
    }
}

/// The messages runtimed's `emitStream` writes for a stream's content: one "\n" trimmed from
/// the end, split on "\n", empty lines skipped, then a trailing "\r" trimmed (so a line that
/// was only "\r" is written, empty).
pub fn stream_messages(content: &str) -> Vec<&str> {
    content
        .strip_suffix('\n')
        .unwrap_or(content)
        .split('\n')
        .filter(|m| !m.is_empty())
        .map(|m| m.strip_suffix('\r').unwrap_or(m))
        .collect()
}

/// Who writes: the Pod's identity as runtimed puts it in every record.
#[derive(Clone, Debug)]
pub struct PodIdentity {
    pub namespace: String,
    pub runtime: String,
    pub pod: String,
}

/// One record, keys in runtimed's order.
#[derive(Serialize)]
struct Record<'a> {
    run_uid: &'a str,
    run_name: &'a str,
    namespace: &'a str,
    runtime: &'a str,
    pod: &'a str,
    stream: &'a str,
    message: &'a str,
}

/// A record as Go's `json.Marshal` writes it: serde_json's text with the HTML-safe escapes Go
/// adds (`<`, `>`, `&`, U+2028, U+2029), which only occur inside strings here.
pub fn record_json(
    id: &PodIdentity,
    run_uid: &str,
    run_name: &str,
    stream: Stream,
    message: &str,
) -> String {
    let record = Record {
        run_uid,
        run_name,
        namespace: &id.namespace,
        runtime: &id.runtime,
        pod: &id.pod,
        stream: stream_name(stream),
        message,
    };
    let text = serde_json::to_string(&record).unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A line in the container log, as a memory sink keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// `stdout` for records, `stderr` for runtimed's own text.
    pub stream: Stream,
    pub text: String,
}

/// Where runtimed's container output goes.
#[derive(Clone, Debug)]
pub enum Sink {
    /// The process's stdout (records) and stderr (own text).
    Stdio,
    /// A CRI log file, `<dir>/<container>.log`, each line stamped when written; a container
    /// restart moves it to `<container>.previous.log`.
    CriFile(PathBuf),
    /// Kept in memory, for unit tests.
    Memory,
}

enum SinkState {
    Stdio,
    CriFile(PathBuf),
    Memory(Vec<LogLine>),
}

impl SinkState {
    fn write(&mut self, stream: Stream, text: &str) -> std::io::Result<()> {
        match self {
            Self::Stdio => match stream {
                Stream::Stdout => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(text.as_bytes())?;
                    out.write_all(b"\n")?;
                    out.flush()
                }
                Stream::Stderr => {
                    let mut err = std::io::stderr().lock();
                    err.write_all(text.as_bytes())?;
                    err.write_all(b"\n")?;
                    err.flush()
                }
            },
            Self::CriFile(path) => append_cri(path, stream, text, jiff::Timestamp::now()),
            Self::Memory(lines) => {
                lines.push(LogLine {
                    stream,
                    text: text.to_owned(),
                });
                Ok(())
            }
        }
    }
}

/// Appends one line to a CRI log file as containerd writes it: `<RFC3339Nano> <stream> F
/// <content>`, a line over [`CRI_MAX_LINE`] bytes cut into `P` records first.
pub fn append_cri(
    path: &Path,
    stream: Stream,
    text: &str,
    at: jiff::Timestamp,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let stamp = format_rfc3339_nano(at);
    let name = stream_name(stream);
    let bytes = text.as_bytes();
    let mut buf = Vec::with_capacity(bytes.len() + 64);
    let mut chunks = bytes.chunks(CRI_MAX_LINE).peekable();
    if chunks.peek().is_none() {
        buf.extend_from_slice(format!("{stamp} {name} F \n").as_bytes());
    }
    while let Some(chunk) = chunks.next() {
        let tag = if chunks.peek().is_some() { "P" } else { "F" };
        buf.extend_from_slice(format!("{stamp} {name} {tag} ").as_bytes());
        buf.extend_from_slice(chunk);
        buf.push(b'\n');
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&buf)
}

/// The path of the previous container's log next to `current` (`runtimed.log` →
/// `runtimed.previous.log`), as the fake kubelet serves it for `previous=true`.
pub fn previous_log_path(current: &Path) -> PathBuf {
    let stem = current
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    current.with_file_name(format!("{stem}.previous.log"))
}

/// One Run's execution on this Pod.
#[derive(Debug)]
struct Execution {
    run_name: String,
    attempt: u32,
    stdout: BoundedBuffer,
    stderr: BoundedBuffer,
    /// Live mode: how many bytes of each stream's kept bytes were written as records.
    written: [usize; 2],
}

impl Execution {
    fn buffer(&mut self, stream: Stream) -> (&mut BoundedBuffer, &mut usize) {
        match stream {
            Stream::Stdout => (&mut self.stdout, &mut self.written[0]),
            Stream::Stderr => (&mut self.stderr, &mut self.written[1]),
        }
    }
}

/// How a simulated runtimed is set up.
#[derive(Clone, Debug)]
pub struct RuntimedConfig {
    pub mode: Mode,
    pub identity: PodIdentity,
    /// Bytes kept per stream (the bash runtime's `--output-limit-bytes`).
    pub output_limit: usize,
    pub sink: Sink,
}

impl RuntimedConfig {
    pub fn new(identity: PodIdentity, sink: Sink) -> Self {
        Self {
            mode: Mode::Engine,
            identity,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            sink,
        }
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    pub fn output_limit(mut self, limit: usize) -> Self {
        self.output_limit = limit;
        self
    }
}

/// Counters a test reads to see what was asked of the status endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounters {
    /// Every request the endpoint answered.
    pub requests: u64,
    /// Status requests per execution ID (known or not).
    pub by_id: HashMap<String, u64>,
}

pub(crate) struct Inner {
    mode: Mode,
    identity: PodIdentity,
    output_limit: usize,
    sink: Mutex<SinkState>,
    executions: Mutex<HashMap<String, Execution>>,
    counters: Mutex<StatusCounters>,
    restarts: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A simulated runtimed. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Runtimed {
    pub(crate) inner: Arc<Inner>,
    /// Aborts the status servers when the last clone is dropped.
    pub(crate) servers: Arc<Servers>,
}

impl Runtimed {
    /// A runtimed that has just started (it writes its start line).
    pub fn new(config: RuntimedConfig) -> Self {
        let sink = match config.sink {
            Sink::Stdio => SinkState::Stdio,
            Sink::CriFile(path) => SinkState::CriFile(path),
            Sink::Memory => SinkState::Memory(Vec::new()),
        };
        let runtimed = Self {
            inner: Arc::new(Inner {
                mode: config.mode,
                identity: config.identity,
                output_limit: config.output_limit,
                sink: Mutex::new(sink),
                executions: Mutex::new(HashMap::new()),
                counters: Mutex::new(StatusCounters::default()),
                restarts: AtomicU64::new(0),
            }),
            servers: Arc::default(),
        };
        let _ = runtimed.log_started();
        runtimed
    }

    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    pub fn identity(&self) -> &PodIdentity {
        &self.inner.identity
    }

    fn log_started(&self) -> Result<(), RuntimedError> {
        let id = &self.inner.identity;
        self.own_log(&format!(
            "runtimed controller started, hostname={}, runtime={}, mode={:?}",
            id.pod, id.runtime, self.inner.mode
        ))
    }

    /// One line of runtimed's own log, klog's text format, to the container's stderr.
    fn own_log(&self, message: &str) -> Result<(), RuntimedError> {
        let now = jiff::Timestamp::now();
        let line = format!(
            "I{} {:>7} runtimed.go:1] {message}",
            now.strftime("%m%d %H:%M:%S%.6f"),
            std::process::id()
        );
        lock(&self.inner.sink).write(Stream::Stderr, &line)?;
        Ok(())
    }

    fn write_records(
        &self,
        sink: &mut SinkState,
        uid: &str,
        run_name: &str,
        stream: Stream,
        messages: &[&str],
    ) -> std::io::Result<()> {
        for message in messages {
            let line = record_json(&self.inner.identity, uid, run_name, stream, message);
            sink.write(Stream::Stdout, &line)?;
        }
        Ok(())
    }

    /// A new execution for Run `uid` (runtimed claimed the Run and called Execute).
    pub fn start(&self, uid: &str, run_name: &str) -> Result<(), RuntimedError> {
        if uid.is_empty() {
            return Err(RuntimedError::EmptyUid);
        }
        {
            let mut executions = lock(&self.inner.executions);
            if executions.contains_key(uid) {
                return Err(RuntimedError::AlreadyStarted(uid.to_owned()));
            }
            executions.insert(
                uid.to_owned(),
                Execution {
                    run_name: run_name.to_owned(),
                    attempt: 1,
                    stdout: BoundedBuffer::new(self.inner.output_limit),
                    stderr: BoundedBuffer::new(self.inner.output_limit),
                    written: [0, 0],
                },
            );
        }
        self.own_log(&format!("Claimed run {run_name}"))
    }

    /// The Run's program prints `text` (any bytes of lines, complete or not) on `stream`.
    pub fn print(&self, uid: &str, stream: Stream, text: &str) -> Result<(), RuntimedError> {
        let mut executions = lock(&self.inner.executions);
        let exec = executions
            .get_mut(uid)
            .ok_or_else(|| RuntimedError::UnknownExecution(uid.to_owned()))?;
        let run_name = exec.run_name.clone();
        let (buffer, written) = exec.buffer(stream);
        buffer.write(text.as_bytes());
        if self.inner.mode == Mode::Live {
            // Every complete line not yet written; a partial one waits for its newline.
            let kept = buffer.kept();
            let Some(end) = kept.iter().rposition(|&b| b == b'\n').map(|i| i + 1) else {
                return Ok(());
            };
            if end <= *written {
                return Ok(());
            }
            let fresh = String::from_utf8_lossy(&kept[*written..end]).into_owned();
            *written = end;
            let messages = stream_messages(&fresh);
            let mut sink = lock(&self.inner.sink);
            self.write_records(&mut sink, uid, &run_name, stream, &messages)?;
        }
        Ok(())
    }

    /// A new attempt of the Run: the runtime starts it with empty buffers. In engine mode
    /// nothing of the earlier attempt is ever written; in live mode what was written stays.
    pub fn retry(&self, uid: &str) -> Result<(), RuntimedError> {
        let (name, attempt) = {
            let mut executions = lock(&self.inner.executions);
            let exec = executions
                .get_mut(uid)
                .ok_or_else(|| RuntimedError::UnknownExecution(uid.to_owned()))?;
            exec.attempt += 1;
            exec.stdout = BoundedBuffer::new(self.inner.output_limit);
            exec.stderr = BoundedBuffer::new(self.inner.output_limit);
            exec.written = [0, 0];
            (exec.run_name.clone(), exec.attempt)
        };
        self.own_log(&format!("Retry attempt {attempt} starting for run {name}"))
    }

    /// The Run ends in `phase`: its records are written (engine mode: Succeeded and Failed
    /// only, all at once; live mode: what is left), then the execution is forgotten and the
    /// status endpoint answers NotFound for it.
    pub fn finish(&self, uid: &str, phase: Phase) -> Result<(), RuntimedError> {
        let exec = lock(&self.inner.executions)
            .remove(uid)
            .ok_or_else(|| RuntimedError::UnknownExecution(uid.to_owned()))?;
        self.own_log(&format!("Run {} finished: {phase}", exec.run_name))?;
        let write_all = match self.inner.mode {
            Mode::Engine => phase.writes_output(),
            Mode::Live => true,
        };
        if write_all {
            let mut sink = lock(&self.inner.sink);
            for (stream, buffer, written) in [
                (Stream::Stdout, &exec.stdout, exec.written[0]),
                (Stream::Stderr, &exec.stderr, exec.written[1]),
            ] {
                let view = buffer.view();
                let rest = String::from_utf8_lossy(&view[written.min(view.len())..]).into_owned();
                let messages = stream_messages(&rest);
                self.write_records(&mut sink, uid, &exec.run_name, stream, &messages)?;
            }
        }
        self.own_log(&format!("forgot execution {uid}"))
    }

    /// What the status endpoint answers for `uid`: None once it is forgotten (or never ran).
    pub fn status(&self, uid: &str) -> Option<StatusResponse> {
        let executions = lock(&self.inner.executions);
        let exec = executions.get(uid)?;
        Some(StatusResponse {
            id: uid.to_owned(),
            state: ExecutionState::Running as i32,
            exit_code: 0,
            stdout: String::from_utf8_lossy(&exec.stdout.view()).into_owned(),
            stderr: String::from_utf8_lossy(&exec.stderr.view()).into_owned(),
            error_message: String::new(),
        })
    }

    /// The Run UIDs with an execution.
    pub fn executions(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.inner.executions).keys().cloned().collect();
        ids.sort();
        ids
    }

    /// The status endpoint's counters.
    pub fn counters(&self) -> StatusCounters {
        lock(&self.inner.counters).clone()
    }

    /// Status requests served for `uid`.
    pub fn status_requests(&self, uid: &str) -> u64 {
        lock(&self.inner.counters)
            .by_id
            .get(uid)
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn count_request(&self, id: Option<&str>) {
        let mut counters = lock(&self.inner.counters);
        counters.requests += 1;
        if let Some(id) = id {
            *counters.by_id.entry(id.to_owned()).or_default() += 1;
        }
    }

    /// What a memory sink holds (empty for other sinks).
    pub fn written(&self) -> Vec<LogLine> {
        match &*lock(&self.inner.sink) {
            SinkState::Memory(lines) => lines.clone(),
            _ => Vec::new(),
        }
    }

    /// runtimed's container restarted (its memory limit, its liveness probe): with a file
    /// sink, the current log becomes the previous container's log (replacing an older one, as
    /// the kubelet keeps one) and a new log starts with the new process's start line. The
    /// executions live in the runtime container and survive, as they do in a Pod.
    pub fn restart_container(&self) -> Result<(), RuntimedError> {
        {
            let sink = lock(&self.inner.sink);
            let SinkState::CriFile(path) = &*sink else {
                return Err(RuntimedError::NotAFile);
            };
            match std::fs::rename(path, previous_log_path(path)) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::File::create(previous_log_path(path))?;
                }
                Err(err) => return Err(err.into()),
            }
        }
        self.inner.restarts.fetch_add(1, Ordering::SeqCst);
        self.log_started()
    }

    /// Container restarts simulated so far.
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::SeqCst)
    }

    pub(crate) fn from_parts(inner: Arc<Inner>, servers: Arc<Servers>) -> Self {
        Self { inner, servers }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> PodIdentity {
        PodIdentity {
            namespace: "team-a".into(),
            runtime: "bash".into(),
            pod: "bash-0".into(),
        }
    }

    fn memory(mode: Mode) -> Runtimed {
        Runtimed::new(RuntimedConfig::new(identity(), Sink::Memory).mode(mode))
    }

    /// The messages of the records written for `uid`, as (stream, message).
    fn records(r: &Runtimed, uid: &str) -> Vec<(String, String)> {
        r.written()
            .into_iter()
            .filter(|l| l.stream == Stream::Stdout)
            .map(|l| serde_json::from_str::<serde_json::Value>(&l.text).expect("JSON record"))
            .filter(|v| v["run_uid"] == uid)
            .map(|v| {
                (
                    v["stream"].as_str().unwrap_or_default().to_owned(),
                    v["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(s, m)| ((*s).to_owned(), (*m).to_owned()))
            .collect()
    }

    #[test]
    fn messages_split_as_emit_stream_does() {
        assert_eq!(stream_messages("a\nb\n"), ["a", "b"]);
        assert_eq!(stream_messages("a\n\n\nb"), ["a", "b"]);
        // Only one trailing newline is trimmed; empty lines are skipped anyway.
        assert_eq!(stream_messages("a\n\n"), ["a"]);
        assert_eq!(stream_messages("a\r\nb\r\n"), ["a", "b"]);
        // The "\r" is trimmed after the empty check: a line of only "\r" is written, empty.
        assert_eq!(stream_messages("a\n\r\nb"), ["a", "", "b"]);
        assert_eq!(stream_messages("a\r\r\n"), ["a\r"]);
        assert!(stream_messages("").is_empty());
        assert!(stream_messages("\n").is_empty());
    }

    #[test]
    fn a_record_is_runtimeds_json_line() {
        let line = record_json(&identity(), "u-1", "run-1", Stream::Stderr, "a <b> & \"c\"");
        assert_eq!(
            line,
            r#"{"run_uid":"u-1","run_name":"run-1","namespace":"team-a","runtime":"bash","pod":"bash-0","stream":"stderr","message":"a \u003cb\u003e \u0026 \"c\""}"#
        );
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["message"], "a <b> & \"c\"");
    }

    #[test]
    fn the_buffer_keeps_its_limit_and_then_reads_with_the_marker() {
        let mut b = BoundedBuffer::new(5);
        b.write(b"abc");
        assert_eq!(b.view(), b"abc");
        b.write(b"de");
        assert_eq!(b.view(), b"abcde", "exactly the limit is not truncated");
        b.write(b"f");
        assert_eq!(b.view(), b"abcde\n[output truncated]\n");
        let mut zero = BoundedBuffer::new(0);
        zero.write(b"");
        assert_eq!(zero.view(), b"");
        zero.write(b"x");
        assert_eq!(zero.view(), TRUNCATED_MARKER.as_bytes());
    }

    #[test]
    fn engine_mode_writes_at_the_end_stdout_then_stderr() {
        let r = memory(Mode::Engine);
        r.start("u-1", "run-1").unwrap();
        r.print("u-1", Stream::Stderr, "warn 1\n").unwrap();
        r.print("u-1", Stream::Stdout, "one\ntw").unwrap();
        r.print("u-1", Stream::Stdout, "o\r\n\nthree").unwrap();
        assert!(records(&r, "u-1").is_empty(), "nothing while it runs");
        let status = r.status("u-1").expect("running");
        assert_eq!(status.state, ExecutionState::Running as i32);
        assert_eq!(status.stdout, "one\ntwo\r\n\nthree");
        assert_eq!(status.stderr, "warn 1\n");
        r.finish("u-1", Phase::Failed).unwrap();
        assert_eq!(
            records(&r, "u-1"),
            pairs(&[
                ("stdout", "one"),
                ("stdout", "two"),
                ("stdout", "three"),
                ("stderr", "warn 1")
            ])
        );
        assert!(r.status("u-1").is_none(), "forgotten");
        assert!(matches!(
            r.print("u-1", Stream::Stdout, "late\n"),
            Err(RuntimedError::UnknownExecution(_))
        ));
        // runtimed's own text went to stderr, not as records.
        let own: Vec<String> = r
            .written()
            .into_iter()
            .filter(|l| l.stream == Stream::Stderr)
            .map(|l| l.text)
            .collect();
        assert!(
            own.iter().any(|l| l.ends_with("] Claimed run run-1")),
            "{own:?}"
        );
        assert!(
            own.iter().any(|l| l.ends_with("] forgot execution u-1")),
            "{own:?}"
        );
        assert!(own.iter().all(|l| l.starts_with('I')), "{own:?}");
    }

    #[test]
    fn timeout_and_cancelled_write_nothing() {
        for phase in [Phase::Timeout, Phase::Cancelled] {
            let r = memory(Mode::Engine);
            r.start("u-1", "run-1").unwrap();
            r.print("u-1", Stream::Stdout, "one\ntwo\n").unwrap();
            r.finish("u-1", phase).unwrap();
            assert!(records(&r, "u-1").is_empty(), "{phase}");
            assert!(r.status("u-1").is_none(), "{phase}");
        }
        let r = memory(Mode::Engine);
        r.start("u-2", "run-2").unwrap();
        r.print("u-2", Stream::Stdout, "ok\n").unwrap();
        r.finish("u-2", Phase::Succeeded).unwrap();
        assert_eq!(records(&r, "u-2"), pairs(&[("stdout", "ok")]));
    }

    #[test]
    fn a_retry_keeps_only_the_last_attempt() {
        let r = memory(Mode::Engine);
        r.start("u-1", "run-1").unwrap();
        r.print("u-1", Stream::Stdout, "attempt 1\n").unwrap();
        r.print("u-1", Stream::Stderr, "boom\n").unwrap();
        r.retry("u-1").unwrap();
        let status = r.status("u-1").expect("running");
        assert_eq!((status.stdout.as_str(), status.stderr.as_str()), ("", ""));
        r.print("u-1", Stream::Stdout, "attempt 2\n").unwrap();
        r.finish("u-1", Phase::Succeeded).unwrap();
        assert_eq!(records(&r, "u-1"), pairs(&[("stdout", "attempt 2")]));
    }

    #[test]
    fn live_mode_writes_each_line_as_it_is_printed() {
        let r = memory(Mode::Live);
        r.start("u-1", "run-1").unwrap();
        r.print("u-1", Stream::Stdout, "one\ntw").unwrap();
        assert_eq!(records(&r, "u-1"), pairs(&[("stdout", "one")]));
        r.print("u-1", Stream::Stdout, "o\r\n").unwrap();
        r.print("u-1", Stream::Stderr, "e1\n\n").unwrap();
        assert_eq!(
            records(&r, "u-1"),
            pairs(&[("stdout", "one"), ("stdout", "two"), ("stderr", "e1")])
        );
        r.print("u-1", Stream::Stdout, "partial").unwrap();
        r.finish("u-1", Phase::Cancelled).unwrap();
        assert_eq!(
            records(&r, "u-1"),
            pairs(&[
                ("stdout", "one"),
                ("stdout", "two"),
                ("stderr", "e1"),
                ("stdout", "partial")
            ])
        );
        assert!(r.status("u-1").is_none());
    }

    #[test]
    fn a_truncated_stream_ends_with_the_marker() {
        for mode in [Mode::Engine, Mode::Live] {
            let r = Runtimed::new(
                RuntimedConfig::new(identity(), Sink::Memory)
                    .mode(mode)
                    .output_limit(10),
            );
            r.start("u-1", "run-1").unwrap();
            r.print("u-1", Stream::Stdout, "12345\n67890abc\nlost\n")
                .unwrap();
            let status = r.status("u-1").expect("running");
            assert_eq!(status.stdout, "12345\n6789\n[output truncated]\n");
            r.finish("u-1", Phase::Succeeded).unwrap();
            assert_eq!(
                records(&r, "u-1"),
                pairs(&[
                    ("stdout", "12345"),
                    ("stdout", "6789"),
                    ("stdout", "[output truncated]")
                ]),
                "{mode:?}"
            );
        }
    }

    #[test]
    fn the_default_limit_is_one_mebibyte() {
        let r = memory(Mode::Engine);
        r.start("u-1", "run-1").unwrap();
        let line = "x".repeat(1023) + "\n";
        for _ in 0..1024 {
            r.print("u-1", Stream::Stdout, &line).unwrap();
        }
        assert!(!r.status("u-1").unwrap().stdout.contains("truncated"));
        r.print("u-1", Stream::Stdout, "y\n").unwrap();
        let out = r.status("u-1").unwrap().stdout;
        assert_eq!(out.len(), DEFAULT_OUTPUT_LIMIT + TRUNCATED_MARKER.len());
        assert!(out.ends_with("x\n\n[output truncated]\n"));
        r.finish("u-1", Phase::Succeeded).unwrap();
        let written = records(&r, "u-1");
        assert_eq!(written.len(), 1025);
        assert_eq!(written[1024].1, "[output truncated]");
    }

    #[test]
    fn start_twice_and_unknown_ids_are_refused() {
        let r = memory(Mode::Engine);
        r.start("u-1", "run-1").unwrap();
        assert!(matches!(
            r.start("u-1", "run-1"),
            Err(RuntimedError::AlreadyStarted(_))
        ));
        assert!(matches!(r.start("", "x"), Err(RuntimedError::EmptyUid)));
        assert!(matches!(
            r.retry("nope"),
            Err(RuntimedError::UnknownExecution(_))
        ));
        assert!(matches!(
            r.finish("nope", Phase::Succeeded),
            Err(RuntimedError::UnknownExecution(_))
        ));
        assert!(matches!(
            r.restart_container(),
            Err(RuntimedError::NotAFile)
        ));
    }

    #[test]
    fn a_file_sink_writes_cri_records_and_a_restart_moves_them_to_previous() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("team-a_bash-0").join("runtimed.log");
        let r = Runtimed::new(RuntimedConfig::new(identity(), Sink::CriFile(path.clone())));
        r.start("u-1", "run-1").unwrap();
        r.print("u-1", Stream::Stdout, "hello\n").unwrap();
        r.finish("u-1", Phase::Succeeded).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let record = lines
            .iter()
            .find(|l| l.contains(" stdout F {"))
            .expect("a record");
        let (stamp, rest) = record.split_once(' ').unwrap();
        assert!(crate::sim::cri::parse_rfc3339(stamp).is_some(), "{stamp}");
        assert!(rest.starts_with("stdout F {\"run_uid\":\"u-1\""), "{rest}");
        assert!(
            lines.iter().filter(|l| l.contains(" stderr F I")).count() >= 3,
            "own text on stderr: {text}"
        );

        r.restart_container().unwrap();
        let previous = std::fs::read_to_string(previous_log_path(&path)).unwrap();
        assert_eq!(previous, text);
        let current = std::fs::read_to_string(&path).unwrap();
        assert_eq!(current.lines().count(), 1, "{current}");
        assert!(current.contains("runtimed controller started"));
        assert_eq!(r.restarts(), 1);
    }

    #[test]
    fn a_long_line_is_cut_into_partial_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.log");
        let at: jiff::Timestamp = "2026-01-02T03:04:05.5Z".parse().unwrap();
        let text = "a".repeat(CRI_MAX_LINE) + "bc";
        append_cri(&path, Stream::Stdout, &text, at).unwrap();
        append_cri(&path, Stream::Stderr, "", at).unwrap();
        let got = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            got,
            format!(
                "2026-01-02T03:04:05.5Z stdout P {}\n2026-01-02T03:04:05.5Z stdout F bc\n2026-01-02T03:04:05.5Z stderr F \n",
                "a".repeat(CRI_MAX_LINE)
            )
        );
    }
}

/// The accept loops of a runtimed's status endpoints, aborted when it is dropped.
#[derive(Default)]
pub struct Servers(pub(crate) Mutex<Vec<tokio::task::AbortHandle>>);

impl Drop for Servers {
    fn drop(&mut self) {
        for handle in self
            .0
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            handle.abort();
        }
    }
}
