//! Differentials of the hand-written HTTP/1.1 framing against hyper, shared
//! by the stable tests (`tests/chunked.rs`, `tests/h1_request.rs`) and the
//! fuzz targets (`fuzz/fuzz_targets/{chunked,h1_request}.rs`, which include
//! this directory by path). Only public APIs of the crate are used.

#![allow(dead_code)]

pub mod chunked;
pub mod requests;

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
