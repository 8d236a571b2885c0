//! Request framing on the accept loop's fast path (`h1::parse_request`,
//! `h1::body_kind`, `h1::Chunked`) against hyper's server parser: for any
//! bytes and any split into reads, every request the fast path frames,
//! hyper frames the same (method, target, fields, body, boundary), and
//! where the fast path waits for more, hyper has no further request.
//!
//! Inputs are one to three pipelined requests drawn from the grammar (odd
//! methods, targets, versions, line endings, duplicate and malformed
//! `Content-Length`, transfer codings, chunked bodies), then mutated a few
//! bytes. The cases are proptest's, seeded: `H1_REQUEST_SEED=<n>` replays a
//! run, `H1_REQUEST_CASES` sets how many inputs are drawn (default 1000).
//! The `h1_request` fuzz target runs the same differential
//! (`tests/differential/requests.rs`) on any bytes.

mod differential;

use differential::requests::{End, same};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
        1 => prop::sample::select(vec!["get", "FOO", "G@T", "", "CONNECT", "HEAD"]),
    ]
    .prop_map(str::to_owned)
}

fn target() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "/v1/[a-z0-9/?=&%.~-]{0,24}",
        1 => prop::sample::select(vec!["*", "http://h/x?y", "h:443", "/a b", "/\u{e9}", "//x"])
            .prop_map(str::to_owned),
        1 => "[ -~]{0,8}",
    ]
}

fn version() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        8 => Just("HTTP/1.1"),
        1 => prop::sample::select(vec!["HTTP/1.0", "HTTP/2.0", "http/1.1", "HTTP/1.1 "]),
    ]
}

fn field() -> impl Strategy<Value = (String, Vec<u8>)> {
    let text = |s: &[&'static str]| {
        prop::sample::select(s.to_vec()).prop_map(|v: &str| v.as_bytes().to_vec())
    };
    prop_oneof![
        2 => Just(("host".to_owned(), b"gateway".to_vec())),
        3 => (
            prop::sample::select(vec!["content-length", "Content-Length"]),
            prop_oneof![
                4 => (0u8..30).prop_map(|n| n.to_string().into_bytes()),
                1 => text(&["+1", " 3", "3,3", "03", "", "1 1", "99999999999999999999", "-1", "0x1"]),
            ],
        )
            .prop_map(|(n, v)| (n.to_owned(), v)),
        2 => (
            prop::sample::select(vec!["transfer-encoding", "Transfer-Encoding"]),
            text(&["chunked", "Chunked", " chunked ", "gzip, chunked", "chunked, gzip", "gzip", "chunked,"]),
        )
            .prop_map(|(n, v)| (n.to_owned(), v)),
        1 => Just(("expect".to_owned(), b"100-continue".to_vec())),
        1 => Just(("connection".to_owned(), b"close".to_vec())),
        2 => ("[a-zA-Z0-9-]{1,8}", "[ -~]{0,10}".prop_map(String::into_bytes)),
        1 => ("[!-~]{1,8}", prop::collection::vec(any::<u8>(), 0..10)),
    ]
}

/// The body: raw bytes, or (for a chunked request) a chunked encoding.
fn body() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    (
        prop::collection::vec(any::<u8>(), 0..40),
        prop::collection::vec(1usize..12, 0..4),
    )
}

