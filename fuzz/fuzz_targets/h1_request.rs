//! Request framing on the fast path (`h1::parse_request`, `h1::body_kind`,
//! `h1::Chunked`) against hyper's server parser over an in-memory pipe:
//! any bytes, any split, the same requests (method, target, fields, body)
//! up to where the fast path hands the connection to hyper.
//! Input: two bytes of cut positions' count and step, then the bytes.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../transport/tests/differential/mod.rs"]
mod differential;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(differential::runtime);

fuzz_target!(|data: &[u8]| {
    let [n, step, input @ ..] = data else { return };
    let cuts: Vec<usize> = (1..=usize::from(n % 8))
        .map(|i| i * (usize::from(*step) + 1) % (input.len() + 1))
        .collect();
    RT.block_on(differential::requests::same(input, &cuts, "h1_request"));
});
