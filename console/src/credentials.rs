//! Who is calling the Console listener, in order of precedence: an
//! `Authorization: Bearer` header, a client certificate (when a client CA is
//! configured), the session cookie. Every path uses the shared
//! authentication layer.

use http::HeaderMap;
use kruntimes_core::auth::{AuthError, Authenticator, BearerToken, Caller, bearer_token};
use kruntimes_core::failure::Refusal as _;
use kruntimes_core::tls::PeerCertificates;

use crate::error::ConsoleError;
use crate::session::SessionSealer;

/// Where the credential came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The `Authorization: Bearer` header.
    Header,
    /// A client certificate verified against the client CA.
    Certificate,
    /// The session cookie.
    Cookie,
}

/// An authenticated caller of the Console.
#[derive(Clone, Debug)]
pub struct Credentials {
    /// Who the caller is.
    pub caller: Caller,
    /// Where the credential came from.
    pub source: Source,
}

impl Credentials {
    /// The caller's own token, needed to act as them on the Kubernetes API.
    pub fn token(&self) -> Result<&BearerToken, ConsoleError> {
        self.caller
            .token
            .as_ref()
            .ok_or_else(ConsoleError::needs_token)
    }
}

/// Maps an authentication failure to an answer.
pub fn auth_error(e: AuthError) -> ConsoleError {
    match e {
        AuthError::TokenTooLong => ConsoleError::bad_request("the token is over 16 KiB"),
        AuthError::MalformedHeader(m) => {
            ConsoleError::bad_request(format!("the Authorization header is malformed: {m}"))
        }
        AuthError::Unavailable(m) => ConsoleError::unavailable(m),
        other => ConsoleError::unauthorized(other.to_string()),
    }
}

/// Resolves the caller; `Ok(None)` means no credential at all. An invalid
/// header token is an error; an unusable cookie is treated as absent.
pub async fn resolve(
    authn: &Authenticator,
    sealer: &SessionSealer,
    headers: &HeaderMap,
    peer: &PeerCertificates,
) -> Result<Option<Credentials>, ConsoleError> {
    resolve_until(authn, sealer, headers, peer)
        .await
        .map(|(creds, _)| creds)
}

/// [`resolve`], and for credentials from a header token answered by the
/// token cache, the cache's deadline for them: until then the same token
/// may be taken for the same credentials.
pub async fn resolve_until(
    authn: &Authenticator,
    sealer: &SessionSealer,
    headers: &HeaderMap,
    peer: &PeerCertificates,
) -> Result<(Option<Credentials>, Option<std::time::Instant>), ConsoleError> {
    if let Some(token) = bearer_token(headers).map_err(auth_error)? {
        let (caller, until) = authn
            .tokens()
            .review_until(token)
            .await
            .map_err(auth_error)?;
        let creds = Credentials {
            caller,
            source: Source::Header,
        };
        return Ok((Some(creds), until));
    }
    Ok((resolve_other(authn, sealer, headers, peer).await?, None))
}

/// The credentials of a request without a header token.
async fn resolve_other(
    authn: &Authenticator,
    sealer: &SessionSealer,
    headers: &HeaderMap,
    peer: &PeerCertificates,
) -> Result<Option<Credentials>, ConsoleError> {
    if let Some(caller) = authn.from_certificate(headers, peer).map_err(auth_error)? {
        return Ok(Some(Credentials {
            caller,
            source: Source::Certificate,
        }));
    }
    if let Some(token) = SessionSealer::from_headers(headers).and_then(|v| sealer.open(&v)) {
        match authn.tokens().review(token).await {
            Ok(caller) => {
                return Ok(Some(Credentials {
                    caller,
                    source: Source::Cookie,
                }));
            }
            Err(AuthError::Unavailable(m)) => return Err(ConsoleError::unavailable(m)),
            Err(_) => return Ok(None),
        }
    }
    Ok(None)
}
