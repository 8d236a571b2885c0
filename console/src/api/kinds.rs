//! The shapes of the Action and PersistentWorkspace answers.
//! `console/web/src/api/kinds.ts` is rendered from these types
//! ([`typescript`]) and imports the shared ones from `./types`; a unit test
//! fails when the committed file is stale. Regenerate it with
//! `KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::kinds`.

use serde::Serialize;
use ts_rs::TS;

use super::types::{Condition, ListResponse, Meta, PodSection, Section};

/// One row of the Action list. Actions have no public read: the list needs
/// the caller's credential like a detail does.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ActionListItem {
    /// The Action's metadata.
    pub metadata: Meta,
    /// Inputs declared in `spec.inputs`.
    #[ts(as = "i32")]
    pub inputs: usize,
    /// Outputs declared in `spec.outputs`.
    #[ts(as = "i32")]
    pub outputs: usize,
    /// Steps in `spec.steps`.
    #[ts(as = "i32")]
    pub steps: usize,
    /// Condition `Ready` (the engine sets it when it accepts the definition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<Condition>,
}

/// `spec.inputs.<name>`.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ActionInputView {
    /// Input name.
    pub name: String,
    /// `string` unless the object says otherwise.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether a caller must pass the input.
    pub required: bool,
    /// The value used when the caller passes none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// `spec.outputs.<name>`: the expression that computes it.
#[derive(Debug, Serialize, TS)]
pub struct ActionOutputView {
    /// Output name.
    pub name: String,
    /// The `${{ }}` expression evaluated after the steps ran.
    pub value: String,
}

/// `spec.steps[i]`. Of the step's `env` only the names are returned, never a value.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ActionStepView {
    /// Step name; it becomes a label value on the step's Run.
    pub name: String,
    /// The step's script.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Positional arguments for the step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Names of the step's extra environment variables.
    pub env_names: Vec<String>,
}

/// A WorkflowRun with a step that calls the Action.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ActionCaller {
    /// The WorkflowRun's name.
    pub name: String,
    /// The WorkflowRun's `status.phase`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "WorkflowPhase")]
    pub phase: Option<String>,
    /// Job ids whose steps call the Action.
    pub jobs: Vec<String>,
    /// When the WorkflowRun was created (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

/// The WorkflowRuns that call the Action (`uses: <name>` in a step), newest
/// first, from one list of at most 500 WorkflowRuns in the namespace.
#[derive(Debug, Serialize, TS)]
pub struct ActionUsage {
    /// The calling WorkflowRuns, newest first.
    pub items: Vec<ActionCaller>,
    /// `false` when the namespace has more WorkflowRuns than were read.
    pub complete: bool,
}

/// `GET /api/namespaces/{ns}/actions/{name}`: the definition, read-only.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ActionDetail {
    /// The Action's metadata.
    pub metadata: Meta,
    /// `spec.inputs`, by name.
    pub inputs: Vec<ActionInputView>,
    /// `spec.outputs`, by name.
    pub outputs: Vec<ActionOutputView>,
    /// `spec.steps`, in the order they run.
    pub steps: Vec<ActionStepView>,
    /// The Action's conditions (`Ready` when the engine accepted it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Needs `list workflowruns` in the namespace.
    pub used_by: Section<ActionUsage>,
}

/// One row of the PersistentWorkspace list (credential needed, no public read).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkspaceListItem {
    /// The PersistentWorkspace's metadata.
    pub metadata: Meta,
    /// `Pending`, `Bound`, `Lost` or `Released`; `Pending` when unset.
    pub phase: String,
    /// `spec.runtime`: the Runtime whose workspace volume holds the data.
    pub runtime: String,
    /// The Runtime Pod that holds the data now, when one is bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_pod: Option<String>,
    /// When a Run last used the workspace (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_time: Option<String>,
}

/// PersistentWorkspace `spec`.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkspaceSpecView {
    /// The Runtime whose workspace volume holds the data.
    pub runtime: String,
    /// How the workspace is bound: `RuntimePodLocal` binds it to one Runtime
    /// Pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Seconds the data is kept after the last use (ignored with `Retain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub ttl_seconds_after_unused: Option<i64>,
    /// `DeleteAfterTTL` (the default) or `Retain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup_policy: Option<String>,
}

/// PersistentWorkspace `status`.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkspaceStatusView {
    /// `Pending`, `Bound`, `Lost` or `Released`; `Pending` when unset.
    pub phase: String,
    /// The Runtime observed backing the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The Runtime Pod that holds the data now, when one is bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_pod: Option<String>,
    /// Path of the workspace inside the bound Pod's workspace volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// When a Run last used the workspace (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_time: Option<String>,
    /// The workspace's conditions (`Accepted`, `RuntimeReady`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// The volume the workspace lives in: the Runtime's `spec.workspace`. Only
/// the kind of volume and a PersistentVolumeClaim's name are returned.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkspaceVolume {
    /// The Runtime whose volume this is.
    pub runtime: String,
    /// The volume source's key, e.g. `persistentVolumeClaim`, `emptyDir`.
    pub source: String,
    /// `false` when the Runtime declares no workspace volume: its Pods then
    /// get an `emptyDir`, and the data lives as long as the Pod.
    pub declared: bool,
    /// The PersistentVolumeClaim's name, for a `persistentVolumeClaim` source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
}

