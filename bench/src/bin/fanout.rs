//! Fan-out: many concurrent followers of Runs spread over many Pods, held by
//! ONE Console process, and how fast an appended line reaches them.
//!
//! ```sh
//! KRT_CONSOLE_ARGS="--max-follows 20000 --max-follows-per-caller 20000" \
//!   KRT_PROFILE=release hack/testenv up --with-console --state target/bench-env
//! target/release/bench-fanout --state target/bench-env --followers 10000
//! ```
//!
//! How the followers connect: straight to the Console's aggregated listener
//! as kube-apiserver's aggregator does, over HTTP/2 with the front-proxy
//! client certificate of the environment and `X-Remote-User` /
//! `X-Remote-Group` naming the viewer, `--streams-per-connection` streams
//! multiplexed on each connection (the Console's default
//! `--http2-max-concurrent-streams` is 100). Each is
//! `…/runs/RUN/log?follow=true&tailLines=1`. kube-apiserver is on the
//! Console's upstream side only (`pods/log` to the fake kubelet), so its CPU
//! and the kubelet's are what the Console's upstream streams cost them.
//!
//! 1. Makes `--pods` Runtime Pods, each with `--runs-per-pod` Running Runs and
//!    a short interleaved history; followers are spread over the Runs.
//! 2. Measures CPU (utime + stime of `/proc/PID/stat`) of the Console,
//!    kube-apiserver and the fake kubelet over an idle stretch, while the
//!    followers open, and while they are fed.
//! 3. Opens the followers and waits for each one's history record.
//! 4. `--rounds` times, appends one marked line of every Run (and filler lines
//!    of other Runs) to every Pod log; a follower's latency is the time from
//!    the end of its Pod log's `write` to the arrival of the data frame holding
//!    its Run's marked line.
//! 5. Reports the Console's VmRSS / VmHWM, the gauges
//!    `kruntimes_console_log_upstream_streams`, `kruntimes_console_log_followers`
//!    (and `kruntimes_console_log_follow_streams` of older builds), closes the
//!    followers and waits for the gauges to go back to 0.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use bytes::Bytes;
use clap::Parser;
use futures::StreamExt;
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::h2client::{self, H2Target};
use kruntimes_bench::lines::{LineGen, RunIdentity, rfc3339_nano};
use kruntimes_bench::metrics;
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::stats;
use rand::Rng;
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};

#[derive(Parser, Debug, Clone)]
#[command(about = "Many followers of Runs over many Pods in one Console process")]
struct Args {
    /// The `hack/testenv` state directory.
    #[arg(long, default_value = "target/bench-env")]
    state: PathBuf,
    #[arg(long, default_value = "team-a")]
    namespace: String,
    /// Runtime Pods, each with a log of its own.
    #[arg(long, default_value_t = 50)]
    pods: usize,
    /// Followed Runs on each Pod.
    #[arg(long, default_value_t = 4)]
    runs_per_pod: usize,
    /// Concurrent followers, spread evenly over the Runs.
    #[arg(long, default_value_t = 10_000)]
    followers: usize,
    /// HTTP/2 streams per connection (at most the Console's `--http2-max-concurrent-streams`).
    #[arg(long, default_value_t = 100)]
    streams_per_connection: usize,
    /// Followers being opened at the same time (each waits for its history).
    #[arg(long, default_value_t = 200)]
    open_concurrency: usize,
    /// Lines in each Pod log before the followers start.
    #[arg(long, default_value_t = 200)]
    history_lines: usize,
    /// Rounds of appended lines (one marked line per Run per round).
    #[arg(long, default_value_t = 10)]
    rounds: u32,
    /// Lines of other Runs appended to each Pod log with every round.
    #[arg(long, default_value_t = 20)]
    filler_lines: usize,
    /// Seconds of the idle stretch whose CPU is the baseline.
    #[arg(long, default_value_t = 10)]
    idle_secs: u64,
    /// Worker threads of this client (the machine's cores are shared with the Console).
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// Seconds to wait for every follower to open, or for a round to arrive everywhere.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
    /// Keep the Pods, Runs and logs afterwards.
    #[arg(long)]
    keep: bool,
}

