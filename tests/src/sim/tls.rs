//! TLS server configuration for the simulators (rustls with the ring provider).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Errors while loading TLS material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read certificates from {path}: {source}")]
    Certs {
        path: PathBuf,
        source: rustls_pki_types::pem::Error,
    },
    #[error("no certificate found in {0}")]
    NoCerts(PathBuf),
    #[error("cannot read private key from {path}: {source}")]
    Key {
        path: PathBuf,
        source: rustls_pki_types::pem::Error,
    },
    #[error("cannot add CA certificate from {path}: {source}")]
    Ca {
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("cannot build the client certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("invalid server certificate or key: {0}")]
    Config(#[from] rustls::Error),
}

/// Installs the ring crypto provider as the process default. Safe to call more than once.
pub fn install_crypto_provider() {
    // A second call returns Err with the provider already installed; that is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Reads every certificate of a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|source| TlsError::Certs {
            path: path.to_owned(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCerts(path.to_owned()));
    }
    Ok(certs)
}

/// Reads the first private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|source| TlsError::Key {
        path: path.to_owned(),
        source,
    })
}

/// Builds a server configuration offering HTTP/2 and HTTP/1.1.
///
/// With `client_ca`, every client must present a certificate signed by that CA;
/// without it, no client certificate is requested.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    server_config_with_alpn(cert, key, client_ca, true)
}

/// [`server_config`], optionally offering HTTP/1.1 only.
pub fn server_config_with_alpn(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    http2: bool,
) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = load_certs(cert)?;
    let key = load_key(key)?;
    let builder = ServerConfig::builder();
    let mut config = match client_ca {
        Some(ca_path) => {
            let mut roots = RootCertStore::empty();
            for ca in load_certs(ca_path)? {
                roots.add(ca).map_err(|source| TlsError::Ca {
                    path: ca_path.to_owned(),
                    source,
                })?;
            }
            let verifier = WebPkiClientVerifier::builder(Arc::new(roots)).build()?;
            builder
                .with_client_cert_verifier(verifier)
                .with_single_cert(chain, key)?
        }
        None => builder.with_no_client_auth().with_single_cert(chain, key)?,
    };
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

/// The Common Name of a DER certificate's subject, if it has one.
pub fn common_name(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    parsed
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_owned)
}
