//! The composition root: `build` makes every component from the flags
//! (nothing bound yet), `bind` opens the listeners, `serve` runs them until
//! a signal and shuts down gracefully. Readiness is a handle each component
//! sets for itself; the admin listener's `/ready` reports them.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use kruntimes_apiserver::logs::handler::LogApi;
use kruntimes_core::auth::{AccessReview, Authenticator, RequestHeaderSource, TokenReviewer};
use kruntimes_core::lifecycle::{Lifecycle, Phase};
use kruntimes_core::limit::{ByteBudget, Caps, Reserve};
use kruntimes_core::metrics::Metrics;
use kruntimes_core::ready::Readiness;
use kruntimes_core::tls::{ClientRoots, DynamicClientVerifier, ReloadingCert, server_config};
use kruntimes_transport::serve::{FastPath, serve_tls};
use kruntimes_transport::workers::Workers;
use tokio::net::TcpListener;

use crate::admin;
use crate::args::Args;
use kruntimes_console_http::{clients, router, runtime_access, session, state};

/// Builds the server's own Kubernetes configuration (its ServiceAccount
/// identity): `kubeconfig`, or the in-cluster configuration without it.
pub(crate) async fn service_account_config(
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<kube::Config> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("--kubeconfig {}: cannot be read", path.display()))?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .with_context(|| format!("--kubeconfig {}: not usable", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("no --kubeconfig given and no in-cluster configuration found")?,
    };
    Ok(config)
}

/// Keeps a verifier's client CA in step with a file on disk.
fn watch_client_ca(
    path: std::path::PathBuf,
    verifier: Arc<DynamicClientVerifier>,
) -> anyhow::Result<()> {
    let load = |path: &std::path::Path| -> anyhow::Result<_> {
        let pem = std::fs::read(path)
            .with_context(|| format!("--client-ca-file {}: cannot be read", path.display()))?;
        let roots = kruntimes_core::tls::root_store(&pem, &path.display().to_string())?;
        Ok(kruntimes_core::tls::client_verifier(roots)?)
    };
    verifier.set_client_ca(Some(load(&path)?));
    let mut last = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let now = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            if now != last {
                last = now;
                match load(&path) {
                    Ok(v) => {
                        verifier.set_client_ca(Some(v));
                        tracing::info!(file = %path.display(), "client CA reloaded");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "client CA changed but could not be loaded; keeping the previous one")
                    }
                }
            }
        }
    });
    Ok(())
}

/// Runs every listener until SIGTERM or Ctrl-C.
pub async fn run(args: Args) -> anyhow::Result<()> {
    args.validate()?;
    let built = build(&args).await?;
    let bound = bind(&args).await?;
    serve(&args, built, bound).await;
    Ok(())
}

/// Everything the listeners serve, built from the flags.
pub struct Built {
    api_router: Router,
    api_tls: Arc<rustls::ServerConfig>,
    console_router: Router,
    console_tls: Arc<rustls::ServerConfig>,
    metrics: Metrics,
    lifecycle: Lifecycle,
    readiness: Readiness,
    console_threads: Option<Workers>,
    /// The `/v1` invoke fast path of the Console listener.
    fast: Option<Arc<dyn FastPath>>,
}

/// Keeps `kruntimes_console_tls_certificate_expiry_timestamp_seconds` of a
/// listener true at every scrape (the files are re-read when they changed).
fn expiry_gauge(metrics: &Metrics, listener: &'static str, cert: Arc<ReloadingCert>) {
    let gauge = metrics
        .tls_certificate_expiry
        .get_or_create(&kruntimes_core::metrics::ListenerLabels { listener })
        .clone();
    let set = move || {
        if let Some(t) = cert.expiry() {
            gauge.set(t);
        }
    };
    set();
    metrics.on_scrape(set);
}

