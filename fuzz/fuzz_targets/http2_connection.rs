//! One HTTP/2 connection of the accept loop (hyper's server with the
//! connection's own stream executor) driven by a client program decoded
//! from the input: requests to handlers that answer at once, after a timer,
//! after the body, beyond the flow-control window, on the router or the
//! direct path; bodies, resets, window updates, settings, pings, the
//! listener's stop; frames of any kind and bytes that are no frame, written
//! in pieces of any size. Whatever is sent, the connection ends once the
//! client closes, gives back every request place and leaves no handler
//! running, and writes well-formed frames; a program of well-formed
//! requests has every ended request answered. The harness is the seeded
//! test's own (`kruntimes_transport::serve::http2_exchange`).
//!
//! The clock is paused: the harness's waits cost no wall time.
#![no_main]

use std::sync::LazyLock;

use kruntimes_transport::serve::http2_exchange::{decode, run};
use libfuzzer_sys::fuzz_target;

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime")
});

fuzz_target!(|data: &[u8]| {
    let program = decode(data);
    if let Err(broken) = RT.block_on(run(&program)) {
        panic!("{broken}\n{program:?}");
    }
});
