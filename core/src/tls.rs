//! TLS for both listeners: serving certificates re-read from disk when they
//! change (rotation without restart), and client-certificate verification
//! against trust roots that can be replaced at run time.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};

/// The certificate chain the client presented during the TLS handshake
/// (empty when none), carried by each request as an extension.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(pub Arc<Vec<rustls_pki_types::CertificateDer<'static>>>);

/// A TLS file problem, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The file that could not be read.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A certificate file holds no PEM certificate.
    #[error("{path} holds no PEM certificate")]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },
    /// A key file holds no private key rustls can sign with.
    #[error("{path} holds no usable PEM private key: {reason}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why the key is unusable.
        reason: String,
    },
    /// A CA bundle holds no certificate usable as a trust root.
    #[error("the CA bundle {what} holds no usable certificate")]
    EmptyRoots {
        /// The bundle: its file, or the setting it came from.
        what: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration failed: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Parses PEM certificates.
pub fn parse_certs(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect()
}

/// A root store from a PEM CA bundle.
pub fn root_store(pem: &[u8], what: &str) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in parse_certs(pem) {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(TlsError::EmptyRoots {
            what: what.to_owned(),
        });
    }
    Ok(roots)
}

fn read(path: &PathBuf) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.clone(),
        source,
    })
}

/// Loads a certificate chain and key into a signing key.
pub fn load_certified_key(cert: &PathBuf, key: &PathBuf) -> Result<CertifiedKey, TlsError> {
    let chain = parse_certs(&read(cert)?);
    if chain.is_empty() {
        return Err(TlsError::NoCertificate { path: cert.clone() });
    }
    let key_der = PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|e| TlsError::Key {
        path: key.clone(),
        reason: e.to_string(),
    })?;
    let provider = rustls::crypto::ring::default_provider();
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| TlsError::Key {
            path: key.clone(),
            reason: e.to_string(),
        })?;
    Ok(CertifiedKey::new(chain, signing_key))
}

fn mtime(path: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Serves the certificate in a pair of PEM files, re-reading them when their
/// modification time changes. A rotation that leaves a broken pair behind
/// keeps the last good certificate and logs why.
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    /// What the certificate is, for the log lines.
    what: &'static str,
    state: RwLock<(Option<SystemTime>, Option<SystemTime>, Arc<CertifiedKey>)>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert", &self.cert)
            .finish()
    }
}

impl ReloadingCert {
    /// Serves the pair in `cert` (PEM chain) and `key` (PEM private key), read
    /// now: an error when either is unusable.
    pub fn new(cert: PathBuf, key: PathBuf) -> Result<Self, TlsError> {
        let loaded = load_certified_key(&cert, &key)?;
        let state = RwLock::new((mtime(&cert), mtime(&key), Arc::new(loaded)));
        Ok(Self {
            cert,
            key,
            what: "serving certificate",
            state,
        })
    }

    /// Names the certificate in log lines ("serving certificate" by default).
    pub fn named(mut self, what: &'static str) -> Self {
        self.what = what;
        self
    }

    fn current(&self) -> Option<Arc<CertifiedKey>> {
        let (cm, km) = (mtime(&self.cert), mtime(&self.key));
        {
            let state = self.state.read().ok()?;
            if state.0 == cm && state.1 == km {
                return Some(state.2.clone());
            }
        }
        let mut state = self.state.write().ok()?;
        match load_certified_key(&self.cert, &self.key) {
            Ok(k) => {
                tracing::info!(cert = %self.cert.display(), what = self.what, "certificate reloaded");
                *state = (cm, km, Arc::new(k));
            }
            Err(error) => {
                tracing::warn!(%error, what = self.what, "certificate changed on disk but could not be loaded; keeping the previous one");
                state.0 = cm;
                state.1 = km;
            }
        }
        Some(state.2.clone())
    }
}

impl ReloadingCert {
    /// When the certificate served now expires (Unix seconds), re-reading
    /// the files first if they changed.
    pub fn expiry(&self) -> Option<i64> {
        not_after(self.current()?.end_entity_cert().ok()?)
    }
}

