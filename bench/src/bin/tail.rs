//! Tail of one Run out of a 1 GiB interleaved Pod log, against the real
//! control plane of `hack/testenv`.
//!
//! ```sh
//! eval "$(KRT_PROFILE=release hack/testenv up --with-console --state target/bench-env)"
//! cargo run --release -p kruntimes-bench --bin bench-tail -- --state target/bench-env
//! ```
//!
//! Writes a CRI-format `runtimed` log (`<RFC3339Nano> stdout F <json>`) of
//! `--size-gib` for one Runtime Pod, timestamps spread over the last
//! `--hours`, with many Runs interleaved and five Runs under test:
//!
//! | Run | records | startTime | completionTime |
//! | --- | --- | --- | --- |
//! | `late-dense` | 0.5% of the lines of the last 10% | at 90% | — |
//! | `late-sparse` | ~300 in the last 10% | at 90% | — |
//! | `nostart-dense` | like `late-dense` | — | — |
//! | `nostart-sparse` | like `late-sparse` | — | — |
//! | `middle-done` | 0.5% of the lines from 45% to 55% | at 45% | at 55% |
//!
//! For each Run, `kubectl get --raw …/log?tailLines=500` (viewer token) is
//! timed, the Console's `kruntimes_console_log_bytes_read_total` delta and
//! its RSS (before, peak, after) are recorded, and the records are checked
//! against the last 500 the generator wrote. Side by side:
//! `kubectl logs POD -c runtimed | jq -c 'select(.run_uid=="UID")' | tail -n 500`.
//! The log and the objects are kept in the state directory for reruns
//! (`--regenerate` makes new ones).

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
    /// Timed requests per Run through kubectl.
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Timed requests per Run straight to the aggregated listener.
    #[arg(long, default_value_t = 1)]
    direct_passes: usize,
    /// Follow requests per Run, timed until their history (the tail) has arrived.
    #[arg(long, default_value_t = 1)]
    follow_passes: usize,
    /// Runs of the `kubectl logs | jq | tail` pipeline (each reads the whole log).
    #[arg(long, default_value_t = 1)]
    jq_passes: usize,
    /// Measure only these Runs (by key); all when empty.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Generate a new log and new objects even when a previous setup exists.
    #[arg(long)]
    regenerate: bool,
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
    Share(f64),
    Count(u64),
}

