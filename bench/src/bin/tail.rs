//! Tail of one Run out of a 1 GiB interleaved Pod log, against the real
//! control plane of `hack/testenv`.
//!
//! ```sh
//! eval "$(KRT_PROFILE=release hack/testenv up --with-console --state target/bench-env)"
//! cargo run --release -p kruntimes-bench --bin bench-tail -- --state target/bench-env
//! ```
//!
//! Writes a CRI-format `runtimed` log (`<RFC3339Nano> stdout F <json>`) of
//! `--size-gib` for one Runtime Pod, timestamps spread over `--hours`, with
//! many Runs interleaved and the Runs under test. The Runs are created first
//! and the log is laid out around their `creationTimestamp`: 90% of the log's
//! bytes are older than the Runs, the last 10% newer (the last line is about
//! 12 minutes after the Runs were created, for a 2-hour log), so a Run without
//! `startTime` has its creation at 90%, as a Run that was created, then
//! started logging, has.
//!
//! | Run | records | startTime | completionTime |
//! | --- | --- | --- | --- |
//! | `late-dense` | ~2,560 in the last 10% | at 90% | — |
//! | `late-sparse` | ~320 in the last 10% | at 90% | — |
//! | `nostart-sparse` | ~320 in the last 10% | — (creationTimestamp at 90%) | — |
//! | `nostart-dense` | ~2,560 in the last 10% | — (creationTimestamp at 90%) | — |
//! | `late-done` | ~1,300 from 90% to 95% | at 90% | at 95% |
//!
//! Each pass, per Run, times `kubectl get --raw …/log?tailLines=500` (viewer
//! token) and `kubectl logs POD -c runtimed | jq -c 'select(.run_uid=="UID")'
//! | tail -n 500` one after the other, in alternating order, so both see the
//! same machine. For each request the Console's
//! `kruntimes_console_log_read_bytes_total` delta is the Pod log it read; it
//! is set against the Run's window: the bytes of the log from
//! max(`startTime`, `creationTimestamp`) minus the server's clock-skew margin
//! to `completionTime` (or the end of the log). Every answer is checked
//! against the records the generator wrote. The log and the objects are kept
//! in the state directory for reruns (`--regenerate` makes new ones); the
//! generator's time is never part of a measurement.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::http::TlsTarget;
use kruntimes_bench::lines::{LineGen, RunIdentity, rfc3339_nano};
use kruntimes_bench::metrics;
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::stats;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Parser, Debug)]
#[command(
    about = "Tail of a Run out of a large interleaved Pod log, through the real control plane"
)]
struct Args {
    /// The `hack/testenv` state directory.
    #[arg(long, default_value = "target/bench-env")]
    state: PathBuf,
    #[arg(long, default_value = "team-a")]
    namespace: String,
    /// Size of the Pod log, in GiB.
    #[arg(long, default_value_t = 1.0)]
    size_gib: f64,
    /// The log's timestamps cover this many hours up to now.
    #[arg(long, default_value_t = 2)]
    hours: i64,
    /// `tailLines` asked for.
    #[arg(long, default_value_t = 500)]
    tail_lines: usize,
    /// Passes; each times, per Run, one request through kubectl and one run of
    /// the `kubectl logs | jq | tail` pipeline, in alternating order.
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Leave the pipeline out of the passes (the API requests alone).
    #[arg(long)]
    no_pipeline: bool,
    /// Timed requests per Run straight to the aggregated listener, after the passes.
    #[arg(long, default_value_t = 0)]
    direct_passes: usize,
    /// Follow requests per Run, timed until their history (the tail) has arrived.
    #[arg(long, default_value_t = 0)]
    follow_passes: usize,
    /// Measure only these Runs (by key); by default the three of the report
    /// (`late-dense,late-sparse,nostart-sparse`); `all` for every Run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "late-dense,late-sparse,nostart-sparse"
    )]
    only: Vec<String>,
    /// Generate a new log and new objects even when a previous setup exists.
    #[arg(long)]
    regenerate: bool,
    /// The Console's clock-skew margin (`--log-clock-skew`, 5 s by default):
    /// the window of a Run starts this long before max(startTime, creationTimestamp).
    #[arg(long, default_value_t = 5)]
    clock_skew_secs: i64,
    /// Give up on one request after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
}

/// One Run under test and what the generator wrote for it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct TargetRun {
    key: String,
    name: String,
    uid: String,
    /// Share of the log's bytes where its records are.
    from: f64,
    to: f64,
    with_start: bool,
    completed: bool,
    /// `metadata.creationTimestamp`.
    created: String,
    start_time: Option<String>,
    completion_time: Option<String>,
    records: u64,
    /// The messages of its last records, oldest first (at most the tail asked for).
    last: Vec<String>,
}

