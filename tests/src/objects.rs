//! Fixture objects through `kube::Api` as the admin: what the suites did with
//! `kubectl apply`, `kubectl create token` and `kubectl delete`, with the
//! API's own errors (reason, code and message) when something is refused.
//! `kubectl` stays where it is what a test is about (`kubectl get --raw` of
//! the Run log, the SPEC's client).

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::{self, Scope};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The field manager of the suites' server-side applies.
const MANAGER: &str = "kruntimes-tests";

/// An API error as one line: reason (code): message.
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({}): {}", s.reason, s.code, s.message),
        other => other.to_string(),
    }
}

/// The API of one object's kind, found through discovery (a namespaced
/// object without a namespace: `default`), a name for messages, and the object.
async fn api_of(
    client: &Client,
    doc: Value,
) -> Result<(Api<DynamicObject>, String, DynamicObject), String> {
    let obj: DynamicObject =
        serde_json::from_value(doc).map_err(|e| format!("not an object: {e}"))?;
    let types = obj
        .types
        .as_ref()
        .ok_or_else(|| format!("{}: no apiVersion and kind", obj.name_any()))?;
    let gvk = GroupVersionKind::try_from(types).map_err(|e| e.to_string())?;
    let (ar, caps) = discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("{gvk:?}: {}", describe(&e)))?;
    let api = match caps.scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            obj.namespace().as_deref().unwrap_or("default"),
            &ar,
        ),
        Scope::Cluster => Api::all_with(client.clone(), &ar),
    };
    Ok((api, format!("{} {}", gvk.kind, obj.name_any()), obj))
}

/// The API of a kind the cluster serves, by `apiVersion` and `kind` (found
/// through discovery): in namespace `ns`, or across all namespaces (a
/// namespaced kind) or cluster-wide (one that is not) for `None`.
pub async fn api_for(
    client: &Client,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
) -> Result<Api<DynamicObject>, String> {
    let (ar, scope) = resource_for(client, api_version, kind).await?;
    Ok(api_in(client, &ar, &scope, ns))
}

/// A served kind's resource and scope, by `apiVersion` and `kind` (one
/// discovery call).
pub async fn resource_for(
    client: &Client,
    api_version: &str,
    kind: &str,
) -> Result<(ApiResource, Scope), String> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("{api_version} {kind}: {}", describe(&e)))?;
    Ok((ar, caps.scope))
}

/// The API of resource `ar` in namespace `ns`, or across all namespaces (a
/// namespaced kind) or cluster-wide (one that is not) for `None`.
pub fn api_in(
    client: &Client,
    ar: &ApiResource,
    scope: &Scope,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    match (scope, ns) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, ar),
        _ => Api::all_with(client.clone(), ar),
    }
}

/// Server-side applies every object of a YAML (or JSON) stream of
/// `---`-separated documents, in order, as `kubectl apply --server-side
/// --force-conflicts` would.
pub async fn apply(client: &Client, text: &str) -> Result<(), String> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("parsing the manifest: {e}"))?;
    apply_objects(client, docs).await
}

/// Server-side applies objects, in order (see [`apply`]).
pub async fn apply_objects(
    client: &Client,
    docs: impl IntoIterator<Item = Value>,
) -> Result<(), String> {
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        let (api, what, obj) = api_of(client, doc).await?;
        api.patch(
            &obj.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&obj),
        )
        .await
        .map_err(|e| format!("{what}: {}", describe(&e)))?;
    }
    Ok(())
}

/// Every object through a server-side dry run (a create,
/// or a replace of the object that exists: the object as the stream has
/// it, nothing merged from the stored one), as the server returned them
/// (defaults filled in, nothing stored); the first refusal as the error.
pub async fn dry_run(client: &Client, docs: Vec<Value>) -> Result<Vec<Value>, String> {
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut out = Vec::new();
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        let (api, what, mut obj) = api_of(client, doc).await?;
        let stored = api
            .get_opt(&obj.name_any())
            .await
            .map_err(|e| format!("{what}: {}", describe(&e)))?;
        let answer = match stored {
            Some(stored) => {
                // Some kinds (APIService) refuse an unconditional update.
                obj.metadata.resource_version = stored.metadata.resource_version;
                api.replace(&obj.name_any(), &params, &obj).await
            }
            None => api.create(&params, &obj).await,
        };
        let answer = answer.map_err(|e| format!("{what}: {}", describe(&e)))?;
        out.push(serde_json::to_value(answer).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Replaces an object whole (`kubectl replace`): without a resourceVersion
/// the update is unconditional.
pub async fn replace(client: &Client, doc: &Value) -> Result<(), String> {
    let (api, what, obj) = api_of(client, doc.clone()).await?;
    api.replace(&obj.name_any(), &PostParams::default(), &obj)
        .await
        .map(|_| ())
        .map_err(|e| format!("{what}: {}", describe(&e)))
}

/// Creates an object (`kubectl create`); the API's refusal as the error,
/// e.g. `AlreadyExists (409)`.
pub async fn create(client: &Client, doc: &Value) -> Result<(), String> {
    let (api, what, obj) = api_of(client, doc.clone()).await?;
    api.create(&PostParams::default(), &obj)
        .await
        .map(|_| ())
        .map_err(|e| format!("{what}: {}", describe(&e)))
}

/// One object as JSON (`kubectl get -o json`).
pub async fn get_json<K>(api: &Api<K>, name: &str) -> Value
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + serde::Serialize,
{
    let obj = api
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("reading {name}: {}", describe(&e)));
    serde_json::to_value(obj).expect("an object as JSON")
}

/// A token for a ServiceAccount (the TokenRequest `kubectl create token`
/// makes), valid for `seconds`.
pub async fn service_account_token(client: &Client, ns: &str, sa: &str, seconds: i64) -> String {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(seconds),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api
        .create_token_request(sa, &PostParams::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("a token for {ns}/{sa}: {}", describe(&e)));
    answer
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| panic!("no token in the TokenRequest answer for {ns}/{sa}"))
}

/// Deletes `name` when it exists (`kubectl delete --ignore-not-found`);
/// panics on any other error.
pub async fn delete<K>(api: &Api<K>, name: &str)
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("deleting {name}: {}", describe(&e)),
    }
}