fn chunked(data: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    for &n in sizes {
        let n = n.min(data.len() - at);
        if n == 0 {
            break;
        }
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend_from_slice(&data[at..at + n]);
        out.extend_from_slice(b"\r\n");
        at += n;
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

prop_compose! {
    fn request()(
        method in method(),
        target in target(),
        version in version(),
        fields in prop::collection::vec(field(), 0..6),
        sep in prop_oneof![8 => Just(": "), 1 => prop::sample::select(vec![":", ":\t ", " : "])],
        eol in prop_oneof![8 => Just("\r\n"), 1 => Just("\n")],
        (mut data, sizes) in body(),
        stray in prop::bool::weighted(0.1),
    ) -> Vec<u8> {
        let mut r = format!("{method} {target} {version}{eol}").into_bytes();
        let mut is_chunked = false;
        let mut length = None;
        for (name, value) in &fields {
            is_chunked |= name.eq_ignore_ascii_case("transfer-encoding");
            if name.eq_ignore_ascii_case("content-length") {
                length = std::str::from_utf8(value).ok().and_then(|v| v.parse::<usize>().ok());
            }
            r.extend_from_slice(name.as_bytes());
            r.extend_from_slice(sep.as_bytes());
            r.extend_from_slice(value);
            r.extend_from_slice(eol.as_bytes());
        }
        r.extend_from_slice(eol.as_bytes());
        // The body the fields announce, mostly; now and then stray bytes.
        if is_chunked && !sizes.is_empty() {
            r.extend_from_slice(&chunked(&data, &sizes));
        } else if let Some(n) = length.filter(|_| !stray) {
            data.resize(n, b'.');
            r.extend_from_slice(&data);
        } else if stray {
            r.extend_from_slice(&data);
        }
        r
    }
}

prop_compose! {
    fn input()(
        requests in prop::collection::vec(request(), 1..4),
        edits in prop_oneof![
            2 => Just(Vec::new()),
            1 => prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..3),
        ],
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) -> (Vec<u8>, Vec<usize>) {
        let mut b = requests.concat();
        for (at, byte, how) in edits {
            let i = at.index(b.len() + 1);
            match how {
                0 if i < b.len() => b[i] = byte,
                1 => b.insert(i, byte),
                _ if i < b.len() => { b.remove(i); }
                _ => b.push(byte),
            }
        }
        let cuts = cuts.iter().map(|c| c.index(b.len() + 1)).collect();
        (b, cuts)
    }
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

#[test]
fn any_request_bytes_and_any_split_frame_as_hyper_frames_them() {
    let seed = env("H1_REQUEST_SEED").unwrap_or_else(rand::random);
    let cases = env("H1_REQUEST_CASES").unwrap_or(1000) as u32;
    println!("H1_REQUEST_SEED={seed} H1_REQUEST_CASES={cases}");
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let rt = differential::runtime();
    let framed = std::cell::Cell::new(0usize);
    let handed = std::cell::Cell::new(0usize);
    let result = runner.run(&input(), |(bytes, cuts)| {
        let (reqs, end) = rt.block_on(same(&bytes, &cuts, &format!("seed {seed}")));
        framed.set(framed.get() + reqs.len());
        handed.set(handed.get() + usize::from(end == End::HandedOver));
        Ok(())
    });
    if let Err(e) = result {
        panic!("H1_REQUEST_SEED={seed}: {e}");
    }
    println!(
        "{} requests framed alike, {} inputs handed over to hyper",
        framed.get(),
        handed.get()
    );
    assert!(
        framed.get() > cases as usize / 5 && handed.get() > cases as usize / 5,
        "the cases cover framed requests and hand-overs"
    );
}

#[tokio::test]
async fn pipelined_requests_split_anywhere_frame_as_hyper_frames_them() {
    let raw = b"POST /v1/a HTTP/1.1\r\nhost: g\r\ncontent-length: 3\r\n\r\nabc\
GET /v1/b?x=1 HTTP/1.1\r\nhost: g\r\n\r\n\
PUT /v1/c HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3;e\r\nxyz\r\n0\r\nt: 1\r\n\r\n";
    for cut in 0..=raw.len() {
        let (reqs, end) = same(raw, &[cut], &format!("cut at {cut}")).await;
        assert_eq!(end, End::NeedMore);
        assert_eq!(reqs.len(), 3, "cut at {cut}");
        assert_eq!(reqs[0].body, b"abc");
        assert_eq!(reqs[1].target, "/v1/b?x=1");
        assert_eq!(reqs[2].body, b"xyz");
    }
}

/// Inputs the differential found the fast path framing differently from
/// hyper, kept as regressions.
#[tokio::test]
async fn the_cases_the_differential_found_frame_as_hyper_frames_them() {
    let cases: &[(&str, &[u8])] = &[
        (
            "a target hyper's URI parser refuses",
            b"DELETE -S0N{\"< HTTP/1.1\r\n\r\nGET /v1/x HTTP/1.1\r\n\r\n",
        ),
        (
            "a target with a fragment, which hyper drops",
            b"GET /#1/ HTTP/1.1\r\ncontent-length: 2\r\n\r\n..GET /v1/ HTTP/1.1\r\n\r\n",
        ),
        (
            "an absolute-form target with an upper-case scheme",
            b"GET HTTP://H/x HTTP/1.1\r\n\r\n",
        ),
        (
            "a CONNECT, after which hyper reads no request",
            b"CONNECT /v1/ HTTP/1.1\r\n\r\nGET /v1/ HTTP/1.1\r\n\r\n",
        ),
    ];
    for (what, input) in cases {
        same(input, &[], what).await;
        same(input, &[1, 9, 20], what).await;
    }
}