/// What `--regenerate` made; reused by later runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Setup {
    pod: String,
    pod_uid: String,
    log_path: PathBuf,
    log_bytes: u64,
    /// Bytes `kubectl logs` returns (the runtimed content without the CRI prefix).
    content_bytes: u64,
    lines: u64,
    other_runs: u64,
    first_time: String,
    last_time: String,
    tail_lines: usize,
    runs: Vec<TargetRun>,
}

struct Plan {
    key: &'static str,
    from: f64,
    to: f64,
    /// Records per line of its region, or a fixed count spread over it.
    density: Density,
    with_start: bool,
    completed: bool,
}

enum Density {
    Count(u64),
}

const PLANS: &[Plan] = &[
    Plan {
        key: "late-dense",
        from: CREATED_AT,
        to: 1.0,
        density: Density::Count(2564),
        with_start: true,
        completed: false,
    },
    Plan {
        key: "late-sparse",
        from: CREATED_AT,
        to: 1.0,
        density: Density::Count(321),
        with_start: true,
        completed: false,
    },
    Plan {
        key: "nostart-sparse",
        from: CREATED_AT,
        to: 1.0,
        density: Density::Count(321),
        with_start: false,
        completed: false,
    },
    Plan {
        key: "nostart-dense",
        from: CREATED_AT,
        to: 1.0,
        density: Density::Count(2564),
        with_start: false,
        completed: false,
    },
    Plan {
        key: "late-done",
        from: CREATED_AT,
        to: 0.95,
        density: Density::Count(1300),
        with_start: true,
        completed: true,
    },
];

/// Where in the log (share of its bytes) the Runs under test are created.
const CREATED_AT: f64 = 0.90;
/// Interleaved Runs at any moment.
const ACTIVE_RUNS: usize = 64;
/// Rough size of one CRI line, to turn a record count into a share.
const EST_LINE_BYTES: f64 = 395.0;

fn setup_path(env: &BenchEnv) -> Result<PathBuf> {
    Ok(env.state()?.join("bench-tail.json"))
}

async fn load_setup(env: &BenchEnv, fx: &Fixtures, args: &Args) -> Result<Option<Setup>> {
    let path = setup_path(env)?;
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let Ok(setup) = serde_json::from_str::<Setup>(&text) else {
        eprintln!("bench-tail: previous setup is of another format; generating a new one");
        return Ok(None);
    };
    let plans_ok = PLANS
        .iter()
        .all(|p| setup.runs.iter().any(|r| r.key == p.key));
    let size_ok = std::fs::metadata(&setup.log_path)
        .map(|m| m.len() == setup.log_bytes)
        .unwrap_or(false);
    let pod_ok = fx.pod_uid(&setup.pod).await?.as_deref() == Some(setup.pod_uid.as_str());
    let mut runs_ok = true;
    for r in &setup.runs {
        runs_ok &= fx.run_uid(&r.name).await?.as_deref() == Some(r.uid.as_str());
    }
    let wanted = (args.size_gib * (1u64 << 30) as f64) as u64;
    if size_ok
        && plans_ok
        && pod_ok
        && runs_ok
        && setup.tail_lines == args.tail_lines
        && setup.log_bytes >= wanted
    {
        Ok(Some(setup))
    } else {
        eprintln!("bench-tail: previous setup does not match; generating a new one");
        Ok(None)
    }
}

