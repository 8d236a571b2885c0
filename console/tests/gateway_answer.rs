//! A gateway's whole answer as both invoke paths read it (the head past
//! interim answers, the framing, the body by length, chunks or the close,
//! the bound) against hyper's HTTP/1.1 client: for any answer and any split
//! into reads, the same status, fields and data, both refusing, or ours
//! refusing where it is stricter on purpose (see
//! `tests/differential/answer.rs`, shared with the `gateway_answer` fuzz
//! target).
//!
//! Answers are drawn from a grammar steered by a tape of proptest bytes,
//! seeded: `GATEWAY_ANSWER_SEED=<n>` replays a run, `GATEWAY_ANSWER_CASES`
//! sets how many are drawn (default 2000).

mod differential;

use differential::Tape;
use differential::answer::{Outcome, bound, cuts, generate, same};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

#[test]
fn any_answer_in_any_split_reads_as_hypers_client_reads_it() {
    let seed = env("GATEWAY_ANSWER_SEED").unwrap_or_else(rand::random);
    let cases = env("GATEWAY_ANSWER_CASES").unwrap_or(2000) as u32;
    println!("GATEWAY_ANSWER_SEED={seed} GATEWAY_ANSWER_CASES={cases}");
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
    let rt = runtime();
    let counts = std::cell::RefCell::new([0usize; 3]);
    let reasons = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let result = runner.run(&prop::collection::vec(any::<u8>(), 0..400), |tape| {
        let mut t = Tape::new(&tape);
        let max = bound(&mut t);
        let answer = generate(&mut t);
        let cuts = cuts(&mut t, answer.len());
        let seen = rt.block_on(same(&answer, &cuts, max, &format!("seed {seed}")));
        let i = match seen {
            Ok(ref a) if a.body.is_empty() => 0,
            Ok(_) => 1,
            Err(ref why) => {
                *reasons.borrow_mut().entry(format!("{why:?}")).or_insert(0) += 1;
                2
            }
        };
        counts.borrow_mut()[i] += 1;
        Ok(())
    });
    if let Err(e) = result {
        panic!("GATEWAY_ANSWER_SEED={seed}: {e}");
    }
    let [empty, data, refused] = *counts.borrow();
    println!(
        "{empty} read without data, {data} with data, {refused} refused: {:?}",
        reasons.borrow()
    );
    let n = cases as usize;
    assert!(
        empty > n / 50 && data > n / 10 && refused > n / 10,
        "the cases cover every ending"
    );
}

/// Answers worth keeping by name, each read whole and in single bytes.
#[test]
fn named_answers_read_as_hypers_client_reads_them() {
    let rt = runtime();
    let ok = |body: &str| Some(body.to_owned());
    let cases: Vec<(&str, &[u8], Option<String>)> = vec![
        (
            "length",
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
            ok("hello"),
        ),
        (
            "chunks with an extension and a trailer",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\nx-sum: 1\r\n\r\n",
            ok("hello"),
        ),
        (
            "the close",
            b"HTTP/1.0 200 OK\r\n\r\nhello",
            ok("hello"),
        ),
        (
            "interim answers before the final one",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok",
            ok("ok"),
        ),
        (
            "a 204 announcing a length has no body",
            b"HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\nhello",
            ok(""),
        ),
        (
            "a 304 with chunks announced has no body",
            b"HTTP/1.1 304 Not Modified\r\ntransfer-encoding: chunked\r\n\r\n",
            ok(""),
        ),
        (
            "a body cut short",
            b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nhello",
            None,
        ),
        (
            "chunks cut short",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",
            None,
        ),
        (
            "a size with a leading space",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n",
            None,
        ),
        (
            "a length and chunks (refused: ambiguous)",
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            None,
        ),
        (
            "chunks in an HTTP/1.0 answer (refused, as hyper does)",
            b"HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            None,
        ),
        (
            "a 101 to a call (refused)",
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n",
            None,
        ),
        (
            "an extra answer after this one is not read",
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nno",
            ok("ok"),
        ),
    ];
    for (what, answer, want) in cases {
        for cuts in [vec![], (1..answer.len()).collect::<Vec<_>>()] {
            let seen: Outcome = rt.block_on(same(answer, &cuts, 1 << 20, what));
            let seen = seen.ok().map(|a| String::from_utf8(a.body).unwrap());
            assert_eq!(seen, want, "{what} (cuts: {})", cuts.len());
        }
    }
    // The bound: data over it is refused, on a length announced and on
    // chunks counted as they come.
    for answer in [
        &b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"[..],
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\nhello",
    ] {
        assert!(rt.block_on(same(answer, &[], 4, "over the bound")).is_err());
        assert!(rt.block_on(same(answer, &[], 5, "at the bound")).is_ok());
    }
}
