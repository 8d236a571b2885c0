//! Paged lists with filters the API server cannot apply: the Console reads
//! upstream pages of [`SCAN_PAGE`] objects, keeps those a filter admits, and
//! hands back its own continue token (the upstream token of the page being
//! read and how many of its objects were consumed), so a filtered list costs
//! a bounded number of upstream reads per request and never lists everything.

use kruntimes_core::failure::{Reason, Refusal as _};
use std::fmt::Debug;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kube::Api;
use kube::api::ListParams;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::types::{AccessRequest, ListResponse};
use super::{ApiPath, check_namespace, list_reader};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};
use kruntimes_core::query;

/// Upstream page size while filtering on the Console.
const SCAN_PAGE: u32 = 500;
/// Upstream pages read at most per request while filtering on the Console.
pub const SCAN_PAGES: usize = 40;
/// The same for a public (no credential) request: one page.
pub const PUBLIC_SCAN_PAGES: usize = 1;
/// The largest page size.
pub const MAX_LIMIT: u32 = 500;

/// Our own continue token while filtering on the Console.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct ScanToken {
    /// The API server's continue token of the upstream page to read; `None` for
    /// the first page.
    pub c: Option<String>,
    /// Items of that upstream page already handed out (skipped).
    pub s: usize,
}

const SCAN_PREFIX: &str = "krt1.";

/// The token as the client gets it: `krt1.` and the URL-safe base64 of its
/// JSON.
pub fn encode_scan(t: &ScanToken) -> String {
    format!(
        "{SCAN_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(t).unwrap_or_default())
    )
}

/// `None` for an upstream token (passed on as it is).
pub fn decode_scan(s: &str) -> Result<Option<ScanToken>, ConsoleError> {
    let Some(rest) = s.strip_prefix(SCAN_PREFIX) else {
        return Ok(None);
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(rest)
        .map_err(|_| ConsoleError::bad_request("the continue token is not valid"))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|_| ConsoleError::bad_request("the continue token is not valid"))
}

/// A page of a list.
pub struct Page<K> {
    /// The objects of the page.
    pub items: Vec<K>,
    /// Where the next page starts (the API server's token or a [`ScanToken`]);
    /// `None` on the last page.
    pub cont: Option<String>,
    /// The API server's `remainingItemCount`, when it reported one (a page read
    /// straight through).
    pub remaining: Option<i64>,
}

/// One list request: what goes to the API server and how much to read.
pub struct Scan<'a> {
    /// A label selector for the API server.
    pub label_selector: Option<&'a str>,
    /// A field selector for the API server. When it refuses one the CRD does
    /// not declare, the list is read without it and the filter is told so.
    pub fields: Option<String>,
    /// Objects the page holds at most.
    pub limit: u32,
    /// The caller's continue token (the API server's or a [`ScanToken`]).
    pub cont: Option<&'a str>,
    /// Upstream pages read at most while filtering on the Console.
    pub max_pages: usize,
    /// Whether the Console filters anything itself (besides refused fields).
    pub filters: bool,
}

/// Is this the API server refusing a field selector the CRD does not declare?
fn unsupported_field(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == Reason::BadRequest.code_u16() && s.message.contains("field label not supported"))
}

fn list_params(s: &Scan<'_>, limit: u32, cont: Option<&str>, fields: bool) -> ListParams {
    let mut lp = ListParams::default().limit(limit);
    if let Some(l) = s.label_selector {
        lp = lp.labels(l);
    }
    if let Some(c) = cont {
        lp = lp.continue_token(c);
    }
    if fields && let Some(f) = &s.fields {
        lp = lp.fields(f);
    }
    lp
}