async fn remove_setup(env: &BenchEnv, fx: &Fixtures) -> Result<()> {
    let path = setup_path(env)?;
    // Read loosely: a setup written by an older version of this bench is removed too.
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(old) = serde_json::from_str::<Value>(&text)
    {
        for r in old["runs"].as_array().into_iter().flatten() {
            if let Some(name) = r["name"].as_str() {
                fx.delete_run(name).await?;
            }
        }
        if let Some(pod) = old["pod"].as_str() {
            fx.delete_pod(pod).await?;
        }
        if let Some(dir) = old["log_path"]
            .as_str()
            .and_then(|p| PathBuf::from(p).parent().map(PathBuf::from))
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}

/// A Run under test while the log is written.
struct Writing {
    plan: &'static Plan,
    run: RunIdentity,
    created: jiff::Timestamp,
    share: f64,
    records: u64,
    last: VecDeque<String>,
}

async fn generate(env: &BenchEnv, fx: &Fixtures, args: &Args) -> Result<Setup> {
    remove_setup(env, fx).await?;
    let mut seed_rng = rand::rng();
    let suffix = format!("{:06x}", seed_rng.random::<u32>() & 0xff_ffff);
    let pod = format!("bench-tail-{suffix}");
    let pod_uid = fx.create_pod(&pod, "python").await?;
    let log_bytes_target = (args.size_gib * (1u64 << 30) as f64) as u64;
    let mut g = LineGen::new(seed_rng.random(), &fx.ns, "python", &pod);

    let mut targets = Vec::new();
    for plan in PLANS {
        let name = format!("bench-{}-{suffix}", plan.key);
        let (uid, created) = fx.create_run_stamped(&name, "python").await?;
        let region_lines = (plan.to - plan.from) * log_bytes_target as f64 / EST_LINE_BYTES;
        let share = match plan.density {
            Density::Count(n) => n as f64 / region_lines,
        };
        targets.push(Writing {
            plan,
            run: RunIdentity {
                uid,
                name,
                invocation: None,
            },
            created,
            share,
            records: 0,
            last: VecDeque::new(),
        });
    }
    // The log's clock: its line at CREATED_AT of the bytes is stamped one
    // second after the last Run was created (creationTimestamp has whole
    // seconds), so every record of a Run is newer than the Run.
    let created_max = targets
        .iter()
        .map(|t| t.created)
        .max()
        .context("no Run under test")?;

    let log_path = fx.log_path(&pod);
    std::fs::create_dir_all(log_path.parent().context("log dir")?)?;
    let file = std::fs::File::create(&log_path)?;
    let mut out = std::io::BufWriter::with_capacity(8 << 20, file);
    let span = jiff::SignedDuration::from_hours(args.hours);
    let begin = created_max + jiff::SignedDuration::from_secs(1)
        - jiff::SignedDuration::from_secs_f64(span.as_secs_f64() * CREATED_AT);
    let time_at =
        |frac: f64| begin + jiff::SignedDuration::from_secs_f64(span.as_secs_f64() * frac);

    let mut slots: Vec<(RunIdentity, u32)> = (0..ACTIVE_RUNS)
        .map(|_| {
            let r = g.other_run();
            let n = g.rng().random_range(500..4000);
            (r, n)
        })
        .collect();
    let mut other_runs = ACTIVE_RUNS as u64;
    let (mut written, mut content_bytes, mut lines) = (0u64, 0u64, 0u64);
    let mut line = Vec::with_capacity(512);
    let t0 = Instant::now();
    let (mut first_time, mut last_time) = (String::new(), String::new());
    while written < log_bytes_target {
        let frac = written as f64 / log_bytes_target as f64;
        let ts = rfc3339_nano(time_at(frac));
        let u: f64 = g.rng().random();
        let mut acc = 0.0;
        let mut chosen = None;
        for (i, t) in targets.iter().enumerate() {
            if frac >= t.plan.from && frac < t.plan.to {
                acc += t.share;
                if u < acc {
                    chosen = Some(i);
                    break;
                }
            }
        }
        let msg = g.message();
        line.clear();
        match chosen {
            Some(i) => {
                let run = targets[i].run.clone();
                g.write_line(&run, &msg, &mut line);
                let t = &mut targets[i];
                t.records += 1;
                t.last.push_back(msg);
                if t.last.len() > args.tail_lines {
                    t.last.pop_front();
                }
            }
            None => {
                let slot = g.rng().random_range(0..slots.len());
                if slots[slot].1 == 0 {
                    let r = g.other_run();
                    let n = g.rng().random_range(500..4000);
                    slots[slot] = (r, n);
                    other_runs += 1;
                }
                slots[slot].1 -= 1;
                let run = slots[slot].0.clone();
                g.write_line(&run, &msg, &mut line);
            }
        }
        out.write_all(ts.as_bytes())?;
        out.write_all(b" stdout F ")?;
        out.write_all(&line)?;
        out.write_all(b"\n")?;
        written += ts.len() as u64 + 10 + line.len() as u64 + 1;
        content_bytes += line.len() as u64 + 1;
        lines += 1;
        if first_time.is_empty() {
            first_time = ts.clone();
        }
        last_time = ts;
    }
    out.flush()?;
    drop(out);
    eprintln!(
        "bench-tail: wrote {} ({:.0} MiB, {lines} lines, {other_runs} other Runs) in {:.1}s",
        log_path.display(),
        written as f64 / (1 << 20) as f64,
        t0.elapsed().as_secs_f64()
    );

    let seconds = |frac: f64| time_at(frac).strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut runs = Vec::new();
    for t in targets {
        let start_time = t.plan.with_start.then(|| seconds(t.plan.from));
        let completion_time = t.plan.completed.then(|| {
            // Rounded up, so it is not before the last record.
            let at = time_at(t.plan.to) + jiff::SignedDuration::from_secs(1);
            at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
        });
        let mut status = json!({
            "phase": if t.plan.completed { "Succeeded" } else { "Running" },
            "assignedPod": pod,
            "assignedPodUID": pod_uid,
            "attempt": 1,
        });
        if let Some(s) = &start_time {
            status["startTime"] = json!(s);
        }
        if let Some(c) = &completion_time {
            status["completionTime"] = json!(c);
        }
        fx.set_run_status(&t.run.name, status).await?;
        runs.push(TargetRun {
            key: t.plan.key.to_owned(),
            name: t.run.name,
            uid: t.run.uid,
            from: t.plan.from,
            to: t.plan.to,
            with_start: t.plan.with_start,
            completed: t.plan.completed,
            start_time,
            completion_time,
            created: t.created.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            records: t.records,
            last: t.last.into(),
        });
    }
    let setup = Setup {
        pod,
        pod_uid,
        log_path,
        log_bytes: written,
        content_bytes,
        lines,
        other_runs,
        first_time,
        last_time,
        tail_lines: args.tail_lines,
        runs,
    };
    std::fs::write(setup_path(env)?, serde_json::to_vec_pretty(&setup)?)?;
    Ok(setup)
}

/// One measured request.
#[derive(Debug)]
struct Sample {
    wall: Duration,
    bytes_read: f64,
    rss_before: u64,
    rss_peak: u64,
    rss_after: u64,
    records: usize,
    truncated_by: Option<String>,
    /// CPU seconds used during the request by the Console, kube-apiserver and the fake kubelet.
    cpu: [f64; 3],
    /// `containerLogs` requests the fake kubelet served for it and their bytes,
    /// from its `<container>.requests` record (builds whose kubelet keeps one).
    kubelet: Option<(u64, u64)>,
}

/// The fake kubelet's record of the `containerLogs` requests of a Pod's
/// `runtimed` container: one JSON line per request opened and closed (with
/// the bytes served).
fn requests_path(setup: &Setup) -> PathBuf {
    setup.log_path.with_file_name("runtimed.requests")
}

fn requests_len(setup: &Setup) -> u64 {
    std::fs::metadata(requests_path(setup)).map_or(0, |m| m.len())
}

/// Requests opened and bytes served (by closed requests) after offset `from` of the record.
fn kubelet_served(setup: &Setup, from: u64) -> Option<(u64, u64)> {
    let text = std::fs::read(requests_path(setup)).ok()?;
    let tail = text.get(from as usize..)?;
    let (mut opened, mut bytes) = (0, 0);
    for line in tail.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).ok()?;
        match v["event"].as_str() {
            Some("open") => opened += 1,
            Some("close") => bytes += v["bytes"].as_u64().unwrap_or(0),
            _ => {}
        }
    }
    Some((opened, bytes))
}

