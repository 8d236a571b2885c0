//! Bearer tokens checked with TokenReview, cached by token digest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::PostParams;
use kube::{Api, Client};
use moka::Expiry;
use moka::future::Cache;

use super::AuthError;
use super::caller::{AuthMethod, BearerToken, Caller};
use crate::metrics::{Metrics, ResultLabels};

#[derive(Clone, Debug)]
enum Outcome {
    Authenticated(Caller),
    Rejected,
}

struct OutcomeExpiry {
    success: Duration,
    failure: Duration,
}

impl Expiry<[u8; 32], Arc<(Outcome, Option<i64>)>> for OutcomeExpiry {
    fn expire_after_create(
        &self,
        _key: &[u8; 32],
        value: &Arc<(Outcome, Option<i64>)>,
        _now: Instant,
    ) -> Option<Duration> {
        match &value.0 {
            Outcome::Rejected => Some(self.failure),
            Outcome::Authenticated(_) => {
                let ttl = self.success;
                // Never keep a token past its known expiry.
                Some(match value.1 {
                    Some(exp) => {
                        let left = exp - jiff::Timestamp::now().as_second();
                        ttl.min(Duration::from_secs(left.max(0) as u64))
                    }
                    None => ttl,
                })
            }
        }
    }
}

/// Authenticates bearer tokens with TokenReview using the server's own identity.
#[derive(Clone)]
pub struct TokenReviewer {
    client: Client,
    cache: Cache<[u8; 32], Arc<(Outcome, Option<i64>)>>,
    metrics: Metrics,
}

impl TokenReviewer {
    /// `client` is the server's own (ServiceAccount) client.
    pub fn new(client: Client, success_ttl: Duration, metrics: Metrics) -> Self {
        let cache = Cache::builder()
            .max_capacity(100_000)
            .expire_after(OutcomeExpiry {
                success: success_ttl,
                failure: Duration::from_secs(2).min(success_ttl),
            })
            .build();
        Self {
            client,
            cache,
            metrics,
        }
    }

    /// The caller this token belongs to.
    pub async fn review(&self, token: BearerToken) -> Result<Caller, AuthError> {
        let expiry = token.jwt_expiry();
        if expiry.is_some_and(|exp| exp <= jiff::Timestamp::now().as_second()) {
            return Err(AuthError::InvalidToken);
        }
        // Concurrent first uses of one token share a single TokenReview.
        let entry = self
            .cache
            .entry(token.digest())
            .or_try_insert_with(async {
                self.call(&token, expiry)
                    .await
                    .map(|o| Arc::new((o, expiry)))
            })
            .await
            .map_err(|e| match e.as_ref() {
                AuthError::Unavailable(m) => AuthError::Unavailable(m.clone()),
                _ => AuthError::InvalidToken,
            })?;
        if !entry.is_fresh() {
            self.metrics.token_review_cache_hits.inc();
        }
        match &entry.value().0 {
            Outcome::Authenticated(c) => {
                let mut c = c.clone();
                c.token = Some(token);
                Ok(c)
            }
            Outcome::Rejected => Err(AuthError::InvalidToken),
        }
    }

    async fn call(&self, token: &BearerToken, expiry: Option<i64>) -> Result<Outcome, AuthError> {
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.expose().to_owned()),
                audiences: None,
            },
            ..Default::default()
        };
        let result = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| {
                self.metrics
                    .token_reviews
                    .get_or_create(&ResultLabels { result: "error" })
                    .inc();
                // The error text of a failed review never includes the token.
                tracing::warn!(error = %e, "TokenReview failed");
                AuthError::Unavailable(
                    "the token could not be reviewed: the Kubernetes API is unreachable".into(),
                )
            })?;
        let status = result.status.unwrap_or_default();
        let user = status.user.unwrap_or_default();
        let authenticated = status.authenticated == Some(true)
            && user.username.as_deref().is_some_and(|u| !u.is_empty());
        self.metrics
            .token_reviews
            .get_or_create(&ResultLabels {
                result: if authenticated {
                    "authenticated"
                } else {
                    "rejected"
                },
            })
            .inc();
        if !authenticated {
            return Ok(Outcome::Rejected);
        }
        Ok(Outcome::Authenticated(Caller {
            user: user.username.unwrap_or_default(),
            uid: user.uid.filter(|u| !u.is_empty()),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default().into_iter().collect(),
            method: AuthMethod::BearerToken,
            token: None,
            expires_at: expiry,
        }))
    }
}
