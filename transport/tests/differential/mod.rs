//! Differentials of the hand-written protocol code, shared by the stable
//! tests and the fuzz targets, which include this directory by path: the
//! HTTP/1.1 framing against hyper (`tests/chunked.rs`, `tests/h1_request.rs`,
//! `fuzz/fuzz_targets/{chunked,h1_request}.rs`) and the TLS stream against
//! tokio-rustls (`tls.rs`: the property tests in `src/tls_stream.rs` and
//! `fuzz/fuzz_targets/tls_stream.rs`). Only public APIs of the crate are used.

#![allow(dead_code)]

pub mod chunked;
pub mod requests;
pub mod tls;

/// The TLS stream's API, as `tls` names it.
use kruntimes_transport::tls_stream as tls_api;

/// `body` cut at the given offsets (sorted or not, out of range or not):
/// the pieces a peer's writes arrive in.
pub fn split(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(body.len())).collect();
    cuts.sort_unstable();
    let mut at = 0;
    let mut out = Vec::new();
    for c in cuts {
        if c > at {
            out.push(body[at..c].to_vec());
            at = c;
        }
    }
    out.push(body[at..].to_vec());
    out
}

/// A runtime for one-off differential cases (the fuzz targets reuse one).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
