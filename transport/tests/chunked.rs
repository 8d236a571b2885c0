//! The gateway answer's chunked decoding (`h1::Chunked`, used by the `/v1`
//! HTTP/1.1 fast path) against hyper's client, which decodes the same
//! answers on the router path: for any body and any split into reads, both
//! accept with the same data or both refuse.
//!
//! Bodies are drawn from the grammar (sizes with leading zeros and white
//! space, extensions, trailers), then mutated byte by byte with the bytes
//! the grammar cares about; the cases the transport review found (leading
//! white space, `5\r\r\n`, a bare CR in an extension, a trailer line that is
//! no field, 80 KB of extensions, 55 KB of trailers, a 16-digit size) are
//! checked on their own. `CHUNKED_SEED=<n>` replays a run; `CHUNKED_CASES`
//! sets how many bodies are drawn (default 5000, under a second). The two
//! decoders are driven by `tests/differential/chunked.rs`, which the
//! `chunked` fuzz target shares.

mod differential;

use differential::chunked::{chunked_decodes, same};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A body from the grammar: chunks with odd but valid size lines, then
/// trailers.
fn valid_body(rng: &mut StdRng) -> Vec<u8> {
    let mut b = Vec::new();
    for _ in 0..rng.random_range(0..5) {
        let n: usize = rng.random_range(1..40);
        let zeros = "0".repeat(rng.random_range(0..3));
        let hex = if rng.random_bool(0.5) {
            format!("{zeros}{n:x}")
        } else {
            format!("{zeros}{n:X}")
        };
        b.extend_from_slice(hex.as_bytes());
        if rng.random_bool(0.2) {
            b.extend_from_slice(&b" \t "[..rng.random_range(1..4)]);
        }
        if rng.random_bool(0.3) {
            b.extend_from_slice(b";name=\"v a\";x");
        }
        b.extend_from_slice(b"\r\n");
        b.extend((0..n).map(|i| b'a' + (i % 26) as u8));
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(b"0");
    if rng.random_bool(0.2) {
        b.extend_from_slice(b";last");
    }
    b.extend_from_slice(b"\r\n");
    for i in 0..rng.random_range(0..3) {
        b.extend_from_slice(format!("x-trailer-{i}: value {i}\r\n").as_bytes());
    }
    b.extend_from_slice(b"\r\n");
    b
}

/// Replaces, inserts or removes a few bytes, mostly ones the grammar cares about.
fn mutate(rng: &mut StdRng, b: &mut Vec<u8>) {
    const BYTES: &[u8] = b"\r\n \t;:=0fFgG-x\x00\x7f\xff\"";
    for _ in 0..rng.random_range(1..4) {
        let at = rng.random_range(0..=b.len());
        let byte = BYTES[rng.random_range(0..BYTES.len())];
        match rng.random_range(0..3) {
            0 if at < b.len() => b[at] = byte,
            1 => b.insert(at, byte),
            _ if at < b.len() => {
                b.remove(at);
            }
            _ => b.push(byte),
        }
    }
}

fn random_cuts(rng: &mut StdRng, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..rng.random_range(0..6))
        .map(|_| rng.random_range(0..=len))
        .collect();
    cuts.sort_unstable();
    cuts
}

#[tokio::test]
async fn the_cases_the_review_found_decode_as_hyper_decodes_them() {
    let ext = |n: usize| {
        let mut b = b"1;".to_vec();
        b.extend(std::iter::repeat_n(b'e', n));
        b.extend_from_slice(b"\r\nA\r\n0\r\n\r\n");
        b
    };
    let trailers = |n: usize| {
        let mut b = b"1\r\nA\r\n0\r\n".to_vec();
        for i in 0..n {
            b.extend_from_slice(format!("x-t{i}: {}\r\n", "v".repeat(40)).as_bytes());
        }
        b.extend_from_slice(b"\r\n");
        b
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a leading space", b" 5\r\nhello\r\n0\r\n\r\n".to_vec()),
        ("a leading tab", b"\t5\r\nhello\r\n0\r\n\r\n".to_vec()),
        (
            "CR CR LF after the size",
            b"5\r\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        (
            "a bare CR in an extension",
            b"5;a\rb\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        (
            "a bare LF in an extension",
            b"5;a\nb\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        (
            "a trailer line that is no field",
            b"5\r\nhello\r\n0\r\nnot a field\r\n\r\n".to_vec(),
        ),
        ("80 KB of extensions", ext(80 << 10)),
        ("extensions just under the bound", ext((16 << 10) - 2)),
        ("extensions at the bound", ext((16 << 10) - 1)),
        ("55 KB of trailers", trailers(55 << 10 >> 6)),
        ("99 trailer fields", trailers(99)),
        ("100 trailer fields", trailers(100)),
        ("101 trailer fields", trailers(101)),
        (
            "a 16-digit size",
            b"0000000000000005\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        (
            "a size over 64 bits",
            b"10000000000000000\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        (
            "white space after the size",
            b"5  \t\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        (
            "data not followed by CRLF",
            b"5\r\nhelloX\r\n0\r\n\r\n".to_vec(),
        ),
        ("no last chunk", b"5\r\nhello\r\n".to_vec()),
        ("an LF-only last line", b"5\r\nhello\r\n0\r\n\n".to_vec()),
    ];
    for (what, body) in &cases {
        let whole = same(body, &[], what).await;
        assert_eq!(
            same(body, &[1, 2, 3, 7], what).await,
            whole,
            "{what}: split"
        );
    }
    // What the review saw accepted is refused now, as hyper refuses it.
    for (what, body) in &cases[..7] {
        assert!(chunked_decodes(body, &[]).is_err(), "{what}");
    }
    assert!(chunked_decodes(&trailers(55 << 10 >> 6), &[]).is_err());
    assert_eq!(
        chunked_decodes(b"0000000000000005\r\nhello\r\n0\r\n\r\n", &[]),
        Ok(b"hello".to_vec())
    );
}

#[tokio::test]
async fn any_body_and_any_split_decode_as_hyper_decodes_them() {
    let seed: u64 = std::env::var("CHUNKED_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let cases: usize = std::env::var("CHUNKED_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    println!("CHUNKED_SEED={seed} CHUNKED_CASES={cases}");
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..cases {
        let mut body = valid_body(&mut rng);
        if i % 4 != 0 {
            mutate(&mut rng, &mut body);
        }
        let cuts = random_cuts(&mut rng, body.len());
        match same(&body, &cuts, &format!("case {i} of seed {seed}")).await {
            Ok(_) => accepted += 1,
            Err(()) => refused += 1,
        }
    }
    println!("{accepted} accepted, {refused} refused by both");
    assert!(
        accepted > cases / 5 && refused > cases / 5,
        "the cases cover both outcomes"
    );
}
