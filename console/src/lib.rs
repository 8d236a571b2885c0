//! The kruntimes Console: one process, two HTTPS listeners (the aggregated
//! Run-log API and the Console) sharing one authentication/authorization
//! layer, plus a plain-HTTP admin listener for probes and metrics.
#![forbid(unsafe_code)]

pub mod admin;
pub mod api;
pub mod args;
pub mod check;
pub mod clients;

pub mod credentials;
pub mod dashboard;
pub mod error;
pub mod headers;
pub mod logging;
pub mod origin;
pub mod otel;
pub mod root;
pub mod router;
pub mod session;
pub mod state;
pub mod v1;
pub mod web;

pub use args::Args;
pub use root::run;
