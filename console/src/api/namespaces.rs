//! `GET /api/namespaces`: the namespaces the caller can read, and the one
//! the UI lands in when nothing is remembered.

use kruntimes_core::failure::{Reason, Refusal as _};
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::{Api, Client};

use super::types::{AccessRequest, NamespaceCheck, NamespaceItem, NamespaceList};
use super::{ApiPath, check_namespace};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// Most namespaces listed (and so most access reviews made) for one request.
pub const MAX_NAMESPACES: u32 = 500;
/// SelfSubjectAccessReviews of one request in flight at once.
pub const REVIEW_CONCURRENCY: usize = 8;

/// The namespace of a ServiceAccount username `system:serviceaccount:NS:NAME`.
pub fn service_account_namespace(user: &str) -> Option<&str> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (kruntimes_core::names::is_dns1123_label(ns) && !name.is_empty() && !name.contains(':'))
        .then_some(ns)
}

fn list_access() -> AccessRequest {
    AccessRequest {
        verb: "list".into(),
        group: String::new(),
        resource: "namespaces".into(),
        subresource: None,
        namespace: None,
        name: None,
    }
}

async fn list(client: Client) -> Result<Vec<Namespace>, kube::Error> {
    let api: Api<Namespace> = Api::all(client);
    Ok(api
        .list(&ListParams::default().limit(MAX_NAMESPACES))
        .await?
        .items)
}

fn item(n: &Namespace, readable: Option<bool>) -> NamespaceItem {
    NamespaceItem {
        name: n.metadata.name.clone().unwrap_or_default(),
        phase: n.status.as_ref().and_then(|s| s.phase.clone()),
        readable,
    }
}

/// May the caller (whose client this is) list Runs in `ns` (`None`: in every namespace)?
async fn may_list_runs(client: Client, ns: Option<String>) -> Result<bool, kube::Error> {
    let mut a = AccessRequest::new("list", "kruntimes.io", "runs", "", None);
    a.namespace = ns;
    Ok(crate::api::access::self_review(client, &a).await?.0)
}

fn review_failure(e: kube::Error) -> ConsoleError {
    KubeFailure::new(
        e,
        "reviewing where Runs may be listed",
        AccessRequest {
            verb: "create".into(),
            group: "authorization.k8s.io".into(),
            resource: "selfsubjectaccessreviews".into(),
            subresource: None,
            namespace: None,
            name: None,
        },
    )
    .into()
}

fn is_forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == Reason::Forbidden.code_u16() || s.code == Reason::Unauthorized.code_u16())
}

/// `GET /api/namespaces`: the namespaces the caller can read, and where the UI
/// lands.
pub async fn namespaces(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
) -> Result<Json<NamespaceList>, ConsoleError> {
    // No namespace is named to a caller without a credential, public read
    // or not: a signed-in caller sees only those it may read, so the public
    // list would have told anyone more than a viewer learns.
    let Some(creds) = caller.0.as_ref() else {
        return Err(needs_credential());
    };
    let client = state.users.for_token(creds.token()?)?;
    let own_ns = service_account_namespace(&creds.caller.user).map(str::to_owned);

    // The caller's own list when they may list namespaces; otherwise the
    // Console's, of which only the namespaces the caller may read are shown.
    let (candidates, listed_by_caller) = match list(client.clone()).await {
        Ok(all) => (all, true),
        Err(e) if is_forbidden(&e) => match list(state.service_account.clone()).await {
            Ok(all) => (all, false),
            Err(_) => (Vec::new(), false),
        },
        Err(e) => return Err(KubeFailure::new(e, "listing namespaces", list_access()).into()),
    };
    let mut candidates = candidates;
    if let Some(ns) = &own_ns
        && !candidates
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some(ns))
    {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.clone());
        candidates.insert(0, n);
    }

    let everywhere = may_list_runs(client.clone(), None)
        .await
        .map_err(review_failure)?;
    let readable: Vec<bool> = if everywhere {
        vec![true; candidates.len()]
    } else {
        let names: Vec<String> = candidates
            .iter()
            .map(|n| n.metadata.name.clone().unwrap_or_default())
            .collect();
        let answers: Vec<Result<bool, kube::Error>> = stream::iter(names)
            .map(|ns| may_list_runs(client.clone(), Some(ns)))
            .buffered(REVIEW_CONCURRENCY)
            .collect()
            .await;
        answers
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(review_failure)?
    };

    let items: Vec<NamespaceItem> = candidates
        .iter()
        .zip(&readable)
        .filter(|(_, r)| listed_by_caller || **r)
        .map(|(n, r)| item(n, Some(*r)))
        .collect();
    Ok(Json(NamespaceList {
        home: home(own_ns.as_deref(), &items),
        items,
        summary: None,
    }))
}

