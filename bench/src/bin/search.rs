//! Search of one Run's whole window in a 1 GiB interleaved Pod log
//! (`runs/log?search=`), side by side with `kubectl logs | jq | grep`,
//! against the real control plane of `hack/testenv`.
//!
//! ```sh
//! eval "$(KRT_PROFILE=release hack/testenv up --with-console --state target/bench-env)"
//! cargo run --release -p kruntimes-bench --bin bench-search -- --state target/bench-env
//! ```
//!
//! Writes a CRI-format `runtimed` log of `--size-gib` for one Runtime Pod,
//! timestamps spread over `--hours`: 64 Runs interleaved at any moment,
//! runtimed's own JSON diagnostics (no `run_uid`) as noise between them, and
//! the Run under test, created and started at 90% of the log's bytes, with
//! about 2,560 records in the last 10%. A handful of its records (one in 300)
//! hold the searched text; so do about one in 5,000 of the other Runs'
//! records and one in 20 of the noise lines, so neither the Run filter nor
//! the text alone finds the answer.
//!
//! Each pass times, one after the other in alternating order, so both see
//! the same machine:
//! - the Console: `kubectl get --raw …/log?search=TEXT&tailLines=N` as the
//!   viewer, then each next page (`sinceCursor` of the last match) until
//!   `truncated` is false;
//! - the pipeline: `kubectl logs POD -c runtimed | jq -r 'select(.run_uid==
//!   "UID") | .message' | grep -F TEXT` on the same log through the same
//!   kube-apiserver.
//!
//! Both answers are checked against the matches the generator wrote. For
//! the Console the CPU it, kube-apiserver and the fake kubelet used meanwhile
//! and the Pod log it read (`kruntimes_console_log_read_bytes_total`) are
//! reported; for the pipeline, the CPU of its own processes too. Passes stop
//! at `--passes` or after `--max-minutes`, whichever comes first. The log is
//! kept in the state directory for reruns (`--regenerate` makes a new one).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::lines::{LineGen, RunIdentity, rfc3339_nano};
use kruntimes_bench::metrics;
use kruntimes_bench::procfs;
use kruntimes_bench::stats;
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Parser, Debug)]
#[command(
    about = "Search of a Run's window in a large interleaved Pod log, against kubectl logs | jq | grep"
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
    /// The text searched for.
    #[arg(long, default_value = "checksum mismatch on shard")]
    text: String,
    /// Matches per page (`tailLines`).
    #[arg(long, default_value_t = 100)]
    page: usize,
    /// Records of context (`context`).
    #[arg(long, default_value_t = 2)]
    context: usize,
    /// Passes at most; each times the Console's search and the pipeline.
    #[arg(long, default_value_t = 5)]
    passes: usize,
    /// No new pass starts after this many minutes.
    #[arg(long, default_value_t = 30)]
    max_minutes: u64,
    /// Generate a new log and new objects even when a previous setup exists.
    #[arg(long)]
    regenerate: bool,
    /// Give up on one request after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
}

/// What the generator made; reused by later runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Setup {
    pod: String,
    pod_uid: String,
    log_path: PathBuf,
    log_bytes: u64,
    lines: u64,
    noise_lines: u64,
    other_runs: u64,
    first_time: String,
    last_time: String,
    text: String,
    run: String,
    uid: String,
    records: u64,
    /// Lines holding the text that are not the Run's records.
    text_elsewhere: u64,
    /// The messages of the Run's records that hold the text, in log order.
    matches: Vec<String>,
}

/// Where in the log (share of its bytes) the Run under test is created and started.
const CREATED_AT: f64 = 0.90;
/// Interleaved Runs at any moment.
const ACTIVE_RUNS: usize = 64;
/// Rough size of one CRI line, to turn a record count into a share.
const EST_LINE_BYTES: f64 = 395.0;
/// Records of the Run under test, spread over the last 10%.
const RUN_RECORDS: f64 = 2560.0;
/// Every this many of its records holds the text.
const MATCH_EVERY: u64 = 300;
/// One noise line in this many lines; one in 20 of them holds the text.
const NOISE_EVERY: u32 = 40;
/// One other Run's record in this many holds the text.
const ELSEWHERE_EVERY: u32 = 5000;
/// Pages a search may take before the bench gives up on it.
const MAX_PAGES: usize = 1000;