const MARK: &str = "fanout-bench mark ";

/// The round of a marked line.
fn mark_of(line: &[u8]) -> Option<u32> {
    let at = memchr::memmem::find(line, MARK.as_bytes())? + MARK.len();
    let digits = line.get(at..at + 6)?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

struct PodLog {
    name: String,
    path: PathBuf,
    lines: LineGen,
    others: Vec<RunIdentity>,
    /// Indexes into `World::runs`.
    runs: Vec<usize>,
}

struct FollowedRun {
    ident: RunIdentity,
    pod: usize,
}

struct World {
    fx: Fixtures,
    pods: Vec<PodLog>,
    runs: Vec<FollowedRun>,
}

fn cri_line(
    lines: &mut LineGen,
    who: &RunIdentity,
    msg: &str,
    at: jiff::Timestamp,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(rfc3339_nano(at).as_bytes());
    out.extend_from_slice(b" stdout F ");
    lines.write_line_on(who, "stdout", msg, out);
    out.push(b'\n');
}

async fn setup(env: &BenchEnv, args: &Args) -> Result<World> {
    let fx = Fixtures::new(env, &args.namespace).await?;
    let suffix = format!("{:06x}", rand::rng().random::<u32>() & 0xff_ffff);
    let t0 = Instant::now();
    let start = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(60);
    let start_s = start.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();

    // Pods, then Runs, a few requests at a time.
    let pod_names: Vec<String> = (0..args.pods)
        .map(|p| format!("bench-fanout-{suffix}-{p:02}"))
        .collect();
    let pod_uids: Vec<String> = futures::stream::iter(pod_names.iter())
        .map(|n| fx.create_pod(n, "bash"))
        .buffered(8)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    let mut wanted = Vec::new();
    for p in 0..args.pods {
        for r in 0..args.runs_per_pod {
            wanted.push((p, format!("bench-fanout-{suffix}-{p:02}-{r:02}")));
        }
    }
    let created: Vec<(usize, String, String)> = futures::stream::iter(wanted)
        .map(|(p, name)| {
            let (fx, pod, pod_uid, start_s) = (&fx, &pod_names[p], &pod_uids[p], &start_s);
            async move {
                let uid = fx.create_run(&name, "bash").await?;
                fx.set_run_status(
                    &name,
                    json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid,
                           "startTime": start_s, "attempt": 1}),
                )
                .await?;
                Ok::<_, anyhow::Error>((p, name, uid))
            }
        })
        .buffered(8)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;

    let mut pods: Vec<PodLog> = pod_names
        .iter()
        .map(|name| {
            let mut lines = LineGen::new(rand::rng().random(), &fx.ns, "bash", name);
            let others = (0..8).map(|_| lines.other_run()).collect();
            PodLog {
                name: name.clone(),
                path: fx.log_path(name),
                lines,
                others,
                runs: Vec::new(),
            }
        })
        .collect();
    let mut runs = Vec::new();
    for (p, name, uid) in created {
        pods[p].runs.push(runs.len());
        runs.push(FollowedRun {
            ident: RunIdentity {
                uid,
                name,
                invocation: None,
            },
            pod: p,
        });
    }
    // Histories: one line in four belongs to a followed Run, so each has
    // records. They are written after every Run exists: the Run-log API never
    // reads a line older than its Run (its creation minus the clock skew).
    let start = jiff::Timestamp::now() - jiff::SignedDuration::from_millis(1000);
    for pod in &mut pods {
        std::fs::create_dir_all(pod.path.parent().context("log dir")?)?;
        let mut text = Vec::new();
        for i in 0..args.history_lines {
            let at = start + jiff::SignedDuration::from_millis(10 * i as i64 + 1000);
            let msg = pod.lines.message();
            let who = if i % 4 == 0 {
                runs[pod.runs[(i / 4) % pod.runs.len()]].ident.clone()
            } else {
                pod.others[i % pod.others.len()].clone()
            };
            cri_line(&mut pod.lines, &who, &msg, at, &mut text);
        }
        std::fs::write(&pod.path, text)?;
    }
    eprintln!(
        "bench-fanout: {} Pods and {} Runs made in {:.1}s",
        pods.len(),
        runs.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(World { fx, pods, runs })
}

