//! Discovery and OpenAPI documents of `logs.kruntimes.io/v1alpha1`.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, header};
use serde_json::{Value, json};

use crate::logs::handler::{GROUP, VERSION};

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn group_version() -> String {
    format!("{GROUP}/{VERSION}")
}

fn api_group() -> Value {
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [{"groupVersion": group_version(), "version": VERSION}],
        "preferredVersion": {"groupVersion": group_version(), "version": VERSION},
    })
}

fn json_response(value: &Value, content_type: &'static str) -> Response {
    let mut resp = serde_json::to_vec(value)
        .unwrap_or_default()
        .into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}

/// Does the client ask for aggregated discovery (v2)?
fn wants_aggregated(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.replace(' ', ""))
        .any(|v| {
            v.starts_with("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        })
}

/// `GET /apis`: the legacy group list, or the aggregated discovery document.
pub async fn apis(headers: HeaderMap) -> Response {
    if wants_aggregated(&headers) {
        let doc = json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": [{
                "metadata": {"name": GROUP},
                "versions": [{
                    "version": VERSION,
                    "freshness": "Current",
                    "resources": [{
                        "resource": "runs",
                        "responseKind": {"group": GROUP, "version": VERSION, "kind": "RunLog"},
                        "scope": "Namespaced",
                        "singularResource": "run",
                        "verbs": [],
                        "subresources": [{
                            "subresource": "log",
                            "responseKind": {"group": GROUP, "version": VERSION, "kind": "RunLog"},
                            "verbs": ["get"],
                        }],
                    }],
                }],
            }],
        });
        return json_response(&doc, AGGREGATED_V2);
    }
    json_response(
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group()]}),
        "application/json",
    )
}

/// `GET /apis/logs.kruntimes.io`.
pub async fn group() -> Response {
    json_response(&api_group(), "application/json")
}

/// `GET /apis/logs.kruntimes.io/v1alpha1`.
pub async fn resources() -> Response {
    json_response(
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version(),
            "resources": [{
                "name": "runs/log",
                "singularName": "",
                "namespaced": true,
                "kind": "RunLog",
                "verbs": ["get"],
            }],
        }),
        "application/json",
    )
}

fn parameters() -> Value {
    json!([
        {"name": "namespace", "in": "path", "required": true, "type": "string", "description": "namespace of the Run"},
        {"name": "name", "in": "path", "required": true, "type": "string", "description": "name of the Run"},
        {"name": "tailLines", "in": "query", "type": "integer", "minimum": 1, "maximum": 500, "description": "records from the end to return (default 100)"},
        {"name": "limitBytes", "in": "query", "type": "integer", "minimum": 1, "maximum": 1048576, "description": "most bytes of messages to return (default 1 MiB)"},
        {"name": "follow", "in": "query", "type": "boolean", "description": "stream new records as NDJSON until the Pod log ends"},
        {"name": "stream", "in": "query", "type": "string", "enum": ["stdout", "stderr"], "description": "only this stream (default both)"},
        {"name": "search", "in": "query", "type": "string", "minLength": 1, "maxLength": 256, "description": "only records whose message holds this text (or matches it with regex=true), with context; tailLines then counts matches"},
        {"name": "regex", "in": "query", "type": "boolean", "description": "search is a Rust regex pattern (no backtracking; 1 MiB program bound)"},
        {"name": "ignoreCase", "in": "query", "type": "boolean", "description": "search ignores case"},
        {"name": "context", "in": "query", "type": "integer", "minimum": 0, "maximum": 10, "description": "records of context before and after each match (default 2)"},
    ])
}

fn run_log_schema() -> Value {
    json!({
        "type": "object",
        "description": "The records of one Run, read from its Runtime Pod's runtimed log.",
        "required": ["kind", "apiVersion", "metadata", "records", "truncated"],
        "properties": {
            "kind": {"type": "string"},
            "apiVersion": {"type": "string"},
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string"}, "namespace": {"type": "string"}, "uid": {"type": "string"}}},
            "pod": {"type": "string"},
            "records": {"type": "array", "items": {"type": "object", "properties": {
                "stream": {"type": "string"}, "message": {"type": "string"}, "pod": {"type": "string"},
                "invocationID": {"type": "string"}, "time": {"type": "string", "format": "date-time"},
                "truncated": {"type": "boolean"}, "cursor": {"type": "string"},
                "line": {"type": "integer"}, "match": {"type": "boolean"}}}},
            "truncated": {"type": "boolean"},
            "truncatedBy": {"type": "string", "enum": ["tailLines", "limitBytes", "searchWindow"]},
            "search": {"type": "object", "properties": {
                "matches": {"type": "integer"}, "total": {"type": "integer"}, "totalCapped": {"type": "boolean"}}},
        },
        "x-kubernetes-group-version-kind": [{"group": GROUP, "version": VERSION, "kind": "RunLog"}],
    })
}

const LOG_PATH: &str = "/apis/logs.kruntimes.io/v1alpha1/namespaces/{namespace}/runs/{name}/log";

/// `GET /openapi/v2`.
pub async fn openapi_v2() -> Response {
    let doc = json!({
        "swagger": "2.0",
        "info": {"title": "kruntimes Run logs", "version": VERSION},
        "paths": {
            LOG_PATH: {"get": {
                "operationId": "readKruntimesLogsV1alpha1NamespacedRunLog",
                "description": "read the log of the specified Run",
                "produces": ["application/json", "application/x-ndjson"],
                "parameters": parameters(),
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/io.kruntimes.logs.v1alpha1.RunLog"}}},
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": {"group": GROUP, "version": VERSION, "kind": "RunLog"},
            }},
        },
        "definitions": {"io.kruntimes.logs.v1alpha1.RunLog": run_log_schema()},
    });
    json_response(&doc, "application/json")
}

/// `GET /openapi/v3`: the index of group-version documents.
pub async fn openapi_v3_index() -> Response {
    json_response(
        &json!({"paths": {"apis/logs.kruntimes.io/v1alpha1": {
            "serverRelativeURL": "/openapi/v3/apis/logs.kruntimes.io/v1alpha1"}}}),
        "application/json",
    )
}

/// `GET /openapi/v3/apis/logs.kruntimes.io/v1alpha1`.
pub async fn openapi_v3_group() -> Response {
    let params: Vec<Value> = parameters()
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut p| {
            let ty = p.get("type").cloned().unwrap_or(json!("string"));
            let mut schema = json!({"type": ty});
            for k in ["minimum", "maximum", "enum"] {
                if let Some(v) = p.get(k) {
                    schema[k] = v.clone();
                }
            }
            if let Some(o) = p.as_object_mut() {
                for k in ["type", "minimum", "maximum", "enum"] {
                    o.remove(k);
                }
                o.insert("schema".into(), schema);
            }
            p
        })
        .collect();
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "kruntimes Run logs", "version": VERSION},
        "paths": {LOG_PATH: {"get": {
            "operationId": "readKruntimesLogsV1alpha1NamespacedRunLog",
            "description": "read the log of the specified Run",
            "parameters": params,
            "responses": {"200": {"description": "OK", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/io.kruntimes.logs.v1alpha1.RunLog"}},
                "application/x-ndjson": {"schema": {"type": "string"}},
            }}},
            "x-kubernetes-action": "get",
        }}},
        "components": {"schemas": {"io.kruntimes.logs.v1alpha1.RunLog": run_log_schema()}},
    });
    json_response(&doc, "application/json")
}
