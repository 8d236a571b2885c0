//! The Console listener's router: it only composes. Every route is written
//! once, in a table that registers it and names it for the metrics.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::get;
use kruntimes_core::observe::{Observer, observe};
use kruntimes_core::routes::{self, Route};

use kruntimes_core::action::Action;
use kruntimes_core::runtime::Runtime;
use kruntimes_core::workflowrun::WorkflowRun;
use kruntimes_core::workspace::PersistentWorkspace;

use crate::api::listing::list;
use crate::api::namespaces::{namespace, namespaces};
use crate::api::session::{self, MAX_LOGIN_BODY};
use crate::api::{
    access, actions, logs, manifest, runs, runtimes, watch, workflowruns, workspaces,
};
use crate::origin::credentials;
use crate::state::ConsoleState;

/// The `/api` routes.
pub static API_ROUTES: &[Route<Arc<ConsoleState>>] = &[
    Route {
        path: "/api/session",
        name: "session",
        methods: || {
            get(session::get)
                .post(session::login)
                .delete(session::logout)
        },
    },
    Route {
        path: "/api/namespaces",
        name: "namespaces",
        methods: || get(namespaces),
    },
    Route {
        path: "/api/namespaces/{ns}",
        name: "namespace",
        methods: || get(namespace),
    },
    Route {
        path: "/api/namespaces/{ns}/watch",
        name: "watch",
        methods: || get(watch::watch),
    },
    Route {
        path: "/api/namespaces/{ns}/runs",
        name: "runs",
        methods: || get(runs::list),
    },
    Route {
        path: "/api/namespaces/{ns}/runs/{name}",
        name: "run",
        methods: || get(runs::detail),
    },
    Route {
        path: "/api/namespaces/{ns}/runs/{name}/logs",
        name: "run-logs",
        methods: || get(logs::logs),
    },
    Route {
        path: "/api/namespaces/{ns}/runs/{name}/operations/access",
        name: "run-operations-access",
        methods: || get(access::operations),
    },
    Route {
        path: "/api/namespaces/{ns}/runs/{name}/manifest",
        name: "run-manifest",
        methods: || get(manifest::run),
    },
    Route {
        path: "/api/namespaces/{ns}/runtimes",
        name: "runtimes",
        methods: || get(list::<Runtime>),
    },
    Route {
        path: "/api/namespaces/{ns}/runtimes/{name}",
        name: "runtime",
        methods: || get(runtimes::detail),
    },
    Route {
        path: "/api/namespaces/{ns}/runtimes/{name}/manifest",
        name: "runtime-manifest",
        methods: || get(manifest::runtime),
    },
    Route {
        path: "/api/namespaces/{ns}/workflowruns",
        name: "workflowruns",
        methods: || get(list::<WorkflowRun>),
    },
    Route {
        path: "/api/namespaces/{ns}/workflowruns/{name}",
        name: "workflowrun",
        methods: || get(workflowruns::detail),
    },
    Route {
        path: "/api/namespaces/{ns}/workflowruns/{name}/manifest",
        name: "workflowrun-manifest",
        methods: || get(manifest::workflow_run),
    },
    Route {
        path: "/api/namespaces/{ns}/actions",
        name: "actions",
        methods: || get(list::<Action>),
    },
    Route {
        path: "/api/namespaces/{ns}/actions/{name}",
        name: "action",
        methods: || get(actions::detail),
    },
    Route {
        path: "/api/namespaces/{ns}/actions/{name}/manifest",
        name: "action-manifest",
        methods: || get(manifest::action),
    },
    Route {
        path: "/api/namespaces/{ns}/persistentworkspaces",
        name: "persistentworkspaces",
        methods: || get(list::<PersistentWorkspace>),
    },
    Route {
        path: "/api/namespaces/{ns}/persistentworkspaces/{name}",
        name: "persistentworkspace",
        methods: || get(workspaces::detail),
    },
    Route {
        path: "/api/namespaces/{ns}/persistentworkspaces/{name}/manifest",
        name: "persistentworkspace-manifest",
        methods: || get(manifest::workspace),
    },
];

/// The metrics name of a matched route template (never the path itself).
fn route_name(path: &str) -> &'static str {
    routes::name_of(API_ROUTES, path)
        .or_else(|| routes::name_of(crate::runtime_access::ROUTES, path))
        .unwrap_or("other")
}

/// The Console listener's router: `/api` and `/v1` behind the credentials
/// layer, the embedded UI for everything else.
pub fn router(state: Arc<ConsoleState>, access: Router, max_header_bytes: usize) -> Router {
    let observer = observer(&state);
    router_with(state, access, max_header_bytes, observer)
}

/// The Console listener's request observer (metrics and the access log).
pub fn observer(state: &ConsoleState) -> Arc<Observer> {
    Arc::new(Observer {
        metrics: state.metrics.clone(),
        listener: "console",
        route_name,
        unmatched: "static",
    })
}

/// [`router`] with the observer it shares with the `/v1` invoke fast path.
pub fn router_with(
    state: Arc<ConsoleState>,
    access: Router,
    max_header_bytes: usize,
    observer: Arc<Observer>,
) -> Router {
    let api = routes::register(API_ROUTES, Router::new())
        .with_state(state.clone())
        .merge(access)
        .layer(middleware::from_fn_with_state(state, credentials))
        .layer(DefaultBodyLimit::max(MAX_LOGIN_BODY));
    Router::new()
        .merge(api)
        .fallback(crate::web::serve)
        .layer(middleware::from_fn_with_state(
            max_header_bytes,
            crate::headers::guard,
        ))
        .layer(middleware::from_fn_with_state(observer, observe))
}

#[cfg(test)]
mod kinds_tests;
#[cfg(test)]
mod tests;
