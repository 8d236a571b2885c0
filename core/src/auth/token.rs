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
use crate::ttlmap::TtlMap;

#[derive(Clone, Debug)]
enum Outcome {
    Authenticated(Caller),
    Rejected,
}

struct OutcomeExpiry {
    success: Duration,
    failure: Duration,
}

impl OutcomeExpiry {
    /// How long an outcome is kept from now.
    fn ttl(&self, value: &(Outcome, Option<i64>)) -> Duration {
        match &value.0 {
            Outcome::Rejected => self.failure,
            Outcome::Authenticated(_) => {
                let ttl = self.success;
                // Never keep a token past its known expiry.
                match value.1 {
                    Some(exp) => {
                        let left = exp - jiff::Timestamp::now().as_second();
                        ttl.min(Duration::from_secs(left.max(0) as u64))
                    }
                    None => ttl,
                }
            }
        }
    }
}

/// A review's outcome and the token's known expiry (Unix seconds).
type Entry = Arc<(Outcome, Option<i64>)>;

/// The expiry policy, shared by the cache and its hit path.
struct OutcomeExpiryRef(Arc<OutcomeExpiry>);

impl Expiry<[u8; 32], Arc<(Outcome, Option<i64>)>> for OutcomeExpiryRef {
    fn expire_after_create(
        &self,
        _key: &[u8; 32],
        value: &Arc<(Outcome, Option<i64>)>,
        _now: Instant,
    ) -> Option<Duration> {
        Some(self.0.ttl(value))
    }
}

fn outcome(entry: &(Outcome, Option<i64>), token: BearerToken) -> Result<Caller, AuthError> {
    match &entry.0 {
        Outcome::Authenticated(c) => {
            let mut c = c.clone();
            c.token = Some(token);
            Ok(c)
        }
        Outcome::Rejected => Err(AuthError::InvalidToken),
    }
}

/// Authenticates bearer tokens with TokenReview using the server's own identity.
#[derive(Clone)]
pub struct TokenReviewer {
    client: Client,
    cache: Cache<[u8; 32], Entry>,
    /// The cache's answers, read without awaiting (the hit path).
    hits: Arc<TtlMap<[u8; 32], Entry>>,
    expiry: Arc<OutcomeExpiry>,
    metrics: Metrics,
}

impl TokenReviewer {
    /// `client` is the server's own (ServiceAccount) client.
    pub fn new(client: Client, success_ttl: Duration, metrics: Metrics) -> Self {
        let expiry = Arc::new(OutcomeExpiry {
            success: success_ttl,
            failure: Duration::from_secs(2).min(success_ttl),
        });
        let cache = Cache::builder()
            .max_capacity(100_000)
            .expire_after(OutcomeExpiryRef(expiry.clone()))
            .build();
        Self {
            client,
            cache,
            hits: Arc::new(TtlMap::new(100_000)),
            expiry,
            metrics,
        }
    }

    /// The caller this token belongs to.
    pub async fn review(&self, token: BearerToken) -> Result<Caller, AuthError> {
        self.review_until(token).await.map(|(caller, _)| caller)
    }

    /// [`TokenReviewer::review`], and the cache's deadline for the answer
    /// when it came from the cache: it may be reused until then, never
    /// later (a revoked token is refused once it passes).
    pub async fn review_until(
        &self,
        token: BearerToken,
    ) -> Result<(Caller, Option<Instant>), AuthError> {
        let digest = token.digest();
        if let Some((hit, until)) = self.hits.get_until(&digest) {
            self.metrics.token_review_cache_hits.inc();
            return outcome(&hit, token).map(|caller| (caller, Some(until)));
        }
        // The TokenReview's future is large and rarely needed: on the heap,
        // so that every caller's future (and each move of it) stays small.
        Box::pin(self.review_uncached(token, digest))
            .await
            .map(|caller| (caller, None))
    }

    /// Counts an answer reused from an earlier [`TokenReviewer::review_until`]
    /// as the cache hit it stands for.
    pub fn reused(&self) {
        self.metrics.token_review_cache_hits.inc();
    }

    /// A token not answered by the hit path: from the cache, or reviewed.
    async fn review_uncached(
        &self,
        token: BearerToken,
        digest: [u8; 32],
    ) -> Result<Caller, AuthError> {
        let expiry = token.jwt_expiry();
        if expiry.is_some_and(|exp| exp <= jiff::Timestamp::now().as_second()) {
            return Err(AuthError::InvalidToken);
        }
        // Concurrent first uses of one token share a single TokenReview.
        let entry = self
            .cache
            .entry(digest)
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
        if entry.is_fresh() {
            // Decided just now: the hit path may answer it for the same time.
            let ttl = self.expiry.ttl(entry.value());
            self.hits
                .insert(digest, entry.value().clone(), Instant::now() + ttl);
        } else {
            self.metrics.token_review_cache_hits.inc();
        }
        outcome(entry.value(), token)
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
