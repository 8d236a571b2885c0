//! The Console's HTTP surface: the embedded web UI (`web`), its JSON API
//! (`api`, every read with the caller's own credential), the login session
//! kept in an HttpOnly cookie (`session`), and the Runtime access handler
//! (`v1`: invoke and session operations authorized by SubjectAccessReview
//! and forwarded to the Runtime gateway). `router` puts them behind one
//! axum router; the binary (`kruntimes-console`) serves it.

#![forbid(unsafe_code)]

pub mod api;
pub mod clients;
pub mod credentials;
pub mod error;
pub mod headers;
pub mod origin;
pub mod router;
pub mod runtime_access;
pub mod session;
pub mod state;
pub mod web;

/// The version `--version` prints: the package version, and a word when the
/// web UI is a placeholder page (see build.rs).
pub const VERSION: &str = env!("KRUNTIMES_CONSOLE_VERSION");
