//! The Runtime gateway a Run's calls go to: Service `<runtime>-gateway` in
//! the Run's namespace, port `https`, over mutually authenticated TLS.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kruntimes_core::tls::{ReloadingCert, ReloadingServerRoots};
use kruntimes_core::ttlmap::TtlMap;
use kube::{Api, Client};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;

/// Why a Runtime gateway cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The gateway Service could not be read (the Kubernetes API unreachable).
    #[error("the Runtime gateway cannot be resolved: the Kubernetes API is unreachable")]
    Unresolvable,
    /// The Service `<runtime>-gateway` does not exist in the Run's namespace,
    /// or has no port of the configured name.
    #[error(
        "the Runtime gateway Service {runtime}-gateway in namespace {ns} does not exist or has no https port"
    )]
    Missing {
        /// The Run's namespace.
        ns: String,
        /// The Run's Runtime (`spec.runtime`).
        runtime: String,
    },
    /// The gateway's name has no address, or no TLS connection could be made to
    /// it.
    #[error("the Runtime gateway {authority} is unreachable")]
    Unreachable {
        /// The gateway's `host:port`.
        authority: String,
    },
}

/// Where to dial. Two targets are the same gateway when host and port
/// are (the invoke fast path pools connections by target): addresses looked
/// up again, in another order, do not make another gateway.
#[derive(Clone, Debug)]
pub struct GatewayTarget {
    /// DNS name verified in the gateway's certificate (ClusterIP:
    /// `<svc>.<ns>.svc`; ExternalName: the external name).
    pub host: String,
    /// The Service port to dial (the port named `https`, normally 443).
    pub port: u16,
    /// The host's addresses, looked up once when the target is resolved and
    /// remembered with it: a connection dials them without a lookup of its
    /// own. (tokio runs each lookup on a blocking-pool thread, which lives on
    /// for 10 s after: a burst of operations sockets left a thread, its stack
    /// and its allocator pages behind per socket opened at once.)
    pub addrs: Vec<SocketAddr>,
}

impl GatewayTarget {
    /// `host:port`, as messages and logs name the gateway.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl PartialEq for GatewayTarget {
    fn eq(&self, other: &Self) -> bool {
        self.host == other.host && self.port == other.port
    }
}

impl Eq for GatewayTarget {}

impl std::hash::Hash for GatewayTarget {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.host.hash(state);
        self.port.hash(state);
    }
}

/// Resolves gateway Services with the Console's identity, and their
/// addresses, cached briefly.
#[derive(Clone)]
pub struct GatewayResolver {
    client: Client,
    port_name: String,
    /// Longest wait for a name's addresses (the connect timeout).
    lookup_timeout: Duration,
    /// By `<namespace>/<runtime>` (neither name can hold a `/`).
    cache: Arc<TtlMap<String, Option<Arc<GatewayTarget>>>>,
}

/// How long a resolved (or missing) gateway is remembered.
const GATEWAY_TTL: Duration = Duration::from_secs(15);

/// How long a gateway whose name did not resolve is remembered: calls in
/// that time answer 503 at once, instead of each reading the Service and
/// waiting for the lookup again.
const LOOKUP_RETRY: Duration = Duration::from_secs(2);

impl GatewayResolver {
    /// A resolver that reads Services with `client` (the Console's identity),
    /// dials their port named `port_name`, and waits at most `lookup_timeout`
    /// for a name's addresses.
    pub fn new(client: Client, port_name: String, lookup_timeout: Duration) -> Self {
        Self {
            client,
            port_name,
            lookup_timeout,
            cache: Arc::new(TtlMap::new(10_000)),
        }
    }

    /// The target of `runtime` in `ns`.
    pub async fn target(
        &self,
        ns: &str,
        runtime: &str,
    ) -> Result<Arc<GatewayTarget>, GatewayError> {
        let mut key = String::with_capacity(ns.len() + 1 + runtime.len());
        key.push_str(ns);
        key.push('/');
        key.push_str(runtime);
        if let Some(hit) = self.cache.get(&key) {
            return usable(hit, ns, runtime);
        }
        // The lookup's future is large and rarely needed: on the heap, so
        // that every caller's future (and each move of it) stays small.
        Box::pin(self.resolve(key, ns, runtime)).await
    }

