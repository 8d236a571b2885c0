//! `kruntimes-console dashboard` (the seeds' `krt dashboard`): the Console
//! on a developer's machine with their kubeconfig identity, for local
//! development only.
//!
//! Order of work: the listen address is checked to be loopback before
//! anything else; the kubeconfig's credential is classified (a token or an
//! exec plugin becomes `Authorization: Bearer` through kube's auth layer; a
//! client certificate is presented on the TLS connection to the Console);
//! the Console's CA is read (`--ca-file`, the APIService caBundle, or the
//! TLS Secret); one request (`GET /api/session`) through a port-forward
//! proves that a Console Pod answers, that its certificate verifies, and
//! that it takes the credential; only then does the proxy listen. On
//! Ctrl-C or SIGTERM it stops accepting, closes every browser connection
//! and every port-forward, and waits (at most `--shutdown-timeout`) until
//! none is open.

pub mod args;
pub mod guard;
pub mod serve;
pub mod upstream;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use args::DashboardArgs;
use guard::Own;
use serve::Limits;
use upstream::{Credential, Upstream};

/// Runs the proxy until Ctrl-C or SIGTERM.
pub async fn run(args: DashboardArgs) -> anyhow::Result<()> {
    args.validate()?;
    // Before anything else: nothing listens on a non-loopback address.
    let addr = guard::loopback(&args.address, args.port).map_err(anyhow::Error::msg)?;

    let config = kubeconfig(&args).await?;
    let credential = Credential::of(&config)?;
    let client = kube::Client::try_from(config.clone()).context("the kubeconfig")?;
    let (ca, ca_from) = upstream::console_ca(&args, &client).await?;
    let shutdown = CancellationToken::new();
    let upstream = Arc::new(Upstream::new(
        &args,
        &config,
        client,
        ca,
        credential,
        shutdown.clone(),
    )?);

    let (user, target) = whoami(&upstream).await?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let own = Own::new(listener.local_addr()?);
    eprintln!(
        "dashboard: the Console at {target} (certificate verified as {} against {ca_from}) takes your kubeconfig credential as user {user:?}",
        upstream.host
    );
    eprintln!(
        "dashboard: local development only, not a production authentication mode: any process on this machine that connects to {} acts as {user:?}",
        own.authority
    );
    // The line a script waits for.
    println!("Console: {}", own.url());
    if args.open {
        open_browser(&own.url());
    }

    let limits = Limits {
        max_connections: args.max_connections,
        max_request_bytes: args.max_request_bytes,
        max_header_bytes: args.max_header_bytes,
        header_timeout: args.header_timeout.into(),
        response_timeout: args.response_timeout.into(),
    };
    let server = tokio::spawn(serve::serve(
        listener,
        own,
        upstream.clone(),
        limits,
        shutdown.clone(),
    ));
    let why = stop_signal().await;
    eprintln!("dashboard: {why}: closing every connection and port-forward");
    shutdown.cancel();
    let _ = server.await;
    let deadline = tokio::time::Instant::now() + Duration::from(args.shutdown_timeout);
    while upstream.open_port_forwards() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match upstream.open_port_forwards() {
        0 => {
            eprintln!("dashboard: every port-forward is closed");
            Ok(())
        }
        n => bail!(
            "{n} port-forward(s) still open after {:?} (--shutdown-timeout)",
            args.shutdown_timeout.0
        ),
    }
}

/// The kubeconfig (`--kubeconfig`, else `$KUBECONFIG` or `~/.kube/config`),
/// with `--context`. Never the in-cluster configuration.
async fn kubeconfig(args: &DashboardArgs) -> anyhow::Result<kube::Config> {
    let options = kube::config::KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    match &args.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))
        }
        None => kube::Config::from_kubeconfig(&options).await.context(
            "reading the kubeconfig ($KUBECONFIG or ~/.kube/config; or pass --kubeconfig)",
        ),
    }
}

/// `GET /api/session` through a port-forward with the credential: the
/// user name the Console sees, and the Pod that answered.
async fn whoami(upstream: &Upstream) -> anyhow::Result<(String, String)> {
    let answer = ask_session(upstream).await;
    match (&upstream.credential, answer) {
        (Credential::Certificate, Err(e)) => Err(e.context(CERTIFICATE_UNSUPPORTED)),
        (_, answer) => answer,
    }
}

const CERTIFICATE_UNSUPPORTED: &str = "the Console did not take the kubeconfig's client certificate: it verifies client certificates only when installed with console.tls.clientCASecretName naming the CA that signed it (and even then /api reads need a bearer token). Use a kubeconfig user with a token or an exec plugin";

async fn ask_session(upstream: &Upstream) -> anyhow::Result<(String, String)> {
    let (tls, _pf, target) = upstream.connect().await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    let conn = tokio::spawn(conn);
    let mut req = http::Request::get("/api/session")
        .header(http::header::HOST, &upstream.host)
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())?;
    if let Some(v) = upstream.credential.authorization().await? {
        req.headers_mut().insert(http::header::AUTHORIZATION, v);
    }
    let resp = tokio::time::timeout(Duration::from_secs(30), sender.send_request(req))
        .await
        .context("the Console did not answer GET /api/session within 30s")?
        .context("GET /api/session")?;
    let status = resp.status();
    let body = tokio::time::timeout(Duration::from_secs(30), resp.into_body().collect())
        .await
        .context("reading the answer to GET /api/session")??
        .to_bytes();
    drop(sender);
    conn.abort();
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        bail!(
            "the Console at {target} refused the kubeconfig's credential: GET /api/session answered {status}: {}",
            text.trim()
        );
    }
    let info: serde_json::Value =
        serde_json::from_slice(&body).with_context(|| format!("GET /api/session: {text}"))?;
    match info["username"].as_str() {
        Some(user) if info["authenticated"] == true => Ok((user.to_owned(), target)),
        _ => match upstream.credential {
            Credential::Certificate => bail!("{CERTIFICATE_UNSUPPORTED} (Console at {target})"),
            Credential::Bearer(_) => bail!(
                "the Console at {target} did not take the kubeconfig's token: GET /api/session answered {}",
                text.trim()
            ),
        },
    }
}

/// Ctrl-C or SIGTERM, in words.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "interrupted",
            _ = term.recv() => "SIGTERM",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "interrupted"
    }
}

/// Opens `url` in the default browser, without waiting for it.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!("dashboard: --open: {opener}: {e}; open {url} yourself"),
    }
}
