//! Actions: list and detail of the reusable step definitions WorkflowRun
//! steps call with `uses`. No public read: without a credential both answer
//! 401. Step `env` values never leave the server (only the names are read).

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use kruntimes_core::action::{Action, ActionStep};
use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde_json::Value;

use super::kinds::{
    ActionCaller, ActionDetail, ActionInputView, ActionListItem, ActionOutputView, ActionStepView,
    ActionUsage,
};
use super::listing::{ListAccess, ListedKind, credential_client};

use super::objects::{conditions, meta};
use super::types::{AccessRequest, Condition, Section};
use super::{ApiPath, check_name, check_namespace, kruntimes_api};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// Most WorkflowRuns read to find the callers of an Action.
const MAX_CALLERS_SCAN: u32 = 500;

fn ready(a: &Action) -> Option<Condition> {
    conditions(a.status.as_ref().and_then(|s| s.conditions.as_ref()))?
        .into_iter()
        .find(|c| c.type_.as_deref() == Some("Ready"))
}

fn item(a: &Action) -> ActionListItem {
    ActionListItem {
        metadata: meta(&a.metadata, false),
        inputs: a.spec.inputs.len(),
        outputs: a.spec.outputs.len(),
        steps: a.spec.steps.len(),
        ready: ready(a),
    }
}

impl ListedKind for Action {
    const KIND: &'static str = "Action";
    const PLURAL: &'static str = "actions";
    const LISTING: &'static str = "listing actions";
    const ACCESS: ListAccess = ListAccess::CredentialOnly("Actions");
    type Item = ActionListItem;

    async fn items(page: &[Self], _: Option<&kube::Client>, _: &str) -> Vec<ActionListItem> {
        page.iter().map(item).collect()
    }
}

fn step(s: &ActionStep) -> ActionStepView {
    ActionStepView {
        name: s.name.clone(),
        run: s.run.clone(),
        args: s.args.clone(),
        env_names: s.env.clone(),
    }
}

/// The jobs of a WorkflowRun with a step that calls `action`.
pub fn calling_jobs(wr: &Value, action: &str) -> Vec<String> {
    wr["spec"]["jobs"]
        .as_object()
        .map(|jobs| {
            jobs.iter()
                .filter(|(_, j)| {
                    j["steps"].as_array().is_some_and(|steps| {
                        steps.iter().any(|s| s["uses"].as_str() == Some(action))
                    })
                })
                .map(|(id, _)| id.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The WorkflowRuns that call `action`, from one bounded list read with the caller's token.
async fn used_by(client: kube::Client, ns: &str, action: &str) -> Section<ActionUsage> {
    let api = kruntimes_api(client, ns, "WorkflowRun", "workflowruns");
    let list = match api
        .list(&ListParams::default().limit(MAX_CALLERS_SCAN))
        .await
    {
        Ok(l) => l,
        Err(e) => {
            return Section::failed(KubeFailure::new(
                e,
                "listing workflowruns",
                AccessRequest::new("list", "kruntimes.io", "workflowruns", ns, None),
            ));
        }
    };
    let complete = list.metadata.continue_.as_deref().is_none_or(str::is_empty);
    let mut items: Vec<ActionCaller> = list
        .items
        .iter()
        .filter_map(|o: &DynamicObject| {
            let jobs = calling_jobs(&o.data, action);
            (!jobs.is_empty()).then(|| ActionCaller {
                name: o.metadata.name.clone().unwrap_or_default(),
                phase: o.data["status"]["phase"].as_str().map(str::to_owned),
                jobs,
                creation_timestamp: o
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| t.0.to_string()),
            })
        })
        .collect();
    items.sort_by(|a, b| (&b.creation_timestamp, &a.name).cmp(&(&a.creation_timestamp, &b.name)));
    Section::Ok(ActionUsage { items, complete })
}

/// `GET /api/namespaces/{ns}/actions/{name}`: the Action's definition and the
/// WorkflowRuns that call it.
pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<ActionDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("action", &name)?;
    let client = credential_client(&state, &caller, "Actions")?;
    let a = Api::<Action>::namespaced(client.clone(), &ns)
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the action",
                AccessRequest::new("get", "kruntimes.io", "actions", &ns, Some(&name)),
            )
        })?;
    Ok(Json(ActionDetail {
        metadata: meta(&a.metadata, false),
        inputs: a
            .spec
            .inputs
            .iter()
            .map(|(k, i)| ActionInputView {
                name: k.clone(),
                type_: i.type_.clone().unwrap_or_else(|| "string".into()),
                required: i.required,
                default: i.default.clone(),
            })
            .collect(),
        outputs: a
            .spec
            .outputs
            .iter()
            .map(|(k, o)| ActionOutputView {
                name: k.clone(),
                value: o.value.clone(),
            })
            .collect(),
        steps: a.spec.steps.iter().map(step).collect(),
        conditions: conditions(a.status.as_ref().and_then(|s| s.conditions.as_ref())),
        used_by: used_by(client, &ns, &name).await,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn callers_are_the_jobs_with_a_step_using_the_action() {
        let wr = json!({"spec": {"jobs": {
            "build": {"steps": [{"name": "a", "run": "x"}, {"name": "b", "uses": "setup-go"}]},
            "lint": {"steps": [{"name": "c", "uses": "other"}]},
            "call": {"uses": "setup-go"},
            "test": {"steps": [{"name": "d", "uses": "setup-go"}]},
        }}});
        assert_eq!(calling_jobs(&wr, "setup-go"), ["build", "test"]);
        assert!(calling_jobs(&json!({}), "setup-go").is_empty());
    }
}
