//! A page of 50 of 10,000 Runs in one namespace, filtered by phase, through
//! the Console's `/api` and straight from kube-apiserver, with the Console's
//! resident memory idle and under that load. See README.md §4.
//!
//! `--crd selectable` applies the Run CRD variant with `selectableFields` (a
//! platform that adds them): both sides push the phase to the API server.
//! `--crd engine` (the default) keeps the engine's CRD, which has none: the
//! Console filters by a bounded scan of pages of 500, and kube-apiserver's
//! side is the first page of 500 a client without field selectors must read
//! to find 50 Runs of one phase.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::keepalive::TlsClient;
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::stats;
use kruntimes_core::run::Phase;
use kube::Api;
use kube::api::PostParams;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// The `hack/testenv` state directory.
    #[arg(long, default_value = "target/bench-env")]
    state: PathBuf,
    #[arg(long, default_value = "bench-list")]
    namespace: String,
    /// Runs in the namespace (created when missing).
    #[arg(long, default_value_t = 10_000)]
    runs: usize,
    #[arg(long, default_value_t = 32)]
    create_concurrency: usize,
    /// Timed requests per pass.
    #[arg(long, default_value_t = 100)]
    requests: usize,
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Timed `kubectl get --raw` runs per pass.
    #[arg(long, default_value_t = 50)]
    kubectl_requests: usize,
    /// Connections of the concurrent pass.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Only these cases (comma-separated names).
    #[arg(long)]
    only: Option<String>,
    /// The Run CRD: `engine` (no selectableFields) or `selectable` (the variant).
    #[arg(long, default_value = "engine", value_parser = ["engine", "selectable"])]
    crd: String,
}

fn runs_api(client: kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Run"),
        "runs",
    );
    Api::namespaced_with(client, ns, &ar)
}

async fn admin_client(env: &BenchEnv) -> Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(env.var("KUBECONFIG")?)?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    Ok(kube::Client::try_from(config)?)
}

/// Every Run's creation time, in list order.
async fn creation_times(api: &Api<DynamicObject>) -> Result<Vec<jiff::Timestamp>> {
    let mut out = Vec::new();
    let mut lp = ListParams::default().limit(500);
    loop {
        let list = api.list_metadata(&lp).await?;
        out.extend(
            list.items
                .iter()
                .filter_map(|o| o.metadata.creation_timestamp.as_ref().map(|t| t.0)),
        );
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => return Ok(out),
        }
    }
}

async fn seed(args: &Args, client: &kube::Client) -> Result<()> {
    let nss: Api<Namespace> = Api::all(client.clone());
    if nss.get_opt(&args.namespace).await?.is_none() {
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace},
        }))?;
        nss.create(&PostParams::default(), &ns).await?;
    }
    let api = runs_api(client.clone(), &args.namespace);
    let existing = creation_times(&api).await?.len();
    if existing >= args.runs {
        eprintln!("{existing} Runs already in {}", args.namespace);
        return Ok(());
    }
    let start = Instant::now();
    let results: Vec<Result<()>> = futures::stream::iter(0..args.runs)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("run-{i:05}");
                if api.get_opt(&name).await?.is_none() {
                    let obj: DynamicObject = serde_json::from_value(json!({
                        "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                        "metadata": {"name": name, "labels": {"bench": "list"}},
                        "spec": {"runtime": "bash", "mode": {"task": {}}},
                    }))?;
                    api.create(&PostParams::default(), &obj)
                        .await
                        .with_context(|| format!("creating {name}"))?;
                }
                let phase = Phase::ALL[i % Phase::ALL.len()].as_str();
                api.patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"phase": phase}})),
                )
                .await
                .with_context(|| format!("status of {name}"))?;
                Ok(())
            }
        })
        .buffer_unordered(args.create_concurrency)
        .collect()
        .await;
    let failed = results.iter().filter(|r| r.is_err()).count();
    if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
        bail!("{failed} Runs failed: {e:#}");
    }
    let s = start.elapsed().as_secs_f64();
    eprintln!(
        "created {} Runs (create + status) in {s:.1} s, {:.0} Runs/s",
        args.runs,
        args.runs as f64 / s
    );
    Ok(())
}

/// How one case sends a request.
#[derive(Clone)]
enum Target {
    /// Keep-alive HTTPS with a bearer token.
    Http {
        client: TlsClient,
        token: String,
        path: String,
    },
    /// `kubectl get --raw path`, one process per request.
    Kubectl {
        env: BenchEnv,
        token: String,
        path: String,
    },
}