/// Builds every component; watches (the authentication ConfigMap, the `/v1`
/// Run cache, certificate files) start here; the first two answer the
/// readiness from their own state.
pub async fn build(args: &Args) -> anyhow::Result<Built> {
    let metrics = Metrics::default();
    let lifecycle = Lifecycle::default();
    let readiness = Readiness::default();
    let sa_config = service_account_config(args.kubeconfig.as_deref()).await?;
    let sa = clients::service_account(&sa_config, args.kube_idle_connections)
        .context("building the Kubernetes client")?;
    let tokens = TokenReviewer::new(
        sa.clone(),
        args.authentication_cache_ttl.into(),
        metrics.clone(),
    );
    let access = AccessReview::new(
        sa.clone(),
        args.authorization_cache_ttl.into(),
        metrics.clone(),
    );

    // Long-lived streams re-check access at least once per cache TTL.
    let recheck = kruntimes_core::auth::Recheck {
        tokens: tokens.clone(),
        access: access.clone(),
        interval: std::cmp::min(
            args.authentication_cache_ttl.0,
            args.authorization_cache_ttl.0,
        ),
    };

    // Aggregated API listener: client trust roots come from the authentication ConfigMap.
    let api_verifier = Arc::new(DynamicClientVerifier::new(ClientRoots::default()));
    let request_header = RequestHeaderSource::watch(sa.clone(), api_verifier.clone());
    readiness.add(
        "the authentication configuration (kube-system/extension-apiserver-authentication)",
        {
            let request_header = request_header.clone();
            move || request_header.is_loaded()
        },
    );
    let (Some(api_cert_file), Some(api_key_file)) = (
        args.apiserver_tls_cert.clone(),
        args.apiserver_tls_key.clone(),
    ) else {
        anyhow::bail!("--apiserver-tls-cert and --apiserver-tls-key are required");
    };
    let api_cert = Arc::new(
        ReloadingCert::new(api_cert_file.clone(), api_key_file.clone())
            .context("--apiserver-tls-cert/--apiserver-tls-key")?,
    );
    expiry_gauge(&metrics, "apiserver", api_cert.clone());
    let api_tls = Arc::new(server_config(api_cert, api_verifier.clone(), true)?);
    let api_authn = Authenticator::new(api_verifier, Some(request_header.clone()), tokens.clone());
    let follow_caps = |listener| {
        Caps::new(
            "open log follows",
            args.max_follows,
            "--max-follows",
            args.max_follows_per_caller,
            "--max-follows-per-caller",
        )
        .counted_in(&metrics, listener, "follows")
    };
    let log_limits = args.log_limits();
    let log_api = Arc::new(LogApi {
        service_account: sa.clone(),
        access: access.clone(),
        metrics: metrics.clone(),
        follows: follow_caps("apiserver"),
        recheck: recheck.clone(),
        lifecycle: lifecycle.clone(),
        fanout: LogApi::fanout(&metrics, &log_limits),
        reads: LogApi::reads(&log_limits),
        limits: log_limits,
        run_watch: kruntimes_apiserver::logs::runwatch::RunWatch::new(sa.clone()),
        live: args.live_output(),
        live_failures: Default::default(),
        numbers: Default::default(),
    });
    let api_router = kruntimes_apiserver::server::router(log_api, api_authn, Some(request_header));

    // Console listener: client certificates only from --client-ca-file.
    let console_verifier = Arc::new(DynamicClientVerifier::new(ClientRoots::default()));
    if let Some(path) = &args.client_ca_file {
        watch_client_ca(path.clone(), console_verifier.clone())?;
    }
    let console_cert = Arc::new(
        ReloadingCert::new(
            args.console_tls_cert.clone().unwrap_or(api_cert_file),
            args.console_tls_key.clone().unwrap_or(api_key_file),
        )
        .context("--console-tls-cert/--console-tls-key")?,
    );
    expiry_gauge(&metrics, "console", console_cert.clone());
    let console_tls = Arc::new(server_config(console_cert, console_verifier.clone(), true)?);
    let ttl = args.session_ttl.0.as_secs() as i64;
    let sealer = match &args.cookie_key_file {
        Some(path) => {
            let sealer = Arc::new(session::SessionSealer::from_file(path, ttl)?);
            tracing::info!(file = %path.display(), keys = ?sealer.key_ids(), "cookie keys loaded; the first seals");
            sealer.watch(path.clone());
            sealer
        }
        None => {
            tracing::warn!(
                "no --cookie-key-file: sessions are sealed with a random key and end with this process"
            );
            Arc::new(session::SessionSealer::ephemeral(ttl)?)
        }
    };
    let console_state = Arc::new(state::ConsoleState {
        authn: Authenticator::new(console_verifier, None, tokens.clone()),
        access: access.clone(),
        sealer,
        users: clients::UserClients::new(sa_config.clone(), args.kube_idle_connections)?,
        service_account: sa.clone(),
        public_read: args.public_read,
        metrics: metrics.clone(),
        follows: follow_caps("console"),
        watches: Caps::new(
            "open watch streams",
            args.max_watches,
            "--max-watches",
            args.max_watches_per_caller,
            "--max-watches-per-caller",
        )
        .counted_in(&metrics, "console", "watches"),
        recheck: recheck.clone(),
        lifecycle: lifecycle.clone(),
    });
    let gateway_tls = runtime_access::gateway::client_tls(
        args.gateway_ca_file.as_deref(),
        args.gateway_client_cert.as_deref(),
        args.gateway_client_key.as_deref(),
    )?;
    let console_threads = match args
        .console_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    {
        0 => None,
        n => Some(
            Workers::start(n, "console-conn").context("--console-threads: cannot start threads")?,
        ),
    };
    let run_cache = runtime_access::runs::RunCache::start(sa.clone());
    readiness.add("the /v1 Run cache", {
        let run_cache = run_cache.clone();
        move || run_cache.is_ready()
    });
    let v1_state = Arc::new(
        runtime_access::AccessState::new(
            run_cache,
            runtime_access::gateway::GatewayResolver::new(
                sa.clone(),
                args.gateway_port_name.clone(),
                args.access_connect_timeout.into(),
            ),
            access.clone(),
            gateway_tls,
            runtime_access::AccessBounds {
                max_request_bytes: args.access_max_request_bytes,
                max_response_bytes: args.access_max_response_bytes,
                max_ws_message_bytes: args.access_max_ws_message_bytes,
                idle_timeout: args.access_idle_timeout.into(),
                total_timeout: args.access_total_timeout.into(),
                connect_timeout: args.access_connect_timeout.into(),
                body_timeout: args.access_body_timeout.into(),
            },
            Caps::new(
                "concurrent /v1 calls",
                args.access_max_concurrent_calls,
                "--access-max-concurrent-calls",
                args.access_max_concurrent_calls_per_caller,
                "--access-max-concurrent-calls-per-caller",
            )
            .with_reserve(Reserve::share(
                args.access_max_concurrent_calls,
                args.access_max_concurrent_calls_per_caller,
                args.reserve_for_light_callers,
            ))
            .counted_in(&metrics, "console", "v1_calls"),
            recheck,
        )
        .with_buffer_budget(
            ByteBudget::new(
                runtime_access::BUFFERED_WHAT,
                args.access_max_buffered_bytes,
                runtime_access::BUFFERED_FLAG,
                args.access_max_buffered_bytes_per_caller,
                runtime_access::BUFFERED_PER_CALLER_FLAG,
            )
            .with_reserve(args.buffer_reserve())
            .counted_in(&metrics, "console", "v1_buffered_bytes"),
        )
        .with_threads(console_threads.as_ref().map_or(0, Workers::len))
        .with_lifecycle(lifecycle.clone()),
    );
    let observer = router::observer(&console_state);
    let fast: Option<Arc<dyn FastPath>> = args.access_fast_path.then(|| {
        Arc::new(runtime_access::fast::InvokeFastPath::new(
            console_state.clone(),
            v1_state.clone(),
            observer.clone(),
            args.max_header_bytes,
        )) as Arc<dyn FastPath>
    });
    let console_router = router::router_with(
        console_state,
        runtime_access::router(v1_state),
        args.max_header_bytes,
        observer,
    );
    Ok(Built {
        api_router,
        api_tls,
        console_router,
        console_tls,
        metrics,
        lifecycle,
        readiness,
        console_threads,
        fast,
    })
}