/// `GET /api/namespaces/{ns}`: does the namespace exist? Told only from what
/// the caller could learn anyway: their own `get` of it (200 or 404). When
/// that is forbidden `exists` is absent and the UI keeps saying Forbidden;
/// without a credential the answer is 401. A name that is not a namespace
/// name is a 400.
pub async fn namespace(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath(ns): ApiPath<String>,
) -> Result<Json<NamespaceCheck>, ConsoleError> {
    check_namespace(&ns)?;
    let exists = match caller.0.as_ref() {
        Some(creds) => {
            let client = state.users.for_token(creds.token()?)?;
            match Api::<Namespace>::all(client).get_opt(&ns).await {
                Ok(found) => Some(found.is_some()),
                Err(kube::Error::Api(s)) if s.code == Reason::Forbidden.code_u16() => None,
                Err(e) => {
                    let mut access = AccessRequest::new("get", "", "namespaces", "", Some(&ns));
                    access.namespace = None;
                    return Err(KubeFailure::new(e, "reading the namespace", access).into());
                }
            }
        }
        None => return Err(needs_credential()),
    };
    Ok(Json(NamespaceCheck { name: ns, exists }))
}

/// The refusal of a namespace question asked without a credential.
fn needs_credential() -> ConsoleError {
    ConsoleError::unauthorized("log in or send a bearer token to read this")
}

/// The ServiceAccount's own namespace when readable, else the first readable one.
fn home(own: Option<&str>, items: &[NamespaceItem]) -> Option<String> {
    let readable = |i: &&NamespaceItem| i.readable == Some(true);
    own.and_then(|ns| items.iter().filter(readable).find(|i| i.name == ns))
        .or_else(|| items.iter().find(readable))
        .map(|i| i.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_username_names_its_namespace() {
        assert_eq!(
            service_account_namespace("system:serviceaccount:team-a:viewer"),
            Some("team-a")
        );
        assert_eq!(service_account_namespace("viewer"), None);
        assert_eq!(
            service_account_namespace("system:serviceaccount:team-a"),
            None
        );
        assert_eq!(
            service_account_namespace("system:serviceaccount:Bad_NS:x"),
            None
        );
        assert_eq!(
            service_account_namespace("system:serviceaccount:a:b:c"),
            None
        );
        assert_eq!(
            service_account_namespace("system:serviceaccounts:team-a:x"),
            None
        );
    }

    fn ns(name: &str, readable: bool) -> NamespaceItem {
        NamespaceItem {
            name: name.into(),
            phase: None,
            readable: Some(readable),
        }
    }

    #[test]
    fn home_is_the_own_namespace_when_readable_else_the_first_readable() {
        let items = [ns("default", false), ns("team-a", true), ns("team-b", true)];
        assert_eq!(home(Some("team-b"), &items).as_deref(), Some("team-b"));
        assert_eq!(home(Some("default"), &items).as_deref(), Some("team-a"));
        assert_eq!(home(None, &items).as_deref(), Some("team-a"));
        assert_eq!(home(None, &[ns("default", false)]), None);
    }
}