fn setup_path(env: &BenchEnv) -> Result<PathBuf> {
    Ok(env.state()?.join("bench-search.json"))
}

async fn load_setup(env: &BenchEnv, fx: &Fixtures, args: &Args) -> Result<Option<Setup>> {
    let Ok(text) = std::fs::read_to_string(setup_path(env)?) else {
        return Ok(None);
    };
    let Ok(setup) = serde_json::from_str::<Setup>(&text) else {
        return Ok(None);
    };
    let size_ok = std::fs::metadata(&setup.log_path).is_ok_and(|m| m.len() == setup.log_bytes);
    let pod_ok = fx.pod_uid(&setup.pod).await?.as_deref() == Some(setup.pod_uid.as_str());
    let run_ok = fx.run_uid(&setup.run).await?.as_deref() == Some(setup.uid.as_str());
    let wanted = (args.size_gib * (1u64 << 30) as f64) as u64;
    if size_ok && pod_ok && run_ok && setup.text == args.text && setup.log_bytes >= wanted {
        Ok(Some(setup))
    } else {
        eprintln!("bench-search: previous setup does not match; generating a new one");
        Ok(None)
    }
}

async fn remove_setup(env: &BenchEnv, fx: &Fixtures) -> Result<()> {
    let path = setup_path(env)?;
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(old) = serde_json::from_str::<Value>(&text)
    {
        if let Some(run) = old["run"].as_str() {
            fx.delete_run(run).await?;
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

async fn generate(env: &BenchEnv, fx: &Fixtures, args: &Args) -> Result<Setup> {
    remove_setup(env, fx).await?;
    let mut seed_rng = rand::rng();
    let suffix = format!("{:06x}", seed_rng.random::<u32>() & 0xff_ffff);
    let pod = format!("bench-search-{suffix}");
    let pod_uid = fx.create_pod(&pod, "python").await?;
    let target_bytes = (args.size_gib * (1u64 << 30) as f64) as u64;
    let mut g = LineGen::new(seed_rng.random(), &fx.ns, "python", &pod);
    let name = format!("bench-search-{suffix}");
    let (uid, created) = fx.create_run_stamped(&name, "python").await?;
    let run = RunIdentity {
        uid: uid.clone(),
        name: name.clone(),
        invocation: None,
    };
    let region_lines = (1.0 - CREATED_AT) * target_bytes as f64 / EST_LINE_BYTES;
    let share = RUN_RECORDS / region_lines;

    let log_path = fx.log_path(&pod);
    std::fs::create_dir_all(log_path.parent().context("log dir")?)?;
    let mut out = std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(&log_path)?);
    let span = jiff::SignedDuration::from_hours(args.hours);
    // The line at CREATED_AT is stamped one second after the Run was created.
    let begin = created + jiff::SignedDuration::from_secs(1)
        - jiff::SignedDuration::from_secs_f64(span.as_secs_f64() * CREATED_AT);
    let time_at =
        |frac: f64| begin + jiff::SignedDuration::from_secs_f64(span.as_secs_f64() * frac);
    let mut slots: Vec<(RunIdentity, u32)> = (0..ACTIVE_RUNS)
        .map(|_| (g.other_run(), g.rng().random_range(500..4000)))
        .collect();
    let mut other_runs = ACTIVE_RUNS as u64;
    let (mut written, mut lines, mut noise_lines, mut records, mut elsewhere) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut matches = Vec::new();
    let mut line = Vec::with_capacity(512);
    let (mut first_time, mut last_time) = (String::new(), String::new());
    let t0 = Instant::now();
    while written < target_bytes {
        let frac = written as f64 / target_bytes as f64;
        let ts = rfc3339_nano(time_at(frac));
        line.clear();
        let roll: f64 = g.rng().random();
        if g.rng().random_range(0..NOISE_EVERY) == 0 {
            // runtimed's own diagnostics: JSON, no run_uid.
            let msg = if g.rng().random_range(0..20) == 0 {
                elsewhere += 1;
                format!("{} in the image cache; fetching again", args.text)
            } else {
                "status poll served".to_owned()
            };
            let v = json!({"level": "info", "component": "runtimed", "msg": msg, "ts": ts});
            line.extend_from_slice(v.to_string().as_bytes());
            noise_lines += 1;
        } else if frac >= CREATED_AT && roll < share {
            records += 1;
            let mut msg = g.message();
            if records % MATCH_EVERY == MATCH_EVERY / 2 {
                msg = format!("ERROR [verify-{records}] {} {records}: {msg}", args.text);
                msg.truncate(200);
                matches.push(msg.clone());
            }
            g.write_line(&run, &msg, &mut line);
        } else {
            let slot = g.rng().random_range(0..slots.len());
            if slots[slot].1 == 0 {
                slots[slot] = (g.other_run(), g.rng().random_range(500..4000));
                other_runs += 1;
            }
            slots[slot].1 -= 1;
            let mut msg = g.message();
            if g.rng().random_range(0..ELSEWHERE_EVERY) == 0 {
                msg = format!("WARN {} elsewhere: {msg}", args.text);
                elsewhere += 1;
            }
            let other = slots[slot].0.clone();
            g.write_line(&other, &msg, &mut line);
        }
        out.write_all(ts.as_bytes())?;
        out.write_all(b" stdout F ")?;
        out.write_all(&line)?;
        out.write_all(b"\n")?;
        written += ts.len() as u64 + 10 + line.len() as u64 + 1;
        lines += 1;
        if first_time.is_empty() {
            first_time = ts.clone();
        }
        last_time = ts;
    }
    out.flush()?;
    drop(out);
    eprintln!(
        "bench-search: wrote {} ({:.0} MiB, {lines} lines) in {:.1}s",
        log_path.display(),
        written as f64 / (1 << 20) as f64,
        t0.elapsed().as_secs_f64()
    );
    let start = time_at(CREATED_AT)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    fx.set_run_status(
        &name,
        json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid,
               "attempt": 1, "startTime": start}),
    )
    .await?;
    let setup = Setup {
        pod,
        pod_uid,
        log_path,
        log_bytes: written,
        lines,
        noise_lines,
        other_runs,
        first_time,
        last_time,
        text: args.text.clone(),
        run: name,
        uid,
        records,
        text_elsewhere: elsewhere,
        matches,
    };
    std::fs::write(setup_path(env)?, serde_json::to_vec_pretty(&setup)?)?;
    Ok(setup)
}