impl World {
    /// Appends one marked line of each of its Runs and the filler lines to
    /// every Pod log; when each Pod's write ended.
    fn append_round(&mut self, round: u32, filler: usize) -> Result<Vec<Instant>> {
        let mut written = Vec::with_capacity(self.pods.len());
        for pod in &mut self.pods {
            let mut text = Vec::new();
            let now = jiff::Timestamp::now();
            let n = pod.runs.len().max(1);
            for (k, &r) in pod.runs.iter().enumerate() {
                let mut msg = format!("{MARK}{round:06} ");
                msg.push_str(&pod.lines.message());
                let who = self.runs[r].ident.clone();
                cri_line(&mut pod.lines, &who, &msg, now, &mut text);
                // The filler lines, spread over the Runs' lines.
                let fill = filler / n + usize::from(k < filler % n);
                for j in 0..fill {
                    let msg = pod.lines.message();
                    let who = pod.others[j % pod.others.len()].clone();
                    cri_line(&mut pod.lines, &who, &msg, now, &mut text);
                }
            }
            let mut f = std::fs::OpenOptions::new().append(true).open(&pod.path)?;
            f.write_all(&text)?;
            written.push(Instant::now());
        }
        Ok(written)
    }

    async fn cleanup(&self) -> Result<()> {
        futures::stream::iter(self.runs.iter())
            .map(|r| self.fx.delete_run(&r.ident.name))
            .buffered(8)
            .collect::<Vec<_>>()
            .await;
        for pod in &self.pods {
            self.fx.delete_pod(&pod.name).await?;
            if let Some(dir) = pod.path.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        Ok(())
    }
}

/// What a follower reports.
enum Event {
    /// Its history arrived: it is caught up and waiting.
    Ready,
    Failed(String),
    Mark(u32, Instant),
    /// The stream ended; with the Status line's reason when there was one.
    Ended(Option<String>),
}

#[allow(clippy::too_many_arguments)]
async fn follower(
    id: usize,
    conn: h2::client::SendRequest<Bytes>,
    authority: Arc<str>,
    path: String,
    user: Arc<(String, Vec<String>)>,
    permit: tokio::sync::OwnedSemaphorePermit,
    events: mpsc::UnboundedSender<(usize, Event)>,
) {
    let mut permit = Some(permit);
    let mut headers: Vec<(&str, &str)> = vec![("x-remote-user", user.0.as_str())];
    for g in &user.1 {
        headers.push(("x-remote-group", g.as_str()));
    }
    let (status, mut body) = match h2client::get(&conn, &authority, &path, &headers).await {
        Ok(r) => r,
        Err(e) => {
            let _ = events.send((id, Event::Failed(format!("{e:#}"))));
            return;
        }
    };
    drop(conn);
    if status != 200 {
        let mut text = Vec::new();
        while let Ok(Some(p)) = h2client::next(&mut body).await {
            text.extend_from_slice(&p);
            if text.len() > 4096 {
                break;
            }
        }
        let _ = events.send((
            id,
            Event::Failed(format!(
                "status {status}: {}",
                String::from_utf8_lossy(&text)
            )),
        ));
        return;
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut status_reason = None;
    loop {
        let piece = match h2client::next(&mut body).await {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => {
                let _ = events.send((id, Event::Failed(format!("{e:#}"))));
                return;
            }
        };
        let at = Instant::now();
        buf.extend_from_slice(&piece);
        let mut used = 0;
        while let Some(nl) = memchr::memchr(b'\n', &buf[used..]) {
            let line = &buf[used..used + nl];
            used += nl + 1;
            if memchr::memmem::find(line, b"\"kind\":\"Status\"").is_some() {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
                status_reason = Some(format!("{} {}: {}", v["code"], v["reason"], v["message"]));
                continue;
            }
            if permit.take().is_some() {
                let _ = events.send((id, Event::Ready));
            }
            if let Some(m) = mark_of(line) {
                let _ = events.send((id, Event::Mark(m, at)));
            }
        }
        buf.drain(..used);
    }
    let _ = events.send((id, Event::Ended(status_reason)));
}

#[derive(Clone, Copy, Debug, Default)]
struct Cpu {
    console: f64,
    apiserver: f64,
    kubelet: f64,
    at: Option<Instant>,
}

fn cpu(env: &BenchEnv) -> Result<Cpu> {
    Ok(Cpu {
        console: procfs::cpu_seconds(env.pid("console")?)?,
        apiserver: procfs::cpu_seconds(env.pid("kube-apiserver")?)?,
        kubelet: procfs::cpu_seconds(env.pid("kubelet")?)?,
        at: Some(Instant::now()),
    })
}

impl Cpu {
    /// CPU seconds used from `self` to `later`, and the wall seconds between them.
    fn until(&self, later: &Cpu) -> ([f64; 3], f64) {
        let wall = match (self.at, later.at) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        (
            [
                later.console - self.console,
                later.apiserver - self.apiserver,
                later.kubelet - self.kubelet,
            ],
            wall,
        )
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Snapshot {
    console: procfs::Memory,
    apiserver_rss: u64,
    kubelet_rss: u64,
    counters: metrics::Counters,
    console_fds: usize,
}

async fn snapshot(env: &BenchEnv) -> Result<Snapshot> {
    let pid = env.pid("console")?;
    Ok(Snapshot {
        console: procfs::memory(pid)?,
        apiserver_rss: procfs::memory(env.pid("kube-apiserver")?)?.rss_kib,
        kubelet_rss: procfs::memory(env.pid("kubelet")?)?.rss_kib,
        counters: metrics::scrape(env.var("CONSOLE_ADMIN_URL")?).await?,
        console_fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.count())
            .unwrap_or(0),
    })
}

fn snapshot_row(what: &str, s: &Snapshot) {
    println!(
        "| {what} | {} | {} | {} | {} / {} | {} | {} | {} |",
        s.counters.upstream_streams,
        s.counters.followers,
        s.counters.follow_streams,
        mib(s.console.rss_kib),
        mib(s.console.hwm_kib),
        s.console_fds,
        mib(s.apiserver_rss),
        mib(s.kubelet_rss),
    );
}

fn snapshot_header() {
    println!(
        "| state | `log_upstream_streams` | `log_followers` | `log_follow_streams` (older builds) | Console VmRSS / VmHWM MiB | Console fds | kube-apiserver RSS MiB | fake kubelet RSS MiB |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
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

fn cpu_row(what: &str, used: [f64; 3], wall: f64, per_thousand: Option<f64>) {
    let per = per_thousand.map_or("—".to_owned(), |k| {
        format!(
            "{:.3} / {:.3} / {:.3}",
            used[0] / k,
            used[1] / k,
            used[2] / k
        )
    });
    println!(
        "| {what} | {wall:.1} | {:.2} / {:.2} / {:.2} | {per} |",
        used[0], used[1], used[2],
    );
}

async fn run(env: &BenchEnv, args: &Args, world: &mut World) -> Result<()> {
    let pki = env.state()?.join("pki");
    let target = H2Target::new(
        env.var("CONSOLE_APISERVER_URL")?,
        Path::new(env.var("CONSOLE_CA")?),
        &pki.join("front-proxy-client.crt"),
        &pki.join("front-proxy-client.key"),
    )?;
    let authority: Arc<str> = target.authority().into();
    let user = Arc::new((
        "viewer".to_owned(),
        vec![
            "testenv:users".to_owned(),
            "system:authenticated".to_owned(),
        ],
    ));
    let timeout = Duration::from_secs(args.timeout_secs);
    let per_conn = args.streams_per_connection.max(1);
    let n_conns = args.followers.div_ceil(per_conn);

    // Idle baseline.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = snapshot(env).await?;
    let cpu_idle0 = cpu(env)?;
    tokio::time::sleep(Duration::from_secs(args.idle_secs)).await;
    let cpu_idle1 = cpu(env)?;
    let (idle_used, idle_wall) = cpu_idle0.until(&cpu_idle1);

    let console_pid = env.pid("console")?;
    procfs::reset_peak(console_pid)?;
    let cpu_open0 = cpu(env)?;
    let t_open = Instant::now();
    // Each connection is made when its first follower opens: the Console
    // closes a connection whose first request does not come within its
    // --first-request-timeout (10 s), as it should.
    let mut conns = Vec::with_capacity(n_conns);
    let mut connect_secs = 0.0;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(args.open_concurrency.max(1)));
    let mut tasks = Vec::with_capacity(args.followers);
    let mut run_of = Vec::with_capacity(args.followers);
    let mut ready = 0usize;
    let mut failures: Vec<String> = Vec::new();
    let deadline = tokio::time::Instant::now() + timeout;
    for id in 0..args.followers {
        // Take events while waiting for a place, so a stuck opening shows.
        let permit = loop {
            tokio::select! {
                p = gate.clone().acquire_owned() => break p?,
                ev = rx.recv() => match ev {
                    Some((_, Event::Ready)) => ready += 1,
                    Some((i, Event::Failed(e))) => failures.push(format!("follower {i}: {e}")),
                    Some((i, Event::Ended(r))) => failures.push(format!("follower {i}: ended early: {r:?}")),
                    _ => {}
                },
                () = tokio::time::sleep_until(deadline) => anyhow::bail!("opening the followers took over {timeout:?}"),
            }
        };
        if id % per_conn == 0 {
            let t = Instant::now();
            conns.push(target.connect().await?);
            connect_secs += t.elapsed().as_secs_f64();
        }
        let r = id % world.runs.len();
        run_of.push(r);
        let path = format!(
            "/apis/logs.kruntimes.io/v1alpha1/namespaces/{}/runs/{}/log?follow=true&tailLines=1",
            world.fx.ns, world.runs[r].ident.name
        );
        tasks.push(tokio::spawn(follower(
            id,
            conns[id / per_conn].clone(),
            authority.clone(),
            path,
            user.clone(),
            permit,
            tx.clone(),
        )));
        ensure!(
            failures.len() < 100,
            "over 100 followers failed; first: {}",
            failures[0]
        );
    }
    while ready + failures.len() < args.followers {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((_, Event::Ready))) => ready += 1,
            Ok(Some((id, Event::Failed(e)))) => failures.push(format!("follower {id}: {e}")),
            Ok(Some((id, Event::Ended(r)))) => {
                failures.push(format!("follower {id}: ended early: {r:?}"))
            }
            Ok(Some((_, Event::Mark(..)))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let open_secs = t_open.elapsed().as_secs_f64();
    let cpu_open1 = cpu(env)?;
    let (open_used, open_wall) = cpu_open0.until(&cpu_open1);
    let open_peak = procfs::memory(console_pid)?.hwm_kib;
    println!(
        "opened {ready}/{} followers of {} Runs on {} Pods over {n_conns} HTTP/2 connections ({per_conn} streams each, {:.1}s to connect) in {open_secs:.1}s; {} failed; {} opened at a time; load {}",
        args.followers,
        world.runs.len(),
        world.pods.len(),
        connect_secs,
        failures.len(),
        args.open_concurrency,
        procfs::load_average()
    );
    for e in failures.iter().take(5) {
        println!("  {e}");
    }
    ensure!(ready > 0, "no follower opened");

    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = snapshot(env).await?;

    // Rounds.
    let cpu_feed0 = cpu(env)?;
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); args.rounds as usize];
    let mut written: Vec<Vec<Instant>> = Vec::new();
    let mut seen: HashMap<(usize, u32), u32> = HashMap::new();
    let mut late_events = Vec::new();
    for round in 0..args.rounds {
        let gap = rand::rng().random_range(700..1300);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        written.push(world.append_round(round, args.filler_lines)?);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while lat[round as usize].len() < ready {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((id, Event::Mark(m, at)))) => {
                    let n = seen.entry((id, m)).or_default();
                    *n += 1;
                    if *n > 1 {
                        late_events.push(format!("follower {id}: mark {m} again"));
                        continue;
                    }
                    let (m, r) = (m as usize, run_of[id]);
                    if m < written.len() {
                        let w = written[m][world.runs[r].pod];
                        lat[m].push(at.saturating_duration_since(w).as_secs_f64() * 1e3);
                    } else {
                        late_events.push(format!("follower {id}: mark {m} before it was written"));
                    }
                }
                Ok(Some((id, Event::Failed(e)))) => {
                    late_events.push(format!("follower {id} failed: {e}"))
                }
                Ok(Some((id, Event::Ended(r)))) => {
                    late_events.push(format!("follower {id} ended: {r:?}"))
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
    let cpu_feed1 = cpu(env)?;
    let (feed_used, feed_wall) = cpu_feed0.until(&cpu_feed1);
    let fed = snapshot(env).await?;

    println!();
    snapshot_header();
    snapshot_row("no follower open", &idle);
    snapshot_row(&format!("{ready} followers open"), &held);
    snapshot_row(
        &format!("{ready} followers, after {} rounds", args.rounds),
        &fed,
    );
    println!(
        "\nConsole VmHWM while opening: {} MiB; over opening and rounds: {} MiB; VmRSS per open follower: {:.1} KiB",
        mib(open_peak),
        mib(fed.console.hwm_kib),
        (held.console.rss_kib as f64 - idle.console.rss_kib as f64) / ready as f64
    );

    println!();
    println!(
        "| append → delivery, {ready} followers | delivered | min ms | p50 ms | p90 ms | p99 ms | max ms |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut all = Vec::new();
    for (i, v) in lat.iter().enumerate() {
        latency_row(&format!("round {}", i + 1), v, ready);
        all.extend_from_slice(v);
    }
    latency_row("all rounds", &all, ready * args.rounds as usize);
    let p99s: Vec<f64> = lat
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| stats::percentile(v, 99.0))
        .collect();
    println!(
        "per-round p99: {:.1}–{:.1} ms; {} events out of order or after an end",
        stats::min(&p99s),
        stats::max(&p99s),
        late_events.len()
    );
    for e in late_events.iter().take(5) {
        println!("  {e}");
    }

    let k = ready as f64 / 1000.0;
    println!();
    println!(
        "| CPU, {ready} followers | wall s | CPU s Console / kube-apiserver / fake kubelet | per 1,000 followers |"
    );
    println!("| --- | --- | --- | --- |");
    cpu_row("idle, no follower (baseline)", idle_used, idle_wall, None);
    cpu_row("opening the followers", open_used, open_wall, Some(k));
    cpu_row(
        &format!("held and fed, {} rounds", args.rounds),
        feed_used,
        feed_wall,
        Some(k),
    );
    let net = |i: usize| (feed_used[i] / feed_wall - idle_used[i] / idle_wall) * 60.0 / k;
    println!(
        "| held and fed, above the idle baseline, per minute | 60 | — | {:.3} / {:.3} / {:.3} |",
        net(0),
        net(1),
        net(2)
    );

    // Close every follower and see the Console let go.
    for t in &tasks {
        t.abort();
    }
    drop(tasks);
    drop(conns);
    let mut closed = snapshot(env).await?;
    for _ in 0..60 {
        if closed.counters.followers == 0.0
            && closed.counters.upstream_streams == 0.0
            && closed.counters.follow_streams == 0.0
        {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        closed = snapshot(env).await?;
    }
    println!();
    snapshot_header();
    snapshot_row("after closing them", &closed);
    Ok(())
}

fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    ensure!(
        args.pods > 0 && args.runs_per_pod > 0,
        "--pods and --runs-per-pod must be > 0"
    );
    let env = BenchEnv::load(&args.state)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut world = setup(&env, &args).await?;
        println!(
            "{} followers of {} Runs on {} Pods ({} history lines each); {} client threads; load {}",
            args.followers,
            world.runs.len(),
            world.pods.len(),
            args.history_lines,
            args.client_threads,
            procfs::load_average()
        );
        let result = run(&env, &args, &mut world).await;
        if !args.keep {
            world.cleanup().await?;
        }
        result
    })
}