const PROCESSES: [&str; 3] = ["console", "kube-apiserver", "kubelet"];

fn cpu_now(env: &BenchEnv) -> Result<[f64; 3]> {
    let mut out = [0.0; 3];
    for (o, name) in out.iter_mut().zip(PROCESSES) {
        *o = procfs::cpu_seconds(env.pid(name)?)?;
    }
    Ok(out)
}

fn check_records(body: &[u8], run: &TargetRun) -> Result<(usize, Option<String>)> {
    let v: Value = serde_json::from_slice(body).with_context(|| {
        format!(
            "not JSON: {}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        )
    })?;
    let records = v["records"].as_array().context("no records")?;
    let messages: Vec<&str> = records
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default())
        .collect();
    ensure!(
        messages == run.last.iter().map(String::as_str).collect::<Vec<_>>(),
        "{}: the API returned {} records that differ from the {} last written",
        run.key,
        messages.len(),
        run.last.len()
    );
    Ok((records.len(), v["truncatedBy"].as_str().map(str::to_owned)))
}

async fn measured<F, Fut>(
    env: &BenchEnv,
    setup: &Setup,
    run: &TargetRun,
    request: F,
) -> Result<Sample>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<u8>>>,
{
    let pid = env.pid("console")?;
    let admin = env.var("CONSOLE_ADMIN_URL")?.to_owned();
    procfs::reset_peak(pid)?;
    let before = procfs::memory(pid)?;
    let c0 = metrics::scrape(&admin).await?;
    let requests0 = requests_len(setup);
    let cpu0 = cpu_now(env)?;
    let t0 = Instant::now();
    let body = request().await?;
    let wall = t0.elapsed();
    let cpu1 = cpu_now(env)?;
    // The kubelet records a request when its response is dropped; give it a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c1 = metrics::scrape(&admin).await?;
    let after = procfs::memory(pid)?;
    let (records, truncated_by) = check_records(&body, run)?;
    Ok(Sample {
        wall,
        bytes_read: c1.log_bytes_read - c0.log_bytes_read,
        rss_before: before.rss_kib,
        rss_peak: after.hwm_kib,
        rss_after: after.rss_kib,
        records,
        truncated_by,
        cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], cpu1[2] - cpu0[2]],
        kubelet: kubelet_served(setup, requests0),
    })
}

