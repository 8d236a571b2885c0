//! `GET /api/namespaces/{ns}/runs/{name}/operations/access`: may the caller
//! run session operations on this Run? Asked with a SelfSubjectAccessReview
//! sent with the caller's own token (never the Console's identity), for the
//! very attributes `/v1/.../operations:ws` is authorized with (`create` on
//! `runs/operations` in `kruntimes.io`), so the session panel can show a
//! read-only state naming the missing verb before anyone types.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

use crate::api::types::{AccessDecision, AccessRequest};
use crate::api::{ApiPath, check_name, check_namespace, user_client};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// The access session operations need on `name`.
pub fn operations_access(ns: &str, name: &str) -> AccessRequest {
    let mut a = AccessRequest::new("create", "kruntimes.io", "runs", ns, Some(name));
    a.subresource = Some("operations".into());
    a
}

fn review(a: &AccessRequest) -> SelfSubjectAccessReview {
    SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(a.verb.clone()),
                group: Some(a.group.clone()),
                resource: Some(a.resource.clone()),
                subresource: a.subresource.clone(),
                namespace: a.namespace.clone(),
                name: a.name.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Asks kube-apiserver, as the holder of `client`, whether `a` is allowed
/// (a SelfSubjectAccessReview; an explicit deny wins).
pub async fn self_review(
    client: kube::Client,
    a: &AccessRequest,
) -> Result<(bool, Option<String>), kube::Error> {
    let answer = Api::<SelfSubjectAccessReview>::all(client)
        .create(&PostParams::default(), &review(a))
        .await?;
    let status = answer.status.unwrap_or_default();
    Ok((
        status.allowed && !status.denied.unwrap_or(false),
        Some(status.reason.unwrap_or_default()).filter(|r| !r.is_empty()),
    ))
}

/// `GET /api/namespaces/{ns}/runs/{name}/operations/access`: may the caller run
/// session operations on the Run (a SelfSubjectAccessReview with their own
/// token)?
pub async fn operations(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<AccessDecision>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("run", &name)?;
    let client = user_client(&state, &caller)?;
    let access = operations_access(&ns, &name);
    let (allowed, reason) = self_review(client, &access).await.map_err(|e| {
        let mut asked = AccessRequest::new(
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
            None,
        );
        asked.namespace = None;
        KubeFailure::new(e, "asking whether you may run session operations", asked)
    })?;
    Ok(Json(AccessDecision {
        allowed,
        reason,
        access,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_asks_exactly_what_operations_are_authorized_with() {
        let r = review(&operations_access("team-a", "shell"));
        let a = r.spec.resource_attributes.unwrap();
        assert_eq!(a.verb.as_deref(), Some("create"));
        assert_eq!(a.group.as_deref(), Some("kruntimes.io"));
        assert_eq!(a.resource.as_deref(), Some("runs"));
        assert_eq!(a.subresource.as_deref(), Some("operations"));
        assert_eq!(a.namespace.as_deref(), Some("team-a"));
        assert_eq!(a.name.as_deref(), Some("shell"));
    }
}
