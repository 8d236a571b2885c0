//! The `runs/log` subresource: reading a Run's records out of its Runtime
//! Pod's `runtimed` container log.

pub mod cursor;
pub mod fanout;
pub mod filter;
pub mod follow;
pub mod handler;
pub mod lines;
pub mod live;
pub mod notes;
pub mod numbers;
pub mod outbox;
pub mod params;
pub mod reader;
pub mod runwatch;
pub mod scan;
pub mod search;
pub mod tail;

pub use filter::{LogRecord, RunFilter};
pub use params::LogQuery;

/// Most records one response carries.
pub const MAX_TAIL_RECORDS: usize = 500;
/// Most bytes of record messages one response carries.
pub const MAX_LIMIT_BYTES: usize = 1 << 20;
/// Longest runtimed line kept whole; longer lines are consumed without being buffered.
pub const MAX_LINE_BYTES: usize = 256 << 10;
/// The container whose log holds the Runs' records.
pub const RUNTIMED_CONTAINER: &str = "runtimed";
