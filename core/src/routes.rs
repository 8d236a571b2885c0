//! Route tables: each path is written once, with the fixed name its
//! requests are counted under, and registered from the same table.

use axum::Router;
use axum::routing::MethodRouter;

/// One route: its path template, its metrics name and its handlers.
pub struct Route<S> {
    /// The axum path template (`/api/namespaces/{ns}/runs`).
    pub path: &'static str,
    /// The fixed name its requests are counted under.
    pub name: &'static str,
    /// Builds the route's handlers, one per method.
    pub methods: fn() -> MethodRouter<S>,
}

/// Adds every route of `table` to `router`.
pub fn register<S>(table: &[Route<S>], router: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    table
        .iter()
        .fold(router, |r, route| r.route(route.path, (route.methods)()))
}

/// The name of the route whose template is `path`.
pub fn name_of<S>(table: &[Route<S>], path: &str) -> Option<&'static str> {
    table.iter().find(|r| r.path == path).map(|r| r.name)
}
