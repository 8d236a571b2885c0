//! Test-environment simulators: a fake kubelet serving container logs from files, a fake
//! Runtime gateway serving `/v1` and a simulated runtimed (its log and its status endpoint).
//! They stand in for components the local control plane lacks.

pub mod cli;
pub mod cri;
pub mod gateway;
pub mod gateway_control;
pub mod gateway_ops;
pub mod gateway_state;
pub mod kubelet;
pub mod logdecode;
pub mod logfilter;
pub mod logstream;
pub mod logtail;
pub mod logwake;
pub mod podwatch;
pub mod runtimed;
pub mod runtimed_status;
pub mod serve;
pub mod tls;

#[cfg(test)]
mod gateway_tests;
