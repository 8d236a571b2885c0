//! The `/v1` WebSocket relay's frame checks (`frames::Pipe`, both
//! directions, the UTF-8 carry across text frames, masking by role, the
//! message bound) against tungstenite's strict reader: for any frames and
//! any split into reads, both end alike and the relay passes on the
//! messages tungstenite reads (see `tests/differential/ws.rs`, shared with
//! the `ws_frames` fuzz target).
//!
//! Cases are drawn from a grammar of fragmented messages, control frames
//! and odd frames, steered by a tape of proptest bytes, seeded:
//! `WS_FRAMES_SEED=<n>` replays a run, `WS_FRAMES_CASES` sets how many are
//! drawn (default 2000).

mod differential;

use differential::Tape;
use differential::ws::{Outcome, generate, same};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

#[test]
fn any_frames_and_any_split_relay_as_tungstenite_reads_them() {
    let seed = env("WS_FRAMES_SEED").unwrap_or_else(rand::random);
    let cases = env("WS_FRAMES_CASES").unwrap_or(2000) as u32;
    println!("WS_FRAMES_SEED={seed} WS_FRAMES_CASES={cases}");
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
    let counts = std::cell::RefCell::new([0usize; 3]);
    let result = runner.run(&prop::collection::vec(any::<u8>(), 0..600), |tape| {
        let case = generate(&mut Tape::new(&tape));
        let seen = same(&case, &format!("seed {seed}"));
        let i = match seen.outcome {
            Outcome::Closed(_) => 0,
            Outcome::Ended => 1,
            Outcome::Refused => 2,
        };
        counts.borrow_mut()[i] += 1;
        Ok(())
    });
    if let Err(e) = result {
        panic!("WS_FRAMES_SEED={seed}: {e}");
    }
    let [closed, ended, refused] = *counts.borrow();
    println!("{closed} closed, {ended} waiting, {refused} refused by both");
    let n = cases as usize;
    assert!(
        closed > n / 50 && ended > n / 20 && refused > n / 20,
        "the cases cover every ending"
    );
}

/// Cases worth keeping by name: a text message's characters cut across
/// frames (the UTF-8 carry), with a ping in between, in both directions
/// and every split; an unfinished sequence at a message's end; close codes
/// at the edges of what may be sent.
#[test]
fn named_cases_relay_as_tungstenite_reads_them() {
    use differential::ws::Case;
    use kruntimes_console_http::runtime_access::frames::Direction;
    fn frame(masked: bool, b0: u8, payload: &[u8]) -> Vec<u8> {
        let key = [0x12, 0x34, 0x56, 0x78];
        let mut f = vec![b0, u8::from(masked) << 7 | payload.len() as u8];
        if masked {
            f.extend_from_slice(&key);
        }
        f.extend(
            payload
                .iter()
                .enumerate()
                .map(|(i, b)| if masked { b ^ key[i % 4] } else { *b }),
        );
        f
    }
    let euro = "\u{20ac}\u{1d11e}".as_bytes();
    for direction in [Direction::ToCaller, Direction::ToGateway] {
        let m = direction == Direction::ToGateway;
        let inputs: Vec<(&str, Vec<u8>, Outcome)> = vec![
            (
                "characters cut across frames",
                [
                    frame(m, 0x01, &euro[..1]),
                    frame(m, 0x89, b"p"),
                    frame(m, 0x00, &euro[1..5]),
                    frame(m, 0x80, &euro[5..]),
                    frame(m, 0x88, &[0x03, 0xE8]),
                ]
                .concat(),
                Outcome::Closed(Some(1000)),
            ),
            (
                "an unfinished character at the end of a message",
                [frame(m, 0x01, &euro[..2]), frame(m, 0x80, &euro[2..5])].concat(),
                Outcome::Refused,
            ),
            (
                "close code 4999",
                frame(m, 0x88, &[0x13, 0x87]),
                Outcome::Closed(Some(4999)),
            ),
            (
                "close code 1015",
                frame(m, 0x88, &[0x03, 0xF7]),
                Outcome::Refused,
            ),
            (
                "close code 5000",
                frame(m, 0x88, &[0x13, 0x88]),
                Outcome::Refused,
            ),
            (
                "an unmasked frame the wrong way",
                frame(!m, 0x82, b"x"),
                Outcome::Refused,
            ),
        ];
        for (what, bytes, expected) in inputs {
            for cut in 0..=bytes.len() {
                let case = Case {
                    direction,
                    max_message: 1 << 10,
                    bytes: bytes.clone(),
                    cuts: vec![cut],
                    first: cut % 2 == 0,
                };
                let seen = same(&case, what);
                assert_eq!(
                    seen.outcome, expected,
                    "{what}, {direction:?}, cut at {cut}"
                );
            }
        }
    }
}
