//! `kruntimes-console`: the aggregated Run-log API and the Console in one binary.
#![forbid(unsafe_code)]

use clap::Parser;
use kruntimes_console::args::Command;

/// mimalloc: a proxied `/v1` call costs ~25% less CPU than with glibc's
/// allocator. Its arenas are committed lazily (`.cargo/config.toml`), which
/// keeps idle memory where glibc's was.
#[cfg(not(feature = "heap-profile"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `--features heap-profile`: every allocation recorded with its stack.
#[cfg(feature = "heap-profile")]
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

fn main() -> anyhow::Result<()> {
    // Written to dhat-heap.json when main returns (after a graceful stop).
    #[cfg(feature = "heap-profile")]
    let _profiler = dhat::Profiler::new_heap();
    // One crypto provider for every rustls user in the process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut args = kruntimes_console::Args::parse();
    match args.command.take() {
        Some(Command::Check(args)) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(kruntimes_console::check::run(args))
        }
        Some(Command::Dashboard(args)) => {
            let _log = kruntimes_console::logging::init("text");
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            runtime.block_on(kruntimes_dashboard::run(*args))
        }
        None => serve(args),
    }
}

/// The server: both listeners and the admin listener until SIGTERM.
fn serve(args: kruntimes_console::Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Only with OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT; its exports run on `runtime`.
    let (tracer, traces) = match kruntimes_console::otel::exporter(runtime.handle().clone())? {
        Some((tracer, guard)) => (Some(tracer), Some(guard)),
        None => (None, None),
    };
    // Kept to the end: dropping it writes the log lines still pending.
    let _log = kruntimes_console::logging::init_with_traces(&args.log_format, tracer);
    // Dropped before the log guard, while the runtime still runs: the spans
    // still queued are sent.
    let _traces = traces;
    runtime.block_on(kruntimes_console::run(args))
}
