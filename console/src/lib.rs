//! The kruntimes Console: one process, two HTTPS listeners (the aggregated
//! Run-log API and the Console) sharing one authentication/authorization
//! layer, plus a plain-HTTP admin listener for probes and metrics.
#![forbid(unsafe_code)]

pub mod admin;
pub mod args;
pub mod logging;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use kruntimes_apiserver::auth::{AccessReview, Authenticator, RequestHeaderSource, TokenReviewer};
use kruntimes_apiserver::logs::handler::LogApi;
use kruntimes_apiserver::metrics::Metrics;
use kruntimes_apiserver::serve::{ConnLimits, serve_tls};
use kruntimes_apiserver::tls::{ClientRoots, DynamicClientVerifier, ReloadingCert, server_config};
use tokio::net::TcpListener;

pub use args::Args;

/// Builds the server's own Kubernetes client (its ServiceAccount identity).
async fn service_account_client(args: &Args) -> anyhow::Result<kube::Client> {
    let config = match &args.kubeconfig {
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
    kube::Client::try_from(config).context("building the Kubernetes client")
}

/// Runs every listener until SIGTERM or Ctrl-C.
pub async fn run(args: Args) -> anyhow::Result<()> {
    args.validate()?;
    let metrics = Metrics::default();
    let sa = service_account_client(&args).await?;
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

    // Aggregated API listener: client trust roots come from the authentication ConfigMap.
    let api_verifier = Arc::new(DynamicClientVerifier::new(ClientRoots::default()));
    let request_header = RequestHeaderSource::watch(sa.clone(), api_verifier.clone());
    let api_cert = Arc::new(
        ReloadingCert::new(
            args.apiserver_tls_cert.clone(),
            args.apiserver_tls_key.clone(),
        )
        .context("--apiserver-tls-cert/--apiserver-tls-key")?,
    );
    let api_tls = Arc::new(server_config(api_cert, api_verifier.clone(), true)?);
    let api_authn = Authenticator::new(api_verifier, Some(request_header.clone()), tokens.clone());
    let log_api = Arc::new(LogApi {
        service_account: sa.clone(),
        access: access.clone(),
        metrics: metrics.clone(),
    });
    let api_router =
        kruntimes_apiserver::server::router(log_api, api_authn, Some(request_header.clone()));

    let api_listener = TcpListener::bind(args.apiserver_listen)
        .await
        .with_context(|| format!("--apiserver-listen {}: cannot bind", args.apiserver_listen))?;
    let admin_listener = TcpListener::bind(args.admin_listen)
        .await
        .with_context(|| format!("--admin-listen {}: cannot bind", args.admin_listen))?;
    tracing::info!(
        apiserver = %api_listener.local_addr()?,
        admin = %admin_listener.local_addr()?,
        "listening"
    );

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let limits = ConnLimits {
        handshake_timeout: Duration::from_secs(10),
        max_header_bytes: args.max_header_bytes,
    };
    let api_task = tokio::spawn(serve_tls(
        api_listener,
        api_tls,
        api_router,
        limits,
        shutdown(),
    ));
    let admin_task = tokio::spawn(admin::serve(
        admin_listener,
        metrics.clone(),
        request_header.clone(),
        shutdown(),
    ));

    wait_for_signal().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    let _ = tokio::join!(api_task, admin_task);
    Ok(())
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
