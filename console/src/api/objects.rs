//! Reading custom resources as JSON and building the Console's answers from
//! an allow-list of fields (so nothing like `spec.env` can slip through).

use serde_json::{Map, Value, json};

/// Longest output value returned (`status.outputs`, job outputs).
pub const MAX_OUTPUT_BYTES: usize = 4096;
/// Most output keys returned.
pub const MAX_OUTPUT_KEYS: usize = 64;

pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path)?.as_str()
}

pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    Some(cur)
}

/// Copies the listed keys that are present.
pub fn pick(v: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    if let Some(obj) = v.as_object() {
        for k in keys {
            if let Some(x) = obj.get(*k)
                && !x.is_null()
            {
                out.insert((*k).to_owned(), x.clone());
            }
        }
    }
    Value::Object(out)
}

/// The metadata the UI shows (no managedFields, no last-applied annotation).
pub fn meta(m: &kube::api::ObjectMeta, summary: bool) -> Value {
    let mut out = json!({
        "name": m.name.clone().unwrap_or_default(),
        "namespace": m.namespace.clone().unwrap_or_default(),
    });
    if let Some(t) = &m.creation_timestamp {
        out["creationTimestamp"] = json!(t.0.to_string());
    }
    if summary {
        return out;
    }
    if let Some(uid) = &m.uid {
        out["uid"] = json!(uid);
    }
    if let Some(labels) = &m.labels
        && !labels.is_empty()
    {
        out["labels"] = json!(labels);
    }
    if let Some(ann) = &m.annotations {
        let kept: Map<String, Value> = ann
            .iter()
            .filter(|(k, _)| k.as_str() != "kubectl.kubernetes.io/last-applied-configuration")
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if !kept.is_empty() {
            out["annotations"] = Value::Object(kept);
        }
    }
    if let Some(g) = m.generation {
        out["generation"] = json!(g);
    }
    if let Some(rv) = &m.resource_version {
        out["resourceVersion"] = json!(rv);
    }
    out
}

/// Output maps, bounded in keys and value size.
pub fn bounded_outputs(v: Option<&Value>) -> Option<Value> {
    let obj = v?.as_object()?;
    let mut out = Map::new();
    for (k, val) in obj.iter().take(MAX_OUTPUT_KEYS) {
        let s = match val {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(k.clone(), json!(truncate(&s, MAX_OUTPUT_BYTES)));
    }
    Some(Value::Object(out))
}

/// Cuts a string at a char boundary, marking the cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Conditions in the metav1.Condition shape.
pub fn conditions(v: Option<&Value>) -> Option<Value> {
    let arr = v?.as_array()?;
    Some(Value::Array(
        arr.iter()
            .map(|c| {
                pick(
                    c,
                    &[
                        "type",
                        "status",
                        "reason",
                        "message",
                        "lastTransitionTime",
                        "observedGeneration",
                    ],
                )
            })
            .collect(),
    ))
}

/// The mode name of a Run spec.
pub fn mode_name(spec: &Value) -> Option<&'static str> {
    let mode = spec.get("mode")?;
    ["task", "function", "session"]
        .into_iter()
        .find(|m| mode.get(*m).is_some_and(|v| !v.is_null()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundary() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("ééé", 3), "é…");
    }

    #[test]
    fn outputs_are_bounded() {
        let big: Map<String, Value> = (0..100)
            .map(|i| (format!("k{i:03}"), json!("x".repeat(5000))))
            .collect();
        let out = bounded_outputs(Some(&Value::Object(big))).unwrap();
        let o = out.as_object().unwrap();
        assert_eq!(o.len(), MAX_OUTPUT_KEYS);
        assert!(
            o.values()
                .all(|v| v.as_str().unwrap().len() <= MAX_OUTPUT_BYTES + 3)
        );
    }
}
