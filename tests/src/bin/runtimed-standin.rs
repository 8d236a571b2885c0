//! runtimed-standin: the `runtimed` container of a Runtime Pod for the real-node suites and the
//! cluster demo. Records go to stdout and runtimed's own text to stderr, so the container
//! runtime writes the CRI log and the real kubelet serves it.
//!
//! Executions, as the engine's runtimed has them (`kruntimes_tests::sim::runtimed`): with
//! `--mode engine` (the default, the real engine) a Run's output is written as records only
//! when it ends (Succeeded or Failed; nothing for Timeout and Cancelled, nothing of a retried
//! attempt); with `--mode live` (the seeds' design) each line is written as it is printed.
//! Either way the output so far is served by the gRPC status endpoint on `--status-listen`
//! (`POST /executor.v1.Runtime/Status`, h2c, port 9093 as runtimed's). `--executions` starts
//! executions that print generated lines at `--rate` and end in the phase given.
//!
//! A plain-HTTP control port drives it from the host, through the Pod IP:
//! - `POST /runs/{uid}/start` `{"name"}`, `POST /runs/{uid}/print` `{"stream","data"}`,
//!   `POST /runs/{uid}/retry`, `POST /runs/{uid}/finish` `{"phase"}` (Succeeded, Failed,
//!   Timeout, Cancelled);
//! - `POST /lines` `{"run_uid", "run_name"?, "stream"?, "message", "invocation_id"?}` writes one
//!   record at once, whatever the mode, and answers it; `POST /noise` writes its body as one
//!   raw line; `--runs` generates such records directly (interleaved with noise);
//! - `GET /stats` counts what was written and the status requests served; `GET /healthz`.
#![forbid(unsafe_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use kruntimes_tests::sim::cli::{self, ListenError};
use kruntimes_tests::sim::cri::Stream;
use kruntimes_tests::sim::runtimed::{
    DEFAULT_OUTPUT_LIMIT, Mode, Phase, PodIdentity, Runtimed, RuntimedConfig, RuntimedError, Sink,
    StatusCounters,
};
use serde::{Deserialize, Serialize};

/// Stands in for runtimed: Run records on stdout (at a Run's end in engine mode), its own text
/// on stderr, the gRPC status endpoint, and a control port that drives executions.
#[derive(Debug, Parser)]
#[command(name = "runtimed-standin", version)]
struct Args {
    /// The Runs to write lines for, as NAME=UID pairs separated by commas; their lines are
    /// interleaved round-robin.
    #[arg(long, env = "RUNTIMED_RUNS", value_delimiter = ',', value_parser = parse_run)]
    runs: Vec<RunRef>,
    /// Namespace written into every line (the Pod's namespace).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    namespace: String,
    /// Runtime name written into every line.
    #[arg(long, env = "RUNTIME_NAME", default_value = "standin")]
    runtime: String,
    /// Pod name written into every line (the downward API's metadata.name).
    #[arg(long, env = "POD_NAME", default_value = "standin")]
    pod: String,
    /// Generated lines per second (noise included), 1 to 10000.
    #[arg(long, env = "RUNTIMED_RATE", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    rate: u32,
    /// Generated lines in all, then only the control port writes; 0 generates none.
    #[arg(long, env = "RUNTIMED_COUNT", default_value_t = 1000)]
    count: u64,
    /// Every Nth generated line is non-JSON noise naming a Run UID (0: no noise).
    #[arg(long, env = "RUNTIMED_NOISE_EVERY", default_value_t = 5)]
    noise_every: u64,
    /// Plain-HTTP control address.
    #[arg(long, env = "RUNTIMED_CONTROL_LISTEN", default_value = "0.0.0.0:8080")]
    control_listen: SocketAddr,
    /// When executions write their records: `engine` (at the Run's end, as the real
    /// runtimed) or `live` (each line as it is printed).
    #[arg(long, env = "RUNTIMED_MODE", default_value = "engine")]
    mode: Mode,
    /// Address of runtimed's gRPC status endpoint (h2c).
    #[arg(long, env = "RUNTIMED_STATUS_LISTEN", default_value = "0.0.0.0:9093")]
    status_listen: SocketAddr,
    /// Bytes of each stream an execution keeps (the runtime's limit); the rest is dropped and
    /// the stream ends with "[output truncated]".
    #[arg(long, env = "RUNTIMED_OUTPUT_LIMIT_BYTES", default_value_t = DEFAULT_OUTPUT_LIMIT)]
    output_limit_bytes: usize,
    /// Executions started at once, as NAME=UID or NAME=UID:PHASE separated by commas; each
    /// prints `--execution-lines` generated lines (round-robin at `--rate`, every third on
    /// stderr), then ends in PHASE if one is given, else keeps running.
    #[arg(long, env = "RUNTIMED_EXECUTIONS", value_delimiter = ',', value_parser = parse_execution)]
    executions: Vec<ExecutionRef>,
    /// Lines each of `--executions` prints.
    #[arg(long, env = "RUNTIMED_EXECUTION_LINES", default_value_t = 20)]
    execution_lines: u64,
}

