//! The authentication/authorization layer both listeners share.
//!
//! Authentication, in order: a front-proxy client certificate (user from the
//! configured identity headers), a client certificate signed by the client
//! CA (user from CN, groups from O), a bearer token (TokenReview). Identity
//! headers are read only on the first path. Authorization is a
//! SubjectAccessReview, cached briefly.

pub mod access;
pub mod caller;
pub mod recheck;
pub mod requestheader;
pub mod token;

use std::sync::Arc;

use http::HeaderMap;

pub use access::{AccessReview, ResourceAttributes};
pub use caller::{AuthMethod, BearerToken, Caller};
pub use recheck::{Recheck, Revoked};
pub use requestheader::{RequestHeaderConfig, RequestHeaderSource};
pub use token::TokenReviewer;

use crate::tls::DynamicClientVerifier;
use crate::tls::PeerCertificates;

/// Longest bearer token accepted.
pub const MAX_TOKEN_BYTES: usize = 16 << 10;

/// Why a request could not be authenticated.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The request carries neither a bearer token nor a client certificate this
    /// listener trusts.
    #[error("no credentials: send a bearer token or a client certificate")]
    NoCredentials,
    /// TokenReview did not authenticate the token (a 401).
    #[error("the bearer token is invalid or expired")]
    InvalidToken,
    /// The token is over [`MAX_TOKEN_BYTES`]; it is not sent for review.
    #[error("the bearer token is longer than {MAX_TOKEN_BYTES} bytes")]
    TokenTooLong,
    /// The `Authorization` header is not `Bearer <token>`, or the token is
    /// malformed; the words say what is wrong.
    #[error("the Authorization header is malformed: {0}")]
    MalformedHeader(&'static str),
    /// A trusted client certificate has no common name to take the user from.
    #[error("the client certificate does not name a user")]
    CertificateWithoutUser,
    /// The token could not be reviewed (the Kubernetes API unreachable): a 503,
    /// not a refusal.
    #[error("authentication is unavailable: {0}")]
    Unavailable(String),
}

/// Authenticates the requests of one listener.
#[derive(Clone)]
pub struct Authenticator {
    verifier: Arc<DynamicClientVerifier>,
    request_header: Option<RequestHeaderSource>,
    tokens: TokenReviewer,
}

impl Authenticator {
    /// `request_header` is the front-proxy configuration (the aggregated
    /// listener only); `verifier` holds the listener's client trust roots.
    pub fn new(
        verifier: Arc<DynamicClientVerifier>,
        request_header: Option<RequestHeaderSource>,
        tokens: TokenReviewer,
    ) -> Self {
        Self {
            verifier,
            request_header,
            tokens,
        }
    }

    /// The TokenReview client, for tokens that arrive another way (the session
    /// cookie).
    pub fn tokens(&self) -> &TokenReviewer {
        &self.tokens
    }

    /// The caller from the connection's certificate, else from the bearer token in `headers`.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: &PeerCertificates,
    ) -> Result<Caller, AuthError> {
        if let Some(caller) = self.from_certificate(headers, peer)? {
            return Ok(caller);
        }
        match bearer_token(headers)? {
            Some(token) => self.tokens.review(token).await,
            None => Err(AuthError::NoCredentials),
        }
    }

    /// Authenticates with a certificate only (for callers that take the token from elsewhere).
    pub fn from_certificate(
        &self,
        headers: &HeaderMap,
        peer: &PeerCertificates,
    ) -> Result<Option<Caller>, AuthError> {
        if peer.0.is_empty() {
            return Ok(None);
        }
        let roots = self.verifier.roots();
        let (front_proxy, client_ca) = roots.classify(&peer.0);
        if front_proxy && let Some(source) = &self.request_header {
            let config = source.current();
            if let Some(caller) = config.caller_from(&peer.0[0], headers) {
                return Ok(Some(caller));
            }
        }
        if client_ca {
            return caller::from_client_certificate(&peer.0[0])
                .map(Some)
                .ok_or(AuthError::CertificateWithoutUser);
        }
        Ok(None)
    }
}

/// The bearer token of an `Authorization` header, if any.
pub fn bearer_token(headers: &HeaderMap) -> Result<Option<BearerToken>, AuthError> {
    match bearer_text(headers)? {
        Some(token) => BearerToken::new(token).map(Some),
        None => Ok(None),
    }
}

/// The token text of the `Authorization` field as [`bearer_token`] reads
/// it, borrowed and not yet checked for a token's shape: for comparing
/// with a token already checked, without copying it.
pub fn bearer_text(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    if value.len() > MAX_TOKEN_BYTES + 7 {
        return Err(AuthError::TokenTooLong);
    }
    let value = value
        .to_str()
        .map_err(|_| AuthError::MalformedHeader("it is not ASCII"))?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or(AuthError::MalformedHeader("expected `Bearer <token>`"))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::MalformedHeader(
            "only the Bearer scheme is accepted",
        ));
    }
    Ok(Some(token.trim()))
}