/// Opens a follow stream, waits for the last record of the history, then
/// closes it: time, Pod log bytes read meanwhile, and the Console's peak RSS.
async fn follow_history(
    env: &BenchEnv,
    direct: &TlsTarget,
    path: &str,
    token: &str,
    run: &TargetRun,
    timeout: Duration,
) -> Result<(Duration, f64, u64)> {
    let pid = env.pid("console")?;
    let admin = env.var("CONSOLE_ADMIN_URL")?.to_owned();
    procfs::reset_peak(pid)?;
    let c0 = metrics::scrape(&admin).await?;
    let t0 = Instant::now();
    let resp = tokio::time::timeout(timeout, direct.get(path, token)).await??;
    ensure!(resp.status == 200, "status {}", resp.status);
    let mut body = resp.body;
    let mut buf = Vec::new();
    let mut got = 0usize;
    let want = run.last.len();
    let deadline = tokio::time::Instant::now() + timeout;
    while got < want {
        let piece = tokio::time::timeout_at(deadline, body.next())
            .await??
            .context("the follow stream ended before its history")?;
        buf.extend_from_slice(&piece);
        while let Some(nl) = memchr::memchr(b'\n', &buf) {
            buf.drain(..=nl);
            got += 1;
        }
    }
    let wall = t0.elapsed();
    drop(body);
    // The counter is updated as lines are read; let the stream wind down first.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let c1 = metrics::scrape(&admin).await?;
    let peak = procfs::memory(pid)?.hwm_kib;
    Ok((wall, c1.log_bytes_read - c0.log_bytes_read, peak))
}

