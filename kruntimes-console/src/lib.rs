//! The `kruntimes-console` program: one process, two HTTPS listeners (the
//! aggregated Run-log API of `kruntimes-apiserver` and the Console of
//! `kruntimes-console-http`) sharing one authentication/authorization layer,
//! plus a plain-HTTP admin listener for probes and metrics. This crate is the
//! composition root: flags (`args`), logging, the listeners' wiring (`root`),
//! the admin listener and the `check` subcommand.
#![forbid(unsafe_code)]

pub mod admin;
pub mod args;
pub mod check;
pub mod logging;
pub mod otel;
pub mod root;

pub use args::Args;
pub use root::run;