    /// A gateway not remembered: its Service read and its name looked up.
    async fn resolve(
        &self,
        key: String,
        ns: &str,
        runtime: &str,
    ) -> Result<Arc<GatewayTarget>, GatewayError> {
        let name = format!("{runtime}-gateway");
        let api: Api<Service> = Api::namespaced(self.client.clone(), ns);
        let svc = api.get_opt(&name).await.map_err(|e| {
            tracing::warn!(error = %e, service = %name, "reading the gateway Service failed");
            GatewayError::Unresolvable
        })?;
        let (target, ttl) = match svc.and_then(|s| target_of(&s, ns, &name, &self.port_name)) {
            Some(t) => {
                let t = with_addresses(t, self.lookup_timeout).await;
                let ttl = if t.addrs.is_empty() {
                    LOOKUP_RETRY
                } else {
                    GATEWAY_TTL
                };
                (Some(Arc::new(t)), ttl)
            }
            None => (None, GATEWAY_TTL),
        };
        self.cache
            .insert(key, target.clone(), std::time::Instant::now() + ttl);
        usable(target, ns, runtime)
    }
}

/// A remembered gateway, or why it cannot be called.
fn usable(
    target: Option<Arc<GatewayTarget>>,
    ns: &str,
    runtime: &str,
) -> Result<Arc<GatewayTarget>, GatewayError> {
    match target {
        None => Err(no_gateway(ns, runtime)),
        Some(t) if t.addrs.is_empty() => Err(GatewayError::Unreachable {
            authority: t.authority(),
        }),
        Some(t) => Ok(t),
    }
}

/// The target with its host's addresses, looked up within `timeout`; none
/// when the name did not resolve in time.
async fn with_addresses(mut target: GatewayTarget, timeout: Duration) -> GatewayTarget {
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    match tokio::time::timeout(timeout, lookup).await {
        Ok(Ok(addrs)) => target.addrs = addrs.collect(),
        Ok(Err(e)) => {
            tracing::warn!(gateway = %target.authority(), error = %e, "looking up the Runtime gateway failed");
        }
        Err(_) => {
            tracing::warn!(gateway = %target.authority(), "looking up the Runtime gateway timed out");
        }
    }
    target
}

fn no_gateway(ns: &str, runtime: &str) -> GatewayError {
    GatewayError::Missing {
        ns: ns.to_owned(),
        runtime: runtime.to_owned(),
    }
}

/// The target a Service names, if it has the port.
pub fn target_of(svc: &Service, ns: &str, name: &str, port_name: &str) -> Option<GatewayTarget> {
    let spec = svc.spec.as_ref()?;
    let port = spec
        .ports
        .as_ref()?
        .iter()
        .find(|p| p.name.as_deref() == Some(port_name))?
        .port;
    let host = match spec.type_.as_deref() {
        Some("ExternalName") => spec.external_name.clone()?.trim_end_matches('.').to_owned(),
        _ => format!("{name}.{ns}.svc"),
    };
    Some(GatewayTarget {
        host,
        port: u16::try_from(port).ok()?,
        addrs: Vec::new(),
    })
}

