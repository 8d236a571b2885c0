//! Authorization with SubjectAccessReview, cached briefly by identity and
//! request attributes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes as K8sResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use moka::Expiry;
use moka::future::Cache;
use sha2::{Digest, Sha256};

use super::caller::Caller;
use crate::metrics::{Metrics, ResultLabels};
use crate::ttlmap::TtlMap;

/// Longest time a decision is cached.
pub const MAX_CACHE_TTL: Duration = Duration::from_secs(30);

/// What is being asked for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceAttributes {
    /// The verb asked for: `get`, `list`, `watch`, `create`.
    pub verb: &'static str,
    /// The API group; `""` for the core group.
    pub group: &'static str,
    /// The resource, plural (`runs`, `pods`).
    pub resource: &'static str,
    /// The subresource (`log`, `invoke`, `operations`), when any.
    pub subresource: Option<&'static str>,
    /// The namespace; `""` for cluster-scoped resources.
    pub namespace: String,
    /// The object's name; `None` asks about every object (list, watch).
    pub name: Option<String>,
}

impl ResourceAttributes {
    /// `kubectl auth can-i` form, for messages.
    pub fn describe(&self) -> String {
        let res = match self.subresource {
            Some(s) => format!("{}/{}", self.resource, s),
            None => self.resource.to_owned(),
        };
        let res = if self.group.is_empty() {
            res
        } else {
            format!("{res}.{}", self.group)
        };
        match &self.name {
            Some(n) => format!(
                "{} {res} {n:?} in namespace {:?}",
                self.verb, self.namespace
            ),
            None => format!("{} {res} in namespace {:?}", self.verb, self.namespace),
        }
    }
}

/// A decision: allowed, or denied with the authorizer's reason.
#[derive(Clone, Debug)]
pub enum Decision {
    /// The authorizer allowed the request.
    Allowed,
    /// The authorizer did not allow it; its reason, possibly empty.
    Denied(String),
}

struct DecisionExpiry;

impl Expiry<[u8; 32], (Decision, Duration)> for DecisionExpiry {
    fn expire_after_create(
        &self,
        _k: &[u8; 32],
        v: &(Decision, Duration),
        _now: Instant,
    ) -> Option<Duration> {
        Some(v.1)
    }
}

/// Why a decision could not be made.
#[derive(Debug, thiserror::Error)]
#[error("authorization is unavailable: the SubjectAccessReview failed")]
pub struct ReviewUnavailable;

/// Decides with SubjectAccessReview using the server's own identity.
#[derive(Clone)]
pub struct AccessReview {
    client: Client,
    ttl: Duration,
    cache: Cache<[u8; 32], (Decision, Duration)>,
    /// The cache's decisions, read without awaiting (the hit path).
    hits: Arc<TtlMap<[u8; 32], Decision>>,
    metrics: Metrics,
}

impl AccessReview {
    /// `ttl` is capped at [`MAX_CACHE_TTL`].
    pub fn new(client: Client, ttl: Duration, metrics: Metrics) -> Self {
        Self {
            client,
            ttl: ttl.min(MAX_CACHE_TTL),
            cache: Cache::builder()
                .max_capacity(100_000)
                .expire_after(DecisionExpiry)
                .build(),
            hits: Arc::new(TtlMap::new(100_000)),
            metrics,
        }
    }

    /// May `caller` do `attrs`?
    pub async fn check(
        &self,
        caller: &Caller,
        attrs: &ResourceAttributes,
    ) -> Result<Decision, ReviewUnavailable> {
        self.check_until(caller, attrs).await.map(|(d, _)| d)
    }

    /// [`AccessReview::check`], and the cache's deadline for the decision
    /// when it came from the cache: it may be reused until then, never later.
    pub async fn check_until(
        &self,
        caller: &Caller,
        attrs: &ResourceAttributes,
    ) -> Result<(Decision, Option<Instant>), ReviewUnavailable> {
        // As Kubernetes' delegated authorizer does, members of system:masters are always allowed.
        if caller.in_group("system:masters") {
            return Ok((Decision::Allowed, None));
        }
        let key = cache_key(caller, attrs);
        if let Some((hit, until)) = self.hits.get_until(&key) {
            self.metrics.access_review_cache_hits.inc();
            return Ok((hit, Some(until)));
        }
        // The review's future is large and rarely needed: on the heap, so
        // that every caller's future (and each move of it) stays small.
        Box::pin(self.check_uncached(caller, attrs, key))
            .await
            .map(|d| (d, None))
    }

