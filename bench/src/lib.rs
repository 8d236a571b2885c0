//! Shared pieces of the Run-log benchmarks: realistic runtimed lines, a small
//! HTTP/1.1 client over TLS, an HTTP/2 client with a client certificate, the
//! bench environment's variables, process memory from `/proc`, Prometheus
//! text scraping and percentiles.
//!
//! The report is `bench/README.md`.

// Benchmark support: its items are documented where they are not obvious.
#![allow(missing_docs)]
#![forbid(unsafe_code)]

pub mod envfile;
pub mod fixtures;
pub mod h2client;
pub mod http;
pub mod keepalive;
pub mod lines;
pub mod metrics;
pub mod nginx;
pub mod procfs;
pub mod stats;
