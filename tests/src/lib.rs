//! Test-environment simulators and helpers for the end-to-end suites.

// Test support: its items are documented where they are not obvious.
#![allow(missing_docs)]

pub mod cluster;
pub mod curl;
pub mod env;
pub mod objects;
pub mod runtime_pod;
pub mod sim;
pub mod stream;
