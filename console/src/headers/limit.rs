//! The refusal of a header block over the Console's bound; `error.rs`
//! maps it to its answer.

/// A request whose header block is larger than the Console accepts.
#[derive(Debug, thiserror::Error)]
#[error("the request target and headers total {size} bytes; at most {max} are accepted")]
pub struct HeadersTooLarge {
    /// Bytes of the request target and headers.
    pub size: usize,
    /// The bound, in bytes.
    pub max: usize,
}
