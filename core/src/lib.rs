//! What both listeners of kruntimes-console share: authentication and
//! authorization (`auth`), TLS configuration (`tls`), the request observer
//! (`observe`), metrics, the process lifecycle, limits,
//! Kubernetes `Status` errors, strict request parsing (`query`, `names`) and
//! the typed kruntimes kinds (`Run`, `Runtime`, `WorkflowRun`, and the
//! `Action` and `PersistentWorkspace` the Console reads).
//! The Run-log API (`kruntimes-apiserver`) and the Console
//! (`kruntimes-console`) are built on it and never on each other's insides.

#![forbid(unsafe_code)]

pub mod action;
pub mod auth;
pub mod failure;
pub mod flags;
pub mod guard;
pub mod lifecycle;
pub mod limit;
pub mod metrics;
pub mod names;
pub mod observe;
pub mod query;
pub mod ready;
pub mod routes;
pub mod run;
pub mod runtime;
pub mod runtimed;
pub mod status;
pub mod tls;
pub mod trace;
pub mod ttlmap;
pub mod workflowrun;
pub mod workspace;