/// Items in a list answer (Console `items`, Kubernetes `items`), and whether it has a continue token.
fn summarize(body: &[u8]) -> Result<(usize, bool)> {
    let v: Value = serde_json::from_slice(body).context("answer is not JSON")?;
    let n = v.get("items").and_then(Value::as_array).map_or(0, Vec::len);
    let cont = v
        .get("continue")
        .or_else(|| v.pointer("/metadata/continue"))
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty());
    Ok((n, cont))
}

struct Pass {
    latencies_ms: Vec<f64>,
    items: usize,
    cont: bool,
    wall_s: f64,
}

/// `requests` requests over `conns` keep-alive connections (or kubectl processes in turn).
async fn pass(target: &Target, requests: usize, conns: usize) -> Result<Pass> {
    let start = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..conns.max(1) {
        let target = target.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut last = (0, false);
            let mut conn = match &target {
                Target::Http { client, .. } => Some(client.keep_alive()),
                Target::Kubectl { .. } => None,
            };
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < requests {
                let t = Instant::now();
                let body = match &target {
                    Target::Http { token, path, .. } => {
                        let auth = format!("Bearer {token}");
                        let (status, body) = conn
                            .as_mut()
                            .expect("a connection")
                            .send("GET", path, &[("Authorization", &auth)], b"")
                            .await?;
                        ensure!(
                            status == 200,
                            "GET {path}: {status} {}",
                            String::from_utf8_lossy(&body)
                        );
                        body
                    }
                    Target::Kubectl { env, token, path } => {
                        let mut cmd = env.kubectl(token)?;
                        cmd.arg("get").arg("--raw").arg(path);
                        let out = tokio::task::spawn_blocking(move || cmd.output()).await??;
                        ensure!(
                            out.status.success(),
                            "kubectl: {}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                        out.stdout
                    }
                };
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
                last = summarize(&body)?;
            }
            anyhow::Ok((lat, last))
        }));
    }
    let mut latencies_ms = Vec::new();
    let mut last = (0, false);
    for t in tasks {
        let (lat, l) = t.await??;
        latencies_ms.extend(lat);
        last = l;
    }
    Ok(Pass {
        latencies_ms,
        items: last.0,
        cont: last.1,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let env = BenchEnv::load(&args.state)?;
    let client = admin_client(&env).await?;
    seed(&args, &client).await?;
    let ns = &args.namespace;
    let api = runs_api(client.clone(), ns);
    let mut times = creation_times(&api).await?;
    ensure!(times.len() >= args.runs, "only {} Runs", times.len());
    times.sort();
    let first = times[0];
    let late = times[times.len() * 9 / 10];
    eprintln!(
        "{} Runs created {first} .. {}; 90% at {late}",
        times.len(),
        times[times.len() - 1]
    );

    let token = env.var("TESTENV_TOKEN_ADMIN")?.to_owned();
    let selectable = args.crd == "selectable";
    let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(if selectable {
        "../manifests/crds-variants/run-with-selectable-fields.yaml"
    } else {
        "../manifests/crds/runs.yaml"
    });
    let out = env
        .kubectl(&token)?
        .arg("apply")
        .arg("-f")
        .arg(&crd)
        .output()?;
    ensure!(
        out.status.success(),
        "applying {}: {}",
        crd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // The API server takes (or drops) the selectable fields a moment after the apply.
    let mut settled = false;
    for _ in 0..100 {
        let probe = env
            .kubectl(&token)?
            .args([
                "-n",
                ns,
                "get",
                "runs",
                "--field-selector",
                "status.phase=Failed",
                "-o",
                "name",
            ])
            .output()?;
        if probe.status.success() == selectable {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ensure!(
        settled,
        "the Run CRD {} field selectors after applying {}",
        if selectable {
            "still refuses"
        } else {
            "still accepts"
        },
        crd.display()
    );
    let console = TlsClient::new(
        env.var("CONSOLE_URL")?,
        std::path::Path::new(env.var("CONSOLE_CA")?),
        None,
    )?;
    let apiserver = TlsClient::new(
        env.var("TESTENV_APISERVER")?,
        std::path::Path::new(env.var("TESTENV_CA")?),
        None,
    )?;
    let console_pid = env.pid("console")?;
    let apiserver_pid = env.pid("kube-apiserver")?;
    // Without selectable fields a client reads a page of 500 to find 50
    // Failed Runs (an eighth of them): the first page is what it costs.
    let raw = if selectable {
        format!(
            "/apis/kruntimes.io/v1alpha1/namespaces/{ns}/runs?fieldSelector=status.phase%3DFailed&limit=50"
        )
    } else {
        format!("/apis/kruntimes.io/v1alpha1/namespaces/{ns}/runs?limit=500")
    };
    let c = |q: &str| Target::Http {
        client: console.clone(),
        token: token.clone(),
        path: format!("/api/namespaces/{ns}/runs?{q}"),
    };
    let cases: Vec<(&str, Target, usize, usize)> = vec![
        (
            "console-phase",
            c("phase=Failed&limit=50"),
            args.requests,
            1,
        ),
        (
            "apiserver-phase",
            Target::Http {
                client: apiserver.clone(),
                token: token.clone(),
                path: raw.clone(),
            },
            args.requests,
            1,
        ),
        (
            "kubectl-phase",
            Target::Kubectl {
                env: env.clone(),
                token: token.clone(),
                path: raw.clone(),
            },
            args.kubectl_requests,
            1,
        ),
        (
            "console-phase-created-first",
            c(&format!("phase=Failed&createdAfter={first}&limit=50")),
            args.requests,
            1,
        ),
        (
            "console-phase-created-late",
            c(&format!("phase=Failed&createdAfter={late}&limit=50")),
            args.requests,
            1,
        ),
        (
            "console-created-late",
            c(&format!("createdAfter={late}&limit=50")),
            args.requests,
            1,
        ),
        (
            "console-phase-concurrent",
            c("phase=Failed&limit=50"),
            args.requests * 4,
            args.concurrency,
        ),
        (
            "apiserver-phase-concurrent",
            Target::Http {
                client: apiserver.clone(),
                token: token.clone(),
                path: raw.clone(),
            },
            args.requests * 4,
            args.concurrency,
        ),
    ];
    let only: Option<Vec<&str>> = args.only.as_deref().map(|o| o.split(',').collect());

    let idle = procfs::memory(console_pid)?;
    println!(
        "Console idle: VmRSS {} MiB, VmHWM {} MiB (load {})",
        mib(idle.rss_kib),
        mib(idle.hwm_kib),
        procfs::load_average()
    );
    println!(
        "| case | conns | requests × passes | p50 ms, median (min–max) | p99 ms, median (min–max) | req/s, median | items / continue | Console CPU ms/req | kube-apiserver CPU ms/req | Console RSS MiB before / peak / after | load |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (name, target, requests, conns) in &cases {
        if only.as_ref().is_some_and(|o| !o.contains(name)) {
            continue;
        }
        let load = procfs::load_average();
        // Warm-up: connections, the authorization cache, kubectl's discovery cache.
        pass(target, (*conns).max(3), *conns).await?;
        procfs::reset_peak(console_pid)?;
        let before = procfs::memory(console_pid)?;
        let (cpu_c, cpu_a) = (
            procfs::cpu_seconds(console_pid)?,
            procfs::cpu_seconds(apiserver_pid)?,
        );
        let mut p50 = Vec::new();
        let mut p99 = Vec::new();
        let mut rps = Vec::new();
        let mut shape = (0, false);
        for _ in 0..args.passes {
            let p = pass(target, *requests, *conns).await?;
            p50.push(stats::percentile(&p.latencies_ms, 50.0));
            p99.push(stats::percentile(&p.latencies_ms, 99.0));
            rps.push(p.latencies_ms.len() as f64 / p.wall_s);
            shape = (p.items, p.cont);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let total = (*requests * args.passes) as f64;
        let cpu_c = (procfs::cpu_seconds(console_pid)? - cpu_c) * 1000.0 / total;
        let cpu_a = (procfs::cpu_seconds(apiserver_pid)? - cpu_a) * 1000.0 / total;
        let after = procfs::memory(console_pid)?;
        println!(
            "| {name} | {conns} | {requests} × {} | {} | {} | {:.0} | {} / {} | {cpu_c:.2} | {cpu_a:.2} | {} / {} / {} | {load} |",
            args.passes,
            stats::range(&p50, 1),
            stats::range(&p99, 1),
            stats::median(&rps),
            shape.0,
            if shape.1 { "yes" } else { "no" },
            mib(before.rss_kib),
            mib(after.hwm_kib),
            mib(after.rss_kib),
        );
    }
    let m = procfs::memory(console_pid)?;
    println!(
        "Console at the end: VmRSS {} MiB (load {})",
        mib(m.rss_kib),
        procfs::load_average()
    );
    Ok(())
}
