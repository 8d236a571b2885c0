//! runtimed-standin: the `runtimed` container of a Runtime Pod for the real-node suites. It
//! writes runtimed's JSON log lines (SPEC §2) for several Runs, interleaved, plus non-JSON noise,
//! to stdout, so the container runtime writes the CRI log and the real kubelet serves it.
//!
//! A plain-HTTP control port lets a test add a line on demand (from the host, through the Pod
//! IP): `POST /lines` with `{"run_uid", "run_name"?, "stream"?, "message", "invocation_id"?}`
//! writes that line and answers it; `POST /noise` writes its body as one raw line;
//! `GET /stats` counts what was written; `GET /healthz`.
#![forbid(unsafe_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use kruntimes_tests::sim::cli::{self, ListenError};
use serde::{Deserialize, Serialize};

/// Writes runtimed log lines for several Runs to stdout; a control port adds lines on demand.
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

/// Stdout, one writer at a time so lines never interleave mid-line.
struct Output {
    args: Args,
    stats: Mutex<Stats>,
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
    tracing::info!(control = %bound, runs = args.runs.len(), "runtimed stand-in writing lines");
    let interval = Duration::from_secs_f64(1.0 / f64::from(args.rate));
    let count = args.count;
    let output = Arc::new(Output {
        args,
        stats: Mutex::new(Stats::default()),
    });

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

async fn stats(State(output): State<Arc<Output>>) -> Json<Stats> {
    Json(*output.stats.lock().unwrap_or_else(|e| e.into_inner()))
}
