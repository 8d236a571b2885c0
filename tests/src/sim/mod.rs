//! Test-environment simulators: a fake kubelet serving container logs from files and a fake
//! Runtime gateway serving `/v1`. Both stand in for components the local control plane lacks.

pub mod cri;
pub mod logdecode;
pub mod logfilter;
pub mod logtail;
pub mod serve;
pub mod tls;