#[derive(Debug, Clone)]
struct ExecutionRef {
    name: String,
    uid: String,
    phase: Option<Phase>,
}

fn parse_execution(s: &str) -> Result<ExecutionRef, String> {
    let (run, phase) = match s.split_once(':') {
        Some((run, phase)) => (run, Some(phase.parse::<Phase>()?)),
        None => (s, None),
    };
    let run = parse_run(run)?;
    Ok(ExecutionRef {
        name: run.name,
        uid: run.uid,
        phase,
    })
}

#[derive(Debug, Clone)]
struct RunRef {
    name: String,
    uid: String,
}

fn parse_run(s: &str) -> Result<RunRef, String> {
    match s.split_once('=') {
        Some((name, uid)) if !name.is_empty() && !uid.is_empty() => Ok(RunRef {
            name: name.to_owned(),
            uid: uid.to_owned(),
        }),
        _ => Err(format!("a Run is NAME=UID, not {s:?}")),
    }
}

/// One runtimed line, fields in runtimed's order.
#[derive(Debug, Serialize)]
struct Line<'a> {
    run_uid: &'a str,
    run_name: &'a str,
    namespace: &'a str,
    runtime: &'a str,
    pod: &'a str,
    stream: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    invocation_id: Option<&'a str>,
}

/// A line asked for through the control port.
#[derive(Debug, Deserialize)]
struct LineRequest {
    run_uid: String,
    #[serde(default)]
    run_name: Option<String>,
    #[serde(default)]
    stream: Option<String>,
    message: String,
    #[serde(default)]
    invocation_id: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
struct Stats {
    json_lines: u64,
    noise_lines: u64,
    generated: u64,
    requested: u64,
}

/// `GET /stats`: the lines written directly, and the executions and status requests.
#[derive(Debug, Serialize)]
struct StatsAnswer {
    #[serde(flatten)]
    lines: Stats,
    mode: &'static str,
    executions: Vec<String>,
    status: StatusCounters,
}

/// Stdout, one writer at a time so lines never interleave mid-line.
struct Output {
    args: Args,
    stats: Mutex<Stats>,
    runtimed: Runtimed,
}

impl Output {
    fn write_raw(&self, line: &str, json: bool, requested: bool) -> std::io::Result<()> {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
        if json {
            stats.json_lines += 1;
        } else {
            stats.noise_lines += 1;
        }
        if requested {
            stats.requested += 1;
        } else {
            stats.generated += 1;
        }
        Ok(())
    }

    fn line(&self, req: &LineRequest) -> String {
        let name = req.run_name.clone().unwrap_or_else(|| {
            self.args
                .runs
                .iter()
                .find(|r| r.uid == req.run_uid)
                .map(|r| r.name.clone())
                .unwrap_or_default()
        });
        let line = Line {
            run_uid: &req.run_uid,
            run_name: &name,
            namespace: &self.args.namespace,
            runtime: &self.args.runtime,
            pod: &self.args.pod,
            stream: req.stream.as_deref().unwrap_or("stdout"),
            message: &req.message,
            invocation_id: req.invocation_id.as_deref(),
        };
        serde_json::to_string(&line).unwrap_or_default()
    }

