//! fake-kubelet: serves `/containerLogs/{namespace}/{pod}/{container}` over TLS from log files,
//! so kube-apiserver's `pods/log` works without a real node.
#![forbid(unsafe_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kruntimes_tests::sim::cli::{self, ListenError};
use kruntimes_tests::sim::kubelet::{self, Kubelet};
use kruntimes_tests::sim::logwake::LogWake;
use kruntimes_tests::sim::podwatch::{PodWatch, PodWatchError};
use kruntimes_tests::sim::serve::serve_tls;
use kruntimes_tests::sim::tls::{self, TlsError};
use tokio_util::sync::CancellationToken;

/// A stand-in for the kubelet's container log endpoint, serving
/// `<logs-dir>/<namespace>_<pod>/<container>.log` (CRI log format; other lines are skipped, as
/// the kubelet skips them), and `<container>.previous.log` for `previous=true`.
#[derive(Debug, Parser)]
#[command(name = "fake-kubelet", version)]
struct Args {
    /// Address to listen on; port 0 picks a free port. The bound address is printed as the
    /// first stdout line, `listening on ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// File to write the bound address to (`ADDR` and a newline), written atomically.
    #[arg(long)]
    addr_file: Option<PathBuf>,
    /// PEM server certificate (chain).
    #[arg(long)]
    tls_cert: PathBuf,
    /// PEM private key of the server certificate.
    #[arg(long)]
    tls_key: PathBuf,
    /// Directory holding `<namespace>_<pod>/<container>.log` files.
    #[arg(long)]
    logs_dir: PathBuf,
    /// Kubeconfig (admin) used to watch Pods, so a follow ends when its Pod is deleted or
    /// replaced. Without it, a follow ends only when the file is removed.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error(transparent)]
    Pods(#[from] PodWatchError),
    #[error("logs directory {0} does not exist or is not a directory")]
    LogsDir(PathBuf),
}

#[tokio::main]
async fn main() -> ExitCode {
    tls::install_crypto_provider();
    cli::init_tracing();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err}");
            eprintln!("fake-kubelet: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Error> {
    if !args.logs_dir.is_dir() {
        return Err(Error::LogsDir(args.logs_dir));
    }
    let tls = tls::server_config(&args.tls_cert, &args.tls_key, None)?;
    let pods = match &args.kubeconfig {
        Some(path) => Some(PodWatch::start(path).await?),
        None => None,
    };
    // As the kubelet does, a follower re-reads when its file changes; it polls if inotify fails.
    let wake = LogWake::new().unwrap_or_else(|err| {
        tracing::warn!(error = %err, "inotify is not available; followers poll their files");
        LogWake::none()
    });
    let router = kubelet::router(Kubelet {
        logs_dir: args.logs_dir.clone(),
        pods,
        wake,
    });
    let (listener, bound) = cli::bind(args.listen).await?;
    if let Some(path) = &args.addr_file {
        cli::write_addr_file(path, &format!("{bound}\n"))?;
    }
    println!("listening on {bound}");
    let _ = std::io::stdout().flush();
    tracing::info!(%bound, logs_dir = %args.logs_dir.display(), "fake kubelet serving container logs");

    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve_tls(listener, tls, router, shutdown.clone()));
    cli::shutdown_signal().await;
    shutdown.cancel();
    let _ = server.await;
    Ok(())
}
