//! Follow: many concurrent `follow=true` streams held by one Console
//! process, and how fast an appended line reaches them.
//!
//! ```sh
//! eval "$(KRT_PROFILE=release hack/testenv up --with-console --state target/bench-env)"
//! cargo run --release -p kruntimes-bench --bin bench-follow -- --state target/bench-env
//! ```
//!
//! 1. Opens `--followers` streams of one Run's log straight to the aggregated
//!    listener (TLS, `Authorization: Bearer` viewer token, HTTP/1.1, one
//!    connection each) and waits until each has received its history.
//! 2. Reports the Console's RSS with none and with all of them open (and of
//!    kube-apiserver and the fake kubelet, for context).
//! 3. Appends one line of the Run to the Pod log per round and reports how
//!    long it took to reach each follower (p50, p99, max).
//! 4. Closes them and checks the Console let go of them.
//! 5. One follower through `kubectl get --raw` (and one straight to the
//!    listener): append-to-delivery latency over `--single-samples` lines.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use clap::Parser;
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::http::TlsTarget;
use kruntimes_bench::lines::{LineGen, RunIdentity, rfc3339_nano};
use kruntimes_bench::metrics;
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::stats;
use rand::Rng;
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};

#[derive(Parser, Debug, Clone)]
#[command(about = "Concurrent Run-log followers and append-to-delivery latency")]
struct Args {
    /// The `hack/testenv` state directory.
    #[arg(long, default_value = "target/bench-env")]
    state: PathBuf,
    #[arg(long, default_value = "team-a")]
    namespace: String,
    /// Concurrent followers.
    #[arg(long, default_value_t = 1000)]
    followers: usize,
    /// Followers being opened at the same time.
    #[arg(long, default_value_t = 50)]
    open_concurrency: usize,
    /// Appended lines measured across all followers, per cycle.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Times the followers are opened, measured and closed (memory given back or reused).
    #[arg(long, default_value_t = 1)]
    cycles: u32,
    /// Appended lines measured for the single follower.
    #[arg(long, default_value_t = 20)]
    single_samples: u32,
    /// Worker threads of this client (the machine's cores are shared with the Console).
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// Lines in the Pod log before the followers start.
    #[arg(long, default_value_t = 500)]
    history_lines: usize,
    /// Seconds to wait for every follower to open, or for a round to arrive everywhere.
    #[arg(long, default_value_t = 180)]
    timeout_secs: u64,
}

const MARK: &str = "follow-bench mark ";

/// The round number of a marked line.
fn mark_of(line: &[u8]) -> Option<u32> {
    let at = memchr::memmem::find(line, MARK.as_bytes())? + MARK.len();
    let digits = line.get(at..at + 6)?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

struct Followed {
    fx: Fixtures,
    pod: String,
    run: RunIdentity,
    log: PathBuf,
    lines: LineGen,
}

impl Followed {
    /// Appends one line of the Run carrying `mark`; the moment it was written.
    fn append_mark(&mut self, mark: u32) -> Result<Instant> {
        let mut msg = format!("{MARK}{mark:06} ");
        msg.push_str(&self.lines.message());
        let mut content = Vec::new();
        self.lines
            .write_line_on(&self.run, "stdout", &msg, &mut content);
        let mut line = format!("{} stdout F ", rfc3339_nano(jiff::Timestamp::now())).into_bytes();
        line.extend_from_slice(&content);
        line.push(b'\n');
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.log)?;
        f.write_all(&line)?;
        Ok(Instant::now())
    }
}