    /// Counts a decision reused from an earlier [`AccessReview::check_until`]
    /// as the cache hit it stands for.
    pub fn reused(&self) {
        self.metrics.access_review_cache_hits.inc();
    }

    /// A question not answered by the hit path: from the cache, or reviewed.
    async fn check_uncached(
        &self,
        caller: &Caller,
        attrs: &ResourceAttributes,
        key: [u8; 32],
    ) -> Result<Decision, ReviewUnavailable> {
        // Concurrent identical questions share one SubjectAccessReview. A
        // decision lives for the TTL, never past the token's expiry.
        let review = async {
            let decision = self.call(caller, attrs).await?;
            let mut ttl = self.ttl;
            if let Some(exp) = caller.expires_at {
                let left = exp - jiff::Timestamp::now().as_second();
                ttl = ttl.min(Duration::from_secs(left.max(0) as u64));
            }
            Ok::<_, ReviewUnavailable>((decision, ttl))
        };
        let entry = self
            .cache
            .entry(key)
            .or_try_insert_with(review)
            .await
            .map_err(|_| ReviewUnavailable)?;
        if entry.is_fresh() {
            // Decided just now: the hit path may answer it for the same time.
            let (decision, ttl) = entry.value();
            self.hits
                .insert(key, decision.clone(), Instant::now() + *ttl);
        } else {
            self.metrics.access_review_cache_hits.inc();
        }
        Ok(entry.into_value().0)
    }

    async fn call(
        &self,
        caller: &Caller,
        attrs: &ResourceAttributes,
    ) -> Result<Decision, ReviewUnavailable> {
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(caller.user.clone()),
                uid: caller.uid.clone(),
                groups: Some(caller.groups.clone()),
                extra: (!caller.extra.is_empty())
                    .then(|| caller.extra.clone().into_iter().collect()),
                resource_attributes: Some(K8sResourceAttributes {
                    verb: Some(attrs.verb.to_owned()),
                    group: Some(attrs.group.to_owned()),
                    resource: Some(attrs.resource.to_owned()),
                    subresource: attrs.subresource.map(str::to_owned),
                    namespace: Some(attrs.namespace.clone()),
                    name: attrs.name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let result = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                tracing::warn!(%error, "SubjectAccessReview failed");
                self.metrics
                    .access_reviews
                    .get_or_create(&ResultLabels { result: "error" })
                    .inc();
                ReviewUnavailable
            })?;
        let status = result.status.unwrap_or_default();
        let allowed = status.allowed && status.denied != Some(true);
        self.metrics
            .access_reviews
            .get_or_create(&ResultLabels {
                result: if allowed { "allowed" } else { "denied" },
            })
            .inc();
        Ok(if allowed {
            Decision::Allowed
        } else {
            Decision::Denied(status.reason.unwrap_or_default())
        })
    }
}

fn cache_key(caller: &Caller, attrs: &ResourceAttributes) -> [u8; 32] {
    let mut h = Sha256::new();
    // Every field is length-prefixed and every list count-prefixed, so no two
    // questions share a key.
    fn count(h: &mut Sha256, n: usize) {
        h.update((n as u64).to_le_bytes());
    }
    fn field(h: &mut Sha256, s: &str) {
        count(h, s.len());
        h.update(s.as_bytes());
    }
    field(&mut h, &caller.user);
    field(&mut h, caller.uid.as_deref().unwrap_or(""));
    count(&mut h, caller.groups.len());
    for g in &caller.groups {
        field(&mut h, g);
    }
    count(&mut h, caller.extra.len());
    for (k, vs) in &caller.extra {
        field(&mut h, k);
        count(&mut h, vs.len());
        for v in vs {
            field(&mut h, v);
        }
    }
    field(&mut h, attrs.verb);
    field(&mut h, attrs.group);
    field(&mut h, attrs.resource);
    field(&mut h, attrs.subresource.unwrap_or(""));
    field(&mut h, &attrs.namespace);
    field(&mut h, attrs.name.as_deref().unwrap_or(""));
    h.finalize().into()
}
