//! fake-gateway: a stand-in for a Runtime's gateway Service serving `/v1` invoke and
//! `operations:ws` over mutual TLS, with a plain-HTTP control API for tests.
#![forbid(unsafe_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use kruntimes_tests::sim::cli::{self, ListenError};
use kruntimes_tests::sim::gateway::{Gateway, TlsSide};
use kruntimes_tests::sim::gateway_control;
use kruntimes_tests::sim::tls::{self, TlsError};

/// A fake Runtime gateway: echoes invocations, scripts session operations, never runs commands.
#[derive(Debug, Parser)]
#[command(name = "fake-gateway", version)]
struct Args {
    /// TLS address to listen on; port 0 picks a free port. Printed as the first stdout line,
    /// `listening on ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// PEM server certificate (chain).
    #[arg(long)]
    tls_cert: PathBuf,
    /// PEM private key of the server certificate.
    #[arg(long)]
    tls_key: PathBuf,
    /// PEM CA bundle; every client must present a certificate it signed.
    #[arg(long)]
    client_ca: PathBuf,
    /// Plain-HTTP control API address (port 0 picks one). Printed as the second stdout line,
    /// `control on ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    control_listen: SocketAddr,
    /// Offer only HTTP/1.1 in TLS ALPN (by default HTTP/2 is offered too).
    #[arg(long)]
    no_http2: bool,
    /// File to write the addresses to, atomically: the TLS address on the first line and the
    /// control address on the second.
    #[arg(long)]
    addr_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Listen(#[from] ListenError),
    #[error("control API failed: {0}")]
    Control(std::io::Error),
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
            eprintln!("fake-gateway: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Error> {
    let tls = tls::server_config_with_alpn(
        &args.tls_cert,
        &args.tls_key,
        Some(&args.client_ca),
        !args.no_http2,
    )?;
    let (listener, bound) = cli::bind(args.listen).await?;
    let (control_listener, control_bound) = cli::bind(args.control_listen).await?;

    let gateway = Arc::new(Gateway::default());
    let tls_side = TlsSide::start(Arc::clone(&gateway), listener, bound, tls);
    let control = gateway_control::router(Arc::clone(&gateway), Arc::clone(&tls_side));

    if let Some(path) = &args.addr_file {
        cli::write_addr_file(path, &format!("{bound}\n{control_bound}\n"))?;
    }
    println!("listening on {bound}");
    println!("control on {control_bound}");
    let _ = std::io::stdout().flush();
    tracing::info!(%bound, control = %control_bound, "fake gateway serving /v1");

    axum::serve(control_listener, control)
        .with_graceful_shutdown(cli::shutdown_signal())
        .await
        .map_err(Error::Control)?;
    tls_side.down().await;
    Ok(())
}