async fn setup(env: &BenchEnv, args: &Args) -> Result<Followed> {
    let fx = Fixtures::new(env, &args.namespace).await?;
    let suffix = format!("{:06x}", rand::rng().random::<u32>() & 0xff_ffff);
    let pod = format!("bench-follow-{suffix}");
    let pod_uid = fx.create_pod(&pod, "bash").await?;
    let name = format!("bench-follow-{suffix}");
    let uid = fx.create_run(&name, "bash").await?;
    let mut lines = LineGen::new(rand::rng().random(), &fx.ns, "bash", &pod);
    let run = RunIdentity {
        uid,
        name: name.clone(),
        invocation: None,
    };
    let start = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(60);
    fx.set_run_status(
        &name,
        json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid,
               "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(), "attempt": 1}),
    )
    .await?;
    let others: Vec<RunIdentity> = (0..16).map(|_| lines.other_run()).collect();
    let log = fx.log_path(&pod);
    std::fs::create_dir_all(log.parent().context("log dir")?)?;
    let mut text = Vec::new();
    for i in 0..args.history_lines {
        let t = start + jiff::SignedDuration::from_millis(10 * i as i64 + 1000);
        text.extend_from_slice(rfc3339_nano(t).as_bytes());
        text.extend_from_slice(b" stdout F ");
        let msg = lines.message();
        let who = if i % 10 == 0 {
            run.clone()
        } else {
            others[i % others.len()].clone()
        };
        lines.write_line(&who, &msg, &mut text);
        text.push(b'\n');
    }
    std::fs::write(&log, text)?;
    Ok(Followed {
        fx,
        pod,
        run,
        log,
        lines,
    })
}

/// What a follower reports.
enum Event {
    /// Its history arrived: it is caught up and waiting.
    Ready,
    Failed(String),
    Mark(u32, Instant),
    Ended,
}

async fn follower(
    id: usize,
    target: TlsTarget,
    path: String,
    token: String,
    permit: tokio::sync::OwnedSemaphorePermit,
    events: mpsc::UnboundedSender<(usize, Event)>,
) {
    let mut permit = Some(permit);
    let resp = match target.get(&path, &token).await {
        Ok(r) if r.status == 200 => r,
        Ok(r) => {
            let status = r.status;
            let body = r.body.read_all().await.unwrap_or_default();
            let _ = events.send((
                id,
                Event::Failed(format!(
                    "status {status}: {}",
                    String::from_utf8_lossy(&body)
                )),
            ));
            return;
        }
        Err(e) => {
            let _ = events.send((id, Event::Failed(format!("{e:#}"))));
            return;
        }
    };
    let mut body = resp.body;
    let mut buf = Vec::new();
    loop {
        let piece = match body.next().await {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => {
                let _ = events.send((id, Event::Failed(format!("{e:#}"))));
                return;
            }
        };
        let at = Instant::now();
        buf.extend_from_slice(&piece);
        while let Some(nl) = memchr::memchr(b'\n', &buf) {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            if permit.take().is_some() {
                let _ = events.send((id, Event::Ready));
            }
            if let Some(m) = mark_of(&line) {
                let _ = events.send((id, Event::Mark(m, at)));
            }
        }
    }
    let _ = events.send((id, Event::Ended));
}

#[derive(Clone, Copy, Debug, Default)]
struct Snapshot {
    console_rss: u64,
    apiserver_rss: u64,
    kubelet_rss: u64,
    follow_streams: f64,
}

async fn snapshot(env: &BenchEnv) -> Result<Snapshot> {
    let c = metrics::scrape(env.var("CONSOLE_ADMIN_URL")?).await?;
    Ok(Snapshot {
        console_rss: procfs::memory(env.pid("console")?)?.rss_kib,
        apiserver_rss: procfs::memory(env.pid("kube-apiserver")?)?.rss_kib,
        kubelet_rss: procfs::memory(env.pid("kubelet")?)?.rss_kib,
        follow_streams: c.follow_streams,
    })
}

