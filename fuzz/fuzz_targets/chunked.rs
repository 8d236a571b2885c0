//! The gateway answer's chunked decoding (`h1::Chunked`) against hyper's
//! client: any body, any split into reads, the same data or both refuse.
//! Input: two bytes of cut positions' count and seed, then the body.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../transport/tests/differential/mod.rs"]
mod differential;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(differential::runtime);

fuzz_target!(|data: &[u8]| {
    let [n, step, body @ ..] = data else { return };
    let cuts: Vec<usize> = (1..=usize::from(n % 8))
        .map(|i| i * (usize::from(*step) + 1) % (body.len() + 1))
        .collect();
    let _ = RT.block_on(differential::chunked::same(body, &cuts, "chunked"));
});
