//! The aggregated Run-log API (`logs.kruntimes.io/v1alpha1`): discovery,
//! the `runs/log` subresource and the reading and filtering of `runtimed`
//! logs. Authentication, TLS and serving come from `kruntimes-core`.
#![forbid(unsafe_code)]

pub mod discovery;
pub mod logs;
pub mod server;
