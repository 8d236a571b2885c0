//! How a `/v1` call fails on its way to the gateway or back; `error.rs`
//! maps each to its answer.

/// How a `/v1` call failed on its way to the gateway or back.
#[derive(Debug, thiserror::Error)]
pub enum AccessFailure {
    #[error(
        "the request body did not arrive within {secs}s (--access-body-timeout); nothing was forwarded"
    )]
    BodyTimeout { secs: f32 },
    #[error("the Runtime gateway did not answer in time")]
    GatewayTimeout,
    #[error("the Runtime gateway closed the connection before answering")]
    BrokeOff,
    #[error("the Runtime gateway's response exceeds {max} bytes")]
    ResponseTooLarge { max: usize },
    #[error("the Runtime gateway is busy")]
    GatewayBusy,
    /// The answer names another call's invocation ID: the gateway's
    /// connection is out of step (an extra or late answer on it).
    #[error(
        "the Runtime gateway answered another call (invocation ID {got:?}); the connection was closed"
    )]
    AnotherCallsAnswer { got: String },
}
