//! Long-lived streams (operations sockets, follows) re-check their caller's
//! access while they are open: the token is reviewed again and the action
//! authorized again at least once per cache TTL (through the caches), and the
//! stream never outlives the credential's known expiry.

use std::time::Duration;

use super::access::{AccessReview, Decision, ResourceAttributes};
use super::token::TokenReviewer;
use super::{AuthError, Caller};

/// How a stream's access is re-checked.
#[derive(Clone)]
pub struct Recheck {
    /// Re-authenticates the caller's token (through its cache).
    pub tokens: TokenReviewer,
    /// Re-authorizes the stream's action (through its cache).
    pub access: AccessReview,
    /// At most the shorter of the two cache TTLs.
    pub interval: Duration,
}

/// Why a stream's access ended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Revoked {
    /// The credential's known expiry passed.
    #[error("access was revoked: the credential expired")]
    Expired,
    /// TokenReview no longer authenticates the token, or names another user.
    #[error("access was revoked: the credential no longer authenticates")]
    Unauthenticated,
    /// The caller may no longer do the stream's action.
    #[error("access was revoked: {user:?} may no longer {action}")]
    Forbidden {
        /// The caller's user name.
        user: String,
        /// The action, as `kubectl auth can-i` words it.
        action: String,
    },
}

impl Revoked {
    /// The final `Status` of a follow that ends for this reason: 403 when
    /// the action is no longer allowed, 401 otherwise.
    pub fn to_api_error(&self) -> crate::status::ApiError {
        use crate::failure::Refusal as _;
        match self {
            Self::Forbidden { .. } => crate::status::ApiError::forbidden(self.to_string()),
            _ => crate::status::ApiError::unauthorized(self.to_string()),
        }
    }
}

impl Recheck {
    /// Resolves when `caller` loses the right to `attrs`; pending while it
    /// keeps it. A review that cannot be made (the cluster unreachable) keeps
    /// the stream; the next round asks again.
    pub async fn revoked(&self, caller: &Caller, attrs: &ResourceAttributes) -> Revoked {
        let expiry = expires_in(caller.expires_at, jiff::Timestamp::now().as_second())
            .map(|left| tokio::time::Instant::now() + left);
        let interval = self.interval.max(Duration::from_millis(100));
        loop {
            // One timer: the next round, or the credential's expiry if sooner.
            let next = tokio::time::Instant::now() + interval;
            match expiry {
                Some(at) if at <= next => {
                    tokio::time::sleep_until(at).await;
                    return Revoked::Expired;
                }
                _ => tokio::time::sleep_until(next).await,
            }
            // Boxed: held by every long-lived stream, a round's state (the
            // re-reviewed caller too) is allocated only while it runs.
            if let Some(why) = Box::pin(self.round(caller, attrs)).await {
                return why;
            }
        }
    }

    /// One re-check: `Some` when access ended. A review that cannot be made
    /// keeps the stream.
    async fn round(&self, caller: &Caller, attrs: &ResourceAttributes) -> Option<Revoked> {
        let current = match &caller.token {
            Some(token) => match self.tokens.review(token.clone()).await {
                Ok(c) if c.user == caller.user => c,
                Ok(_) | Err(AuthError::InvalidToken) => return Some(Revoked::Unauthenticated),
                Err(error) => {
                    tracing::debug!(%error, "re-authenticating a stream's caller failed; keeping it");
                    return None;
                }
            },
            None => caller.clone(),
        };
        match self.access.check(&current, attrs).await {
            Ok(Decision::Allowed) => None,
            Ok(Decision::Denied(_)) => Some(Revoked::Forbidden {
                user: caller.user.clone(),
                action: attrs.describe(),
            }),
            Err(_) => {
                tracing::debug!("re-authorizing a stream's caller failed; keeping it");
                None
            }
        }
    }
}

/// Time left until a credential's expiry (Unix seconds), if it has one.
fn expires_in(expires_at: Option<i64>, now: i64) -> Option<Duration> {
    expires_at.map(|exp| Duration::from_secs(exp.saturating_sub(now).max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AuthMethod;
    use crate::metrics::Metrics;

    /// A client whose every call fails: a review that cannot be made.
    fn unreachable_client() -> kube::Client {
        let svc = tower::service_fn(|_req: http::Request<kube::client::Body>| async {
            Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("unreachable"))
        });
        kube::Client::new(svc, "default")
    }

    fn caller(expires_at: Option<i64>) -> Caller {
        Caller {
            user: "system:serviceaccount:team-a:robot".into(),
            uid: None,
            groups: vec![],
            extra: Default::default(),
            method: AuthMethod::BearerToken,
            token: None,
            expires_at,
        }
    }

    fn attrs() -> ResourceAttributes {
        ResourceAttributes {
            verb: "create",
            group: "kruntimes.io",
            resource: "runs",
            subresource: Some("operations"),
            namespace: "team-a".into(),
            name: Some("r".into()),
        }
    }

    #[test]
    fn time_left_to_expiry() {
        assert_eq!(expires_in(None, 100), None);
        assert_eq!(expires_in(Some(160), 100), Some(Duration::from_secs(60)));
        assert_eq!(expires_in(Some(90), 100), Some(Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_at_its_credentials_expiry() {
        let client = unreachable_client();
        let recheck = Recheck {
            tokens: TokenReviewer::new(client.clone(), Duration::from_secs(10), Metrics::default()),
            access: AccessReview::new(client, Duration::from_secs(10), Metrics::default()),
            interval: Duration::from_secs(3600),
        };
        let now = jiff::Timestamp::now().as_second();
        let start = tokio::time::Instant::now();
        let why = recheck.revoked(&caller(Some(now + 90)), &attrs()).await;
        assert_eq!(why, Revoked::Expired);
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_secs(88) && waited <= Duration::from_secs(91),
            "ended after {waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_review_keeps_the_stream() {
        let client = unreachable_client();
        let recheck = Recheck {
            tokens: TokenReviewer::new(client.clone(), Duration::from_secs(10), Metrics::default()),
            access: AccessReview::new(client, Duration::from_secs(10), Metrics::default()),
            interval: Duration::from_secs(1),
        };
        let c = caller(None);
        let a = attrs();
        let ended = tokio::time::timeout(Duration::from_secs(30), recheck.revoked(&c, &a)).await;
        assert!(
            ended.is_err(),
            "an unreachable review ended the stream: {ended:?}"
        );
    }
}
