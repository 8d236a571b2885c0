//! Differentials of the `/v1` hand-written protocol code, shared by the
//! stable tests and the fuzz targets (which include this directory by
//! path): the WebSocket relay's frame checks against tungstenite (`ws.rs`:
//! `tests/ws_frames.rs`, `ws_frames`) and the reading of a gateway's whole
//! answer against hyper's client (`answer.rs`: `tests/gateway_answer.rs`,
//! `gateway_answer`). Only public APIs of the crate are used.

#![allow(dead_code)]

pub mod answer;
pub mod ws;

/// Choices drawn from a tape of bytes (the fuzzer's input, or proptest's
/// values): a byte string read as a sequence of decisions, zero once it is
/// used up. Mutating the tape changes the decisions, which is what a
/// coverage-guided fuzzer needs.
pub struct Tape<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Tape<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    pub fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// A number below `n` (`n` at most 65536).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let v = if n <= 256 {
            usize::from(self.byte())
        } else {
            usize::from(u16::from_le_bytes([self.byte(), self.byte()]))
        };
        v % n
    }

    /// True about one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// `len` bytes off the tape.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }
}
