//! Small helpers shared by the simulator binaries.

use std::net::SocketAddr;
use std::path::Path;

use tokio::net::TcpListener;

/// Errors while starting a listener.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot write the address file {path}: {source}")]
    AddrFile {
        path: String,
        source: std::io::Error,
    },
}

/// Binds a TCP listener and returns it with its actual address (port 0 picks a free port).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), ListenError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ListenError::Bind { addr, source })?;
    Ok((listener, bound))
}

/// Writes an address file atomically.
pub fn write_addr_file(path: &Path, contents: &str) -> Result<(), ListenError> {
    crate::sim::serve::write_addr_file(path, contents).map_err(|source| ListenError::AddrFile {
        path: path.display().to_string(),
        source,
    })
}

/// Logs to stderr (stdout carries the bound address), filtered by `RUST_LOG` (default `info`).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Resolves when the process is asked to stop (SIGINT or SIGTERM).
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