/// `GET /api/namespaces/{ns}/persistentworkspaces/{name}`.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceDetail {
    /// The PersistentWorkspace's metadata.
    pub metadata: Meta,
    /// The PersistentWorkspace's spec.
    pub spec: WorkspaceSpecView,
    /// The PersistentWorkspace's status.
    pub status: WorkspaceStatusView,
    /// The bound Pod. Needs `get pods`; `absent` when none is bound or it is gone.
    pub pod: Section<PodSection>,
    /// Needs `get runtimes`; `absent` when the Runtime does not exist.
    pub volume: Section<WorkspaceVolume>,
}

/// `GET /api/namespaces/{ns}/actions`.
pub type ActionList = ListResponse<ActionListItem>;
/// `GET /api/namespaces/{ns}/persistentworkspaces`.
pub type WorkspaceList = ListResponse<WorkspaceListItem>;

const HEADER: &str = "\
// Generated from console/src/api/kinds.rs; do not edit. Regenerate with
//   KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::kinds
/** Answers of the Action and PersistentWorkspace endpoints (see `./types` for the shared shapes). */
import type { Condition, ListResponse, ObjectMeta, PodSection, Section, WorkflowPhase } from './types';
";

fn decl<T: TS>(out: &mut String) {
    out.push('\n');
    if let Some(docs) = T::docs() {
        out.push_str(&docs);
    }
    out.push_str("export ");
    out.push_str(&one_field_a_line(&T::decl()));
    out.push('\n');
}

/// An object type (`type X = { a: A, b: B, };`) written one field a line
/// (fields split at the commas outside brackets and comments).
fn one_field_a_line(decl: &str) -> String {
    let Some((head, body)) = decl
        .split_once(" = { ")
        .and_then(|(h, b)| Some((h, b.strip_suffix(" };")?)))
    else {
        return decl.to_owned();
    };
    let (mut depth, mut comment, mut start) = (0i32, false, 0);
    let mut fields = Vec::new();
    let b = body.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if comment {
            comment = !(c == b'/' && b[i - 1] == b'*');
            continue;
        }
        match c {
            b'/' if b.get(i + 1) == Some(&b'*') => comment = true,
            b'{' | b'<' | b'(' | b'[' => depth += 1,
            b'}' | b'>' | b')' | b']' => depth -= 1,
            b',' if depth == 0 => {
                fields.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(&body[start..]);
    let mut out = format!("{head} = {{\n");
    for f in fields.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
        for line in f.lines() {
            out.push_str("  ");
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.pop();
        out.push_str(";\n");
    }
    out.push_str("};");
    out
}

/// The TypeScript declarations of these answers, as committed in
/// `console/web/src/api/kinds.ts`.
pub fn typescript() -> String {
    let mut out = String::from(HEADER);
    decl::<ActionListItem>(&mut out);
    out.push_str("\n/** `GET /api/namespaces/{ns}/actions`. */\nexport type ActionList = ListResponse<ActionListItem>;\n");
    decl::<ActionInputView>(&mut out);
    decl::<ActionOutputView>(&mut out);
    decl::<ActionStepView>(&mut out);
    decl::<ActionCaller>(&mut out);
    decl::<ActionUsage>(&mut out);
    decl::<ActionDetail>(&mut out);
    decl::<WorkspaceListItem>(&mut out);
    out.push_str("\n/** `GET /api/namespaces/{ns}/persistentworkspaces`. */\nexport type WorkspaceList = ListResponse<WorkspaceListItem>;\n");
    decl::<WorkspaceSpecView>(&mut out);
    decl::<WorkspaceStatusView>(&mut out);
    decl::<WorkspaceVolume>(&mut out);
    decl::<WorkspaceDetail>(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/web/src/api/kinds.ts");

    #[test]
    fn object_types_are_written_one_field_a_line() {
        assert_eq!(
            one_field_a_line("type A = { a: Record<string, B>, /** x, y */ b?: C, };"),
            "type A = {\n  a: Record<string, B>;\n  /** x, y */ b?: C;\n};"
        );
        assert_eq!(one_field_a_line("type B = string;"), "type B = string;");
    }

    /// The committed TypeScript matches the Rust types; with
    /// `KRUNTIMES_WRITE_TS=1` it is rewritten instead.
    #[test]
    fn typescript_is_current() {
        let want = typescript();
        if std::env::var_os("KRUNTIMES_WRITE_TS").is_some() {
            std::fs::write(COMMITTED, &want).expect("writing kinds.ts");
            return;
        }
        let have = std::fs::read_to_string(COMMITTED).unwrap_or_default();
        assert!(
            have == want,
            "console/web/src/api/kinds.ts is stale: the Rust API types in \
             console/src/api/kinds.rs changed. Regenerate it with\n  \
             KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::kinds\n\
             and commit the result."
        );
    }
}