/// TLS to gateways: their CA, and the Console's client certificate. Both
/// are re-read when their files change (SPEC §10: rotated TLS files are
/// picked up without a restart); a connection already open keeps what it
/// was made with.
pub fn client_tls(
    ca: Option<&Path>,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> anyhow::Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match ca {
        Some(ca) => {
            let roots = ReloadingServerRoots::new(ca.to_path_buf(), provider)
                .map_err(|e| anyhow::anyhow!("--gateway-ca-file {}: {e}", ca.display()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(roots))
        }
        None => builder.with_root_certificates(rustls::RootCertStore::empty()),
    };
    let mut config = match (cert, key) {
        (Some(cert), Some(key)) => {
            let pair = ReloadingCert::new(cert.to_path_buf(), key.to_path_buf())
                .map_err(|e| anyhow::anyhow!("--gateway-client-cert/--gateway-client-key: {e}"))?
                .named("gateway client certificate");
            builder.with_client_cert_resolver(Arc::new(pair))
        }
        (None, None) => builder.with_no_client_auth(),
        _ => anyhow::bail!("--gateway-client-cert and --gateway-client-key must be given together"),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TLS connection to a gateway.
pub type GatewayStream = kruntimes_transport::tls_stream::ClientStream<tokio::net::TcpStream>;

/// Opens a TLS connection to the target, dialling its addresses in turn.
pub async fn connect(
    tls: &Arc<ClientConfig>,
    target: &GatewayTarget,
    timeout: Duration,
) -> Result<GatewayStream, GatewayError> {
    let unreachable = |why: String| {
        tracing::warn!(gateway = %target.authority(), why, "Runtime gateway unreachable");
        GatewayError::Unreachable {
            authority: target.authority(),
        }
    };
    if target.addrs.is_empty() {
        return Err(unreachable("the name has no address".into()));
    }
    let tcp = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&target.addrs[..]))
        .await
        .map_err(|_| unreachable("connect timed out".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(target.host.clone()).map_err(|e| unreachable(e.to_string()))?;
    tokio::time::timeout(
        timeout,
        kruntimes_transport::tls_stream::connect(tls.clone(), name, tcp),
    )
    .await
    .map_err(|_| unreachable("TLS handshake timed out".into()))?
    .map_err(|e| unreachable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(json: serde_json::Value) -> Service {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn cluster_ip_and_external_name_targets() {
        let c = svc(
            serde_json::json!({"spec": {"type": "ClusterIP", "ports": [{"name": "metrics", "port": 9090}, {"name": "https", "port": 443}]}}),
        );
        assert_eq!(
            target_of(&c, "team-a", "bash-gateway", "https"),
            Some(GatewayTarget {
                host: "bash-gateway.team-a.svc".into(),
                port: 443,
                addrs: vec![],
            })
        );
        let e = svc(
            serde_json::json!({"spec": {"type": "ExternalName", "externalName": "gw.example.", "ports": [{"name": "https", "port": 8443}]}}),
        );
        assert_eq!(
            target_of(&e, "team-a", "bash-gateway", "https"),
            Some(GatewayTarget {
                host: "gw.example".into(),
                port: 8443,
                addrs: vec![],
            })
        );
        let none = svc(serde_json::json!({"spec": {"ports": [{"name": "http", "port": 80}]}}));
        assert_eq!(target_of(&none, "team-a", "x", "https"), None);
    }

    #[tokio::test]
    async fn a_resolved_target_carries_its_addresses() {
        let t = |host: &str| GatewayTarget {
            host: host.into(),
            port: 8443,
            addrs: vec![],
        };
        let within = Duration::from_secs(5);
        let local = with_addresses(t("localhost"), within).await;
        assert!(!local.addrs.is_empty());
        assert!(
            local
                .addrs
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 8443)
        );
        let literal = with_addresses(t("127.0.0.1"), within).await;
        assert_eq!(literal.addrs, vec!["127.0.0.1:8443".parse().unwrap()]);
        // A name no resolver answers (RFC 6761), within a short bound: no address.
        let lost = with_addresses(t("gateway.invalid"), Duration::from_millis(300)).await;
        assert!(lost.addrs.is_empty());
    }

    #[test]
    fn a_gateway_is_its_host_and_port_and_is_called_only_with_addresses() {
        use std::hash::BuildHasher;
        let a = GatewayTarget {
            host: "gw.example".into(),
            port: 443,
            addrs: vec![
                "10.0.0.1:443".parse().unwrap(),
                "10.0.0.2:443".parse().unwrap(),
            ],
        };
        let mut b = a.clone();
        b.addrs.reverse();
        let hasher = std::collections::hash_map::RandomState::new();
        assert_eq!(a, b);
        assert_eq!(hasher.hash_one(&a), hasher.hash_one(&b));
        assert!(usable(Some(Arc::new(a)), "ns", "bash").is_ok());
        b.addrs.clear();
        assert!(matches!(
            usable(Some(Arc::new(b)), "ns", "bash"),
            Err(GatewayError::Unreachable { .. })
        ));
        assert!(matches!(
            usable(None, "ns", "bash"),
            Err(GatewayError::Missing { .. })
        ));
    }

    /// A connection dials the remembered addresses: the host name (which
    /// no resolver answers) is only the name the certificate must carry.
    #[tokio::test]
    async fn connections_dial_the_remembered_addresses_without_a_lookup() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = GatewayTarget {
            host: "gateway.invalid".into(),
            port: 443,
            addrs: vec![listener.local_addr().unwrap()],
        };
        let accepted = tokio::spawn(async move { listener.accept().await.is_ok() });
        let tls = client_tls(None, None, None).unwrap();
        // The TLS handshake fails (nothing answers it), after the TCP connection was made.
        let res = connect(&tls, &target, Duration::from_secs(2)).await;
        assert!(matches!(res, Err(GatewayError::Unreachable { .. })));
        let dialled = tokio::time::timeout(Duration::from_secs(1), accepted).await;
        assert!(
            matches!(dialled, Ok(Ok(true))),
            "the address was not dialled"
        );
    }
}