/// A certificate's `notAfter` in Unix seconds.
pub fn not_after(cert: &CertificateDer<'_>) -> Option<i64> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    Some(parsed.validity().not_after.timestamp())
}

/// The same pair presented as a TLS client certificate (the Console's to
/// the Runtime gateways), re-read on change as when served.
impl rustls::client::ResolvesClientCert for ReloadingCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.current()
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// Verifies servers against the CA bundle in a PEM file, re-reading it when
/// its modification time changes. A rotation that leaves an unusable bundle
/// behind keeps the last good roots and logs why.
pub struct ReloadingServerRoots {
    path: PathBuf,
    provider: Arc<CryptoProvider>,
    state: RwLock<(
        Option<SystemTime>,
        Arc<rustls::client::WebPkiServerVerifier>,
    )>,
}

impl fmt::Debug for ReloadingServerRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingServerRoots")
            .field("path", &self.path)
            .finish()
    }
}

impl ReloadingServerRoots {
    /// Verifies against the PEM bundle at `path` with `provider`'s algorithms,
    /// read now: an error when it holds no usable certificate.
    pub fn new(path: PathBuf, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let verifier = Self::load(&path, &provider)?;
        let state = RwLock::new((mtime(&path), verifier));
        Ok(Self {
            path,
            provider,
            state,
        })
    }

    fn load(
        path: &PathBuf,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<rustls::client::WebPkiServerVerifier>, TlsError> {
        let roots = root_store(&read(path)?, &path.display().to_string())?;
        rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))
    }

    fn current(&self) -> Arc<rustls::client::WebPkiServerVerifier> {
        let m = mtime(&self.path);
        if let Ok(state) = self.state.read()
            && state.0 == m
        {
            return state.1.clone();
        }
        let mut state = match self.state.write() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.0 != m {
            match Self::load(&self.path, &self.provider) {
                Ok(v) => {
                    tracing::info!(file = %self.path.display(), "CA bundle reloaded");
                    state.1 = v;
                }
                Err(error) => {
                    tracing::warn!(%error, "CA bundle changed on disk but could not be loaded; keeping the previous one");
                }
            }
            state.0 = m;
        }
        state.1.clone()
    }
}

impl rustls::client::danger::ServerCertVerifier for ReloadingServerRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.current().verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current().supported_verify_schemes()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

/// The trust roots a listener accepts client certificates from, by purpose.
#[derive(Clone, Default)]
pub struct ClientRoots {
    /// Front-proxy (request-header) client CA: kube-apiserver's aggregator.
    pub front_proxy: Option<Arc<dyn ClientCertVerifier>>,
    /// Client CA whose certificates name a user directly.
    pub client_ca: Option<Arc<dyn ClientCertVerifier>>,
}

impl fmt::Debug for ClientRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRoots")
            .field("front_proxy", &self.front_proxy.is_some())
            .field("client_ca", &self.client_ca.is_some())
            .finish()
    }
}

/// Builds a verifier for one CA bundle; clients without a certificate pass
/// the handshake (they may authenticate with a token instead).
pub fn client_verifier(roots: RootCertStore) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))
}

