//! Front-proxy (request-header) authentication, configured from the
//! ConfigMap `kube-system/extension-apiserver-authentication` and reloaded
//! when it changes.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use http::HeaderMap;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use rustls_pki_types::CertificateDer;
use tokio::sync::watch;

use super::caller::{AuthMethod, Caller, common_name};
use crate::tls::{DynamicClientVerifier, client_verifier, root_store};

/// Namespace of the ConfigMap that holds the request-header settings and the
/// client CAs.
pub const CONFIGMAP_NAMESPACE: &str = "kube-system";
/// Name of that ConfigMap, which kube-apiserver keeps up to date.
pub const CONFIGMAP_NAME: &str = "extension-apiserver-authentication";

/// How the front proxy passes the caller's identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    /// Headers that may carry the user name; the first one set wins
    /// (`requestheader-username-headers`).
    pub username_headers: Vec<String>,
    /// Headers that may carry the user's UID; the first one set wins
    /// (`requestheader-uid-headers`).
    pub uid_headers: Vec<String>,
    /// Headers whose every value is a group (`requestheader-group-headers`).
    pub group_headers: Vec<String>,
    /// Header name prefixes whose headers carry extra attributes, the key after
    /// the prefix, percent-decoded (`requestheader-extra-headers-prefix`).
    pub extra_headers_prefix: Vec<String>,
    /// Common names a front-proxy certificate may carry; empty means any.
    pub allowed_names: Vec<String>,
}

impl RequestHeaderConfig {
    /// The caller a front-proxy request names; `None` when the certificate's
    /// CN is not allowed or no username header is set.
    pub fn caller_from(&self, cert: &CertificateDer<'_>, headers: &HeaderMap) -> Option<Caller> {
        if !self.allowed_names.is_empty() {
            let cn = common_name(cert)?;
            if !self.allowed_names.contains(&cn) {
                tracing::debug!(cn, "front-proxy certificate CN is not an allowed name");
                return None;
            }
        }
        let first = |names: &[String]| {
            names.iter().find_map(|h| {
                headers
                    .get(h.as_str())
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty())
                    .map(str::to_owned)
            })
        };
        let user = first(&self.username_headers)?;
        let uid = first(&self.uid_headers);
        let mut groups = Vec::new();
        for h in &self.group_headers {
            for v in headers.get_all(h.as_str()) {
                if let Ok(v) = v.to_str() {
                    groups.push(v.to_owned());
                }
            }
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            for prefix in &self.extra_headers_prefix {
                let lname = name.as_str();
                let lprefix = prefix.to_ascii_lowercase();
                if let Some(key) = lname.strip_prefix(lprefix.as_str())
                    && let Ok(v) = value.to_str()
                {
                    let key = percent_decode(&key.to_ascii_lowercase());
                    extra.entry(key).or_default().push(v.to_owned());
                }
            }
        }
        Some(Caller {
            user,
            uid,
            groups,
            extra,
            method: AuthMethod::FrontProxy,
            token: None,
            expires_at: None,
        })
    }

    /// Parses the ConfigMap's request-header keys (JSON string arrays).
    pub fn from_configmap(data: &BTreeMap<String, String>) -> Self {
        let list = |k: &str| -> Vec<String> {
            data.get(k)
                .and_then(|v| serde_json::from_str::<Vec<String>>(v).ok())
                .unwrap_or_default()
        };
        Self {
            username_headers: list("requestheader-username-headers"),
            uid_headers: list("requestheader-uid-headers"),
            group_headers: list("requestheader-group-headers"),
            extra_headers_prefix: list("requestheader-extra-headers-prefix"),
            allowed_names: list("requestheader-allowed-names"),
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The request-header configuration in force, kept current by a watch.
#[derive(Clone)]
pub struct RequestHeaderSource {
    current: Arc<RwLock<Arc<RequestHeaderConfig>>>,
    loaded: watch::Receiver<bool>,
}

impl RequestHeaderSource {
    /// A fixed configuration (tests).
    pub fn fixed(config: RequestHeaderConfig) -> Self {
        let (_tx, rx) = watch::channel(true);
        Self {
            current: Arc::new(RwLock::new(Arc::new(config))),
            loaded: rx,
        }
    }

    /// The configuration in force now.
    pub fn current(&self) -> Arc<RequestHeaderConfig> {
        self.current
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|_| Arc::new(RequestHeaderConfig::default()))
    }

    /// Has the ConfigMap been read at least once?
    pub fn is_loaded(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Watches the ConfigMap and applies each version of it: the
    /// request-header settings here, the CA bundles on `verifier`.
    pub fn watch(client: Client, verifier: Arc<DynamicClientVerifier>) -> Self {
        let (tx, rx) = watch::channel(false);
        let current = Arc::new(RwLock::new(Arc::new(RequestHeaderConfig::default())));
        let source = Self {
            current: current.clone(),
            loaded: rx,
        };
        tokio::spawn(async move {
            let api: Api<ConfigMap> = Api::namespaced(client, CONFIGMAP_NAMESPACE);
            let config =
                watcher::Config::default().fields(&format!("metadata.name={CONFIGMAP_NAME}"));
            let mut stream = watcher::watcher(api, config).default_backoff().boxed();
            while let Some(event) = stream.next().await {
                let cm = match event {
                    Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => cm,
                    Ok(_) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "watching {CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME} failed; retrying");
                        continue;
                    }
                };
                let data = cm.data.unwrap_or_default();
                apply(&data, &current, &verifier);
                let _ = tx.send(true);
            }
        });
        source
    }
}