    /// The nth generated line (from 1): noise every `noise_every`, else the next Run's line.
    fn generated(&self, n: u64) -> (String, bool) {
        let runs = &self.args.runs;
        if runs.is_empty() {
            return (format!("runtimed: line {n}, no Run configured"), false);
        }
        let run = &runs[(n as usize - 1) % runs.len()];
        if self.args.noise_every > 0 && n.is_multiple_of(self.args.noise_every) {
            return (
                format!("runtimed: heartbeat {n}, not JSON, mentions {}", run.uid),
                false,
            );
        }
        let stream = if n.is_multiple_of(3) {
            "stderr"
        } else {
            "stdout"
        };
        let invocation = format!("inv-{}", n / 4);
        let req = LineRequest {
            run_uid: run.uid.clone(),
            run_name: Some(run.name.clone()),
            stream: Some(stream.to_owned()),
            message: format!("line {n} of {}", run.name),
            invocation_id: n.is_multiple_of(2).then_some(invocation),
        };
        (self.line(&req), true)
    }
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error("control API failed: {0}")]
    Control(std::io::Error),
    #[error("cannot serve the status endpoint on {addr}: {source}")]
    Status {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start execution {name}: {source}")]
    Execution { name: String, source: RuntimedError },
}

#[tokio::main]
async fn main() -> ExitCode {
    cli::init_tracing();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("runtimed-standin: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Error> {
    let (listener, bound) = cli::bind(args.control_listen).await?;
    let identity = PodIdentity {
        namespace: args.namespace.clone(),
        runtime: args.runtime.clone(),
        pod: args.pod.clone(),
    };
    let runtimed = Runtimed::new(
        RuntimedConfig::new(identity, Sink::Stdio)
            .mode(args.mode)
            .output_limit(args.output_limit_bytes),
    );
    let status = runtimed
        .serve_status(args.status_listen)
        .await
        .map_err(|source| Error::Status {
            addr: args.status_listen,
            source,
        })?;
    tracing::info!(control = %bound, %status, mode = ?args.mode, runs = args.runs.len(),
        executions = args.executions.len(), "runtimed stand-in started");
    for exec in &args.executions {
        runtimed
            .start(&exec.uid, &exec.name)
            .map_err(|source| Error::Execution {
                name: exec.name.clone(),
                source,
            })?;
    }
    let interval = Duration::from_secs_f64(1.0 / f64::from(args.rate));
    let count = args.count;
    let output = Arc::new(Output {
        args,
        stats: Mutex::new(Stats::default()),
        runtimed,
    });
    if !output.args.executions.is_empty() {
        tokio::spawn(print_executions(Arc::clone(&output), interval));
    }

    let generator = Arc::clone(&output);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for n in 1..=count {
            tick.tick().await;
            let (line, json) = generator.generated(n);
            if let Err(err) = generator.write_raw(&line, json, false) {
                tracing::error!("cannot write to stdout: {err}");
                return;
            }
        }
        tracing::info!(count, "generated every line");
    });

    let app = Router::new()
        .route("/runs/{uid}/start", post(start_run))
        .route("/runs/{uid}/print", post(print_run))
        .route("/runs/{uid}/retry", post(retry_run))
        .route("/runs/{uid}/finish", post(finish_run))
        .route("/lines", post(add_line))
        .route("/noise", post(add_noise))
        .route("/stats", get(stats))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(output);
    axum::serve(listener, app)
        .with_graceful_shutdown(cli::shutdown_signal())
        .await
        .map_err(Error::Control)
}

async fn add_line(State(output): State<Arc<Output>>, Json(req): Json<LineRequest>) -> Response {
    if req.run_uid.is_empty() {
        return (StatusCode::BAD_REQUEST, "run_uid must not be empty\n").into_response();
    }
    let line = output.line(&req);
    write_answer(&output, line, true)
}

