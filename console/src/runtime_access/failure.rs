//! How a `/v1` call fails on its way to the gateway or back; `error.rs`
//! maps each to its answer.

/// How a `/v1` call failed on its way to the gateway or back.
#[derive(Debug, thiserror::Error)]
pub enum AccessFailure {
    /// The admitted request's body did not arrive within
    /// `--access-body-timeout`.
    #[error(
        "the request body did not arrive within {secs}s (--access-body-timeout); nothing was forwarded"
    )]
    BodyTimeout {
        /// The timeout, in seconds.
        secs: f32,
    },
    /// The gateway's answer did not come within `--access-total-timeout`.
    #[error("the Runtime gateway did not answer in time")]
    GatewayTimeout,
    /// The gateway's connection ended before a whole answer (the call may have
    /// run; it is not retried).
    #[error("the Runtime gateway closed the connection before answering")]
    BrokeOff,
    /// The gateway's answer body is over `--access-max-response-bytes`.
    #[error("the Runtime gateway's response exceeds {max} bytes")]
    ResponseTooLarge {
        /// The bound, in bytes.
        max: usize,
    },
    /// The gateway refused an operations socket with 429.
    #[error("the Runtime gateway is busy")]
    GatewayBusy,
    /// The answer names another call's invocation ID: the gateway's
    /// connection is out of step (an extra or late answer on it).
    #[error(
        "the Runtime gateway answered another call (invocation ID {got:?}); the connection was closed"
    )]
    AnotherCallsAnswer {
        /// The invocation ID the answer carries.
        got: String,
    },
}