fn print_snapshot(what: &str, s: &Snapshot) {
    println!(
        "| {what} | {} | {} | {} | {} |",
        s.follow_streams,
        mib(s.console_rss),
        mib(s.apiserver_rss),
        mib(s.kubelet_rss)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn latency_row(what: &str, v: &[f64], expected: usize) {
    println!(
        "| {what} | {}/{expected} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
        v.len(),
        stats::min(v),
        stats::median(v),
        stats::percentile(v, 90.0),
        stats::percentile(v, 99.0),
        stats::max(v),
    );
}

async fn cleanup(f: &Followed) -> Result<()> {
    f.fx.delete_run(&f.run.name).await?;
    f.fx.delete_pod(&f.pod).await?;
    if let Some(dir) = f.log.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(())
}

async fn many_followers(
    env: &BenchEnv,
    args: &Args,
    f: &mut Followed,
    path: &str,
    cycle: u32,
) -> Result<()> {
    let target = TlsTarget::new(
        env.var("CONSOLE_APISERVER_URL")?,
        Path::new(env.var("CONSOLE_CA")?),
    )?;
    let token = env.var("TESTENV_TOKEN_VIEWER")?.to_owned();
    let timeout = Duration::from_secs(args.timeout_secs);

    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = snapshot(env).await?;
    let reviews0 = metrics::scrape(env.var("CONSOLE_ADMIN_URL")?).await?;
    let console_pid = env.pid("console")?;
    procfs::reset_peak(console_pid)?;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(args.open_concurrency));
    let t_open = Instant::now();
    let mut tasks = Vec::with_capacity(args.followers);
    for id in 0..args.followers {
        let permit = gate.clone().acquire_owned().await?;
        tasks.push(tokio::spawn(follower(
            id,
            target.clone(),
            path.to_owned(),
            token.clone(),
            permit,
            tx.clone(),
        )));
    }
    let mut ready = 0usize;
    let mut failures = Vec::new();
    let deadline = tokio::time::Instant::now() + timeout;
    while ready + failures.len() < args.followers {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((_, Event::Ready))) => ready += 1,
            Ok(Some((id, Event::Failed(e)))) => failures.push(format!("follower {id}: {e}")),
            Ok(Some((id, Event::Ended))) => failures.push(format!("follower {id}: ended early")),
            Ok(Some((_, Event::Mark(..)))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let open_secs = t_open.elapsed().as_secs_f64();
    let open_peak = procfs::memory(console_pid)?.hwm_kib;
    println!(
        "opened {ready}/{} followers in {open_secs:.1}s ({} failed, {} concurrently)",
        args.followers,
        failures.len(),
        args.open_concurrency
    );
    for e in failures.iter().take(5) {
        println!("  {e}");
    }
    ensure!(ready > 0, "no follower opened");

    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = snapshot(env).await?;
    let reviews1 = metrics::scrape(env.var("CONSOLE_ADMIN_URL")?).await?;
    println!(
        "TokenReviews made while opening: {}, SubjectAccessReviews: {}; Console peak RSS while opening: {} MiB",
        reviews1.token_reviews - reviews0.token_reviews,
        reviews1.access_reviews - reviews0.access_reviews,
        mib(open_peak)
    );
    println!();
    println!(
        "| state | follow streams (gauge) | Console RSS MiB | kube-apiserver RSS MiB | fake kubelet RSS MiB |"
    );
    println!("| --- | --- | --- | --- | --- |");
    print_snapshot("no follower open", &idle);
    print_snapshot(&format!("{ready} followers open"), &held);
    println!(
        "\nConsole RSS per open follower: {:.1} KiB",
        (held.console_rss as f64 - idle.console_rss as f64) / ready as f64
    );

    // Rounds: one appended line each, delivered to every open follower.
    let mut all = Vec::new();
    let mut rows = Vec::new();
    for round in 0..args.rounds {
        let gap = rand::rng().random_range(700..1500);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let mark = cycle * 1000 + round;
        let written = f.append_mark(mark)?;
        let mut lat = Vec::with_capacity(ready);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while lat.len() < ready {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((_, Event::Mark(m, at)))) if m == mark => {
                    lat.push(ms(at.saturating_duration_since(written)));
                }
                Ok(Some((id, Event::Failed(e)))) => println!("  follower {id} failed: {e}"),
                Ok(Some((id, Event::Ended))) => println!("  follower {id} ended"),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        all.extend_from_slice(&lat);
        rows.push((format!("round {}", round + 1), lat));
    }
    println!();
    println!(
        "| append → delivery, {ready} followers | delivered | min ms | p50 ms | p90 ms | p99 ms | max ms |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (what, lat) in &rows {
        latency_row(what, lat, ready);
    }
    latency_row("all rounds", &all, ready * args.rounds as usize);

    for t in &tasks {
        t.abort();
    }
    drop(tasks);
    // The Console notices closed connections and releases the upstream streams.
    let mut closed = snapshot(env).await?;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        closed = snapshot(env).await?;
        if closed.follow_streams == 0.0 {
            break;
        }
    }
    println!();
    println!(
        "| state | follow streams (gauge) | Console RSS MiB | kube-apiserver RSS MiB | fake kubelet RSS MiB |"
    );
    println!("| --- | --- | --- | --- | --- |");
    print_snapshot("after closing them", &closed);
    Ok(())
}

async fn single_direct(
    env: &BenchEnv,
    args: &Args,
    f: &mut Followed,
    path: &str,
) -> Result<Vec<f64>> {
    let target = TlsTarget::new(
        env.var("CONSOLE_APISERVER_URL")?,
        Path::new(env.var("CONSOLE_CA")?),
    )?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(1));
    let permit = gate.acquire_owned().await?;
    let task = tokio::spawn(follower(
        0,
        target,
        path.to_owned(),
        env.var("TESTENV_TOKEN_VIEWER")?.to_owned(),
        permit,
        tx,
    ));
    let timeout = Duration::from_secs(args.timeout_secs);
    loop {
        match tokio::time::timeout(timeout, rx.recv()).await {
            Ok(Some((_, Event::Ready))) => break,
            Ok(Some((_, Event::Failed(e)))) => return Err(anyhow!("single follower: {e}")),
            Ok(Some(_)) => {}
            _ => return Err(anyhow!("single follower did not open")),
        }
    }
    let mut lat = Vec::new();
    for i in 0..args.single_samples {
        let gap = rand::rng().random_range(200..600);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let mark = 500_000 + i;
        let written = f.append_mark(mark)?;
        loop {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some((_, Event::Mark(m, at)))) if m == mark => {
                    lat.push(ms(at.saturating_duration_since(written)));
                    break;
                }
                Ok(Some(_)) => {}
                _ => return Err(anyhow!("mark {mark} did not arrive")),
            }
        }
    }
    task.abort();
    Ok(lat)
}

