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
use super::{ApiPath, check_namespace, list_reader};
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

pub async fn namespaces(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
) -> Result<Json<NamespaceList>, ConsoleError> {
    let Some(creds) = caller.0.as_ref() else {
        let reader = list_reader(&state, &caller)?;
        let all = list(reader.client().clone())
            .await
            .map_err(|e| KubeFailure::new(e, "listing namespaces", list_access()))?;
        return Ok(Json(NamespaceList {
            items: all.iter().map(|n| item(n, None)).collect(),
            summary: Some(true),
            home: None,
        }));
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

/// Does `ns` exist, by the Console's own list (the namespace names it shows
/// anyone when public read is on)? `None` when the list fails.
async fn listed_by_console(state: &ConsoleState, ns: &str) -> Option<bool> {
    let api: Api<Namespace> = Api::all(state.service_account.clone());
    let lp = ListParams::default()
        .fields(&format!("metadata.name={ns}"))
        .limit(1);
    match api.list(&lp).await {
        Ok(l) => Some(
            l.items
                .iter()
                .any(|n| n.metadata.name.as_deref() == Some(ns)),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "listing namespaces to check one exists");
            None
        }
    }
}

/// `GET /api/namespaces/{ns}`: does the namespace exist? Told only from what
/// the caller could learn anyway: their own `get` of it (200 or 404), or,
/// when that is forbidden, the Console's list only if public read already
/// shows every namespace name to anyone. Otherwise `exists` is absent and the
/// UI keeps saying Forbidden. A name that is not a namespace name is a 400.
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
                Err(kube::Error::Api(s))
                    if s.code == Reason::Forbidden.code_u16() && state.public_read =>
                {
                    listed_by_console(&state, &ns).await
                }
                Err(kube::Error::Api(s)) if s.code == Reason::Forbidden.code_u16() => None,
                Err(e) => {
                    let mut access = AccessRequest::new("get", "", "namespaces", "", Some(&ns));
                    access.namespace = None;
                    return Err(KubeFailure::new(e, "reading the namespace", access).into());
                }
            }
        }
        None if state.public_read => listed_by_console(&state, &ns).await,
        None => {
            return Err(ConsoleError::unauthorized(
                "log in or send a bearer token to read this",
            ));
        }
    };
    Ok(Json(NamespaceCheck { name: ns, exists }))
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