/// The three listening sockets.
pub struct Bound {
    api: TcpListener,
    console: TcpListener,
    admin: TcpListener,
}

/// Binds every listener, or says which flag's address cannot be bound.
pub async fn bind(args: &Args) -> anyhow::Result<Bound> {
    let api = TcpListener::bind(args.apiserver_listen)
        .await
        .with_context(|| format!("--apiserver-listen {}: cannot bind", args.apiserver_listen))?;
    let console = TcpListener::bind(args.console_listen)
        .await
        .with_context(|| format!("--console-listen {}: cannot bind", args.console_listen))?;
    let admin = TcpListener::bind(args.admin_listen)
        .await
        .with_context(|| format!("--admin-listen {}: cannot bind", args.admin_listen))?;
    tracing::info!(
        apiserver = %api.local_addr()?,
        console = %console.local_addr()?,
        admin = %admin.local_addr()?,
        "listening"
    );
    Ok(Bound {
        api,
        console,
        admin,
    })
}

/// Serves until SIGTERM or Ctrl-C, then shuts down gracefully.
pub async fn serve(args: &Args, built: Built, bound: Bound) {
    let Built {
        api_router,
        api_tls,
        console_router,
        console_tls,
        metrics,
        lifecycle,
        readiness,
        console_threads,
        fast,
    } = built;
    let stopping = || {
        let lifecycle = lifecycle.clone();
        async move { lifecycle.stopping().await }
    };
    let console_limits = args.console_limits();
    let api_limits = args.apiserver_limits();
    let console_task = tokio::spawn(serve_tls(
        bound.console,
        console_tls,
        console_router,
        console_limits,
        "console",
        metrics.clone(),
        stopping(),
        console_threads,
        fast,
    ));
    let api_task = tokio::spawn(serve_tls(
        bound.api,
        api_tls,
        api_router,
        api_limits,
        "apiserver",
        metrics.clone(),
        stopping(),
        None,
        None,
    ));
    // The admin listener answers probes and metrics until the very end.
    let (admin_stop, admin_stopped) = tokio::sync::oneshot::channel::<()>();
    let admin_task = tokio::spawn(admin::serve(
        bound.admin,
        metrics,
        readiness,
        lifecycle.clone(),
        console_limits,
        async move {
            let _ = admin_stopped.await;
        },
    ));

    wait_for_signal().await;
    shut_down(
        &lifecycle,
        args.shutdown_delay.into(),
        args.shutdown_timeout.into(),
        async move {
            let _ = tokio::join!(api_task, console_task);
        },
    )
    .await;
    let _ = admin_stop.send(());
    let _ = admin_task.await;
}

/// Leaves the Service gracefully: not ready but serving for `delay` (so
/// endpoints and kube-proxy move new connections elsewhere), then no new
/// connections, long-lived streams told to end, and at most `timeout` for
/// the requests and streams still open.
async fn shut_down(
    lifecycle: &Lifecycle,
    delay: Duration,
    timeout: Duration,
    listeners_done: impl std::future::Future<Output = ()>,
) {
    tracing::info!(
        delay_seconds = delay.as_secs_f64(),
        "shutting down: not ready, still serving"
    );
    lifecycle.enter(Phase::Draining);
    tokio::time::sleep(delay).await;
    tracing::info!(
        open_streams = lifecycle.open_streams(),
        "shutting down: no new connections; finishing open requests"
    );
    lifecycle.enter(Phase::Stopping);
    let finished = async {
        listeners_done.await;
        lifecycle.streams_ended().await;
    };
    if tokio::time::timeout(timeout, finished).await.is_err() {
        tracing::warn!(
            open_streams = lifecycle.open_streams(),
            timeout_seconds = timeout.as_secs_f64(),
            "shutting down: requests still open after the shutdown timeout; closing them"
        );
    } else {
        tracing::info!("shut down");
    }
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
