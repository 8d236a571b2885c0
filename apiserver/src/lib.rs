//! The aggregated Run-log API (`logs.kruntimes.io/v1alpha1`) and the
//! authentication/authorization layer shared with the Console listener.
#![forbid(unsafe_code)]

pub mod auth;
pub mod discovery;
pub mod lifecycle;
pub mod limit;
pub mod logs;
pub mod metrics;
pub mod observe;
pub mod run;
pub mod serve;
pub mod server;
pub mod status;
pub mod tls;