/// One page of `api`, keeping the objects `admits(object, fields_refused)`.
/// Without Console-side filters it is one upstream list with the caller's
/// limit and continue token.
pub async fn list_page<K, F>(api: &Api<K>, s: Scan<'_>, admits: F) -> Result<Page<K>, kube::Error>
where
    K: Clone + DeserializeOwned + Debug,
    F: Fn(&K, bool) -> bool,
{
    let scan = s.cont.and_then(|c| decode_scan(c).ok().flatten());
    let mut fields_refused = false;
    if scan.is_none() && !s.filters {
        match api.list(&list_params(&s, s.limit, s.cont, true)).await {
            Ok(list) => {
                return Ok(Page {
                    items: list.items,
                    cont: list.metadata.continue_.filter(|c| !c.is_empty()),
                    remaining: list.metadata.remaining_item_count,
                });
            }
            Err(e) if s.fields.is_some() && unsupported_field(&e) => fields_refused = true,
            Err(e) => return Err(e),
        }
    }
    let (mut upstream, mut skip) = scan.map(|t| (t.c, t.s)).unwrap_or((None, 0));
    let mut items = Vec::new();
    // A refused field selector is retried without it; that retry is not a page read.
    let mut retried = false;
    let mut pages = 0;
    while pages < s.max_pages.max(1) {
        let lp = list_params(&s, SCAN_PAGE, upstream.as_deref(), !fields_refused);
        let list = match api.list(&lp).await {
            Ok(l) => l,
            Err(e)
                if !fields_refused && !retried && s.fields.is_some() && unsupported_field(&e) =>
            {
                fields_refused = true;
                retried = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        pages += 1;
        let n = list.items.len();
        for (i, o) in list.items.into_iter().enumerate().skip(skip) {
            if !admits(&o, fields_refused) {
                continue;
            }
            items.push(o);
            if items.len() as u32 == s.limit {
                let next = if i + 1 < n {
                    Some(ScanToken {
                        c: upstream.clone(),
                        s: i + 1,
                    })
                } else {
                    list.metadata
                        .continue_
                        .clone()
                        .filter(|c| !c.is_empty())
                        .map(|c| ScanToken { c: Some(c), s: 0 })
                };
                return Ok(Page {
                    items,
                    cont: next.map(|t| encode_scan(&t)),
                    remaining: None,
                });
            }
        }
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => {
                upstream = Some(c);
                skip = 0;
            }
            None => {
                return Ok(Page {
                    items,
                    cont: None,
                    remaining: None,
                });
            }
        }
    }
    // Bounded work per request: hand back what was found and where to go on.
    Ok(Page {
        items,
        cont: Some(encode_scan(&ScanToken { c: upstream, s: 0 })),
        remaining: None,
    })
}

/// Checks a name search: a part of a Kubernetes object name.
pub fn check_name_part(what: &str, n: &str) -> Result<(), ConsoleError> {
    if n.len() > 253
        || !n
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(ConsoleError::bad_request(format!(
            "name {n:?} cannot be part of a {what} name: lowercase letters, digits, '-' and '.', at most 253 characters"
        )));
    }
    Ok(())
}

/// Checks a label selector's length (the API server checks its syntax).
pub fn check_label_selector(l: &str) -> Result<(), ConsoleError> {
    if l.len() > 1024 {
        return Err(ConsoleError::bad_request(
            "labelSelector is longer than 1024 characters",
        ));
    }
    Ok(())
}

/// Parses a page size, 1..=[`MAX_LIMIT`].
pub fn parse_limit(v: &str) -> Result<u32, ConsoleError> {
    query::bounded(v, MAX_LIMIT as usize)
        .map(|n| n as u32)
        .ok_or_else(|| {
            ConsoleError::bad_request(format!(
                "limit must be an integer from 1 to {MAX_LIMIT}, got {v:?}"
            ))
        })
}

/// The query of the Runtime and WorkflowRun lists: a name search, a label
/// selector and paging.
#[derive(Debug, PartialEq)]
pub struct ListQuery {
    /// A part of the name to search for.
    pub name: Option<String>,
    /// A label selector for the API server.
    pub label_selector: Option<String>,
    /// Page size, 1..=[`MAX_LIMIT`].
    pub limit: u32,
    /// The continue token of the previous page.
    pub cont: Option<String>,
}

/// The default page size of the Runtime and WorkflowRun lists (the Run list's is 50).
pub const DEFAULT_OBJECT_LIMIT: u32 = MAX_LIMIT;

/// Parses `name`, `labelSelector`, `limit` and `continue` strictly; `what` names the list.
pub fn parse_list_query(raw: Option<&str>, what: &str) -> Result<ListQuery, ConsoleError> {
    let mut q = ListQuery {
        name: None,
        label_selector: None,
        limit: DEFAULT_OBJECT_LIMIT,
        cont: None,
    };
    query::parse(raw, |k, v| {
        if !matches!(k.as_str(), "name" | "labelSelector" | "limit" | "continue") {
            return Err(ConsoleError::bad_request(format!(
                "unknown parameter {k:?}; the {what} list accepts name, labelSelector, limit and continue"
            )));
        }
        match k.as_str() {
            _ if v.is_empty() => {}
            "name" => {
                check_name_part(what, &v)?;
                q.name = Some(v);
            }
            "labelSelector" => {
                check_label_selector(&v)?;
                q.label_selector = Some(v);
            }
            "limit" => q.limit = parse_limit(&v)?,
            _ => q.cont = Some(v),
        }
        Ok(())
    })?;
    Ok(q)
}

/// Public summaries hide labels, so a request without a credential cannot
/// filter by them.
pub fn check_public_list(q: &ListQuery) -> Result<(), ConsoleError> {
    if q.label_selector.is_some() {
        return Err(ConsoleError::unauthorized(
            "filtering by labelSelector needs a credential: log in or send a bearer token",
        ));
    }
    Ok(())
}

/// Whether `name` contains the search `part` (no search admits all).
pub fn name_matches(part: Option<&str>, name: Option<&str>) -> bool {
    part.is_none_or(|p| name.unwrap_or("").contains(p))
}

/// The caller's own client; Actions and PersistentWorkspaces are never read
/// with the Console's identity, public read or not.
pub fn credential_client(
    state: &ConsoleState,
    caller: &RequestCredentials,
    what: &str,
) -> Result<kube::Client, ConsoleError> {
    match &caller.0 {
        Some(c) => state.users.for_token(c.token()?),
        None => Err(ConsoleError::unauthorized(format!(
            "{what} are not part of public read: log in or send a bearer token to read them"
        ))),
    }
}

/// Who may list a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListAccess {
    /// The caller's own credential, or, with public read on and none sent,
    /// the Console's ServiceAccount for summaries.
    PublicSummaries,
    /// The caller's own credential only; the name says what in the refusal.
    CredentialOnly(&'static str),
}

/// A namespaced kruntimes.io kind the Console lists: the one list handler
/// ([`list`]) serves every such kind from these facts.
pub trait ListedKind:
    kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The kind, as the list query's errors name it ("Runtime").
    const KIND: &'static str;
    /// The resource, as RBAC names it ("runtimes").
    const PLURAL: &'static str;
    /// What a failed read was doing ("listing runtimes").
    const LISTING: &'static str;
    /// Who may list.
    const ACCESS: ListAccess;
    /// One row of the list.
    type Item: Serialize + ts_rs::TS + Send;

    /// The rows of one page. `client` is the caller's own (`None` in a
    /// public summary), for what a row adds from other objects.
    fn items(
        page: &[Self],
        client: Option<&kube::Client>,
        ns: &str,
    ) -> impl std::future::Future<Output = Vec<Self::Item>> + Send;
}