impl ClientRoots {
    /// Which roots accept this chain, if any.
    pub fn classify(&self, chain: &[CertificateDer<'_>]) -> (bool, bool) {
        let Some((end, rest)) = chain.split_first() else {
            return (false, false);
        };
        let now = UnixTime::now();
        let ok = |v: &Option<Arc<dyn ClientCertVerifier>>| {
            v.as_ref()
                .is_some_and(|v| v.verify_client_cert(end, rest, now).is_ok())
        };
        (ok(&self.front_proxy), ok(&self.client_ca))
    }
}

/// A client-certificate verifier whose trust roots can be swapped while the
/// listener runs (the authentication ConfigMap and CA files change).
#[derive(Debug)]
pub struct DynamicClientVerifier {
    roots: RwLock<ClientRoots>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl DynamicClientVerifier {
    /// A verifier that accepts chains from `roots` (front proxy, client CA),
    /// and clients with no certificate.
    pub fn new(roots: ClientRoots) -> Self {
        let provider: CryptoProvider = rustls::crypto::ring::default_provider();
        Self {
            roots: RwLock::new(roots),
            algorithms: provider.signature_verification_algorithms,
        }
    }

    /// Replaces the front-proxy roots.
    pub fn set_front_proxy(&self, v: Option<Arc<dyn ClientCertVerifier>>) {
        if let Ok(mut r) = self.roots.write() {
            r.front_proxy = v;
        }
    }

    /// Replaces the client CA roots.
    pub fn set_client_ca(&self, v: Option<Arc<dyn ClientCertVerifier>>) {
        if let Ok(mut r) = self.roots.write() {
            r.client_ca = v;
        }
    }

    /// The roots in force now.
    pub fn roots(&self) -> ClientRoots {
        self.roots.read().map(|r| r.clone()).unwrap_or_default()
    }
}

impl ClientCertVerifier for DynamicClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // No hints: clients send whatever certificate they hold.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let roots = self.roots();
        let mut last = rustls::Error::General("no client CA is configured on this listener".into());
        for v in [&roots.front_proxy, &roots.client_ca].into_iter().flatten() {
            match v.verify_client_cert(end_entity, intermediates, now) {
                Ok(ok) => return Ok(ok),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A server configuration with a reloading certificate and the dynamic client verifier.
pub fn server_config(
    cert: Arc<ReloadingCert>,
    verifier: Arc<DynamicClientVerifier>,
    alpn_h2: bool,
) -> Result<rustls::ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert);
    config.alpn_protocols = if alpn_h2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &std::path::Path, not_after: (i32, u8, u8)) -> (PathBuf, PathBuf) {
        let mut params = rcgen::CertificateParams::new(vec!["console.test".to_owned()]).unwrap();
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let (c, k) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }

    #[test]
    fn expiry_is_the_served_certificates_not_after_and_follows_a_rotation() {
        let dir = std::env::temp_dir().join(format!("krt-tls-expiry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, k) = write_pair(&dir, (2030, 1, 1));
        let cert = ReloadingCert::new(c, k).unwrap();
        assert_eq!(cert.expiry(), Some(1_893_456_000), "2030-01-01T00:00:00Z");
        // A rotation shows at the next look; mtimes need to differ.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_pair(&dir, (2031, 1, 1));
        assert_eq!(cert.expiry(), Some(1_924_992_000), "2031-01-01T00:00:00Z");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A CA (its PEM) and a server leaf for `server.test` it signed (DER).
    fn ca_and_server_leaf(cn: &str) -> (String, CertificateDer<'static>) {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let mut params = CertificateParams::new(Vec::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        let ca_key = KeyPair::generate().unwrap();
        let ca = params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(params, ca_key);
        let leaf = CertificateParams::new(vec!["server.test".to_owned()])
            .unwrap()
            .signed_by(&KeyPair::generate().unwrap(), &issuer)
            .unwrap();
        (ca.pem(), leaf.der().clone())
    }

    #[test]
    fn server_roots_follow_a_rotation_and_keep_the_last_good_bundle() {
        use rustls::client::danger::ServerCertVerifier as _;
        let dir = std::env::temp_dir().join(format!("krt-tls-roots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ca.crt");
        let (old_ca, old_leaf) = ca_and_server_leaf("old ca");
        let (new_ca, new_leaf) = ca_and_server_leaf("new ca");
        std::fs::write(&path, &old_ca).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = ReloadingServerRoots::new(path.clone(), provider).unwrap();
        let name = rustls_pki_types::ServerName::try_from("server.test").unwrap();
        let verify = |leaf: &CertificateDer<'_>| {
            roots
                .verify_server_cert(leaf, &[], &name, &[], UnixTime::now())
                .is_ok()
        };
        assert!(verify(&old_leaf));
        assert!(!verify(&new_leaf));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, &new_ca).unwrap();
        assert!(verify(&new_leaf), "the rotated bundle was not read");
        assert!(!verify(&old_leaf), "the old CA is still trusted");
        // A broken bundle keeps the last good one.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, "not a certificate").unwrap();
        assert!(verify(&new_leaf));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