const PROCESSES: [&str; 3] = ["console", "kube-apiserver", "kubelet"];

fn cpu_now(env: &BenchEnv) -> Result<[f64; 3]> {
    let mut out = [0.0; 3];
    for (o, name) in out.iter_mut().zip(PROCESSES) {
        *o = procfs::cpu_seconds(env.pid(name)?)?;
    }
    Ok(out)
}

/// CPU seconds this process's waited-for children used so far (`cutime` + `cstime`).
fn children_cpu() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/self/stat")?;
    let rest = text.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok((ticks(13) + ticks(14)) as f64 / 100.0)
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// One timed search or pipeline run.
#[derive(Clone, Copy, Debug, Default)]
struct Timed {
    wall: f64,
    /// Console, kube-apiserver, fake kubelet.
    cpu: [f64; 3],
    /// The pipeline's own processes (kubectl, jq, grep, bash).
    client_cpu: f64,
    /// Pod log bytes the Console read.
    read: f64,
    pages: usize,
}

/// Every page of the Console's search, through kubectl; checked against the generator.
async fn console_search(env: &BenchEnv, setup: &Setup, args: &Args, ns: &str) -> Result<Timed> {
    let admin = env.var("CONSOLE_ADMIN_URL")?.to_owned();
    let c0 = metrics::scrape(&admin).await?;
    let cpu0 = cpu_now(env)?;
    let client0 = children_cpu()?;
    let base = format!(
        "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{}/log?search={}&tailLines={}&context={}",
        setup.run,
        enc(&setup.text),
        args.page,
        args.context
    );
    let mut got: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let t0 = Instant::now();
    loop {
        pages += 1;
        ensure!(
            pages <= MAX_PAGES,
            "the search did not end in {MAX_PAGES} pages"
        );
        let path = match &cursor {
            None => base.clone(),
            Some(c) => format!("{base}&sinceCursor={c}"),
        };
        let mut cmd = env.kubectl(env.var("TESTENV_TOKEN_VIEWER")?)?;
        cmd.args([
            "get",
            "--raw",
            &path,
            &format!("--request-timeout={}s", args.timeout_secs),
        ]);
        let out =
            tokio::task::spawn_blocking(move || cmd.stderr(Stdio::piped()).output()).await??;
        if !out.status.success() {
            bail!(
                "kubectl get --raw {path}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let v: Value = serde_json::from_slice(&out.stdout).context("a RunLog")?;
        let records = v["records"].as_array().context("records")?;
        let matched: Vec<&Value> = records.iter().filter(|r| r["match"] == true).collect();
        got.extend(
            matched
                .iter()
                .map(|r| r["message"].as_str().unwrap_or_default().to_owned()),
        );
        ensure!(
            v["search"]["total"] == setup.matches.len(),
            "the search counted {} matches, the generator wrote {}",
            v["search"]["total"],
            setup.matches.len()
        );
        if v["truncated"] != true {
            break;
        }
        cursor = Some(
            matched
                .last()
                .and_then(|r| r["cursor"].as_str())
                .context("a truncated page without a match")?
                .to_owned(),
        );
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu1 = cpu_now(env)?;
    let client1 = children_cpu()?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c1 = metrics::scrape(&admin).await?;
    ensure!(
        got == setup.matches,
        "the Console's matches differ from those written"
    );
    Ok(Timed {
        wall,
        cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], cpu1[2] - cpu0[2]],
        client_cpu: client1 - client0,
        read: c1.log_bytes_read - c0.log_bytes_read,
        pages,
    })
}

/// `kubectl logs | jq | grep` on the same log; checked against the generator.
fn pipeline(env: &BenchEnv, setup: &Setup, ns: &str) -> Result<Timed> {
    let out_file = env.state()?.join("bench-search-pipeline.txt");
    let mut cmd = env.kubectl(env.var("TESTENV_TOKEN_ADMIN")?)?;
    cmd.args(["logs", "-n", ns, &setup.pod, "-c", "runtimed"]);
    let kubectl: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect();
    let script = format!(
        "{} | jq -r 'select(.run_uid==\"{}\") | .message' | grep -F -- {} > {}",
        kubectl.join(" "),
        setup.uid,
        shell_quote(&setup.text),
        shell_quote(&out_file.to_string_lossy())
    );
    let cpu0 = cpu_now(env)?;
    let client0 = children_cpu()?;
    let t0 = Instant::now();
    let status = Command::new("bash")
        .args(["-o", "pipefail", "-c", &script])
        .status()?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu1 = cpu_now(env)?;
    let client1 = children_cpu()?;
    ensure!(
        status.success(),
        "the kubectl logs | jq | grep pipeline failed"
    );
    let text = std::fs::read_to_string(&out_file)?;
    let got: Vec<&str> = text.lines().collect();
    ensure!(
        got == setup.matches.iter().map(String::as_str).collect::<Vec<_>>(),
        "the pipeline's matches differ from those written ({} lines)",
        got.len()
    );
    let _ = std::fs::remove_file(&out_file);
    Ok(Timed {
        wall,
        cpu: [cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], cpu1[2] - cpu0[2]],
        client_cpu: client1 - client0,
        read: 0.0,
        pages: 0,
    })
}

