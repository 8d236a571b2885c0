//! Test-environment simulators and helpers for the end-to-end suites.

pub mod cluster;
pub mod curl;
pub mod env;
pub mod runtime_pod;
pub mod sim;
pub mod stream;
