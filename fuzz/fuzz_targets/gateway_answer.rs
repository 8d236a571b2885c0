//! A gateway's whole answer as both invoke paths read it
//! (`upstream::read_head`, `framing`, `AnswerBody`) against hyper's
//! HTTP/1.1 client: the same status, fields and data, both refusing, or
//! ours refusing where it is stricter on purpose. Input: a mode byte; then
//! either raw answer bytes (after a bound byte and two bytes of cut
//! positions' count and step) or a tape steering the answers' grammar.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../console/tests/differential/mod.rs"]
mod differential;

use differential::{Tape, answer};

static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else { return };
    if mode % 4 == 0 {
        let [m, n, step, bytes @ ..] = rest else {
            return;
        };
        let max = if m % 4 == 0 { usize::from(*m) } else { 1 << 20 };
        let cuts: Vec<usize> = (1..=usize::from(n % 8))
            .map(|i| i * (usize::from(*step) + 1) % (bytes.len() + 1))
            .collect();
        let _ = RT.block_on(answer::same(bytes, &cuts, max, "gateway_answer (raw)"));
    } else {
        let mut t = Tape::new(rest);
        let max = answer::bound(&mut t);
        let bytes = answer::generate(&mut t);
        let cuts = answer::cuts(&mut t, bytes.len());
        let _ = RT.block_on(answer::same(&bytes, &cuts, max, "gateway_answer (grammar)"));
    }
});
