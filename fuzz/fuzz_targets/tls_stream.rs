//! The TLS stream (`tls_stream`, records on rustls's unbuffered API) against
//! tokio-rustls, either side, over a transport cut into pieces of any size:
//! any transfers both ways and key updates deliver every byte in order and
//! close cleanly; any byte altered in transit fails the stream and nothing
//! altered is delivered. The harness is the property tests' own
//! (`transport/tests/differential/tls.rs`).
//!
//! Input: a mode byte (bit 0: this side is the server; bit 1: alter a
//! byte), a count of piece sizes (1 to 6) and that many 16-bit sizes; then
//! either the altered run's length and offset (16 bits each) or up to 8
//! steps of 5 bytes (a kind, 1 in 5 a key update; a 16-bit length; a
//! 16-bit read size).
#![no_main]

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;

#[path = "../../transport/tests/differential/mod.rs"]
mod differential;

use differential::tls::{Step, altered, exchange};

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(differential::runtime);

fn u16_at(b: &[u8], i: usize) -> usize {
    usize::from(u16::from_le_bytes([
        b.get(i).copied().unwrap_or(0),
        b.get(i + 1).copied().unwrap_or(0),
    ]))
}

fuzz_target!(|data: &[u8]| {
    let [mode, count, rest @ ..] = data else {
        return;
    };
    let server = mode & 1 == 1;
    let count = usize::from(count % 6) + 1;
    if rest.len() < count * 2 {
        return;
    }
    let sizes: Vec<usize> = (0..count)
        .map(|i| u16_at(rest, i * 2) % 20_000 + 1)
        .collect();
    let rest = &rest[count * 2..];
    let run = async {
        if mode & 2 == 2 {
            let n = u16_at(rest, 0) % 50_000 + 1;
            let at = u16_at(rest, 2) as u64;
            altered(server, sizes, n, at).await;
        } else {
            let steps: Vec<Step> = rest
                .chunks_exact(5)
                .take(8)
                .map(|s| match s[0] % 5 {
                    0 => Step::KeyUpdate,
                    k => Step::Send {
                        ours: k % 2 == 1,
                        n: u16_at(s, 1) % 40_000,
                        chunk: u16_at(s, 3) % 20_000 + 1,
                    },
                })
                .collect();
            exchange(server, sizes, &steps).await;
        }
    };
    RT.block_on(async {
        tokio::pin!(run);
        let start = (Instant::now(), run_delay());
        // A stall is 10 s without an end that were not spent waiting for
        // a CPU: at niceness 19 beside builds, an exchange of half a second
        // can take a minute of wall time.
        while tokio::time::timeout(Duration::from_secs(10), &mut run)
            .await
            .is_err()
        {
            let waited = run_delay().saturating_sub(start.1);
            let active = start.0.elapsed().saturating_sub(waited);
            assert!(active < Duration::from_secs(10), "the exchange stalled");
        }
    });
});

/// How long this thread has waited, runnable, for a CPU
/// (`/proc/thread-self/schedstat`, its second field); zero where the
/// kernel does not say (every wait then counts toward a stall).
fn run_delay() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}
