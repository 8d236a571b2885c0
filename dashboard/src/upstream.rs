//! The dashboard proxy's side towards the cluster: the kubeconfig's
//! credential, the Console's CA, a ready Console Pod, and one port-forward
//! (through kube-apiserver) with a verified TLS connection on it per
//! browser connection.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use bytes::Bytes;
use http::HeaderValue;
use http_body_util::Empty;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::Api;
use kube::api::ListParams;
use kube::client::ConfigExt;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use secrecy::ExposeSecret;
use tokio::io::DuplexStream;
use tokio_rustls::client::TlsStream;
use tokio_util::sync::CancellationToken;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Layer, ServiceExt};

use crate::args::DashboardArgs;

/// Answers an empty request with the kubeconfig's current `Authorization`
/// in the response's headers: kube's auth layer (a static token, a token
/// file re-read when it changes, or an exec plugin run again before its
/// token expires; nothing is cached on disk) over a service that hands the
/// header back.
type Mint = BoxCloneSyncService<http::Request<Empty<Bytes>>, http::Response<()>, BoxError>;

/// How forwarded requests are authenticated.
#[derive(Clone)]
pub enum Credential {
    /// `Authorization: Bearer` from the kubeconfig's token or exec plugin.
    Bearer(Mint),
    /// The kubeconfig's client certificate, presented on the TLS connection
    /// to the Console (which takes it only with a client CA configured).
    Certificate,
}

impl Credential {
    /// What the kubeconfig user authenticates with, or why it cannot be used.
    pub fn of(config: &kube::Config) -> anyhow::Result<Self> {
        let ai = &config.auth_info;
        if ai.impersonate.is_some()
            || ai.impersonate_uid.is_some()
            || ai.impersonate_groups.is_some()
            || ai.impersonate_user_extra.is_some()
        {
            bail!(
                "the kubeconfig user impersonates another identity (as/as-groups): the Console does not take impersonation headers, so the proxy would act as the credential's own user; use a kubeconfig user without impersonation"
            );
        }
        if ai.username.is_some() || ai.password.is_some() {
            bail!(
                "the kubeconfig user authenticates with a user name and password (basic auth), which the Console does not accept; use a token, an exec plugin or a client certificate"
            );
        }
        let layer = config
            .auth_layer()
            .context("reading the kubeconfig credential")?;
        if let Some(layer) = layer {
            let identity = tower::service_fn(|r: http::Request<Empty<Bytes>>| async move {
                let mut resp = http::Response::new(());
                if let Some(v) = r.headers().get(http::header::AUTHORIZATION) {
                    resp.headers_mut()
                        .insert(http::header::AUTHORIZATION, v.clone());
                }
                Ok::<_, BoxError>(resp)
            });
            return Ok(Self::Bearer(BoxCloneSyncService::new(
                layer.layer(identity),
            )));
        }
        if ai.client_certificate.is_some() || ai.client_certificate_data.is_some() {
            return Ok(Self::Certificate);
        }
        if ai.exec.is_some() {
            bail!(
                "the kubeconfig's exec plugin returns no token (a client certificate, or nothing): the proxy forwards only a bearer token, or a client certificate named in the kubeconfig itself"
            );
        }
        bail!("the kubeconfig user has no credential (no token, exec plugin or client certificate)")
    }

    /// The `Authorization` value for one forwarded request (marked
    /// sensitive, so it is never printed), or `None` for a certificate.
    pub async fn authorization(&self) -> anyhow::Result<Option<HeaderValue>> {
        let Self::Bearer(mint) = self else {
            return Ok(None);
        };
        let req = mint
            .clone()
            .oneshot(http::Request::new(Empty::new()))
            .await
            .map_err(|e| anyhow!("getting the kubeconfig's token: {e}"))?;
        let mut v = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .cloned()
            .ok_or_else(|| anyhow!("the kubeconfig's credential gave no token"))?;
        v.set_sensitive(true);
        Ok(Some(v))
    }
}