async fn add_noise(State(output): State<Arc<Output>>, body: String) -> Response {
    if body.contains('\n') {
        return (StatusCode::BAD_REQUEST, "a noise line has no newline\n").into_response();
    }
    write_answer(&output, body, false)
}

fn write_answer(output: &Output, line: String, json: bool) -> Response {
    match output.write_raw(&line, json, true) {
        Ok(()) => (StatusCode::OK, format!("{line}\n")).into_response(),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write to stdout: {err}\n"),
        )
            .into_response(),
    }
}

async fn stats(State(output): State<Arc<Output>>) -> Json<StatsAnswer> {
    let lines = *output.stats.lock().unwrap_or_else(|e| e.into_inner());
    Json(StatsAnswer {
        lines,
        mode: match output.runtimed.mode() {
            Mode::Engine => "engine",
            Mode::Live => "live",
        },
        executions: output.runtimed.executions(),
        status: output.runtimed.counters(),
    })
}

/// `--executions`: each prints its lines in turn, at the generator's rate, then ends.
async fn print_executions(output: Arc<Output>, interval: Duration) {
    let execs = output.args.executions.clone();
    let lines = output.args.execution_lines;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 1..=lines {
        for exec in &execs {
            tick.tick().await;
            let stream = if n.is_multiple_of(3) {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            let text = format!("step {n} of {}\n", exec.name);
            if let Err(err) = output.runtimed.print(&exec.uid, stream, &text) {
                tracing::warn!(run = %exec.name, "cannot print: {err}");
            }
        }
    }
    for exec in &execs {
        if let Some(phase) = exec.phase
            && let Err(err) = output.runtimed.finish(&exec.uid, phase)
        {
            tracing::warn!(run = %exec.name, "cannot finish: {err}");
        }
    }
}

#[derive(Debug, Deserialize)]
struct StartRequest {
    name: String,
}

#[derive(Debug, Deserialize)]
struct PrintRequest {
    stream: String,
    data: String,
}

#[derive(Debug, Deserialize)]
struct FinishRequest {
    phase: String,
}

fn refused(err: RuntimedError) -> Response {
    let status = match err {
        RuntimedError::UnknownExecution(_) => StatusCode::NOT_FOUND,
        RuntimedError::AlreadyStarted(_) => StatusCode::CONFLICT,
        RuntimedError::EmptyUid | RuntimedError::NotAFile => StatusCode::BAD_REQUEST,
        RuntimedError::Write(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, format!("{err}\n")).into_response()
}

fn done(result: Result<(), RuntimedError>) -> Response {
    match result {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(err) => refused(err),
    }
}

async fn start_run(
    State(output): State<Arc<Output>>,
    Path(uid): Path<String>,
    Json(req): Json<StartRequest>,
) -> Response {
    if req.name.is_empty() {
        return (StatusCode::BAD_REQUEST, "name must not be empty\n").into_response();
    }
    done(output.runtimed.start(&uid, &req.name))
}

async fn print_run(
    State(output): State<Arc<Output>>,
    Path(uid): Path<String>,
    Json(req): Json<PrintRequest>,
) -> Response {
    let Some(stream) = Stream::parse(&req.stream).filter(|_| req.stream.starts_with('s')) else {
        return (
            StatusCode::BAD_REQUEST,
            format!("a stream is stdout or stderr, not {:?}\n", req.stream),
        )
            .into_response();
    };
    done(output.runtimed.print(&uid, stream, &req.data))
}

async fn retry_run(State(output): State<Arc<Output>>, Path(uid): Path<String>) -> Response {
    done(output.runtimed.retry(&uid))
}

async fn finish_run(
    State(output): State<Arc<Output>>,
    Path(uid): Path<String>,
    Json(req): Json<FinishRequest>,
) -> Response {
    let phase = match req.phase.parse::<Phase>() {
        Ok(phase) => phase,
        Err(err) => return (StatusCode::BAD_REQUEST, format!("{err}\n")).into_response(),
    };
    done(output.runtimed.finish(&uid, phase))
}