const PLANS: &[Plan] = &[
    Plan {
        key: "late-dense",
        from: 0.90,
        to: 1.0,
        density: Density::Share(0.005),
        with_start: true,
        completed: false,
    },
    Plan {
        key: "late-sparse",
        from: 0.90,
        to: 1.0,
        density: Density::Count(300),
        with_start: true,
        completed: false,
    },
    Plan {
        key: "nostart-dense",
        from: 0.90,
        to: 1.0,
        density: Density::Share(0.005),
        with_start: false,
        completed: false,
    },
    Plan {
        key: "nostart-sparse",
        from: 0.90,
        to: 1.0,
        density: Density::Count(300),
        with_start: false,
        completed: false,
    },
    Plan {
        key: "middle-done",
        from: 0.45,
        to: 0.55,
        density: Density::Share(0.005),
        with_start: true,
        completed: true,
    },
];

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
    let setup: Setup = serde_json::from_str(&text)?;
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
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(old) = serde_json::from_str::<Setup>(&text)
    {
        for r in &old.runs {
            fx.delete_run(&r.name).await?;
        }
        fx.delete_pod(&old.pod).await?;
        if let Some(dir) = old.log_path.parent() {
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
        let uid = fx.create_run(&name, "python").await?;
        let region_lines = (plan.to - plan.from) * log_bytes_target as f64 / EST_LINE_BYTES;
        let share = match plan.density {
            Density::Share(s) => s,
            Density::Count(n) => n as f64 / region_lines,
        };
        targets.push(Writing {
            plan,
            run: RunIdentity {
                uid,
                name,
                invocation: None,
            },
            share,
            records: 0,
            last: VecDeque::new(),
        });
    }

    let log_path = fx.log_path(&pod);
    std::fs::create_dir_all(log_path.parent().context("log dir")?)?;
    let file = std::fs::File::create(&log_path)?;
    let mut out = std::io::BufWriter::with_capacity(8 << 20, file);
    let span = jiff::SignedDuration::from_hours(args.hours);
    let end = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(60);
    let begin = end - span;
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

async fn measured<F, Fut>(env: &BenchEnv, run: &TargetRun, request: F) -> Result<Sample>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<u8>>>,
{
    let pid = env.pid("console")?;
    let admin = env.var("CONSOLE_ADMIN_URL")?.to_owned();
    procfs::reset_peak(pid)?;
    let before = procfs::memory(pid)?;
    let c0 = metrics::scrape(&admin).await?;
    let cpu0 = cpu_now(env)?;
    let t0 = Instant::now();
    let body = request().await?;
    let wall = t0.elapsed();
    let cpu1 = cpu_now(env)?;
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

fn summarize(key: &str, how: &str, setup: &Setup, samples: &[Sample]) {
    let walls: Vec<f64> = samples.iter().map(|s| s.wall.as_secs_f64()).collect();
    let bytes: Vec<f64> = samples.iter().map(|s| s.bytes_read).collect();
    let b = stats::median(&bytes);
    let rss = |f: fn(&Sample) -> u64| {
        let v: Vec<f64> = samples.iter().map(|s| f(s) as f64).collect();
        mib(stats::median(&v) as u64)
    };
    let peak_max = samples.iter().map(|s| s.rss_peak).max().unwrap_or(0);
    let cpu = |i: usize| {
        let v: Vec<f64> = samples.iter().map(|s| s.cpu[i]).collect();
        stats::median(&v)
    };
    let s0 = &samples[0];
    println!(
        "| {key} | {how} | {} | {:.2} ({:.2}–{:.2}) | {:.1} | {:.1}% | {:.2} / {:.2} / {:.2} | {} / {} (max {}) / {} | {} | {} |",
        samples.len(),
        stats::median(&walls),
        stats::min(&walls),
        stats::max(&walls),
        b / (1 << 20) as f64,
        100.0 * b / setup.log_bytes as f64,
        cpu(0),
        cpu(1),
        cpu(2),
        rss(|s| s.rss_before),
        rss(|s| s.rss_peak),
        mib(peak_max),
        rss(|s| s.rss_after),
        s0.records,
        s0.truncated_by.as_deref().unwrap_or("—"),
    );
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
    let _ = std::fs::read(&setup.log_path).map(|b| b.len());

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
    println!();
    println!(
        "| Run | through | requests | wall s median (min–max) | Pod log read MiB | of the log | CPU s Console / kube-apiserver / kubelet | Console RSS MiB before / peak (max) / after | records | truncatedBy |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let wanted = |k: &str| args.only.is_empty() || args.only.iter().any(|o| o == k);
    for run in setup.runs.iter().filter(|r| wanted(&r.key)) {
        let path = log_path_of(&ns, &run.name, setup.tail_lines);
        let mut samples = Vec::new();
        for _ in 0..args.passes {
            let p = path.clone();
            let e = env.clone();
            samples.push(
                measured(&env, run, || async move {
                    tokio::task::spawn_blocking(move || kubectl_get_raw(&e, &p, timeout)).await?
                })
                .await?,
            );
        }
        if !samples.is_empty() {
            summarize(&run.key, "kubectl get --raw", &setup, &samples);
        }
        let mut samples = Vec::new();
        for _ in 0..args.direct_passes {
            let (d, p, v) = (direct.clone(), path.clone(), viewer.clone());
            samples.push(
                measured(&env, run, || async move {
                    let resp = tokio::time::timeout(timeout, d.get(&p, &v)).await??;
                    ensure!(resp.status == 200, "status {}", resp.status);
                    resp.body.read_all().await
                })
                .await?,
            );
        }
        if !samples.is_empty() {
            summarize(&run.key, "aggregated listener", &setup, &samples);
        }
    }

    if args.follow_passes > 0 {
        println!();
        println!(
            "| Run | follow=true, history only | wall s to the last history record, median (min–max) | Pod log read MiB | of the log | Console RSS peak MiB |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        for run in setup.runs.iter().filter(|r| wanted(&r.key)) {
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
            let b = stats::median(&bytes);
            println!(
                "| {} | {} | {:.2} ({:.2}–{:.2}) | {:.1} | {:.1}% | {} |",
                run.key,
                walls.len(),
                stats::median(&walls),
                stats::min(&walls),
                stats::max(&walls),
                b / (1 << 20) as f64,
                100.0 * b / setup.log_bytes as f64,
                mib(stats::max(&peaks) as u64),
            );
        }
    }

    if args.jq_passes > 0 {
        println!();
        println!(
            "| Run | `kubectl logs \\| jq \\| tail` | wall s median (min–max) | Pod log read MiB (whole log, without CRI prefix) | records |"
        );
        println!("| --- | --- | --- | --- | --- |");
        let dir = env.state()?;
        for run in setup.runs.iter().filter(|r| wanted(&r.key)) {
            let mut walls = Vec::new();
            let mut n = 0;
            for _ in 0..args.jq_passes {
                let (e, s, r, ns, d) = (
                    env.clone(),
                    setup.clone(),
                    run.clone(),
                    ns.clone(),
                    dir.clone(),
                );
                let (w, got) =
                    tokio::task::spawn_blocking(move || jq_pipeline(&e, &s, &r, &ns, &d)).await??;
                walls.push(w.as_secs_f64());
                n = got;
            }
            println!(
                "| {} | {} | {:.2} ({:.2}–{:.2}) | {:.1} | {} |",
                run.key,
                walls.len(),
                stats::median(&walls),
                stats::min(&walls),
                stats::max(&walls),
                setup.content_bytes as f64 / (1 << 20) as f64,
                n
            );
        }
    }
    Ok(())
}
