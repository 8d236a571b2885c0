//! The Console's connection layer, below every HTTP handler: the accept loop
//! shared by both listeners with its connection bounds (`serve`), TLS
//! streams on rustls's unbuffered API (`tls_stream`), HTTP/1.1 framing of
//! requests and gateway answers (`h1`), and the worker threads of the
//! HTTP/1.1 fast path (`workers`). It knows nothing of Runs, Runtimes or
//! Kubernetes: what a request means is decided above it.

pub mod h1;
pub mod serve;
pub mod tls_stream;
pub mod workers;
