//! Kubernetes `Status` lines and errors of the aggregated listener. Its
//! failures are [`Failure`]s, answered through the one table in
//! [`crate::failure`].

use serde_json::json;

pub use crate::failure::{Failure as ApiError, Refusal, StatusDetails, from_kube};

/// The final NDJSON line of a follow that ended because its Run finished:
/// a `Status` with `"status":"Success"`, `"reason":"RunFinished"`.
pub fn run_finished_line(phase: &str) -> bytes::Bytes {
    run_finished_line_saying(phase, None)
}

/// [`run_finished_line`] with a sentence on what the log holds (e.g. why a
/// Run has no records).
pub fn run_finished_line_saying(phase: &str, note: Option<&str>) -> bytes::Bytes {
    let message = match note {
        Some(note) => format!("the Run finished: {phase}; {note}"),
        None => format!("the Run finished: {phase}"),
    };
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 200,
        "reason": "RunFinished",
        "message": message,
    });
    let mut line = serde_json::to_vec(&status).unwrap_or_default();
    line.push(b'\n');
    bytes::Bytes::from(line)
}
