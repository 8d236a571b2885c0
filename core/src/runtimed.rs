//! runtimed's status endpoint: the gRPC method `/executor.v1.Runtime/Status`
//! (kruntimes `api/runtime/v1/runtime.proto`), which runtimed serves in plain
//! HTTP/2 on port 9093 of every Runtime Pod. Its answer holds a Run's whole
//! output so far, per stream: the only place a running Run's output is while
//! runtimed writes its records at the Run's end.
//!
//! The messages are declared here by hand (field numbers as in the proto),
//! with the gRPC message framing both sides of the wire use: the Run-log API
//! as the client, the runtimed stand-in of the tests as the server.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The gRPC path of the method.
pub const STATUS_PATH: &str = "/executor.v1.Runtime/Status";
/// The port runtimed serves it on.
pub const DEFAULT_STATUS_PORT: u16 = 9093;

/// `executor.v1.StatusRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRequest {
    /// The execution's ID: the Run's UID.
    #[prost(string, tag = "1")]
    pub id: String,
}

/// `executor.v1.StatusResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    /// The execution's ID: the Run's UID.
    #[prost(string, tag = "1")]
    pub id: String,
    /// The execution's state, an [`ExecutionState`] number.
    #[prost(enumeration = "ExecutionState", tag = "2")]
    pub state: i32,
    /// The program's exit code, once it has ended.
    #[prost(int32, tag = "3")]
    pub exit_code: i32,
    /// The whole standard output so far (the runtime keeps the first MiB and
    /// then appends [`TRUNCATED_MARKER`]).
    #[prost(string, tag = "4")]
    pub stdout: String,
    /// The whole standard error so far, cut as `stdout` is.
    #[prost(string, tag = "5")]
    pub stderr: String,
    /// Why the execution failed, when runtimed says; empty otherwise.
    #[prost(string, tag = "6")]
    pub error_message: String,
}

/// `executor.v1.ExecutionState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ExecutionState {
    /// No state given.
    Unspecified = 0,
    /// Accepted, not started yet.
    Pending = 1,
    /// Executing.
    Running = 2,
    /// Ended with success.
    Succeeded = 3,
    /// Ended with a failure.
    Failed = 4,
}

/// The line the runtime appends to a stream it cut at its size limit.
pub const TRUNCATED_MARKER: &str = "[output truncated]";

/// gRPC status codes this project reads or writes.
pub mod code {
    /// The call succeeded.
    pub const OK: u32 = 0;
    /// The request was malformed.
    pub const INVALID_ARGUMENT: u32 = 3;
    /// runtimed knows no execution of that ID (not on this Pod, or forgotten).
    pub const NOT_FOUND: u32 = 5;
    /// A bound was reached (a message over the size limit).
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    /// The server does not implement the method.
    pub const UNIMPLEMENTED: u32 = 12;
    /// The server cannot answer now; a retry may succeed.
    pub const UNAVAILABLE: u32 = 14;
}

/// One message in gRPC's length-prefixed framing (uncompressed).
pub fn frame(msg: &impl prost::Message) -> Bytes {
    let len = msg.encoded_len();
    let mut buf = BytesMut::with_capacity(5 + len);
    buf.put_u8(0);
    buf.put_u32(len as u32);
    msg.encode_raw(&mut buf);
    buf.freeze()
}

/// Why a gRPC body is not one message of the expected type.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// The body held no message.
    #[error("the answer held no message")]
    Empty,
    /// The message's compressed flag is set (no compression was asked for).
    #[error("the message is compressed, which was not asked for")]
    Compressed,
    /// The announced message length and the bound, in bytes.
    #[error("the message is {0} bytes, over the {1}-byte bound")]
    TooLarge(usize, usize),
    /// The body ends before the frame header or the message does.
    #[error("the message is cut short")]
    Short,
    /// Bytes follow the one message.
    #[error("more than one message")]
    Trailing,
    /// The bytes are not a message of the expected type (the decoder's words).
    #[error("not a valid message: {0}")]
    Decode(String),
}

/// Reads the one message of a unary gRPC body, refusing one over `max` bytes.
pub fn unframe<M: prost::Message + Default>(mut body: &[u8], max: usize) -> Result<M, FrameError> {
    if body.is_empty() {
        return Err(FrameError::Empty);
    }
    if body.len() < 5 {
        return Err(FrameError::Short);
    }
    let compressed = body.get_u8();
    let len = body.get_u32() as usize;
    if compressed != 0 {
        return Err(FrameError::Compressed);
    }
    if len > max {
        return Err(FrameError::TooLarge(len, max));
    }
    if body.len() < len {
        return Err(FrameError::Short);
    }
    if body.len() > len {
        return Err(FrameError::Trailing);
    }
    M::decode(&body[..len]).map_err(|e| FrameError::Decode(e.to_string()))
}

/// The message length a frame header announces, once its 5 bytes are in.
pub fn announced_len(head: &[u8]) -> Option<usize> {
    (head.len() >= 5).then(|| u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_round_trips_through_the_framing() {
        let resp = StatusResponse {
            id: "u-1".into(),
            state: ExecutionState::Running as i32,
            exit_code: 0,
            stdout: "a\nb\n".into(),
            stderr: "oops\n".into(),
            error_message: String::new(),
        };
        let framed = frame(&resp);
        assert_eq!(announced_len(&framed), Some(framed.len() - 5));
        assert_eq!(unframe::<StatusResponse>(&framed, 1 << 20), Ok(resp));
    }

    #[test]
    fn the_request_is_encoded_as_protoc_would() {
        // field 1, wire type 2, length 3, "abc"
        let framed = frame(&StatusRequest { id: "abc".into() });
        assert_eq!(&framed[..], &[0, 0, 0, 0, 5, 0x0a, 3, b'a', b'b', b'c']);
    }

    #[test]
    fn bad_framing_is_refused() {
        let framed = frame(&StatusRequest { id: "abc".into() });
        assert_eq!(unframe::<StatusRequest>(&[], 100), Err(FrameError::Empty));
        assert_eq!(
            unframe::<StatusRequest>(&framed[..3], 100),
            Err(FrameError::Short)
        );
        assert_eq!(
            unframe::<StatusRequest>(&framed[..7], 100),
            Err(FrameError::Short)
        );
        assert_eq!(
            unframe::<StatusRequest>(&framed, 2),
            Err(FrameError::TooLarge(5, 2))
        );
        let mut two = framed.to_vec();
        two.extend_from_slice(&framed);
        assert_eq!(
            unframe::<StatusRequest>(&two, 100),
            Err(FrameError::Trailing)
        );
        let mut zipped = framed.to_vec();
        zipped[0] = 1;
        assert_eq!(
            unframe::<StatusRequest>(&zipped, 100),
            Err(FrameError::Compressed)
        );
    }
}