/// The kubeconfig's client certificate chain and key (files or inline data).
fn client_identity(
    config: &kube::Config,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let ai = &config.auth_info;
    let b64 = base64::engine::general_purpose::STANDARD;
    let cert_pem = match (&ai.client_certificate_data, &ai.client_certificate) {
        (Some(data), _) => b64
            .decode(data.trim())
            .context("client-certificate-data is not base64")?,
        (None, Some(path)) => std::fs::read(path).with_context(|| format!("reading {path}"))?,
        _ => bail!("the kubeconfig user has no client certificate"),
    };
    let key_pem = match (&ai.client_key_data, &ai.client_key) {
        (Some(data), _) => b64
            .decode(data.expose_secret().trim())
            .context("client-key-data is not base64")?,
        (None, Some(path)) => std::fs::read(path).with_context(|| format!("reading {path}"))?,
        _ => bail!("the kubeconfig user has a client certificate but no key"),
    };
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .context("the kubeconfig's client certificate is not PEM")?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|_| anyhow!("the kubeconfig's client key is not a PEM private key"))?;
    Ok((certs, key))
}

/// The Console's CA, and where it came from.
pub async fn console_ca(
    args: &DashboardArgs,
    client: &kube::Client,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, String)> {
    let (pem, from) = if let Some(path) = &args.ca_file {
        let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        (pem, path.display().to_string())
    } else {
        let mut why = Vec::new();
        let apiservices: Api<APIService> = Api::all(client.clone());
        let from_apiservice = match apiservices.get(&args.apiservice).await {
            Ok(s) => match s.spec.and_then(|s| s.ca_bundle) {
                Some(b) if !b.0.is_empty() => Some(b.0),
                _ => {
                    why.push(format!("APIService {} has no caBundle", args.apiservice));
                    None
                }
            },
            Err(e) => {
                why.push(format!("APIService {}: {e}", args.apiservice));
                None
            }
        };
        match from_apiservice {
            Some(pem) => (
                pem,
                format!("the caBundle of APIService {}", args.apiservice),
            ),
            None => {
                let secrets: Api<Secret> = Api::namespaced(client.clone(), &args.namespace);
                match secrets.get(&args.tls_secret).await {
                    Ok(s) => match s.data.and_then(|mut d| d.remove(&args.ca_key)) {
                        Some(b) if !b.0.is_empty() => (
                            b.0,
                            format!(
                                "key {} of Secret {}/{}",
                                args.ca_key, args.namespace, args.tls_secret
                            ),
                        ),
                        _ => bail!(
                            "no CA to verify the Console: {}; Secret {}/{} has no key {}; pass --ca-file",
                            why.join("; "),
                            args.namespace,
                            args.tls_secret,
                            args.ca_key
                        ),
                    },
                    Err(e) => bail!(
                        "no CA to verify the Console: {}; Secret {}/{}: {e}; pass --ca-file",
                        why.join("; "),
                        args.namespace,
                        args.tls_secret
                    ),
                }
            }
        }
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("the CA from {from} is not PEM: {e:?}"))?;
    if certs.is_empty() {
        bail!("the CA from {from} holds no certificate");
    }
    Ok((certs, from))
}

/// Opens verified TLS connections to the Console over port-forwards.
pub struct Upstream {
    client: kube::Client,
    namespace: String,
    service: String,
    service_port: String,
    tls: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
    /// The `Host` of forwarded requests: the Console's name.
    pub host: String,
    /// The kubeconfig's credential, added to forwarded requests.
    pub credential: Credential,
    connect_timeout: Duration,
    /// Port-forwards open now.
    open: Arc<AtomicUsize>,
    /// Cancelled on exit: every port-forward closes.
    shutdown: CancellationToken,
}

/// Closes its port-forward when dropped.
pub struct PortForward {
    done: CancellationToken,
}

impl Drop for PortForward {
    fn drop(&mut self) {
        self.done.cancel();
    }
}