fn apply(
    data: &BTreeMap<String, String>,
    current: &RwLock<Arc<RequestHeaderConfig>>,
    verifier: &DynamicClientVerifier,
) {
    let config = RequestHeaderConfig::from_configmap(data);
    let front_proxy = data
        .get("requestheader-client-ca-file")
        .and_then(|pem| root_store(pem.as_bytes(), "requestheader-client-ca-file").ok())
        .and_then(|roots| client_verifier(roots).ok());
    let client_ca = data
        .get("client-ca-file")
        .and_then(|pem| root_store(pem.as_bytes(), "client-ca-file").ok())
        .and_then(|roots| client_verifier(roots).ok());
    tracing::info!(
        front_proxy = front_proxy.is_some(),
        client_ca = client_ca.is_some(),
        allowed_names = ?config.allowed_names,
        "authentication configuration loaded from {CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}"
    );
    verifier.set_front_proxy(front_proxy);
    verifier.set_client_ca(client_ca);
    if let Ok(mut c) = current.write() {
        *c = Arc::new(config);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(cn: &str) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    fn config() -> RequestHeaderConfig {
        let mut data = BTreeMap::new();
        data.insert(
            "requestheader-username-headers".into(),
            r#"["X-Remote-User"]"#.into(),
        );
        data.insert(
            "requestheader-group-headers".into(),
            r#"["X-Remote-Group"]"#.into(),
        );
        data.insert(
            "requestheader-extra-headers-prefix".into(),
            r#"["X-Remote-Extra-"]"#.into(),
        );
        data.insert(
            "requestheader-uid-headers".into(),
            r#"["X-Remote-Uid"]"#.into(),
        );
        data.insert(
            "requestheader-allowed-names".into(),
            r#"["front-proxy-client"]"#.into(),
        );
        RequestHeaderConfig::from_configmap(&data)
    }

    #[test]
    fn reads_identity_headers() {
        let mut h = HeaderMap::new();
        h.insert("x-remote-user", "alice".parse().unwrap());
        h.append("x-remote-group", "a".parse().unwrap());
        h.append("x-remote-group", "b".parse().unwrap());
        h.insert("x-remote-extra-scopes%2fx", "s1".parse().unwrap());
        h.insert("x-remote-uid", "u-1".parse().unwrap());
        let c = config()
            .caller_from(&cert("front-proxy-client"), &h)
            .unwrap();
        assert_eq!(c.user, "alice");
        assert_eq!(c.groups, ["a", "b"]);
        assert_eq!(c.uid.as_deref(), Some("u-1"));
        assert_eq!(c.extra.get("scopes/x").unwrap(), &vec!["s1".to_string()]);
    }

    #[test]
    fn refuses_cn_not_allowed() {
        let mut h = HeaderMap::new();
        h.insert("x-remote-user", "alice".parse().unwrap());
        assert!(config().caller_from(&cert("someone-else"), &h).is_none());
    }

    #[test]
    fn no_user_header_is_no_caller() {
        assert!(
            config()
                .caller_from(&cert("front-proxy-client"), &HeaderMap::new())
                .is_none()
        );
    }
}
