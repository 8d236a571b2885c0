//! Building the Console's answers from an allow-list of fields (so nothing
//! like `spec.env` can slip through): every answer type names the fields it keeps.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::types::{Condition, Meta, Outputs};

/// Longest output value returned (`status.outputs`, job outputs).
pub const MAX_OUTPUT_BYTES: usize = 4096;
/// Most output keys returned.
pub const MAX_OUTPUT_KEYS: usize = 64;

/// The metadata the UI shows (no managedFields, no last-applied annotation).
pub fn meta(m: &kube::api::ObjectMeta, summary: bool) -> Meta {
    let mut out = Meta {
        name: m.name.clone().unwrap_or_default(),
        namespace: m.namespace.clone().unwrap_or_default(),
        creation_timestamp: m.creation_timestamp.as_ref().map(|t| t.0.to_string()),
        ..Meta::default()
    };
    if summary {
        return out;
    }
    out.uid = m.uid.clone();
    out.labels = m.labels.clone().filter(|l| !l.is_empty());
    out.annotations = m
        .annotations
        .as_ref()
        .map(|ann| {
            ann.iter()
                .filter(|(k, _)| k.as_str() != "kubectl.kubernetes.io/last-applied-configuration")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<BTreeMap<_, _>>()
        })
        .filter(|kept| !kept.is_empty());
    out.generation = m.generation;
    out.resource_version = m.resource_version.clone();
    out
}

/// Output maps, bounded in keys and value size.
pub fn bounded_outputs(v: Option<&Value>) -> Option<Outputs> {
    let obj = v?.as_object()?;
    let mut out = Outputs::new();
    for (k, val) in obj.iter().take(MAX_OUTPUT_KEYS) {
        let s = match val {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(k.clone(), truncate(&s, MAX_OUTPUT_BYTES));
    }
    Some(out)
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
pub fn conditions(v: Option<&Value>) -> Option<Vec<Condition>> {
    v?.as_array().map(|arr| arr.iter().map(lenient).collect())
}

/// `v` read as `T`, or `T`'s default where `v` does not have its shape:
/// one malformed entry does not hide the others.
pub fn lenient<T: DeserializeOwned + Default>(v: &Value) -> T {
    T::deserialize(v).unwrap_or_default()
}

/// A JSON value kept when present and not null (an allow-listed field copied as written).
pub fn present(v: Option<&Value>) -> Option<Value> {
    v.filter(|v| !v.is_null()).cloned()
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
        let big: serde_json::Map<String, Value> = (0..100)
            .map(|i| (format!("k{i:03}"), Value::from("x".repeat(5000))))
            .collect();
        let o = bounded_outputs(Some(&Value::Object(big))).unwrap();
        assert_eq!(o.len(), MAX_OUTPUT_KEYS);
        assert!(o.values().all(|v| v.len() <= MAX_OUTPUT_BYTES + 3));
    }
}
