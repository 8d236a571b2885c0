//! The Console JSON API (`/api/...`). Every read uses the caller's own
//! token; only public-read summaries use the Console's ServiceAccount.

pub mod logs;
pub mod objects;
pub mod runs;
pub mod runtimes;
pub mod workflowruns;

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::{IntoResponse, Json, Response};
use k8s_openapi::api::core::v1::Namespace;
use kruntimes_core::names::{is_dns1123_label, is_dns1123_subdomain};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::{Api, Client};
use serde_json::json;

use crate::console::{Caller, ConsoleState};
use crate::error::{AccessRequest, ConsoleError, from_kube};

/// Who reads for this request.
pub enum Reader {
    /// The caller, with their own token.
    User(Client),
    /// No credential, public read on: the ServiceAccount, summaries only.
    Public(Client),
}

impl Reader {
    pub fn client(&self) -> &Client {
        match self {
            Reader::User(c) | Reader::Public(c) => c,
        }
    }
    pub fn is_public(&self) -> bool {
        matches!(self, Reader::Public(_))
    }
}

/// The caller's own client; details, logs and everything but list summaries need it.
pub fn user_client(state: &ConsoleState, caller: &Caller) -> Result<Client, ConsoleError> {
    match &caller.0 {
        Some(c) => state.users.for_token(c.token()?),
        None => Err(ConsoleError::unauthorized(
            "log in or send a bearer token to read this",
        )),
    }
}

/// The reader for a list endpoint.
pub fn list_reader(state: &ConsoleState, caller: &Caller) -> Result<Reader, ConsoleError> {
    match &caller.0 {
        Some(c) => Ok(Reader::User(state.users.for_token(c.token()?)?)),
        None if state.public_read => Ok(Reader::Public(state.service_account.clone())),
        None => Err(ConsoleError::unauthorized(
            "log in or send a bearer token to read this",
        )),
    }
}

pub fn check_namespace(ns: &str) -> Result<(), ConsoleError> {
    if is_dns1123_label(ns) {
        Ok(())
    } else {
        Err(ConsoleError::bad_request(format!(
            "namespace {ns:?} is not a valid name: lowercase letters, digits and '-', at most 63 characters"
        )))
    }
}

pub fn check_name(kind: &str, name: &str) -> Result<(), ConsoleError> {
    if is_dns1123_subdomain(name) {
        Ok(())
    } else {
        Err(ConsoleError::bad_request(format!(
            "{kind} name {name:?} is not a valid name: lowercase letters, digits, '-' and '.', at most 253 characters"
        )))
    }
}

/// A kruntimes.io resource of `kind` (plural `plural`).
pub fn kruntimes_api(client: Client, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", kind),
        plural,
    );
    Api::namespaced_with(client, ns, &ar)
}

/// Maps a Kubernetes error, naming the access that was denied.
pub fn kube_error(err: kube::Error, what: &str, access: AccessRequest) -> ConsoleError {
    let e = from_kube(err, what);
    if e.code == http::StatusCode::FORBIDDEN {
        e.with_access(access)
    } else {
        e
    }
}

pub async fn namespaces(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    match namespaces_inner(&state, &caller).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn namespaces_inner(
    state: &ConsoleState,
    caller: &Caller,
) -> Result<serde_json::Value, ConsoleError> {
    let reader = list_reader(state, caller)?;
    let api: Api<Namespace> = Api::all(reader.client().clone());
    let list = api
        .list(&ListParams::default().limit(500))
        .await
        .map_err(|e| {
            kube_error(
                e,
                "listing namespaces",
                AccessRequest {
                    verb: "list".into(),
                    group: String::new(),
                    resource: "namespaces".into(),
                    subresource: None,
                    namespace: None,
                    name: None,
                },
            )
        })?;
    let items: Vec<_> = list
        .items
        .iter()
        .map(|n| {
            let mut item = json!({"name": n.metadata.name.clone().unwrap_or_default()});
            if let Some(phase) = n.status.as_ref().and_then(|s| s.phase.clone()) {
                item["phase"] = json!(phase);
            }
            item
        })
        .collect();
    let mut out = json!({"items": items});
    if reader.is_public() {
        out["summary"] = json!(true);
    }
    Ok(out)
}
