//! What the Console's handlers share, and the credentials of one request.

use std::sync::Arc;

use kruntimes_core::auth::{AccessReview, Authenticator, Recheck};
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::limit::Caps;
use kruntimes_core::metrics::Metrics;

use crate::clients::UserClients;
use crate::credentials::Credentials;
use crate::session::SessionSealer;

/// Everything the Console's handlers share.
pub struct ConsoleState {
    /// Authenticates requests (bearer token, client certificate).
    pub authn: Authenticator,
    /// SubjectAccessReview with the Console's own identity, cached.
    pub access: AccessReview,
    /// Seals and opens the session cookie.
    pub sealer: Arc<SessionSealer>,
    /// Kubernetes clients that carry a caller's own token.
    pub users: UserClients,
    /// The Console's own identity: TokenReview, SubjectAccessReview,
    /// public-read summaries and the /v1 Run cache. Never reads on a user's behalf.
    pub service_account: kube::Client,
    /// Whether list endpoints answer summaries without a credential
    /// (`console.publicRead`).
    pub public_read: bool,
    /// Where requests, reviews and caps are counted.
    pub metrics: Metrics,
    /// Long-lived answers (follows) end when the process stops.
    pub lifecycle: Lifecycle,
    /// Open `/api` log follows, in total and per caller.
    pub follows: Arc<Caps>,
    /// Open `/api` watch streams, in total and per caller.
    pub watches: Arc<Caps>,
    /// Re-checks an open follow's access.
    pub recheck: Recheck,
}

/// The resolved credentials of a request (absent: none given), put into
/// the request's extensions by [`crate::origin::credentials`].
#[derive(Clone, Debug)]
pub struct RequestCredentials(pub Option<Arc<Credentials>>);
