//! The `/v1` WebSocket relay's frame checks (`frames::Pipe`) against
//! tungstenite's strict reader: frames from a grammar steered by the input
//! bytes (fragmented messages, control frames, odd frames, bit flips), any
//! split, both directions (masking by role), the message bound, the UTF-8
//! carry across text frames.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../console/tests/differential/mod.rs"]
mod differential;

use differential::{Tape, ws};

fuzz_target!(|data: &[u8]| {
    let case = ws::generate(&mut Tape::new(data));
    ws::same(&case, "ws_frames");
});