fn mib(bytes: f64) -> f64 {
    bytes / (1 << 20) as f64
}

fn row(name: &str, xs: &[Timed], console: bool) -> String {
    let v = |f: &dyn Fn(&Timed) -> f64| xs.iter().map(f).collect::<Vec<f64>>();
    let wall = v(&|t| t.wall);
    let p50 = |f: &dyn Fn(&Timed) -> f64| stats::median(&v(f));
    let cpu_max = stats::max(&v(&|t| t.cpu[0]));
    format!(
        "| {name} | {} | **{:.2}** | {:.2} | {} | {:.2} / {:.2} / {:.2} | {:.2} | {} |",
        xs.len(),
        stats::median(&wall),
        stats::max(&wall),
        if console {
            format!("{:.2} (max {cpu_max:.2})", p50(&|t| t.cpu[0]))
        } else {
            "—".to_owned()
        },
        p50(&|t| t.cpu[0]),
        p50(&|t| t.cpu[1]),
        p50(&|t| t.cpu[2]),
        p50(&|t| t.client_cpu),
        if console {
            format!("{:.1} MiB, {} page(s)", mib(p50(&|t| t.read)), xs[0].pages)
        } else {
            "the whole log".to_owned()
        },
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    ensure!(
        (1..=500).contains(&args.page) && args.context <= 10,
        "--page is 1..500 and --context 0..10, as the API takes them"
    );
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
    let ns = args.namespace.clone();
    println!(
        "Pod log: {:.0} MiB, {} lines ({} noise lines), {} other Runs, {} .. {}",
        mib(setup.log_bytes as f64),
        setup.lines,
        setup.noise_lines,
        setup.other_runs,
        setup.first_time,
        setup.last_time
    );
    println!(
        "Run {}: {} records from 90% of the log on (startTime there), {} of them hold {:?}; {} other lines hold it too",
        setup.run,
        setup.records,
        setup.matches.len(),
        setup.text,
        setup.text_elsewhere
    );
    println!(
        "Console: tailLines={} context={}; machine: {} cores, load {}",
        args.page,
        args.context,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        procfs::load_average()
    );

    let budget = Duration::from_secs(args.max_minutes * 60);
    let started = Instant::now();
    let mut console = Vec::new();
    let mut pipe = Vec::new();
    println!();
    println!(
        "| pass | order | Console s | pipeline s | pipeline / Console | Console CPU s | Pod log read MiB | load |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for pass in 0..args.passes {
        if started.elapsed() > budget {
            eprintln!("bench-search: --max-minutes reached after {pass} passes");
            break;
        }
        let load = procfs::load_average();
        let pipeline_first = pass % 2 == 1;
        let (c, p) = if pipeline_first {
            let p = pipeline(&env, &setup, &ns)?;
            (console_search(&env, &setup, &args, &ns).await?, p)
        } else {
            let c = console_search(&env, &setup, &args, &ns).await?;
            (c, pipeline(&env, &setup, &ns)?)
        };
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.1}x | {:.2} | {:.1} | {load} |",
            pass + 1,
            if pipeline_first {
                "pipeline, Console"
            } else {
                "Console, pipeline"
            },
            c.wall,
            p.wall,
            p.wall / c.wall,
            c.cpu[0],
            mib(c.read)
        );
        console.push(c);
        pipe.push(p);
    }
    ensure!(!console.is_empty(), "no pass ran");
    println!();
    println!(
        "| what | passes | wall s p50 | wall s max | Console CPU s p50 | CPU s p50: Console / kube-apiserver / kubelet | client CPU s p50 (kubectl, jq, grep) | read |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "{}",
        row(
            "Console `runs/log?search=` (all pages, via kubectl)",
            &console,
            true
        )
    );
    println!("{}", row(r"`kubectl logs \| jq \| grep`", &pipe, false));
    Ok(())
}