impl Upstream {
    /// The Console through the kubeconfig's cluster, port-forwarded, verified against its CA.
    pub fn new(
        args: &DashboardArgs,
        config: &kube::Config,
        client: kube::Client,
        ca: Vec<CertificateDer<'static>>,
        credential: Credential,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        for c in ca {
            roots.add(c).map_err(|e| anyhow!("the Console's CA: {e}"))?;
        }
        let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
        let mut tls = match credential {
            Credential::Certificate => {
                let (certs, key) = client_identity(config)?;
                builder
                    .with_client_auth_cert(certs, key)
                    .context("the kubeconfig's client certificate and key")?
            }
            Credential::Bearer(_) => builder.with_no_client_auth(),
        };
        // One HTTP/1.1 connection per browser connection.
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let host = args.server_name();
        let server_name = ServerName::try_from(host.clone())
            .map_err(|_| anyhow!("--tls-server-name {host:?} is not a DNS name"))?;
        Ok(Self {
            client,
            namespace: args.namespace.clone(),
            service: args.service.clone(),
            service_port: args.service_port.clone(),
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            server_name,
            host,
            credential,
            connect_timeout: args.connect_timeout.into(),
            open: Arc::new(AtomicUsize::new(0)),
            shutdown,
        })
    }

    /// Port-forwards open now.
    pub fn open_port_forwards(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// A ready Console Pod of the Service and the Pod port its port targets.
    pub async fn pick(&self) -> anyhow::Result<(String, u16)> {
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.namespace);
        let svc = services
            .get(&self.service)
            .await
            .with_context(|| format!("reading Service {}/{}", self.namespace, self.service))?;
        let spec = svc.spec.unwrap_or_default();
        let selector: BTreeMap<String, String> = spec.selector.unwrap_or_default();
        if selector.is_empty() {
            bail!(
                "Service {}/{} has no selector",
                self.namespace,
                self.service
            );
        }
        let port = spec
            .ports
            .unwrap_or_default()
            .into_iter()
            .find(|p| {
                p.name.as_deref() == Some(self.service_port.as_str())
                    || p.port.to_string() == self.service_port
            })
            .ok_or_else(|| {
                anyhow!(
                    "Service {}/{} has no port {:?}",
                    self.namespace,
                    self.service,
                    self.service_port
                )
            })?;
        let target = port.target_port.unwrap_or(IntOrString::Int(port.port));
        let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let list = pods
            .list(&ListParams::default().labels(&labels.join(",")))
            .await
            .with_context(|| {
                format!(
                    "listing the Pods of Service {}/{}",
                    self.namespace, self.service
                )
            })?;
        let ready: Vec<&Pod> = list.items.iter().filter(|p| is_ready(p)).collect();
        if ready.is_empty() {
            bail!(
                "Service {}/{} has no ready Pod ({} Pod(s) in all)",
                self.namespace,
                self.service,
                list.items.len()
            );
        }
        let pod = ready[rand::random_range(0..ready.len())];
        let name = pod.metadata.name.clone().unwrap_or_default();
        let number = match &target {
            IntOrString::Int(n) => *n,
            IntOrString::String(s) => pod
                .spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| p.name.as_deref() == Some(s.as_str()))
                .map(|p| p.container_port)
                .ok_or_else(|| anyhow!("Pod {name} has no port named {s:?}"))?,
        };
        let number = u16::try_from(number).map_err(|_| anyhow!("port {number} is out of range"))?;
        Ok((name, number))
    }

    /// A port-forward to a ready Console Pod with a verified TLS connection
    /// on it, within --connect-timeout. The port-forward closes when the
    /// returned guard is dropped, or on exit.
    pub async fn connect(&self) -> anyhow::Result<(TlsStream<DuplexStream>, PortForward, String)> {
        tokio::time::timeout(self.connect_timeout, self.connect_inner())
            .await
            .map_err(|_| {
                anyhow!(
                    "no TLS connection to a Console Pod within {:?}",
                    self.connect_timeout
                )
            })?
    }

    async fn connect_inner(
        &self,
    ) -> anyhow::Result<(TlsStream<DuplexStream>, PortForward, String)> {
        let (pod, port) = self.pick().await?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let mut pf = pods
            .portforward(&pod, &[port])
            .await
            .with_context(|| format!("port-forward to Pod {}/{pod} port {port}", self.namespace))?;
        let stream = pf
            .take_stream(port)
            .ok_or_else(|| anyhow!("the port-forward has no stream for port {port}"))?;
        let errors = pf.take_error(port);
        let done = self.shutdown.child_token();
        let guard = PortForward { done: done.clone() };
        self.open.fetch_add(1, Ordering::SeqCst);
        let open = self.open.clone();
        let target = format!("{}/{pod}:{port}", self.namespace);
        let label = target.clone();
        tokio::spawn(async move {
            tokio::select! {
                e = async move {
                    match errors {
                        Some(e) => e.await,
                        None => std::future::pending().await,
                    }
                } => {
                    if let Some(e) = e {
                        tracing::warn!(target: "dashboard", "port-forward to {label}: {e}");
                    }
                }
                _ = done.cancelled() => {}
            }
            pf.abort();
            let _ = pf.join().await;
            open.fetch_sub(1, Ordering::SeqCst);
            tracing::debug!(target: "dashboard", "port-forward to {label} closed");
        });
        let tls = self
            .tls
            .connect(self.server_name.clone(), stream)
            .await
            .with_context(|| {
                format!("TLS to the Console at {target} (verified as {})", self.host)
            })?;
        Ok((tls, guard, target))
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn config(user: &str) -> kube::Config {
        let yaml = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster: {{server: 'https://127.0.0.1:6443'}}\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\nusers:\n- name: u\n  user:\n{user}"
        );
        let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap()
    }

    async fn bearer(user: &str) -> String {
        let c = Credential::of(&config(user).await).unwrap();
        assert!(matches!(c, Credential::Bearer(_)));
        let v = c.authorization().await.unwrap().unwrap();
        assert!(v.is_sensitive(), "the header is marked sensitive");
        v.to_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn a_token_becomes_a_bearer_header() {
        assert_eq!(bearer("    token: abc.def\n").await, "Bearer abc.def");
    }

    #[tokio::test]
    async fn a_token_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "from-file").unwrap();
        let user = format!("    tokenFile: {}\n", f.display());
        assert_eq!(bearer(&user).await, "Bearer from-file");
    }

    #[tokio::test]
    async fn an_exec_plugin_is_run_for_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("runs");
        // A token that expires at once, so every request runs the plugin again.
        let script = format!(
            "echo x >> {c}; n=$(wc -l < {c}); printf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"exec-%s\",\"expirationTimestamp\":\"2000-01-01T00:00:00Z\"}}}}' $n",
            c = count.display()
        );
        let user = format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: sh\n      args: ['-c', {script:?}]\n"
        );
        let c = Credential::of(&config(&user).await).unwrap();
        let first = c.authorization().await.unwrap().unwrap();
        let second = c.authorization().await.unwrap().unwrap();
        assert!(
            first.to_str().unwrap().starts_with("Bearer exec-"),
            "{first:?}"
        );
        assert_ne!(first, second, "an expired exec token is fetched again");
    }

    #[tokio::test]
    async fn impersonation_and_basic_auth_are_refused() {
        let e = Credential::of(&config("    token: t\n    as: admin\n").await)
            .err()
            .unwrap();
        assert!(e.to_string().contains("impersonates"), "{e}");
        let e = Credential::of(&config("    username: u\n    password: p\n").await)
            .err()
            .unwrap();
        assert!(e.to_string().contains("basic auth"), "{e}");
        let e = Credential::of(&config("    {}\n").await).err().unwrap();
        assert!(e.to_string().contains("no credential"), "{e}");
    }

    #[tokio::test]
    async fn a_client_certificate_is_presented_not_turned_into_a_header() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let user = format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64.encode(cert.pem()),
            b64.encode(key.serialize_pem())
        );
        let config = config(&user).await;
        let c = Credential::of(&config).unwrap();
        assert!(matches!(c, Credential::Certificate));
        assert!(c.authorization().await.unwrap().is_none());
        let (certs, _key) = client_identity(&config).unwrap();
        assert_eq!(certs.len(), 1);
    }
}