/// `GET /api/namespaces/{ns}/<plural>`: one page of a kind, filtered and
/// paged as the query asks, with the caller's own credential.
pub async fn list<K: ListedKind>(
    axum::extract::State(state): axum::extract::State<std::sync::Arc<ConsoleState>>,
    axum::Extension(caller): axum::Extension<RequestCredentials>,
    ApiPath(ns): ApiPath<String>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Result<axum::Json<ListResponse<K::Item>>, ConsoleError> {
    check_namespace(&ns)?;
    let q = parse_list_query(raw.as_deref(), K::KIND)?;
    let (client, summary) = match K::ACCESS {
        ListAccess::PublicSummaries => {
            let reader = list_reader(&state, &caller)?;
            let summary = reader.is_public();
            if summary {
                check_public_list(&q)?;
            }
            (reader.client().clone(), summary)
        }
        ListAccess::CredentialOnly(what) => (credential_client(&state, &caller, what)?, false),
    };
    let api: Api<K> = Api::namespaced(client.clone(), &ns);
    let max_pages = if summary {
        PUBLIC_SCAN_PAGES
    } else {
        SCAN_PAGES
    };
    let page = q.page(&api, max_pages).await.map_err(|e| {
        KubeFailure::new(
            e,
            K::LISTING,
            AccessRequest::new("list", "kruntimes.io", K::PLURAL, &ns, None),
        )
    })?;
    let items = K::items(&page.items, (!summary).then_some(&client), &ns).await;
    Ok(axum::Json(ListResponse {
        cont: page.cont,
        remaining_item_count: page.remaining,
        ..ListResponse::new(items, summary)
    }))
}

impl ListQuery {
    /// Reads one page of `api` for this query.
    pub async fn page<K>(&self, api: &Api<K>, max_pages: usize) -> Result<Page<K>, kube::Error>
    where
        K: Clone + DeserializeOwned + Debug + kube::Resource,
    {
        let part = self.name.as_deref();
        let scan = Scan {
            label_selector: self.label_selector.as_deref(),
            fields: None,
            limit: self.limit,
            cont: self.cont.as_deref(),
            max_pages,
            filters: part.is_some(),
        };
        list_page(api, scan, |o, _| {
            name_matches(part, o.meta().name.as_deref())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_tokens_round_trip() {
        let t = ScanToken {
            c: Some("abc".into()),
            s: 7,
        };
        assert_eq!(decode_scan(&encode_scan(&t)).unwrap(), Some(t));
        assert_eq!(decode_scan("upstream-token").unwrap(), None);
        assert!(decode_scan("krt1.!!").is_err());
    }

    #[test]
    fn the_object_list_query_is_strict() {
        let q = parse_list_query(
            Some("name=build&labelSelector=app%3Dweb&limit=20&continue=abc"),
            "Runtime",
        )
        .unwrap();
        assert_eq!(
            q,
            ListQuery {
                name: Some("build".into()),
                label_selector: Some("app=web".into()),
                limit: 20,
                cont: Some("abc".into()),
            }
        );
        assert_eq!(
            parse_list_query(None, "Runtime").unwrap().limit,
            DEFAULT_OBJECT_LIMIT
        );
        for (raw, says) in [
            ("phase=Running", "unknown parameter \"phase\""),
            ("name=Build", "cannot be part of a WorkflowRun name"),
            ("limit=0", "limit must be an integer from 1 to 500"),
            ("limit=501", "limit must be an integer from 1 to 500"),
        ] {
            let e = parse_list_query(Some(raw), "WorkflowRun").unwrap_err();
            assert!(e.message.contains(says), "{raw}: {}", e.message);
        }
        let long = format!("labelSelector={}", "a".repeat(1025));
        assert!(parse_list_query(Some(&long), "Runtime").is_err());
    }

    #[test]
    fn a_name_search_matches_a_part() {
        assert!(name_matches(None, Some("x")));
        assert!(name_matches(Some("uil"), Some("build-1")));
        assert!(!name_matches(Some("lint"), Some("build-1")));
        assert!(!name_matches(Some("a"), None));
    }
}