fn single_kubectl(env: &BenchEnv, args: &Args, f: &mut Followed, path: &str) -> Result<Vec<f64>> {
    let mut cmd = env.kubectl(env.var("TESTENV_TOKEN_VIEWER")?)?;
    cmd.args(["get", "--raw", path])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().context("kubectl stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).split(b'\n') {
            let Ok(line) = line else { break };
            let at = Instant::now();
            if tx.send((mark_of(&line), at)).is_err() {
                break;
            }
        }
    });
    let result = (|| {
        let timeout = Duration::from_secs(args.timeout_secs);
        rx.recv_timeout(timeout)
            .context("kubectl follow did not deliver its history")?;
        let mut lat = Vec::new();
        for i in 0..args.single_samples {
            std::thread::sleep(Duration::from_millis(rand::rng().random_range(200..600)));
            let mark = 600_000 + i;
            let written = f.append_mark(mark)?;
            loop {
                let (m, at) = rx
                    .recv_timeout(Duration::from_secs(10))
                    .with_context(|| format!("mark {mark} did not arrive through kubectl"))?;
                if m == Some(mark) {
                    lat.push(ms(at.saturating_duration_since(written)));
                    break;
                }
            }
        }
        Ok(lat)
    })();
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    result
}

fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let env = BenchEnv::load(&args.state)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut f = setup(&env, &args).await?;
        let path = format!(
            "/apis/logs.kruntimes.io/v1alpha1/namespaces/{}/runs/{}/log?follow=true&tailLines=1",
            f.fx.ns, f.run.name
        );
        println!(
            "Run {} on Pod {} ({} history lines); {} client threads",
            f.run.name, f.pod, args.history_lines, args.client_threads
        );
        for cycle in 1..=args.cycles {
            println!("\n### Cycle {cycle} of {}\n", args.cycles);
            many_followers(&env, &args, &mut f, &path, cycle).await?;
        }
        if args.single_samples == 0 {
            return cleanup(&f).await;
        }

        let direct = single_direct(&env, &args, &mut f, &path).await?;
        let (e, p, a) = (env.clone(), path.clone(), args.clone());
        let (kubectl, f) = tokio::task::spawn_blocking(move || {
            let r = single_kubectl(&e, &a, &mut f, &p);
            (r, f)
        })
        .await?;
        let kubectl = kubectl?;
        println!();
        println!("| one follower, append → delivery | delivered | min ms | p50 ms | p90 ms | p99 ms | max ms |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        latency_row("aggregated listener (direct)", &direct, direct.len());
        latency_row("kubectl get --raw (through kube-apiserver)", &kubectl, kubectl.len());

        cleanup(&f).await
    })
}