fn kubectl_get_raw(env: &BenchEnv, path: &str, timeout: Duration) -> Result<Vec<u8>> {
    let mut cmd = env.kubectl(env.var("TESTENV_TOKEN_VIEWER")?)?;
    cmd.args([
        "get",
        "--raw",
        path,
        &format!("--request-timeout={}s", timeout.as_secs()),
    ]);
    let out = cmd.stderr(Stdio::piped()).output()?;
    if !out.status.success() {
        bail!(
            "kubectl get --raw {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out.stdout)
}

fn log_path_of(ns: &str, run: &str, tail: usize) -> String {
    format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{run}/log?tailLines={tail}")
}

/// A Run's window: the Pod log bytes between its floor,
/// max(`startTime`, `creationTimestamp`) minus the server's clock-skew margin,
/// and its `completionTime` (or the end of the log).
#[derive(Clone, Copy, Debug)]
struct Window {
    from: u64,
    to: u64,
}

impl Window {
    fn bytes(&self) -> u64 {
        self.to - self.from
    }
}

fn parse_time(s: &str) -> Result<jiff::Timestamp> {
    s.parse().with_context(|| format!("not a timestamp: {s}"))
}

fn window_of(setup: &Setup, run: &TargetRun, skew_secs: i64) -> Result<Window> {
    let mut floor = parse_time(&run.created)?;
    if let Some(start) = &run.start_time {
        floor = floor.max(parse_time(start)?);
    }
    floor -= jiff::SignedDuration::from_secs(skew_secs);
    let file = std::fs::File::open(&setup.log_path)?;
    let from = offset_at(&file, setup.log_bytes, floor)?;
    let to = match &run.completion_time {
        Some(c) => offset_at(&file, setup.log_bytes, parse_time(c)?)?,
        None => setup.log_bytes,
    };
    Ok(Window { from, to })
}

/// The first line starting at or after `pos`: its offset and CRI timestamp.
fn line_at(file: &std::fs::File, len: u64, pos: u64) -> Result<Option<(u64, jiff::Timestamp)>> {
    use std::os::unix::fs::FileExt;
    let mut start = pos;
    let mut buf = vec![0u8; 8192];
    if pos > 0 {
        // A line starts after the newline at or after pos - 1.
        let mut at = pos - 1;
        loop {
            if at >= len {
                return Ok(None);
            }
            let n = file.read_at(&mut buf, at)?;
            ensure!(n > 0, "short read at {at}");
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                start = at + i as u64 + 1;
                break;
            }
            at += n as u64;
        }
    }
    if start >= len {
        return Ok(None);
    }
    let n = file.read_at(&mut buf[..64], start)?;
    let head = &buf[..n];
    let sp = memchr::memchr(b' ', head).context("a log line without a timestamp")?;
    let ts = parse_time(std::str::from_utf8(&head[..sp])?)?;
    Ok(Some((start, ts)))
}

/// The offset of the first line of the log stamped at or after `t` (the
/// length when there is none); the log's timestamps grow with the offset.
fn offset_at(file: &std::fs::File, len: u64, t: jiff::Timestamp) -> Result<u64> {
    let (mut lo, mut hi) = (0u64, len);
    let mut steps = 0;
    while lo < hi {
        steps += 1;
        ensure!(steps < 200, "the search for {t} did not converge");
        let mid = lo + (hi - lo) / 2;
        match line_at(file, len, mid)? {
            Some((start, ts)) if ts < t => lo = start + 1,
            _ => hi = mid,
        }
    }
    Ok(line_at(file, len, lo)?.map_or(len, |(start, _)| start))
}

fn mib_f(bytes: f64) -> f64 {
    bytes / (1 << 20) as f64
}

/// One pass of one Run: the API request and the pipeline, in the order they ran.
struct PassRow {
    pass: usize,
    key: String,
    pipeline_first: bool,
    api: Sample,
    pipeline: Option<(Duration, [f64; 3])>,
    load: String,
}

fn jq_pipeline(
    env: &BenchEnv,
    setup: &Setup,
    run: &TargetRun,
    ns: &str,
    dir: &std::path::Path,
) -> Result<(Duration, usize)> {
    let out_file = dir.join(format!("bench-tail-jq-{}.ndjson", run.key));
    let mut cmd = env.kubectl(env.var("TESTENV_TOKEN_ADMIN")?)?;
    cmd.args(["logs", "-n", ns, &setup.pod, "-c", "runtimed"]);
    let kubectl: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect();
    let script = format!(
        "{} | jq -c 'select(.run_uid==\"{}\")' | tail -n {} > {}",
        kubectl.join(" "),
        run.uid,
        setup.tail_lines,
        shell_quote(&out_file.to_string_lossy())
    );
    let t0 = Instant::now();
    let status = Command::new("bash")
        .args(["-o", "pipefail", "-c", &script])
        .status()?;
    let wall = t0.elapsed();
    ensure!(status.success(), "the kubectl logs | jq pipeline failed");
    let text = std::fs::read_to_string(&out_file)?;
    let got: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    ensure!(
        got == run.last,
        "{}: the jq pipeline returned other records",
        run.key
    );
    let _ = std::fs::remove_file(&out_file);
    Ok((wall, got.len()))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let env = BenchEnv::load(&args.state)?;
    let fx = Fixtures::new(&env, &args.namespace).await?;
    let setup = match (args.regenerate, load_setup(&env, &fx, &args).await?) {
        (false, Some(s)) => s,
        _ => generate(&env, &fx, &args).await?,
    };
    // Let the log settle in the page cache (the kubelet reads a file that was just written).
    if let Ok(mut f) = std::fs::File::open(&setup.log_path) {
        let _ = std::io::copy(&mut f, &mut std::io::sink());
    }

    let timeout = Duration::from_secs(args.timeout_secs);
    let ns = args.namespace.clone();
    let direct = TlsTarget::new(
        env.var("CONSOLE_APISERVER_URL")?,
        std::path::Path::new(env.var("CONSOLE_CA")?),
    )?;
    let viewer = env.var("TESTENV_TOKEN_VIEWER")?.to_owned();

    println!(
        "Pod log: {:.0} MiB, {} lines, {} other Runs, {} .. {}; tailLines={}",
        setup.log_bytes as f64 / (1 << 20) as f64,
        setup.lines,
        setup.other_runs,
        setup.first_time,
        setup.last_time,
        setup.tail_lines
    );
    println!();
    println!("| Run | records in log | where | startTime | completionTime |");
    println!("| --- | --- | --- | --- | --- |");
    for r in &setup.runs {
        println!(
            "| {} | {} | {:.0}%–{:.0}% | {} | {} |",
            r.key,
            r.records,
            r.from * 100.0,
            r.to * 100.0,
            r.start_time.as_deref().unwrap_or("—"),
            r.completion_time.as_deref().unwrap_or("—")
        );
    }

    let selected: Vec<&TargetRun> = setup
        .runs
        .iter()
        .filter(|r| args.only.iter().any(|o| o == "all" || o == &r.key))
        .collect();
    ensure!(!selected.is_empty(), "--only names no Run of the setup");
    let mut windows = Vec::new();
    println!();
    println!(
        "Windows: from max(startTime, creationTimestamp) - {} s (the Console's clock-skew margin) to completionTime or the end of the log",
        args.clock_skew_secs
    );
    println!();
    println!("| Run | window from (offset, share) | window to | window MiB |");
    println!("| --- | --- | --- | --- |");
    for run in &selected {
        let w = window_of(&setup, run, args.clock_skew_secs)?;
        println!(
            "| {} | {} ({:.1}%) | {} | {:.1} |",
            run.key,
            w.from,
            100.0 * w.from as f64 / setup.log_bytes as f64,
            w.to,
            mib_f(w.bytes() as f64)
        );
        windows.push(w);
    }

    // kubectl's own cost: a discovery request that the aggregated listener answers at once.
    let mut floor = Vec::new();
    for _ in 0..3 {
        let t0 = Instant::now();
        kubectl_get_raw(&env, "/apis/logs.kruntimes.io/v1alpha1", timeout)?;
        floor.push(t0.elapsed().as_secs_f64());
    }
    println!();
    println!(
        "kubectl get --raw of the group's discovery (kubectl + kube-apiserver floor): median {:.3}s",
        stats::median(&floor)
    );

    // The passes: per Run, the API request and the pipeline back to back, in
    // alternating order.
    let dir = env.state()?;
    let mut rows: Vec<PassRow> = Vec::new();
    for pass in 0..args.passes {
        for (i, run) in selected.iter().enumerate() {
            let pipeline_first = (pass + i) % 2 == 1;
            let load = procfs::load_average();
            let pipe = |run: &TargetRun| -> Result<(Duration, [f64; 3])> {
                let cpu0 = cpu_now(&env)?;
                let (w, _) = jq_pipeline(&env, &setup, run, &ns, &dir)?;
                let cpu1 = cpu_now(&env)?;
                Ok((w, [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], cpu1[2] - cpu0[2]]))
            };
            let mut pipeline = None;
            if pipeline_first && !args.no_pipeline {
                pipeline = Some(pipe(run)?);
            }
            let path = log_path_of(&ns, &run.name, setup.tail_lines);
            let e = env.clone();
            let api = measured(&env, &setup, run, || async move {
                tokio::task::spawn_blocking(move || kubectl_get_raw(&e, &path, timeout)).await?
            })
            .await?;
            if !pipeline_first && !args.no_pipeline {
                pipeline = Some(pipe(run)?);
            }
            eprintln!(
                "bench-tail: pass {} {}: API {:.2}s ({:.1} MiB read), pipeline {}",
                pass + 1,
                run.key,
                api.wall.as_secs_f64(),
                mib_f(api.bytes_read),
                pipeline.map_or("—".to_owned(), |(w, _)| format!(
                    "{:.2}s",
                    w.as_secs_f64()
                ))
            );
            rows.push(PassRow {
                pass: pass + 1,
                key: run.key.clone(),
                pipeline_first,
                api,
                pipeline,
                load,
            });
        }
    }

    println!();
    println!(
        "| pass | Run | order | API wall s | pipeline wall s | pipeline / API | API Pod log read MiB (Console) | read / window | kubelet: requests, MiB served | load (1/5/15 min) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let i = selected.iter().position(|s| s.key == r.key).unwrap_or(0);
        let w = windows[i].bytes() as f64;
        println!(
            "| {} | {} | {} | {:.2} | {} | {} | {:.1} | {:.2} | {} | {} |",
            r.pass,
            r.key,
            if r.pipeline_first {
                "pipeline, API"
            } else {
                "API, pipeline"
            },
            r.api.wall.as_secs_f64(),
            r.pipeline
                .map_or("—".to_owned(), |(w, _)| format!("{:.2}", w.as_secs_f64())),
            r.pipeline.map_or("—".to_owned(), |(w, _)| format!(
                "{:.1}x",
                w.as_secs_f64() / r.api.wall.as_secs_f64()
            )),
            mib_f(r.api.bytes_read),
            r.api.bytes_read / w,
            r.api.kubelet.map_or("—".to_owned(), |(n, b)| format!(
                "{n}, {:.1}",
                mib_f(b as f64)
            )),
            r.load
        );
    }

    println!();
    println!(
        "| Run | records (in log) | window MiB | API: Pod log read MiB per request (min–max) | read / window (max) | kubelet served MiB (requests) per API request, max | API wall s median (min–max) | pipeline wall s median (min–max) | pipeline / API, same pass, median (min–max) | CPU s per API request Console / kube-apiserver / kubelet (median) | CPU s per pipeline kube-apiserver / kubelet (median) | Console RSS MiB before / peak (max) / after | truncatedBy |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (run, w) in selected.iter().zip(&windows) {
        let rs: Vec<&PassRow> = rows.iter().filter(|r| r.key == run.key).collect();
        if rs.is_empty() {
            continue;
        }
        let v = |f: &dyn Fn(&PassRow) -> Option<f64>| -> Vec<f64> {
            rs.iter().filter_map(|r| f(r)).collect()
        };
        let read = v(&|r| Some(r.api.bytes_read));
        let api = v(&|r| Some(r.api.wall.as_secs_f64()));
        let pipe = v(&|r| r.pipeline.map(|(w, _)| w.as_secs_f64()));
        let ratio = v(&|r| {
            r.pipeline
                .map(|(w, _)| w.as_secs_f64() / r.api.wall.as_secs_f64())
        });
        let cpu = |i: usize| stats::median(&v(&|r| Some(r.api.cpu[i])));
        let pcpu = |i: usize| stats::median(&v(&|r| r.pipeline.map(|(_, c)| c[i])));
        let rss =
            |f: &dyn Fn(&Sample) -> u64| mib(stats::median(&v(&|r| Some(f(&r.api) as f64))) as u64);
        let peak_max = rs.iter().map(|r| r.api.rss_peak).max().unwrap_or(0);
        let range_or_dash = |x: &[f64], d: usize, suffix: &str| {
            if x.is_empty() {
                "—".to_owned()
            } else {
                format!(
                    "{:.d$}{suffix} ({:.d$}–{:.d$}{suffix})",
                    stats::median(x),
                    stats::min(x),
                    stats::max(x),
                    d = d
                )
            }
        };
        println!(
            "| {} | {} | {:.1} | {:.1} ({:.1}–{:.1}) | {:.2} | {} | {} | {} | {} | {:.2} / {:.2} / {:.2} | {} | {} / {} (max {}) / {} | {} |",
            run.key,
            rs[0].api.records,
            mib_f(w.bytes() as f64),
            mib_f(stats::median(&read)),
            mib_f(stats::min(&read)),
            mib_f(stats::max(&read)),
            stats::max(&read) / w.bytes() as f64,
            rs.iter()
                .filter_map(|r| r.api.kubelet)
                .max_by_key(|k| k.1)
                .map_or("—".to_owned(), |(n, b)| format!(
                    "{:.1} ({n}) = {:.2}x window",
                    mib_f(b as f64),
                    b as f64 / w.bytes() as f64
                )),
            range_or_dash(&api, 2, ""),
            range_or_dash(&pipe, 2, ""),
            range_or_dash(&ratio, 1, "x"),
            cpu(0),
            cpu(1),
            cpu(2),
            if pipe.is_empty() {
                "—".to_owned()
            } else {
                format!("{:.2} / {:.2}", pcpu(1), pcpu(2))
            },
            rss(&|s| s.rss_before),
            rss(&|s| s.rss_peak),
            mib(peak_max),
            rss(&|s| s.rss_after),
            rs[0].api.truncated_by.as_deref().unwrap_or("—"),
        );
    }
    println!();
    println!(
        "(records: the Run's records in the answer; the Run has {} in the log. The pipeline reads the whole log: {:.1} MiB of runtimed content.)",
        selected
            .iter()
            .map(|r| format!("{}: {}", r.key, r.records))
            .collect::<Vec<_>>()
            .join(", "),
        mib_f(setup.content_bytes as f64)
    );

    if args.direct_passes > 0 {
        println!();
        println!(
            "| Run | straight to the aggregated listener | wall s median (min–max) | Pod log read MiB | read / window | CPU s Console / kube-apiserver / kubelet |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        for (run, w) in selected.iter().zip(&windows) {
            let path = log_path_of(&ns, &run.name, setup.tail_lines);
            let mut samples = Vec::new();
            for _ in 0..args.direct_passes {
                let (d, p, v) = (direct.clone(), path.clone(), viewer.clone());
                samples.push(
                    measured(&env, &setup, run, || async move {
                        let resp = tokio::time::timeout(timeout, d.get(&p, &v)).await??;
                        ensure!(resp.status == 200, "status {}", resp.status);
                        resp.body.read_all().await
                    })
                    .await?,
                );
            }
            let walls: Vec<f64> = samples.iter().map(|s| s.wall.as_secs_f64()).collect();
            let read: Vec<f64> = samples.iter().map(|s| s.bytes_read).collect();
            let cpu =
                |i: usize| stats::median(&samples.iter().map(|s| s.cpu[i]).collect::<Vec<_>>());
            println!(
                "| {} | {} | {} | {:.1} | {:.2} | {:.2} / {:.2} / {:.2} |",
                run.key,
                samples.len(),
                stats::range(&walls, 2),
                mib_f(stats::median(&read)),
                stats::max(&read) / w.bytes() as f64,
                cpu(0),
                cpu(1),
                cpu(2)
            );
        }
    }

    if args.follow_passes > 0 {
        println!();
        println!(
            "| Run | follow=true, history only | wall s to the last history record, median (min–max) | Pod log read MiB | read / window | Console RSS peak MiB |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        for (run, w) in selected.iter().zip(&windows) {
            let path = format!(
                "{}&follow=true",
                log_path_of(&ns, &run.name, setup.tail_lines)
            );
            let (mut walls, mut bytes, mut peaks) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..args.follow_passes {
                let (wall, read, peak) =
                    follow_history(&env, &direct, &path, &viewer, run, timeout).await?;
                walls.push(wall.as_secs_f64());
                bytes.push(read);
                peaks.push(peak as f64);
            }
            println!(
                "| {} | {} | {} | {:.1} | {:.2} | {} |",
                run.key,
                walls.len(),
                stats::range(&walls, 2),
                mib_f(stats::median(&bytes)),
                stats::max(&bytes) / w.bytes() as f64,
                mib(stats::max(&peaks) as u64),
            );
        }
    }
    Ok(())
}
